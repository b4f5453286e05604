// fp8lab-cli render FILE.h5 [--run ID] --png DIR — the desktop app's analysis views (error
// heatmap, split, amax history, scale evolution, comparison) rendered offscreen into files, so
// reports can be scripted (issue 6 §5). `fp8lab-cli export FILE.h5 --run ID --png DIR` delegates
// here. Needs a build with the GUI (fp8lab_ui); main.cpp creates a QApplication on the offscreen
// platform for these two commands.
#include "cli_util.h"
#include "command.h"

#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonObject>

#ifdef FP8LAB_HAVE_UI
#include "view_render.h"

#include <QApplication>
#endif

namespace fp8lab::cli {

/// The body of `render`, also used by `export --png` (cmd_session.cpp).
int runRenderViews(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Render the analysis views of a session offscreen: for GEMM runs the error heatmap (heatmap) and the "
      "quantization | accumulation | total split (split), for training runs the amax history window (amax) and "
      "the scale evolution with the loss (scales), and the comparison of all runs (compare). Files are named "
      "<run>-<view>.<ext> (compare.<ext>), each with its data as <name>.csv."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  const QCommandLineOption runOpt(QStringLiteral("run"), QStringLiteral("Run to render (default: every run)."),
                                  QStringLiteral("ID"));
  const QCommandLineOption pngOpt(QStringLiteral("png"), QStringLiteral("Output directory (created)."),
                                  QStringLiteral("DIR"));
  const QCommandLineOption viewsOpt(
      QStringLiteral("views"),
      QStringLiteral("Comma-separated views: heatmap, split, amax, scales, compare (default: all that apply)."),
      QStringLiteral("LIST"));
  const QCommandLineOption sizeOpt(QStringLiteral("size"), QStringLiteral("Image size in pixels (default 1400x900)."),
                                   QStringLiteral("WxH"));
  const QCommandLineOption fmtOpt(QStringLiteral("formats"),
                                  QStringLiteral("Comma-separated: png, pdf, svg (default png)."),
                                  QStringLiteral("LIST"));
  const QCommandLineOption noCsv(QStringLiteral("no-csv"), QStringLiteral("Do not write the views' CSV data."));
  const QCommandLineOption csvOpt(QStringLiteral("csv"),
                                  QStringLiteral("(export) ignored with --png: use export without --png for datasets."),
                                  QStringLiteral("DIR"));
  const QCommandLineOption js(QStringLiteral("json"), QStringLiteral("List the files written as JSON."));
  p.addOptions({runOpt, pngOpt, viewsOpt, sizeOpt, fmtOpt, noCsv, csvOpt, js});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() != 1) return fail(QStringLiteral("render needs one FILE.h5"));
  if (!p.isSet(pngOpt)) return fail(QStringLiteral("--png DIR is required"));
  if (p.isSet(csvOpt))
    return fail(QStringLiteral("--csv and --png cannot be combined: export datasets and render views in two calls"));
#ifndef FP8LAB_HAVE_UI
  return fail(QStringLiteral(
      "this fp8lab-cli was built without the desktop app (FP8LAB_BUILD_GUI=OFF), so it cannot render views"));
#else
  if (!qobject_cast<QApplication*>(QCoreApplication::instance()))
    return fail(QStringLiteral("rendering needs a QApplication (internal error: main did not create one)"));
  fp8lab::ui::RenderRequest req;
  req.session = p.positionalArguments()[0];
  req.run = p.value(runOpt);
  req.dir = p.value(pngOpt);
  req.views = p.value(viewsOpt).split(QLatin1Char(','), Qt::SkipEmptyParts);
  if (p.isSet(fmtOpt)) req.formats = p.value(fmtOpt).toLower().split(QLatin1Char(','), Qt::SkipEmptyParts);
  if (p.isSet(sizeOpt)) {
    const QStringList wh = p.value(sizeOpt).toLower().split(QLatin1Char('x'));
    bool okw = false, okh = false;
    const int w = wh.value(0).toInt(&okw), h = wh.value(1).toInt(&okh);
    if (wh.size() != 2 || !okw || !okh || w < 16 || h < 16 || w > 20000 || h > 20000)
      return fail(QStringLiteral("--size must be WxH with 16..20000 pixels each, e.g. 1600x1000 (got '%1')")
                      .arg(p.value(sizeOpt)));
    req.size = QSize(w, h);
  }
  req.csv = !p.isSet(noCsv);
  QList<fp8lab::ui::RenderedFile> files;
  QString err;
  TerminalProgress bar(QStringLiteral("render"));
  const bool ok = fp8lab::ui::renderViews(req, &files, &err, [&](double f, const QString& what) {
    bar.update(f, what);
    return true;
  });
  bar.finish();
  if (!ok) return fail(err);
  if (p.isSet(js)) {
    QJsonArray a;
    for (const auto& f : files) {
      QJsonObject o{{QStringLiteral("view"), f.view}, {QStringLiteral("file"), f.file}};
      if (!f.run.isEmpty()) o[QStringLiteral("run")] = f.run;
      if (f.size.isValid()) {
        o[QStringLiteral("width")] = f.size.width();
        o[QStringLiteral("height")] = f.size.height();
      }
      a.append(o);
    }
    out(toJsonText(QJsonObject{{QStringLiteral("session"), req.session}, {QStringLiteral("files"), a}}) + "\n");
  } else {
    for (const auto& f : files) out(f.file + QLatin1Char('\n'));
  }
  return 0;
#endif
}

namespace {
const CommandRegistrar regRender(
    {QStringLiteral("render"), QStringLiteral("Render a session's analysis views offscreen to PNG / PDF / SVG (+ CSV)"),
     runRenderViews, 72});
} // namespace

} // namespace fp8lab::cli

// fp8lab-render FILE.h5 [--run ID] --png DIR — the desktop app's analysis views (error heatmap,
// split, block scales, amax history, scale evolution, comparison) rendered offscreen into files, so reports can
// be scripted. A program of its own because drawing the views needs the desktop app's libraries
// (Qt Widgets, QCustomPlot, Svg, PrintSupport), which fp8lab-cli does not link: `fp8lab-cli render`
// and `fp8lab-cli export FILE.h5 --run ID --png DIR` run this program with the same arguments.
#include "cli_util.h"
#include "session/report_pdf.h"
#include "views/view_render.h"

#include "session/hdf5_isolation.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonObject>

#include <cstdio>
#include <exception>

using namespace fp8lab::cli;

namespace {

/// Parses the arguments (args[0] is the program), renders, and prints the files written: one
/// path a line, or with --json {"session", "files": [{"view", "file", "run", "width", "height"}]}.
/// Returns the exit code: 0, or 2 after an error message (usage or rendering).
int renderCommand(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Render the analysis views of a session offscreen: for GEMM runs the error heatmap (heatmap) and the "
      "quantization | accumulation | total split (split) and, for runs with block scale codes (MX, NVFP4), the "
      "histogram of each operand's codes and its SQNR per block (block_scales: <run>-block_scales-A, "
      "<run>-block_error-A, the same for B), for training runs the amax history window (amax) and "
      "the scale evolution with the loss (scales), for runs with per-block statistics the layer x step map "
      "(layers, training runs) and the block map of the first operand (block_map), for language-model runs the "
      "attention probabilities of a layer's heads (attention) and the probes on the layer x step map, the "
      "comparison of all runs (compare), and the Decide view's parts: GEMM ranking, training against FP32, "
      "per-layer advice, checkpoint what-if (decide: decide-<part>). Files are named "
      "<run>-<view>.<ext> (compare.<ext>), each with its data as <name>.csv.\n"
      "`fp8lab-cli render` and `fp8lab-cli export FILE.h5 --png DIR` run this program."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  const QCommandLineOption runOpt(QStringLiteral("run"), QStringLiteral("Run to render (default: every run)."),
                                  QStringLiteral("ID"));
  const QCommandLineOption pngOpt(QStringLiteral("png"), QStringLiteral("Output directory (created)."),
                                  QStringLiteral("DIR"));
  const QCommandLineOption viewsOpt(QStringLiteral("views"),
                                    QStringLiteral("Comma-separated views: %1 (default: all that apply).")
                                        .arg(fp8lab::ui::renderableViews().join(QStringLiteral(", "))),
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
  const QCommandLineOption untrustedOpt(
      QStringLiteral("untrusted"),
      QStringLiteral("The session is from elsewhere: check it in a separate process before opening it."));
  const QCommandLineOption versionOpt(QStringLiteral("version"), QStringLiteral("Print the version and exit."));
  const QCommandLineOption layerStatOpt(
      QStringLiteral("layer-stat"),
      QStringLiteral("layers: the statistic (underflow_fraction, saturation_fraction, sqnr_db, log2_scale_mean, "
                     "max_dynamic_range, underflow_block_share, saturation_block_share; a language-model run's probes "
                     "kurtosis, max_median, massive, sink, softmax_underflow, grad_underflow, grad_noise_ratio, "
                     "quant_error; default underflow_fraction)."),
      QStringLiteral("NAME"));
  const QCommandLineOption recipeOpt(QStringLiteral("recipe"),
                                     QStringLiteral("layers: a what-if recipe of the run (with --run)."),
                                     QStringLiteral("ID"));
  const QCommandLineOption diffOpt(QStringLiteral("difference"),
                                   QStringLiteral("layers: SQNR under --recipe minus SQNR as trained (dB)."));
  const QCommandLineOption operandOpt(QStringLiteral("operand"),
                                      QStringLiteral("block_map: the operand (fc1/input, A, a checkpoint tensor; "
                                                     "with --run; default the first); attention: the layer "
                                                     "(blocks.1; default the first)."),
                                      QStringLiteral("OP"));
  const QCommandLineOption stepOpt(QStringLiteral("step"),
                                   QStringLiteral("block_map: the map step nearest N (with --run; default the "
                                                  "first); attention: the snapshot nearest N (default the last)."),
                                   QStringLiteral("N"));
  const QCommandLineOption blockStatOpt(QStringLiteral("block-stat"),
                                        QStringLiteral("block_map: the colour (log2_scale, log2_amax, "
                                                       "underflow_percent, saturated, dynamic_range_bits, sqnr_db; "
                                                       "default log2_scale)."),
                                        QStringLiteral("NAME"));
  const QCommandLineOption metricOpt(
      QStringLiteral("metric"),
      QStringLiteral("compare: the bar chart's metric (ranking, sqnr_db, max_rel, saturated_pct, underflow_pct, "
                     "seconds, quant_sqnr_db, accum_sqnr_db, final_accuracy); decide and --report: the metric of the "
                     "GEMM ranking (sqnr_db, bulk_sqnr_db, rel_err_median, rel_err_p99, cosine, ...) or of the "
                     "training comparison (final_test_accuracy, final_val_loss, final_test_loss)."),
      QStringLiteral("KEY"));
  const QCommandLineOption reportOpt(QStringLiteral("report"),
                                     QStringLiteral("Write the session report (fp8lab-cli report) to FILE.html or, "
                                                    "through Qt's PDF writer, FILE.pdf, instead of rendering views."),
                                     QStringLiteral("FILE"));
  p.addOptions({runOpt, pngOpt, viewsOpt, sizeOpt, fmtOpt, noCsv, csvOpt, js, untrustedOpt, versionOpt, layerStatOpt,
                recipeOpt, diffOpt, operandOpt, stepOpt, blockStatOpt, metricOpt, reportOpt});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.isSet(versionOpt)) {
    out(QStringLiteral("fp8lab-render " FP8LAB_VERSION "\n"));
    return 0;
  }
  if (p.positionalArguments().size() != 1) return fail(QStringLiteral("render needs one FILE.h5"));
  if (p.isSet(reportOpt)) {
    if (p.isSet(pngOpt)) return fail(QStringLiteral("--report and --png cannot be combined: make two calls"));
    if (p.isSet(untrustedOpt)) fp8lab::setHdf5Untrusted(true);
    QString err;
    if (!fp8lab::ui::writeSessionReport(p.positionalArguments()[0], p.value(reportOpt), p.value(metricOpt), &err))
      return fail(err);
    std::fprintf(stderr, "report written: %s\n", p.value(reportOpt).toUtf8().constData());
    return 0;
  }
  if (!p.isSet(pngOpt)) return fail(QStringLiteral("--png DIR is required"));
  if (p.isSet(csvOpt))
    return fail(QStringLiteral("--csv and --png cannot be combined: export datasets and render views in two calls"));
  if (p.isSet(untrustedOpt)) fp8lab::setHdf5Untrusted(true);
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
  req.layer_stat = p.value(layerStatOpt);
  req.recipe = p.value(recipeOpt);
  req.difference = p.isSet(diffOpt);
  req.operand = p.value(operandOpt);
  req.block_stat = p.value(blockStatOpt);
  req.metric = p.value(metricOpt);
  if (p.isSet(stepOpt)) {
    bool ok = false;
    req.step = p.value(stepOpt).toLongLong(&ok);
    if (!ok || req.step < 0)
      return fail(QStringLiteral("--step must be a step number ≥ 0 (got '%1')").arg(p.value(stepOpt)));
  }
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
}

} // namespace

int main(int argc, char** argv) {
  // The views are widgets: they need a QApplication, which needs a platform. Offscreen unless the
  // caller chose one, so the program runs without a display (servers, CI, containers).
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QCoreApplication::setApplicationName(QStringLiteral("fp8lab-render"));
  QCoreApplication::setApplicationVersion(QStringLiteral(FP8LAB_VERSION));
  QCoreApplication::setOrganizationName(QStringLiteral("FP8 Lab"));
  setProgramName("fp8lab-render");
  try {
    return renderCommand(QCoreApplication::arguments());
  } catch (const std::exception& e) {
    return fail(QString::fromUtf8(e.what()));
  }
}

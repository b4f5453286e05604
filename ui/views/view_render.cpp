#include "views/view_render.h"
#include "session/session_paths.h"

#include "views/amax_history_view.h"
#include "views/attention_view.h"
#include "views/block_map_view.h"
#include "session/block_stats.h"
#include "views/block_scale_view.h"
#include "views/comparison_view.h"
#include "views/decide_view.h"
#include "views/error_heatmap_view.h"
#include "views/layer_step_view.h"
#include "plot/qcp.h"
#include "views/scale_evolution_view.h"
#include "views/view.h"
#include "views/view_registry.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFormLayout>
#include <QSpinBox>
#include <QImage>
#include <QLabel>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>

#include <algorithm>
#include <memory>

namespace fp8lab::ui {

QStringList renderableViews() {
  QStringList names;
  for (const ViewType& t : viewTypes()) names << t.render.names;
  return names;
}

bool hasDiagnostics(const RunAccess& a) {
  if (a.has(sessionPath(layout::kProbesSteps))) return true;
  for (const QString& d : a.datasets())
    if (d.startsWith(sessionPath(layout::kBlockStatsGroup) + QLatin1Char('/')) ||
        d.startsWith(sessionPath(layout::kWhatIf) + QLatin1Char('/')))
      return true;
  return false;
}

ExportSizeDialog::ExportSizeDialog(QSize initial, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Export size"));
  auto* form = new QFormLayout(this);
  auto spin = [this](const char* name, int value) {
    auto* b = new QSpinBox(this);
    b->setObjectName(QString::fromLatin1(name));
    b->setRange(16, 20000);
    b->setSuffix(tr(" px"));
    b->setValue(std::clamp(value, 16, 20000));
    return b;
  };
  w_ = spin("width", initial.width());
  h_ = spin("height", initial.height());
  form->addRow(tr("&Width:"), w_);
  form->addRow(tr("&Height:"), h_);
  auto* note = new QLabel(tr("PNG is written at this size in pixels; PDF and SVG use it as the page size."), this);
  note->setWordWrap(true);
  form->addRow(note);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  form->addRow(buttons);
}

QSize ExportSizeDialog::chosenSize() const {
  return {w_->value(), h_->value()};
}

bool exportViewSized(View* view, const QString& fileName, QSize size, QString* error) {
  const QString suffix = QFileInfo(fileName).suffix().toLower();
  if (size.width() < 16 || size.height() < 16 || size.width() > 20000 || size.height() > 20000) {
    if (error)
      *error = QObject::tr("export size %1x%2 is outside 16..20000 pixels").arg(size.width()).arg(size.height());
    return false;
  }
  const QString tmp = fileName + QStringLiteral(".part");
  QCustomPlot* plot = view->exportPlot();
  bool ok = false;
  if (suffix == QStringLiteral("png")) {
    if (plot)
      ok = plot->savePng(tmp, size.width(), size.height(), 1.0);
    else {
      // A widget cannot be made smaller than its minimum size: render at the size it takes and
      // scale to the chosen one. The view goes back to its size (it may sit in a tab).
      const QSize old = view->size();
      view->resize(size);
      QImage img = view->grab().toImage();
      view->resize(old);
      img.setDevicePixelRatio(1.0);
      if (img.size() != size) img = img.scaled(size, Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
      ok = img.save(tmp, "PNG");
    }
  } else if (suffix == QStringLiteral("pdf")) {
    if (plot) {
      ok = plot->savePdf(tmp, size.width(), size.height(), QCP::epNoCosmetic, QStringLiteral("FP8 Lab"), view->title());
    } else {
      const QSize old = view->size();
      view->resize(size);
      const QSize got = view->size();
      QPdfWriter pdf(tmp);
      pdf.setCreator(QStringLiteral("FP8 Lab"));
      pdf.setTitle(view->title());
      pdf.setPageSize(QPageSize(QSizeF(size.width(), size.height()), QPageSize::Point));
      pdf.setPageMargins({});
      pdf.setResolution(72);
      QPainter p;
      ok = p.begin(&pdf);
      if (ok) {
        p.scale(double(size.width()) / got.width(), double(size.height()) / got.height());
        view->render(&p);
        p.end();
      }
      view->resize(old);
    }
  } else if (suffix == QStringLiteral("svg")) {
    QSvgGenerator gen;
    gen.setFileName(tmp);
    gen.setSize(size);
    gen.setViewBox(QRect(QPoint(0, 0), size));
    gen.setTitle(view->title());
    gen.setDescription(QStringLiteral("Exported by FP8 Lab " FP8LAB_VERSION));
    if (plot) {
      QCPPainter p;
      ok = p.begin(&gen);
      if (ok) {
        plot->toPainter(&p, size.width(), size.height());
        ok = p.end();
      }
    } else {
      const QSize old = view->size();
      view->resize(size);
      const QSize got = view->size();
      QPainter p;
      ok = p.begin(&gen);
      if (ok) {
        p.scale(double(size.width()) / got.width(), double(size.height()) / got.height());
        view->render(&p);
        ok = p.end();
      }
      view->resize(old);
    }
  } else {
    if (error) *error = QObject::tr("unknown export type '.%1' (use .png, .pdf or .svg)").arg(suffix);
    return false;
  }
  if (ok) {
    QFile::remove(fileName);
    ok = QFile::rename(tmp, fileName);
  }
  if (!ok) {
    QFile::remove(tmp);
    if (error) *error = QObject::tr("could not write %1").arg(fileName);
  }
  return ok;
}

namespace {

bool writeCsv(View* v, const QString& file, QString* error) {
  const QString text = v->csv();
  if (text.isEmpty()) return true; // nothing to write (an empty state)
  QFile f(file + QStringLiteral(".part"));
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    if (error) *error = QObject::tr("cannot write %1: %2").arg(file, f.errorString());
    return false;
  }
  const QByteArray b = text.toUtf8();
  if (f.write(b) != b.size() || !f.flush()) {
    if (error) *error = QObject::tr("cannot write %1: %2").arg(file, f.errorString());
    f.remove();
    return false;
  }
  f.close();
  QFile::remove(file);
  return QFile::rename(f.fileName(), file);
}

} // namespace

bool renderViews(const RenderRequest& req, QList<RenderedFile>* written, QString* error,
                 const std::function<bool(double, const QString&)>& progress) {
#ifndef FP8LAB_HAVE_HDF5
  Q_UNUSED(req);
  Q_UNUSED(written);
  Q_UNUSED(progress);
  if (error) *error = QObject::tr("this build has no HDF5 support, so it cannot read sessions");
  return false;
#else
  for (const QString& v : req.views)
    if (!renderableViews().contains(v)) {
      if (error)
        *error = QObject::tr("unknown view '%1' (views: %2)").arg(v, renderableViews().join(QStringLiteral(", ")));
      return false;
    }
  for (const QString& f : req.formats)
    if (f != QStringLiteral("png") && f != QStringLiteral("pdf") && f != QStringLiteral("svg")) {
      if (error) *error = QObject::tr("unknown format '%1' (png, pdf, svg)").arg(f);
      return false;
    }
  std::optional<LayerStat> layer_stat;
  std::optional<BlockStat> block_stat;
  if (!req.layer_stat.isEmpty() && !(layer_stat = parseLayerStat(req.layer_stat))) {
    QStringList names;
    for (LayerStat s : allLayerStats()) names << layerStatDataset(s);
    for (LayerStat s : allProbeStats()) names << layerStatDataset(s);
    if (error)
      *error = QObject::tr("unknown layer statistic '%1' (%2)").arg(req.layer_stat, names.join(QStringLiteral(", ")));
    return false;
  }
  if (!req.block_stat.isEmpty() && !(block_stat = parseBlockStat(req.block_stat))) {
    QStringList names;
    for (BlockStat s : allBlockStats()) names << blockStatKey(s);
    if (error)
      *error = QObject::tr("unknown block statistic '%1' (%2)").arg(req.block_stat, names.join(QStringLiteral(", ")));
    return false;
  }
  if (req.run.isEmpty() && (!req.recipe.isEmpty() || !req.operand.isEmpty() || req.step >= 0)) {
    if (error) *error = QObject::tr("--recipe, --operand and --step choose within one run: give --run ID");
    return false;
  }
  if (req.difference && (req.recipe.isEmpty() || (layer_stat && *layer_stat != LayerStat::SqnrDb))) {
    if (error) *error = QObject::tr("--difference needs --recipe and shows SQNR (--layer-stat sqnr_db or none)");
    return false;
  }
  if (!req.metric.isEmpty() && !rankingMetric(req.metric.toStdString()) &&
      !ComparisonView::metricKeys().contains(req.metric)) {
    QStringList names = ComparisonView::metricKeys();
    for (const RankingMetric& m : rankingMetrics())
      if (!names.contains(QString::fromStdString(m.key))) names << QString::fromStdString(m.key);
    if (error) *error = QObject::tr("unknown metric '%1' (%2)").arg(req.metric, names.join(QStringLiteral(", ")));
    return false;
  }
  QString err;
  auto first = RunAccess::fromFile(req.session, QString(), &err);
  if (!first) {
    if (error) *error = err;
    return false;
  }
  // All runs of the file (ids from a second open: SessionInfo lists them).
  QList<std::shared_ptr<RunAccess>> all;
  {
    auto res = fp8lab::SessionReader::open(req.session.toStdString());
    if (!res.ok()) {
      if (error) *error = QString::fromStdString(res.errors());
      return false;
    }
    for (const auto& r : res.value->info().runs) {
      auto a = RunAccess::fromFile(req.session, QString::fromStdString(r.id), &err);
      if (!a) {
        if (error) *error = err;
        return false;
      }
      all << a;
    }
  }
  QList<std::shared_ptr<RunAccess>> chosen;
  if (req.run.isEmpty())
    chosen = all;
  else {
    for (const auto& a : all)
      if (a->id() == req.run) chosen << a;
    if (chosen.isEmpty()) {
      QStringList ids;
      for (const auto& a : all) ids << a->id();
      if (error)
        *error = QObject::tr("no run '%1' in %2 (runs: %3)").arg(req.run, req.session, ids.join(QStringLiteral(", ")));
      return false;
    }
  }
  // Each registered view adds its files: per chosen run, then once for the whole session.
  QString choice_error;
  const RenderScope scope{req, req.session, all, &choice_error};
  QList<RenderJob> jobs;
  const std::vector<ViewType> types = viewTypes();
  for (const auto& a : chosen)
    for (const ViewType& t : types)
      if (t.render.per_run) t.render.per_run(scope, a, jobs);
  for (const ViewType& t : types)
    if (t.render.per_session) t.render.per_session(scope, jobs);
  if (!choice_error.isEmpty()) {
    if (error) *error = choice_error;
    return false;
  }
  if (jobs.isEmpty()) {
    if (error)
      *error = QObject::tr(
                   "nothing to render: the chosen run(s) have no view among %1 (GEMM runs: heatmap, split, "
                   "block_scales when they store block scale codes; training runs: amax, scales; runs with per-block "
                   "statistics: layers (training), block_map; language-model runs: layers (probes), attention)")
                   .arg(req.views.isEmpty() ? renderableViews().join(QStringLiteral(", "))
                                            : req.views.join(QStringLiteral(", ")));
    return false;
  }
  // Created once every argument is known to be good: a refused call writes nothing.
  if (!QDir().mkpath(req.dir)) {
    if (error) *error = QObject::tr("cannot create directory %1").arg(req.dir);
    return false;
  }
  for (int k = 0; k < jobs.size(); ++k) {
    const RenderJob& j = jobs[k];
    if (progress && !progress(double(k) / double(jobs.size()), j.name)) {
      if (error) *error = QObject::tr("cancelled");
      return false;
    }
    std::unique_ptr<View> v = j.make();
    const QString view = j.view.isEmpty() ? j.name : j.view;
    v->resize(req.size);
    const QString base = QDir(req.dir).filePath(j.run.isEmpty() ? j.name : j.run + QLatin1Char('-') + j.name);
    for (const QString& f : req.formats) {
      const QString file = base + QLatin1Char('.') + f;
      if (!exportViewSized(v.get(), file, req.size, error)) return false;
      if (written) *written << RenderedFile{j.run, view, file, req.size};
    }
    if (req.csv) {
      const QString file = base + QStringLiteral(".csv");
      if (!writeCsv(v.get(), file, error)) return false;
      if (written && QFileInfo::exists(file)) *written << RenderedFile{j.run, view, file, {}};
    }
  }
  if (progress) progress(1.0, QObject::tr("done"));
  return true;
#endif
}

} // namespace fp8lab::ui

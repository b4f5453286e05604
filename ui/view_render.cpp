#include "view_render.h"
#include "session_paths.h"

#include "amax_history_view.h"
#include "attention_view.h"
#include "block_map_view.h"
#include "block_stats.h"
#include "block_scale_view.h"
#include "comparison_view.h"
#include "decide_view.h"
#include "error_heatmap_view.h"
#include "layer_step_view.h"
#include "qcp.h"
#include "scale_evolution_view.h"
#include "view.h"

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
  return {QStringLiteral("heatmap"),      QStringLiteral("split"),     QStringLiteral("kernel_check"),
          QStringLiteral("block_scales"), QStringLiteral("amax"),      QStringLiteral("scales"),
          QStringLiteral("layers"),       QStringLiteral("block_map"), QStringLiteral("attention"),
          QStringLiteral("compare"),      QStringLiteral("decide")};
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
  auto wants = [&](const QString& v) { return req.views.isEmpty() || req.views.contains(v); };
  struct Job {
    QString run, name;
    std::function<std::unique_ptr<View>()> make;
    QString view{}; ///< the view name of the files; empty: `name`
  };
  QList<Job> jobs;
  auto hasBlockStats = [](const RunAccess& a) {
    for (const QString& d : a.datasets())
      if (d.startsWith(sessionPath(layout::kBlockStatsGroup) + QLatin1Char('/')) ||
          d.startsWith(sessionPath(layout::kWhatIf) + QLatin1Char('/')))
        return true;
    return false;
  };
  // The diagnostic views of a run with per-block statistics: the layer × step map (training) and
  // the block map of its first operand at its first map step.
  // A choice the run cannot show (a recipe or operand it lacks) is an error, not a silent default.
  QString choice_error;
  auto addDiagnostics = [&](const std::shared_ptr<RunAccess>& a) {
    // The attention snapshots of a language-model run: --operand names the layer (blocks.<l>),
    // --step the snapshot nearest it.
    if (a->has(sessionPath(layout::kAttentionSteps)) && wants(QStringLiteral("attention"))) {
      const QStringList blocks = attentionBlocks(*a);
      if (!req.operand.isEmpty() && !blocks.contains(req.operand) && req.views.contains(QStringLiteral("attention")) &&
          choice_error.isEmpty())
        choice_error = QObject::tr("run %1 has no attention snapshots of '%2' (its layers: %3)")
                           .arg(a->id(), req.operand, blocks.join(QStringLiteral(", ")));
      if (!blocks.isEmpty())
        jobs << Job{a->id(), QStringLiteral("attention"), [a, req] {
                      auto v = std::make_unique<AttentionView>();
                      v->setRunAccess(a);
                      if (!req.operand.isEmpty()) v->setBlock(req.operand);
                      if (req.step >= 0) {
                        const std::vector<int64_t> steps = attentionSteps(*a);
                        int best = 0;
                        for (size_t i = 0; i < steps.size(); ++i)
                          if (std::llabs(steps[i] - req.step) < std::llabs(steps[size_t(best)] - req.step))
                            best = int(i);
                        v->setSnapshot(best);
                      }
                      return std::unique_ptr<View>(std::move(v));
                    }};
    }
    const bool probes = a->has(sessionPath(layout::kProbesSteps));
    if (!hasBlockStats(*a) && !probes) return;
    if (a->type() == QStringLiteral("training") && wants(QStringLiteral("layers"))) {
      if (!req.recipe.isEmpty() && !whatIfRecipes(*a).contains(req.recipe) && choice_error.isEmpty())
        choice_error = QObject::tr("run %1 has no what-if recipe '%2' (its recipes: %3)")
                           .arg(a->id(), req.recipe, whatIfRecipes(*a).join(QStringLiteral(", ")));
      jobs << Job{a->id(), QStringLiteral("layers"), [a, layer_stat, req] {
                    auto v = std::make_unique<LayerStepView>();
                    v->setRunAccess(a);
                    if (layer_stat) v->setStat(*layer_stat);
                    if (!req.recipe.isEmpty()) v->setRecipe(req.recipe, req.difference);
                    return std::unique_ptr<View>(std::move(v));
                  }};
    }
    const std::vector<MapOperand> ops = blockMapOperands(*a);
    if (wants(QStringLiteral("block_map")) && !ops.empty()) {
      if (!req.operand.isEmpty() &&
          std::none_of(ops.begin(), ops.end(), [&](const MapOperand& o) { return o.operand == req.operand; }) &&
          !attentionBlocks(*a).contains(req.operand) && choice_error.isEmpty()) {
        QStringList names;
        for (const MapOperand& o : ops) names << o.operand;
        choice_error = QObject::tr("run %1 has no block map of '%2' (its operands: %3)")
                           .arg(a->id(), req.operand, names.join(QStringLiteral(", ")));
      }
      jobs << Job{a->id(), QStringLiteral("block_map"), [a, block_stat, req] {
                    auto v = std::make_unique<BlockMapView>();
                    v->setRunAccess(a);
                    if (!req.operand.isEmpty()) v->setOperand(req.operand);
                    if (req.step >= 0) v->setStep(req.step);
                    if (block_stat) v->setStat(*block_stat);
                    return std::unique_ptr<View>(std::move(v));
                  }};
    }
  };
  for (const auto& a : chosen) {
    addDiagnostics(a);
    if (a->type().startsWith(QStringLiteral("gemm"))) {
      if (wants(QStringLiteral("heatmap")))
        jobs << Job{a->id(), QStringLiteral("heatmap"), [a] {
                      auto v = std::make_unique<ErrorHeatmapView>();
                      v->setRunAccess(a);
                      return std::unique_ptr<View>(std::move(v));
                    }};
      if (wants(QStringLiteral("split")))
        jobs << Job{a->id(), QStringLiteral("split"), [a] {
                      auto v = std::make_unique<ErrorHeatmapView>();
                      v->setRunAccess(a);
                      v->setMode(ErrorHeatmapView::Mode::Split);
                      return std::unique_ptr<View>(std::move(v));
                    }};
      // A kernel check (runs with an observed D): observed − reference and the ULP histogram.
      if (wants(QStringLiteral("kernel_check")) && a->has(sessionPath(layout::kObservedD)))
        jobs << Job{a->id(), QStringLiteral("kernel_check"), [a] {
                      auto v = std::make_unique<ErrorHeatmapView>();
                      v->setRunAccess(a);
                      v->setMode(ErrorHeatmapView::Mode::KernelCheck);
                      v->setKind(ErrorKind::Ulp);
                      return std::unique_ptr<View>(std::move(v));
                    }};
      // Block scales: per operand with block scale codes (MX, NVFP4), the histogram of its codes
      // ("block_scales-A") and, when the run stores its input and dequantized values, the SQNR
      // of each block ("block_error-A").
      if (wants(QStringLiteral("block_scales")))
        for (const char op : {'A', 'B'}) {
          const QString p = sessionPath(layout::quantized(std::string(1, op)));
          if (!a->has(p + QStringLiteral("_scale_codes"))) continue;
          const QString suffix = QStringLiteral("-") + QLatin1Char(op);
          jobs << Job{a->id(), QStringLiteral("block_scales") + suffix,
                      [a, op] {
                        auto v = std::make_unique<BlockScaleView>();
                        v->setRunAccess(a);
                        v->setOperand(op);
                        return std::unique_ptr<View>(std::move(v));
                      },
                      QStringLiteral("block_scales")};
          if (a->has(sessionPath(layout::inputs(std::string(1, op)))) && a->has(p + QStringLiteral("_dequantized")) &&
              a->has(p + QStringLiteral("_scales")))
            jobs << Job{a->id(), QStringLiteral("block_error") + suffix,
                        [a, op] {
                          auto v = std::make_unique<BlockScaleView>();
                          v->setRunAccess(a);
                          v->setOperand(op);
                          v->setMode(BlockScaleView::Mode::ErrorSqnr);
                          return std::unique_ptr<View>(std::move(v));
                        },
                        QStringLiteral("block_scales")};
        }
    } else if (a->type() == QStringLiteral("training")) {
      if (wants(QStringLiteral("amax")))
        jobs << Job{a->id(), QStringLiteral("amax"), [a] {
                      auto v = std::make_unique<AmaxHistoryView>();
                      v->setRunAccess(a);
                      // Prefer a tensor with a recorded window (delayed scaling).
                      for (const QString& t : v->tensors())
                        if (a->has(sessionPath(layout::historyAmaxHistory(layoutName(t))))) {
                          v->setTensor(t);
                          break;
                        }
                      return std::unique_ptr<View>(std::move(v));
                    }};
      if (wants(QStringLiteral("scales"))) {
        std::shared_ptr<RunAccess> cmp;
        for (const auto& o : all)
          if (o != a && o->type() == QStringLiteral("training") &&
              o->attr(QStringLiteral("precision")) == QStringLiteral("fp8")) {
            cmp = o;
            break;
          }
        jobs << Job{a->id(), QStringLiteral("scales"), [a, cmp] {
                      auto v = std::make_unique<ScaleEvolutionView>();
                      v->setRuns(a, cmp);
                      return std::unique_ptr<View>(std::move(v));
                    }};
      }
    }
  }
  if (wants(QStringLiteral("compare")) && !all.isEmpty())
    jobs << Job{QString(), QStringLiteral("compare"), [all, req] {
                  auto v = std::make_unique<ComparisonView>();
                  v->setRuns(all);
                  if (!req.metric.isEmpty()) v->setMetric(req.metric);
                  return std::unique_ptr<View>(std::move(v));
                }};
  // The Decide view: one file per part with data and per setting (model, advice run, checkpoint)
  // of that part; the metric given applies to its own part (GEMM or training).
  // Asked for by name, or by default when the session has something to decide (what opens the
  // window on this view, or a checkpoint's what-if table).
  std::unique_ptr<DecideView> probe;
  const bool decide_named = req.views.contains(QStringLiteral("decide"));
  if (!all.isEmpty() && (decide_named || req.views.isEmpty())) {
    probe = std::make_unique<DecideView>();
    probe->setRuns(all, req.session);
    if (!decide_named && !DecideView::opensOn(all) && !probe->hasPart(DecideView::Part::WhatIf)) probe.reset();
  }
  if (probe) {
    using Part = DecideView::Part;
    bool any = false;
    for (Part part : {Part::Gemm, Part::Training, Part::Advice, Part::WhatIf}) {
      if (!probe->hasPart(part)) continue;
      any = true;
      probe->setPart(part);
      for (int g = 0; g < probe->groupCount(); ++g) {
        const QString name = QStringLiteral("decide-") + DecideView::partName(part) +
                             (g > 0 ? QStringLiteral("-%1").arg(g + 1) : QString());
        jobs << Job{QString(), name,
                    [all, req, part, g] {
                      auto v = std::make_unique<DecideView>();
                      v->setRuns(all, req.session);
                      if (const RankingMetric* m = rankingMetric(req.metric.toStdString());
                          m && (m->training ? part == Part::Training : part == Part::Gemm))
                        v->setMetric(req.metric);
                      v->setPart(part);
                      v->setGroup(g);
                      return std::unique_ptr<View>(std::move(v));
                    },
                    QStringLiteral("decide")};
      }
    }
    if (!any)
      jobs << Job{QString(), QStringLiteral("decide"), [all, req] {
                    auto v = std::make_unique<DecideView>();
                    v->setRuns(all, req.session);
                    return std::unique_ptr<View>(std::move(v));
                  }};
  }
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
    const Job& j = jobs[k];
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

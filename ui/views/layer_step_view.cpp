#include "views/layer_step_view.h"
#include "session/session_paths.h"

#include "plot/plot_util.h"
#include "plot/qcp.h"
#include "session/run_box.h"
#include "session/block_stats.h"
#include "session/run_sites.h"
#include "session/session_document.h"
#include "plot/style.h"
#include "views/view_registry.h"
#include "views/view_render.h"

#ifdef FP8LAB_HAVE_HDF5
#include "training/sites.h"
#endif

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace fp8lab::ui {

namespace {

const QString kBlockStats = sessionPath(layout::kBlockStatsGroup) + QLatin1Char('/');
const QString kWhatIf = sessionPath(layout::kWhatIf) + QLatin1Char('/');

/// A 1-D dataset as a vector (empty when absent or unreadable).
std::vector<double> readSeries(const RunAccess& run, const QString& path) {
  Block b;
  QString err;
  if (!run.has(path) || !run.readAll(path, &b, &err)) return {};
  return b.v;
}

QString valueText(double v, const QString& unit) {
  if (std::isnan(v)) return QObject::tr("no data (NaN)");
  if (std::isinf(v))
    return QObject::tr("no data (%1\u221e)").arg(v > 0 ? QStringLiteral("+") : QStringLiteral("\u2212"));
  const QString n = QString::number(v, 'g', 4);
  if (unit.isEmpty()) return n;
  if (unit == QStringLiteral("\u00d7")) return n + unit;
  return unit == QStringLiteral("%") ? n + QStringLiteral(" %") : n + QLatin1Char(' ') + unit;
}

/// A step ticker over column indices: ticks at whole columns, labelled with the column's step.
class StepTicker : public QCPAxisTicker {
public:
  explicit StepTicker(std::vector<int64_t> steps) : steps_(std::move(steps)) {}

protected:
  double getTickStep(const QCPRange& range) override { return std::max(1.0, QCPAxisTicker::getTickStep(range)); }
  QString getTickLabel(double tick, const QLocale&, QChar, int) override {
    const double r = std::round(tick);
    if (std::fabs(tick - r) > 1e-6 || r < 0 || r >= double(steps_.size())) return {};
    return QString::number(steps_[size_t(r)]);
  }

private:
  std::vector<int64_t> steps_;
};

} // namespace

QString layerStatDataset(LayerStat s) {
  switch (s) {
  case LayerStat::UnderflowPct:
    return QStringLiteral("underflow_fraction");
  case LayerStat::SaturationPct:
    return QStringLiteral("saturation_fraction");
  case LayerStat::SqnrDb:
    return QStringLiteral("sqnr_db");
  case LayerStat::Log2ScaleMean:
    return QStringLiteral("log2_scale_mean");
  case LayerStat::MaxDynamicRange:
    return QStringLiteral("max_dynamic_range");
  case LayerStat::UnderflowBlockPct:
    return QStringLiteral("underflow_block_share");
  case LayerStat::SaturationBlockPct:
    return QStringLiteral("saturation_block_share");
  case LayerStat::Kurtosis:
    return QStringLiteral("kurtosis");
  case LayerStat::MaxMedian:
    return QStringLiteral("max_median");
  case LayerStat::Massive:
    return QStringLiteral("massive");
  case LayerStat::Sink:
    return QStringLiteral("sink");
  case LayerStat::SoftmaxUnderflow:
    return QStringLiteral("softmax_underflow");
  case LayerStat::GradUnderflow:
    return QStringLiteral("grad_underflow");
  case LayerStat::GradNoiseRatio:
    return QStringLiteral("grad_noise_ratio");
  case LayerStat::QuantError:
    return QStringLiteral("quant_error");
  }
  return {};
}

double layerStatFactor(LayerStat s) {
  switch (s) {
  case LayerStat::UnderflowPct:
  case LayerStat::SaturationPct:
  case LayerStat::UnderflowBlockPct:
  case LayerStat::SaturationBlockPct:
  case LayerStat::Sink:
  case LayerStat::SoftmaxUnderflow:
  case LayerStat::GradUnderflow:
  case LayerStat::QuantError:
    return 100.0;
  default:
    return 1.0;
  }
}

const std::vector<LayerStat>& allLayerStats() {
  static const std::vector<LayerStat> all{
      LayerStat::UnderflowPct,      LayerStat::SaturationPct,   LayerStat::SqnrDb,
      LayerStat::Log2ScaleMean,     LayerStat::MaxDynamicRange, LayerStat::UnderflowBlockPct,
      LayerStat::SaturationBlockPct};
  return all;
}

const std::vector<LayerStat>& allProbeStats() {
  static const std::vector<LayerStat> all{
      LayerStat::Kurtosis,         LayerStat::MaxMedian,     LayerStat::Massive,        LayerStat::Sink,
      LayerStat::SoftmaxUnderflow, LayerStat::GradUnderflow, LayerStat::GradNoiseRatio, LayerStat::QuantError};
  return all;
}

bool isProbeStat(LayerStat s) {
  return int(s) >= int(LayerStat::Kurtosis);
}

double layerStatMarkThreshold(LayerStat s) {
  switch (s) {
  case LayerStat::Kurtosis:
    return 20.0;
  case LayerStat::Sink:
    return 30.0;
  default:
    return std::nan("");
  }
}

bool layerStatHigherIsWorse(LayerStat s) {
  return s != LayerStat::SqnrDb && s != LayerStat::GradNoiseRatio;
}

std::optional<LayerStat> parseLayerStat(const QString& dataset) {
  for (LayerStat s : allLayerStats())
    if (layerStatDataset(s) == dataset) return s;
  for (LayerStat s : allProbeStats())
    if (layerStatDataset(s) == dataset) return s;
  return std::nullopt;
}

bool hasProbes(const RunAccess& run) {
  return run.has(sessionPath(layout::kProbesSteps));
}

QString layerStatUnit(LayerStat s) {
  switch (s) {
  case LayerStat::SqnrDb:
    return QStringLiteral("dB");
  case LayerStat::Log2ScaleMean:
    return QStringLiteral("log\u2082");
  case LayerStat::MaxDynamicRange:
    return QStringLiteral("bits");
  case LayerStat::Kurtosis:
    return QString();
  case LayerStat::MaxMedian:
  case LayerStat::GradNoiseRatio:
    return QStringLiteral("\u00d7");
  case LayerStat::Massive:
    return QStringLiteral("elements");
  default:
    return QStringLiteral("%");
  }
}

QString layerStatName(LayerStat s) {
  switch (s) {
  case LayerStat::UnderflowPct:
    return QObject::tr("underflow (of non-zero elements)");
  case LayerStat::SaturationPct:
    return QObject::tr("saturation (of elements)");
  case LayerStat::SqnrDb:
    return QObject::tr("SQNR");
  case LayerStat::Log2ScaleMean:
    return QObject::tr("mean log\u2082 of the block scales");
  case LayerStat::MaxDynamicRange:
    return QObject::tr("largest block dynamic range");
  case LayerStat::UnderflowBlockPct:
    return QObject::tr("blocks with an underflowed element");
  case LayerStat::SaturationBlockPct:
    return QObject::tr("blocks with a saturated element");
  case LayerStat::Kurtosis:
    return QObject::tr("probe: outlier kurtosis");
  case LayerStat::MaxMedian:
    return QObject::tr("probe: max / median |x|");
  case LayerStat::Massive:
    return QObject::tr("probe: massive activations");
  case LayerStat::Sink:
    return QObject::tr("probe: attention sink");
  case LayerStat::SoftmaxUnderflow:
    return QObject::tr("probe: softmax cast underflow");
  case LayerStat::GradUnderflow:
    return QObject::tr("probe: gradient underflow");
  case LayerStat::GradNoiseRatio:
    return QObject::tr("probe: gradient / quantization noise");
  case LayerStat::QuantError:
    return QObject::tr("probe: block output error vs FP32");
  }
  return {};
}

namespace {

/// The probe matrix of layerStepMatrix: every tensor with probes/<tensor>/<probe> as rows, the
/// probe steps as columns.
bool probeMatrix(const RunAccess& run, LayerStat stat, LayerStepMatrix* out, QString* why) {
  auto fail = [why](const QString& text) {
    if (why) *why = text;
    return false;
  };
  if (!hasProbes(run))
    return fail(QObject::tr("Run %1 recorded no transformer probes (probes/).\nThey come from language-model runs "
                            "(\"probes\": {\"every\": 25}, the default of resources/experiments/"
                            "transformer-lm.json; docs/training.md, \u201cProbes\u201d). Choose a per-block "
                            "statistic in the Statistic box.")
                    .arg(run.id()));
  const std::vector<double> steps = readSeries(run, sessionPath(layout::kProbesSteps));
  if (steps.empty()) return fail(QObject::tr("Run %1 has probes but no probe steps (probes/steps).").arg(run.id()));
  const QString name = layerStatDataset(stat), prefix = sessionPath(layout::kProbes) + QLatin1Char('/'),
                suffix = QLatin1Char('/') + name;
  QStringList tensors;
  for (const QString& d : run.datasets())
    if (d.startsWith(prefix) && d.endsWith(suffix)) {
      const QString t = d.mid(prefix.size(), d.size() - prefix.size() - suffix.size());
      if (!t.isEmpty() && !t.contains(QLatin1Char('/'))) tensors << t;
    }
  if (tensors.isEmpty())
    return fail(
        QObject::tr("Run %1 has no %2 probe (probes/<tensor>/%3)%4.")
            .arg(run.id(), layerStatName(stat), name,
                 stat == LayerStat::QuantError || stat == LayerStat::GradNoiseRatio || stat == LayerStat::GradUnderflow
                     ? QObject::tr(": an FP32 run quantizes nothing")
                     : QString()));
  const QStringList sites = runSites(run);
  const size_t n = steps.size();
  for (double st : steps) out->steps.push_back(int64_t(st));
  struct Pending {
    OperandRow row;
    QString link;
    std::vector<double> v;
    double order = 0;
  };
  std::vector<Pending> rows;
  auto link = [&run](const QString& op) {
    return run.has(sessionPath(layout::historyAmax(layoutName(op)))) ? op : QString();
  };
  const double f = layerStatFactor(stat);
  for (const QString& t : tensors) {
    Block b;
    QString err;
    if (!run.readAll(prefix + t + suffix, &b, &err)) continue;
    const std::vector<int64_t> shape = run.shape(prefix + t + suffix);
    // [p] (one row) or [p, heads] (the sink: a row per head).
    const int64_t cols = shape.size() == 2 ? shape[1] : 1;
    for (int64_t h = 0; h < cols; ++h) {
      Pending p;
      p.v.assign(n, std::nan(""));
      for (size_t c = 0; c < n; ++c) {
        const size_t i = shape.size() == 2 ? c * size_t(cols) + size_t(h) : c;
        if (i < b.v.size()) p.v[c] = b.v[i] * f;
      }
      const bool site = sites.contains(t);
      switch (stat) {
      case LayerStat::Sink:
        p.row = {t + QStringLiteral(".attn"), QStringLiteral("head %1").arg(h)};
        break;
      case LayerStat::SoftmaxUnderflow:
        p.row = {t + QStringLiteral(".attn"), QStringLiteral("softmax P")};
        break;
      case LayerStat::GradUnderflow:
      case LayerStat::GradNoiseRatio:
        p.row = {t, QStringLiteral("output_grad")};
        p.link = link(p.row.path());
        break;
      default:
        p.row = {t, site ? QStringLiteral("input") : QStringLiteral("output")};
        if (site) p.link = link(p.row.path());
      }
      // The attention probes sit with the block's attention sites; a block's output after its sites.
      const QString place = stat == LayerStat::Sink || stat == LayerStat::SoftmaxUnderflow ? t : p.row.layer;
      p.order = tensorOrder(place, sites);
      if (stat == LayerStat::Sink || stat == LayerStat::SoftmaxUnderflow) {
        // After the block's attention sites (scores, context), before its FFN.
        double last_attn = p.order;
        for (qsizetype k = 0; k < sites.size(); ++k)
          if (siteGroup(sites[k]).key == siteGroup(p.row.layer).key) last_attn = double(k) + 0.25;
        p.order = last_attn;
      }
      rows.push_back(std::move(p));
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Pending& a, const Pending& b) { return a.order < b.order; });
  out->v.assign(rows.size() * n, std::nan(""));
  for (size_t r = 0; r < rows.size(); ++r) {
    out->rows.push_back(rows[r].row);
    out->links.push_back(rows[r].link);
    std::copy(rows[r].v.begin(), rows[r].v.end(), out->v.begin() + std::ptrdiff_t(r * n));
  }
  return true;
}

} // namespace

bool layerStepMatrix(const RunAccess& run, LayerStat stat, const QString& recipe, bool difference, LayerStepMatrix* out,
                     QString* why) {
  *out = {};
  if (isProbeStat(stat)) {
    out->stat = stat;
    if (!recipe.isEmpty() || difference) {
      if (why) *why = QObject::tr("The probes are measured as trained: they take no what-if recipe.");
      return false;
    }
    return probeMatrix(run, stat, out, why);
  }
  out->stat = stat;
  out->recipe = recipe;
  out->difference = difference;
  out->rows = blockStatOperands(run);
  for (const OperandRow& r : out->rows) out->links.push_back(r.path());
  auto fail = [why](const QString& text) {
    if (why) *why = text;
    return false;
  };
  if (out->rows.empty())
    return fail(QObject::tr("Run %1 was recorded without per-block statistics (block_stats/).\nRerun it with "
                            "diagnostics on \u2014 see docs/training.md, \u201cPer-block statistics\u201d.")
                    .arg(run.id()));
  if (difference && (stat != LayerStat::SqnrDb || recipe.isEmpty()))
    return fail(QObject::tr("The difference to the trained recipe is defined for the SQNR of a what-if recipe only."));
  if ((recipe.isEmpty() || difference) && !hasTrainedBlockStats(run))
    return fail(QObject::tr("Run %1 measured what-if recipes but recorded no per-block statistics as trained (%2).\n"
                            "Choose a what-if recipe in the Recipe box.")
                    .arg(run.id(), run.config().value(QStringLiteral("precision")).toString() == QStringLiteral("fp32")
                                       ? QObject::tr("an FP32 run quantizes nothing")
                                       : QObject::tr("\u201cblock_stats\u201d: false")));
  const QString ds = layerStatDataset(stat);
  const double f = layerStatFactor(stat);
  const size_t nr = out->rows.size();
  if (recipe.isEmpty()) {
    std::vector<std::vector<double>> series(nr);
    size_t n = 0;
    for (size_t r = 0; r < nr; ++r) {
      series[r] = readSeries(run, kBlockStats + out->rows[r].path() + QLatin1Char('/') + ds);
      n = std::max(n, series[r].size());
    }
    if (n == 0) return fail(QObject::tr("Run %1 has per-block statistics but no %2 series.").arg(run.id(), ds));
    for (size_t c = 0; c < n; ++c) out->steps.push_back(int64_t(c));
    out->v.assign(nr * n, std::nan(""));
    for (size_t r = 0; r < nr; ++r)
      for (size_t c = 0; c < series[r].size(); ++c) out->v[r * n + c] = series[r][c] * f;
    return true;
  }
  if (!whatIfRecipes(run).contains(recipe))
    return fail(QObject::tr("Run %1 has no what-if recipe '%2'.").arg(run.id(), recipe));
  const std::vector<double> steps = readSeries(run, sessionPath(layout::kWhatIfSteps));
  if (steps.empty()) return fail(QObject::tr("Run %1 has what-if recipes but no what_if/steps.").arg(run.id()));
  const size_t n = steps.size();
  for (double s : steps) out->steps.push_back(int64_t(s));
  out->v.assign(nr * n, std::nan(""));
  if (difference) {
    out->what_if.assign(nr * n, std::nan(""));
    out->trained.assign(nr * n, std::nan(""));
  }
  for (size_t r = 0; r < nr; ++r) {
    const QString op = out->rows[r].path();
    const std::vector<double> w = readSeries(run, kWhatIf + recipe + QLatin1Char('/') + op + QLatin1Char('/') + ds);
    const std::vector<double> t =
        difference ? readSeries(run, kBlockStats + op + QStringLiteral("/sqnr_db")) : std::vector<double>{};
    for (size_t c = 0; c < n && c < w.size(); ++c) {
      if (!difference) {
        out->v[r * n + c] = w[c] * f;
        continue;
      }
      const int64_t s = out->steps[c];
      const double tv = s >= 0 && size_t(s) < t.size() ? t[size_t(s)] : std::nan("");
      out->what_if[r * n + c] = w[c];
      out->trained[r * n + c] = tv;
      out->v[r * n + c] = w[c] - tv;
    }
  }
  return true;
}

std::vector<OperandRanking> recipeRanking(const RunAccess& run) {
  std::vector<OperandRanking> out;
  const QStringList recipes = whatIfRecipes(run);
  if (recipes.isEmpty()) return out;
  const std::vector<double> steps = readSeries(run, sessionPath(layout::kWhatIfSteps));
  auto score = [](const QString& recipe, const std::vector<double>& v) {
    RecipeScore s;
    s.recipe = recipe;
    double sum = 0;
    for (double x : v)
      if (std::isfinite(x)) {
        sum += x;
        ++s.steps;
      }
    s.mean_db = s.steps > 0 ? sum / double(s.steps) : std::nan("");
    return s;
  };
  const bool trained = hasTrainedBlockStats(run);
  for (const OperandRow& row : blockStatOperands(run)) {
    OperandRanking rk;
    rk.row = row;
    if (trained) {
      const std::vector<double> t = readSeries(run, kBlockStats + row.path() + QStringLiteral("/sqnr_db"));
      std::vector<double> at;
      for (double s : steps) at.push_back(s >= 0 && size_t(s) < t.size() ? t[size_t(s)] : std::nan(""));
      rk.scores.push_back(score(QString(), at));
    }
    for (const QString& r : recipes)
      rk.scores.push_back(
          score(r, readSeries(run, kWhatIf + r + QLatin1Char('/') + row.path() + QStringLiteral("/sqnr_db"))));
    std::stable_sort(rk.scores.begin(), rk.scores.end(), [](const RecipeScore& a, const RecipeScore& b) {
      const bool fa = std::isfinite(a.mean_db), fb = std::isfinite(b.mean_db);
      if (fa != fb) return fa;
      return fa && a.mean_db > b.mean_db;
    });
    out.push_back(std::move(rk));
  }
  return out;
}

// ---- the view ----------------------------------------------------------------------------------

LayerStepView::LayerStepView(QWidget* parent)
    : AnalysisView(RunCap::MayHoldBlockStats | RunCap::LanguageModel, parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  auto* bar = new QHBoxLayout;
  // Language-model runs have probes even without per-block statistics (an FP32 run).
  addRunBox(bar);
  stat_box_ = new QComboBox(this);
  stat_box_->setObjectName(QStringLiteral("stat"));
  for (LayerStat s : allLayerStats())
    stat_box_->addItem(layerStatName(s) + QStringLiteral(" (") + layerStatUnit(s) + QLatin1Char(')'), int(s));
  addLabeled(bar, tr("&Statistic:"), stat_box_);
  recipe_box_ = new QComboBox(this);
  recipe_box_->setObjectName(QStringLiteral("recipe"));
  recipe_box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  addLabeled(bar, tr("R&ecipe:"), recipe_box_);
  bar->addStretch(1);
  v->addLayout(bar);

  // The rows of a transformer (~50 sites × 3 operands): a site glob, an operand, the groups.
  filter_bar_ = new QWidget(this);
  filter_bar_->setObjectName(QStringLiteral("filterBar"));
  auto* fb = new QHBoxLayout(filter_bar_);
  fb->setContentsMargins(0, 0, 0, 0);
  site_edit_ = new QLineEdit(filter_bar_);
  site_edit_->setObjectName(QStringLiteral("siteFilter"));
  site_edit_->setPlaceholderText(tr("* (e.g. blocks.*.ffn.*, lm_head)"));
  site_edit_->setClearButtonEnabled(true);
  site_edit_->setToolTip(tr("The sites shown: a glob over the site paths ('*' any run of characters, '?' one); "
                            "empty: every site"));
  site_edit_->setMinimumWidth(200);
  fb->addWidget(new QLabel(tr("S&ites:"), filter_bar_));
  qobject_cast<QLabel*>(fb->itemAt(0)->widget())->setBuddy(site_edit_);
  fb->addWidget(site_edit_);
  operand_box_ = new QComboBox(filter_bar_);
  operand_box_->setObjectName(QStringLiteral("operandFilter"));
  operand_box_->addItem(tr("all"), QString());
  operand_box_->addItem(QStringLiteral("input"), QStringLiteral("input"));
  operand_box_->addItem(QStringLiteral("kernel"), QStringLiteral("kernel"));
  operand_box_->addItem(QStringLiteral("output_grad"), QStringLiteral("output_grad"));
  operand_box_->setToolTip(tr("The operand of each site shown (the probes have their own rows and ignore it)"));
  auto* ol = new QLabel(tr("O&perand:"), filter_bar_);
  ol->setBuddy(operand_box_);
  fb->addWidget(ol);
  fb->addWidget(operand_box_);
  groups_button_ = new QToolButton(filter_bar_);
  groups_button_->setObjectName(QStringLiteral("groups"));
  groups_button_->setText(tr("&Groups"));
  groups_button_->setPopupMode(QToolButton::InstantPopup);
  groups_button_->setToolTip(tr("Collapse a block's attention or FFN rows to one row holding their worst value at "
                                "each step, or expand it (a click on a collapsed row expands it too)"));
  groups_menu_ = new QMenu(groups_button_);
  groups_button_->setMenu(groups_menu_);
  fb->addWidget(groups_button_);
  shown_note_ = new QLabel(filter_bar_);
  shown_note_->setObjectName(QStringLiteral("shownNote"));
  fb->addWidget(shown_note_, 1);
  filter_bar_->hide();
  v->addWidget(filter_bar_);

  plot_ = new QCustomPlot(this);
  plot_->setObjectName(QStringLiteral("layersPlot"));
  plot_->setMinimumSize(420, 260);
  plot_->setMouseTracking(true);
  v->addWidget(plot_, 1);

  auto* line = new QHBoxLayout;
  hover_ = new QLabel(this);
  hover_->setObjectName(QStringLiteral("hover"));
  hover_->setWordWrap(true);
  hover_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  hover_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  line->addWidget(hover_, 1);
  nonfinite_button_ = new QPushButton(this);
  nonfinite_button_->setObjectName(QStringLiteral("nonfinite"));
  nonfinite_button_->hide();
  line->addWidget(nonfinite_button_);
  v->addLayout(line);

  ranking_note_ = new QLabel(this);
  ranking_note_->setObjectName(QStringLiteral("rankingNote"));
  ranking_note_->setWordWrap(true);
  ranking_note_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  v->addWidget(ranking_note_);
  ranking_table_ = new QTableWidget(this);
  ranking_table_->setObjectName(QStringLiteral("ranking"));
  ranking_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  ranking_table_->verticalHeader()->setVisible(true);
  ranking_table_->setMaximumHeight(230);
  v->addWidget(ranking_table_);

  connect(stat_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_ || stat_box_->currentIndex() < 0) return;
    stat_ = LayerStat(stat_box_->currentData().toInt());
    fillRecipes();
    reload();
  });
  connect(site_edit_, &QLineEdit::textChanged, this, [this](const QString& t) {
    if (!updating_) setSiteFilter(t);
  });
  connect(operand_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) setOperandFilter(operand_box_->currentData().toString());
  });
  connect(recipe_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    const QStringList d = recipe_box_->currentData().toStringList();
    recipe_ = d.value(0);
    difference_ = d.value(1) == QStringLiteral("diff");
    reload();
  });
  connect(nonfinite_button_, &QPushButton::clicked, this, [this] { goToNonfinite(); });
  connect(plot_, &QCustomPlot::afterLayout, this, [this] { labelRows(); });
  connectCellMouse(
      plot_, this,
      [this](const QPoint& p, int64_t* r, int64_t* c) {
        int ri = -1, ci = -1;
        if (!cellAt(p, &ri, &ci)) return false;
        *r = ri;
        *c = ci;
        return true;
      },
      [this](int64_t r, int64_t c) { hoverAt(int(r), int(c)); },
      [this](int64_t r, int64_t c) { clickCell(int(r), int(c)); });
  setRunAccess(nullptr);
}

void LayerStepView::runChosen(Read) {
  run_ = runs()->access();
  fillStats();
  defaultFilters();
  fillRecipes();
  reload();
}

void LayerStepView::setRunAccess(std::shared_ptr<RunAccess> run) {
  runs()->showOnly(run ? run->id() : QString());
  run_ = std::move(run);
  fillStats();
  defaultFilters();
  fillRecipes();
  reload();
}

void LayerStepView::fillStats() {
  const bool probes = run_ && hasProbes(*run_);
  // A run with probes but no per-block statistics (an FP32 language model) opens at a probe.
  if (run_ && probes && !isProbeStat(stat_) && blockStatOperands(*run_).empty()) stat_ = LayerStat::Kurtosis;
  if (!probes && isProbeStat(stat_)) stat_ = LayerStat::UnderflowPct;
  updating_ = true;
  stat_box_->clear();
  auto add = [this](LayerStat st) {
    const QString unit = layerStatUnit(st);
    stat_box_->addItem(unit.isEmpty() ? layerStatName(st)
                                      : layerStatName(st) + QStringLiteral(" (") + unit + QLatin1Char(')'),
                       int(st));
  };
  for (LayerStat st : allLayerStats()) add(st);
  if (probes) {
    stat_box_->insertSeparator(stat_box_->count());
    for (LayerStat st : allProbeStats()) add(st);
  }
  stat_box_->setCurrentIndex(stat_box_->findData(int(stat_)));
  updating_ = false;
}

void LayerStepView::defaultFilters() {
  const QString id = run_ ? run_->id() : QString();
  if (id == defaults_for_) return;
  defaults_for_ = id;
  site_glob_.clear();
  operand_filter_.clear();
  collapsed_.clear();
  if (run_) {
    const std::vector<OperandRow> rows = blockStatOperands(*run_);
    // ~50 sites: the inputs (what the forward GEMMs quantize); still too many, every group folded.
    if (rows.size() > 30) operand_filter_ = QStringLiteral("input");
    size_t shown = 0;
    std::set<QString> groups;
    for (const OperandRow& r : rows)
      if (operand_filter_.isEmpty() || r.operand == operand_filter_) {
        ++shown;
        groups.insert(siteGroup(r.layer).key);
      }
    if (shown > 40)
      for (const QString& g : groups)
        if (!g.isEmpty()) collapsed_.insert(g);
  }
  updating_ = true;
  site_edit_->setText(site_glob_);
  operand_box_->setCurrentIndex(std::max(0, operand_box_->findData(operand_filter_)));
  updating_ = false;
}

namespace {
/// Whether site path `path` matches the filter glob (empty or "*": every path).
bool siteMatches(const QString& glob, const QString& path) {
  const QString g = glob.trimmed();
  if (g.isEmpty() || g == QStringLiteral("*")) return true;
#ifdef FP8LAB_HAVE_HDF5
  // The precision policy's glob ('*' any run of characters, dots included; '?' one).
  return globMatch(g.toStdString(), path.toStdString());
#else
  return g == path;
#endif
}
} // namespace

void LayerStepView::setSiteFilter(const QString& glob) {
  site_glob_ = glob;
  if (site_edit_->text() != glob) {
    updating_ = true;
    site_edit_->setText(glob);
    updating_ = false;
  }
  redrawShown();
}

void LayerStepView::setOperandFilter(const QString& operand) {
  operand_filter_ = operand;
  updating_ = true;
  operand_box_->setCurrentIndex(std::max(0, operand_box_->findData(operand)));
  updating_ = false;
  redrawShown();
}

void LayerStepView::setGroupCollapsed(const QString& key, bool collapsed) {
  if (key.isEmpty()) return;
  if (collapsed)
    collapsed_.insert(key);
  else
    collapsed_.erase(key);
  redrawShown();
}

void LayerStepView::setAllGroupsCollapsed(bool collapsed) {
  collapsed_.clear();
  if (collapsed)
    for (const QString& g : groups()) collapsed_.insert(g);
  redrawShown();
}

QStringList LayerStepView::groups() const {
  QStringList out;
  for (const OperandRow& r : m_.rows) {
    const QString k = siteGroup(r.layer).key;
    if (!k.isEmpty() && !out.contains(k)) out << k;
  }
  return out;
}

bool LayerStepView::filterBarShown() const {
  return !filter_bar_->isHidden();
}

void LayerStepView::fillGroupsMenu() {
  groups_menu_->clear();
  groups_menu_->addAction(tr("Expand all"), this, [this] { setAllGroupsCollapsed(false); });
  groups_menu_->addAction(tr("Collapse all"), this, [this] { setAllGroupsCollapsed(true); });
  groups_menu_->addSeparator();
  for (const QString& g : groups()) {
    QString label = g;
    for (const OperandRow& r : m_.rows)
      if (siteGroup(r.layer).key == g) {
        label = siteGroup(r.layer).label;
        break;
      }
    QAction* a = groups_menu_->addAction(label);
    a->setCheckable(true);
    a->setChecked(!isGroupCollapsed(g));
    a->setToolTip(tr("Checked: every row of the group; unchecked: one row with the worst value"));
    connect(a, &QAction::toggled, this, [this, g](bool expanded) { setGroupCollapsed(g, !expanded); });
  }
}

void LayerStepView::rebuildShown() {
  shown_.clear();
  const bool probe = isProbeStat(m_.stat);
  std::vector<std::pair<QString, std::vector<int>>> runs; // consecutive rows of one group
  for (size_t r = 0; r < m_.rows.size(); ++r) {
    const OperandRow& row = m_.rows[r];
    // A probe row belongs to a site ("blocks.0.attn.qkv"), a block ("blocks.0", "blocks.0.attn")
    // or the embedding: the glob is matched against that name.
    if (!siteMatches(site_glob_, row.layer)) continue;
    if (!probe && !operand_filter_.isEmpty() && row.operand != operand_filter_) continue;
    const QString g = siteGroup(row.layer).key;
    if (runs.empty() || runs.back().first != g) runs.push_back({g, {}});
    runs.back().second.push_back(int(r));
  }
  const bool higher = m_.difference ? false : layerStatHigherIsWorse(m_.stat);
  for (const auto& [g, members] : runs) {
    if (!g.isEmpty() && isGroupCollapsed(g) && !members.empty()) {
      ShownRow s;
      s.group = g;
      s.members = members;
      s.label = tr("\u25b8 %1 (%2 of %3)")
                    .arg(siteGroup(m_.rows[size_t(members.front())].layer).label, higher ? tr("max") : tr("min"))
                    .arg(members.size());
      shown_.push_back(std::move(s));
      continue;
    }
    for (int r : members) {
      ShownRow s;
      s.row = r;
      s.group = g;
      s.label = m_.rows[size_t(r)].label();
      shown_.push_back(std::move(s));
    }
  }
}

double LayerStepView::shownValue(int row, int col) const {
  if (row < 0 || size_t(row) >= shown_.size() || col < 0 || size_t(col) >= m_.steps.size()) return std::nan("");
  const ShownRow& s = shown_[size_t(row)];
  if (s.row >= 0) return m_.at(size_t(s.row), size_t(col));
  const bool higher = m_.difference ? false : layerStatHigherIsWorse(m_.stat);
  double best = std::nan("");
  for (int r : s.members) {
    const double v = m_.at(size_t(r), size_t(col));
    if (LayerStepMatrix::noData(v)) continue;
    if (std::isnan(best) || (higher ? v > best : v < best)) best = v;
  }
  return best;
}

void LayerStepView::redrawShown() {
  if (!run_ || !emptyText().isEmpty() || m_.rows.empty()) return;
  sel_row_ = sel_col_ = -1;
  draw();
}

void LayerStepView::fillRecipes() {
  if (isProbeStat(stat_)) {
    // The probes are measured on the tensors as trained; the recipe chosen waits for a per-block
    // statistic.
    updating_ = true;
    recipe_box_->clear();
    recipe_box_->addItem(tr("as trained (probes)"), QStringList{QString(), QString()});
    recipe_box_->setEnabled(false);
    updating_ = false;
    return;
  }
  const QStringList recipes = run_ ? whatIfRecipes(*run_) : QStringList();
  // A run with what-if results only (FP32, "block_stats": false) has nothing "as trained".
  const bool trained = !run_ || recipes.isEmpty() || hasTrainedBlockStats(*run_);
  const bool sqnr = stat_ == LayerStat::SqnrDb;
  if (!recipes.contains(recipe_)) recipe_ = trained ? QString() : recipes.value(0);
  if (!sqnr || recipe_.isEmpty() || !trained) difference_ = false;
  updating_ = true;
  recipe_box_->clear();
  const QString scaling = run_ ? run_->attr(QStringLiteral("scaling")) : QString();
  if (trained)
    recipe_box_->addItem(scaling.isEmpty() ? tr("as trained") : tr("as trained (%1)").arg(scaling),
                         QStringList{QString(), QString()});
  for (const QString& r : recipes) recipe_box_->addItem(r, QStringList{r, QString()});
  if (sqnr && trained)
    for (const QString& r : recipes)
      recipe_box_->addItem(tr("%1 \u2212 trained").arg(r), QStringList{r, QStringLiteral("diff")});
  recipe_box_->setCurrentIndex(
      std::max(0, recipe_box_->findData(QStringList{recipe_, difference_ ? QStringLiteral("diff") : QString()})));
  recipe_box_->setEnabled(!recipes.isEmpty());
  updating_ = false;
}

void LayerStepView::setStat(LayerStat s) {
  stat_ = s;
  updating_ = true;
  stat_box_->setCurrentIndex(stat_box_->findData(int(s)));
  updating_ = false;
  fillRecipes();
  reload();
}

bool LayerStepView::setRecipe(const QString& recipe, bool difference) {
  if (!recipe.isEmpty() && (!run_ || !whatIfRecipes(*run_).contains(recipe))) return false;
  if (difference && (recipe.isEmpty() || stat_ != LayerStat::SqnrDb)) return false;
  // What-if results only: nothing as trained to show or to subtract.
  if ((recipe.isEmpty() || difference) && run_ && !whatIfRecipes(*run_).isEmpty() && !hasTrainedBlockStats(*run_))
    return false;
  recipe_ = recipe;
  difference_ = difference;
  fillRecipes();
  reload();
  return true;
}

void LayerStepView::reload() {
  m_ = {};
  ranking_.clear();
  nonfinite_ = {};
  sel_row_ = sel_col_ = -1;
  hover_text_.clear();
  hover_->clear();
  if (!run_) {
    shown_.clear();
    filter_bar_->hide();
    showEmpty(noRunText(tr("No training run in this session.\nTrain one in the Experiment panel (Training tab, "
                           "Ctrl+R) with diagnostics on, or open a session that holds one (File \u2192 Open)."),
                        noTrainedBlockStatsText));
    fillRanking();
    return;
  }
  QString why;
  // A few [steps] series per operand (9 operands × 1407 steps of float32 in the default
  // experiment): read at once, well under the 100 ms the GUI thread may block.
  const bool probe = isProbeStat(stat_);
  if (!layerStepMatrix(*run_, stat_, probe ? QString() : recipe_, !probe && difference_, &m_, &why)) {
    m_ = {};
    shown_.clear();
    filter_bar_->hide();
    showEmpty(why);
    fillRanking();
    return;
  }
  ranking_ = recipeRanking(*run_);
  nonfinite_ = probe ? nonfiniteJump(*run_) : nonfiniteJump(*run_, m_.rows);
  clearEmpty();
  draw();
  fillRanking();
}

void LayerStepView::drawEmptyState(const QString& text) {
  map_ = nullptr;
  scale_ = nullptr;
  sel_rect_ = nullptr;
  plot_->clearPlottables();
  plot_->clearItems();
  plotEmptyState(plot_, text);
  nonfinite_button_->hide();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

int LayerStepView::columnOf(int64_t step) const {
  if (m_.steps.empty()) return -1;
  const auto it = std::lower_bound(m_.steps.begin(), m_.steps.end(), step);
  if (it == m_.steps.end()) return int(m_.steps.size()) - 1;
  if (it != m_.steps.begin() && step - *(it - 1) < *it - step) return int(it - m_.steps.begin()) - 1;
  return int(it - m_.steps.begin());
}

int LayerStepView::rowOf(const QString& operand) const {
  if (operand.isEmpty()) return -1;
  for (size_t i = 0; i < shown_.size(); ++i) {
    const ShownRow& s = shown_[i];
    if (s.row >= 0 && size_t(s.row) < m_.links.size() && m_.links[size_t(s.row)] == operand) return int(i);
    for (int r : s.members)
      if (size_t(r) < m_.links.size() && m_.links[size_t(r)] == operand) return int(i);
  }
  return -1;
}

void LayerStepView::draw() {
  sel_rect_ = nullptr;
  rebuildShown();
  // The filter bar for runs with many rows (a transformer); the MLP's nine rows need none.
  filter_bar_->setVisible(m_.rows.size() > 12);
  fillGroupsMenu();
  groups_button_->setEnabled(!groups().isEmpty());
  {
    size_t drawn = 0;
    for (const ShownRow& r : shown_) drawn += r.row >= 0 ? 1 : r.members.size();
    shown_note_->setText(drawn == m_.rows.size() && shown_.size() == m_.rows.size()
                             ? tr("all %n row(s)", nullptr, int(m_.rows.size()))
                             : tr("%1 of %2 rows in %3 line(s)").arg(drawn).arg(m_.rows.size()).arg(shown_.size()));
  }
  if (shown_.empty()) {
    map_ = nullptr;
    scale_ = nullptr;
    plot_->clearPlottables();
    plot_->clearItems();
    plotEmptyState(plot_, tr("No row matches the filter (sites \u201c%1\u201d, operand %2).\nClear the Sites box or "
                             "choose another operand above.")
                              .arg(site_glob_, operand_filter_.isEmpty() ? tr("all") : operand_filter_));
    nonfinite_button_->hide();
    plot_->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  const int nr = int(shown_.size()), nc = int(m_.steps.size());
  const QString unit = layerStatUnit(stat_);
  QString what = layerStatName(stat_);
  if (m_.difference) what = tr("SQNR under %1 minus SQNR as trained").arg(m_.recipe);
  const QString under = m_.recipe.isEmpty() ? tr("as trained") : tr("under what-if recipe %1").arg(m_.recipe);
  const double mark = m_.difference || !m_.recipe.isEmpty() ? std::nan("") : layerStatMarkThreshold(stat_);
  QString title = m_.difference        ? tr("%1 per operand and step, run %2").arg(what, run_->id())
                  : isProbeStat(stat_) ? tr("%1 per tensor and probe step, run %2").arg(what, run_->id())
                                       : tr("%1 per operand and step, %2, run %3").arg(what, under, run_->id());
  if (std::isfinite(mark))
    title +=
        tr("  (\u25c6: \u2265 %1%2)").arg(QString::number(mark), unit.isEmpty() ? QString() : QLatin1Char(' ') + unit);
  const ColorMapLayout l = titledColorMap(plot_, title, font().family());
  QCPAxisRect* rect = l.rect;
  QCPAxis* x = l.x;
  QCPAxis* y = l.y;
  map_ = l.map;
  scale_ = l.scale;
  // Columns and rows are indices (what-if steps need not be evenly spaced); the step ticker labels
  // the columns with their steps. A side of one cell is drawn as two (a colour map needs two).
  const int kc = std::max(2, nc), kr = std::max(2, nr);
  map_->data()->setSize(kc, kr);
  map_->data()->setRange(nc > 1 ? QCPRange(0, nc - 1) : QCPRange(-0.25, 0.25),
                         nr > 1 ? QCPRange(0, nr - 1) : QCPRange(-0.25, 0.25));
  double lo = INFINITY, hi = -INFINITY;
  int64_t nodata = 0;
  for (int r = 0; r < nr; ++r)
    for (int c = 0; c < nc; ++c) {
      const double val = shownValue(r, c);
      if (LayerStepMatrix::noData(val)) {
        ++nodata;
        continue;
      }
      lo = std::min(lo, val);
      hi = std::max(hi, val);
    }
  for (int r = 0; r < kr; ++r)
    for (int c = 0; c < kc; ++c) {
      const double val = shownValue(std::min(r, nr - 1), std::min(c, nc - 1));
      map_->data()->setCell(c, r, LayerStepMatrix::noData(val) ? std::nan("") : val);
    }
  QCPColorGradient g = m_.difference ? differenceGradient().inverted() : errorGradient();
  g.setNanColor(noDataColor());
  map_->setGradient(g);
  if (!std::isfinite(lo)) lo = hi = 0;
  if (m_.difference) {
    // Centred at 0: red where the what-if recipe is worse than the trained one, blue where better.
    const double m = std::max({std::fabs(lo), std::fabs(hi), 0.5});
    lo = -m;
    hi = m;
  }
  if (hi <= lo) hi = lo + 1;
  map_->setDataRange(QCPRange(lo, hi));
  scale_->axis()->setLabel(m_.difference    ? tr("SQNR %1 \u2212 trained (dB; > 0: %1 better)").arg(m_.recipe)
                           : unit.isEmpty() ? layerStatName(stat_)
                                            : tr("%1 (%2)").arg(layerStatName(stat_), unit));

  // Row labels; where the rows are closer than a line of text, every n-th (labelRows, once the
  // plot is laid out; hover names each).
  label_every_ = 0;
  labelRows();
  y->setRangeReversed(true); // fc1 input on top
  y->setRange(-0.5, nr - 0.5);
  y->setLabel(isProbeStat(stat_) ? tr("probed tensor (site or block)") : tr("operand (layer, tensor)"));
  y->grid()->setVisible(false);
  drawGroups(rect, x, y);
  x->setTicker(QSharedPointer<StepTicker>::create(m_.steps));
  x->setRange(-0.5, nc - 0.5);
  x->setLabel(isProbeStat(stat_)    ? tr("step (the %1 probe steps)").arg(nc)
              : m_.recipe.isEmpty() ? tr("step (optimizer step, 0-based)")
                                    : tr("step (the %1 what-if steps)").arg(nc));
  x->grid()->setVisible(false);
  stylePlot(plot_);
  plot_->setInteractions(QCP::Interactions()); // a click selects a cell; no drag or zoom

  drawMarks(x, y, mark);

  drawFirstNonFinite(rect, x, y);
  sel_rect_ = new QCPItemRect(plot_);
  sel_rect_->setClipAxisRect(rect);
  sel_rect_->topLeft->setAxes(x, y);
  sel_rect_->bottomRight->setAxes(x, y);
  sel_rect_->setPen(QPen(Qt::black, 2));
  sel_rect_->setVisible(false);

  QString note =
      m_.difference
          ? tr("Difference of SQNR, dB: what_if/%1 minus block_stats (as trained) at each what-if step.").arg(m_.recipe)
          : QString();
  if (std::isfinite(mark))
    note += (note.isEmpty() ? QString() : QStringLiteral(" ")) +
            (stat_ == LayerStat::Sink
                 ? tr("\u25c6: %n cell(s) with a sink of at least 30 % (Gu et al. 2024's "
                      "threshold; a uniform head puts mean\u209c 1/(t+1) there, 5.9 % at "
                      "context 64).",
                      nullptr, int(marked_.size()))
                 : tr("\u25c6: %n cell(s) with an outlier kurtosis of at least %1.", nullptr, int(marked_.size()))
                       .arg(mark));
  if (nodata > 0)
    note += (note.isEmpty() ? QString() : QStringLiteral(" ")) +
            tr("%n cell(s) without a finite value (NaN, or \u00b1\u221e such as an exact SQNR) are grey.", nullptr,
               int(nodata));
  hover_->setText(note.isEmpty() ? tr("Hover over a cell for its numbers; click it to see that operand at that "
                                      "step in the Amax history and Block map views.")
                                 : note);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

/// The row groups (block × attention / FFN, the head): a white line between two groups and their
/// names on the right axis; a run without groups (the MLP) gets neither.
void LayerStepView::drawGroups(QCPAxisRect* rect, QCPAxis* x, QCPAxis* y) {
  const int nr = int(shown_.size());
  QStringList group_keys;
  for (const ShownRow& r : shown_)
    if (group_keys.isEmpty() || group_keys.back() != r.group) group_keys << r.group;
  QCPAxis* y2 = rect->axis(QCPAxis::atRight);
  if (group_keys.size() > 1 || (group_keys.size() == 1 && !group_keys.front().isEmpty())) {
    auto names = QSharedPointer<QCPAxisTickerText>::create();
    int start = 0;
    for (int r = 1; r <= nr; ++r) {
      if (r < nr && shown_[size_t(r)].group == shown_[size_t(start)].group) continue;
      const ShownRow& first = shown_[size_t(start)];
      // A collapsed group names itself in its row label.
      if (!(r - start == 1 && first.row < 0) && !first.group.isEmpty()) {
        const QString label =
            siteGroup(m_.rows[size_t(first.row >= 0 ? first.row : first.members.front())].layer).label;
        names->addTick((start + r - 1) / 2.0, label);
      }
      if (r < nr) {
        auto* sep = new QCPItemStraightLine(plot_);
        sep->setClipAxisRect(rect);
        sep->point1->setAxes(x, y);
        sep->point2->setAxes(x, y);
        sep->point1->setCoords(0, r - 0.5);
        sep->point2->setCoords(1, r - 0.5);
        sep->setPen(QPen(QColor(255, 255, 255), 2));
      }
      start = r;
    }
    y2->setVisible(true);
    y2->setTicker(names);
    y2->setRangeReversed(true);
    y2->setRange(-0.5, nr - 0.5);
    y2->setTickLength(0, 0);
    y2->setSubTicks(false);
    y2->setTickLabels(true);
    y2->setBasePen(Qt::NoPen);
    y2->grid()->setVisible(false);
    QFont gf = y2->tickLabelFont();
    gf.setBold(true);
    y2->setTickLabelFont(gf);
  } else {
    y2->setVisible(false);
  }
}

/// Marks on the cells at or past the statistic's threshold `mark`: black diamonds ringed in white
/// read on every colour of the gradient. Fills marked_.
void LayerStepView::drawMarks(QCPAxis* x, QCPAxis* y, double mark) {
  const int nr = int(shown_.size()), nc = int(m_.steps.size());
  marked_.clear();
  if (std::isfinite(mark)) {
    QVector<double> xs, ys;
    for (int r = 0; r < nr; ++r)
      for (int c = 0; c < nc; ++c)
        if (const double val = shownValue(r, c); std::isfinite(val) && val >= mark) {
          xs << c;
          ys << r;
          marked_.emplace_back(r, c);
        }
    auto* marks = new QCPGraph(x, y);
    marks->setLineStyle(QCPGraph::lsNone);
    marks->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, QPen(Qt::white, 1.5), QBrush(Qt::black), 10));
    marks->setData(xs, ys);
    marks->setName(tr("%1 \u2265 %2").arg(layerStatName(stat_)).arg(mark));
  }
}

/// The first non-finite value: a vertical line at its step, labelled, its operand row outlined, and
/// the button that goes to it.
void LayerStepView::drawFirstNonFinite(QCPAxisRect* rect, QCPAxis* x, QCPAxis* y) {
  const int nc = int(m_.steps.size());
  if (nonfinite_.found) {
    const int c = columnOf(nonfinite_.step);
    auto* l = new QCPItemStraightLine(plot_);
    l->setClipAxisRect(rect);
    l->point1->setAxes(x, y);
    l->point2->setAxes(x, y);
    l->point1->setCoords(c, 0);
    l->point2->setCoords(c, 1);
    l->setPen(QPen(QColor(0xd5, 0x5e, 0x00), 2, Qt::DashLine));
    auto* t = new QCPItemText(plot_);
    t->setClipAxisRect(rect);
    t->position->setType(QCPItemPosition::ptPlotCoords);
    t->position->setAxes(x, y);
    t->position->setCoords(c, -0.5);
    t->setPositionAlignment((c > nc / 2 ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignTop);
    t->setText(tr(" first non-finite value, step %1 ").arg(nonfinite_.step));
    t->setColor(QColor(0xd5, 0x5e, 0x00).darker(130));
    t->setBrush(QColor(255, 255, 255, 220));
    const int r = rowOf(nonfinite_.operand);
    if (r >= 0) {
      auto* box = new QCPItemRect(plot_);
      box->setClipAxisRect(rect);
      box->topLeft->setAxes(x, y);
      box->bottomRight->setAxes(x, y);
      box->topLeft->setCoords(-0.5, r - 0.5);
      box->bottomRight->setCoords(nc - 0.5, r + 0.5);
      box->setPen(QPen(QColor(0xd5, 0x5e, 0x00), 1.5, Qt::DotLine));
    }
    QString where =
        nonfinite_.operand.isEmpty() ? nonfinite_.layer + QLatin1Char(' ') + nonfinite_.tensor : nonfinite_.operand;
    nonfinite_button_->setText(tr("Go to the first non-finite value (step %1, %2)").arg(nonfinite_.step).arg(where));
    nonfinite_button_->setToolTip(nonfinite_.description);
    nonfinite_button_->show();
  } else {
    nonfinite_button_->hide();
  }
}

void LayerStepView::labelRows() {
  if (!map_ || shown_.empty()) return;
  QCPAxis* y = map_->valueAxis();
  const int nr = int(shown_.size());
  // Before the first layout the axis rect has no height: label every row until it has one.
  const double h = y->axisRect()->height();
  const double row_px = h > 0 ? h / nr : 1e9;
  const int text_px = QFontMetrics(y->tickLabelFont()).height();
  const int every = row_px >= text_px ? 1 : int(std::ceil(text_px / row_px));
  if (every == label_every_) return;
  label_every_ = every;
  auto rows = QSharedPointer<QCPAxisTickerText>::create();
  for (int r = 0; r < nr; r += every) rows->addTick(r, shown_[size_t(r)].label);
  y->setTicker(rows);
}

bool LayerStepView::cellAt(const QPoint& pos, int* row, int* col) const {
  if (!map_) return false;
  const double kx = map_->keyAxis()->pixelToCoord(pos.x()), ky = map_->valueAxis()->pixelToCoord(pos.y());
  const int c = int(std::lround(kx)), r = int(std::lround(ky));
  if (c < 0 || r < 0 || c >= int(m_.steps.size()) || r >= int(shown_.size())) return false;
  *row = r;
  *col = c;
  return true;
}

void LayerStepView::hoverAt(int shown_row, int col) {
  if (shown_row < 0 || col < 0 || size_t(shown_row) >= shown_.size() || size_t(col) >= m_.steps.size()) return;
  const ShownRow& sr = shown_[size_t(shown_row)];
  const int64_t step = m_.steps[size_t(col)];
  if (sr.row < 0) {
    // A collapsed group: its worst value and the row that has it.
    const double val = shownValue(shown_row, col);
    QString worst;
    for (int r : sr.members)
      if (m_.at(size_t(r), size_t(col)) == val) {
        worst = m_.rows[size_t(r)].label();
        break;
      }
    const bool higher = m_.difference ? false : layerStatHigherIsWorse(m_.stat);
    const QString what = m_.difference ? tr("SQNR difference") : layerStatName(stat_);
    hover_text_ = LayerStepMatrix::noData(val)
                      ? tr("%1 (%n row(s)), step %2: no finite value; click to expand", nullptr, int(sr.members.size()))
                            .arg(siteGroup(m_.rows[size_t(sr.members.front())].layer).label)
                            .arg(step)
                      : tr("%1 (%n row(s)), step %2: %3 %4 %5 (%6); click to expand", nullptr, int(sr.members.size()))
                            .arg(siteGroup(m_.rows[size_t(sr.members.front())].layer).label)
                            .arg(step)
                            .arg(higher ? tr("highest") : tr("lowest"), what,
                                 valueText(val, m_.difference ? QStringLiteral("dB") : layerStatUnit(stat_)), worst);
    hover_->setText(hover_text_);
    return;
  }
  const int row = sr.row;
  const double val = m_.at(size_t(row), size_t(col));
  const QString op = m_.rows[size_t(row)].label();
  QString t;
  if (m_.difference) {
    const size_t i = size_t(row) * m_.steps.size() + size_t(col);
    t = tr("%1, step %2: SQNR under %3 %4, as trained %5; difference %6")
            .arg(op)
            .arg(step)
            .arg(m_.recipe, valueText(m_.what_if[i], QStringLiteral("dB")),
                 valueText(m_.trained[i], QStringLiteral("dB")))
            .arg(LayerStepMatrix::noData(val) ? tr("no data (not finite: %1)").arg(numberText(val))
                                              : valueText(val, QStringLiteral("dB")));
  } else {
    QString v = valueText(val, layerStatUnit(stat_));
    if (stat_ == LayerStat::SqnrDb && std::isinf(val) && val > 0) v = tr("no data (+\u221e dB: quantized exactly)");
    if (stat_ == LayerStat::SqnrDb && std::isnan(val)) v = tr("no data (NaN: all elements zero or missing)");
    t = tr("%1, step %2: %3 %4").arg(op).arg(step).arg(layerStatName(stat_), v);
    if (!m_.recipe.isEmpty()) t += tr(" (what-if %1)").arg(m_.recipe);
  }
  hover_text_ = t;
  hover_->setText(t);
}

QString LayerStepView::hoverText() const {
  return hover_text_;
}

void LayerStepView::markSelection() {
  if (!sel_rect_) return;
  sel_rect_->setVisible(sel_row_ >= 0 && sel_col_ >= 0);
  sel_rect_->topLeft->setCoords(sel_col_ - 0.5, sel_row_ - 0.5);
  sel_rect_->bottomRight->setCoords(sel_col_ + 0.5, sel_row_ + 0.5);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LayerStepView::clickCell(int row, int col) {
  if (!run_ || row < 0 || col < 0 || size_t(row) >= shown_.size() || size_t(col) >= m_.steps.size()) return;
  if (shown_[size_t(row)].row < 0) {
    setGroupCollapsed(shown_[size_t(row)].group, false);
    return;
  }
  sel_row_ = row;
  sel_col_ = col;
  hoverAt(row, col);
  markSelection();
  const size_t mr = size_t(shown_[size_t(row)].row);
  const QString op = mr < m_.links.size() ? m_.links[mr] : QString();
  if (op.isEmpty()) return; // a block's output, a head: no recorded operand to show
  const qint64 step = m_.steps[size_t(col)];
  // The block map first and the amax history last: the window brings each to the front in turn,
  // so the amax window is the one left in front.
  Q_EMIT showOperandRequested(QStringLiteral("block_map"), run_->id(), op, step);
  Q_EMIT showOperandRequested(QStringLiteral("amax"), run_->id(), op, step);
}

bool LayerStepView::goToNonfinite() {
  if (!run_ || !nonfinite_.found) return false;
  sel_col_ = columnOf(nonfinite_.step);
  sel_row_ = rowOf(nonfinite_.operand);
  if (sel_row_ >= 0)
    hoverAt(sel_row_, sel_col_);
  else
    hover_->setText(nonfinite_.description);
  markSelection();
  Q_EMIT showOperandRequested(QStringLiteral("amax"), run_->id(), nonfinite_.operand, nonfinite_.step);
  return true;
}

QString LayerStepView::nonfiniteButtonText() const {
  return nonfinite_button_->isHidden() ? QString() : nonfinite_button_->text();
}

bool LayerStepView::showOperand(const QString& runId, const QString& operand, qint64 step) {
  if (!run_ || run_->id() != runId) {
    if (!runs()->select(runId)) return false;
    runChosen();
  }
  if (!run_ || run_->id() != runId || m_.steps.empty()) return false;
  // An operand behind the filter or inside a collapsed group is brought into view.
  const auto it = std::find(m_.links.begin(), m_.links.end(), operand);
  if (!operand.isEmpty() && it != m_.links.end()) {
    const int r = rowOf(operand);
    if (r < 0) {
      site_glob_.clear();
      operand_filter_.clear();
      defaults_for_ = run_->id();
      updating_ = true;
      site_edit_->clear();
      operand_box_->setCurrentIndex(0);
      updating_ = false;
    }
    collapsed_.erase(siteGroup(m_.rows[size_t(it - m_.links.begin())].layer).key);
    if (r < 0 || shown_[size_t(r)].row < 0) draw();
  }
  sel_col_ = columnOf(step);
  sel_row_ = rowOf(operand);
  if (sel_row_ >= 0) hoverAt(sel_row_, sel_col_);
  markSelection();
  return sel_row_ >= 0 || operand.isEmpty();
}

void LayerStepView::fillRanking() {
  ranking_table_->clear();
  if (ranking_.empty()) {
    ranking_table_->hide();
    ranking_note_->setText(run_ && emptyText().isEmpty()
                               ? tr("No what-if recipes in this run: train with diagnostics.what_if (docs/training.md) "
                                    "to compare other recipes on the same tensors.")
                               : QString());
    ranking_note_->setVisible(!ranking_note_->text().isEmpty());
    return;
  }
  const QString scaling = run_->attr(QStringLiteral("scaling"));
  const QString trained = scaling.isEmpty() ? tr("as trained") : tr("as trained (%1)").arg(scaling);
  size_t cols = 0;
  for (const auto& rk : ranking_) cols = std::max(cols, rk.scores.size());
  ranking_table_->setRowCount(int(ranking_.size()));
  ranking_table_->setColumnCount(int(cols));
  QStringList head, vhead;
  for (size_t c = 0; c < cols; ++c) head << (c == 0 ? tr("best") : tr("#%1").arg(c + 1));
  ranking_table_->setHorizontalHeaderLabels(head);
  for (size_t r = 0; r < ranking_.size(); ++r) {
    vhead << ranking_[r].row.label();
    for (size_t c = 0; c < ranking_[r].scores.size(); ++c) {
      const RecipeScore& s = ranking_[r].scores[c];
      const QString name = s.recipe.isEmpty() ? trained : s.recipe;
      auto* it =
          new QTableWidgetItem(std::isfinite(s.mean_db) ? tr("%1: %2 dB").arg(name, QString::number(s.mean_db, 'f', 2))
                                                        : tr("%1: no finite SQNR").arg(name));
      it->setToolTip(tr("mean over %n what-if step(s) with a finite SQNR", nullptr, int(s.steps)));
      if (s.recipe.isEmpty()) {
        QFont f = it->font();
        f.setBold(true);
        it->setFont(f);
      }
      ranking_table_->setItem(int(r), int(c), it);
    }
  }
  ranking_table_->setVerticalHeaderLabels(vhead);
  ranking_table_->resizeColumnsToContents();
  ranking_table_->show();
  const int n =
      int(m_.recipe.isEmpty() ? readSeries(*run_, sessionPath(layout::kWhatIfSteps)).size() : m_.steps.size());
  ranking_note_->setText(
      hasTrainedBlockStats(*run_)
          ? tr("Recipes per operand by mean SQNR over the %n what-if step(s), best first (the recipe "
               "that trained in bold; steps with an exact or missing SQNR left out of the mean).",
               nullptr, n)
          : tr("What-if recipes per operand by mean SQNR over the %n what-if step(s), best first "
               "(this run recorded no statistics as trained; steps with an exact or missing SQNR "
               "left out of the mean).",
               nullptr, n));
  ranking_note_->show();
}

QString LayerStepView::csv() const {
  if (m_.v.empty()) return {};
  QString col = layerStatDataset(stat_);
  if (layerStatFactor(stat_) == 100.0 && isProbeStat(stat_))
    col += QStringLiteral("_percent"); // sink_percent, grad_underflow_percent, ...
  else if (layerStatFactor(stat_) == 100.0)
    col = col.replace(QStringLiteral("_fraction"), QStringLiteral("_percent"))
              .replace(QStringLiteral("_share"), QStringLiteral("_share_percent"));
  if (m_.difference) col = QStringLiteral("sqnr_db_minus_trained");
  QString out = QStringLiteral("operand,step,") + col + QLatin1Char('\n');
  for (size_t r = 0; r < m_.rows.size(); ++r)
    for (size_t c = 0; c < m_.steps.size(); ++c)
      out += QStringLiteral("%1,%2,%3\n")
                 .arg(m_.rows[r].path())
                 .arg(m_.steps[c])
                 .arg(QString::number(m_.at(r, c), 'g', 9));
  return out;
}

FP8LAB_REGISTER_VIEW(LayerStepView, "layers", 85);

// fp8lab-render: the layer × step map of a training run with per-block statistics or probes;
// --layer-stat, --recipe and --difference choose what it shows.
FP8LAB_REGISTER_RENDER(LayerStepView, "layers", {QStringLiteral("layers")},
                       [](const RenderScope& scope, const std::shared_ptr<RunAccess>& a, QList<RenderJob>& jobs) {
                         const RenderRequest& req = scope.req;
                         if (a->type() != QStringLiteral("training") || !scope.wants(QStringLiteral("layers")) ||
                             !hasDiagnostics(*a))
                           return;
                         if (!req.recipe.isEmpty() && !whatIfRecipes(*a).contains(req.recipe))
                           scope.refuse(QObject::tr("run %1 has no what-if recipe '%2' (its recipes: %3)")
                                            .arg(a->id(), req.recipe, whatIfRecipes(*a).join(QStringLiteral(", "))));
                         const std::optional<LayerStat> stat =
                             req.layer_stat.isEmpty() ? std::nullopt : parseLayerStat(req.layer_stat);
                         jobs << RenderJob{a->id(), QStringLiteral("layers"), [a, stat, req] {
                                             auto v = std::make_unique<LayerStepView>();
                                             v->setRunAccess(a);
                                             if (stat) v->setStat(*stat);
                                             if (!req.recipe.isEmpty()) v->setRecipe(req.recipe, req.difference);
                                             return std::unique_ptr<View>(std::move(v));
                                           }};
                       },
                       {});

} // namespace fp8lab::ui

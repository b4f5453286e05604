#include "layer_step_view.h"

#include "plot_util.h"
#include "qcp.h"
#include "run_box.h"
#include "session_document.h"
#include "style.h"
#include "view_registry.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace fp8lab::ui {

namespace {

const QString kBlockStats = QStringLiteral("block_stats/");
const QString kWhatIf = QStringLiteral("what_if/");

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
  }
  return {};
}

double layerStatFactor(LayerStat s) {
  switch (s) {
  case LayerStat::UnderflowPct:
  case LayerStat::SaturationPct:
  case LayerStat::UnderflowBlockPct:
  case LayerStat::SaturationBlockPct:
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

std::optional<LayerStat> parseLayerStat(const QString& dataset) {
  for (LayerStat s : allLayerStats())
    if (layerStatDataset(s) == dataset) return s;
  return std::nullopt;
}

QString layerStatUnit(LayerStat s) {
  switch (s) {
  case LayerStat::SqnrDb:
    return QStringLiteral("dB");
  case LayerStat::Log2ScaleMean:
    return QStringLiteral("log\u2082");
  case LayerStat::MaxDynamicRange:
    return QStringLiteral("bits");
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
  }
  return {};
}

bool layerStepMatrix(const RunAccess& run, LayerStat stat, const QString& recipe, bool difference, LayerStepMatrix* out,
                     QString* why) {
  *out = {};
  out->stat = stat;
  out->recipe = recipe;
  out->difference = difference;
  out->rows = blockStatOperands(run);
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
  const std::vector<double> steps = readSeries(run, QStringLiteral("what_if/steps"));
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
  const std::vector<double> steps = readSeries(run, QStringLiteral("what_if/steps"));
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

LayerStepView::LayerStepView(QWidget* parent) : View(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  auto* bar = new QHBoxLayout;
  auto* run_box = runComboBox(QStringLiteral("run"));
  runs_ = new RunBox(this, run_box, [](const RunRecord& r) { return mayHoldBlockStats(r); });
  addLabeled(bar, tr("&Run:"), run_box);
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

  connect(runs_, &RunBox::chosen, this, [this] { runChosen(); });
  connect(stat_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    stat_ = LayerStat(stat_box_->currentData().toInt());
    fillRecipes();
    reload();
  });
  connect(recipe_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    const QStringList d = recipe_box_->currentData().toStringList();
    recipe_ = d.value(0);
    difference_ = d.value(1) == QStringLiteral("diff");
    reload();
  });
  connect(nonfinite_button_, &QPushButton::clicked, this, [this] { goToNonfinite(); });
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

void LayerStepView::setSession(SessionDocument* session) {
  View::setSession(session);
  runs_->setSession(session);
}

void LayerStepView::runChosen() {
  run_ = runs_->access();
  fillRecipes();
  reload();
}

void LayerStepView::setRunAccess(std::shared_ptr<RunAccess> run) {
  runs_->showOnly(run ? run->id() : QString());
  run_ = std::move(run);
  fillRecipes();
  reload();
}

void LayerStepView::fillRecipes() {
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
    const int u = session_ && !runs_->unlistedId().isEmpty() ? session_->indexOf(runs_->unlistedId()) : -1;
    drawEmpty(u >= 0 ? noTrainedBlockStatsText(session_->run(u)) + tr("\nChoose a run in the Run box above.")
                     : tr("No training run in this session.\nTrain one in the Experiment panel (Training tab, Ctrl+R) "
                          "with diagnostics on, or open a session that holds one (File \u2192 Open)."));
    fillRanking();
    return;
  }
  QString why;
  // A few [steps] series per operand (9 operands × 1407 steps of float32 in the default
  // experiment): read at once, well under the 100 ms the GUI thread may block.
  if (!layerStepMatrix(*run_, stat_, recipe_, difference_, &m_, &why)) {
    m_ = {};
    drawEmpty(why);
    fillRanking();
    return;
  }
  ranking_ = recipeRanking(*run_);
  nonfinite_ = nonfiniteJump(*run_, m_.rows);
  empty_.clear();
  draw();
  fillRanking();
}

void LayerStepView::drawEmpty(const QString& text) {
  empty_ = text;
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
  for (size_t r = 0; r < m_.rows.size(); ++r)
    if (m_.rows[r].path() == operand) return int(r);
  return -1;
}

void LayerStepView::draw() {
  sel_rect_ = nullptr;
  const int nr = int(m_.rows.size()), nc = int(m_.steps.size());
  const QString unit = layerStatUnit(stat_);
  QString what = layerStatName(stat_);
  if (m_.difference) what = tr("SQNR under %1 minus SQNR as trained").arg(m_.recipe);
  const QString under = m_.recipe.isEmpty() ? tr("as trained") : tr("under what-if recipe %1").arg(m_.recipe);
  const ColorMapLayout l =
      titledColorMap(plot_,
                     m_.difference ? tr("%1 per operand and step, run %2").arg(what, run_->id())
                                   : tr("%1 per operand and step, %2, run %3").arg(what, under, run_->id()),
                     font().family());
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
      const double val = m_.at(size_t(r), size_t(c));
      if (LayerStepMatrix::noData(val)) {
        ++nodata;
        continue;
      }
      lo = std::min(lo, val);
      hi = std::max(hi, val);
    }
  for (int r = 0; r < kr; ++r)
    for (int c = 0; c < kc; ++c) {
      const double val = m_.at(size_t(std::min(r, nr - 1)), size_t(std::min(c, nc - 1)));
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
  scale_->axis()->setLabel(m_.difference ? tr("SQNR %1 \u2212 trained (dB; > 0: %1 better)").arg(m_.recipe)
                                         : tr("%1 (%2)").arg(layerStatName(stat_), unit));

  auto rows = QSharedPointer<QCPAxisTickerText>::create();
  for (int r = 0; r < nr; ++r) rows->addTick(r, m_.rows[size_t(r)].label());
  y->setTicker(rows);
  y->setRangeReversed(true); // fc1 input on top
  y->setRange(-0.5, nr - 0.5);
  y->setLabel(tr("operand (layer, tensor)"));
  y->grid()->setVisible(false);
  x->setTicker(QSharedPointer<StepTicker>::create(m_.steps));
  x->setRange(-0.5, nc - 0.5);
  x->setLabel(m_.recipe.isEmpty() ? tr("step (optimizer step, 0-based)") : tr("step (the %1 what-if steps)").arg(nc));
  x->grid()->setVisible(false);
  stylePlot(plot_);
  plot_->setInteractions(QCP::Interactions()); // a click selects a cell; no drag or zoom

  // The first non-finite value: a vertical line at its step, labelled, and its operand row outlined.
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
  if (nodata > 0)
    note += (note.isEmpty() ? QString() : QStringLiteral(" ")) +
            tr("%n cell(s) without a finite value (NaN, or \u00b1\u221e such as an exact SQNR) are grey.", nullptr,
               int(nodata));
  hover_->setText(note.isEmpty() ? tr("Hover over a cell for its numbers; click it to see that operand at that "
                                      "step in the Amax history and Block map views.")
                                 : note);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool LayerStepView::cellAt(const QPoint& pos, int* row, int* col) const {
  if (!map_) return false;
  const double kx = map_->keyAxis()->pixelToCoord(pos.x()), ky = map_->valueAxis()->pixelToCoord(pos.y());
  const int c = int(std::lround(kx)), r = int(std::lround(ky));
  if (c < 0 || r < 0 || c >= int(m_.steps.size()) || r >= int(m_.rows.size())) return false;
  *row = r;
  *col = c;
  return true;
}

void LayerStepView::hoverAt(int row, int col) {
  if (row < 0 || col < 0 || size_t(row) >= m_.rows.size() || size_t(col) >= m_.steps.size()) return;
  const double val = m_.at(size_t(row), size_t(col));
  const QString op = m_.rows[size_t(row)].label();
  const int64_t step = m_.steps[size_t(col)];
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
  if (!run_ || row < 0 || col < 0 || size_t(row) >= m_.rows.size() || size_t(col) >= m_.steps.size()) return;
  sel_row_ = row;
  sel_col_ = col;
  hoverAt(row, col);
  markSelection();
  const QString op = m_.rows[size_t(row)].path();
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
    if (!runs_->select(runId)) return false;
    runChosen();
  }
  if (!run_ || run_->id() != runId || m_.steps.empty()) return false;
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
    ranking_note_->setText(run_ && empty_.isEmpty()
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
  const int n = int(m_.recipe.isEmpty() ? readSeries(*run_, QStringLiteral("what_if/steps")).size() : m_.steps.size());
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
  if (layerStatFactor(stat_) == 100.0)
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

} // namespace fp8lab::ui

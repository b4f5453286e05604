#include "views/decide_view.h"

#include "plot/plot_util.h"
#include "plot/qcp.h"
#include "session/report_pdf.h"
#include "session/run_access.h"
#include "session/session_document.h"
#include "plot/style.h"
#include "views/view_registry.h"
#include "views/view_render.h"
#include "plot/wrapped_title.h"

#include <QComboBox>
#include <QSet>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>

namespace fp8lab::ui {

namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

QString g4(double v) {
  return std::isfinite(v) ? QString::number(v, 'g', 4) : QStringLiteral("\u2014");
}

/// A table cell that sorts by number (missing values last).
class NumberItem : public QTableWidgetItem {
public:
  NumberItem(double v, const QString& text) : QTableWidgetItem(text), v_(v) {
    setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  }
  bool operator<(const QTableWidgetItem& o) const override {
    const auto* n = dynamic_cast<const NumberItem*>(&o);
    if (!n) return QTableWidgetItem::operator<(o);
    if (std::isnan(v_) || std::isnan(n->v_)) return !std::isnan(v_) && std::isnan(n->v_);
    return v_ < n->v_;
  }

private:
  double v_;
};

const QColor kBest(0, 158, 115);       // bluish green (Okabe–Ito): rank 1
const QColor kOther(0x6b, 0x7c, 0x93); // slate: ranked below
const QColor kBaseline(0, 114, 178);   // blue: the FP32 baseline
const QColor kKeep(213, 94, 0);        // vermillion: keep in high precision
const QColor kBestBand(0xdf, 0xf1, 0xe8);
const QColor kBaseBand(0xdb, 0xe6, 0xf6);

/// One row of an interval chart.
struct ChartRow {
  QString label;
  double mean = NAN, lo = NAN, hi = NAN;
  QColor colour;
  QString value_text; ///< drawn right of the bar
  QString right;      ///< the right axis' label (cost), "" for none
};

/// A horizontal interval chart: a title (wrapped) over one axis rect, a row per entry (first at the
/// top) with a dot at the mean and a bar from lo to hi, an optional band [band_lo, band_hi] behind
/// the rows and a dashed line at `line` (NaN: none) named `line_label`.
void intervalChart(QCustomPlot* plot, const QString& title, const QString& subtitle, const QString& axis,
                   const QList<ChartRow>& rows, double band_lo, double band_hi, const QColor& band, double line,
                   const QString& line_label, const QColor& line_colour) {
  plot->clearPlottables();
  plot->clearItems();
  plot->plotLayout()->clear();
  auto* t = new WrappedTitle(plot, title, QFont(plot->font().family(), 10, QFont::Bold));
  plot->plotLayout()->addElement(0, 0, t);
  auto* st = new WrappedTitle(plot, subtitle, QFont(plot->font().family(), 9));
  st->setTextColor(QColor(0x44, 0x44, 0x44));
  plot->plotLayout()->addElement(1, 0, st);
  auto* rect = new QCPAxisRect(plot);
  plot->plotLayout()->addElement(2, 0, rect);
  QCPAxis* x = rect->axis(QCPAxis::atBottom);
  QCPAxis* y = rect->axis(QCPAxis::atLeft);
  QCPAxis* y2 = rect->axis(QCPAxis::atRight);
  const int n = int(rows.size());
  auto left = QSharedPointer<QCPAxisTickerText>::create();
  auto right = QSharedPointer<QCPAxisTickerText>::create();
  bool any_right = false;
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < n; ++i) {
    left->addTick(i, rows[i].label);
    right->addTick(i, rows[i].right);
    any_right |= !rows[i].right.isEmpty();
    if (std::isfinite(rows[i].lo)) lo = std::min(lo, rows[i].lo), hi = std::max(hi, rows[i].hi);
  }
  for (double v : {band_lo, band_hi, line})
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) lo -= 0.5, hi += 0.5;
  // Without an interval (one seed) nothing says how large a difference is: the axis spans at least
  // a tenth of the values' magnitude, so that a small gap does not fill the chart.
  bool any_interval = false;
  for (const auto& r : rows) any_interval |= std::isfinite(r.lo) && std::isfinite(r.hi) && r.hi > r.lo;
  if (!any_interval) {
    const double min_span = 0.1 * std::max(std::fabs(lo), std::fabs(hi));
    if (hi - lo < min_span) {
      const double mid = 0.5 * (lo + hi);
      lo = mid - 0.5 * min_span;
      hi = mid + 0.5 * min_span;
    }
  }
  const double span = hi - lo;
  for (QCPAxis* a : {y, y2}) {
    a->setRange(-0.6, n - 0.4);
    a->setRangeReversed(true);
    a->grid()->setVisible(false);
    a->setTicks(true);
    a->setSubTicks(false);
    a->setTickLength(0, 0);
  }
  y->setTicker(left);
  y2->setTicker(right);
  y2->setVisible(any_right);
  y2->setTickLabels(any_right);
  x->setLabel(axis);
  // Room right of the bars for their value text.
  x->setRange(lo - 0.06 * span, hi + 0.30 * span);
  if (std::isfinite(band_lo) && std::isfinite(band_hi)) {
    auto* r = new QCPItemRect(plot);
    r->setClipAxisRect(rect);
    r->topLeft->setAxes(x, y);
    r->bottomRight->setAxes(x, y);
    r->topLeft->setCoords(band_lo, -0.6);
    r->bottomRight->setCoords(band_hi, n - 0.4);
    r->setPen(Qt::NoPen);
    r->setBrush(band);
    r->setLayer(QStringLiteral("background"));
  }
  if (std::isfinite(line)) {
    auto* l = new QCPItemStraightLine(plot);
    l->setClipAxisRect(rect);
    l->point1->setAxes(x, y);
    l->point2->setAxes(x, y);
    l->point1->setCoords(line, 0);
    l->point2->setCoords(line, 1);
    l->setPen(QPen(line_colour, 1.5, Qt::DashLine));
    l->setLayer(QStringLiteral("grid"));
    auto* lt = new QCPItemText(plot);
    lt->setClipAxisRect(rect);
    lt->position->setTypeX(QCPItemPosition::ptPlotCoords);
    lt->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    lt->position->setAxes(x, y);
    lt->position->setAxisRect(rect);
    lt->position->setCoords(line, 1.0);
    lt->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    lt->setPadding(QMargins(4, 0, 2, 3));
    lt->setText(line_label);
    lt->setColor(line_colour);
    QFont f = plot->font();
    f.setPointSizeF(8);
    lt->setFont(f);
  }
  // One graph and one set of error bars per colour: dots at the means, bars over the intervals.
  std::map<QRgb, std::pair<QCPGraph*, QCPErrorBars*>> series;
  for (int i = 0; i < n; ++i) {
    const ChartRow& r = rows[i];
    if (!std::isfinite(r.mean)) continue;
    auto& s = series[r.colour.rgb()];
    if (!s.first) {
      s.first = new QCPGraph(y, x);
      s.first->setLineStyle(QCPGraph::lsNone);
      s.first->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, r.colour, r.colour, 8));
      s.second = new QCPErrorBars(y, x);
      s.second->setDataPlottable(s.first);
      s.second->setErrorType(QCPErrorBars::etValueError);
      s.second->setPen(QPen(r.colour, 2));
      s.second->setWhiskerWidth(8);
    }
    s.first->addData(i, r.mean);
    s.second->addData(r.mean - r.lo, r.hi - r.mean);
    auto* vt = new QCPItemText(plot);
    vt->setClipAxisRect(rect);
    vt->position->setAxes(x, y);
    vt->position->setCoords(std::isfinite(r.hi) ? r.hi : r.mean, i);
    vt->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    // Under the dots and bars, over the baseline and the grid: a light box keeps the value readable
    // where it crosses the baseline.
    vt->setPadding(QMargins(6, 0, 2, 0));
    vt->setBrush(QColor(255, 255, 255, 200));
    vt->setLayer(QStringLiteral("grid"));
    vt->setText(r.value_text);
    QFont f = plot->font();
    f.setPointSizeF(8);
    vt->setFont(f);
    vt->setColor(QColor(0x33, 0x33, 0x33));
  }
  stylePlot(plot);
  for (QCPAxis* a : {y, y2}) a->grid()->setVisible(false);
  plot->replot(QCustomPlot::rpQueuedReplot);
}

/// `s` with its first letter in upper case (a metric's label at the start of a title).
QString capitalized(QString s) {
  if (!s.isEmpty()) s[0] = s[0].toUpper();
  return s;
}

QString rankLabel(const RecipeInterval& r, const std::vector<RecipeInterval>& all) {
  return qs(rankText(r, all)).remove(QLatin1Char(' ')) + QStringLiteral("  ") + qs(r.label);
}

} // namespace

DecideView::DecideView(QWidget* parent) : AnalysisView(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  auto* bar = new QHBoxLayout;
  part_box_ = new QComboBox(this);
  part_box_->setObjectName(QStringLiteral("part"));
  part_box_->addItem(tr("GEMM ranking with intervals and cost"), int(Part::Gemm));
  part_box_->addItem(tr("Training against FP32"), int(Part::Training));
  part_box_->addItem(tr("Per-layer advice"), int(Part::Advice));
  part_box_->addItem(tr("Checkpoint what-if"), int(Part::WhatIf));
  auto* pl = new QLabel(tr("Show:"), this);
  pl->setBuddy(part_box_);
  bar->addWidget(pl);
  bar->addWidget(part_box_);
  group_label_ = new QLabel(this);
  group_box_ = new QComboBox(this);
  group_box_->setObjectName(QStringLiteral("group"));
  group_box_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  group_box_->setMinimumContentsLength(24);
  group_label_->setBuddy(group_box_);
  bar->addWidget(group_label_);
  bar->addWidget(group_box_, 1);
  metric_label_ = new QLabel(tr("Metric:"), this);
  metric_box_ = new QComboBox(this);
  metric_box_->setObjectName(QStringLiteral("metric"));
  metric_label_->setBuddy(metric_box_);
  bar->addWidget(metric_label_);
  bar->addWidget(metric_box_);
  report_button_ = new QPushButton(tr("Save report\u2026"), this);
  report_button_->setObjectName(QStringLiteral("saveReport"));
  report_button_->setToolTip(tr("The whole session's answer as one self-contained HTML file, or PDF"));
  bar->addWidget(report_button_);
  v->addLayout(bar);
  note_ = new QLabel(this);
  note_->setObjectName(QStringLiteral("note"));
  note_->setWordWrap(true);
  note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(note_);
  auto* split = new QSplitter(Qt::Vertical, this);
  plot_ = new QCustomPlot(split);
  plot_->setObjectName(QStringLiteral("decidePlot"));
  plot_->setAutoAddPlottableToLegend(false);
  plot_->setMinimumSize(500, 260);
  table_ = new QTableWidget(split);
  table_->setObjectName(QStringLiteral("decideTable"));
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setMaximumSectionSize(420);
  table_->setTextElideMode(Qt::ElideMiddle);
  table_->setWordWrap(false);
  split->addWidget(plot_);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  v->addWidget(split, 1);
  connect(part_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    part_chosen_ = true;
    part_ = Part(part_box_->currentData().toInt());
    group_ = 0;
    refresh();
  });
  connect(group_box_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (updating_ || i < 0) return;
    group_ = i;
    refresh();
  });
  connect(metric_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    const QString key = metric_box_->currentData().toString();
    if (!key.isEmpty()) setMetric(key);
  });
  connect(report_button_, &QPushButton::clicked, this, [this] {
    const QString base = file_.isEmpty() ? QStringLiteral("report") : QFileInfo(file_).completeBaseName();
    const QString f = QFileDialog::getSaveFileName(this, tr("Save report"), base + QStringLiteral("-report.html"),
                                                   tr("HTML report (*.html);;PDF report (*.pdf)"));
    if (f.isEmpty()) return;
    QString error;
    if (!saveReport(f, &error))
      Q_EMIT issue(Severity::Error, tr("The report was not saved: %1").arg(error), title());
    else
      Q_EMIT issue(Severity::Info, tr("Report saved: %1").arg(f), title());
  });
  rebuild();
}

void DecideView::setSession(SessionDocument* session) {
  AnalysisView::setSession(session);
  if (!session) return;
  auto later = [this] { whenShown(0, [this] { rebuild(); }); };
  connect(session, &SessionDocument::reset_, this, later);
  connect(session, &SessionDocument::runAdded, this, later);
  connect(session, &SessionDocument::runRemoved, this, later);
  connect(session, &SessionDocument::runChanged, this, later);
  rebuild();
}

void DecideView::setRuns(const QList<std::shared_ptr<RunAccess>>& runs, const QString& file) {
  session_ = nullptr;
  runs_ = runs;
  file_ = file;
  rebuild();
}

QString DecideView::partName(Part p) {
  switch (p) {
  case Part::Gemm:
    return QStringLiteral("gemm");
  case Part::Training:
    return QStringLiteral("training");
  case Part::Advice:
    return QStringLiteral("advice");
  case Part::WhatIf:
    return QStringLiteral("what_if");
  }
  return {};
}

bool DecideView::hasPart(Part p) const {
  switch (p) {
  case Part::Gemm:
    return !d_.gemm.empty();
  case Part::Training:
    return !d_.training.empty();
  case Part::Advice:
    return !d_.advice.empty();
  case Part::WhatIf:
    return !d_.what_if.empty();
  }
  return false;
}

DecideView::Part DecideView::defaultPart(const SessionDecision& d) {
  // An advice session (advise --out) holds the advice and the training runs it measured (no FP32
  // baseline among them): the advice is what it is for.
  if (!d.advice.empty()) return Part::Advice;
  if (!d.training.empty() && d.rankedSettings() == 0) return Part::Training;
  if (!d.gemm.empty()) return Part::Gemm;
  if (!d.training.empty()) return Part::Training;
  if (!d.what_if.empty()) return Part::WhatIf;
  return Part::Gemm;
}

bool DecideView::opensOn(const QList<std::shared_ptr<RunAccess>>& runs) {
  std::vector<RunInfo> infos;
  for (const auto& r : runs) {
    if (r->type() == QStringLiteral("training") || r->type() == QStringLiteral("advice")) return true;
    if (auto i = r->runInfo()) infos.push_back(std::move(*i));
  }
  const SessionDecision d = decideSession(infos, "", {});
  std::map<std::string, int> seeded;
  for (const RecipeInterval& r : d.gemm)
    if (r.n_values >= 2) ++seeded[r.setting];
  for (const auto& [k, n] : seeded)
    if (n >= 2) return true;
  return false;
}

void DecideView::rebuild() {
  if (session_) {
    runs_.clear();
    for (const RunRecord& r : session_->runs()) runs_ << RunAccess::forRecord(r, session_->fileName());
    file_ = session_->fileName();
  }
  std::vector<RunInfo> infos;
  for (const auto& r : runs_)
    if (auto i = r->runInfo()) {
      i->id = r->id().toStdString();
      infos.push_back(std::move(*i));
    }
  const DatasetSource read = datasetSourceFor(runs_);
  d_ = decideSession(infos, gemm_metric_.toStdString(), read);
  if (!training_metric_.isEmpty()) {
    const SessionDecision t = decideSession(infos, training_metric_.toStdString(), read);
    d_.training = t.training;
    d_.training_cost = t.training_cost;
    d_.training_metric = t.training_metric;
  }
  // The part the session opens on, until the user (or a caller) picks one.
  if (!part_chosen_) part_ = defaultPart(d_);
  if (group_ >= groupCount()) group_ = 0;
  refresh();
}

bool DecideView::setMetric(const QString& key) {
  const RankingMetric* m = rankingMetric(key.toStdString());
  if (!m) return false;
  (m->training ? training_metric_ : gemm_metric_) = key;
  part_ = m->training ? Part::Training : Part::Gemm;
  part_chosen_ = true;
  rebuild();
  return true;
}

QString DecideView::metric() const {
  if (part_ == Part::Training) return qs(d_.training_metric->key);
  if (part_ == Part::Gemm) return qs(d_.gemm_metric->key);
  return {};
}

void DecideView::setPart(Part p) {
  part_ = p;
  part_chosen_ = true;
  group_ = 0;
  refresh();
}

void DecideView::setGroup(int index) {
  if (index < 0 || index >= groupCount()) return;
  group_ = index;
  refresh();
}

int DecideView::groupCount() const {
  auto settings = [](const std::vector<RecipeInterval>& v) {
    std::vector<std::string> s;
    for (const RecipeInterval& r : v)
      if (std::find(s.begin(), s.end(), r.setting) == s.end()) s.push_back(r.setting);
    return int(s.size());
  };
  switch (part_) {
  case Part::Gemm:
    return settings(d_.gemm);
  case Part::Training:
    return settings(d_.training);
  case Part::Advice:
    return int(d_.advice.size());
  case Part::WhatIf:
    return int(d_.what_if.size());
  }
  return 0;
}

std::vector<size_t> DecideView::groupRows(const std::vector<RecipeInterval>& all) const {
  std::vector<std::string> settings;
  std::vector<size_t> rows;
  for (size_t i = 0; i < all.size(); ++i) {
    auto it = std::find(settings.begin(), settings.end(), all[i].setting);
    if (it == settings.end()) {
      settings.push_back(all[i].setting);
      it = settings.end() - 1;
    }
    if (int(it - settings.begin()) == group_) rows.push_back(i);
  }
  return rows;
}

void DecideView::fillGroups() {
  group_box_->clear();
  QString what;
  auto settings = [&](const std::vector<RecipeInterval>& v) {
    std::vector<std::string> seen;
    for (const RecipeInterval& r : v)
      if (std::find(seen.begin(), seen.end(), r.setting) == seen.end()) {
        seen.push_back(r.setting);
        group_box_->addItem(qs(r.setting_label));
      }
  };
  switch (part_) {
  case Part::Gemm:
    what = tr("Operands:");
    settings(d_.gemm);
    break;
  case Part::Training:
    what = tr("Model:");
    settings(d_.training);
    break;
  case Part::Advice:
    what = tr("Advice for:");
    for (const AdviceTable& a : d_.advice) group_box_->addItem(tr("run %1").arg(qs(a.advised_run)));
    break;
  case Part::WhatIf:
    what = tr("Checkpoint:");
    for (const WhatIfTable& w : d_.what_if) group_box_->addItem(qs(w.run_id));
    break;
  }
  group_label_->setText(what);
  group_box_->setCurrentIndex(std::max(0, std::min(group_, group_box_->count() - 1)));
  const bool show = group_box_->count() > 1;
  group_box_->setVisible(show);
  group_label_->setVisible(show);
}

void DecideView::fillMetrics() {
  metric_box_->clear();
  const bool gemm = part_ == Part::Gemm, training = part_ == Part::Training;
  std::vector<RunInfo> infos;
  for (const auto& r : runs_)
    if (auto i = r->runInfo()) infos.push_back(std::move(*i));
  if (gemm || training)
    for (const RankingMetric& m : rankingMetrics()) {
      if (m.training != training) continue;
      const bool current = qs(m.key) == metric();
      if (!current && !metricPresent(infos, m.key)) continue;
      const QString unit = m.unit == "1" ? QString() : QStringLiteral(" (%1)").arg(qs(m.unit));
      metric_box_->addItem(qs(m.label) + unit, qs(m.key));
      metric_box_->setItemData(metric_box_->count() - 1, qs(m.meaning), Qt::ToolTipRole);
    }
  metric_box_->setCurrentIndex(std::max(0, metric_box_->findData(metric())));
  metric_box_->setEnabled(metric_box_->count() > 1);
  metric_box_->setVisible(gemm || training);
  metric_label_->setVisible(gemm || training);
}

void DecideView::refresh() {
  updating_ = true;
  part_box_->setCurrentIndex(part_box_->findData(int(part_)));
  for (int i = 0; i < part_box_->count(); ++i) {
    const Part p = Part(part_box_->itemData(i).toInt());
    part_box_->setItemData(i, hasPart(p) ? QVariant() : QVariant(QColor(0x88, 0x88, 0x88)), Qt::ForegroundRole);
  }
  fillGroups();
  fillMetrics();
  updating_ = false;
  clearEmpty();
  table_->setSortingEnabled(false);
  table_->clear();
  table_->setRowCount(0);
  table_->setColumnCount(0);
  note_->clear();
  switch (part_) {
  case Part::Gemm:
    drawGemm();
    break;
  case Part::Training:
    drawTraining();
    break;
  case Part::Advice:
    drawAdvice();
    break;
  case Part::WhatIf:
    drawWhatIf();
    break;
  }
  table_->setVisible(table_->rowCount() > 0);
}

void DecideView::drawEmptyState(const QString& text) {
  plotEmptyState(plot_, text);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void DecideView::drawGemm() {
  if (d_.gemm.empty()) {
    showEmpty(qs(hintGemmRanking()));
    return;
  }
  const RankingMetric& m = *d_.gemm_metric;
  const std::vector<size_t> idx = groupRows(d_.gemm);
  if (idx.empty()) return;
  const RecipeInterval& first = d_.gemm[idx.front()];
  const QString unit = m.unit == "1" ? QString() : QStringLiteral(" (%1)").arg(qs(m.unit));
  QList<ChartRow> rows;
  const RecipeInterval* best = nullptr;
  int seeds = 0;
  for (size_t i : idx) seeds = std::max(seeds, d_.gemm[i].n_values);
  for (size_t i : idx) {
    const RecipeInterval& r = d_.gemm[i];
    if (r.n_values > 0 && (!best || r.place < best->place)) best = &r;
    ChartRow c;
    c.label = rankLabel(r, d_.gemm);
    c.mean = r.mean;
    c.lo = r.lo;
    c.hi = r.hi;
    // One seed: no interval, so no recipe is shown as the best.
    c.colour = r.rank == 1 && seeds > 1 ? kBest : kOther;
    c.value_text = qs(intervalText(r));
    if (const auto& cost = d_.gemm_cost[i])
      c.right = QStringLiteral("%1 B/elem \u00b7 %2")
                    .arg(qs(bytesPerElementText(cost->bytesPerElement(), 3)), qs(cost->hardware));
    rows << c;
  }
  const QString title =
      tr("GEMM recipes ranked by %1 (%2 is better)").arg(qs(m.label), m.higher_better ? tr("higher") : tr("lower"));
  const QString subtitle =
      seeds > 1 ? tr("%1 · mean ± 95 % interval over %2 seeds; green: not distinguishable from the best (rank 1), "
                     "band: the best recipe's interval; right: bytes per element with scales, native hardware")
                      .arg(qs(first.setting_label))
                      .arg(seeds)
                : tr("%1 · one seed each: no intervals, the order is not a ranking; right: bytes per element with "
                     "scales, native hardware")
                      .arg(qs(first.setting_label));
  intervalChart(plot_, title, subtitle, qs(m.label) + unit, rows, best && best->n_values > 1 ? best->lo : NAN,
                best && best->n_values > 1 ? best->hi : NAN, kBestBand, NAN, QString(), kBaseline);
  if (seeds < 2)
    note_->setText(tr("One seed per recipe: the order is not a ranking. Sweep with \"seeds\": [1, 2, 3, 4, 5] "
                      "(fp8lab-cli sweep --seeds 1-5) to tell a real difference from rounding luck."));
  else
    note_->setText(tr("Rank = 1 + the recipes whose whole 95 % interval is better; '=' marks a shared rank "
                      "(intervals overlap: not distinguishable). %1")
                       .arg(qs(m.meaning)));
  const QStringList heads{tr("Rank"),
                          tr("Recipe"),
                          qs(m.label) + unit + tr(" mean \u00b1 95 %"),
                          tr("sd"),
                          tr("Seeds"),
                          tr("Bytes / element\n(A+B, with scales)"),
                          tr("A + B bytes"),
                          tr("A scales"),
                          tr("B scales"),
                          tr("Native hardware"),
                          tr("Not distinguishable from")};
  table_->setColumnCount(int(heads.size()));
  table_->setHorizontalHeaderLabels(heads);
  table_->setRowCount(int(idx.size()));
  for (int row = 0; row < int(idx.size()); ++row) {
    const RecipeInterval& r = d_.gemm[idx[size_t(row)]];
    const auto& cost = d_.gemm_cost[idx[size_t(row)]];
    table_->setItem(row, 0, new NumberItem(r.rank > 0 ? r.rank : NAN, qs(rankText(r, d_.gemm))));
    table_->setItem(row, 1, new QTableWidgetItem(qs(r.label)));
    table_->setItem(row, 2, new NumberItem(r.mean, qs(intervalText(r))));
    table_->setItem(row, 3, new NumberItem(r.sd, g4(r.sd)));
    table_->setItem(row, 4, new NumberItem(r.n_values, QString::number(r.n_values)));
    if (cost) {
      table_->setItem(row, 5,
                      new NumberItem(cost->bytesPerElement(), qs(bytesPerElementText(cost->bytesPerElement()))));
      table_->setItem(row, 6, new NumberItem(double(cost->bytes()), qs(bytesText(double(cost->bytes())))));
      table_->setItem(row, 7, new QTableWidgetItem(qs(cost->a.block + " " + cost->a.kind->scale_format)));
      table_->item(row, 7)->setToolTip(qs(cost->a.kind->layout));
      table_->setItem(row, 8, new QTableWidgetItem(qs(cost->b.block + " " + cost->b.kind->scale_format)));
      table_->item(row, 8)->setToolTip(qs(cost->b.kind->layout));
      table_->setItem(row, 9, new QTableWidgetItem(qs(cost->native)));
      table_->item(row, 9)->setToolTip(qs(cost->native + "\nSource: " + cost->source));
    }
    QStringList ties;
    for (const std::string& t : r.ties) ties << qs(t);
    table_->setItem(row, 10, new QTableWidgetItem(ties.join(QStringLiteral("; "))));
    if (r.rank == 1)
      for (int c = 0; c < table_->columnCount(); ++c)
        if (QTableWidgetItem* it = table_->item(row, c)) it->setBackground(QColor(0xE3, 0xF2, 0xE6));
  }
  table_->setSortingEnabled(true);
}

void DecideView::drawTraining() {
  if (d_.training.empty()) {
    showEmpty(qs(hintTraining()));
    return;
  }
  const RankingMetric& m = *d_.training_metric;
  const std::vector<size_t> idx = groupRows(d_.training);
  if (idx.empty()) return;
  const int bi = d_.baselineOf(idx.front());
  const RecipeInterval* base = bi >= 0 ? &d_.training[size_t(bi)] : nullptr;
  const QString unit = m.unit == "1" ? QString() : QStringLiteral(" (%1)").arg(qs(m.unit));
  const bool accuracy = m.key == "final_test_accuracy" && m.unit == "1";
  QList<ChartRow> rows;
  int seeds = 0;
  for (size_t i : idx) seeds = std::max(seeds, d_.training[i].n_values);
  for (size_t i : idx) {
    const RecipeInterval& r = d_.training[i];
    ChartRow c;
    c.label = qs(r.label);
    c.mean = r.mean;
    c.lo = r.lo;
    c.hi = r.hi;
    c.colour = r.baseline ? kBaseline : r.rank == 1 && seeds > 1 ? kBest : kOther;
    c.value_text = qs(intervalText(r));
    // An accuracy is a fraction of the test set: its difference reads in percentage points (0.01 pp
    // is one image of 10,000).
    // Same-seed pairs give the difference with its interval (core's pairRecipes); otherwise the
    // difference of the means.
    if (base && !r.baseline && r.n_values > 0) {
      if (r.comparison == Comparison::Paired)
        c.right = tr("\u0394 %1 vs FP32 (paired)").arg(qs(pairedText(*r.paired)));
      else
        c.right = tr("\u0394 %1 vs FP32")
                      .arg(accuracy ? tr("%1 pp").arg(QString::asprintf("%+.2f", 100.0 * (r.mean - base->mean)))
                                    : QString::asprintf("%+.4g", r.mean - base->mean));
    }
    rows << c;
  }
  const QString title = tr("%1 of each recipe against the FP32 baseline (%2 is better)")
                            .arg(capitalized(qs(m.label)), m.higher_better ? tr("higher") : tr("lower"));
  QString setting = qs(d_.training[idx.front()].setting_label);
  if (QString(qs(m.key)).contains(QStringLiteral("test"))) {
    // The test set the metric was measured on, from the runs' configs (test_limit: the first N
    // images; 0: all of them), when they store it.
    QSet<qint64> limits;
    for (size_t i : idx)
      for (const std::string& id : d_.training[i].runs)
        for (const auto& a : runs_)
          if (a && a->id() == qs(id) && a->config().contains(QStringLiteral("test_limit")))
            limits.insert(a->config().value(QStringLiteral("test_limit")).toInteger());
    if (limits.size() == 1)
      setting += *limits.begin() > 0 ? tr(" · test set: the first %1 images").arg(*limits.begin())
                                     : tr(" · the full test set");
    else if (limits.size() > 1)
      setting += tr(" · test sets of different sizes");
  }
  const QString spread =
      seeds > 1 ? tr("mean ± 95 % interval over %1 seeds").arg(seeds) : tr("one seed each: no intervals");
  const QString subtitle = base ? tr("%1 · %2; dashed: the FP32 baseline%3; right: the difference to it")
                                      .arg(setting, spread, seeds > 1 ? tr(", band: its interval") : QString())
                                : tr("%1 · %2; no FP32 run with these settings").arg(setting, spread);
  intervalChart(plot_, title, subtitle, qs(m.label) + unit, rows, base && base->n_values > 1 ? base->lo : NAN,
                base && base->n_values > 1 ? base->hi : NAN, kBaseBand, base ? base->mean : NAN, tr("FP32 baseline"),
                kBaseline);
  if (!base)
    note_->setText(tr("No FP32 run in this session: add one (\"precision\": \"fp32\", same seed) to see what low "
                      "precision costs."));
  else if (seeds < 2)
    note_->setText(tr("One seed: no interval, not ranked. Differences this small may be seed noise: repeat the runs "
                      "with other seeds (fp8lab-cli sweep CONFIG --seeds 1-3)."));
  else
    note_->setText(tr("\u0394 vs FP32: runs with the same seed (same weights and data order) are pairs; the mean of "
                      "the per-seed differences with its 95 % interval (t, n \u2212 1 dof). A recipe is worse or "
                      "better than FP32 only when that interval excludes 0."));
  const QStringList heads{tr("Rank"),
                          tr("Recipe"),
                          qs(m.label) + unit + tr(" mean \u00b1 95 %"),
                          tr("\u0394 vs FP32 \u00b1 95 % (pairs)"),
                          tr("Per seed"),
                          tr("Seeds"),
                          tr("Comparison"),
                          tr("Bytes / element\n(fprop, with scales)"),
                          tr("Native hardware"),
                          tr("Runs")};
  table_->setColumnCount(int(heads.size()));
  table_->setHorizontalHeaderLabels(heads);
  table_->setRowCount(int(idx.size()));
  for (int row = 0; row < int(idx.size()); ++row) {
    const RecipeInterval& r = d_.training[idx[size_t(row)]];
    const double delta = base && r.n_values > 0 ? r.mean - base->mean : NAN;
    QStringList runs;
    for (const std::string& id : r.runs) runs << qs(id);
    table_->setItem(row, 0, new NumberItem(r.rank > 0 ? r.rank : NAN, qs(rankText(r, d_.training))));
    table_->setItem(row, 1, new QTableWidgetItem(qs(r.label)));
    table_->setItem(row, 2, new NumberItem(r.mean, qs(intervalText(r))));
    const bool paired = r.comparison == Comparison::Paired;
    const double shown = paired ? r.paired->mean_diff : delta;
    table_->setItem(row, 3,
                    new NumberItem(shown, r.baseline             ? tr("baseline")
                                          : paired               ? qs(pairedText(*r.paired))
                                          : std::isfinite(delta) ? QString::asprintf("%+.4g", delta)
                                                                 : QStringLiteral("\u2014")));
    table_->setItem(row, 4, new QTableWidgetItem(paired ? qs(perSeedText(*r.paired)) : QString()));
    table_->setItem(row, 5, new NumberItem(r.n_values, QString::number(r.n_values)));
    table_->setItem(row, 6, new QTableWidgetItem(qs(comparisonText(r))));
    // The recipe's cost (trainingRunCost): the fprop pair's bytes per element with scales at
    // 4096³ and where it runs natively; FP32 reads 4 bytes; a run with a policy has no one cost.
    const size_t ri = idx[size_t(row)];
    const auto& cost = ri < d_.training_cost.size() ? d_.training_cost[ri] : std::optional<RecipeCost>{};
    const double bpe = cost ? cost->bytesPerElement() : r.baseline ? 4.0 : NAN;
    table_->setItem(row, 7,
                    new NumberItem(bpe, std::isfinite(bpe) ? qs(bytesPerElementText(bpe)) : QStringLiteral("\u2014")));
    table_->setItem(row, 8,
                    new QTableWidgetItem(cost         ? qs(cost->hardware)
                                         : r.baseline ? QStringLiteral("FP32")
                                                      : QStringLiteral("\u2014")));
    if (cost) {
      table_->item(row, 7)->setToolTip(qs(cost->a.block + " " + cost->a.kind->scale_format + " / " + cost->b.block +
                                          " " + cost->b.kind->scale_format));
      table_->item(row, 8)->setToolTip(qs(cost->native + "\nSource: " + cost->source));
    }
    table_->setItem(row, 9, new QTableWidgetItem(runs.join(QStringLiteral(", "))));
    if (r.baseline)
      for (int c = 0; c < table_->columnCount(); ++c) table_->item(row, c)->setBackground(QColor(0xEE, 0xF3, 0xFB));
  }
  table_->setSortingEnabled(true);
}

void DecideView::drawAdvice() {
  if (d_.advice.empty()) {
    showEmpty(qs(hintAdvice(d_, file_.isEmpty() ? std::string("SESSION.h5") : file_.toStdString())));
    return;
  }
  const AdviceTable& a = d_.advice[size_t(std::clamp(group_, 0, int(d_.advice.size()) - 1))];
  QList<ChartRow> rows;
  for (const AdviceGroupRow& g : a.groups) {
    ChartRow c;
    c.label = qs(g.group);
    c.mean = g.delta;
    // The 95 % interval of the same-seed differences; a session without it: ± the spread.
    const bool ci = std::isfinite(g.ci_low) && std::isfinite(g.ci_high);
    c.lo = ci ? g.ci_low : g.delta - (std::isfinite(g.spread) ? g.spread : 0);
    c.hi = ci ? g.ci_high : g.delta + (std::isfinite(g.spread) ? g.spread : 0);
    c.colour = g.keep_high ? kKeep : kOther;
    c.value_text = qs(adviceDeltaText(g.delta, g.ci_low, g.ci_high));
    c.right = g.keep_high ? tr("keep in high precision") : tr("low precision");
    rows << c;
  }
  const double full = a.full_delta;
  const QString title =
      tr("Per-layer advice for run %1: which groups of sites to keep in high precision").arg(qs(a.advised_run));
  const QString subtitle =
      tr("%1 with each group alone in the recipe minus every site in high precision, same-seed differences with "
         "their 95 % interval over %2 %3, %4 steps per run; vermillion: keep in high precision; dashed: every site "
         "in the recipe, \u0394 %5")
          .arg(qs(a.loss_name))
          .arg(a.seeds)
          .arg(a.seeds == 1 ? tr("seed") : tr("seeds"))
          .arg(a.steps)
          .arg(qs(adviceDeltaText(a.full_delta, a.full_ci_low, a.full_ci_high)));
  intervalChart(plot_, title, subtitle, tr("\u0394 %1").arg(qs(a.loss_name)), rows, NAN, NAN, kBestBand, full,
                tr("every site in the recipe"), kKeep);
  note_->setText(tr("Policy: %1%2")
                     .arg(a.policy.empty() ? tr("(none: every site in the recipe)") : qs(a.policy),
                          a.problem.empty() ? QString() : tr(" \u00b7 incomplete: %1").arg(qs(a.problem))));
  const QStringList heads{tr("Group"),
                          tr("\u0394 loss [95 % interval]"),
                          tr("Share of the full \u0394"),
                          tr("Mean block SQNR (dB)"),
                          tr("Advice"),
                          tr("sd over seeds")};
  table_->setColumnCount(int(heads.size()));
  table_->setHorizontalHeaderLabels(heads);
  table_->setRowCount(int(a.groups.size()));
  for (int row = 0; row < int(a.groups.size()); ++row) {
    const AdviceGroupRow& g = a.groups[size_t(row)];
    table_->setItem(row, 0, new QTableWidgetItem(qs(g.group)));
    table_->setItem(row, 1, new NumberItem(g.delta, qs(adviceDeltaText(g.delta, g.ci_low, g.ci_high))));
    table_->setItem(row, 2,
                    new NumberItem(g.share, std::isfinite(g.share) ? QString::asprintf("%.1f %%", 100 * g.share)
                                                                   : QStringLiteral("\u2014")));
    table_->setItem(row, 3, new NumberItem(g.sqnr_db, g4(g.sqnr_db)));
    table_->setItem(row, 4, new QTableWidgetItem(qs(adviceVerdictText(g))));
    table_->setItem(row, 5, new NumberItem(g.spread, QString::asprintf("%.4f", g.spread)));
  }
  table_->setSortingEnabled(true);
}

void DecideView::drawWhatIf() {
  if (d_.what_if.empty()) {
    showEmpty(qs(hintWhatIf()));
    return;
  }
  const WhatIfTable& w = d_.what_if[size_t(std::clamp(group_, 0, int(d_.what_if.size()) - 1))];
  // Per recipe (stored first): the mean SQNR over the weights, the bar from the worst to the best.
  QList<ChartRow> rows;
  auto row = [&](const QString& label, const std::vector<double>& v, const QColor& colour) {
    ChartRow c;
    c.label = label;
    double s = 0, lo = INFINITY, hi = -INFINITY;
    int n = 0;
    for (double x : v)
      if (std::isfinite(x)) s += x, lo = std::min(lo, x), hi = std::max(hi, x), ++n;
    if (n > 0) c.mean = s / n, c.lo = lo, c.hi = hi;
    c.colour = colour;
    c.value_text = n > 0 ? QString::asprintf("%.2f dB", c.mean) : QString();
    rows << c;
  };
  std::vector<double> stored;
  for (const CheckpointSqnr& r : w.rows) stored.push_back(r.stored_db);
  row(tr("as stored"), stored, kBaseline);
  for (const std::string& id : w.recipes) {
    std::vector<double> v;
    for (const CheckpointSqnr& r : w.rows)
      for (const auto& [rid, db] : r.what_if_db)
        if (rid == id) v.push_back(db);
    row(qs(id), v, kOther);
  }
  const QString title =
      tr("Checkpoint %1: SQNR of its weights as stored and re-quantized by each recipe").arg(qs(w.run_id));
  const QString subtitle =
      tr("each weight against its float32 dequantized value; dot: the mean over the %1 %2, bar: from the worst to "
         "the best; dashed: as stored")
          .arg(w.rows.size())
          .arg(w.rows.size() == 1 ? tr("weight") : tr("weights"));
  intervalChart(plot_, title, subtitle, tr("SQNR (dB)"), rows, NAN, NAN, kBestBand, rows.front().mean, tr("as stored"),
                kBaseline);
  QStringList heads{tr("Tensor"), tr("Stored (dB)")};
  for (const std::string& id : w.recipes) heads << qs(id) + tr(" (dB)");
  table_->setColumnCount(int(heads.size()));
  table_->setHorizontalHeaderLabels(heads);
  table_->setRowCount(int(w.rows.size()));
  for (int r = 0; r < int(w.rows.size()); ++r) {
    const CheckpointSqnr& c = w.rows[size_t(r)];
    table_->setItem(r, 0, new QTableWidgetItem(qs(c.tensor)));
    table_->setItem(r, 1, new NumberItem(c.stored_db, QString::number(c.stored_db, 'f', 2)));
    for (size_t k = 0; k < w.recipes.size(); ++k) {
      double v = NAN;
      for (const auto& [rid, db] : c.what_if_db)
        if (rid == w.recipes[k]) v = db;
      table_->setItem(r, int(k) + 2,
                      new NumberItem(v, std::isfinite(v) ? QString::number(v, 'f', 2) : QStringLiteral("\u2014")));
    }
  }
  table_->setSortingEnabled(true);
}

QString DecideView::csv() const {
  if (table_->rowCount() == 0) return {};
  auto q = [](QString s) {
    s.replace(QLatin1Char('\n'), QLatin1Char(' '));
    return QStringLiteral("\"") + s.replace(QLatin1Char('"'), QStringLiteral("\"\"")) + QLatin1Char('"');
  };
  QString out;
  QStringList h;
  for (int c = 0; c < table_->columnCount(); ++c) h << q(table_->horizontalHeaderItem(c)->text());
  out += h.join(QLatin1Char(',')) + QLatin1Char('\n');
  for (int r = 0; r < table_->rowCount(); ++r) {
    QStringList cells;
    for (int c = 0; c < table_->columnCount(); ++c)
      cells << q(table_->item(r, c) ? table_->item(r, c)->text() : QString());
    out += cells.join(QLatin1Char(',')) + QLatin1Char('\n');
  }
  return out;
}

bool DecideView::saveReport(const QString& file, QString* error) const {
  const QString title = file_.isEmpty() ? tr("unsaved session") : QFileInfo(file_).fileName();
  const QString metric_key = part_ == Part::Training ? qs(d_.training_metric->key)
                             : part_ == Part::Gemm   ? qs(d_.gemm_metric->key)
                                                     : QString();
  return writeReport(
      reportInputFor(runs_, title, file_.isEmpty() ? QString() : QFileInfo(file_).absoluteFilePath(), metric_key),
      datasetSourceFor(runs_), file, error);
}

FP8LAB_REGISTER_VIEW(DecideView, "decide", 82);

// fp8lab-render: one file per part of the Decide view with data and per setting of that part
// (model, advice run, checkpoint), the metric given applying to its own part (GEMM or training).
// Asked for by name, or by default when the session has something to decide (what opens the window
// on this view, or a checkpoint's what-if table); "decide.<ext>" shows what to run when no part has
// data.
FP8LAB_REGISTER_RENDER(DecideView, "decide", {QStringLiteral("decide")}, {},
                       [](const RenderScope& scope, QList<RenderJob>& jobs) {
                         const QList<std::shared_ptr<RunAccess>>& all = scope.all;
                         const RenderRequest& req = scope.req;
                         const bool named = scope.named(QStringLiteral("decide"));
                         if (all.isEmpty() || !(named || req.views.isEmpty())) return;
                         DecideView probe;
                         probe.setRuns(all, scope.session);
                         if (!named && !DecideView::opensOn(all) && !probe.hasPart(DecideView::Part::WhatIf)) return;
                         using Part = DecideView::Part;
                         bool any = false;
                         for (Part part : {Part::Gemm, Part::Training, Part::Advice, Part::WhatIf}) {
                           if (!probe.hasPart(part)) continue;
                           any = true;
                           probe.setPart(part);
                           for (int g = 0; g < probe.groupCount(); ++g) {
                             const QString name = QStringLiteral("decide-") + DecideView::partName(part) +
                                                  (g > 0 ? QStringLiteral("-%1").arg(g + 1) : QString());
                             jobs << RenderJob{QString(), name,
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
                           jobs << RenderJob{QString(), QStringLiteral("decide"), [all, req] {
                                               auto v = std::make_unique<DecideView>();
                                               v->setRuns(all, req.session);
                                               return std::unique_ptr<View>(std::move(v));
                                             }};
                       });

} // namespace fp8lab::ui

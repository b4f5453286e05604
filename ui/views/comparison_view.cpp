#include "views/comparison_view.h"
#include "experiment/gemm/operand_key.h"
#include "session/session_paths.h"

#include "plot/plot_util.h"
#include "plot/qcp.h"
#include "session/session_document.h"
#include "plot/style.h"
#include "views/view_registry.h"
#include "views/view_render.h"
#include "plot/wrapped_title.h"

#include <QFontMetrics>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QJsonDocument>
#include <QVBoxLayout>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

namespace fp8lab::ui {

namespace {

struct MetricDef {
  const char* key;
  const char* name;
  const char* unit;
  double ComparisonRow::*field;
};

const MetricDef kMetrics[] = {
    {"ranking", "Ranking: SQNR total / quantization / accumulation", "dB", &ComparisonRow::sqnr_db},
    {"sqnr_db", "SQNR", "dB", &ComparisonRow::sqnr_db},
    {"max_rel", "max relative error", "1", &ComparisonRow::max_rel},
    {"saturated_pct", "saturated", "% of A and B elements", &ComparisonRow::saturated_pct},
    {"underflow_pct", "underflow", "% of A and B elements", &ComparisonRow::underflow_pct},
    {"seconds", "time (GEMM, or whole training run)", "s", &ComparisonRow::seconds},
    {"quant_sqnr_db", "quantization SQNR", "dB", &ComparisonRow::quant_sqnr_db},
    {"accum_sqnr_db", "accumulation SQNR", "dB", &ComparisonRow::accum_sqnr_db},
    {"final_accuracy", "final test accuracy", "1", &ComparisonRow::final_accuracy},
    {"final_val_loss", "final validation loss", "nats per byte", &ComparisonRow::final_val_loss},
};

/// A table cell that sorts by number, missing values last.
class NumberItem : public QTableWidgetItem {
public:
  explicit NumberItem(double v, const QString& text) : QTableWidgetItem(text), v_(v) {
    setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  }
  bool operator<(const QTableWidgetItem& o) const override {
    const auto* n = dynamic_cast<const NumberItem*>(&o);
    if (!n) return QTableWidgetItem::operator<(o);
    // Missing values sort last in either direction.
    const bool desc = tableWidget() && tableWidget()->horizontalHeader()->sortIndicatorOrder() == Qt::DescendingOrder;
    if (std::isnan(v_) || std::isnan(n->v_))
      return std::isnan(v_) == std::isnan(n->v_) ? false : (std::isnan(v_) == desc);
    return v_ < n->v_;
  }

private:
  double v_;
};

/// Tick labels for the bars: each run's label, shortened to `max` characters, and never two alike.
/// A label that would clash once cut ("gemm-fp8-delayed…" for fc1, fc2, fc3) keeps its end
/// instead ("gemm-fp8…ayed-fc1"); labels still alike (the same label twice) get the run id.
QStringList barLabels(const QList<ComparisonRow>& rows, int max = 18) {
  auto cut = [max](const QString& s, bool middle) {
    if (s.size() <= max) return s;
    if (!middle) return s.left(max - 2) + QStringLiteral("\u2026");
    const int tail = (max - 1) / 2, head = max - 1 - tail;
    return s.left(head) + QStringLiteral("\u2026") + s.right(tail);
  };
  QStringList out;
  for (const auto& r : rows) out << cut(r.label, false);
  auto clashing = [&] {
    QList<bool> c;
    for (const QString& l : out) c << (out.count(l) > 1);
    return c;
  };
  QList<bool> c = clashing();
  for (int i = 0; i < out.size(); ++i)
    if (c[i]) out[i] = cut(rows[i].label, true);
  c = clashing();
  for (int i = 0; i < out.size(); ++i)
    if (c[i] && rows[i].label != rows[i].id) out[i] = cut(rows[i].label + QStringLiteral(" ") + rows[i].id, true);
  return out;
}

QString num(double v, int prec = 4) {
  return std::isnan(v) ? QStringLiteral("\u2014") : QString::number(v, 'g', prec);
}

} // namespace

ComparisonRow comparisonRow(const RunAccess& r) {
  ComparisonRow row;
  row.id = r.id();
  row.label = r.attr(QStringLiteral("label"));
  if (row.label.isEmpty()) row.label = row.id;
  row.kind = r.type();
  row.backend = r.attr(QStringLiteral("backend"));
  auto m = [&](const char* k) { return r.metric(QString::fromLatin1(k)).value_or(NAN); };
  if (row.kind.startsWith(QStringLiteral("gemm"))) {
    const QString fa = r.attr(QStringLiteral("format_a")), fb = r.attr(QStringLiteral("format_b"));
    row.formats = fa == fb ? fa : fa + QStringLiteral(" \u00d7 ") + fb;
    row.scaling = r.attr(QStringLiteral("scaling"));
    const QString scaling_b = r.attr(QStringLiteral("scaling_b"));
    if (!scaling_b.isEmpty() && scaling_b != row.scaling) row.scaling += QStringLiteral(" \u00d7 ") + scaling_b;
    row.accumulation = r.attr(QStringLiteral("accumulation"));
    const QString out = r.attr(QStringLiteral("output_type"));
    if (!out.isEmpty()) row.accumulation += QStringLiteral(" \u2192 ") + out;
    // Older "gemm-trained-weights" runs named the error-split metrics total_*, quantization_*,
    // accumulation_*; every run now uses the names of experiment/gemm/gemm_run.cpp.
    auto m2 = [&](const char* a, const char* b) {
      const double v = m(a);
      return std::isnan(v) ? m(b) : v;
    };
    row.sqnr_db = m2("sqnr_db", "total_sqnr_db");
    row.max_rel = m2("max_rel", "total_max_rel");
    row.seconds = m("gemm_seconds");
    row.quant_sqnr_db = m2("quant_sqnr_db", "quantization_sqnr_db");
    row.accum_sqnr_db = m2("accum_sqnr_db", "accumulation_sqnr_db");
    if (row.formats.isEmpty() || row.formats == QStringLiteral(" \u00d7 ")) {
      const QString a = r.attr(QStringLiteral("a_format")), b = r.attr(QStringLiteral("b_format"));
      row.formats = a == b ? a : a + QStringLiteral(" \u00d7 ") + b;
    }
    double elems = r.attr(QStringLiteral("m")).toDouble() * r.attr(QStringLiteral("k")).toDouble() +
                   r.attr(QStringLiteral("k")).toDouble() * r.attr(QStringLiteral("n")).toDouble();
    if (!(elems > 0)) { // runs without m / k / n attributes (trained-weights GEMMs): the operands' shapes
      const auto [ar, ac] = r.dims(sessionPath(layout::inputs("A")));
      const auto [br, bc] = r.dims(sessionPath(layout::inputs("B")));
      elems = double(ar) * double(ac) + double(br) * double(bc);
    }
    row.operand_key = operandKey(r);
    if (!row.operand_key.isEmpty()) {
      const auto [ar, ac] = r.dims(sessionPath(layout::inputs("A")));
      const auto [br, bc] = r.dims(sessionPath(layout::inputs("B")));
      QString m = r.attr(QStringLiteral("m")), k = r.attr(QStringLiteral("k")), n = r.attr(QStringLiteral("n"));
      if (m.isEmpty() && ar > 0) m = QString::number(ar), k = QString::number(ac), n = QString::number(bc);
      Q_UNUSED(br);
      const QString ao = r.attr(QStringLiteral("a_origin")), bo = r.attr(QStringLiteral("b_origin"));
      row.operands = m.isEmpty() ? QString() : QStringLiteral("%1\u00d7%2\u00d7%3").arg(m, k, n);
      if (!ao.isEmpty() || !bo.isEmpty())
        row.operands += (row.operands.isEmpty() ? QString() : QStringLiteral(", ")) + QStringLiteral("A ") + ao +
                        QStringLiteral(", B ") + bo;
      else
        row.operands += QStringLiteral(" seed %1").arg(r.config().value(QStringLiteral("seed")).toVariant().toString());
    }
    if (elems > 0) {
      row.saturated_pct = (m("a_saturated") + m("b_saturated")) / elems * 100.0;
      row.underflow_pct = (m("a_underflow") + m("b_underflow")) / elems * 100.0;
    }
  } else {
    const QString prec = r.attr(QStringLiteral("precision"));
    const QJsonObject c = r.config();
    if (prec == QStringLiteral("fp8"))
      row.formats = c.value(QStringLiteral("forward_format")).toString(QStringLiteral("E4M3FN")) +
                    QStringLiteral(" / ") + c.value(QStringLiteral("backward_format")).toString(QStringLiteral("E5M2"));
    else
      row.formats = prec.isEmpty() ? QStringLiteral("?") : prec;
    row.scaling = r.attr(QStringLiteral("scaling"));
    row.seconds = m("seconds");
    row.final_accuracy = m("final_test_accuracy");
    row.final_val_loss = m("final_val_loss");
  }
  return row;
}

QString ComparisonRow::recipe() const {
  QStringList parts;
  for (const QString& p : {scaling, formats, accumulation})
    if (!p.isEmpty()) parts << p;
  return parts.join(QStringLiteral(" \u00b7 "));
}

QString operandKey(const RunAccess& r) {
  GemmOperandFacts f;
  f.type = r.type().toStdString();
  if (!r.type().startsWith(QStringLiteral("gemm"))) return {};
  try {
    f.config = Json::parse(QJsonDocument(r.config()).toJson(QJsonDocument::Compact).toStdString());
  } catch (const Json::exception&) {
    f.config = Json::object();
  }
  f.a_origin = r.attr(QStringLiteral("a_origin")).toStdString();
  f.b_origin = r.attr(QStringLiteral("b_origin")).toStdString();
  f.m = r.attr(QStringLiteral("m")).toStdString();
  f.k = r.attr(QStringLiteral("k")).toStdString();
  f.n = r.attr(QStringLiteral("n")).toStdString();
  // the stored inputs' shapes, read only where the attributes do not give M, K, N
  if (f.m.empty() || f.k.empty()) {
    const auto d = r.dims(sessionPath(layout::inputs("A")));
    f.a_dims = {d.first, d.second};
  }
  if (f.n.empty()) {
    const auto d = r.dims(sessionPath(layout::inputs("B")));
    f.b_dims = {d.first, d.second};
  }
  return QString::fromStdString(gemmOperandKey(f));
}

void rankRows(QList<ComparisonRow>* rows) {
  std::map<QString, QList<int>> members;
  QStringList order;
  for (int i = 0; i < rows->size(); ++i) {
    ComparisonRow& r = (*rows)[i];
    r.group = r.group_size = r.rank = 0;
    if (r.operand_key.isEmpty()) continue;
    if (!members.count(r.operand_key)) order << r.operand_key;
    members[r.operand_key] << i;
  }
  int group = 0;
  for (const QString& key : order) {
    QList<int> idx = members[key];
    if (idx.size() < 2) continue;
    ++group;
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
      const double sa = (*rows)[a].sqnr_db, sb = (*rows)[b].sqnr_db;
      if (std::isnan(sb)) return !std::isnan(sa);
      return !std::isnan(sa) && sa > sb;
    });
    int rank = 0;
    for (int i : idx) {
      ComparisonRow& r = (*rows)[i];
      r.group = group;
      r.group_size = int(idx.size());
      r.rank = std::isnan(r.sqnr_db) ? 0 : ++rank;
    }
  }
}

ComparisonView::ComparisonView(QWidget* parent) : AnalysisView(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  auto* split = new QSplitter(Qt::Vertical, this);
  table_ = new QTableWidget(split);
  table_->setObjectName(QStringLiteral("runsTable"));
  const QStringList heads{tr("Run"),
                          tr("Rank (same operands)"),
                          tr("Kind"),
                          tr("Formats"),
                          tr("Scaling"),
                          tr("Accumulation \u2192 output"),
                          tr("SQNR (dB)"),
                          tr("Quant. SQNR (dB)"),
                          tr("Accum. SQNR (dB)"),
                          tr("Max rel. error"),
                          tr("Saturated (%)"),
                          tr("Underflow (%)"),
                          tr("Final accuracy"),
                          tr("Val. loss (nats/byte)"),
                          tr("Time (s)"),
                          tr("Backend"),
                          tr("Operands")};
  table_->setColumnCount(int(heads.size()));
  table_->setHorizontalHeaderLabels(heads);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSortingEnabled(true);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // What a comparison is read for comes first: the run, its rank and the three SQNRs, then what
  // the recipe is. Long run names are cut (their tooltip has them whole) so that the numbers stay
  // in view at the default window size.
  for (const int c : {ColSqnr, ColQuantSqnr, ColAccumSqnr})
    table_->horizontalHeader()->moveSection(table_->horizontalHeader()->visualIndex(c), c - ColSqnr + ColKind);
  table_->horizontalHeader()->setMaximumSectionSize(280);
  table_->setTextElideMode(Qt::ElideMiddle);
  table_->setToolTip(tr("Click a header to sort (Rank: by operand group, best SQNR first); select two GEMM runs "
                        "(Ctrl+click) to see the difference of their error maps"));
  // Grouped and ranked until the user sorts by another column.
  table_->sortByColumn(ColRank, Qt::AscendingOrder);
  auto* lower = new QWidget(split);
  auto* lv = new QVBoxLayout(lower);
  lv->setContentsMargins(0, 4, 0, 0);
  auto* bar = new QHBoxLayout;
  metric_box_ = new QComboBox(lower);
  metric_box_->setObjectName(QStringLiteral("metric"));
  for (const auto& d : kMetrics)
    metric_box_->addItem(QStringLiteral("%1 (%2)").arg(tr(d.name), tr(d.unit)), QString::fromLatin1(d.key));
  auto* ml = new QLabel(tr("Bar chart of:"), lower);
  ml->setBuddy(metric_box_);
  bar->addWidget(ml);
  bar->addWidget(metric_box_);
  diff_label_ = new QLabel(lower);
  diff_label_->setObjectName(QStringLiteral("diffLabel"));
  diff_label_->setWordWrap(true);
  bar->addWidget(diff_label_, 1);
  lv->addLayout(bar);
  plot_ = new QCustomPlot(lower);
  plot_->setAutoAddPlottableToLegend(false); // each plot builds its own legends
  plot_->setObjectName(QStringLiteral("comparePlot"));
  plot_->setMinimumSize(500, 280);
  lv->addWidget(plot_, 1);
  split->addWidget(table_);
  split->addWidget(lower);
  // The chart gets two thirds of the height, as much of the room an exported image has as the
  // window allows; the table scrolls (or the splitter is dragged) for more rows.
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 2);
  v->addWidget(split);
  connect(plot_, &QCustomPlot::afterLayout, this, &ComparisonView::fitCaptions);
  connect(metric_box_, &QComboBox::currentIndexChanged, this, [this] { drawBars(); });
  connect(table_, &QTableWidget::itemSelectionChanged, this, &ComparisonView::selectionChanged);
  fillTable();
}

void ComparisonView::setSession(SessionDocument* session) {
  AnalysisView::setSession(session);
  if (!session) return;
  connect(session, &SessionDocument::reset_, this, [this] { whenShown(0, [this] { rebuildRuns(); }); });
  connect(session, &SessionDocument::runAdded, this, [this] { whenShown(0, [this] { rebuildRuns(); }); });
  connect(session, &SessionDocument::runRemoved, this, [this] { whenShown(0, [this] { rebuildRuns(); }); });
  connect(session, &SessionDocument::runChanged, this, [this] { whenShown(0, [this] { rebuildRuns(); }); });
  rebuildRuns();
}

void ComparisonView::rebuildRuns() {
  if (!session_) return;
  runs_.clear();
  for (const RunRecord& r : session_->runs()) runs_ << RunAccess::forRecord(r, session_->fileName());
  fillTable();
}

void ComparisonView::setRuns(const QList<std::shared_ptr<RunAccess>>& runs) {
  runs_ = runs;
  diff_maps_.reset(); // the runs (and so their maps) may have changed under the same ids
  newGeneration();    // a computation still running is for the old runs
  fillTable();
}

void ComparisonView::drawEmptyState(const QString& text) {
  plotEmptyState(plot_, text);
  diff_label_->clear();
  plot_->replot();
}

void ComparisonView::fillTable() {
  rows_.clear();
  for (const auto& r : runs_) {
    rows_ << comparisonRow(*r);
    if (session_) {
      const int i = session_->indexOf(r->id());
      if (i >= 0) rows_.last().label = session_->run(i).label;
    }
  }
  rankRows(&rows_);
  updating_ = true;
  table_->setSortingEnabled(false);
  table_->clearContents();
  table_->setRowCount(int(rows_.size()));
  for (int i = 0; i < rows_.size(); ++i) {
    const ComparisonRow& r = rows_[i];
    auto* name =
        new QTableWidgetItem(r.label == r.id ? r.id : r.label + QStringLiteral(" (") + r.id + QLatin1Char(')'));
    name->setData(Qt::UserRole, r.id);
    name->setToolTip(name->text());
    table_->setItem(i, ColRun, name);
    // Rank sorts by group, then rank (unranked members last), then runs in no group.
    const double order = r.group > 0 ? r.group * 10000.0 + (r.rank > 0 ? r.rank : 9999) : NAN;
    const QString rank = r.group == 0  ? QStringLiteral("\u2014")
                         : r.rank == 0 ? tr("G%1 \u00b7 no SQNR").arg(r.group)
                         : r.rank == 1 ? tr("G%1 \u00b7 \u2605 best of %2").arg(r.group).arg(r.group_size)
                                       : tr("G%1 \u00b7 %2 of %3").arg(r.group).arg(r.rank).arg(r.group_size);
    table_->setItem(i, ColRank, new NumberItem(order, rank));
    table_->item(i, ColRank)->setTextAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    auto* ops = new QTableWidgetItem(r.group > 0 ? tr("G%1: %2").arg(r.group).arg(r.operands) : r.operands);
    ops->setToolTip(r.operands);
    table_->setItem(i, ColOperands, ops);
    table_->setItem(i, ColKind, new QTableWidgetItem(r.kind));
    table_->setItem(i, ColFormats, new QTableWidgetItem(r.formats));
    table_->setItem(i, ColScaling, new QTableWidgetItem(r.scaling));
    table_->setItem(i, ColAccumulation, new QTableWidgetItem(r.accumulation));
    table_->setItem(i, ColSqnr, new NumberItem(r.sqnr_db, num(r.sqnr_db)));
    table_->setItem(i, ColQuantSqnr, new NumberItem(r.quant_sqnr_db, num(r.quant_sqnr_db)));
    table_->setItem(i, ColAccumSqnr, new NumberItem(r.accum_sqnr_db, num(r.accum_sqnr_db)));
    table_->setItem(i, ColMaxRel, new NumberItem(r.max_rel, num(r.max_rel)));
    table_->setItem(i, ColSaturated, new NumberItem(r.saturated_pct, num(r.saturated_pct)));
    table_->setItem(i, ColUnderflow, new NumberItem(r.underflow_pct, num(r.underflow_pct)));
    table_->setItem(i, ColFinalAccuracy, new NumberItem(r.final_accuracy, num(r.final_accuracy)));
    table_->setItem(i, ColTime, new NumberItem(r.seconds, num(r.seconds, 3)));
    table_->setItem(i, ColBackend, new QTableWidgetItem(r.backend));
    table_->setItem(i, ColFinalValLoss, new NumberItem(r.final_val_loss, num(r.final_val_loss)));
    if (r.rank == 1) // the best recipe of its group
      for (int c = 0; c < ColumnCount; ++c) {
        QTableWidgetItem* it = table_->item(i, c);
        QFont f = it->font();
        f.setBold(true);
        it->setFont(f);
        it->setBackground(QColor(0xE3, 0xF2, 0xE6));
      }
  }
  // Only language-model runs have a validation loss: no empty column for the others.
  table_->setColumnHidden(ColFinalValLoss, std::none_of(rows_.begin(), rows_.end(), [](const ComparisonRow& r) {
                            return !std::isnan(r.final_val_loss);
                          }));
  table_->setSortingEnabled(true);
  updating_ = false;
  // Keep a pair that still exists; else the first two GEMM runs of the same shape.
  QStringList ids;
  for (const auto& r : rows_) ids << r.id;
  if (!ids.contains(pair_a_) || !ids.contains(pair_b_)) {
    pair_a_.clear();
    pair_b_.clear();
    // The best two recipes of the first group (same operands, so the same shape) come first.
    for (const auto& r : rows_)
      if (r.group == 1 && r.rank == 1) pair_a_ = r.id;
    for (const auto& r : rows_)
      if (r.group == 1 && r.rank == 2) pair_b_ = r.id;
    const int ia = int(ids.indexOf(pair_a_)), ib = int(ids.indexOf(pair_b_));
    if (ia < 0 || ib < 0 || !runs_[ia]->has(sessionPath(layout::kErrorAbs)) ||
        runs_[ia]->dims(sessionPath(layout::kErrorAbs)) != runs_[ib]->dims(sessionPath(layout::kErrorAbs))) {
      pair_a_.clear();
      pair_b_.clear();
    }
    for (int i = 0; i < runs_.size() && pair_b_.isEmpty(); ++i)
      for (int j = i + 1; j < runs_.size(); ++j)
        if (runs_[i]->type().startsWith(QStringLiteral("gemm")) &&
            runs_[j]->type().startsWith(QStringLiteral("gemm")) && runs_[i]->has(sessionPath(layout::kErrorAbs)) &&
            runs_[i]->dims(sessionPath(layout::kErrorAbs)) == runs_[j]->dims(sessionPath(layout::kErrorAbs))) {
          pair_a_ = runs_[i]->id();
          pair_b_ = runs_[j]->id();
          break;
        }
  }
  plot_->clearPlottables();
  plot_->clearItems();
  plot_->plotLayout()->clear();
  bar_rect_ = diff_rect_ = nullptr;
  captions_.clear();
  diff_note_ = {};
  if (rows_.isEmpty()) {
    showEmpty(
        tr("No runs to compare.\nOpen a session (File \u2192 Open) or run experiments (Experiment panel, Ctrl+R);\n"
           "every run of the session appears here as a row."));
    return;
  }
  clearEmpty();
  // Keep the chosen metric unless no run has it: then the first metric some run has.
  auto hasMetric = [&](const QString& key) {
    if (key == QStringLiteral("ranking")) {
      for (const auto& r : rows_)
        if (r.rank == 2) return true; // a group with two ranked runs
      return false;
    }
    for (const auto& d : kMetrics)
      if (key == QString::fromLatin1(d.key))
        for (const auto& r : rows_)
          if (!std::isnan(r.*(d.field))) return true;
    return false;
  };
  if (!hasMetric(metric()))
    for (const auto& d : kMetrics)
      if (hasMetric(QString::fromLatin1(d.key))) {
        metric_box_->blockSignals(true);
        metric_box_->setCurrentIndex(metric_box_->findData(QString::fromLatin1(d.key)));
        metric_box_->blockSignals(false);
        break;
      }
  // Row 0 holds the ranking's legend above the bars (never over them, never cut by the rect);
  // row 1 the bar chart, the difference map and its colour scale. The bars get the wider share:
  // a ranking has a bar pair per recipe.
  bar_rect_ = new QCPAxisRect(plot_);
  diff_rect_ = new QCPAxisRect(plot_);
  plot_->plotLayout()->addElement(1, 0, bar_rect_);
  plot_->plotLayout()->addElement(1, 1, diff_rect_);
  plot_->plotLayout()->setColumnStretchFactors({3.0, 2.0});
  plot_->plotLayout()->setRowStretchFactors({0.001, 1.0});
  plot_->plotLayout()->setColumnSpacing(16);
  drawBars();
  drawDiff();
}

void ComparisonView::setMetric(const QString& key) {
  const int i = metric_box_->findData(key);
  if (i >= 0) metric_box_->setCurrentIndex(i);
}

QString ComparisonView::metric() const {
  return metric_box_->currentData().toString();
}

QStringList ComparisonView::metricKeys() {
  QStringList l;
  for (const auto& d : kMetrics) l << QString::fromLatin1(d.key);
  return l;
}

void ComparisonView::drawBars() {
  if (!bar_rect_) return;
  for (int i = plot_->plottableCount() - 1; i >= 0; --i)
    if (plot_->plottable(i)->keyAxis()->axisRect() == bar_rect_) plot_->removePlottable(i);
  for (int i = plot_->itemCount() - 1; i >= 0; --i)
    if (plot_->item(i)->clipAxisRect() == bar_rect_) plot_->removeItem(i);
  captions_.clear(); // their items went with the bar chart's items
  for (QCPLayoutElement* e : plot_->plotLayout()->elements(false))
    if (auto* l = qobject_cast<QCPLegend*>(e)) plot_->plotLayout()->remove(l);
  bar_rect_->axis(QCPAxis::atRight)->setVisible(false);
  if (metric() == QStringLiteral("ranking")) {
    drawRanking();
    return;
  }
  const MetricDef* def = &kMetrics[0];
  for (const auto& d : kMetrics)
    if (metric() == QString::fromLatin1(d.key)) def = &d;
  QCPAxis* x = bar_rect_->axis(QCPAxis::atBottom);
  QCPAxis* y = bar_rect_->axis(QCPAxis::atLeft);
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  QVector<double> keys, vals;
  int missing = 0;
  const QStringList names = barLabels(rows_);
  for (int i = 0; i < rows_.size(); ++i) {
    ticker->addTick(i, names[i]);
    const double v = rows_[i].*(def->field);
    if (std::isnan(v)) {
      ++missing;
      continue;
    }
    keys << i;
    vals << v;
  }
  x->setTicker(ticker);
  // Slanted labels end at their tick (negative angle) so that they do not run into the
  // difference map on the right.
  x->setTickLabelRotation(rows_.size() > 2 ? -30 : 0);
  // The runs without the metric are named under the axis, not over the bars' value labels.
  x->setLabel(missing > 0 ? tr("run (%n without this metric: no bar)", nullptr, missing) : tr("run"));
  x->setRange(-0.6, double(rows_.size()) - 0.4);
  y->setLabel(QStringLiteral("%1 (%2)").arg(tr(def->name), tr(def->unit)));
  auto* bars = new QCPBars(x, y);
  bars->setData(keys, vals, true);
  bars->setPen(Qt::NoPen);
  bars->setBrush(colors::series(0));
  bars->setWidth(0.6);
  double lo = 0, hi = 0;
  for (double v : vals) lo = std::min(lo, v), hi = std::max(hi, v);
  if (hi == lo) hi = lo + 1;
  y->setRange(lo - 0.05 * (hi - lo), hi + 0.1 * (hi - lo));
  // Value labels above the bars.
  for (int i = 0; i < keys.size(); ++i) {
    auto* t = new QCPItemText(plot_);
    t->setClipAxisRect(bar_rect_);
    t->position->setAxes(x, y);
    t->position->setCoords(keys[i], vals[i]);
    t->setPositionAlignment(vals[i] >= 0 ? (Qt::AlignHCenter | Qt::AlignBottom) : (Qt::AlignHCenter | Qt::AlignTop));
    t->setText(num(vals[i], 4));
    QFont f = font();
    f.setPointSizeF(8);
    t->setFont(f);
  }
  stylePlot(plot_);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ComparisonView::drawRanking() {
  QCPAxis* x = bar_rect_->axis(QCPAxis::atBottom);
  QCPAxis* y = bar_rect_->axis(QCPAxis::atLeft);
  // The ranked runs, group by group, best first; one empty slot between groups.
  QList<int> order;
  for (int i = 0; i < rows_.size(); ++i)
    if (rows_[i].rank > 0) order << i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return std::pair(rows_[a].group, rows_[a].rank) < std::pair(rows_[b].group, rows_[b].rank);
  });
  for (auto* g : plot_->findChildren<QCPBarsGroup*>(Qt::FindDirectChildrenOnly)) delete g;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  // An empty state shows its text on a bare rectangle: no ticks, numbers or grid of a chart
  // that is not there. The recipes' axis has no grid (a line through each pair of bars).
  for (QCPAxis* a : {x, y}) {
    a->setTicks(!order.isEmpty());
    a->setTickLabels(!order.isEmpty());
  }
  x->grid()->setVisible(false);
  y->grid()->setVisible(!order.isEmpty());
  if (order.isEmpty()) {
    x->setTicker(ticker);
    x->setLabel(QString());
    y->setLabel(QString());
    auto* t = new QCPItemText(plot_);
    t->setClipAxisRect(bar_rect_);
    t->position->setType(QCPItemPosition::ptAxisRectRatio);
    t->position->setAxisRect(bar_rect_);
    t->position->setCoords(0.5, 0.5);
    t->setText(tr("No ranking: no two GEMM runs with an SQNR share their operands.\nRun the same GEMM (same "
                  "shape, seed and distribution, or tensor) with other recipes."));
    t->setColor(QColor(0x55, 0x55, 0x55));
    plot_->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  // Tick labels name what differs between the recipes of a group (the scaling preset, say); the
  // table has the whole recipe.
  std::map<int, std::array<bool, 3>> differs;
  for (int i : order) {
    const ComparisonRow& r = rows_[i];
    const ComparisonRow& first =
        rows_[*std::find_if(order.begin(), order.end(), [&](int j) { return rows_[j].group == r.group; })];
    auto& d = differs[r.group];
    d[0] |= r.scaling != first.scaling;
    d[1] |= r.formats != first.formats;
    d[2] |= r.accumulation != first.accumulation;
  }
  QVector<double> keys;
  QVector<double> vals[3];
  struct Span {
    int group;
    double first, last;
    QString operands;
  };
  QList<Span> spans;
  double pos = 0;
  for (int n = 0; n < order.size(); ++n) {
    const ComparisonRow& r = rows_[order[n]];
    if (n > 0 && r.group != rows_[order[n - 1]].group) pos += 1;
    if (spans.isEmpty() || spans.last().group != r.group) spans << Span{r.group, pos, pos, r.operands};
    spans.last().last = pos;
    const auto& d = differs[r.group];
    QStringList parts;
    if (d[0]) parts << r.scaling;
    if (d[1]) parts << r.formats;
    if (d[2]) parts << r.accumulation;
    QString label = parts.isEmpty() ? r.label : parts.join(QStringLiteral(" \u00b7 "));
    if (label.size() > 24) label = label.left(23) + QStringLiteral("\u2026");
    ticker->addTick(pos, (r.rank == 1 ? QStringLiteral("\u2605 ") : QStringLiteral("%1. ").arg(r.rank)) + label);
    keys << pos;
    vals[0] << r.sqnr_db;
    vals[1] << r.quant_sqnr_db;
    vals[2] << r.accum_sqnr_db;
    pos += 1;
  }
  x->setTicker(ticker);
  x->setTickLabelRotation(order.size() > 3 ? -30 : 0);
  // A rotated label runs down-left from its tick: the first one needs room left of the axis.
  int left = 0;
  if (order.size() > 3 && !ticker->ticks().isEmpty()) {
    const QFontMetrics fm(x->tickLabelFont());
    left = static_cast<int>(fm.horizontalAdvance(ticker->ticks().first()) * 0.87) + 8;
  }
  bar_rect_->setMinimumMargins(QMargins(left, 0, 0, 0));
  x->setLabel(tr("recipe, ranked by total SQNR within each operand group (\u2605 best)"));
  x->setRange(-0.6, pos - 0.4);
  y->setLabel(tr("total and quantization SQNR (dB)"));
  // Accumulation SQNR is often 100 dB above the others: markers on an axis of its own.
  QCPAxis* y2 = bar_rect_->axis(QCPAxis::atRight);
  y2->setVisible(true);
  y2->setTickLabels(true);
  y2->setLabel(tr("accumulation SQNR (dB), \u25c6"));
  auto* group = new QCPBarsGroup(plot_);
  group->setSpacing(1);
  const QString names[3] = {tr("total SQNR (ranks)"), tr("quantization SQNR"), tr("accumulation SQNR (right axis)")};
  // The legend in one row above the bars: the layout gives its column at least the legend's width.
  auto* legend = new QCPLegend;
  QCPLayoutGrid* grid = plot_->plotLayout();
  if (grid->hasElement(0, 0) && grid->element(0, 0) == bar_rect_) { // its row went in a simplify()
    grid->insertRow(0);
    grid->setRowStretchFactors({0.001, 1.0});
  }
  grid->addElement(0, 0, legend);
  legend->setLayer(QStringLiteral("legend"));
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  legend->setWrap(3);
  legend->setBrush(Qt::NoBrush);
  legend->setBorderPen(Qt::NoPen);
  QFont lf = font();
  lf.setPointSizeF(8);
  legend->setFont(lf);
  double lo = 0, hi = 0, lo2 = INFINITY, hi2 = -INFINITY;
  for (int s = 0; s < 2; ++s) {
    auto* bars = new QCPBars(x, y);
    QVector<double> k, v;
    for (int i = 0; i < keys.size(); ++i)
      if (std::isfinite(vals[s][i])) {
        k << keys[i], v << vals[s][i];
        lo = std::min(lo, vals[s][i]);
        hi = std::max(hi, vals[s][i]);
      }
    bars->setData(k, v, true);
    bars->setWidth(0.38);
    bars->setPen(Qt::NoPen);
    bars->setBrush(colors::series(s));
    bars->setName(names[s]);
    bars->setBarsGroup(group);
    bars->addToLegend(legend);
  }
  {
    auto* g = new QCPGraph(x, y2);
    QVector<double> k, v;
    for (int i = 0; i < keys.size(); ++i)
      if (std::isfinite(vals[2][i])) {
        k << keys[i], v << vals[2][i];
        lo2 = std::min(lo2, vals[2][i]);
        hi2 = std::max(hi2, vals[2][i]);
      }
    g->setData(k, v, true);
    g->setLineStyle(QCPGraph::lsNone);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, colors::series(2), colors::series(2), 9));
    g->setName(names[2]);
    g->addToLegend(legend);
    if (!std::isfinite(lo2)) lo2 = 0, hi2 = 1;
    if (hi2 - lo2 < 1) lo2 -= 0.5, hi2 += 0.5;
    // The same headroom as the left axis, so no marker sits under the legend.
    // The markers take the lower half of the axis, over the bars, clear of the value labels above
    // the bars and of the legend.
    y2->setRange(lo2 - 0.25 * (hi2 - lo2), hi2 + 1.25 * (hi2 - lo2));
  }
  if (hi == lo) hi = lo + 1;
  // Headroom above the bars for their value labels and the group captions (two lines at the top
  // of the rect), so that no caption covers a bar.
  y->setRange(lo - 0.05 * (hi - lo), hi + 0.35 * (hi - lo));
  QFont f = font();
  f.setPointSizeF(8);
  for (int i = 0; i < keys.size(); ++i) { // the total SQNR over its bar
    if (!std::isfinite(vals[0][i])) continue;
    auto* t = new QCPItemText(plot_);
    t->setClipAxisRect(bar_rect_);
    t->position->setAxes(x, y);
    t->position->setCoords(keys[i] - 0.19, vals[0][i]);
    t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    t->setText(num(vals[0][i], 4));
    t->setFont(f);
  }
  for (int g = 0; g < spans.size(); ++g) {
    const Span& sp = spans[g];
    // At the top of the rect, between the dashed lines around its group; fitCaptions fits the
    // text to that width once the layout has the pixels.
    auto* t = new QCPItemText(plot_);
    t->setClipAxisRect(bar_rect_);
    t->position->setTypeX(QCPItemPosition::ptPlotCoords);
    t->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    t->position->setAxes(x, y);
    t->position->setAxisRect(bar_rect_);
    t->position->setCoords((sp.first + sp.last) / 2.0, 0.0);
    t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
    t->setTextAlignment(Qt::AlignHCenter);
    t->setPadding(QMargins(2, 3, 2, 1));
    t->setFont(f);
    t->setColor(QColor(0x44, 0x44, 0x44));
    const QString text = tr("G%1: %2").arg(sp.group).arg(sp.operands);
    t->setText(text);
    captions_ << Caption{t, g == 0 ? -0.6 : sp.first - 1.0, g + 1 < spans.size() ? spans[g + 1].first - 1.0 : pos - 0.4,
                         text};
    if (g > 0) { // a dashed line between groups
      auto* line = new QCPItemStraightLine(plot_);
      line->setClipAxisRect(bar_rect_);
      line->point1->setAxes(x, y);
      line->point2->setAxes(x, y);
      line->point1->setCoords(sp.first - 1.0, 0);
      line->point2->setCoords(sp.first - 1.0, 1);
      line->setPen(QPen(QColor(0x99, 0x99, 0x99), 1, Qt::DashLine));
    }
  }
  stylePlot(plot_);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ComparisonView::fitCaptions() {
  if (!bar_rect_) return;
  QCPAxis* x = bar_rect_->axis(QCPAxis::atBottom);
  const QRect r = bar_rect_->rect();
  for (const Caption& c : captions_) {
    const double left = std::max(double(r.left()), x->coordToPixel(c.left)) + 4;
    const double right = std::min(double(r.right()), x->coordToPixel(c.right)) - 4;
    const int width = std::max(1, int(right - left) - 4); // less the item's padding
    const QFontMetrics fm(c.item->font());
    QStringList lines = wrapText(c.text, fm, width);
    if (lines.size() > 2) // the first line is the start of the text: the rest follows it
      lines = QStringList{lines[0], fm.elidedText(c.text.mid(lines[0].size()).trimmed(), Qt::ElideRight, width)};
    c.item->setText(lines.join(QLatin1Char('\n')));
    c.item->position->setCoords(x->pixelToCoord((left + right) / 2.0), 0.0);
  }
  if (diff_rect_ && diff_note_.item)
    diff_note_.item->setText(wrapText(diff_note_.text, QFontMetrics(diff_note_.item->font()), diff_rect_->width() - 16)
                                 .join(QLatin1Char('\n')));
}

bool ComparisonView::selectPair(const QString& first, const QString& second) {
  bool fa = false, fb = false;
  for (const auto& r : runs_) fa |= r->id() == first, fb |= r->id() == second;
  if (!fa || !fb || first == second) return false;
  pair_a_ = first;
  pair_b_ = second;
  drawDiff();
  return true;
}

void ComparisonView::selectionChanged() {
  if (updating_) return;
  QStringList ids;
  for (int row = 0; row < table_->rowCount(); ++row)
    if (table_->item(row, 0) && table_->item(row, 0)->isSelected())
      ids << table_->item(row, 0)->data(Qt::UserRole).toString();
  if (ids.size() == 2) selectPair(ids[0], ids[1]);
}

QString ComparisonView::diffText() const {
  return diff_label_->text();
}

void ComparisonView::drawDiff() {
  if (!diff_rect_) return;
  for (int i = plot_->plottableCount() - 1; i >= 0; --i)
    if (plot_->plottable(i)->keyAxis()->axisRect() == diff_rect_) plot_->removePlottable(i);
  for (auto* e : plot_->plotLayout()->elements(false))
    if (qobject_cast<QCPColorScale*>(e)) plot_->plotLayout()->remove(e);
  plot_->plotLayout()->simplify();
  diff_ = {};
  QCPAxis* x = diff_rect_->axis(QCPAxis::atBottom);
  QCPAxis* y = diff_rect_->axis(QCPAxis::atLeft);
  std::shared_ptr<RunAccess> a, b;
  for (const auto& r : runs_) {
    if (r->id() == pair_a_) a = r;
    if (r->id() == pair_b_) b = r;
  }
  // `t` is drawn in the plot (and so in exported images); `hint` is the how-to for the window only.
  auto say = [&](const QString& t, const QString& hint = QString()) {
    diff_label_->setText(hint.isEmpty() ? t : t + QLatin1Char(' ') + hint);
    x->setLabel(QString());
    y->setLabel(QString());
    for (QCPAxis* a : {x, y}) {
      a->setTicks(false);
      a->setTickLabels(false);
      a->grid()->setVisible(false);
    }
    auto* txt = new QCPItemText(plot_);
    txt->setClipAxisRect(diff_rect_);
    txt->position->setType(QCPItemPosition::ptAxisRectRatio);
    txt->position->setAxisRect(diff_rect_);
    txt->position->setCoords(0.5, 0.5);
    txt->setText(t);
    txt->setColor(QColor(0x55, 0x55, 0x55));
    diff_note_ = {txt, 0, 0, t}; // wrapped to the rect's width by fitCaptions
    plot_->replot(QCustomPlot::rpQueuedReplot);
  };
  for (int i = plot_->itemCount() - 1; i >= 0; --i)
    if (plot_->item(i)->clipAxisRect() == diff_rect_) plot_->removeItem(i);
  diff_note_ = {};
  if (!a || !b) {
    say(tr("No difference map: no pair of GEMM runs of the same shape is selected."),
        tr("Select two such runs in the table (Ctrl+click rows) to see the difference of their error maps."));
    return;
  }
  HeatmapModel ma(a), mb(b);
  QString why;
  if (!ma.available(ErrorQuantity::Total, ErrorKind::Abs, &why) ||
      !mb.available(ErrorQuantity::Total, ErrorKind::Abs, &why)) {
    say(tr("No difference map: %1").arg(why));
    return;
  }
  const auto sa = ma.shape(ErrorQuantity::Total), sb = mb.shape(ErrorQuantity::Total);
  if (sa != sb) {
    say(tr("No difference map: %1 is %2\u00d7%3, %4 is %5\u00d7%6 (the maps must have the same shape)")
            .arg(a->id())
            .arg(sa.first)
            .arg(sa.second)
            .arg(b->id())
            .arg(sb.first)
            .arg(sb.second));
    return;
  }
  const int64_t cells = 256;
  const int64_t blk = std::max<int64_t>({1, (sa.first + cells - 1) / cells, (sa.second + cells - 1) / cells});
  HeatmapGrid ga, gb;
  const QString ida = a->id(), idb = b->id();
  // Both runs' total |D − ideal| maps reduced to cell means of blk×blk (any thread).
  auto reduce = [a, b, ida, idb, sa, blk] {
    DiffMaps m{ida, idb, {}, {}, {}};
    for (auto [run, grid] : {std::pair{a, &m.ga}, {b, &m.gb}})
      if (!HeatmapModel(run).compute(ErrorQuantity::Total, ErrorKind::Abs, 0, 0, sa.first, sa.second, blk, blk,
                                     CellReduce::Mean, grid, &m.error))
        break;
    return m;
  };
  if (diff_maps_ && diff_maps_->a == ida && diff_maps_->b == idb) {
    if (!diff_maps_->error.isEmpty()) {
      say(tr("No difference map: %1").arg(diff_maps_->error));
      return;
    }
    ga = diff_maps_->ga;
    gb = diff_maps_->gb;
  } else if (sa.first * sa.second > kBackgroundReadElements) {
    // A big pair (each map read and reduced from its file): on the thread pool, so the window stays
    // responsive; drawn when both are back (and the pair is still the selected one).
    say(tr("Computing the difference map of %1 and %2\u2026").arg(ida, idb));
    loadAsync<DiffMaps>(
        newGeneration(), true, reduce,
        [this](const DiffMaps& m) {
          diff_maps_ = m;
          drawDiff();
        },
        QString());
    return;
  } else {
    diff_maps_ = reduce();
    if (!diff_maps_->error.isEmpty()) {
      say(tr("No difference map: %1").arg(diff_maps_->error));
      return;
    }
    ga = diff_maps_->ga;
    gb = diff_maps_->gb;
  }
  diff_ = ga;
  double amax = 0;
  int64_t nan = 0;
  for (size_t i = 0; i < diff_.v.size(); ++i) {
    diff_.v[i] = gb.v[i] - ga.v[i];
    if (std::isnan(diff_.v[i]))
      ++nan;
    else
      amax = std::max(amax, std::fabs(diff_.v[i]));
  }
  diff_.nan_cells = nan;
  for (QCPAxis* a : {x, y}) {
    a->setTicks(true);
    a->setTickLabels(true);
    a->grid()->setVisible(true);
  }
  x->setTicker(QSharedPointer<QCPAxisTicker>::create());
  x->setTickLabelRotation(0);
  x->setLabel(tr("column j of D"));
  y->setLabel(tr("row i of D"));
  y->setRangeReversed(true);
  auto* map = new QCPColorMap(x, y);
  map->setInterpolate(false);
  const int64_t gc = std::max<int64_t>(2, diff_.grid_cols), gr = std::max<int64_t>(2, diff_.grid_rows);
  map->data()->setSize(int(gc), int(gr));
  const double kc = double(blk - 1) / 2.0;
  map->data()->setRange(QCPRange(kc, double(gc - 1) * double(blk) + kc),
                        QCPRange(kc, double(gr - 1) * double(blk) + kc));
  for (int64_t r = 0; r < gr; ++r)
    for (int64_t c = 0; c < gc; ++c)
      map->data()->setCell(int(c), int(r),
                           r < diff_.grid_rows && c < diff_.grid_cols ? diff_.cell(r, c) : std::nan(""));
  auto* scale = new QCPColorScale(plot_);
  QCPLayoutGrid* grid = plot_->plotLayout();
  int row = 0; // the map's row: 1 below the legend's row, 0 when a simplify() took that row
  for (int r = 0; r < grid->rowCount(); ++r)
    if (grid->hasElement(r, 1) && grid->element(r, 1) == diff_rect_) row = r;
  grid->addElement(row, 2, scale);
  scale->setType(QCPAxis::atRight);
  scale->setBarWidth(12);
  map->setColorScale(scale);
  map->setGradient(differenceGradient());
  const double r = amax > 0 ? amax : 1;
  map->setDataRange(QCPRange(-r, r));
  // Short enough for the colour bar's height at the default window size.
  scale->axis()->setLabel(tr("\u0394|D \u2212 ideal|: 2nd \u2212 1st [value units]"));
  auto* group = new QCPMarginGroup(plot_);
  diff_rect_->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  bar_rect_->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  x->setRange(-0.5, double(sa.second) - 0.5);
  y->setRange(-0.5, double(sa.first) - 0.5);
  QString t = tr("Difference of error maps: %1 minus %2 (second minus first; cell means of %3\u00d7%4 elements); red: "
                 "%1 worse, blue: %1 better")
                  .arg(b->id(), a->id())
                  .arg(blk)
                  .arg(blk);
  if (nan > 0) t += tr(" \u00b7 %n NaN cell(s) in magenta", nullptr, int(nan));
  diff_label_->setText(t);
  stylePlot(plot_);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString ComparisonView::csv() const {
  if (rows_.isEmpty()) return {};
  QString out = QStringLiteral("id,label,kind,formats,scaling,accumulation,sqnr_db,max_rel,saturated_pct,underflow_pct,"
                               "quant_sqnr_db,accum_sqnr_db,"
                               "final_accuracy,seconds,backend,operands,group,rank");
  // Language-model runs add their validation loss (the column is left out when no run has one).
  const bool lm =
      std::any_of(rows_.begin(), rows_.end(), [](const ComparisonRow& r) { return !std::isnan(r.final_val_loss); });
  out += lm ? QStringLiteral(",final_val_loss\n") : QStringLiteral("\n");
  auto q = [](const QString& s) {
    return QStringLiteral("\"") + QString(s).replace(QLatin1Char('"'), QStringLiteral("\"\"")) + QLatin1Char('"');
  };
  auto n = [](double v) { return std::isnan(v) ? QString() : QString::number(v, 'g', 9); };
  for (const auto& r : rows_)
    out += QStringList{q(r.id),
                       q(r.label),
                       r.kind,
                       q(r.formats),
                       q(r.scaling),
                       q(r.accumulation),
                       n(r.sqnr_db),
                       n(r.max_rel),
                       n(r.saturated_pct),
                       n(r.underflow_pct),
                       n(r.quant_sqnr_db),
                       n(r.accum_sqnr_db),
                       n(r.final_accuracy),
                       n(r.seconds),
                       q(r.backend),
                       q(r.operands),
                       r.group > 0 ? QString::number(r.group) : QString(),
                       r.rank > 0 ? QString::number(r.rank) : QString()}
               .join(QLatin1Char(',')) +
           (lm ? QLatin1Char(',') + n(r.final_val_loss) : QString()) + QLatin1Char('\n');
  return out;
}

FP8LAB_REGISTER_VIEW(ComparisonView, "compare", 80);

// fp8lab-render: the comparison of every run of the session (compare.<ext>), by --metric.
FP8LAB_REGISTER_RENDER(ComparisonView, "compare", {QStringLiteral("compare")}, {},
                       [](const RenderScope& scope, QList<RenderJob>& jobs) {
                         if (!scope.wants(QStringLiteral("compare")) || scope.all.isEmpty()) return;
                         jobs << RenderJob{QString(), QStringLiteral("compare"), [all = scope.all, req = scope.req] {
                                             auto v = std::make_unique<ComparisonView>();
                                             v->setRuns(all);
                                             if (!req.metric.isEmpty()) v->setMetric(req.metric);
                                             return std::unique_ptr<View>(std::move(v));
                                           }};
                       });

} // namespace fp8lab::ui

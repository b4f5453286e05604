// Comparison view: the runs of a session side by side in a sortable table (formats,
// strategy, SQNR, max relative error, saturated %, underflow %, time, backend; final accuracy for
// training runs), a bar chart of a chosen metric, and, for two selected GEMM runs of the same
// shape, the difference of their error maps (|D − ideal| of the second minus the first, cell
// means over a decimated grid, diverging colour scale).
//
// Recipes ranked: GEMM runs on the same operands (operandKey()) form a group, and each group of
// two or more runs is ranked by total SQNR, best first (rankRows()). The table starts sorted by
// group and rank with the best run of each group marked (★, bold); the "Ranking" bar chart shows
// total, quantization and accumulation SQNR of the ranked runs, group by group.
#pragma once

#include <optional>

#include "views/heatmap_model.h"
#include "views/analysis_view.h"

#include <cmath>

class QCPAxisRect;
class QCPColorMap;
class QCPItemText;
class QComboBox;
class QLabel;
class QTableWidget;

namespace fp8lab::ui {

/// One row of the comparison table (NaN where a run has no such value).
struct ComparisonRow {
  QString id, label, kind, formats, scaling, accumulation, backend;
  double sqnr_db = NAN, max_rel = NAN, saturated_pct = NAN, underflow_pct = NAN, seconds = NAN;
  double quant_sqnr_db = NAN, accum_sqnr_db = NAN, final_accuracy = NAN;
  double final_val_loss = NAN; ///< language-model runs: validation loss after the last step, nats per byte
  QString operand_key;         ///< operandKey() of the run ("" when its operands are unknown)
  QString operands;            ///< the operands as shown: "M×K×N, A …, B …" ("" when unknown)
  int group = 0;               ///< 1, 2, … for runs that share their operands with another run; 0: none
  int group_size = 0;          ///< runs in the group
  int rank = 0;                ///< 1 = best total SQNR of the group; 0: not ranked (no group, or no SQNR)
  /// The recipe in one line: "scaling · formats · accumulation → output".
  QString recipe() const;
};

/// The row of a run, from its attributes and metrics (docs: experiment/gemm/gemm_run.cpp, training_session.h).
/// saturated % = (a_saturated + b_saturated) / (M·K + K·N) · 100, likewise underflow.
ComparisonRow comparisonRow(const RunAccess& run);

/// What makes two GEMM runs' operands the same: core's gemmOperandKey
/// (experiment/gemm/operand_key.h) of the run's type, config, attributes and stored input shapes.
/// Empty for runs that are not GEMMs or do not say where their operands came from: such runs are
/// never grouped.
QString operandKey(const RunAccess& run);

/// Numbers the groups of rows with the same non-empty operand_key (1, 2, … in order of their first
/// row; a key of one row only is no group) and ranks each group by sqnr_db, highest first; ties
/// keep the rows' order; rows without an SQNR stay unranked (rank 0).
void rankRows(QList<ComparisonRow>* rows);

class ComparisonView : public AnalysisView {
  Q_OBJECT
public:
  /// Columns of the table.
  enum Column {
    ColRun,
    ColRank,
    ColKind,
    ColFormats,
    ColScaling,
    ColAccumulation,
    ColSqnr,
    ColQuantSqnr,
    ColAccumSqnr,
    ColMaxRel,
    ColSaturated,
    ColUnderflow,
    ColFinalAccuracy,
    ColFinalValLoss, ///< shown when a run has it (language-model runs)
    ColTime,
    ColBackend,
    ColOperands,
    ColumnCount
  };
  explicit ComparisonView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("compare"); }
  QString title() const override { return tr("Comparison"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  QString csv() const override;
  void setSession(SessionDocument* session) override;

  /// Shows runs directly (CLI renderer, tests).
  void setRuns(const QList<std::shared_ptr<RunAccess>>& runs);
  const QList<ComparisonRow>& rows() const { return rows_; }
  QTableWidget* table() const { return table_; }
  /// Metric of the bar chart: "ranking" (total, quantization and accumulation SQNR of the ranked
  /// runs, group by group, best first; offered when some group has two ranked runs), "sqnr_db", "max_rel",
  /// "saturated_pct", "underflow_pct", "seconds", "quant_sqnr_db", "accum_sqnr_db", "final_accuracy".
  void setMetric(const QString& key);
  QString metric() const;
  /// The keys setMetric knows, in the metric box's order.
  static QStringList metricKeys();
  /// Selects two runs (by id) for the error-map difference; false when either is unknown.
  bool selectPair(const QString& first, const QString& second);
  /// The difference grid drawn (empty when none) and the line saying what it is.
  const HeatmapGrid& difference() const { return diff_; }
  QString diffText() const;
  QCustomPlot* plot() const { return plot_; }
  /// The axis rect of the bar chart (left) and of the difference map (right); null without runs.
  QCPAxisRect* barRect() const { return bar_rect_; }
  QCPAxisRect* diffRect() const { return diff_rect_; }

private:
  void rebuildRuns();
  void fillTable();
  void drawBars();
  void drawRanking();
  void drawDiff();
  void selectionChanged();
  /// No runs: the chart's empty state, which says how to get runs.
  void drawEmptyState(const QString& text) override;

  QList<std::shared_ptr<RunAccess>> runs_;
  QList<ComparisonRow> rows_;
  QString pair_a_, pair_b_;
  HeatmapGrid diff_;
  /// The two runs' reduced error maps of the last difference map (computed on the thread pool for
  /// big maps; drawDiff uses them when the pair is unchanged).
  struct DiffMaps {
    QString a, b;
    HeatmapGrid ga, gb;
    QString error; ///< why the maps could not be computed (empty: they were)
  };
  std::optional<DiffMaps> diff_maps_;
  bool updating_ = false;
  QTableWidget* table_;
  QComboBox* metric_box_;
  QLabel* diff_label_;
  QCustomPlot* plot_;
  QCPAxisRect* bar_rect_ = nullptr;
  QCPAxisRect* diff_rect_ = nullptr;
  /// The ranking chart's operand-group captions: each is fitted to its group's share of the axis
  /// once the layout knows the pixels (fitCaptions, after every layout).
  struct Caption {
    QCPItemText* item = nullptr;
    double left = 0, right = 0; ///< key range the caption may use: from the dashed line before it to the one after
    QString text;               ///< in full; drawn wrapped to two lines at most, the second elided
  };
  QList<Caption> captions_;
  Caption diff_note_; ///< why there is no difference map, wrapped to the width of its rect
  void fitCaptions();
};

} // namespace fp8lab::ui

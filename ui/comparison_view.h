// Comparison view: the runs of a session side by side in a sortable table (formats,
// strategy, SQNR, max relative error, saturated %, underflow %, time, backend; final accuracy for
// training runs), a bar chart of a chosen metric, and, for two selected GEMM runs of the same
// shape, the difference of their error maps (|D − ideal| of the second minus the first, cell
// means over a decimated grid, diverging colour scale).
#pragma once

#include <optional>

#include "heatmap_model.h"
#include "view.h"

#include <cmath>

class QCPAxisRect;
class QCPColorMap;
class QComboBox;
class QLabel;
class QTableWidget;

namespace fp8lab::ui {

/// One row of the comparison table (NaN where a run has no such value).
struct ComparisonRow {
  QString id, label, kind, formats, scaling, accumulation, backend;
  double sqnr_db = NAN, max_rel = NAN, saturated_pct = NAN, underflow_pct = NAN, seconds = NAN;
  double quant_sqnr_db = NAN, accum_sqnr_db = NAN, final_accuracy = NAN;
};

/// The row of a run, from its attributes and metrics (docs: experiment/gemm_run.cpp, training_session.h).
/// saturated % = (a_saturated + b_saturated) / (M·K + K·N) · 100, likewise underflow.
ComparisonRow comparisonRow(const RunAccess& run);

class ComparisonView : public View {
  Q_OBJECT
public:
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
  /// Metric of the bar chart: "sqnr_db", "max_rel", "saturated_pct", "underflow_pct", "seconds",
  /// "quant_sqnr_db", "accum_sqnr_db", "final_accuracy".
  void setMetric(const QString& key);
  QString metric() const;
  /// Selects two runs (by id) for the error-map difference; false when either is unknown.
  bool selectPair(const QString& first, const QString& second);
  /// The difference grid drawn (empty when none) and the line saying what it is.
  const HeatmapGrid& difference() const { return diff_; }
  QString diffText() const;
  QCustomPlot* plot() const { return plot_; }

private:
  void rebuildRuns();
  void fillTable();
  void drawBars();
  void drawDiff();
  void selectionChanged();

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
  quint64 diff_generation_ = 0;
  bool updating_ = false;
  QTableWidget* table_;
  QComboBox* metric_box_;
  QLabel* diff_label_;
  QCustomPlot* plot_;
  QCPAxisRect* bar_rect_ = nullptr;
  QCPAxisRect* diff_rect_ = nullptr;
};

} // namespace fp8lab::ui

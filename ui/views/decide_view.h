// Decide view: the session's answer to "which recipe, for which tensors and which layers?"
// (core/experiment/decision/session_decision.h). Four parts, one shown at a time with a chart above its
// table:
//   - GEMM ranking: the recipes of one operand setting, mean ± 95 % interval over seeds as error
//     bars, the recipes no interval beats in green with the best one's interval as a band; the cost
//     of each recipe (bytes per element with scales, where it runs natively) beside its bar and in
//     the table;
//   - Training vs FP32: final accuracy (MLP) or validation loss (language model) per recipe against
//     the FP32 baseline, drawn as a dashed line with its interval as a band;
//   - Per-layer advice: each site group's loss increase ± spread from `fp8lab-cli advise`, the kept
//     groups in vermillion, the full recipe's increase as a dashed line; the policy under the table;
//   - Checkpoint what-if: per weight, the stored quantization's SQNR and each what-if recipe's.
// A part without data says what to run. The metric box chooses the GEMM or training metric; Save
// report… writes the session report as HTML or PDF (report_pdf.h).
#pragma once

#include "views/analysis_view.h"

#include "experiment/decision/session_decision.h"

#include <memory>

class QComboBox;
class QLabel;
class QPushButton;
class QTableWidget;

namespace fp8lab::ui {

class RunAccess;

class DecideView : public AnalysisView {
  Q_OBJECT
public:
  enum class Part { Gemm, Training, Advice, WhatIf };
  explicit DecideView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("decide"); }
  QString title() const override { return tr("Decide"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  QString csv() const override;
  void setSession(SessionDocument* session) override;

  /// Shows runs directly (fp8lab-render, tests); `file` is the session they come from (the report's).
  void setRuns(const QList<std::shared_ptr<RunAccess>>& runs, const QString& file = QString());
  /// The metric of the GEMM ranking or the training comparison (a rankingMetrics() key); shows its
  /// part. false (and nothing changes) for an unknown key.
  bool setMetric(const QString& key);
  QString metric() const;
  void setPart(Part p);
  Part part() const { return part_; }
  /// Whether the session has data for a part.
  bool hasPart(Part p) const;
  /// Which setting (GEMM), model (training), advice run or checkpoint run of the part is shown.
  void setGroup(int index);
  int groupCount() const;
  const SessionDecision& decision() const { return d_; }
  QTableWidget* table() const { return table_; }
  QCustomPlot* plot() const { return plot_; }
  /// Writes the session report (HTML, or PDF for a .pdf name) with the metric shown.
  bool saveReport(const QString& file, QString* error) const;

  /// The part a session opens on: training against FP32 when it has training runs and no GEMM
  /// setting with two ranked recipes, else the GEMM ranking, else the first part with data.
  static Part defaultPart(const SessionDecision& d);
  /// Whether a session is worth opening on this view: it has training or advice runs, or a GEMM
  /// setting whose recipes were run with two seeds or more.
  static bool opensOn(const QList<std::shared_ptr<RunAccess>>& runs);
  /// Part names for tests and fp8lab-render: "gemm", "training", "advice", "what_if".
  static QString partName(Part p);

private:
  void rebuild();
  void refresh();
  void fillGroups();
  void fillMetrics();
  void drawGemm();
  void drawTraining();
  void drawAdvice();
  void drawWhatIf();
  /// The plot's empty state (a part without data): the text says what to run.
  void drawEmptyState(const QString& text) override;
  std::vector<size_t> groupRows(const std::vector<RecipeInterval>& all) const;

  QList<std::shared_ptr<RunAccess>> runs_;
  QString file_;
  SessionDecision d_;
  Part part_ = Part::Gemm;
  bool part_chosen_ = false; ///< the user picked a part: rebuilds keep it
  QString gemm_metric_, training_metric_;
  int group_ = 0;
  bool updating_ = false;
  QComboBox* part_box_;
  QComboBox* group_box_;
  QLabel* group_label_;
  QComboBox* metric_box_;
  QLabel* metric_label_;
  QPushButton* report_button_;
  QLabel* note_;
  QCustomPlot* plot_;
  QTableWidget* table_;
};

} // namespace fp8lab::ui

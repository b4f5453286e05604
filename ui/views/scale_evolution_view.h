// Scale evolution view: the scale (dequant or quant, labelled) and amax of several
// tensors of a training run against the step, on a log axis, with overflow / saturation events
// marked; a second run (e.g. current scaling next to delayed scaling) drawn dashed on the same
// axes; the loss curve in a linked plot below that shares the step axis (zoom and pan in sync).
// Data: history/<fcN>/<operand>/{amax, scale, quant_scale, saturated} and training/loss
// (core/training/training_session.h). An AnalysisView: its Run box lists the session's training
// runs with operand histories and follows the session's current run; after a load it opens on the
// first low-precision run (an FP32 baseline has no scale to show).
#pragma once

#include "session/run_access.h"
#include "views/analysis_view.h"

class QCPAxisRect;
class QCheckBox;
class QComboBox;
class QLabel;
class QListWidget;

namespace fp8lab::ui {

class ScaleEvolutionView : public AnalysisView {
  Q_OBJECT
public:
  explicit ScaleEvolutionView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("scales"); }
  QString title() const override { return tr("Scale evolution"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  QString csv() const override;
  /// Follows `session` (the Run box: AnalysisView) and fills the box of the run compared with.
  void setSession(SessionDocument* session) override;

  /// Shows runs directly (CLI renderer, tests); `compare` may be nullptr.
  void setRuns(std::shared_ptr<RunAccess> run, std::shared_ptr<RunAccess> compare = nullptr);
  /// Tensors of the run ("fc1/input", ...) and the ones drawn.
  QStringList tensors() const;
  QStringList checkedTensors() const;
  void setCheckedTensors(const QStringList& t);
  /// true: quant scale (x_q = x · s); false: dequant scale (x ≈ q · s), the default.
  void setQuantConvention(bool quant);
  void setShowAmax(bool on);
  QCustomPlot* plot() const { return plot_; }
  QCPAxisRect* scaleRect() const { return top_; }
  QCPAxisRect* lossRect() const { return bottom_; }
  QString infoText() const;
  /// Steps with saturated > 0 for one tensor of the main run.
  QList<int64_t> saturationSteps(const QString& tensor) const;

protected:
  void runChosen(Read read) override;
  void drawEmptyState(const QString& text) override;

private:
  /// Fills the box of the run compared with: "(none)" and the training runs, keeping its choice,
  /// else the first low-precision run that is not the one shown.
  void rebuildCompare();
  void runsChosen();
  void fillTensors();
  void draw();

  std::shared_ptr<RunAccess> run_, cmp_;
  bool quant_ = false;
  bool show_amax_ = true;
  bool updating_ = false;
  QString shown_; ///< the run shown before the last choice (the run compared with becomes it)
  QComboBox* cmp_box_;
  QComboBox* conv_box_;
  QCheckBox* amax_box_;
  QListWidget* list_;
  QLabel* info_;
  QCustomPlot* plot_;
  QCPAxisRect* top_ = nullptr;
  QCPAxisRect* bottom_ = nullptr;
};

} // namespace fp8lab::ui

// Scale evolution view: the scale (dequant or quant, labelled) and amax of several
// tensors of a training run against the step, on a log axis, with overflow / saturation events
// marked; a second run (e.g. current scaling next to delayed scaling) drawn dashed on the same
// axes; the loss curve in a linked plot below that shares the step axis (zoom and pan in sync).
// Data: history/<fcN>/<operand>/{amax, scale, quant_scale, saturated} and training/loss
// (core/training/training_session.h).
#pragma once

#include "session/run_access.h"
#include "views/view.h"

class QCPAxisRect;
class QCheckBox;
class QComboBox;
class QLabel;
class QListWidget;

namespace fp8lab::ui {

class ScaleEvolutionView : public View {
  Q_OBJECT
public:
  explicit ScaleEvolutionView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("scales"); }
  QString title() const override { return tr("Scale evolution"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  QString csv() const override;
  void setSession(SessionDocument* session) override;
  /// The training run shown (the Run box; not the one compared with).
  QString shownRunId() const override;

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

private:
  void rebuildRuns();
  /// Shows session run `index` when it is a training run.
  void followRun(int index);
  void runsChosen();
  void fillTensors();
  void draw();

  std::shared_ptr<RunAccess> run_, cmp_;
  bool quant_ = false;
  bool show_amax_ = true;
  bool updating_ = false;
  QComboBox* run_box_;
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

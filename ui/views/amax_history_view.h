// Amax history window view: for one tensor (layer × operand) of a training run, or a
// simulated amax sequence, the delayed-scaling window at step t as bars in chronological order,
// the value the strategy takes from it (max or most recent) marked, and a step slider with play /
// pause. Spikes (amax > 2 × the median of the previous 16 steps) are highlighted with the steps
// where they enter and leave the window. Window length, algorithm, margin and preset are
// editable: the view replays the recorded amaxes through core/scaling's DelayedScaling::simulate
// (Flax fp8_ops / TE DelayedScaling rules) and draws the what-if scale next to the
// recorded one.
//
// Layout of a training run (core/training/training_session.h): history/<fcN>/<operand>/amax,
// scale (dequant, x ≈ decode(q)·scale), amax_history [steps, L] (oldest first), saturated.
#pragma once

#include "session/run_access.h"
#include "scaling/delayed_scaling.h"
#include "views/analysis_view.h"

class QCPAxisRect;
class QCPBars;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;
class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;
class QSpinBox;
class QTimer;
class QToolButton;

namespace fp8lab::ui {

/// Spike detection used by the amax views: amax[s] > factor × median(amax[s−16 .. s−1]).
std::vector<int64_t> findSpikes(const std::vector<double>& amax, double factor = 2.0, int lookback = 16);

/// A deterministic demo amax sequence (log-normal wander with three spikes), for the
/// "simulated sequence" source and tests: `steps` values, spikes at steps/4, steps/2, 3·steps/4
/// (×30, ×12, ×50 the local level).
std::vector<double> demoAmaxSequence(int64_t steps);

/// An AnalysisView: its Run box lists the session's training runs with operand histories and, last,
/// the simulated sequence; it follows the session's current run, and after a load opens on the
/// first run that kept amax history windows (delayed scaling).
class AmaxHistoryView : public AnalysisView {
  Q_OBJECT
public:
  explicit AmaxHistoryView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("amax"); }
  QString title() const override { return tr("Amax history"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  QString csv() const override;
  /// Selects run `runId` (kept across session changes, as a choice in the box), its tensor
  /// `operand` ("fc1/input"; "" keeps the tensor shown) and step `step` (clamped to the run).
  /// False when the view does not list the run or the run has no such tensor.
  bool showOperand(const QString& runId, const QString& operand, qint64 step) override;

  /// Shows a run directly (CLI renderer, tests); nullptr: the simulated sequence.
  void setRunAccess(std::shared_ptr<RunAccess> run);
  /// Tensors of the run: "fc1/input", ... (empty for the simulated sequence).
  QStringList tensors() const;
  /// Shows a tensor of the run, everything read at once (the renderer, scripts); false if the run
  /// has no such tensor. The tensor box reads big recorded windows on the thread pool instead.
  bool setTensor(const QString& tensor);
  QString tensor() const;
  /// What-if settings (also the spin boxes); re-runs the simulation.
  void setWhatIf(const DelayedScalingConfig& cfg);
  DelayedScalingConfig whatIf() const { return cfg_; }
  void setStep(int64_t t);
  int64_t step() const { return step_; }
  int64_t steps() const { return int64_t(amax_.size()); }
  void setPlaying(bool on);
  bool isPlaying() const;

  const std::vector<double>& amax() const { return amax_; }
  /// The what-if window after step t, oldest first (as DelayedScaling::historyChronological).
  std::vector<float> window() const;
  /// The value the what-if strategy takes from window() (max or most recent).
  double takenValue() const;
  /// The recorded window after step t (amax_history row), empty when the run has none.
  std::vector<float> recordedWindow() const;
  /// Whether the recorded windows (amax_history, when it has more than kBackgroundReadElements
  /// values and the run or tensor was chosen in the view or by the session) are being read on the
  /// thread pool; recordedWindow() is empty until they are back. Everything else is drawn meanwhile.
  bool isReadingWindows() const { return reading_windows_; }
  /// Dequant scale used at each step: recorded (empty when absent) and what-if.
  const std::vector<double>& recordedScale() const { return rec_scale_; }
  const std::vector<double>& whatIfScale() const { return sim_scale_; }
  const std::vector<int64_t>& spikes() const { return spikes_; }
  QString infoText() const;
  /// The text in the window plot: the value taken and, for a scaled run, the next scale.
  QString windowText() const;
  QCustomPlot* plot() const { return plot_; }

protected:
  void runChosen(Read read) override;
  void drawEmptyState(const QString& text) override;

private:
  /// Shows the Run box's run (the simulated sequence for its last item). `pool_if_big`: read
  /// recorded windows of more than kBackgroundReadElements values on the thread pool (a choice in
  /// the view or a session change); else everything at once.
  void showRun(bool pool_if_big);
  bool showTensor(const QString& tensor, bool pool_if_big);
  void loadTensor(bool pool_if_big);
  void readWindowsInBackground(const QString& path);
  void simulate();
  void drawAll();
  void drawStep();
  void setInfo();

  std::shared_ptr<RunAccess> run_;
  QString tensor_;
  const Format* format_ = nullptr;
  DelayedScalingConfig cfg_;
  std::vector<double> amax_, rec_scale_, sim_scale_;
  std::vector<int64_t> saturated_;
  Block rec_hist_;
  quint64 windows_generation_ = 0; ///< bumped by every load: a background read of an older one is dropped
  bool reading_windows_ = false;
  std::vector<std::vector<float>> sim_hist_;
  std::vector<int64_t> spikes_;
  int64_t step_ = 0;
  bool updating_ = false;
  bool scaled_ = true; ///< false for an FP32 run (amaxes only, no scale)
  /// Whether the run kept an amax history window (delayed scaling); otherwise (current or block
  /// scaling, FP32) the window and its scale are the what-if only.
  bool windowed_ = true;
  QString note_;

  QComboBox* tensor_box_;
  QComboBox* preset_box_;
  QComboBox* algo_box_;
  QSpinBox* len_spin_;
  QSpinBox* margin_spin_;
  QSlider* slider_;
  QSpinBox* step_spin_;
  QToolButton* play_;
  QTimer* timer_;
  QLabel* info_;
  QCustomPlot* plot_;
  QCPAxisRect* top_ = nullptr;
  QCPAxisRect* bottom_ = nullptr;
  QCPBars* bars_ = nullptr;
  QCPBars* spike_bars_ = nullptr;
  QCPBars* taken_bar_ = nullptr;
  QCPItemStraightLine* taken_line_ = nullptr;
  QCPItemText* taken_text_ = nullptr;
  QCPItemStraightLine* step_line_ = nullptr;
};

} // namespace fp8lab::ui

// Live GEMM mode: while it is on, every change of the Experiment panel's GEMM parameters re-runs
// the experiment — debounced (a single edit after a quiet moment starts at once; within a burst of
// edits the last one starts when the debounce time passed without another), off the GUI thread
// (the thread pool), the run in flight cancelled when a newer configuration starts (its progress
// callback returns false) and its result dropped if it ends anyway. Only experiments up to a work limit
// (M·N·K) run live; above it the panel's Run button works as before. A live result is shown by the
// views but not added to the session until the user keeps it (keepLast()), so exploring does not
// flood the run list.
#pragma once

#include "forms/job.h"
#include "main_window.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QTime>

#include <atomic>
#include <memory>
#include <optional>

class QTimer;

namespace fp8lab::ui {

class LiveExperiment : public QObject {
  Q_OBJECT
public:
  /// M·N·K up to which live mode runs by default: 512³. A whole experiment of that size (operands,
  /// quantize, FP8 GEMM, float64 references, metrics, maps) plus the views' redraw lands within
  /// 200 ms on 2 cores (bench_gui liveUpdate measures it beside a no-op repaint; docs/gui.md).
  static constexpr double kDefaultWorkLimit = 512.0 * 512.0 * 512.0;
  /// Milliseconds without a further change before a burst's last edit starts.
  static constexpr int kDefaultDebounceMs = 60;

  explicit LiveExperiment(ExperimentRunner runner, QObject* parent = nullptr);
  ~LiveExperiment() override;

  void setRunner(ExperimentRunner runner) { runner_ = std::move(runner); }
  void setEnabled(bool on);
  bool isEnabled() const { return enabled_; }
  void setDebounceMs(int ms);
  int debounceMs() const;
  void setWorkLimit(double mnk) { limit_ = mnk; }
  double workLimit() const { return limit_; }
  /// M·N·K of a canonical GEMM config.
  static double workOf(const QJsonObject& config);
  /// Why `config` does not run live ("" when it does): live mode off, operands not generated (an
  /// imported tensor, trained weights), or M·N·K over the work limit.
  QString whyNotLive(const QJsonObject& config) const;

  /// A new configuration from the panel. After a quiet moment (no run in flight, none pending, the
  /// last start at least the debounce time ago) it starts at once; otherwise it (re)starts the
  /// debounce timer, and when that fires the run in flight (if any) is cancelled and the newest
  /// configuration starts. A configuration that cannot run live emits skipped() instead.
  void request(const GemmRunRequest& request);
  /// Cancels the pending request and the run in flight (live mode turned off, window closing).
  void stop();
  /// Blocks until no run is in flight (tests, shutdown).
  void waitForIdle();

  bool isPending() const;
  bool isRunning() const { return running_ > 0; }
  /// Runs started and runs whose result was shown, since construction.
  int started() const { return started_; }
  int delivered() const { return delivered_; }
  /// The newest live result (nullopt before the first one).
  const std::optional<JobResult>& last() const { return last_; }
  /// The newest live result, taken for the session (nullopt when there is none or it was kept).
  std::optional<JobResult> keepLast();
  /// When the newest result was shown and how long its run took (ms).
  QTime lastTime() const { return last_time_; }
  qint64 lastMs() const { return last_ms_; }

Q_SIGNALS:
  void runStarted(const QJsonObject& config);
  /// A live run finished and is current: the views show `result.run`.
  void updated(const fp8lab::ui::JobResult& result, qint64 elapsed_ms);
  void failed(const QString& why);
  void skipped(const QString& why);

private:
  void startNow();

  ExperimentRunner runner_;
  QTimer* debounce_;
  QElapsedTimer quiet_; ///< since the last start
  GemmRunRequest pending_;
  bool enabled_ = true;
  double limit_ = kDefaultWorkLimit;
  quint64 generation_ = 0;
  std::shared_ptr<std::atomic<bool>> cancel_; ///< of the run in flight
  int running_ = 0;                           ///< runs whose result the GUI has not received yet
  /// Runs still executing on the pool (the destructor waits for them without processing events).
  std::shared_ptr<std::atomic<int>> executing_ = std::make_shared<std::atomic<int>>(0);
  int started_ = 0, delivered_ = 0;
  std::optional<JobResult> last_;
  bool last_kept_ = false;
  QTime last_time_;
  qint64 last_ms_ = 0;
};

} // namespace fp8lab::ui

// Runs one long computation off the GUI thread (QtConcurrent) with progress and Cancel.
// The computation gets a core ProgressFn; it is called on the worker thread, and its reports
// reach the GUI through queued signals, at most ~30 per second, so the event loop never floods.
#pragma once

#include "common/progress.h"
#include "session/session_document.h"

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>

#include <atomic>
#include <functional>
#include <memory>

namespace fp8lab::ui {

/// What a job returns: a run to add to the session (kind empty: nothing to add) and findings.
struct JobResult {
  RunRecord run;
  std::vector<fp8lab::Issue> warnings;
  /// A session file the job wrote (a training experiment saves each run as it finishes): the
  /// window opens it when the job ends.
  QString session_file;
  /// The work kept what it finished although Cancel was pressed (a cancelled training run is
  /// saved with its completed steps): the job ends with finished(), not cancelled().
  bool kept_after_cancel = false;
  /// One line for the status bar (empty: the default).
  QString summary;
};

class Job : public QObject {
  Q_OBJECT
public:
  using Work = std::function<JobResult(const fp8lab::ProgressFn&)>;
  explicit Job(QObject* parent = nullptr);
  ~Job() override;

  /// Starts `work` on the thread pool; false if a job is already running.
  bool start(const QString& title, Work work);
  bool isRunning() const { return running_; }
  QString title() const { return title_; }
  /// Asks the job to stop at its next progress check (it then emits cancelled()).
  void cancel();
  /// Blocks until the job ended (tests, shutdown).
  void waitForFinished();

Q_SIGNALS:
  void started(const QString& title);
  void progress(double fraction, const QString& stage);
  void finished(const fp8lab::ui::JobResult& result);
  void failed(const QString& reason);
  void cancelled();
  void ended();

private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
  QFutureWatcher<void>* watcher_;
  bool running_ = false;
  QString title_;
};

} // namespace fp8lab::ui

Q_DECLARE_METATYPE(fp8lab::ui::JobResult)

// The FP8 Lab main window: a tab area of views (View subclasses) around a SessionDocument (the open session), with
// docks for the session tree, the experiment panel and the Issues list; the status bar shows the backend, the issue
// counter and the progress of a running job.
//
// The views come from the view registry (view_registry.h): each view registers itself in its own
// .cpp, and the window builds its tabs and View menu from the list. Views reach the window and
// each other only through View's signals.
#pragma once

#include "forms/backend.h"
#include "forms/training_request.h"
#include "common/progress.h"

#include <QJsonObject>

#include <functional>

#include <QHash>
#include <QMainWindow>
#include <QPointer>

class QAction;
class QLabel;
class QMenu;
class QProgressBar;
class QTabWidget;
class QToolButton;
class QTreeWidget;

namespace fp8lab::ui {

class ExperimentPanel;
class IssueList;
class IssuesDock;
class Job;
class LiveExperiment;
class SessionDocument;
class View;
struct JobResult;

/// One GEMM experiment to run: its canonical config (ExperimentPanel::config(); "name" is the
/// run's id) and where it runs ("auto", "cpu" or "cuda": core's backend policy, as
/// fp8lab-cli --backend; not part of the config, which the run stores).
struct GemmRunRequest {
  QJsonObject config;
  QString backend = QStringLiteral("auto");
};

/// Runs one GEMM experiment on the worker thread. The default is core/experiment when this
/// build has it; tests and benchmarks may replace it.
using ExperimentRunner = std::function<JobResult(const GemmRunRequest& request, const fp8lab::ProgressFn& progress)>;

class MainWindow : public QMainWindow {
  Q_OBJECT
public:
  struct Options {
    bool restore_settings = true; ///< read QSettings (off for --grab and tests: a fixed layout)
    bool open_default_session = true;
    bool probe_backend = true; ///< probe the GPU in the background
  };
  MainWindow();
  explicit MainWindow(const Options& opt, QWidget* parent = nullptr);
  ~MainWindow() override;

  SessionDocument* session() const { return session_; }
  IssueList* issues() const { return issues_; }
  ExperimentPanel* experimentPanel() const { return panel_; }
  Job* job() const { return job_; }

  /// Adds a view as a tab (and a View-menu entry). The window owns it.
  void addView(View* view);
  View* view(const QString& id) const;
  QList<View*> views() const { return views_; }
  /// Makes the view with this id the current tab; false if there is none.
  bool showView(const QString& id);
  View* currentView() const;

  /// Opens a session file; problems go to the Issues panel. Returns success.
  bool openSession(const QString& fileName);
  /// Opens a session file from elsewhere (File → Open untrusted…): the separate checking process
  /// walks its metadata first and a file that crashes or hangs libhdf5 is refused with the reason
  /// (core/session/hdf5_isolation.h); later opens of the same file in this process are checked too.
  bool openUntrustedSession(const QString& fileName);
  /// The bundled default session, when one was generated at build time (empty if none).
  static QString defaultSessionPath();
  /// Whether `fileName` is the bundled default session. It is read-only: it belongs to the build
  /// or the installation and is regenerated there, so File → Save on it goes to Save As.
  static bool isBundledSession(const QString& fileName);

  /// File → Save: writes the session to its file. An untitled session, the bundled default
  /// session or a file that is not writable goes to saveAs() instead. Returns success.
  bool save();
  /// Writes the session to `fileName` on a worker thread while the window repaints and shows
  /// progress (Cancel leaves the file as it was); marks the session saved. False and *error.
  /// Over the open file the save merges: runs another program added to the file since it was
  /// loaded or last saved are kept beside this session's (renamed on an id clash) and listed in
  /// the Issues panel; runs deleted here stay deleted. Another writer of the file is waited for,
  /// the dialog naming it.
  bool writeSession(const QString& fileName, QString* error);
  /// Re-reads the open session from disk (the banner's Reload after another program changed
  /// it); asks first when this session has unsaved changes. Returns whether it reloaded.
  bool reloadSession();
  /// File → Save as: asks for a file (never the bundled session) and writes the session there.
  bool saveAs();
  /// Replaces the file dialog of Save as (tests): gets the suggested path, returns the chosen
  /// file or "" (cancelled). nullptr: QFileDialog.
  void setSaveFileChooser(std::function<QString(const QString& suggested)> chooser);

  /// Replaces the experiment runner (nullptr: the built-in one, if any).
  void setExperimentRunner(ExperimentRunner runner);
  bool hasExperimentRunner() const;
  ExperimentRunner experimentRunner() const { return runner_; }
  /// Live GEMM mode (live_experiment.h, wired by live_wiring.h).
  LiveExperiment* liveExperiment() const { return live_; }
  /// Starts a canonical GEMM config (ExperimentPanel::config()) in the background on the panel's
  /// backend, as the session's next run; false if refused (the reason in the issue list).
  bool runExperiment(const QJsonObject& config);

  /// Runs the full default experiment (resources/experiments/default.json: Fashion-MNIST training
  /// + GEMMs on the trained weights, a few minutes) with runTrainingExperiment into a new file
  /// under the app's data directory.
  bool runFullDefaultExperiment();
  /// Runs a training experiment (docs/training.md), as core parsed it (trainingRequest,
  /// experiment_runner.h), in this process on the job thread, with per-step progress; each
  /// finished run is appended to `out_file` at once. Cancel stops after the current step and keeps
  /// it (status cancelled) with the runs before. The file is opened when the job ends (unless the
  /// current session has unsaved changes). False when a job runs or the request is empty.
  bool runTrainingExperiment(const TrainingRequest& request, const QString& out_file, const QString& title);

  /// Shows the first non-finite value of run `runId` (its `nonfinite` group) in the Layer × step
  /// view, at its step and operand, and brings that view to the front; false when the run has
  /// none. The banner's link does this for the current run or a run just added.
  bool jumpToNonfinite(const QString& runId);
  /// The banner's text (rich text) and whether it is shown, for tests.
  QString bannerText() const;
  bool bannerShown() const;

  /// The status-bar texts, for tests.
  QString backendText() const;
  QString issueCounterText() const;
  void setBackend(const BackendInfo& b);

protected:
  void closeEvent(QCloseEvent* e) override;

private:
  void buildActions();
  void buildDocks();
  void buildStatusBar();
  void newSession();
  void openSessionDialog();
  void openUntrustedDialog();
  bool maybeSave();
  void exportPlot();
  void exportData();
  void about();
  void formatsReference();
  void addRecent(const QString& f);
  void rebuildRecentMenu();
  void rebuildSessionTree();
  void updateTitle();
  void updateIssueCounter();
  void onJobFinished(const JobResult& r);
  /// Offers jumpToNonfinite in the banner when run `index` of the session had a non-finite value.
  void offerNonfiniteJump(int index);
  /// Says in the banner that another program changed the open file, with Reload.
  void offerReload(const QStringList& added, const QStringList& removed);
  /// Highlights the session's current run in the tree (the tree follows the session).
  void selectCurrentInTree();

  Options opt_;
  SessionDocument* session_;
  IssueList* issues_;
  Job* job_;
  ExperimentRunner runner_;
  QTabWidget* tabs_;
  QList<View*> views_;
  ExperimentPanel* panel_ = nullptr;
  IssuesDock* issues_dock_ = nullptr;
  QDockWidget* tree_dock_ = nullptr;
  QDockWidget* panel_dock_ = nullptr;
  QTreeWidget* tree_ = nullptr;
  QMenu* view_menu_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QLabel* backend_label_ = nullptr;
  QToolButton* issue_button_ = nullptr;
  QProgressBar* job_bar_ = nullptr;
  QToolButton* job_cancel_ = nullptr;
  QLabel* job_label_ = nullptr;
  QLabel* banner_ = nullptr;
  QAction *act_save_ = nullptr, *act_undo_ = nullptr, *act_redo_ = nullptr;
  BackendInfo backend_;
  std::function<QString(const QString&)> save_chooser_;
  bool banner_is_bundled_ = false; ///< the banner talks about the bundled default session
  LiveExperiment* live_ = nullptr;
};

} // namespace fp8lab::ui

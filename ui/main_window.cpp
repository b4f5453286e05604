#include "main_window.h"

#include <QHash>

#include "forms/experiment_panel.h"
#include "forms/experiment_runner.h"
#include "session/block_stats.h"
#include "session/issues.h"
#include "forms/job.h"
#include "forms/live_wiring.h"
#include "session/run_model.h"
#include "session/session_document.h"
#include "plot/style.h"
#include "views/view.h"
#include "views/decide_view.h"
#include "session/run_access.h"
#include "views/view_registry.h"
#include "views/view_render.h"
#include "plot/qcp.h"

#include "session/hdf5_isolation.h"

#include <QAction>
#include <atomic>
#include <QTimer>
#include <QProgressDialog>
#include <QEventLoop>
#include <QElapsedTimer>

#include <cstdio>
#include <QApplication>
#include <QCloseEvent>
#include <QDesktopServices>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QScrollArea>
#include <QStandardPaths>
#include <QDir>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTextBrowser>
#include <QToolBar>
#include <QToolButton>
#include <QTreeWidget>
#include <QUndoStack>
#include <QVBoxLayout>
#include <QMutex>
#include <QMutexLocker>
#include <QtConcurrent/QtConcurrentRun>

// Q_INIT_RESOURCE must be called outside any namespace.
static void initFp8labResources() {
  Q_INIT_RESOURCE(fp8lab);
}

namespace fp8lab::ui {

namespace {
constexpr int kMaxRecent = 8;
const QString kRecentKey = QStringLiteral("recentFiles");
} // namespace

MainWindow::MainWindow() : MainWindow(Options{}) {}

MainWindow::MainWindow(const Options& opt, QWidget* parent)
    : QMainWindow(parent), opt_(opt), session_(new SessionDocument(this)), issues_(new IssueList(this)),
      job_(new Job(this)) {
  initFp8labResources();
  setObjectName(QStringLiteral("MainWindow"));
  setWindowIcon(QIcon(QStringLiteral(":/fp8lab/icons/fp8lab.svg")));
  setDockNestingEnabled(true);

  auto* central = new QWidget(this);
  auto* cv = new QVBoxLayout(central);
  cv->setContentsMargins(0, 0, 0, 0);
  cv->setSpacing(0);
  banner_ = new QLabel(central);
  banner_->setObjectName(QStringLiteral("banner"));
  banner_->setWordWrap(true);
  banner_->setTextFormat(Qt::RichText);
  banner_->setStyleSheet(QStringLiteral(
      "QLabel { background:#e3f2fd; color:#0d47a1; padding:6px 10px; border-bottom:1px solid #90caf9; }"));
  connect(banner_, &QLabel::linkActivated, this, [this](const QString& link) {
    if (link == QStringLiteral("run"))
      runFullDefaultExperiment();
    else if (link == QStringLiteral("open"))
      openSessionDialog();
    else if (link == QStringLiteral("panel")) {
      panel_dock_->show();
      panel_dock_->raise();
    } else if (link == QStringLiteral("close"))
      banner_->hide();
    else if (link.startsWith(QStringLiteral("nonfinite:")))
      jumpToNonfinite(link.mid(10));
    else if (link == QStringLiteral("reload"))
      reloadSession();
  });
  cv->addWidget(banner_);
  tabs_ = new QTabWidget(central);
  tabs_->setObjectName(QStringLiteral("views"));
  tabs_->setDocumentMode(true);
  cv->addWidget(tabs_, 1);
  setCentralWidget(central);

  // The views register themselves (view_registry.h), in their tab order.
  for (const ViewType& t : viewTypes()) addView(t.create(this));
  // Views that show codes start on the code of the one that leads (the bit layout).
  for (View* v : views_) {
    QString format;
    uint32_t code = 0;
    if (!v->selectedCode(&format, &code)) continue;
    for (View* o : views_)
      if (o != v) o->selectCode(format, code);
  }

  buildDocks();
  buildActions();
  buildStatusBar();

  runner_ = builtinExperimentRunner();
  panel_->setRunnerAvailable(bool(runner_), experimentRunnerMissingReason());

  connect(session_, &SessionDocument::runAdded, this, &MainWindow::rebuildSessionTree);
  connect(session_, &SessionDocument::runAdded, this, &MainWindow::offerNonfiniteJump);
  // Runs in an untitled session: the "No session open" banner no longer applies.
  connect(session_, &SessionDocument::runAdded, this, [this] {
    if (!banner_is_bundled_ && banner_->text().startsWith(tr("No session open"))) banner_->hide();
  });
  connect(session_, &SessionDocument::currentRunChanged, this, &MainWindow::offerNonfiniteJump);
  // The tree and every view's run box share the session's one run selection.
  connect(runSelection(session_), &RunSelection::currentRunChanged, this, &MainWindow::selectCurrentInTree);
  connect(session_, &SessionDocument::fileChangedOnDisk, this, &MainWindow::offerReload);
  connect(session_, &SessionDocument::runRemoved, this, &MainWindow::rebuildSessionTree);
  connect(session_, &SessionDocument::runChanged, this, &MainWindow::rebuildSessionTree);
  connect(session_, &SessionDocument::reset_, this, &MainWindow::rebuildSessionTree);
  connect(session_, &SessionDocument::fileNameChanged, this, &MainWindow::updateTitle);
  // A recovered session, File → New session, Save as: the banner about the bundled default
  // session no longer describes what is shown.
  connect(session_, &SessionDocument::fileNameChanged, this, [this](const QString& f) {
    if (banner_is_bundled_ && !isBundledSession(f)) {
      banner_->hide();
      banner_is_bundled_ = false;
    }
  });
  connect(session_, &SessionDocument::modifiedChanged, this, &MainWindow::updateTitle);
  connect(issues_, &IssueList::countsChanged, this, &MainWindow::updateIssueCounter);
  connect(job_, &Job::started, this, [this](const QString& t) {
    panel_->setRunning(true);
    job_label_->setText(t);
    job_bar_->setValue(0);
    job_bar_->show();
    job_cancel_->show();
    job_label_->show();
  });
  connect(job_, &Job::progress, this, [this](double f, const QString& st) {
    panel_->setProgress(f, st);
    job_bar_->setValue(int(f * 1000));
    job_bar_->setToolTip(st);
  });
  connect(job_, &Job::ended, this, [this] {
    panel_->setRunning(false);
    job_bar_->hide();
    job_cancel_->hide();
    job_label_->hide();
  });
  connect(job_, &Job::finished, this, &MainWindow::onJobFinished);
  connect(job_, &Job::failed, this, [this](const QString& why) {
    issues_->report(Severity::Error, tr("The experiment failed: %1").arg(why), tr("Experiment panel"));
    statusBar()->showMessage(tr("Experiment failed"), 5000);
  });
  connect(job_, &Job::cancelled, this,
          [this] { statusBar()->showMessage(tr("Experiment cancelled; nothing was added"), 5000); });
  connect(panel_, &ExperimentPanel::runRequested, this, &MainWindow::runExperiment);
  connect(panel_, &ExperimentPanel::trainingRunRequested, this,
          [this](const TrainingRequest& request, const QString& id) {
            const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation);
            QDir().mkpath(dir);
            const QString out =
                dir + QStringLiteral("/training-%1-%2.h5")
                          .arg(id, QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")));
            runTrainingExperiment(request, out, tr("Training run %1").arg(id));
          });
  connect(panel_, &ExperimentPanel::cancelRequested, job_, &Job::cancel);
  panel_->setSession(session_);
  live_ = attachLiveExperiment(this);

  resize(1400, 900);
  // Default dock sizes; a saved window state replaces them.
  resizeDocks({tree_dock_, panel_dock_}, {150, 600}, Qt::Vertical);
  resizeDocks({panel_dock_}, {350}, Qt::Horizontal);
  resizeDocks({issues_dock_}, {80}, Qt::Vertical);
  if (opt_.restore_settings) {
    QSettings s;
    restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(s.value(QStringLiteral("window/state")).toByteArray());
    showView(s.value(QStringLiteral("window/view"), QStringLiteral("bits")).toString());
  }
  rebuildRecentMenu();
  rebuildSessionTree();
  updateTitle();
  updateIssueCounter();

  setBackend(BackendInfo{false, QStringLiteral("CPU"), tr("probing for a GPU\u2026")});
  if (opt_.probe_backend) {
    auto* w = new QFutureWatcher<BackendInfo>(this);
    connect(w, &QFutureWatcher<BackendInfo>::finished, this, [this, w] {
      setBackend(w->result());
      w->deleteLater();
    });
    w->setFuture(QtConcurrent::run(&probeBackend));
  }

  bool opened = false;
  if (opt_.open_default_session) {
    const QString def = defaultSessionPath();
    banner_is_bundled_ = true; // openSession keeps the banner for this file
    if (!def.isEmpty() && SessionDocument::fileSupport()) opened = openSession(def);
    banner_is_bundled_ = opened;
  }
  if (opened) {
    banner_->setText(tr("Showing the small bundled default session. "
                        "<a href='run'>Run the full default experiment</a> in the background \u00b7 "
                        "<a href='open'>open another session</a> \u00b7 <a href='close'>hide</a>"));
  } else {
    banner_->setText(tr("No session open: explore the number formats in the tabs below, "
                        "<a href='open'>open a session</a> (Ctrl+O) or set up an experiment in the "
                        "<a href='panel'>Experiment panel</a> and run it (Ctrl+R). \u00b7 <a href='close'>hide</a>"));
  }
}

MainWindow::~MainWindow() {
  job_->cancel();
  job_->waitForFinished();
}

void MainWindow::addView(View* view) {
  views_.append(view);
  // Each view sits in a scroll area, so a view wider than a small screen scrolls instead of
  // making the whole window wider than the screen.
  auto* scroll = new QScrollArea(tabs_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(view);
  tabs_->addTab(scroll, view->title());
  if (view_menu_) {
    auto* a = view_menu_->addAction(view->title(), this, [this, view] { showView(view->viewId()); });
    a->setObjectName(QStringLiteral("showView_") + view->viewId());
  }
  connect(view, &View::issue, this, [this, view](Severity sev, const QString& text, const QString& where) {
    issues_->report(sev, text, where.isEmpty() ? view->title() : where);
  });
  // Views know each other only by id, through the window: a code one view shows is shown by the
  // others that show codes (the code grid follows the bit layout); a view asks for a code to be
  // shown in another view, which comes to the front.
  connect(view, &View::codeSelected, this, [this, view](const QString& format, uint32_t code) {
    for (View* o : views_)
      if (o != view) o->selectCode(format, code);
  });
  connect(view, &View::showCodeRequested, this, [this](const QString& id, const QString& format, uint32_t code) {
    View* target = this->view(id);
    if (target && target->selectCode(format, code)) showView(id);
  });
  connect(view, &View::showOperandRequested, this,
          [this](const QString& id, const QString& run, const QString& operand, qint64 step) {
            View* target = this->view(id);
            if (!target) return;
            target->runPendingReloads();
            if (target->showOperand(run, operand, step)) showView(id);
          });
  connect(view, &View::showRangeRequested, this,
          [this](const QString& id, const QString& format, double lo, double hi, const QString& label) {
            View* target = this->view(id);
            if (target && target->showRange(format, lo, hi, label)) showView(id);
          });
  connect(view, &View::showValuesRequested, this,
          [this](const QString& id, const QString& format, const QList<float>& values, const QString& label) {
            View* target = this->view(id);
            if (target && target->showValues(format, values, label)) showView(id);
          });
  view->setSession(session_);
}

void MainWindow::offerNonfiniteJump(int index) {
  if (index < 0 || index >= session_->runCount()) return;
  const RunRecord& r = session_->run(index);
  if (r.kind != QStringLiteral("training")) return;
  // Metadata only (the group attributes of `nonfinite`): no dataset is read.
  const NonfiniteJump j = nonfiniteJump(*RunAccess::forRecord(r, session_->fileName()));
  if (!j.found) return;
  banner_is_bundled_ = false;
  const QString where = j.operand.isEmpty() ? j.layer + QLatin1Char(' ') + j.tensor : j.operand;
  banner_->setText(tr("Run %1 met a non-finite value: %2. <a href='nonfinite:%1'>Go to the first non-finite value "
                      "(step %3, %4)</a> in the Layer × step map · <a href='close'>hide</a>")
                       .arg(r.id.toHtmlEscaped(), j.description.toHtmlEscaped())
                       .arg(j.step)
                       .arg(where.toHtmlEscaped()));
  banner_->show();
}

bool MainWindow::jumpToNonfinite(const QString& runId) {
  const int i = session_->indexOf(runId);
  if (i < 0) return false;
  const NonfiniteJump j = nonfiniteJump(*RunAccess::forRecord(session_->run(i), session_->fileName()));
  View* v = view(QStringLiteral("layers"));
  if (!j.found || !v) return false;
  v->runPendingReloads();
  if (!v->showOperand(runId, j.operand, j.step)) return false;
  showView(QStringLiteral("layers"));
  return true;
}

QString MainWindow::bannerText() const {
  return banner_->text();
}

bool MainWindow::bannerShown() const {
  return !banner_->isHidden();
}

View* MainWindow::view(const QString& id) const {
  for (View* v : views_)
    if (v->viewId() == id) return v;
  return nullptr;
}

bool MainWindow::showView(const QString& id) {
  View* v = view(id);
  if (!v) return false;
  tabs_->setCurrentIndex(int(views_.indexOf(v)));
  return true;
}

View* MainWindow::currentView() const {
  const int i = tabs_->currentIndex();
  return i >= 0 && i < views_.size() ? views_[i] : nullptr;
}

void MainWindow::buildDocks() {
  // Session tree: file → runs.
  tree_dock_ = new QDockWidget(tr("Session"), this);
  tree_dock_->setObjectName(QStringLiteral("SessionDock"));
  tree_ = new QTreeWidget(tree_dock_);
  tree_->setObjectName(QStringLiteral("sessionTree"));
  tree_->setHeaderLabels({tr("Run"), tr("Kind"), tr("Backend")});
  tree_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  tree_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
  tree_->header()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
  tree_->header()->setStretchLastSection(false);
  tree_->setRootIsDecorated(true);
  // Run ids share long prefixes (gemm-fp8-delayed-fc1, -fc2, -fc3): keep both ends visible.
  tree_->setTextElideMode(Qt::ElideMiddle);
  tree_->setEditTriggers(QAbstractItemView::EditKeyPressed | QAbstractItemView::DoubleClicked);
  tree_dock_->setWidget(tree_);
  tree_->setMinimumHeight(110);
  addDockWidget(Qt::LeftDockWidgetArea, tree_dock_);
  connect(tree_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* it) {
    if (!it || !it->parent()) return;
    runSelection(session_)->setCurrentRunId(it->data(0, Qt::UserRole).toString());
  });
  connect(tree_, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem* it, int col) {
    if (col == 0 && it->parent())
      session_->renameRun(session_->indexOf(it->data(0, Qt::UserRole).toString()), it->text(0));
  });

  panel_dock_ = new QDockWidget(tr("Experiment"), this);
  panel_dock_->setObjectName(QStringLiteral("ExperimentDock"));
  panel_ = new ExperimentPanel(panel_dock_);
  panel_->setMinimumWidth(345);
  panel_dock_->setWidget(panel_);
  addDockWidget(Qt::LeftDockWidgetArea, panel_dock_);
  splitDockWidget(tree_dock_, panel_dock_, Qt::Vertical);

  issues_dock_ = new IssuesDock(issues_, this);
  addDockWidget(Qt::BottomDockWidgetArea, issues_dock_);
}

void MainWindow::buildActions() {
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* aNewExp = file->addAction(QIcon(QStringLiteral(":/fp8lab/icons/new.svg")), tr("&New experiment"), this, [this] {
    panel_->resetToDefaults();
    panel_dock_->show();
    panel_dock_->raise();
  });
  aNewExp->setShortcut(QKeySequence::New);
  aNewExp->setObjectName(QStringLiteral("actionNewExperiment"));
  auto* aNewSes = file->addAction(tr("New &session"), this, &MainWindow::newSession);
  aNewSes->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+N")));
  auto* aOpen = file->addAction(QIcon(QStringLiteral(":/fp8lab/icons/open.svg")), tr("&Open session\u2026"), this,
                                &MainWindow::openSessionDialog);
  aOpen->setShortcut(QKeySequence::Open);
  auto* aOpenUntrusted = file->addAction(tr("Open &untrusted\u2026"), this, &MainWindow::openUntrustedDialog);
  aOpenUntrusted->setObjectName(QStringLiteral("actionOpenUntrusted"));
  aOpenUntrusted->setStatusTip(tr("Open an HDF5 session you did not make: a separate process checks its metadata "
                                  "first, so a crafted file cannot crash FP8 Lab"));
  recent_menu_ = file->addMenu(tr("Open &recent"));
  recent_menu_->setObjectName(QStringLiteral("recentMenu"));
  file->addSeparator();
  act_save_ = file->addAction(QIcon(QStringLiteral(":/fp8lab/icons/save.svg")), tr("&Save"), this, &MainWindow::save);
  act_save_->setShortcut(QKeySequence::Save);
  act_save_->setObjectName(QStringLiteral("actionSave"));
  auto* aSaveAs = file->addAction(tr("Save &as\u2026"), this, &MainWindow::saveAs);
  aSaveAs->setShortcut(QKeySequence::SaveAs);
  file->addSeparator();
  auto* aExp = file->addAction(QIcon(QStringLiteral(":/fp8lab/icons/export.svg")),
                               tr("&Export plot (PNG, PDF, SVG)\u2026"), this, &MainWindow::exportPlot);
  aExp->setShortcut(QKeySequence(QStringLiteral("Ctrl+E")));
  auto* aCsv = file->addAction(tr("Export &data (CSV)\u2026"), this, &MainWindow::exportData);
  aCsv->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+E")));
  file->addSeparator();
  auto* aQuit = file->addAction(tr("&Quit"), this, &QWidget::close);
  aQuit->setShortcut(QKeySequence::Quit);

  auto* edit = menuBar()->addMenu(tr("&Edit"));
  act_undo_ = session_->undoStack()->createUndoAction(this, tr("&Undo"));
  act_undo_->setShortcut(QKeySequence::Undo);
  act_redo_ = session_->undoStack()->createRedoAction(this, tr("&Redo"));
  act_redo_->setShortcut(QKeySequence::Redo);
  edit->addAction(act_undo_);
  edit->addAction(act_redo_);
  edit->addSeparator();
  edit->addAction(tr("Remove selected run"), this, [this] { session_->removeRun(session_->currentRun()); })
      ->setShortcut(QKeySequence::Delete);

  auto* run = menuBar()->addMenu(tr("&Run"));
  auto* aRun = run->addAction(QIcon(QStringLiteral(":/fp8lab/icons/run.svg")), tr("&Run experiment"), this,
                              [this] { panel_->requestRun(); });
  aRun->setShortcut(QKeySequence(QStringLiteral("Ctrl+R")));
  auto* aCancel = run->addAction(QIcon(QStringLiteral(":/fp8lab/icons/stop.svg")), tr("&Cancel"), job_, &Job::cancel);
  aCancel->setShortcut(QKeySequence(QStringLiteral("Ctrl+.")));

  view_menu_ = menuBar()->addMenu(tr("&View"));
  for (int i = 0; i < views_.size(); ++i) {
    View* v = views_[i];
    auto* a = view_menu_->addAction(v->title(), this, [this, v] { showView(v->viewId()); });
    a->setObjectName(QStringLiteral("showView_") + v->viewId());
    if (i < 9) a->setShortcut(QKeySequence(QStringLiteral("Alt+%1").arg(i + 1)));
  }
  view_menu_->addSeparator();
  view_menu_->addAction(tree_dock_->toggleViewAction());
  view_menu_->addAction(panel_dock_->toggleViewAction());
  view_menu_->addAction(issues_dock_->toggleViewAction());

  auto* help = menuBar()->addMenu(tr("&Help"));
  auto* aRef = help->addAction(tr("&Formats reference"), this, &MainWindow::formatsReference);
  aRef->setShortcut(QKeySequence::HelpContents);
  help->addAction(tr("&About FP8 Lab"), this, &MainWindow::about);
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);

  auto* tb = addToolBar(tr("Main"));
  tb->setObjectName(QStringLiteral("MainToolBar"));
  tb->setIconSize(QSize(18, 18));
  tb->addAction(aNewExp);
  tb->addAction(aOpen);
  tb->addAction(act_save_);
  tb->addSeparator();
  tb->addAction(aRun);
  tb->addAction(aCancel);
  tb->addSeparator();
  tb->addAction(aExp);
}

void MainWindow::buildStatusBar() {
  auto* sb = statusBar();
  job_label_ = new QLabel(sb);
  job_bar_ = new QProgressBar(sb);
  job_bar_->setRange(0, 1000);
  job_bar_->setMaximumWidth(220);
  job_cancel_ = new QToolButton(sb);
  job_cancel_->setIcon(QIcon(QStringLiteral(":/fp8lab/icons/stop.svg")));
  job_cancel_->setToolTip(tr("Cancel the running experiment"));
  connect(job_cancel_, &QToolButton::clicked, job_, &Job::cancel);
  job_label_->hide();
  job_bar_->hide();
  job_cancel_->hide();
  sb->addPermanentWidget(job_label_);
  sb->addPermanentWidget(job_bar_);
  sb->addPermanentWidget(job_cancel_);
  issue_button_ = new QToolButton(sb);
  issue_button_->setObjectName(QStringLiteral("issueCounter"));
  issue_button_->setAutoRaise(true);
  issue_button_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  issue_button_->setToolTip(tr("Show the Issues panel"));
  connect(issue_button_, &QToolButton::clicked, this, [this] {
    issues_dock_->show();
    issues_dock_->raise();
  });
  sb->addPermanentWidget(issue_button_);
  backend_label_ = new QLabel(sb);
  backend_label_->setObjectName(QStringLiteral("backendLabel"));
  sb->addPermanentWidget(backend_label_);
}

void MainWindow::setBackend(const BackendInfo& b) {
  backend_ = b;
  backend_label_->setText(tr("Backend: %1").arg(b.name));
  backend_label_->setToolTip(b.detail);
  panel_->setGpu(b.gpu, b.name);
}

QString MainWindow::backendText() const {
  return backend_label_->text();
}
QString MainWindow::issueCounterText() const {
  return issue_button_->text();
}

void MainWindow::updateIssueCounter() {
  const int e = issues_->countOf(Severity::Error), w = issues_->countOf(Severity::Warning),
            i = issues_->countOf(Severity::Info);
  issue_button_->setText(tr("%n issue(s)", nullptr, e + w + i));
  issue_button_->setIcon(e   ? IssueList::severityIcon(Severity::Error)
                         : w ? IssueList::severityIcon(Severity::Warning)
                             : IssueList::severityIcon(Severity::Info));
  issue_button_->setToolTip(
      tr("%1 errors, %2 warnings, %3 notes \u2014 click to show the Issues panel").arg(e).arg(w).arg(i));
}

void MainWindow::updateTitle() {
  const QString name = isBundledSession(session_->fileName()) ? tr("%1 (read-only)").arg(session_->displayName())
                                                              : session_->displayName();
  setWindowTitle(QStringLiteral("%1[*] \u2014 FP8 Lab").arg(name));
  setWindowModified(session_->isModified());
  act_save_->setEnabled(SessionDocument::fileSupport());
}

void MainWindow::rebuildSessionTree() {
  const QSignalBlocker b(tree_);
  tree_->clear();
  auto* root = new QTreeWidgetItem(tree_, {session_->displayName()});
  root->setToolTip(0, session_->fileName().isEmpty() ? tr("not saved yet") : session_->fileName());
  root->setFlags(root->flags() & ~Qt::ItemIsEditable);
  QFont bf = root->font(0);
  bf.setBold(true);
  root->setFont(0, bf);
  // Runs appended under a clashing id are stored as "<id>-2" but keep their label: name the id
  // when two labels are equal, so the tree never shows two identical entries.
  QHash<QString, int> label_count;
  for (const RunRecord& r : session_->runs()) ++label_count[r.label];
  for (const RunRecord& r : session_->runs()) {
    const QString shown =
        label_count.value(r.label) > 1 && r.label != r.id ? QStringLiteral("%1 [%2]").arg(r.label, r.id) : r.label;
    auto* it = new QTreeWidgetItem(root, {shown, r.kind, r.backend});
    it->setData(0, Qt::UserRole, r.id);
    it->setFlags(it->flags() | Qt::ItemIsEditable);
    it->setToolTip(0, tr("%1 \u2014 created %2\ndouble-click to rename").arg(r.id, r.created.toString(Qt::ISODate)));
  }
  if (session_->runCount() == 0) {
    auto* it = new QTreeWidgetItem(root, {tr("(no runs yet \u2014 Run an experiment: Ctrl+R)")});
    it->setFlags(Qt::ItemIsEnabled);
    it->setForeground(0, QColor(0x75, 0x75, 0x75));
  }
  tree_->expandAll();
  selectCurrentInTree();
}

void MainWindow::selectCurrentInTree() {
  const QSignalBlocker b(tree_);
  QTreeWidgetItem* root = tree_->topLevelItem(0);
  if (!root) return;
  const QString id = session_->currentRunId();
  for (int i = 0; i < root->childCount(); ++i)
    if (!id.isEmpty() && root->child(i)->data(0, Qt::UserRole).toString() == id) {
      tree_->setCurrentItem(root->child(i));
      return;
    }
  tree_->setCurrentItem(nullptr);
  tree_->clearSelection();
}

void MainWindow::offerReload(const QStringList& added, const QStringList& removed) {
  banner_is_bundled_ = false;
  QStringList what;
  if (!added.isEmpty())
    what
        << tr("%n run(s) added (%1)", nullptr, int(added.size())).arg(added.join(QStringLiteral(", ")).toHtmlEscaped());
  if (!removed.isEmpty())
    what << tr("%n run(s) removed (%1)", nullptr, int(removed.size()))
                .arg(removed.join(QStringLiteral(", ")).toHtmlEscaped());
  if (what.isEmpty()) what << tr("its contents changed");
  banner_->setText(tr("%1 was changed on disk by another program: %2. <a href='reload'>Reload</a> it, or keep "
                      "working: saving keeps the other program's runs beside yours. · <a href='close'>hide</a>")
                       .arg(session_->displayName().toHtmlEscaped(), what.join(QStringLiteral("; "))));
  banner_->show();
  issues_->report(Severity::Info,
                  tr("The session file was changed by another program: %1").arg(what.join(QStringLiteral("; "))),
                  session_->fileName());
}

bool MainWindow::reloadSession() {
  const QString f = session_->fileName();
  if (f.isEmpty()) return false;
  if (session_->isModified()) {
    const auto r = QMessageBox::question(
        this, tr("Reload session"),
        tr("'%1' has changes that are not saved. Save them first (the other program's runs are kept), or "
           "discard them and reload?")
            .arg(session_->displayName()),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
    if (r == QMessageBox::Cancel) return false;
    if (r == QMessageBox::Save && !save()) return false;
  }
  const QString keep = session_->currentRunId();
  const bool chosen = session_->currentRunChosen();
  if (!openSession(f)) return false;
  if (chosen && session_->indexOf(keep) >= 0) session_->setCurrentRunId(keep);
  banner_->hide();
  return true;
}

bool MainWindow::openSession(const QString& fileName) {
  QString error;
  QStringList warnings;
  if (!session_->load(fileName, &error, &warnings)) {
    issues_->report(Severity::Error, tr("Cannot open session: %1").arg(error), fileName);
    statusBar()->showMessage(tr("Could not open %1").arg(QFileInfo(fileName).fileName()), 5000);
    return false;
  }
  for (const QString& w : warnings) issues_->report(Severity::Warning, w, fileName);
  // A session is open now: the "No session open" banner no longer applies; the one about the
  // bundled default session stays while that session is what is open.
  if (!banner_is_bundled_ || !isBundledSession(fileName)) {
    banner_->hide();
    banner_is_bundled_ = false;
  }
  // ... but a run of it that met a non-finite value is worth the banner.
  offerNonfiniteJump(session_->currentRun());
  // A session of training runs, advice or a recipe sweep over seeds opens on its answer.
  if (!isBundledSession(fileName)) {
    QList<std::shared_ptr<RunAccess>> runs;
    for (const RunRecord& r : session_->runs()) runs << RunAccess::forRecord(r, session_->fileName());
    if (view(QStringLiteral("decide")) && DecideView::opensOn(runs)) showView(QStringLiteral("decide"));
  }
  addRecent(fileName);
  statusBar()->showMessage(tr("Opened %1 (%n run(s))", nullptr, session_->runCount()).arg(fileName), 5000);
  return true;
}

QString MainWindow::defaultSessionPath() {
  const QString env = qEnvironmentVariable("FP8LAB_DEFAULT_SESSION");
  if (!env.isEmpty()) return QFileInfo::exists(env) ? env : QString();
  const QStringList candidates = {
      QCoreApplication::applicationDirPath() + QStringLiteral("/../share/fp8lab/default-session.h5"),
      QStringLiteral(FP8LAB_INSTALL_DATA_DIR "/default-session.h5"),
      QStringLiteral(FP8LAB_BUILD_RESOURCES_DIR "/default-session.h5"),
  };
  for (const QString& c : candidates)
    if (QFileInfo::exists(c)) return QFileInfo(c).canonicalFilePath();
  return {};
}

bool MainWindow::isBundledSession(const QString& fileName) {
  if (fileName.isEmpty()) return false;
  const QString c = QFileInfo(fileName).canonicalFilePath();
  if (c.isEmpty()) return false;
  const QString def = defaultSessionPath();
  if (!def.isEmpty() && QFileInfo(def).canonicalFilePath() == c) return true;
  // The build's and the installation's copy, also when FP8LAB_DEFAULT_SESSION points elsewhere.
  for (const QString& dir : {QStringLiteral(FP8LAB_BUILD_RESOURCES_DIR), QStringLiteral(FP8LAB_INSTALL_DATA_DIR),
                             QCoreApplication::applicationDirPath() + QStringLiteral("/../share/fp8lab")})
    if (QFileInfo(dir + QStringLiteral("/default-session.h5")).canonicalFilePath() == c) return true;
  return false;
}

void MainWindow::setSaveFileChooser(std::function<QString(const QString&)> chooser) {
  save_chooser_ = std::move(chooser);
}

void MainWindow::newSession() {
  if (!maybeSave()) return;
  session_->reset();
}

void MainWindow::openSessionDialog() {
  if (!maybeSave()) return;
  const QString f = QFileDialog::getOpenFileName(this, tr("Open session"), {},
                                                 tr("FP8 Lab sessions (*.h5 *.hdf5 *.fp8lab);;All files (*)"));
  if (!f.isEmpty()) openSession(f);
}

void MainWindow::openUntrustedDialog() {
  if (!maybeSave()) return;
  const QString f = QFileDialog::getOpenFileName(this, tr("Open untrusted session"), {},
                                                 tr("HDF5 files (*.h5 *.hdf5 *.fp8lab);;All files (*)"));
  if (!f.isEmpty()) openUntrustedSession(f);
}

bool MainWindow::openUntrustedSession(const QString& fileName) {
  fp8lab::markHdf5Untrusted(QFile::encodeName(fileName).toStdString());
  return openSession(fileName);
}

bool MainWindow::save() {
  const QString f = session_->fileName();
  if (f.isEmpty() || isBundledSession(f) || (QFileInfo::exists(f) && !QFileInfo(f).isWritable())) return saveAs();
  QString error;
  if (!writeSession(f, &error)) {
    issues_->report(Severity::Error, tr("Cannot save: %1").arg(error), f);
    return false;
  }
  statusBar()->showMessage(tr("Saved %1").arg(f), 4000);
  return true;
}

bool MainWindow::writeSession(const QString& fileName, QString* error) {
  // The runs as they are now (records share their data); the window takes no input meanwhile
  // (a window-modal progress dialog), but repaints and shows progress, and Cancel leaves the file
  // as it was.
  const QList<RunRecord> runs = session_->runs();
  auto fraction = std::make_shared<std::atomic<int>>(0);
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  auto why = std::make_shared<QString>();
  auto waiting = std::make_shared<QString>(); // "waiting for FILE: locked by ..." (the worker writes it once)
  auto wait_mutex = std::make_shared<QMutex>();
  auto merged = std::make_shared<session_io::Merge>();
  // Over the open file: merge with what another program added meanwhile.
  const bool over_open = !session_->fileName().isEmpty() && QFileInfo(fileName) == QFileInfo(session_->fileName());
  const QStringList known = session_->knownOnDisk();
  QFutureWatcher<bool> watcher;
  QEventLoop loop;
  connect(&watcher, &QFutureWatcher<bool>::finished, &loop, &QEventLoop::quit);
  session_->setSaving(true);
  watcher.setFuture(
      QtConcurrent::run([runs, fileName, fraction, cancel, why, waiting, wait_mutex, merged, over_open, known] {
        return session_io::write(
            fileName, runs, why.get(),
            [fraction, cancel](double f, const std::string&) {
              fraction->store(int(std::clamp(f, 0.0, 1.0) * 1000));
              return !cancel->load();
            },
            over_open ? &known : nullptr, merged.get(),
            [waiting, wait_mutex](const QString& m) {
              const QMutexLocker l(wait_mutex.get());
              *waiting = m;
            });
      }));
  QProgressDialog dialog(tr("Saving %1\u2026").arg(QFileInfo(fileName).fileName()), tr("Cancel"), 0, 1000, this);
  dialog.setObjectName(QStringLiteral("saveProgress"));
  dialog.setWindowModality(Qt::WindowModal);
  dialog.setMinimumDuration(400);
  dialog.setAutoClose(false);
  dialog.setAutoReset(false);
  connect(&dialog, &QProgressDialog::canceled, this, [cancel] { cancel->store(true); });
  QTimer tick;
  connect(&tick, &QTimer::timeout, this, [&] {
    dialog.setValue(fraction->load());
    const QMutexLocker l(wait_mutex.get());
    if (!waiting->isEmpty()) {
      dialog.setLabelText(tr("Saving %1: %2\u2026").arg(QFileInfo(fileName).fileName(), *waiting));
      dialog.show(); // the wait can be long: say it even before the minimum duration
      waiting->clear();
    }
  });
  tick.start(50);
  if (!watcher.isFinished()) loop.exec();
  tick.stop();
  session_->setSaving(false);
  if (!watcher.result()) {
    if (error) *error = cancel->load() ? tr("cancelled; the file is unchanged") : *why;
    return false;
  }
  session_->markSaved(fileName, merged.get());
  for (const auto& k : merged->kept)
    issues_->report(
        Severity::Info,
        k.first == k.second
            ? tr("Kept run %1, which another program added to the file, beside this session's runs").arg(k.first)
            : tr("Kept run %1, which another program added to the file, as %2 (its id was taken here)")
                  .arg(k.first, k.second),
        fileName);
  for (const QString& v : merged->vanished)
    issues_->report(Severity::Warning,
                    tr("Run %1 was removed from the file by another program before this save; its data are gone, "
                       "so it is no longer in the session")
                        .arg(v),
                    fileName);
  if (!merged->empty() && banner_->text().contains(QStringLiteral("href='reload'"))) banner_->hide();
  return true;
}

bool MainWindow::saveAs() {
  QString suggested = session_->fileName();
  if (suggested.isEmpty() || isBundledSession(suggested)) {
    QString dir = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    if (dir.isEmpty()) dir = QDir::homePath();
    suggested = dir + QStringLiteral("/session.h5");
  }
  QString f = save_chooser_
                  ? save_chooser_(suggested)
                  : QFileDialog::getSaveFileName(this, tr("Save session"), suggested, tr("FP8 Lab sessions (*.h5)"));
  if (f.isEmpty()) return false;
  if (QFileInfo(f).suffix().isEmpty()) f += QStringLiteral(".h5");
  if (isBundledSession(f)) {
    issues_->report(Severity::Error,
                    tr("Cannot save: the bundled default session is read-only (it belongs to the build or the "
                       "installation); choose another file"),
                    f);
    return false;
  }
  QString error;
  if (!writeSession(f, &error)) {
    issues_->report(Severity::Error, tr("Cannot save: %1").arg(error), f);
    return false;
  }
  addRecent(f);
  statusBar()->showMessage(tr("Saved %1").arg(f), 4000);
  return true;
}

bool MainWindow::maybeSave() {
  if (!session_->isModified()) return true;
  const auto r = QMessageBox::question(
      this, tr("Unsaved runs"),
      tr("The session '%1' has changes that are not saved. Save them?").arg(session_->displayName()),
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
  if (r == QMessageBox::Save) return save();
  return r == QMessageBox::Discard;
}

void MainWindow::exportPlot() {
  View* v = currentView();
  if (!v) return;
  QString f = QFileDialog::getSaveFileName(this, tr("Export plot"), v->viewId() + QStringLiteral(".png"),
                                           tr("PNG image (*.png);;PDF document (*.pdf);;SVG drawing (*.svg)"));
  if (f.isEmpty()) return;
  QCustomPlot* plot = v->exportPlot();
  ExportSizeDialog size(plot ? plot->size() : v->size(), this);
  if (size.exec() != QDialog::Accepted) return;
  QString error;
  if (!exportViewSized(v, f, size.chosenSize(), &error))
    issues_->report(Severity::Error, tr("Export failed: %1").arg(error), f);
  else
    statusBar()->showMessage(tr("Exported %1").arg(f), 4000);
}

void MainWindow::exportData() {
  View* v = currentView();
  if (!v) return;
  if (v->csv().isEmpty()) {
    issues_->report(Severity::Info, tr("The view '%1' has no data table to export").arg(v->title()), v->title());
    return;
  }
  const QString f =
      QFileDialog::getSaveFileName(this, tr("Export data"), v->viewId() + QStringLiteral(".csv"), tr("CSV (*.csv)"));
  if (f.isEmpty()) return;
  QString error;
  if (!exportCsv(v, f, &error))
    issues_->report(Severity::Error, tr("Export failed: %1").arg(error), f);
  else
    statusBar()->showMessage(tr("Exported %1").arg(f), 4000);
}

void MainWindow::addRecent(const QString& f) {
  QSettings s;
  QStringList l = s.value(kRecentKey).toStringList();
  const QString abs = QFileInfo(f).absoluteFilePath();
  l.removeAll(abs);
  l.prepend(abs);
  while (l.size() > kMaxRecent) l.removeLast();
  s.setValue(kRecentKey, l);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList l = QSettings().value(kRecentKey).toStringList();
  for (int i = 0; i < l.size(); ++i) {
    const QString f = l[i];
    auto* a =
        recent_menu_->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(f).fileName()), this, [this, f] {
          if (maybeSave()) openSession(f);
        });
    a->setToolTip(f);
    a->setStatusTip(f);
  }
  if (l.isEmpty())
    recent_menu_->addAction(tr("(none)"))->setEnabled(false);
  else {
    recent_menu_->addSeparator();
    recent_menu_->addAction(tr("Clear list"), this, [this] {
      QSettings().remove(kRecentKey);
      rebuildRecentMenu();
    });
  }
}

void MainWindow::about() {
  QMessageBox::about(this, tr("About FP8 Lab"),
                     tr("<h3>FP8 Lab %1</h3><p>Bit-exact FP8 / MX number formats, scaling strategies (Transformer "
                        "Engine, Flax, torchao, DeepSeek-V3, OCP MX), FP8 GEMM on the CPU reference or cuBLASLt, and "
                        "FP8 training experiments, stored in HDF5 sessions.</p><p>Backend: %2<br>%3</p>"
                        "<p>Qt %4 \u00b7 QCustomPlot 2.1 \u00b7 GPLv3</p>")
                         .arg(QStringLiteral(FP8LAB_VERSION), backend_.name, backend_.detail.toHtmlEscaped(),
                              QString::fromLatin1(qVersion())));
}

void MainWindow::formatsReference() {
  auto* dlg = new QTextBrowser;
  dlg->setAttribute(Qt::WA_DeleteOnClose);
  dlg->setWindowTitle(tr("Formats reference \u2014 FP8 Lab"));
  QString html =
      QStringLiteral("<h2>%1</h2><table border=1 cellspacing=0 cellpadding=4>"
                     "<tr><th>%2</th><th>bits</th><th>E</th><th>M</th><th>bias</th><th>max</th>"
                     "<th>min normal</th><th>min subnormal</th><th>Inf</th><th>NaN codes</th><th>%3</th></tr>")
          .arg(tr("Number formats"), tr("Format"), tr("Used by"));
  for (const Format* f : Format::all()) {
    const auto& s = f->spec();
    html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td><td>%7</td>"
                           "<td>%8</td><td>%9</td><td>%10</td><td>%11</td></tr>")
                .arg(QString::fromStdString(s.name))
                .arg(f->bits())
                .arg(s.exponent_bits)
                .arg(s.mantissa_bits)
                .arg(s.bias)
                .arg(numberText(f->maxFinite()), valueWithPow2(f->minNormal()),
                     (f->hasSubnormals() ? valueWithPow2(f->minSubnormal()) : QStringLiteral("\u2014")),
                     f->hasInfinity() ? tr("yes") : tr("no"))
                .arg(f->nanCount())
                .arg(QString::fromStdString(s.description).toHtmlEscaped());
  }
  html += QStringLiteral("</table><p>%1</p>")
              .arg(tr("Sources: OCP OFP8 rev 1.0, OCP MX v1.0, CUDA 13 cuda_fp8.h, "
                      "ml_dtypes. See docs/formats.md."));
  dlg->setHtml(html);
  dlg->resize(1100, 520);
  dlg->show();
}

void MainWindow::setExperimentRunner(ExperimentRunner runner) {
  runner_ = runner ? std::move(runner) : builtinExperimentRunner();
  panel_->setRunnerAvailable(bool(runner_), experimentRunnerMissingReason());
}

bool MainWindow::hasExperimentRunner() const {
  return bool(runner_);
}

namespace {
/// "M×N×K" of a canonical GEMM config; "from its tensors" when a tensor fixes a dimension.
QString gemmShapeText(const QJsonObject& c) {
  for (const char* k : {"m", "n", "k"})
    if (!c.contains(QLatin1String(k))) return MainWindow::tr("from its tensors");
  return QStringLiteral("%1\u00d7%2\u00d7%3")
      .arg(c.value(QStringLiteral("m")).toInt())
      .arg(c.value(QStringLiteral("n")).toInt())
      .arg(c.value(QStringLiteral("k")).toInt());
}
} // namespace

bool MainWindow::runExperiment(const QJsonObject& config) {
  if (!runner_) {
    issues_->report(Severity::Info, experimentRunnerMissingReason(), tr("Experiment panel"));
    return false;
  }
  if (job_->isRunning()) {
    statusBar()->showMessage(tr("An experiment is already running"), 3000);
    return false;
  }
  QStringList training;
  for (const auto& r : session_->runs())
    if (r.kind == QStringLiteral("training")) training << r.id;
  GemmRunRequest request{config, panel_->backend()};
  for (const auto& p : ExperimentPanel::validate(config, request.backend, backend_.gpu, training))
    if (p.blocking) {
      issues_->report(Severity::Error, p.reason, tr("Experiment panel / %1").arg(p.field));
      return false;
    }
  auto runner = runner_;
  request.config[QStringLiteral("name")] = session_->nextRunId();
  const QString title = tr("Running %1\u00d7%2 GEMM %3")
                            .arg(config.value(QStringLiteral("format_a")).toString(),
                                 config.value(QStringLiteral("format_b")).toString(), gemmShapeText(config));
  return job_->start(title, [runner, request](const fp8lab::ProgressFn& fn) { return runner(request, fn); });
}

bool MainWindow::runFullDefaultExperiment() {
  QFile f(QStringLiteral(":/fp8lab/app/experiments/default.json"));
  if (!f.open(QIODevice::ReadOnly)) {
    issues_->report(Severity::Error,
                    tr("Cannot run the full default experiment: its config is missing from this build"), f.fileName());
    return false;
  }
  const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation);
  QDir().mkpath(dir);
  const QString out = dir + QStringLiteral("/default-experiment-%1.h5")
                                .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")));
  QString why;
  const TrainingRequest request = trainingRequestFromText(f.readAll(), &why);
  if (!request.ok()) {
    issues_->report(Severity::Error, tr("Cannot run the full default experiment: %1").arg(why), f.fileName());
    return false;
  }
  return runTrainingExperiment(request, out, tr("Full default experiment (Fashion-MNIST training, a few minutes)"));
}

bool MainWindow::runTrainingExperiment(const TrainingRequest& request, const QString& out_file, const QString& title) {
  if (!request.ok()) return false;
  if (job_->isRunning()) {
    statusBar()->showMessage(tr("An experiment is already running"), 3000);
    return false;
  }
  const bool started = job_->start(
      title, [request, out_file](const fp8lab::ProgressFn& fn) { return runTrainingJob(request, out_file, fn); });
  if (started) statusBar()->showMessage(tr("Training into %1").arg(out_file), 6000);
  return started;
}

void MainWindow::onJobFinished(const JobResult& r) {
  const QString where = r.run.label.isEmpty() ? tr("experiment") : r.run.label;
  for (const auto& w : r.warnings) issues_->report(w, where);
  if (!r.session_file.isEmpty()) {
    // A training experiment saved its runs into this file as they finished.
    addRecent(r.session_file);
    if (!session_->isModified())
      openSession(r.session_file);
    else
      issues_->report(Severity::Info,
                      tr("The training experiment's session is saved; open it from File \u2192 Open recent"),
                      r.session_file);
    if (!r.summary.isEmpty()) statusBar()->showMessage(r.summary, 10000);
    if (r.kept_after_cancel) issues_->report(Severity::Info, r.summary, r.session_file);
    return;
  }
  if (r.run.kind.isEmpty()) return;
  QElapsedTimer t;
  t.start();
  session_->addRun(r.run);
  if (qEnvironmentVariableIsSet("FP8LAB_TRACE"))
    std::fprintf(stderr, "addRun took %lld ms\n", static_cast<long long>(t.elapsed()));
  statusBar()->showMessage(tr("Run added: %1").arg(session_->run(session_->runCount() - 1).label), 5000);
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (!maybeSave()) {
    e->ignore();
    return;
  }
  if (job_->isRunning()) {
    job_->cancel();
    job_->waitForFinished();
  }
  if (opt_.restore_settings) {
    QSettings s;
    s.setValue(QStringLiteral("window/geometry"), saveGeometry());
    s.setValue(QStringLiteral("window/state"), saveState());
    if (View* v = currentView()) s.setValue(QStringLiteral("window/view"), v->viewId());
  }
  e->accept();
}

} // namespace fp8lab::ui

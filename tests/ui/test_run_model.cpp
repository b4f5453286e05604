// The run model of the GUI (ui/session/run_model.h): the roles of a session's runs (kind and
// capabilities, listed by hand for runs built here), the capability filter of the run boxes, the
// one selection shared by the session tree and every view's run box, and the generation-counted
// load of the analysis views (ui/views/analysis_view.h): a load overtaken by a newer choice never shows.
#include "window_options.h"
#include "views/analysis_view.h"
#include "main_window.h"
#include "plot/qcp.h"
#include "session/run_access.h"
#include "session/run_box.h"
#include "session/run_model.h"
#include "session/session_document.h"

#include "session/session.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QSemaphore>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QTreeWidget>
#include <QUndoStack>
#include <QtTest>

#include <algorithm>

using namespace fp8lab::ui;
using fp8lab::Run;

namespace {

Run makeRun(const std::string& id, const std::string& type, const std::string& config,
            const std::vector<std::string>& datasets) {
  Run r;
  r.id = id;
  r.type = type;
  r.config_json = config;
  for (const std::string& d : datasets) r.putFloat32(d, {1.0f, 2.0f, 3.0f, 4.0f}, 2, 2, "1", "test data");
  return r;
}

/// The session of the tests, in this order. Expected capabilities, by hand from the kinds,
/// configs and dataset groups (docs/session-format.md; mayHoldBlockStats: a training run that is
/// not FP32 and does not turn "block_stats" off):
///   base   training, FP32, history/            Training | Histories                  kind "training"
///   g1     gemm, error/                        Gemm | GemmError                      kind "gemm"
///   kc     gemm, observed/D, error/            Gemm | GemmError | KernelCheck        kind "kernel check"
///   fp8    training, FP8, history/, block_stats/  Training | MayHoldBlockStats | Histories | BlockStats
///   lm     training, FP32 with a model, attention/  Training | LanguageModel | AttentionProbes  kind "lm"
///   ck     checkpoint, block_stats/W           Checkpoint | BlockStats               kind "checkpoint"
std::vector<Run> sessionRuns() {
  return {makeRun("base", "training", R"({"precision":"fp32"})", {"history/fc1/input/amax"}),
          makeRun("g1", "gemm", R"({"type":"gemm"})", {"output/D", "error/abs"}),
          makeRun("kc", "gemm", R"({"type":"gemm"})", {"output/D", "observed/D", "error/ulp"}),
          makeRun("fp8", "training", R"({"precision":"fp8"})",
                  {"history/fc1/input/amax", "block_stats/fc1/input/map_scale"}),
          makeRun("lm", "training", R"({"precision":"fp32","model":{"layers":1}})", {"attention/steps"}),
          makeRun("ck", "checkpoint", "{}", {"block_stats/W/map_scale"})};
}

void fill(SessionDocument* s) {
  for (const Run& r : sessionRuns()) s->addRun(session_io::fromCoreRun(r));
}

/// "a b c" → {"a", "b", "c"}.
QStringList ids(const char* spaced) {
  return QString::fromLatin1(spaced).split(QLatin1Char(' '), Qt::SkipEmptyParts);
}

QStringList idsOf(QAbstractItemModel* m) {
  QStringList out;
  for (int i = 0; i < m->rowCount(); ++i) out << m->index(i, 0).data(RunListModel::IdRole).toString();
  return out;
}

/// The smallest analysis view: a run box of GEMM runs, and the run id "read" on the thread pool
/// and recorded in `shown`; each read waits until the test opens its run's gate.
class ProbeView : public AnalysisView {
public:
  explicit ProbeView(std::map<QString, std::shared_ptr<QSemaphore>> gates)
      : AnalysisView(RunCap::Gemm, nullptr), gates_(std::move(gates)) {
    auto* bar = new QHBoxLayout(this);
    addRunBox(bar);
  }
  QString viewId() const override { return QStringLiteral("probe"); }
  QString title() const override { return QStringLiteral("Probe"); }
  QStringList shown;

protected:
  void runChosen(Read) override {
    const quint64 gen = newGeneration();
    const QString id = runs()->currentId();
    if (id.isEmpty()) return showEmpty(noRunText(QStringLiteral("No GEMM run.")));
    auto gate = gates_.at(id);
    loadAsync<QString>(
        gen, true,
        [gate, id] {
          gate->acquire(); // a gate stays open once released: every read of the run passes
          gate->release();
          return id;
        },
        [this](const QString& got) {
          clearEmpty();
          shown << got;
        },
        QStringLiteral("Reading %1").arg(id));
  }
  void drawEmptyState(const QString&) override {}

private:
  std::map<QString, std::shared_ptr<QSemaphore>> gates_;
};

} // namespace

class TestRunModel : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void rolesOfEachRun() {
    SessionDocument s;
    fill(&s);
    RunListModel* m = runModel(&s);
    QCOMPARE(idsOf(m), ids("base g1 kc fp8 lm ck"));
    const RunCaps want[] = {
        RunCap::Training | RunCap::Histories,
        RunCap::Gemm | RunCap::GemmError,
        RunCap::Gemm | RunCap::GemmError | RunCap::KernelCheck,
        RunCap::Training | RunCap::MayHoldBlockStats | RunCap::Histories | RunCap::BlockStats,
        RunCap::Training | RunCap::LanguageModel | RunCap::AttentionProbes,
        RunCap::Checkpoint | RunCap::BlockStats,
    };
    const char* kinds[] = {"training", "gemm", "kernel check", "training", "lm", "checkpoint"};
    for (int i = 0; i < 6; ++i) {
      const QModelIndex x = m->index(i);
      QCOMPARE(x.data(RunListModel::CapsRole).toInt(), int(want[i].toInt()));
      QCOMPARE(x.data(RunListModel::KindRole).toString(), QString::fromLatin1(kinds[i]));
      QCOMPARE(x.data(RunListModel::HasGemmErrorRole).toBool(), bool(want[i] & RunCap::GemmError));
      QCOMPARE(x.data(RunListModel::HasBlockStatsRole).toBool(), bool(want[i] & RunCap::BlockStats));
      QCOMPARE(x.data(RunListModel::HasHistoriesRole).toBool(), bool(want[i] & RunCap::Histories));
      QCOMPARE(x.data(RunListModel::HasAttentionProbesRole).toBool(), bool(want[i] & RunCap::AttentionProbes));
      QCOMPARE(x.data(RunListModel::HasKernelCheckRole).toBool(), bool(want[i] & RunCap::KernelCheck));
    }
    // Rename, remove, undo: rows follow the document, keyed by id.
    s.renameRun(1, QStringLiteral("first gemm"));
    QCOMPARE(m->index(1).data().toString(), QStringLiteral("first gemm (g1)"));
    QCOMPARE(m->index(0).data().toString(), QStringLiteral("base"));
    s.removeRun(0);
    QCOMPARE(idsOf(m), ids("g1 kc fp8 lm ck"));
    QCOMPARE(m->indexOfId(QStringLiteral("ck")).row(), 4);
    s.undoStack()->undo();
    QCOMPARE(idsOf(m), ids("base g1 kc fp8 lm ck"));
    s.reset();
    QCOMPARE(m->rowCount(), 0);
    QVERIFY(!m->indexOfId(QStringLiteral("g1")).isValid());
  }

  void proxyFiltersByCapability() {
    SessionDocument s;
    fill(&s);
    RunListModel* m = runModel(&s);
    RunFilterProxy gemm(m, RunCap::Gemm);
    QCOMPARE(idsOf(&gemm), ids("g1 kc"));
    RunFilterProxy blocks(m, RunCap::BlockStats);
    QCOMPARE(idsOf(&blocks), ids("fp8 ck"));
    // The block map's box: runs that may hold block statistics, GEMM and checkpoint runs.
    RunFilterProxy map(m, RunCap::MayHoldBlockStats | RunCap::Gemm | RunCap::Checkpoint);
    QCOMPARE(idsOf(&map), ids("g1 kc fp8 ck"));
    RunFilterProxy kernel(m, RunCap::KernelCheck);
    QCOMPARE(idsOf(&kernel), ids("kc"));
    // A run added later is filtered as it comes.
    s.addRun(session_io::fromCoreRun(makeRun("g2", "gemm", "{}", {"error/abs"})));
    QCOMPARE(idsOf(&gemm), ids("g1 kc g2"));
    QCOMPARE(idsOf(&blocks), ids("fp8 ck"));
    gemm.setFilter(RunCap::LanguageModel);
    QCOMPARE(idsOf(&gemm), ids("lm"));
  }

  // One selection: the tree, the selection model and every view's run box show the same run;
  // each view opens on the first run it can show when the current one is only the default.
  void selectionShared() {
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("s.h5"));
    QVERIFY(fp8lab::appendRuns(f.toStdString(), sessionRuns()).ok());
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.resize(1400, 900);
    QVERIFY(w.openSession(f));
    SessionDocument* s = w.session();
    RunSelection* sel = runSelection(s);
    QCOMPARE(sel->currentRunId(), QStringLiteral("base"));
    QCOMPARE(sel->currentIndex().row(), 0);
    auto box = [&](const char* view) {
      View* v = w.view(QLatin1String(view));
      v->runPendingReloads();
      return v->findChild<QComboBox*>(QStringLiteral("run"))->currentData().toString();
    };
    // A session file lists its runs by id.
    QCOMPARE(idsOf(runModel(s)), ids("base ck fp8 g1 kc lm"));
    // "base" (FP32 training) is current by default: the GEMM views open on g1, the block map on
    // ck (its first listed run: ck, fp8, g1, kc), the layer × step map on fp8, the attention view
    // on lm.
    QCOMPARE(box("heatmap"), QStringLiteral("g1"));
    QCOMPARE(box("block_scales"), QStringLiteral("g1"));
    QCOMPARE(box("block_map"), QStringLiteral("ck"));
    QCOMPARE(box("layers"), QStringLiteral("fp8"));
    QCOMPARE(box("attention"), QStringLiteral("lm"));
    // Selecting kc in the tree: the session, the selection and every GEMM view follow.
    auto* tree = w.findChild<QTreeWidget*>(QStringLiteral("sessionTree"));
    QTreeWidgetItem* root = tree->topLevelItem(0);
    for (int i = 0; i < root->childCount(); ++i)
      if (root->child(i)->data(0, Qt::UserRole).toString() == QStringLiteral("kc"))
        tree->setCurrentItem(root->child(i));
    QCOMPARE(s->currentRunId(), QStringLiteral("kc"));
    QCOMPARE(sel->currentIndex().row(), 4);
    QCOMPARE(box("heatmap"), QStringLiteral("kc"));
    QCOMPARE(box("block_scales"), QStringLiteral("kc"));
    QCOMPARE(box("block_map"), QStringLiteral("kc"));
    // The selection model leads as well: the tree and the views follow it.
    sel->setCurrentIndex(runModel(s)->indexOfId(QStringLiteral("ck")), QItemSelectionModel::ClearAndSelect);
    QCOMPARE(s->currentRunId(), QStringLiteral("ck"));
    QCOMPARE(tree->currentItem()->data(0, Qt::UserRole).toString(), QStringLiteral("ck"));
    QCOMPARE(box("block_map"), QStringLiteral("ck"));
    // A run box leads: picking fp8 in the layer × step map moves the tree and the selection.
    // (It shows no run now: ck, chosen, is not a run it lists.)
    QCOMPARE(box("layers"), QString());
    auto* ls = w.view(QStringLiteral("layers"))->findChild<QComboBox*>(QStringLiteral("run"));
    ls->setCurrentIndex(ls->findData(QStringLiteral("fp8")));
    QCOMPARE(sel->currentRunId(), QStringLiteral("fp8"));
    QCOMPARE(tree->currentItem()->data(0, Qt::UserRole).toString(), QStringLiteral("fp8"));
    QCOMPARE(box("block_map"), QStringLiteral("fp8"));
    // A chosen run a view cannot show: that view shows no run (the heatmap lists GEMM runs only).
    QCOMPARE(box("heatmap"), QString());
  }

  // Clipping counts (history/<operand>/saturated) exist only for quantized operands: the Clipping
  // view lists the FP8 run, never the FP32 baseline, and opens on the FP8 run; the session tree
  // highlights the run the view on screen shows (clipping, amax history) while the current run is
  // only the load's default; a chosen FP32 run gets an empty state that says why.
  void clippingListsQuantizedRunsAndTreeFollowsTheView() {
    Run base = makeRun("base", "training", R"({"precision":"fp32"})", {"history/fc1/input/amax", "training/loss"});
    Run q8 = makeRun("q8", "training", R"({"precision":"fp8"})",
                     {"history/fc1/input/amax", "history/fc1/input/amax_history", "training/loss"});
    q8.datasets["history/fc1/input/saturated"] = fp8lab::Dataset::int64({2}, {0, 3}, "elements", "clipped");
    q8.datasets["history/fc1/input/underflow"] = fp8lab::Dataset::int64({2}, {1, 0}, "elements", "flushed");
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("clip.h5"));
    QVERIFY(fp8lab::appendRuns(f.toStdString(), {base, q8}).ok());
    {
      SessionDocument s;
      QString error;
      QVERIFY2(s.load(f, &error), qPrintable(error));
      RunListModel* m = runModel(&s);
      QCOMPARE(idsOf(m), ids("base q8"));
      QCOMPARE(m->index(0).data(RunListModel::CapsRole).toInt(), int((RunCap::Training | RunCap::Histories).toInt()));
      QCOMPARE(m->index(1).data(RunListModel::CapsRole).toInt(),
               int((RunCap::Training | RunCap::MayHoldBlockStats | RunCap::Histories | RunCap::ClipCounts).toInt()));
      RunFilterProxy clip(m, RunCap::ClipCounts);
      QCOMPARE(idsOf(&clip), ids("q8"));
    }
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    auto* tree = w.findChild<QTreeWidget*>(QStringLiteral("sessionTree"));
    auto treeId = [&] {
      return tree->currentItem() ? tree->currentItem()->data(0, Qt::UserRole).toString() : QString();
    };
    auto box = [&](const char* view) {
      return w.view(QLatin1String(view))->findChild<QComboBox*>(QStringLiteral("run"))->currentData().toString();
    };
    QVERIFY(w.openSession(f)); // a session of training runs opens on the Decide view
    QVERIFY(w.showView(QStringLiteral("clipping")));
    auto* clipping = qobject_cast<AnalysisView*>(w.view(QStringLiteral("clipping")));
    QVERIFY(clipping);
    QCOMPARE(box("clipping"), QStringLiteral("q8"));
    QTRY_COMPARE(treeId(), QStringLiteral("q8"));
    // Long ids with a common prefix stay apart: the tree elides in the middle, and each item's
    // tooltip starts with the full id.
    QCOMPARE(tree->textElideMode(), Qt::ElideMiddle);
    QVERIFY2(tree->topLevelItem(0)->child(1)->toolTip(0).startsWith(QStringLiteral("q8 \u2014 created")),
             qPrintable(tree->topLevelItem(0)->child(1)->toolTip(0)));
    QCOMPARE(w.session()->currentRunChosen(), false);
    QTRY_VERIFY(!clipping->isLoading());
    QCOMPARE(clipping->emptyText(), QString());
    // Reopened: base is the default again, then the amax history opens on q8 (the run with amax
    // windows) and the tree follows it.
    QVERIFY(w.openSession(f));
    QTRY_COMPARE(treeId(), QStringLiteral("base"));
    QVERIFY(w.showView(QStringLiteral("amax")));
    QCOMPARE(box("amax"), QStringLiteral("q8"));
    QTRY_COMPARE(treeId(), QStringLiteral("q8"));
    // base chosen in the tree: the Clipping view shows no run and says why.
    for (int i = 0; i < tree->topLevelItem(0)->childCount(); ++i)
      if (tree->topLevelItem(0)->child(i)->data(0, Qt::UserRole).toString() == QStringLiteral("base"))
        tree->setCurrentItem(tree->topLevelItem(0)->child(i));
    QCOMPARE(w.session()->currentRunId(), QStringLiteral("base"));
    auto* clipPlot = clipping->findChild<QCustomPlot*>();
    QVERIFY(clipPlot);
    QSignalSpy replots(clipPlot, &QCustomPlot::afterReplot);
    QVERIFY(w.showView(QStringLiteral("clipping")));
    QCOMPARE(box("clipping"), QString());
    QVERIFY(!clipping->isLoading());
    QCOMPARE(clipping->emptyText(), QStringLiteral("Run base is an FP32 baseline: it quantizes nothing, so nothing is "
                                                   "clipped.\nChoose a run in the Run box above."));
    // The empty state that replaced the plot is painted (a replot follows it), not left behind
    // the previous picture.
    QTRY_VERIFY(replots.count() > 0);
    QTest::qWait(50);
    QCOMPARE(treeId(), QStringLiteral("base")); // a chosen run stays current
  }

  // A run stopped before its plan says how far it got: 465 of 3 × 469 = 1407 steps; a completed
  // run its step count.
  void stepsDoneVersusPlanned() {
    Run stopped = makeRun("int", "training", R"({"precision":"fp8"})", {"training/loss"});
    stopped.attrs["steps_completed"] = int64_t(465);
    stopped.attrs["epochs_planned"] = int64_t(3);
    stopped.attrs["steps_per_epoch"] = int64_t(469);
    stopped.attrs["status"] = std::string("cancelled");
    Run done = makeRun("done", "training", R"({"precision":"fp8"})", {"training/loss"});
    done.attrs["steps_completed"] = int64_t(16);
    done.attrs["epochs_planned"] = int64_t(1);
    done.attrs["steps_per_epoch"] = int64_t(16);
    done.attrs["status"] = std::string("completed");
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("steps.h5"));
    QVERIFY(fp8lab::appendRuns(f.toStdString(), {stopped, done}).ok());
    SessionDocument s;
    QString error;
    QVERIFY2(s.load(f, &error), qPrintable(error));
    QCOMPARE(stepsDoneText(*RunAccess::forRecord(s.run(s.indexOf(QStringLiteral("int"))), f), 465),
             QStringLiteral("465 of 1407 steps (cancelled)"));
    QCOMPARE(stepsDoneText(*RunAccess::forRecord(s.run(s.indexOf(QStringLiteral("done"))), f), 16),
             QStringLiteral("16 steps"));
  }

  // GUI messages add their own lead ("Cannot open session: "): the core issue's text without its
  // "error: " severity prefix.
  void errorTextHasNoSeverityPrefix() {
    fp8lab::Status st;
    st.add(fp8lab::Issue::Code::ForeignFile, "x.h5", "no 'application' root attribute");
    QCOMPARE(QString::fromStdString(st.firstError()),
             QStringLiteral("error: not an FP8 Lab session at x.h5: no 'application' root attribute"));
    QCOMPARE(session_io::errorText(st),
             QStringLiteral("not an FP8 Lab session at x.h5: no 'application' root attribute"));
  }

  // Run g1 is chosen and its read starts; then g2 is chosen before g1's read ends. g2's result is
  // shown; g1's, ending after it, is dropped.
  void newerChoiceDropsStaleLoad() {
    // Three reads wait at once (g1 twice: the box's rebuild for the added g2 reads the run it
    // shows again, then g2): more than the pool's threads on a 2-core machine.
    QThreadPool::globalInstance()->setMaxThreadCount(std::max(4, QThreadPool::globalInstance()->maxThreadCount()));
    SessionDocument s;
    auto g1 = std::make_shared<QSemaphore>(), g2 = std::make_shared<QSemaphore>();
    ProbeView v({{QStringLiteral("g1"), g1}, {QStringLiteral("g2"), g2}});
    v.setSession(&s);
    QCOMPARE(v.emptyText(), QStringLiteral("No GEMM run."));
    s.addRun(session_io::fromCoreRun(makeRun("g1", "gemm", "{}", {})));
    QVERIFY(v.isLoading());
    QCOMPARE(v.emptyText(), QStringLiteral("Reading g1"));
    s.addRun(session_io::fromCoreRun(makeRun("g2", "gemm", "{}", {})));
    QCOMPARE(v.emptyText(), QStringLiteral("Reading g2"));
    g2->release();
    QTRY_COMPARE(v.shown, QStringList{QStringLiteral("g2")});
    QVERIFY(!v.isLoading());
    QCOMPARE(v.emptyText(), QString());
    g1->release();
    QVERIFY(QThreadPool::globalInstance()->waitForDone(5000));
    QTest::qWait(50); // the finished signal of g1's read is delivered and dropped
    QCOMPARE(v.shown, QStringList{QStringLiteral("g2")});
  }
};

QTEST_MAIN(TestRunModel)
#include "test_run_model.moc"

// Main window, session document, Issues panel and experiment panel, and how each handles bad input.
#include "window_options.h"
#include "views/bit_layout_view.h"
#include "views/code_grid_view.h"
#include "views/error_heatmap_view.h"
#include "forms/experiment_panel.h"
#include "session/issues.h"
#include "forms/job.h"
#include "main_window.h"
#include "session/session_document.h"
#include "views/view_registry.h"

#include "expected_views.h"
#include "views/view_render.h"
#include "plot/qcp.h"
#include "session/run_access.h"
#include "session/session.h"

#include "session/session.h"

#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <QLabel>
#include <QImage>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QTabWidget>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

using namespace fp8lab::ui;
using fp8lab::Severity;

namespace {
/// Writes a session of one GEMM run with an n×n error map (what the error heatmap draws):
/// reference/D(i, j) = i·n + j + 1, output/D = reference + 0.25, error/abs = 0.25 everywhere;
/// A and B (n×8 and 8×n) hold 1 + i and 1 + j, so row i of A is all i + 1.
bool writeGemmSession(const QString& file, QString* error, int n = 4) {
  fp8lab::Run r;
  r.id = "gemm-1";
  r.type = "gemm";
  r.config_json = "{\"type\":\"gemm\"}";
  const size_t nn = size_t(n) * size_t(n);
  std::vector<double> ref(nn);
  std::vector<float> d(nn), abs(nn, 0.25f), a(size_t(n) * 8), b(size_t(n) * 8);
  for (size_t k = 0; k < nn; ++k) ref[k] = double(k + 1), d[k] = float(k + 1) + 0.25f;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < 8; ++k)
      a[size_t(i) * 8 + size_t(k)] = float(i + 1), b[size_t(k) * size_t(n) + size_t(i)] = float(i + 1);
  r.datasets["reference/D"] = fp8lab::Dataset::float64({n, n}, ref, "1", "ideal");
  r.putFloat32("output/D", d, n, n, "1", "D");
  r.putFloat32("error/abs", abs, n, n, "1", "|D - ref|");
  r.putFloat32("inputs/A", a, n, 8, "1", "A");
  r.putFloat32("inputs/B", b, 8, n, "1", "B");
  r.attrs["output_type"] = std::string("fp32");
  r.attrs["format_a"] = std::string("E4M3FN");
  r.attrs["format_b"] = std::string("E4M3FN");
  SessionDocument s;
  s.addRun(session_io::fromCoreRun(r));
  return s.save(file, error);
}

QJsonObject smallGemm() {
  QJsonObject c = ExperimentPanel::defaultConfig();
  c[QStringLiteral("m")] = 32;
  c[QStringLiteral("n")] = 16;
  c[QStringLiteral("k")] = 64;
  return c;
}
} // namespace

class TestMainWindow : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("FP8 Lab tests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_main_window"));
  }

  void viewsAndStatusBar() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    for (const char* id : {"bits", "numberline", "codes", "learn"}) {
      QVERIFY2(w.view(QString::fromLatin1(id)), id);
      QVERIFY(w.showView(QString::fromLatin1(id)));
      QCOMPARE(w.currentView()->viewId(), QString::fromLatin1(id));
    }
    QVERIFY(!w.showView(QStringLiteral("nope")));
    QCOMPARE(w.backendText(), QStringLiteral("Backend: CPU"));
    BackendInfo gpu{true, QStringLiteral("NVIDIA H200"), QStringLiteral("cc 9.0")};
    w.setBackend(gpu);
    QCOMPARE(w.backendText(), QStringLiteral("Backend: NVIDIA H200"));
    QVERIFY(w.issueCounterText().startsWith(QStringLiteral("0")));
  }

  // The code grid selects in the bit layout view and switches to it.
  void codeGridLinksToBitLayout() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.show();
    auto* grid = qobject_cast<CodeGridView*>(w.view(QStringLiteral("codes")));
    auto* bits = qobject_cast<BitLayoutView*>(w.view(QStringLiteral("bits")));
    w.showView(QStringLiteral("codes"));
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTest::mouseClick(grid->grid(), Qt::LeftButton, {}, grid->grid()->cellRect(0x38).center());
    QCOMPARE(w.currentView(), static_cast<View*>(bits));
    QCOMPARE(bits->code(), 0x38u);
    QCOMPARE(bits->decodedText(), QStringLiteral("1 = 2\u2070"));
    bits->setCode(0x01);
    QCOMPARE(grid->grid()->selected(), 0x01);
  }

  // The views register themselves (view_registry.h): the registry lists every view the window
  // shows, in tab and View-menu order, under the ids that saved settings ("window/view"), --view
  // and the menu's object names use; each registered type makes a view of its own id. The tabs
  // and the View menu carry the views' titles, the first nine menu entries Alt+1 … Alt+9.
  void viewRegistryListsEveryViewInMenuOrder() {
    const QStringList& ids = fp8lab::testsupport::kExpectedViewIds;
    const QStringList& titles = fp8lab::testsupport::kExpectedViewTitles;
    QStringList registered;
    for (const ViewType& t : viewTypes()) {
      registered << t.id;
      std::unique_ptr<View> v(t.create(nullptr));
      QCOMPARE(v->viewId(), t.id);
    }
    QCOMPARE(registered, ids);
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    QStringList shown;
    for (View* v : w.views()) shown << v->viewId();
    QCOMPARE(shown, ids);
    auto* tabs = w.findChild<QTabWidget*>(QStringLiteral("views"));
    QVERIFY(tabs);
    QCOMPARE(tabs->count(), ids.size());
    QMenu* viewMenu = nullptr;
    for (QAction* a : w.menuBar()->actions())
      if (a->text() == QStringLiteral("&View")) viewMenu = a->menu();
    QVERIFY(viewMenu);
    const QList<QAction*> entries = viewMenu->actions();
    QVERIFY(entries.size() > ids.size());
    for (int i = 0; i < ids.size(); ++i) {
      QCOMPARE(tabs->tabText(i), titles[i]);
      QCOMPARE(entries[i]->objectName(), QStringLiteral("showView_") + ids[i]);
      QCOMPARE(entries[i]->text(), titles[i]);
      QCOMPARE(entries[i]->shortcut(), i < 9 ? QKeySequence(QStringLiteral("Alt+%1").arg(i + 1)) : QKeySequence());
      entries[i]->trigger();
      QCOMPARE(w.currentView()->viewId(), ids[i]);
    }
    QVERIFY(entries[ids.size()]->isSeparator());
  }

  void issuesAreCountedOnce() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    IssueList* l = w.issues();
    l->report(Severity::Warning, QStringLiteral("saturated"), QStringLiteral("run-1/A"));
    l->report(Severity::Warning, QStringLiteral("saturated"), QStringLiteral("run-1/A"));
    l->report(Severity::Error, QStringLiteral("saturated"), QStringLiteral("run-1/A"));
    QCOMPARE(l->rowCount(), 2);
    QCOMPARE(l->issues()[0].count, 2);
    QCOMPARE(w.issueCounterText(), QStringLiteral("2 issue(s)"));
    l->clear();
    QCOMPARE(w.issueCounterText(), QStringLiteral("0 issue(s)"));
  }

  // Bad input: a foreign file and a corrupt HDF5 file each give one Issues entry with the
  // reason; the session and the window stay as they were.
  // File → Open untrusted… on a file that crashes libhdf5 itself (tests/fuzz/known-libhdf5-crashes,
  // a SEGV in H5Aiterate2 → H5A__close): refused by the separate checking process with the reason,
  // the window and its session untouched. A good file opens the same way.
  void openUntrustedRefusesACrashingFile() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    const QString crash =
        QStringLiteral(FP8LAB_SOURCE_DIR "/tests/fuzz/known-libhdf5-crashes/H5Aiterate2-H5A__close-segv.h5");
    QVERIFY(QFileInfo::exists(crash));
    QVERIFY(!w.openUntrustedSession(crash));
    QCOMPARE(w.issues()->rowCount(), 1);
    QCOMPARE(w.issues()->issues()[0].severity, Severity::Error);
    QVERIFY2(w.issues()->issues()[0].text.contains(QStringLiteral("in a separate checking process")),
             qPrintable(w.issues()->issues()[0].text));
    QCOMPARE(w.session()->runCount(), 0);
    QTemporaryDir dir;
    const QString good = dir.filePath(QStringLiteral("good.h5"));
    fp8lab::Session s;
    fp8lab::Run r;
    r.id = "r1";
    r.type = "test";
    r.config_json = "{}";
    r.putFloat32("output/D", {1.0f, 2.0f}, 1, 2, "1", "test data");
    s.runs.push_back(r);
    QVERIFY(fp8lab::writeSession(good.toStdString(), s).ok());
    QVERIFY(w.openUntrustedSession(good));
    QCOMPARE(w.session()->runCount(), 1);
  }

  // File → Save writes on a worker thread: the GUI thread's event loop runs during the save. The
  // save pauses before its commit (FP8LAB_TEST_SAVE_PAUSE, core session_writer.cpp) until a timer
  // on the GUI thread removes the pause file — which it can only do if the window is not blocked.
  void saveKeepsTheWindowResponsive() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    RunRecord r;
    r.id = QStringLiteral("r1");
    r.label = QStringLiteral("r1");
    r.kind = QStringLiteral("test");
    auto t = std::make_shared<RunTensor>();
    t->rows = 64;
    t->cols = 64;
    t->data.assign(64 * 64, 1.5f);
    r.tensors.append({QStringLiteral("output/D"), t});
    w.session()->addRun(r);
    QVERIFY(w.session()->isModified());
    QTemporaryDir dir;
    const QString pause = dir.filePath(QStringLiteral("paused")), file = dir.filePath(QStringLiteral("s.h5"));
    qputenv("FP8LAB_TEST_SAVE_PAUSE", QFile::encodeName(pause));
    bool fired_during_save = false;
    QTimer poll;
    connect(&poll, &QTimer::timeout, [&] {
      if (QFileInfo::exists(pause)) {
        fired_during_save = true;
        QFile::remove(pause);
      }
    });
    poll.start(10);
    QString error;
    const bool ok = w.writeSession(file, &error);
    poll.stop();
    qunsetenv("FP8LAB_TEST_SAVE_PAUSE");
    QVERIFY2(ok, qPrintable(error));
    QVERIFY2(fired_during_save, "the GUI thread was blocked during the save");
    QVERIFY(!w.session()->isModified());
    QCOMPARE(w.session()->fileName(), file);
    QVERIFY(QFileInfo::exists(file));
  }

  void corruptOrForeignFile() {
    QTemporaryDir dir;
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    const QString txt = dir.filePath(QStringLiteral("notes.txt"));
    QFile f(txt);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("hello, not a session\n");
    f.close();
    QVERIFY(!w.openSession(txt));
    QCOMPARE(w.issues()->rowCount(), 1);
    QCOMPARE(w.issues()->issues()[0].severity, Severity::Error);
    QVERIFY2(w.issues()->issues()[0].text.contains(QStringLiteral("not an HDF5 file")),
             qPrintable(w.issues()->issues()[0].text));
    QCOMPARE(w.issues()->issues()[0].where, txt);
    const QString h5 = dir.filePath(QStringLiteral("broken.h5"));
    QFile g(h5);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write(QByteArray("\x89HDF\r\n\x1a\n", 8) + QByteArray(300, '\x07'));
    g.close();
    QVERIFY(!w.openSession(h5));
    QCOMPARE(w.issues()->rowCount(), 2);
    QVERIFY(!w.openSession(dir.filePath(QStringLiteral("missing.h5"))));
    QCOMPARE(w.issues()->rowCount(), 3);
    QCOMPARE(w.session()->runCount(), 0);
    QVERIFY(w.session()->fileName().isEmpty());
  }

  void sessionUndoRedo() {
    SessionDocument s;
    QSignalSpy added(&s, &SessionDocument::runAdded);
    RunRecord r;
    r.kind = QStringLiteral("gemm");
    r.label = QStringLiteral("first");
    s.addRun(r);
    QCOMPARE(s.runCount(), 1);
    QCOMPARE(s.run(0).id, QStringLiteral("run-0001"));
    QVERIFY(s.isModified());
    s.renameRun(0, QStringLiteral("renamed"));
    QCOMPARE(s.run(0).label, QStringLiteral("renamed"));
    s.undoStack()->undo();
    QCOMPARE(s.run(0).label, QStringLiteral("first"));
    s.undoStack()->undo();
    QCOMPARE(s.runCount(), 0);
    QVERIFY(!s.isModified());
    s.undoStack()->redo();
    QCOMPARE(s.runCount(), 1);
    QCOMPARE(added.count(), 2);
    QCOMPARE(s.currentRun(), 0);
  }

  // Out-of-range and unsupported parameters are refused in place, with a reason.
  void panelValidation() {
    QJsonObject c = ExperimentPanel::defaultConfig();
    c[QStringLiteral("format_a")] = QStringLiteral("E5M2");
    c[QStringLiteral("format_b")] = QStringLiteral("E5M2");
    auto probs = ExperimentPanel::validate(c, QStringLiteral("cuda"), true, {});
    bool found = false;
    for (const auto& p : probs)
      found |= p.blocking && p.reason.contains(QStringLiteral("E5M2 \u00d7 E5M2 is not supported by cuBLASLt"));
    QVERIFY(found);
    const QString cpu = QStringLiteral("cpu");
    QVERIFY(ExperimentPanel::validate(c, cpu, false, {}).isEmpty()); // the CPU reference runs E5M2 x E5M2
    c[QStringLiteral("m")] = 0;
    QVERIFY(!ExperimentPanel::validate(c, cpu, false, {}).isEmpty());
    c = ExperimentPanel::defaultConfig();
    c[QStringLiteral("format_a")] = QStringLiteral("E2M1");
    probs = ExperimentPanel::validate(c, cpu, false, {});
    QCOMPARE(probs.size(), 1);
    QVERIFY(probs[0].reason.contains(QStringLiteral("MX block-32")));
    c[QStringLiteral("scaling")] = QStringLiteral("mx_floor");
    QVERIFY(ExperimentPanel::validate(c, cpu, false, {}).isEmpty());

    ExperimentPanel panel;
    panel.setConfig(ExperimentPanel::defaultConfig());
    panel.setBackend(QStringLiteral("cuda"));
    QVERIFY(!panel.isValid());
    QVERIFY(!panel.findChild<QPushButton*>(QStringLiteral("runButton"))->isEnabled());
    QVERIFY(panel.findChild<QLabel*>(QStringLiteral("problems"))->text().contains(QStringLiteral("no CUDA GPU")));
    // The import source without a file is refused in place, not run on generated operands.
    panel.setBackend(QStringLiteral("cpu"));
    QVERIFY(panel.isValid());
    auto* input = panel.findChild<QComboBox*>(QStringLiteral("input"));
    input->setCurrentIndex(input->findData(QStringLiteral("import")));
    QVERIFY(!panel.isValid());
    QVERIFY(panel.findChild<QLabel*>(QStringLiteral("problems"))
                ->text()
                .contains(QStringLiteral("choose a tensor file to import.")));
  }

  // Running an experiment from the panel adds a run to the session (off the GUI thread).
  void runFromPanelAddsRun() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    if (!w.hasExperimentRunner()) QSKIP("this build has no experiment runner (FP8LAB_WITH_HDF5=OFF)");
    w.experimentPanel()->setConfig(smallGemm());
    auto* run = w.experimentPanel()->findChild<QPushButton*>(QStringLiteral("runButton"));
    QVERIFY(run->isEnabled());
    QSignalSpy ended(w.job(), &Job::ended);
    QSignalSpy failed(w.job(), &Job::failed);
    QTest::mouseClick(run, Qt::LeftButton);
    QVERIFY(ended.wait(60000));
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed[0][0].toString()));
    QCOMPARE(w.session()->runCount(), 1);
    const RunRecord& r = w.session()->run(0);
    QCOMPARE(r.kind, QStringLiteral("gemm"));
    QCOMPARE(r.id, QStringLiteral("run-0001"));
    QVERIFY(r.tensor(QStringLiteral("output/D")));
    QCOMPARE(r.tensor(QStringLiteral("output/D"))->rows, 32);
    QCOMPARE(r.tensor(QStringLiteral("output/D"))->cols, 16);
    QVERIFY(w.session()->isModified());

    // Save, reopen: the run comes back with its label.
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("s.h5"));
    w.session()->renameRun(0, QStringLiteral("my run"));
    QString error;
    QVERIFY2(w.session()->save(file, &error), qPrintable(error));
    QVERIFY(!w.session()->isModified());
    MainWindow w2(fp8lab::testsupport::testWindowOptions());
    QVERIFY(w2.openSession(file));
    QCOMPARE(w2.session()->runCount(), 1);
    QCOMPARE(w2.session()->run(0).label, QStringLiteral("my run"));
    // Opened lazily: metadata in the record, the data read from the file on demand.
    const RunRecord& back = w2.session()->run(0);
    QVERIFY(back.tensors.isEmpty());
    QCOMPARE(back.source, file);
    Block d;
    QString err;
    QVERIFY2(RunAccess::forRecord(back, w2.session()->fileName())->readAll(QStringLiteral("output/D"), &d, &err),
             qPrintable(err));
    const auto& want = r.tensor(QStringLiteral("output/D"))->data;
    QCOMPARE(d.v.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) QVERIFY(float(d.v[i]) == want[i]); // float32 stored: exact in double
  }

  // `fp8lab FILE.h5` (main.cpp: no default session, then openSession): the "No session open"
  // banner must not stay up once the file is open. A failed open leaves it.
  void openSessionHidesNoSessionBanner() {
    if (!SessionDocument::fileSupport()) QSKIP("this build cannot read sessions (FP8LAB_WITH_HDF5=OFF)");
    QTemporaryDir dir;
    const QString copy = dir.filePath(QStringLiteral("mine.h5"));
    QString error;
    QVERIFY2(writeGemmSession(copy, &error), qPrintable(error));
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    auto* banner = w.findChild<QLabel*>(QStringLiteral("banner"));
    QVERIFY(banner);
    QVERIFY(banner->text().contains(QStringLiteral("No session open")));
    QVERIFY(!banner->isHidden());
    QVERIFY(!w.openSession(dir.filePath(QStringLiteral("missing.h5"))));
    QVERIFY(!banner->isHidden());
    QVERIFY(w.openSession(copy));
    QVERIFY(banner->isHidden());
    // `fp8lab build/resources/default-session.h5`: the bundled session opened by its path is a
    // session too.
    const QString bundled = MainWindow::defaultSessionPath();
    if (!bundled.isEmpty()) {
      MainWindow w2(fp8lab::testsupport::testWindowOptions());
      auto* b2 = w2.findChild<QLabel*>(QStringLiteral("banner"));
      QVERIFY(!b2->isHidden());
      QVERIFY(w2.openSession(bundled));
      QVERIFY2(b2->isHidden(), qPrintable(b2->text()));
    }
  }

  // A view on a hidden tab does not reload when the session changes; it reloads when
  // shown. (The stall itself is measured by bench_gui, not here.)
  void hiddenViewsReloadWhenShown() {
    if (!SessionDocument::fileSupport()) QSKIP("this build cannot read sessions (FP8LAB_WITH_HDF5=OFF)");
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("gemm.h5"));
    QString error;
    QVERIFY2(writeGemmSession(file, &error), qPrintable(error));
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.showView(QStringLiteral("bits")));
    auto* heat = qobject_cast<ErrorHeatmapView*>(w.view(QStringLiteral("heatmap")));
    QVERIFY(heat);
    QVERIFY(!heat->hasPendingReload());
    QVERIFY(w.openSession(file));
    QVERIFY(heat->hasPendingReload());
    QVERIFY(heat->grids().isEmpty());
    QVERIFY(w.showView(QStringLiteral("heatmap")));
    QVERIFY(!heat->hasPendingReload());
    // The overview is read on the thread pool: one cell per element of the 4×4 map, all 0.25.
    QTRY_VERIFY(!heat->grids().isEmpty());
    QCOMPARE(heat->grids().first().grid_rows, 4);
    QCOMPARE(heat->grids().first().grid_cols, 4);
    QCOMPARE(heat->grids().first().cell(3, 3), 0.25);
    QCOMPARE(heat->grids().first().max, 0.25);
  }

  // A session change reloads each view once: the window hands the session to each view once.
  // A GEMM run with output/D but no reference/D has no total error map, and the heatmap says so
  // with a warning at every reload; adding that run while the heatmap is in front reports it once.
  void sessionChangeReloadsEachViewOnce() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.showView(QStringLiteral("heatmap")));
    fp8lab::Run r;
    r.id = "no-reference";
    r.type = "gemm";
    r.config_json = "{}";
    r.putFloat32("output/D", std::vector<float>(16, 1.0f), 4, 4, "1", "D");
    w.session()->addRun(session_io::fromCoreRun(r));
    int reports = 0;
    for (const IssueRow& i : w.issues()->issues())
      if (i.text.startsWith(QStringLiteral("Error heatmap:")) && i.text.contains(QStringLiteral("reference/D")))
        reports += i.count;
    QCOMPARE(reports, 1);
  }

  // In the window at its default 1400×900, a click on an element of a 512×512 map fills the
  // detail pane without changing the map's geometry (the element under the pointer stays the
  // same), and the pane shows its whole text (it fits or scrolls; nothing is cut off).
  void heatmapClickKeepsTheMap() {
    if (!SessionDocument::fileSupport()) QSKIP("this build cannot read sessions (FP8LAB_WITH_HDF5=OFF)");
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("gemm.h5"));
    QString error;
    QVERIFY2(writeGemmSession(file, &error, 512), qPrintable(error));
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openSession(file));
    QVERIFY(w.showView(QStringLiteral("heatmap")));
    auto* heat = qobject_cast<ErrorHeatmapView*>(w.view(QStringLiteral("heatmap")));
    QTRY_VERIFY(!heat->grids().isEmpty());
    heat->zoomTo(480, 96, 16, 16); // one cell per element
    QCOMPARE(heat->grids().first().block_rows, 1);
    QCoreApplication::processEvents();
    heat->plot()->replot(QCustomPlot::rpImmediateRefresh);
    QCPAxisRect* rect = heat->plot()->axisRect(0);
    const QRect before = rect->rect();
    const QSize plotBefore = heat->plot()->size();
    const QPoint px(int(rect->axis(QCPAxis::atBottom)->coordToPixel(101)),
                    int(rect->axis(QCPAxis::atLeft)->coordToPixel(486)));
    QTest::mouseMove(heat->plot(), px);
    QTRY_VERIFY(heat->hoverText().startsWith(QStringLiteral("(i, j) = (486, 101)")));
    QTest::mouseClick(heat->plot(), Qt::LeftButton, {}, px);
    QVERIFY2(heat->detailText().contains(QStringLiteral("Element (486, 101)")), qPrintable(heat->detailText()));
    for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();
    heat->plot()->replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(heat->plot()->size(), plotBefore);
    QCOMPARE(rect->rect(), before);
    QTest::mouseMove(heat->plot(), px + QPoint(1, 0));
    QTRY_VERIFY2(heat->hoverText().startsWith(QStringLiteral("(i, j) = (486, 101)")), qPrintable(heat->hoverText()));
    // FP8LAB_TEST_GRAB=FILE.png keeps a picture of the window after the click, for review.
    if (!qEnvironmentVariableIsEmpty("FP8LAB_TEST_GRAB")) w.grab().save(qEnvironmentVariable("FP8LAB_TEST_GRAB"));
    // The pane: every line of the detail is inside the label, and the label is inside the
    // visible area or the area scrolls to it.
    auto* detail = heat->findChild<QLabel*>(QStringLiteral("detail"));
    QVERIFY(detail);
    QVERIFY2(detail->width() >= detail->minimumSizeHint().width(),
             qPrintable(QStringLiteral("%1 < %2").arg(detail->width()).arg(detail->minimumSizeHint().width())));
    auto* pane = heat->findChild<QScrollArea*>(QStringLiteral("detailPane"));
    QVERIFY(pane);
    QVERIFY(pane->widget()->width() <= pane->viewport()->width()); // no text off to the right
  }

  // The heatmap's "Show in Bit layout" shows the selected element's nearest encoding there, and
  // the code grid follows. Element (1, 2) of the 4×4 run: D = reference 1·4 + 2 + 1 = 7, + 0.25 =
  // 7.25; D is fp32, so the nearest E4M3FN code (format_a) is shown: 7.25 lies halfway between
  // 7 = 1.75·2² (0 1001 110 = 0x4E) and 7.5 (0x4F), and ties go to the even mantissa: 0x4E.
  void heatmapShowsItsCodeInTheBitLayout() {
    if (!SessionDocument::fileSupport()) QSKIP("this build cannot read sessions (FP8LAB_WITH_HDF5=OFF)");
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("gemm.h5"));
    QString error;
    QVERIFY2(writeGemmSession(file, &error), qPrintable(error));
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openSession(file));
    QVERIFY(w.showView(QStringLiteral("heatmap")));
    auto* heat = qobject_cast<ErrorHeatmapView*>(w.view(QStringLiteral("heatmap")));
    QTRY_VERIFY(!heat->grids().isEmpty());
    heat->selectElement(1, 2);
    QCOMPARE(heat->detailFormat(), QStringLiteral("E4M3FN"));
    auto* button = heat->findChild<QPushButton*>(QStringLiteral("showInBitLayout"));
    QVERIFY(button);
    QTRY_VERIFY(button->isVisible());
    QTest::mouseClick(button, Qt::LeftButton);
    auto* bits = qobject_cast<BitLayoutView*>(w.view(QStringLiteral("bits")));
    auto* codes = qobject_cast<CodeGridView*>(w.view(QStringLiteral("codes")));
    QCOMPARE(w.currentView(), static_cast<View*>(bits));
    QCOMPARE(QString::fromStdString(bits->format().name()), QStringLiteral("E4M3FN"));
    QCOMPARE(bits->code(), 0x4Eu);
    QCOMPARE(codes->grid()->selected(), 0x4E);
  }

  // The bundled default session belongs to the build or the installation: Save on it goes to
  // Save as, which suggests a file elsewhere and refuses the bundled file itself; the file's bytes
  // never change. FP8LAB_DEFAULT_SESSION makes a temporary copy the bundled session here.
  void bundledSessionIsReadOnly() {
    if (!SessionDocument::fileSupport()) QSKIP("this build cannot write sessions (FP8LAB_WITH_HDF5=OFF)");
    QTemporaryDir dir;
    const QString bundled = dir.filePath(QStringLiteral("default-session.h5"));
    {
      fp8lab::Run r;
      r.id = "bundled-1";
      r.type = "gemm";
      r.config_json = "{}";
      r.putFloat32("output/D", {1, 2, 3, 4}, 2, 2, "1", "D");
      SessionDocument s;
      s.addRun(session_io::fromCoreRun(r));
      QString error;
      QVERIFY2(s.save(bundled, &error), qPrintable(error));
    }
    auto bytes = [](const QString& f) {
      QFile file(f);
      return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
    };
    const QByteArray before = bytes(bundled);
    QVERIFY(!before.isEmpty());
    const QByteArray oldEnv = qgetenv("FP8LAB_DEFAULT_SESSION");
    qputenv("FP8LAB_DEFAULT_SESSION", bundled.toLocal8Bit());
    auto restore = qScopeGuard([&] {
      if (oldEnv.isEmpty())
        qunsetenv("FP8LAB_DEFAULT_SESSION");
      else
        qputenv("FP8LAB_DEFAULT_SESSION", oldEnv);
    });
    QVERIFY(MainWindow::isBundledSession(bundled));
    MainWindow::Options o = fp8lab::testsupport::testWindowOptions();
    o.open_default_session = true;
    MainWindow w(o);
    QCOMPARE(w.session()->fileName(), QFileInfo(bundled).canonicalFilePath());
    QVERIFY2(w.windowTitle().contains(QStringLiteral("(read-only)")), qPrintable(w.windowTitle()));
    RunRecord extra;
    extra.kind = QStringLiteral("gemm");
    extra.label = QStringLiteral("mine");
    w.session()->addRun(extra);
    QStringList suggested;
    const QString mine = dir.filePath(QStringLiteral("mine.h5"));
    w.setSaveFileChooser([&](const QString& s) {
      suggested << s;
      return mine;
    });
    auto* save = w.findChild<QAction*>(QStringLiteral("actionSave"));
    QVERIFY(save);
    save->trigger();               // File → Save
    QCOMPARE(suggested.size(), 1); // went to Save as
    QVERIFY2(!MainWindow::isBundledSession(suggested[0]), qPrintable(suggested[0]));
    QCOMPARE(bytes(bundled), before);
    QCOMPARE(w.session()->fileName(), mine);
    QVERIFY(!w.session()->isModified());
    QVERIFY(!w.windowTitle().contains(QStringLiteral("(read-only)")));
    // The banner about the bundled session went with it.
    QVERIFY(w.findChild<QLabel*>(QStringLiteral("banner"))->isHidden());
    // Save as onto the bundled file is refused with a reason.
    w.session()->renameRun(0, QStringLiteral("renamed"));
    w.setSaveFileChooser([&](const QString&) { return bundled; });
    QVERIFY(!w.saveAs());
    QCOMPARE(bytes(bundled), before);
    QVERIFY(w.issues()->rowCount() >= 1);
    QVERIFY2(w.issues()->issues().last().text.contains(QStringLiteral("read-only")),
             qPrintable(w.issues()->issues().last().text));
    // A writable file of the user's is saved in place, without a dialog.
    w.setSaveFileChooser([&](const QString& s) {
      suggested << s;
      return QString();
    });
    QVERIFY(w.save());
    QCOMPARE(suggested.size(), 1);
    QVERIFY(!w.session()->isModified());
  }

  // File → Export plot asks for the size: the dialog starts at the given size, and
  // the chosen size is what the PNG gets (logical pixels, device pixel ratio 1).
  void exportSizeDialog() {
    ExportSizeDialog d(QSize(640, 480));
    QCOMPARE(d.chosenSize(), QSize(640, 480));
    QCOMPARE(d.widthBox()->objectName(), QStringLiteral("width"));
    d.widthBox()->setValue(300);
    d.heightBox()->setValue(5); // below the 16 px minimum: clamped
    QCOMPARE(d.chosenSize(), QSize(300, 16));
    d.heightBox()->setValue(200);
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    QVERIFY(w.showView(QStringLiteral("bits")));
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("bits.png"));
    QString error;
    QVERIFY2(exportViewSized(w.view(QStringLiteral("bits")), f, d.chosenSize(), &error), qPrintable(error));
    QCOMPARE(QImage(f).size(), QSize(300, 200));
  }

  // Cancel stops a run; nothing is added.
  void cancelAddsNothing() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    if (!w.hasExperimentRunner()) QSKIP("no experiment runner");
    QJsonObject c = smallGemm();
    c[QStringLiteral("m")] = 2048;
    c[QStringLiteral("n")] = 2048;
    c[QStringLiteral("k")] = 2048;
    QSignalSpy cancelled(w.job(), &Job::cancelled);
    QSignalSpy ended(w.job(), &Job::ended);
    QVERIFY(w.runExperiment(c));
    QVERIFY(w.job()->isRunning());
    w.job()->cancel();
    QSignalSpy failed(w.job(), &Job::failed);
    QVERIFY(ended.wait(60000));
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed[0][0].toString()));
    QCOMPARE(cancelled.count(), 1);
    QCOMPARE(w.session()->runCount(), 0);
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"

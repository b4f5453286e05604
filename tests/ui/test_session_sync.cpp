// One current run, owned by the session and followed by the tree and the views both ways; views
// that open on a run they can show; the window's save over a file another program changed keeps
// both programs' runs; long empty-state texts wrap inside their plot at 1400×900.
#include "window_options.h"
#include "views/error_heatmap_view.h"
#include "session/issues.h"
#include "views/layer_step_view.h"
#include "main_window.h"
#include "plot/plot_util.h"
#include "plot/qcp.h"
#include "session/session_document.h"
#include "plot/wrapped_title.h"

#include "session/session.h"

#include <QComboBox>
#include <QLabel>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QUndoStack>
#include <QtTest>

using namespace fp8lab::ui;
using fp8lab::Run;

namespace {

/// A GEMM run with a 4×4 error map (what the heatmap lists and draws).
Run gemmRun(const std::string& id) {
  Run r;
  r.id = id;
  r.type = "gemm";
  r.config_json = R"({"type":"gemm"})";
  std::vector<double> ref(16);
  std::vector<float> d(16), abs(16, 0.25f);
  for (size_t k = 0; k < 16; ++k) ref[k] = double(k + 1), d[k] = float(k + 1) + 0.25f;
  r.datasets["reference/D"] = fp8lab::Dataset::float64({4, 4}, ref, "1", "ideal");
  r.putFloat32("output/D", d, 4, 4, "1", "D");
  r.putFloat32("error/abs", abs, 4, 4, "1", "|D - ref|");
  r.attrs["output_type"] = std::string("fp32");
  r.attrs["format_a"] = std::string("E4M3FN");
  r.attrs["format_b"] = std::string("E4M3FN");
  return r;
}

/// An FP32 training run: the heatmap does not list it.
Run fp32Run(const std::string& id) {
  Run r;
  r.id = id;
  r.type = "training";
  r.config_json = R"({"precision": "fp32"})";
  r.putFloat32("history/fc1/input/amax", {1.0f, 2.0f}, 2, -1, "1", "amax");
  return r;
}

/// The id of the run the tree highlights ("" for none).
QString treeCurrent(MainWindow& w) {
  auto* tree = w.findChild<QTreeWidget*>(QStringLiteral("sessionTree"));
  QTreeWidgetItem* it = tree ? tree->currentItem() : nullptr;
  return it && it->parent() ? it->data(0, Qt::UserRole).toString() : QString();
}

QComboBox* heatmapBox(MainWindow& w) {
  return w.view(QStringLiteral("heatmap"))->findChild<QComboBox*>(QStringLiteral("run"));
}

} // namespace

class TestSessionSync : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // Add, remove, undo and redo runs; after every step the session's current run, the tree's
  // highlighted run and the heatmap's run (which lists GEMM runs only) agree.
  void treeSessionAndViewsAgreeThroughUndo() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.resize(1400, 900);
    SessionDocument* s = w.session();
    w.view(QStringLiteral("heatmap"))->runPendingReloads();
    auto check = [&](const QString& want, const char* step) {
      w.view(QStringLiteral("heatmap"))->runPendingReloads();
      QVERIFY2(
          s->currentRunId() == want,
          qPrintable(
              QStringLiteral("%1: session has '%2', expected '%3'").arg(QLatin1String(step), s->currentRunId(), want)));
      QVERIFY2(treeCurrent(w) == want,
               qPrintable(
                   QStringLiteral("%1: tree shows '%2', session '%3'").arg(QLatin1String(step), treeCurrent(w), want)));
      if (s->indexOf(want) >= 0 && s->run(s->indexOf(want)).kind == QStringLiteral("gemm"))
        QVERIFY2(heatmapBox(w)->currentData().toString() == want,
                 qPrintable(QStringLiteral("%1: heatmap shows '%2', session '%3'")
                                .arg(QLatin1String(step), heatmapBox(w)->currentData().toString(), want)));
    };
    s->addRun(session_io::fromCoreRun(gemmRun("g1")));
    check(QStringLiteral("g1"), "add g1");
    s->addRun(session_io::fromCoreRun(gemmRun("g2")));
    check(QStringLiteral("g2"), "add g2");
    s->addRun(session_io::fromCoreRun(gemmRun("g3")));
    check(QStringLiteral("g3"), "add g3");
    // Undo of an add returns to the run current before it, not to an unrelated one.
    s->setCurrentRunId(QStringLiteral("g1"));
    check(QStringLiteral("g1"), "select g1");
    s->undoStack()->undo(); // removes g3; g1 stays current
    check(QStringLiteral("g1"), "undo add g3");
    s->undoStack()->redo(); // g3 back, current again
    check(QStringLiteral("g3"), "redo add g3");
    // Removing a run above the current one leaves the current run where it is (by id).
    s->setCurrentRunId(QStringLiteral("g3"));
    s->removeRun(s->indexOf(QStringLiteral("g1")));
    check(QStringLiteral("g3"), "remove g1 above g3");
    QCOMPARE(s->currentRun(), 1);
    s->undoStack()->undo(); // g1 back at index 0; g3 stays current
    check(QStringLiteral("g3"), "undo remove g1");
    QCOMPARE(s->currentRun(), 2);
    // Removing the current run makes its neighbour current, before anyone hears of it.
    s->removeRun(s->indexOf(QStringLiteral("g2")));
    check(QStringLiteral("g3"), "remove g2 (not current)");
    s->removeRun(s->currentRun());
    check(QStringLiteral("g1"), "remove current g3");
    s->undoStack()->undo(); // g3 was current when it was removed: it is again
    check(QStringLiteral("g3"), "undo remove current g3");
    QCOMPARE(s->runCount(), 2);
    // The tree and a view's run box lead too: the session follows them.
    auto* tree = w.findChild<QTreeWidget*>(QStringLiteral("sessionTree"));
    QTreeWidgetItem* root = tree->topLevelItem(0);
    for (int i = 0; i < root->childCount(); ++i)
      if (root->child(i)->data(0, Qt::UserRole).toString() == QStringLiteral("g1"))
        tree->setCurrentItem(root->child(i));
    check(QStringLiteral("g1"), "tree selects g1");
    QComboBox* box = heatmapBox(w);
    box->setCurrentIndex(box->findData(QStringLiteral("g3")));
    check(QStringLiteral("g3"), "heatmap box selects g3");
  }

  // A session whose first run is an FP32 baseline: the heatmap opens on the first GEMM run, not
  // on "This session has no GEMM run". A run the user chooses that the heatmap cannot show is
  // said; no GEMM run at all is said as such.
  void viewsOpenOnARunTheyCanShow() {
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("s.h5"));
    QVERIFY(fp8lab::appendRuns(f.toStdString(), {fp32Run("base"), gemmRun("gemm-fc1"), gemmRun("gemm-fc2")}).ok());
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.resize(1400, 900);
    QVERIFY(w.openSession(f));
    QCOMPARE(w.session()->currentRunId(), QStringLiteral("base"));
    QVERIFY(!w.session()->currentRunChosen());
    auto* hv = static_cast<ErrorHeatmapView*>(w.view(QStringLiteral("heatmap")));
    hv->runPendingReloads();
    QCOMPARE(heatmapBox(w)->currentData().toString(), QStringLiteral("gemm-fc1"));
    // The user picks the baseline: the heatmap shows no run (it cannot show that one) rather
    // than another run as if it were the baseline.
    w.session()->setCurrentRunId(QStringLiteral("gemm-fc2"));
    hv->runPendingReloads();
    QCOMPARE(heatmapBox(w)->currentData().toString(), QStringLiteral("gemm-fc2"));
    w.session()->setCurrentRunId(QStringLiteral("base"));
    hv->runPendingReloads();
    QCOMPARE(heatmapBox(w)->currentIndex(), -1);
    // A session with no GEMM run at all says so.
    const QString g = dir.filePath(QStringLiteral("t.h5"));
    QVERIFY(fp8lab::appendRuns(g.toStdString(), {fp32Run("only")}).ok());
    QVERIFY(w.openSession(g));
    hv->runPendingReloads();
    QCOMPARE(heatmapBox(w)->count(), 0);
    auto* te = qobject_cast<QCPTextElement*>(hv->findChild<QCustomPlot*>()->plotLayout()->element(0, 0));
    QVERIFY(te);
    QVERIFY2(te->text().startsWith(QStringLiteral("This session has no GEMM run")), qPrintable(te->text()));
  }

  // The window has s.h5 open and adds a run; another program appends "cli-second" to the file;
  // Ctrl+S keeps both, says so, and the session shows both runs. The banner told of the change
  // before the save.
  void saveAfterOutsideAppendKeepsBothRuns() {
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("shared.h5"));
    QVERIFY(fp8lab::appendRuns(f.toStdString(), {gemmRun("first")}).ok());
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.resize(1400, 900);
    w.show();
    QVERIFY(w.openSession(f));
    w.session()->addRun(session_io::fromCoreRun(gemmRun("gui-run")));
    QVERIFY(fp8lab::appendRuns(f.toStdString(), {gemmRun("cli-second")}).ok()); // the other program
    QTRY_VERIFY_WITH_TIMEOUT(w.bannerShown() && w.bannerText().contains(QStringLiteral("changed on disk")), 5000);
    QVERIFY2(w.bannerText().contains(QStringLiteral("cli-second")), qPrintable(w.bannerText()));
    QVERIFY(w.bannerText().contains(QStringLiteral("href='reload'")));
    QVERIFY(w.save());
    auto r = fp8lab::SessionReader::open(f.toStdString());
    QVERIFY(r.ok());
    std::vector<std::string> ids;
    for (const auto& ri : r.value->info().runs) ids.push_back(ri.id);
    QCOMPARE(ids, (std::vector<std::string>{"cli-second", "first", "gui-run"}));
    QVERIFY(w.session()->indexOf(QStringLiteral("cli-second")) >= 0);
    QVERIFY(!w.session()->isModified());
    bool said = false;
    for (const auto& i : w.issues()->issues()) said = said || i.text.contains(QStringLiteral("Kept run cli-second"));
    QVERIFY(said);
    // Another change, then Reload: the session is what the file holds.
    QVERIFY(fp8lab::appendRuns(f.toStdString(), {gemmRun("third")}).ok());
    QTRY_VERIFY_WITH_TIMEOUT(w.bannerText().contains(QStringLiteral("third")), 5000);
    QVERIFY(w.reloadSession());
    QCOMPARE(w.session()->runCount(), 4);
    // A plain `touch` of the file is not a change of its contents.
    QVERIFY(w.session()->indexOf(QStringLiteral("third")) >= 0);
    QVERIFY(!w.session()->changedOnDisk());
    QFile file(f);
    QVERIFY(file.open(QIODevice::ReadWrite));
    QVERIFY(file.setFileTime(QDateTime::currentDateTimeUtc().addSecs(5), QFileDevice::FileModificationTime));
    file.close();
    QVERIFY(!w.session()->changedOnDisk());
  }

  // A run removed here stays removed when the save merges; a clashing id from the other program
  // is stored under a new one.
  void mergeKeepsDeletionsAndRenamesClashes() {
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("s.h5"));
    QVERIFY(fp8lab::appendRuns(f.toStdString(), {gemmRun("a"), gemmRun("b")}).ok());
    SessionDocument doc;
    QString error;
    QVERIFY(doc.load(f, &error));
    doc.removeRun(doc.indexOf(QStringLiteral("b")));
    doc.addRun(session_io::fromCoreRun(gemmRun("c")));
    QVERIFY(fp8lab::appendRuns(f.toStdString(), {gemmRun("c")}).ok()); // the other program's c
    QVERIFY2(doc.save(f, &error), qPrintable(error));
    QStringList ids;
    for (const auto& r : doc.runs()) ids << r.id;
    QCOMPARE(ids, (QStringList{QStringLiteral("a"), QStringLiteral("c"), QStringLiteral("c-2")}));
    auto r = fp8lab::SessionReader::open(f.toStdString());
    QCOMPARE(r.value->info().runs.size(), size_t(3));
    QVERIFY(!r.value->info().find("b"));
  }

  // A long empty-state message wraps inside the plot: the text element is no wider than the
  // plot, and its wrapped text fits its rectangle (at 1400×900 the Layer × step texts were cut
  // at both edges).
  void emptyStateTextWraps() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.showView(QStringLiteral("layers")));
    auto* v = static_cast<LayerStepView*>(w.view(QStringLiteral("layers")));
    v->runPendingReloads();
    auto* plot = v->findChild<QCustomPlot*>();
    QVERIFY(plot);
    const QString text = QStringLiteral(
        "Run base is an FP32 run: it quantizes nothing, so it has no per-block statistics as trained and no "
        "what-if recipes were recorded for it. Choose a run in the Run box above, or run an FP8 training run "
        "with \"diagnostics\": {\"what_if\": ...} to compare recipes on its tensors.");
    plotEmptyState(plot, text);
    plot->resize(600, 400);
    plot->replot();
    auto* te = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0));
    QVERIFY(te);
    QVERIFY2(te->outerRect().width() <= plot->width(),
             qPrintable(QStringLiteral("text %1 px in a %2 px plot").arg(te->outerRect().width()).arg(plot->width())));
    auto* wt = dynamic_cast<WrappedTitle*>(te);
    QVERIFY(wt);
    const QStringList lines = wt->drawnLines();
    QVERIFY2(lines.size() >= 2, "the message was not wrapped");
    const QFontMetrics fm(te->font());
    for (const QString& l : lines)
      QVERIFY2(fm.horizontalAdvance(l) <= te->rect().width(), qPrintable(QStringLiteral("line '%1' is %2 px in %3 px")
                                                                             .arg(l)
                                                                             .arg(fm.horizontalAdvance(l))
                                                                             .arg(te->rect().width())));
    QVERIFY(lines.size() * fm.lineSpacing() <= te->rect().height());
    QCOMPARE(lines.join(QLatin1Char(' ')).simplified(), text.simplified()); // nothing cut
  }
};

QTEST_MAIN(TestSessionSync)
#include "test_session_sync.moc"

// Live GEMM mode (live_experiment.h, live_wiring.h): the debounce (a burst of edits starts one run,
// with the last configuration), the cancel (a newer configuration stops the run in flight, whose
// result is never shown), the work limit, Keep; and in a main window: an edit of M updates the
// error heatmap without Run, and the session gets the run only when it is kept.
#include <QtTest>

#include "views/error_heatmap_view.h"
#include "forms/experiment_panel.h"
#include "forms/live_experiment.h"
#include "main_window.h"
#include "session/session_document.h"

#include <QSpinBox>

#include <atomic>
#include <mutex>
#include <thread>

using namespace fp8lab;
using namespace fp8lab::ui;

namespace {

/// A runner that records what it ran and can be held until released or cancelled.
struct FakeRunner {
  std::mutex mu;
  QList<int> started_m;          ///< M of every run started
  std::atomic<int> cancelled{0}; ///< runs that saw their progress return false
  std::atomic<bool> hold{false}; ///< while true, a run waits (checking its progress)

  ExperimentRunner runner() {
    return [this](const GemmRunRequest& request, const ProgressFn& progress) {
      const int m = request.config.value(QStringLiteral("m")).toInt();
      {
        std::lock_guard<std::mutex> l(mu);
        started_m << m;
      }
      while (hold.load()) {
        if (!progress(0.5, "held")) {
          ++cancelled;
          throw Cancelled();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (!progress(1.0, "done")) {
        ++cancelled;
        throw Cancelled();
      }
      JobResult r;
      r.run.id = QStringLiteral("run-m%1").arg(m);
      r.run.kind = QStringLiteral("gemm");
      return r;
    };
  }
  QList<int> started() {
    std::lock_guard<std::mutex> l(mu);
    return started_m;
  }
};

GemmRunRequest cfg(int m, int n = 64, int k = 64) {
  return {QJsonObject{{QStringLiteral("m"), m}, {QStringLiteral("n"), n}, {QStringLiteral("k"), k}},
          QStringLiteral("cpu")};
}

} // namespace

class TestLiveExperiment : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // Five edits 5 ms apart with a 50 ms debounce: the first starts at once (leading edge), the other
  // four collapse into one run with the last configuration, which cancels the first; only the last
  // result is shown.
  void debounceCollapsesABurst() {
    FakeRunner f;
    f.hold = true; // the first run is still in flight when the burst goes on
    LiveExperiment live(f.runner());
    live.setDebounceMs(50);
    QSignalSpy updated(&live, &LiveExperiment::updated);
    for (int m : {10, 11, 12, 13, 14}) {
      live.request(cfg(m));
      QTest::qWait(5);
    }
    QCOMPARE(f.started(), QList<int>{10}); // the leading edge
    QVERIFY(live.isPending());
    QTRY_COMPARE(f.started().size(), 2); // the burst's last edit, once the debounce time passed
    QTRY_COMPARE(f.cancelled.load(), 1); // it cancelled the first
    f.hold = false;
    QTRY_COMPARE(updated.count(), 1);
    live.waitForIdle();
    QCOMPARE(f.started(), (QList<int>{10, 14}));
    QCOMPARE(live.last()->run.id, QStringLiteral("run-m14"));
    QCOMPARE(updated.count(), 1);
    // After a quiet moment a single edit starts at once, without the debounce delay.
    QTest::qWait(60);
    live.request(cfg(15));
    QCOMPARE(live.started(), 3); // started in request() itself (the runner begins on the pool)
    QVERIFY(!live.isPending());
    QTRY_COMPARE(f.started().size(), 3);
    live.waitForIdle();
  }

  // A newer configuration cancels the run in flight: its progress returns false, it throws
  // Cancelled, and only the newer result is shown.
  void newerConfigurationCancelsTheRunInFlight() {
    FakeRunner f;
    f.hold = true;
    LiveExperiment live(f.runner());
    live.setDebounceMs(0);
    QSignalSpy updated(&live, &LiveExperiment::updated);
    live.request(cfg(20));
    QTRY_COMPARE(f.started().size(), 1);
    QVERIFY(live.isRunning());
    live.request(cfg(21)); // the first run is still held: this cancels it
    QTRY_COMPARE(f.started().size(), 2);
    QTRY_COMPARE(f.cancelled.load(), 1); // the first run saw the cancel
    f.hold = false;                      // the second completes
    QTRY_COMPARE(updated.count(), 1);
    live.waitForIdle();
    QCOMPARE(live.last()->run.id, QStringLiteral("run-m21"));
    QCOMPARE(live.delivered(), 1);
  }

  // Over the work limit: no run, a reason; live mode off: nothing at all.
  void workLimitAndOff() {
    FakeRunner f;
    LiveExperiment live(f.runner());
    live.setDebounceMs(0);
    live.setWorkLimit(64.0 * 64 * 64);
    QSignalSpy skipped(&live, &LiveExperiment::skipped);
    live.request(cfg(65));
    QTRY_COMPARE(skipped.count(), 1);
    QVERIFY(skipped.first().first().toString().contains(QStringLiteral("press Run")));
    QVERIFY(f.started().isEmpty());
    QCOMPARE(LiveExperiment::workOf(cfg(128, 256, 1024).config), 128.0 * 256 * 1024);
    QJsonObject imported = cfg(8).config;
    imported[QStringLiteral("a")] = QJsonObject{{QStringLiteral("tensor"), QStringLiteral("a.npy")}};
    QVERIFY(live.whyNotLive(imported).contains(QStringLiteral("imported")));
    live.setEnabled(false);
    live.request(cfg(8));
    QTest::qWait(30);
    QVERIFY(f.started().isEmpty());
    QVERIFY(!live.isPending());
  }

  void keepTakesTheResultOnce() {
    FakeRunner f;
    LiveExperiment live(f.runner());
    live.setDebounceMs(0);
    QVERIFY(!live.keepLast());
    QSignalSpy updated(&live, &LiveExperiment::updated);
    live.request(cfg(30));
    QTRY_COMPARE(updated.count(), 1);
    const auto kept = live.keepLast();
    QVERIFY(kept);
    QCOMPARE(kept->run.id, QStringLiteral("run-m30"));
    QVERIFY(!live.keepLast());
  }

  // The window: live is on by default; editing M updates the error heatmap with a run that is not
  // in the session; Keep adds it.
  void windowFollowsTheEditsAndKeeps() {
    MainWindow::Options o;
    o.restore_settings = false;
    o.open_default_session = false;
    o.probe_backend = false;
    MainWindow w(o);
    if (!w.hasExperimentRunner()) QFAIL("this build has no experiment runner");
    w.showView(QStringLiteral("heatmap"));
    w.show();
    ExperimentPanel* panel = w.experimentPanel();
    QVERIFY(panel->isLive());
    LiveExperiment* live = w.liveExperiment();
    QVERIFY(live);
    auto* heat = qobject_cast<ErrorHeatmapView*>(w.view(QStringLiteral("heatmap")));
    panel->findChild<QSpinBox*>(QStringLiteral("n"))->setValue(32);
    panel->findChild<QSpinBox*>(QStringLiteral("k"))->setValue(64);
    panel->findChild<QSpinBox*>(QStringLiteral("m"))->setValue(16);
    QTRY_VERIFY_WITH_TIMEOUT(live->delivered() >= 1 && !live->isPending() && !live->isRunning(), 20000);
    QCOMPARE(w.session()->runCount(), 0); // not in the session
    QCOMPARE(heat->grids().size(), 1);
    QCOMPARE(heat->grids().first().rows, int64_t(16));
    QVERIFY(panel->liveStatus().contains(QStringLiteral("Keep")));
    // M 16 → 24 with live on: the heatmap follows without Run.
    const int before = live->delivered();
    panel->findChild<QSpinBox*>(QStringLiteral("m"))->setValue(24);
    QTRY_VERIFY_WITH_TIMEOUT(live->delivered() > before && !live->isPending() && !live->isRunning(), 20000);
    QCOMPARE(heat->grids().first().rows, int64_t(24));
    QCOMPARE(w.session()->runCount(), 0);
    // Keep (the panel's button, Ctrl+K's action): the run joins the session.
    Q_EMIT panel->keepRequested();
    QCOMPARE(w.session()->runCount(), 1);
    QVERIFY(panel->liveStatus().startsWith(QStringLiteral("Kept")));
    // Live off: edits no longer run.
    panel->setLive(false);
    const int started = live->started();
    panel->findChild<QSpinBox*>(QStringLiteral("m"))->setValue(20);
    QTest::qWait(200);
    QCOMPARE(live->started(), started);
  }
};

QTEST_MAIN(TestLiveExperiment)
#include "test_live_experiment.moc"

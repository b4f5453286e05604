// core/experiment/experiment_batch.h: when the GEMM runs of a multi-experiment config are saved.
// The rules are those `fp8lab-cli run` documents (save before a training experiment, after 30 s,
// past 256 MiB, when an experiment fails, on an interrupt, at the end; one save per batch); each
// expected save sequence below is worked out by hand from them in the comments.
#include <QtTest>

#include "experiment/experiment_batch.h"

#include <chrono>
#include <string>
#include <vector>

using namespace fp8lab;
using namespace std::chrono_literals;

namespace {

/// A run "id" with one uint8 dataset of `bytes` bytes.
Run runOf(const std::string& id, size_t bytes = 16) {
  Run r;
  r.id = id;
  Dataset d;
  d.dtype = DType::UInt8;
  d.shape = {static_cast<int64_t>(bytes)};
  d.u8.assign(bytes, 1);
  r.datasets["output/D"] = std::move(d);
  return r;
}

/// Records every save (the ids of its runs), every report (stored id) and every loss note.
struct Recorder {
  std::vector<std::vector<std::string>> saves;
  std::vector<std::string> reports, notes;
  bool save_ok = true;

  RunBatch batch(bool immediate = false) {
    return RunBatch(
        [this](const std::vector<Run>& runs, std::vector<std::string>* ids) {
          std::vector<std::string> s;
          for (const auto& r : runs) s.push_back(r.id);
          saves.push_back(s);
          // the session had a run "a" already: a second "a" is stored as "a-2"
          for (const auto& r : runs) ids->push_back(r.id == "a" ? "a-2" : r.id);
          return save_ok;
        },
        [this](const std::string& n) { notes.push_back(n); }, "out.h5", immediate);
  }
  PendingRun pending(const std::string& id, size_t bytes = 16) {
    return {runOf(id, bytes), [this](const Run&, const std::string& stored) { reports.push_back(stored); }};
  }
};

using Saves = std::vector<std::vector<std::string>>;
using Strings = std::vector<std::string>;

} // namespace

class TestExperimentBatch : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void trainingExperimentSavesTheBatchFirst() {
    // gemm g0, gemm g1, training (saves itself), gemm g3: g0 and g1 wait; before the training
    // experiment they are saved with one save; g3 is saved at the end.
    Recorder rec;
    RunBatch batch = rec.batch();
    Strings order; // what happened, in order
    ExperimentListHooks h;
    h.saves_itself = [](size_t i) { return i == 2; };
    h.run = [&](size_t i, RunBatch& b) {
      order.push_back("run " + std::to_string(i) + " after " + std::to_string(rec.saves.size()) + " saves");
      if (i != 2) b.add(rec.pending("g" + std::to_string(i)));
      return 0;
    };
    std::vector<bool> pending;
    h.experiment_done = [&](size_t, size_t n, bool p) {
      QCOMPARE(n, size_t(4));
      pending.push_back(p);
    };
    h.now = [] { return std::chrono::steady_clock::time_point{}; };
    const ExperimentListOutcome r = runExperimentList(4, batch, h);
    QCOMPARE(r.status, ExperimentListOutcome::Status::Completed);
    QCOMPARE(rec.saves, (Saves{{"g0", "g1"}, {"g3"}}));
    QCOMPARE(order,
             (Strings{"run 0 after 0 saves", "run 1 after 0 saves", "run 2 after 1 saves", "run 3 after 1 saves"}));
    QCOMPARE(rec.reports, (Strings{"g0", "g1", "g3"}));
    // the training experiment leaves nothing waiting; each GEMM experiment leaves its run
    QCOMPARE(pending, (std::vector<bool>{true, true, false, true}));
  }

  void batchPast256MiBIsSaved() {
    // 128 MiB + 128 MiB = 256 MiB is not more than 256 MiB: no save; + 1 byte is: the three runs
    // are saved together after the third experiment; the fourth run at the end.
    Recorder rec;
    RunBatch batch = rec.batch();
    const size_t sizes[] = {size_t(128) << 20, size_t(128) << 20, 1, 16};
    std::vector<size_t> saves_after; // saves done when experiment i finished
    ExperimentListHooks h;
    h.saves_itself = [](size_t) { return false; };
    h.run = [&](size_t i, RunBatch& b) {
      saves_after.push_back(rec.saves.size());
      b.add(rec.pending("g" + std::to_string(i), sizes[i]));
      return 0;
    };
    h.now = [] { return std::chrono::steady_clock::time_point{}; };
    QCOMPARE(runExperimentList(4, batch, h).status, ExperimentListOutcome::Status::Completed);
    QCOMPARE(rec.saves, (Saves{{"g0", "g1", "g2"}, {"g3"}}));
    QCOMPARE(saves_after, (std::vector<size_t>{0, 0, 0, 1}));
  }

  void batchOlderThan30sIsSaved() {
    // The clock says 10 s after g0, 31 s after g1: the batch started at 0 s is more than 30 s
    // old after g1, so g0 and g1 are saved then. With a training experiment in between (batch
    // empty after it, at 40 s), g3 ending at 65 s is only 25 s after that: saved at the end.
    Recorder rec;
    RunBatch batch = rec.batch();
    const int ends[] = {10, 31, 40, 65}; // seconds at which experiment i ends
    int t = 0;                           // the clock: 0 s at the start
    ExperimentListHooks h;
    h.saves_itself = [](size_t i) { return i == 2; };
    h.run = [&](size_t i, RunBatch& b) {
      if (i != 2) b.add(rec.pending("g" + std::to_string(i)));
      t = ends[i];
      return 0;
    };
    h.now = [&] { return std::chrono::steady_clock::time_point{} + std::chrono::seconds(t); };
    QCOMPARE(runExperimentList(4, batch, h).status, ExperimentListOutcome::Status::Completed);
    QCOMPARE(rec.saves, (Saves{{"g0", "g1"}, {"g3"}}));
  }

  void ageRuleRestartsAfterItsOwnSave() {
    // Ten GEMM experiments ending every 8 s (8, 16, ..., 80 s). The batch, empty at 0 s, is more
    // than 30 s old after g3 (32 s): g0..g3 saved, the clock restarts at 32 s. g4..g6 end 8, 16,
    // 24 s after that; g7 (64 s) is 32 s after: g4..g7 saved, the clock restarts at 64 s; g8 and
    // g9 (8 and 16 s after it) are saved at the end.
    // Were the clock not restarted, every experiment after g3 would save on its own.
    Recorder rec;
    RunBatch batch = rec.batch();
    int t = 0;
    ExperimentListHooks h;
    h.saves_itself = [](size_t) { return false; };
    h.run = [&](size_t i, RunBatch& b) {
      b.add(rec.pending("g" + std::to_string(i)));
      t = 8 * int(i + 1);
      return 0;
    };
    h.now = [&] { return std::chrono::steady_clock::time_point{} + std::chrono::seconds(t); };
    QCOMPARE(runExperimentList(10, batch, h).status, ExperimentListOutcome::Status::Completed);
    QCOMPARE(rec.saves, (Saves{{"g0", "g1", "g2", "g3"}, {"g4", "g5", "g6", "g7"}, {"g8", "g9"}}));
  }

  void failedExperimentSavesTheFinishedRunsFirst() {
    // g0 and g1 finish, experiment 2 fails with status 3: the two runs are saved (and reported,
    // "a" stored as "a-2"), then the failure is the outcome; experiment 3 never runs.
    Recorder rec;
    RunBatch batch = rec.batch();
    size_t ran = 0;
    ExperimentListHooks h;
    h.saves_itself = [](size_t) { return false; };
    h.run = [&](size_t i, RunBatch& b) {
      ++ran;
      if (i == 2) return 3;
      b.add(rec.pending(i == 0 ? "a" : "b"));
      return 0;
    };
    h.now = [] { return std::chrono::steady_clock::time_point{}; };
    const ExperimentListOutcome r = runExperimentList(4, batch, h);
    QCOMPARE(r.status, ExperimentListOutcome::Status::Failed);
    QCOMPARE(r.exit_code, 3);
    QCOMPARE(r.failed_index, size_t(2));
    QCOMPARE(ran, size_t(3));
    QCOMPARE(rec.saves, (Saves{{"a", "b"}}));
    QCOMPARE(rec.reports, (Strings{"a-2", "b"}));
  }

  void failedSaveEndsWithoutReports() {
    Recorder rec;
    rec.save_ok = false;
    RunBatch batch = rec.batch();
    ExperimentListHooks h;
    h.saves_itself = [](size_t) { return false; };
    h.run = [&](size_t i, RunBatch& b) {
      b.add(rec.pending("g" + std::to_string(i)));
      return 0;
    };
    QCOMPARE(runExperimentList(2, batch, h).status, ExperimentListOutcome::Status::SaveFailed);
    QCOMPARE(rec.saves, (Saves{{"g0", "g1"}}));
    QVERIFY(rec.reports.empty());
    QVERIFY(batch.empty());
  }

  void interruptSavesAndStops() {
    // The signal arrives during experiment 1: after it, g0 and g1 are saved and nothing else runs.
    Recorder rec;
    RunBatch batch = rec.batch();
    bool signal = false;
    size_t ran = 0;
    ExperimentListHooks h;
    h.saves_itself = [](size_t) { return false; };
    h.interrupted = [&] { return signal; };
    h.run = [&](size_t i, RunBatch& b) {
      ++ran;
      signal = i == 1;
      b.add(rec.pending("g" + std::to_string(i)));
      return 0;
    };
    QCOMPARE(runExperimentList(3, batch, h).status, ExperimentListOutcome::Status::Interrupted);
    QCOMPARE(ran, size_t(2));
    QCOMPARE(rec.saves, (Saves{{"g0", "g1"}}));
  }

  void immediateBatchSavesEachRunAtOnce() {
    // A config with one experiment: the run is saved when it is added, with a note naming it,
    // and reported under its stored id ("a" taken: "a-2"); nothing waits afterwards.
    Recorder rec;
    RunBatch batch = rec.batch(true);
    QVERIFY(batch.add(rec.pending("a")));
    QCOMPARE(rec.saves, (Saves{{"a"}}));
    QCOMPARE(rec.reports, (Strings{"a-2"}));
    QVERIFY(batch.empty());
    QCOMPARE(rec.notes,
             (Strings{"the save of run 'a' in progress (out.h5 keeps what it held before; saves are atomic)"}));
    rec.save_ok = false;
    QVERIFY(!batch.add(rec.pending("b")));
    QCOMPARE(rec.reports, (Strings{"a-2"}));
  }

  void lossNotesSayWhatAForcedStopLoses() {
    // One GEMM experiment: before it nothing is pending; after it one run is; during the final
    // save the save is in progress; after it nothing is pending.
    Recorder rec;
    RunBatch batch = rec.batch();
    ExperimentListHooks h;
    h.saves_itself = [](size_t) { return false; };
    h.run = [&](size_t, RunBatch& b) {
      b.add(rec.pending("g0"));
      return 0;
    };
    QCOMPARE(runExperimentList(1, batch, h).status, ExperimentListOutcome::Status::Completed);
    const std::string idle = "the experiment in progress; out.h5 holds the runs finished before it";
    QCOMPARE(rec.notes,
             (Strings{idle, "1 finished run(s) not yet saved and the experiment in progress; out.h5 keeps what it held",
                      "the save of 1 finished run(s) in progress (out.h5 keeps what it held before; saves are atomic)",
                      idle}));
  }
};

QTEST_MAIN(TestExperimentBatch)
#include "test_experiment_batch.moc"

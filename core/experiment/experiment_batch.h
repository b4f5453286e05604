// FP8 Lab — running the experiments of a multi-experiment config ({"experiments": [...]},
// experiment_registry.h) into one session file. Each save of a session rewrites the whole file,
// so N GEMM runs saved one by one cost O(N²) bytes; the finished GEMM runs therefore wait in a
// RunBatch and are saved with one rewrite:
//   - before an experiment that saves into the file itself (a training experiment),
//   - after an experiment, once 30 s passed since the batch was last empty (a kill -9 or a crash
//     loses at most about that much work) or its datasets hold more than 256 MiB,
//   - when an experiment fails (the finished runs are kept, then the failure is reported),
//   - when the front end was interrupted (a signal), and at the end.
// The front end (`fp8lab-cli run`) supplies the save, the terminal lines and the signal state
// through hooks; the rules live here.
#pragma once

#include "session/session.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fp8lab {

/// A finished run waiting in a RunBatch, and what to report once it is saved.
struct PendingRun {
  Run run;
  /// Called after the save that stored the run, with the id it was stored under (a taken id is
  /// renamed -2, -3, ...). May be empty.
  std::function<void(const Run& run, const std::string& stored_id)> report;
};

/// When a batch is saved although more experiments follow: after an experiment, when more than
/// `max_age` passed since the batch was last empty (runExperimentList says when that is measured)
/// or its datasets hold more than `max_bytes` bytes (Dataset::storedCount × elementBytes, summed).
struct RunBatchLimits {
  std::chrono::steady_clock::duration max_age = std::chrono::seconds(30);
  int64_t max_bytes = int64_t(256) << 20;
};

/// Finished runs of one session file waiting for one save. Not thread-safe.
class RunBatch {
public:
  /// Saves `runs` with one rewrite of the file, in order; true with *stored_ids (one per run, in
  /// order; may be shorter, then a run's own id counts), false after the front end reported why.
  using SaveFn = std::function<bool(const std::vector<Run>& runs, std::vector<std::string>* stored_ids)>;
  /// Told, whenever it changes, what a forced stop would lose now (the texts of noteLoss, add and
  /// flush); may be empty.
  using LossNoteFn = std::function<void(const std::string& note)>;

  /// `out` names the session file in the loss notes. `immediate`: every run is saved as soon as
  /// it is added (a config with one experiment).
  RunBatch(SaveFn save, LossNoteFn loss_note, std::string out, bool immediate = false, RunBatchLimits limits = {});

  /// Adds a finished run. An immediate batch saves it at once, with the loss note "the save of
  /// run 'ID' in progress (OUT keeps what it held before; saves are atomic)", and reports it; false
  /// when that save failed. Otherwise the run waits for flush(); true.
  bool add(PendingRun run);
  bool empty() const { return pending_.empty(); }
  size_t size() const { return pending_.size(); }
  /// Bytes of the pending runs' datasets (storedCount × elementBytes).
  int64_t bytes() const;
  /// Saves every pending run with one save (loss note meanwhile: "the save of N finished run(s) in
  /// progress (OUT keeps what it held before; saves are atomic)") and, when it succeeded, calls
  /// each run's report with its stored id; the batch is empty afterwards either way. True when
  /// nothing was pending or the save succeeded.
  bool flush();
  /// Sets the loss note of the present state: "the experiment in progress; OUT holds the runs
  /// finished before it" when empty, else "N finished run(s) not yet saved and the experiment in
  /// progress; OUT keeps what it held".
  void noteLoss() const;
  const RunBatchLimits& limits() const { return limits_; }

private:
  SaveFn save_;
  LossNoteFn loss_note_;
  std::string out_;
  bool immediate_;
  RunBatchLimits limits_;
  std::vector<PendingRun> pending_;
};

/// What runExperimentList asks of the front end. `run` and `saves_itself` are required.
struct ExperimentListHooks {
  /// Runs experiment `index`: one that saves into the file itself saves there; others add their
  /// finished runs to `batch`. Returns the experiment's exit status (0 = ok).
  std::function<int(size_t index, RunBatch& batch)> run;
  /// True for an experiment that saves into the file itself (a training experiment): the batch is
  /// saved before it starts.
  std::function<bool(size_t index)> saves_itself;
  /// True once the front end was asked to stop (a signal). Empty: never.
  std::function<bool()> interrupted;
  /// Experiment `index` of `count` finished without error; `pending`: its runs wait in the batch.
  std::function<void(size_t index, size_t count, bool pending)> experiment_done;
  /// The clock of the age rule (tests replace it). Empty: std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> now;
};

struct ExperimentListOutcome {
  enum class Status {
    Completed,   ///< every experiment ran and every run is saved
    Failed,      ///< experiment `failed_index` returned `exit_code` != 0; the batch before was saved
    SaveFailed,  ///< a batch save failed (the front end reported why)
    Interrupted, ///< interrupted() was true after an experiment or at the end; the batch is saved
  };
  Status status = Status::Completed;
  int exit_code = 0;       ///< Failed: the experiment's exit status
  size_t failed_index = 0; ///< Failed: which experiment
};

/// Runs experiments 0 .. count-1 in order with the batching rules of this file's header: before
/// an experiment for which saves_itself is true the batch is flushed; after each, a non-zero
/// status flushes then ends (Failed, or SaveFailed when that flush failed); else
/// experiment_done, then the age rule, the size rule (bytes() > max_bytes), and an interrupt
/// flushes and ends (Interrupted). The age is measured from the start, or from the end of the
/// last experiment after which the batch was empty, its own runs saved by the age or size rule
/// included: runs wait at most about max_age plus one experiment, and a long list of short
/// experiments is saved once per max_age, not after each. At the end the batch is flushed, and an interrupt that
/// arrived meanwhile gives Interrupted. A failed flush anywhere ends with SaveFailed. The batch's loss note is renewed
/// after every experiment.
ExperimentListOutcome runExperimentList(size_t count, RunBatch& batch, const ExperimentListHooks& hooks);

/// "interrupted by S; the finished runs are saved in OUT": what the front end says when `signal`
/// (e.g. "Ctrl-C (SIGINT)") ended runExperimentList (Interrupted).
std::string experimentListInterruptText(const std::string& signal, const std::string& out);

/// "run: experiment I/N done", plus " (its run is saved with the next batch)" when `pending`: the
/// progress line of `run` after experiment `index` (0-based) of `count`.
std::string experimentDoneLine(size_t index, size_t count, bool pending);

} // namespace fp8lab

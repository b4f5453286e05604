// FP8 Lab — the training experiment runner: every run of a TrainingExperimentSpec trained in
// turn, whatever its model (each run's kind makes its TrainingJob, training_job.h, and loads its
// data once per experiment), each finished run handed to the caller to save as soon as it ends,
// then the GEMM error experiment on the trained weights. The CLI (`run`, `rerun`), the desktop app
// and the tests call it; what they differ in (a progress bar or a progress dialog, where runs are
// saved) comes in through TrainingHooks.
//
// Runs of a kind that trains beside others (TrainingModelKind::trains_beside: the Fashion-MNIST
// MLP) train two at a time on the CPU backend when two threads are available (the next such run
// of the config starts beside the current one; each run's results do not depend on it), and are
// saved in the config's order. Other runs, and every run on a GPU backend, train in turn.
//
// Cancel: when hooks.progress returns false the runs in progress stop after their current step
// and are handed to save() in order with status "cancelled" and the steps they finished; nothing
// after them starts. Runs finished before are already saved. A run stopped by on_nonfinite "stop"
// is saved with status "stopped_nonfinite" and the experiment goes on.
#pragma once

#include "experiment/training/training_config.h"
#include "gemm/gemm.h"
#include "session/session.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// What the runner reports and asks. Every hook may be empty. Hooks are called on the thread
/// that called runTrainingExperiment (the training itself runs on threads of its own).
struct TrainingHooks {
  /// Progress of the current piece of work (a training run or one trained-weights GEMM):
  /// `fraction` ∈ [0, 1] of that piece, `overall` ∈ [0, 1] of the whole experiment (runs weigh
  /// by their step count, each trained-weights GEMM as 2 % of the training). Return false to
  /// cancel.
  std::function<bool(double fraction, double overall, const std::string& stage)> progress;
  /// Training run `index` of `count` starts: its spec, steps per epoch, training images.
  std::function<void(size_t index, size_t count, const TrainingRunSpec& run, int64_t steps_per_epoch, int64_t images)>
      run_started;
  /// An epoch of the current training run finished (its test evaluation included).
  std::function<void(const TrainingRunSpec& run, const EpochRecord& epoch)> epoch_done;
  /// Called with every finished Run before save(): add attributes (where the GEMMs ran).
  /// `training` is the spec of a training run, null for a trained-weights GEMM run.
  std::function<void(Run& run, const TrainingRunSpec* training)> finish_run;
  /// Saves a finished run; returns false with *error to stop the experiment. *stored_id: the id
  /// it was stored under (a taken id may be renamed).
  std::function<bool(const Run& run, std::string* stored_id, std::string* error)> save;
};

/// One finished (or cancelled) run, as saved.
struct TrainingRunOutcome {
  std::string stored_id;
  std::string type; ///< "training" or "gemm-trained-weights"
  bool cancelled = false;
  /// on_nonfinite stop ended the run after the step of its first non-finite value (status
  /// "stopped_nonfinite"); the experiment goes on with its next run.
  bool stopped_nonfinite = false;
  NonFiniteRecord first_nonfinite;       ///< training runs: the first NaN / ±Inf (found = false: none)
  const TrainingRunSpec* spec = nullptr; ///< training runs: into the experiment spec
  int64_t steps_done = 0, steps_total = 0;
  std::vector<double> test_accuracy; ///< per finished epoch
  double seconds = 0, mean_epoch_seconds = 0;
  int64_t saturated_total = 0;
  std::string backend, device;
  std::string layer; ///< trained-weights GEMM: "fc1", ...
  /// Language-model runs: the validation losses (nats per byte), the corpus's unigram entropy
  /// (bits per byte), the generated sample and the mean step time.
  std::vector<float> val_loss;
  double unigram_bits = 0;
  std::string sample;
  double step_seconds = 0;
  std::map<std::string, double> metrics; ///< trained-weights GEMM: the run's metrics
};

struct TrainingExperimentOutcome {
  enum class Status { Completed, Cancelled, Failed };
  Status status = Status::Completed;
  std::string error; ///< Failed: why (data set missing, a run failed, a save failed)
  /// Non-empty when the GEMM on trained weights was skipped because the weights of its run hold
  /// NaN / ±Inf (a run stopped or continued past its first non-finite value): why, one line.
  std::string weight_gemm_skipped;
  std::vector<TrainingRunOutcome> runs;
};

/// Options of a runner call that do not belong to the config.
struct TrainingRunnerOptions {
  GemmBackend* backend = nullptr; ///< FP8 GEMMs (not owned); null = the CPU reference backend
  int threads = 0;                ///< > 0: GEMM threads of every run (results do not depend on it)
};

/// Runs the experiment. Never throws for expected failures (they come back as Failed with the
/// reason); a cancel comes back as Cancelled after the cancelled run was saved.
TrainingExperimentOutcome runTrainingExperiment(const TrainingExperimentSpec& spec, const TrainingRunnerOptions& opt,
                                                const TrainingHooks& hooks);

/// Re-runs one stored training run from its config (CPU backend): the Run as it would be
/// stored, or nullopt with *error. A run stored as cancelled is stopped after the same number of
/// steps.
std::optional<Run> reproduceTrainingRun(const Run& stored, int threads, const ProgressFn& progress, std::string* error);

/// Re-runs a stored "gemm-trained-weights" run from its stored inputs/A and inputs/B.
std::optional<Run> reproduceWeightGemmRun(const Run& stored, int threads, const ProgressFn& progress,
                                          std::string* error);

} // namespace fp8lab

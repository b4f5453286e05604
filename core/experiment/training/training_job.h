// FP8 Lab — one training run as the experiment runner (training_experiment.h) and `rerun` drive
// it, whatever its model: each model kind (training_models.h) makes its own TrainingJob, which
// loads the kind's data, trains, and turns its result into the session Run and the runner's
// outcome. The runner itself knows no model.
#pragma once

#include "experiment/training/training_experiment.h"
#include "training/trainer.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

class GemmBackend;
struct ImageDataset;

/// Data sets loaded once per experiment and shared by its runs (read-only once loaded): a
/// Fashion-MNIST directory, a text corpus cut for one context length. Keys are the kind's own
/// ("fashion-mnist:<dir>", "text:<source key>"). Used on the runner's thread only.
class TrainingDataCache {
public:
  /// The value stored under `key`, loaded by `load()` the first time (an exception from load
  /// propagates and stores nothing).
  template <class T> const T& get(const std::string& key, const std::function<T()>& load) {
    auto it = items_.find(key);
    if (it == items_.end()) it = items_.emplace(key, std::make_shared<const T>(load())).first;
    return *static_cast<const T*>(it->second.get());
  }

private:
  std::map<std::string, std::shared_ptr<const void>> items_;
};

/// The Linear weights a run trained, with the inputs they are multiplied with by the GEMM error
/// experiment on trained weights (weight_gemm.h): an MLP's layers and Fashion-MNIST's test images.
struct TrainedLinears {
  const std::vector<LayerWeights>* weights = nullptr; ///< master weights after the last completed step
  const ImageDataset* inputs = nullptr;               ///< the data set's test images (all of them)
};

/// One training run of an experiment: made with its data loaded by the kind's `job` entry,
/// built by build(), trained by run() (on a thread of its own; not thread-safe otherwise), then
/// stored with session() and reported with outcome().
class TrainingJob {
public:
  virtual ~TrainingJob() = default;
  /// What the run_started hook reports (TrainingHooks): steps per epoch and the training
  /// items (images) — the language model: its steps and the bytes of its training text.
  virtual int64_t stepsPerEpoch() const = 0;
  virtual int64_t items() const = 0;
  /// Optimizer steps of the whole run (the weight of its progress in the experiment's).
  virtual int64_t steps() const = 0;
  /// Builds the run; `backend` runs the low-precision GEMMs (null: the CPU reference backend).
  /// Throws std::invalid_argument for a config the model refuses or a run too large to fit.
  virtual void build(GemmBackend* backend) = 0;
  /// Trains (after build()): progress(fraction, stage) after every step; false stops the run
  /// after that step and throws Cancelled, the result consistent up to that step.
  virtual void run(const ProgressFn& progress) = 0;
  /// Completed optimizer steps, and completed epochs with their records (the language model
  /// has none). Called on the thread that runs run().
  virtual int64_t stepsDone() const = 0;
  virtual size_t epochsDone() const { return 0; }
  virtual EpochRecord epoch(size_t index) const;
  /// The session Run of the (possibly cancelled) result, stored as `run_id` with `config_json`.
  virtual Run session(const std::string& run_id, const std::string& config_json) const = 0;
  /// The runner's outcome of the result: what every run reports (trainingOutcome) and the
  /// model's own members; the runner sets stored_id and spec. `stored` is the session Run as
  /// saved.
  virtual TrainingRunOutcome outcome(const Run& stored, bool cancelled) const = 0;
  /// The trained Linear weights the GEMM on trained weights multiplies, or null when the model
  /// has none for it (the kind's `weight_gemm` is false).
  virtual std::optional<TrainedLinears> trainedLinears() const { return std::nullopt; }
};

/// What every training run's outcome says, from its session Run and its result (TrainingResult,
/// LmTrainingResult: stopped_nonfinite, first_nonfinite, steps_done, seconds, operands). The
/// caller sets `spec`.
template <class Result> TrainingRunOutcome trainingOutcome(const Run& stored, const Result& res, bool cancelled) {
  TrainingRunOutcome o;
  o.type = "training";
  o.cancelled = cancelled;
  o.stopped_nonfinite = res.stopped_nonfinite;
  o.first_nonfinite = res.first_nonfinite;
  o.steps_done = res.steps_done;
  o.seconds = res.seconds;
  for (const auto& h : res.operands)
    for (int64_t v : h.saturated) o.saturated_total += v;
  o.backend = stored.backend;
  o.device = stored.device;
  return o;
}

/// The job of `spec` (its kind's, on a copy of it), its data loaded through `data`. `threads` >
/// 0 sets the run's GEMM threads (the results do not depend on it). null with *error when the
/// data cannot be read ("Fashion-MNIST is damaged: …", a missing or too short corpus).
std::unique_ptr<TrainingJob> makeTrainingJob(const TrainingRunSpec& spec, int threads, TrainingDataCache& data,
                                             std::string* error);

/// Trains `spec` alone on the calling thread, with the CPU reference backend (`fp8lab-cli
/// rerun`: a run reproduced from its stored config), and returns it as stored under `run_id`
/// with `config_json`. `stop_after` ≥ 0: the run is stopped after that many steps, as a run
/// saved after a cancel was (it is then stored as cancelled). nullopt with *error when its data
/// cannot be read, the run fails, or `progress` cancels it ("cancelled").
std::optional<Run> trainRunAlone(const TrainingRunSpec& spec, const std::string& run_id, const std::string& config_json,
                                 int64_t stop_after, const ProgressFn& progress, std::string* error);

} // namespace fp8lab

#include "experiment/training/training_experiment.h"
#include "training/sites.h"
#include "common/worker_pool.h"
#include "session/session_layout.h"

#include "experiment/training/training_job.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace fp8lab {

namespace {

/// A training run trained on a thread of its own, so that two runs of an experiment can share
/// the cores (TrainingModelKind::trains_beside): most of an MLP step (block statistics, the
/// optimizer, quantize) runs on one core. Every result is the same as when the runs train in turn
/// — a run reads only its own config, data and state, and the kernels give the same bits on any
/// thread count. The runner's hooks stay on its thread: the job's progress and finished epochs
/// are handed over under a mutex, and the runner saves finished runs in the config's order.
struct RunningJob {
  const TrainingRunSpec* rs = nullptr; ///< into the experiment spec
  std::unique_ptr<TrainingJob> job;
  double steps = 0;
  std::thread thread;
  std::mutex m;
  double fraction = 0;
  std::string stage;
  std::deque<EpochRecord> new_epochs;
  size_t epochs_seen = 0;
  bool finished = false, cancelled = false;
  std::exception_ptr error;

  /// Moves the epochs finished since the last call to new_epochs (under m, on the job's thread).
  void takeEpochs() {
    for (; epochs_seen < job->epochsDone(); ++epochs_seen) new_epochs.push_back(job->epoch(epochs_seen));
  }
};

/// Trains job.job on job.thread; `stop` cancels it at its next step; `wake` is notified on every
/// progress call and at the end.
void startJob(RunningJob& job, const std::atomic<bool>& stop, std::condition_variable& wake) {
  job.thread = std::thread([&job, &stop, &wake] {
    auto progress = [&](double f, const std::string& stage) {
      {
        std::lock_guard<std::mutex> lock(job.m);
        job.fraction = f;
        job.stage = stage;
        job.takeEpochs();
      }
      wake.notify_all();
      return !stop.load();
    };
    bool cancelled = false;
    std::exception_ptr error;
    try {
      job.job->run(progress);
      progress(1.0, "done");
    } catch (const Cancelled&) {
      cancelled = true;
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(job.m);
      job.takeEpochs();
      job.cancelled = cancelled;
      job.error = error;
      job.finished = true;
    }
    wake.notify_all();
  });
}

/// The runs that train side by side (RunningJob), saved in the config's order; `stop` cancels
/// every one of them at its next step.
struct Pipeline {
  std::vector<std::unique_ptr<RunningJob>> jobs;
  std::atomic<bool> stop{false};
  std::condition_variable wake;
  std::mutex wake_m;
  bool cancel_all = false;
  /// Stops every job at its next step and waits for it.
  void joinAll() {
    stop = true;
    for (auto& j : jobs)
      if (j->thread.joinable()) j->thread.join();
  }
  /// A hook that throws leaves with the jobs stopped and joined, not with a running thread.
  ~Pipeline() { joinAll(); }
};

/// One runTrainingExperiment call: the spec's training runs in the config's order, then the GEMMs
/// on trained weights. Each step method returns false when the experiment ends early (failed,
/// cancelled or a save refused), with the outcome's status set.
class ExperimentRunner {
public:
  ExperimentRunner(const TrainingExperimentSpec& spec, const TrainingRunnerOptions& opt, const TrainingHooks& hooks)
      : spec_(spec), opt_(opt), hooks_(hooks) {
    // Weights of the overall fraction: every training step counts 1, each trained-weights GEMM 2 %
    // of the training steps.
    for (const auto& r : spec.runs) total_ += static_cast<double>(r.steps());
    gemm_weight_ = spec.weight_gemm ? 0.02 * total_ : 0.0;
    if (spec.weight_gemm) total_ += gemm_weight_ * static_cast<double>(spec.weight_gemm->layers.size());
    if (total_ <= 0) total_ = 1;
  }

  TrainingExperimentOutcome run() {
    for (size_t i = 0; i < spec_.runs.size(); ++i) {
      const TrainingRunSpec& rs = spec_.runs[i];
      if (i > 0 && stopRequested("starting " + rs.id)) return out_;
      if (!runFrom(i)) return out_;
    }
    if (spec_.weight_gemm) runWeightGemms();
    return out_;
  }

private:
  bool fail(std::string why) {
    out_.status = TrainingExperimentOutcome::Status::Failed;
    out_.error = std::move(why);
    return false;
  }
  bool cancelled() {
    out_.status = TrainingExperimentOutcome::Status::Cancelled;
    return false;
  }

  bool save(Run& run, const TrainingRunSpec* training, std::string* stored) {
    if (hooks_.finish_run) hooks_.finish_run(run, training);
    *stored = run.id;
    std::string error;
    if (hooks_.save && !hooks_.save(run, stored, &error)) return fail("could not save run '" + run.id + "': " + error);
    return true;
  }

  /// A cancel that arrives between two pieces of work stops before the next one starts.
  bool stopRequested(const std::string& stage) {
    if (!hooks_.progress || hooks_.progress(0.0, done_before_ / total_, stage)) return false;
    out_.status = TrainingExperimentOutcome::Status::Cancelled;
    return true;
  }

  /// Loads run idx's data and starts it on a thread of its own; why it could not, or empty.
  std::string launch(size_t idx, Pipeline& p) {
    const TrainingRunSpec& r = spec_.runs[idx];
    auto job = std::make_unique<RunningJob>();
    job->rs = &r;
    std::string why;
    job->job = makeTrainingJob(r, opt_.threads, data_, &why);
    if (!job->job) return why;
    if (hooks_.run_started) hooks_.run_started(idx, spec_.runs.size(), r, job->job->stepsPerEpoch(), job->job->items());
    job->steps = static_cast<double>(job->job->steps());
    try {
      job->job->build(r.run().precision == TrainingPrecision::FP8 ? opt_.backend : nullptr);
    } catch (const std::exception& e) {
      return "training run '" + r.id + "' failed: " + e.what();
    }
    startJob(*job, p.stop, p.wake);
    p.jobs.push_back(std::move(job));
    return {};
  }

  /// Hands every job's finished epochs and the first job's progress to the hooks (on this thread);
  /// whether the first job has finished.
  bool reportProgress(Pipeline& p) {
    RunningJob& head = *p.jobs.front();
    bool head_done = false;
    {
      std::unique_lock<std::mutex> lock(p.wake_m);
      p.wake.wait_for(lock, std::chrono::milliseconds(50));
    }
    double overall = done_before_;
    for (auto& j : p.jobs) {
      std::deque<EpochRecord> eps;
      double f = 0;
      std::string stage;
      bool fin = false;
      {
        std::lock_guard<std::mutex> lock(j->m);
        eps.swap(j->new_epochs);
        f = j->fraction;
        stage = j->stage;
        fin = j->finished;
      }
      for (const EpochRecord& e : eps)
        if (hooks_.epoch_done) hooks_.epoch_done(*j->rs, e);
      overall += f * j->steps;
      if (j.get() == &head) {
        head_done = fin;
        if (!p.cancel_all && hooks_.progress && !hooks_.progress(f, overall / total_, stage)) {
          p.cancel_all = true;
          p.stop = true;
        }
      }
    }
    return head_done;
  }

  /// Saves the finished first job of the pipeline and records its outcome (and trained weights).
  bool saveHead(RunningJob& head) {
    head.thread.join();
    if (head.error) {
      try {
        std::rethrow_exception(head.error);
      } catch (const std::exception& e) {
        return fail("training run '" + head.rs->id + "' failed: " + e.what());
      }
    }
    const TrainingRunSpec& hrs = *head.rs;
    done_before_ += head.steps;
    Run session_run = head.job->session(hrs.id, hrs.configJson());
    std::string stored;
    if (!save(session_run, &hrs, &stored)) return false;
    TrainingRunOutcome o = head.job->outcome(session_run, head.cancelled);
    o.spec = &hrs;
    o.stored_id = stored;
    out_.runs.push_back(std::move(o));
    if (const auto t = head.job->trainedLinears()) trained_[hrs.id] = {*t->weights, t->inputs};
    stored_as_[hrs.id] = stored;
    return true;
  }

  /// Trains run i, and beside it the next runs of the config that train beside it (kind
  /// trains_beside, CPU backend, two threads or more), two at a time, each saved in the config's
  /// order. On return i is the last run started.
  bool runFrom(size_t& i) {
    const bool cpu_backend = !opt_.backend || opt_.backend->name() == "cpu";
    const bool pipeline = cpu_backend && resolveThreads(opt_.threads) >= 2 && spec_.runs[i].kind().trains_beside;
    Pipeline p;
    size_t next = i; // the next run of the config to start
    if (const std::string why = launch(next++, p); !why.empty()) return fail(why);
    auto canJoin = [&](size_t idx) {
      return pipeline && idx < spec_.runs.size() && spec_.runs[idx].kind().trains_beside;
    };
    while (!p.jobs.empty()) {
      if (p.jobs.size() < 2 && canJoin(next) && !p.cancel_all)
        if (const std::string why = launch(next++, p); !why.empty()) {
          p.joinAll();
          return fail(why);
        }
      if (!reportProgress(p)) continue;
      RunningJob& head = *p.jobs.front();
      if (!saveHead(head)) {
        p.joinAll();
        return false;
      }
      if (head.cancelled) p.cancel_all = true;
      p.jobs.erase(p.jobs.begin());
    }
    if (p.cancel_all) return cancelled();
    i = next - 1; // the caller's ++i moves on to the first run not started
    return true;
  }

  /// The GEMMs on the trained weights of spec.weight_gemm->from_run, one run per layer.
  void runWeightGemms() {
    const auto it = trained_.find(spec_.weight_gemm->from_run);
    if (it == trained_.end()) {
      fail("GEMM on trained weights: run '" + spec_.weight_gemm->from_run + "' has no trained Linear weights");
      return;
    }
    const std::vector<LayerWeights>& weights = it->second.first;
    const ImageDataset& inputs = *it->second.second;
    // The GEMM runs name the training run by the id it was stored under (the file may have held
    // the config's id already: "fp8-current" stored as "fp8-current-2").
    WeightGemmSpec g = *spec_.weight_gemm;
    if (const auto it = stored_as_.find(g.from_run); it != stored_as_.end() && !it->second.empty())
      g.from_run = it->second;
    for (const LayerWeights& w : weights)
      if (!allFinite(w.kernel.data(), w.kernel.size()) || !allFinite(w.bias.data(), w.bias.size())) {
        // the GEMM error of NaN weights means nothing (its SQNR would read inf)
        out_.weight_gemm_skipped = "the GEMM on trained weights is skipped: the weights of run '" + g.from_run +
                                   "' hold non-finite values (see its first non-finite value)";
        return;
      }
    for (int l : g.layers) {
      if (stopRequested("starting " + g.runId(l))) return;
      WeightGemmConfig wc = g.gemm;
      wc.layer = l;
      wc.gemm.threads = opt_.threads;
      Run run;
      try {
        run = weightGemmRun(weights, inputs, wc, g.runId(l), g.configJson(l), opt_.backend,
                            [&](double f, const std::string& s) {
                              if (!hooks_.progress) return true;
                              return hooks_.progress(f, (done_before_ + f * gemm_weight_) / total_, s);
                            });
      } catch (const Cancelled&) {
        cancelled();
        return;
      } catch (const std::exception& e) {
        fail("GEMM on trained weights (" + g.runId(l) + ") failed: " + e.what());
        return;
      }
      done_before_ += gemm_weight_;
      TrainingRunOutcome o;
      if (!save(run, nullptr, &o.stored_id)) return;
      o.type = "gemm-trained-weights";
      o.backend = run.backend;
      o.device = run.device;
      o.layer = mlpLayerName(l);
      for (const auto& [k, v] : run.metrics) o.metrics[k] = v.value;
      out_.runs.push_back(std::move(o));
    }
  }

  const TrainingExperimentSpec& spec_;
  const TrainingRunnerOptions& opt_;
  const TrainingHooks& hooks_;
  TrainingExperimentOutcome out_;
  double total_ = 0, gemm_weight_ = 0, done_before_ = 0;
  TrainingDataCache data_;
  /// a run's id in the config -> its trained Linear weights and the inputs they multiply
  std::map<std::string, std::pair<std::vector<LayerWeights>, const ImageDataset*>> trained_;
  std::map<std::string, std::string> stored_as_; ///< a run's id in the config -> its id in the file
};

} // namespace

TrainingExperimentOutcome runTrainingExperiment(const TrainingExperimentSpec& spec, const TrainingRunnerOptions& opt,
                                                const TrainingHooks& hooks) {
  return ExperimentRunner(spec, opt, hooks).run();
}

std::optional<Run> reproduceTrainingRun(const Run& stored, int threads, const ProgressFn& progress,
                                        std::string* error) {
  const auto doc = parseStoredConfig(stored.config_json, error);
  if (!doc) return std::nullopt;
  std::string err;
  auto spec = parseTrainingExperiment(doc->root(), &err, &*doc);
  if (!spec || spec->runs.size() != 1) {
    *error = spec ? std::string("the stored config holds more than one run") : err;
    return std::nullopt;
  }
  TrainingRunSpec& rs = spec->runs.front();
  TrainingRunConfig& rc = rs.run();
  if (rc.seed != stored.seed) {
    *error = "the stored seed attribute (" + std::to_string(stored.seed) + ") disagrees with the config's seed (" +
             std::to_string(rc.seed) + ")";
    return std::nullopt;
  }
  if (threads > 0) rc.setThreads(threads);
  // A run saved after a cancel is reproduced up to the same step.
  const bool was_cancelled = attrString(stored.attrs, "status").value_or("") == "cancelled";
  const int64_t stop_after = was_cancelled ? attrInt(stored.attrs, "steps_completed").value_or(-1) : -1;
  return trainRunAlone(rs, stored.id, stored.config_json, stop_after, progress, error);
}

std::optional<Run> reproduceWeightGemmRun(const Run& stored, int threads, const ProgressFn& progress,
                                          std::string* error) {
  const auto doc = parseStoredConfig(stored.config_json, error);
  if (!doc) return std::nullopt;
  auto wc = parseWeightGemmRunConfig(doc->root(), error);
  if (!wc) return std::nullopt;
  wc->gemm.threads = threads;
  const Dataset* a = stored.find(layout::inputs("A"));
  const Dataset* b = stored.find(layout::inputs("B"));
  if (!a || !b || a->dtype != DType::Float32 || b->dtype != DType::Float32 || a->shape.size() != 2 ||
      b->shape.size() != 2 || a->shape[1] != b->shape[0]) {
    *error = "the run lacks float32 inputs/A [M,K] and inputs/B [K,N]";
    return std::nullopt;
  }
  try {
    return weightGemmRunFromInputs(a->f32, b->f32, a->shape[0], a->shape[1], b->shape[1],
                                   attrString(stored.attrs, "layer").value_or("fc?"), *wc, stored.id,
                                   stored.config_json, nullptr, progress);
  } catch (const std::exception& e) {
    *error = e.what();
  }
  return std::nullopt;
}

} // namespace fp8lab

#include "experiment/training/training_job.h"

#include <stdexcept>

namespace fp8lab {

EpochRecord TrainingJob::epoch(size_t) const {
  throw std::logic_error("TrainingJob::epoch: the model has no epochs");
}

std::unique_ptr<TrainingJob> makeTrainingJob(const TrainingRunSpec& spec, int threads, TrainingDataCache& data,
                                             std::string* error) {
  TrainingRunSpec local = spec;
  if (threads > 0) local.run().setThreads(threads);
  return spec.kind().job(local, data, error);
}

std::optional<Run> trainRunAlone(const TrainingRunSpec& spec, const std::string& run_id, const std::string& config_json,
                                 int64_t stop_after, const ProgressFn& progress, std::string* error) {
  TrainingDataCache data;
  std::unique_ptr<TrainingJob> job = makeTrainingJob(spec, 0, data, error);
  if (!job) return std::nullopt;
  try {
    job->build(nullptr);
    job->run([&](double f, const std::string& stage) {
      if (stop_after >= 0 && job->stepsDone() >= stop_after) return false;
      return progress ? progress(f, stage) : true;
    });
  } catch (const Cancelled&) {
    if (stop_after < 0 || job->stepsDone() != stop_after) {
      *error = "cancelled";
      return std::nullopt;
    }
  } catch (const std::exception& e) {
    *error = e.what();
    return std::nullopt;
  }
  return job->session(run_id, config_json);
}

} // namespace fp8lab

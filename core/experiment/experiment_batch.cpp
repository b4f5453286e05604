#include "experiment/experiment_batch.h"

#include <utility>

namespace fp8lab {

RunBatch::RunBatch(SaveFn save, LossNoteFn loss_note, std::string out, bool immediate, RunBatchLimits limits)
    : save_(std::move(save)), loss_note_(std::move(loss_note)), out_(std::move(out)), immediate_(immediate),
      limits_(limits) {}

bool RunBatch::add(PendingRun run) {
  if (!immediate_) {
    pending_.push_back(std::move(run));
    return true;
  }
  // A signal during the save does not stop it (the run is finished; saving takes seconds).
  if (loss_note_)
    loss_note_("the save of run '" + run.run.id + "' in progress (" + out_ +
               " keeps what it held before; saves are atomic)");
  std::vector<std::string> ids;
  if (!save_({run.run}, &ids)) return false;
  if (run.report) run.report(run.run, ids.empty() ? run.run.id : ids[0]);
  return true;
}

int64_t RunBatch::bytes() const {
  int64_t n = 0;
  for (const auto& p : pending_)
    for (const auto& [path, d] : p.run.datasets) n += d.storedCount() * int64_t(d.elementBytes());
  return n;
}

void RunBatch::noteLoss() const {
  if (!loss_note_) return;
  loss_note_(pending_.empty()
                 ? "the experiment in progress; " + out_ + " holds the runs finished before it"
                 : std::to_string(pending_.size()) + " finished run(s) not yet saved and the experiment in progress; " +
                       out_ + " keeps what it held");
}

bool RunBatch::flush() {
  if (pending_.empty()) return true;
  std::vector<Run> runs;
  runs.reserve(pending_.size());
  for (auto& p : pending_) runs.push_back(std::move(p.run));
  if (loss_note_)
    loss_note_("the save of " + std::to_string(runs.size()) + " finished run(s) in progress (" + out_ +
               " keeps what it held before; saves are atomic)");
  std::vector<std::string> ids;
  const bool saved = save_(runs, &ids);
  if (saved)
    for (size_t i = 0; i < runs.size(); ++i)
      if (pending_[i].report) pending_[i].report(runs[i], i < ids.size() ? ids[i] : runs[i].id);
  pending_.clear();
  noteLoss();
  return saved;
}

std::string experimentListInterruptText(const std::string& signal, const std::string& out) {
  return "interrupted by " + signal + "; the finished runs are saved in " + out;
}

std::string experimentDoneLine(size_t index, size_t count, bool pending) {
  return "run: experiment " + std::to_string(index + 1) + "/" + std::to_string(count) + " done" +
         (pending ? " (its run is saved with the next batch)" : "");
}

ExperimentListOutcome runExperimentList(size_t count, RunBatch& batch, const ExperimentListHooks& hooks) {
  using Status = ExperimentListOutcome::Status;
  const auto now = [&] { return hooks.now ? hooks.now() : std::chrono::steady_clock::now(); };
  const auto interrupted = [&] { return hooks.interrupted && hooks.interrupted(); };
  const auto end = [](Status s, int code = 0, size_t index = 0) { return ExperimentListOutcome{s, code, index}; };
  batch.noteLoss();
  auto empty_since = now();
  for (size_t i = 0; i < count; ++i) {
    if (hooks.saves_itself(i) && !batch.flush()) return end(Status::SaveFailed);
    const int r = hooks.run(i, batch);
    batch.noteLoss();
    if (r != 0) {
      // Keep the finished runs: save the batch, then report the failure.
      if (!batch.flush()) return end(Status::SaveFailed);
      return end(Status::Failed, r, i);
    }
    if (hooks.experiment_done) hooks.experiment_done(i, count, !batch.empty());
    const bool old = !batch.empty() && now() - empty_since > batch.limits().max_age;
    if ((old || batch.bytes() > batch.limits().max_bytes) && !batch.flush()) return end(Status::SaveFailed);
    if (batch.empty()) empty_since = now();
    if (interrupted()) return batch.flush() ? end(Status::Interrupted) : end(Status::SaveFailed);
  }
  if (!batch.flush()) return end(Status::SaveFailed);
  return interrupted() ? end(Status::Interrupted) : end(Status::Completed);
}

} // namespace fp8lab

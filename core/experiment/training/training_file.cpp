#include "experiment/training/training_file.h"

#include "experiment/run_results.h"
#include "experiment/training/training_report.h"

#include <map>

namespace fp8lab {

TrainingFileResult runTrainingIntoFile(const TrainingExperimentSpec& spec, const std::string& out, WriteOptions write,
                                       FallbackGemmBackend* backend, int threads, const TrainingFileHooks& hooks) {
  const auto line = [&](const std::string& s, bool detail) {
    if (hooks.line) hooks.line(s, detail);
  };
  const auto lossNote = [&](const std::string& s) {
    if (hooks.loss_note) hooks.loss_note(s);
  };
  write.on_conflict = WriteOptions::OnConflict::Rename;
  std::string label;
  // The "[i/n] id" of each run started: two Fashion-MNIST runs may train side by side, so an
  // epoch line names its own run.
  std::map<const TrainingRunSpec*, std::string> labels;
  std::map<std::string, std::string> backend_notes; // by stored id, for the JSON summary
  TrainingHooks h;
  h.run_started = [&](size_t i, size_t n, const TrainingRunSpec& rs, int64_t steps_per_epoch, int64_t images) {
    label = "[" + std::to_string(i + 1) + "/" + std::to_string(n) + "] " + rs.id;
    labels[&rs] = label;
    line(trainingRunStartLine(label, rs, steps_per_epoch, images), true);
    if (backend) backend->resetCounts();
    lossNote("the steps of training run '" + rs.id + "' trained so far; " + out + " holds the runs finished before it");
    if (hooks.started) hooks.started(label);
  };
  h.epoch_done = [&](const TrainingRunSpec& rs, const EpochRecord& e) {
    const auto it = labels.find(&rs);
    line(trainingEpochLine(it != labels.end() ? it->second : label, e), true);
  };
  h.progress = [&](double f, double, const std::string& stage) { return !hooks.progress || hooks.progress(f, stage); };
  h.finish_run = [&](Run& run, const TrainingRunSpec* rs) {
    if (hooks.ended) hooks.ended();
    if (!backend || (rs && !rs->run().fp8())) return;
    const std::string note = backend->fallbackSummary();
    if (!note.empty()) line((rs && labels.count(rs) ? labels[rs] : run.id) + ": note: --backend " + note, true);
    if (hooks.record_backend)
      hooks.record_backend(run, rs ? rs->run().forward_gemm : GemmOptions{},
                           note.empty() ? backend->noGpuReason() : note);
    if (!rs) return backend->resetCounts();
    if (run.backend == "cuda")
      run.attrs["fast_accum_backward"] = int64_t(rs->run().backward_gemm.accumulation == Accumulation::FastAccum);
  };
  h.save = [&](const Run& run, std::string* stored, std::string* error) {
    lossNote("the save of run '" + run.id + "' in progress (" + out + " keeps what it held before; saves are atomic)");
    std::vector<std::string> ids;
    if (const Status st = appendRuns(out, {run}, write, &ids); !st.ok()) {
      *error = st.errors();
      return false;
    }
    *stored = ids.empty() ? run.id : ids.front();
    if (*stored != run.id) line(renamedRunNote(run.id, *stored), false);
    backend_notes[*stored] = attrString(run.attrs, "backend_note").value_or("");
    if (const auto nf = trainingNonFiniteLine(run, *stored)) line(*nf, false);
    for (const std::string& l : trainingRunSavedLines(run, *stored))
      if (hooks.result)
        hooks.result(l);
      else
        line(l, true);
    return true;
  };
  TrainingFileResult res;
  res.outcome = runTrainingExperiment(spec, {backend, threads}, h);
  for (const auto& o : res.outcome.runs)
    res.runs.push_back(trainingOutcomeJson(o, backend ? toString(backend->request()) : "", backend_notes[o.stored_id]));
  if (!res.outcome.weight_gemm_skipped.empty()) line("note: " + res.outcome.weight_gemm_skipped, false);
  return res;
}

} // namespace fp8lab

#include "experiment/gemm/gemm_experiment_object.h"

#include "experiment/gemm/gemm_config.h"

namespace fp8lab {

std::string checkExperimentObjects(const std::vector<ExperimentObject>& objects, const JsonDocument* doc) {
  for (size_t i = 0; i < objects.size(); ++i) {
    const std::string where = objects.size() > 1 ? "experiments[" + std::to_string(i) + "]" : "config",
                      t = experimentTypeOf(*objects[i].obj);
    const ExperimentKind* kind = findExperimentKind(t);
    if (!kind && t.empty()) return where + ": missing \"type\" (one of: " + experimentKindNames() + ")";
    if (!kind) return where + ": unknown experiment type '" + t + "' (this build knows: " + experimentKindNames() + ")";
    if (std::string why; kind->validate && !kind->validate(*objects[i].obj, objects[i].at, doc, &why))
      return where + ": " + why;
  }
  return {};
}

std::vector<ExperimentObject> experimentsToRun(const JsonDocument& doc, const std::string& text, bool run_id_given,
                                               std::string* error) {
  std::vector<ExperimentObject> exps = experimentObjects(doc, text, error);
  if (exps.empty())
    *error = "config: " + *error;
  else if (exps.size() > 1 && run_id_given)
    *error = "--id needs a config with a single experiment";
  else
    *error = checkExperimentObjects(exps, &doc);
  if (!error->empty()) exps.clear();
  return exps;
}

std::string notRunnableText(const std::string& type) {
  if (type != "gemm-trained-weights") return {};
  return "\"gemm-trained-weights\" runs are made by a training experiment's \"gemm_on_trained_weights\" (see "
         "docs/training.md); they can be re-run with `fp8lab-cli rerun`";
}

std::string gemmInterruptText(const std::string& signal, const std::string& id, const std::string& out) {
  return "interrupted by " + signal + ": GEMM run '" + id + "' stopped before it finished and was not saved (" + out +
         " keeps what it held, with any runs finished before)";
}

GemmObjectResult runGemmExperimentObject(const ExperimentObject& ex, const JsonDocument* doc,
                                         const std::string& id_override, int threads, FallbackGemmBackend& backend,
                                         RunBatch& batch, const GemmObjectHooks& hooks) {
  using S = GemmObjectResult::Status;
  GemmObjectResult res;
  const auto end = [&](S status, std::string error = {}) {
    res.status = status;
    res.error = std::move(error);
    return res;
  };
  const auto line = [&](const std::string& s, bool detail) {
    if (hooks.line) hooks.line(s, detail);
  };
  const Json& o = *ex.obj;
  GemmExperimentConfig cfg;
  ConfigReader r(doc);
  if (!parseGemmConfig(o, &cfg, r, ex.at)) return end(S::ConfigError, "config: " + r.error());
  for (const auto& n : r.notes())
    if (hooks.config_note) hooks.config_note(n);
  if (o.contains("sweep"))
    line("note: the config has a \"sweep\" object; `run` does one GEMM, `fp8lab-cli sweep` runs the grid", false);
  res.id = !id_override.empty()                          ? id_override
           : o.contains("name") && o["name"].is_string() ? o["name"].get<std::string>()
                                                         : std::string();
  if (res.id.empty()) res.id = defaultGemmRunId(cfg);
  if (std::string why; !isValidRunId(res.id, &why)) return end(S::ConfigError, why);
  cfg.gemm.threads = threads;
  if (hooks.started) hooks.started(res.id);
  Result<Run> run;
  try {
    run = runGemmExperimentRun(cfg, ex.text, res.id, backend, hooks.progress);
  } catch (const Cancelled&) {
    return end(S::Cancelled);
  }
  for (const auto& i : run.issues)
    if (i.severity != Severity::Error) line(i.toString(), false);
  if (!run.ok()) return end(S::Failed, run.errors());
  const std::string fallback = backend.lastFallback();
  if (!fallback.empty()) line("note: run " + res.id + ": --backend " + fallback, true);
  if (hooks.record_backend)
    hooks.record_backend(run.value, cfg.gemm, !fallback.empty() ? fallback : backend.noGpuReason());
  PendingRun pending{std::move(run.value), nullptr};
  if (hooks.report)
    pending.report = [report = hooks.report, cfg](const Run& r, const std::string& stored) { report(r, stored, cfg); };
  return batch.add(std::move(pending)) ? end(S::Done) : end(S::SaveFailed);
}

} // namespace fp8lab

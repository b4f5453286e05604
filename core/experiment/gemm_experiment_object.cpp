#include "experiment/gemm_experiment_object.h"

#include "experiment/gemm_config.h"

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

GemmObjectResult runGemmExperimentObject(const ExperimentObject& ex, const JsonDocument* doc,
                                         const std::string& id_override, int threads, GemmBackend& backend,
                                         const GemmObjectHooks& hooks) {
  using S = GemmObjectResult::Status;
  GemmObjectResult res;
  const Json& o = *ex.obj;
  ConfigReader r(doc);
  if (!parseGemmConfig(o, &res.cfg, r, ex.at)) {
    res.status = S::ConfigError;
    res.error = "config: " + r.error();
    return res;
  }
  for (const auto& n : r.notes())
    if (hooks.config_note) hooks.config_note(n);
  if (o.contains("sweep") && hooks.remark)
    hooks.remark("note: the config has a \"sweep\" object; `run` does one GEMM, `fp8lab-cli sweep` runs the grid");
  res.id = !id_override.empty()                          ? id_override
           : o.contains("name") && o["name"].is_string() ? o["name"].get<std::string>()
                                                         : std::string();
  if (res.id.empty()) res.id = defaultGemmRunId(res.cfg);
  if (!isValidRunId(res.id, &res.error)) {
    res.status = S::ConfigError;
    return res;
  }
  res.cfg.gemm.threads = threads;
  if (hooks.started) hooks.started(res.id);
  Result<Run> run;
  try {
    run = runGemmExperimentRun(res.cfg, ex.text, res.id, backend, hooks.progress);
  } catch (const Cancelled&) {
    res.status = S::Cancelled;
    return res;
  }
  for (const auto& i : run.issues)
    if (i.severity != Severity::Error) res.warnings.push_back(i);
  if (!run.ok()) {
    res.status = S::Failed;
    res.error = run.errors();
    return res;
  }
  res.run = std::move(run.value);
  return res;
}

} // namespace fp8lab

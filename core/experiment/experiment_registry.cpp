// The experiment types, the experiment objects of a config and the re-run of a stored run
// (experiment_registry.h).
#include "experiment/experiment_registry.h"

#include "gemm/gemm.h"
#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/gemm_run.h"
#include "experiment/training/training_config.h"
#include "experiment/training/training_experiment.h"

namespace fp8lab {

std::optional<Run> reproduceGemmRun(const Run& stored, int threads, const ProgressFn& progress, std::string* error) {
  const auto doc = parseStoredConfig(stored.config_json, error);
  if (!doc) return std::nullopt;
  GemmExperimentConfig cfg;
  if (const std::string e = parseGemmConfig(doc->root(), &cfg, &*doc); !e.empty()) {
    *error = e;
    return std::nullopt;
  }
  if (cfg.seed != stored.seed) {
    *error = "the stored seed attribute (" + std::to_string(stored.seed) + ") disagrees with the config's seed (" +
             std::to_string(cfg.seed) + ")";
    return std::nullopt;
  }
  cfg.gemm.threads = threads;
  auto backend = makeCpuGemmBackend();
  auto r = runGemmExperimentRun(cfg, stored.config_json, stored.id, *backend, progress);
  if (!r.ok()) {
    *error = r.errors();
    return std::nullopt;
  }
  return std::move(r.value);
}

const std::vector<ExperimentKind>& experimentKinds() {
  static const std::vector<ExperimentKind> kinds{
      {"gemm", reproduceGemmRun,
       [](const Json& o, const ConfigPath& at, const JsonDocument* doc, std::string* error) {
         GemmExperimentConfig cfg;
         ConfigReader r(doc);
         parseGemmConfig(o, &cfg, r, at);
         *error = r.error();
         return r.ok();
       }},
      {"training", reproduceTrainingRun,
       [](const Json& o, const ConfigPath& at, const JsonDocument* doc, std::string* error) {
         return parseTrainingExperiment(o, error, doc, at).has_value();
       }},
      {"gemm-trained-weights", reproduceWeightGemmRun, nullptr}};
  return kinds;
}

const ExperimentKind* findExperimentKind(const std::string& type) {
  for (const auto& k : experimentKinds())
    if (k.type == type) return &k;
  return nullptr;
}

std::string experimentKindNames() {
  std::string n;
  for (const auto& k : experimentKinds()) n += (n.empty() ? "" : ", ") + k.type;
  return n;
}

std::vector<ExperimentObject> experimentObjects(const JsonDocument& doc, const std::string& text, std::string* error) {
  std::vector<ExperimentObject> r;
  const Json& root = doc.root();
  if (root.contains("experiments")) {
    const Json& v = root["experiments"];
    if (!v.is_array() || v.empty()) {
      *error = "experiments: expected a non-empty array of experiment objects";
      return {};
    }
    // Messages name the key inside the experiment ("k: ...") and the caller says which one
    // ("experiments[1]: k: ..."); the pointer still finds the line and column.
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_object()) {
        *error = "experiments[" + std::to_string(i) + "]: expected an object";
        return {};
      }
      r.push_back({&v[i], v[i].dump(), ConfigPath{std::string(), "/experiments/" + std::to_string(i)}});
    }
    return r;
  }
  r.push_back({&root, text, {}});
  return r;
}

std::string experimentTypeOf(const Json& o) {
  std::string t = o.contains("type") && o["type"].is_string() ? o["type"].get<std::string>() : std::string();
  if (t.empty() && (o.contains("m") || isOldPanelFormGemmConfig(o))) t = "gemm";
  return t;
}

std::optional<RerunResult> rerunStoredRun(const Run& stored, int threads, const ProgressFn& progress,
                                          std::string* error) {
  if (attrString(stored.attrs, "model").value_or("") == "pytorch") {
    *error = "run " + stored.id +
             " was observed from a PyTorch model (fp8lab.torch.attach): the model and its data are not in the "
             "session, so it cannot be re-run";
    return std::nullopt;
  }
  const ExperimentKind* k = findExperimentKind(stored.type);
  if (!k || !k->reproduce) {
    *error = "run " + stored.id + " has type '" + stored.type +
             "', which this build cannot re-run (known: " + experimentKindNames() + ")";
    return std::nullopt;
  }
  std::string e;
  auto fresh = k->reproduce(stored, threads, progress, &e);
  if (!fresh) {
    *error = "cannot re-run " + stored.id + ": " + e;
    return std::nullopt;
  }
  RerunResult r;
  r.differences = compareRuns(stored, *fresh, &r.datasets, &r.metrics);
  r.fresh = std::move(*fresh);
  return r;
}

std::string rerunReportText(const Run& s, const RerunResult& r) {
  const std::string backend_note =
      s.backend == "cpu" || s.backend.empty()
          ? std::string()
          : " (the stored run used the " + s.backend + " backend; the re-run used the CPU backend)";
  if (r.differences.empty())
    return "reproduced bit for bit: run " + s.id + " (" + s.type + ", seed " + std::to_string(s.seed) + ") — " +
           std::to_string(r.datasets) + " datasets and " + std::to_string(r.metrics) +
           " metrics identical on the CPU backend" + backend_note + "\n";
  std::string t = "NOT reproduced: run " + s.id + " differs in " + std::to_string(r.differences.size()) + " place(s)" +
                  backend_note + ":\n";
  for (const auto& x : r.differences) t += "  " + x + '\n';
  return t;
}

} // namespace fp8lab

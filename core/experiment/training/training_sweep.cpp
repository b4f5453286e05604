// FP8 Lab — training sweeps over seeds (training_sweep.h).
#include "experiment/training/training_sweep.h"

#include "json/json_document.h"

#include <stdexcept>

namespace fp8lab {

void expandTrainingSeeds(TrainingExperimentSpec* spec, const std::vector<uint64_t>& seeds) {
  if (seeds.empty()) return;
  std::vector<TrainingRunSpec> runs;
  std::string first_of_weight_run;
  for (const TrainingRunSpec& r : spec->runs)
    for (uint64_t seed : seeds) {
      TrainingRunSpec c = r;
      c.id = r.id + "-s" + std::to_string(seed);
      TrainingRunConfig& rc = c.run();
      rc.seed = seed;
      if (rc.label == r.id || rc.label.empty()) rc.label = c.id;
      if (spec->weight_gemm && spec->weight_gemm->from_run == r.id && first_of_weight_run.empty())
        first_of_weight_run = c.id;
      runs.push_back(std::move(c));
    }
  spec->runs = std::move(runs);
  if (spec->weight_gemm && !first_of_weight_run.empty()) spec->weight_gemm->from_run = first_of_weight_run;
}

TrainingExperimentSpec trainingShard(const TrainingExperimentSpec& spec, int shard, int shards) {
  if (shards < 1 || shard < 0 || shard >= shards)
    throw std::invalid_argument("shard " + std::to_string(shard) + " of " + std::to_string(shards));
  TrainingExperimentSpec out = spec;
  out.runs.clear();
  for (size_t i = 0; i < spec.runs.size(); ++i)
    if (int(i % size_t(shards)) == shard) out.runs.push_back(spec.runs[i]);
  if (out.weight_gemm) {
    bool here = false;
    for (const TrainingRunSpec& r : out.runs) here = here || r.id == out.weight_gemm->from_run;
    if (!here) out.weight_gemm.reset();
  }
  return out;
}

namespace {

/// A config as JSON without the keys that do not change a run's results; null when it does not parse.
Json comparable(const std::string& text) {
  try {
    Json j = JsonDocument::parse(text).root();
    if (j.is_object()) j.erase("threads");
    return j;
  } catch (const JsonTextError&) {
    return Json();
  }
}

} // namespace

std::vector<std::string> removeStoredTrainingRuns(TrainingExperimentSpec* spec, const std::vector<RunInfo>& stored) {
  std::vector<std::string> removed;
  std::vector<TrainingRunSpec> keep;
  for (TrainingRunSpec& r : spec->runs) {
    bool done = false;
    for (const RunInfo& s : stored) {
      if (s.id != r.id || s.type != "training") continue;
      if (attrString(s.attrs, "status").value_or("") != "completed") continue;
      const Json a = comparable(s.config_json), b = comparable(r.configJson());
      done = !a.is_null() && a == b;
      break;
    }
    if (done)
      removed.push_back(r.id);
    else
      keep.push_back(std::move(r));
  }
  spec->runs = std::move(keep);
  if (spec->weight_gemm) {
    bool here = false;
    for (const TrainingRunSpec& r : spec->runs) here = here || r.id == spec->weight_gemm->from_run;
    if (!here) spec->weight_gemm.reset();
  }
  return removed;
}

} // namespace fp8lab

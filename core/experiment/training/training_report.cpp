#include "experiment/training/training_report.h"
#include "experiment/training/training_models.h"
#include "experiment/training/training_sweep.h"

#include "common/number_text.h"
#include "experiment/run_results.h"
#include "session/session_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>

namespace fp8lab {

namespace {

std::string printfText(const char* fmt, ...) {
  va_list a, b;
  va_start(a, fmt);
  va_copy(b, a);
  const int n = std::vsnprintf(nullptr, 0, fmt, a);
  va_end(a);
  std::string s(static_cast<size_t>(std::max(n, 0)) + 1, '\0');
  std::vsnprintf(s.data(), s.size(), fmt, b);
  va_end(b);
  s.resize(static_cast<size_t>(std::max(n, 0)));
  return s;
}

using ll = long long;

} // namespace

std::string applyTrainingOverrides(TrainingExperimentSpec& spec, const TrainingOverrides& o) {
  if (!o.data_dir.empty())
    for (auto& r : spec.runs)
      if (r.kind().use_data_dir) r.kind().use_data_dir(r, o.data_dir);
  if (o.threads > 0)
    for (auto& r : spec.runs) r.run().setThreads(o.threads);
  if (!o.run_id.empty()) {
    if (spec.runs.size() != 1) return "--id needs a training config with a single run";
    std::string why;
    if (!isValidRunId(o.run_id, &why)) return why;
    spec.runs.front().id = o.run_id;
  }
  if (!o.only_run.empty()) {
    std::erase_if(spec.runs, [&](const TrainingRunSpec& r) { return r.id != o.only_run; });
    if (spec.runs.empty()) return "no run '" + o.only_run + "' in the config";
    spec.weight_gemm.reset();
  }
  return {};
}

std::optional<TrainingExperimentSpec> trainingExperimentToRun(const Json& config, const ConfigPath& at,
                                                              const JsonDocument* doc, const TrainingOverrides& o,
                                                              std::string* error) {
  auto spec = parseTrainingExperiment(config, error, doc, at);
  if (!spec)
    *error = "invalid training config: " + *error;
  else if (*error = applyTrainingOverrides(*spec, o); !error->empty())
    spec.reset();
  else
    expandTrainingSeeds(&*spec, o.seeds ? *o.seeds : spec->seeds);
  return spec;
}

std::string trainingRunStartLine(const std::string& label, const TrainingRunSpec& rs, int64_t steps_per_epoch,
                                 int64_t images) {
  return rs.kind().start_line(label, rs, steps_per_epoch, images);
}

std::string trainingEpochLine(const std::string& label, const EpochRecord& e) {
  return printfText("%s: epoch %d: train loss %.4f, test loss %.4f, test accuracy %s%% (%.1f s)", label.c_str(),
                    e.epoch, e.train_loss, e.test_loss, decimalText(100.0 * e.test_accuracy, 'f', 2).c_str(),
                    e.seconds);
}

std::optional<std::string> trainingNonFiniteLine(const Run& run, const std::string& stored_id) {
  const auto nf = run.group_attrs.find("nonfinite");
  if (nf == run.group_attrs.end() || attrInt(nf->second, "found").value_or(0) != 1) return std::nullopt;
  return stored_id + ": first non-finite value: " + attrString(nf->second, "description").value_or("?") +
         (attrString(run.attrs, "status").value_or("") == "stopped_nonfinite" ? "; run stopped (on_nonfinite stop)"
                                                                              : "");
}

std::vector<std::string> trainingRunSavedLines(const Run& run, const std::string& stored_id) {
  std::vector<std::string> lines;
  if (run.group_attrs.count(layout::kWhatIf)) {
    const Dataset* steps = run.find(layout::kWhatIfSteps);
    std::map<std::string, std::pair<double, int>> mean; // recipe → (Σ, n)
    const std::string wi_prefix = std::string(layout::kWhatIf) + "/";
    for (const auto& [path, d] : run.datasets) {
      const bool wi = path.rfind(wi_prefix, 0) == 0,
                 bs = path.rfind(std::string(layout::kBlockStatsGroup) + "/", 0) == 0;
      if ((!wi && !bs) || path.size() < 8 || path.compare(path.size() - 8, 8, "/sqnr_db") != 0) continue;
      std::string recipe = "trained";
      if (wi) recipe = path.substr(wi_prefix.size(), path.find('/', wi_prefix.size()) - wi_prefix.size());
      auto& m = mean[recipe];
      if (wi) {
        for (float v : d.f32)
          if (std::isfinite(v)) m.first += v, ++m.second;
      } else if (steps) {
        for (int64_t t : steps->i64)
          if (t >= 0 && t < static_cast<int64_t>(d.f32.size()) && std::isfinite(d.f32[static_cast<size_t>(t)]))
            m.first += d.f32[static_cast<size_t>(t)], ++m.second;
      }
    }
    std::vector<std::pair<double, std::string>> rank;
    for (const auto& [k, v] : mean)
      if (v.second > 0) rank.push_back({v.first / v.second, k});
    std::sort(rank.rbegin(), rank.rend());
    std::string line;
    for (const auto& [v, k] : rank) line += (line.empty() ? "" : ", ") + k + " " + decimalText(v, 'f', 2);
    lines.push_back(stored_id + ": what-if, mean SQNR over the operands at " +
                    std::to_string(steps ? steps->i64.size() : 0) + " steps (dB): " + line);
  }
  if (run.type == "training")
    if (const TrainingModelKind* k = findTrainingModelKind(attrString(run.attrs, "model").value_or("mlp")))
      k->stored_lines(run, stored_id, lines);
  if (run.type == "gemm-trained-weights")
    lines.push_back(printfText("GEMM on trained %s: SQNR %.2f dB total, %.2f dB quantization, %.2f dB accumulation",
                               attrString(run.attrs, "layer").value_or("?").c_str(), run.metrics.at("sqnr_db").value,
                               run.metrics.at("quant_sqnr_db").value, run.metrics.at("accum_sqnr_db").value));
  return lines;
}

Json trainingOutcomeJson(const TrainingRunOutcome& o, const std::string& backend_request,
                         const std::string& backend_note) {
  Json js = {{"id", o.stored_id}, {"type", o.type}, {"backend", o.backend}, {"device", o.device}};
  if (o.type == "gemm-trained-weights") {
    js["layer"] = o.layer;
    // The summary's keys name the error split; the run's metrics are those of every GEMM run.
    for (const auto& [key, metric] : {std::pair{"total_sqnr_db", "sqnr_db"},
                                      {"quantization_sqnr_db", "quant_sqnr_db"},
                                      {"accumulation_sqnr_db", "accum_sqnr_db"},
                                      {"total_rel_fro", "rel_fro"}})
      js[key] = reportJsonNumber(o.metrics.count(metric) ? o.metrics.at(metric) : std::nan(""));
    return js;
  }
  const TrainingRunConfig& c = o.spec->run();
  js["precision"] = toString(c.precision);
  if (c.fp8()) js["scaling"] = c.scalingName();
  o.spec->kind().outcome_json(js, o);
  js["status"] = o.cancelled ? "cancelled" : o.stopped_nonfinite ? "stopped_nonfinite" : "completed";
  if (o.first_nonfinite.found) js["first_nonfinite"] = o.first_nonfinite.describe();
  if (!backend_request.empty()) {
    js["backend_request"] = backend_request;
    js["backend_note"] = backend_note;
  }
  js["steps"] = o.steps_done;
  js["test_accuracy"] = o.test_accuracy;
  js["seconds"] = o.seconds;
  if (!o.test_accuracy.empty()) js["mean_epoch_seconds"] = o.mean_epoch_seconds;
  js["saturated_total"] = o.saturated_total;
  return js;
}

Json trainingSummaryJson(const std::string& out, bool interrupted, const Json& runs) {
  return {{"session", out}, {"interrupted", interrupted}, {"runs", runs}};
}

std::string trainingInterruptText(const TrainingExperimentOutcome& res, const std::string& out) {
  const size_t n = res.runs.size();
  if (n == 0 || !res.runs.back().cancelled)
    return "interrupted; the session so far (" + std::to_string(n) + " runs) is saved in " + out;
  const TrainingRunOutcome& o = res.runs.back();
  return "interrupted: run '" + o.stored_id + "' stopped after " + std::to_string(o.steps_done) + " of " +
         std::to_string(o.steps_total) + " steps" +
         (o.steps_done > 0 ? " (steps 0 to " + std::to_string(o.steps_done - 1) + ", 0-based as in the session)"
                           : std::string()) +
         "; the session so far (" + std::to_string(n) + " run" + (n == 1 ? "" : "s") + ") is saved in " + out;
}

} // namespace fp8lab

#include "experiment/run_results.h"

#include <charconv>
#include <cmath>

namespace fp8lab {

std::string renamedRunNote(const std::string& id, const std::string& stored_id) {
  return stored_id == id ? std::string() : "note: run " + id + " stored as " + stored_id + " (id taken)";
}

Json reportJsonNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

std::string sixDigitText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  return std::string(buf, r.ptr);
}

Json runMetricsJson(const Run& run) {
  Json m = Json::object();
  for (const auto& [k, v] : run.metrics) m[k] = reportJsonNumber(v.value);
  return m;
}

Json gemmRunResultJson(const Run& run, const std::string& file, const std::string& stored_id) {
  Json j = {{"file", file},
            {"run", stored_id},
            {"type", "gemm"},
            {"backend", run.backend},
            {"device", run.device},
            {"algorithm", attrString(run.attrs, "algorithm").value_or("")},
            {"metrics", runMetricsJson(run)}};
  // The run's warnings as stored with it (run attribute "warnings", a JSON array).
  Json w = Json::parse(attrString(run.attrs, "warnings").value_or("[]"), nullptr, false);
  j["warnings"] = w.is_array() ? w : Json::array();
  if (const auto g = run.group_attrs.find("check"); g != run.group_attrs.end())
    if (const auto v = attrString(g->second, "verdict")) j["check"] = *v;
  return j;
}

std::string gemmRunReportText(const Run& run, const std::string& stored_id, const GemmExperimentConfig& cfg,
                              const std::string& file) {
  const auto met = [&](const char* k) {
    return run.metrics.count(k) ? sixDigitText(run.metrics.at(k).value) : std::string("-");
  };
  const auto dim = [&](const char* k, int64_t def) { return std::to_string(attrInt(run.attrs, k).value_or(def)); };
  const auto str = [&](const char* k, const std::string& def) { return attrString(run.attrs, k).value_or(def); };
  return "run " + stored_id + " (gemm " + dim("m", cfg.m) + "x" + dim("k", cfg.k) + "x" + dim("n", cfg.n) + ", " +
         str("format_a", cfg.format_a) + " x " + str("format_b", cfg.format_b) + ", " + str("scaling", cfg.scaling) +
         ", " + run.backend + " backend: " + run.device + ") -> " + file + "\n  SQNR " + met("sqnr_db") +
         " dB  rel_fro " + met("rel_fro") + "  max_abs " + met("max_abs") + "  (quantization " + met("quant_sqnr_db") +
         " dB, accumulation " + met("accum_sqnr_db") + " dB)\n";
}

Json rerunResultJson(const std::string& file, const std::string& id, const Run& stored, const RerunResult& r) {
  return {{"file", file},
          {"run", id},
          {"type", stored.type},
          {"identical", r.differences.empty()},
          {"datasets_compared", r.datasets},
          {"metrics_compared", r.metrics},
          {"backend", "cpu"},
          {"differences", r.differences}};
}

} // namespace fp8lab

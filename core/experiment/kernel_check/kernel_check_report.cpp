// The kernel check's report as text and JSON (kernel_check_report.h).
#include "experiment/kernel_check/kernel_check_report.h"

#include "json/json_number.h"

#include "common/number_text.h"

#include <algorithm>
#include <cmath>

namespace fp8lab {

namespace {

std::string num(double v, int prec = 6) {
  return generalText(v, prec);
}

std::string idx(ElementIndex e) {
  return e.valid() ? "(" + std::to_string(e.row) + ", " + std::to_string(e.col) + ")" : "-";
}

std::string share(int64_t identical, int64_t elements) {
  if (elements <= 0 || identical == elements) return "100%";
  const std::string s = decimalText(100.0 * double(identical) / double(elements), 'f', 2);
  return (s == "100.00" ? "99.99+" : s) + '%';
}

Json comparisonJson(const OutputComparison& c) {
  auto at = [](ElementIndex e) { return e.valid() ? Json::array({double(e.row), double(e.col)}) : Json(); };
  Json o = {{"elements", double(c.elements)},
            {"identical", double(c.identical)},
            {"identical_share", c.identicalShare()},
            {"differing", double(c.differing)},
            {"differing_rows", double(c.differing_rows)},
            {"differing_cols", double(c.differing_cols)},
            {"signed_zero_only", double(c.signed_zero_only)},
            {"max_ulps", numberJson(c.max_ulps)},
            {"median_ulps", numberJson(c.median_ulps)},
            {"median_ulps_differing", numberJson(c.median_ulps_differing)},
            {"mean_ulps", numberJson(c.mean_ulps)},
            {"first", at(c.first)},
            {"worst", at(c.worst)},
            {"worst_ulps", numberJson(c.worst_ulps)},
            {"worst_observed", numberJson(c.worst_observed)},
            {"worst_model", numberJson(c.worst_model)},
            {"worst_tile", at(c.worst_tile)},
            {"tile", Json::array({double(c.tile_rows), double(c.tile_cols)})},
            {"worst_tile_differing", double(c.worst_tile_differing)},
            {"nan_mismatches", double(c.nan_mismatches)},
            {"inf_mismatches", double(c.inf_mismatches)},
            {"observed_nan", double(c.observed_nan)},
            {"observed_inf", double(c.observed_inf)},
            {"not_representable", double(c.not_representable)},
            {"max_abs_diff", numberJson(c.max_abs_diff)},
            {"sqnr_db", numberJson(c.sqnr_db)},
            {"calc_diff", numberJson(c.calc_diff)}};
  if (c.outside_tolerance >= 0) o["outside_tolerance"] = double(c.outside_tolerance);
  Json h = Json::array();
  for (int64_t v : c.ulp_histogram) h.push_back(double(v));
  o["ulp_histogram"] = h;
  return o;
}

Json modelJson(const ModelFit& m) {
  return {{"name", m.model.name()},
          {"key", m.model.key()},
          {"preset", m.model.preset},
          {"identical", double(m.comparison.identical)},
          {"identical_share", m.comparison.identicalShare()},
          {"max_ulps", numberJson(m.comparison.max_ulps)},
          {"median_ulps", numberJson(m.comparison.median_ulps)},
          {"nonfinite_mismatches", double(m.comparison.nonfiniteMismatches())}};
}

} // namespace

std::string kernelCheckText(const KernelCheckResult& r, const KernelCheckConfig& cfg) {
  const OutputComparison& c = r.comparison;
  const std::string ot = toString(r.reference.options.output);
  std::string s;
  s += "\nkernel check: observed '" + cfg.observed + "' against " + r.reference.name() + " (output " + ot + ", " +
       std::to_string(c.rows) + " x " + std::to_string(c.cols) + ")\n";
  s += "  identical      " + std::to_string(c.identical) + " of " + std::to_string(c.elements) + " elements (" +
       share(c.identical, c.elements) + "); " + std::to_string(c.differing) + " differ, in " +
       std::to_string(c.differing_rows) + " rows and " + std::to_string(c.differing_cols) + " columns\n";
  s += "  ULP of " + ot + std::string(size_t(std::max(0, 6 - int(ot.size()))), ' ') + " max " + num(c.max_ulps) +
       (c.worst.valid() ? " at " + idx(c.worst) + " (observed " + shortestText(c.worst_observed) + ", reference " +
                              shortestText(c.worst_model) + ")"
                        : std::string()) +
       ", median " + num(c.median_ulps) + ", median of the differing " + num(c.median_ulps_differing) + "\n";
  if (c.first.valid())
    s += "  first differing element " + idx(c.first) + ": observed " + shortestText(c.first_observed) + ", reference " +
         shortestText(c.first_model) + "\n";
  if (c.worst_tile.valid())
    s += "  worst " + std::to_string(c.tile_rows) + "x" + std::to_string(c.tile_cols) + " tile " + idx(c.worst_tile) +
         ": " + std::to_string(c.worst_tile_differing) + " differing, max " + num(c.worst_tile_max_ulps) + " ULP\n";
  s += "  NaN / Inf mismatches " + std::to_string(c.nan_mismatches) + " / " + std::to_string(c.inf_mismatches) +
       "; observed NaN " + std::to_string(c.observed_nan) + ", Inf " + std::to_string(c.observed_inf) +
       "; values not of the output type " + std::to_string(c.not_representable) + "\n";
  s += "  max |observed - reference| " + num(c.max_abs_diff) + "; SQNR " + num(c.sqnr_db, 5) + " dB; calc_diff " +
       num(c.calc_diff, 3) + " (DeepGEMM / vLLM tests pass below 1e-3" +
       (c.calc_diff < 1e-3 && c.differing > 0
            ? ", as this output does although " + std::to_string(c.differing) + " elements differ"
            : std::string()) +
       ")\n";
  std::string hist;
  for (int b = 0; b < int(c.ulp_histogram.size()); ++b)
    if (c.ulp_histogram[size_t(b)] > 0)
      hist += (hist.empty() ? "" : ", ") + ulpHistogramLabel(b) + ": " + std::to_string(c.ulp_histogram[size_t(b)]);
  s += "  ULP histogram  " + (hist.empty() ? std::string("(no finite pair)") : hist) + "\n";
  if (r.fitted) {
    const FitResult& f = r.fit;
    // The models table: name, identical share, max ULP ("NaN/Inf" when non-finite values differ),
    // median ULP; the header line starts one column left of the rows.
    // The name column as wide as the longest model name (at least 56 characters).
    int name_width = 56;
    for (const auto& m : f.models) name_width = std::max(name_width, int(m.model.name().size()));
    s += "\n" + tableLine({"model (on all of D)", "identical", "max ULP", "median"}, {-(name_width + 2), 10, 11, 7});
    for (const auto& m : f.models)
      s += "  " + tableLine({m.model.name(), share(m.comparison.identical, m.comparison.elements),
                             m.comparison.nonfiniteMismatches() > 0 ? "NaN/Inf" : num(m.comparison.max_ulps),
                             num(m.comparison.median_ulps)},
                            {-name_width, 10, 11, 7});
    s += "\nfit over " + std::to_string(f.candidates) + " models (each on " + std::to_string(f.sample_elements) +
         " sampled outputs" +
         (f.refine_elements > 0 ? ", the best again on " + std::to_string(f.refine_elements) : std::string()) +
         "; the best on all of D, " + num(f.seconds, 3) + " s):\n  " + f.verdict + "\n";
    if (!f.warning.empty()) s += "warning: " + f.warning + "\n";
  }
  s += "\n" + r.verdict.line + "\n";
  return s;
}

Json kernelCheckJson(const KernelCheckResult& r, const KernelCheckConfig& cfg) {
  Json labels = Json::array();
  for (int b = 0; b < kUlpHistogramBins; ++b) labels.push_back(ulpHistogramLabel(b));
  Json j = {{"observed", cfg.observed},
            {"reference", r.reference.name()},
            {"criteria", cfg.criteria.describe()},
            {"passed", r.verdict.passed},
            {"verdict", r.verdict.line},
            {"failures", r.verdict.failures},
            {"comparison", comparisonJson(r.comparison)},
            {"ulp_histogram_bins", labels}};
  if (r.fitted) {
    const FitResult& f = r.fit;
    Json models = Json::array(), eq = Json::array();
    for (const auto& m : f.models) models.push_back(modelJson(m));
    for (const auto& m : f.equivalent) eq.push_back(m.name());
    Json fit = {{"models", models},
                {"best", modelJson(f.best)},
                {"equivalent", eq},
                {"equivalent_summary", f.equivalent_summary},
                {"all_equivalent", f.all_equivalent},
                {"candidates", double(f.candidates)},
                {"sample_elements", double(f.sample_elements)},
                {"refine_elements", double(f.refine_elements)},
                {"explained_within_1ulp", f.explained_within_1ulp},
                {"verdict", f.verdict},
                {"warning", f.warning},
                {"seconds", f.seconds}};
    if (f.has_runner_up) {
      fit["runner_up"] = modelJson(f.runner_up);
      fit["margin_points"] = f.margin_points;
    }
    j["fit"] = fit;
  }
  return j;
}

} // namespace fp8lab

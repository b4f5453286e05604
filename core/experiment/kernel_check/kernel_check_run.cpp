// FP8 Lab — the kernel check of a GEMM run (kernel_check_run.h).
#include "experiment/kernel_check/kernel_check_run.h"
#include "session/session_layout.h"

#include "formats/format.h"
#include "json/json_document.h"
#include "io/tensor_import.h"

#include <cmath>
#include <cstdio>

namespace fp8lab {

namespace {

using C = Issue::Code;

std::string shapeText(int64_t r, int64_t c) {
  return "[" + std::to_string(r) + ", " + std::to_string(c) + "]";
}

bool isFp8(OutputType t) {
  return t == OutputType::E4M3FN || t == OutputType::E5M2;
}

} // namespace

Result<ObservedOutput> observedOutputFromDataset(Dataset d, const std::string& origin, OutputType output, float scale_d,
                                                 int64_t m, int64_t n) {
  Result<ObservedOutput> r;
  const std::string where = "observed";
  std::vector<int64_t> shape = d.shape;
  if (shape.size() == 1) shape = {1, shape[0]};
  if (shape.size() != 2 || shape[0] != m || shape[1] != n) {
    std::string given;
    for (int64_t x : d.shape) given += (given.empty() ? "" : ", ") + std::to_string(x);
    r.add(C::InvalidArgument, where,
          "'" + origin + "' is [" + given + "] but D = A·B is " + shapeText(m, n) +
              " (M × N): the observed output must have D's shape");
    return r;
  }
  ObservedOutput& o = r.value;
  o.rows = m;
  o.cols = n;
  o.origin = origin;
  if (d.dtype == DType::Float64) {
    o.values.resize(d.f64.size());
    int64_t inexact = 0;
    for (size_t i = 0; i < d.f64.size(); ++i) {
      o.values[i] = static_cast<float>(d.f64[i]);
      inexact += !(double(o.values[i]) == d.f64[i]) && !std::isnan(d.f64[i]);
    }
    r.add(C::Computation, where,
          "'" + origin + "' holds float64 values; they were rounded to float32 (" + std::to_string(inexact) +
              " of them were not float32 numbers)",
          inexact > 0 ? Severity::Warning : Severity::Info);
    return r;
  }
  if (d.dtype == DType::Float32) {
    o.values = std::move(d.f32);
    return r;
  }
  if (d.dtype != DType::UInt8) {
    r.add(C::InvalidArgument, where,
          "'" + origin + "' holds " + toString(d.dtype) +
              " values: expected a float tensor (float32 / float16 / bfloat16) or the uint8 codes of an FP8 output");
    return r;
  }
  // One-byte codes: the codes of an FP8 output.
  const std::string dtype = attrString(d.attrs, "source_dtype").value_or("uint8");
  if (!isFp8(output)) {
    r.add(C::InvalidArgument, where,
          "'" + origin + "' holds one-byte codes (" + dtype + ") but the output type is " + toString(output) +
              ": codes are read as an FP8 output's (set the output to e4m3fn or e5m2 and output_quant_scale / "
              "--output-scale to the scale_D the kernel used)");
    return r;
  }
  const Format& f = output == OutputType::E4M3FN ? Format::E4M3FN() : Format::E5M2();
  if ((dtype == "F8_E4M3" && output != OutputType::E4M3FN) || (dtype == "F8_E5M2" && output != OutputType::E5M2) ||
      dtype == "F8_E8M0") {
    r.add(C::InvalidArgument, where,
          "'" + origin + "' holds " + dtype + " codes but the output type is " + toString(output));
    return r;
  }
  o.codes = std::move(d.u8);
  o.values.resize(o.codes.size());
  const double inv = 1.0 / double(scale_d);
  for (size_t i = 0; i < o.codes.size(); ++i) o.values[i] = static_cast<float>(f.decode(o.codes[i]) * inv);
  return r;
}

Result<ObservedOutput> loadObservedOutput(const std::string& spec, OutputType output, float scale_d, int64_t m,
                                          int64_t n) {
  auto values = importTensor(spec);
  if (values.ok()) {
    return observedOutputFromDataset(std::move(values.value), spec, output, scale_d, m, n);
  }
  // Not a float tensor: the codes of an FP8 output.
  auto codes = importCodeTensor(spec);
  if (!codes.ok()) {
    // Both readers failed: the float reader's message names the file's problem (missing file,
    // damaged header, unsupported dtype).
    Result<ObservedOutput> r;
    r.merge(values);
    r.add(C::InvalidArgument, "observed",
          "'" + spec +
              "' is neither a float tensor (float32 / float16 / bfloat16) nor the uint8 / F8 codes of an "
              "FP8 output: " +
              codes.errors());
    return r;
  }
  return observedOutputFromDataset(std::move(codes.value), spec, output, scale_d, m, n);
}

KernelCheckResult runKernelCheck(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& base,
                                 const ObservedOutput& observed, const KernelCheckConfig& cfg, Run& run, int64_t tile,
                                 const ProgressFn& progress) {
  KernelCheckOptions ko;
  ko.reference = cfg.reference;
  ko.criteria = cfg.criteria;
  ko.fit = cfg.fit;
  ko.fit_options.grid = cfg.grid;
  ko.fit_options.threads = base.threads;
  ko.fit_options.compare.tile = tile;
  ko.fit_options.compare.atol = cfg.criteria.atol;
  ko.fit_options.compare.rtol = cfg.criteria.rtol;
  KernelCheckResult res = checkKernelOutput(a, b, base, observed, ko, progress);
  const int64_t m = observed.rows, n = observed.cols;
  const OutputComparison& c = res.comparison;
  const std::string ot = toString(base.output);

  auto& od = run.putFloat32(layout::kObservedD, observed.values, m, n, "1",
                            "the kernel's output D [M,N] as values of the output type " + ot +
                                " (FP8 codes: decode(code) / scale_D)");
  od.attrs["origin"] = observed.origin;
  od.attrs["output_type"] = ot;
  if (!observed.codes.empty()) {
    auto& oc = run.datasets[layout::kObservedDCodes];
    oc = Dataset::uint8({m, n}, observed.codes, "code", "the kernel's FP8 output codes (of D · scale_D)");
    oc.attrs["format"] = ot;
    oc.attrs["quant_scale"] = static_cast<double>(base.output_quant_scale);
  }
  auto& rd = run.putFloat32(layout::kCheckDReference, res.reference_d, m, n, "1",
                            "D of the reference model the check compares with (" + res.reference.name() +
                                "), values of the output type " + ot);
  rd.attrs["model"] = res.reference.name();
  rd.attrs["model_key"] = res.reference.key();
  if (!res.maps.diff.empty()) {
    run.putFloat32(layout::kCheckDiff, std::move(res.maps.diff), m, n, "1",
                   "observed - reference per element (NaN where either is not finite)");
    run.putFloat32(layout::kCheckUlps, std::move(res.maps.ulps), m, n, "ULP of " + ot,
                   "distance of observed and reference in units in the last place of the output type " + ot +
                       " (NaN where either is not finite)");
  }
  {
    auto& h = run.datasets[layout::kCheckUlpHistogram];
    h = Dataset::int64({int64_t(c.ulp_histogram.size())}, c.ulp_histogram, "count",
                       "finite elements by ULP distance from the reference: bin 0 = 0 ULP, 1 = 1, 2 = 2, bin b >= 3 "
                       "= (2^(b-2), 2^(b-1)] ULP; labels in attribute bin_labels");
    Json labels = Json::array();
    for (int i = 0; i < kUlpHistogramBins; ++i) labels.push_back(ulpHistogramLabel(i));
    h.attrs["bin_labels"] = labels.dump();
  }
  // The model table (and, when fitted, the best and the runner-up).
  if (res.fitted) {
    const FitResult& f = res.fit;
    const int64_t k = static_cast<int64_t>(f.models.size());
    std::vector<int64_t> identical, nonfinite;
    std::vector<double> shares, maxu, medu, meanu;
    Json names = Json::array(), keys = Json::array();
    for (const auto& mf : f.models) {
      identical.push_back(mf.comparison.identical);
      nonfinite.push_back(mf.comparison.nonfiniteMismatches());
      shares.push_back(mf.comparison.identicalShare());
      maxu.push_back(mf.comparison.max_ulps);
      medu.push_back(mf.comparison.median_ulps);
      meanu.push_back(mf.comparison.mean_ulps);
      names.push_back(mf.model.name());
      keys.push_back(mf.model.key());
    }
    run.datasets[layout::checkModels("identical")] =
        Dataset::int64({k}, identical, "count", "elements identical to each model's D (model i: attribute names[i])");
    run.datasets[layout::checkModels("identical_share")] =
        Dataset::float64({k}, shares, "1", "share of elements identical to each model's D");
    run.datasets[layout::checkModels("max_ulps")] =
        Dataset::float64({k}, maxu, "ULP of " + ot, "max ULP distance from each model's D (finite pairs)");
    run.datasets[layout::checkModels("median_ulps")] =
        Dataset::float64({k}, medu, "ULP of " + ot, "median ULP distance from each model's D (finite pairs)");
    run.datasets[layout::checkModels("mean_ulps")] =
        Dataset::float64({k}, meanu, "ULP of " + ot, "mean ULP distance from each model's D (finite pairs)");
    run.datasets[layout::checkModels("nonfinite_mismatches")] =
        Dataset::int64({k}, nonfinite, "count", "NaN / Inf mismatches with each model's D");
    Attributes& ma = run.group_attrs[layout::kCheckModels];
    ma["names"] = names.dump();
    ma["keys"] = keys.dump();
    ma["meaning"] = std::string("the CPU reference's accumulation models on the run's operands, output type and "
                                "epilogue, each compared with the observed output on all of D");
  }
  Attributes& g = run.group_attrs[layout::kCheck];
  g["verdict"] = res.verdict.line;
  g["passed"] = int64_t(res.verdict.passed ? 1 : 0);
  g["reference"] = res.reference.name();
  g["reference_key"] = res.reference.key();
  g["criteria"] = cfg.criteria.describe();
  g["observed"] = observed.origin;
  g["output_type"] = ot;
  g["tile_rows"] = c.tile_rows;
  g["tile_cols"] = c.tile_cols;
  auto putIndex = [&](const char* name, ElementIndex e) {
    g[std::string(name) + "_row"] = e.row;
    g[std::string(name) + "_col"] = e.col;
  };
  putIndex("first", c.first);
  putIndex("worst", c.worst);
  putIndex("worst_tile", c.worst_tile);
  if (res.fitted) {
    const FitResult& f = res.fit;
    g["fit_verdict"] = f.verdict;
    g["fit_warning"] = f.warning;
    g["fit_best"] = f.best.model.name();
    g["fit_best_key"] = f.best.model.key();
    g["fit_runner_up"] = f.has_runner_up ? f.runner_up.model.name() : std::string();
    g["fit_equivalent"] = f.equivalent_summary;
    g["fit_candidates"] = f.candidates;
    g["fit_sample_elements"] = f.sample_elements;
    g["fit_refine_elements"] = f.refine_elements;
  }
  g["meaning"] = std::string("the kernel check: observed/D against the reference model (docs/gemm.md, \"Check my "
                             "kernel in CI\")");

  run.setMetric("check_passed", res.verdict.passed ? 1.0 : 0.0, "1", "1 when the observed output passed the check");
  run.setMetric("check_identical", double(c.identical), "count", "elements of observed D identical to the reference");
  run.setMetric("check_identical_share", c.identicalShare(), "1", "share of elements identical to the reference");
  run.setMetric("check_differing", double(c.differing), "count", "elements that differ from the reference");
  run.setMetric("check_differing_rows", double(c.differing_rows), "count", "rows holding a differing element");
  run.setMetric("check_differing_cols", double(c.differing_cols), "count", "columns holding a differing element");
  run.setMetric("check_max_ulps", c.max_ulps, "ULP", "max ULP distance of the output type from the reference");
  run.setMetric("check_median_ulps", c.median_ulps, "ULP", "median ULP distance (finite pairs)");
  run.setMetric("check_median_ulps_differing", c.median_ulps_differing, "ULP",
                "median ULP distance over the elements that differ");
  run.setMetric("check_nan_mismatches", double(c.nan_mismatches), "count", "one side NaN, the other not");
  run.setMetric("check_inf_mismatches", double(c.inf_mismatches), "count", "one side Inf, the other another value");
  run.setMetric("check_observed_nonfinite", double(c.observed_nan + c.observed_inf), "count",
                "NaN or Inf values in the observed output");
  run.setMetric("check_not_representable", double(c.not_representable), "count",
                "observed values that are not values of the output type");
  run.setMetric("check_max_abs_diff", c.max_abs_diff, "1", "max |observed - reference| (finite pairs)");
  run.setMetric("check_sqnr_db", c.sqnr_db, "dB", "10 log10(sum reference^2 / sum (observed - reference)^2)");
  run.setMetric("check_calc_diff", c.calc_diff, "1",
                "DeepGEMM's calc_diff: 1 - 2 sum(observed reference) / sum(observed^2 + reference^2)");
  if (c.outside_tolerance >= 0)
    run.setMetric("check_outside_tolerance", double(c.outside_tolerance), "count",
                  "elements outside |observed - reference| <= atol + rtol |reference|");
  if (res.fitted) {
    const FitResult& f = res.fit;
    run.setMetric("fit_best_identical_share", f.best.comparison.identicalShare(), "1",
                  "share of elements identical to the best-fitting model");
    run.setMetric("fit_best_max_ulps", f.best.comparison.max_ulps, "ULP", "max ULP distance from the best model");
    if (f.has_runner_up)
      run.setMetric("fit_margin_points", f.margin_points, "percentage points",
                    "identical share of the best model minus that of the runner-up");
    run.setMetric("fit_seconds", f.seconds, "s", "wall time of the fit");
  }
  return res;
}

} // namespace fp8lab

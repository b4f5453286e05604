// FP8 Lab — checking a kernel's GEMM output against the CPU reference's accumulation models
// (kernel_check.h).
//
// The fit screens every candidate model on a sample of D: a sub-GEMM of the sampled rows of A and
// columns of B, whose scales are the same numbers re-laid as one scale per (row, K-block) of A and
// per (K-block, column) of B. K, the windows along K, the promotion scales, the constant scales,
// the epilogue inputs and the output cast are unchanged, so every sampled output is bit for bit the
// output the full model computes at that (row, column): the screening is exact, only partial.
#include "gemm/kernel_check.h"

#include "formats/format.h"
#include "common/worker_pool.h"
#include "gemm/accumulation_preset.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <unordered_map>

namespace fp8lab {

namespace {

bool isFp8(OutputType t) {
  return t == OutputType::E4M3FN || t == OutputType::E5M2;
}

const Format& fp8Format(OutputType t) {
  return t == OutputType::E4M3FN ? Format::E4M3FN() : Format::E5M2();
}

std::string idx(ElementIndex e) {
  return "(" + std::to_string(e.row) + ", " + std::to_string(e.col) + ")";
}

std::string num(double v, int prec = 6) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char b[48];
  std::snprintf(b, sizeof b, "%.*g", prec, v);
  return b;
}

/// "97.31%" — never "100.00%" unless every element is identical.
std::string share(int64_t identical, int64_t elements) {
  if (elements <= 0 || identical == elements) return "100%";
  char b[32];
  const double p = 100.0 * double(identical) / double(elements);
  std::snprintf(b, sizeof b, "%.2f%%", p);
  if (std::string(b) == "100.00%") return "99.99+%";
  return b;
}

/// The spacing of the output type at `model` (for an observed value that is not of that type).
double spacingAt(OutputType t, float model, float scale_d) {
  switch (t) {
  case OutputType::FP32: {
    const float a = std::fabs(model);
    return double(std::nextafter(a, std::numeric_limits<float>::infinity())) - double(a);
  }
  case OutputType::BF16:
    return Format::BF16().ulp(model);
  case OutputType::FP16:
    return Format::FP16().ulp(model);
  case OutputType::E4M3FN:
  case OutputType::E5M2:
    return fp8Format(t).ulp(double(model) * double(scale_d)) / double(scale_d);
  }
  return 1.0;
}

uint64_t fnv(const void* p, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* c = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

uint64_t outputHash(const GemmOutput& o) {
  uint64_t h = fnv(o.d.data(), o.d.size() * sizeof(float));
  return fnv(o.d_codes.data(), o.d_codes.size(), h);
}

} // namespace

int64_t ulpDistance(uint32_t a, uint32_t b, int bits) {
  const uint32_t sign = 1u << (bits - 1), mag = sign - 1u;
  auto ord = [&](uint32_t c) { return (c & sign) ? -int64_t(c & mag) : int64_t(c & mag); };
  const int64_t d = ord(a) - ord(b);
  return d < 0 ? -d : d;
}

std::optional<uint32_t> outputCode(OutputType t, float value, float scale_d, int* bits) {
  int w = 32;
  std::optional<uint32_t> code;
  if (!std::isnan(value)) {
    const uint32_t u = std::bit_cast<uint32_t>(value);
    switch (t) {
    case OutputType::FP32:
      code = u;
      break;
    case OutputType::BF16:
      w = 16;
      if ((u & 0xFFFFu) == 0) code = u >> 16;
      break;
    case OutputType::FP16: {
      w = 16;
      const Format& f = Format::FP16();
      EncodeOptions eo;
      eo.saturate = false;
      const uint32_t c = f.encode(double(value), eo);
      if (std::bit_cast<uint32_t>(static_cast<float>(f.decode(c))) == u) code = c;
      break;
    }
    case OutputType::E4M3FN:
    case OutputType::E5M2: {
      // The model's d is float32(decode(code) · (1 / scale_D)) in double (cpu_gemm.cpp); the
      // observed value is of that form when it is a value of the output type.
      w = 8;
      const Format& f = fp8Format(t);
      EncodeOptions eo;
      eo.saturate = false;
      const double inv = 1.0 / double(scale_d);
      const uint32_t c = f.encode(double(value) * double(scale_d), eo);
      if (std::bit_cast<uint32_t>(static_cast<float>(f.decode(c) * inv)) == u) code = c;
      break;
    }
    }
  } else {
    w = t == OutputType::FP32 ? 32 : isFp8(t) ? 8 : 16;
  }
  if (bits) *bits = w;
  return code;
}

int ulpHistogramBin(double u) {
  if (!(u > 0)) return 0;
  if (u <= 1) return 1;
  const int b = 1 + static_cast<int>(std::ceil(std::log2(u)));
  return std::min(b, kUlpHistogramBins - 1);
}

std::string ulpHistogramLabel(int bin) {
  if (bin <= 0) return "0";
  if (bin == 1) return "1";
  if (bin == 2) return "2";
  if (bin >= kUlpHistogramBins - 1) return "> 2^" + std::to_string(kUlpHistogramBins - 3);
  const int64_t lo = (int64_t(1) << (bin - 2)) + 1, hi = int64_t(1) << (bin - 1);
  return std::to_string(lo) + "-" + std::to_string(hi);
}

OutputComparison compareOutputs(const ObservedOutput& obs, const std::vector<float>& model,
                                const std::vector<uint8_t>& model_codes, OutputType output, const CompareOptions& opt,
                                ComparisonMaps* maps) {
  const int64_t rows = obs.rows, cols = obs.cols, n = rows * cols;
  if (rows < 0 || cols < 0 || static_cast<int64_t>(obs.values.size()) != n)
    throw std::invalid_argument("the observed output holds " + std::to_string(obs.values.size()) +
                                " values, its shape [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "] needs " + std::to_string(n));
  if (static_cast<int64_t>(model.size()) != n)
    throw std::invalid_argument("the observed output is [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "] (" + std::to_string(n) + " values) but the model's D holds " +
                                std::to_string(model.size()));
  const bool fp8 = isFp8(output);
  if (!obs.codes.empty() && (!fp8 || static_cast<int64_t>(obs.codes.size()) != n))
    throw std::invalid_argument(fp8 ? "the observed codes do not match the observed values in number"
                                    : std::string("observed codes were given for a ") + toString(output) +
                                          " output; codes are for FP8 outputs");
  if (!model_codes.empty() && static_cast<int64_t>(model_codes.size()) != n)
    throw std::invalid_argument("the model's codes do not match its values in number");
  OutputComparison c;
  c.rows = rows;
  c.cols = cols;
  c.elements = n;
  c.output = output;
  const int64_t tile = std::max<int64_t>(1, opt.tile);
  c.tile_rows = std::max<int64_t>(1, std::min(tile, rows));
  c.tile_cols = std::max<int64_t>(1, std::min(tile, cols));
  const int64_t gr = rows > 0 ? (rows + c.tile_rows - 1) / c.tile_rows : 0;
  const int64_t gc = cols > 0 ? (cols + c.tile_cols - 1) / c.tile_cols : 0;
  std::vector<int64_t> tile_diff(static_cast<size_t>(gr * gc), 0);
  std::vector<double> tile_max(static_cast<size_t>(gr * gc), 0.0);
  std::vector<char> row_diff(static_cast<size_t>(rows), 0), col_diff(static_cast<size_t>(cols), 0);
  c.ulp_histogram.assign(kUlpHistogramBins, 0);
  std::vector<double> ulps_all, ulps_diff;
  ulps_all.reserve(static_cast<size_t>(n));
  const bool tol = opt.atol || opt.rtol;
  const double atol = opt.atol.value_or(0.0), rtol = opt.rtol.value_or(0.0);
  if (tol) c.outside_tolerance = 0;
  if (maps) {
    maps->diff.assign(static_cast<size_t>(n), 0.0f);
    maps->ulps.assign(static_cast<size_t>(n), 0.0f);
  }
  const float scale_d = opt.output_quant_scale;
  double sum_sq_model = 0, sum_sq_diff = 0, sum_ulps = 0, sum_xy = 0, sum_x2_y2 = 0;
  double worst_u = -1;
  const double inf = std::numeric_limits<double>::infinity();
  const float fnan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t e = 0; e < n; ++e) {
    const size_t k = static_cast<size_t>(e);
    const float ov = obs.values[k], mv = model[k];
    const bool on = std::isnan(ov), mn = std::isnan(mv), oi = std::isinf(ov), mi = std::isinf(mv);
    bool differ = false;
    double u = 0;
    if (on || mn || oi || mi) {
      c.observed_nan += on;
      c.observed_inf += oi;
      c.model_nan += mn;
      c.model_inf += mi;
      const bool match = (on && mn) || (oi && mi && std::signbit(ov) == std::signbit(mv));
      if (!match) {
        differ = true;
        u = inf;
        if (on != mn)
          ++c.nan_mismatches;
        else
          ++c.inf_mismatches;
      }
      if (tol && !match) {
        if (!c.first_outside_tolerance.valid()) c.first_outside_tolerance = {e / cols, e % cols};
        ++c.outside_tolerance;
      }
      if (maps) maps->diff[k] = maps->ulps[k] = fnan;
    } else {
      ++c.finite_pairs;
      int bits = 32;
      std::optional<uint32_t> oc, mc;
      if (fp8 && !obs.codes.empty())
        oc = obs.codes[k];
      else
        oc = outputCode(output, ov, scale_d, &bits);
      if (fp8 && !model_codes.empty())
        mc = model_codes[k];
      else
        mc = outputCode(output, mv, scale_d, &bits);
      if (fp8) bits = 8;
      if (oc && mc) {
        if (*oc != *mc) {
          differ = true;
          u = double(ulpDistance(*oc, *mc, bits));
          if (u == 0) ++c.signed_zero_only;
        }
      } else {
        if (!oc) {
          ++c.not_representable;
          if (!c.first_not_representable.valid()) c.first_not_representable = {e / cols, e % cols};
        }
        differ = std::bit_cast<uint32_t>(ov) != std::bit_cast<uint32_t>(mv);
        const double sp = spacingAt(output, mv, scale_d);
        u = differ ? (sp > 0 ? std::fabs(double(ov) - double(mv)) / sp : inf) : 0.0;
      }
      const double d = double(ov) - double(mv);
      sum_sq_diff += d * d;
      sum_sq_model += double(mv) * double(mv);
      sum_xy += double(ov) * double(mv);
      sum_x2_y2 += double(ov) * double(ov) + double(mv) * double(mv);
      c.max_abs_diff = std::max(c.max_abs_diff, std::fabs(d));
      ulps_all.push_back(u);
      if (differ) ulps_diff.push_back(u);
      sum_ulps += u;
      c.max_ulps = std::max(c.max_ulps, u);
      ++c.ulp_histogram[static_cast<size_t>(ulpHistogramBin(u))];
      if (tol && !(std::fabs(d) <= atol + rtol * std::fabs(double(mv)))) {
        if (!c.first_outside_tolerance.valid()) c.first_outside_tolerance = {e / cols, e % cols};
        ++c.outside_tolerance;
      }
      if (maps) {
        maps->diff[k] = static_cast<float>(d);
        maps->ulps[k] = static_cast<float>(u);
      }
    }
    if (!differ) {
      ++c.identical;
      continue;
    }
    ++c.differing;
    const int64_t i = e / cols, j = e % cols;
    if (!c.first.valid()) {
      c.first = {i, j};
      c.first_observed = ov;
      c.first_model = mv;
    }
    if (u > worst_u) {
      worst_u = u;
      c.worst = {i, j};
      c.worst_observed = ov;
      c.worst_model = mv;
      c.worst_ulps = u;
    }
    row_diff[static_cast<size_t>(i)] = 1;
    col_diff[static_cast<size_t>(j)] = 1;
    const size_t t = static_cast<size_t>((i / c.tile_rows) * gc + j / c.tile_cols);
    ++tile_diff[t];
    tile_max[t] = std::max(tile_max[t], u);
  }
  for (char r : row_diff) c.differing_rows += r;
  for (char r : col_diff) c.differing_cols += r;
  int64_t best_t = -1;
  for (size_t t = 0; t < tile_diff.size(); ++t) {
    if (tile_diff[t] == 0) continue;
    if (best_t < 0 || tile_diff[t] > tile_diff[static_cast<size_t>(best_t)] ||
        (tile_diff[t] == tile_diff[static_cast<size_t>(best_t)] && tile_max[t] > tile_max[static_cast<size_t>(best_t)]))
      best_t = static_cast<int64_t>(t);
  }
  if (best_t >= 0) {
    c.worst_tile = {best_t / gc, best_t % gc};
    c.worst_tile_differing = tile_diff[static_cast<size_t>(best_t)];
    c.worst_tile_max_ulps = tile_max[static_cast<size_t>(best_t)];
  }
  auto median = [](std::vector<double>& v) {
    if (v.empty()) return 0.0;
    const size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
    const double hi = v[mid];
    if (v.size() % 2 == 1) return hi;
    const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
    return (lo + hi) / 2;
  };
  c.mean_ulps = ulps_all.empty() ? 0.0 : sum_ulps / double(ulps_all.size());
  c.median_ulps = median(ulps_all);
  c.median_ulps_differing = median(ulps_diff);
  c.sqnr_db = sum_sq_diff == 0 ? inf : 10.0 * std::log10(sum_sq_model / sum_sq_diff);
  c.calc_diff = sum_x2_y2 > 0 ? 1.0 - 2.0 * sum_xy / sum_x2_y2 : 0.0;
  if (c.nonfiniteMismatches() > 0) {
    // A NaN / Inf against a finite value has no distance: the whole-D figures are undefined.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    c.max_ulps = c.sqnr_db = c.calc_diff = nan;
  }
  return c;
}

// ---- verdict ------------------------------------------------------------------------------------

std::string CheckCriteria::describe() const {
  std::string s;
  auto add = [&](const std::string& t) { s += (s.empty() ? "" : ", ") + t; };
  if (max_ulp) add("max " + num(*max_ulp) + " ULP");
  if (atol || rtol)
    add("|observed - reference| <= " + num(atol.value_or(0.0)) + " + " + num(rtol.value_or(0.0)) + "·|reference|");
  if (min_sqnr_db) add("SQNR >= " + num(*min_sqnr_db) + " dB");
  if (s.empty()) s = "0 ULP (bit-identical; no criterion given)";
  if (allow_nonfinite) s += ", non-finite outputs allowed where the reference has them";
  return s;
}

CheckVerdict judgeOutput(const OutputComparison& c, const CheckCriteria& k, const std::string& reference) {
  CheckVerdict v;
  auto at = [&](ElementIndex e) { return " at " + idx(e); };
  if (c.nonfiniteMismatches() > 0)
    v.failures.push_back(std::to_string(c.nan_mismatches) + " NaN and " + std::to_string(c.inf_mismatches) +
                         " Inf mismatches with " + reference + " (worst" + at(c.worst) + ": observed " +
                         num(c.worst_observed) + ", " + reference + " " + num(c.worst_model) + ")");
  if ((c.observed_nan + c.observed_inf) > 0 && !k.allow_nonfinite)
    v.failures.push_back("the observed output holds " + std::to_string(c.observed_nan) + " NaN and " +
                         std::to_string(c.observed_inf) +
                         " Inf values (non-finite outputs fail unless allowed: --allow-nonfinite / "
                         "\"allow_nonfinite\": true)");
  if (c.not_representable > 0 && c.output != OutputType::FP32)
    v.failures.push_back(std::to_string(c.not_representable) + " of " + std::to_string(c.finite_pairs) +
                         " finite observed values are not " + toString(c.output) + " values (first" +
                         at(c.first_not_representable) + "): the output was declared " + toString(c.output) +
                         " but the kernel wrote another type (a float32 D: pass --output fp32)");
  const double max_ulp = k.max_ulp.value_or(0.0);
  if ((k.max_ulp || !k.any()) && c.max_ulps > max_ulp)
    v.failures.push_back(std::to_string(c.differing) + " of " + std::to_string(c.elements) + " elements differ from " +
                         reference + ", max " + num(c.max_ulps) + " ULP" +
                         (c.worst.valid() && std::isfinite(c.worst_ulps) ? at(c.worst) : std::string()) + " > " +
                         num(max_ulp) + (k.max_ulp ? " allowed" : " (no criterion given: bit-identical required)"));
  if ((k.atol || k.rtol) && c.outside_tolerance > 0)
    v.failures.push_back(std::to_string(c.outside_tolerance) + " elements outside |observed - " + reference +
                         "| <= " + num(k.atol.value_or(0.0)) + " + " + num(k.rtol.value_or(0.0)) + "·|" + reference +
                         "| (first" + at(c.first_outside_tolerance) + ")");
  if (k.min_sqnr_db && !(c.sqnr_db >= *k.min_sqnr_db))
    v.failures.push_back("SQNR vs " + reference + " " + num(c.sqnr_db, 4) + " dB < " + num(*k.min_sqnr_db) + " dB");
  v.passed = v.failures.empty();
  std::string s = (v.passed ? "PASS: " : "FAIL: ") + std::to_string(c.identical) + " of " + std::to_string(c.elements) +
                  " elements identical to " + reference + " (" + share(c.identical, c.elements) + "), max " +
                  num(c.max_ulps) + " ULP";
  if (c.worst.valid()) s += at(c.worst);
  if (c.nonfiniteMismatches() > 0) s += ", " + std::to_string(c.nonfiniteMismatches()) + " NaN/Inf mismatches";
  s += "; criterion: " + k.describe();
  if (!v.passed) {
    s += "; failed: ";
    for (size_t i = 0; i < v.failures.size(); ++i) s += (i ? "; " : "") + v.failures[i];
  }
  v.line = s;
  return v;
}

// ---- models -------------------------------------------------------------------------------------

namespace {

std::string presetOf(const GemmOptions& o) {
  if (o.accumulation != Accumulation::FastAccum) return {};
  for (const auto& p : accumulationPresets())
    if (accumulationPresetMismatch(o, p).empty()) return p.name;
  return {};
}

AccumulationModel makeModel(const GemmOptions& base, Accumulation acc, int interval = 128, int bits = 14,
                            int group = 32, bool promotes = true, const MmaRules& rules = MmaRules{}) {
  AccumulationModel m;
  m.options = base;
  m.options.accumulation = acc;
  m.options.promotion_interval = interval;
  m.options.fast_accum_bits = bits;
  m.options.fast_accum_group = group;
  m.options.fast_accum_promotes = promotes;
  m.options.mma = rules;
  m.preset = presetOf(m.options);
  return m;
}

/// The rules of the measured NVIDIA instructions for `bits`: operand alignment, each group's sum a
/// binary32 truncated to min(bits − 1, 23) fraction bits (hopper_fp8 / ada_fp8: 13; blackwell: 23).
MmaRules measuredRules(int bits, MmaCEntry c) {
  MmaRules r;
  r.alignment = MmaAlignment::Operands;
  r.sum = MmaSum::Fp32;
  r.sum_bits = std::min(bits - 1, 23);
  r.sum_rounding = MmaRounding::TowardZero;
  r.c_entry = c;
  return r;
}

} // namespace

std::string AccumulationModel::name() const {
  const GemmOptions& o = options;
  std::string s;
  switch (o.accumulation) {
  case Accumulation::Exact:
    s = "exact";
    break;
  case Accumulation::FP32:
    s = "FP32";
    break;
  case Accumulation::SplitFP32:
    s = "split FP32, N_C = " + std::to_string(o.promotion_interval);
    break;
  case Accumulation::FastAccum: {
    const MmaRules& r = o.mma;
    if (r == MmaRules{}) {
      s = "fast, " + std::to_string(o.fast_accum_bits) + " bits, group " + std::to_string(o.fast_accum_group);
    } else {
      s = std::string("MMA ") + (r.alignment == MmaAlignment::Operands ? "e(a)+e(b)" : "product exponent") + ", " +
          std::to_string(o.fast_accum_bits - 1) + " fraction bits, group " + std::to_string(o.fast_accum_group);
      if (r.sum == MmaSum::Fp32)
        s += ", sum binary32 " + std::to_string(r.sum_bits) + " bits " + toString(r.sum_rounding);
      else
        s += ", exact sums";
      if (r.c_entry == MmaCEntry::Accumulator) s += ", C inside";
    }
    s += o.fast_accum_promotes ? ", N_C = " + std::to_string(o.promotion_interval) : std::string(", no promotion");
    break;
  }
  }
  if (!preset.empty()) s += " (" + preset + ")";
  return s;
}

std::string AccumulationModel::key() const {
  const GemmOptions& o = options;
  switch (o.accumulation) {
  case Accumulation::Exact:
    return "exact";
  case Accumulation::FP32:
    return "fp32";
  case Accumulation::SplitFP32:
    return "split/" + std::to_string(o.promotion_interval);
  case Accumulation::FastAccum: {
    std::string k = "fast/" + std::to_string(o.fast_accum_bits) + "/" + std::to_string(o.fast_accum_group) + "/" +
                    (o.fast_accum_promotes ? std::to_string(o.promotion_interval) : std::string("none"));
    const MmaRules& r = o.mma;
    if (!(r == MmaRules{}))
      k += std::string("/") + toString(r.alignment) + "/" + toString(r.sum) +
           (r.sum == MmaSum::Fp32 ? "-" + std::to_string(r.sum_bits) + "-" + toString(r.sum_rounding) : std::string()) +
           "/" + toString(r.c_entry);
    return k;
  }
  }
  return "?";
}

std::optional<AccumulationModel> namedModel(const std::string& name, const GemmOptions& base) {
  AccumulationModel m;
  m.options = base;
  if (const auto a = parseAccumulation(name)) {
    m.options.accumulation = *a;
  } else if (const auto p = accumulationPreset(name)) {
    m.options = withAccumulationPreset(base, *p);
  } else {
    return std::nullopt;
  }
  m.preset = presetOf(m.options);
  return m;
}

std::vector<AccumulationModel> referenceModels(const GemmOptions& base) {
  std::vector<AccumulationModel> v;
  v.push_back(makeModel(base, Accumulation::Exact));
  v.push_back(makeModel(base, Accumulation::FP32));
  v.push_back(makeModel(base, Accumulation::SplitFP32, 128));
  for (const auto& p : accumulationPresets()) {
    AccumulationModel m;
    m.options = withAccumulationPreset(base, p);
    m.preset = p.name;
    v.push_back(m);
  }
  // DeepSeek-V3's prose model, promoted and as FAST_ACCUM = 1: what the presets replaced.
  v.push_back(makeModel(base, Accumulation::FastAccum, 128, 14, 32, true));
  v.push_back(makeModel(base, Accumulation::FastAccum, 128, 14, 32, false));
  AccumulationModel own;
  own.options = base;
  own.preset = presetOf(base);
  const std::string k = own.key();
  if (std::none_of(v.begin(), v.end(), [&](const AccumulationModel& m) { return m.key() == k; })) v.push_back(own);
  return v;
}

namespace {

/// Every candidate of the fit: the reference models, then split × N_C, then fast × N_C (and no
/// promotion) × groups × bits; duplicates and parameter sets checkFastAccum refuses left out.
std::vector<AccumulationModel> candidateModels(const FitGrid& g, const GemmOptions& base) {
  std::vector<AccumulationModel> v = referenceModels(base);
  std::vector<std::string> keys;
  for (const auto& m : v) keys.push_back(m.key());
  auto add = [&](AccumulationModel m) {
    const std::string k = m.key();
    if (std::find(keys.begin(), keys.end(), k) != keys.end()) return;
    try {
      checkFastAccum(m.options);
    } catch (const std::invalid_argument&) {
      return;
    }
    keys.push_back(k);
    v.push_back(std::move(m));
  };
  for (int nc : g.intervals) add(makeModel(base, Accumulation::SplitFP32, nc));
  std::vector<std::pair<int, bool>> windows;
  for (int nc : g.intervals) windows.push_back({nc, true});
  if (g.no_promotion) windows.push_back({128, false});
  // Where C enters matters only when the GEMM reads C.
  std::vector<MmaCEntry> c_entries{MmaCEntry::Accumulator};
  if (base.beta != 0.0f && base.c) c_entries.push_back(MmaCEntry::Epilogue);
  for (const auto& [nc, promotes] : windows)
    for (int grp : g.groups)
      for (int b : g.bits) {
        if (g.measured_rules)
          for (MmaCEntry ce : c_entries)
            add(makeModel(base, Accumulation::FastAccum, nc, b, grp, promotes, measuredRules(b, ce)));
        if (g.prose_rules) add(makeModel(base, Accumulation::FastAccum, nc, b, grp, promotes));
      }
  return v;
}

} // namespace

std::vector<AccumulationModel> fitCandidates(const FitGrid& grid, const GemmOptions& base) {
  return candidateModels(grid, base);
}

std::vector<AccumulationModel> fitCandidates(const FitGrid& grid, const GemmOptions& base, const QuantizedTensor& a,
                                             const QuantizedTensor& b, size_t* reference_count) {
  const std::vector<AccumulationModel> all = candidateModels(grid, base);
  const size_t nref = referenceModels(base).size();
  auto cpu = makeCpuGemmBackend();
  std::vector<AccumulationModel> v;
  size_t kept_ref = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const MmaRules& r = all[i].options.mma;
    // Only the MMA paths with their own operand rules can refuse operands the others take.
    const bool own_rules = all[i].options.accumulation == Accumulation::FastAccum &&
                           (r.block_scales == MmaBlockScales::Inside || r.datapath == MmaDatapath::Cdna3);
    if (own_rules && !cpu->unsupportedReason(a, b, all[i].options).empty()) continue;
    v.push_back(all[i]);
    if (i < nref) ++kept_ref;
  }
  if (reference_count) *reference_count = kept_ref;
  return v;
}

int64_t FitGrid::candidateCount(const GemmOptions& base) const {
  return static_cast<int64_t>(candidateModels(*this, base).size());
}

std::optional<std::vector<int>> parseIntList(const std::string& text, int lo, int hi, std::string* error) {
  std::vector<int> out;
  auto bad = [&](const std::string& why) -> std::optional<std::vector<int>> {
    if (error) *error = "'" + text + "': " + why;
    return std::nullopt;
  };
  auto parseOne = [&](const std::string& t, int* v) {
    if (t.empty() || t.size() > 9) return false;
    for (char ch : t)
      if (ch < '0' || ch > '9') return false;
    *v = std::stoi(t);
    return true;
  };
  size_t p = 0;
  if (text.empty()) return bad("expected a number, a range A..B or a list A,B,C");
  while (p <= text.size()) {
    const size_t q = std::min(text.find(',', p), text.size());
    const std::string item = text.substr(p, q - p);
    const size_t dots = item.find("..");
    int a = 0, b = 0;
    if (dots != std::string::npos) {
      if (!parseOne(item.substr(0, dots), &a) || !parseOne(item.substr(dots + 2), &b) || a > b)
        return bad("'" + item + "' is not a range A..B with A <= B");
    } else {
      if (!parseOne(item, &a)) return bad("'" + item + "' is not a whole number");
      b = a;
    }
    if (a < lo || b > hi)
      return bad(std::to_string(a < lo ? a : b) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
    for (int x = a; x <= b; ++x) out.push_back(x);
    if (q == text.size()) break;
    p = q + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// ---- the fit ------------------------------------------------------------------------------------

namespace {

/// `count` indices spread evenly over [0, n) (all of them when count ≥ n), shifted by `phase`
/// (0..1) of a step so that two samples of the same size pick different rows.
std::vector<int64_t> spread(int64_t n, int64_t count, double phase) {
  std::vector<int64_t> v;
  if (count >= n) {
    v.resize(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), int64_t(0));
    return v;
  }
  for (int64_t s = 0; s < count; ++s) {
    const int64_t i = static_cast<int64_t>((double(s) + phase) * double(n) / double(count));
    if (v.empty() || i > v.back()) v.push_back(std::min(i, n - 1));
  }
  return v;
}

/// A's rows `rows` with one scale per (row, K-block): the same dequant factor per element.
QuantizedTensor selectRows(const QuantizedTensor& a, const std::vector<int64_t>& rows) {
  QuantizedTensor s;
  s.rows = static_cast<int64_t>(rows.size());
  s.cols = a.cols;
  s.format = a.format;
  s.tensor_scale = a.tensor_scale;
  s.scale_op = a.scale_op;
  s.strategy = a.strategy;
  s.block = {1, a.block.cols};
  const int64_t bc = a.blockCols();
  s.codes.resize(static_cast<size_t>(s.rows * s.cols));
  s.dequant_scales.resize(static_cast<size_t>(s.rows * bc));
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t i = rows[r];
    std::memcpy(s.codes.data() + r * size_t(a.cols), a.codes.data() + size_t(i * a.cols), size_t(a.cols));
    for (int64_t kb = 0; kb < bc; ++kb)
      s.dequant_scales[r * size_t(bc) + size_t(kb)] = a.dequant_scales[size_t((i / a.block.rows) * bc + kb)];
  }
  return s;
}

/// B's columns `cols` with one scale per (K-block, column).
QuantizedTensor selectCols(const QuantizedTensor& b, const std::vector<int64_t>& cols) {
  QuantizedTensor s;
  s.rows = b.rows;
  s.cols = static_cast<int64_t>(cols.size());
  s.format = b.format;
  s.tensor_scale = b.tensor_scale;
  s.scale_op = b.scale_op;
  s.strategy = b.strategy;
  s.block = {b.block.rows, 1};
  const int64_t br = b.blockRows(), bc = b.blockCols();
  s.codes.resize(static_cast<size_t>(s.rows * s.cols));
  s.dequant_scales.resize(static_cast<size_t>(br * s.cols));
  for (int64_t k = 0; k < b.rows; ++k)
    for (size_t c = 0; c < cols.size(); ++c)
      s.codes[size_t(k) * cols.size() + c] = b.codes[size_t(k * b.cols + cols[c])];
  for (int64_t kb = 0; kb < br; ++kb)
    for (size_t c = 0; c < cols.size(); ++c)
      s.dequant_scales[size_t(kb) * cols.size() + c] = b.dequant_scales[size_t(kb * bc + cols[c] / b.block.cols)];
  return s;
}

/// One sample of D: the sub-operands, the sub-epilogue and the observed values there.
struct Sample {
  QuantizedTensor a, b;
  GemmOptions base;
  ObservedOutput observed;
  bool whole = false; ///< the sample is all of D
};

Sample makeSample(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& base,
                  const ObservedOutput& obs, int64_t nr, int64_t nc, double phase) {
  Sample s;
  const std::vector<int64_t> rows = spread(a.rows, nr, phase), cols = spread(b.cols, nc, phase);
  s.whole = static_cast<int64_t>(rows.size()) == a.rows && static_cast<int64_t>(cols.size()) == b.cols;
  s.a = selectRows(a, rows);
  s.b = selectCols(b, cols);
  s.base = base;
  const size_t R = rows.size(), C = cols.size();
  if (base.c) {
    auto c = std::make_shared<std::vector<float>>(R * C);
    for (size_t r = 0; r < R; ++r)
      for (size_t j = 0; j < C; ++j) (*c)[r * C + j] = (*base.c)[size_t(rows[r] * b.cols + cols[j])];
    s.base.c = c;
  }
  if (base.bias) {
    auto bias = std::make_shared<std::vector<float>>(C);
    for (size_t j = 0; j < C; ++j) (*bias)[j] = (*base.bias)[size_t(cols[j])];
    s.base.bias = bias;
  }
  s.observed.rows = static_cast<int64_t>(R);
  s.observed.cols = static_cast<int64_t>(C);
  s.observed.origin = obs.origin;
  s.observed.values.resize(R * C);
  if (!obs.codes.empty()) s.observed.codes.resize(R * C);
  for (size_t r = 0; r < R; ++r)
    for (size_t j = 0; j < C; ++j) {
      const size_t from = size_t(rows[r] * obs.cols + cols[j]);
      s.observed.values[r * C + j] = obs.values[from];
      if (!obs.codes.empty()) s.observed.codes[r * C + j] = obs.codes[from];
    }
  return s;
}

/// Ranking of a candidate on what it was compared on: most identical, fewest non-finite
/// mismatches, smallest max ULP, smallest mean ULP.
struct Score {
  int64_t identical = 0, elements = 0, nonfinite = 0;
  double max_ulps = 0, sum_ulps = 0;
  void add(const OutputComparison& c) {
    identical += c.identical;
    elements += c.elements;
    nonfinite += c.nonfiniteMismatches();
    max_ulps = std::max(max_ulps, c.max_ulps);
    sum_ulps += c.mean_ulps * double(c.finite_pairs);
  }
  bool betterThan(const Score& o) const {
    if (identical != o.identical) return identical > o.identical;
    if (nonfinite != o.nonfinite) return nonfinite < o.nonfinite;
    if (max_ulps != o.max_ulps) return max_ulps < o.max_ulps;
    return sum_ulps < o.sum_ulps;
  }
};

bool better(const OutputComparison& a, const OutputComparison& b) {
  Score x, y;
  x.add(a);
  y.add(b);
  return x.betterThan(y);
}

/// One candidate's screening outputs (all samples it ran on, concatenated) and score.
struct Screened {
  size_t candidate = 0;
  std::vector<float> out;
  std::vector<uint8_t> codes;
  uint64_t hash = 0;
  Score score;
};

/// Classes of equal outputs among `items` (by hash, confirmed by comparing the vectors), ranked by
/// score; each class lists its members in candidate order.
std::vector<std::vector<size_t>> classesOf(const std::vector<Screened>& items) {
  std::vector<std::vector<size_t>> classes;
  std::unordered_multimap<uint64_t, size_t> by_hash; // hash → class
  for (size_t i = 0; i < items.size(); ++i) {
    bool placed = false;
    const auto range = by_hash.equal_range(items[i].hash);
    for (auto it = range.first; it != range.second && !placed; ++it) {
      const Screened& rep = items[classes[it->second].front()];
      if (rep.out.size() == items[i].out.size() &&
          std::memcmp(rep.out.data(), items[i].out.data(), rep.out.size() * sizeof(float)) == 0 &&
          rep.codes == items[i].codes) {
        classes[it->second].push_back(i);
        placed = true;
      }
    }
    if (!placed) {
      by_hash.emplace(items[i].hash, classes.size());
      classes.push_back({i});
    }
  }
  for (auto& c : classes)
    std::sort(c.begin(), c.end(), [&](size_t x, size_t y) { return items[x].candidate < items[y].candidate; });
  std::stable_sort(classes.begin(), classes.end(), [&](const std::vector<size_t>& x, const std::vector<size_t>& y) {
    const Score& a = items[x.front()].score;
    const Score& b = items[y.front()].score;
    if (a.betterThan(b)) return true;
    if (b.betterThan(a)) return false;
    return items[x.front()].candidate < items[y.front()].candidate;
  });
  return classes;
}

/// The models summarised: split N_C lists, fast bit ranges per (group, window).
std::string summarise(const std::vector<AccumulationModel>& ms) {
  std::vector<std::string> parts;
  std::vector<int> split;
  // (rules, group, N_C or 0 = none) → bits; rules: "" for the prose model, else the rule words
  std::map<std::tuple<std::string, int, int>, std::vector<int>> fast;
  for (const auto& m : ms) {
    const GemmOptions& o = m.options;
    if (o.accumulation == Accumulation::SplitFP32) {
      split.push_back(o.promotion_interval);
    } else if (o.accumulation == Accumulation::FastAccum) {
      std::string rules;
      if (!(o.mma == MmaRules{}))
        rules = std::string(o.mma.alignment == MmaAlignment::Operands ? "e(a)+e(b)" : "product exponent") +
                (o.mma.sum == MmaSum::Fp32 ? ", binary32 sums" : ", exact sums") +
                (o.mma.c_entry == MmaCEntry::Accumulator ? ", C inside" : "");
      // the MMA rules count fraction bits below the alignment exponent, the prose model significant bits
      fast[{rules, o.fast_accum_group, o.fast_accum_promotes ? o.promotion_interval : 0}].push_back(
          rules.empty() ? o.fast_accum_bits : o.fast_accum_bits - 1);
    } else {
      parts.push_back(m.name());
    }
  }
  auto ranges = [](std::vector<int> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    std::string s;
    for (size_t i = 0; i < v.size();) {
      size_t j = i;
      while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
      s += (s.empty() ? "" : ", ") + std::to_string(v[i]) + (j > i ? ".." + std::to_string(v[j]) : std::string());
      i = j + 1;
    }
    return s;
  };
  if (!split.empty()) parts.push_back("split FP32, N_C = " + ranges(split));
  for (const auto& [k, bits] : fast) {
    const auto& [rules, group, nc] = k;
    parts.push_back((rules.empty() ? "fast, " : "MMA " + rules + ", ") + ranges(bits) +
                    (rules.empty() ? " bits, group " : " fraction bits, group ") + std::to_string(group) +
                    (nc ? ", N_C = " + std::to_string(nc) : std::string(", no promotion")));
  }
  std::string s;
  const size_t shown = std::min<size_t>(parts.size(), 8);
  for (size_t i = 0; i < shown; ++i) s += (i ? "; " : "") + parts[i];
  if (parts.size() > shown) s += "; and " + std::to_string(parts.size() - shown) + " more";
  return s;
}

/// body(i) for i in [0, n) on `threads` workers (0 = all cores), each item on one thread (the
/// sample GEMMs are too small to split further), results written by index so the order never
/// matters; progress from the calling worker (from → to), Cancelled and the first exception of any
/// item stop the others and are rethrown here.
void eachInParallel(size_t n, int threads, const ProgressFn& progress, double from, double to, const std::string& stage,
                    const std::function<void(size_t)>& body) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  runOnWorkers(static_cast<int>(std::min<size_t>(size_t(threads), std::max<size_t>(n, 1))), [&](int w) {
    for (;;) {
      if (stop.load(std::memory_order_relaxed)) return;
      const size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        body(i);
        const size_t d = done.fetch_add(1) + 1;
        if (w == 0) reportProgress(progress, from + (to - from) * double(d) / double(n), stage);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        stop = true;
        return;
      }
    }
  });
  if (error) std::rethrow_exception(error);
}

/// A full evaluation: the comparison on all of D and the hash of the output.
struct FullResult {
  OutputComparison comparison;
  uint64_t hash = 0;
};

using FullCache = std::map<std::string, FullResult>;

/// True when every finite value of `v` is a value of `t` (FP16 / BF16) and enough of them are not:
/// at least 16 non-zero values (zeros and a handful of values are values of every type, which says
/// nothing about what the kernel wrote).
bool allValuesOf(const std::vector<float>& v, OutputType t) {
  int64_t nonzero = 0;
  for (float x : v) {
    if (!std::isfinite(x)) continue;
    nonzero += x != 0.0f;
    if (!outputCode(t, x, 1.0f)) return false;
  }
  return nonzero >= 16;
}

/// What the comparison with the best model shows, as advice: the output type the values really
/// have, then where the differences are (concentrated in rows, columns or a tile: a scale or a
/// layout; spread over all of D: a summation order or precision, small or large).
std::string noFitEvidence(const ObservedOutput& obs, const OutputComparison& c, OutputType declared) {
  if (declared == OutputType::FP32 && c.not_representable == 0) {
    if (allValuesOf(obs.values, OutputType::BF16))
      return "every value is a BF16 value: the kernel wrote BF16 — pass --output bf16 (config \"output\": \"bf16\")";
    if (allValuesOf(obs.values, OutputType::FP16))
      return "every value is an FP16 value: the kernel wrote FP16 (pass --output fp16) or accumulated in float16, "
             "whose 11-bit sums no FP32 model here reproduces";
  }
  const double rows = double(c.rows), cols = double(c.cols);
  // One tile holding most of the differences counts only when it is a small part of D.
  const double tile_share = double(std::min<int64_t>(c.tile_rows, c.rows) * std::min<int64_t>(c.tile_cols, c.cols)) /
                            std::max(1.0, double(c.elements));
  const bool concentrated = c.differing_rows < rows / 2 || c.differing_cols < cols / 2 ||
                            (tile_share < 0.25 && double(c.worst_tile_differing) > 0.5 * double(c.differing));
  if (concentrated)
    return "the differences sit in " + std::to_string(c.differing_rows) + " of " + std::to_string(c.rows) +
           " rows and " + std::to_string(c.differing_cols) + " of " + std::to_string(c.cols) +
           " columns: look for a wrong scale, scale layout, operand layout or epilogue there rather than a summation "
           "order";
  if (c.median_ulps_differing <= 16)
    return "the differences are small (median " + num(c.median_ulps_differing) + " ULP, max " + num(c.max_ulps) +
           ") and spread over every row and column: the kernel rounds in "
           "an order or precision none of these models has — for example it applies the scales to the operands "
           "before an FP32 GEMM, or sums in another order; a wrong scale would put large errors in whole blocks";
  return "the differences are spread over every row and column (median " + num(c.median_ulps_differing) +
         " ULP): the kernel accumulates with less precision than any model here (a float16 or BF16 accumulator, "
         "or a sum kept in fewer bits) rather than using a wrong scale, which would show in whole blocks";
}

FitResult fitImpl(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& base,
                  const ObservedOutput& observed, const FitOptions& opt, const ProgressFn& progress, FullCache& cache) {
  const auto t0 = std::chrono::steady_clock::now();
  if (observed.rows != a.rows || observed.cols != b.cols)
    throw std::invalid_argument("the observed output is [" + std::to_string(observed.rows) + ", " +
                                std::to_string(observed.cols) + "] but D = A·B is [" + std::to_string(a.rows) + ", " +
                                std::to_string(b.cols) + "]");
  auto cpu = makeCpuGemmBackend();
  const int threads = opt.threads > 0 ? opt.threads : base.threads;
  GemmOptions gbase = base;
  CompareOptions copt = opt.compare;
  copt.output_quant_scale = base.output_quant_scale;
  FitResult res;
  size_t nref = 0;
  const std::vector<AccumulationModel> cands = fitCandidates(opt.grid, gbase, a, b, &nref);
  res.candidates = static_cast<int64_t>(cands.size());

  auto full = [&](const AccumulationModel& m) -> const FullResult& {
    const std::string k = m.key();
    auto it = cache.find(k);
    if (it != cache.end()) return it->second;
    const GemmOutput o = cpu->run(a, b, m.options);
    FullResult fr;
    fr.comparison = compareOutputs(observed, o.d, o.d_codes, m.options.output, copt);
    fr.hash = outputHash(o);
    return cache.emplace(k, std::move(fr)).first->second;
  };
  // 1. The reference models on all of D (progress 0 – 0.35).
  for (size_t i = 0; i < nref; ++i) {
    reportProgress(progress, 0.35 * double(i) / double(nref), "fit: " + cands[i].name());
    res.models.push_back({cands[i], full(cands[i]).comparison});
  }
  // 2. Screening: every candidate on the first sample (0.35 – 0.8).
  const Sample s1 = makeSample(a, b, gbase, observed, opt.sample_rows, opt.sample_cols, 0.5);
  res.sample_elements = s1.observed.rows * s1.observed.cols;
  std::vector<Screened> screened(cands.size());
  eachInParallel(cands.size(), threads, progress, 0.35, 0.8, "fit: screening models", [&](size_t i) {
    GemmOptions o = cands[i].options;
    o.c = s1.base.c;
    o.bias = s1.base.bias;
    o.threads = 1;
    const GemmOutput out = cpu->run(s1.a, s1.b, o);
    Screened& sc = screened[i];
    sc.candidate = i;
    sc.score.add(compareOutputs(s1.observed, out.d, out.d_codes, o.output, copt));
    sc.out = out.d;
    sc.codes = out.d_codes;
    sc.hash = outputHash(out);
  });
  std::vector<std::vector<size_t>> classes = classesOf(screened);
  const bool one_class_on_s1 = classes.size() == 1;
  // 3. Refinement: the best candidates on a second, larger sample (0.8 – 0.9): every member of the
  // best first-sample class (up to refine_candidates), then the representatives of the next classes
  // until there are at least three classes and refine_candidates candidates.
  int64_t unrefined = 0; // members of the best first-sample class left out of the refinement
  if (!s1.whole) {
    std::vector<size_t> chosen; // candidate indices (== indices into `screened`)
    const size_t limit = static_cast<size_t>(std::max(3, opt.refine_candidates));
    for (size_t k : classes.front())
      if (chosen.size() < limit) chosen.push_back(k);
    unrefined = static_cast<int64_t>(classes.front().size() - chosen.size());
    for (size_t c = 1; c < classes.size() && (c < 3 || chosen.size() < limit); ++c)
      chosen.push_back(classes[c].front());
    const Sample s2 = makeSample(a, b, gbase, observed, opt.refine_rows, opt.refine_cols, 0.25);
    res.refine_elements = s2.observed.rows * s2.observed.cols;
    std::vector<Screened> refined(chosen.size());
    eachInParallel(chosen.size(), threads, progress, 0.8, 0.9, "fit: refining the best", [&](size_t n) {
      const Screened& first = screened[chosen[n]];
      GemmOptions o = cands[first.candidate].options;
      o.c = s2.base.c;
      o.bias = s2.base.bias;
      o.threads = 1;
      const GemmOutput out = cpu->run(s2.a, s2.b, o);
      Screened r = first;
      r.score.add(compareOutputs(s2.observed, out.d, out.d_codes, o.output, copt));
      r.out.insert(r.out.end(), out.d.begin(), out.d.end());
      r.codes.insert(r.codes.end(), out.d_codes.begin(), out.d_codes.end());
      r.hash = fnv(out.d.data(), out.d.size() * sizeof(float), r.hash);
      r.hash = fnv(out.d_codes.data(), out.d_codes.size(), r.hash);
      refined[n] = std::move(r);
    });
    classes.clear();
    for (const auto& c : classesOf(refined)) {
      std::vector<size_t> v;
      for (size_t i : c) v.push_back(refined[i].candidate);
      classes.push_back(v);
    }
  }
  res.all_equivalent = one_class_on_s1 && classes.size() == 1;
  res.unscreened_equivalent = res.all_equivalent ? 0 : unrefined;
  // 4. The best classes on all of D (0.9 – 1).
  struct Evaluated {
    size_t candidate;
    FullResult full;
  };
  std::vector<Evaluated> evaluated;
  for (size_t i = 0; i < nref; ++i) evaluated.push_back({i, full(cands[i])});
  const size_t checks = static_cast<size_t>(std::max(1, opt.full_checks));
  for (size_t c = 0; c < classes.size() && c < checks; ++c) {
    const size_t cand = classes[c].front();
    reportProgress(progress, 0.9 + 0.1 * double(c) / double(checks), "fit: checking " + cands[cand].name());
    if (cand >= nref) evaluated.push_back({cand, full(cands[cand])});
  }
  size_t best = 0;
  for (size_t i = 1; i < evaluated.size(); ++i)
    if (better(evaluated[i].full.comparison, evaluated[best].full.comparison)) best = i;
  res.best = {cands[evaluated[best].candidate], evaluated[best].full.comparison};
  int64_t runner = -1;
  for (size_t i = 0; i < evaluated.size(); ++i) {
    if (evaluated[i].full.hash == evaluated[best].full.hash) continue;
    if (runner < 0 || better(evaluated[i].full.comparison, evaluated[size_t(runner)].full.comparison))
      runner = static_cast<int64_t>(i);
  }
  if (runner >= 0) {
    res.has_runner_up = true;
    res.runner_up = {cands[evaluated[size_t(runner)].candidate], evaluated[size_t(runner)].full.comparison};
    res.margin_points = 100.0 * (res.best.comparison.identicalShare() - res.runner_up.comparison.identicalShare());
  }
  // Equivalents: the best's class on the samples, and every fully compared model with its output.
  const size_t best_cand = evaluated[best].candidate;
  std::vector<size_t> eq;
  for (const auto& c : classes)
    if (std::find(c.begin(), c.end(), best_cand) != c.end())
      for (size_t k : c)
        if (k != best_cand) eq.push_back(k);
  for (const auto& e : evaluated)
    if (e.candidate != best_cand && e.full.hash == evaluated[best].full.hash &&
        std::find(eq.begin(), eq.end(), e.candidate) == eq.end())
      eq.push_back(e.candidate);
  std::sort(eq.begin(), eq.end());
  for (size_t k : eq) res.equivalent.push_back(cands[k]);
  res.equivalent_summary = summarise(res.equivalent);

  const OutputComparison& bc = res.best.comparison;
  res.explained_within_1ulp = bc.nonfiniteMismatches() == 0 && bc.max_ulps <= 1;
  std::string v;
  if (bc.identical == bc.elements)
    v = "bit-identical to " + res.best.model.name() + ": 100% of " + std::to_string(bc.elements) + " elements";
  else
    v = "best fit: " + res.best.model.name() + ": " + share(bc.identical, bc.elements) + " identical, max " +
        num(bc.max_ulps) + " ULP";
  if (res.all_equivalent)
    v += " (every one of the " + std::to_string(res.candidates) +
         " candidates gives this output on the sampled outputs: these operands cannot tell the models apart)";
  else if (!res.equivalent.empty())
    v += " (the same output: " + res.equivalent_summary + ")";
  if (res.unscreened_equivalent > 0)
    v += " (and " + std::to_string(res.unscreened_equivalent) + " more candidates equal on the first " +
         std::to_string(res.sample_elements) + " sampled outputs)";
  if (res.has_runner_up) {
    char m[32];
    std::snprintf(m, sizeof m, "%.2f", res.margin_points);
    v += "; runner-up " + res.runner_up.model.name() + ": " +
         share(res.runner_up.comparison.identical, res.runner_up.comparison.elements) + " identical, max " +
         num(res.runner_up.comparison.max_ulps) + " ULP (margin " + m + " points)";
  }
  res.verdict = v;
  if (!res.explained_within_1ulp)
    res.warning = "no accumulation model explains the output within 1 ULP: the best, " + res.best.model.name() +
                  ", is " + num(bc.worst_ulps) + " ULP off at " + idx(bc.worst) + " (observed " +
                  num(bc.worst_observed) + ", model " + num(bc.worst_model) + "), " + std::to_string(bc.differing) +
                  " elements differ in " + std::to_string(bc.differing_rows) + " rows and " +
                  std::to_string(bc.differing_cols) + " columns, most in tile " + idx(bc.worst_tile) + " (" +
                  std::to_string(bc.worst_tile_differing) + "): " + noFitEvidence(observed, bc, base.output);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  reportProgress(progress, 1.0, "fit");
  return res;
}

} // namespace

FitResult fitAccumulation(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& base,
                          const ObservedOutput& observed, const FitOptions& opt, const ProgressFn& progress) {
  FullCache cache;
  return fitImpl(a, b, base, observed, opt, progress, cache);
}

KernelCheckResult checkKernelOutput(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& base,
                                    const ObservedOutput& observed, const KernelCheckOptions& opt,
                                    const ProgressFn& progress) {
  const auto ref = namedModel(opt.reference, base);
  if (!ref)
    throw std::invalid_argument("unknown reference model '" + opt.reference + "' (" + accumulationNames() + ", " +
                                accumulationPresetNames() + ")");
  if (observed.rows != a.rows || observed.cols != b.cols)
    throw std::invalid_argument("the observed output is [" + std::to_string(observed.rows) + ", " +
                                std::to_string(observed.cols) + "] but D = A·B is [" + std::to_string(a.rows) + ", " +
                                std::to_string(b.cols) + "]");
  KernelCheckResult r;
  r.reference = *ref;
  reportProgress(progress, 0.0, "reference " + ref->name());
  auto cpu = makeCpuGemmBackend();
  GemmOutput out = cpu->run(a, b, ref->options);
  CompareOptions copt = opt.fit_options.compare;
  copt.output_quant_scale = base.output_quant_scale;
  r.comparison = compareOutputs(observed, out.d, out.d_codes, base.output, copt, opt.maps ? &r.maps : nullptr);
  r.verdict = judgeOutput(r.comparison, opt.criteria, ref->name());
  FullCache cache;
  cache[ref->key()] = {r.comparison, outputHash(out)};
  r.reference_d = std::move(out.d);
  r.reference_codes = std::move(out.d_codes);
  if (opt.fit) {
    ProgressFn sub;
    if (progress) sub = [&](double f, const std::string& s) { return progress(0.05 + 0.95 * f, s); };
    r.fit = fitImpl(a, b, base, observed, opt.fit_options, sub, cache);
    r.fitted = true;
  }
  reportProgress(progress, 1.0, "check");
  return r;
}

} // namespace fp8lab

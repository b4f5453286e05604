// FP8 Lab — the GEMM error experiment (see gemm_run.h).
#include "experiment/gemm_run.h"
#include "session/session_layout.h"

#include "experiment/gemm_operands.h"
#include "experiment/operand_checks.h"

#include "metrics/block_stats.h"
#include "training/diagnostics.h"
#include "training/training_session.h"

#include "formats/format.h"
#include "gemm/error_split.h"
#include "common/number_text.h"
#include "common/worker_pool.h"
#include "io/fp8_checkpoint.h"
#include "io/json_document.h"
#include "io/tensor_import.h"
#include "metrics/error_metrics.h"
#include "metrics/robust_metrics.h"
#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <algorithm>
#include <chrono>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>

namespace fp8lab {

using C = Issue::Code;

namespace {

ProgressFn sub(const ProgressFn& p, double from, double to) {
  if (!p) return {};
  return [=](double f, const std::string& s) { return p(from + (to - from) * std::clamp(f, 0.0, 1.0), s); };
}

/// What the robust statistics of a run read (views of the run's vectors).
struct RobustInputs {
  const GemmOperand *a, *b;
  const std::vector<double>*ra, *rb; ///< rotated operands (Hadamard presets) or empty
  const QuantizedTensor *qa, *qb;    ///< the quantized operands
  const std::vector<double>* ideal;  ///< the float64 reference D (epilogue applied)
  const std::vector<float>* d;       ///< the backend's D
  int64_t m, k, n;
};

RobustInputs robustInputs(const GemmOperand& a, const GemmOperand& b, const std::vector<double>& ra,
                          const std::vector<double>& rb, const QuantizedTensor& qa, const QuantizedTensor& qb,
                          const std::vector<double>& ideal, const std::vector<float>& d, int64_t m, int64_t k,
                          int64_t n) {
  return RobustInputs{&a, &b, &ra, &rb, &qa, &qb, &ideal, &d, m, k, n};
}

/// The metrics that survive outliers (metrics/robust_metrics.h, docs/gemm.md "Metrics that survive
/// outliers"), for D and per operand, and D's SQNR with one operand quantized at a time. `no_split`:
/// pre-quantized or rotated operands, where quantizing one operand alone is not defined (no
/// unquantized input, or a basis change that cancels only between both operands).
void putRobustMetrics(Run& run, const RobustInputs& in, const GemmExperimentConfig& cfg, bool no_split,
                      const ProgressFn& progress) {
  const RobustErrorRule rule;
  char text[400];
  std::snprintf(text, sizeof text,
                "relative errors over |reference| > %g x median |reference| (finite, non-zero); outlier channel: a "
                "row or column whose max |x| > %g x the median of the rows' (columns') max |x|; D's bulk leaves out "
                "the rows of A's outlier rows and the columns of B's outlier columns",
                rule.floor_fraction, rule.outlier_k);
  run.attrs["robust_rule"] = std::string(text);
  run.attrs["robust_floor_fraction"] = rule.floor_fraction;
  run.attrs["robust_outlier_k"] = rule.outlier_k;
  const int64_t m = in.m, k = in.k, n = in.n;
  auto put = [&](const std::string& p, const char* what, const RobustErrors& e, bool full) {
    if (full) {
      run.setMetric(p + "cosine", e.cosine, "1",
                    std::string("cosine similarity of ") + what + " and its reference: sum(x*y)/sqrt(sum x^2 sum y^2)");
      run.setMetric(p + "rel_err_median", e.rel_median, "1",
                    std::string("median |error|/|reference| of ") + what + " over |reference| > the floor");
      run.setMetric(p + "rel_err_p99", e.rel_p99, "1",
                    std::string("99th percentile |error|/|reference| of ") + what + " over |reference| > the floor");
      run.setMetric(p + "rel_floor", e.rel_floor, "1",
                    std::string("the floor of the relative errors of ") + what + ": 0.1 x median |reference|");
      run.setMetric(p + "rel_counted", double(e.rel_counted), "count",
                    std::string("elements of ") + what + " above the relative-error floor");
    } else {
      run.setMetric(p + "bulk_sqnr_db", e.sqnr_db, "dB",
                    std::string("SQNR of ") + what + " without its outlier rows and columns (robust_rule)");
      run.setMetric(p + "bulk_rel_err_p99", e.rel_p99, "1",
                    std::string("99th percentile relative error of ") + what + " without its outlier rows and columns");
    }
  };
  // Operands against what was quantized (the rotated operand for the Hadamard presets). The
  // dequantized operand and a float64 copy of a float32 one live only while their operand is measured.
  for (const auto& [op, rot, q, p, name] :
       {std::tuple{in.a, in.ra, in.qa, "a_", "A"}, std::tuple{in.b, in.rb, in.qb, "b_", "B"}}) {
    const std::vector<float> dq = q->dequantize();
    std::vector<double> copy;
    if (rot->empty() && !op->is64) copy = op->asDouble();
    const std::vector<double>& refv = !rot->empty() ? *rot : op->is64 ? op->f64 : copy;
    const RobustErrors full = robustErrors(refv.data(), dq.data(), op->rows, op->cols, rule);
    put(p, name, full, true);
    const std::vector<bool> orow = outlierChannels(refv.data(), op->rows, op->cols, true, rule);
    const std::vector<bool> ocol = outlierChannels(refv.data(), op->rows, op->cols, false, rule);
    const int64_t nr = countSet(orow), nc = countSet(ocol);
    run.setMetric(std::string(p) + "outlier_rows", double(nr), "count",
                  std::string("outlier rows of ") + name + " (robust_rule)");
    run.setMetric(std::string(p) + "outlier_cols", double(nc), "count",
                  std::string("outlier columns of ") + name + " (robust_rule)");
    put(p, name, nr + nc > 0 ? robustErrors(refv.data(), dq.data(), op->rows, op->cols, rule, &orow, &ocol) : full,
        false);
  }
  reportProgress(progress, 0.3, "robust metrics of D");
  // D: whole, and without the rows of A's outlier rows and the columns of B's outlier columns.
  const RobustErrors dfull = robustErrors(in.ideal->data(), in.d->data(), m, n, rule);
  put("", "D", dfull, true);
  run.setMetric("d_underflow", double(dfull.underflow), "count", "elements of D that are 0 where the reference is not");
  // D's rows are A's rows and its columns B's columns whatever the rotation along K.
  auto channels = [&](const GemmOperand& op, bool along_rows) {
    return op.is64 ? outlierChannels(op.f64.data(), op.rows, op.cols, along_rows, rule)
                   : outlierChannels(op.f32.data(), op.rows, op.cols, along_rows, rule);
  };
  const std::vector<bool> drow = channels(*in.a, true);
  const std::vector<bool> dcol = channels(*in.b, false);
  const int64_t dr = countSet(drow), dc = countSet(dcol);
  run.setMetric("d_outlier_rows", double(dr), "count", "rows of D left out of D's bulk: A's outlier rows");
  run.setMetric("d_outlier_cols", double(dc), "count", "columns of D left out of D's bulk: B's outlier columns");
  put("", "D", dr + dc > 0 ? robustErrors(in.ideal->data(), in.d->data(), m, n, rule, &drow, &dcol) : dfull, false);
  if (no_split) return;
  // Which operand's quantization dominates D: D with A alone quantized (dequant(A_q)·B) and with B
  // alone (A·dequant(B_q)), both float64 with the run's epilogue, against the ideal.
  reportProgress(progress, 0.5, "D with one operand quantized");
  const int threads = cfg.gemm.threads;
  auto only = [&](bool quant_a) {
    std::vector<double> d;
    const std::vector<float> dq = (quant_a ? in.qa : in.qb)->dequantize();
    if (!in.a->is64 && !in.b->is64) {
      d = quant_a ? idealGemm(dq.data(), in.b->f32.data(), m, k, n, threads)
                  : idealGemm(in.a->f32.data(), dq.data(), m, k, n, threads);
    } else {
      const std::vector<double> q(dq.begin(), dq.end());
      const std::vector<double> other = (quant_a ? in.b : in.a)->asDouble();
      d = quant_a ? idealGemm(q.data(), other.data(), m, k, n, threads)
                  : idealGemm(other.data(), q.data(), m, k, n, threads);
    }
    applyEpilogue(cfg.gemm, d.data(), m, n, threads);
    return compareErrors(in.ideal->data(), d.data(), m * n, threads).sqnr_db;
  };
  run.setMetric("d_sqnr_a_only_db", only(true), "dB",
                "SQNR of D when A alone is quantized (dequant(A_q)·B in float64): A's share of the quantization error");
  reportProgress(progress, 0.75, "D with B alone quantized");
  run.setMetric("d_sqnr_b_only_db", only(false), "dB",
                "SQNR of D when B alone is quantized (A·dequant(B_q) in float64): B's share of the quantization error");
}

/// C of beta·C read from a tensor file: float32 [M,N] (a rank-1 file of N values for M = 1), or
/// float64 whose values are all float32 numbers. The wrong shape, float64 values that float32 would
/// round, and NaN / Inf elements (beta ≠ 0 reads every one) are refused with the sizes and the first
/// offending element named.
Result<std::vector<float>> loadEpilogueC(const std::string& spec, int64_t m, int64_t n, float beta) {
  Result<std::vector<float>> r;
  const std::string where = "c.file";
  auto t = importTensor(spec);
  if (!t.ok()) {
    for (const Issue& i : t.issues) r.add(i.code, where, i.detail);
    return r;
  }
  Dataset& d = t.value;
  std::vector<int64_t> shape = d.shape;
  if (shape.size() == 1) shape = {1, shape[0]};
  if (shape[0] != m || shape[1] != n) {
    r.add(C::InvalidArgument, where,
          "'" + spec + "' is " + std::to_string(shape[0]) + " × " + std::to_string(shape[1]) + " but D = A·B is " +
              std::to_string(m) + " × " + std::to_string(n) + " (M × N): C must have D's shape");
    return r;
  }
  if (d.dtype == DType::Float64) {
    r.value.resize(d.f64.size());
    for (size_t i = 0; i < d.f64.size(); ++i) {
      r.value[i] = static_cast<float>(d.f64[i]);
      if (!(double(r.value[i]) == d.f64[i]) && !std::isnan(d.f64[i])) {
        r.add(C::InvalidArgument, where,
              "'" + spec + "' holds float64 values that are not float32 numbers (element [" +
                  std::to_string(int64_t(i) / n) + ", " + std::to_string(int64_t(i) % n) +
                  "]): C is float32 in the GEMM; write it as float32");
        return r;
      }
    }
  } else {
    r.value = std::move(d.f32);
  }
  for (size_t i = 0; i < r.value.size(); ++i)
    if (!std::isfinite(r.value[i])) {
      r.add(C::InvalidArgument, where,
            "'" + spec + "' has a non-finite value at [" + std::to_string(int64_t(i) / n) + ", " +
                std::to_string(int64_t(i) % n) + "] and beta = " + shortestText(beta) + " reads every element of C");
      return r;
    }
  return r;
}

} // namespace

bool isNvfp4Scaling(const std::string& name) {
  return nvfp4Preset(name).has_value();
}

std::optional<GemmConfigProblem> gemmOperandProblem(const GemmExperimentConfig& cfg, int64_t m, int64_t k, int64_t n) {
  const bool pre_a = cfg.a.pre.enabled(), pre_b = cfg.b.pre.enabled();
  const std::string name_b = cfg.scaling_b.empty() ? cfg.scaling : cfg.scaling_b;
  const char* key_b = cfg.scaling_b.empty() ? "scaling" : "scaling_b";
  const auto nva = pre_a ? std::nullopt : nvfp4Preset(cfg.scaling);
  const auto nvb = pre_b ? std::nullopt : nvfp4Preset(name_b);
  using SF = PreQuantizedSource::ScaleFormat;
  const bool nv_a = pre_a ? cfg.a.pre.scale_format == SF::E4M3FN : nva.has_value();
  const bool nv_b = pre_b ? cfg.b.pre.scale_format == SF::E4M3FN : nvb.has_value();
  for (const auto& [nv, fmt, key, preset] :
       {std::tuple{&nva, &cfg.format_a, "format_a", cfg.scaling}, std::tuple{&nvb, &cfg.format_b, "format_b", name_b}})
    if (*nv && *fmt != "E2M1")
      return GemmConfigProblem{key, "is '" + *fmt + "' beside the NVFP4 preset '" + preset +
                                        "', whose elements are E2M1; leave the format out or set E2M1"};
  auto describe = [](bool pre, const std::optional<Nvfp4Config>& nv, const std::string& preset,
                     const std::string& fmt) {
    if (pre) return std::string("pre-quantized ") + fmt;
    return nv ? "NVFP4 ('" + preset + "')" : fmt + " ('" + preset + "')";
  };
  if (nv_a != nv_b)
    return GemmConfigProblem{
        pre_b   ? std::string("b")
        : pre_a ? std::string("a")
                : std::string(key_b),
        "A is " + describe(pre_a, nva, cfg.scaling, cfg.format_a) + " and B is " +
            describe(pre_b, nvb, name_b, cfg.format_b) +
            ": no GEMM multiplies an NVFP4 operand with a non-NVFP4 one (Blackwell's block-scaled MMA takes "
            "E2M1 with E4M3 block scales of 16 on both sides); give both operands NVFP4 or neither"};
  // The rotation. TE's RHT maps each 16-block x along K to y = x·R, R = diag(s)·H16/4. H16 is
  // symmetric with H16·H16 = 16·I, and diag(s)² = I, so R·Rᵀ = diag(s)·H16·H16·diag(s)/16 = I.
  // With R_K = blockdiag(R, ..., R) over K: a row a of A becomes a·R_K (A' = A·R_K), and a column
  // b of B, read along K, becomes bᵀ·R_K, i.e. b' = R_Kᵀ·b (B' = R_Kᵀ·B). So A'·B' = A·R_K·R_Kᵀ·B
  // = A·B in exact arithmetic: rotating both operands along K by the same R (TE does this to x^T
  // and dy^T of the wgrad GEMM, along the token axis) leaves the product unchanged, and what is
  // left of the error split is what quantizing the rotated operands costs. Rotating one operand
  // only changes the product itself.
  const bool rht_a = nva && nva->rht, rht_b = nvb && nvb->rht;
  if (rht_a != rht_b)
    return GemmConfigProblem{rht_a && cfg.scaling_b.empty() ? std::string("scaling") : std::string(key_b),
                             std::string("the Hadamard rotation is on ") + (rht_a ? "A" : "B") + " ('" +
                                 (rht_a ? cfg.scaling : name_b) +
                                 "') only: A·R·Rᵀ·B = A·B needs both operands "
                                 "rotated along K by the same R; use an RHT preset (nvfp4_te_rht, nvfp4_te_rht_sr) "
                                 "for both or for neither"};
  if (rht_a && nva->rht_sign_mask != nvb->rht_sign_mask)
    return GemmConfigProblem{key_b, "A and B are rotated with different sign masks; the rotations would not cancel"};
  if ((nva || nvb) && k > 0 && k % 16 != 0)
    return GemmConfigProblem{"k", "NVFP4 blocks hold 16 elements of K; K = " + std::to_string(k) +
                                      " is not a multiple of 16 (the systems define no partial block)"};
  if (nva && nva->tile_2d && m > 0 && m % 16 != 0)
    return GemmConfigProblem{"m", "'" + cfg.scaling + "' uses 16×16 tiles on A; M = " + std::to_string(m) +
                                      " is not a multiple of 16"};
  if (nvb && nvb->tile_2d && n > 0 && n % 16 != 0)
    return GemmConfigProblem{"n", "'" + name_b + "' uses 16×16 tiles on B; N = " + std::to_string(n) +
                                      " is not a multiple of 16"};
  return std::nullopt;
}

Result<Run> runGemmExperimentRun(const GemmExperimentConfig& cfg_in, const std::string& config_json,
                                 const std::string& run_id, GemmBackend& backend, const ProgressFn& progress_in,
                                 GemmRunDetails* details) {
  // A kernel check (its fit runs many models) takes the last 70 % of the progress.
  const ProgressFn progress = cfg_in.check.enabled() ? sub(progress_in, 0.0, 0.3) : progress_in;
  GemmExperimentConfig cfg = cfg_in;
  Result<Run> r;
  const std::string where = "gemm experiment " + run_id;
  const bool pre_a = cfg.a.pre.enabled(), pre_b = cfg.b.pre.enabled();
  if (pre_a) cfg.format_a = cfg.a.pre.format;
  if (pre_b) cfg.format_b = cfg.b.pre.format;
  const std::string scaling_b = cfg.scaling_b.empty() ? cfg.scaling : cfg.scaling_b;
  const std::optional<Nvfp4Config> nva = pre_a ? std::nullopt : nvfp4Preset(cfg.scaling);
  const std::optional<Nvfp4Config> nvb = pre_b ? std::nullopt : nvfp4Preset(scaling_b);
  const Format* fa = Format::byName(cfg.format_a);
  const Format* fb = Format::byName(cfg.format_b);
  for (auto [f, name] : {std::pair{fa, cfg.format_a}, {fb, cfg.format_b}})
    if (!f || f->bits() > 8) {
      r.add(C::InvalidArgument, where,
            "format '" + name + "' is unknown or wider than 8 bits (see `fp8lab-cli formats`)");
      return r;
    }
  // A preset is needed only for an operand the run quantizes (NVFP4 presets are looked up above).
  auto sc = pre_a || nva ? std::optional(requireScalingPreset("te_current")) : scalingPreset(cfg.scaling);
  auto scb = pre_b || nvb ? std::optional(requireScalingPreset("te_current")) : scalingPreset(scaling_b);
  for (const auto& [p, name] : {std::pair{&sc, cfg.scaling}, {&scb, scaling_b}})
    if (!*p) {
      std::string names;
      for (const auto& pi : scalingPresets())
        if (!pi.delayed) names += (names.empty() ? "" : ", ") + pi.name;
      r.add(C::InvalidArgument, where,
            "scaling '" + name +
                "' is not a current-scaling preset (a single GEMM has no history; use one of: " + names + ")");
      return r;
    }
  if (cfg.stochastic_rounding) {
    // Stochastic rounding of the elements; the scales are each preset's own (RNE or its rule).
    for (auto [p, seed] : {std::pair{&sc, 2 * cfg.seed}, {&scb, 2 * cfg.seed + 1}}) {
      (*p)->encode.rounding = Rounding::Stochastic;
      (*p)->encode.stochastic_bits = cfg.stochastic_bits;
      (*p)->seed = seed;
    }
  }
  if (cfg.m < 1 || cfg.k < 1 || cfg.n < 1) {
    r.add(C::InvalidArgument, where, "m, k and n must be ≥ 1");
    return r;
  }
  if (cfg.tile < 1) {
    r.add(C::InvalidArgument, where, "tile must be ≥ 1");
    return r;
  }
  // Random operands: the shape is known now; imported ones are checked once loaded.
  if (!cfg.a.fromFile() && !cfg.b.fromFile() && !cfg.a.values && !cfg.b.values &&
      !fitsInMemory(cfg.m, cfg.k, cfg.n, cfg.gemm.memory_limit_bytes, where, &r))
    return r;
  reportProgress(progress, 0.0, "operands");
  GemmOperand A, B;
  QuantizedTensor qa, qb;
  PreQuantizedFindings fa_found, fb_found;
  if (pre_a ? !loadPreQuantized(cfg.a.pre, "a", &qa, &A, &r, &fa_found)
            : !loadOperand(cfg.a, cfg.m, cfg.k, cfg.seed, 1, cfg.gemm.threads, "A", &A, &r))
    return r;
  const int64_t bk = !cfg.a.fromFile() && !cfg.a.values ? cfg.k : A.cols;
  if (pre_b ? !loadPreQuantized(cfg.b.pre, "b", &qb, &B, &r, &fb_found)
            : !loadOperand(cfg.b, bk, cfg.n, cfg.seed, 2, cfg.gemm.threads, "B", &B, &r))
    return r;
  if (A.cols != B.rows) {
    r.add(C::InvalidArgument, where,
          "A is [" + std::to_string(A.rows) + ", " + std::to_string(A.cols) + "] and B is [" + std::to_string(B.rows) +
              ", " + std::to_string(B.cols) + "]: inner dimensions differ");
    return r;
  }
  if (A.rows < 1 || A.cols < 1 || B.cols < 1) {
    r.add(C::InvalidArgument, where,
          "A is [" + std::to_string(A.rows) + ", " + std::to_string(A.cols) + "] and B is [" + std::to_string(B.rows) +
              ", " + std::to_string(B.cols) + "]: an empty operand has nothing to multiply");
    return r;
  }
  const int64_t m = A.rows, k = A.cols, n = B.cols;
  if (!fitsInMemory(m, k, n, cfg.gemm.memory_limit_bytes, where, &r)) return r;
  if (const auto pr = gemmOperandProblem(cfg, m, k, n)) {
    r.add(C::InvalidArgument, where, pr->key + ": " + pr->why);
    return r;
  }
  // The kernel's output to check: read now, so a missing file or a wrong shape is refused before
  // the GEMMs run.
  Result<ObservedOutput> observed;
  if (cfg.check.enabled()) {
    if (cfg.output_scale_auto) {
      r.add(C::InvalidArgument, where,
            "output_quant_scale: \"auto\" is the reference's own scale_D; a kernel check needs the scale_D the kernel "
            "used");
      return r;
    }
    observed = cfg.check.observed_data
                   ? observedOutputFromDataset(*cfg.check.observed_data, cfg.check.observed, cfg.gemm.output,
                                               cfg.gemm.output_quant_scale, m, n)
                   : loadObservedOutput(cfg.check.observed, cfg.gemm.output, cfg.gemm.output_quant_scale, m, n);
    r.merge(observed);
    if (!observed.ok()) return r;
  }
  // Non-finite inputs: FP8 casts saturate ±Inf or turn it into NaN and the error metrics skip
  // non-finite reference elements, so a run on such data must say so rather than look perfect.
  auto nonFinite = [](const GemmOperand& op) {
    int64_t c = 0;
    for (float x : op.f32) c += !std::isfinite(x);
    for (double x : op.f64) c += !std::isfinite(x);
    return c;
  };
  const int64_t a_nonfinite = nonFinite(A), b_nonfinite = nonFinite(B);
  // (Pre-quantized operands: their NaN codes were reported with what they do, checkPreQuantizedOperand.)
  for (auto [cnt, name, pre] : {std::tuple{a_nonfinite, "A", pre_a}, {b_nonfinite, "B", pre_b}})
    if (cnt > 0 && !pre)
      r.add(C::Computation, where,
            std::string(name) + " holds " + std::to_string(cnt) +
                " NaN or Inf value(s): they saturate or become NaN when quantized, and the error metrics skip "
                "elements whose reference is not finite (see metrics a_nonfinite / b_nonfinite)",
            Severity::Warning);

  for (const auto& [ax, cfgp] : {std::pair{Axis::Cols, &*sc}, {Axis::Rows, &*scb}})
    if (const std::string why = gemmScalingProblem(*cfgp, ax); !why.empty()) {
      r.add(C::InvalidArgument, where, "scaling: " + why);
      return r;
    }
  reportProgress(progress, 0.05, "quantize A");
  const auto tq = std::chrono::steady_clock::now();
  // NVFP4 operands: blocks of 16 along K (A [M,K] along its rows, B [K,N] down its columns).
  // Stochastic rounding draws its bytes from the run's seed, A and B from different streams.
  // The Hadamard presets rotate each 16-block along K by R before quantizing: see
  // gemmOperandProblem for why the rotations cancel in the product.
  auto nvfp4For = [&](const Nvfp4Config& c, uint64_t stream) {
    Nvfp4Config x = c;
    x.seed = cfg.seed * 2 + stream;
    x.threads = cfg.gemm.threads;
    return x;
  };
  try {
    if (nva)
      qa = quantizeNvfp4Operand(A, nvfp4For(*nva, 0), Axis::Cols);
    else if (!pre_a)
      qa = quantizeOperand(A, *fa, *sc, Axis::Cols, sub(progress, 0.05, 0.1));
    reportProgress(progress, 0.1, "quantize B");
    if (nvb)
      qb = quantizeNvfp4Operand(B, nvfp4For(*nvb, 1), Axis::Rows);
    else if (!pre_b)
      qb = quantizeOperand(B, *fb, *scb, Axis::Rows, sub(progress, 0.1, 0.15));
  } catch (const std::invalid_argument& e) {
    r.add(C::InvalidArgument, where, std::string("quantize: ") + e.what());
    return r;
  }
  const double quantize_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - tq).count();
  // The epilogue inputs: seeded, BF16-valued (EpilogueSource).
  auto epilogueInput = [&](const EpilogueSource& src, int64_t rows, int64_t cols, uint64_t stream) {
    RandomMatrixOptions ro;
    ro.scale = src.scale;
    std::vector<float> v = randomMatrix(rows, cols, src.seed, ro, stream, cfg.gemm.threads);
    Format::BF16().roundTripBulk(v.data(), v.data(), v.size(), EncodeOptions{});
    return std::make_shared<const std::vector<float>>(std::move(v));
  };
  if (cfg.c_source.enabled && cfg.c_source.values) {
    cfg.gemm.c = cfg.c_source.values;
  } else if (cfg.c_source.fromFile()) {
    auto c = loadEpilogueC(cfg.c_source.file, m, n, cfg.gemm.beta);
    for (const Issue& i : c.issues) r.issues.push_back(i);
    if (!c.ok()) return r;
    cfg.gemm.c = std::make_shared<const std::vector<float>>(std::move(c.value));
  } else {
    cfg.gemm.c = cfg.c_source.enabled ? epilogueInput(cfg.c_source, m, n, 3) : nullptr;
  }
  cfg.gemm.bias = !cfg.bias_source.enabled ? nullptr
                  : cfg.bias_source.values ? cfg.bias_source.values
                                           : epilogueInput(cfg.bias_source, 1, n, 4);
  try {
    checkEpilogue(cfg.gemm, m, n);
  } catch (const std::invalid_argument& e) {
    r.add(C::InvalidArgument, where, e.what());
    return r;
  }
  const bool fp8_out = cfg.gemm.output == OutputType::E4M3FN || cfg.gemm.output == OutputType::E5M2;
  if (fp8_out && cfg.output_scale_auto) {
    // scale_D = max / amax of the quantized-exact D (epilogue included): the output's own
    // current scaling.
    std::vector<double> dq = quantizedExactGemm(qa, qb, cfg.gemm.threads);
    applyEpilogue(cfg.gemm, dq.data(), m, n, cfg.gemm.threads);
    double amax = 0;
    for (double v : dq)
      if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
    const double mx = (cfg.gemm.output == OutputType::E4M3FN ? Format::E4M3FN() : Format::E5M2()).maxFinite();
    cfg.gemm.output_quant_scale = amax > 0 ? static_cast<float>(mx / amax) : 1.0f;
  }
  if (auto why = backend.unsupportedReason(qa, qb, cfg.gemm); !why.empty()) {
    r.add(C::InvalidArgument, where, "the " + backend.name() + " backend cannot run this GEMM: " + why);
    return r;
  }
  // The three GEMMs of core/gemm's experiment: ideal (float64, unquantized inputs),
  // quantized-exact (float64, dequantized inputs) and the backend's output. For float64 inputs the
  // ideal is computed here from the float64 values (no rounding through float32).
  const bool f32_inputs = !A.is64 && !B.is64;
  GemmExperimentResult ex = runGemmExperiment(f32_inputs ? A.f32.data() : nullptr, f32_inputs ? B.f32.data() : nullptr,
                                              qa, qb, cfg.gemm, &backend, sub(progress, 0.15, 0.9));
  if (!f32_inputs) {
    reportProgress(progress, 0.9, "float64 reference");
    const std::vector<double> ad = A.asDouble(), bd = B.asDouble();
    ex.ideal = idealGemm(ad.data(), bd.data(), m, k, n, cfg.gemm.threads);
    applyEpilogue(cfg.gemm, ex.ideal.data(), m, n, cfg.gemm.threads);
    ex.quantization = compareErrors(ex.ideal.data(), ex.quantized_exact.data(), m * n, cfg.gemm.threads);
    ex.total = compareErrors(ex.ideal.data(), ex.output.d.data(), m * n, cfg.gemm.threads);
  }
  GemmOutput& out = ex.output;
  std::vector<double>& ref = ex.ideal;
  reportProgress(progress, 0.92, "metrics");
  const int64_t mn = m * n;
  const ErrorMetrics& em = ex.total;
  std::vector<float> abs_map =
      errorMap(ref.data(), out.d.data(), mn, ErrorMapKind::Abs, nullptr, 1.0, cfg.gemm.threads);
  std::vector<float> rel_map =
      errorMap(ref.data(), out.d.data(), mn, ErrorMapKind::Rel, nullptr, 1.0, cfg.gemm.threads);
  const TileMap tiles = tileMap(abs_map, m, n, std::min(cfg.tile, m), std::min(cfg.tile, n));
  // An operand's own quantization error is measured against what was quantized: for the Hadamard
  // presets that is the rotated operand (rhtOperand), not the unrotated input.
  auto rotatedAsDouble = [&](const GemmOperand& op, const Nvfp4Config& c, Axis axis) {
    std::vector<float> f(op.f32);
    if (op.is64) f.assign(op.f64.begin(), op.f64.end());
    const std::vector<float> rot = rhtOperand(f.data(), op.rows, op.cols, c.rht_sign_mask, axis, cfg.gemm.threads);
    return std::vector<double>(rot.begin(), rot.end());
  };
  const bool rotated = nva && nva->rht;
  const std::vector<double> ra = rotated ? rotatedAsDouble(A, *nva, Axis::Cols) : std::vector<double>{};
  const std::vector<double> rb = rotated ? rotatedAsDouble(B, *nvb, Axis::Rows) : std::vector<double>{};
  // Against the operand as given (float32 or float64), without double or dequantized copies.
  auto quantizationError = [&](const GemmOperand& op, const std::vector<double>& rot, const QuantizedTensor& q) {
    if (!rot.empty()) return compareQuantized(rot.data(), q, cfg.gemm.threads);
    return op.is64 ? compareQuantized(op.f64.data(), q, cfg.gemm.threads)
                   : compareQuantized(op.f32.data(), q, cfg.gemm.threads);
  };
  const ErrorMetrics qea = quantizationError(A, ra, qa);
  const ErrorMetrics qeb = quantizationError(B, rb, qb);

  Run& run = r.value;
  run.id = run_id;
  run.type = "gemm";
  run.config_json = config_json;
  run.seed = cfg.seed;
  run.backend = out.backend.empty() ? backend.name() : out.backend;
  run.device = out.device.empty() ? backend.device() : out.device;
  run.attrs["algorithm"] = out.algorithm;
  run.attrs["format_a"] = fa->name();
  run.attrs["format_b"] = fb->name();
  const std::string name_a = pre_a ? std::string("pre-quantized") : nva ? nva->name : sc->name;
  const std::string name_b = pre_b ? std::string("pre-quantized") : nvb ? nvb->name : scb->name;
  run.attrs["scaling"] = name_a;
  if (cfg.stochastic_rounding)
    run.attrs["rounding"] = "stochastic, " + std::to_string(cfg.stochastic_bits) +
                            " random bits per element (A: counterRandom(2*seed, i), B: counterRandom(2*seed+1, i))";
  if (name_b != name_a) run.attrs["scaling_b"] = name_b;
  if (nva && nva->rht) {
    char mask[8];
    std::snprintf(mask, sizeof mask, "0x%04X", unsigned(nva->rht_sign_mask));
    run.attrs["rotation"] = "both operands rotated along K by R = diag(s)·H16/4 (sign mask " + std::string(mask) +
                            ", BF16-rounded) before quantizing; quantized/* hold the rotated operands, " +
                            layout::kReferenceD + " is the product of the unrotated inputs";
  }
  if (pre_a || pre_b)
    run.attrs["pre_quantized"] =
        std::string(pre_a && pre_b ? "A and B"
                    : pre_a        ? "A"
                                   : "B") +
        " given as codes and scales (no unquantized input): their inputs/* hold the dequantized values, so the "
        "quantization part of the error split is " +
        (pre_a && pre_b ? "zero up to the rounding of the scale factors; only accumulation and output error remain"
                        : "that of the other operand alone");
  run.attrs["accumulation"] = std::string(toString(cfg.gemm.accumulation));
  // The resolved accumulation parameters and epilogue (what the preset, if any, stood for).
  if (!cfg.accumulation_preset.empty()) {
    run.attrs["accumulation_preset"] = cfg.accumulation_preset;
    if (const auto p = accumulationPreset(cfg.accumulation_preset)) {
      run.attrs["accumulation_preset_summary"] = p->summary;
      run.attrs["accumulation_preset_source"] = p->source;
      run.attrs["accumulation_preset_unsure"] = std::string(p->unsure ? "true" : "false");
    }
  }
  run.attrs["promotion_interval"] = int64_t(cfg.gemm.promotion_interval);
  if (cfg.gemm.accumulation == Accumulation::FastAccum) {
    run.attrs["fast_accum_bits"] = int64_t(cfg.gemm.fast_accum_bits);
    run.attrs["fast_accum_group"] = int64_t(cfg.gemm.fast_accum_group);
    run.attrs["fast_accum_promotes"] = std::string(cfg.gemm.fast_accum_promotes ? "true" : "false");
    if (!(cfg.gemm.mma == MmaRules{})) {
      run.attrs["mma_alignment"] = std::string(toString(cfg.gemm.mma.alignment));
      run.attrs["mma_sum"] = std::string(toString(cfg.gemm.mma.sum));
      run.attrs["mma_sum_bits"] = int64_t(cfg.gemm.mma.sum_bits);
      run.attrs["mma_sum_rounding"] = std::string(toString(cfg.gemm.mma.sum_rounding));
      run.attrs["mma_c"] = std::string(toString(cfg.gemm.mma.c_entry));
      run.attrs["mma_block_scales"] = std::string(toString(cfg.gemm.mma.block_scales));
      run.attrs["mma_chunk"] = int64_t(cfg.gemm.mma.chunk);
      run.attrs["mma_datapath"] = std::string(toString(cfg.gemm.mma.datapath));
    }
  }
  if (hasEpilogue(cfg.gemm)) {
    run.attrs["alpha"] = double(cfg.gemm.alpha);
    run.attrs["beta"] = double(cfg.gemm.beta);
    run.attrs["bias"] = std::string(!cfg.gemm.bias           ? "none"
                                    : cfg.bias_source.values ? "given in memory"
                                                             : "seed " + std::to_string(cfg.bias_source.seed));
    if (cfg.c_source.values)
      run.attrs["c"] = std::string("given in memory");
    else if (cfg.c_source.fromFile())
      run.attrs["c"] = "file " + cfg.c_source.file;
  }
  run.attrs["output_type"] = std::string(toString(cfg.gemm.output));
  run.attrs["m"] = m;
  run.attrs["k"] = k;
  run.attrs["n"] = n;
  run.attrs["a_origin"] = A.origin;
  run.attrs["b_origin"] = B.origin;
  if (a_nonfinite > 0 || b_nonfinite > 0) {
    run.setMetric("a_nonfinite", double(a_nonfinite), "count", "NaN or Inf elements of A before quantization");
    run.setMetric("b_nonfinite", double(b_nonfinite), "count", "NaN or Inf elements of B before quantization");
  }
  if (out.model_of_undocumented_hardware)
    run.attrs["note"] =
        "FastAccum is a model of undocumented tensor-core accumulation" +
        (cfg.accumulation_preset.empty() ? std::string() : " (accumulation preset " + cfg.accumulation_preset + ")");

  putRobustMetrics(run, robustInputs(A, B, ra, rb, qa, qb, ref, out.d, m, k, n), cfg, pre_a || pre_b || rotated,
                   sub(progress, 0.93, 0.98));
  // Per-block statistics of A and B against what was quantized (the rotated operand for RHT).
  auto putOperandBlockStats = [&](const GemmOperand& op, const std::vector<double>& rot, const QuantizedTensor& q,
                                  const char* name, const std::string& quantization) {
    std::vector<float> tmp;
    const float* x = op.f32.data();
    if (!rot.empty() || op.is64) {
      tmp.assign(rot.empty() ? op.f64.begin() : rot.begin(), rot.empty() ? op.f64.end() : rot.end());
      x = tmp.data();
    }
    OperandBlockSeries s;
    s.operand = name;
    s.quantization = quantization;
    s.format = q.format->name();
    s.scale_format = q.scale_codes.empty() ? std::string("float32") : q.scaleCodeFormat().name();
    BlockStatsMap map;
    s.steps.push_back(computeBlockStats(x, q, map));
    s.setShape(map);
    s.map_steps.push_back(0);
    s.maps.push_back(std::move(map));
    putBlockStatsSeries(run, layout::blockStats(name), s, 1);
  };
  putOperandBlockStats(A, ra, qa, "A", name_a);
  putOperandBlockStats(B, rb, qb, "B", name_b);
  // From here on the big arrays move into the run's datasets (no copies: a 4096³ run holds each
  // once). The operands are last read above.
  if (cfg.store_inputs) {
    auto put = [&](const std::string& path, GemmOperand& op, const char* meaning) {
      if (op.is64)
        run.datasets[path] = Dataset::float64({op.rows, op.cols}, std::move(op.f64), "1", meaning);
      else
        run.datasets[path] = Dataset::float32({op.rows, op.cols}, std::move(op.f32), "1", meaning);
      run.datasets[path].attrs["origin"] = op.origin;
    };
    put(layout::inputs("A"), A,
        pre_a ? "operand A [M,K]: the dequantized pre-quantized codes (no unquantized input)"
              : "operand A [M,K] before quantization");
    put(layout::inputs("B"), B,
        pre_b ? "operand B [K,N]: the dequantized pre-quantized codes (no unquantized input)"
              : "operand B [K,N] before quantization");
    if (cfg.gemm.c && cfg.gemm.beta != 0.0f)
      run.putFloat32(layout::inputs("C"), *cfg.gemm.c, m, n, "1", "epilogue matrix C [M,N] of beta·C (BF16 values)");
    if (cfg.gemm.bias)
      run.putFloat32(layout::inputs("bias"), *cfg.gemm.bias, 1, n, "1",
                     "epilogue bias [N], added to every row (BF16 values)");
  }
  if (cfg.store_quantized) {
    run.putQuantized(layout::quantized("A"), qa, "operand A");
    run.putQuantized(layout::quantized("B"), qb, "operand B");
    if (rotated) {
      // What the Hadamard presets quantized: the operands rotated along K (the codes' basis).
      run.putFloat32(layout::quantizedRotated("A"), std::vector<float>(ra.begin(), ra.end()), m, k, "1",
                     "operand A rotated along K by R = diag(s)·H16/4 (BF16), the tensor quantized/A_codes encode");
      run.putFloat32(layout::quantizedRotated("B"), std::vector<float>(rb.begin(), rb.end()), k, n, "1",
                     "operand B rotated along K by R = diag(s)·H16/4 (BF16), the tensor quantized/B_codes encode");
    }
  }
  auto& d = run.putFloat32(layout::kOutputD, std::move(out.d), m, n, "1",
                           std::string(hasEpilogue(cfg.gemm) ? "D = alpha · (A_q · B_q) + beta · C + bias on the "
                                                             : "D = A_q · B_q on the ") +
                               run.backend + " backend, " + toString(cfg.gemm.accumulation) + " accumulation, output " +
                               toString(cfg.gemm.output) + " (as float32 values)");
  d.attrs["output_type"] = std::string(toString(cfg.gemm.output));
  if (!out.d_codes.empty()) {
    auto& dc = run.datasets[layout::kOutputDCodes];
    dc = Dataset::uint8({m, n}, std::move(out.d_codes), "code", "FP8 codes of D (before dividing by scale_D)");
    dc.attrs["format"] = std::string(toString(cfg.gemm.output));
    dc.attrs["quant_scale"] = static_cast<double>(cfg.gemm.output_quant_scale);
    dc.attrs["scaling"] = std::string("per_tensor"); // one scale_D for the whole output
    dc.attrs["block_rows"] = m;
    dc.attrs["block_cols"] = n;
  }
  run.datasets[layout::kReferenceD] =
      Dataset::float64({m, n}, std::move(ref), "1",
                       pre_a || pre_b ? "ideal D: float64 product of the operands (k ascending); pre-quantized "
                                        "operands enter dequantized, as there is no unquantized input"
                                      : "ideal D: float64 product of the unquantized operands (k ascending)");
  run.datasets[layout::kReferenceDQuantizedExact] =
      Dataset::float64({m, n}, std::move(ex.quantized_exact), "1",
                       "dequant(A_q) . dequant(B_q) in float64: D without accumulation or output error");
  if (cfg.store_error_maps) {
    run.putFloat32(layout::kErrorAbs, std::move(abs_map), m, n, "1",
                   "|D - reference| per element (NaN where either is non-finite)");
    run.putFloat32(layout::kErrorRel, std::move(rel_map), m, n, "1",
                   "|D - reference| / |reference| per element (NaN where reference is 0 and D is not)");
  }
  auto& tm = run.putFloat32(layout::kErrorTileMeanAbs, tiles.mean, tiles.grid_rows, tiles.grid_cols, "1",
                            "mean |D - reference| per tile of tile_rows x tile_cols");
  auto& tx = run.putFloat32(layout::kErrorTileMaxAbs, tiles.max, tiles.grid_rows, tiles.grid_cols, "1",
                            "max |D - reference| per tile of tile_rows x tile_cols");
  for (Dataset* t : {&tm, &tx}) {
    t->attrs["tile_rows"] = tiles.tile_rows;
    t->attrs["tile_cols"] = tiles.tile_cols;
  }

  run.setMetric("max_abs", em.max_abs, "1", "max |D - reference|");
  run.setMetric("max_rel", em.max_rel, "1", "max |D - reference| / |reference| over reference != 0");
  run.setMetric("rmse", em.rmse, "1", "root mean square of D - reference");
  run.setMetric("rel_fro", em.rel_fro, "1", "||D - reference||_F / ||reference||_F");
  run.setMetric("sqnr_db", em.sqnr_db, "dB", "10 log10(sum reference^2 / sum (D - reference)^2)");
  run.setMetric("ref_rms", em.ref_rms, "1", "root mean square of the reference");
  run.setMetric("nonfinite_d", double(em.nan_test + em.inf_test), "count", "NaN or Inf elements of D");
  run.setMetric("quant_sqnr_db", ex.quantization.sqnr_db, "dB", "quantized-exact vs ideal: error due to quantization");
  run.setMetric("quant_rel_fro", ex.quantization.rel_fro, "1", "quantized-exact vs ideal, relative Frobenius");
  run.setMetric("accum_sqnr_db", ex.accumulation.sqnr_db, "dB", "D vs quantized-exact: accumulation and output cast");
  run.setMetric("accum_rel_fro", ex.accumulation.rel_fro, "1", "D vs quantized-exact, relative Frobenius");
  run.setMetric("accum_max_abs", ex.accumulation.max_abs, "1", "max |D - quantized-exact|");
  run.setMetric("a_sqnr_db", qea.sqnr_db, "dB",
                "SQNR of dequantized A vs A as quantized (quantization alone; rotated A for Hadamard presets)");
  run.setMetric("b_sqnr_db", qeb.sqnr_db, "dB",
                "SQNR of dequantized B vs B as quantized (quantization alone; rotated B for Hadamard presets)");
  run.setMetric("a_saturated", double(qa.stats.saturated), "count", "elements of A clipped to max finite");
  run.setMetric("a_underflow", double(qa.stats.underflow), "count", "non-zero elements of A that became zero");
  run.setMetric("b_saturated", double(qb.stats.saturated), "count", "elements of B clipped to max finite");
  run.setMetric("b_underflow", double(qb.stats.underflow), "count", "non-zero elements of B that became zero");
  run.setMetric("amax_d", out.amax_d, "1", "max |D| before scale_D and the output cast (cuBLASLt AMAX_D)");
  if (ex.d_saturated >= 0) {
    run.setMetric("d_saturated", double(ex.d_saturated), "count",
                  "elements of D clipped by the FP8 output cast: |D·scale_D| beyond max finite (counted on the "
                  "quantized-exact D)");
  }
  run.setMetric("gemm_seconds", out.seconds, "s", "wall time of the GEMM alone");
  run.setMetric("quant_max_abs", ex.quantization.max_abs, "1", "max |quantized-exact - ideal|");
  run.setMetric("quant_max_rel", ex.quantization.max_rel, "1", "max relative error of quantized-exact vs ideal");
  run.setMetric("quant_rmse", ex.quantization.rmse, "1", "root mean square of quantized-exact - ideal");
  run.setMetric("accum_max_rel", ex.accumulation.max_rel, "1", "max relative error of D vs quantized-exact");
  run.setMetric("accum_rmse", ex.accumulation.rmse, "1", "root mean square of D - quantized-exact");
  if (details) {
    details->m = m;
    details->k = k;
    details->n = n;
    details->quantization = ex.quantization;
    details->accumulation = ex.accumulation;
    details->total = ex.total;
    details->a_stats = ex.a_stats;
    details->b_stats = ex.b_stats;
    details->d_saturated = ex.d_saturated;
    details->output_quant_scale = cfg.gemm.output_quant_scale;
    details->tiles = tiles;
    details->quantize_seconds = quantize_s;
    details->ideal_seconds = ex.ideal_seconds;
    details->exact_seconds = ex.exact_seconds;
    details->output = out;
    details->a_nonfinite = a_nonfinite;
    details->b_nonfinite = b_nonfinite;
  }
  // NaN codes of pre-quantized operands: every output in their rows of A and columns of B is NaN.
  {
    const int64_t ra = int64_t(fa_found.nan_lines.size()), cb = int64_t(fb_found.nan_lines.size());
    const int64_t nan_out = ra * n + cb * m - ra * cb;
    if (nan_out > 0)
      run.setMetric("nan_outputs_from_codes", double(nan_out), "count",
                    "outputs of D made NaN by NaN codes of the pre-quantized operands (whole rows of A, columns of B)");
    if (details) {
      details->a_nan_codes = fa_found.nan_codes;
      details->b_nan_codes = fb_found.nan_codes;
      details->nan_outputs_from_codes = nan_out;
    }
  }
  for (const auto& w : out.warnings)
    r.issues.push_back(Issue{w.severity == Severity::Error ? Severity::Warning : w.severity, "", "GEMM " + w.where,
                             w.what + ": " + w.detail, C::Computation});
  // What the output type (and alpha, scale_D) did to D that the quantized-exact D does not show:
  // non-zero outputs flushed to zero, and finite ones that became ±Inf / NaN.
  if (const Dataset* dd = run.find(layout::kOutputD), *qe = run.find(layout::kReferenceDQuantizedExact);
      dd && qe && dd->elementCount() == qe->elementCount()) {
    int64_t flushed = 0, nonzero = 0, overflowed = 0;
    for (int64_t i = 0; i < dd->elementCount(); ++i) {
      const double e = qe->valueAt(i), v = dd->valueAt(i);
      if (!std::isfinite(e)) continue;
      nonzero += e != 0;
      flushed += e != 0 && v == 0;
      overflowed += !std::isfinite(v);
    }
    const std::string out_text = std::string(toString(cfg.gemm.output)) +
                                 (cfg.gemm.output == OutputType::E4M3FN || cfg.gemm.output == OutputType::E5M2
                                      ? ", scale_D " + generalText(double(cfg.gemm.output_quant_scale))
                                      : std::string()) +
                                 (cfg.gemm.alpha != 1.0f ? ", alpha " + generalText(double(cfg.gemm.alpha)) : "");
    if (flushed > 0)
      r.add(C::Computation, "output",
            std::to_string(flushed) + " of " + std::to_string(nonzero) + " non-zero outputs became 0 in D (output " +
                out_text + "): below the output type's smallest value" +
                (flushed == nonzero ? "; every output flushed: raise the output scale" : ""),
            Severity::Warning);
    if (overflowed > 0)
      r.add(C::Computation, "output",
            std::to_string(overflowed) + " outputs of D are ±Inf or NaN where the exact result is finite (output " +
                out_text + "): beyond the output type's range",
            Severity::Warning);
  }
  if (cfg.check.enabled()) {
    try {
      auto res = std::make_shared<KernelCheckResult>(runKernelCheck(qa, qb, cfg.gemm, observed.value, cfg.check, run,
                                                                    std::min(cfg.tile, std::max(m, n)),
                                                                    sub(progress_in, 0.3, 1.0)));
      if (res->fitted && !res->fit.warning.empty())
        r.add(C::Computation, "kernel check", res->fit.warning, Severity::Warning);
      if (details) details->check = std::move(res);
    } catch (const std::invalid_argument& e) {
      r.add(C::InvalidArgument, where, std::string("kernel check: ") + e.what());
      return r;
    }
  }
  // The run's findings, as the CLI printed them, for readers of the session (a JSON array).
  {
    Json w = Json::array();
    for (const Issue& i : r.issues)
      if (i.severity != Severity::Error)
        w.push_back({{"severity", severityName(i.severity)}, {"where", i.where}, {"detail", i.detail}});
    if (!w.empty()) run.attrs["warnings"] = w.dump();
  }
  reportProgress(progress_in, 1.0, "done");
  return r;
}

std::vector<std::string> compareRuns(const Run& a, const Run& b, int* nd, int* nm) {
  std::vector<std::string> diffs;
  int cd = 0, cm = 0;
  if (a.type != b.type) diffs.push_back("type: " + a.type + " vs " + b.type);
  if (a.seed != b.seed) diffs.push_back("seed: " + std::to_string(a.seed) + " vs " + std::to_string(b.seed));
  for (const auto& [p, d] : a.datasets) {
    const Dataset* e = b.find(p);
    if (!e) {
      diffs.push_back("dataset " + p + ": missing in the new run");
      continue;
    }
    ++cd;
    if (e->dtype != d.dtype || e->shape != d.shape) {
      diffs.push_back("dataset " + p + ": type or shape differs");
      continue;
    }
    const size_t bytes = static_cast<size_t>(d.elementCount()) * d.elementBytes();
    const void* x = nullptr;
    const void* y = nullptr;
    switch (d.dtype) {
    case DType::Float32:
      x = d.f32.data();
      y = e->f32.data();
      break;
    case DType::Float64:
      x = d.f64.data();
      y = e->f64.data();
      break;
    case DType::UInt8:
      x = d.u8.data();
      y = e->u8.data();
      break;
    case DType::Int64:
      x = d.i64.data();
      y = e->i64.data();
      break;
    }
    if (bytes && std::memcmp(x, y, bytes) != 0) {
      int64_t first = -1, count = 0;
      const size_t eb = d.elementBytes();
      for (int64_t i = 0; i < d.elementCount(); ++i)
        if (std::memcmp(static_cast<const char*>(x) + size_t(i) * eb, static_cast<const char*>(y) + size_t(i) * eb,
                        eb) != 0) {
          if (first < 0) first = i;
          ++count;
        }
      diffs.push_back("dataset " + p + ": " + std::to_string(count) + " of " + std::to_string(d.elementCount()) +
                      " elements differ (first at flat index " + std::to_string(first) + ")");
    }
  }
  for (const auto& [p, d] : b.datasets)
    if (!a.find(p)) diffs.push_back("dataset " + p + ": only in the new run");
  for (const auto& [name, m] : a.metrics) {
    if (name.ends_with("seconds")) continue; // wall time
    auto it = b.metrics.find(name);
    if (it == b.metrics.end()) {
      diffs.push_back("metric " + name + ": missing in the new run");
      continue;
    }
    ++cm;
    if (std::bit_cast<uint64_t>(it->second.value) != std::bit_cast<uint64_t>(m.value) &&
        !(std::isnan(it->second.value) && std::isnan(m.value)))
      diffs.push_back("metric " + name + ": " + std::to_string(m.value) + " vs " + std::to_string(it->second.value));
  }
  if (nd) *nd = cd;
  if (nm) *nm = cm;
  return diffs;
}

} // namespace fp8lab

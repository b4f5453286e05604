// FP8 Lab — the GEMM error experiment (see gemm_run.h).
#include "experiment/gemm/gemm_run.h"
#include "session/session_layout.h"

#include "experiment/gemm/gemm_operands.h"
#include "experiment/gemm/operand_checks.h"

#include "metrics/block_stats.h"
#include "training/diagnostics.h"
#include "training/training_session.h"

#include "formats/format.h"
#include "gemm/error_split.h"
#include "common/number_text.h"
#include "common/worker_pool.h"
#include "io/fp8_checkpoint.h"
#include "json/json_document.h"
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

namespace {

/// One GEMM run between its stages (runGemmExperimentRun): the resolved recipe, the operands, their
/// quantized forms, the three GEMMs and the errors measured on them. Each stage fills its part; a
/// stage that refuses the run adds an error to the run's Result and returns false.
struct GemmRunState {
  GemmExperimentConfig cfg;          ///< the run's config; C, bias and an "auto" scale_D are resolved into cfg.gemm
  std::string where;                 ///< "gemm experiment <id>": where the run's issues point
  bool pre_a = false, pre_b = false; ///< operand given as codes and scales (no unquantized input)
  std::string scaling_b;             ///< B's preset name (A's when the config sets none apart)
  std::optional<Nvfp4Config> nva, nvb;
  const Format *fa = nullptr, *fb = nullptr;
  std::optional<ScalingConfig> sc, scb; ///< FP8 / MX presets (te_current for NVFP4 and pre-quantized operands)
  GemmOperand A, B;
  QuantizedTensor qa, qb;
  PreQuantizedFindings fa_found, fb_found;
  int64_t m = 0, k = 0, n = 0;
  Result<ObservedOutput> observed; ///< the kernel check's observed D, when the config has one
  int64_t a_nonfinite = 0, b_nonfinite = 0;
  double quantize_s = 0;
  GemmExperimentResult ex;    ///< ideal, quantized-exact and backend D, and the error split
  bool rotated = false;       ///< the Hadamard presets: both operands rotated along K
  std::vector<double> ra, rb; ///< the rotated operands, or empty
  std::string name_a, name_b; ///< each operand's quantization as the run's attrs name it
};

/// The errors of D against the ideal that the run stores, and each operand's quantization error.
struct GemmRunErrors {
  std::vector<float> abs_map, rel_map; ///< [M,N] |D − ideal| and |D − ideal| / |ideal|
  TileMap tiles;                       ///< of abs_map, tile edge cfg.tile
  ErrorMetrics qea, qeb;               ///< dequantized A / B against what was quantized
};

/// Stage 1, the recipe: element formats, scaling presets (stochastic rounding applied), and the
/// shape checks that need no operand.
bool resolveRecipe(GemmRunState& s, Result<Run>& r) {
  GemmExperimentConfig& cfg = s.cfg;
  s.pre_a = cfg.a.pre.enabled();
  s.pre_b = cfg.b.pre.enabled();
  if (s.pre_a) cfg.format_a = cfg.a.pre.format;
  if (s.pre_b) cfg.format_b = cfg.b.pre.format;
  s.scaling_b = cfg.scaling_b.empty() ? cfg.scaling : cfg.scaling_b;
  s.nva = s.pre_a ? std::nullopt : nvfp4Preset(cfg.scaling);
  s.nvb = s.pre_b ? std::nullopt : nvfp4Preset(s.scaling_b);
  s.fa = Format::byName(cfg.format_a);
  s.fb = Format::byName(cfg.format_b);
  for (auto [f, name] : {std::pair{s.fa, cfg.format_a}, {s.fb, cfg.format_b}})
    if (!f || f->bits() > 8) {
      r.add(C::InvalidArgument, s.where,
            "format '" + name + "' is unknown or wider than 8 bits (see `fp8lab-cli formats`)");
      return false;
    }
  // A preset is needed only for an operand the run quantizes (NVFP4 presets are looked up above).
  s.sc = s.pre_a || s.nva ? std::optional(requireScalingPreset("te_current")) : scalingPreset(cfg.scaling);
  s.scb = s.pre_b || s.nvb ? std::optional(requireScalingPreset("te_current")) : scalingPreset(s.scaling_b);
  for (const auto& [p, name] : {std::pair{&s.sc, cfg.scaling}, {&s.scb, s.scaling_b}})
    if (!*p) {
      std::string names;
      for (const auto& pi : scalingPresets())
        if (!pi.delayed) names += (names.empty() ? "" : ", ") + pi.name;
      r.add(C::InvalidArgument, s.where,
            "scaling '" + name +
                "' is not a current-scaling preset (a single GEMM has no history; use one of: " + names + ")");
      return false;
    }
  if (cfg.stochastic_rounding) {
    // Stochastic rounding of the elements; the scales are each preset's own (RNE or its rule).
    for (auto [p, seed] : {std::pair{&s.sc, 2 * cfg.seed}, {&s.scb, 2 * cfg.seed + 1}}) {
      (*p)->encode.rounding = Rounding::Stochastic;
      (*p)->encode.stochastic_bits = cfg.stochastic_bits;
      (*p)->seed = seed;
    }
  }
  if (cfg.m < 1 || cfg.k < 1 || cfg.n < 1) {
    r.add(C::InvalidArgument, s.where, "m, k and n must be ≥ 1");
    return false;
  }
  if (cfg.tile < 1) {
    r.add(C::InvalidArgument, s.where, "tile must be ≥ 1");
    return false;
  }
  // Random operands: the shape is known now; imported ones are checked once loaded.
  return cfg.a.fromFile() || cfg.b.fromFile() || cfg.a.values || cfg.b.values ||
         fitsInMemory(cfg.m, cfg.k, cfg.n, cfg.gemm.memory_limit_bytes, s.where, &r);
}

/// Stage 2, the operands: A and B loaded (random, imported, given or pre-quantized), their shapes
/// checked against each other, the memory limit and the recipe, the kernel check's observed D read,
/// and non-finite inputs counted.
bool loadOperands(GemmRunState& s, Result<Run>& r, const ProgressFn& progress) {
  const GemmExperimentConfig& cfg = s.cfg;
  reportProgress(progress, 0.0, "operands");
  if (s.pre_a ? !loadPreQuantized(cfg.a.pre, "a", &s.qa, &s.A, &r, &s.fa_found)
              : !loadOperand(cfg.a, cfg.m, cfg.k, cfg.seed, 1, cfg.gemm.threads, "A", &s.A, &r))
    return false;
  const int64_t bk = !cfg.a.fromFile() && !cfg.a.values ? cfg.k : s.A.cols;
  if (s.pre_b ? !loadPreQuantized(cfg.b.pre, "b", &s.qb, &s.B, &r, &s.fb_found)
              : !loadOperand(cfg.b, bk, cfg.n, cfg.seed, 2, cfg.gemm.threads, "B", &s.B, &r))
    return false;
  const GemmOperand &A = s.A, &B = s.B;
  const std::string shapes = "A is [" + std::to_string(A.rows) + ", " + std::to_string(A.cols) + "] and B is [" +
                             std::to_string(B.rows) + ", " + std::to_string(B.cols) + "]: ";
  if (A.cols != B.rows) {
    r.add(C::InvalidArgument, s.where, shapes + "inner dimensions differ");
    return false;
  }
  if (A.rows < 1 || A.cols < 1 || B.cols < 1) {
    r.add(C::InvalidArgument, s.where, shapes + "an empty operand has nothing to multiply");
    return false;
  }
  s.m = A.rows;
  s.k = A.cols;
  s.n = B.cols;
  if (!fitsInMemory(s.m, s.k, s.n, cfg.gemm.memory_limit_bytes, s.where, &r)) return false;
  if (const auto pr = gemmOperandProblem(cfg, s.m, s.k, s.n)) {
    r.add(C::InvalidArgument, s.where, pr->key + ": " + pr->why);
    return false;
  }
  // The kernel's output to check: read now, so a missing file or a wrong shape is refused before
  // the GEMMs run.
  if (cfg.check.enabled()) {
    if (cfg.output_scale_auto) {
      r.add(C::InvalidArgument, s.where,
            "output_quant_scale: \"auto\" is the reference's own scale_D; a kernel check needs the scale_D the kernel "
            "used");
      return false;
    }
    s.observed = cfg.check.observed_data
                     ? observedOutputFromDataset(*cfg.check.observed_data, cfg.check.observed, cfg.gemm.output,
                                                 cfg.gemm.output_quant_scale, s.m, s.n)
                     : loadObservedOutput(cfg.check.observed, cfg.gemm.output, cfg.gemm.output_quant_scale, s.m, s.n);
    r.merge(s.observed);
    if (!s.observed.ok()) return false;
  }
  // Non-finite inputs: FP8 casts saturate ±Inf or turn it into NaN and the error metrics skip
  // non-finite reference elements, so a run on such data must say so rather than look perfect.
  auto nonFinite = [](const GemmOperand& op) {
    int64_t c = 0;
    for (float x : op.f32) c += !std::isfinite(x);
    for (double x : op.f64) c += !std::isfinite(x);
    return c;
  };
  s.a_nonfinite = nonFinite(A);
  s.b_nonfinite = nonFinite(B);
  // (Pre-quantized operands: their NaN codes were reported with what they do, checkPreQuantizedOperand.)
  for (auto [cnt, name, pre] : {std::tuple{s.a_nonfinite, "A", s.pre_a}, {s.b_nonfinite, "B", s.pre_b}})
    if (cnt > 0 && !pre)
      r.add(C::Computation, s.where,
            std::string(name) + " holds " + std::to_string(cnt) +
                " NaN or Inf value(s): they saturate or become NaN when quantized, and the error metrics skip "
                "elements whose reference is not finite (see metrics a_nonfinite / b_nonfinite)",
            Severity::Warning);
  return true;
}

/// Stage 3, quantize: A along K (its rows), B along K (its columns), by each operand's preset.
bool quantizeOperands(GemmRunState& s, Result<Run>& r, const ProgressFn& progress) {
  const GemmExperimentConfig& cfg = s.cfg;
  for (const auto& [ax, cfgp] : {std::pair{Axis::Cols, &*s.sc}, {Axis::Rows, &*s.scb}})
    if (const std::string why = gemmScalingProblem(*cfgp, ax); !why.empty()) {
      r.add(C::InvalidArgument, s.where, "scaling: " + why);
      return false;
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
    if (s.nva)
      s.qa = quantizeNvfp4Operand(s.A, nvfp4For(*s.nva, 0), Axis::Cols);
    else if (!s.pre_a)
      s.qa = quantizeOperand(s.A, *s.fa, *s.sc, Axis::Cols, sub(progress, 0.05, 0.1));
    reportProgress(progress, 0.1, "quantize B");
    if (s.nvb)
      s.qb = quantizeNvfp4Operand(s.B, nvfp4For(*s.nvb, 1), Axis::Rows);
    else if (!s.pre_b)
      s.qb = quantizeOperand(s.B, *s.fb, *s.scb, Axis::Rows, sub(progress, 0.1, 0.15));
  } catch (const std::invalid_argument& e) {
    r.add(C::InvalidArgument, s.where, std::string("quantize: ") + e.what());
    return false;
  }
  s.quantize_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - tq).count();
  return true;
}

/// Stage 4, the epilogue: C (seeded, imported or given) and bias resolved into cfg.gemm, an "auto"
/// scale_D computed from the quantized-exact D, and the backend asked whether it can run the GEMM.
bool resolveEpilogue(GemmRunState& s, Result<Run>& r, const GemmBackend& backend) {
  GemmExperimentConfig& cfg = s.cfg;
  const int64_t m = s.m, n = s.n;
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
    if (!c.ok()) return false;
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
    r.add(C::InvalidArgument, s.where, e.what());
    return false;
  }
  const bool fp8_out = cfg.gemm.output == OutputType::E4M3FN || cfg.gemm.output == OutputType::E5M2;
  if (fp8_out && cfg.output_scale_auto) {
    // scale_D = max / amax of the quantized-exact D (epilogue included): the output's own
    // current scaling.
    std::vector<double> dq = quantizedExactGemm(s.qa, s.qb, cfg.gemm.threads);
    applyEpilogue(cfg.gemm, dq.data(), m, n, cfg.gemm.threads);
    double amax = 0;
    for (double v : dq)
      if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
    const double mx = (cfg.gemm.output == OutputType::E4M3FN ? Format::E4M3FN() : Format::E5M2()).maxFinite();
    cfg.gemm.output_quant_scale = amax > 0 ? static_cast<float>(mx / amax) : 1.0f;
  }
  if (auto why = backend.unsupportedReason(s.qa, s.qb, cfg.gemm); !why.empty()) {
    r.add(C::InvalidArgument, s.where, "the " + backend.name() + " backend cannot run this GEMM: " + why);
    return false;
  }
  return true;
}

/// Stage 5, the GEMMs of core/gemm's experiment: ideal (float64, unquantized inputs),
/// quantized-exact (float64, dequantized inputs) and the backend's output. For float64 inputs the
/// ideal is computed here from the float64 values (no rounding through float32).
void runGemms(GemmRunState& s, GemmBackend& backend, const ProgressFn& progress) {
  const GemmExperimentConfig& cfg = s.cfg;
  const bool f32_inputs = !s.A.is64 && !s.B.is64;
  s.ex = runGemmExperiment(f32_inputs ? s.A.f32.data() : nullptr, f32_inputs ? s.B.f32.data() : nullptr, s.qa, s.qb,
                           cfg.gemm, &backend, sub(progress, 0.15, 0.9));
  if (f32_inputs) return;
  reportProgress(progress, 0.9, "float64 reference");
  const int64_t m = s.m, n = s.n;
  const std::vector<double> ad = s.A.asDouble(), bd = s.B.asDouble();
  s.ex.ideal = idealGemm(ad.data(), bd.data(), m, s.k, n, cfg.gemm.threads);
  applyEpilogue(cfg.gemm, s.ex.ideal.data(), m, n, cfg.gemm.threads);
  s.ex.quantization = compareErrors(s.ex.ideal.data(), s.ex.quantized_exact.data(), m * n, cfg.gemm.threads);
  s.ex.total = compareErrors(s.ex.ideal.data(), s.ex.output.d.data(), m * n, cfg.gemm.threads);
}

/// Stage 6, the errors: D's error maps and tiles, and each operand's quantization error against what
/// was quantized (the rotated operand for the Hadamard presets, rhtOperand).
GemmRunErrors measureErrors(GemmRunState& s, const ProgressFn& progress) {
  const GemmExperimentConfig& cfg = s.cfg;
  const int threads = cfg.gemm.threads;
  reportProgress(progress, 0.92, "metrics");
  GemmRunErrors e;
  const std::vector<double>& ref = s.ex.ideal;
  const std::vector<float>& d = s.ex.output.d;
  const int64_t mn = s.m * s.n;
  e.abs_map = errorMap(ref.data(), d.data(), mn, ErrorMapKind::Abs, nullptr, 1.0, threads);
  e.rel_map = errorMap(ref.data(), d.data(), mn, ErrorMapKind::Rel, nullptr, 1.0, threads);
  e.tiles = tileMap(e.abs_map, s.m, s.n, std::min(cfg.tile, s.m), std::min(cfg.tile, s.n));
  auto rotatedAsDouble = [&](const GemmOperand& op, const Nvfp4Config& c, Axis axis) {
    std::vector<float> f(op.f32);
    if (op.is64) f.assign(op.f64.begin(), op.f64.end());
    const std::vector<float> rot = rhtOperand(f.data(), op.rows, op.cols, c.rht_sign_mask, axis, threads);
    return std::vector<double>(rot.begin(), rot.end());
  };
  s.rotated = s.nva && s.nva->rht;
  if (s.rotated) {
    s.ra = rotatedAsDouble(s.A, *s.nva, Axis::Cols);
    s.rb = rotatedAsDouble(s.B, *s.nvb, Axis::Rows);
  }
  // Against the operand as given (float32 or float64), without double or dequantized copies.
  auto quantizationError = [&](const GemmOperand& op, const std::vector<double>& rot, const QuantizedTensor& q) {
    if (!rot.empty()) return compareQuantized(rot.data(), q, threads);
    return op.is64 ? compareQuantized(op.f64.data(), q, threads) : compareQuantized(op.f32.data(), q, threads);
  };
  e.qea = quantizationError(s.A, s.ra, s.qa);
  e.qeb = quantizationError(s.B, s.rb, s.qb);
  return e;
}

/// The run's identity and the attributes that say what it computed: formats, presets, rounding,
/// rotation, the resolved accumulation model and epilogue, shape and operand origins.
void recordAttributes(const GemmRunState& s, const GemmBackend& backend, Run& run) {
  const GemmExperimentConfig& cfg = s.cfg;
  const GemmOutput& out = s.ex.output;
  run.seed = cfg.seed;
  run.backend = out.backend.empty() ? backend.name() : out.backend;
  run.device = out.device.empty() ? backend.device() : out.device;
  run.attrs["algorithm"] = out.algorithm;
  run.attrs["format_a"] = s.fa->name();
  run.attrs["format_b"] = s.fb->name();
  run.attrs["scaling"] = s.name_a;
  if (cfg.stochastic_rounding)
    run.attrs["rounding"] = "stochastic, " + std::to_string(cfg.stochastic_bits) +
                            " random bits per element (A: counterRandom(2*seed, i), B: counterRandom(2*seed+1, i))";
  if (s.name_b != s.name_a) run.attrs["scaling_b"] = s.name_b;
  if (s.rotated) {
    char mask[8];
    std::snprintf(mask, sizeof mask, "0x%04X", unsigned(s.nva->rht_sign_mask));
    run.attrs["rotation"] = "both operands rotated along K by R = diag(s)·H16/4 (sign mask " + std::string(mask) +
                            ", BF16-rounded) before quantizing; quantized/* hold the rotated operands, " +
                            layout::kReferenceD + " is the product of the unrotated inputs";
  }
  if (s.pre_a || s.pre_b)
    run.attrs["pre_quantized"] =
        std::string(s.pre_a && s.pre_b ? "A and B"
                    : s.pre_a          ? "A"
                                       : "B") +
        " given as codes and scales (no unquantized input): their inputs/* hold the dequantized values, so the "
        "quantization part of the error split is " +
        (s.pre_a && s.pre_b ? "zero up to the rounding of the scale factors; only accumulation and output error remain"
                            : "that of the other operand alone");
  const GemmOptions& g = cfg.gemm;
  run.attrs["accumulation"] = std::string(toString(g.accumulation));
  // The resolved accumulation parameters and epilogue (what the preset, if any, stood for).
  if (!cfg.accumulation_preset.empty()) {
    run.attrs["accumulation_preset"] = cfg.accumulation_preset;
    if (const auto p = accumulationPreset(cfg.accumulation_preset)) {
      run.attrs["accumulation_preset_summary"] = p->summary;
      run.attrs["accumulation_preset_source"] = p->source;
      run.attrs["accumulation_preset_unsure"] = std::string(p->unsure ? "true" : "false");
    }
  }
  run.attrs["promotion_interval"] = int64_t(g.promotion_interval);
  if (g.accumulation == Accumulation::FastAccum) {
    run.attrs["fast_accum_bits"] = int64_t(g.fast_accum_bits);
    run.attrs["fast_accum_group"] = int64_t(g.fast_accum_group);
    run.attrs["fast_accum_promotes"] = std::string(g.fast_accum_promotes ? "true" : "false");
    if (!(g.mma == MmaRules{})) {
      run.attrs["mma_alignment"] = std::string(toString(g.mma.alignment));
      run.attrs["mma_sum"] = std::string(toString(g.mma.sum));
      run.attrs["mma_sum_bits"] = int64_t(g.mma.sum_bits);
      run.attrs["mma_sum_rounding"] = std::string(toString(g.mma.sum_rounding));
      run.attrs["mma_c"] = std::string(toString(g.mma.c_entry));
      run.attrs["mma_block_scales"] = std::string(toString(g.mma.block_scales));
      run.attrs["mma_chunk"] = int64_t(g.mma.chunk);
      run.attrs["mma_datapath"] = std::string(toString(g.mma.datapath));
    }
  }
  if (hasEpilogue(g)) {
    run.attrs["alpha"] = double(g.alpha);
    run.attrs["beta"] = double(g.beta);
    run.attrs["bias"] = std::string(!g.bias                  ? "none"
                                    : cfg.bias_source.values ? "given in memory"
                                                             : "seed " + std::to_string(cfg.bias_source.seed));
    if (cfg.c_source.values)
      run.attrs["c"] = std::string("given in memory");
    else if (cfg.c_source.fromFile())
      run.attrs["c"] = "file " + cfg.c_source.file;
  }
  run.attrs["output_type"] = std::string(toString(g.output));
  run.attrs["m"] = s.m;
  run.attrs["k"] = s.k;
  run.attrs["n"] = s.n;
  run.attrs["a_origin"] = s.A.origin;
  run.attrs["b_origin"] = s.B.origin;
  if (s.a_nonfinite > 0 || s.b_nonfinite > 0) {
    run.setMetric("a_nonfinite", double(s.a_nonfinite), "count", "NaN or Inf elements of A before quantization");
    run.setMetric("b_nonfinite", double(s.b_nonfinite), "count", "NaN or Inf elements of B before quantization");
  }
  if (out.model_of_undocumented_hardware)
    run.attrs["note"] =
        "FastAccum is a model of undocumented tensor-core accumulation" +
        (cfg.accumulation_preset.empty() ? std::string() : " (accumulation preset " + cfg.accumulation_preset + ")");
}

/// Per-block statistics of A and B against what was quantized (the rotated operand for RHT).
void recordOperandBlockStats(const GemmRunState& s, Run& run) {
  auto put = [&](const GemmOperand& op, const std::vector<double>& rot, const QuantizedTensor& q, const char* name,
                 const std::string& quantization) {
    std::vector<float> tmp;
    const float* x = op.f32.data();
    if (!rot.empty() || op.is64) {
      tmp.assign(rot.empty() ? op.f64.begin() : rot.begin(), rot.empty() ? op.f64.end() : rot.end());
      x = tmp.data();
    }
    OperandBlockSeries bs;
    bs.operand = name;
    bs.quantization = quantization;
    bs.format = q.format->name();
    bs.scale_format = q.scale_codes.empty() ? std::string("float32") : q.scaleCodeFormat().name();
    BlockStatsMap map;
    bs.steps.push_back(computeBlockStats(x, q, map));
    bs.setShape(map);
    bs.map_steps.push_back(0);
    bs.maps.push_back(std::move(map));
    putBlockStatsSeries(run, layout::blockStats(name), bs, 1);
  };
  put(s.A, s.ra, s.qa, "A", s.name_a);
  put(s.B, s.rb, s.qb, "B", s.name_b);
}

/// The run's datasets: inputs, quantized operands, D, the references, error maps and tiles. The big
/// arrays move out of the state (no copies: a 4096³ run holds each once), so this stage reads the
/// operands last.
void recordDatasets(GemmRunState& s, GemmRunErrors& e, Run& run) {
  const GemmExperimentConfig& cfg = s.cfg;
  const int64_t m = s.m, k = s.k, n = s.n;
  if (cfg.store_inputs) {
    auto put = [&](const std::string& path, GemmOperand& op, const char* meaning) {
      if (op.is64)
        run.datasets[path] = Dataset::float64({op.rows, op.cols}, std::move(op.f64), "1", meaning);
      else
        run.datasets[path] = Dataset::float32({op.rows, op.cols}, std::move(op.f32), "1", meaning);
      run.datasets[path].attrs["origin"] = op.origin;
    };
    put(layout::inputs("A"), s.A,
        s.pre_a ? "operand A [M,K]: the dequantized pre-quantized codes (no unquantized input)"
                : "operand A [M,K] before quantization");
    put(layout::inputs("B"), s.B,
        s.pre_b ? "operand B [K,N]: the dequantized pre-quantized codes (no unquantized input)"
                : "operand B [K,N] before quantization");
    if (cfg.gemm.c && cfg.gemm.beta != 0.0f)
      run.putFloat32(layout::inputs("C"), *cfg.gemm.c, m, n, "1", "epilogue matrix C [M,N] of beta·C (BF16 values)");
    if (cfg.gemm.bias)
      run.putFloat32(layout::inputs("bias"), *cfg.gemm.bias, 1, n, "1",
                     "epilogue bias [N], added to every row (BF16 values)");
  }
  if (cfg.store_quantized) {
    run.putQuantized(layout::quantized("A"), s.qa, "operand A");
    run.putQuantized(layout::quantized("B"), s.qb, "operand B");
    if (s.rotated) {
      // What the Hadamard presets quantized: the operands rotated along K (the codes' basis).
      run.putFloat32(layout::quantizedRotated("A"), std::vector<float>(s.ra.begin(), s.ra.end()), m, k, "1",
                     "operand A rotated along K by R = diag(s)·H16/4 (BF16), the tensor quantized/A_codes encode");
      run.putFloat32(layout::quantizedRotated("B"), std::vector<float>(s.rb.begin(), s.rb.end()), k, n, "1",
                     "operand B rotated along K by R = diag(s)·H16/4 (BF16), the tensor quantized/B_codes encode");
    }
  }
  GemmOutput& out = s.ex.output;
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
      Dataset::float64({m, n}, std::move(s.ex.ideal), "1",
                       s.pre_a || s.pre_b ? "ideal D: float64 product of the operands (k ascending); pre-quantized "
                                            "operands enter dequantized, as there is no unquantized input"
                                          : "ideal D: float64 product of the unquantized operands (k ascending)");
  run.datasets[layout::kReferenceDQuantizedExact] =
      Dataset::float64({m, n}, std::move(s.ex.quantized_exact), "1",
                       "dequant(A_q) . dequant(B_q) in float64: D without accumulation or output error");
  if (cfg.store_error_maps) {
    run.putFloat32(layout::kErrorAbs, std::move(e.abs_map), m, n, "1",
                   "|D - reference| per element (NaN where either is non-finite)");
    run.putFloat32(layout::kErrorRel, std::move(e.rel_map), m, n, "1",
                   "|D - reference| / |reference| per element (NaN where reference is 0 and D is not)");
  }
  auto& tm = run.putFloat32(layout::kErrorTileMeanAbs, e.tiles.mean, e.tiles.grid_rows, e.tiles.grid_cols, "1",
                            "mean |D - reference| per tile of tile_rows x tile_cols");
  auto& tx = run.putFloat32(layout::kErrorTileMaxAbs, e.tiles.max, e.tiles.grid_rows, e.tiles.grid_cols, "1",
                            "max |D - reference| per tile of tile_rows x tile_cols");
  for (Dataset* t : {&tm, &tx}) {
    t->attrs["tile_rows"] = e.tiles.tile_rows;
    t->attrs["tile_cols"] = e.tiles.tile_cols;
  }
}

/// The error split's metrics: D against the ideal (total), the quantized-exact D against the ideal
/// (quantization), D against the quantized-exact D (accumulation and output cast), and each
/// operand's quantization error and counts.
void recordErrorMetrics(const GemmRunState& s, const GemmRunErrors& e, Run& run) {
  const GemmExperimentResult& ex = s.ex;
  const ErrorMetrics& em = ex.total;
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
  run.setMetric("a_sqnr_db", e.qea.sqnr_db, "dB",
                "SQNR of dequantized A vs A as quantized (quantization alone; rotated A for Hadamard presets)");
  run.setMetric("b_sqnr_db", e.qeb.sqnr_db, "dB",
                "SQNR of dequantized B vs B as quantized (quantization alone; rotated B for Hadamard presets)");
  run.setMetric("a_saturated", double(s.qa.stats.saturated), "count", "elements of A clipped to max finite");
  run.setMetric("a_underflow", double(s.qa.stats.underflow), "count", "non-zero elements of A that became zero");
  run.setMetric("b_saturated", double(s.qb.stats.saturated), "count", "elements of B clipped to max finite");
  run.setMetric("b_underflow", double(s.qb.stats.underflow), "count", "non-zero elements of B that became zero");
  run.setMetric("amax_d", ex.output.amax_d, "1", "max |D| before scale_D and the output cast (cuBLASLt AMAX_D)");
  if (ex.d_saturated >= 0) {
    run.setMetric("d_saturated", double(ex.d_saturated), "count",
                  "elements of D clipped by the FP8 output cast: |D·scale_D| beyond max finite (counted on the "
                  "quantized-exact D)");
  }
  run.setMetric("gemm_seconds", ex.output.seconds, "s", "wall time of the GEMM alone");
  run.setMetric("quant_max_abs", ex.quantization.max_abs, "1", "max |quantized-exact - ideal|");
  run.setMetric("quant_max_rel", ex.quantization.max_rel, "1", "max relative error of quantized-exact vs ideal");
  run.setMetric("quant_rmse", ex.quantization.rmse, "1", "root mean square of quantized-exact - ideal");
  run.setMetric("accum_max_rel", ex.accumulation.max_rel, "1", "max relative error of D vs quantized-exact");
  run.setMetric("accum_rmse", ex.accumulation.rmse, "1", "root mean square of D - quantized-exact");
}

/// NaN codes of pre-quantized operands: every output in their rows of A and columns of B is NaN.
int64_t recordNanCodeOutputs(const GemmRunState& s, Run& run) {
  const int64_t ra = int64_t(s.fa_found.nan_lines.size()), cb = int64_t(s.fb_found.nan_lines.size());
  const int64_t nan_out = ra * s.n + cb * s.m - ra * cb;
  if (nan_out > 0)
    run.setMetric("nan_outputs_from_codes", double(nan_out), "count",
                  "outputs of D made NaN by NaN codes of the pre-quantized operands (whole rows of A, columns of B)");
  return nan_out;
}

/// What the run computed beyond its datasets, for callers that ask (GemmRunDetails).
void fillDetails(const GemmRunState& s, const GemmRunErrors& e, int64_t nan_outputs, GemmRunDetails& details) {
  details.m = s.m;
  details.k = s.k;
  details.n = s.n;
  details.quantization = s.ex.quantization;
  details.accumulation = s.ex.accumulation;
  details.total = s.ex.total;
  details.a_stats = s.ex.a_stats;
  details.b_stats = s.ex.b_stats;
  details.d_saturated = s.ex.d_saturated;
  details.output_quant_scale = s.cfg.gemm.output_quant_scale;
  details.tiles = e.tiles;
  details.quantize_seconds = s.quantize_s;
  details.ideal_seconds = s.ex.ideal_seconds;
  details.exact_seconds = s.ex.exact_seconds;
  details.output = s.ex.output;
  details.a_nonfinite = s.a_nonfinite;
  details.b_nonfinite = s.b_nonfinite;
  details.a_nan_codes = s.fa_found.nan_codes;
  details.b_nan_codes = s.fb_found.nan_codes;
  details.nan_outputs_from_codes = nan_outputs;
}

/// What the output type (and alpha, scale_D) did to D that the quantized-exact D does not show:
/// non-zero outputs flushed to zero, and finite ones that became ±Inf / NaN, as warnings.
void warnOutputCast(const GemmExperimentConfig& cfg, Result<Run>& r) {
  const Run& run = r.value;
  const Dataset *dd = run.find(layout::kOutputD), *qe = run.find(layout::kReferenceDQuantizedExact);
  if (!dd || !qe || dd->elementCount() != qe->elementCount()) return;
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

} // namespace

Result<Run> runGemmExperimentRun(const GemmExperimentConfig& cfg_in, const std::string& config_json,
                                 const std::string& run_id, GemmBackend& backend, const ProgressFn& progress_in,
                                 GemmRunDetails* details) {
  // A kernel check (its fit runs many models) takes the last 70 % of the progress.
  const ProgressFn progress = cfg_in.check.enabled() ? sub(progress_in, 0.0, 0.3) : progress_in;
  Result<Run> r;
  GemmRunState s;
  s.cfg = cfg_in;
  s.where = "gemm experiment " + run_id;
  if (!resolveRecipe(s, r) || !loadOperands(s, r, progress) || !quantizeOperands(s, r, progress) ||
      !resolveEpilogue(s, r, backend))
    return r;
  runGemms(s, backend, progress);
  GemmRunErrors errors = measureErrors(s, progress);

  Run& run = r.value;
  run.id = run_id;
  run.type = "gemm";
  run.config_json = config_json;
  s.name_a = s.pre_a ? std::string("pre-quantized") : s.nva ? s.nva->name : s.sc->name;
  s.name_b = s.pre_b ? std::string("pre-quantized") : s.nvb ? s.nvb->name : s.scb->name;
  recordAttributes(s, backend, run);
  putRobustMetrics(run, robustInputs(s.A, s.B, s.ra, s.rb, s.qa, s.qb, s.ex.ideal, s.ex.output.d, s.m, s.k, s.n), s.cfg,
                   s.pre_a || s.pre_b || s.rotated, sub(progress, 0.93, 0.98));
  recordOperandBlockStats(s, run);
  recordDatasets(s, errors, run);
  recordErrorMetrics(s, errors, run);
  const int64_t nan_outputs = recordNanCodeOutputs(s, run);
  if (details) fillDetails(s, errors, nan_outputs, *details);
  for (const auto& w : s.ex.output.warnings)
    r.issues.push_back(Issue{w.severity == Severity::Error ? Severity::Warning : w.severity, "", "GEMM " + w.where,
                             w.what + ": " + w.detail, C::Computation});
  warnOutputCast(s.cfg, r);
  if (s.cfg.check.enabled()) {
    try {
      auto res = std::make_shared<KernelCheckResult>(
          runKernelCheck(s.qa, s.qb, s.cfg.gemm, s.observed.value, s.cfg.check, run,
                         std::min(s.cfg.tile, std::max(s.m, s.n)), sub(progress_in, 0.3, 1.0)));
      if (res->fitted && !res->fit.warning.empty())
        r.add(C::Computation, "kernel check", res->fit.warning, Severity::Warning);
      if (details) details->check = std::move(res);
    } catch (const std::invalid_argument& e) {
      r.add(C::InvalidArgument, s.where, std::string("kernel check: ") + e.what());
      return r;
    }
  }
  // The run's findings, as the CLI printed them, for readers of the session (a JSON array).
  Json w = Json::array();
  for (const Issue& i : r.issues)
    if (i.severity != Severity::Error)
      w.push_back({{"severity", severityName(i.severity)}, {"where", i.where}, {"detail", i.detail}});
  if (!w.empty()) run.attrs["warnings"] = w.dump();
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

// FP8 Lab — the block-scaled training recipes (see recipe.h). The quantization itself is
// core/scaling's: quantize() with the presets te_block_1x128 / te_block_128x128 (pow2 on or off),
// mx_rceil / mx_floor / mx_ceil / mx_even (1×32, or 32×32 tiles), deepgemm_1x128 /
// deepgemm_128x128 (and their _ue8m0 twins), and quantizeNvfp4() with Nvfp4Rule::TransformerEngine;
// this file picks the preset per role, pads the contraction axis and dequantizes.
#include "training/recipe.h"

#include "training/diagnostics.h"
#include "scaling/nvfp4.h"
#include "training/dense.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace fp8lab {

const char* toString(TrainingRecipe r) {
  switch (r) {
  case TrainingRecipe::PerTensor:
    return "per_tensor";
  case TrainingRecipe::TeFloat8Block:
    return "te_float8_block";
  case TrainingRecipe::TeMxfp8:
    return "te_mxfp8";
  case TrainingRecipe::TeNvfp4:
    return "te_nvfp4";
  case TrainingRecipe::DeepSeekV3:
    return "deepseek_v3";
  }
  return "?";
}

std::optional<TrainingRecipe> parseTrainingRecipe(const std::string& s) {
  for (auto r : {TrainingRecipe::PerTensor, TrainingRecipe::TeFloat8Block, TrainingRecipe::TeMxfp8,
                 TrainingRecipe::TeNvfp4, TrainingRecipe::DeepSeekV3})
    if (s == toString(r)) return r;
  return std::nullopt;
}

std::string trainingRecipeNames() {
  return "te_float8_block, te_mxfp8, te_nvfp4, deepseek_v3";
}

std::optional<ScaleRule> parseMxScaleMode(const std::string& s) {
  for (auto r : {ScaleRule::MxRceil, ScaleRule::MxFloor, ScaleRule::MxCeil, ScaleRule::MxEven})
    if (s == mxScaleModeName(r)) return r;
  return std::nullopt;
}

const char* mxScaleModeName(ScaleRule r) {
  switch (r) {
  case ScaleRule::MxRceil:
    return "rceil";
  case ScaleRule::MxFloor:
    return "floor";
  case ScaleRule::MxCeil:
    return "ceil";
  case ScaleRule::MxEven:
    return "even";
  default:
    return "?";
  }
}

const char* toString(OperandRole r) {
  switch (r) {
  case OperandRole::FpropInput:
    return "fprop.input";
  case OperandRole::FpropWeight:
    return "fprop.weight";
  case OperandRole::DgradGradOutput:
    return "dgrad.grad_output";
  case OperandRole::DgradWeight:
    return "dgrad.weight";
  case OperandRole::WgradInput:
    return "wgrad.input";
  case OperandRole::WgradGradOutput:
    return "wgrad.grad_output";
  }
  return "?";
}

std::optional<OperandRole> parseOperandRole(const std::string& s) {
  for (int i = 0; i < kOperandRoles; ++i)
    if (s == toString(static_cast<OperandRole>(i))) return static_cast<OperandRole>(i);
  return std::nullopt;
}

bool isGradientRole(OperandRole r) {
  return r == OperandRole::DgradGradOutput || r == OperandRole::WgradGradOutput;
}

bool isWeightRole(OperandRole r) {
  return r == OperandRole::FpropWeight || r == OperandRole::DgradWeight;
}

const char* toString(RoleKind k) {
  switch (k) {
  case RoleKind::HighPrecision:
    return "high_precision";
  case RoleKind::Float8Block:
    return "te_float8_block";
  case RoleKind::Mxfp8:
    return "te_mxfp8";
  case RoleKind::Nvfp4:
    return "te_nvfp4";
  case RoleKind::DeepSeekBlock:
    return "deepseek_v3";
  }
  return "?";
}

std::string RoleQuantization::describe() const {
  std::string s = toString(kind);
  if (kind == RoleKind::HighPrecision) return s;
  if (format) s += " " + format->name();
  switch (kind) {
  case RoleKind::Float8Block:
    s += block_2d ? " 128x128" : " 1x128";
    if (!pow2) s += " fp32";
    break;
  case RoleKind::DeepSeekBlock:
    s += block_2d ? " 128x128" : " 1x128";
    if (pow2) s += " ue8m0";
    break;
  case RoleKind::Mxfp8:
    s += block_2d ? " 32x32" : " 1x32";
    if (mx_rule != ScaleRule::MxRceil) s += std::string(" ") + mxScaleModeName(mx_rule);
    break;
  case RoleKind::Nvfp4:
    s += block_2d ? " 16x16" : " 1x16";
    if (rht) s += " rht";
    if (stochastic_rounding) s += " sr";
    break;
  case RoleKind::HighPrecision:
    break;
  }
  return s;
}

bool TrainingRecipeConfig::weight2d() const {
  if (weight_2d) return *weight_2d;
  return recipe != TrainingRecipe::TeMxfp8; // MXFP8 2-D is TE's opt-in enable_2d_quantization
}

bool TrainingRecipeConfig::powerOfTwo() const {
  if (power_of_two) return *power_of_two;
  return recipe == TrainingRecipe::TeFloat8Block; // TE: power_2_scale = True; DeepSeek-V3: float32
}

std::string TrainingRecipeConfig::label() const {
  std::string s = toString(recipe);
  if (recipe == TrainingRecipe::PerTensor) return s;
  if (hybrid) s += " HYBRID";
  const bool def2d = recipe != TrainingRecipe::TeMxfp8;
  if (weight2d() != def2d) s += weight2d() ? " 2-D weights" : " 1-D weights";
  if (recipe == TrainingRecipe::TeFloat8Block && !powerOfTwo()) s += " fp32 scales";
  if (recipe == TrainingRecipe::DeepSeekV3 && powerOfTwo()) s += " ue8m0 scales";
  if (recipe == TrainingRecipe::TeMxfp8 && mx_rule != ScaleRule::MxRceil)
    s += std::string(" ") + mxScaleModeName(mx_rule);
  if (recipe == TrainingRecipe::TeNvfp4) {
    if (!nvfp4_rht) s += " no RHT";
    if (!nvfp4_stochastic_rounding) s += " no SR";
  }
  for (const RoleOverride& o : overrides)
    if (o.kind || o.format) return s + " + overrides";
  return s;
}

namespace {

RoleKind kindOf(TrainingRecipe r) {
  switch (r) {
  case TrainingRecipe::TeFloat8Block:
    return RoleKind::Float8Block;
  case TrainingRecipe::TeMxfp8:
    return RoleKind::Mxfp8;
  case TrainingRecipe::TeNvfp4:
    return RoleKind::Nvfp4;
  case TrainingRecipe::DeepSeekV3:
    return RoleKind::DeepSeekBlock;
  case TrainingRecipe::PerTensor:
    break;
  }
  return RoleKind::HighPrecision;
}

} // namespace

bool TrainingRecipeConfig::bothWgradNvfp4() const {
  for (auto r : {OperandRole::WgradInput, OperandRole::WgradGradOutput}) {
    const RoleOverride& o = overrides[static_cast<size_t>(r)];
    if ((o.kind ? *o.kind : kindOf(recipe)) != RoleKind::Nvfp4) return false;
  }
  return true;
}

RoleQuantization TrainingRecipeConfig::role(OperandRole r) const {
  RoleQuantization q;
  const RoleOverride& o = overrides[static_cast<size_t>(r)];
  q.kind = o.kind ? *o.kind : kindOf(recipe);
  const bool grad = isGradientRole(r), weight = isWeightRole(r);
  const bool wgrad = r == OperandRole::WgradInput || r == OperandRole::WgradGradOutput;
  // weight_2d belongs to the run's recipe; a role overridden to another kind takes that kind's
  // own TE default (Float8Block and NVFP4: 2-D weights; MXFP8: 1-D).
  const bool own = q.kind == kindOf(recipe);
  switch (q.kind) {
  case RoleKind::HighPrecision:
    return q;
  case RoleKind::Float8Block:
  case RoleKind::Mxfp8:
  case RoleKind::DeepSeekBlock:
    q.format = grad && hybrid ? &Format::E5M2() : &Format::E4M3FN();
    q.block_2d = weight && (own ? weight2d() : q.kind != RoleKind::Mxfp8);
    // power_of_two and the MX scale mode belong to the run's recipe, like weight_2d; an overridden
    // role takes its kind's default (TE blocks: power of two; DeepSeek: float32; MX: RCEIL).
    q.pow2 = own ? powerOfTwo() : q.kind == RoleKind::Float8Block;
    if (q.kind == RoleKind::Mxfp8 && own) q.mx_rule = mx_rule;
    break;
  case RoleKind::Nvfp4:
    q.format = &Format::E2M1();
    q.block_2d = weight && (own ? weight2d() : true);
    // The rotation cancels in dW = (xᵀQ)(Qᵀg) only when both wgrad operands are rotated, so RHT is
    // on when both are NVFP4 (TE rotates both columnwise copies, never one).
    q.rht = wgrad && nvfp4_rht && bothWgradNvfp4();
    q.stochastic_rounding = grad && (own ? nvfp4_stochastic_rounding : true);
    break;
  }
  if (o.format) q.format = o.format;
  return q;
}

std::string TrainingRecipeConfig::validate() const {
  for (int i = 0; i < kOperandRoles; ++i) {
    const auto r = static_cast<OperandRole>(i);
    const RoleQuantization q = role(r);
    const std::string where = std::string(toString(r)) + ": ";
    if (q.kind == RoleKind::Nvfp4 && q.format != &Format::E2M1())
      return where + "te_nvfp4 elements are E2M1; a format override applies to the FP8 recipes only";
    if (q.kind == RoleKind::HighPrecision && overrides[static_cast<size_t>(i)].format)
      return where + "a high_precision operand has no format";
    if ((q.kind == RoleKind::Float8Block || q.kind == RoleKind::Mxfp8 || q.kind == RoleKind::DeepSeekBlock) &&
        q.format->bits() != 8)
      return where + q.format->name() + " is not an 8-bit format";
    if (q.kind == RoleKind::Mxfp8 && q.format != &Format::E4M3FN() && q.format != &Format::E5M2())
      return where + "te_mxfp8 elements are E4M3FN or E5M2 (TE MXFP8BlockScaling), not " + q.format->name();
  }
  return {};
}

int64_t paddedContraction(int64_t k) {
  return (k + 15) / 16 * 16;
}

namespace {

/// max |x| with NaN ignored (CUDA fmaxf): scaling.h's vectorised amaxOf, as float32.
float amaxIgnoringNaN(const float* x, size_t n) {
  return static_cast<float>(amaxOf(x, n, /*ignore_nan=*/true));
}

/// Copies src [r, c] into dst [R, C] (R ≥ r, C ≥ c) at the top left, zeros elsewhere.
void padInto(const float* src, int64_t r, int64_t c, std::vector<float>& dst, int64_t R, int64_t C) {
  dst.assign(static_cast<size_t>(R * C), 0.0f);
  for (int64_t i = 0; i < r; ++i) std::copy_n(src + i * c, c, dst.begin() + i * C);
}

/// A block-scaled operand's record: the lower median of the block dequant scales with that
/// block's quant multiplier, and the cast's saturation and underflow counts.
void recordBlockScales(const QuantizedTensor& t, RoleQuantRecord* r) {
  std::vector<size_t> idx(t.dequant_scales.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  const size_t mid = (idx.size() - 1) / 2;
  std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(mid), idx.end(),
                   [&](size_t a, size_t b) { return t.dequant_scales[a] < t.dequant_scales[b]; });
  r->dequant_scale = t.dequant_scales[idx[mid]];
  r->quant_scale = t.quant_scales.empty() ? 1.0f / r->dequant_scale : t.quant_scales[idx[mid]];
  r->saturated = t.stats.saturated;
  r->underflow = t.stats.underflow;
}

/// The NVFP4 config of an Nvfp4 role (TE's nvfp4_te with the role's 2-D tiles, RHT and
/// stochastic rounding seeded by `sr_seed`).
Nvfp4Config nvfp4RoleConfig(const RoleQuantization& q, uint64_t sr_seed, int threads) {
  Nvfp4Config nc = requireNvfp4Preset("nvfp4_te");
  nc.tile_2d = q.block_2d;
  nc.rht = q.rht;
  nc.stochastic_rounding = q.stochastic_rounding;
  nc.seed = sr_seed;
  nc.threads = threads;
  return nc;
}

/// x [rows, cols] padded with zeros to whole 16-element blocks along the block axis (and, for 2-D
/// tiles, the other axis): the padded shape in *pr, *pc and the data to quantize (x itself when no
/// padding is needed, else `padded`).
const float* padForNvfp4(const RoleQuantization& q, const float* x, int64_t rows, int64_t cols, Axis axis,
                         std::vector<float>& padded, int64_t* pr, int64_t* pc) {
  const bool pad_other = q.block_2d;
  *pr = axis == Axis::Rows || pad_other ? paddedContraction(rows) : rows;
  *pc = axis == Axis::Cols || pad_other ? paddedContraction(cols) : cols;
  if (*pr == rows && *pc == cols) return x;
  padInto(x, rows, cols, padded, *pr, *pc);
  return padded.data();
}

} // namespace

ScalingConfig RoleQuantization::scalingConfig(int threads) const {
  ScalingConfig sc;
  switch (kind) {
  case RoleKind::Float8Block:
    // TE Float8BlockScaling: QParams.power_2_scale (True by default; False with
    // NVTE_FP8_BLOCK_SCALING_FP32_SCALES=1), the same compute_scale_from_amax otherwise.
    sc = requireScalingPreset(block_2d ? "te_block_128x128" : "te_block_1x128");
    sc.pow2 = pow2;
    if (!pow2) sc.name += "_fp32";
    break;
  case RoleKind::DeepSeekBlock:
    sc = requireScalingPreset(std::string(block_2d ? "deepgemm_128x128" : "deepgemm_1x128") + (pow2 ? "_ue8m0" : ""));
    break;
  case RoleKind::Mxfp8: {
    const std::string mode = mxScaleModeName(mx_rule);
    if (mode == "?") throw std::invalid_argument("te_mxfp8: not an MX scale mode (rceil, floor, ceil, even)");
    sc = requireScalingPreset("mx_" + mode);
    if (block_2d) { // one E8M0 scale per 32×32 tile (TE enable_2d_quantization), the mode's own rule
      sc.granularity = Granularity::Block2D;
      sc.name += "_2d";
    }
    break;
  }
  case RoleKind::HighPrecision:
  case RoleKind::Nvfp4:
    throw std::invalid_argument(std::string("RoleQuantization::scalingConfig: ") + toString(kind) +
                                " has no core/scaling preset");
  }
  sc.threads = threads;
  return sc;
}

std::string RoleQuantization::costPreset() const {
  switch (kind) {
  case RoleKind::HighPrecision:
    return {};
  case RoleKind::Nvfp4:
    return block_2d ? "nvfp4_te_2d" : "nvfp4_te";
  case RoleKind::Float8Block:
    return block_2d ? "te_block_128x128" : "te_block_1x128"; // float32 scales either way
  case RoleKind::DeepSeekBlock:
    return scalingConfig().name;
  case RoleKind::Mxfp8:
    return block_2d ? "mx_rceil_2d" : std::string("mx_") + mxScaleModeName(mx_rule); // E8M0 either way
  }
  return {};
}

void fakeQuantize(const RoleQuantization& q, const float* x, int64_t rows, int64_t cols, Axis axis, uint64_t sr_seed,
                  std::vector<float>& out, RoleQuantRecord* rec, int threads, const QuantizedObserver* observe) {
  const size_t n = static_cast<size_t>(rows * cols);
  const int64_t k = axis == Axis::Cols ? cols : rows;
  const int64_t kp = paddedContraction(k);
  const int64_t out_rows = axis == Axis::Cols ? rows : kp, out_cols = axis == Axis::Cols ? kp : cols;
  RoleQuantRecord r;
  r.amax = amaxIgnoringNaN(x, n);
  std::vector<float> deq; // [rows, cols] unless NVFP4 (padded shape)
  int64_t deq_rows = rows, deq_cols = cols;
  switch (q.kind) {
  case RoleKind::HighPrecision:
    deq.assign(x, x + n);
    break;
  case RoleKind::Float8Block:
  case RoleKind::Mxfp8:
  case RoleKind::DeepSeekBlock: {
    const QuantizedTensor t = quantize(x, rows, cols, *q.format, q.scalingConfig(threads), axis);
    if (observe && *observe) (*observe)(x, t);
    deq = t.dequantize();
    recordBlockScales(t, &r);
    break;
  }
  case RoleKind::Nvfp4: {
    const Nvfp4Config nc = nvfp4RoleConfig(q, sr_seed, threads);
    int64_t pr = 0, pc = 0;
    std::vector<float> padded;
    const float* src = padForNvfp4(q, x, rows, cols, axis, padded, &pr, &pc);
    const Nvfp4Tensor t = quantizeNvfp4(src, pr, pc, nc, axis);
    if (observe && *observe) {
      const Nvfp4StatsView v = nvfp4StatsView(t, nc, src, pr, pc, rows, cols, axis, threads);
      (*observe)(v.elements(src), v.q);
    }
    deq = t.dequantize();
    deq_rows = pr;
    deq_cols = pc;
    r.quant_scale = t.tensor_scale;
    r.dequant_scale = 1.0f / t.tensor_scale;
    if (!q.rht)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          if (x[i * cols + j] != 0 && deq[static_cast<size_t>(i * pc + j)] == 0) ++r.underflow;
    break;
  }
  }
  // deq [deq_rows, deq_cols] → out [out_rows, out_cols]: keep the contraction axis (padded with
  // zeros, or with the rotated pad of an RHT operand), crop the other axis to its real length.
  out.assign(static_cast<size_t>(out_rows * out_cols), 0.0f);
  const int64_t cr = std::min(out_rows, deq_rows), cc = std::min(out_cols, deq_cols);
  for (int64_t i = 0; i < cr; ++i) std::copy_n(deq.begin() + i * deq_cols, cc, out.begin() + i * out_cols);
  if (rec) *rec = r;
}

QuantizedTensor quantizeRole(const RoleQuantization& q, const float* x, int64_t rows, int64_t cols, Axis axis,
                             uint64_t sr_seed, RoleQuantRecord* rec, int threads, const QuantizedObserver* observe) {
  const size_t n = static_cast<size_t>(rows * cols);
  // Without a record or an observer only the codes and scales are read: no amax, statistics or
  // median scale are formed.
  const bool observed = observe && *observe;
  RoleQuantRecord r;
  if (rec) r.amax = amaxIgnoringNaN(x, n);
  QuantizedTensor out;
  switch (q.kind) {
  case RoleKind::HighPrecision:
    throw std::invalid_argument("quantizeRole: a high_precision role is not quantized");
  case RoleKind::Float8Block:
  case RoleKind::Mxfp8:
  case RoleKind::DeepSeekBlock: {
    ScalingConfig sc = q.scalingConfig(threads);
    sc.count_stats = rec || observed;
    out = quantize(x, rows, cols, *q.format, sc, axis);
    if (observed) (*observe)(x, out);
    if (rec) recordBlockScales(out, &r);
    break;
  }
  case RoleKind::Nvfp4: {
    const Nvfp4Config nc = nvfp4RoleConfig(q, sr_seed, threads);
    int64_t pr = 0, pc = 0;
    std::vector<float> padded;
    const float* src = padForNvfp4(q, x, rows, cols, axis, padded, &pr, &pc);
    const Nvfp4Tensor t = quantizeNvfp4(src, pr, pc, nc, axis);
    if (observed) {
      const Nvfp4StatsView v = nvfp4StatsView(t, nc, src, pr, pc, rows, cols, axis, threads);
      (*observe)(v.elements(src), v.q);
    }
    // Without its element statistics (the GEMM does not need them, and with RHT they would need
    // the rotation a third time); the record's underflow is counted below from the codes.
    out = toQuantizedTensor(t, nc, nullptr);
    // Keep the padded contraction axis, crop the other one to its real length.
    const int64_t kr = axis == Axis::Rows ? pr : rows, kc = axis == Axis::Cols ? pc : cols;
    if (kr != pr || kc != pc) out = cropQuantized(out, kr, kc);
    r.quant_scale = t.tensor_scale;
    r.dequant_scale = 1.0f / t.tensor_scale;
    if (rec && !q.rht)
      for (int64_t i = 0; i < rows; ++i) {
        // A finite non-zero input coded ±0; branch-free so the row vectorises.
        const float* xr = x + i * cols;
        const uint8_t* cr = t.codes.data() + i * pc;
        int64_t u = 0;
        for (int64_t j = 0; j < cols; ++j) {
          const float a = std::fabs(xr[j]);
          u += (a != 0.0f) & (a <= std::numeric_limits<float>::max()) & ((cr[j] & 0x7) == 0);
        }
        r.underflow += u;
      }
    break;
  }
  }
  if (rec) *rec = r;
  return out;
}

} // namespace fp8lab

namespace fp8lab {

void recipeLinearGemm(const TrainingRecipeConfig& rc, LinearGemm gemm, const float* a, const float* b, int64_t batch,
                      int64_t in, int64_t out, uint64_t sr_seed_a, uint64_t sr_seed_b, std::vector<float>& d,
                      RoleQuantRecord* rec_a, RoleQuantRecord* rec_b, int threads, const QuantizedObserver* observe_a,
                      const QuantizedObserver* observe_b) {
  std::vector<float> fa, fb, t;
  switch (gemm) {
  case LinearGemm::Fprop:
    fakeQuantize(rc.role(OperandRole::FpropInput), a, batch, in, Axis::Cols, sr_seed_a, fa, rec_a, threads, observe_a);
    fakeQuantize(rc.role(OperandRole::FpropWeight), b, in, out, Axis::Rows, sr_seed_b, fb, rec_b, threads, observe_b);
    d.resize(static_cast<size_t>(batch * out));
    matmulF32(fa.data(), fb.data(), d.data(), batch, paddedContraction(in), out, threads);
    break;
  case LinearGemm::Dgrad:
    fakeQuantize(rc.role(OperandRole::DgradGradOutput), a, batch, out, Axis::Cols, sr_seed_a, fa, rec_a, threads,
                 observe_a);
    t.resize(static_cast<size_t>(in * out));
    transposeF32(b, t.data(), in, out); // Wᵀ [out, in]
    fakeQuantize(rc.role(OperandRole::DgradWeight), t.data(), out, in, Axis::Rows, sr_seed_b, fb, rec_b, threads,
                 observe_b);
    d.resize(static_cast<size_t>(batch * in));
    matmulF32(fa.data(), fb.data(), d.data(), batch, paddedContraction(out), in, threads);
    break;
  case LinearGemm::Wgrad:
    t.resize(static_cast<size_t>(batch * in));
    transposeF32(a, t.data(), batch, in); // xᵀ [in, B]
    fakeQuantize(rc.role(OperandRole::WgradInput), t.data(), in, batch, Axis::Cols, sr_seed_a, fa, rec_a, threads,
                 observe_a);
    fakeQuantize(rc.role(OperandRole::WgradGradOutput), b, batch, out, Axis::Rows, sr_seed_b, fb, rec_b, threads,
                 observe_b);
    d.resize(static_cast<size_t>(in * out));
    matmulF32(fa.data(), fb.data(), d.data(), in, paddedContraction(batch), out, threads);
    break;
  }
}

} // namespace fp8lab

#include "scaling/scaling.h"

#include "common/names.h"

#include "scaling/scale_rules.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

// Names of the scaling enums, the preset registry (each preset with the system it follows) and the
// rules that turn a preset into one block's scale and shape. The quantize engine that applies them
// is scaling.cpp.

namespace fp8lab {

// ---- names -------------------------------------------------------------------------------------

const char* toString(Granularity g) {
  switch (g) {
  case Granularity::PerTensor:
    return "per-tensor";
  case Granularity::PerRow:
    return "per-row";
  case Granularity::PerColumn:
    return "per-column";
  case Granularity::Outer:
    return "outer-vector";
  case Granularity::Block1D:
    return "block-1d";
  case Granularity::Block2D:
    return "block-2d";
  }
  return "?";
}

const char* toString(ScaleRule r) {
  switch (r) {
  case ScaleRule::TransformerEngine:
    return "te";
  case ScaleRule::Torchao:
    return "torchao";
  case ScaleRule::DeepGemm:
    return "deepgemm";
  case ScaleRule::MxFloor:
    return "mx-floor";
  case ScaleRule::MxCeil:
    return "mx-ceil";
  case ScaleRule::MxEven:
    return "mx-even";
  case ScaleRule::MxRceil:
    return "mx-rceil";
  case ScaleRule::MxRceilTorchao:
    return "mx-rceil-torchao";
  }
  return "?";
}

const char* toString(Axis a) {
  return a == Axis::Rows ? "rows" : "cols";
}

// ---- presets -----------------------------------------------------------------------------------

namespace {

struct PresetDef {
  ScalingPresetInfo info;
  ScalingConfig cfg;
};

ScalingConfig make(const char* name, Granularity g, ScaleRule r, bool pow2 = false, int64_t block = 128,
                   Format::ScaleOp op = Format::ScaleOp::Multiply) {
  ScalingConfig c;
  c.name = name;
  c.granularity = g;
  c.rule = r;
  c.pow2 = pow2;
  c.block = block;
  c.op = op;
  return c;
}

const std::vector<PresetDef>& presetDefs() {
  using G = Granularity;
  using R = ScaleRule;
  static const std::vector<PresetDef> defs = {
      {{"te_current", "per-tensor current scaling, s = max/amax (fp32), amax 0/inf/NaN -> 1, inf -> FLT_MAX",
        "Transformer Engine Float8CurrentScaling, recipe_common.cuh compute_scale_from_amax"},
       make("te_current", G::PerTensor, R::TransformerEngine)},
      {{"te_current_pow2", "te_current with power-of-two scales (mantissa mask, rounds down)",
        "TE Float8CurrentScaling with NVTE_FP8_CURRENT_SCALING_POWER_2_SCALES=1, recipe_common.cuh "
        "compute_scale_from_amax (pow_2_scales)"},
       make("te_current_pow2", G::PerTensor, R::TransformerEngine, true)},
      {{"torchao_tensorwise", "per-tensor, s = float32(float64(max)/max(amax,1e-12))",
        "torchao float8 recipe 'tensorwise', torchao/float8/float8_utils.py amax_to_scale"},
       make("torchao_tensorwise", G::PerTensor, R::Torchao)},
      {{"torchao_rowwise", "one scale per slice across the contraction axis, torchao rule, pow2 (exp2(floor(log2)))",
        "torchao float8 recipe 'rowwise': torchao/float8/float8_utils.py amax_to_scale, round_scales_to_power_of_2"},
       make("torchao_rowwise", G::Outer, R::Torchao, true)},
      {{"per_row",
        "row-wise: one scale per row of A and per column of B (per slice across the contraction axis), "
        "torchao rule (no pow2 unless asked)",
        "torchao rowwise pairing without power-of-two scales: A axiswise_dim=-1, B axiswise_dim=0 / cuBLASLt outer "
        "vector"},
       make("per_row", G::Outer, R::Torchao)},
      {{"per_column",
        "one scale per column of the tensor, torchao rule (no pow2 unless asked); in a GEMM only for B "
        "(A's columns run along K)",
        "torchao axiswise_dim=0, torchao/float8/float8_utils.py amax_to_scale"},
       make("per_column", G::PerColumn, R::Torchao)},
      {{"torchao_block_1x128", "1x128 blocks along the contraction axis, torchao rule, no pow2",
        "torchao prototype/blockwise_fp8_training/kernels.py"},
       make("torchao_block_1x128", G::Block1D, R::Torchao)},
      {{"torchao_block_128x128", "128x128 tiles, torchao rule, no pow2",
        "torchao prototype/blockwise_fp8_training/kernels.py"},
       make("torchao_block_128x128", G::Block2D, R::Torchao)},
      {{"deepgemm_1x128", "1x128 blocks, sf = max(amax,1e-4)/448 (fp32), x * (1/sf)",
        "DeepGEMM deep_gemm/utils/math.py per_token_cast_to_fp8; DeepSeek-V3 activations"},
       make("deepgemm_1x128", G::Block1D, R::DeepGemm)},
      {{"deepgemm_128x128", "128x128 tiles, sf = max(amax,1e-4)/448 (fp32), x * (1/sf)",
        "DeepGEMM per_block_cast_to_fp8; DeepSeek-V3 weights"},
       make("deepgemm_128x128", G::Block2D, R::DeepGemm)},
      {{"deepgemm_1x128_ue8m0", "deepgemm_1x128 with sf rounded up to a power of two (UE8M0, SM100)",
        "DeepGEMM deep_gemm/utils/math.py ceil_to_ue8m0"},
       make("deepgemm_1x128_ue8m0", G::Block1D, R::DeepGemm, true)},
      {{"deepgemm_128x128_ue8m0", "deepgemm_128x128 with UE8M0 (round-up) scales",
        "DeepGEMM deep_gemm/utils/math.py ceil_to_ue8m0"},
       make("deepgemm_128x128_ue8m0", G::Block2D, R::DeepGemm, true)},
      {{"dsv3_act_quant", "1x128 blocks, sf = max(amax,1e-4)/448, x / sf (division)",
        "DeepSeek-V3 inference/kernel.py act_quant"},
       make("dsv3_act_quant", G::Block1D, R::DeepGemm, false, 128, Format::ScaleOp::Divide)},
      {{"te_block_1x128", "1x128 blocks, TE rule with power-of-two scales (default of Float8BlockScaling)",
        "TE Float8BlockScaling (common/recipe/__init__.py): inputs and gradients in 1D blocks, recipe_common.cuh "
        "compute_scale_from_amax"},
       make("te_block_1x128", G::Block1D, R::TransformerEngine, true)},
      {{"te_block_128x128", "128x128 tiles, TE rule with power-of-two scales",
        "TE Float8BlockScaling (common/recipe/__init__.py): weights in 2D blocks, recipe_common.cuh "
        "compute_scale_from_amax"},
       make("te_block_128x128", G::Block2D, R::TransformerEngine, true)},
      {{"mx_floor", "MX block-32, E8M0 = floor(log2 amax) - emax_elem, elements saturate (may clip)",
        "OCP MX v1.0 6.3; microxcaling; torchao ScaleCalculationMode.FLOOR, prototype/mx_formats/mx_tensor.py to_mx"},
       make("mx_floor", G::Block1D, R::MxFloor, false, 32)},
      {{"mx_ceil", "MX block-32, E8M0 = ceil exponent - emax_elem",
        "torchao ScaleCalculationMode.CEIL, prototype/mx_formats/mx_tensor.py to_mx"},
       make("mx_ceil", G::Block1D, R::MxCeil, false, 32)},
      {{"mx_even",
        "MX block-32, amax rounded half-up to the element's mantissa width, then FLOOR (carries past 2 - "
        "2^-(mbits+1)); NaN/inf block -> 0xFF",
        "torchao ScaleCalculationMode.EVEN, prototype/mx_formats/mx_tensor.py to_mx"},
       make("mx_even", G::Block1D, R::MxEven, false, 32)},
      {{"mx_rceil", "MX block-32, E8M0 = round_up(amax/max) saturating, never clips",
        "TE MXFP8BlockScaling, util/ptx_arch_spec.cuh float_to_e8m0 (cvt.rp.satfinite.ue8m0x2.f32); cuBLAS block "
        "scaling"},
       make("mx_rceil", G::Block1D, R::MxRceil, false, 32)},
      {{"mx_rceil_torchao", "MX block-32, E8M0 = round_up(amax/max) without saturation (inf/NaN block -> 0xFF)",
        "torchao ScaleCalculationMode.RCEIL, prototype/mx_formats/mx_tensor.py to_mx"},
       make("mx_rceil_torchao", G::Block1D, R::MxRceilTorchao, false, 32)},
      {{"mx_rceil_2d",
        "MX 32x32 tiles (weights), E8M0 = round_up(amax/max) saturating, one scale per tile (rowwise and "
        "columnwise codes identical)",
        "TE MXFP8BlockScaling(enable_2d_quantization=True), cast/mxfp8/quantize_mxfp8.cuh kIs2DBlockScaling"},
       make("mx_rceil_2d", G::Block2D, R::MxRceil, false, 32)},
      {{"flax_delayed", "per-tensor delayed: Flax fp8_ops history (window excludes current step), dequant scale",
        "Flax flax/linen/fp8_ops.py update_fp8_meta", true},
       make("flax_delayed", G::PerTensor, R::TransformerEngine)},
      {{"te_delayed", "per-tensor delayed: TE DelayedScaling (staging slot, no roll on amax 0, FLT_MAX clamp)",
        "TE DelayedScaling, common/recipe/delayed_scaling.cu kernel_bulk", true},
       make("te_delayed", G::PerTensor, R::TransformerEngine)},
      {{"te_jax_delayed", "per-tensor delayed: TE JAX DelayedScaleQuantizer (always rolls, no FLT_MAX clamp)",
        "TE transformer_engine/jax/quantize/quantizer.py DelayedScaleQuantizer", true},
       make("te_jax_delayed", G::PerTensor, R::TransformerEngine)},
  };
  return defs;
}

} // namespace

const std::vector<ScalingPresetInfo>& scalingPresets() {
  static const std::vector<ScalingPresetInfo> list = [] {
    std::vector<ScalingPresetInfo> l;
    for (const auto& d : presetDefs()) l.push_back(d.info);
    return l;
  }();
  return list;
}

std::optional<ScalingConfig> scalingPreset(std::string_view name) {
  const std::string n = normalizedName(name);
  for (const auto& d : presetDefs())
    if (d.info.name == n && !d.info.delayed) return d.cfg;
  return std::nullopt;
}

ScalingConfig requireScalingPreset(std::string_view name) {
  if (auto c = scalingPreset(name)) return *c;
  std::string known;
  for (const auto& d : presetDefs())
    if (!d.info.delayed) known += (known.empty() ? "" : ", ") + d.info.name;
  throw std::invalid_argument("'" + std::string(name) + "' is not a current-scaling preset (" + known + ")");
}

std::string scalingPresetTwin(std::string_view name) {
  const auto c = scalingPreset(name);
  if (!c) return {};
  for (const auto& d : presetDefs()) {
    const ScalingConfig& o = d.cfg;
    if (d.info.delayed || o.name == c->name) continue;
    if (o.pow2 != c->pow2 && o.granularity == c->granularity && o.block == c->block && o.rule == c->rule &&
        o.op == c->op && o.margin == c->margin && o.amax_epsilon == c->amax_epsilon)
      return d.info.name;
  }
  return {};
}

// ---- scale of one block ------------------------------------------------------------------------

bool isMxRule(ScaleRule rule) {
  return rule == ScaleRule::MxFloor || rule == ScaleRule::MxCeil || rule == ScaleRule::MxEven ||
         rule == ScaleRule::MxRceil || rule == ScaleRule::MxRceilTorchao;
}

bool ruleAmaxPropagatesNaN(ScaleRule rule) {
  return !(rule == ScaleRule::TransformerEngine || rule == ScaleRule::MxRceil);
}

ScaleRuleParams scaleRuleParams(const ScalingConfig& cfg, const Format& fmt) {
  ScaleRuleParams p;
  p.rule = cfg.rule;
  const float maxf = static_cast<float>(fmt.maxFinite());
  // The TE rule's margin: the scale is computed for fp8_max · 2^−margin (TE's scaled_max).
  p.fp8_max = cfg.rule == ScaleRule::TransformerEngine && cfg.margin != 0 ? std::ldexp(maxf, -cfg.margin) : maxf;
  p.emax_elem = fmt.maxExponent();
  p.mbits_elem = fmt.spec().mantissa_bits;
  p.pow2 = cfg.pow2;
  p.amax_epsilon = cfg.amax_epsilon;
  return p;
}

BlockScale blockScaleFromAmax(double amax, const Format& fmt, const ScalingConfig& cfg) {
  return blockScaleFromAmax(amax, scaleRuleParams(cfg, fmt));
}

std::string gemmScalingProblem(const ScalingConfig& cfg, Axis contraction) {
  const bool is_a = contraction == Axis::Cols;
  if (cfg.granularity == Granularity::PerColumn && is_a)
    return "'" + cfg.name +
           "' gives A [M, K] one scale per column, so its scales vary along K and cannot be taken out of the "
           "K sum; use per_row (one scale per row of A and per column of B, cuBLASLt outer vector) or a block preset "
           "(1x128, 128x128, MX)";
  if (cfg.granularity == Granularity::PerRow && !is_a)
    return "'" + cfg.name +
           "' gives B [K, N] one scale per row, so its scales vary along K and cannot be taken out of the K sum; "
           "use per_row (one scale per row of A and per column of B, cuBLASLt outer vector) or a block preset "
           "(1x128, 128x128, MX)";
  return {};
}

ScaleBlock scaleBlockFor(const ScalingConfig& cfg, int64_t rows, int64_t cols, Axis contraction) {
  const int64_t r1 = std::max<int64_t>(rows, 1), c1 = std::max<int64_t>(cols, 1);
  switch (cfg.granularity) {
  case Granularity::PerTensor:
    return {r1, c1};
  case Granularity::PerRow:
    return {1, c1};
  case Granularity::PerColumn:
    return {r1, 1};
  case Granularity::Outer:
    return contraction == Axis::Cols ? ScaleBlock{1, c1} : ScaleBlock{r1, 1};
  case Granularity::Block1D:
    return contraction == Axis::Cols ? ScaleBlock{1, cfg.block} : ScaleBlock{cfg.block, 1};
  case Granularity::Block2D:
    return {cfg.block, cfg.block};
  }
  return {r1, c1};
}

} // namespace fp8lab

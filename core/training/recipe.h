// FP8 Lab — the block-scaled training recipes of the training experiment, as Transformer Engine
// runs them: Float8BlockScaling (1×128 / 128×128 fp32 scales, power-of-two by default or plain
// fp32 as with NVTE_FP8_BLOCK_SCALING_FP32_SCALES=1), MXFP8BlockScaling (E4M3, block 32, E8M0
// RCEIL; the FLOOR / CEIL / EVEN scale modes of torchao's MX recipe as options) and
// NVFP4BlockScaling (E2M1 1×16 with E4M3 block scales and the fp32 tensor scale, 16×16 weight
// tiles, RHT on the wgrad operands, stochastic rounding on the gradients); and DeepSeek-V3's
// recipe (1×128 activation and gradient tiles, 128×128 weight blocks, float32 scales
// sf = amax / 448 as DeepGEMM computes them), with per-role overrides (torchao
// Float8LinearConfig's cast configs).
//
// Roles. A Linear layer y = x·W (x [B,in], W [in,out], g = ∂loss/∂y) has three GEMMs and six
// GEMM operands; each role is quantized separately, from the high-precision tensor, along its own
// contraction axis (TE's rowwise and columnwise copies are each computed from the BF16/FP32 input,
// never one from the other: MXFP8BlockScaling / Float8BlockScaling docstrings):
//   fprop  y  = x · W      fprop.input      x  [B,in]   blocks along in   (TE rowwise x)
//                          fprop.weight     W  [in,out] blocks along in   (TE rowwise W)
//   dgrad  dx = g · Wᵀ     dgrad.grad_output g [B,out]  blocks along out  (TE rowwise dy)
//                          dgrad.weight     Wᵀ [out,in] blocks along out  (TE columnwise W)
//   wgrad  dW = xᵀ · g     wgrad.input      xᵀ [in,B]   blocks along B    (TE columnwise x)
//                          wgrad.grad_output g [B,out]  blocks along B    (TE columnwise dy)
//
// Fake quantization: each operand is quantized by core/scaling (quantize(), quantizeNvfp4()) and
// dequantized to float32 (QuantizedTensor::dequantize, Nvfp4Tensor::dequantize); the GEMM is the
// float32 GEMM of the two dequantized operands (dense.h matmulF32). Scale convention of the
// records: dequant_scale (x ≈ decode(code) · scale), quant_scale = the quantize op's multiplier.
#pragma once

#include "formats/format.h"
#include "scaling/scaling.h"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// The training recipe of a low-precision run. PerTensor is the per-tensor scaling of
/// operand_scaler.h (TrainingScalingConfig); the others are TE's block-scaling recipes.
enum class TrainingRecipe {
  PerTensor,     ///< per-tensor delayed / current scaling ("scaling": {...})
  TeFloat8Block, ///< TE Float8BlockScaling (transformer_engine/common/recipe/__init__.py)
  TeMxfp8,       ///< TE MXFP8BlockScaling
  TeNvfp4,       ///< TE NVFP4BlockScaling
  /// DeepSeek-V3 (technical report, arXiv 2412.19437, §3.3.2 "Fine-grained quantization"): E4M3 on
  /// all tensors, activations and gradients in 1×128 tiles, weights in 128×128 blocks, one float32
  /// scale each; scales as DeepGEMM's per_token_cast_to_fp8 / per_block_cast_to_fp8
  /// (sf = max(amax, 1e-4) / 448, x · (1/sf)), the presets deepgemm_1x128 / deepgemm_128x128.
  DeepSeekV3,
};

/// "per_tensor", "te_float8_block", "te_mxfp8", "te_nvfp4", "deepseek_v3".
const char* toString(TrainingRecipe r);
/// Parses the names of toString(TrainingRecipe); nullopt when unknown.
std::optional<TrainingRecipe> parseTrainingRecipe(const std::string& s);
/// "te_float8_block, te_mxfp8, te_nvfp4, deepseek_v3" (the block recipes a config may name).
std::string trainingRecipeNames();

/// The six GEMM operands of a Linear layer (see the table at the top of this file).
enum class OperandRole { FpropInput, FpropWeight, DgradGradOutput, DgradWeight, WgradInput, WgradGradOutput };
constexpr int kOperandRoles = 6;
/// "fprop.input", "fprop.weight", "dgrad.grad_output", "dgrad.weight", "wgrad.input",
/// "wgrad.grad_output".
const char* toString(OperandRole r);
/// Parses the names of toString(OperandRole); nullopt when unknown.
std::optional<OperandRole> parseOperandRole(const std::string& s);
/// Whether the role is a gradient (dgrad.grad_output, wgrad.grad_output).
bool isGradientRole(OperandRole r);
/// Whether the role is a weight (fprop.weight, dgrad.weight).
bool isWeightRole(OperandRole r);

/// How one role is quantized.
enum class RoleKind {
  HighPrecision, ///< not quantized: the float32 tensor enters the GEMM
  Float8Block,   ///< TE Float8BlockScaling: te_block_1x128, or te_block_128x128 when block_2d
  Mxfp8,         ///< TE MXFP8BlockScaling: mx_rceil (E8M0 RCEIL, block 32), or mx_rceil_2d (32×32)
  Nvfp4,         ///< TE NVFP4BlockScaling: quantizeNvfp4 with Nvfp4Rule::TransformerEngine
  DeepSeekBlock, ///< DeepSeek-V3: deepgemm_1x128, or deepgemm_128x128 when block_2d (_ue8m0 when pow2)
};
/// "high_precision", "te_float8_block", "te_mxfp8", "te_nvfp4", "deepseek_v3".
const char* toString(RoleKind k);

/// The MX scale modes a te_mxfp8 role can use: "rceil" (TE's, the default), "floor", "ceil",
/// "even" (torchao ScaleCalculationMode). nullopt for other names.
std::optional<ScaleRule> parseMxScaleMode(const std::string& s);
/// "rceil", "floor", "ceil", "even" for the MX rules of parseMxScaleMode, "?" otherwise.
const char* mxScaleModeName(ScaleRule r);

/// A role's resolved quantization.
struct RoleQuantization {
  RoleKind kind = RoleKind::HighPrecision;
  const Format* format = nullptr;   ///< element format: FP8 for Float8Block / Mxfp8, E2M1 for Nvfp4
  bool block_2d = false;            ///< 128×128 (Float8Block), 32×32 (Mxfp8), 16×16 tiles (Nvfp4)
  bool rht = false;                 ///< Nvfp4: 16-point RHT along the block axis (TE sign mask 0xD7E8)
  bool stochastic_rounding = false; ///< Nvfp4: TE software SR of the E2M1 elements
  /// Float8Block: power-of-two scales (TE's default); DeepSeekBlock: UE8M0 scales rounded up
  /// (DeepGEMM on SM100) instead of plain float32 ones. Ignored by the other kinds.
  bool pow2 = false;
  ScaleRule mx_rule = ScaleRule::MxRceil; ///< Mxfp8: the E8M0 scale rule (MxRceil, MxFloor, MxCeil, MxEven)
  /// "te_mxfp8 E4M3FN 1x32", "te_mxfp8 E4M3FN 1x32 floor", "te_float8_block E4M3FN 1x128 fp32",
  /// "deepseek_v3 E4M3FN 128x128", "te_nvfp4 16x16", "te_nvfp4 1x16 rht sr", "high_precision".
  std::string describe() const;
  /// The core/scaling config this role quantizes with (FP8 kinds: te_block_1x128 / _128x128 with
  /// `pow2`, mx_rceil / mx_floor / mx_ceil / mx_even in 1×32 or 32×32 tiles, deepgemm_1x128 /
  /// _128x128 / _ue8m0); `threads` as ScalingConfig::threads. Throws std::invalid_argument for
  /// HighPrecision and Nvfp4.
  ScalingConfig scalingConfig(int threads = 0) const;
  /// The preset whose storage cost this role has (scaling/recipe_cost.h): the scaling preset of
  /// scalingConfig() when it is a table preset, else the table preset with the same scale grid and
  /// scale format (te_block_* with fp32 scales → te_block_*; MX 32×32 tiles of another mode →
  /// mx_rceil_2d), "nvfp4_te" / "nvfp4_te_2d" for NVFP4; "" for HighPrecision.
  std::string costPreset() const;
};

/// One override of a role (config "recipe.overrides"): the kind and/or the element format.
struct RoleOverride {
  std::optional<RoleKind> kind;   ///< replaces the recipe's kind (with that kind's defaults)
  const Format* format = nullptr; ///< replaces the element format (FP8 kinds only)
};

/// The recipe of a run and its options.
struct TrainingRecipeConfig {
  TrainingRecipe recipe = TrainingRecipe::PerTensor;
  /// FP8 recipes: TE Format.HYBRID (E4M3 forward, E5M2 gradients) instead of TE's default
  /// Format.E4M3 for every tensor.
  bool hybrid = false;
  /// Weights in 2-D tiles: Float8BlockScaling w_block_scaling_dim = 2 (default true); MXFP8
  /// enable_2d_quantization (default false); NVFP4 fp4_2d_quantization (default true). Unset:
  /// the recipe's default.
  std::optional<bool> weight_2d;
  /// NVFP4: RHT on wgrad.input and wgrad.grad_output (on both when both are NVFP4, else on neither).
  bool nvfp4_rht = true;
  bool nvfp4_stochastic_rounding = true; ///< NVFP4: SR on dgrad.grad_output and wgrad.grad_output
  /// te_float8_block: power-of-two scales (TE's default, true; false = the fp32 scales of
  /// NVTE_FP8_BLOCK_SCALING_FP32_SCALES=1, s = 448 / amax). deepseek_v3: UE8M0 scales rounded up
  /// (DeepGEMM on SM100, true) instead of the float32 sf = amax / 448 of the report (false, the
  /// default). Unset: the recipe's default.
  std::optional<bool> power_of_two;
  /// te_mxfp8: the E8M0 scale rule, TE's RCEIL (default) or torchao's FLOOR / CEIL / EVEN.
  ScaleRule mx_rule = ScaleRule::MxRceil;
  std::array<RoleOverride, kOperandRoles> overrides{};

  /// Whether wgrad.input and wgrad.grad_output both resolve to NVFP4.
  bool bothWgradNvfp4() const;
  /// The weight_2d the recipe uses (its default when unset).
  bool weight2d() const;
  /// The power_of_two the recipe uses (its default when unset: te_float8_block true, else false).
  bool powerOfTwo() const;
  /// The recipe and its options that differ from the recipe's defaults, for tables and legends:
  /// "te_float8_block", "te_float8_block fp32 scales", "te_mxfp8 floor", "deepseek_v3",
  /// "te_nvfp4 no RHT no SR", "te_mxfp8 HYBRID 2-D weights"; "+ overrides" when some role is
  /// overridden.
  std::string label() const;
  /// The quantization of `role` under this recipe, overrides applied. Defaults per recipe:
  ///   te_float8_block: E4M3FN (HYBRID: gradients E5M2); 1×128 along the contraction axis,
  ///                    weights 128×128 (TE Float8BlockScaling: x/grad_block_scaling_dim 1,
  ///                    w_block_scaling_dim 2, power-of-two scales).
  ///   te_mxfp8:        E4M3FN (HYBRID: gradients E5M2), 1×32 / 32×1 E8M0 RCEIL.
  ///   te_nvfp4:        E2M1 1×16; weights 16×16 tiles; RHT on wgrad.input and wgrad.grad_output;
  ///                    SR on the two gradient roles; everything else RN (TE NVFP4BlockScaling:
  ///                    fp4_quant_fwd_inp / fp4_quant_fwd_weight / fp4_quant_bwd_grad).
  ///   deepseek_v3:     E4M3FN (HYBRID: gradients E5M2); 1×128 along the contraction axis (the
  ///                    activations' 1×128 tiles forward, 128×1 for wgrad), weights 128×128 blocks;
  ///                    float32 scales (power_of_two: UE8M0).
  /// PerTensor has no roles (HighPrecision is returned).
  RoleQuantization role(OperandRole r) const;
  /// Empty when usable, else why not (an FP8 format override on an NVFP4 role, a format wider
  /// than 8 bits, MXFP8 with an element format other than E4M3FN / E5M2).
  std::string validate() const;
};

/// What one fake quantization did (the per-step record of an operand).
struct RoleQuantRecord {
  float amax = 0; ///< max |x| of the high-precision tensor (NaN ignored, as CUDA fmaxf)
  /// The representative scale: Float8Block / Mxfp8 → the lower median of the block dequant scales
  /// (sorted, element (n−1)/2), quant_scale the same block's multiplier; Nvfp4 → the TE tensor
  /// scale, quant_scale = S_enc = 2688/amax' and dequant_scale = f32(1/S_enc) (amax' = the amax of
  /// the quantized copy: post-RHT with RHT); HighPrecision → 1 and 1.
  float dequant_scale = 1;
  float quant_scale = 1;
  int64_t saturated = 0; ///< FP8 kinds: elements clipped to ±max (QuantizeStats); Nvfp4: not counted (0)
  int64_t underflow = 0; ///< non-zero elements that dequantize to 0 (Nvfp4 with RHT: not counted, 0)
};

/// Receives a quantization as it ran: the tensor the codes were made from and the QuantizedTensor
/// of the same shape. NVFP4 (toQuantizedTensor): rotated for RHT; the zero padding to whole
/// blocks is cropped back to the real shape (cropQuantized), except along the block axis of an
/// RHT operand, whose rotated pad is part of the blocks. Used for per-block statistics
/// (diagnostics.h).
using QuantizedObserver = std::function<void(const float* x, const QuantizedTensor& q)>;

/// The contraction length a fake-quantized operand is padded to: k rounded up to a multiple of 16.
/// NVFP4 blocks need whole 16-element blocks (TE refuses other shapes); the pad is zeros, so every
/// amax and scale is that of the real elements, and both operands of a GEMM share the padded K.
int64_t paddedContraction(int64_t k);

/// Fake-quantizes x [rows, cols] (row-major float32) for role quantization `q`, contraction axis
/// `axis` (Cols: A [M,K] with K = cols; Rows: B [K,N] with K = rows). `out` receives the
/// dequantized float32 operand with the contraction axis padded with zeros to
/// paddedContraction(K): [rows, Kp] for Cols, [Kp, cols] for Rows. NVFP4 2-D tiles pad the other
/// axis too for the quantization and crop it afterwards. `sr_seed` seeds stochastic rounding
/// (Nvfp4Config::seed). Fills `*rec` when non-null and calls `observe` (when set and the role is
/// quantized) with the quantization. Throws std::invalid_argument (from core/scaling) for an
/// unusable format.
void fakeQuantize(const RoleQuantization& q, const float* x, int64_t rows, int64_t cols, Axis axis, uint64_t sr_seed,
                  std::vector<float>& out, RoleQuantRecord* rec = nullptr, int threads = 0,
                  const QuantizedObserver* observe = nullptr);

/// Quantizes x [rows, cols] for role quantization `q` (not HighPrecision) along `axis`, as
/// fakeQuantize does, but returns the block-scaled operand itself for a core/gemm GEMM (format,
/// codes and scales; NVFP4 with its E4M3 block scales and tensor scale, toQuantizedTensor): the
/// contraction axis padded with zeros to paddedContraction(K) for NVFP4 (whole 16-element
/// blocks; FP8 kinds keep K), the other axis at its real length. `rec` and `observe` as
/// fakeQuantize; with neither, the FP8 kinds' returned stats are not counted (all zero; NVFP4's
/// hold the element count only, either way). Throws std::invalid_argument for a HighPrecision role.
QuantizedTensor quantizeRole(const RoleQuantization& q, const float* x, int64_t rows, int64_t cols, Axis axis,
                             uint64_t sr_seed, RoleQuantRecord* rec = nullptr, int threads = 0,
                             const QuantizedObserver* observe = nullptr);

} // namespace fp8lab

namespace fp8lab {

/// The three GEMMs of a Linear layer y = x·W (x [B,in], W [in,out], g = ∂loss/∂y [B,out]).
enum class LinearGemm {
  Fprop, ///< y  [B,in]·[in,out] → [B,out]: a = x, b = W
  Dgrad, ///< dx [B,out]·[out,in] → [B,in]: a = g, b = W (transposed here)
  Wgrad, ///< dW [in,B]·[B,out] → [in,out]: a = x (transposed here), b = g
};

/// One GEMM of a Linear layer under a block recipe: both operands fake-quantized for their roles
/// (fprop.input × fprop.weight, dgrad.grad_output × dgrad.weight, wgrad.input ×
/// wgrad.grad_output), each from the float32 tensor given, along the GEMM's contraction axis
/// (in, out and B respectively; transposes are made here, before quantizing), then
/// d = A·B with matmulF32 over the padded contraction length (zeros, recipe.h). a, b: row-major
/// float32 as listed at LinearGemm; d is resized to the output shape. `sr_seed_a` / `sr_seed_b`
/// seed the stochastic rounding of the two operands. rec_a / rec_b (may be null) receive what
/// each quantization did, and observe_a / observe_b (may be null) the quantizations themselves
/// (fakeQuantize). Deterministic: the same inputs and seeds give the same bits for any `threads`.
void recipeLinearGemm(const TrainingRecipeConfig& rc, LinearGemm gemm, const float* a, const float* b, int64_t batch,
                      int64_t in, int64_t out, uint64_t sr_seed_a, uint64_t sr_seed_b, std::vector<float>& d,
                      RoleQuantRecord* rec_a = nullptr, RoleQuantRecord* rec_b = nullptr, int threads = 0,
                      const QuantizedObserver* observe_a = nullptr, const QuantizedObserver* observe_b = nullptr);

} // namespace fp8lab

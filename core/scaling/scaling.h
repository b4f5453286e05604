// FP8 Lab — scaling strategies with current (this tensor's) amax: per tensor, per row / column,
// 1x128 / 128x128 blocks, MX block-32 with E8M0 scales; named presets reproducing Transformer
// Engine, torchao, DeepGEMM / DeepSeek-V3 and OCP MX. Delayed scaling (amax history) lives in
// delayed_scaling.h and quantizes through quantizeWithScale() below.
//
// A strategy = granularity × amax source × scale rule × rounding of the scale × quantize op.
// Each rule follows its system's source, named at the rule (scale_rules.h); docs/scaling.md lists
// which preset follows which system and what each does with amax 0 / inf / NaN / tiny.
//
// Scale convention: results are QuantizedTensor (quantized_tensor.h): `dequant_scales`
// (x ≈ decode(code) · dequant_scale, what GEMMs take) and `quant_scales` (the multiplier the
// preset computed; x_q = cast(x · quant_scale), or cast(x / dequant_scale) when
// scale_op == Divide, as in Flax and DeepSeek-V3's act_quant).
#pragma once

#include "common/progress.h"
#include "formats/format.h"
#include "scaling/quantized_tensor.h"
#include "scaling/scale_rules.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// The contraction (reduction) axis of a GEMM operand stored row-major [rows, cols]:
/// Cols for A[M,K] (K runs along a row), Rows for B[K,N] (K runs down a column).
enum class Axis { Rows, Cols };

/// Which elements share one scale.
enum class Granularity {
  PerTensor, ///< one scale for the tensor
  PerRow,    ///< one scale per row (amax over the row's columns)
  PerColumn, ///< one scale per column
  Outer,     ///< one scale per slice across the contraction axis (torchao rowwise, cuBLASLt
             ///< "outer vector"): PerRow when the contraction axis is Cols, else PerColumn
  Block1D,   ///< 1×B blocks along the contraction axis (B×1 when it is Rows); MX: B = 32
  Block2D,   ///< B×B tiles (DeepSeek-V3 / TE weights: 128×128)
};

/// A complete current-scaling strategy. Build one with scalingPreset() and adjust fields.
struct ScalingConfig {
  std::string name = "te_current"; ///< preset name (for display and sessions)
  Granularity granularity = Granularity::PerTensor;
  int64_t block = 128; ///< B of Block1D / Block2D (MX: 32); ≥ 1
  ScaleRule rule = ScaleRule::TransformerEngine;
  /// Power-of-two scales. TE: mantissa mask of the quant multiplier (down); torchao:
  /// exp2(floor(log2)) of the quant multiplier (down); DeepGEMM: UE8M0 round-up of the dequant
  /// multiplier. MX rules are powers of two by construction (ignored).
  bool pow2 = false;
  /// TE only: amax_epsilon (amax below it is raised to it). torchao and DeepGEMM use their fixed
  /// floors (1e-12, 1e-4).
  float amax_epsilon = 0.0f;
  /// TE rule only: headroom in powers of two. The scale is compute_scale_from_amax(amax,
  /// fp8_max · 2^−margin, pow2, amax_epsilon) — the scaled_max TE's DelayedScaling update passes
  /// (kernel_bulk), here with the current amax; pow2 rounds after the margin (amax 3,
  /// margin 1, E4M3FN: 224/3 = 74.67 → 64). Float8CurrentScaling itself fixes 0. In [−126, 126];
  /// other rules have no margin and quantize() refuses a non-zero one.
  int margin = 0;
  /// How the scale is applied: x·quant_scale (TE, torchao, DeepGEMM helpers, MX) or
  /// x/dequant_scale (Flax, DeepSeek-V3 act_quant), in float32 (float64 for double input).
  Format::ScaleOp op = Format::ScaleOp::Multiply;
  /// Element rounding/saturation (default RNE saturating, as every preset's cast).
  EncodeOptions encode{};
  uint64_t seed = 0; ///< stochastic rounding seed (element index = row-major index)
  /// Worker threads for quantize(): 0 = all hardware threads (at most one per 256 K elements).
  /// Results do not depend on it.
  int threads = 0;
  /// false: skip the statistics pass (QuantizedTensor::stats stays all zero, `elements` included),
  /// for callers that read only the codes and scales; codes and scales are the same either way.
  bool count_stats = true;
};

/// A named preset and where its semantics come from.
struct ScalingPresetInfo {
  std::string name;     ///< e.g. "te_current"
  std::string summary;  ///< one line
  std::string source;   ///< the system, source file and function the rule follows
  bool delayed = false; ///< true for flax_delayed / te_delayed (use DelayedScaling)
};

/// Every preset, in display order: te_current, te_current_pow2, torchao_tensorwise,
/// torchao_rowwise, per_row, per_column, torchao_block_1x128, torchao_block_128x128,
/// deepgemm_1x128, deepgemm_128x128, deepgemm_1x128_ue8m0, deepgemm_128x128_ue8m0,
/// dsv3_act_quant, te_block_1x128, te_block_128x128, mx_floor, mx_ceil, mx_even, mx_rceil,
/// mx_rceil_torchao, mx_rceil_2d, flax_delayed, te_delayed, te_jax_delayed.
/// The MX presets take the element format separately (quantize()'s `fmt`: E4M3FN, E5M2, E2M3,
/// E3M2, E2M1); their rules read its emax, mantissa width and max from it.
const std::vector<ScalingPresetInfo>& scalingPresets();

/// The config of a current-scaling preset (case-insensitive; '-' and '_' are the same).
/// nullopt for unknown names and for the delayed presets (see delayedPreset()).
std::optional<ScalingConfig> scalingPreset(std::string_view name);
/// The config of a current-scaling preset the code names itself (a literal, or a name already
/// checked): scalingPreset() that throws std::invalid_argument naming the preset and the known
/// ones instead of returning nullopt.
ScalingConfig requireScalingPreset(std::string_view name);

/// The current-scaling preset that is `name` with the other power-of-two setting and nothing else
/// changed (te_current ↔ te_current_pow2, per_row ↔ torchao_rowwise, deepgemm_1x128 ↔
/// deepgemm_1x128_ue8m0, ...), or "" when the table has none (te_block_1x128 is pow2 only).
std::string scalingPresetTwin(std::string_view name);

/// Resolves a granularity to the block shape for a [rows, cols] tensor and contraction axis
/// (PerTensor → [rows, cols], at least 1×1; partial edge blocks are allowed).
ScaleBlock scaleBlockFor(const ScalingConfig& cfg, int64_t rows, int64_t cols, Axis contraction);

/// Why `cfg` cannot scale one operand of a GEMM, or "" when it can. `contraction` says which
/// operand: Axis::Cols for A [M, K], Axis::Rows for B [K, N]. A GEMM takes a scale out of its K sum
/// only where the scale is constant along K within the K-blocks it accumulates: per tensor, per
/// slice across K (per row of A, per column of B: cuBLASLt outer vector, torchao rowwise), 1×B and
/// B×B blocks, MX blocks. PerColumn scales on A and PerRow scales on B change at every k: refused.
std::string gemmScalingProblem(const ScalingConfig& cfg, Axis contraction);

/// The scale rule of `cfg` for element format `fmt` as plain data (scale_rules.h), what both
/// quantize() and the GPU block-scale kernel pass to blockScaleFromAmax(amax, params): fp8_max =
/// fmt.maxFinite() in float32 (TE rule: times 2^−cfg.margin), the element's emax and mantissa
/// bits, cfg.pow2, cfg.amax_epsilon.
ScaleRuleParams scaleRuleParams(const ScalingConfig& cfg, const Format& fmt);

/// The scale a config gives a block of amax `amax` (the rules of scale_rules.h; `amax` is
/// the block's max |x|: NaN if the rule propagates NaN and the block has one). For float32 rules
/// the amax is rounded to float32 first (exact for float32 tensors).
/// = blockScaleFromAmax(amax, scaleRuleParams(cfg, fmt)).
BlockScale blockScaleFromAmax(double amax, const Format& fmt, const ScalingConfig& cfg);

/// Whether a rule gives E8M0 (MX) scales: MxFloor, MxCeil, MxEven, MxRceil, MxRceilTorchao.
bool isMxRule(ScaleRule rule);

/// Whether a rule's amax propagates NaN (torch.max / jnp.max: torchao, DeepGEMM, MX FLOOR/CEIL/
/// RCEIL via torchao) or ignores NaN elements (CUDA fmaxf in TE kernels: TE rules, MX RCEIL).
bool ruleAmaxPropagatesNaN(ScaleRule rule);

/// Quantizes a row-major float32 tensor [rows, cols] with a current-scaling strategy.
/// Each block: amax → scale (per preset) → codes = fmt.encodeBulk(x, scale, op).
/// Returns codes, dequant_scales and quant_scales over the block grid (row-major), E8M0 scale
/// codes for MX rules, and stats (saturated = finite inputs whose scaled magnitude overflows by the
/// OCP rule, i.e. exceeds Format::rneFiniteLimit and is clipped to ±max; underflow; subnormal results; NaN/Inf/zero
/// inputs). NaN/Inf/all-zero inputs never throw: each rule's edge behaviour applies (docs/scaling.md). Throws
/// std::invalid_argument for negative shapes, a null pointer with elements, a format of more than 8 bits or block < 1;
/// Cancelled when progress asks to stop.
QuantizedTensor quantize(const float* x, int64_t rows, int64_t cols, const Format& fmt, const ScalingConfig& cfg,
                         Axis contraction = Axis::Cols, const ProgressFn& progress = {});

/// The same for float64 tensors: amax in float64, scale per the rule (torchao divides in
/// float64; float32 rules see float32(amax)), elements encoded from float64 with one rounding
/// of x·s (or x/s) computed in float64.
QuantizedTensor quantize(const double* x, int64_t rows, int64_t cols, const Format& fmt, const ScalingConfig& cfg,
                         Axis contraction = Axis::Cols, const ProgressFn& progress = {});

/// Quantizes a whole tensor with a given per-tensor scale (delayed / static scaling):
/// codes = encodeBulk(x, op == Multiply ? quant : dequant, op). The result's block is
/// [rows, cols] with one scale.
QuantizedTensor quantizeWithScale(const float* x, int64_t rows, int64_t cols, const Format& fmt,
                                  const BlockScale& scale, Format::ScaleOp op, const EncodeOptions& encode = {},
                                  const ProgressFn& progress = {});
QuantizedTensor quantizeWithScale(const double* x, int64_t rows, int64_t cols, const Format& fmt,
                                  const BlockScale& scale, Format::ScaleOp op, const EncodeOptions& encode = {},
                                  const ProgressFn& progress = {});

/// An MXINT8 tensor (OCP MX v1.0): int8 two's-complement element codes (formats/mxint8.h, value
/// k/64) and one E8M0 scale per block; x ≈ mxint8::decode(code) · 2^(scale_code − 127).
struct MxInt8Tensor {
  int64_t rows = 0, cols = 0;
  ScaleBlock block;                 ///< [1, 32] (contraction axis Cols) or [32, 1] (Rows)
  std::vector<uint8_t> codes;       ///< rows·cols int8 bit patterns, row-major
  std::vector<uint8_t> scale_codes; ///< biased E8M0, row-major over the block grid
  QuantizeStats stats; ///< elements, saturated (finite, |x·2^(127−e)| ≥ 127.5/64), NaN/inf/zero inputs
  /// All elements dequantized to float32: decode(code) · 2^(e−127) (NaN for scale 0xFF).
  std::vector<float> dequantize() const;
};

/// Quantizes a row-major float32 tensor [rows, cols] to MXINT8 (OCP MX v1.0 §6.3 FLOOR, as
/// torchao's ScaleCalculationMode.FLOOR): blocks of `block` elements along the contraction axis
/// (1×block for Axis::Cols, block×1 for Axis::Rows; partial edge blocks allowed); per block,
/// e = mxScaleFloor(amax, emax_elem = 0), i.e. floor(log2 amax) clamped to [−127, 127]; amax
/// propagates NaN, so a NaN or inf in the block gives scale 0xFF (the block dequantizes to NaN);
/// an all-zero block gives 0x00. Elements: mxint8::encodeBulk(x, 2^(127−e)), RNE saturating to
/// ±127 (an amax with significand above 1.984375 clips, as FLOOR clips in MXFP8). Single-threaded.
/// Throws std::invalid_argument for negative shapes, a null pointer with elements, or block < 1.
MxInt8Tensor quantizeMxInt8(const float* x, int64_t rows, int64_t cols, Axis contraction = Axis::Cols,
                            int64_t block = 32);

/// max |x| over n values. ignore_nan: NaN elements are skipped (CUDA fmaxf); otherwise any NaN
/// makes the result NaN (torch.max). Inf counts as Inf.
double amaxOf(const float* x, std::size_t n, bool ignore_nan);

/// out[cols, rows] = in[rows, cols]ᵀ for one-byte codes (an FP8 / FP4 operand's transposed copy for
/// the dgrad and wgrad GEMMs); 16 × 16 register blocks on x86-64. A plain copy: exact.
void transposeCodes(const uint8_t* in, uint8_t* out, int64_t rows, int64_t cols);
double amaxOf(const double* x, std::size_t n, bool ignore_nan);

const char* toString(Granularity g);
const char* toString(ScaleRule r);
const char* toString(Axis a);

} // namespace fp8lab

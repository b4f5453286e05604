// FP8 Lab — NVFP4: E2M1 elements in blocks of 16 along the contraction axis, one E4M3 block scale
// per block and (for the two-level rules) one fp32 tensor scale, as Transformer Engine, torchao and
// the cuDNN frontend docs compute them; with TE's 16×16 weight tiles, TE's "4over6" scale choice,
// TE's 16-point random Hadamard transform (hadamard.h) and TE's software model of stochastic
// rounding. docs/nvfp4.md has the presets, where the systems differ and the edge cases.
//
// Shapes: the input is row-major float32 [rows, cols]. Blocks hold 16 consecutive elements of the
// contraction axis: Axis::Cols → 1×16 along a row (A[M,K]: TE's rowwise copy), Axis::Rows → 16×1
// down a column (B[K,N], or x[M,K] as the wgrad operand: TE's columnwise copy, which TE stores
// transposed). Partial edge blocks are refused (std::invalid_argument): the block axis must be a
// multiple of 16, and with 2-D tiles both axes (a partial block would need a padding rule that the
// systems' arithmetic does not define).
//
// Scale conventions, kept as each system stores them:
//   * E4M3 block scales are **dequant** factors in every rule (TE `_rowwise_scale_inv`,
//     torchao `_scale_e4m3`, cuDNN `scale`).
//   * The fp32 tensor scale: TE → S_enc, the **quant multiplier** 2688/amax (TE stores the amax
//     and recomputes S_enc from it); torchao → per_tensor_scale = amax/2688, a **dequant factor**;
//     cuDNN doc rule → none (single level).
#pragma once

#include "scaling/hadamard.h"
#include "scaling/scaling.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// Which system's arithmetic the quantizer follows.
enum class Nvfp4Rule {
  /// Transformer Engine's kernels (common/cast/nvfp4/core_nvfp4.cuh, quantize_transpose_nvfp4.cuh,
  /// specialized/quantize_transpose_nvfp4_tuned_1D.cuh; the same as torchao's
  /// prototype/moe_training/nvfp4_training port): S_enc = 2688/amax, block scale
  /// RNE(bamax·fl(S_enc·fl(1/6))) with no lower clamp, elements x·fl(1/fl(s·fl(1/S_enc))).
  TransformerEngine,
  /// torchao prototype/mx_formats/nvfp4_tensor.py (per_tensor_amax_to_scale, nvfp4_quantize):
  /// pts = amax/2688, block scale clamp((bamax/6)/pts, 2^-6, 448), elements x·(fl(1/pts)/s).
  TorchaoMxFormats,
  /// The cuDNN frontend "Block Scaling" doc formula read literally: scale = E4M3 round-up of
  /// bamax/6, elements RNE(x/scale), no tensor scale.
  CudnnDocSingleLevel,
};

/// TE 4over6 (quantize_4over6_nvfp4.cuh): each block tries the map-to-6 scale and a ×1.5 map-to-4
/// scale and keeps the one with the smaller dequantization error over its 16 elements.
enum class FourOverSix {
  Off,
  MAE, ///< sum of |dequant − x| (TE's default nvfp4_4over6_err_mode)
  MSE, ///< sum of (dequant − x)²
};

/// torchao only: where per_tensor_scale comes from.
enum class Nvfp4TensorScaleSource {
  Dynamic,     ///< amax = max|x| of this tensor (inference_workflow.py, qat/nvfp4.py)
  StaticAmax,  ///< a calibrated amax (`static_amax`): pts = static_amax/2688
  StaticScale, ///< per_tensor_scale given directly (`static_tensor_scale`)
  None,        ///< per_tensor_scale=None: single level, block scale = clamp(bamax/6, 2^-6, 448)
};

/// A complete NVFP4 quantization strategy. Build one with nvfp4Preset() and adjust fields.
struct Nvfp4Config {
  std::string name = "nvfp4_te"; ///< preset name (for display)
  Nvfp4Rule rule = Nvfp4Rule::TransformerEngine;
  /// TE only: one amax per 16×16 tile (quantize_transpose_nvfp4_2D_kernel), used by TE for
  /// weights. The scale grid still lists one code per 1×16 (16×1) block: the tile's code.
  bool tile_2d = false;
  /// TE only: the 4over6 scale choice. Not with stochastic rounding or RHT (TE raises).
  FourOverSix four_over_six = FourOverSix::Off;
  /// TE 4over6 only: the E4M3 bound of the tensor scale, 256 (TE's default
  /// nvfp4_4over6_e4m3_use_256: S_enc = 1536/amax) or 448 (S_enc = 2688/amax). The block-scale
  /// clamp stays 448 either way.
  int e4m3_bound = 256;
  /// TE only: E2M1 elements rounded by stochasticRoundE2M1Te() (TE util/ptx.cuh
  /// stochastic_round_fp4_e2m1) instead of RNE; block scales stay RNE. Random bytes: element i of
  /// the row-major tensor takes byte (i mod 4) of Format::counterRandom(seed, i / 4) — TE's
  /// layout of one 32-bit word per 4 elements; TE's Philox streams themselves are not reproduced.
  bool stochastic_rounding = false;
  uint64_t seed = 0; ///< stochastic rounding seed
  /// TE only: the 16-point RHT (hadamard.h) along the block axis before the amax and the
  /// quantization. The input is rounded to BF16 first (TE's RHT takes BF16 tensors only); the
  /// tensor amax is the post-RHT amax (TE with_post_rht_amax). TE applies it to the columnwise
  /// copy of inputs and gradients (Axis::Rows on x[M,K], the wgrad operands).
  bool rht = false;
  uint16_t rht_sign_mask = kTeRhtSignMask; ///< bit i set where s_i = −1; 0 = plain Hadamard
  /// torchao only: the per-tensor scale (see Nvfp4TensorScaleSource).
  Nvfp4TensorScaleSource tensor_scale_source = Nvfp4TensorScaleSource::Dynamic;
  float static_amax = 0.0f;         ///< StaticAmax: the calibrated amax
  float static_tensor_scale = 0.0f; ///< StaticScale: per_tensor_scale itself (a dequant factor)
  /// Worker threads: 0 = all hardware threads (at most one per 256 K elements). Results do not
  /// depend on it.
  int threads = 0;
};

/// A quantized NVFP4 tensor, unpacked and unpadded.
struct Nvfp4Tensor {
  int64_t rows = 0, cols = 0;
  Axis axis = Axis::Cols; ///< the block axis: Cols → 1×16 blocks, Rows → 16×1 blocks
  Nvfp4Rule rule = Nvfp4Rule::TransformerEngine;
  /// E2M1 codes (sign in bit 3), one byte each, row-major [rows, cols] in the input's layout (for
  /// Axis::Rows this is the transpose of TE's columnwise data [cols, rows]). With RHT, the codes of
  /// the transformed tensor.
  std::vector<uint8_t> codes;
  /// E4M3FN block scale codes (dequant factors), row-major over the block grid: [rows, cols/16]
  /// for Axis::Cols, [rows/16, cols] for Axis::Rows. Unpadded, unswizzled; with 2-D tiles each
  /// block holds its tile's code.
  std::vector<uint8_t> scale_codes;
  /// 4over6 only: 1 where the block took the map-to-4 scale, same layout as scale_codes.
  std::vector<uint8_t> map4;
  /// The tensor amax the scales were derived from: max|x| (TE: NaN ignored, post-RHT with RHT;
  /// torchao: NaN propagates). torchao static scales: the measured max|x|, informational only.
  float amax = 0.0f;
  /// TE: S_enc (quant multiplier); torchao: per_tensor_scale (dequant factor); 1.0 for the
  /// single-level rules (has_tensor_scale false).
  float tensor_scale = 1.0f;
  bool has_tensor_scale = true;
  /// TE's dequant/GEMM constant 6·E4M3_MAX: 2688, or 1536 for 4over6 at the 256 bound.
  float fp4_fp8_max = 2688.0f;

  int64_t blockRows() const { return axis == Axis::Rows ? rows / 16 : rows; }
  int64_t blockCols() const { return axis == Axis::Cols ? cols / 16 : cols; }
  /// The scale code of element (i, j).
  uint8_t scaleCodeAt(int64_t i, int64_t j) const;
  /// All elements dequantized to float32, row-major [rows, cols], each system's formula:
  ///   TE (transformer_engine/common/cast/nvfp4/dequantize_nvfp4.cuh dequantize_fp4_kernel):
  ///     y = f32(e2m1 · f32(f32(s_e4m3 · amax) · f32(1/fp4_fp8_max)))
  ///   torchao (NVFP4Tensor.dequantize / get_hp_scales): y = e2m1 · f32(pts · s_e4m3), or
  ///     e2m1 · s_e4m3 single level
  ///   cuDNN doc: y = e2m1 · s_e4m3.
  /// With RHT the values are those of the rotated tensor (the wgrad GEMM multiplies two rotated
  /// operands; the rotation is not undone here). A NaN scale code (0x7F) gives NaN.
  std::vector<float> dequantize() const;
};

/// Quantizes x [rows, cols] (row-major float32) to NVFP4 with blocks along `axis`.
/// Steps per rule: docs/nvfp4.md (TE A.1, torchao A.2, cuDNN A.3, 2-D tiles, 4over6, RHT, SR).
/// NaN / inf / all-zero inputs never throw; each rule's edge behaviour applies (TE: amax 0 or inf
/// → S_enc 1.0, NaN elements → +6; torchao: amax 0 → pts 0, NaN scales 0x7F, NaN elements → 0x3).
/// Throws std::invalid_argument for negative shapes, a null pointer with elements, a block axis
/// (or, with 2-D tiles, either axis) not a multiple of 16, and for option combinations the
/// systems do not have: tile_2d / four_over_six / stochastic_rounding / rht with a rule other
/// than TE; four_over_six with stochastic_rounding or rht (TE raises); tile_2d with rht or
/// stochastic_rounding (TE gives 2-D tiles to weights only, which have neither); e4m3_bound other
/// than 256 / 448; static tensor scales with a rule other than torchao.
Nvfp4Tensor quantizeNvfp4(const float* x, int64_t rows, int64_t cols, const Nvfp4Config& cfg, Axis axis = Axis::Cols);

/// The tensor an RHT preset quantizes: x [rows, cols] (row-major float32) rounded to BF16 (TE's
/// RHT takes BF16 tensors), then each 16-block along `axis` (Cols: along a row, Rows: down a
/// column) transformed by hadamardTransform16 with `sign_mask`, BF16-rounded output (TE's kernels).
/// Throws std::invalid_argument when the axis is not a multiple of 16, for negative shapes or a
/// null input with elements. Results do not depend on `threads` (0 = all hardware threads).
std::vector<float> rhtOperand(const float* x, int64_t rows, int64_t cols, uint16_t sign_mask, Axis axis,
                              int threads = 0);

/// The NVFP4 tensor as the QuantizedTensor GEMMs, sessions and views take: format E2M1, block
/// 1×16 (Axis::Cols) or 16×1 (Axis::Rows), dequant_scales = the decoded E4M3 block scales (NaN for
/// code 0x7F), scale_codes = the E4M3 codes (scale_format E4M3FN), tensor_scale = TeAmax (TE:
/// amax, S_enc, fp4_fp8_max) or TorchaoPts (torchao two-level) or None (single level). So
/// QuantizedTensor::dequantize() equals Nvfp4Tensor::dequantize() bit for bit, and a GEMM applies
/// each K-block's two E4M3 scales to its partial sum and the system's tensor factor
/// (gemmTensorFactor) to the result. quant_scales stays empty: the element multiplier is per rule
/// (docs/nvfp4.md). `x` (the input, row-major [rows, cols], may be null) fills the stats:
/// NaN / Inf / zero inputs, underflow (a non-zero finite input coded ±0) and saturated (a finite
/// input whose value over its effective dequant factor rounds beyond ±6); with RHT they count
/// against the rotated tensor (rhtOperand), which is what was quantized. `cfg` is the config `t` was quantized with
/// (its name becomes the strategy).
QuantizedTensor toQuantizedTensor(const Nvfp4Tensor& t, const Nvfp4Config& cfg, const float* x);

/// TE's global encode scale (core_nvfp4.cuh compute_global_encode_scaling_factor_FP4), the quant
/// multiplier S_enc = fminf(f32(6·e4m3_max / amax), FLT_MAX), and 1.0 when amax == 0 or the
/// quotient is 0 (amax = +inf). e4m3_max is 448 (2688/amax) or 256 for 4over6 (1536/amax).
float teNvfp4GlobalEncodeScale(float amax, float e4m3_max = 448.0f);

/// torchao per_tensor_amax_to_scale (nvfp4_tensor.py): per_tensor_scale = f32(amax / 2688), a
/// dequant factor (0 for amax 0).
float torchaoNvfp4PerTensorScale(float amax);

/// E2M1 code of v by round to nearest, ties to even, saturating at ±6 (PTX
/// cvt.rn.satfinite.e2m1x2.f32, as TE's kernels): NaN → +6 (0x7), ±inf → ±6, the sign of −0 and
/// of small negatives kept (0x8).
uint8_t e2m1RneSatfinite(float v);

/// TE's software stochastic rounding to E2M1 (transformer_engine/common/util/ptx.cuh
/// stochastic_round_fp4_e2m1, the model of cvt.rs.satfinite.e2m1x4.f32). `x` is the already scaled
/// fp32 value (x · S_enc_b), `rbits` the element's random byte: u = rbits/256,
/// step(a) = 0.5 (a < 2), 1 (2 ≤ a < 4), 2 (a ≥ 4), t = fmaf(u, step(|x|), |x|),
/// q = min(floor(t/step(t))·step(t), 6) with the sign of x; NaN → +6 (0x7). Exact grid points never
/// move. Returns the E2M1 code.
uint8_t stochasticRoundE2M1Te(float x, uint8_t rbits);

/// A named NVFP4 preset and where its semantics come from.
struct Nvfp4PresetInfo {
  std::string name;       ///< e.g. "nvfp4_te"
  std::string summary;    ///< one line
  std::string source;     ///< the system, source file and function the rule follows
  Axis axis = Axis::Cols; ///< the operand copy the system applies the preset to (Rows: TE's columnwise copy)
};

/// Every NVFP4 preset, in display order: nvfp4_te, nvfp4_te_2d, nvfp4_te_4over6,
/// nvfp4_te_4over6_mse, nvfp4_te_4over6_448, nvfp4_te_rht, nvfp4_te_sr, nvfp4_torchao,
/// nvfp4_torchao_single_level, nvfp4_cudnn_doc.
const std::vector<Nvfp4PresetInfo>& nvfp4Presets();

/// The config of an NVFP4 preset (case-insensitive; '-' and '_' are the same); nullopt for
/// unknown names.
std::optional<Nvfp4Config> nvfp4Preset(std::string_view name);
/// nvfp4Preset() for a name the code gives itself: throws std::invalid_argument naming the preset
/// and the known ones instead of returning nullopt.
Nvfp4Config requireNvfp4Preset(std::string_view name);

const char* toString(Nvfp4Rule r);
const char* toString(FourOverSix m);

} // namespace fp8lab

// FP8 Lab — a tensor quantized to a low-precision format with its scales: the value passed
// from core/scaling to core/gemm (CPU reference) and gpu/ (cuBLASLt).
//
// Scale convention (the internal one, everywhere in FP8 Lab): **dequant_scale**, as cuBLASLt's
// A/B_SCALE_POINTER, torch._scaled_mm's scale_a/scale_b and Flax's stored scale:
//     x[i,j] ≈ decode(codes[i,j]) · dequant_scale(block of (i,j))
// The quant multiplier (Transformer Engine's `scale`, torchao's `scale`) is its reciprocal,
// quant_scale = 1 / dequant_scale, with x_q = cast(x · quant_scale). Presets that compute the
// quant multiplier first keep its exact float32 value in `quant_scales` so nothing is lost in
// the conversion (TE's scale_inv = 1/scale is itself a rounded float32).
#pragma once

#include "formats/format.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fp8lab {

/// Granularity of the scales of a 2-D tensor [rows, cols], as a block shape.
/// Per-tensor: block = [rows, cols]; per-row: [1, cols]; per-column: [rows, 1];
/// 1x128: [1, 128]; 128x128: [128, 128]; MX block-32 along the columns (contraction axis of
/// A[M,K]): [1, 32], along the rows (contraction axis of B[K,N]): [32, 1].
/// Partial blocks at the right/bottom edges are allowed (they hold fewer elements).
struct ScaleBlock {
  int64_t rows = 0; ///< block height (≥ 1, ≤ tensor rows for a meaningful block)
  int64_t cols = 0; ///< block width
  bool operator==(const ScaleBlock&) const = default;
};

/// Per-operand counts gathered while quantizing (over all elements).
struct QuantizeStats {
  int64_t elements = 0;
  /// finite inputs whose scaled magnitude overflows: its RNE result with an unbounded exponent
  /// is beyond max finite (OCP OFP8 v1.0 §3; |scaled| > Format::rneFiniteLimit)
  int64_t saturated = 0;
  int64_t underflow = 0;   ///< non-zero finite inputs that became zero
  int64_t subnormal = 0;   ///< results that are subnormal codes
  int64_t nan_inputs = 0;  ///< NaN inputs
  int64_t inf_inputs = 0;  ///< ±Inf inputs
  int64_t zero_inputs = 0; ///< exactly zero inputs
};

/// The second scale level of two-level block formats (NVFP4): one fp32 factor for the whole tensor
/// on top of the E4M3 block scales. A block's effective dequant factor and the GEMM's output factor
/// follow the system that quantized the tensor (docs/nvfp4.md):
///   TeAmax (Transformer Engine, dequantize_nvfp4.cuh / recipe/nvfp4.cu): the tensor keeps its amax;
///     block factor f32(f32(s_block · amax) · f32(1/fp4_fp8_max)); GEMM alpha of two such operands
///     f32(f32(amax_A · amax_B) · f32(1/(fp4_fp8_max_A · fp4_fp8_max_B))).
///   TorchaoPts (torchao NVFP4Tensor): per_tensor_scale `pts` = amax/2688, a dequant factor;
///     block factor f32(pts · s_block); GEMM factor f32(pts_A · pts_B) applied after the product.
struct TensorScale {
  enum class Kind { None, TeAmax, TorchaoPts };
  Kind kind = Kind::None;
  float amax = 0.0f;           ///< TeAmax: the tensor amax the scales came from
  float value = 1.0f;          ///< TeAmax: S_enc (quant multiplier, informational); TorchaoPts: pts
  float fp4_fp8_max = 2688.0f; ///< TeAmax: 6 · E4M3 max (2688; 1536 for 4over6 at the 256 bound)

  /// The effective dequant factor of a block whose own (E4M3) scale is `s`; `s` itself when None.
  float blockFactor(float s) const;
  /// The factor as one fp32 value for the whole tensor (TeAmax: f32(amax · f32(1/fp4_fp8_max)),
  /// TorchaoPts: pts, None: 1), for GEMMs whose other operand is not of the same kind.
  float tensorFactor() const;
};

/// The fp32 factor a GEMM applies to A·B for two tensors' second levels (TensorScale): the
/// system's alpha when both are TeAmax, else f32(tensorFactor(A) · tensorFactor(B)); 1 when
/// neither has one.
float gemmTensorFactor(const TensorScale& a, const TensorScale& b);

/// A row-major 2-D tensor of codes plus one scale per block.
struct QuantizedTensor {
  int64_t rows = 0, cols = 0;
  const Format* format = nullptr; ///< element format (≤ 8 bits)
  std::vector<uint8_t> codes;     ///< rows·cols codes, row-major
  ScaleBlock block;               ///< scale granularity
  /// Dequant scales, row-major over the block grid [blockRows(), blockCols()], float32.
  std::vector<float> dequant_scales;
  /// Quant multipliers, same layout: the exact values the quantize op used (x·q or x/dq).
  std::vector<float> quant_scales;
  /// Block scale codes (same layout) in `scale_format`: E8M0 for MX, E4M3FN for NVFP4; empty for
  /// float32 scales.
  std::vector<uint8_t> scale_codes;
  const Format* scale_format = nullptr; ///< the format of scale_codes (null: E8M0FNU, the MX default)
  /// Two-level formats (NVFP4): the tensor's second scale level; dequant_scales then hold the
  /// decoded block scales and the effective factor of a block is tensor_scale.blockFactor(scale).
  TensorScale tensor_scale;
  QuantizeStats stats;
  std::string strategy; ///< human-readable strategy name, e.g. "per-tensor current (TE)"
  /// How the codes were produced from x: Multiply → cast(x · quant_scale) (TE, torchao,
  /// DeepGEMM, MX); Divide → cast(x / dequant_scale) (Flax, DeepSeek-V3 act_quant). Either way
  /// dequant_scales is the GEMM's factor.
  Format::ScaleOp scale_op = Format::ScaleOp::Multiply;

  int64_t blockRows() const { return block.rows > 0 ? (rows + block.rows - 1) / block.rows : 0; }
  int64_t blockCols() const { return block.cols > 0 ? (cols + block.cols - 1) / block.cols : 0; }
  /// Effective dequant factor of element (i, j): its block's dequant scale, times the tensor
  /// scale for two-level formats (TensorScale::blockFactor).
  float dequantScaleAt(int64_t i, int64_t j) const {
    const float s = dequant_scales[static_cast<size_t>((i / block.rows) * blockCols() + j / block.cols)];
    return tensor_scale.kind == TensorScale::Kind::None ? s : tensor_scale.blockFactor(s);
  }
  /// The format of scale_codes (E8M0FNU unless scale_format says otherwise).
  const Format& scaleCodeFormat() const { return scale_format ? *scale_format : Format::E8M0FNU(); }
  /// Decoded value of element (i, j) times its dequant scale, in double (exact for every FP8
  /// value times a float32 scale).
  double dequantizedAt(int64_t i, int64_t j) const {
    return format->decode(codes[static_cast<size_t>(i * cols + j)]) * static_cast<double>(dequantScaleAt(i, j));
  }
  /// All elements dequantized to float32 (decode · scale, rounded once to float32).
  std::vector<float> dequantize() const;
};

} // namespace fp8lab

// FP8 Lab — how much memory a recipe's scales take: the scale grid of a tensor (from the preset's
// granularity and block size, scaleBlockFor) times the bytes of one scale (from the preset's scale
// format), plus the second scale level of two-level formats.
//
// Scale formats: float32 for every current-scaling rule except the MX rules, whose scales are
// E8M0 bytes (OCP MX v1.0 §5.4); NVFP4: one E4M3 byte per 1×16 block, plus one float32 per tensor
// for the two-level rules (Transformer Engine's amax, torchao's per_tensor_scale; the cuDNN doc rule
// has none). DeepGEMM's UE8M0 presets keep float32 scales (the values are powers of two; packing
// four exponents per int32, as DeepGEMM does for SM100, is not modelled).
#pragma once

#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <cstdint>
#include <string>

namespace fp8lab {

/// The scales of one tensor under one recipe.
struct ScaleStorage {
  ScaleBlock block;          ///< the block one scale covers (partial edge blocks included)
  int64_t scales = 0;        ///< block scales: ceil(rows/block.rows) · ceil(cols/block.cols)
  int scale_bits = 32;       ///< bits of one block scale
  int64_t tensor_scales = 0; ///< float32 second-level scales (NVFP4 two-level rules: 1)
  double bytes = 0;          ///< scales · scale_bits / 8 + 4 · tensor_scales
  std::string scale_format;  ///< "float32", "E8M0", "E4M3FN"
  /// bytes / elements (0 for an empty tensor).
  double bytesPerElement(int64_t elements) const { return elements > 0 ? bytes / double(elements) : 0.0; }
};

/// The scales `cfg` gives a tensor [rows, cols] whose contraction axis is `contraction` (A[M,K]:
/// Cols; B[K,N] or a weight read as Wᵀ: Rows). Throws std::invalid_argument for negative shapes
/// or block < 1.
ScaleStorage scaleStorage(const ScalingConfig& cfg, int64_t rows, int64_t cols, Axis contraction);

/// The scales of an NVFP4 tensor: blocks of 16 along the contraction axis (E4M3FN), plus the
/// float32 tensor scale of the TE and torchao rules (not torchao's Nvfp4TensorScaleSource::None,
/// not the cuDNN doc rule). Partial edge blocks are counted as blocks (the systems refuse them;
/// a memory estimate need not).
ScaleStorage scaleStorage(const Nvfp4Config& cfg, int64_t rows, int64_t cols, Axis contraction);

} // namespace fp8lab

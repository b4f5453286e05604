// FP8 Lab — what a recipe costs: bytes per element with its scales, the total for a GEMM's operands,
// the scale layout, and where it runs natively (hardware generation and cuBLASLt scale mode) or only
// in emulation. One table (scaleKinds()) with a source for every row; docs/gemm.md "Cost of a recipe"
// prints it.
//
// Bytes count what a GEMM reads: the element codes (bits / 8 per element, FP4 packed two a byte) plus
// the scales in the layout the native kernel takes (cuBLASLt's padded layouts where it pads, e.g. MX
// and NVFP4 scales in [roundup(outer, 128), roundup(K / block, 4)]), plus a float32 tensor scale for
// two-level NVFP4. A 2-D recipe that the hardware has no 2-D mode for (MX 32×32 tiles, NVFP4 16×16
// tiles) is stored as its 1-D grid with each tile's code repeated, as Transformer Engine does, so it
// costs what the 1-D recipe costs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// One kind of scale a GEMM operand can carry, with its hardware support.
struct ScaleKind {
  std::string id;           ///< "per_tensor", "outer", "vec128", "blk128", "mx32", "mx32x32", "nvfp4_16", ...
  std::string layout;       ///< the scale grid in words: "1 float32 per 1×128 block along K"
  std::string scale_format; ///< "float32", "E8M0", "E4M3 + float32 tensor scale"
  int scale_bits = 32;      ///< bits of one block scale
  std::string lt_mode;      ///< cuBLASLt scale mode (cublasLtMatmulMatrixScale_t), "" when none
  std::string hardware;     ///< where it runs natively: "Ada, Hopper, Blackwell", "Hopper (sm_90) only", ...
  bool hopper = false, blackwell = false; ///< native on sm_90 / sm_100+
  std::string source;                     ///< where that support is stated
};

/// The table, in display order. Sources: the CUDA 13.0 cublasLt.h enum and NVIDIA's statements in
/// CUDALibrarySamples #180, #270, #310 (scale modes per architecture), Transformer Engine's block
/// scaling GEMM checks, PyTorch's ScaledBlas.cpp dispatch; the padded MX / NVFP4 layouts from TE
/// (quantize_mxfp8.cuh, nvfp4 tensors); collected in the project's CUBLASLT-FP8.md §3 and
/// RECIPES-2026.md §B, §G.
const std::vector<ScaleKind>& scaleKinds();

/// The cost of one operand under one recipe.
struct OperandCost {
  std::string preset;         ///< the scaling or NVFP4 preset
  std::string element_format; ///< e.g. "E4M3FN", "E2M1"
  int element_bits = 8;
  const ScaleKind* kind = nullptr; ///< null for an unknown preset
  std::string block;               ///< the preset's own scale block, e.g. "1×128", "128×128", "32×32 tile"
  int64_t rows = 0, cols = 0;      ///< the operand's shape ([M,K] for A, [K,N] for B)
  int64_t scales = 0;              ///< scales stored in the native layout (padding included)
  int64_t element_bytes = 0;       ///< ceil(rows·cols·bits / 8)
  int64_t scale_bytes = 0;         ///< scales · scale_bits / 8, plus 4 for a float32 tensor scale
  int64_t bytes() const { return element_bytes + scale_bytes; }
  /// (element_bytes + scale_bytes) / (rows·cols).
  double bytesPerElement() const { return rows * cols > 0 ? double(bytes()) / double(rows * cols) : 0.0; }
};

/// The cost of a recipe (A's preset and format, B's) on a GEMM [M,K]·[K,N].
struct RecipeCost {
  OperandCost a, b;
  /// Native support of the pair: "Hopper (sm_90): cuBLASLt VEC128_32F × BLK128x128_32F (cuBLAS ≥ 12.9)",
  /// "Blackwell (sm_100+): cuBLASLt VEC16_UE4M3", or "emulation only: <why>".
  std::string native;
  std::string hardware; ///< short: "Hopper", "Blackwell", "Ada/Hopper/Blackwell", "Hopper (DeepGEMM)", "emulation"
  bool native_any = false;
  std::string source; ///< the sources of the verdict
  int64_t bytes() const { return a.bytes() + b.bytes(); }
  /// Bytes of A and B together over their elements (M·K + K·N).
  double bytesPerElement() const;
};

/// The cost of a recipe: `scaling_a` / `scaling_b` are scaling presets (scalingPresets()) or NVFP4
/// presets (nvfp4Presets()); formats are Format names. The pair's support follows the table and
/// the pairing rules of cuBLASLt on sm_90 (SCALAR×SCALAR, OUTER_VEC×OUTER_VEC, VEC128×VEC128,
/// VEC128×BLK128x128, BLK128x128×VEC128; not BLK×BLK: CUBLASLT-FP8.md §3), the FP8 type rules
/// (E5M2×E5M2 has no kernel; FNUZ formats are AMD's), and Blackwell's block-scaled MMA (MXFP8,
/// MXFP4, NVFP4: one scale kind on both operands). Unknown presets or formats give nullopt.
std::optional<RecipeCost> recipeCost(const std::string& scaling_a, const std::string& scaling_b,
                                     const std::string& format_a, const std::string& format_b, int64_t m, int64_t k,
                                     int64_t n);

/// "1.03 B" / "3.25 MiB" style text of a byte count (binary prefixes).
std::string bytesText(double bytes);

/// Bytes per element with `decimals` decimals, printf's rounding ("%.4f": 1.03125 → "1.0312", the
/// binary tie to even), so the CLI, the Decide view and the report print the same digits.
std::string bytesPerElementText(double bytes_per_element, int decimals = 4);

} // namespace fp8lab

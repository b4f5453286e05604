// FP8 Lab — how GPU kernels hold quantized operands in memory: the block-scale layouts that
// cuBLASLt and DeepGEMM read, and FP4 codes packed two to a byte. Pure index arithmetic, so a
// kernel's own buffers (saved with numpy / safetensors as flat storage) can be read into FP8 Lab's
// row-major scale grid and written back, bit for bit.
//
// Orientation. A layout describes the scales of one operand as a grid [outer, kb]: outer runs over
// M for A [M, K] and over N for B [K, N] (one scale row per row of A / column of B, or per 128 of
// them for BLK128x128), kb over the blocks along K. FP8 Lab's own grid of B ([K-blocks, N-blocks],
// row-major over B's [K, N]) is the transpose of that.
//
// Layouts (element = one byte for scale codes, one float32 for float scales; P = the pitch):
//   RowMajor            (o, kb) at o·KB + kb.
//   CublasLtSwizzled    cuBLASLt VEC32_UE8M0 (MXFP8, E8M0 codes, 32 along K) and VEC16_UE4M3
//                       (NVFP4, E4M3 codes, 16 along K): 128×4 tiles of (outer, kb), 512 bytes
//                       each, ordered by outer tile then K tile; inside a tile, row r and column c
//                       sit at (r mod 32)·16 + (r div 32)·4 + c. The grid is zero-padded to
//                       roundup(outer, 128) × roundup(KB, 4). (cuBLAS "1D Block Scaling Factors
//                       Layout"; PyTorch's and torchao's to_blocked compute the same permutation.)
//   CublasLtVec128      cuBLASLt VEC128_32F (1x128): outer fastest, (o, kb) at kb·P + o, P ≥ outer
//                       (PyTorch: shape (outer, KB), strides (1, outer)).
//   CublasLtBlk128x128  cuBLASLt BLK128x128_32F: (ob, kb) at ob·P + kb, P = roundup(KB, 4) (the
//                       16-byte aligned pitch of NVIDIA's sample size formula).
//   DeepGemmMnMajor     DeepGEMM's SM90 float32 scale factors (get_mn_major_tma_aligned_tensor):
//                       MN-major with MN padded to a multiple of 4 (16 bytes), (o, kb) at
//                       kb·roundup(outer, 4) + o — VEC128's layout with the pitch padded.
//   DeepGemmPackedUe8m0 DeepGEMM's SM100 UE8M0 scale factors
//                       (get_mn_major_tma_aligned_packed_ue8m0_tensor): four E8M0 codes per
//                       little-endian int32 along K, the int32 words MN-major with MN padded to a
//                       multiple of 4: the code of (o, kb) is byte ((kb div 4)·roundup(outer, 4) +
//                       o)·4 + kb mod 4; K blocks padded to a multiple of 4 with code 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

enum class ScaleLayout {
  RowMajor,
  CublasLtSwizzled,
  CublasLtVec128,
  CublasLtBlk128x128,
  DeepGemmMnMajor,
  DeepGemmPackedUe8m0,
};

/// The canonical names: "row_major", "cublaslt_swizzled", "cublaslt_vec128", "cublaslt_blk128x128",
/// "deepgemm_mn_major", "deepgemm_packed_ue8m0".
const char* toString(ScaleLayout l);
/// Names users type (case-insensitive, '-' and '_' the same): the canonical ones, and
/// vec32_ue8m0 / cublaslt_vec32_ue8m0 / vec16_ue4m3 / cublaslt_vec16_ue4m3 / swizzled / 128x4
/// (CublasLtSwizzled), vec128 / vec128_32f / cublaslt_vec128_32f, blk128x128 /
/// blk128x128_32f / cublaslt_blk128x128_32f, deepgemm / deepgemm_sm90, deepgemm_ue8m0 /
/// deepgemm_sm100. nullopt for anything else.
std::optional<ScaleLayout> parseScaleLayout(std::string_view name);
/// "row_major, cublaslt_swizzled (VEC32_UE8M0 / VEC16_UE4M3), ..." for help and errors.
std::string scaleLayoutNames();

/// True for the layouts of one-byte scale codes (swizzled, packed UE8M0), false for float32
/// layouts (VEC128, BLK128x128, DeepGEMM MN-major); RowMajor holds either.
bool scaleLayoutHoldsCodes(ScaleLayout l);

/// The shape of a scale grid in a layout's orientation: `outer` scale rows (per row of A / column
/// of B; per 128 of them for BLK128x128) by `kblocks` blocks along K.
struct ScaleGridShape {
  int64_t outer = 0, kblocks = 0;
};

/// Elements the layout's storage takes for `g` (padding included), with the default pitch.
int64_t scaleStorageSize(ScaleLayout l, ScaleGridShape g);

/// The layout's storage for `g` as the array a kernel holds (padding included; the flat storage
/// is what the other functions read): row_major [outer, kblocks]; cuBLASLt VEC32 / VEC16
/// swizzled [outer rounded up to 128, kblocks rounded up to 4]; VEC128 [kblocks, outer];
/// BLK128x128 [outer, kblocks rounded up to 4]; DeepGEMM MN-major [kblocks, outer rounded up to
/// 4]; DeepGEMM packed UE8M0 [ceil(kblocks / 4) int32 words, outer rounded up to 4].
std::vector<int64_t> scaleStorageShape(ScaleLayout l, ScaleGridShape g);

/// Where grid element (o, kb) sits in the storage: its element index (its byte for the code
/// layouts). `pitch` ≤ 0 means the layout's default (VEC128: outer; BLK128x128: roundup(KB, 4);
/// DeepGEMM: roundup(outer, 4)); RowMajor and the swizzled layout have none.
int64_t scaleOffset(ScaleLayout l, ScaleGridShape g, int64_t o, int64_t kb, int64_t pitch = 0);

/// The pitch of a storage of `elements` elements holding grid `g`: the default, or, for VEC128 and
/// BLK128x128, any pitch ≥ the minimum that the size implies exactly (elements = KB·P, resp.
/// outer·P). nullopt with *error (naming the layout, the grid, the size found and the sizes
/// expected) when the size fits no pitch.
std::optional<int64_t> scalePitchFor(ScaleLayout l, ScaleGridShape g, int64_t elements, std::string* error);

/// The grid `g`, row-major [outer, kblocks], written into the layout's storage (padding = `pad`).
template <class T> std::vector<T> packScales(ScaleLayout l, ScaleGridShape g, const std::vector<T>& grid, T pad);
/// The grid [outer, kblocks] row-major read from a layout's storage (its pitch from its size,
/// scalePitchFor). nullopt with *error when the size does not fit.
template <class T>
std::optional<std::vector<T>> unpackScales(ScaleLayout l, ScaleGridShape g, const std::vector<T>& storage,
                                           std::string* error);

/// A grid [rows, cols] row-major transposed to [cols, rows] (B's FP8 Lab grid ↔ its layout grid).
template <class T> std::vector<T> transposeGrid(const std::vector<T>& grid, int64_t rows, int64_t cols);

/// Which half of a byte holds the first of two packed 4-bit codes.
enum class NibbleOrder {
  LowFirst,  ///< element 2j in bits 0..3, 2j+1 in bits 4..7 (PyTorch float4_e2m1fn_x2 as its tests
             ///< and torchao pack it, cuBLAS CUDA_R_4F_E2M1)
  HighFirst, ///< element 2j in bits 4..7
};
/// "low_first" / "high_first" (also "low", "high", true = low_first in configs).
std::optional<NibbleOrder> parseNibbleOrder(std::string_view s);
const char* toString(NibbleOrder o);

/// Bytes [rows, cols_bytes] row-major, two codes each, to codes [rows, 2·cols_bytes].
std::vector<uint8_t> unpackFp4(const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols_bytes, NibbleOrder o);
/// Codes [rows, cols] (cols even, each < 16) packed two to a byte: [rows, cols / 2].
std::vector<uint8_t> packFp4(const std::vector<uint8_t>& codes, int64_t rows, int64_t cols, NibbleOrder o);

} // namespace fp8lab

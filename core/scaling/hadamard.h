// FP8 Lab — the 16-point random Hadamard transform (RHT) of Transformer Engine's NVFP4 recipe.
//
// R = diag(s) · H16 · 0.25, where H16 is the 16×16 Sylvester Hadamard matrix (entries ±1,
// H16[i][j] = (−1)^popcount(i & j)), 0.25 = 1/√16 its normalisation, and s the sign vector, given
// as a 16-bit mask with bit i set where s_i = −1. A block x of 16 consecutive values becomes
// y = x · R:  y_j = ¼ Σ_i s_i · x_i · H16[i][j].
//
// Semantics: Transformer Engine pytorch/tensor/nvfp4_tensor.py (get_wgrad_sign_vector,
// get_hadamard_matrix, get_rht_matrix, get_sign_from_vector: the fixed sign vector, mask 0xD7E8)
// and common/hadamard_transform/hadamard_transform_utils.cuh (k16x16HadamardScale = 0.25f, BF16
// matrix entries, mma_m16_n16_k16_b16_b16_b16_noacc: BF16×BF16 products accumulated in fp32, then
// cvt.rn.bf16x2.f32 of the output). Every entry of R is exactly ±0.25, so each product s_i·x_i·
// H16[i][j]·0.25 is exact in fp32 for BF16 inputs (and for any float32 input that does not
// underflow); only the fp32 sum and the final BF16 rounding round. The MMA's accumulation order is
// not specified by the source; this code adds in the order i = 0 .. 15, which cannot matter when the
// sums are exact in fp32.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace fp8lab {

/// TE's fixed wgrad sign vector [1,1,1,−1,1,−1,−1,−1,−1,−1,−1,1,−1,1,−1,−1] as a mask (bit i set
/// where s_i = −1): Transformer Engine nvfp4_tensor.py get_wgrad_sign_vector / get_sign_from_vector.
/// Mask 0 is the plain Hadamard transform (NVFP4Quantizer with_random_sign_mask=False).
inline constexpr uint16_t kTeRhtSignMask = 0xD7E8;

/// H16[i][j] = (−1)^popcount(i & j) ∈ {+1, −1}, for 0 ≤ i, j < 16 (Sylvester construction;
/// H16 · H16 = 16 · I). Out-of-range indices are masked to their low 4 bits.
int hadamard16Entry(int i, int j);

/// The RHT matrix R = diag(s)·H16·0.25 as float32, row-major R[i][j] = out[16·i + j]; every entry
/// is exactly ±0.25 (the BF16 matrix of TE get_rht_matrix).
std::array<float, 256> rhtMatrix16(uint16_t sign_mask = kTeRhtSignMask);

/// float32 → BF16 → float32 with round to nearest, ties to even (CUDA __float2bfloat16_rn,
/// cvt.rn.bf16.f32); NaN stays a quiet NaN with its sign, ±inf stays ±inf, overflow rounds to ±inf.
inline float bf16RoundNearestEven(float x) {
  const uint32_t b = std::bit_cast<uint32_t>(x);
  const uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u; // the carry is RNE's
  const uint32_t nan = (b | 0x00400000u) & 0xFFFF0000u;
  return std::bit_cast<float>((b & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

/// One 16-point RHT: y_j = bf16(Σ_{i=0..15} R[i][j] · x_i) with the sum in float32 (order i = 0..15)
/// and, when bf16_output, the result rounded to BF16 (as TE's kernels do; false keeps the fp32
/// accumulator). x and y hold 16 values each at strides x_stride / y_stride (in elements; 1 for 16
/// consecutive values of a row, the row length for 16 rows of a column). x and y may alias only if
/// they are the same array with the same stride. No scale convention: a pure change of basis (R is
/// orthogonal, R·Rᵀ = I). Never throws.
void hadamardTransform16(const float* x, float* y, uint16_t sign_mask = kTeRhtSignMask, std::ptrdiff_t x_stride = 1,
                         std::ptrdiff_t y_stride = 1, bool bf16_output = true);

/// The same transform applied to every column of a band of 16 rows: for each column c < cols,
/// the 16 values x[i·ld + c] (i = 0..15) are transformed into y[j·ld + c]. Bit-identical to
/// hadamardTransform16 on each column (the same sum order), laid out so the inner loop runs along
/// a row. x and y must not overlap. Never throws.
void hadamardTransform16Columns(const float* x, float* y, std::size_t cols, std::size_t ld,
                                uint16_t sign_mask = kTeRhtSignMask, bool bf16_output = true);

} // namespace fp8lab

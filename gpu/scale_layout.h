// FP8 Lab GPU core — host-side arrangement of FP8 GEMM operands and scales for cuBLASLt on
// Hopper: scale-mode choice, zero padding, the TN (K-contiguous) layout, scale tensors.
// Needs no GPU; unit-tested on the CPU (tests/gpu/test_gpu_host.cpp).
//
// Caller's view: row-major A [M,K] and B [K,N] (QuantizedTensor, dequant-scale convention:
// x ≈ decode(code) · dequant_scale), D [M,N] row-major, and
//     D = scale_D · (a_scale ⊙ b_scale ⊙ (A·B))
// cuBLASLt is column-major and on sm_90 accepts FP8 only as "TN" (A transposed, B not), i.e.
// both operands K-contiguous. We therefore hand cuBLASLt the operands SWAPPED:
//     Lt-A = caller B stored as [N_pad, K_pad] row-major (= column-major K×N, ld K), TRANSA = T
//     Lt-B = caller A stored as [M_pad, K_pad] row-major (= column-major K×M, ld K), TRANSB = N
//     Lt-D = column-major N_pad × M_pad, ld N_pad  (= row-major [M_pad, N_pad], the caller's D)
// so cuBLASLt's m = N_pad, n = M_pad, and the Lt "A scale" is the caller's B scale.
// Padding: M, N, K rounded up to multiples of 16 (16-byte rule for FP8 pointers/ld), K to a
// multiple of 128 when either operand uses a 1x128 / 128x128 mode; padded codes are 0 (+0.0),
// padded scales 1.0, so the padded rows/columns of D are 0 and are cut off.
//
// Scale tensors as cuBLASLt expects them (cublasLtMatmulMatrixScale_t modes; "outer" = M for caller A,
// N for caller B, padded; kb = K-block index, KB = K_pad/128; all float32, dequant scales):
//   SCALAR_32F      1 value
//   OUTER_VEC_32F   outer values, scale[o] multiplies row o of A (column o of B)
//   VEC128_32F      KB × outer, outer fastest: scale(o, kb) at kb·outer + o   (1 per 1x128 block)
//   BLK128x128_32F  ceil(outer/128) blocks × KB, K-block fastest with the pitch padded to a
//                   multiple of 4 floats: scale(ob, kb) at ob·LD + kb, LD = roundup(KB, 4)
// Pairings sm_90 accepts natively: SCALAR×SCALAR, OUTER_VEC×OUTER_VEC, VEC128×VEC128,
// VEC128×BLK128x128, BLK128x128×VEC128 (not BLK×BLK). Other caller combinations are PROMOTED
// exactly (scales broadcast, no value changes): scalar→outer-vector, scalar/outer→VEC128, and
// 128x128×128x128 → caller A as VEC128 (each row repeats its 128x128 block's scale).
#pragma once

#include "scaling/quantized_tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab::gpu {

/// cuBLASLt A/B scale modes used on Hopper; values equal cublasLtMatmulMatrixScale_t.
enum class LtScaleMode : int { Scalar = 0, OuterVec = 3, Vec128 = 4, Blk128x128 = 5 };
const char* toString(LtScaleMode m); ///< "SCALAR_32F", "OUTER_VEC_32F", ...

/// Which GEMM operand a tensor is: caller's A [M,K] (K = cols) or B [K,N] (K = rows).
enum class Operand { A, B };

/// The cuBLASLt mode that represents `t`'s scale granularity natively for its role, or nullopt
/// with the reason in *why (e.g. per-column scales of A vary along K, MX E8M0 scales, blocks
/// other than 1x128 / 128x128). Per tensor → SCALAR; A per-row [1,K] / B per-column [K,1] →
/// OUTER_VEC; A [1,128] / B [128,1] → VEC128; [128,128] → BLK128x128. Also accepts blocks that
/// coincide with one of those on this shape (e.g. a [1,128] block of a K = 128 tensor).
std::optional<LtScaleMode> nativeScaleMode(const QuantizedTensor& t, Operand role, std::string* why = nullptr);

/// The pair of modes actually sent to cuBLASLt for caller modes (a, b), with any exact promotion
/// (see the file header). `note` describes a promotion, empty when none.
struct ModePair {
  LtScaleMode a = LtScaleMode::Scalar, b = LtScaleMode::Scalar;
  std::string note;
};
ModePair choosePairing(LtScaleMode a, LtScaleMode b);
/// true for VEC128 / BLK128x128.
bool isBlockMode(LtScaleMode m);

/// Padded problem size (see the file header).
struct PaddedShape {
  int64_t m = 0, n = 0, k = 0;    ///< caller's sizes
  int64_t mp = 0, np = 0, kp = 0; ///< padded
};
PaddedShape padShape(int64_t m, int64_t n, int64_t k, bool block_modes);
int64_t roundUp(int64_t x, int64_t to);

/// The codes of `t` arranged K-contiguous and zero-padded: [outer_pad, k_pad] row-major, where
/// outer = M for A (rows copied) and N for B (transposed). Throws std::invalid_argument when the
/// pads are smaller than the tensor.
std::vector<uint8_t> packKMajor(const QuantizedTensor& t, Operand role, int64_t outer_pad, int64_t k_pad);

/// The dequant scales of `t` in cuBLASLt's layout for `mode` (file header), for padded sizes
/// outer_pad and k_pad. Padded entries are 1.0. Throws std::invalid_argument when `mode` cannot
/// represent t's granularity exactly.
std::vector<float> ltScaleTensor(const QuantizedTensor& t, Operand role, LtScaleMode mode, int64_t outer_pad,
                                 int64_t k_pad);
/// Number of floats ltScaleTensor returns.
int64_t ltScaleCount(LtScaleMode mode, int64_t outer_pad, int64_t k_pad);

} // namespace fp8lab::gpu

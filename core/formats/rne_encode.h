// FP8 Lab — float32 → ≤ 8-bit float format, round to nearest even: the element encode of every
// bulk conversion. One source for the host (Format::encodeBulk's vector kernel,
// format_bulk.cpp) and the device (gpu/quantize_kernels.cu): FP8LAB_HD, common/host_device.h.
//
// Method, on the float32 bit pattern u of the value (already scaled), |u| = a:
//  * normal results: add the RNE bias (half-quantum − 1 + the kept LSB) to a and shift the
//    discarded mantissa bits out; a mantissa carry moves into the exponent by itself; then
//    re-bias the exponent field (127 → the format's bias);
//  * subnormal results (a below the format's min normal): a + magic, magic = min_subnormal · 2^23,
//    is rounded by the FPU (RNE) to a multiple of the subnormal quantum; its low bits are the code;
//  * overflow (a above the largest float32 whose RNE result is finite), ±Inf and NaN: per-format
//    codes taken from the scalar reference Format::encode (Format::rneConstants), so the two
//    paths agree by construction; tests/core/formats check it on every oracle input and on
//    float32 bit patterns.
// Every select is mask arithmetic, so a loop over elements has no control flow and vectorises
// (format_bulk.cpp compiles it for AVX-512 / AVX2 / baseline). Denormal float32 inputs are kept:
// never build with -ffast-math or nvcc --use_fast_math.
#pragma once

#include "common/host_device.h"

#include <cstdint>

namespace fp8lab {

/// The per-format constants of the RNE encode (see the file comment). Plain data, passed to
/// kernels by value. Get them from Format::rneConstants(saturate).
struct RneEncodeConstants {
  uint32_t min_normal_bits = 0;        ///< float32 bits of the format's min normal
  uint32_t sat_threshold_bits = 0;     ///< largest float32 |x| whose RNE result is finite
  uint32_t magic_bits = 0;             ///< float32 bits of magic
  float magic = 0;                     ///< min_subnormal · 2^23
  uint32_t rebias = 0;                 ///< (127 − bias) << mantissa_bits
  uint32_t shift = 0;                  ///< 23 − mantissa_bits
  uint32_t sign_bit = 0;               ///< the code's sign bit (0x80 for 8-bit formats)
  uint32_t over_pos = 0, over_neg = 0; ///< overflow codes (±max finite when saturating)
  uint32_t inf_pos = 0, inf_neg = 0;   ///< ±Inf input codes
  uint32_t nan_pos = 0, nan_neg = 0;   ///< NaN input codes
  uint32_t negative_zero_mask = ~0u;   ///< ~0: a zero result keeps its sign; 0 for FNUZ (−0 → 0x00)
};

namespace detail {
/// All ones when c, else 0.
FP8LAB_HD inline uint32_t mask(bool c) {
  return 0u - static_cast<uint32_t>(c);
}
/// a where the mask m is set, else b.
FP8LAB_HD inline uint32_t sel(uint32_t m, uint32_t a, uint32_t b) {
  return (a & m) | (b & ~m);
}
} // namespace detail

/// Encodes one float32 value that has already been scaled. Bit-identical to
/// Format::encode(double(xf), {RNE, saturate as in k, SpecialsPolicy::Cuda}).
FP8LAB_HD inline uint8_t rneEncodeScaled(float xf, const RneEncodeConstants& k) {
  using detail::mask;
  using detail::sel;
  const uint32_t u = hd::floatBits(xf);
  const uint32_t negm = 0u - (u >> 31);
  const uint32_t a = u & 0x7fffffffu;
  const uint32_t half_minus_one = (1u << (k.shift - 1)) - 1u;
  const uint32_t rn = (a + half_minus_one + ((a >> k.shift) & 1u)) >> k.shift;
  const uint32_t cn = rn - k.rebias;
  const float sf = hd::addRn(hd::bitsFloat(a), k.magic);
  const uint32_t cs = hd::floatBits(sf) - k.magic_bits;
  const uint32_t mag = sel(mask(a < k.min_normal_bits), cs, cn);
  const uint32_t signed_zero_ok = mask(mag != 0u) | k.negative_zero_mask;
  uint32_t code = mag | (negm & k.sign_bit & signed_zero_ok);
  code = sel(mask(a > k.sat_threshold_bits), sel(negm, k.over_neg, k.over_pos), code);
  code = sel(mask(a == 0x7f800000u), sel(negm, k.inf_neg, k.inf_pos), code);
  code = sel(mask(a > 0x7f800000u), sel(negm, k.nan_neg, k.nan_pos), code);
  return static_cast<uint8_t>(code);
}

/// The NaN an x86-64 CPU (SSE/AVX: the platform of the CPU reference) gives for x·s or x/s when
/// the result is NaN: a NaN operand is passed on, quietened (x's when both are NaN; a CPU
/// compiler may order the operands either way there, so that case can still differ), and an
/// invalid operation on non-NaN operands (0·Inf, 0/0, Inf/Inf) gives the x86 "default NaN"
/// 0xFFC00000, which is NEGATIVE. NVIDIA GPUs instead return the canonical NaN 0x7FFFFFFF for
/// every NaN result (CUDA C++ Programming Guide, floating-point standard), whatever the inputs'
/// signs. The sign matters for formats whose NaN code keeps the sign (E4M3 with Inf, E3M4: the
/// ml_dtypes specials), so the device takes its NaN from here (rneEncode).
FP8LAB_HD inline float x86NanResult(float x, float s) {
  const uint32_t ux = hd::floatBits(x), us = hd::floatBits(s);
  if ((ux & 0x7fffffffu) > 0x7f800000u) return hd::bitsFloat(ux | 0x00400000u);
  if ((us & 0x7fffffffu) > 0x7f800000u) return hd::bitsFloat(us | 0x00400000u);
  return hd::bitsFloat(0xffc00000u);
}

/// x·s (divide = false) or x/s (divide = true) in IEEE float32, then rneEncodeScaled: one element
/// of Format::encodeBulk(in, out, n, {RNE, saturate as in k}, s, Multiply | Divide). On the device
/// a NaN product or quotient is replaced by the x86 CPU's (x86NanResult); on the host the
/// arithmetic already gives it.
FP8LAB_HD inline uint8_t rneEncode(float x, float s, bool divide, const RneEncodeConstants& k) {
  float xf = divide ? hd::divRn(x, s) : hd::mulRn(x, s);
#if defined(__CUDA_ARCH__)
  if (hd::isNan(xf)) xf = x86NanResult(x, s);
#endif
  return rneEncodeScaled(xf, k);
}

} // namespace fp8lab

// FP8 Lab GPU core — float32 → FP8 (E4M3FN / E5M2 / any ≤ 8-bit float format) conversion,
// round-to-nearest-even, bit-identical to Format::encodeBulk (core/formats/format_bulk.cpp).
//
// The same function runs on the host and on the device (__host__ __device__), so the CPU unit
// tests run the GPU's exact arithmetic against Format::encodeBulk on every float32 bit pattern.
// Method (format_bulk.cpp, restated): on the float32 bit pattern u of x·s (or x/s):
//   normal results : ((|u| + 2^(shift−1) − 1 + kept_lsb) >> shift) − rebias
//   subnormal      : bits(|x| + magic) − bits(magic), magic = min_subnormal · 2^23 (FPU RNE)
//   |x| > sat_threshold → overflow code (±max finite when saturating); ±Inf, NaN → per-format
//   codes computed once on the host from the scalar reference Format::encode.
// Products and sums use __fmul_rn / __fdiv_rn / __fadd_rn on the device so nvcc never
// contracts them into FMAs or approximates the division (IEEE float32, as the CPU kernel).
// Denormal float32 inputs are kept (no flush-to-zero: never build gpu/ with --use_fast_math).
// A NaN product / quotient takes the sign the x86 CPU reference gives it (x86NanResult): the
// GPU's own NaN results are always the positive canonical NaN.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FP8LAB_HD __host__ __device__ __forceinline__
#else
#define FP8LAB_HD inline
#endif

namespace fp8lab {
class Format;
}

namespace fp8lab::gpu {

/// Per-format constants of the branch-free RNE kernel (see the file header). Plain data, passed
/// to kernels by value. Build with makeEncodeConstants().
struct EncodeConstants {
  uint32_t min_normal_bits = 0;        ///< float32 bits of the format's min normal
  uint32_t sat_threshold_bits = 0;     ///< largest float32 |x| whose RNE result is finite
  uint32_t magic_bits = 0;             ///< float32 bits of magic
  float magic = 0;                     ///< min_subnormal · 2^23
  uint32_t rebias = 0;                 ///< (127 − bias) << mantissa_bits
  int shift = 0;                       ///< 23 − mantissa_bits
  uint32_t sign_bit = 0;               ///< code sign bit (0x80 for 8-bit formats)
  uint32_t over_pos = 0, over_neg = 0; ///< overflow codes (±max finite when saturating)
  uint32_t inf_pos = 0, inf_neg = 0;   ///< ±Inf input codes
  uint32_t nan_pos = 0, nan_neg = 0;   ///< NaN input codes
  uint32_t negative_zero = 1;          ///< 0 for FNUZ formats (−0 → 0x00)
};

/// Constants for `format` (≤ 8 bits, a float format with a mantissa; not E8M0) with RNE and
/// CUDA specials, saturating (OCP SAT / __NV_SATFINITE) or not. Computed from the public scalar
/// reference (Format::encode / explain), exactly as Format::initFast does. Throws
/// std::invalid_argument for formats the kernel cannot do (E8M0, > 8 bits).
EncodeConstants makeEncodeConstants(const Format& format, bool saturate = true);

namespace detail {
FP8LAB_HD uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}
FP8LAB_HD float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}
FP8LAB_HD float mulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b; // the project builds with -std=c++20 (no GNU extensions): -ffp-contract=off
#endif
}
FP8LAB_HD float divRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
FP8LAB_HD float addRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
/// The NaN an x86-64 CPU (SSE/AVX: the platform of the CPU reference) gives for x·s or x/s when
/// the result is NaN: a NaN operand is passed on, quietened (x's when both are NaN; a CPU
/// compiler may order the operands either way there, so that case can still differ), and an
/// invalid operation on non-NaN operands (0·Inf, 0/0, Inf/Inf) gives the x86 "default NaN"
/// 0xFFC00000, which is NEGATIVE. NVIDIA GPUs instead return the canonical NaN 0x7FFFFFFF for
/// every NaN result (CUDA C++ Programming Guide, floating-point standard), whatever the inputs'
/// signs. The sign matters for formats whose NaN code keeps the sign (E4M3 with Inf, E3M4: the
/// ml_dtypes specials), so the device takes its NaN from here (encodeFloat); tests/gpu/
/// test_gpu_host.cpp checks this rule against the CPU's own arithmetic.
FP8LAB_HD float x86NanResult(float x, float s) {
  const uint32_t ux = floatBits(x), us = floatBits(s);
  if ((ux & 0x7fffffffu) > 0x7f800000u) return bitsFloat(ux | 0x00400000u);
  if ((us & 0x7fffffffu) > 0x7f800000u) return bitsFloat(us | 0x00400000u);
  return bitsFloat(0xffc00000u);
}
} // namespace detail

/// Encodes one float32 value that has already been scaled. Bit-identical to
/// Format::encodeBulk(&x, &code, 1, {RNE, saturate as in k}, 1.0f).
FP8LAB_HD uint8_t encodeScaled(float xf, const EncodeConstants& k) {
  const uint32_t u = detail::floatBits(xf);
  const uint32_t neg = u >> 31;
  const uint32_t a = u & 0x7fffffffu;
  const uint32_t half_minus_one = (1u << (k.shift - 1)) - 1u;
  const uint32_t rn = (a + half_minus_one + ((a >> k.shift) & 1u)) >> k.shift;
  const uint32_t cn = rn - k.rebias;
  const float sf = detail::addRn(detail::bitsFloat(a), k.magic);
  const uint32_t cs = detail::floatBits(sf) - k.magic_bits;
  const uint32_t mag = a < k.min_normal_bits ? cs : cn;
  uint32_t code = mag | (neg ? k.sign_bit : 0u);
  code = (mag == 0u && !k.negative_zero) ? 0u : code;
  code = a > k.sat_threshold_bits ? (neg ? k.over_neg : k.over_pos) : code;
  code = a == 0x7f800000u ? (neg ? k.inf_neg : k.inf_pos) : code;
  code = a > 0x7f800000u ? (neg ? k.nan_neg : k.nan_pos) : code;
  return static_cast<uint8_t>(code);
}

/// x·s (divide = false) or x/s (divide = true) in IEEE float32, then encodeScaled. This is
/// Format::encodeBulk(in, out, n, opt, s, Multiply|Divide) for one element.
FP8LAB_HD uint8_t encodeFloat(float x, float s, bool divide, const EncodeConstants& k) {
  float xf = divide ? detail::divRn(x, s) : detail::mulRn(x, s);
#if defined(__CUDA_ARCH__)
  // The GPU's NaN results are always +canonical; the CPU reference's keep the sign of a NaN
  // operand (or are negative for 0·Inf, 0/0): see detail::x86NanResult. (On the host the
  // arithmetic above already gives that NaN.)
  if ((detail::floatBits(xf) & 0x7fffffffu) > 0x7f800000u) xf = detail::x86NanResult(x, s);
#endif
  return encodeScaled(xf, k);
}

} // namespace fp8lab::gpu

// FP8 Lab — one source for host and device numerics (CUTLASS's CUTLASS_HOST_DEVICE,
// include/cutlass/detail/helper_macros.hpp).
//
// A function marked FP8LAB_HD in a core header is compiled by the host compiler for core/ and by
// nvcc for the kernels in gpu/: the element encode (formats/rne_encode.h), the scale rules
// (scaling/scale_rules.h) and the delayed-scaling update (scaling/delayed_update.h) each exist
// once. Under nvcc FP8LAB_HD is `__host__ __device__`; for any other compiler it is empty, so
// core/ stays plain C++ (it includes no CUDA header).
//
// The arithmetic helpers below give IEEE float32 round-to-nearest results on both sides: on the
// device through the _rn intrinsics, which nvcc never contracts into FMAs nor approximates; on the
// host with plain operators (the project compiles ISO C++20, whose default is -ffp-contract=off,
// and never with -ffast-math).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FP8LAB_HD __host__ __device__
#else
#define FP8LAB_HD
#endif

namespace fp8lab::hd {

/// The float32 bit pattern of f.
FP8LAB_HD inline uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

/// The float32 whose bit pattern is u.
FP8LAB_HD inline float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// a·b, a/b, a+b and fma(a, b, c) in float32, each rounded once to nearest even.
FP8LAB_HD inline float mulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
FP8LAB_HD inline float divRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
FP8LAB_HD inline float addRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
FP8LAB_HD inline float fmaRn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
/// a/b in float64, rounded once to nearest even.
FP8LAB_HD inline double divRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

FP8LAB_HD inline bool isNan(float x) {
  return (floatBits(x) & 0x7fffffffu) > 0x7f800000u;
}
FP8LAB_HD inline bool isInf(float x) {
  return (floatBits(x) & 0x7fffffffu) == 0x7f800000u;
}
FP8LAB_HD inline bool isFinite(float x) {
  return (floatBits(x) & 0x7f800000u) != 0x7f800000u;
}
FP8LAB_HD inline bool isNan(double x) {
  return x != x;
}

/// The positive quiet NaN 0x7FC00000 (std::numeric_limits<float>::quiet_NaN()).
FP8LAB_HD inline float quietNan() {
  return bitsFloat(0x7fc00000u);
}
FP8LAB_HD inline float infinity() {
  return bitsFloat(0x7f800000u);
}
/// FLT_MAX, the largest finite float32.
FP8LAB_HD inline float floatMax() {
  return bitsFloat(0x7f7fffffu);
}

/// 2^e as float32, exact: e in [−149, 127]; 0 below, +Inf above.
FP8LAB_HD inline float pow2f(int e) {
  if (e > 127) return infinity();
  if (e >= -126) return bitsFloat(static_cast<uint32_t>(e + 127) << 23);
  if (e >= -149) return bitsFloat(1u << (e + 149));
  return 0.0f;
}

/// max that propagates NaN (torch.max / jnp.max): a NaN operand gives the quiet NaN 0x7FC00000.
FP8LAB_HD inline float maxPropagateNan(float a, float b) {
  if (isNan(a) || isNan(b)) return quietNan();
  return a > b ? a : b;
}

} // namespace fp8lab::hd

// FP8 Lab GPU core — the current-scaling rules (amax → scale) as one __host__ __device__
// function, bit-identical to core/scaling/scale_rules.cpp (blockScaleFromAmax in scaling.cpp):
//   TE        quant = fp8_max / max(amax, eps) (IEEE float32); amax 0/Inf/NaN → 1; Inf → FLT_MAX;
//             pow2: mantissa bits cleared. dequant = 1 / quant.
//   torchao   quant = float32(double(fp8_max) / max(double(amax), 1e-12)) (NaN stays NaN);
//             pow2: exp2(floor(log2f(quant))), log2f taken as log2 in double rounded once to
//             float32 (a correctly rounded log2f, as glibc's), so FLT_MAX → Inf as in torchao's
//             tests. dequant = 1 / quant.
//   DeepGEMM  dequant = max(amax, 1e-4) / fp8_max (float32); ue8m0 (pow2): exponent + (mantissa≠0),
//             clamped to [1, 254]. quant = 1 / dequant.
//   MX        E8M0 byte by FLOOR (OCP), CEIL (torchao), EVEN (torchao: amax bits + 2^(22−mbits),
//             masked to a power of two, then FLOOR), RCEIL (NVIDIA, saturating) or torchao's
//             RCEIL (not saturating: Inf/NaN/overflow → 0xFF); dequant =
//             2^(code−127), quant = 2^(127−code) (exact, NaN for 0xFF).
// Semantics: core/scaling/scale_rules.h names each system's source.
#pragma once

#include "fp8_encode.cuh"

#include <cfloat>
#include <cstdint>

namespace fp8lab {
struct ScalingConfig;
}

namespace fp8lab::gpu {

enum class DeviceScaleRule : int {
  TransformerEngine = 0,
  Torchao = 1,
  DeepGemm = 2,
  MxFloor = 3,
  MxCeil = 4,
  MxRceil = 5,
  MxRceilTorchao = 6,
  MxEven = 7
};

/// Plain-data parameters of a rule (build with deviceScaleParams()).
struct DeviceScaleParams {
  DeviceScaleRule rule = DeviceScaleRule::TransformerEngine;
  float fp8_max = 448.0f;
  int emax_elem = 8;  ///< MX FLOOR/CEIL/EVEN: exponent of the element format's largest power of two
  int mbits_elem = 3; ///< MX EVEN: mantissa bits of the element format
  bool pow2 = false;
  float amax_epsilon = 0.0f; ///< TE only
};

/// Host: the parameters of a ScalingConfig for an element format (≤ 8 bits).
DeviceScaleParams deviceScaleParams(const ScalingConfig& cfg, const Format& fmt);

struct DeviceBlockScale {
  float quant = 1.0f;
  float dequant = 1.0f;
  int code = -1; ///< E8M0 byte for MX rules
};

namespace detail {
FP8LAB_HD bool isNan(float x) {
  return (floatBits(x) & 0x7fffffffu) > 0x7f800000u;
}
FP8LAB_HD bool isInf(float x) {
  return (floatBits(x) & 0x7fffffffu) == 0x7f800000u;
}
/// 2^e as float32 for e in [-149, 127]; 0 below, Inf above.
FP8LAB_HD float pow2f(int e) {
  if (e > 127) return bitsFloat(0x7f800000u);
  if (e >= -126) return bitsFloat(static_cast<uint32_t>(e + 127) << 23);
  if (e >= -149) return bitsFloat(1u << (e + 149));
  return 0.0f;
}
FP8LAB_HD float e8m0Value(uint32_t code) {
  return code == 0xFFu ? bitsFloat(0x7fc00000u) : pow2f(static_cast<int>(code) - 127);
}
FP8LAB_HD float e8m0Reciprocal(uint32_t code) {
  return code == 0xFFu ? bitsFloat(0x7fc00000u) : pow2f(127 - static_cast<int>(code));
}
FP8LAB_HD uint32_t e8m0RoundUp(float v) {
  if (isNan(v)) return 0xFFu;
  if (isInf(v)) return 0xFEu;
  if (v == 0.0f) return 0x00u;
  const uint32_t u = floatBits(v) & 0x7fffffffu;
  uint32_t exponent = u >> 23;
  const uint32_t mantissa = u & 0x7fffffu;
  if ((mantissa > 0 && exponent != 0xFEu) && !(exponent == 0 && mantissa <= 0x400000u)) ++exponent;
  return exponent;
}
FP8LAB_HD uint32_t mxByte(int e_unb) {
  if (e_unb < -127) e_unb = -127;
  if (e_unb > 127) return 0xFFu;
  return static_cast<uint32_t>(e_unb + 127);
}
FP8LAB_HD double log2d(double x) {
#if defined(__CUDA_ARCH__)
  return ::log2(x);
#else
  return __builtin_log2(x);
#endif
}
FP8LAB_HD float floorf_(float x) {
#if defined(__CUDA_ARCH__)
  return ::floorf(x);
#else
  return __builtin_floorf(x);
#endif
}
/// torchao's exp2(floor(log2(s))) in float32 ops (see the file header for log2f).
FP8LAB_HD float torchaoPow2(float s) {
  if (isNan(s)) return s;
  if (s == 0.0f) return 0.0f; // log2(0) = −Inf → exp2(−Inf) = 0
  if (s < 0.0f) return bitsFloat(0x7fc00000u);
  if (isInf(s)) return s;
  const float l = static_cast<float>(log2d(static_cast<double>(s)));
  const float f = floorf_(l);
  return pow2f(static_cast<int>(f));
}
} // namespace detail

/// The scale of one block of amax `amax` (see the file header).
FP8LAB_HD DeviceBlockScale blockScaleFromAmaxHD(float amax, const DeviceScaleParams& p) {
  using namespace detail;
  DeviceBlockScale b;
  switch (p.rule) {
  case DeviceScaleRule::TransformerEngine: {
    float a = amax;
    if (a < p.amax_epsilon) a = p.amax_epsilon;
    float s;
    if (isInf(a) || a == 0.0f || isNan(a)) {
      s = 1.0f;
    } else {
      s = divRn(p.fp8_max, a);
      if (isInf(s)) s = FLT_MAX;
      if (p.pow2) s = bitsFloat(floatBits(s) & 0xFF800000u);
    }
    b.quant = s;
    b.dequant = divRn(1.0f, s);
    break;
  }
  case DeviceScaleRule::Torchao: {
    const double ad = static_cast<double>(amax);
    const double a = isNan(amax) ? ad : (ad < 1e-12 ? 1e-12 : ad);
    float s = static_cast<float>(static_cast<double>(p.fp8_max) / a);
    if (p.pow2) s = torchaoPow2(s);
    b.quant = s;
    b.dequant = divRn(1.0f, s);
    break;
  }
  case DeviceScaleRule::DeepGemm: {
    const float a = isNan(amax) ? amax : (amax < 1e-4f ? 1e-4f : amax);
    float sf = divRn(a, p.fp8_max);
    if (p.pow2 && !isNan(sf) && !isInf(sf)) {
      const uint32_t bits = floatBits(sf);
      uint32_t e = (bits >> 23) & 0xFFu;
      e += (bits & 0x7FFFFFu) != 0 ? 1u : 0u;
      if (e < 1) e = 1;
      if (e > 254) e = 254;
      sf = bitsFloat(e << 23);
    }
    b.dequant = sf;
    b.quant = divRn(1.0f, sf);
    break;
  }
  case DeviceScaleRule::MxFloor:
  case DeviceScaleRule::MxCeil:
  case DeviceScaleRule::MxEven:
  case DeviceScaleRule::MxRceil:
  case DeviceScaleRule::MxRceilTorchao: {
    uint32_t code;
    if (p.rule == DeviceScaleRule::MxRceil) {
      code = e8m0RoundUp(mulRn(amax, divRn(1.0f, p.fp8_max)));
    } else if (p.rule == DeviceScaleRule::MxRceilTorchao) {
      const float v = mulRn(amax, divRn(1.0f, p.fp8_max));
      if (isNan(v) || isInf(v)) {
        code = 0xFFu;
      } else if (v == 0.0f) {
        code = 0x00u;
      } else {
        const uint32_t u = floatBits(v) & 0x7FFFFFFFu;
        code = u >> 23;
        const uint32_t mantissa = u & 0x7FFFFFu;
        if (mantissa > 0 && !(code == 0 && mantissa <= 0x400000u)) ++code; // 0xFE + 1 → 0xFF (NaN)
      }
    } else if (isNan(amax) || isInf(amax)) {
      code = 0xFFu;
    } else {
      uint32_t u = floatBits(amax) & 0x7FFFFFFFu;
      if (p.rule == DeviceScaleRule::MxEven) u = (u + (1u << (22 - p.mbits_elem))) & 0xFF800000u;
      const int floor_exp = static_cast<int>(u >> 23) - 127;
      const int up = (p.rule == DeviceScaleRule::MxCeil && (u & 0x7FFFFFu) != 0) ? 1 : 0;
      code = u >= 0x7F800000u ? 0xFFu : mxByte(floor_exp + up - p.emax_elem); // EVEN's carry can reach inf
    }
    b.code = static_cast<int>(code);
    b.dequant = e8m0Value(code);
    b.quant = e8m0Reciprocal(code);
    break;
  }
  }
  return b;
}

} // namespace fp8lab::gpu

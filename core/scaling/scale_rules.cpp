#include "scaling/scale_rules.h"

#include <bit>
#include <cmath>
#include <limits>

namespace fp8lab {

float tePow2(float s) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(s) & 0xFF800000u);
}

float teScaleFromAmax(float amax, float fp8_max, bool pow2, float eps, float value_for_inf) {
  if (amax < eps) amax = eps; // NaN compares false and falls through (recipe_common.cuh)
  if (std::isinf(amax) || amax == 0.0f || std::isnan(amax)) return 1.0f;
  float s = fp8_max / amax; // IEEE float32 division, round to nearest (no fast-math in this project)
  if (std::isinf(s)) s = value_for_inf;
  if (pow2) s = tePow2(s);
  return s;
}

float torchaoPow2(float s) {
  // torch.exp2(torch.floor(torch.log2(scale))) on a float32 tensor: every op in float32.
  const float l = std::log2(s); // float overload (log2f)
  return std::exp2(std::floor(l));
}

float torchaoScaleFromAmax(double amax, double fp8_max, bool pow2) {
  // torch.clamp(amax.to(float64), min=EPS): NaN stays NaN.
  const double a = std::isnan(amax) ? amax : (amax < kTorchaoEps ? kTorchaoEps : amax);
  float s = static_cast<float>(fp8_max / a);
  if (pow2) s = torchaoPow2(s);
  return s;
}

float deepGemmDequantScale(float amax, float fp8_max, bool ue8m0) {
  const float a = std::isnan(amax) ? amax : (amax < kDeepGemmAmaxFloor ? kDeepGemmAmaxFloor : amax);
  float sf = a / fp8_max;
  if (ue8m0 && std::isfinite(sf)) {
    const uint32_t b = std::bit_cast<uint32_t>(sf);
    uint32_t e = (b >> 23) & 0xFFu;
    e += (b & 0x7FFFFFu) != 0 ? 1u : 0u;
    if (e < 1) e = 1;
    if (e > 254) e = 254;
    sf = std::bit_cast<float>(e << 23);
  }
  return sf;
}

FlaxScale flaxComputeScale(float amax, float prev_dequant, float fp8_max, int margin) {
  FlaxScale r;
  const float fallback = 1.0f / prev_dequant;
  float sf = (fp8_max / amax) / std::ldexp(1.0f, margin);
  if (!(amax > 0.0f) || !std::isfinite(amax)) {
    sf = fallback;
    r.kept_previous = true;
  }
  r.sf = sf;
  r.dequant = 1.0f / sf;
  return r;
}

uint8_t e8m0RoundUpSaturating(float v) {
  if (std::isnan(v)) return 0xFF;
  if (std::isinf(v)) return 0xFE;
  if (v == 0.0f) return 0x00;
  const uint32_t u = std::bit_cast<uint32_t>(v) & 0x7FFFFFFFu;
  uint32_t exponent = u >> 23;
  const uint32_t mantissa = u & 0x7FFFFFu;
  if ((mantissa > 0 && exponent != 0xFE) && !(exponent == 0 && mantissa <= 0x400000u)) ++exponent;
  return static_cast<uint8_t>(exponent);
}

namespace {
uint8_t clampedMxByte(int e_unb) {
  if (e_unb < -127) e_unb = -127;
  if (e_unb > 127) return 0xFF; // 128 would be the NaN code
  return static_cast<uint8_t>(e_unb + 127);
}
} // namespace

uint8_t mxScaleFloor(float amax, int emax_elem) {
  if (!std::isfinite(amax)) return 0xFF;
  const uint32_t u = std::bit_cast<uint32_t>(amax) & 0x7FFFFFFFu;
  const int floor_exp = static_cast<int>(u >> 23) - 127; // 0 and subnormals read as -127
  return clampedMxByte(floor_exp - emax_elem);
}

uint8_t mxScaleCeil(float amax, int emax_elem) {
  if (!std::isfinite(amax)) return 0xFF;
  const uint32_t u = std::bit_cast<uint32_t>(amax) & 0x7FFFFFFFu;
  const int floor_exp = static_cast<int>(u >> 23) - 127;
  return clampedMxByte(floor_exp + ((u & 0x7FFFFFu) != 0 ? 1 : 0) - emax_elem);
}

uint8_t mxScaleEven(float amax, int emax_elem, int mbits) {
  if (std::isnan(amax)) return 0xFF;
  const uint32_t u = std::bit_cast<uint32_t>(amax) & 0x7FFFFFFFu;
  const uint32_t rounded = (u + (uint32_t(1) << (22 - mbits))) & 0xFF800000u;
  return mxScaleFloor(std::bit_cast<float>(rounded), emax_elem); // inf after the carry → 0xFF
}

uint8_t mxScaleRceil(float amax, float elem_max) {
  const float rcp = 1.0f / elem_max; // TE: RCP = float32(1/fp8_max)
  return e8m0RoundUpSaturating(amax * rcp);
}

uint8_t mxScaleRceilNoSat(float amax, float elem_max) {
  const float v = amax * (1.0f / elem_max);
  if (!std::isfinite(v)) return 0xFF;
  if (v == 0.0f) return 0x00;
  const uint32_t u = std::bit_cast<uint32_t>(v) & 0x7FFFFFFFu;
  uint32_t exponent = u >> 23;
  const uint32_t mantissa = u & 0x7FFFFFu;
  if (mantissa > 0 && !(exponent == 0 && mantissa <= 0x400000u)) ++exponent; // 0xFE + 1 → 0xFF (NaN)
  return static_cast<uint8_t>(exponent);
}

float e8m0ToFloat(uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(code) - 127);
}

float e8m0ReciprocalToFloat(uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, 127 - static_cast<int>(code));
}

} // namespace fp8lab

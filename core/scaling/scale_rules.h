// FP8 Lab — scale rules: how each training stack turns an amax into a scale factor.
//
// Pure functions, one per system, each reproducing that system's arithmetic exactly (float32
// IEEE division for Transformer Engine, float64-then-float32 for torchao, the double reciprocal
// of Flax, E8M0 exponent arithmetic for MX). Each comment names the system's source file and
// function; docs/scaling.md has the table of edge rules. Conventions:
//   quant multiplier   s_q : x_q = cast(x · s_q)      (TE `scale`, torchao `scale`)
//   dequant multiplier s_dq: x  ≈ x_q · s_dq          (TE `scale_inv`, Flax `scale`, DeepGEMM `sf`,
//                                                     cuBLASLt A/B_SCALE_POINTER, MX X = 2^(e−127))
//
// One source for host and device: every function here is FP8LAB_HD (common/host_device.h), so
// core/scaling's quantize() and the GPU block-scale kernel (gpu/quantize_kernels.cu) run the
// same code; blockScaleFromAmax(amax, ScaleRuleParams) is the entry both call.
#pragma once

#include "common/host_device.h"

#include <cstdint>

namespace fp8lab {

/// How a block's amax becomes a scale (the functions below have the arithmetic).
enum class ScaleRule {
  TransformerEngine, ///< teScaleFromAmax: fp32 IEEE division, amax 0/inf/NaN → 1, inf → FLT_MAX
  Torchao,           ///< torchaoScaleFromAmax: EPS 1e-12, float64 division, then float32
  DeepGemm,          ///< deepGemmDequantScale: amax ≥ 1e-4, sf = amax/max (dequant first)
  MxFloor,           ///< OCP MX §6.3 (torchao FLOOR): E8M0 = floor(log2 amax) − emax_elem
  MxCeil,            ///< torchao CEIL: E8M0 = ceil-ish exponent − emax_elem
  MxEven,            ///< torchao EVEN: amax rounded half-up to the element's mantissa, then FLOOR
  MxRceil,           ///< NVIDIA RCEIL (TE, cuBLAS): E8M0 = round_up(amax/max), saturating
  MxRceilTorchao,    ///< torchao RCEIL: the same round-up, not saturating (inf/NaN → 0xFF)
};

/// One block's scale, as a preset computes it from the block amax.
struct BlockScale {
  float quant = 1.0f;   ///< quant multiplier (x · quant); for Divide presets: 1/dequant in float32
  float dequant = 1.0f; ///< dequant multiplier (what a GEMM takes)
  int scale_code = -1;  ///< E8M0 byte for MX rules, else −1
};

/// TE's power-of-two rounding of a quant multiplier: float32 bits & 0xFF800000 (round down,
/// FLT_MAX → 2^127), as in recipe_common.cuh.
FP8LAB_HD inline float tePow2(float s) {
  return hd::bitsFloat(hd::floatBits(s) & 0xFF800000u);
}

/// Transformer Engine `compute_scale_from_amax` (recipe_common.cuh),
/// used by Float8CurrentScaling (per tensor) and Float8BlockScaling (per block).
/// Returns the **quant multiplier** s_q, float32:
///   amax < eps → eps; amax 0 / ±inf / NaN → 1.0; s = fp8_max / amax (IEEE float32 division);
///   s = inf → value_for_inf (FLT_MAX, TE PR #786); pow2 → s with its mantissa bits cleared
///   (bits & 0xFF800000: rounds *down* to a power of two).
FP8LAB_HD inline float teScaleFromAmax(float amax, float fp8_max, bool pow2 = false, float eps = 0.0f,
                                       float value_for_inf = 3.40282347e38f) {
  if (amax < eps) amax = eps; // NaN compares false and falls through (recipe_common.cuh)
  if (hd::isInf(amax) || amax == 0.0f || hd::isNan(amax)) return 1.0f;
  float s = hd::divRn(fp8_max, amax); // IEEE float32 division, as TE's __fdiv_rn
  if (hd::isInf(s)) s = value_for_inf;
  if (pow2) s = tePow2(s);
  return s;
}

/// CUDA's log2f, operation for operation: the float32 sequence of CUDA 13's libdevice
/// `__nv_log2f` (nvvm/libdevice/libdevice.10.bc, the non-flush-to-zero path), which is what
/// torch.log2 runs on a float32 CUDA tensor (ATen's log2 kernel calls ::log2(float) = log2f;
/// Inductor's libdevice.log2 is the same function). Reduction x = 2^e · m with m in
/// [0.7071, 1.4142) (subnormal inputs scaled by 2^23 first), a degree-11 polynomial in m − 1 by
/// fused multiply-adds, plus e. x < 0 → NaN, 0 → −Inf, +Inf → +Inf, NaN → NaN. Within 1 ulp
/// of log2; floor(cudaLog2f(s)) equals floor of the correctly rounded float32 log2 (and of
/// glibc's log2f) for every positive finite float32 s (checked over all 2^31 − 2^23 − 1 of them
/// on the host; tests/core/scaling/test_host_device.cpp checks the binade edges).
FP8LAB_HD inline float cudaLog2f(float a) {
  using hd::fmaRn;
  float x = a, i = 0.0f;
  if (a < 0x1p-126f) { // subnormal (or ≤ 0): scale into the normal range
    x = hd::mulRn(a, 0x1p23f);
    i = -23.0f;
  }
  const uint32_t u = hd::floatBits(x);
  const int32_t e = static_cast<int32_t>((u - 0x3f3504f3u) & 0xff800000u); // 0x3f3504f3 = 0.70710677
  const float m = hd::bitsFloat(u - static_cast<uint32_t>(e));
  const float t = fmaRn(static_cast<float>(e), 0x1p-23f, i);
  const float f = hd::addRn(m, -1.0f); // exact (Sterbenz)
  float p = fmaRn(0x1.8d64fep-4f, f, -0x1.58fe6p-3f);
  p = fmaRn(p, f, 0x1.5f9e54p-3f);
  p = fmaRn(p, f, -0x1.6e9c86p-3f);
  p = fmaRn(p, f, 0x1.a417e8p-3f);
  p = fmaRn(p, f, -0x1.ec7916p-3f);
  p = fmaRn(p, f, 0x1.277f32p-2f);
  p = fmaRn(p, f, -0x1.715492p-2f);
  p = fmaRn(p, f, 0x1.ec7094p-2f);
  p = fmaRn(p, f, -0x1.715476p-1f);
  p = hd::mulRn(hd::mulRn(p, f), f);
  p = fmaRn(f, 0x1.715476p+0f, p);
  float r = hd::addRn(p, t);
  if (u >= 0x7f800000u) r = fmaRn(x, hd::infinity(), hd::infinity()); // +Inf, NaN, x < 0
  if (x == 0.0f) r = -hd::infinity();
  return r;
}

/// torchao's `_round_scale_down_to_power_of_2` (torchao/float8/float8_utils.py):
/// torch.exp2(torch.floor(torch.log2(scale))) on a float32 tensor, as it runs on a CUDA device
/// (torchao's tests of it are CUDA-only): exp2f(floorf(cudaLog2f(s))), exp2f of an integer being
/// the exact power of two. Quirks pinned by torchao's tests: FLT_MAX → inf (log2f rounds to
/// 128), 1+2^-23 → 1, 1−2^-24 → 0.5, 2^-149 → 2^-149, inf → inf, NaN → NaN.
FP8LAB_HD inline float torchaoPow2(float s) {
  if (hd::isNan(s) || hd::isInf(s)) return s; // log2 and exp2 keep NaN and +Inf
  if (s == 0.0f) return 0.0f;                 // log2(0) = −Inf, exp2(−Inf) = 0
  if (s < 0.0f) return hd::quietNan();        // log2 of a negative number
  const float l = cudaLog2f(s);               // finite, in [−149, 128]
  int e = static_cast<int>(l);
  if (static_cast<float>(e) > l) --e; // floor
  return hd::pow2f(e);                // 2^128 → +Inf
}

/// The amax floor of torchao (`EPS` in float8_utils.py).
inline constexpr double kTorchaoEps = 1e-12;
/// The amax floor of DeepGEMM / DeepSeek-V3 per-block casts.
inline constexpr float kDeepGemmAmaxFloor = 1e-4f;

/// torchao `amax_to_scale` (torchao/float8/float8_utils.py).
/// Returns the **quant multiplier**: float32(float64(fp8_max) / max(float64(amax), 1e-12)),
/// then, if pow2, torchaoPow2(). amax 0 → fp8_max·1e12; amax inf → 0; amax NaN → NaN.
FP8LAB_HD inline float torchaoScaleFromAmax(double amax, double fp8_max, bool pow2 = false) {
  // torch.clamp(amax.to(float64), min=EPS): NaN stays NaN.
  const double a = hd::isNan(amax) ? amax : (amax < kTorchaoEps ? kTorchaoEps : amax);
  float s = static_cast<float>(hd::divRn(fp8_max, a));
  if (pow2) s = torchaoPow2(s);
  return s;
}

/// DeepGEMM `per_token_cast_to_fp8` / `per_block_cast_to_fp8` (deep_gemm/utils/math.py).
/// Returns the **dequant multiplier** sf = max(amax, 1e-4) / fp8_max in
/// float32; with ue8m0, sf is rounded *up* to a power of two (exponent + (mantissa ≠ 0),
/// clamped to biased [1, 254]). NaN amax gives NaN (not handled by DeepGEMM).
FP8LAB_HD inline float deepGemmDequantScale(float amax, float fp8_max, bool ue8m0 = false) {
  const float a = hd::isNan(amax) ? amax : (amax < kDeepGemmAmaxFloor ? kDeepGemmAmaxFloor : amax);
  float sf = hd::divRn(a, fp8_max);
  if (ue8m0 && hd::isFinite(sf)) {
    const uint32_t b = hd::floatBits(sf);
    uint32_t e = (b >> 23) & 0xFFu;
    e += (b & 0x7FFFFFu) != 0 ? 1u : 0u;
    if (e < 1) e = 1;
    if (e > 254) e = 254;
    sf = hd::bitsFloat(e << 23);
  }
  return sf;
}

/// Flax `compute_scale` (flax/linen/fp8_ops.py), float32 throughout.
/// Inputs: window amax, the previous stored scale (dequant), fp8_max, margin.
/// sf = (fp8_max / amax) / 2^margin, or 1/prev when amax is not > 0 or not finite; the result
/// is the **dequant multiplier** 1/sf (a double reciprocal: can differ from amax/fp8_max by an
/// ulp). No clamp: a tiny amax gives sf = inf and a stored scale of 0.
struct FlaxScale {
  float dequant = 1.0f;       ///< stored scale, 1/sf
  float sf = 1.0f;            ///< the quant multiplier computed on the way
  bool kept_previous = false; ///< the fallback 1/prev was taken
};
FP8LAB_HD inline FlaxScale flaxComputeScale(float amax, float prev_dequant, float fp8_max, int margin = 0) {
  FlaxScale r;
  const float fallback = hd::divRn(1.0f, prev_dequant);
  float sf = hd::divRn(hd::divRn(fp8_max, amax), hd::pow2f(margin));
  if (!(amax > 0.0f) || !hd::isFinite(amax)) {
    sf = fallback;
    r.kept_previous = true;
  }
  r.sf = sf;
  r.dequant = hd::divRn(1.0f, sf);
  return r;
}

// ---- E8M0 (MX) scales --------------------------------------------------------------------------

namespace detail {
/// An unbiased MX scale exponent as its E8M0 byte: clamped below at −127; above 127 → 0xFF.
FP8LAB_HD inline uint8_t clampedMxByte(int e_unb) {
  if (e_unb < -127) e_unb = -127;
  if (e_unb > 127) return 0xFF; // 128 would be the NaN code
  return static_cast<uint8_t>(e_unb + 127);
}
} // namespace detail

/// Transformer Engine `float_to_e8m0` (ptx_arch_spec.cuh; cvt.rp.satfinite.ue8m0x2.f32):
/// round |v| up to a power of two, saturating. NaN → 0xFF, ±inf → 0xFE, 0 → 0x00; otherwise the
/// float32 biased exponent, +1 when a mantissa bit is set, except at exponent 0xFE (saturates)
/// and for v ≤ 2^-127 (stays 0x00).
FP8LAB_HD inline uint8_t e8m0RoundUpSaturating(float v) {
  if (hd::isNan(v)) return 0xFF;
  if (hd::isInf(v)) return 0xFE;
  if (v == 0.0f) return 0x00;
  const uint32_t u = hd::floatBits(v) & 0x7FFFFFFFu;
  uint32_t exponent = u >> 23;
  const uint32_t mantissa = u & 0x7FFFFFu;
  if ((mantissa > 0 && exponent != 0xFE) && !(exponent == 0 && mantissa <= 0x400000u)) ++exponent;
  return static_cast<uint8_t>(exponent);
}

/// MX shared-scale byte, OCP MX v1.0 §6.3 FLOOR rule as torchao's ScaleCalculationMode.FLOOR
/// (torchao/prototype/mx_formats): e = floor_log2(amax) − emax_elem read from the float32
/// exponent bits (0 and float32 subnormals read as −127), clamped to [−127, 127]; NaN/inf amax
/// → 0xFF. Elements are then x · 2^-e and saturate (amax mantissa > 1.75 clips in E4M3).
FP8LAB_HD inline uint8_t mxScaleFloor(float amax, int emax_elem) {
  if (!hd::isFinite(amax)) return 0xFF;
  const uint32_t u = hd::floatBits(amax) & 0x7FFFFFFFu;
  const int floor_exp = static_cast<int>(u >> 23) - 127; // 0 and subnormals read as -127
  return detail::clampedMxByte(floor_exp - emax_elem);
}

/// torchao ScaleCalculationMode.CEIL: floor_log2(amax) + (mantissa ≠ 0) − emax_elem, clamped
/// like FLOOR; NaN/inf → 0xFF.
FP8LAB_HD inline uint8_t mxScaleCeil(float amax, int emax_elem) {
  if (!hd::isFinite(amax)) return 0xFF;
  const uint32_t u = hd::floatBits(amax) & 0x7FFFFFFFu;
  const int floor_exp = static_cast<int>(u >> 23) - 127;
  return detail::clampedMxByte(floor_exp + ((u & 0x7FFFFFu) != 0 ? 1 : 0) - emax_elem);
}

/// torchao ScaleCalculationMode.EVEN (torchao/prototype/mx_formats/mx_tensor.py, `to_mx`):
/// before FLOOR, the float32 bits of amax become (bits + 2^(22 − mbits)) & 0xFF800000, i.e. the
/// significand is rounded half-up to the element's mantissa width `mbits` and then truncated to
/// a power of two; then mxScaleFloor(). The significand carries to the next binade when it is ≥
/// 2 − 2^-(mbits+1): E4M3 / E2M3 (mbits 3) 1.9375, E5M2 / E3M2 (mbits 2) 1.875, E2M1 (mbits 1)
/// 1.75. Example: E2M1 amax 7 = 1.75·2^2 carries to 8 → e = 3 − 2 = 1 → byte 128 (FLOOR: 127).
/// NaN amax → 0xFF (torchao restores the NaN after the bit trick); ±inf, or an amax whose carry
/// reaches the float32 inf pattern (≥ 2^128·(1 − 2^-(mbits+2))) → 0xFF; 0 → 0x00.
FP8LAB_HD inline uint8_t mxScaleEven(float amax, int emax_elem, int mbits) {
  if (hd::isNan(amax)) return 0xFF;
  const uint32_t u = hd::floatBits(amax) & 0x7FFFFFFFu;
  const uint32_t rounded = (u + (uint32_t(1) << (22 - mbits))) & 0xFF800000u;
  return mxScaleFloor(hd::bitsFloat(rounded), emax_elem); // inf after the carry → 0xFF
}

/// NVIDIA RCEIL (TE MXFP8BlockScaling, cuBLAS): e8m0RoundUpSaturating(amax · float32(1/max)),
/// the product rounded once to float32. Never clips: amax / 2^(e−127) ≤ max. TE saturates
/// (inf → 0xFE); torchao's RCEIL gives 0xFF there (mxScaleRceilNoSat).
FP8LAB_HD inline uint8_t mxScaleRceil(float amax, float elem_max) {
  const float rcp = hd::divRn(1.0f, elem_max); // TE: RCP = float32(1/fp8_max)
  return e8m0RoundUpSaturating(hd::mulRn(amax, rcp));
}

/// torchao ScaleCalculationMode.RCEIL: the same round-up of amax · float32(1/max) as
/// mxScaleRceil() but without saturation: inf / NaN (and anything rounding past 2^127) → 0xFF,
/// so the whole block dequantizes to NaN (torchao/prototype/mx_formats).
FP8LAB_HD inline uint8_t mxScaleRceilNoSat(float amax, float elem_max) {
  const float v = hd::mulRn(amax, hd::divRn(1.0f, elem_max));
  if (!hd::isFinite(v)) return 0xFF;
  if (v == 0.0f) return 0x00;
  const uint32_t u = hd::floatBits(v) & 0x7FFFFFFFu;
  uint32_t exponent = u >> 23;
  const uint32_t mantissa = u & 0x7FFFFFu;
  if (mantissa > 0 && !(exponent == 0 && mantissa <= 0x400000u)) ++exponent; // 0xFE + 1 → 0xFF (NaN)
  return static_cast<uint8_t>(exponent);
}

/// 2^(code − 127) as float32 (exact, 2^-127 is a float32 subnormal); NaN for 0xFF.
FP8LAB_HD inline float e8m0ToFloat(uint8_t code) {
  return code == 0xFF ? hd::quietNan() : hd::pow2f(static_cast<int>(code) - 127);
}
/// 2^(127 − code) as float32: the exact power-of-two quant multiplier of an E8M0 scale (TE's
/// exp2f_rcp); NaN for 0xFF.
FP8LAB_HD inline float e8m0ReciprocalToFloat(uint8_t code) {
  return code == 0xFF ? hd::quietNan() : hd::pow2f(127 - static_cast<int>(code));
}

// ---- one rule, one block -----------------------------------------------------------------------

/// A scale rule with the element format's numbers it needs: plain data, passed to the device by
/// value. Build it from a ScalingConfig and a Format with scaleRuleParams() (scaling.h).
struct ScaleRuleParams {
  ScaleRule rule = ScaleRule::TransformerEngine;
  /// The element format's max finite value; for the TE rule times 2^−margin (the scaled_max of
  /// ScalingConfig::margin).
  float fp8_max = 448.0f;
  int emax_elem = 8;         ///< MX FLOOR / CEIL / EVEN: unbiased exponent of the element's max
  int mbits_elem = 3;        ///< MX EVEN: mantissa bits of the element format
  bool pow2 = false;         ///< TE mask ↓, torchao exp2(floor(log2)) ↓, DeepGEMM UE8M0 ↑ (ScalingConfig::pow2)
  float amax_epsilon = 0.0f; ///< TE only
};

/// The scale of one block of amax `amax` (max |x| over the block; NaN where the rule's amax
/// propagates NaN and the block holds one). The float32 rules see float32(amax) (exact for
/// float32 tensors); torchao divides in float64 (float64 tensors keep their amax). For the Divide
/// presets (Flax-style x / dequant) quant is 1/dequant in float32; MX rules set scale_code.
FP8LAB_HD inline BlockScale blockScaleFromAmax(double amax, const ScaleRuleParams& p) {
  const float af = static_cast<float>(amax);
  BlockScale b;
  switch (p.rule) {
  case ScaleRule::TransformerEngine:
    b.quant = teScaleFromAmax(af, p.fp8_max, p.pow2, p.amax_epsilon);
    b.dequant = hd::divRn(1.0f, b.quant); // TE scale_inv = __frcp_rn(scale)
    break;
  case ScaleRule::Torchao:
    b.quant = torchaoScaleFromAmax(amax, static_cast<double>(p.fp8_max), p.pow2);
    b.dequant = hd::divRn(1.0f, b.quant); // torch float32 reciprocal at _scaled_mm time
    break;
  case ScaleRule::DeepGemm:
    b.dequant = deepGemmDequantScale(af, p.fp8_max, p.pow2);
    b.quant = hd::divRn(1.0f, b.dequant); // DeepGEMM helpers: x * (1.0 / sf) in float32
    break;
  case ScaleRule::MxFloor:
  case ScaleRule::MxCeil:
  case ScaleRule::MxEven:
  case ScaleRule::MxRceil:
  case ScaleRule::MxRceilTorchao: {
    uint8_t code = 0;
    if (p.rule == ScaleRule::MxFloor)
      code = mxScaleFloor(af, p.emax_elem);
    else if (p.rule == ScaleRule::MxCeil)
      code = mxScaleCeil(af, p.emax_elem);
    else if (p.rule == ScaleRule::MxEven)
      code = mxScaleEven(af, p.emax_elem, p.mbits_elem);
    else if (p.rule == ScaleRule::MxRceil)
      code = mxScaleRceil(af, p.fp8_max);
    else
      code = mxScaleRceilNoSat(af, p.fp8_max);
    b.scale_code = code;
    b.dequant = e8m0ToFloat(code);
    b.quant = e8m0ReciprocalToFloat(code);
    break;
  }
  }
  return b;
}

} // namespace fp8lab

// FP8 Lab — scale rules: how each training stack turns an amax into a scale factor.
//
// Pure functions, one per system, each reproducing that system's arithmetic exactly (float32
// IEEE division for Transformer Engine, float64-then-float32 for torchao, the double reciprocal
// of Flax, E8M0 exponent arithmetic for MX). Each comment names the system's source file and
// function; docs/scaling.md has the table of edge rules. Conventions:
//   quant multiplier   s_q : x_q = cast(x · s_q)      (TE `scale`, torchao `scale`)
//   dequant multiplier s_dq: x  ≈ x_q · s_dq          (TE `scale_inv`, Flax `scale`, DeepGEMM `sf`,
//                                                     cuBLASLt A/B_SCALE_POINTER, MX X = 2^(e−127))
#pragma once

#include <cstdint>

namespace fp8lab {

/// Transformer Engine `compute_scale_from_amax` (recipe_common.cuh),
/// used by Float8CurrentScaling (per tensor) and Float8BlockScaling (per block).
/// Returns the **quant multiplier** s_q, float32:
///   amax < eps → eps; amax 0 / ±inf / NaN → 1.0; s = fp8_max / amax (IEEE float32 division);
///   s = inf → value_for_inf (FLT_MAX, TE PR #786); pow2 → s with its mantissa bits cleared
///   (bits & 0xFF800000: rounds *down* to a power of two).
float teScaleFromAmax(float amax, float fp8_max, bool pow2 = false, float eps = 0.0f,
                      float value_for_inf = 3.40282347e38f);

/// TE's power-of-two rounding of a quant multiplier: float32 bits & 0xFF800000 (round down,
/// FLT_MAX → 2^127), as in recipe_common.cuh.
float tePow2(float s);

/// torchao `amax_to_scale` (torchao/float8/float8_utils.py).
/// Returns the **quant multiplier**: float32(float64(fp8_max) / max(float64(amax), 1e-12)),
/// then, if pow2, torchaoPow2(). amax 0 → fp8_max·1e12; amax inf → 0; amax NaN → NaN.
float torchaoScaleFromAmax(double amax, double fp8_max, bool pow2 = false);

/// torchao's `_round_scale_down_to_power_of_2`: exp2(floor(log2(s))) in float32. Quirks pinned
/// by torchao's tests: FLT_MAX → inf (log2f rounds to 128), 1+2^-23 → 1, 1−2^-24 → 0.5.
float torchaoPow2(float s);

/// The amax floor of torchao (`EPS` in float8_utils.py).
inline constexpr double kTorchaoEps = 1e-12;
/// The amax floor of DeepGEMM / DeepSeek-V3 per-block casts.
inline constexpr float kDeepGemmAmaxFloor = 1e-4f;

/// DeepGEMM `per_token_cast_to_fp8` / `per_block_cast_to_fp8` (deep_gemm/utils/math.py).
/// Returns the **dequant multiplier** sf = max(amax, 1e-4) / fp8_max in
/// float32; with ue8m0, sf is rounded *up* to a power of two (exponent + (mantissa ≠ 0),
/// clamped to biased [1, 254]). NaN amax gives NaN (not handled by DeepGEMM).
float deepGemmDequantScale(float amax, float fp8_max, bool ue8m0 = false);

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
FlaxScale flaxComputeScale(float amax, float prev_dequant, float fp8_max, int margin = 0);

// ---- E8M0 (MX) scales --------------------------------------------------------------------------

/// Transformer Engine `float_to_e8m0` (ptx_arch_spec.cuh; cvt.rp.satfinite.ue8m0x2.f32):
/// round |v| up to a power of two, saturating. NaN → 0xFF, ±inf → 0xFE, 0 → 0x00; otherwise the
/// float32 biased exponent, +1 when a mantissa bit is set, except at exponent 0xFE (saturates)
/// and for v ≤ 2^-127 (stays 0x00).
uint8_t e8m0RoundUpSaturating(float v);

/// MX shared-scale byte, OCP MX v1.0 §6.3 FLOOR rule as torchao's ScaleCalculationMode.FLOOR
/// (torchao/prototype/mx_formats): e = floor_log2(amax) − emax_elem read from the float32
/// exponent bits (0 and float32 subnormals read as −127), clamped to [−127, 127]; NaN/inf amax
/// → 0xFF. Elements are then x · 2^-e and saturate (amax mantissa > 1.75 clips in E4M3).
uint8_t mxScaleFloor(float amax, int emax_elem);

/// torchao ScaleCalculationMode.CEIL: floor_log2(amax) + (mantissa ≠ 0) − emax_elem, clamped
/// like FLOOR; NaN/inf → 0xFF.
uint8_t mxScaleCeil(float amax, int emax_elem);

/// torchao ScaleCalculationMode.EVEN (torchao/prototype/mx_formats/mx_tensor.py, `to_mx`):
/// before FLOOR, the float32 bits of amax become (bits + 2^(22 − mbits)) & 0xFF800000, i.e. the
/// significand is rounded half-up to the element's mantissa width `mbits` and then truncated to
/// a power of two; then mxScaleFloor(). The significand carries to the next binade when it is ≥
/// 2 − 2^-(mbits+1): E4M3 / E2M3 (mbits 3) 1.9375, E5M2 / E3M2 (mbits 2) 1.875, E2M1 (mbits 1)
/// 1.75. Example: E2M1 amax 7 = 1.75·2^2 carries to 8 → e = 3 − 2 = 1 → byte 128 (FLOOR: 127).
/// NaN amax → 0xFF (torchao restores the NaN after the bit trick); ±inf, or an amax whose carry
/// reaches the float32 inf pattern (≥ 2^128·(1 − 2^-(mbits+2))) → 0xFF; 0 → 0x00.
uint8_t mxScaleEven(float amax, int emax_elem, int mbits);

/// NVIDIA RCEIL (TE MXFP8BlockScaling, cuBLAS): e8m0RoundUpSaturating(amax · float32(1/max)),
/// the product rounded once to float32. Never clips: amax / 2^(e−127) ≤ max. TE saturates
/// (inf → 0xFE); torchao's RCEIL would give 0xFF there (documented, not modelled).
uint8_t mxScaleRceil(float amax, float elem_max);

/// torchao ScaleCalculationMode.RCEIL: the same round-up of amax · float32(1/max) as
/// mxScaleRceil() but without saturation: inf / NaN (and anything rounding past 2^127) → 0xFF,
/// so the whole block dequantizes to NaN (torchao/prototype/mx_formats).
uint8_t mxScaleRceilNoSat(float amax, float elem_max);

/// 2^(code − 127) as float32 (exact, 2^-127 is a float32 subnormal); NaN for 0xFF.
float e8m0ToFloat(uint8_t code);
/// 2^(127 − code) as float32: the exact power-of-two quant multiplier of an E8M0 scale (TE's
/// exp2f_rcp); NaN for 0xFF.
float e8m0ReciprocalToFloat(uint8_t code);

} // namespace fp8lab

// FP8 Lab GPU core — the delayed-scaling update (amax history roll + scale from the history),
// one function for host and device, with each preset's edge rules. Semantics of Flax
// fp8_ops.update_fp8_meta, TransformerEngine delayed_scaling.cu kernel_bulk (the fused default
// path) and TE's JAX DelayedScaleQuantizer.
//
// History layout (both presets): hist[0 .. L−1] of one tensor, element i at hist[i·stride].
// Chronological order after an update is hist[1:] + [hist[0]] (oldest first).
//
//  Flax (state scale = DEQUANT multiplier, quantize q = clip(x / scale)):
//     a     = max(hist)                     NaN propagates (jnp.max)
//     sf    = fp8_max / a / 2^margin        float32
//     if !(a > 0) or !isfinite(a): sf = 1 / scale_prev
//     scale = 1 / sf                        (stored; no clamp: tiny a gives scale 0)
//     hist  = roll_left(hist); hist[0] = amax_now      (the window excludes the current step)
//  TransformerEngine fused (state scale = QUANT multiplier, quantize q = satcast(x · scale)):
//     hist[0] = hist[0] == 0 ? amax_now : max(hist[0], amax_now)   (record into the staging slot)
//     cur   = hist[0]
//     if cur != 0: w = max over cur and hist[1..L−1]; hist = roll_left (cur → hist[L−1]),
//                  then hist[0] = 0
//     The max propagates NaN when params.nan_propagates (default: the project's CPU reference,
//     core/scaling/delayed_scaling.cpp, so a NaN amax keeps the previous scale) or ignores it
//     (false: TE's kernel_bulk uses fmaxf).
//     else:        w = 0, no roll (PR #825: a module that did not run keeps its history)
//     a     = w (algo max) or cur (most recent)
//     if isfinite(a) and a > 0: scale = fp8_max·2^−margin / a; scale = FLT_MAX if that is inf
//     else scale unchanged
//     scale_inv = 1 / scale                 (what the GEMM gets)
//  TE JAX (DelayedScaleQuantizer.update): hist[0] = amax_now, a = max(hist) (or hist[0]), same
//     rule but no FLT_MAX clamp, then roll left and zero hist[0] unconditionally.
#pragma once

#include "fp8_encode.cuh"

#include <cfloat>
#include <cmath>

namespace fp8lab::gpu {

enum class DelayedPreset : int { Flax = 0, TransformerEngine = 1, TransformerEngineJax = 2 };
enum class AmaxAlgo : int { Max = 0, MostRecent = 1 };

/// Parameters of one delayed-scaling update (plain data, passed to the kernel by value).
struct DelayedScalingParams {
  DelayedPreset preset = DelayedPreset::TransformerEngine;
  AmaxAlgo algo = AmaxAlgo::Max;
  float fp8_max = 448.0f;     ///< 448 (E4M3) or 57344 (E5M2)
  int margin = 0;             ///< power-of-two headroom (Flax: always 0)
  bool nan_propagates = true; ///< TE presets: max propagates NaN (CPU reference) or ignores it (fmaxf)
};

namespace detail {
FP8LAB_HD bool isFiniteF(float x) {
  return (floatBits(x) & 0x7f800000u) != 0x7f800000u;
}
FP8LAB_HD bool isNanF(float x) {
  return (floatBits(x) & 0x7fffffffu) > 0x7f800000u;
}
/// fmaxf semantics (IEEE maxNum): a NaN operand is ignored.
FP8LAB_HD float maxNum(float a, float b) {
  if (isNanF(a)) return b;
  if (isNanF(b)) return a;
  return a > b ? a : b;
}
/// jnp.max semantics: NaN propagates.
FP8LAB_HD float maxProp(float a, float b) {
  if (isNanF(a) || isNanF(b)) return a + b; // a NaN
  return a > b ? a : b;
}
/// 2^−margin as float32 (exact for |margin| ≤ 126).
FP8LAB_HD float pow2neg(int margin) {
  const int e = 127 - margin;
  return bitsFloat(static_cast<uint32_t>(e < 1 ? 1 : (e > 254 ? 254 : e)) << 23);
}
} // namespace detail

/// One tensor's update. `scale` is read (previous) and written (new) in the preset's
/// convention (Flax: dequant; TE: quant). `scale_inv` (may be null) receives 1/scale.
FP8LAB_HD void delayedScalingUpdate(float* hist, int L, int stride, float* scale, float* scale_inv, float amax_now,
                                    const DelayedScalingParams& p) {
  using namespace detail;
  if (L < 1) return;
  if (p.preset == DelayedPreset::Flax) {
    float a = hist[0];
    for (int i = 1; i < L; ++i) a = maxProp(a, hist[i * stride]);
    const float prev = *scale;
    float sf = divRn(divRn(p.fp8_max, a), bitsFloat(static_cast<uint32_t>(127 + p.margin) << 23));
    if (!(a > 0.0f)) sf = divRn(1.0f, prev);
    if (!isFiniteF(a)) sf = divRn(1.0f, prev);
    *scale = divRn(1.0f, sf);
    const float first = hist[0];
    for (int i = 0; i + 1 < L; ++i) hist[i * stride] = hist[(i + 1) * stride];
    hist[(L - 1) * stride] = first;
    hist[0] = amax_now;
  } else if (p.preset == DelayedPreset::TransformerEngine) {
    const bool prop = p.nan_propagates;
    const float h0 = hist[0];
    const float cur = h0 == 0.0f ? amax_now : (prop ? maxProp(h0, amax_now) : maxNum(h0, amax_now));
    float w = 0.0f;
    if (cur != 0.0f) {
      w = cur;
      for (int i = 1; i < L; ++i) w = prop ? maxProp(w, hist[i * stride]) : maxNum(w, hist[i * stride]);
      for (int i = 0; i + 1 < L; ++i) hist[i * stride] = hist[(i + 1) * stride];
      hist[(L - 1) * stride] = cur;
      hist[0] = 0.0f;
    } else {
      hist[0] = cur;
    }
    const float a = p.algo == AmaxAlgo::Max ? w : cur;
    if (isFiniteF(a) && a > 0.0f) {
      float s = divRn(mulRn(p.fp8_max, pow2neg(p.margin)), a);
      if (!isFiniteF(s)) s = FLT_MAX;
      *scale = s;
    }
  } else { // TransformerEngineJax
    hist[0] = amax_now;
    float a = hist[0];
    if (p.algo == AmaxAlgo::Max)
      for (int i = 1; i < L; ++i) a = maxProp(a, hist[i * stride]);
    const float sf = divRn(divRn(p.fp8_max, a), bitsFloat(static_cast<uint32_t>(127 + p.margin) << 23));
    if (a > 0.0f && isFiniteF(a)) *scale = sf;
    const float first = hist[0];
    for (int i = 0; i + 1 < L; ++i) hist[i * stride] = hist[(i + 1) * stride];
    hist[(L - 1) * stride] = first;
    hist[0] = 0.0f;
  }
  if (scale_inv) *scale_inv = divRn(1.0f, *scale);
}

} // namespace fp8lab::gpu

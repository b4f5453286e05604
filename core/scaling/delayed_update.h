// FP8 Lab — the delayed-scaling update of one tensor: the amax history roll and the scale from
// the history, with each system's edge rules. One source for host and device (FP8LAB_HD,
// common/host_device.h): DelayedScaling (delayed_scaling.h) keeps its state in a vector and calls
// these; the GPU kernel delayedScalingUpdateBatch (gpu/quantize_kernels.h) updates many tensors
// at once with the same functions. Semantics of Flax fp8_ops.update_fp8_meta, Transformer Engine
// delayed_scaling.cu kernel_bulk (the fused default path) and TE's JAX DelayedScaleQuantizer
// (docs/scaling.md, "Delayed scaling").
//
// History layout (every preset): hist[0 .. L−1] of one tensor, element i at hist[i·stride].
// Chronological order after an update is hist[1:] + [hist[0]] (oldest first).
//
//  Flax (stored scale = DEQUANT multiplier, quantize q = clip(x / scale)):
//     a     = max(hist)                     NaN propagates (jnp.max)
//     flaxComputeScale(a, scale_prev, fp8_max, margin) (scale_rules.h): scale = 1/sf, or
//           1/(1/scale_prev) when a is not > 0 or not finite; no clamp (tiny a gives scale 0)
//     hist  = roll_left(hist); hist[0] = amax_now      (the window excludes the current step)
//  TransformerEngine (stored scale = QUANT multiplier, quantize q = satcast(x · scale)):
//     record: hist[0] = hist[0] == 0 ? amax_now : max(hist[0], amax_now)   (the staging slot)
//     update: cur = hist[0]
//       if cur != 0: w = max over cur and hist[1..L−1]; hist = roll_left (cur → hist[L−1]),
//                    then hist[0] = 0
//       else:        w = 0, no roll (PR #825: a module that did not run keeps its history)
//       a = w (algo max) or cur (most recent)
//       if isfinite(a) and a > 0: scale = fp8_max·2^−margin / a; scale = FLT_MAX if that is inf
//       else scale unchanged
//  TE JAX (DelayedScaleQuantizer.update): hist[0] = amax_now, then as TE but it always rolls
//     (an amax of 0 enters the history), sf = (fp8_max / a) / 2^margin and no FLT_MAX clamp.
//
// The window max propagates NaN in every preset: a NaN amax in the window keeps the previous
// scale until it rolls out (Flax's jnp.max; TE's pinned "amax NaN → previous scale",
// test_scale_update_numeric_scenarios). TE's kernel_bulk takes that max with fmaxf, which would
// skip a NaN already in the history; in TE PyTorch no NaN reaches the history (the cast kernel's
// amax skips NaN elements with the same fmaxf), so the two readings differ only for amax
// sequences given by hand (docs/scaling.md states the choice).
#pragma once

#include "common/host_device.h"
#include "scaling/scale_rules.h"

namespace fp8lab {

/// Which system's delayed scaling to reproduce.
enum class DelayedPreset {
  Flax, ///< flax/linen/fp8_ops.py update_fp8_meta + compute_scale
  TE,   ///< TransformerEngine DelayedScaling, fused update kernel_bulk
  /// TransformerEngine JAX DelayedScaleQuantizer: like TE, but update(a) overwrites slot 0,
  /// always rolls (also for amax 0, which then enters the history) and does not clamp an
  /// infinite scale to FLT_MAX; sf = (max/amax)/2^margin.
  TEJax,
};

/// How the window's amax is chosen (TE `amax_compute_algo`; Flax only has Max).
enum class AmaxAlgo {
  Max,        ///< max over the window
  MostRecent, ///< the newest amax only
};

/// The settings of one update (plain data, passed to the device by value).
struct DelayedUpdateParams {
  DelayedPreset preset = DelayedPreset::TE;
  AmaxAlgo algo = AmaxAlgo::Max; ///< Flax: Max only
  float fp8_max = 448.0f;        ///< the format's max finite: 448 (E4M3FN), 57344 (E5M2)
  int margin = 0;                ///< power-of-two headroom, in [−126, 126]
};

/// What one update did.
struct DelayedStep {
  float amax = 0;             ///< this step's amax (TE: the staged slot, max of the step's records)
  float window_amax = 0;      ///< the amax the scale rule saw (max of the window, or most recent)
  bool kept_previous = false; ///< an edge rule kept the old scale (amax 0, inf, NaN, empty window)
  bool clamped = false;       ///< TE: the scale overflowed and was clamped to FLT_MAX
  bool rolled = true;         ///< the history moved (TE's fused update skips the roll when amax is 0)
};

namespace detail {
/// hist = roll_left(hist): hist[i] = hist[i+1], hist[L−1] = the old hist[0].
FP8LAB_HD inline void rollLeft(float* hist, int L, int stride) {
  const float first = hist[0];
  for (int i = 0; i + 1 < L; ++i) hist[i * stride] = hist[(i + 1) * stride];
  hist[(L - 1) * stride] = first;
}
/// max over hist[from .. L−1] and `start`, NaN propagating.
FP8LAB_HD inline float windowMax(const float* hist, int from, int L, int stride, float start) {
  float w = start;
  for (int i = from; i < L; ++i) w = hd::maxPropagateNan(w, hist[i * stride]);
  return w;
}
} // namespace detail

/// TE: max-reduces an amax into the staging slot hist[0] (as the cast kernel's atomic max;
/// several uses in one step combine by max; an empty slot, 0, takes the amax as it is).
FP8LAB_HD inline void delayedRecord(float* hist, float amax) {
  hist[0] = hist[0] == 0.0f ? amax : hd::maxPropagateNan(hist[0], amax);
}

/// TE and TE JAX: the end-of-step update from the staged amax hist[0] (see the file comment).
/// `scale` is the stored quant multiplier, read and written.
FP8LAB_HD inline DelayedStep delayedUpdateStaged(float* hist, int L, int stride, float* scale,
                                                 const DelayedUpdateParams& p) {
  DelayedStep r;
  const float cur = hist[0];
  r.amax = cur;
  const bool jax = p.preset == DelayedPreset::TEJax;
  float window = 0.0f;
  if (cur != 0.0f || jax) { // PyTorch fused: "module did not run" → no roll (TE PR #825); JAX always rolls
    window = detail::windowMax(hist, 1, L, stride, cur);
    detail::rollLeft(hist, L, stride);
    hist[0] = 0.0f; // staging slot cleared
    r.rolled = true;
  } else {
    r.rolled = false;
  }
  const float amax = p.algo == AmaxAlgo::Max ? window : cur;
  r.window_amax = amax;
  if (hd::isFinite(amax) && amax > 0.0f) {
    float s = jax ? hd::divRn(hd::divRn(p.fp8_max, amax), hd::pow2f(p.margin)) // JAX: no clamp
                  : hd::divRn(hd::mulRn(p.fp8_max, hd::pow2f(-p.margin)), amax);
    if (hd::isInf(s) && !jax) {
      s = hd::floatMax(); // TE PR #786
      r.clamped = true;
    }
    *scale = s;
  } else {
    r.kept_previous = true;
  }
  return r;
}

/// Flax update_fp8_meta: the scale from the old window (flaxComputeScale), then roll and write
/// amax_now into hist[0]. `scale` is the stored dequant multiplier, read and written.
FP8LAB_HD inline DelayedStep delayedUpdateFlax(float* hist, int L, int stride, float* scale, float amax_now,
                                               const DelayedUpdateParams& p) {
  DelayedStep r;
  r.amax = amax_now;
  const float window = detail::windowMax(hist, 1, L, stride, hist[0]); // jnp.max
  r.window_amax = window;
  const FlaxScale fs = flaxComputeScale(window, *scale, p.fp8_max, p.margin);
  r.kept_previous = fs.kept_previous;
  detail::rollLeft(hist, L, stride);
  hist[0] = amax_now;
  *scale = fs.dequant;
  r.rolled = true;
  return r;
}

/// One step of one tensor with this step's amax, in the preset's order: Flax: scale from the old
/// window, then roll and write; TE: record then update; TE JAX: hist[0] = amax, then update.
/// hist: L values at stride `stride` (L ≥ 1); scale: the preset's stored convention (Flax
/// dequant, TE quant), read and written.
FP8LAB_HD inline DelayedStep delayedScalingUpdate(float* hist, int L, int stride, float* scale, float amax_now,
                                                  const DelayedUpdateParams& p) {
  if (p.preset == DelayedPreset::Flax) return delayedUpdateFlax(hist, L, stride, scale, amax_now, p);
  if (p.preset == DelayedPreset::TEJax)
    hist[0] = amax_now; // DelayedScaleQuantizer.update writes the amax into slot 0
  else
    delayedRecord(hist, amax_now);
  return delayedUpdateStaged(hist, L, stride, scale, p);
}

} // namespace fp8lab

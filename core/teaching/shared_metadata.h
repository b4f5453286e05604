// FP8 Lab — shared FP8 metadata used by several branches in one step, combined by max (Flax's
// `fp32_max_grad`) or by sum (what plain autodiff does to a parameter used twice).
//
// Source: Flax's FP8 guide (docs/guides/quantization/fp8_basics, "Accumulate gradient of FP8
// params") and flax/linen/fp8_ops.py. In Flax the new scale and amax history of a delayed-scaling
// state come back as the *gradients* of the old ones (the `_overwrite_with_gradient` collection),
// so a state used by two branches (pipeline microbatches, a scanned layer) gets the sum of the
// two updates unless its dtype is `fp32_max_grad`, whose gradients combine by max. The guide's
// example: inputs 2.0 and 3.0 on a zero history of 1024 give scale 1.0 and history [3, 0, …]
// with max, 2.0 and [5, 0, …] with sum. Each use starts from the same state, so with sum the
// older history entries double at every step and the window amax grows as 2^t until the history
// is full, making the scale far too coarse.
#pragma once

#include "formats/format.h"

#include <array>
#include <cstdint>
#include <vector>

namespace fp8lab {

/// The experiment: `uses` branches share one Flax delayed-scaling state (E4M3FN by default) for
/// `steps` steps; branch i quantizes, every step, a tensor of `elements` normal values whose amax
/// is use_amax[i] (tensorWithAmax, seed + i).
struct SharedMetaConfig {
  std::vector<float> use_amax = {2.0f, 3.0f}; ///< one amax per branch, each finite > 0 (≥ 1 branch)
  int history_len = 16;                       ///< Flax amax_history length, ≥ 1
  int steps = 24;                             ///< ≥ 1
  const Format* format = &Format::E4M3FN();   ///< ≤ 8 bits
  int64_t elements = 4096;                    ///< per branch tensor, ≥ 1
  uint64_t seed = 5;
};

/// The two ways of combining the branches' updates.
enum class SharedMetaCombine { Max = 0, Sum = 1 };

/// One step under both combinations (index 0: max, index 1: sum).
struct SharedMetaStep {
  int step = 0;
  std::array<float, 2> scale_used{};         ///< the stored (dequant) scale this step's tensors were cast with
  std::array<float, 2> window_amax{};        ///< the window amax that scale came from
  std::array<float, 2> scale{};              ///< the stored scale after combining the branches' updates
  std::array<std::vector<float>, 2> history; ///< the raw amax history after combining (Flax's order)
  std::array<double, 2> sqnr_db{};           ///< SQNR over all branches' tensors of this step (dB)
  std::array<double, 2> flushed{};           ///< share of non-zero elements that became zero
  std::array<double, 2> saturated{};         ///< share of elements clipped to ±max
};

/// Runs the experiment with core's DelayedScaling (Flax preset) and combineUses; throws
/// std::invalid_argument for a config outside the ranges above.
std::vector<SharedMetaStep> simulateSharedMeta(const SharedMetaConfig& cfg);

} // namespace fp8lab

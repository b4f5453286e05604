// FP8 Lab — why PyTorch computes a per-tensor scale in float64: the evaluation orders of
// s = fp8_max / amax that eager and compiled code use, how often they give different float32
// scales, and which elements then change code.
//
// Source. torchao `amax_to_scale` (torchao/float8/float8_utils.py) and nanochat's `_to_fp8` upcast
// amax to float64 before dividing, with the comment "torch.compile and eager show different
// numerics for 1.0 / float32, upcast to float64 to ensure same numeric between compile and
// eager" (pytorch/ao#904). The difference comes from how the division is evaluated: Inductor
// turns `c / x` into `c * reciprocal(x)` (pytorch/pytorch#141753: compiled 11.0 / 7.0 gives
// 1.57142865657806396484375, eager 1.5714285373687744140625). Division in float64 and then a
// rounding to float32 is the same as a correctly rounded float32 division for every float32
// amax (double rounding is innocuous for division when 53 ≥ 2·24 + 2: S. Figueroa, "When is
// double rounding innocuous?", SIGNUM 1995), so the upcast makes eager and compiled code agree
// by making both compute the correctly rounded quotient.
//
// Convention: every scale here is the quant multiplier s_q (x_q = cast(x · s_q)), float32.
#pragma once

#include "common/progress.h"
#include "formats/format.h"

#include <array>
#include <cstdint>
#include <vector>

namespace fp8lab {

/// How s = fp8_max / amax is evaluated (amax a float32 > 0, fp8_max a float32).
enum class ScaleEvaluation {
  Float32Divide,      ///< fl32(max / amax): IEEE float32 division (eager PyTorch on float32, TE)
  Float64Divide,      ///< fl32(fl64(max) / fl64(amax)): torchao amax_to_scale, nanochat _to_fp8
  ReciprocalMultiply, ///< fl32(max · fl32(1 / amax)): Inductor's rewrite of c / x (pytorch#141753)
  NewtonFma,          ///< r = fl32(1/amax), q = fl32(max·r), e = fma(−amax, q, max), s = fma(e, r, q):
                      ///< the reciprocal refined by one Newton step in fused multiply-adds, as
                      ///< software float32 divisions do
};
inline constexpr int kScaleEvaluationCount = 4;
inline constexpr std::array<ScaleEvaluation, kScaleEvaluationCount> kScaleEvaluations = {
    ScaleEvaluation::Float32Divide, ScaleEvaluation::Float64Divide, ScaleEvaluation::ReciprocalMultiply,
    ScaleEvaluation::NewtonFma};

/// "float32 division", "float64 division", "reciprocal × max", "Newton step (FMA)".
const char* toString(ScaleEvaluation e);
/// Who evaluates it this way (one line).
const char* sourceOf(ScaleEvaluation e);

/// s = fp8_max / amax evaluated as `how`, in float32 (no epsilon, no clamp: the caller passes a
/// finite amax > 0). Exactly the operation sequence named by the enum.
float evaluateQuantScale(float amax, float fp8_max, ScaleEvaluation how);

/// The elements whose FP8 code differs between two scales of the same tensor: x of (0, amax]
/// (float32; −x mirrors it) with encode(fl32(x·s_a)) ≠ encode(fl32(x·s_b)), RNE, saturating.
/// Found exactly: code(fl32(x·s)) is monotone in x, so for every code c the first x reaching c is
/// found by bisection over float32 bit patterns under each scale; the x between the two are the
/// ones that change.
struct CodeFlips {
  int64_t count = 0;      ///< float32 values of (0, amax] whose codes differ
  int64_t candidates = 0; ///< float32 values of (0, amax]
  /// The flipping x: [lo[i], hi[i]) in float32 order (each interval lies at one rounding boundary).
  std::vector<float> lo, hi;
  float example = 0;                ///< the largest flipping x (0 when none)
  uint32_t code_a = 0, code_b = 0;  ///< its codes under s_a and s_b
  float scaled_a = 0, scaled_b = 0; ///< fl32(example · s_a), fl32(example · s_b)
  double boundary = 0;              ///< the rounding midpoint between the two codes' values
  /// Whether x (a float32 of either sign) changes code: |x| falls in one of the intervals.
  bool flips(float x) const;
};
/// Throws std::invalid_argument for a format wider than 8 bits, amax not finite or ≤ 0, or a
/// scale not finite or ≤ 0.
CodeFlips codeFlips(float amax, float s_a, float s_b, const Format& fmt);

/// One amax under every evaluation.
struct ScaleCase {
  float amax = 0;
  float fp8_max = 0;
  double quotient = 0; ///< fp8_max / amax in float64 (the exact quotient to 53 bits)
  std::array<float, kScaleEvaluationCount> scale{};
  /// Signed distance in float32 steps from the Float32Divide scale (0 for equal scales).
  std::array<int64_t, kScaleEvaluationCount> ulps{};
  /// Elements that change code against the Float32Divide scale (empty for equal scales).
  std::array<CodeFlips, kScaleEvaluationCount> flips{};
};
/// Throws like codeFlips.
ScaleCase scaleCase(float amax, const Format& fmt);

/// Every float32 amax of the binade [2^exponent, 2^(exponent+1)) (2^23 values): how many give a
/// scale different from Float32Divide under each evaluation, and the first such amax. The
/// pattern is that of every binade whose quotients stay normal float32 numbers (the scales of
/// 2^k·amax are those of amax divided by 2^k). exponent in [−100, 100].
struct BinadeSurvey {
  int exponent = 0;
  float fp8_max = 0;
  int64_t amaxes = 0;
  std::array<int64_t, kScaleEvaluationCount> differ{};
  std::array<float, kScaleEvaluationCount> first{}; ///< first differing amax (0 when none)
};
/// `threads` 0 = all hardware threads; the counts do not depend on it. Cancelled via progress.
BinadeSurvey surveyBinade(float fp8_max, int exponent, int threads = 0, const ProgressFn& progress = {});

/// The next float32 amax after `from` (upward, at most `limit` steps) whose `how` scale differs
/// from the Float32Divide scale; 0 when none is found.
float nextDifferingAmax(float from, float fp8_max, ScaleEvaluation how, int64_t limit = int64_t(1) << 24);

/// A tensor of `n` values normal(0, 1) (seeded, counter-based) divided by their amax and multiplied
/// by `amax`, so that its amax is `amax` to within a float32 rounding (element 0 is set to exactly
/// amax). The demo's "real tensor" for a chosen amax.
std::vector<float> tensorWithAmax(float amax, int64_t n, uint64_t seed);

} // namespace fp8lab

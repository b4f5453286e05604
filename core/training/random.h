// FP8 Lab — the training experiment's own pseudo-random generator, so a seed gives the same
// weights, shuffles and numbers on every platform and compiler (std::uniform_real_distribution
// and std::normal_distribution are implementation-defined and differ between libstdc++ and libc++).
//
// Generator: xoshiro256** 1.0 (Blackman & Vigna, https://prng.di.unimi.it/xoshiro256starstar.c),
// its 256-bit state filled from the 64-bit seed with splitmix64 (https://prng.di.unimi.it/splitmix64.c),
// as the authors recommend. Derived values:
//   uniform01()  = (next() >> 40) · 2^-24          float in [0, 1), 24 random bits (exact)
//   uniformInt(n) = Lemire's multiply-shift with rejection (unbiased), n ≥ 1
//   normal()      = Box–Muller on two uniform doubles, cos branch only (no cached pair)
//   shuffle       = Fisher–Yates from the last element down, j = uniformInt(i + 1)
#pragma once

#include <cstdint>
#include <vector>

namespace fp8lab {

class TrainingRng {
public:
  explicit TrainingRng(uint64_t seed);
  /// The next 64 random bits (xoshiro256**).
  uint64_t next();
  /// Uniform float32 in [0, 1) with 24 random bits.
  float uniform01();
  /// Uniform float32 in [lo, hi): lo + (hi − lo)·uniform01(), in float32.
  float uniform(float lo, float hi);
  /// Uniform integer in [0, n), unbiased; n ≥ 1.
  uint64_t uniformInt(uint64_t n);
  /// Standard normal (Box–Muller, double arithmetic, rounded to float32).
  float normal();
  /// Fisher–Yates shuffle of v in place.
  void shuffle(std::vector<int64_t>& v);
  /// splitmix64 step: advances *state and returns the mixed value (also used for seeding).
  static uint64_t splitmix64(uint64_t& state);

private:
  uint64_t s_[4];
};

} // namespace fp8lab

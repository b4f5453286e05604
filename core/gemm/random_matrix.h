// FP8 Lab — seeded random matrices for GEMM experiments, reproducible across runs, thread
// counts and platforms: our own generator (splitmix64 counters + Box-Muller), never
// std::normal_distribution (whose output is implementation-defined).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace fp8lab {

/// Element distributions of randomMatrix().
enum class Distribution {
  Normal,    ///< N(0, scale²)
  Uniform,   ///< U[−scale, scale)
  LogNormal, ///< ±scale·exp(sigma·z), z ~ N(0,1), sign + or − with probability ½ each: wide
             ///< dynamic range (activations after a norm-free layer)
  Outliers,  ///< N(0, scale²), but each element with probability `outlier_fraction` is
             ///< multiplied by `outlier_factor` (LLM activation outlier channels, in small)
  /// N(0, scale²), with `outlier_channels` whole columns (or rows, `outlier_rows`) multiplied by
  /// `outlier_factor`: the outlier feature channels of LLM activations (Dettmers et al. 2022,
  /// LLM.int8() §3.2) and the matching weight channels. The channels are drawn from the seed
  /// (outlierChannelIndices), so each seed puts them elsewhere.
  ChannelOutliers,
};

const char* toString(Distribution d);
/// "normal", "uniform", "lognormal", "outliers", "channel_outliers" (case-insensitive); nullopt otherwise.
std::optional<Distribution> parseDistribution(std::string_view s);

struct RandomMatrixOptions {
  Distribution distribution = Distribution::Normal;
  double scale = 1.0;             ///< standard deviation (Normal/Outliers), half-width (Uniform),
                                  ///< median magnitude (LogNormal)
  double sigma = 1.0;             ///< LogNormal: standard deviation of log|x|
  double outlier_fraction = 1e-3; ///< Outliers: probability per element
  double outlier_factor = 100.0;  ///< Outliers, ChannelOutliers: multiplier of an outlier
  int64_t outlier_channels = 4;   ///< ChannelOutliers: how many channels (≥ 0, at most the channel count)
  bool outlier_rows = false;      ///< ChannelOutliers: the channels are rows (true) or columns (false)
};

/// splitmix64 (Steele, Lea, Flood 2014; the seeding generator of xoshiro): the 64-bit
/// output for counter x.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// The random 64-bit word number `index` of stream (seed, stream): splitmix64 applied to
/// splitmix64(seed ^ stream·φ) + index. Pure function: any element can be generated alone.
uint64_t randomWord(uint64_t seed, uint64_t stream, uint64_t index);

/// Uniform double in [0, 1) from the top 53 bits of a word (exact: k·2^-53).
inline double unitInterval(uint64_t w) {
  return static_cast<double>(w >> 11) * 0x1.0p-53;
}

/// The outlier channels of ChannelOutliers for a matrix with `channels` columns (rows): `count`
/// distinct indices in ascending order, chosen by a partial Fisher–Yates shuffle of 0 … channels−1
/// whose step i swaps position i with i + (word i of stream (seed, stream ^ 0x5A5A5A5A) mod
/// (channels − i)). Throws std::invalid_argument when count is negative or above `channels`.
std::vector<int64_t> outlierChannelIndices(int64_t channels, int64_t count, uint64_t seed, uint64_t stream);

/// A row-major float32 matrix [rows, cols]. Element e = i·cols + j depends only on
/// (seed, stream, e, options): Normal uses Box-Muller on the pair (e & ~1, e | 1),
///     u1 = (w(2·pair)>>11 + 1)·2^-53 ∈ (0,1],  u2 = (w(2·pair+1)>>11)·2^-53,
///     r = sqrt(−2·ln u1),  z_even = r·cos(2π·u2),  z_odd = r·sin(2π·u2)
/// computed in double, then rounded to float32 once. Bit-reproducible on any platform whose
/// libm log/cos/sin/sincos/exp agree (glibc's are correctly rounded in practice); the uniform words
/// are bit-exact everywhere. Generation is multithreaded when `threads` ≠ 1 (same result).
/// Throws std::invalid_argument for negative shapes or non-finite / negative parameters.
std::vector<float> randomMatrix(int64_t rows, int64_t cols, uint64_t seed, const RandomMatrixOptions& options = {},
                                uint64_t stream = 0, int threads = 0);

} // namespace fp8lab

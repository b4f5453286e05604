#include "gemm/random_matrix.h"
#include "gemm/gemm_internal.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace fp8lab {

const char* toString(Distribution d) {
  switch (d) {
  case Distribution::Normal:
    return "normal";
  case Distribution::Uniform:
    return "uniform";
  case Distribution::LogNormal:
    return "lognormal";
  case Distribution::Outliers:
    return "outliers";
  case Distribution::ChannelOutliers:
    return "channel_outliers";
  }
  return "?";
}

std::optional<Distribution> parseDistribution(std::string_view s) {
  std::string l(s);
  for (char& ch : l) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (l == "normal" || l == "gaussian") return Distribution::Normal;
  if (l == "uniform") return Distribution::Uniform;
  if (l == "lognormal" || l == "log-normal") return Distribution::LogNormal;
  if (l == "outliers" || l == "outlier") return Distribution::Outliers;
  if (l == "channel_outliers" || l == "channel-outliers") return Distribution::ChannelOutliers;
  return std::nullopt;
}

uint64_t randomWord(uint64_t seed, uint64_t stream, uint64_t index) {
  return splitmix64(splitmix64(seed ^ (stream * 0x9E3779B97F4A7C15ull)) + index);
}

namespace {
/// The pair of N(0,1) values of elements 2·pair and 2·pair + 1 (Box-Muller), as described at
/// randomMatrix; `base` = splitmix64(seed ^ stream·φ), so that word i is splitmix64(base + i).
/// The cosine and the sine of the same angle are computed together (compilers emit one sincos
/// call; glibc's sincos returns the bits of sin and cos, checked on 2·10^8 angles).
inline void normalPair(uint64_t base, uint64_t pair, double* z_even, double* z_odd) {
  const double u1 = (static_cast<double>(splitmix64(base + 2 * pair) >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = unitInterval(splitmix64(base + 2 * pair + 1));
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double t = 2.0 * std::numbers::pi * u2;
  *z_even = r * std::cos(t);
  *z_odd = r * std::sin(t);
}
// Extra words for signs / outlier draws live in a second stream.
constexpr uint64_t kAuxStream = 0xA5A5A5A5ull;
// The choice of outlier channels, in a third.
constexpr uint64_t kChannelStream = 0x5A5A5A5Aull;
} // namespace

std::vector<int64_t> outlierChannelIndices(int64_t channels, int64_t count, uint64_t seed, uint64_t stream) {
  if (channels < 0 || count < 0 || count > channels)
    throw std::invalid_argument("outlier channels: " + std::to_string(count) + " of " + std::to_string(channels) +
                                " channels (expected 0 <= count <= channels)");
  std::vector<int64_t> idx(static_cast<size_t>(channels));
  for (int64_t i = 0; i < channels; ++i) idx[static_cast<size_t>(i)] = i;
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t w = randomWord(seed, stream ^ kChannelStream, static_cast<uint64_t>(i));
    const int64_t j = i + static_cast<int64_t>(w % static_cast<uint64_t>(channels - i));
    std::swap(idx[static_cast<size_t>(i)], idx[static_cast<size_t>(j)]);
  }
  idx.resize(static_cast<size_t>(count));
  std::sort(idx.begin(), idx.end());
  return idx;
}

std::vector<float> randomMatrix(int64_t rows, int64_t cols, uint64_t seed, const RandomMatrixOptions& o,
                                uint64_t stream, int threads) {
  if (rows < 0 || cols < 0)
    throw std::invalid_argument("random matrix shape must be non-negative, got " + std::to_string(rows) + "x" +
                                std::to_string(cols));
  if (!(std::isfinite(o.scale) && o.scale >= 0) || !(std::isfinite(o.sigma) && o.sigma >= 0) ||
      !(o.outlier_fraction >= 0 && o.outlier_fraction <= 1) || !std::isfinite(o.outlier_factor) ||
      o.outlier_channels < 0)
    throw std::invalid_argument("random matrix parameters must be finite, scale/sigma ≥ 0, outlier fraction in [0, 1], "
                                "outlier channels ≥ 0");
  const int64_t n = rows * cols;
  std::vector<float> v(static_cast<size_t>(n));
  std::vector<char> outlier_channel;
  if (o.distribution == Distribution::ChannelOutliers) {
    const int64_t channels = o.outlier_rows ? rows : cols;
    if (o.outlier_channels > channels)
      throw std::invalid_argument("outlier_channels " + std::to_string(o.outlier_channels) + " is more than the " +
                                  std::to_string(channels) + (o.outlier_rows ? " rows" : " columns") +
                                  " of the matrix");
    outlier_channel.assign(static_cast<size_t>(channels), 0);
    for (int64_t c : outlierChannelIndices(channels, o.outlier_channels, seed, stream))
      outlier_channel[static_cast<size_t>(c)] = 1;
  }
  const int64_t chunk = 1 << 16; // even: a chunk holds whole pairs (the last one may end alone)
  const uint64_t base = splitmix64(seed ^ (stream * 0x9E3779B97F4A7C15ull));
  const uint64_t aux = splitmix64(seed ^ ((stream ^ kAuxStream) * 0x9E3779B97F4A7C15ull));
  gemm_detail::parallelJobs((n + chunk - 1) / chunk, threads, {}, "", 0, 0, [&](int64_t j) {
    const int64_t e0 = j * chunk, e1 = std::min(n, (j + 1) * chunk);
    if (o.distribution == Distribution::Uniform) {
      for (int64_t e = e0; e < e1; ++e)
        v[static_cast<size_t>(e)] =
            static_cast<float>(o.scale * (2.0 * unitInterval(splitmix64(base + static_cast<uint64_t>(e))) - 1.0));
      return;
    }
    for (int64_t e = e0; e < e1; e += 2) {
      double z[2];
      normalPair(base, static_cast<uint64_t>(e) >> 1, &z[0], &z[1]);
      for (int64_t i = e; i < std::min(e + 2, e1); ++i) {
        const uint64_t ue = static_cast<uint64_t>(i);
        double x = 0;
        switch (o.distribution) {
        case Distribution::Normal:
        case Distribution::Uniform:
          x = o.scale * z[i - e];
          break;
        case Distribution::LogNormal: {
          const bool neg = splitmix64(aux + ue) >> 63;
          x = o.scale * std::exp(o.sigma * z[i - e]);
          if (neg) x = -x;
          break;
        }
        case Distribution::Outliers: {
          x = o.scale * z[i - e];
          if (unitInterval(splitmix64(aux + ue)) < o.outlier_fraction) x *= o.outlier_factor;
          break;
        }
        case Distribution::ChannelOutliers: {
          x = o.scale * z[i - e];
          if (outlier_channel[static_cast<size_t>(o.outlier_rows ? i / cols : i % cols)]) x *= o.outlier_factor;
          break;
        }
        }
        v[static_cast<size_t>(i)] = static_cast<float>(x);
      }
    }
  });
  return v;
}

} // namespace fp8lab

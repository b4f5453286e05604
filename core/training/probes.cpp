// FP8 Lab — transformer probes (see probes.h).
#include "training/probes.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fp8lab {

namespace {
/// The lower middle value of v (torch.median), v modified.
double lowerMedian(std::vector<double>& v) {
  if (v.empty()) return 0;
  const size_t mid = (v.size() - 1) / 2;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(mid), v.end());
  return v[mid];
}
} // namespace

OutlierStats outlierStats(const float* x, int64_t n, int64_t d) {
  OutlierStats s;
  if (n < 1 || d < 1) return s;
  std::vector<double> c(static_cast<size_t>(n * d));
  double sq = 0;
  for (int64_t t = 0; t < n; ++t) {
    double mean = 0;
    for (int64_t j = 0; j < d; ++j) mean += double(x[t * d + j]);
    mean /= double(d);
    for (int64_t j = 0; j < d; ++j) {
      const double v = double(x[t * d + j]) - mean;
      c[size_t(t * d + j)] = v;
      sq += v * v;
    }
  }
  s.rms = std::sqrt(sq / double(n * d));
  const double r = s.rms + 1e-8;
  std::vector<double> m(static_cast<size_t>(d), 0.0);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < d; ++j) {
      const double v = c[size_t(t * d + j)] / r;
      m[size_t(j)] += v * v;
    }
  double mm = 0;
  for (double& v : m) {
    v /= double(n);
    mm += v;
  }
  mm /= double(d);
  double var = 0;
  for (double v : m) var += (v - mm) * (v - mm);
  s.kurtosis = d > 1 ? var / double(d - 1) : 0.0;
  double ratio = 0;
  std::vector<double> a(static_cast<size_t>(d));
  for (int64_t t = 0; t < n; ++t) {
    double mx = 0;
    for (int64_t j = 0; j < d; ++j) {
      a[size_t(j)] = std::fabs(c[size_t(t * d + j)]);
      mx = std::max(mx, a[size_t(j)]);
    }
    const double med = lowerMedian(a);
    ratio += med > 0 ? mx / med : (mx > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  }
  s.max_median = ratio / double(n);
  return s;
}

int64_t massiveActivations(const float* x, int64_t n, int64_t d, double abs_threshold, double ratio) {
  int64_t count = 0;
  std::vector<double> a(static_cast<size_t>(d)), sorted;
  for (int64_t t = 0; t < n; ++t) {
    bool above = false; // an element above the absolute threshold: only then is the median needed
    for (int64_t j = 0; j < d; ++j) {
      a[size_t(j)] = std::fabs(double(x[t * d + j]));
      above |= a[size_t(j)] > abs_threshold;
    }
    if (!above) continue;
    sorted = a;
    const double med = lowerMedian(sorted);
    for (int64_t j = 0; j < d; ++j)
      if (a[size_t(j)] > abs_threshold && a[size_t(j)] >= ratio * med) ++count;
  }
  return count;
}

std::vector<double> attentionSink(const float* probs, int64_t batch, int64_t heads, int64_t t) {
  std::vector<double> out(static_cast<size_t>(heads), 0.0);
  if (t < 2 || batch < 1) return out;
  for (int64_t h = 0; h < heads; ++h) {
    double s = 0;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t q = 1; q < t; ++q) s += double(probs[((b * heads + h) * t + q) * t]);
    out[size_t(h)] = s / double(batch * (t - 1));
  }
  return out;
}

double softmaxCastUnderflow(const float* probs, int64_t n, const Format& format, float scale) {
  // Round to nearest even flushes exactly the magnitudes up to half the smallest positive value
  // (the tie goes to the even code 0). The threshold is checked against the format's own encode
  // on both sides; a format where that does not hold is encoded element by element.
  const double tiny = format.decode(1), half = tiny / 2;
  const bool by_threshold = tiny > 0 && format.decode(format.encode(half)) == 0.0 &&
                            format.decode(format.encode(std::nextafter(half, tiny))) != 0.0;
  int64_t nonzero = 0, flushed = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (probs[i] == 0.0f) continue;
    ++nonzero;
    const double v = double(probs[i] * scale);
    if (by_threshold ? std::fabs(v) <= half : format.decode(format.encode(v)) == 0.0) ++flushed;
  }
  return nonzero ? double(flushed) / double(nonzero) : 0.0;
}

double quantizationUnderflow(const float* g, int64_t n, const Format& format, float scale) {
  return softmaxCastUnderflow(g, n, format, scale);
}

double gradientNoiseRatio(const float* g, const float* dequantized, int64_t n) {
  double gg = 0, ee = 0;
  for (int64_t i = 0; i < n; ++i) {
    gg += double(g[i]) * double(g[i]);
    const double e = double(dequantized[i]) - double(g[i]);
    ee += e * e;
  }
  if (ee == 0) return std::numeric_limits<double>::infinity();
  return std::sqrt(gg) / std::sqrt(ee);
}

} // namespace fp8lab

// FP8 Lab — error statistics that survive outliers (robust_metrics.h).
#include "metrics/robust_metrics.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fp8lab {

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return NAN;
  if (!(p >= 0 && p <= 100)) throw std::invalid_argument("percentile: p must be in [0, 100], got " + std::to_string(p));
  const double h = double(v.size() - 1) * p / 100.0;
  const size_t lo = static_cast<size_t>(std::floor(h));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
  const double xl = v[lo];
  if (lo + 1 >= v.size() || h == double(lo)) return xl;
  // The next order statistic is the smallest value above position lo.
  const double xh = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end());
  return xl + (h - double(lo)) * (xh - xl);
}

int64_t countSet(const std::vector<bool>& flags) {
  return std::count(flags.begin(), flags.end(), true);
}

namespace {

template <class T>
std::vector<bool> outliers(const T* x, int64_t rows, int64_t cols, bool along_rows, const RobustErrorRule& rule) {
  const int64_t channels = along_rows ? rows : cols;
  std::vector<double> amax(static_cast<size_t>(std::max<int64_t>(channels, 0)), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const double v = std::fabs(double(x[i * cols + j]));
      if (!std::isfinite(v)) continue;
      double& a = amax[static_cast<size_t>(along_rows ? i : j)];
      a = std::max(a, v);
    }
  std::vector<bool> flags(amax.size(), false);
  if (amax.empty()) return flags;
  std::vector<double> sorted = amax;
  const double median = percentile(sorted, 50.0);
  if (!(median > 0)) return flags;
  for (size_t c = 0; c < amax.size(); ++c) flags[c] = amax[c] > rule.outlier_k * median;
  return flags;
}

template <class T>
RobustErrors robust(const double* ref, const T* test, int64_t rows, int64_t cols, const RobustErrorRule& rule,
                    const std::vector<bool>* xr, const std::vector<bool>* xc) {
  if (rows < 0 || cols < 0) throw std::invalid_argument("robustErrors: negative shape");
  if ((xr && int64_t(xr->size()) != rows) || (xc && int64_t(xc->size()) != cols))
    throw std::invalid_argument("robustErrors: exclusion flags do not match the shape");
  RobustErrors r;
  double sr = 0, st = 0, se = 0, srt = 0;
  std::vector<double> mags; // |ref| of the finite non-zero references measured
  mags.reserve(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i) {
    if (xr && (*xr)[static_cast<size_t>(i)]) continue;
    for (int64_t j = 0; j < cols; ++j) {
      if (xc && (*xc)[static_cast<size_t>(j)]) continue;
      const double a = ref[i * cols + j], b = double(test[i * cols + j]);
      if (!std::isfinite(a) || !std::isfinite(b)) continue;
      ++r.pairs;
      sr += a * a;
      st += b * b;
      srt += a * b;
      se += (b - a) * (b - a);
      if (a != 0) {
        mags.push_back(std::fabs(a));
        if (b == 0) ++r.underflow;
      }
    }
  }
  if (sr > 0) r.sqnr_db = se > 0 ? 10.0 * std::log10(sr / se) : INFINITY;
  if (sr > 0 && st > 0) r.cosine = srt / std::sqrt(sr * st);
  if (mags.empty()) return r;
  // The magnitudes are needed only for their median: taken in place and freed before the relative
  // errors are gathered (one float64 per element at a time).
  const size_t measured = mags.size();
  r.rel_floor = rule.floor_fraction * percentile(mags, 50.0);
  std::vector<double>().swap(mags);
  std::vector<double> rel;
  rel.reserve(measured);
  for (int64_t i = 0; i < rows; ++i) {
    if (xr && (*xr)[static_cast<size_t>(i)]) continue;
    for (int64_t j = 0; j < cols; ++j) {
      if (xc && (*xc)[static_cast<size_t>(j)]) continue;
      const double a = ref[i * cols + j], b = double(test[i * cols + j]);
      if (!std::isfinite(a) || !std::isfinite(b) || !(std::fabs(a) > r.rel_floor)) continue;
      rel.push_back(std::fabs(b - a) / std::fabs(a));
    }
  }
  r.rel_counted = int64_t(rel.size());
  if (!rel.empty()) {
    r.rel_median = percentile(rel, 50.0);
    r.rel_p99 = percentile(rel, 99.0);
  }
  return r;
}

} // namespace

std::vector<bool> outlierChannels(const double* x, int64_t rows, int64_t cols, bool along_rows,
                                  const RobustErrorRule& rule) {
  return outliers(x, rows, cols, along_rows, rule);
}
std::vector<bool> outlierChannels(const float* x, int64_t rows, int64_t cols, bool along_rows,
                                  const RobustErrorRule& rule) {
  return outliers(x, rows, cols, along_rows, rule);
}

RobustErrors robustErrors(const double* ref, const float* test, int64_t rows, int64_t cols, const RobustErrorRule& rule,
                          const std::vector<bool>* xr, const std::vector<bool>* xc) {
  return robust(ref, test, rows, cols, rule, xr, xc);
}
RobustErrors robustErrors(const double* ref, const double* test, int64_t rows, int64_t cols,
                          const RobustErrorRule& rule, const std::vector<bool>* xr, const std::vector<bool>* xc) {
  return robust(ref, test, rows, cols, rule, xr, xc);
}

} // namespace fp8lab

// FP8 Lab — error statistics that survive outliers (docs/gemm.md, "Metrics that survive outliers").
//
// SQNR weighs every element by its energy: in a tensor with a few outlier channels 100× the rest,
// the outliers hold most of Σ ref², so SQNR says how well the outliers survived and little about
// the bulk of the elements. The statistics here look at the bulk too:
//   - the relative error |test − ref| / |ref| of every element whose |ref| is above a floor, as a
//     median (the typical element) and a 99th percentile (the worst 1 %, without the near-zero
//     references whose relative error is meaningless);
//   - SQNR with the outlier rows and columns left out, outliers found by a stated rule: a channel
//     (row or column) whose max |x| exceeds k × the median of the channels' max |x|;
//   - cosine similarity (direction, blind to a common scale factor);
//   - underflow (non-zero reference, zero result).
// Pairs where either side is NaN or ±Inf are left out of every statistic (as compareErrors does).
// Every result depends only on the inputs (sums in a fixed order, percentiles of the sorted values),
// never on the thread count.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace fp8lab {

/// The rules of robustErrors, stored with every GEMM run (attribute robust_rule).
struct RobustErrorRule {
  /// Relative errors are taken over elements with |ref| > floor, floor = floor_fraction × the median
  /// of |ref| over the finite non-zero references (the median, not the RMS, so that outliers do not
  /// raise the floor above the bulk).
  double floor_fraction = 0.1;
  /// A row (column) is an outlier channel when its max |x| exceeds outlier_k × the median over all
  /// rows (columns) of their max |x|. 8 = three binades: an LLM's outlier feature channels are 20–100×
  /// the rest (Dettmers et al. 2022, LLM.int8(), §3.2: magnitudes up to 20× at 6.7B parameters);
  /// channels of N(0,1) data stay within 2× of each other at any practical size.
  double outlier_k = 8.0;
};

/// Error statistics of `test` against `ref` over the finite pairs (optionally outside excluded
/// rows and columns). NaN where there is nothing to measure.
struct RobustErrors {
  int64_t pairs = 0;    ///< finite pairs measured (outside the excluded rows and columns)
  double sqnr_db = NAN; ///< 10·log10(Σ ref² / Σ (test − ref)²); +Inf when exact; NaN when Σ ref² = 0
  /// Σ ref·test / sqrt(Σ ref² · Σ test²): 1 = same direction; NaN when either side is all zero.
  double cosine = NAN;
  double rel_floor = NAN;  ///< the floor of the relative errors (units of ref)
  int64_t rel_counted = 0; ///< elements with |ref| > rel_floor
  double rel_median = NAN; ///< median of |test − ref| / |ref| over those elements
  double rel_p99 = NAN;    ///< 99th percentile of the same (percentile(), linear interpolation)
  int64_t underflow = 0;   ///< finite pairs with ref ≠ 0 and test == 0
};

/// The p-th percentile (0 ≤ p ≤ 100) of `values` by linear interpolation between the closest ranks,
/// numpy.percentile's default ("linear", Hyndman & Fan 1996 definition 7): with the values sorted,
/// x[floor(h)] + (h − floor(h))·(x[floor(h)+1] − x[floor(h)]), h = (n − 1)·p / 100. So the median of
/// {1, 2, 3, 4} is 2.5 and the 99th percentile of 1…100 is 99.01. NaN for an empty list. `values`
/// is reordered (nth_element).
double percentile(std::vector<double>& values, double p);

/// Outlier channels of a row-major matrix [rows, cols]: the rows (`along_rows` true) or the columns
/// whose max |x| (finite values only) exceeds rule.outlier_k × the median of all rows' (columns')
/// max |x|. Returns a flag per row (column). None when the median is 0 (a mostly empty matrix).
std::vector<bool> outlierChannels(const double* x, int64_t rows, int64_t cols, bool along_rows,
                                  const RobustErrorRule& rule = {});
std::vector<bool> outlierChannels(const float* x, int64_t rows, int64_t cols, bool along_rows,
                                  const RobustErrorRule& rule = {});

/// Robust statistics of a [rows, cols] result `test` against `ref` (row-major), leaving out the rows
/// with exclude_rows[i] and the columns with exclude_cols[j] (each may be null: nothing excluded).
/// The relative-error floor is computed from the elements measured.
RobustErrors robustErrors(const double* ref, const float* test, int64_t rows, int64_t cols,
                          const RobustErrorRule& rule = {}, const std::vector<bool>* exclude_rows = nullptr,
                          const std::vector<bool>* exclude_cols = nullptr);
RobustErrors robustErrors(const double* ref, const double* test, int64_t rows, int64_t cols,
                          const RobustErrorRule& rule = {}, const std::vector<bool>* exclude_rows = nullptr,
                          const std::vector<bool>* exclude_cols = nullptr);

/// How many flags are set.
int64_t countSet(const std::vector<bool>& flags);

} // namespace fp8lab

#include "metrics/block_reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fp8lab {

BlockReducer::BlockReducer(int64_t rows, int64_t cols, int64_t block_rows, int64_t block_cols, BlockReduce how)
    : cols_(cols), block_rows_(block_rows), block_cols_(block_cols), grid_rows_((rows + block_rows - 1) / block_rows),
      grid_cols_((cols + block_cols - 1) / block_cols), how_(how) {
  const size_t cells = static_cast<size_t>(grid_rows_ * grid_cols_);
  const double start = how == BlockReduce::Max || how == BlockReduce::MaxAbs ? -std::numeric_limits<double>::infinity()
                       : how == BlockReduce::Min                             ? std::numeric_limits<double>::infinity()
                                                                             : 0.0;
  acc_.assign(cells, start);
  count_.assign(cells, 0);
  nan_.assign(cells, 0);
}

void BlockReducer::addRows(const double* values, int64_t row0, int64_t nrows) {
  for (int64_t i = 0; i < nrows; ++i) {
    const int64_t gr = (row0 + i) / block_rows_;
    const double* row = values + i * cols_;
    for (int64_t j = 0; j < cols_; ++j) {
      const double v = row[j];
      const size_t c = static_cast<size_t>(gr * grid_cols_ + j / block_cols_);
      ++count_[c];
      if (std::isnan(v)) {
        nan_[c] = 1;
        ++nan_elements_;
        continue;
      }
      switch (how_) {
      case BlockReduce::Mean:
        acc_[c] += v;
        break;
      case BlockReduce::Max:
        acc_[c] = std::max(acc_[c], v);
        break;
      case BlockReduce::Min:
        acc_[c] = std::min(acc_[c], v);
        break;
      case BlockReduce::MaxAbs:
        acc_[c] = std::max(acc_[c], std::fabs(v));
        break;
      }
    }
  }
}

std::vector<double> BlockReducer::finish() const {
  std::vector<double> out(acc_.size());
  for (size_t c = 0; c < out.size(); ++c) {
    if (nan_[c] || count_[c] == 0)
      out[c] = std::numeric_limits<double>::quiet_NaN();
    else
      out[c] = how_ == BlockReduce::Mean ? acc_[c] / double(count_[c]) : acc_[c];
  }
  return out;
}

} // namespace fp8lab

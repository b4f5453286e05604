// FP8 Lab — block reduction of a 2-D map: each block of block_rows × block_cols elements (edge
// blocks partial) summarised by one value, fed band by band so a map larger than memory never has
// to be held whole. SessionReader::readReduced (stored maps) and the GUI's error heatmap (maps it
// computes from two datasets) both reduce through it.
#pragma once

#include <cstdint>
#include <vector>

namespace fp8lab {

/// How each block is summarised. A NaN anywhere in a block makes the block NaN (a heatmap must
/// not hide it); ±Inf take part as values (Max of a block holding +Inf is +Inf; Mean of +Inf and
/// −Inf is NaN by IEEE 754).
enum class BlockReduce { Mean, Max, MaxAbs, Min };

/// Accumulates a rows × cols map given as bands of whole rows, top to bottom, into a
/// ceil(rows/block_rows) × ceil(cols/block_cols) float64 grid. Each block's value is accumulated
/// in row-major order of its elements (Mean: their float64 sum in that order divided by the
/// block's element count), the order a block-by-block loop takes, so the result does not depend
/// on the band height.
class BlockReducer {
public:
  /// rows, cols ≥ 0; block_rows, block_cols ≥ 1 (the caller checks).
  BlockReducer(int64_t rows, int64_t cols, int64_t block_rows, int64_t block_cols, BlockReduce how);
  /// Rows [row0, row0 + nrows) of the map, row-major with `cols` values each.
  void addRows(const double* values, int64_t row0, int64_t nrows);
  /// The grid, row-major [gridRows(), gridCols()]; NaN for blocks holding a NaN (or no element).
  std::vector<double> finish() const;
  int64_t gridRows() const { return grid_rows_; }
  int64_t gridCols() const { return grid_cols_; }
  /// NaN elements seen so far.
  int64_t nanElements() const { return nan_elements_; }

private:
  int64_t cols_, block_rows_, block_cols_, grid_rows_, grid_cols_;
  BlockReduce how_;
  std::vector<double> acc_;
  std::vector<int64_t> count_;
  std::vector<uint8_t> nan_;
  int64_t nan_elements_ = 0;
};

} // namespace fp8lab

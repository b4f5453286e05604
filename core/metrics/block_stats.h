// FP8 Lab — per-block statistics of one quantized operand: for every scale block of its
// granularity, the scale (value and code), amax, smallest non-zero magnitude, underflow and
// saturation counts, dynamic range and SQNR; and their distribution over the blocks. The layout
// a session stores them in is docs/session-format.md "Per-block statistics".
//
// A block is one scale block of QuantizedTensor::block (the whole tensor for per-tensor scaling,
// 1×128 / 128×128, MX 1×32 / 32×1, NVFP4 1×16 / 16×16), on the grid [blockRows(), blockCols()],
// row-major; edge blocks hold fewer elements. Scale convention: dequant scale, x ≈ decode(q) ·
// scale; for a two-level format (NVFP4) the block's effective factor TensorScale::blockFactor.
//
// Element rules (the same as QuantizeStats and operandStats(), docs/scaling.md):
//   underflow  x finite, x ≠ 0, and its code decodes to 0;
//   saturated  x finite and |y| > rneFiniteLimit of the element format, y the scaled value as the
//              cast saw it: float32 x · quant_scale (Multiply with quant scales) or x / dequant
//              scale, and for two-level formats double(x) / effective factor against the double
//              limit (OCP OFP8 v1.0 §3: the RNE result with an unbounded exponent is beyond max);
//   SQNR       10·log10(Σx² / Σ(x̂ − x)²) over the finite elements, x̂ = decode(q) · factor in
//              double; +Inf when Σ(x̂ − x)² = 0 and Σx² > 0; NaN when Σx² = 0;
//   dynamic range  log2(max |x| / min non-zero |x|) over the finite elements; 0 with fewer than
//              one non-zero magnitude.
#pragma once

#include "scaling/quantized_tensor.h"

#include <cstdint>
#include <vector>

namespace fp8lab {

/// The per-block values of one operand, each a row-major vector over the block grid
/// [grid_rows, grid_cols].
struct BlockStatsMap {
  int64_t rows = 0, cols = 0;           ///< tensor shape (elements)
  ScaleBlock block;                     ///< elements per block
  int64_t grid_rows = 0, grid_cols = 0; ///< blocks
  std::vector<float> scale;             ///< effective dequant scale of the block
  std::vector<uint8_t> scale_code;      ///< the block scale's code (empty for float32 scales)
  std::vector<float> amax;              ///< max |x| over the block's finite and infinite elements (NaN ignored)
  std::vector<float> min_nonzero;       ///< smallest non-zero finite |x| (0 when none)
  std::vector<int64_t> underflow;       ///< elements that underflowed
  std::vector<int64_t> saturated;       ///< elements that saturated
  std::vector<float> dynamic_range;     ///< log2(max / min non-zero |x|) of finite x, bits (0 when none)
  std::vector<float> sqnr_db;           ///< dB (+Inf exact, NaN all zero)
  int64_t blocks() const { return grid_rows * grid_cols; }
  /// Elements of block (bi, bj): block.rows × block.cols, fewer at the bottom and right edges.
  int64_t blockElements(int64_t bi, int64_t bj) const;
};

/// The distribution of an operand's per-block values (one row of the per-step series).
struct BlockStatsSummary {
  int64_t blocks = 0, elements = 0;
  int64_t nonzero = 0;   ///< non-zero finite elements
  int64_t underflow = 0; ///< Σ of the blocks' underflow counts
  int64_t saturated = 0; ///< Σ of the blocks' saturation counts
  /// log2 of the effective dequant scales of the blocks that hold a non-zero element and whose
  /// scale is positive and finite (an all-zero block's scale — E8M0 2^−127, NVFP4 0 — scales
  /// nothing): min, max, mean, population std; NaN when no block has one.
  float log2_scale_min = 0, log2_scale_max = 0, log2_scale_mean = 0, log2_scale_std = 0;
  float max_dynamic_range = 0;      ///< max of the blocks' dynamic range, bits
  float underflow_block_share = 0;  ///< blocks with ≥ 1 underflowed element / blocks
  float saturation_block_share = 0; ///< blocks with ≥ 1 saturated element / blocks
  float underflow_fraction = 0;     ///< underflow / nonzero (0 when nonzero = 0)
  float saturation_fraction = 0;    ///< saturated / elements
  float sqnr_db = 0;                ///< over the whole tensor, same rule as the blocks
};

/// `q` with its scale blocks merged into `tile` blocks, for statistics per tile: NVFP4 2-D
/// weights (TE's 16×16 tiles) list one scale per 1×16 block, the tile's scale repeated. `tile` must
/// be a whole number of q's blocks in each dimension; every block of a tile must carry the same
/// scale (and code). Codes are unchanged. Throws std::invalid_argument otherwise.
QuantizedTensor mergeScaleBlocks(const QuantizedTensor& q, ScaleBlock tile);

/// The top-left [rows, cols] of `q`, for statistics of a tensor that was zero padded to whole
/// blocks before quantizing (NVFP4: 16-element blocks, 16×16 tiles): the codes of the kept
/// elements and the scales of the blocks that hold one (a block cut by the crop keeps its scale
/// and becomes an edge block), so blocks made only of padding are not counted. q.stats are kept
/// as they are. Throws std::invalid_argument when rows or cols exceed q's or are negative.
QuantizedTensor cropQuantized(const QuantizedTensor& q, int64_t rows, int64_t cols);
/// The top-left [rows, cols] of x [x_rows, x_cols] (row-major), the input cropQuantized's result
/// goes with.
std::vector<float> cropMatrix(const float* x, int64_t x_rows, int64_t x_cols, int64_t rows, int64_t cols);

/// How much of the map computeBlockStats fills.
enum class BlockStatsDetail {
  Full,    ///< every per-block vector
  Summary, ///< all but the per-block dynamic_range and sqnr_db (left empty): what the summary needs
};

/// Computes the per-block values of `q` against the high-precision tensor it was quantized from,
/// x [q.rows, q.cols] row-major float32 (for an RHT operand: the rotated tensor), into `map`
/// (buffers reused), and returns their summary (the same for either detail). Throws
/// std::invalid_argument when `q` has no format, its codes or scales do not match its shape, or
/// x is null with elements.
BlockStatsSummary computeBlockStats(const float* x, const QuantizedTensor& q, BlockStatsMap& map,
                                    BlockStatsDetail detail = BlockStatsDetail::Full);

/// The per-block error of a dequantized tensor x̂ against its input x, both [rows, cols]
/// row-major, accumulated over bands of rows (a view reads the two tensors band by band from a
/// session). Per block of `block` elements (edge blocks smaller): Σx² and Σ(x̂ − x)² in float64
/// over the elements where x and x̂ are both finite — computeBlockStats's rule, so its sqnr_db
/// and this one agree — the largest |x̂ − x| / |x| over those with x ≠ 0, and the count of
/// elements left out as non-finite. Throws std::invalid_argument for a block of < 1 element or
/// rows outside the tensor.
class BlockErrorAccumulator {
public:
  BlockErrorAccumulator(int64_t rows, int64_t cols, ScaleBlock block);
  /// Adds rows [r0, r0 + nr) of x and x̂ ([nr, cols] each).
  void addRows(int64_t r0, int64_t nr, const double* x, const double* xq);
  int64_t gridRows() const { return grid_rows_; }
  int64_t gridCols() const { return grid_cols_; }
  /// 10·log10(Σx² / Σ(x̂ − x)²) of block g (row-major in the grid), dB: +Inf when the finite
  /// elements are exact, NaN when Σx² = 0 (an all-zero or all non-finite block).
  double sqnrDb(size_t g) const;
  /// max |x̂ − x| / |x| over the block's finite elements with x ≠ 0 (0 when none).
  double maxRel(size_t g) const { return max_rel_[g]; }
  /// Elements of block g left out because x or x̂ is NaN or ±Inf.
  int64_t nonFinite(size_t g) const { return nonfinite_[g]; }

private:
  int64_t rows_, cols_, grid_rows_, grid_cols_;
  ScaleBlock block_;
  std::vector<double> sig_, err_, max_rel_;
  std::vector<int64_t> nonfinite_;
};

} // namespace fp8lab

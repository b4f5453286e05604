// FP8 Lab — error metrics of a result against a reference: scalar summaries, per-element
// error maps (absolute, relative, ULPs of the output type) and per-tile maps.
//
// Conventions: ref is the reference (e.g. the ideal or the quantized-exact GEMM output, in
// double), test the value judged. Pairs where either side is NaN or ±Inf are counted and left
// out of every statistic (never a crash, never a NaN summary because of one bad element).
#pragma once

#include "formats/format.h"
#include "scaling/quantized_tensor.h"

#include <cstdint>
#include <vector>

namespace fp8lab {

/// Scalar error summary over the finite pairs.
struct ErrorMetrics {
  int64_t count = 0;                  ///< pairs given
  int64_t finite_pairs = 0;           ///< pairs where both values are finite (the statistics' base)
  int64_t nan_ref = 0, inf_ref = 0;   ///< non-finite reference values
  int64_t nan_test = 0, inf_test = 0; ///< non-finite tested values
  int64_t zero_ref = 0;               ///< finite pairs with ref == 0 (left out of max_rel)
  double max_abs = 0;                 ///< max |test − ref|
  int64_t max_abs_index = -1;         ///< row-major index of max_abs (−1 when none)
  double max_rel = 0;                 ///< max |test − ref| / |ref| over ref ≠ 0
  int64_t max_rel_index = -1;
  double rmse = 0;    ///< sqrt(mean (test − ref)²)
  double rel_fro = 0; ///< ‖test − ref‖_F / ‖ref‖_F (0 when both are 0; Inf when only ref is 0)
  double sqnr_db = 0; ///< 10·log10(Σ ref² / Σ (test − ref)²); +Inf when the error is 0
  double ref_rms = 0; ///< sqrt(mean ref²), for scale
};

/// Computes ErrorMetrics of n pairs (ref[i], test[i]); accumulations in double (Kahan-free:
/// relative error of the sums ≤ n·2^-53). Multithreaded for large n (threads 0 = all);
/// deterministic whatever the thread count (fixed chunks of 65536 elements, partial sums
/// combined in chunk order). A 4096×4096 comparison runs in well under 0.5 s.
ErrorMetrics compareErrors(const double* ref, const double* test, int64_t n, int threads = 0);
ErrorMetrics compareErrors(const double* ref, const float* test, int64_t n, int threads = 0);
/// The same with a float32 reference (each value exact in double: the result equals that of the
/// reference converted to double first, without the copy).
ErrorMetrics compareErrors(const float* ref, const float* test, int64_t n, int threads = 0);

/// The quantization error of a tensor: compareErrors(ref, q.dequantize(), rows·cols, threads) bit
/// for bit, without the dequantized copy (each chunk is dequantized into a buffer as
/// QuantizedTensor::dequantize does: float32(decode(code) · effective dequant factor)). `ref` is
/// the tensor that was quantized, row-major [q.rows, q.cols]. Throws std::invalid_argument when
/// q's codes or scales do not match its shape.
ErrorMetrics compareQuantized(const float* ref, const QuantizedTensor& q, int threads = 0);
ErrorMetrics compareQuantized(const double* ref, const QuantizedTensor& q, int threads = 0);

/// What an error map holds per element.
enum class ErrorMapKind {
  Abs, ///< |test − ref|
  Rel, ///< |test − ref| / |ref| (NaN where ref == 0 and test ≠ 0; 0 where both are 0)
  Ulp, ///< |test − ref| / ulp(ref) in the output format: ulp = spacing of `ulp_format` at
       ///< |ref·scale| divided by scale (scale = the output quant multiplier for FP8 outputs, 1
       ///< otherwise); ulp_format nullptr = float32 (spacing 2^(e−23), subnormals 2^-149)
};

/// Per-element error map [n] as float32; NaN where either input is non-finite.
std::vector<float> errorMap(const double* ref, const float* test, int64_t n, ErrorMapKind kind,
                            const Format* ulp_format = nullptr, double scale = 1.0, int threads = 0);
std::vector<float> errorMap(const double* ref, const double* test, int64_t n, ErrorMapKind kind,
                            const Format* ulp_format = nullptr, double scale = 1.0, int threads = 0);

/// The spacing of float32 numbers at |x| (2^-149 below 2^-126); NaN for non-finite x.
double ulpFloat32(double x);

/// Mean and max of a map over tiles (for block views: 128×128 matches the 128x128 scale blocks).
struct TileMap {
  int64_t rows = 0, cols = 0;           ///< the map's shape
  int64_t tile_rows = 0, tile_cols = 0; ///< tile shape (edge tiles may be partial)
  int64_t grid_rows = 0, grid_cols = 0; ///< ceil(rows/tile_rows), ceil(cols/tile_cols)
  std::vector<float> mean;              ///< [grid_rows, grid_cols], over the tile's non-NaN values
  std::vector<float> max;               ///< same; NaN for a tile with no non-NaN value
  std::vector<int64_t> nan_count;       ///< NaN values per tile
};

/// Tiles a row-major map [rows, cols]. Throws std::invalid_argument when the map is smaller
/// than rows·cols or a tile side is < 1.
TileMap tileMap(const std::vector<float>& map, int64_t rows, int64_t cols, int64_t tile_rows = 128,
                int64_t tile_cols = 128);

} // namespace fp8lab

// The numbers behind the error heatmap, without widgets: per-element error maps of a
// "gemm" run (docs/session-format.md) computed by core/metrics' errorMap() from the stored
// operands and references, reduced to a grid of cells for drawing.
//
// Quantities (ref → test, the decomposition of core/experiment):
//   Total         reference/D                  → output/D                 (|D − ideal|)
//   Quantization  reference/D                  → reference/D_quantized_exact (dequant(A_q)·dequant(B_q) − ideal)
//   Accumulation  reference/D_quantized_exact  → output/D                 (accumulation + output cast)
//   OperandA      inputs/A → quantized/A_dequantized  (quantization error of A)
//   OperandB      inputs/B → quantized/B_dequantized
// Kinds: Abs |t − r| (units of the data), Rel |t − r|/|r| (1), Ulp |t − r|/ulp(r) in D's output
// type (ULP; D quantities only). Total Abs / Rel read the stored error/abs, error/rel maps when
// present (float32, a third of the bytes), otherwise they are derived like the others.
//
// Reading: a window of the map is read band by band (a few MiB at a time) and every cell of
// block_rows × block_cols elements is reduced by max or mean over its finite values. A cell with
// any NaN element is NaN (drawn in the NaN colour, never hidden by decimation) and counted.
#pragma once

#include "formats/format.h"
#include "session/run_access.h"

#include <functional>

namespace fp8lab::ui {

/// Observed: a kernel check's observed/D against its reference model's D (check/D_reference).
enum class ErrorQuantity { Total, Quantization, Accumulation, OperandA, OperandB, Observed };
enum class ErrorKind { Abs, Rel, Ulp };
enum class CellReduce { Max, Mean };

QString toText(ErrorQuantity q); ///< "total error of D", ...
QString toText(ErrorKind k);     ///< "absolute", "relative", "ULP"

/// A reduced window of an error map.
struct HeatmapGrid {
  int64_t r0 = 0, c0 = 0, rows = 0, cols = 0; ///< the window, in elements
  int64_t block_rows = 1, block_cols = 1;     ///< elements per cell (edge cells may be partial)
  int64_t grid_rows = 0, grid_cols = 0;       ///< cells
  std::vector<double> v;                      ///< [grid_rows, grid_cols]; NaN: the cell has a NaN
  int64_t nan_elements = 0;                   ///< NaN elements in the window
  int64_t nan_cells = 0;
  int64_t finite_cells = 0;
  double min = 0, max = 0; ///< over finite cells (0, 0 when none)
  double min_positive = 0; ///< smallest cell value > 0 (0 when none)
  double cell(int64_t gr, int64_t gc) const { return v[size_t(gr * grid_cols + gc)]; }
};

/// One element of the map with the values it was computed from.
struct HeatmapElement {
  int64_t i = 0, j = 0;
  double ref = 0, test = 0, error = 0;
  QString ref_name, test_name; ///< dataset paths
};

/// Statistics of one row of A or column of B (the element's inputs).
struct VectorStats {
  int64_t count = 0;
  double min = 0, max = 0, max_abs = 0, rms = 0;
  int64_t zeros = 0, nonfinite = 0;
};

class HeatmapModel {
public:
  explicit HeatmapModel(std::shared_ptr<RunAccess> run);
  RunAccess* run() const { return run_.get(); }

  /// Whether the run has the datasets for this map; otherwise *why says what is missing.
  bool available(ErrorQuantity q, ErrorKind k, QString* why = nullptr) const;
  /// Shape of the quantity's map (D: M×N, A: M×K, B: K×N); (0, 0) when unavailable.
  std::pair<int64_t, int64_t> shape(ErrorQuantity q) const;
  /// Unit of the values ("1", "ULP of bf16", ...).
  QString unit(ErrorQuantity q, ErrorKind k) const;
  /// D's output type as stored ("fp32", "bf16", "e4m3fn", ...; "fp32" when unknown).
  QString outputType() const;
  /// Tile size of the run (error/tile_*_abs attributes, else config "tile"; 0 when unknown).
  std::pair<int64_t, int64_t> tileSize() const;

  /// Reduces the window [r0, r0+nr) × [c0, c0+nc) by cells of br × bc. progress(fraction)
  /// returning false cancels (returns false, *error = "cancelled").
  bool compute(ErrorQuantity q, ErrorKind k, int64_t r0, int64_t c0, int64_t nr, int64_t nc, int64_t br, int64_t bc,
               CellReduce how, HeatmapGrid* out, QString* error,
               const std::function<bool(double)>& progress = {}) const;
  /// Whole map with cells chosen so the grid is at most max_cells on each side.
  bool overview(ErrorQuantity q, ErrorKind k, int64_t max_cells, HeatmapGrid* out, QString* error) const;

  bool element(ErrorQuantity q, ErrorKind k, int64_t i, int64_t j, HeatmapElement* out, QString* error) const;
  /// Row i of inputs/A (K values) and column j of inputs/B.
  bool rowOfA(int64_t i, VectorStats* out, QString* error) const;
  bool colOfB(int64_t j, VectorStats* out, QString* error) const;

private:
  struct Source {
    QString stored;    ///< a stored map to read directly, or
    QString ref, test; ///< two datasets to compare
  };
  Source source(ErrorQuantity q, ErrorKind k) const;
  bool ulpFormat(const Format** fmt, double* scale) const;
  bool band(const Source& s, ErrorKind k, int64_t r0, int64_t c0, int64_t nr, int64_t nc, std::vector<double>* out,
            QString* error) const;
  std::shared_ptr<RunAccess> run_;
};

/// Statistics of a block of values (NaN / Inf counted, not included).
VectorStats vectorStats(const Block& b);

} // namespace fp8lab::ui

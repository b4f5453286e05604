// Block scales view: what the block scales of one GEMM operand (A or B) look like, in two modes.
//
//   Scale histogram  How many blocks use each scale code (`quantized/<X>_scale_codes`, decoded by
//                    the dataset's `format` attribute: E8M0FNU for MX, E4M3FN for NVFP4), on a
//                    log2 axis of the scale's value. Codes that mean trouble (NaN, a zero or
//                    subnormal scale, the largest or smallest scale, a negative one) are drawn in
//                    a second colour and named. The tensor scale of a two-level format (the
//                    `tensor_scale_kind`, `tensor_amax`, `tensor_scale` attributes of
//                    `quantized/<X>_scales`) is in the caption. A run with float32 scales only
//                    (per-tensor, 1x128: no scale codes) shows the histogram of log2 of its
//                    dequant scales instead, and says so.
//   Error by block   The quantization error of the operand per scale block, as a heatmap over the
//                    block grid (the shape of `quantized/<X>_scales`, blocks of the `block_rows` ×
//                    `block_cols` attributes): SQNR of `quantized/<X>_dequantized` against
//                    `inputs/<X>` over the block, or the block's largest relative error.
//
// The numbers are computed by the free functions below (no widgets), which the view runs on the
// thread pool when the data is big (kBackgroundReadElements).
#pragma once

#include "views/analysis_view.h"

#include <QList>

#include <functional>
#include <memory>

class QCPColorMap;
class QCPColorScale;
class QComboBox;
class QLabel;

namespace fp8lab::ui {

class RunBox;

/// One bar of a block-scale histogram: the blocks that share a scale code (or, for float32
/// scales, a bin of log2 of the scale).
struct ScaleBin {
  double x = 0;      ///< position on the log2 axis (the bar's centre)
  int64_t count = 0; ///< blocks in the bar
  int code = -1;     ///< the scale code (−1 for float32 bins)
  double value = 0;  ///< the scale's value (the bin's lower edge for float32 bins; NaN for NaN)
  bool trouble = false;
  QString trouble_text; ///< short name of the trouble ("NaN", "zero", "subnormal", "max 448", ...)
};

/// The histogram of one operand's block scales.
struct ScaleHistogram {
  enum class Source {
    Codes,       ///< scale codes of `format` (E8M0FNU, E4M3FN)
    Float32Log2, ///< no scale codes: log2 of the float32 dequant scales
  };
  Source source = Source::Codes;
  QString format;                         ///< the scale codes' format ("E8M0FNU", "E4M3FN"; "float32")
  QString dataset;                        ///< the dataset read
  int64_t block_rows = 0, block_cols = 0; ///< elements per block
  int64_t grid_rows = 0, grid_cols = 0;   ///< blocks
  int64_t blocks = 0, trouble_blocks = 0;
  std::vector<ScaleBin> bins; ///< non-empty bins by ascending x
  double bar_width = 1;       ///< in log2 units: 0.85 of the closest two codes (or bins)
  QString tensor_scale;       ///< the second level of a two-level format, as text ("" when none)
};

/// Reads `quantized/<operand>_scale_codes` (else `quantized/<operand>_scales`) of `run` and
/// counts blocks per code. Trouble codes: every code that classify() does not call Normal (zero,
/// subnormal, max finite, Inf, NaN), a negative scale, and code 0 of a format without a zero
/// (E8M0's 2^−127, the scale of an all-zero or underflowed block). False and *why (what to do)
/// when the run has no block scales of that operand. `operand` is 'A' or 'B'. On the log2 axis a
/// code sits at log2 of its value; a zero scale one binade below the format's smallest positive
/// value and NaN / Inf one binade above its largest, so that every bar has a place.
bool blockScaleHistogram(const RunAccess& run, char operand, ScaleHistogram* out, QString* why);

/// The quantization error of one operand over its scale blocks.
struct BlockErrorMap {
  enum class Measure {
    Sqnr,   ///< 10·log10(Σx² / Σ(x_q − x)²) over the block's finite elements, dB; +Inf when exact
    MaxRel, ///< max |x_q − x| / |x| over the block's elements with x ≠ 0, 1
  };
  Measure measure = Measure::Sqnr;
  int64_t rows = 0, cols = 0;             ///< the operand, in elements
  int64_t block_rows = 1, block_cols = 1; ///< elements per block
  int64_t grid_rows = 0, grid_cols = 0;   ///< blocks
  /// [grid_rows, grid_cols], core's BlockErrorAccumulator over the block's finite elements;
  /// NaN: no finite non-zero input in the block.
  std::vector<double> v;
  int64_t nan_blocks = 0, exact_blocks = 0;
  int64_t nonfinite_blocks = 0; ///< blocks holding a NaN or Inf element (left out of their value)
  double min = 0, max = 0;      ///< over finite values (0, 0 when none)
  double at(int64_t r, int64_t c) const { return v[size_t(r * grid_cols + c)]; }
};

/// Computes the per-block error of `inputs/<operand>` → `quantized/<operand>_dequantized` over
/// the block grid of `quantized/<operand>_scales`, reading bands of whole block rows.
/// progress(fraction) returning false cancels (false, *why = "cancelled"). False and *why when
/// the run lacks a dataset (which one, and what to do).
bool blockErrorMap(const RunAccess& run, char operand, BlockErrorMap::Measure measure, BlockErrorMap* out, QString* why,
                   const std::function<bool(double)>& progress = {});

/// The Block scales view (id "block_scales"): the scale histogram or the error by block of one
/// operand of a GEMM run.
class BlockScaleView : public AnalysisView {
  Q_OBJECT
public:
  enum class Mode { Histogram, ErrorSqnr, ErrorMaxRel };

  explicit BlockScaleView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("block_scales"); }
  QString title() const override { return tr("Block scales"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  QString csv() const override;

  /// Shows a run directly (tests, the renderer) and draws at once; nullptr clears the view.
  void setRunAccess(std::shared_ptr<RunAccess> run);
  /// These draw at once; the same choices in the control bar compute big data on the thread pool.
  void setOperand(char operand);
  void setMode(Mode m);

  char operand() const { return operand_; }
  Mode mode() const { return mode_; }
  /// The histogram drawn (Histogram mode; bins empty when none).
  const ScaleHistogram& histogram() const { return hist_; }
  /// The error map drawn (error modes; v empty when none).
  const BlockErrorMap& errorMap() const { return emap_; }
  /// The caption under the plot: what is shown, the tensor scale, trouble counts; in the empty or
  /// failed state (caption hidden, the plot says it) what to do.
  QString captionText() const;
  /// Whether a computation for the current choice is running on the thread pool.
  bool isComputing() const { return isLoading(); }
  QCustomPlot* plot() const { return plot_; }

private:
  void runChosen(Read read) override;
  void recompute(Read read);
  void drawEmptyState(const QString& text) override;
  void drawHistogram();
  void drawErrorMap();

  std::shared_ptr<RunAccess> run_;
  char operand_ = 'A';
  Mode mode_ = Mode::Histogram;
  ScaleHistogram hist_;
  BlockErrorMap emap_;
  QString missing_;

  QComboBox* operand_box_;
  QComboBox* mode_box_;
  QCustomPlot* plot_;
  QLabel* caption_;
};

} // namespace fp8lab::ui

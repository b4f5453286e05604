// Number-line / value-grid view: every representable value of the selected formats
// on a log2 axis (both signs) with the subnormal zone, min normal and max marked; the number of
// values per binade; and a tensor's histogram in log2 binades aligned to the format's exponents,
// before and after per-tensor scaling, with the shares that underflow and saturate.
#pragma once

#include "formats/format.h"
#include "session/run_access.h"
#include "views/view.h"

#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;
class QCPAxisRect;
class QCPLegend;

namespace fp8lab::ui {

/// What the histogram panel shows, computed by NumberLineView::analyse (exposed for tests).
struct TensorOverlay {
  QString source;             ///< "normal σ=1, 65536 values" or "run-0001 inputs/A"
  std::vector<int> binade;    ///< binade exponents e (bin = [2^e, 2^(e+1)))
  std::vector<double> before; ///< share of non-zero |x| per binade, unscaled
  std::vector<double> after;  ///< share of non-zero |x·s| per binade, after scaling
  double quant_scale = 1;     ///< the multiplier used (x·s), per-tensor current, amax → max
  double amax = 0;
  double underflow_before = 0, saturate_before = 0; ///< shares of non-zero elements, unscaled cast
  double underflow_after = 0, saturate_after = 0;   ///< after scaling
  qint64 elements = 0;
};

/// The 2-D tensors of `run` the histogram can show, in this order: a GEMM's inputs (inputs/A,
/// inputs/B), a training run's trained weights (weights/<layer>/kernel), a checkpoint's stored
/// weights dequantized (quantized/<tensor>_dequantized, checkpoint runs only: the values the file
/// holds). Dataset paths; empty when the run has none.
QStringList histogramTensors(const RunAccess& run);

class NumberLineView : public View {
  Q_OBJECT
public:
  explicit NumberLineView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("numberline"); }
  QString title() const override { return tr("Number line"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  QString csv() const override;
  void setSession(SessionDocument* s) override;

  /// The primary format and an optional second one ("" for none).
  bool setFormats(const QString& primary, const QString& secondary = {});
  QStringList formats() const;
  /// Histogram source: "none", "normal", "lognormal", "uniform", "outliers", "run".
  void setTensorSource(const QString& source, double sigma = 1.0);
  /// With source "run": the current run's tensor (a histogramTensors() path). False when the
  /// current run has no such tensor.
  bool setRunTensor(const QString& path);
  const TensorOverlay& overlay() const { return overlay_; }
  /// Makes `format` the primary format (keeping the second one) and marks the magnitudes
  /// [lo, hi] (0 < lo ≤ hi, values of the format: a block's elements after scaling) as a band
  /// over the value rows, labelled `label`; it stays until another range is marked or
  /// clearRange(). False for an unknown format or an empty range.
  bool showRange(const QString& format, double lo, double hi, const QString& label) override;
  void clearRange();
  /// Makes `format` the primary format and the histogram source "block": `values` (a block's
  /// elements) named `label`, scaled as the overlay scales every source (amax → max). False for an
  /// unknown format or no values.
  bool showValues(const QString& format, const QList<float>& values, const QString& label) override;
  /// The band marked ("" label when none): log2 of its ends and its label.
  struct MarkedRange {
    QString format, label;
    double lo = 0, hi = 0;
  };
  const MarkedRange& markedRange() const { return range_; }

  /// Computes the overlay for `values` in format `f` (per-tensor current scaling, amax → max).
  static TensorOverlay analyse(const std::vector<float>& values, const Format& f, const QString& source);

private:
  void rebuild();
  void rebuildOverlay();
  std::vector<float> sourceValues(QString* name) const;
  /// Lists the current run's tensors in the tensor box (shown with source "run" only).
  void fillRunTensors();

  QCustomPlot* plot_;
  QCPAxisRect *values_rect_, *density_rect_, *hist_rect_;
  QCPLegend *density_legend_, *hist_legend_;
  QComboBox *primary_, *secondary_, *source_, *run_tensor_;
  QDoubleSpinBox* sigma_;
  QSpinBox* count_;
  QLabel* info_;
  TensorOverlay overlay_;
  std::vector<float> block_values_; ///< the "block" source (showValues)
  QString block_label_;
  MarkedRange range_;
};

} // namespace fp8lab::ui

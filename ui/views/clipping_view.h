// Clipping: for one training run, how many elements of each quantized operand were clipped to
// ±max finite (history/<operand>/saturated) or flushed from non-zero to zero
// (history/<operand>/underflow) at each step, every operand on one chart, with a per-operand
// summary (total, steps with any, first step). A delayed scale that lags an amax spike shows as
// saturation right after it; a margin or a recipe that leaves no headroom as saturation throughout.
// Reads through core's run index (history operands) and session layout.
#pragma once

#include "views/analysis_view.h"

#include <vector>

class QComboBox;
class QLabel;
class QCustomPlot;

namespace fp8lab::ui {

/// One operand's counts per step.
struct ClippingSeries {
  QString operand;            ///< "fc1/input"
  std::vector<int64_t> count; ///< elements at each step
  int64_t total = 0;          ///< sum over the steps
  int64_t steps_with = 0;     ///< steps with a count > 0
  int64_t first = -1;         ///< first such step, −1 when none
};

/// The counts of `run` per operand (in the run's site order): `underflow` false reads
/// history/<operand>/saturated, true history/<operand>/underflow. Operands without that dataset
/// (an FP32 baseline quantizes nothing) are left out.
std::vector<ClippingSeries> readClipping(const RunAccess& run, bool underflow);

class ClippingView : public AnalysisView {
  Q_OBJECT
public:
  explicit ClippingView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("clipping"); }
  QString title() const override { return tr("Clipping"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  /// step, then one column per operand: the counts shown.
  QString csv() const override;
  QCustomPlot* plot() const { return plot_; }
  QString summary() const;
  const std::vector<ClippingSeries>& series() const { return series_; }

protected:
  void runChosen(Read read) override;
  void drawEmptyState(const QString& text) override;

private:
  void draw();

  QComboBox* what_;
  QCustomPlot* plot_;
  QLabel* summary_;
  std::vector<ClippingSeries> series_;
};

} // namespace fp8lab::ui

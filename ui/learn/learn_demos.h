// The eight demos of the Learn page (learn_page.h), each with its controls. The numbers come from
// core: formats and scaling (demos 1–3), DelayedScaling (4), teaching/scale_determinism (5),
// teaching/shared_metadata (6), teaching/accumulation_precision (7), teaching/memory_budget (8).
#pragma once

#include "learn/learn_demo.h"

#include "teaching/accumulation_precision.h"
#include "teaching/memory_budget.h"
#include "teaching/scale_determinism.h"
#include "teaching/shared_metadata.h"

#include <QFutureWatcher>

#include <optional>
#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace fp8lab::ui {

/// 1. Why scale: small values cast with and without per-tensor scaling.
class WhyScaleDemo : public LearnDemo {
  Q_OBJECT
public:
  explicit WhyScaleDemo(QWidget* parent = nullptr);
  /// Comma-separated values (at most 16), a format name and a scaling preset of the table.
  void setInputs(const QString& values, const QString& format, const QString& preset);
  void recompute() override;

private:
  QLineEdit* values_;
  QComboBox *format_, *preset_;
};

/// 2. E4M3 vs E5M2 on one log-normal tensor.
class RangeDemo : public LearnDemo {
  Q_OBJECT
public:
  explicit RangeDemo(QWidget* parent = nullptr);
  /// |x| = e^N(center, sigma); `preset` the scaling of both casts.
  void setSpread(double center, double sigma, const QString& preset = QStringLiteral("te_current"));
  void recompute() override;

private:
  QDoubleSpinBox *center_, *sigma_;
  QComboBox* preset_;
};

/// 3. An outlier: one scale per tensor against one per block of `block` channels.
class OutlierDemo : public LearnDemo {
  Q_OBJECT
public:
  explicit OutlierDemo(QWidget* parent = nullptr);
  void setInputs(const QString& values, const QString& format, int block);
  void recompute() override;

private:
  QLineEdit* values_;
  QComboBox* format_;
  QSpinBox* block_;
};

/// 4. Delayed scaling's lag after a spike.
class LagDemo : public LearnDemo {
  Q_OBJECT
public:
  explicit LagDemo(QWidget* parent = nullptr);
  void setLagParameters(int history, int spike_step, double spike_amax);
  void setFormat(const QString& name);
  const std::vector<double>& scaleUsed() const { return scale_used_; }
  const std::vector<double>& saturated() const { return saturated_; }
  void recompute() override;
  /// Every step (the table shows the steps around the spike).
  QString csv() const override;

private:
  QSpinBox *history_, *step_, *height_;
  QComboBox* format_;
  std::vector<double> scale_used_, saturated_;
  QList<QStringList> all_rows_;
};

/// 5. Why PyTorch computes the scale in float64.
class DeterminismDemo : public LearnDemo {
  Q_OBJECT
public:
  explicit DeterminismDemo(QWidget* parent = nullptr);
  void setAmax(float amax);
  float amax() const { return amax_; }
  /// Moves to the next float32 amax whose reciprocal-multiply scale differs.
  void nextDifferingCase();
  const ScaleCase& scaleCase() const { return case_; }
  /// The survey of the binade [1, 2) for the current format (computed on first use).
  const BinadeSurvey& survey();
  /// Elements of this demo's tensor whose code differs under the reciprocal-multiply scale.
  int64_t tensorFlips() const { return tensor_flips_; }
  void setFormat(const QString& name);
  void recompute() override;

private:
  QLineEdit* amax_edit_;
  QComboBox* format_;
  QSpinBox* elements_;
  float amax_ = 0.3f;
  ScaleCase case_;
  std::optional<BinadeSurvey> survey_;
  float survey_max_ = 0;
  int64_t tensor_flips_ = 0;
};

/// 6. Flax's max-combination of shared FP8 metadata.
class SharedMetaDemo : public LearnDemo {
  Q_OBJECT
public:
  explicit SharedMetaDemo(QWidget* parent = nullptr);
  void setParameters(double amax1, double amax2, int history, int steps);
  const std::vector<SharedMetaStep>& steps() const { return steps_; }
  void recompute() override;

private:
  QDoubleSpinBox *a1_, *a2_;
  QSpinBox *history_, *steps_box_;
  std::vector<SharedMetaStep> steps_;
};

/// 7. Accumulation precision against K. The sweep runs on the thread pool; the plot and table are
/// redrawn when it is back.
class AccumulationDemo : public LearnDemo {
  Q_OBJECT
public:
  explicit AccumulationDemo(QWidget* parent = nullptr);
  ~AccumulationDemo() override;
  void setParameters(int bits, int promotion_interval, bool positive);
  /// Blocks until the sweep in flight (if any) is drawn (tests, rendering).
  void waitForResult();
  const AccumulationSweep& sweep() const { return sweep_; }
  void recompute() override;
  /// Every K (the table shows four).
  QString csv() const override;

private:
  void draw();
  QList<QStringList> all_rows_;
  QSpinBox* bits_;
  QComboBox *interval_, *operands_;
  QFutureWatcher<AccumulationSweep>* watcher_;
  AccumulationSweep sweep_;
  bool again_ = false;
};

/// 8. The memory arithmetic of a training step.
class MemoryDemo : public LearnDemo {
  Q_OBJECT
public:
  explicit MemoryDemo(QWidget* parent = nullptr);
  void setInputs(const QString& model, int64_t batch, int64_t sequence, const QString& recipe);
  const MemoryBudget& budget() const { return budget_; }
  void recompute() override;

private:
  QComboBox *model_, *recipe_;
  QSpinBox *batch_, *sequence_;
  QCheckBox *flash_, *dropout_;
  MemoryBudget budget_;
};

} // namespace fp8lab::ui

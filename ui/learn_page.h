// The Learn page: four teaching demos, each computed by the real core (formats,
// scaling, metrics) — nothing here is a canned picture.
//   0 Why scale: [0.001, 0.005, 0.008, 0.010] in E4M3FN with and without per-tensor scaling.
//   1 E4M3 vs E5M2: range against precision on the same tensor.
//   2 Per-tensor vs per-channel scaling with an outlier ([0.001, 0.002, 0.003, 100]).
//   3 Delayed scaling's lag: a spike entering and leaving the amax history window.
#pragma once

#include "view.h"

#include <vector>

class QListWidget;
class QStackedWidget;
class QTableWidget;
class QLabel;
class QSpinBox;

namespace fp8lab::ui {

class LearnPage : public View {
  Q_OBJECT
public:
  explicit LearnPage(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("learn"); }
  QString title() const override { return tr("Learn"); }
  QCustomPlot* exportPlot() const override;
  QString csv() const override;

  static constexpr int kDemoCount = 4;
  void setDemo(int index);
  int demo() const;
  QTableWidget* table(int demo) const { return tables_[demo]; }
  QCustomPlot* plot(int demo) const { return plots_[demo]; }

  /// Demo 3's knobs (history length, spike step, spike height), for tests and exploring.
  void setLagParameters(int history, int spike_step, double spike_amax);
  /// Demo 3 results per step: the scale each step used (quant multiplier) and the saturated share.
  const std::vector<double>& lagScaleUsed() const { return lag_scale_used_; }
  const std::vector<double>& lagSaturated() const { return lag_saturated_; }

private:
  QWidget* makePage(int i, const QString& title, const QString& text);
  void buildWhyScale();
  void buildRangeVsPrecision();
  void buildOutlier();
  void buildLag();

  QListWidget* list_;
  QStackedWidget* stack_;
  QTableWidget* tables_[kDemoCount] = {};
  QCustomPlot* plots_[kDemoCount] = {};
  QLabel* notes_[kDemoCount] = {};
  QSpinBox *lag_history_ = nullptr, *lag_step_ = nullptr, *lag_height_ = nullptr;
  std::vector<double> lag_scale_used_, lag_saturated_;
};

} // namespace fp8lab::ui

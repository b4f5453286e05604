// The Learn page: a guided tour ("Start here") and eight teaching demos, each with controls and
// computed by the real core (formats, scaling, gemm, metrics, teaching) — nothing here is a canned
// picture (learn_demos.h):
//   0 Why scale             1 E4M3 vs E5M2          2 An outlier: per-tensor vs per-block
//   3 Delayed scaling's lag  4 Shared metadata: max, not sum
//   5 Accumulation precision against K             6 Why the scale is computed in float64
//   7 Memory arithmetic of a training step
// The list shows them in this order after "Start here", the tour that says what to change in each.
#pragma once

#include "views/view.h"

#include <vector>

class QListWidget;
class QStackedWidget;
class QTableWidget;
class QLabel;

namespace fp8lab::ui {

class LearnDemo;
class LagDemo;

class LearnPage : public View {
  Q_OBJECT
public:
  explicit LearnPage(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("learn"); }
  QString title() const override { return tr("Learn"); }
  QCustomPlot* exportPlot() const override;
  QString csv() const override;

  static constexpr int kDemoCount = 8;
  /// Shows demo `index` (0 .. kDemoCount − 1), or the tour for −1.
  void setDemo(int index);
  /// The demo shown, −1 while the tour is.
  int demo() const;
  LearnDemo* demoWidget(int index) const { return demos_[size_t(index)]; }
  template <class T> T* demoAs(int index) const { return qobject_cast<T*>(demos_[size_t(index)]); }
  QTableWidget* table(int demo) const;
  QCustomPlot* plot(int demo) const;
  /// The tour's text (rich text), for tests and docs.
  QString tourText() const;

  /// Demo 3's knobs (history length, spike step, spike height), for tests and exploring.
  void setLagParameters(int history, int spike_step, double spike_amax);
  /// Demo 3 results per step: the scale each step used (quant multiplier) and the saturated share.
  const std::vector<double>& lagScaleUsed() const;
  const std::vector<double>& lagSaturated() const;

private:
  QWidget* buildTour();
  LagDemo* lag() const;

  QListWidget* list_;
  QStackedWidget* stack_;
  QLabel* tour_ = nullptr;
  std::vector<LearnDemo*> demos_;
};

} // namespace fp8lab::ui

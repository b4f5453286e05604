// Learn demo 4: delayed scaling's lag after a spike (core's DelayedScaling, TE preset).
#include "learn/learn_demos.h"

#include "metrics/error_metrics.h"
#include "scaling/delayed_scaling.h"
#include "scaling/scaling.h"
#include "plot/style.h"

#include "plot/qcp.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QSpinBox>
#include <QTableWidget>

#include <cmath>
#include <random>

namespace fp8lab::ui {

LagDemo::LagDemo(QWidget* parent)
    : LearnDemo(tr("Delayed scaling's lag"),
                tr("Delayed scaling (Transformer Engine <i>DelayedScaling</i>, amax_compute_algo = max) picks the "
                   "scale of step t from the amax history of the steps <i>before</i> t. A spike is therefore not seen "
                   "by the step that carries it \u2014 it <b>saturates</b> \u2014 and afterwards it dominates the "
                   "window: the scale stays too small for as many steps as the history is long, and ordinary steps "
                   "lose precision (lower SQNR) until the spike leaves the window."),
                parent) {
  history_ = new QSpinBox(this);
  history_->setObjectName(QStringLiteral("history"));
  history_->setRange(1, 64);
  history_->setValue(16);
  history_->setSuffix(tr(" steps"));
  addControl(tr("&History length:"), history_);
  step_ = new QSpinBox(this);
  step_->setObjectName(QStringLiteral("spikeStep"));
  step_->setRange(1, 50);
  step_->setValue(15);
  addControl(tr("&Spike at step:"), step_);
  height_ = new QSpinBox(this);
  height_->setObjectName(QStringLiteral("spikeAmax"));
  height_->setRange(2, 100000);
  height_->setValue(10000);
  height_->setPrefix(QStringLiteral("\u00d7 "));
  addControl(tr("Spike &amax:"), height_);
  format_ = formatBox({QStringLiteral("E4M3FN"), QStringLiteral("E5M2")});
  format_->setObjectName(QStringLiteral("format"));
  addControl(tr("&Format:"), format_);
  makeTable({tr("step"), tr("amax"), tr("window amax"), tr("quant scale used"), tr("saturated"),
             tr("SQNR delayed (dB)"), tr("SQNR current (dB)")});
  for (QSpinBox* b : {history_, step_, height_}) connect(b, &QSpinBox::valueChanged, this, &LagDemo::recompute);
  connect(format_, &QComboBox::currentIndexChanged, this, &LagDemo::recompute);

  QCustomPlot* p = plot();
  const auto [top, bottom] = twoStackedPlots(p);
  top->axis(QCPAxis::atLeft)->setLabel(tr("amax"));
  top->axis(QCPAxis::atBottom)->setLabel(tr("training step"));
  bottom->axis(QCPAxis::atLeft)->setLabel(tr("SQNR (dB)"));
  bottom->axis(QCPAxis::atBottom)->setLabel(tr("training step"));
  stylePlot(p);
}

void LagDemo::setLagParameters(int history, int spike_step, double spike_amax) {
  {
    const QSignalBlocker b1(history_), b2(step_), b3(height_);
    history_->setValue(history);
    step_->setValue(spike_step);
    height_->setValue(int(spike_amax));
  }
  recompute();
}

void LagDemo::setFormat(const QString& name) {
  format_->setCurrentText(name); // recomputes
}

QString LagDemo::csv() const {
  return csvOf(all_rows_);
}

void LagDemo::recompute() {
  markComputed();
  const int history = history_->value(), spike_step = step_->value();
  const double spike_amax = height_->value();
  const Format& f = formatOf(format_);
  DelayedScalingConfig cfg;
  cfg.preset = DelayedPreset::TE;
  cfg.history_len = history;
  cfg.algo = AmaxAlgo::Max;
  DelayedScaling state(f, cfg);
  const int steps = std::max(60, spike_step + history + 10);
  // Each step's tensor: the same 4096 normal values with amax normalised to 1, times the spike
  // factor on the spike step, so only the scale differs between steps.
  std::mt19937_64 rng(3);
  std::normal_distribution<double> nd(0, 1);
  std::vector<float> base(4096);
  double m = 0;
  for (auto& b : base) {
    b = float(nd(rng));
    m = std::max(m, double(std::fabs(b)));
  }
  for (auto& b : base) b = float(b / m);
  QVector<double> xs, amax, window, sqnr_d, sqnr_c;
  scale_used_.clear();
  saturated_.clear();
  all_rows_.clear();
  QTableWidget* t = table();
  t->setRowCount(0);
  std::vector<float> x(base.size());
  int degraded_steps = 0;
  const ScalingConfig current = requireScalingPreset("te_current");
  for (int s = 0; s < steps; ++s) {
    const float factor = s == spike_step ? float(spike_amax) : 1.0f;
    for (size_t i = 0; i < base.size(); ++i) x[i] = base[i] * factor;
    const float used = state.quantScale();
    DelayedUpdate upd;
    const QuantizedTensor q = state.quantizeStep(x.data(), 1, int64_t(x.size()), &upd);
    const QuantizedTensor qc = quantize(x.data(), 1, int64_t(x.size()), f, current);
    const ErrorMetrics md = compareQuantized(x.data(), q), mc = compareQuantized(x.data(), qc);
    const double sat = double(q.stats.saturated) / double(x.size());
    scale_used_.push_back(used);
    saturated_.push_back(sat);
    xs << s;
    amax << factor;
    window << f.maxFinite() / used; // the amax the used scale was made for
    sqnr_d << std::min(md.sqnr_db, 80.0);
    sqnr_c << std::min(mc.sqnr_db, 80.0);
    if (md.sqnr_db < mc.sqnr_db - 3) ++degraded_steps;
    const QStringList row = {QString::number(s),
                             floatText(factor),
                             sig(f.maxFinite() / used),
                             floatText(used),
                             pct(sat),
                             QString::number(md.sqnr_db, 'f', 1),
                             QString::number(mc.sqnr_db, 'f', 1)};
    all_rows_ << row;
    // The table shows the steps that tell the story: the one before the spike, the spike, the first
    // and the last step with the spike in the window, the first one after (CSV export: every step).
    if (s == spike_step - 1 || s == spike_step || s == spike_step + 1 || s == spike_step + history ||
        s == spike_step + history + 1)
      setRow(t, t->rowCount(), row);
  }
  fitTable();
  QCustomPlot* p = plot();
  p->clearPlottables();
  p->clearItems();
  QCPAxisRect* top = p->axisRect(0);
  QCPAxisRect* bottom = p->axisRect(1);
  auto line = [&](QCPAxisRect* r, const QVector<double>& y, const QColor& c, const QString& name, bool step,
                  Qt::PenStyle st = Qt::SolidLine) {
    auto* g = new QCPGraph(r->axis(QCPAxis::atBottom), r->axis(QCPAxis::atLeft));
    g->setData(xs, y);
    g->setPen(QPen(c, 2, st));
    g->setLineStyle(step ? QCPGraph::lsStepCenter : QCPGraph::lsLine);
    g->setName(name);
    return g;
  };
  line(top, amax, colors::series(0), tr("amax of the step's tensor"), true);
  line(top, window, colors::series(1), tr("amax the scale was made for (max / quant scale)"), true, Qt::DashLine);
  line(bottom, sqnr_c, colors::series(2), tr("current scaling (this step's amax)"), false);
  line(bottom, sqnr_d, colors::series(1), tr("delayed scaling, history %1").arg(history), false);
  double lo = 1e9, hi = -1e9;
  for (double v : sqnr_d + sqnr_c) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const double y0 = std::floor(lo / 5) * 5 - 5, y1 = std::ceil(hi / 5) * 5 + 12;
  // Shade the steps where the spike is inside the window; its label sits in the headroom above
  // every curve (y1 is 12 dB above the highest point), so it never crosses one.
  auto* zone = new QCPItemRect(p);
  zone->setClipAxisRect(bottom);
  for (auto* pos : {zone->topLeft, zone->bottomRight}) {
    pos->setAxisRect(bottom);
    pos->setAxes(bottom->axis(QCPAxis::atBottom), bottom->axis(QCPAxis::atLeft));
  }
  zone->topLeft->setCoords(spike_step + 0.5, y1 + 100);
  zone->bottomRight->setCoords(spike_step + history + 0.5, y0 - 100);
  zone->setPen(Qt::NoPen);
  zone->setBrush(QColor(255, 224, 130, 90));
  auto* lbl = new QCPItemText(p);
  lbl->setClipAxisRect(bottom);
  lbl->position->setAxisRect(bottom);
  lbl->position->setAxes(bottom->axis(QCPAxis::atBottom), bottom->axis(QCPAxis::atLeft));
  lbl->position->setCoords(spike_step + 0.5 + history / 2.0, y1 - 1);
  lbl->setPositionAlignment(Qt::AlignTop | Qt::AlignHCenter);
  lbl->setText(tr("spike inside the %1-step window").arg(history));
  lbl->setColor(QColor(0x8a, 0x6d, 0x00));
  for (int i = 0; i < 2; ++i) {
    QCPAxisRect* r = i == 0 ? top : bottom;
    auto* leg = qobject_cast<QCPLegend*>(p->plotLayout()->element(2 * i + 1, 0));
    leg->clearItems();
    for (int g = 0; g < p->graphCount(); ++g)
      if (p->graph(g)->keyAxis()->axisRect() == r) leg->addItem(new QCPPlottableLegendItem(leg, p->graph(g)));
    r->axis(QCPAxis::atBottom)->setRange(-0.5, steps - 0.5);
  }
  top->axis(QCPAxis::atLeft)->setRange(0.3, std::max(spike_amax, f.maxFinite()) * 4);
  bottom->axis(QCPAxis::atLeft)->setRange(y0, y1);
  replot(p);
  const double drop = sqnr_c.value(spike_step + 2) - sqnr_d.value(spike_step + 2);
  QString text =
      tr("Step %1 carries a \u00d7%2 spike. Its scale came from the old window, so <b>%3</b> of its elements saturate "
         "(clipped to \u00b1%4). ")
          .arg(spike_step)
          .arg(spike_amax)
          .arg(pct(saturated_[size_t(spike_step)]))
          .arg(numberText(f.maxFinite()));
  if (degraded_steps > 1)
    text +=
        tr("For the next %1 steps the window's amax is the spike's: the scale is %2\u00d7 too small, ordinary values "
           "fall into the subnormals, and SQNR drops by %3 dB, until the spike leaves the window.")
            .arg(history)
            .arg(spike_amax)
            .arg(drop, 0, 'f', 1);
  else
    text += tr("Afterwards the scale is %1\u00d7 too small for %2 steps, but %3's range absorbs that: the values stay "
               "normal and SQNR barely changes (%4 dB). Raise the spike to push them into the subnormals.")
                .arg(spike_amax)
                .arg(history)
                .arg(QString::fromStdString(f.name()))
                .arg(drop, 0, 'f', 1);
  setNote(text);
}

} // namespace fp8lab::ui

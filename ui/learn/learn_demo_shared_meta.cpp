// Learn demo 6: Flax's max-combination of shared FP8 metadata (core/teaching/shared_metadata).
#include "learn/learn_demos.h"

#include "plot/style.h"

#include "plot/qcp.h"

#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QSpinBox>
#include <QTableWidget>

#include <cmath>

namespace fp8lab::ui {

namespace {
/// Flax's raw history as "[h0, h1, …, hL−2, hL−1]" (the newest amax is h0; each roll moves the
/// previous h0 to the end, so the entries before it sit at the end in reverse order of age).
QString historyText(const std::vector<float>& h) {
  auto v = [](float x) { return floatText(x); };
  if (h.size() <= 4) {
    QStringList s;
    for (float x : h) s << v(x);
    return QStringLiteral("[%1]").arg(s.join(QStringLiteral(", ")));
  }
  return QStringLiteral("[%1, %2, \u2026, %3, %4]").arg(v(h[0]), v(h[1]), v(h[h.size() - 2]), v(h.back()));
}
} // namespace

SharedMetaDemo::SharedMetaDemo(QWidget* parent)
    : LearnDemo(tr("Shared FP8 metadata: combined by max, not by sum"),
                tr("In Flax the new scale and amax history of a delayed-scaling state come back as the "
                   "<i>gradients</i> of the old ones. When two branches use the same state in one step (pipeline "
                   "microbatches, a scanned layer), autodiff <b>adds</b> their updates; Flax's <i>fp32_max_grad</i> "
                   "dtype combines them by <b>max</b> instead. The guide's example: inputs 2.0 and 3.0 on a zero "
                   "history give scale 1.0 and history [3, 0, \u2026] with max, 2.0 and [5, 0, \u2026] with sum. Run "
                   "on: with sum every older history entry doubles each step."),
                parent) {
  a1_ = new QDoubleSpinBox(this);
  a1_->setObjectName(QStringLiteral("amax1"));
  a2_ = new QDoubleSpinBox(this);
  a2_->setObjectName(QStringLiteral("amax2"));
  for (QDoubleSpinBox* b : {a1_, a2_}) {
    b->setRange(0.01, 1000);
    b->setDecimals(2);
  }
  a1_->setValue(2.0);
  a2_->setValue(3.0);
  addControl(tr("Branch &1 amax:"), a1_);
  addControl(tr("Branch &2 amax:"), a2_);
  history_ = new QSpinBox(this);
  history_->setObjectName(QStringLiteral("history"));
  history_->setRange(1, 1024);
  history_->setValue(16);
  addControl(tr("&History length:"), history_);
  steps_box_ = new QSpinBox(this);
  steps_box_->setObjectName(QStringLiteral("steps"));
  steps_box_->setRange(2, 64);
  steps_box_->setValue(24);
  addControl(tr("&Steps:"), steps_box_);
  makeTable({tr("step"), tr("max: scale"), tr("max: history"), tr("sum: scale"), tr("sum: history"),
             tr("SQNR max (dB)"), tr("SQNR sum (dB)")});
  for (QDoubleSpinBox* b : {a1_, a2_}) connect(b, &QDoubleSpinBox::valueChanged, this, &SharedMetaDemo::recompute);
  for (QSpinBox* b : {history_, steps_box_}) connect(b, &QSpinBox::valueChanged, this, &SharedMetaDemo::recompute);
  QCustomPlot* p = plot();
  const auto [top, bottom] = twoStackedPlots(p);
  top->axis(QCPAxis::atLeft)->setLabel(tr("window amax"));
  top->axis(QCPAxis::atBottom)->setLabel(tr("step"));
  bottom->axis(QCPAxis::atLeft)->setLabel(tr("SQNR (dB)"));
  bottom->axis(QCPAxis::atBottom)->setLabel(tr("step"));
  stylePlot(p);
}

void SharedMetaDemo::setParameters(double amax1, double amax2, int history, int steps) {
  {
    const QSignalBlocker b1(a1_), b2(a2_), b3(history_), b4(steps_box_);
    a1_->setValue(amax1);
    a2_->setValue(amax2);
    history_->setValue(history);
    steps_box_->setValue(steps);
  }
  recompute();
}

void SharedMetaDemo::recompute() {
  markComputed();
  SharedMetaConfig c;
  c.use_amax = {float(a1_->value()), float(a2_->value())};
  c.history_len = history_->value();
  c.steps = steps_box_->value();
  steps_ = simulateSharedMeta(c);
  QTableWidget* t = table();
  t->setRowCount(0);
  const int last = int(steps_.size()) - 1;
  for (int s : {0, 1, 2, last}) {
    if (s > last || (s == last && last <= 2)) continue;
    const SharedMetaStep& x = steps_[size_t(s)];
    setRow(t, t->rowCount(),
           {QString::number(s), floatText(x.scale[0]), historyText(x.history[0]), floatText(x.scale[1]),
            historyText(x.history[1]), QString::number(x.sqnr_db[0], 'f', 1), QString::number(x.sqnr_db[1], 'f', 1)});
  }
  fitTable();
  QCustomPlot* p = plot();
  p->clearPlottables();
  QCPAxisRect* top = p->axisRect(0);
  QCPAxisRect* bottom = p->axisRect(1);
  QVector<double> xs, wmax, wsum, qmax, qsum;
  double hi = 1;
  for (const SharedMetaStep& x : steps_) {
    xs << x.step;
    // Step 0's window is all zeros (the scale is kept): left out of the log axis.
    wmax << (x.window_amax[0] > 0 ? double(x.window_amax[0]) : qQNaN());
    wsum << (x.window_amax[1] > 0 ? double(x.window_amax[1]) : qQNaN());
    qmax << x.sqnr_db[0];
    qsum << x.sqnr_db[1];
    hi = std::max(hi, double(x.window_amax[1]));
  }
  auto line = [&](QCPAxisRect* r, const QVector<double>& y, const QColor& c, const QString& name, bool dashed) {
    auto* g = new QCPGraph(r->axis(QCPAxis::atBottom), r->axis(QCPAxis::atLeft));
    g->setData(xs, y);
    g->setPen(QPen(c, 2, dashed ? Qt::DashLine : Qt::SolidLine));
    g->setLineStyle(QCPGraph::lsStepCenter);
    g->setName(name);
  };
  line(top, wmax, colors::series(2), tr("max-combined (fp32_max_grad)"), false);
  line(top, wsum, colors::series(1), tr("sum-combined (plain autodiff)"), true);
  line(bottom, qmax, colors::series(2), tr("max-combined"), false);
  line(bottom, qsum, colors::series(1), tr("sum-combined"), true);
  for (int i = 0; i < 2; ++i) {
    QCPAxisRect* r = i == 0 ? top : bottom;
    auto* leg = qobject_cast<QCPLegend*>(p->plotLayout()->element(2 * i + 1, 0));
    leg->clearItems();
    for (int g = 0; g < p->graphCount(); ++g)
      if (p->graph(g)->keyAxis()->axisRect() == r) leg->addItem(new QCPPlottableLegendItem(leg, p->graph(g)));
    r->axis(QCPAxis::atBottom)->setRange(-0.5, double(steps_.size()) - 0.5);
  }
  const double amax_hi = std::max(a1_->value(), a2_->value());
  top->axis(QCPAxis::atLeft)->setRange(std::min(a1_->value(), a2_->value()) / 2, hi * 3);
  double lo = 1e9, qhi = -1e9;
  for (double v : qmax + qsum)
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      qhi = std::max(qhi, v);
    }
  bottom->axis(QCPAxis::atLeft)->setRange(std::floor(lo / 5) * 5 - 5, std::ceil(qhi / 5) * 5 + 5);
  replot(p);
  const SharedMetaStep& s0 = steps_[0];
  const SharedMetaStep& sl = steps_.back();
  QString text =
      tr("Step 0 (the guide's example for amaxes 2 and 3): max gives <b>%1</b> and <b>%2</b>, sum <b>%3</b> "
         "and <b>%4</b>. ")
          .arg(floatText(s0.scale[0]), historyText(s0.history[0]), floatText(s0.scale[1]), historyText(s0.history[1]));
  text += tr("Then the sum's window amax doubles every step (each entry is added twice) until the oldest entry leaves "
             "the %1-step window: at step %2 it is <b>%3</b> for a true amax of %4, SQNR is <b>%5 dB</b> (max: %6 dB) "
             "and %7 of the values flush to zero.")
              .arg(history_->value())
              .arg(sl.step)
              .arg(floatText(sl.window_amax[1]), floatText(float(amax_hi)))
              .arg(sl.sqnr_db[1], 0, 'f', 1)
              .arg(sl.sqnr_db[0], 0, 'f', 1)
              .arg(pct(sl.flushed[1]));
  setNote(text);
}

} // namespace fp8lab::ui

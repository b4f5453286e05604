// Learn demo 7: accumulation precision against K (core/teaching/accumulation_precision). The sweep
// (four models, eight K up to 16384, 64 × 64 outputs) takes a few hundred milliseconds: it runs on
// the thread pool and the plot follows when it is back; a change while it runs starts the next one
// when it ends.
#include "learn/learn_demos.h"

#include "plot/style.h"

#include "plot/qcp.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QSpinBox>
#include <QTableWidget>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>

namespace fp8lab::ui {

AccumulationDemo::AccumulationDemo(QWidget* parent)
    : LearnDemo(tr("Accumulation precision: fast accumulation against promotion"),
                tr("An FP8 GEMM's products are exact; what the tensor core loses is in the <b>sum</b>. Measured "
                   "H100 outputs (MATLAB-tensor-core) show how: each group of 32 products is aligned to the largest "
                   "e(a) + e(b), cut to 13 fraction bits below it, and the sum kept as a float32 with 13 fraction "
                   "bits. DeepSeek-V3 (\u00a73.3.2) saw \"a maximum relative error of nearly 2%\" at K = 4096 and "
                   "promoted partial sums to float32 every N_C = 128 elements. Below, those rules (\"bits\" = "
                   "fraction bits + 1; 14 is H100's) and float32 accumulation on the same FP8 operands: the error "
                   "the sum alone adds, against the exact product, as K grows."),
                parent) {
  bits_ = new QSpinBox(this);
  bits_->setObjectName(QStringLiteral("bits"));
  bits_->setRange(8, 30);
  bits_->setValue(14);
  addControl(tr("Fast accumulator &bits:"), bits_);
  interval_ = new QComboBox(this);
  interval_->setObjectName(QStringLiteral("interval"));
  for (int v : {32, 64, 128, 256, 512}) interval_->addItem(QString::number(v), v);
  interval_->setCurrentIndex(2);
  addControl(tr("&Promotion every N_C ="), interval_);
  operands_ = new QComboBox(this);
  operands_->setObjectName(QStringLiteral("operands"));
  operands_->addItem(tr("normal (signed)"), false);
  operands_->addItem(tr("uniform, positive (no cancellation)"), true);
  addControl(tr("&Operands:"), operands_);
  makeTable({tr("K"), tr("fast, no promotion"), tr("fast, promoted"), tr("float32 partials, promoted"),
             tr("one float32 sum")});
  table()->setToolTip(tr("Relative error \u2016D \u2212 D_exact\u2016 / \u2016D_exact\u2016 of each model; Export data "
                         "gives every K"));
  watcher_ = new QFutureWatcher<AccumulationSweep>(this);
  connect(watcher_, &QFutureWatcher<AccumulationSweep>::finished, this, [this] {
    sweep_ = watcher_->result();
    draw();
    if (again_) {
      again_ = false;
      recompute();
    }
  });
  connect(bits_, &QSpinBox::valueChanged, this, &AccumulationDemo::recompute);
  connect(interval_, &QComboBox::currentIndexChanged, this, &AccumulationDemo::recompute);
  connect(operands_, &QComboBox::currentIndexChanged, this, &AccumulationDemo::recompute);
  QCustomPlot* p = plot();
  p->xAxis->setLabel(tr("K (elements summed per output)"));
  p->yAxis->setLabel(tr("relative error of D"));
  for (QCPAxis* a : {p->xAxis, p->yAxis}) {
    a->setScaleType(QCPAxis::stLogarithmic);
    a->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  }
  p->yAxis->setNumberFormat(QStringLiteral("eb"));
  p->yAxis->setNumberPrecision(0);
  stylePlot(p);
  legendBelow(p);
  setNote(tr("Computing\u2026"));
}

AccumulationDemo::~AccumulationDemo() {
  watcher_->waitForFinished();
}

void AccumulationDemo::setParameters(int bits, int promotion_interval, bool positive) {
  {
    const QSignalBlocker b1(bits_), b2(interval_), b3(operands_);
    bits_->setValue(bits);
    interval_->setCurrentIndex(std::max(0, interval_->findData(promotion_interval)));
    operands_->setCurrentIndex(positive ? 1 : 0);
  }
  recompute();
}

void AccumulationDemo::waitForResult() {
  while (watcher_->isRunning() || again_) {
    watcher_->waitForFinished();
    QCoreApplication::sendPostedEvents(watcher_);
    QCoreApplication::processEvents();
  }
}

void AccumulationDemo::recompute() {
  markComputed();
  if (watcher_->isRunning()) {
    again_ = true; // the newest settings run when this one ends
    return;
  }
  AccumulationSweepConfig c;
  c.bits = bits_->value();
  c.promotion_interval = interval_->currentData().toInt();
  c.positive = operands_->currentData().toBool();
  if (c.positive) c.operands.distribution = Distribution::Uniform;
  c.ks = {128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  c.threads = 1; // leave the other cores to the GUI and the Experiment panel
  watcher_->setFuture(QtConcurrent::run([c] { return sweepAccumulationError(c); }));
}

QString AccumulationDemo::csv() const {
  return csvOf(all_rows_);
}

void AccumulationDemo::draw() {
  const AccumulationSweep& s = sweep_;
  if (s.ks.empty()) return;
  QTableWidget* t = table();
  t->setRowCount(0);
  all_rows_.clear();
  for (size_t i = 0; i < s.ks.size(); ++i) {
    QStringList row = {QString::number(s.ks[i])};
    for (size_t m = 0; m < s.models.size(); ++m) row << sig(s.error[m][i].rel_fro);
    all_rows_ << row;
    // The table shows four K (the plot and the CSV export have them all).
    if (s.ks[i] == 128 || s.ks[i] == 1024 || s.ks[i] == 4096 || s.ks[i] == 16384) setRow(t, t->rowCount(), row);
  }
  fitTable();
  QCustomPlot* p = plot();
  p->clearPlottables();
  p->clearItems();
  double lo = 1, hi = 0;
  for (size_t m = 0; m < s.models.size(); ++m) {
    QVector<double> x, y;
    for (size_t i = 0; i < s.ks.size(); ++i) {
      x << double(s.ks[i]);
      const double e = s.error[m][i].rel_fro;
      y << std::max(e, 1e-12);
      lo = std::min(lo, std::max(e, 1e-12));
      hi = std::max(hi, e);
    }
    auto* g = p->addGraph();
    g->setData(x, y);
    g->setPen(QPen(colors::series(int(m)), 2, m == 0 ? Qt::DashLine : Qt::SolidLine));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colors::series(int(m)), 5));
    g->setName(QString::fromStdString(s.models[m].label));
  }
  // K = 4096: DeepSeek-V3's example, marked by a vertical line labelled at the top.
  auto* v = new QCPItemStraightLine(p);
  v->point1->setCoords(4096, 1e-12);
  v->point2->setCoords(4096, 1);
  v->setPen(QPen(QColor(0x99, 0x99, 0x99), 1, Qt::DotLine));
  auto* lbl = new QCPItemText(p);
  lbl->position->setType(QCPItemPosition::ptPlotCoords);
  lbl->position->setCoords(4096, hi * 4);
  lbl->setPositionAlignment(Qt::AlignBottom | Qt::AlignRight);
  lbl->setText(tr("K = 4096 (DeepSeek-V3) "));
  lbl->setColor(QColor(0x66, 0x66, 0x66));
  p->xAxis->setRange(90, 23000);
  p->yAxis->setRange(lo / 3, hi * 12);
  replot(p);
  size_t k4096 = 0;
  for (size_t i = 0; i < s.ks.size(); ++i)
    if (s.ks[i] == 4096) k4096 = i;
  const double fast = s.error[0][k4096].rel_fro, promoted = s.error[1][k4096].rel_fro,
               split = s.error[2][k4096].rel_fro;
  setNote(tr("Relative error \u2016D \u2212 D_exact\u2016 / \u2016D_exact\u2016. At K = 4096 with %1 operands: fast "
             "accumulation without promotion errs by <b>%2</b>, promoted every %3 by <b>%4</b>, float32 partials by "
             "%5. Without promotion the error grows with K: the running sum grows, "
             "and each new group of 32 products is truncated to %6 bits of the sum's magnitude. DeepSeek-V3's "
             "\"nearly 2%\" is a maximum over its (unpublished) data; positive operands, whose sums never cancel, "
             "show the growth most plainly.")
              .arg(operands_->currentText(), pct(fast), interval_->currentText(), pct(promoted), sig(split))
              .arg(bits_->value()));
}

} // namespace fp8lab::ui

#include "learn_page.h"

#include "metrics/error_metrics.h"
#include "scaling/delayed_scaling.h"
#include "scaling/scaling.h"
#include "style.h"

#include "qcp.h"
#include "view_registry.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>
#include <random>

namespace fp8lab::ui {

namespace {

QString sig(double v) {
  return errorText(v).replace(QStringLiteral("e-0"), QStringLiteral("e-"));
}

QString pct(double share) {
  return QStringLiteral("%1%").arg(100.0 * share, 0, 'f', share < 0.001 && share > 0 ? 4 : 2);
}

void setRow(QTableWidget* t, int r, const QStringList& cells) {
  for (int c = 0; c < cells.size(); ++c) {
    auto* it = new QTableWidgetItem(cells[c]);
    it->setTextAlignment(c == 0 ? (Qt::AlignLeft | Qt::AlignVCenter) : (Qt::AlignRight | Qt::AlignVCenter));
    t->setItem(r, c, it);
  }
}

QTableWidget* makeTable(QWidget* parent, const QStringList& headers) {
  auto* t = new QTableWidget(0, int(headers.size()), parent);
  t->setHorizontalHeaderLabels(headers);
  t->verticalHeader()->hide();
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  t->horizontalHeader()->setStretchLastSection(true);
  t->setAlternatingRowColors(true);
  return t;
}

const ScalingConfig& preset(const char* name) {
  static std::map<std::string, ScalingConfig> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, *scalingPreset(name)).first;
  return it->second;
}

QCPBars* bars(QCustomPlot* p, const QVector<double>& k, const QVector<double>& v, const QColor& c, const QString& name,
              QCPBarsGroup* g) {
  auto* b = new QCPBars(p->xAxis, p->yAxis);
  b->setData(k, v);
  b->setName(name);
  b->setPen(QPen(c.darker(130)));
  b->setBrush(c);
  b->setWidth(0.35);
  b->setBarsGroup(g);
  return b;
}

} // namespace

LearnPage::LearnPage(QWidget* parent) : View(parent) {
  auto* h = new QHBoxLayout(this);
  auto* split = new QSplitter(this);
  list_ = new QListWidget(split);
  list_->setObjectName(QStringLiteral("demoList"));
  list_->addItems({tr("1. Why scale?"), tr("2. E4M3 vs E5M2"), tr("3. Outlier: per-tensor vs per-channel"),
                   tr("4. Delayed scaling's lag")});
  list_->setMaximumWidth(230);
  stack_ = new QStackedWidget(split);
  split->addWidget(list_);
  split->addWidget(stack_);
  split->setStretchFactor(1, 1);
  h->addWidget(split);
  buildWhyScale();
  buildRangeVsPrecision();
  buildOutlier();
  buildLag();
  connect(list_, &QListWidget::currentRowChanged, stack_, &QStackedWidget::setCurrentIndex);
  list_->setCurrentRow(0);
}

QWidget* LearnPage::makePage(int i, const QString& title, const QString& text) {
  auto* page = new QWidget(stack_);
  auto* v = new QVBoxLayout(page);
  auto* t = new QLabel(QStringLiteral("<h2>%1</h2>").arg(title), page);
  v->addWidget(t);
  auto* l = new QLabel(text, page);
  l->setWordWrap(true);
  l->setTextFormat(Qt::RichText);
  v->addWidget(l);
  notes_[i] = new QLabel(page);
  notes_[i]->setWordWrap(true);
  notes_[i]->setTextFormat(Qt::RichText);
  notes_[i]->setStyleSheet(QStringLiteral("QLabel { background:#fff8e1; border:1px solid #ffe082; padding:6px; }"));
  plots_[i] = new QCustomPlot(page);
  plots_[i]->setObjectName(QStringLiteral("demoPlot%1").arg(i));
  plots_[i]->setMinimumHeight(260);
  stack_->addWidget(page);
  return page;
}

void LearnPage::setDemo(int index) {
  list_->setCurrentRow(std::clamp(index, 0, kDemoCount - 1));
}
int LearnPage::demo() const {
  return stack_->currentIndex();
}
QCustomPlot* LearnPage::exportPlot() const {
  return plots_[std::max(0, demo())];
}

QString LearnPage::csv() const {
  const QTableWidget* t = tables_[std::max(0, demo())];
  QString s;
  QStringList head;
  for (int c = 0; c < t->columnCount(); ++c) head << t->horizontalHeaderItem(c)->text();
  s += head.join(QLatin1Char(',')) + QLatin1Char('\n');
  for (int r = 0; r < t->rowCount(); ++r) {
    QStringList row;
    for (int c = 0; c < t->columnCount(); ++c) {
      QString x = t->item(r, c) ? t->item(r, c)->text() : QString();
      x.replace(QChar(0x2212), QLatin1Char('-'));
      if (x.contains(QLatin1Char(','))) x = QLatin1Char('"') + x + QLatin1Char('"');
      row << x;
    }
    s += row.join(QLatin1Char(',')) + QLatin1Char('\n');
  }
  return s;
}

// ---- 1. Why scale ----------------------------------------------------------------------------
void LearnPage::buildWhyScale() {
  QWidget* page =
      makePage(0, tr("Why scale?"),
               tr("Small values such as activations near 0.01 sit in E4M3FN's <b>subnormal</b> range "
                  "(below 2\u207b\u2076 = 0.015625), where the spacing is a fixed 2\u207b\u2079 \u2248 0.00195: "
                  "relative errors reach tens of percent. Per-tensor scaling multiplies the tensor by "
                  "s = max/amax = 448/0.010 before the cast, so its largest value lands on 448 and all values "
                  "use the normal range with ~3 significant bits; dividing by s afterwards gives the values back."));
  const Format& f = Format::E4M3FN();
  const std::vector<float> x = {0.001f, 0.005f, 0.008f, 0.010f};
  const QuantizedTensor raw = quantizeWithScale(x.data(), 1, 4, f, BlockScale{}, Format::ScaleOp::Multiply);
  const QuantizedTensor scaled = quantize(x.data(), 1, 4, f, preset("te_current"));
  auto* t = tables_[0] = makeTable(page, {tr("x"), tr("no scaling: code"), tr("value"), tr("rel. error"),
                                          tr("scaled x\u00b7s"), tr("code"), tr("dequantized"), tr("rel. error")});
  t->setRowCount(4);
  QVector<double> k, e0, e1;
  for (int i = 0; i < 4; ++i) {
    const double v0 = raw.dequantizedAt(0, i), v1 = scaled.dequantizedAt(0, i);
    const double r0 = std::fabs(v0 - x[i]) / x[i], r1 = std::fabs(v1 - x[i]) / x[i];
    setRow(t, i,
           {floatText(x[i]), QString::fromStdString(f.hexString(raw.codes[i])), numberText(v0), pct(r0),
            floatText(x[i] * scaled.quant_scales[0]), QString::fromStdString(f.hexString(scaled.codes[i])), sig(v1),
            pct(r1)});
    k << i + 1;
    e0 << 100 * r0;
    e1 << 100 * r1;
  }
  QCustomPlot* p = plots_[0];
  auto* g = new QCPBarsGroup(p);
  bars(p, k, e0, QColor(0xef, 0x9a, 0x9a), tr("no scaling (subnormal E4M3FN)"), g);
  bars(p, k, e1, QColor(0x90, 0xca, 0xf9), tr("per-tensor scaling, s = %1").arg(floatText(scaled.quant_scales[0])), g);
  QSharedPointer<QCPAxisTickerText> tk(new QCPAxisTickerText);
  for (int i = 0; i < 4; ++i) tk->addTick(i + 1, QStringLiteral("x = %1").arg(floatText(x[i])));
  p->xAxis->setTicker(tk);
  p->xAxis->setRange(0.4, 4.6);
  p->xAxis->setLabel(tr("element"));
  p->yAxis->setLabel(tr("relative error (%)"));
  p->yAxis->setRange(0, std::max(*std::max_element(e0.begin(), e0.end()), 1.0) * 1.2);
  p->legend->setVisible(true);
  p->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  stylePlot(p);
  p->setInteractions({});
  notes_[0]->setText(
      tr("amax = 0.01 \u2192 quant scale s = 448 / 0.01 = <b>%1</b> (float32, Transformer Engine rule). "
         "Without scaling: %2 of 4 results are subnormal. With scaling: 0 are, and the largest relative error "
         "drops from %3 to %4.")
          .arg(floatText(scaled.quant_scales[0]))
          .arg(raw.stats.subnormal)
          .arg(pct(*std::max_element(e0.begin(), e0.end()) / 100))
          .arg(pct(*std::max_element(e1.begin(), e1.end()) / 100)));
  auto* v = static_cast<QVBoxLayout*>(page->layout());
  v->addWidget(t);
  t->setMaximumHeight(150);
  v->addWidget(notes_[0]);
  v->addWidget(p, 1);
}

// ---- 2. E4M3 vs E5M2 --------------------------------------------------------------------------
void LearnPage::buildRangeVsPrecision() {
  QWidget* page =
      makePage(1, tr("E4M3 vs E5M2: precision against range"),
               tr("The same tensor, a wide log-normal spread like a gradient (|x| = e^N(\u22126, 2.2), random signs, "
                  "16384 values), cast with per-tensor scaling to E4M3FN (3 mantissa bits, max 448) and E5M2 "
                  "(2 mantissa bits, max 57344). E4M3FN is twice as precise where values are normal, but its "
                  "range is 18 binades against E5M2's 32: the tensor's small values fall below its subnormals "
                  "and flush to zero. That is why recipes use E5M2 for gradients."));
  std::mt19937_64 rng(7);
  std::normal_distribution<double> nd(-6.0, 2.2);
  std::bernoulli_distribution sign(0.5);
  const int n = 16384;
  std::vector<float> x(n);
  std::vector<double> xd(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(std::exp(nd(rng)) * (sign(rng) ? -1 : 1));
    xd[i] = x[i];
  }
  auto* t = tables_[1] =
      makeTable(page, {tr("format"), tr("max"), tr("min subnormal"), tr("range (binades)"), tr("quant scale"),
                       tr("SQNR (dB)"), tr("flushed to 0"), tr("median rel. error")});
  QCustomPlot* p = plots_[1];
  t->setRowCount(2);
  int row = 0;
  for (const Format* f : {&Format::E4M3FN(), &Format::E5M2()}) {
    const QuantizedTensor q = quantize(x.data(), 1, n, *f, preset("te_current"));
    const std::vector<float> dq = q.dequantize();
    const ErrorMetrics m = compareErrors(xd.data(), dq.data(), n);
    std::vector<float> rel = errorMap(xd.data(), dq.data(), n, ErrorMapKind::Rel);
    std::vector<float> sorted = rel;
    std::nth_element(sorted.begin(), sorted.begin() + n / 2, sorted.end());
    setRow(t, row,
           {QString::fromStdString(f->name()), numberText(f->maxFinite()), valueWithPow2(f->minSubnormal()),
            QString::number(f->dynamicRangeBinades(), 'f', 1), floatText(q.quant_scales[0]),
            QString::number(m.sqnr_db, 'f', 2), pct(double(q.stats.underflow) / n), pct(sorted[n / 2])});
    // Scatter: log2|x| against relative error (flushed values have error 1 = 100 %).
    QVector<double> px, py;
    for (int i = 0; i < n; i += 2) {
      px << std::log2(std::fabs(double(x[i])));
      py << std::max(double(rel[i]), 1e-5);
    }
    auto* g = p->addGraph();
    g->setData(px, py);
    g->setLineStyle(QCPGraph::lsNone);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colors::series(row), 3));
    g->setName(tr("%1: SQNR %2 dB, %3 flushed to zero")
                   .arg(QString::fromStdString(f->name()))
                   .arg(m.sqnr_db, 0, 'f', 1)
                   .arg(pct(double(q.stats.underflow) / n)));
    ++row;
  }
  p->xAxis->setLabel(tr("log\u2082 |x| of the original value"));
  p->yAxis->setLabel(tr("relative error (1 = flushed to 0)"));
  p->yAxis->setScaleType(QCPAxis::stLogarithmic);
  p->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  p->yAxis->setNumberFormat(QStringLiteral("eb"));
  p->yAxis->setNumberPrecision(0);
  p->yAxis->setRange(5e-6, 3);
  p->rescaleAxes(true);
  p->xAxis->scaleRange(1.05);
  p->yAxis->setRange(5e-6, 3);
  p->legend->setVisible(true);
  p->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);
  stylePlot(p);
  notes_[1]->setText(
      tr("Read the plot left to right: below the format's smallest subnormal (after scaling) values flush to "
         "zero (error 1). In the normal range E4M3FN's errors stay below 2\u207b\u2074 = 6.25%, E5M2's below "
         "2\u207b\u00b3 = 12.5%."));
  auto* v = static_cast<QVBoxLayout*>(page->layout());
  v->addWidget(t);
  t->setMaximumHeight(90);
  v->addWidget(notes_[1]);
  v->addWidget(p, 1);
}

// ---- 3. Outlier ---------------------------------------------------------------------------------
void LearnPage::buildOutlier() {
  QWidget* page =
      makePage(2, tr("An outlier: per-tensor against per-channel scaling"),
               tr("Four channels (columns) of one token: [0.001, 0.002, 0.003, 100]. With one scale per tensor "
                  "the outlier sets amax = 100, s = 448/100 = 4.48, and the three small channels land in E4M3FN's "
                  "subnormals. With one scale per channel (per-column, torchao rule) every channel gets its own "
                  "amax \u2192 max, and each value is represented to within half a step of 3 mantissa bits."));
  const Format& f = Format::E4M3FN();
  const std::vector<float> x = {0.001f, 0.002f, 0.003f, 100.0f};
  const QuantizedTensor pt = quantize(x.data(), 1, 4, f, preset("te_current"));
  const QuantizedTensor pc = quantize(x.data(), 1, 4, f, preset("per_column"));
  auto* t = tables_[2] =
      makeTable(page, {tr("channel"), tr("x"), tr("per-tensor: scale"), tr("code"), tr("dequantized"), tr("rel. error"),
                       tr("per-channel: scale"), tr("code"), tr("dequantized"), tr("rel. error")});
  t->setRowCount(4);
  QVector<double> k, e0, e1;
  for (int i = 0; i < 4; ++i) {
    const double v0 = pt.dequantizedAt(0, i), v1 = pc.dequantizedAt(0, i);
    const double r0 = std::fabs(v0 - x[i]) / x[i], r1 = std::fabs(v1 - x[i]) / x[i];
    setRow(t, i,
           {QString::number(i), floatText(x[i]), floatText(pt.quant_scales[0]),
            QString::fromStdString(f.hexString(pt.codes[i])), sig(v0), pct(r0), floatText(pc.quant_scales[i]),
            QString::fromStdString(f.hexString(pc.codes[i])), sig(v1), pct(r1)});
    k << i + 1;
    e0 << std::max(100 * r0, 1e-4);
    e1 << std::max(100 * r1, 1e-4);
  }
  QCustomPlot* p = plots_[2];
  auto* g = new QCPBarsGroup(p);
  bars(p, k, e0, QColor(0xef, 0x9a, 0x9a), tr("per-tensor (one scale: %1)").arg(floatText(pt.quant_scales[0])), g);
  bars(p, k, e1, QColor(0xa5, 0xd6, 0xa7), tr("per-channel (one scale per column)"), g);
  QSharedPointer<QCPAxisTickerText> tk(new QCPAxisTickerText);
  for (int i = 0; i < 4; ++i) tk->addTick(i + 1, tr("channel %1: %2").arg(i).arg(floatText(x[i])));
  p->xAxis->setTicker(tk);
  p->xAxis->setRange(0.4, 4.6);
  p->xAxis->setLabel(tr("channel (column) and its value"));
  p->yAxis->setLabel(tr("relative error (%)"));
  p->yAxis->setRange(0, std::max(*std::max_element(e0.begin(), e0.end()), 1.0) * 1.25);
  p->legend->setVisible(true);
  p->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  stylePlot(p);
  p->setInteractions({});
  notes_[2]->setText(
      tr("Per-tensor: %1 of 4 values subnormal, worst error %2. Per-channel: worst error %3 "
         "(bars at 0 are exact). The price: 4 scales instead of 1, and the GEMM must apply them per column "
         "(cuBLASLt \"outer vector\" scaling).")
          .arg(pt.stats.subnormal)
          .arg(pct(*std::max_element(e0.begin(), e0.end()) / 100))
          .arg(pct(*std::max_element(e1.begin(), e1.end()) / 100)));
  auto* v = static_cast<QVBoxLayout*>(page->layout());
  v->addWidget(t);
  t->setMaximumHeight(150);
  v->addWidget(notes_[2]);
  v->addWidget(p, 1);
}

// ---- 4. Delayed scaling's lag -------------------------------------------------------------------
void LearnPage::buildLag() {
  QWidget* page =
      makePage(3, tr("Delayed scaling's lag"),
               tr("Delayed scaling (Transformer Engine <i>DelayedScaling</i>, amax_compute_algo = max) picks the "
                  "scale of step t from the amax history of the steps <i>before</i> t. A spike is therefore "
                  "not seen by the step that carries it \u2014 it <b>saturates</b> \u2014 and afterwards it "
                  "dominates the window: the scale stays too small for as many steps as the history is long, "
                  "and ordinary steps lose precision (lower SQNR) until the spike leaves the window."));
  auto* knobs = new QHBoxLayout;
  knobs->addWidget(new QLabel(tr("History length:"), page));
  lag_history_ = new QSpinBox(page);
  lag_history_->setRange(1, 64);
  lag_history_->setValue(16);
  lag_history_->setSuffix(tr(" steps"));
  knobs->addWidget(lag_history_);
  knobs->addWidget(new QLabel(tr("Spike at step:"), page));
  lag_step_ = new QSpinBox(page);
  lag_step_->setRange(1, 50);
  lag_step_->setValue(15);
  knobs->addWidget(lag_step_);
  knobs->addWidget(new QLabel(tr("Spike amax:"), page));
  lag_height_ = new QSpinBox(page);
  lag_height_->setRange(2, 100000);
  lag_height_->setValue(10000);
  lag_height_->setPrefix(QStringLiteral("\u00d7 "));
  knobs->addWidget(lag_height_);
  knobs->addStretch(1);
  auto* v = static_cast<QVBoxLayout*>(page->layout());
  v->addLayout(knobs);
  auto* t = tables_[3] = makeTable(page, {tr("step"), tr("amax"), tr("window amax"), tr("quant scale used"),
                                          tr("saturated"), tr("SQNR delayed (dB)"), tr("SQNR current (dB)")});
  t->setMaximumHeight(120);
  v->addWidget(notes_[3]);
  v->addWidget(plots_[3], 1);
  v->addWidget(t);
  auto rerun = [this] { setLagParameters(lag_history_->value(), lag_step_->value(), lag_height_->value()); };
  connect(lag_history_, &QSpinBox::valueChanged, this, rerun);
  connect(lag_step_, &QSpinBox::valueChanged, this, rerun);
  connect(lag_height_, &QSpinBox::valueChanged, this, rerun);

  QCustomPlot* p = plots_[3];
  p->plotLayout()->clear();
  auto* top = new QCPAxisRect(p);
  auto* bottom = new QCPAxisRect(p);
  p->plotLayout()->addElement(0, 0, top);
  p->plotLayout()->addElement(1, 0, bottom);
  auto* mg = new QCPMarginGroup(p);
  top->setMarginGroup(QCP::msLeft | QCP::msRight, mg);
  bottom->setMarginGroup(QCP::msLeft | QCP::msRight, mg);
  for (auto* r : {top, bottom}) {
    auto* leg = new QCPLegend;
    r->insetLayout()->addElement(leg, Qt::AlignTop | Qt::AlignRight);
    leg->setLayer(QStringLiteral("legend"));
    leg->setFont(QFont(p->font().family(), 8));
    leg->setBrush(QColor(255, 255, 255, 225));
  }
  top->axis(QCPAxis::atLeft)->setScaleType(QCPAxis::stLogarithmic);
  top->axis(QCPAxis::atLeft)->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  top->axis(QCPAxis::atLeft)->setLabel(tr("amax (log scale)"));
  top->axis(QCPAxis::atBottom)->setLabel(tr("training step"));
  bottom->axis(QCPAxis::atLeft)->setLabel(tr("SQNR (dB)"));
  bottom->axis(QCPAxis::atBottom)->setLabel(tr("training step"));
  stylePlot(p);
  rerun();
}

void LearnPage::setLagParameters(int history, int spike_step, double spike_amax) {
  {
    const QSignalBlocker b1(lag_history_), b2(lag_step_), b3(lag_height_);
    lag_history_->setValue(history);
    lag_step_->setValue(spike_step);
    lag_height_->setValue(int(spike_amax));
  }
  const Format& f = Format::E4M3FN();
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
  QVector<double> xs, amax, window, sqnr_d, sqnr_c, satur;
  lag_scale_used_.clear();
  lag_saturated_.clear();
  QTableWidget* t = tables_[3];
  t->setRowCount(0);
  std::vector<float> x(base.size());
  std::vector<double> xd(base.size());
  int saturated_steps = 0, degraded_steps = 0;
  for (int s = 0; s < steps; ++s) {
    const float factor = s == spike_step ? float(spike_amax) : 1.0f;
    for (size_t i = 0; i < base.size(); ++i) {
      x[i] = base[i] * factor;
      xd[i] = x[i];
    }
    const float used = state.quantScale();
    DelayedUpdate upd;
    const QuantizedTensor q = state.quantizeStep(x.data(), 1, int64_t(x.size()), &upd);
    const QuantizedTensor qc = quantize(x.data(), 1, int64_t(x.size()), f, preset("te_current"));
    const auto dq = q.dequantize(), dqc = qc.dequantize();
    const ErrorMetrics md = compareErrors(xd.data(), dq.data(), int64_t(x.size()));
    const ErrorMetrics mc = compareErrors(xd.data(), dqc.data(), int64_t(x.size()));
    const double sat = double(q.stats.saturated) / double(x.size());
    lag_scale_used_.push_back(used);
    lag_saturated_.push_back(sat);
    xs << s;
    amax << factor;
    window << f.maxFinite() / used; // the amax the used scale was made for
    sqnr_d << std::min(md.sqnr_db, 80.0);
    sqnr_c << std::min(mc.sqnr_db, 80.0);
    satur << sat;
    if (sat > 0) ++saturated_steps;
    if (md.sqnr_db < mc.sqnr_db - 3) ++degraded_steps;
    if (s >= spike_step - 1 && s <= spike_step + history + 1) {
      const int r = t->rowCount();
      t->insertRow(r);
      setRow(t, r,
             {QString::number(s), floatText(factor), sig(f.maxFinite() / used), floatText(used), pct(sat),
              QString::number(md.sqnr_db, 'f', 1), QString::number(mc.sqnr_db, 'f', 1)});
    }
  }
  QCustomPlot* p = plots_[3];
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
  line(top, window, colors::series(1), tr("amax the scale was made for (448 / quant scale)"), true, Qt::DashLine);
  line(bottom, sqnr_c, colors::series(2), tr("current scaling (this step's amax)"), false);
  line(bottom, sqnr_d, colors::series(1), tr("delayed scaling, history %1").arg(history), false);
  // Shade the steps where the spike is inside the window.
  auto* zone = new QCPItemRect(p);
  zone->setClipAxisRect(bottom);
  for (auto* pos : {zone->topLeft, zone->bottomRight}) {
    pos->setAxisRect(bottom);
    pos->setAxes(bottom->axis(QCPAxis::atBottom), bottom->axis(QCPAxis::atLeft));
  }
  zone->topLeft->setCoords(spike_step + 0.5, 200);
  zone->bottomRight->setCoords(spike_step + history + 0.5, -200);
  zone->setPen(Qt::NoPen);
  zone->setBrush(QColor(255, 224, 130, 90));
  auto* lbl = new QCPItemText(p);
  lbl->setClipAxisRect(bottom);
  lbl->position->setAxisRect(bottom);
  lbl->position->setAxes(bottom->axis(QCPAxis::atBottom), bottom->axis(QCPAxis::atLeft));
  lbl->position->setCoords(spike_step + 0.5 + history / 2.0, 2);
  lbl->setPositionAlignment(Qt::AlignBottom | Qt::AlignHCenter);
  lbl->setText(tr("spike inside the %1-step window").arg(history));
  lbl->setColor(QColor(0x8a, 0x6d, 0x00));
  for (auto* r : {top, bottom}) {
    auto* leg = qobject_cast<QCPLegend*>(r->insetLayout()->elementAt(0));
    leg->clearItems();
    for (int i = 0; i < p->graphCount(); ++i)
      if (p->graph(i)->keyAxis()->axisRect() == r) leg->addItem(new QCPPlottableLegendItem(leg, p->graph(i)));
    r->axis(QCPAxis::atBottom)->setRange(-0.5, steps - 0.5);
  }
  top->axis(QCPAxis::atLeft)->setRange(0.3, std::max(spike_amax, f.maxFinite()) * 4);
  double lo = 1e9, hi = -1e9;
  for (double v : sqnr_d + sqnr_c) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bottom->axis(QCPAxis::atLeft)->setRange(std::floor(lo / 5) * 5 - 5, std::ceil(hi / 5) * 5 + 20);
  ui::replot(p);
  const double drop = sqnr_c.value(spike_step + 2) - sqnr_d.value(spike_step + 2);
  QString text =
      tr("Step %1 carries a \u00d7%2 spike. Its scale came from the old window, so <b>%3</b> of its elements "
         "saturate (clipped to \u00b1448). ")
          .arg(spike_step)
          .arg(spike_amax)
          .arg(pct(lag_saturated_[size_t(spike_step)]));
  if (degraded_steps > 1)
    text +=
        tr("For the next %1 steps the window's amax is the spike's: the scale is %2\u00d7 too small, ordinary values "
           "fall into the subnormals, and SQNR drops by %3 dB, until the spike leaves the window.")
            .arg(history)
            .arg(spike_amax)
            .arg(drop, 0, 'f', 1);
  else
    text += tr("Afterwards the scale is %1\u00d7 too small for %2 steps, but E4M3FN's range absorbs that: the values "
               "stay normal and SQNR barely changes (%3 dB). Raise the spike above ~2\u00b9\u00b9 to push them into "
               "the subnormals.")
                .arg(spike_amax)
                .arg(history)
                .arg(drop, 0, 'f', 1);
  notes_[3]->setText(text);
}

FP8LAB_REGISTER_VIEW(LearnPage, "learn", 40);

} // namespace fp8lab::ui

// Learn demos 1–3: why scale, E4M3 against E5M2, an outlier under per-tensor and per-block scaling.
#include "learn/learn_demos.h"

#include "metrics/error_metrics.h"
#include "scaling/scaling.h"
#include "plot/style.h"

#include "plot/qcp.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QSpinBox>
#include <QTableWidget>

#include <algorithm>
#include <cmath>
#include <random>

namespace fp8lab::ui {

namespace {

/// Up to `limit` comma-separated finite numbers; empty when the text has anything else.
std::vector<float> parseValues(const QString& text, int limit, QString* why) {
  std::vector<float> v;
  for (const QString& part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    bool ok = false;
    const double x = part.trimmed().toDouble(&ok);
    if (!ok || !std::isfinite(x) || !std::isfinite(float(x))) {
      *why = QObject::tr("'%1' is not a finite float32 number").arg(part.trimmed());
      return {};
    }
    v.push_back(float(x));
  }
  if (v.empty()) *why = QObject::tr("give at least one value, separated by commas");
  if (int(v.size()) > limit) {
    *why = QObject::tr("at most %1 values").arg(limit);
    return {};
  }
  return v;
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

const QStringList kSmallFormats = {QStringLiteral("E4M3FN"),   QStringLiteral("E5M2"), QStringLiteral("E4M3FNUZ"),
                                   QStringLiteral("E5M2FNUZ"), QStringLiteral("E3M2"), QStringLiteral("E2M3"),
                                   QStringLiteral("E2M1")};

} // namespace

// ---- 1. Why scale ----------------------------------------------------------------------------
WhyScaleDemo::WhyScaleDemo(QWidget* parent)
    : LearnDemo(tr("Why scale?"),
                tr("Small values such as activations near 0.01 sit in E4M3FN's <b>subnormal</b> range "
                   "(below 2\u207b\u2076 = 0.015625), where the spacing is a fixed 2\u207b\u2079 \u2248 0.00195: "
                   "relative errors reach tens of percent. Per-tensor scaling multiplies the tensor by "
                   "s = max/amax before the cast, so its largest value lands on the format's max and all values "
                   "use the normal range; dividing by s afterwards gives the values back. Change the values, the "
                   "format and the scale rule."),
                parent) {
  values_ = new QLineEdit(QStringLiteral("0.001, 0.005, 0.008, 0.010"), this);
  values_->setObjectName(QStringLiteral("values"));
  values_->setMinimumWidth(260);
  addControl(tr("&Values:"), values_);
  format_ = formatBox(kSmallFormats);
  format_->setObjectName(QStringLiteral("format"));
  addControl(tr("&Format:"), format_);
  preset_ = new QComboBox(this);
  preset_->setObjectName(QStringLiteral("preset"));
  preset_->addItem(tr("TE: s = max/amax (float32)"), QStringLiteral("te_current"));
  preset_->addItem(tr("TE, power of two (rounded down)"), QStringLiteral("te_current_pow2"));
  preset_->addItem(tr("torchao tensorwise (float64 division)"), QStringLiteral("torchao_tensorwise"));
  preset_->addItem(tr("MX block-32, E8M0 scale (RCEIL)"), QStringLiteral("mx_rceil"));
  addControl(tr("&Scale rule:"), preset_);
  makeTable({tr("x"), tr("no scaling: code"), tr("value"), tr("rel. error"), tr("scaled x\u00b7s"), tr("code"),
             tr("dequantized"), tr("rel. error")});
  connect(values_, &QLineEdit::editingFinished, this, &WhyScaleDemo::recompute);
  connect(format_, &QComboBox::currentIndexChanged, this, &WhyScaleDemo::recompute);
  connect(preset_, &QComboBox::currentIndexChanged, this, &WhyScaleDemo::recompute);
  QCustomPlot* p = plot();
  p->xAxis->setLabel(tr("element"));
  p->yAxis->setLabel(tr("relative error (%)"));
  stylePlot(p);
  legendBelow(p);
  p->setInteractions({});
}

void WhyScaleDemo::setInputs(const QString& values, const QString& format, const QString& preset) {
  {
    const QSignalBlocker b1(format_), b2(preset_);
    values_->setText(values);
    format_->setCurrentText(format);
    preset_->setCurrentIndex(std::max(0, preset_->findData(preset)));
  }
  recompute();
}

void WhyScaleDemo::recompute() {
  markComputed();
  QString why;
  const std::vector<float> x = parseValues(values_->text(), 16, &why);
  if (x.empty()) {
    setNote(tr("<b>Cannot read the values:</b> %1.").arg(why.toHtmlEscaped()));
    return;
  }
  const Format& f = formatOf(format_);
  const ScalingConfig cfg = requireScalingPreset(preset_->currentData().toString().toStdString());
  const int n = int(x.size());
  const QuantizedTensor raw = quantizeWithScale(x.data(), 1, n, f, BlockScale{}, Format::ScaleOp::Multiply);
  const QuantizedTensor scaled = quantize(x.data(), 1, n, f, cfg);
  QTableWidget* t = table();
  t->setRowCount(n);
  QVector<double> k, e0, e1;
  auto rel = [](double v, double ref) { return ref != 0 ? std::fabs(v - ref) / std::fabs(ref) : std::fabs(v); };
  for (int i = 0; i < n; ++i) {
    const double v0 = raw.dequantizedAt(0, i), v1 = scaled.dequantizedAt(0, i);
    const double r0 = rel(v0, x[size_t(i)]), r1 = rel(v1, x[size_t(i)]);
    const float s = scaled.quant_scales.empty() ? 1.0f / scaled.dequant_scales[0] : scaled.quant_scales[0];
    setRow(t, i,
           {floatText(x[size_t(i)]), QString::fromStdString(f.hexString(raw.codes[size_t(i)])), numberText(v0), pct(r0),
            floatText(x[size_t(i)] * s), QString::fromStdString(f.hexString(scaled.codes[size_t(i)])), sig(v1),
            pct(r1)});
    k << i + 1;
    e0 << 100 * r0;
    e1 << 100 * r1;
  }
  fitTable();
  QCustomPlot* p = plot();
  p->clearPlottables();
  qDeleteAll(p->findChildren<QCPBarsGroup*>());
  auto* g = new QCPBarsGroup(p);
  const float q = scaled.quant_scales.empty() ? 1.0f / scaled.dequant_scales[0] : scaled.quant_scales[0];
  bars(p, k, e0, QColor(0xef, 0x9a, 0x9a), tr("no scaling (%1)").arg(QString::fromStdString(f.name())), g);
  bars(p, k, e1, QColor(0x90, 0xca, 0xf9), tr("%1, s = %2").arg(preset_->currentText(), floatText(q)), g);
  QSharedPointer<QCPAxisTickerText> tk(new QCPAxisTickerText);
  for (int i = 0; i < n; ++i) tk->addTick(i + 1, QStringLiteral("x = %1").arg(floatText(x[size_t(i)])));
  p->xAxis->setTicker(tk);
  p->xAxis->setRange(0.4, n + 0.6);
  const double worst0 = *std::max_element(e0.begin(), e0.end()), worst1 = *std::max_element(e1.begin(), e1.end());
  p->yAxis->setRange(0, std::max({worst0, worst1, 1.0}) * 1.15);
  replot(p);
  double amax = 0;
  for (float v : x) amax = std::max(amax, double(std::fabs(v)));
  QString text = tr("amax = %1 \u2192 %2 gives the quant scale s = <b>%3</b> (%4 / amax = %5). ")
                     .arg(floatText(float(amax)), preset_->currentText().toHtmlEscaped(), floatText(q),
                          numberText(f.maxFinite()), sig(f.maxFinite() / amax));
  text += tr("Without scaling: %1 of %2 results are subnormal, %3 flushed to zero, %4 clipped to \u00b1max. ")
              .arg(raw.stats.subnormal)
              .arg(n)
              .arg(raw.stats.underflow)
              .arg(raw.stats.saturated);
  text += tr("With scaling: %1 subnormal, %2 flushed, %3 clipped, and the largest relative error goes from <b>%4</b> "
             "to <b>%5</b>.")
              .arg(scaled.stats.subnormal)
              .arg(scaled.stats.underflow)
              .arg(scaled.stats.saturated)
              .arg(pct(worst0 / 100), pct(worst1 / 100));
  if (q != float(f.maxFinite() / amax))
    text += tr(" The rule's scale is not max/amax: a power of two (TE pow2, MX) keeps amax\u00b7s at or below max at "
               "the price of up to one binade of range.");
  setNote(text);
}

// ---- 2. E4M3 vs E5M2 --------------------------------------------------------------------------
RangeDemo::RangeDemo(QWidget* parent)
    : LearnDemo(tr("E4M3 vs E5M2: precision against range"),
                tr("One tensor with a wide log-normal spread like a gradient (|x| = e^N(centre, \u03c3), random signs, "
                   "16384 values), cast with per-tensor scaling to E4M3FN (3 mantissa bits, max 448) and E5M2 "
                   "(2 mantissa bits, max 57344). E4M3FN is twice as precise where values are normal, but its range "
                   "is 18 binades against E5M2's 32: widen the spread and the small values fall below E4M3FN's "
                   "subnormals and flush to zero. That is why recipes use E5M2 for gradients."),
                parent) {
  center_ = new QDoubleSpinBox(this);
  center_->setObjectName(QStringLiteral("centre"));
  center_->setRange(-16, 4);
  center_->setSingleStep(0.5);
  center_->setValue(-6);
  addControl(tr("&Centre of ln|x|:"), center_);
  sigma_ = new QDoubleSpinBox(this);
  sigma_->setObjectName(QStringLiteral("sigma"));
  sigma_->setRange(0.1, 5);
  sigma_->setSingleStep(0.2);
  sigma_->setValue(2.2);
  addControl(tr("&Spread \u03c3 of ln|x|:"), sigma_);
  preset_ = new QComboBox(this);
  preset_->setObjectName(QStringLiteral("preset"));
  preset_->addItem(tr("per tensor, TE"), QStringLiteral("te_current"));
  preset_->addItem(tr("per tensor, power of two"), QStringLiteral("te_current_pow2"));
  preset_->addItem(tr("MX block-32 (E8M0, RCEIL)"), QStringLiteral("mx_rceil"));
  addControl(tr("S&caling:"), preset_);
  makeTable({tr("format"), tr("max"), tr("min subnormal"), tr("range (binades)"), tr("quant scale"), tr("SQNR (dB)"),
             tr("flushed to 0"), tr("median rel. error")});
  for (QDoubleSpinBox* b : {center_, sigma_}) connect(b, &QDoubleSpinBox::valueChanged, this, &RangeDemo::recompute);
  connect(preset_, &QComboBox::currentIndexChanged, this, &RangeDemo::recompute);
  QCustomPlot* p = plot();
  p->xAxis->setLabel(tr("log\u2082 |x| of the original value"));
  p->yAxis->setLabel(tr("relative error (1 = flushed to 0)"));
  p->yAxis->setScaleType(QCPAxis::stLogarithmic);
  p->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  p->yAxis->setNumberFormat(QStringLiteral("eb"));
  p->yAxis->setNumberPrecision(0);
  stylePlot(p);
  legendBelow(p);
}

void RangeDemo::setSpread(double center, double sigma, const QString& preset) {
  {
    const QSignalBlocker b1(center_), b2(sigma_), b3(preset_);
    center_->setValue(center);
    sigma_->setValue(sigma);
    preset_->setCurrentIndex(std::max(0, preset_->findData(preset)));
  }
  recompute();
}

void RangeDemo::recompute() {
  markComputed();
  std::mt19937_64 rng(7);
  std::normal_distribution<double> nd(center_->value(), sigma_->value());
  std::bernoulli_distribution sign(0.5);
  const int n = 16384;
  std::vector<float> x(static_cast<size_t>(n));
  std::vector<double> xd(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    x[size_t(i)] = float(std::exp(nd(rng)) * (sign(rng) ? -1 : 1));
    xd[size_t(i)] = x[size_t(i)];
  }
  const ScalingConfig cfg = requireScalingPreset(preset_->currentData().toString().toStdString());
  QTableWidget* t = table();
  t->setRowCount(2);
  QCustomPlot* p = plot();
  p->clearPlottables();
  struct Row {
    QString name;
    double sqnr, flushed, median;
  };
  std::vector<Row> rows;
  int row = 0;
  for (const Format* f : {&Format::E4M3FN(), &Format::E5M2()}) {
    const QuantizedTensor q = quantize(x.data(), 1, n, *f, cfg);
    const ErrorMetrics m = compareQuantized(x.data(), q);
    const std::vector<float> dq = q.dequantize();
    std::vector<float> rel = errorMap(xd.data(), dq.data(), n, ErrorMapKind::Rel);
    std::vector<float> sorted = rel;
    std::nth_element(sorted.begin(), sorted.begin() + n / 2, sorted.end());
    const double flushed = double(q.stats.underflow) / n;
    const float qs = q.quant_scales.empty() ? 1.0f / q.dequant_scales[0] : q.quant_scales[0];
    setRow(t, row,
           {QString::fromStdString(f->name()), numberText(f->maxFinite()), valueWithPow2(f->minSubnormal()),
            QString::number(f->dynamicRangeBinades(), 'f', 1),
            q.dequant_scales.size() == 1 ? floatText(qs) : tr("%1 blocks").arg(q.dequant_scales.size()),
            QString::number(m.sqnr_db, 'f', 2), pct(flushed), pct(sorted[size_t(n / 2)])});
    QVector<double> px, py;
    for (int i = 0; i < n; i += 2) {
      px << std::log2(std::fabs(double(x[size_t(i)])));
      py << std::max(double(rel[size_t(i)]), 1e-5);
    }
    auto* g = p->addGraph();
    g->setData(px, py);
    g->setLineStyle(QCPGraph::lsNone);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colors::series(row), 3));
    g->setName(tr("%1: SQNR %2 dB, %3 flushed to zero")
                   .arg(QString::fromStdString(f->name()))
                   .arg(m.sqnr_db, 0, 'f', 1)
                   .arg(pct(flushed)));
    rows.push_back({QString::fromStdString(f->name()), m.sqnr_db, flushed, double(sorted[size_t(n / 2)])});
    ++row;
  }
  fitTable();
  p->rescaleAxes(true);
  p->xAxis->scaleRange(1.05);
  p->yAxis->setRange(5e-6, 3);
  replot(p);
  const Row &a = rows[0], &b = rows[1];
  QString text = tr("Left to right: below the format's smallest subnormal (after scaling) values flush to zero (error "
                    "1). In the normal range E4M3FN's errors stay below 2\u207b\u2074 = 6.25%, E5M2's below "
                    "2\u207b\u00b3 = 12.5%. ");
  text += tr("Here %1 flushes <b>%2</b> of the values, %3 <b>%4</b>; median relative error %5 against %6; SQNR %7 "
             "against %8 dB. ")
              .arg(a.name, pct(a.flushed), b.name, pct(b.flushed), pct(a.median), pct(b.median))
              .arg(a.sqnr, 0, 'f', 1)
              .arg(b.sqnr, 0, 'f', 1);
  text += a.median > b.median
              ? tr("<b>%1 keeps more of the tensor.</b> SQNR weighs values by their energy and hardly notices the "
                   "flushed small ones; a gradient's small values still matter (they add up over the steps), and the "
                   "median error shows them.")
                    .arg(b.name)
              : tr("<b>%1 fits this spread:</b> nothing important flushes, and its extra mantissa bit halves the "
                   "error.")
                    .arg(a.name);
  setNote(text);
}

// ---- 3. Outlier ---------------------------------------------------------------------------------
OutlierDemo::OutlierDemo(QWidget* parent)
    : LearnDemo(tr("An outlier: per-tensor against per-channel scaling"),
                tr("Channels (columns) of one token, one of them an outlier: [0.001, 0.002, 0.003, 100]. With one "
                   "scale per tensor the outlier sets amax = 100, s = 448/100 = 4.48, and the small channels land in "
                   "E4M3FN's subnormals. With one scale per block of channels (block 1: per channel) each block gets "
                   "its own amax \u2192 max. Change the values, the format and the block size: a block that holds "
                   "the outlier shares its fate."),
                parent) {
  values_ = new QLineEdit(QStringLiteral("0.001, 0.002, 0.003, 100"), this);
  values_->setObjectName(QStringLiteral("values"));
  values_->setMinimumWidth(240);
  addControl(tr("&Values:"), values_);
  format_ = formatBox(kSmallFormats);
  format_->setObjectName(QStringLiteral("format"));
  addControl(tr("&Format:"), format_);
  block_ = new QSpinBox(this);
  block_->setObjectName(QStringLiteral("block"));
  block_->setRange(1, 16);
  block_->setValue(1);
  block_->setSuffix(tr(" channel(s)"));
  addControl(tr("Scale &block:"), block_);
  makeTable({tr("ch."), tr("x"), tr("tensor scale"), tr("code"), tr("value"), tr("error"), tr("block scale"),
             tr("code"), tr("value"), tr("error")});
  connect(values_, &QLineEdit::editingFinished, this, &OutlierDemo::recompute);
  connect(format_, &QComboBox::currentIndexChanged, this, &OutlierDemo::recompute);
  connect(block_, &QSpinBox::valueChanged, this, &OutlierDemo::recompute);
  QCustomPlot* p = plot();
  p->xAxis->setLabel(tr("channel (column) and its value"));
  p->yAxis->setLabel(tr("relative error (%)"));
  stylePlot(p);
  legendBelow(p);
  p->setInteractions({});
}

void OutlierDemo::setInputs(const QString& values, const QString& format, int block) {
  {
    const QSignalBlocker b1(format_), b2(block_);
    values_->setText(values);
    format_->setCurrentText(format);
    block_->setValue(block);
  }
  recompute();
}

void OutlierDemo::recompute() {
  markComputed();
  QString why;
  const std::vector<float> x = parseValues(values_->text(), 16, &why);
  if (x.empty()) {
    setNote(tr("<b>Cannot read the values:</b> %1.").arg(why.toHtmlEscaped()));
    return;
  }
  const Format& f = formatOf(format_);
  const int n = int(x.size());
  const int b = std::min(block_->value(), n);
  ScalingConfig per_tensor = requireScalingPreset("te_current");
  ScalingConfig blocked = per_tensor;
  blocked.granularity = Granularity::Block1D;
  blocked.block = b;
  const QuantizedTensor pt = quantize(x.data(), 1, n, f, per_tensor);
  const QuantizedTensor pb = quantize(x.data(), 1, n, f, blocked, Axis::Cols);
  QTableWidget* t = table();
  t->horizontalHeaderItem(6)->setText(b == 1 ? tr("channel scale") : tr("scale of %1").arg(b));
  t->setRowCount(n);
  QVector<double> k, e0, e1;
  for (int i = 0; i < n; ++i) {
    const double xi = x[size_t(i)];
    const double v0 = pt.dequantizedAt(0, i), v1 = pb.dequantizedAt(0, i);
    const double r0 = xi != 0 ? std::fabs(v0 - xi) / std::fabs(xi) : 0,
                 r1 = xi != 0 ? std::fabs(v1 - xi) / std::fabs(xi) : 0;
    setRow(t, i,
           {QString::number(i), floatText(x[size_t(i)]), floatText(pt.quant_scales[0]),
            QString::fromStdString(f.hexString(pt.codes[size_t(i)])), sig(v0), pct(r0),
            floatText(pb.quant_scales[size_t(i / b)]), QString::fromStdString(f.hexString(pb.codes[size_t(i)])),
            sig(v1), pct(r1)});
    k << i + 1;
    e0 << std::max(100 * r0, 1e-4);
    e1 << std::max(100 * r1, 1e-4);
  }
  fitTable();
  QCustomPlot* p = plot();
  p->clearPlottables();
  qDeleteAll(p->findChildren<QCPBarsGroup*>());
  auto* g = new QCPBarsGroup(p);
  bars(p, k, e0, QColor(0xef, 0x9a, 0x9a), tr("per tensor (one scale: %1)").arg(floatText(pt.quant_scales[0])), g);
  bars(p, k, e1, QColor(0xa5, 0xd6, 0xa7),
       b == 1 ? tr("per channel (one scale per column)") : tr("one scale per %1 channels").arg(b), g);
  QSharedPointer<QCPAxisTickerText> tk(new QCPAxisTickerText);
  for (int i = 0; i < n; ++i) tk->addTick(i + 1, tr("ch %1: %2").arg(i).arg(floatText(x[size_t(i)])));
  p->xAxis->setTicker(tk);
  p->xAxis->setRange(0.4, n + 0.6);
  const double worst0 = *std::max_element(e0.begin(), e0.end()), worst1 = *std::max_element(e1.begin(), e1.end());
  p->yAxis->setRange(0, std::max({worst0, worst1, 1.0}) * 1.2);
  replot(p);
  setNote(tr("Per tensor: %1 of %2 values subnormal, %3 flushed to zero, worst error <b>%4</b>. %5: %6 subnormal, "
             "%7 flushed, worst error <b>%8</b> (bars at 0 are exact). The price: %9 scales instead of 1, and the GEMM "
             "must apply them per block (cuBLASLt \"outer vector\" scaling for one per channel).")
              .arg(pt.stats.subnormal)
              .arg(n)
              .arg(pt.stats.underflow)
              .arg(pct(worst0 / 100))
              .arg(b == 1 ? tr("Per channel") : tr("In blocks of %1").arg(b))
              .arg(pb.stats.subnormal)
              .arg(pb.stats.underflow)
              .arg(pct(worst1 / 100))
              .arg(pb.dequant_scales.size()));
}

} // namespace fp8lab::ui

#include "views/number_line_view.h"
#include "session/session_paths.h"

#include "session/run_access.h"

#include "scaling/scaling.h"
#include "session/session_document.h"
#include "plot/style.h"

#include "plot/qcp.h"
#include "session/run_sites.h"
#include "views/view_registry.h"

#include <QComboBox>
#include <QHash>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include <cmath>
#include <map>
#include <random>

namespace fp8lab::ui {

namespace {

/// Tick labels 2^k on a log2 axis.
class Pow2Ticker : public QCPAxisTickerFixed {
public:
  Pow2Ticker() {
    setTickStep(1);
    setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  }
  QString getTickLabel(double tick, const QLocale&, QChar, int) override {
    return QStringLiteral("2") + superscript(int(std::lround(tick)));
  }
};

int binadeOf(double a) {
  int e = 0;
  std::frexp(a, &e);
  return e - 1; // a in [2^(e-1), 2^e)
}

QCPScatterStyle tickStyle(const QColor& c, double h) {
  // QCustomPlot scales a custom path by size/6, so a path of ±3 drawn at size 2h is ±h pixels.
  QPainterPath p;
  p.moveTo(0, -3);
  p.lineTo(0, 3);
  QCPScatterStyle s(p, QPen(c, 1.2), Qt::NoBrush, 2 * h);
  return s;
}

} // namespace

NumberLineView::NumberLineView(QWidget* parent) : View(parent) {
  auto* v = new QVBoxLayout(this);
  auto* h = new QHBoxLayout;
  h->addWidget(new QLabel(tr("Format:"), this));
  primary_ = new QComboBox(this);
  primary_->setObjectName(QStringLiteral("primaryFormat"));
  secondary_ = new QComboBox(this);
  secondary_->setObjectName(QStringLiteral("secondaryFormat"));
  secondary_->addItem(tr("(none)"), QString());
  for (const Format* f : Format::all()) {
    const QString n = QString::fromStdString(f->name());
    primary_->addItem(n, n);
    secondary_->addItem(n, n);
  }
  h->addWidget(primary_);
  h->addWidget(new QLabel(tr("compare with:"), this));
  h->addWidget(secondary_);
  h->addSpacing(20);
  h->addWidget(new QLabel(tr("Tensor:"), this));
  source_ = new QComboBox(this);
  source_->setObjectName(QStringLiteral("tensorSource"));
  source_->addItem(tr("none"), QStringLiteral("none"));
  source_->addItem(tr("normal(0, \u03c3)"), QStringLiteral("normal"));
  source_->addItem(tr("log-normal(0, \u03c3)"), QStringLiteral("lognormal"));
  source_->addItem(tr("uniform(\u2212\u03c3, \u03c3)"), QStringLiteral("uniform"));
  source_->addItem(tr("normal + 0.1% outliers \u00d7100"), QStringLiteral("outliers"));
  source_->addItem(tr("current run\u2019s tensor"), QStringLiteral("run"));
  h->addWidget(source_);
  run_tensor_ = new QComboBox(this);
  run_tensor_->setObjectName(QStringLiteral("runTensor"));
  run_tensor_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  run_tensor_->setToolTip(tr("The tensor of the run selected in the Session panel"));
  run_tensor_->hide();
  h->addWidget(run_tensor_);
  h->addWidget(new QLabel(QStringLiteral("\u03c3:"), this));
  sigma_ = new QDoubleSpinBox(this);
  sigma_->setDecimals(5);
  sigma_->setRange(1e-5, 1e5);
  sigma_->setValue(0.01);
  sigma_->setToolTip(tr("Spread of the synthetic tensor"));
  h->addWidget(sigma_);
  h->addWidget(new QLabel(tr("values:"), this));
  count_ = new QSpinBox(this);
  count_->setRange(16, 1 << 22);
  count_->setValue(65536);
  h->addWidget(count_);
  h->addStretch(1);
  v->addLayout(h);

  plot_ = new QCustomPlot(this);
  plot_->setObjectName(QStringLiteral("numberLinePlot"));
  plot_->plotLayout()->clear();
  values_rect_ = new QCPAxisRect(plot_);
  density_rect_ = new QCPAxisRect(plot_);
  hist_rect_ = new QCPAxisRect(plot_);
  plot_->plotLayout()->addElement(0, 0, values_rect_);
  plot_->plotLayout()->addElement(1, 0, density_rect_);
  plot_->plotLayout()->addElement(2, 0, hist_rect_);
  plot_->plotLayout()->setRowStretchFactors({1.0, 0.8, 1.1});
  auto* group = new QCPMarginGroup(plot_);
  for (QCPAxisRect* r : {values_rect_, density_rect_, hist_rect_}) {
    r->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    r->axis(QCPAxis::atBottom)->setTicker(QSharedPointer<QCPAxisTicker>(new Pow2Ticker));
    r->setRangeDrag(Qt::Horizontal);
    r->setRangeZoom(Qt::Horizontal);
    connect(r->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            [this](const QCPRange& rg) {
              for (QCPAxisRect* o : {values_rect_, density_rect_, hist_rect_})
                if (o->axis(QCPAxis::atBottom)->range() != rg) {
                  o->axis(QCPAxis::atBottom)->setRange(rg);
                }
            });
  }
  auto makeLegend = [this](QCPAxisRect* r, Qt::Alignment where) {
    auto* leg = new QCPLegend;
    r->insetLayout()->addElement(leg, where);
    leg->setLayer(QStringLiteral("legend"));
    leg->setFont(QFont(plot_->font().family(), 8));
    leg->setBrush(QColor(255, 255, 255, 225));
    leg->setBorderPen(QPen(QColor(0xbd, 0xbd, 0xbd)));
    return leg;
  };
  density_legend_ = makeLegend(density_rect_, Qt::AlignTop | Qt::AlignRight);
  hist_legend_ = makeLegend(hist_rect_, Qt::AlignTop | Qt::AlignHCenter);
  plot_->setAutoAddPlottableToLegend(false);
  stylePlot(plot_);
  v->addWidget(plot_, 1);
  info_ = new QLabel(this);
  info_->setObjectName(QStringLiteral("info"));
  info_->setWordWrap(true);
  v->addWidget(info_);

  connect(primary_, &QComboBox::currentIndexChanged, this, &NumberLineView::rebuild);
  connect(secondary_, &QComboBox::currentIndexChanged, this, &NumberLineView::rebuild);
  connect(source_, &QComboBox::currentIndexChanged, this, [this] {
    fillRunTensors();
    rebuild();
  });
  connect(run_tensor_, &QComboBox::currentIndexChanged, this, &NumberLineView::rebuild);
  connect(sigma_, &QDoubleSpinBox::valueChanged, this, &NumberLineView::rebuild);
  connect(count_, &QSpinBox::valueChanged, this, &NumberLineView::rebuild);

  {
    const QSignalBlocker b1(primary_), b2(secondary_), b3(source_);
    primary_->setCurrentIndex(primary_->findData(QStringLiteral("E4M3FN")));
    secondary_->setCurrentIndex(secondary_->findData(QStringLiteral("E5M2")));
    source_->setCurrentIndex(source_->findData(QStringLiteral("normal")));
  }
  rebuild();
}

void NumberLineView::setSession(SessionDocument* s) {
  View::setSession(s);
  connect(s, &SessionDocument::currentRunChanged, this, [this] {
    if (source_->currentData().toString() != QStringLiteral("run")) return;
    fillRunTensors();
    rebuild();
  });
}

QStringList histogramTensors(const RunAccess& run) {
  QStringList out;
  auto twoD = [&run](const QString& p) { return run.has(p) && run.shape(p).size() == 2; };
  for (const QString& p : {sessionPath(layout::inputs("A")), sessionPath(layout::inputs("B"))})
    if (twoD(p)) out << p;
  const std::vector<std::string> datasets = layoutPaths(run.datasets());
  QStringList weights, stored;
  QHash<QString, QString> module_of;
  // The MLP's weights/<fcN>/kernel; a language model's weights/<module>.weight (2-D: the Linear
  // weights and the embeddings); a checkpoint's dequantized tensors.
  for (const auto& w : layout::weightTensors(datasets)) {
    const QString p = QString::fromStdString(w.path);
    if (!twoD(p)) continue;
    weights << p;
    module_of.insert(p, QString::fromStdString(w.module));
  }
  if (run.type() == QStringLiteral("checkpoint"))
    for (const std::string& d : layout::dequantizedTensors(datasets))
      if (twoD(QString::fromStdString(d))) stored << QString::fromStdString(d);
  const QStringList sites = runSites(run);
  if (!sites.isEmpty()) {
    // In the model's order: embeddings, then block by block, the head last.
    auto module = [&module_of](const QString& p) { return module_of.value(p); };
    std::stable_sort(weights.begin(), weights.end(), [&](const QString& a, const QString& b) {
      return tensorOrder(module(a), sites) < tensorOrder(module(b), sites);
    });
  }
  return out + weights + stored;
}

void NumberLineView::fillRunTensors() {
  const bool on = source_->currentData().toString() == QStringLiteral("run");
  run_tensor_->setVisible(on);
  if (!on) return;
  const QString was = run_tensor_->currentData().toString();
  QStringList paths;
  if (session_ && session_->currentRun() >= 0)
    paths = histogramTensors(*RunAccess::forRecord(session_->run(session_->currentRun()), session_->fileName()));
  const QSignalBlocker b(run_tensor_);
  run_tensor_->clear();
  for (const QString& p : paths) run_tensor_->addItem(p, p);
  run_tensor_->setCurrentIndex(std::max(0, run_tensor_->findData(was)));
  run_tensor_->setEnabled(!paths.isEmpty());
}

bool NumberLineView::setRunTensor(const QString& path) {
  {
    const QSignalBlocker b(source_);
    source_->setCurrentIndex(source_->findData(QStringLiteral("run")));
  }
  fillRunTensors();
  const int i = run_tensor_->findData(path);
  if (i < 0) return false;
  {
    const QSignalBlocker b(run_tensor_);
    run_tensor_->setCurrentIndex(i);
  }
  rebuild();
  return true;
}

bool NumberLineView::setFormats(const QString& primary, const QString& secondary) {
  const Format* p = Format::byName(primary.toStdString());
  const Format* s = secondary.isEmpty() ? nullptr : Format::byName(secondary.toStdString());
  if (!p || (!secondary.isEmpty() && !s)) return false;
  const QSignalBlocker b1(primary_), b2(secondary_);
  primary_->setCurrentIndex(primary_->findData(QString::fromStdString(p->name())));
  secondary_->setCurrentIndex(s ? secondary_->findData(QString::fromStdString(s->name())) : 0);
  rebuild();
  return true;
}

bool NumberLineView::showRange(const QString& format, double lo, double hi, const QString& label) {
  const Format* f = Format::byName(format.toStdString());
  if (!f || !(lo > 0) || !(hi >= lo) || !std::isfinite(hi)) return false;
  range_ = {QString::fromStdString(f->name()), label, lo, hi};
  const QString second = secondary_->currentData().toString();
  return setFormats(range_.format, second == range_.format ? QString() : second);
}

bool NumberLineView::showValues(const QString& format, const QList<float>& values, const QString& label) {
  const Format* f = Format::byName(format.toStdString());
  if (!f || values.isEmpty()) return false;
  block_values_.assign(values.begin(), values.end());
  block_label_ = label;
  if (source_->findData(QStringLiteral("block")) < 0) source_->addItem(tr("block elements"), QStringLiteral("block"));
  {
    const QSignalBlocker b(source_);
    source_->setCurrentIndex(source_->findData(QStringLiteral("block")));
  }
  const QString second = secondary_->currentData().toString();
  const QString name = QString::fromStdString(f->name());
  return setFormats(name, second == name ? QString() : second);
}

void NumberLineView::clearRange() {
  range_ = {};
  rebuild();
}

QStringList NumberLineView::formats() const {
  QStringList l{primary_->currentData().toString()};
  if (!secondary_->currentData().toString().isEmpty() && secondary_->currentData() != primary_->currentData())
    l << secondary_->currentData().toString();
  return l;
}

void NumberLineView::setTensorSource(const QString& source, double sigma) {
  const QSignalBlocker b1(source_), b2(sigma_);
  int i = source_->findData(source);
  if (i >= 0) source_->setCurrentIndex(i);
  sigma_->setValue(sigma);
  fillRunTensors();
  rebuild();
}

std::vector<float> NumberLineView::sourceValues(QString* name) const {
  const QString src = source_->currentData().toString();
  const double sigma = sigma_->value();
  const int n = count_->value();
  std::vector<float> x;
  if (src == QStringLiteral("none")) return x;
  if (src == QStringLiteral("block")) {
    *name = tr("%1, %2 elements").arg(block_label_).arg(qint64(block_values_.size()));
    return block_values_;
  }
  if (src == QStringLiteral("run")) {
    if (!session_ || session_->currentRun() < 0) {
      *name = tr("no run selected");
      return x;
    }
    const RunRecord& r = session_->run(session_->currentRun());
    // Through RunAccess: a run read lazily from its file has no tensors in memory.
    const auto a = RunAccess::forRecord(r, session_->fileName());
    const QString path = run_tensor_->currentData().toString();
    Block b;
    QString err;
    if (path.isEmpty() || !a->has(path) || !a->readAll(path, &b, &err)) {
      *name = path.isEmpty()
                  ? tr("%1 stores no tensor to show (inputs, trained weights or a checkpoint's weights)").arg(r.label)
                  : tr("%1: %2").arg(r.label, err);
      return x;
    }
    *name = tr("%1 %2 [%3\u00d7%4]").arg(r.label, path).arg(b.rows).arg(b.cols);
    x.assign(b.v.begin(), b.v.end());
    return x;
  }
  std::mt19937_64 rng(1);
  x.resize(size_t(n));
  if (src == QStringLiteral("normal") || src == QStringLiteral("outliers")) {
    std::normal_distribution<double> d(0, sigma);
    for (auto& v : x) v = float(d(rng));
    if (src == QStringLiteral("outliers"))
      for (size_t i = 0; i < x.size(); i += 1000) x[i] *= 100.0f;
    *name = src == QStringLiteral("normal")
                ? tr("normal(0, %1), %2 values").arg(sigma).arg(n)
                : tr("normal(0, %1) + 0.1% outliers \u00d7100, %2 values").arg(sigma).arg(n);
  } else if (src == QStringLiteral("lognormal")) {
    std::lognormal_distribution<double> d(0, sigma);
    for (auto& v : x) v = float(d(rng));
    *name = tr("log-normal(0, %1), %2 values").arg(sigma).arg(n);
  } else {
    std::uniform_real_distribution<double> d(-sigma, sigma);
    for (auto& v : x) v = float(d(rng));
    *name = tr("uniform(\u2212%1, %1), %2 values").arg(sigma).arg(n);
  }
  return x;
}

TensorOverlay NumberLineView::analyse(const std::vector<float>& x, const Format& f, const QString& source) {
  TensorOverlay o;
  o.source = source;
  o.elements = qint64(x.size());
  if (x.empty() || f.bits() > 8) return o;
  // Per-tensor current scaling with Transformer Engine's rule (core/scaling preset te_current:
  // quant multiplier s = max/amax in float32, amax 0/inf/NaN -> 1), and the unscaled cast.
  static const ScalingConfig te = requireScalingPreset("te_current");
  const int64_t n = int64_t(x.size());
  const QuantizedTensor q0 = quantizeWithScale(x.data(), 1, n, f, BlockScale{}, Format::ScaleOp::Multiply);
  const QuantizedTensor q1 = quantize(x.data(), 1, n, f, te);
  o.quant_scale = q1.quant_scales.empty() ? 1.0 : double(q1.quant_scales[0]);
  o.amax = amaxOf(x.data(), x.size(), true);
  const float s = float(o.quant_scale);
  std::map<int, std::pair<qint64, qint64>> bins;
  qint64 nonzero = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double a = std::fabs(double(x[i]));
    if (!(a > 0) || !std::isfinite(a)) continue;
    ++nonzero;
    const double as = std::fabs(double(x[i] * s));
    bins[binadeOf(a)].first++;
    if (as > 0) bins[binadeOf(as)].second++;
  }
  if (nonzero == 0) return o;
  for (const auto& [e, c] : bins) {
    o.binade.push_back(e);
    o.before.push_back(double(c.first) / double(nonzero));
    o.after.push_back(double(c.second) / double(nonzero));
  }
  o.underflow_before = double(q0.stats.underflow) / double(nonzero);
  o.underflow_after = double(q1.stats.underflow) / double(nonzero);
  o.saturate_before = double(q0.stats.saturated) / double(nonzero);
  o.saturate_after = double(q1.stats.saturated) / double(nonzero);
  return o;
}

void NumberLineView::rebuild() {
  plot_->clearPlottables();
  plot_->clearItems();
  const QStringList names = formats();
  QList<const Format*> fmts;
  for (const QString& n : names) fmts << Format::byName(n.toStdString());

  // ---- values on the log2 axis ----
  double xmin = 1e9, xmax = -1e9;
  QSharedPointer<QCPAxisTickerText> rowTicker(new QCPAxisTickerText);
  const int nf = int(fmts.size());
  for (int i = 0; i < nf; ++i) {
    const Format& f = *fmts[i];
    const double lo = std::log2(f.minSubnormal()), hi = std::log2(f.maxFinite());
    xmin = std::min(xmin, lo);
    xmax = std::max(xmax, hi);
    const double yPos = 3.0 * (nf - 1 - i) + 1, yNeg = yPos - 1;
    const QString fname = QString::fromStdString(f.name());
    rowTicker->addTick(yPos, QStringLiteral("+ ") + fname);
    rowTicker->addTick(yNeg, QStringLiteral("\u2212 ") + fname);
    QVector<double> sx, sy, nx, ny;
    for (uint32_t c = 0; c < f.codeCount(); ++c) {
      const double v = f.decode(c);
      if (!std::isfinite(v) || v == 0) continue;
      const double y = v > 0 ? yPos : yNeg;
      if (f.classify(c) == CodeClass::Subnormal) {
        sx << std::log2(std::fabs(v));
        sy << y;
      } else {
        nx << std::log2(std::fabs(v));
        ny << y;
      }
    }
    const QColor col = colors::series(i);
    // Subnormal zone of this format, on its two rows.
    if (f.hasSubnormals()) {
      auto* zone = new QCPItemRect(plot_);
      zone->setClipAxisRect(values_rect_);
      for (auto* pos : {zone->topLeft, zone->bottomRight}) {
        pos->setAxisRect(values_rect_);
        pos->setAxes(values_rect_->axis(QCPAxis::atBottom), values_rect_->axis(QCPAxis::atLeft));
      }
      zone->topLeft->setCoords(lo - 0.5, yPos + 0.45);
      zone->bottomRight->setCoords(std::log2(f.minNormal()) - 0.02, yNeg - 0.45);
      zone->setPen(Qt::NoPen);
      zone->setBrush(QColor(255, 204, 128, 90));
    }
    auto addTicks = [&](const QVector<double>& x, const QVector<double>& y, const QColor& c, const QString& name) {
      auto* g = new QCPGraph(values_rect_->axis(QCPAxis::atBottom), values_rect_->axis(QCPAxis::atLeft));
      g->setData(x, y);
      g->setLineStyle(QCPGraph::lsNone);
      g->setScatterStyle(tickStyle(c, 9));
      g->setName(name);
      g->setAntialiasedScatters(false);
      return g;
    };
    addTicks(nx, ny, col, tr("%1 normal values").arg(fname));
    if (!sx.isEmpty()) addTicks(sx, sy, QColor(0xe6, 0x7e, 0x22), tr("%1 subnormal").arg(fname))->removeFromLegend();
    // Markers: min normal and max, as short labelled bars on this format's rows.
    auto mark = [&](double xv, const QString& text, const QColor& c) {
      auto* l = new QCPItemLine(plot_);
      l->setClipAxisRect(values_rect_);
      for (auto* pos : {l->start, l->end}) {
        pos->setAxisRect(values_rect_);
        pos->setAxes(values_rect_->axis(QCPAxis::atBottom), values_rect_->axis(QCPAxis::atLeft));
      }
      l->start->setCoords(xv, yNeg - 0.42);
      l->end->setCoords(xv, yPos + 0.42);
      l->setPen(QPen(c, 1.2, Qt::DashLine));
      auto* t = new QCPItemText(plot_);
      t->setClipAxisRect(values_rect_);
      t->position->setAxisRect(values_rect_);
      t->position->setAxes(values_rect_->axis(QCPAxis::atBottom), values_rect_->axis(QCPAxis::atLeft));
      t->position->setCoords(xv, yPos + 0.45);
      t->setPositionAlignment(Qt::AlignBottom | Qt::AlignHCenter);
      t->setText(text);
      QFont fn = plot_->font();
      fn.setPointSizeF(8);
      t->setFont(fn);
      t->setColor(c.darker(130));
    };
    mark(std::log2(f.maxFinite()), tr("max %1").arg(numberText(f.maxFinite())), col);
    if (f.hasSubnormals())
      mark(std::log2(f.minNormal()), tr("min normal %1").arg(pow2Text(f.minExponent())), QColor(0xe6, 0x7e, 0x22));
  }
  QCPAxis* vx = values_rect_->axis(QCPAxis::atBottom);
  QCPAxis* vy = values_rect_->axis(QCPAxis::atLeft);
  // A marked range (a block's elements after scaling), over the rows of its format.
  const int ri = int(names.indexOf(range_.format));
  if (!range_.label.isEmpty() && ri >= 0) {
    const double yPos = 3.0 * (nf - 1 - ri) + 1, yNeg = yPos - 1;
    auto* band = new QCPItemRect(plot_);
    band->setClipAxisRect(values_rect_);
    for (auto* pos : {band->topLeft, band->bottomRight}) {
      pos->setAxisRect(values_rect_);
      pos->setAxes(vx, vy);
    }
    band->topLeft->setCoords(std::log2(range_.lo), yPos + 0.5);
    band->bottomRight->setCoords(std::log2(range_.hi), yNeg - 0.5);
    band->setPen(QPen(QColor(0x00, 0x72, 0xb2), 1.5));
    band->setBrush(QColor(0x56, 0xb4, 0xe9, 70));
    auto* t = new QCPItemText(plot_);
    t->setClipAxisRect(values_rect_);
    t->position->setAxisRect(values_rect_);
    t->position->setAxes(vx, vy);
    t->position->setCoords((std::log2(range_.lo) + std::log2(range_.hi)) / 2, yPos - 0.5);
    t->setPositionAlignment(Qt::AlignCenter);
    t->setText(tr("%1: %2 … %3").arg(range_.label, numberText(range_.lo), numberText(range_.hi)));
    t->setColor(QColor(0x00, 0x72, 0xb2).darker(120));
    t->setBrush(QColor(255, 255, 255, 220));
  }
  vy->setTicker(rowTicker);
  vy->setRange(-0.6, 3 * nf - 1.0);
  vy->grid()->setVisible(false);
  vx->setLabel(tr("|value| (log\u2082 axis) \u2014 each tick is one representable value; shaded: subnormal zone; 0 is "
                  "not on a log axis"));
  vx->setRange(std::floor(xmin) - 1.5, std::ceil(xmax) + 1.5);

  // ---- density: values per binade ----
  QCPAxis* dx = density_rect_->axis(QCPAxis::atBottom);
  QCPAxis* dy = density_rect_->axis(QCPAxis::atLeft);
  auto* barsGroup = new QCPBarsGroup(plot_);
  double dmax = 1;
  for (int i = 0; i < nf; ++i) {
    const Format& f = *fmts[i];
    std::map<int, int> per;
    for (uint32_t c = 0; c < f.codeCount(); ++c) {
      const double v = f.decode(c);
      if (std::isfinite(v) && v > 0) per[binadeOf(v)]++;
    }
    auto* b = new QCPBars(dx, dy);
    QVector<double> k, val;
    for (auto [e, n] : per) {
      k << e + 0.5;
      val << n;
      dmax = std::max(dmax, double(n));
    }
    b->setData(k, val);
    b->setWidth(nf > 1 ? 0.4 : 0.8);
    b->setBarsGroup(barsGroup);
    b->setPen(QPen(colors::series(i).darker(120)));
    b->setBrush(colors::series(i).lighter(130));
    b->setName(tr("%1: positive values per binade").arg(QString::fromStdString(f.name())));
  }
  dy->setLabel(tr("values per binade\n(count)"));
  dy->setRange(0, dmax * 1.9);
  dx->setLabel(tr("binade [2\u1d49, 2\u1d49\u207a\u00b9)"));
  density_legend_->clearItems();
  for (int i = 0; i < plot_->plottableCount(); ++i)
    if (auto* b = qobject_cast<QCPBars*>(plot_->plottable(i)); b && b->keyAxis()->axisRect() == density_rect_)
      density_legend_->addItem(new QCPPlottableLegendItem(density_legend_, b));
  rebuildOverlay();
  ui::replot(plot_);
}

void NumberLineView::rebuildOverlay() {
  QCPAxis* hx = hist_rect_->axis(QCPAxis::atBottom);
  QCPAxis* hy = hist_rect_->axis(QCPAxis::atLeft);
  hist_legend_->clearItems();
  hist_legend_->setVisible(false);
  QString name;
  const std::vector<float> x = sourceValues(&name);
  const Format& f = *Format::byName(primary_->currentData().toString().toStdString());
  hy->setLabel(tr("share of elements\n(% per binade)"));
  hx->setLabel(tr("|x| (log\u2082 axis), bins aligned to %1's binades").arg(QString::fromStdString(f.name())));
  if (x.empty() || f.bits() > 8) {
    overlay_ = TensorOverlay{};
    auto* t = new QCPItemText(plot_);
    t->setClipAxisRect(hist_rect_);
    t->position->setType(QCPItemPosition::ptAxisRectRatio);
    t->position->setAxisRect(hist_rect_);
    t->position->setCoords(0.5, 0.5);
    t->setText(f.bits() > 8     ? tr("Tensor histograms are shown for 8-bit and smaller formats; pick one above.")
               : name.isEmpty() ? tr("No tensor: choose a distribution or \u201ccurrent run\u2019s tensor\u201d above "
                                     "to overlay its histogram.")
                                : tr("No tensor (%1): run an experiment or pick a distribution above.").arg(name));
    t->setColor(QColor(0x61, 0x61, 0x61));
    hy->setRange(0, 1);
    info_->setText(
        tr("Ticks: every finite value of the format(s). Bars: how many values each binade holds (2\u1d50 for "
           "normal binades)."));
    return;
  }
  overlay_ = analyse(x, f, name);
  QVector<double> k, b, a;
  double ymax = 1;
  for (size_t i = 0; i < overlay_.binade.size(); ++i) {
    k << overlay_.binade[i] + 0.5;
    b << 100 * overlay_.before[i];
    a << 100 * overlay_.after[i];
    ymax = std::max({ymax, b.last(), a.last()});
  }
  // Zones: below half the min subnormal everything underflows; above max it saturates.
  auto zone = [&](double x0, double x1, const QColor& c, const QString& label) {
    auto* r = new QCPItemRect(plot_);
    r->setClipAxisRect(hist_rect_);
    for (auto* p : {r->topLeft, r->bottomRight}) {
      p->setAxisRect(hist_rect_);
      p->setAxes(hx, hy);
    }
    r->topLeft->setCoords(x0, ymax * 1.8);
    r->bottomRight->setCoords(x1, 0);
    r->setPen(Qt::NoPen);
    r->setBrush(c);
    auto* t = new QCPItemText(plot_);
    t->setClipAxisRect(hist_rect_);
    t->position->setAxisRect(hist_rect_);
    t->position->setAxes(hx, hy);
    t->position->setCoords(x0 < -100 ? x1 - 0.2 : x0 + 0.2, ymax * 1.22);
    t->setPositionAlignment(Qt::AlignTop | (x0 < -100 ? Qt::AlignRight : Qt::AlignLeft));
    t->setText(label);
    t->setColor(QColor(0x42, 0x42, 0x42));
    QFont fn = plot_->font();
    fn.setPointSizeF(8);
    t->setFont(fn);
  };
  zone(-1000, std::log2(f.minSubnormal()) - 1, QColor(189, 189, 189, 110), tr("underflow \u2192 0"));
  zone(std::log2(f.maxFinite()), 1000, QColor(239, 83, 80, 60), tr("saturates"));
  auto* gb = new QCPBars(hx, hy);
  gb->setData(k, b);
  gb->setWidth(1.0);
  gb->setPen(QPen(QColor(0x42, 0x42, 0x42)));
  gb->setBrush(QColor(0x9e, 0x9e, 0x9e, 110));
  gb->setName(tr("before scaling: %1% underflow, %2% saturate")
                  .arg(100 * overlay_.underflow_before, 0, 'f', 2)
                  .arg(100 * overlay_.saturate_before, 0, 'f', 2));
  auto* ga = new QCPBars(hx, hy);
  ga->setData(k, a);
  ga->setWidth(0.55);
  ga->setPen(QPen(colors::series(0).darker(120)));
  ga->setBrush(QColor(colors::series(0).red(), colors::series(0).green(), colors::series(0).blue(), 150));
  ga->setName(tr("after \u00d7 %1 (per-tensor, amax \u2192 max): %2% underflow, %3% saturate")
                  .arg(errorText(overlay_.quant_scale))
                  .arg(100 * overlay_.underflow_after, 0, 'f', 2)
                  .arg(100 * overlay_.saturate_after, 0, 'f', 2));
  hy->setRange(0, ymax * 1.8);
  hist_legend_->addItem(new QCPPlottableLegendItem(hist_legend_, gb));
  hist_legend_->addItem(new QCPPlottableLegendItem(hist_legend_, ga));
  hist_legend_->setVisible(true);
  info_->setText(tr("Tensor: %1 \u00b7 amax %2 \u00b7 %3 quant scale s = max/amax = %4 (x_q = cast(x\u00b7s), "
                    "Transformer Engine current scaling). Shares are of the non-zero elements.")
                     .arg(name, floatText(float(overlay_.amax)), QString::fromStdString(f.name()),
                          floatText(float(overlay_.quant_scale))));
}

QString NumberLineView::csv() const {
  QString t = QStringLiteral("format,code_hex,value,log2_abs,class\n");
  for (const QString& n : formats()) {
    const Format& f = *Format::byName(n.toStdString());
    for (uint32_t c = 0; c < f.codeCount(); ++c) {
      const double v = f.decode(c);
      if (!std::isfinite(v)) continue;
      t += QStringLiteral("%1,%2,%3,%4,%5\n")
               .arg(n, QString::fromStdString(f.hexString(c)), QString::number(v, 'g', 17),
                    v == 0 ? QString() : QString::number(std::log2(std::fabs(v)), 'g', 17),
                    QString::fromLatin1(toString(f.classify(c))));
    }
  }
  if (!overlay_.binade.empty()) {
    t += QStringLiteral("\nbinade_lo,share_before,share_after\n");
    for (size_t i = 0; i < overlay_.binade.size(); ++i)
      t += QStringLiteral("%1,%2,%3\n")
               .arg(overlay_.binade[i])
               .arg(overlay_.before[i], 0, 'g', 17)
               .arg(overlay_.after[i], 0, 'g', 17);
  }
  return t;
}

FP8LAB_REGISTER_VIEW(NumberLineView, "numberline", 20);

} // namespace fp8lab::ui

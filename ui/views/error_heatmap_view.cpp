#include "views/error_heatmap_view.h"
#include "session/session_paths.h"

#include "views/bit_layout_view.h"
#include "plot/plot_util.h"
#include "plot/qcp.h"
#include "session/run_box.h"
#include "session/session_document.h"
#include "plot/style.h"
#include "views/view_registry.h"
#include "views/view_render.h"

#include <QComboBox>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QStyle>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>

namespace fp8lab::ui {

namespace {
QString rangeText(int64_t a, int64_t n) {
  return n <= 1 ? QString::number(a) : QStringLiteral("%1\u2013%2").arg(a).arg(a + n - 1);
}
} // namespace

ErrorHeatmapView::ErrorHeatmapView(QWidget* parent) : AnalysisView(RunCap::Gemm, parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  auto* bar = new QHBoxLayout;
  auto addBox = [&](const QString& label, QComboBox* box, const QString& name) {
    auto* l = new QLabel(label, this);
    l->setBuddy(box);
    box->setObjectName(name);
    bar->addWidget(l);
    bar->addWidget(box);
  };
  auto* run_box = new QComboBox(this);
  run_box->setMinimumContentsLength(14);
  run_box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  addBox(tr("&Run:"), run_box, QStringLiteral("run"));
  bindRunBox(run_box);
  mode_box_ = new QComboBox(this);
  mode_box_->addItem(tr("Total error of D"), int(Mode::Total));
  mode_box_->addItem(tr("Quantization error of D"), int(Mode::Quantization));
  mode_box_->addItem(tr("Accumulation error of D"), int(Mode::Accumulation));
  mode_box_->addItem(tr("Split: quantization | accumulation | total"), int(Mode::Split));
  mode_box_->addItem(tr("Quantization error of A"), int(Mode::OperandA));
  mode_box_->addItem(tr("Quantization error of B"), int(Mode::OperandB));
  mode_box_->addItem(tr("Kernel check: observed \u2212 reference model"), int(Mode::KernelCheck));
  addBox(tr("&Map:"), mode_box_, QStringLiteral("mode"));
  bar->addStretch(1);
  v->addLayout(bar);
  bar = new QHBoxLayout; // second row: how the map is drawn
  kind_box_ = new QComboBox(this);
  kind_box_->addItem(tr("absolute |t \u2212 r|"), int(ErrorKind::Abs));
  kind_box_->addItem(tr("relative |t \u2212 r| / |r|"), int(ErrorKind::Rel));
  kind_box_->addItem(tr("ULP of the output type"), int(ErrorKind::Ulp));
  addBox(tr("&Error:"), kind_box_, QStringLiteral("kind"));
  scale_box_ = new QComboBox(this);
  scale_box_->addItem(tr("log"), 1);
  scale_box_->addItem(tr("linear"), 0);
  addBox(tr("&Colour scale:"), scale_box_, QStringLiteral("scale"));
  agg_box_ = new QComboBox(this);
  agg_box_->addItem(tr("elements (max when decimated)"), int(Aggregation::Elements));
  agg_box_->addItem(tr("tile mean"), int(Aggregation::TileMean));
  agg_box_->addItem(tr("tile max"), int(Aggregation::TileMax));
  addBox(tr("C&ells:"), agg_box_, QStringLiteral("aggregation"));
  auto* reset = new QPushButton(tr("Whole map"), this);
  reset->setObjectName(QStringLiteral("resetZoom"));
  reset->setToolTip(tr("Zoom out to the whole map (the decimated overview)"));
  bar->addWidget(reset);
  bar->addStretch(1);
  v->addLayout(bar);

  auto* split = new QSplitter(Qt::Horizontal, this);
  plot_ = new QCustomPlot(split);
  plot_->setAutoAddPlottableToLegend(false); // each plot builds its own legends
  plot_->setObjectName(QStringLiteral("heatmapPlot"));
  plot_->setMinimumSize(420, 300);
  plot_->setMouseTracking(true);
  // The detail pane scrolls: its text (a table and two wrapped paragraphs) changes with every
  // click, and a pane that grew with it would take width from the plot and move the map under
  // the pointer.
  auto* pane = new QScrollArea(split);
  pane->setObjectName(QStringLiteral("detailPane"));
  pane->setWidgetResizable(true);
  pane->setFrameShape(QFrame::NoFrame);
  pane->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  pane->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Ignored);
  auto* side = new QWidget(pane);
  auto* sv = new QVBoxLayout(side);
  sv->setContentsMargins(6, 0, 6, 0);
  detail_ = new QLabel(side);
  detail_->setObjectName(QStringLiteral("detail"));
  detail_->setTextFormat(Qt::RichText);
  detail_->setWordWrap(true);
  detail_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bits_ = new BitCells(side);
  bits_->setMinimumHeight(44);
  bits_->hide();
  bits_button_ = new QPushButton(tr("Show in Bit layout"), side);
  bits_button_->setObjectName(QStringLiteral("showInBitLayout"));
  bits_button_->hide();
  sv->addWidget(detail_);
  sv->addWidget(bits_);
  sv->addWidget(bits_button_);
  sv->addStretch(1);
  pane->setWidget(side);
  // Wide enough for the bit cells of an 8-bit code (the usual case) beside a vertical scroll bar;
  // a 16-bit output type scrolls sideways.
  pane->setMinimumWidth(std::max(240, bits_->minimumSizeHint().width()) + sv->contentsMargins().left() +
                        sv->contentsMargins().right() + pane->style()->pixelMetric(QStyle::PM_ScrollBarExtent) + 2);
  split->addWidget(plot_);
  split->addWidget(pane);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 0);
  split->setCollapsible(1, false);
  v->addWidget(split, 1);
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("status"));
  status_->setWordWrap(true);
  hover_ = new QLabel(this);
  hover_->setObjectName(QStringLiteral("hover"));
  hover_->setTextFormat(Qt::PlainText);
  hover_->setMinimumHeight(hover_->fontMetrics().height() + 4);
  // A long hover line is cut at the edge rather than widening the view (which would move the
  // map under the pointer); the status line wraps.
  hover_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  v->addWidget(status_);
  v->addWidget(hover_);

  refine_ = new QTimer(this);
  refine_->setSingleShot(true);
  refine_->setInterval(80);
  // Zoom / pan refinement always reads the window on the thread pool (a drag repeats it; a large
  // HDF5 window takes ~0.4 s).
  connect(refine_, &QTimer::timeout, this, [this] { onRangeChanged(Read::Background); });

  // A choice made in the control bar reads a big map on the thread pool, a small one at once.
  // Session changes (a run added while an experiment runs, a load) read the overview on the
  // thread pool whatever its size; the plot shows the new run's axes at once and its map when
  // the read is back (bindRunBox).
  connect(mode_box_, &QComboBox::currentIndexChanged, this,
          [this] { applyMode(Mode(mode_box_->currentData().toInt()), Read::BySize); });
  connect(kind_box_, &QComboBox::currentIndexChanged, this,
          [this] { applyKind(ErrorKind(kind_box_->currentData().toInt()), Read::BySize); });
  connect(scale_box_, &QComboBox::currentIndexChanged, this,
          [this] { setLogScale(scale_box_->currentData().toInt() == 1); });
  connect(agg_box_, &QComboBox::currentIndexChanged, this,
          [this] { applyAggregation(Aggregation(agg_box_->currentData().toInt()), Read::BySize); });
  connect(reset, &QPushButton::clicked, this, &ErrorHeatmapView::resetZoom);
  connect(plot_, &QCustomPlot::mouseMove, this, &ErrorHeatmapView::mouseMoved);
  connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) { press_pos_ = e->pos(); });
  connect(plot_, &QCustomPlot::mouseRelease, this, [this](QMouseEvent* e) {
    if ((e->pos() - press_pos_).manhattanLength() < 4) mouseClicked(e);
  });
  connect(bits_button_, &QPushButton::clicked, this, &ErrorHeatmapView::openInBitLayout);
  rebuild(Read::Now);
}

void ErrorHeatmapView::runChosen(Read read) {
  run_ = runs()->access();
  model_ = run_ ? std::make_shared<HeatmapModel>(run_) : nullptr;
  rebuild(read);
}

void ErrorHeatmapView::setRunAccess(std::shared_ptr<RunAccess> run) {
  runs()->showOnly(run ? run->id() : QString());
  run_ = std::move(run);
  model_ = run_ ? std::make_shared<HeatmapModel>(run_) : nullptr;
  rebuild(Read::Now);
}

void ErrorHeatmapView::setMode(Mode m) {
  applyMode(m, Read::Now);
}

void ErrorHeatmapView::applyMode(Mode m, Read read) {
  if (mode_box_->currentData().toInt() != int(m)) {
    const QSignalBlocker b(mode_box_);
    mode_box_->setCurrentIndex(mode_box_->findData(int(m)));
  }
  if (m == mode_ && !maps_.isEmpty()) return;
  mode_ = m;
  rebuild(read);
}

void ErrorHeatmapView::setKind(ErrorKind k) {
  applyKind(k, Read::Now);
}

void ErrorHeatmapView::applyKind(ErrorKind k, Read read) {
  if (kind_box_->currentData().toInt() != int(k)) {
    const QSignalBlocker b(kind_box_);
    kind_box_->setCurrentIndex(kind_box_->findData(int(k)));
  }
  if (k == kind_) return;
  kind_ = k;
  rebuild(read);
}

void ErrorHeatmapView::setLogScale(bool on) {
  if (scale_box_->currentData().toInt() != int(on)) {
    scale_box_->setCurrentIndex(scale_box_->findData(int(on)));
    return;
  }
  if (on == log_) return;
  log_ = on;
  draw();
}

void ErrorHeatmapView::setAggregation(Aggregation a) {
  applyAggregation(a, Read::Now);
}

void ErrorHeatmapView::applyAggregation(Aggregation a, Read read) {
  if (agg_box_->currentData().toInt() != int(a)) {
    const QSignalBlocker b(agg_box_);
    agg_box_->setCurrentIndex(agg_box_->findData(int(a)));
  }
  if (a == agg_) return;
  agg_ = a;
  rebuild(read);
}

void ErrorHeatmapView::setOverviewCells(int n) {
  overview_cells_ = std::max(16, n);
  rebuild(Read::Now);
}

QList<ErrorQuantity> ErrorHeatmapView::quantities() const {
  switch (mode_) {
  case Mode::Total:
    return {ErrorQuantity::Total};
  case Mode::Quantization:
    return {ErrorQuantity::Quantization};
  case Mode::Accumulation:
    return {ErrorQuantity::Accumulation};
  case Mode::Split:
    return {ErrorQuantity::Quantization, ErrorQuantity::Accumulation, ErrorQuantity::Total};
  case Mode::OperandA:
    return {ErrorQuantity::OperandA};
  case Mode::OperandB:
    return {ErrorQuantity::OperandB};
  case Mode::KernelCheck:
    return {ErrorQuantity::Observed};
  }
  return {};
}

// Builds the plot layout for the mode (one or three panels + one colour scale) and the overview.
void ErrorHeatmapView::rebuild(Read read) {
  refine_->stop();
  newGeneration();
  clearEmpty();
  plot_->clearPlottables();
  plot_->plotLayout()->clear();
  rects_.clear();
  hist_rect_ = nullptr;
  maps_.clear();
  scale_ = nullptr;
  grids_.clear();
  overview_.clear();
  missing_.clear();
  sel_i_ = sel_j_ = -1;
  detail_->setText(tr("<i>Click an element of the map to see its detail.</i>"));
  bits_->hide();
  bits_button_->hide();
  hover_->clear();

  if (!model_) {
    status_->setText(tr("No run."));
    showEmpty(noRunText(session_ && session_->runCount() > 0
                            ? tr("This session has no GEMM run.\nRun a GEMM error experiment (Experiment panel, "
                                 "Ctrl+R)\nor open a session that has one (File \u2192 Open).")
                            : tr("No GEMM run to show.\nOpen a session (File \u2192 Open) or run a GEMM error "
                                 "experiment\n(Experiment panel, Ctrl+R).")));
    return;
  }
  const QList<ErrorQuantity> qs = quantities();
  QStringList missing;
  QList<ErrorQuantity> shown;
  for (ErrorQuantity q : qs) {
    QString why;
    if (model_->available(q, kind_, &why))
      shown << q;
    else
      missing << why;
  }
  missing_ = missing.join(QStringLiteral("; "));
  if (shown.isEmpty()) {
    status_->setText(tr("Missing: %1").arg(missing_));
    Q_EMIT issue(Severity::Warning, tr("Error heatmap: %1").arg(missing_), run_->id());
    showEmpty(tr("Nothing to draw for this choice:\n%1").arg(missing.join(QLatin1Char('\n'))));
    return;
  }
  auto* layout = plot_->plotLayout();
  const auto shape = model_->shape(shown.first());
  for (int p = 0; p < shown.size(); ++p) {
    auto* title = new QCPTextElement(plot_, toText(shown[p]), QFont(font().family(), 9, QFont::Bold));
    title->setProperty("base", toText(shown[p]));
    layout->addElement(0, p, title);
    auto* rect = new QCPAxisRect(plot_);
    layout->addElement(1, p, rect);
    rect->setupFullAxesBox(true);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    const bool isA = shown[p] == ErrorQuantity::OperandA, isB = shown[p] == ErrorQuantity::OperandB;
    x->setLabel(isA ? tr("column k of A") : tr("column j of %1").arg(isB ? QStringLiteral("B") : QStringLiteral("D")));
    y->setLabel(isB ? tr("row k of B") : tr("row i of %1").arg(isA ? QStringLiteral("A") : QStringLiteral("D")));
    y->setRangeReversed(true);
    // Element indices are whole numbers: no tick at 97.5.
    for (QCPAxis* a : {x, y}) {
      auto whole = QSharedPointer<QCPAxisTickerFixed>::create();
      whole->setTickStep(1);
      whole->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
      a->setTicker(whole);
    }
    x->setRange(-0.5, double(shape.second) - 0.5);
    y->setRange(-0.5, double(shape.first) - 0.5);
    rect->setRangeDrag(Qt::Horizontal | Qt::Vertical);
    rect->setRangeZoom(Qt::Horizontal | Qt::Vertical);
    auto* map = new QCPColorMap(x, y);
    map->setInterpolate(false);
    map->setTightBoundary(false);
    maps_ << map;
    rects_ << rect;
    connect(x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this, p](const QCPRange& r) {
      if (updating_) return;
      updating_ = true;
      for (int o = 0; o < rects_.size(); ++o)
        if (o != p) rects_[o]->axis(QCPAxis::atBottom)->setRange(r);
      updating_ = false;
      refine_->start();
    });
    connect(y, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this, p](const QCPRange& r) {
      if (updating_) return;
      updating_ = true;
      for (int o = 0; o < rects_.size(); ++o)
        if (o != p) rects_[o]->axis(QCPAxis::atLeft)->setRange(r);
      updating_ = false;
      refine_->start();
    });
  }
  scale_ = new QCPColorScale(plot_);
  layout->addElement(1, shown.size(), scale_);
  scale_->setType(QCPAxis::atRight);
  scale_->setBarWidth(14);
  auto* group = new QCPMarginGroup(plot_);
  for (auto* r : rects_) r->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  scale_->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  for (auto* m : maps_) {
    m->setColorScale(scale_);
    m->setGradient(errorGradient());
  }
  QString unit = model_->unit(shown.first(), kind_);
  scale_->axis()->setLabel(tr("%1 error [%2]").arg(toText(kind_), unit));
  if (mode_ == Mode::KernelCheck) {
    addUlpHistogram();
    detail_->setText(modelsTable());
  }
  stylePlot(plot_);
  // Overview: the whole map, decimated by max (or tiles).
  const auto [rows, cols] = shape;
  computeWindow(0, 0, rows, cols, true, read);
}

// The kernel check's ULP histogram: elements per ULP distance from the reference (log scale: the
// 0-ULP bar is usually most of D), with the verdict as its title.
void ErrorHeatmapView::addUlpHistogram() {
  Block h;
  QString err;
  if (!run_ || !run_->has(sessionPath(layout::kCheckUlpHistogram)) ||
      !run_->readAll(sessionPath(layout::kCheckUlpHistogram), &h, &err))
    return;
  // Bins (kernel_check.h): 0, 1, 2, then (2^(b−2), 2^(b−1)]; each tick names the bin's upper end
  // ("4" for 3–4), as a power of two past 4096 so the labels stay short.
  auto upper = [](int b) -> QString {
    if (b <= 2) return QString::number(b);
    const int e = b - 1;
    if (e <= 12) return QString::number(1 << e);
    static const QString sup = QStringLiteral("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079");
    QString t = QStringLiteral("2");
    for (QChar c : QString::number(e)) t += sup[c.digitValue()];
    return t;
  };
  int last = 2;
  for (int b = 0; b < int(h.v.size()); ++b)
    if (h.v[size_t(b)] > 0) last = std::max(last, b);
  auto* layout = plot_->plotLayout();
  const QString verdict = run_->groupAttr(sessionPath(layout::kCheck), QStringLiteral("verdict"));
  auto* title = new QCPTextElement(plot_, verdict.section(QLatin1Char(';'), 0, 0), QFont(font().family(), 8));
  title->setTextColor(verdict.startsWith(QStringLiteral("PASS")) ? QColor(0x1b, 0x7a, 0x2e) : QColor(0xb0, 0x00, 0x20));
  layout->addElement(2, 0, title);
  hist_rect_ = new QCPAxisRect(plot_);
  layout->addElement(3, 0, hist_rect_);
  layout->setRowStretchFactor(1, 3);
  layout->setRowStretchFactor(2, 0.001);
  layout->setRowStretchFactor(3, 1.2);
  QCPAxis* x = hist_rect_->axis(QCPAxis::atBottom);
  QCPAxis* y = hist_rect_->axis(QCPAxis::atLeft);
  auto* bars = new QCPBars(x, y);
  bars->setPen(Qt::NoPen);
  bars->setBrush(QColor(0x35, 0x6d, 0xb3));
  bars->setWidth(0.7);
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  double top = 1;
  for (int b = 0; b <= last; ++b) {
    const double v = b < int(h.v.size()) ? h.v[size_t(b)] : 0;
    if (v > 0) bars->addData(b, v);
    top = std::max(top, v);
    if (last < 16 || b % 2 == 0 || b == last) ticker->addTick(b, upper(b));
  }
  x->setTicker(ticker);
  x->setRange(-0.6, last + 0.6);
  x->setLabel(
      tr("ULPs of %1 between observed and reference model (each bar: up to its tick)").arg(model_->outputType()));
  y->setScaleType(QCPAxis::stLogarithmic);
  y->setTicker(distinctLogTicker());
  y->setNumberFormat(QStringLiteral("eb"));
  y->setNumberPrecision(0);
  y->setRange(0.5, top * 3);
  y->setLabel(tr("elements"));
}

// The kernel check's models, each with its share of elements identical to the observed D, and the
// fit's verdict: which accumulation reproduces the kernel.
QString ErrorHeatmapView::modelsTable() const {
  if (!run_ || !run_->has(sessionPath(layout::checkModels("identical_share"))))
    return tr("<i>This check ran without the fit: no table of models. Click an element for its detail.</i>");
  Block share, maxu;
  QString err;
  if (!run_->readAll(sessionPath(layout::checkModels("identical_share")), &share, &err) ||
      !run_->readAll(sessionPath(layout::checkModels("max_ulps")), &maxu, &err))
    return err.toHtmlEscaped();
  const QJsonArray names =
      QJsonDocument::fromJson(run_->groupAttr(sessionPath(layout::kCheckModels), QStringLiteral("names")).toUtf8())
          .array();
  QString html = tr("<b>Accumulation models</b> on this run's operands, each compared with the observed D:"
                    "<table cellspacing=3><tr><th align=left>model</th><th align=right>identical</th>"
                    "<th align=right>max ULP</th></tr>");
  // Max ULPs as the histogram counts them: whole numbers to 4096, then the nearest power of two.
  auto ulps = [](double u) -> QString {
    if (!std::isfinite(u)) return QStringLiteral("NaN/Inf");
    if (u <= 4096) return QString::number(u, 'g', 4);
    static const QString sup = QStringLiteral("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079");
    QString t = QStringLiteral("\u22482");
    for (QChar c : QString::number(int(std::lround(std::log2(u))))) t += sup[c.digitValue()];
    return t;
  };
  for (int i = 0; i < names.size() && size_t(i) < share.v.size(); ++i)
    html += QStringLiteral("<tr><td>%1</td><td align=right nowrap>%2%</td><td align=right nowrap>%3</td></tr>")
                .arg(names[i].toString().toHtmlEscaped(), QString::number(100.0 * share.v[size_t(i)], 'f', 2),
                     ulps(maxu.v[size_t(i)]));
  html += QStringLiteral("</table>");
  const QString fit = run_->groupAttr(sessionPath(layout::kCheck), QStringLiteral("fit_verdict"));
  if (!fit.isEmpty())
    html += QStringLiteral("<br>%1").arg(fit.toHtmlEscaped()); // "best fit: ..." / "bit-identical to ..."
  const QString warn = run_->groupAttr(sessionPath(layout::kCheck), QStringLiteral("fit_warning"));
  if (!warn.isEmpty()) html += QStringLiteral("<br><span style='color:#b00020'>%1</span>").arg(warn.toHtmlEscaped());
  html += tr("<br><br><i>Click an element of the map to see its detail.</i>");
  return html;
}

void ErrorHeatmapView::drawEmptyState(const QString& text) {
  plotEmptyState(plot_, text);
  plot_->replot();
}

void ErrorHeatmapView::setTitleNote(const QString& note) {
  if (auto* t = qobject_cast<QCPTextElement*>(plot_->plotLayout()->element(0, 0))) {
    const QString base = t->property("base").toString();
    t->setText(base + QStringLiteral("\n") + (run_ ? run_->id() + QStringLiteral(" \u00b7 ") : QString()) + note);
  }
}

void ErrorHeatmapView::computeWindow(int64_t r0, int64_t c0, int64_t nr, int64_t nc, bool overview, Read read) {
  if (!model_ || maps_.isEmpty()) return;
  QList<ErrorQuantity> shown;
  for (ErrorQuantity q : quantities())
    if (model_->available(q, kind_)) shown << q;
  int64_t br, bc;
  CellReduce how = CellReduce::Max;
  if (agg_ != Aggregation::Elements) {
    auto [tr_, tc_] = model_->tileSize();
    if (tr_ <= 0) tr_ = tc_ = 128;
    br = tr_;
    bc = tc_;
    how = agg_ == Aggregation::TileMean ? CellReduce::Mean : CellReduce::Max;
    // Align the window to whole tiles.
    const auto [rows, cols] = model_->shape(shown.first());
    const int64_t rr0 = r0 / br * br, cc0 = c0 / bc * bc;
    nr = std::min(rows, (r0 + nr + br - 1) / br * br) - rr0;
    nc = std::min(cols, (c0 + nc + bc - 1) / bc * bc) - cc0;
    r0 = rr0;
    c0 = cc0;
  } else if (overview) {
    br = bc = std::max<int64_t>(
        {1, (nr + overview_cells_ - 1) / overview_cells_, (nc + overview_cells_ - 1) / overview_cells_});
  } else {
    const QRect px = rects_.first()->rect();
    const int64_t w = std::max(64, px.width()), h = std::max(64, px.height());
    br = bc = std::max<int64_t>({1, (nc + w - 1) / w, (nr + h - 1) / h});
  }
  if (!overview && !overview_.isEmpty() && overview_.first().block_rows <= br && overview_.first().r0 == r0 &&
      overview_.first().c0 == c0 && overview_.first().rows == nr && overview_.first().cols == nc) {
    newGeneration();
    grids_ = overview_;
    draw();
    return;
  }
  const quint64 gen = newGeneration();
  if (inBackground(read, nr * nc * shown.size())) {
    struct Result {
      QList<HeatmapGrid> grids;
      QString error;
    };
    auto* watcher = new QFutureWatcher<Result>(this);
    connect(watcher, &QFutureWatcher<Result>::finished, this, [this, watcher, gen, overview] {
      watcher->deleteLater();
      if (gen != generation() || maps_.isEmpty()) return; // stale: a newer window or map is on its way
      reading_ = 0;
      Result r = watcher->result();
      if (!r.error.isEmpty()) {
        status_->setText(tr("Cannot read the map: %1").arg(r.error));
        Q_EMIT issue(Severity::Error, tr("Error heatmap: %1").arg(r.error), run_ ? run_->id() : QString());
        return;
      }
      grids_ = r.grids;
      if (overview) overview_ = r.grids;
      draw();
    });
    reading_ = gen;
    reading_overview_ = overview;
    status_->setText(tr("Reading the map\u2026"));
    // After a rebuild the plot shows the new axes, empty, until the map is back (not the previous
    // run's map); a refinement keeps the coarser cells in view meanwhile.
    if (grids_.isEmpty()) {
      setTitleNote(tr("reading\u2026"));
      scale_->axis()->setTickLabels(false); // no range yet
    }
    plot_->replot(QCustomPlot::rpQueuedReplot);
    std::shared_ptr<const HeatmapModel> model = model_;
    const ErrorKind kind = kind_;
    // A read that is no longer current stops at its next band.
    watcher->setFuture(QtConcurrent::run([model, shown, kind, r0, c0, nr, nc, br, bc, how, wanted = stillWanted(gen)] {
      Result r;
      const auto current = [&wanted](double) { return wanted(); };
      for (ErrorQuantity q : shown) {
        HeatmapGrid g;
        if (!model->compute(q, kind, r0, c0, nr, nc, br, bc, how, &g, &r.error, current)) return r;
        r.grids << std::move(g);
      }
      return r;
    }));
    return;
  }
  QList<HeatmapGrid> grids;
  for (ErrorQuantity q : shown) {
    HeatmapGrid g;
    QString err;
    if (!model_->compute(q, kind_, r0, c0, nr, nc, br, bc, how, &g, &err)) {
      status_->setText(tr("Cannot read the map: %1").arg(err));
      Q_EMIT issue(Severity::Error, tr("Error heatmap: %1").arg(err), run_ ? run_->id() : QString());
      return;
    }
    grids << std::move(g);
  }
  grids_ = grids;
  if (overview) overview_ = grids;
  draw();
}

void ErrorHeatmapView::draw() {
  if (maps_.isEmpty() || grids_.size() != maps_.size()) return;
  double lo = 0, hi = 0, minPos = 0;
  bool any = false;
  int64_t nanCells = 0, nanElems = 0, zeros = 0;
  for (const HeatmapGrid& g : grids_) {
    nanCells += g.nan_cells;
    nanElems += g.nan_elements;
    if (g.finite_cells == 0) continue;
    lo = any ? std::min(lo, g.min) : g.min;
    hi = any ? std::max(hi, g.max) : g.max;
    if (g.min_positive > 0) minPos = minPos > 0 ? std::min(minPos, g.min_positive) : g.min_positive;
    any = true;
  }
  const bool log = log_ && minPos > 0;
  QCPRange range;
  if (log)
    // One value only (every finite cell equal): a factor of 2 either side, so the colour bar has
    // ticks to read it by; the status line gives the exact range.
    range = hi > minPos * 1.0001 ? QCPRange(minPos, hi) : QCPRange(minPos / 2, minPos * 2);
  else
    range = QCPRange(std::min(0.0, lo), hi > std::min(0.0, lo) ? hi : std::min(0.0, lo) + 1);
  for (int p = 0; p < maps_.size(); ++p) {
    const HeatmapGrid& g = grids_[p];
    auto* d = maps_[p]->data();
    const int64_t gc = std::max<int64_t>(2, g.grid_cols), gr = std::max<int64_t>(2, g.grid_rows);
    d->setSize(int(gc), int(gr));
    const double kc = double(g.block_cols - 1) / 2.0, vc = double(g.block_rows - 1) / 2.0;
    d->setRange(QCPRange(double(g.c0) + kc, double(g.c0) + double(gc - 1) * double(g.block_cols) + kc),
                QCPRange(double(g.r0) + vc, double(g.r0) + double(gr - 1) * double(g.block_rows) + vc));
    for (int64_t r = 0; r < gr; ++r)
      for (int64_t c = 0; c < gc; ++c) {
        double x = (r < g.grid_rows && c < g.grid_cols) ? g.cell(r, c) : std::nan("");
        if (log && !std::isnan(x) && x <= 0) {
          x = minPos;
          if (r < g.grid_rows && c < g.grid_cols) ++zeros;
        }
        d->setCell(int(c), int(r), x);
      }
  }
  scale_->setDataScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  scale_->axis()->setTickLabels(true);
  if (log) {
    scale_->axis()->setTicker(distinctLogTicker());
    scale_->axis()->setNumberFormat(QStringLiteral("eb"));
    scale_->axis()->setNumberPrecision(0);
  } else {
    scale_->axis()->setTicker(QSharedPointer<QCPAxisTicker>::create());
    scale_->axis()->setNumberFormat(QStringLiteral("gb"));
    scale_->axis()->setNumberPrecision(3);
  }
  scale_->setDataRange(range);
  for (auto* m : maps_) m->setDataRange(range);

  const HeatmapGrid& g = grids_.first();
  QStringList st;
  if (g.block_rows == 1 && g.block_cols == 1)
    st << tr("Each cell is one element");
  else if (agg_ == Aggregation::Elements)
    st << tr("Decimated: each cell is the max of %1\u00d7%2 elements (zoom in for detail)")
              .arg(g.block_rows)
              .arg(g.block_cols);
  else
    st << tr("Each cell is the %1 of a %2\u00d7%3 tile")
              .arg(agg_ == Aggregation::TileMean ? tr("mean") : tr("max"))
              .arg(g.block_rows)
              .arg(g.block_cols);
  st << tr("rows %1, columns %2").arg(rangeText(g.r0, g.rows), rangeText(g.c0, g.cols));
  if (any)
    st << tr("range %1 \u2026 %2").arg(errorText(lo), errorText(hi));
  else
    st << tr("no finite value");
  if (nanElems > 0)
    st << tr("<b style='color:#c000c0'>%n NaN element(s)</b> in %1 magenta cell(s)", nullptr,
             int(std::min<int64_t>(nanElems, INT32_MAX)))
              .arg(nanCells);
  else
    st << tr("no NaN");
  if (log && zeros > 0)
    st << tr("%n cell(s) exactly 0 drawn at the lowest colour", nullptr, int(std::min<int64_t>(zeros, INT32_MAX)));
  if (log_ && !log && any) st << tr("log scale needs a positive value: linear shown");
  if (!missing_.isEmpty()) st << tr("<span style='color:#b00020'>missing: %1</span>").arg(missing_.toHtmlEscaped());
  status_->setText(st.join(QStringLiteral(" \u00b7 ")));
  // The same facts in the plot itself, so an exported image says them too.
  QString note = g.block_rows == 1 && g.block_cols == 1 ? tr("one cell per element")
                 : agg_ == Aggregation::Elements ? tr("cell = max of %1\u00d7%2").arg(g.block_rows).arg(g.block_cols)
                                                 : tr("cell = tile %1 of %2\u00d7%3")
                                                       .arg(agg_ == Aggregation::TileMean ? tr("mean") : tr("max"))
                                                       .arg(g.block_rows)
                                                       .arg(g.block_cols);
  note += nanElems > 0 ? tr(" \u00b7 %1 NaN (magenta)").arg(nanElems) : tr(" \u00b7 no NaN");
  setTitleNote(note);
  plot_->replot(QCustomPlot::rpImmediateRefresh);
}

void ErrorHeatmapView::onRangeChanged(Read read) {
  if (rects_.isEmpty() || !model_) return;
  const QCPRange xr = rects_.first()->axis(QCPAxis::atBottom)->range();
  const QCPRange yr = rects_.first()->axis(QCPAxis::atLeft)->range();
  QList<ErrorQuantity> shown;
  for (ErrorQuantity q : quantities())
    if (model_->available(q, kind_)) shown << q;
  if (shown.isEmpty()) {
    newGeneration();
    return;
  }
  const auto [rows, cols] = model_->shape(shown.first());
  int64_t c0 = std::clamp<int64_t>(int64_t(std::floor(xr.lower + 0.5)), 0, cols - 1);
  int64_t c1 = std::clamp<int64_t>(int64_t(std::ceil(xr.upper + 0.5)), c0 + 1, cols);
  int64_t r0 = std::clamp<int64_t>(int64_t(std::floor(yr.lower + 0.5)), 0, rows - 1);
  int64_t r1 = std::clamp<int64_t>(int64_t(std::ceil(yr.upper + 0.5)), r0 + 1, rows);
  // At least 2 × 2 elements (a colour map needs two cells per side).
  if (c1 - c0 < 2) c0 = std::max<int64_t>(0, c1 - 2), c1 = std::min<int64_t>(cols, c0 + 2);
  if (r1 - r0 < 2) r0 = std::max<int64_t>(0, r1 - 2), r1 = std::min<int64_t>(rows, r0 + 2);
  const bool whole = r0 == 0 && c0 == 0 && r1 == rows && c1 == cols;
  if (whole && overview_.isEmpty() && isReading() && reading_overview_) return; // it is on its way
  if (whole && !overview_.isEmpty()) {
    newGeneration(); // an older background read must not replace the overview
    grids_ = overview_;
    draw();
    return;
  }
  computeWindow(r0, c0, r1 - r0, c1 - c0, false, read);
}

void ErrorHeatmapView::zoomTo(int64_t r0, int64_t c0, int64_t nr, int64_t nc) {
  if (rects_.isEmpty()) return;
  updating_ = true;
  for (auto* r : rects_) {
    r->axis(QCPAxis::atBottom)->setRange(double(c0) - 0.5, double(c0 + nc) - 0.5);
    r->axis(QCPAxis::atLeft)->setRange(double(r0) - 0.5, double(r0 + nr) - 0.5);
  }
  updating_ = false;
  refine_->stop();
  onRangeChanged(Read::BySize);
}

void ErrorHeatmapView::resetZoom() {
  if (!model_ || rects_.isEmpty()) return;
  QList<ErrorQuantity> shown;
  for (ErrorQuantity q : quantities())
    if (model_->available(q, kind_)) shown << q;
  if (shown.isEmpty()) return;
  const auto [rows, cols] = model_->shape(shown.first());
  zoomTo(0, 0, rows, cols);
}

void ErrorHeatmapView::refresh() {
  refine_->stop();
  if (!rects_.isEmpty() && !grids_.isEmpty()) onRangeChanged(Read::Now);
  plot_->replot(QCustomPlot::rpImmediateRefresh);
}

bool ErrorHeatmapView::elementAt(const QPoint& pos, int64_t* i, int64_t* j, int* panel) const {
  for (int p = 0; p < rects_.size(); ++p) {
    if (!rects_[p]->rect().contains(pos)) continue;
    const double key = rects_[p]->axis(QCPAxis::atBottom)->pixelToCoord(pos.x());
    const double val = rects_[p]->axis(QCPAxis::atLeft)->pixelToCoord(pos.y());
    const auto [rows, cols] = grids_.isEmpty() ? std::pair<int64_t, int64_t>{0, 0}
                                               : model_->shape(quantities().value(p, ErrorQuantity::Total));
    const int64_t jj = int64_t(std::floor(key + 0.5)), ii = int64_t(std::floor(val + 0.5));
    if (ii < 0 || jj < 0 || ii >= rows || jj >= cols) return false;
    *i = ii;
    *j = jj;
    *panel = p;
    return true;
  }
  return false;
}

void ErrorHeatmapView::mouseMoved(QMouseEvent* e) {
  int64_t i, j;
  int p;
  if (!elementAt(e->pos(), &i, &j, &p)) {
    hover_->clear();
    return;
  }
  hoverAt(i, j, p);
}

void ErrorHeatmapView::hoverAt(int64_t i, int64_t j, int panel) {
  if (!model_ || panel >= grids_.size()) return;
  const HeatmapGrid& g = grids_[panel];
  QList<ErrorQuantity> shown;
  for (ErrorQuantity q : quantities())
    if (model_->available(q, kind_)) shown << q;
  const ErrorQuantity q = shown.value(panel, ErrorQuantity::Total);
  QString text;
  HeatmapElement el;
  QString err;
  if (model_->element(q, kind_, i, j, &el, &err)) {
    text = tr("(i, j) = (%1, %2)   reference %3 = %4   tested %5 = %6   %7 error = %8")
               .arg(i)
               .arg(j)
               .arg(el.ref_name, numberText(el.ref), el.test_name, numberText(el.test), toText(kind_),
                    errorText(el.error));
  } else {
    text = tr("(i, j) = (%1, %2): %3").arg(i).arg(j).arg(err);
  }
  if ((g.block_rows > 1 || g.block_cols > 1) && i >= g.r0 && j >= g.c0 && i < g.r0 + g.rows && j < g.c0 + g.cols) {
    const int64_t gr = (i - g.r0) / g.block_rows, gc = (j - g.c0) / g.block_cols;
    const int64_t a = g.r0 + gr * g.block_rows, b = g.c0 + gc * g.block_cols;
    text += tr("   | cell rows %1, cols %2: %3 %4")
                .arg(rangeText(a, std::min(g.block_rows, g.r0 + g.rows - a)),
                     rangeText(b, std::min(g.block_cols, g.c0 + g.cols - b)))
                .arg(agg_ == Aggregation::TileMean ? tr("mean") : tr("max"), errorText(g.cell(gr, gc)));
  }
  hover_->setText(text);
}

QString ErrorHeatmapView::hoverText() const {
  return hover_->text();
}
QString ErrorHeatmapView::statusText() const {
  return status_->text();
}
QString ErrorHeatmapView::detailText() const {
  return detail_->text();
}

void ErrorHeatmapView::mouseClicked(QMouseEvent* e) {
  int64_t i, j;
  int p;
  if (elementAt(e->pos(), &i, &j, &p)) selectElement(i, j, p);
}

void ErrorHeatmapView::selectElement(int64_t i, int64_t j, int panel) {
  if (!model_) return;
  sel_i_ = i;
  sel_j_ = j;
  QList<ErrorQuantity> shown;
  for (ErrorQuantity q : quantities())
    if (model_->available(q, kind_)) shown << q;
  const ErrorQuantity q = shown.value(panel, ErrorQuantity::Total);
  const bool operand = q == ErrorQuantity::OperandA || q == ErrorQuantity::OperandB;
  QString html = tr("<b>Element (%1, %2)</b> of %3<br>")
                     .arg(i)
                     .arg(j)
                     .arg(operand ? (q == ErrorQuantity::OperandA ? QStringLiteral("A") : QStringLiteral("B"))
                                  : QStringLiteral("D"));
  auto value = [&](const QString& path) -> double {
    Block b;
    if (!run_->has(path) || !run_->read(path, i, j, 1, 1, &b, nullptr)) return std::nan("");
    return b.v[0];
  };
  html += QStringLiteral("<table cellspacing=2>");
  auto row = [&](const QString& k, const QString& v) {
    html += QStringLiteral("<tr><td>%1</td><td align=right>%2</td></tr>").arg(k, v);
  };
  if (!operand) {
    const double ideal = value(sessionPath(layout::kReferenceD)),
                 qexact = value(sessionPath(layout::kReferenceDQuantizedExact)),
                 d = value(sessionPath(layout::kOutputD));
    row(tr("ideal (float64)"), numberText(ideal));
    row(tr("quantized-exact"), numberText(qexact));
    row(tr("D (%1)").arg(model_->outputType()), numberText(d));
    row(tr("quantization error"), errorText(qexact - ideal));
    row(tr("accumulation error"), errorText(d - qexact));
    row(tr("total error"), errorText(d - ideal));
    if (ideal != 0 && std::isfinite(ideal))
      row(tr("relative total"), errorText(std::fabs(d - ideal) / std::fabs(ideal)));
    html += QStringLiteral("</table>");
    VectorStats a, b;
    QString err;
    if (model_->rowOfA(i, &a, &err))
      html += tr("<br><b>Row %1 of A</b> (%2 values): min %3, max %4, max|x| %5, rms %6, zeros %7")
                  .arg(i)
                  .arg(a.count)
                  .arg(numberText(a.min), numberText(a.max), numberText(a.max_abs), errorText(a.rms))
                  .arg(a.zeros);
    else
      html += QStringLiteral("<br><i>%1</i>").arg(err.toHtmlEscaped());
    if (model_->colOfB(j, &b, &err))
      html += tr("<br><b>Column %1 of B</b> (%2 values): min %3, max %4, max|x| %5, rms %6, zeros %7")
                  .arg(j)
                  .arg(b.count)
                  .arg(numberText(b.min), numberText(b.max), numberText(b.max_abs), errorText(b.rms))
                  .arg(b.zeros);
    else
      html += QStringLiteral("<br><i>%1</i>").arg(err.toHtmlEscaped());
    // The nearest encoding of D in its output type (or, for an fp32 output, in A's format).
    const QString ot = model_->outputType();
    const Format* f = Format::byName(ot.toUpper().toStdString());
    if (!f && ot == QStringLiteral("e4m3fn")) f = &Format::E4M3FN();
    QString note;
    if (!f) {
      f = Format::byName(run_->attr(QStringLiteral("format_a")).toStdString());
      if (f) note = tr(" (D is fp32; nearest %1 code shown)").arg(QString::fromStdString(f->name()));
    }
    if (f && std::isfinite(d)) {
      double qs = 1;
      const QString qsText = run_->datasetAttr(sessionPath(layout::kOutputDCodes), QStringLiteral("quant_scale"));
      if (!qsText.isEmpty() && f->bits() <= 8 && note.isEmpty()) qs = qsText.toDouble();
      detail_value_ = d * qs;
      detail_code_ = f->encode(detail_value_);
      detail_format_ = QString::fromStdString(f->name());
      html += tr("<br><b>Nearest %1 encoding</b>%2: %3 = %4")
                  .arg(detail_format_, note, QString::fromStdString(f->hexString(detail_code_)),
                       numberText(f->decode(detail_code_)));
      if (qs != 1) html += tr(" (D \u00d7 quant scale %1)").arg(numberText(qs));
      bits_->setFormat(f);
      bits_->setCode(detail_code_);
      bits_->show();
      bits_button_->show();
    } else {
      detail_format_.clear();
      bits_->hide();
      bits_button_->hide();
    }
  } else {
    const QString x = q == ErrorQuantity::OperandA ? QStringLiteral("A") : QStringLiteral("B");
    const double in = value(sessionPath(layout::inputs(layoutName(x)))),
                 dq = value(sessionPath(layout::quantizedDequantized(layoutName(x))));
    row(tr("%1 (input)").arg(x), numberText(in));
    row(tr("dequantized"), numberText(dq));
    row(tr("quantization error"), errorText(dq - in));
    html += QStringLiteral("</table>");
    detail_format_.clear();
    bits_->hide();
    bits_button_->hide();
  }
  detail_->setText(html);
}

void ErrorHeatmapView::openInBitLayout() {
  if (detail_format_.isEmpty()) return;
  Q_EMIT showCodeRequested(QStringLiteral("bits"), detail_format_, detail_code_);
}

QString ErrorHeatmapView::csv() const {
  if (grids_.isEmpty() || !model_) return {};
  QString out;
  QList<ErrorQuantity> shown;
  for (ErrorQuantity q : quantities())
    if (model_->available(q, kind_)) shown << q;
  out += QStringLiteral("quantity,kind,unit,row_first,row_last,col_first,col_last,value\n");
  for (int p = 0; p < grids_.size(); ++p) {
    const HeatmapGrid& g = grids_[p];
    const QString head = QStringLiteral("\"%1\",%2,\"%3\",")
                             .arg(toText(shown.value(p)), toText(kind_), model_->unit(shown.value(p), kind_));
    for (int64_t r = 0; r < g.grid_rows; ++r)
      for (int64_t c = 0; c < g.grid_cols; ++c) {
        const int64_t a = g.r0 + r * g.block_rows, b = g.c0 + c * g.block_cols;
        const double x = g.cell(r, c);
        out += head + QStringLiteral("%1,%2,%3,%4,%5\n")
                          .arg(a)
                          .arg(std::min(a + g.block_rows, g.r0 + g.rows) - 1)
                          .arg(b)
                          .arg(std::min(b + g.block_cols, g.c0 + g.cols) - 1)
                          .arg(std::isnan(x) ? QStringLiteral("nan") : QString::number(x, 'g', 9));
      }
  }
  return out;
}

FP8LAB_REGISTER_VIEW(ErrorHeatmapView, "heatmap", 70);

// fp8lab-render: a GEMM run's error heatmap, its error split, and for a kernel check (a run with an
// observed D) observed − reference with the ULP histogram.
FP8LAB_REGISTER_RENDER(
    ErrorHeatmapView, "heatmap", {QStringLiteral("heatmap"), QStringLiteral("split"), QStringLiteral("kernel_check")},
    [](const RenderScope& scope, const std::shared_ptr<RunAccess>& a, QList<RenderJob>& jobs) {
      if (!a->type().startsWith(QStringLiteral("gemm"))) return;
      using Mode = ErrorHeatmapView::Mode;
      // heatmap: the view's default mode.
      for (const auto& [name, mode] : {std::pair{QStringLiteral("heatmap"), std::optional<Mode>()},
                                       {QStringLiteral("split"), std::optional(Mode::Split)},
                                       {QStringLiteral("kernel_check"), std::optional(Mode::KernelCheck)}}) {
        if (!scope.wants(name) || (mode == Mode::KernelCheck && !a->has(sessionPath(layout::kObservedD)))) continue;
        jobs << RenderJob{a->id(), name, [a, mode] {
                            auto v = std::make_unique<ErrorHeatmapView>();
                            v->setRunAccess(a);
                            if (mode) v->setMode(*mode);
                            if (mode == Mode::KernelCheck) v->setKind(ErrorKind::Ulp);
                            return std::unique_ptr<View>(std::move(v));
                          }};
      }
    },
    {});

} // namespace fp8lab::ui

#include "views/scale_evolution_view.h"
#include "session/run_box.h"
#include "session/session_paths.h"

#include "plot/plot_util.h"
#include "plot/qcp.h"
#include "session/run_model.h"
#include "session/run_sites.h"
#include "session/session_document.h"
#include "plot/style.h"
#include "views/view_registry.h"
#include "views/view_render.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QFontMetrics>
#include <QStyle>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace fp8lab::ui {

namespace {
QStringList historyTensors(const RunAccess* r) {
  if (!r) return {};
  QStringList out = viewNames(layout::historyOperands(layoutPaths(r->datasets())));
  sortOperandPaths(&out, runSites(*r));
  return out;
}

std::vector<double> readVec(const RunAccess* r, const QString& path) {
  Block b;
  if (!r || !r->has(path) || !r->readAll(path, &b, nullptr)) return {};
  return b.v;
}

/// Whether the run quantized anything: an FP32 baseline has amaxes but no scale.
bool isScaled(const RunAccess* r) {
  return r && r->attr(QStringLiteral("precision")) != QStringLiteral("fp32");
}

QString runName(const RunAccess* r) {
  const QString label = r->attr(QStringLiteral("label"));
  const QString scaling = r->attr(QStringLiteral("scaling"));
  QString s = label.isEmpty() ? r->id() : label;
  if (!scaling.isEmpty() && !s.contains(scaling)) s += QStringLiteral(" [") + scaling + QLatin1Char(']');
  return s;
}
} // namespace

ScaleEvolutionView::ScaleEvolutionView(QWidget* parent) : AnalysisView(RunCap::Histories, parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  auto* bar = new QHBoxLayout;
  auto label = [&](const QString& t, QWidget* buddy) { addLabeled(bar, t, buddy); };
  addRunBox(bar);
  // After a load, open on a low-precision run: the session's default current run is often the
  // FP32 baseline, which has no scale.
  runs()->setPreferred([this](const QString& id) {
    const int i = session_ ? session_->indexOf(id) : -1;
    return i >= 0 && isScaled(RunAccess::forRecord(session_->run(i), session_->fileName()).get());
  });
  cmp_box_ = runComboBox(QStringLiteral("compare"));
  label(tr("&Compare with (dashed):"), cmp_box_);
  conv_box_ = new QComboBox(this);
  conv_box_->setObjectName(QStringLiteral("convention"));
  conv_box_->addItem(tr("dequant scale (x \u2248 q \u00b7 s)"), 0);
  conv_box_->addItem(tr("quant scale (q = cast(x \u00b7 s))"), 1);
  label(tr("&Scale:"), conv_box_);
  amax_box_ = new QCheckBox(tr("show &amax"), this);
  amax_box_->setObjectName(QStringLiteral("showAmax"));
  amax_box_->setChecked(true);
  bar->addWidget(amax_box_);
  bar->addStretch(1);
  v->addLayout(bar);

  auto* split = new QSplitter(Qt::Horizontal, this);
  list_ = new QListWidget(split);
  list_->setObjectName(QStringLiteral("tensors"));
  list_->setMaximumWidth(190); // widened to the longest name by fillTensors()
  list_->setTextElideMode(Qt::ElideMiddle);
  list_->setToolTip(tr("Tensors drawn (layer / operand)"));
  plot_ = new QCustomPlot(split);
  plot_->setAutoAddPlottableToLegend(false); // each plot builds its own legends
  plot_->setObjectName(QStringLiteral("scalePlot"));
  plot_->setMinimumSize(500, 380);
  split->addWidget(list_);
  split->addWidget(plot_);
  split->setStretchFactor(1, 1);
  v->addWidget(split, 1);
  info_ = new QLabel(this);
  info_->setObjectName(QStringLiteral("info"));
  info_->setWordWrap(true);
  v->addWidget(info_);

  connect(cmp_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) runsChosen();
  });
  connect(conv_box_, &QComboBox::currentIndexChanged, this,
          [this] { setQuantConvention(conv_box_->currentData().toInt() == 1); });
  connect(amax_box_, &QCheckBox::toggled, this, &ScaleEvolutionView::setShowAmax);
  connect(list_, &QListWidget::itemChanged, this, [this] {
    if (!updating_) draw();
  });
  draw();
}

void ScaleEvolutionView::setSession(SessionDocument* session) {
  if (session) {
    // The compare box before the Run box's first choice, which reads it.
    session_ = session;
    rebuildCompare();
    // key -1: before the Run box's rebuild (key 0), whose choice reads the compare box
    auto reload = [this] { whenShown(-1, [this] { rebuildCompare(); }); };
    connect(session, &SessionDocument::reset_, this, reload);
    connect(session, &SessionDocument::runAdded, this, reload);
    connect(session, &SessionDocument::runRemoved, this, reload);
  }
  AnalysisView::setSession(session);
}

void ScaleEvolutionView::rebuildCompare() {
  if (!session_) return;
  const QString wasCmp = cmp_box_->currentData().toString();
  const bool hadRuns = cmp_box_->count() > 1;
  // the run the Run box shows, if it is still in the session (after a load it is the previous
  // file's until the Run box rebuilds)
  QString main = runs() ? runs()->currentId() : QString();
  if (session_->indexOf(main) < 0) main.clear();
  updating_ = true;
  cmp_box_->clear();
  cmp_box_->addItem(tr("(none)"), QString());
  QStringList ids, scaled;
  for (const RunRecord& r : session_->runs())
    if (r.kind == QStringLiteral("training")) {
      const QString name = r.label == r.id ? r.id : r.label + QStringLiteral(" (") + r.id + QLatin1Char(')');
      cmp_box_->addItem(name, r.id);
      ids << r.id;
      if (isScaled(RunAccess::forRecord(r, session_->fileName()).get())) scaled << r.id;
    }
  // Keep the run compared with, or "(none)" when that was chosen; else another low-precision run
  // dashed beside the one shown.
  int c = wasCmp.isEmpty() ? (hadRuns ? 0 : -1) : cmp_box_->findData(wasCmp);
  if (c < 0) {
    // the run the Run box will show: the one shown, else the first low-precision run
    const QString shown = !main.isEmpty() ? main : scaled.isEmpty() ? QString() : scaled.first();
    for (const QString& id : scaled.isEmpty() ? ids : scaled)
      if (id != shown) {
        c = cmp_box_->findData(id);
        break;
      }
  }
  cmp_box_->setCurrentIndex(c < 0 ? 0 : c);
  updating_ = false;
}

void ScaleEvolutionView::runChosen(Read) {
  const QString main = runs() ? runs()->currentId() : QString();
  // The run compared with cannot be the run shown: it becomes the one shown before.
  if (!main.isEmpty() && cmp_box_->currentData().toString() == main) {
    updating_ = true;
    const int was = cmp_box_->findData(shown_);
    cmp_box_->setCurrentIndex(was > 0 && shown_ != main ? was : 0);
    updating_ = false;
  }
  if (!main.isEmpty()) shown_ = main;
  runsChosen();
}

void ScaleEvolutionView::runsChosen() {
  run_.reset();
  cmp_.reset();
  if (session_) {
    auto get = [&](const QString& id) -> std::shared_ptr<RunAccess> {
      const int i = id.isEmpty() ? -1 : session_->indexOf(id);
      return i >= 0 ? RunAccess::forRecord(session_->run(i), session_->fileName()) : nullptr;
    };
    const QString main = runs() ? runs()->currentId() : QString();
    run_ = get(main);
    const QString cid = cmp_box_->currentData().toString();
    if (cid != main) cmp_ = get(cid);
  }
  if (run_)
    clearEmpty();
  else
    showEmpty(
        noRunText(tr("No training run to show.\nOpen a session with a training run (File \u2192 Open), or train one:\n"
                     "fp8lab-cli run resources/experiments/default.json --out session.h5")));
  fillTensors();
  draw();
}

void ScaleEvolutionView::drawEmptyState(const QString&) {
  // draw() shows emptyText() whenever no run is shown
}

void ScaleEvolutionView::setRuns(std::shared_ptr<RunAccess> run, std::shared_ptr<RunAccess> compare) {
  updating_ = true;
  if (runs()) runs()->showOnly(run ? run->id() : QString());
  cmp_box_->clear();
  cmp_box_->addItem(compare ? compare->id() : tr("(none)"), compare ? compare->id() : QString());
  updating_ = false;
  run_ = std::move(run);
  cmp_ = std::move(compare);
  fillTensors();
  draw();
}

void ScaleEvolutionView::fillTensors() {
  const QStringList was = checkedTensors();
  updating_ = true;
  list_->clear();
  const QStringList ts = historyTensors(run_.get());
  for (const QString& t : ts) {
    auto* it = new QListWidgetItem(t, list_);
    it->setFlags(it->flags() | Qt::ItemIsUserCheckable);
    // Default: the forward operands of the first layer and its output gradient.
    const bool on =
        was.isEmpty() ? t.startsWith(ts.first().section(QLatin1Char('/'), 0, 0) + QLatin1Char('/')) : was.contains(t);
    it->setCheckState(on ? Qt::Checked : Qt::Unchecked);
  }
  // As wide as the longest name (a transformer's "blocks.11.attn.qkv/output_grad" is cut at 190
  // px), up to 420 px; longer names are elided in the middle, whole in their tooltips.
  const QFontMetrics fm(list_->font());
  int text = 0;
  for (int r = 0; r < list_->count(); ++r) {
    text = std::max(text, fm.horizontalAdvance(list_->item(r)->text()));
    list_->item(r)->setToolTip(list_->item(r)->text());
  }
  const int check = list_->style()->pixelMetric(QStyle::PM_IndicatorWidth) + 12;
  const int scroll = list_->style()->pixelMetric(QStyle::PM_ScrollBarExtent);
  const int width = std::clamp(text + check + scroll + 2 * list_->frameWidth() + 8, 190, 420);
  list_->setMaximumWidth(width);
  list_->setMinimumWidth(std::min(width, 420));
  // No training run: no empty white column beside the plot's "what to do" message.
  list_->setVisible(!ts.isEmpty());
  updating_ = false;
}

QStringList ScaleEvolutionView::tensors() const {
  return historyTensors(run_.get());
}

QStringList ScaleEvolutionView::checkedTensors() const {
  QStringList out;
  for (int i = 0; i < list_->count(); ++i)
    if (list_->item(i)->checkState() == Qt::Checked) out << list_->item(i)->text();
  return out;
}

void ScaleEvolutionView::setCheckedTensors(const QStringList& t) {
  updating_ = true;
  for (int i = 0; i < list_->count(); ++i)
    list_->item(i)->setCheckState(t.contains(list_->item(i)->text()) ? Qt::Checked : Qt::Unchecked);
  updating_ = false;
  draw();
}

void ScaleEvolutionView::setQuantConvention(bool quant) {
  quant_ = quant;
  if (conv_box_->currentData().toInt() != int(quant)) {
    conv_box_->blockSignals(true);
    conv_box_->setCurrentIndex(conv_box_->findData(int(quant)));
    conv_box_->blockSignals(false);
  }
  draw();
}

void ScaleEvolutionView::setShowAmax(bool on) {
  show_amax_ = on;
  amax_box_->blockSignals(true);
  amax_box_->setChecked(on);
  amax_box_->blockSignals(false);
  draw();
}

QList<int64_t> ScaleEvolutionView::saturationSteps(const QString& tensor) const {
  QList<int64_t> out;
  const auto s = readVec(run_.get(), sessionPath(layout::historySaturated(layoutName(tensor))));
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] > 0) out << int64_t(i);
  return out;
}

void ScaleEvolutionView::draw() {
  plot_->clearPlottables();
  plot_->clearItems();
  plot_->plotLayout()->clear();
  top_ = bottom_ = nullptr;
  if (!run_) {
    plotEmptyState(plot_, !emptyText().isEmpty()
                              ? emptyText()
                              : tr("No training run to show.\nOpen a session with a training run (File \u2192 "
                                   "Open), or train one:\nfp8lab-cli run resources/experiments/default.json --out "
                                   "session.h5"));
    info_->setText(tr("No training run."));
    plot_->replot();
    return;
  }
  const QStringList checked = checkedTensors();
  QStringList missing;
  top_ = new QCPAxisRect(plot_);
  bottom_ = new QCPAxisRect(plot_);
  auto* title = new QCPTextElement(
      plot_,
      cmp_ ? tr("Scales and loss \u2014 %1 (dashed: %2)").arg(runName(run_.get()), runName(cmp_.get()))
           : tr("Scales and loss \u2014 %1").arg(runName(run_.get())),
      QFont(font().family(), 10, QFont::Bold));
  plot_->plotLayout()->addElement(0, 0, title);
  plot_->plotLayout()->addElement(1, 0, top_);
  plot_->plotLayout()->addElement(2, 0, bottom_);
  auto* group = new QCPMarginGroup(plot_);
  top_->setMarginGroup(QCP::msLeft | QCP::msRight, group);
  bottom_->setMarginGroup(QCP::msLeft | QCP::msRight, group);
  QCPAxis* tx = top_->axis(QCPAxis::atBottom);
  QCPAxis* ty = top_->axis(QCPAxis::atLeft);
  QCPAxis* bx = bottom_->axis(QCPAxis::atBottom);
  QCPAxis* by = bottom_->axis(QCPAxis::atLeft);
  ty->setScaleType(QCPAxis::stLogarithmic);
  ty->setTicker(distinctLogTicker());
  ty->setNumberFormat(QStringLiteral("eb"));
  ty->setNumberPrecision(0);
  ty->setLabel(quant_ ? tr("quant scale s (q = cast(x\u00b7s))%1").arg(show_amax_ ? tr(", amax") : QString())
                      : tr("dequant scale s (x \u2248 q\u00b7s)%1").arg(show_amax_ ? tr(", amax") : QString()));
  tx->setLabel(tr("training step"));
  bx->setLabel(tr("training step"));
  tx->setTicker(wholeNumberTicker());
  bx->setTicker(wholeNumberTicker());
  by->setLabel(tr("loss (nats)"));
  // One legend below both plots (never over the curves), as a key rather than one entry per
  // curve: colour = tensor, line style = quantity, dashed = the compared run. Three tensors of
  // two runs would otherwise need 20 entries, too long to read or to fit.
  auto* legend = new QCPLegend;
  plot_->plotLayout()->addElement(3, 0, legend);
  plot_->plotLayout()->setRowStretchFactors({0.001, 2.2, 1.0, 0.001});
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  legend->setWrap(4);
  legend->setBorderPen(Qt::NoPen);
  legend->setLayer(QStringLiteral("legend"));
  legend->setBrush(QColor(255, 255, 255, 225));
  QFont lf = font();
  lf.setPointSizeF(8.5);
  legend->setFont(lf);
  int64_t satEvents = 0;
  int64_t maxSteps = 0;
  bool anyScale = false, mainSat = false, cmpSat = false;
  auto addSeries = [&](const RunAccess* r, const QString& t, int colour, bool dashed) {
    const std::string op = layoutName(t);
    const QString g = sessionPath(layout::history(op));
    const QString who = dashed ? runName(r) + QStringLiteral(" ") : QString();
    std::vector<double> sc = readVec(r, sessionPath(quant_ ? layout::historyQuantScale(op) : layout::historyScale(op)));
    if (sc.empty() && quant_) {
      const auto d = readVec(r, sessionPath(layout::historyScale(op)));
      for (double x : d) sc.push_back(x > 0 ? 1.0 / x : std::nan(""));
    }
    const auto am = readVec(r, sessionPath(layout::historyAmax(op)));
    const auto sat = readVec(r, sessionPath(layout::historySaturated(op)));
    maxSteps = std::max<int64_t>(maxSteps, int64_t(std::max(sc.size(), am.size())));
    const QColor c = colors::series(colour);
    if (!sc.empty()) {
      QVector<double> x(int(sc.size())), y(int(sc.size()));
      for (int i = 0; i < x.size(); ++i) x[i] = i, y[i] = sc[size_t(i)] > 0 ? sc[size_t(i)] : std::nan("");
      auto* gr = new QCPGraph(tx, ty);
      gr->setName(tr("%1%2 scale").arg(who, t));
      gr->setPen(QPen(c, dashed ? 1.3 : 1.8, dashed ? Qt::DashLine : Qt::SolidLine));
      gr->setData(x, y, true);
      anyScale = true;
    } else if (isScaled(r)) {
      missing << tr("%1 of %2").arg(sessionPath(layout::historyScale(op)), r->id());
    }
    if (show_amax_ && !am.empty()) {
      QVector<double> x(int(am.size())), y(int(am.size()));
      for (int i = 0; i < x.size(); ++i) x[i] = i, y[i] = am[size_t(i)] > 0 ? am[size_t(i)] : std::nan("");
      auto* ga = new QCPGraph(tx, ty);
      ga->setName(tr("%1%2 amax").arg(who, t));
      QColor ca = c;
      ca.setAlpha(dashed ? 90 : 130);
      ga->setPen(QPen(ca, 1, dashed ? Qt::DashDotLine : Qt::DotLine));
      ga->setData(x, y, true);
    }
    if (!sat.empty() && !am.empty()) {
      QVector<double> x, y;
      for (size_t i = 0; i < sat.size() && i < am.size(); ++i)
        if (sat[i] > 0) {
          x << double(i);
          y << (i < sc.size() && sc[i] > 0 ? sc[i] : am[i]);
        }
      satEvents += x.size();
      if (!x.isEmpty()) {
        auto* gs = new QCPGraph(tx, ty);
        gs->setName(tr("%1%2 saturation (\u2265 1 element clipped)").arg(who, t));
        gs->setLineStyle(QCPGraph::lsNone);
        gs->setScatterStyle(
            QCPScatterStyle(dashed ? QCPScatterStyle::ssCircle : QCPScatterStyle::ssCross, QColor(0xc0, 0, 0), 6));
        gs->setData(x, y, true);
        (dashed ? cmpSat : mainSat) = true;
      }
    }
  };
  for (int i = 0; i < checked.size(); ++i) {
    addSeries(run_.get(), checked[i], i, false);
    if (cmp_ && cmp_->has(sessionPath(layout::historyAmax(layoutName(checked[i])))))
      addSeries(cmp_.get(), checked[i], i, true);
  }
  if (!anyScale && show_amax_) ty->setLabel(tr("amax (max |x|, tensor units)"));
  // Loss below.
  std::vector<std::pair<QString, QPen>> losses;
  auto addLoss = [&](const RunAccess* r, bool dashed) {
    const auto loss = readVec(r, sessionPath(layout::kTrainingLoss));
    if (loss.empty()) {
      missing << tr("%1 of %2").arg(sessionPath(layout::kTrainingLoss), r->id());
      return;
    }
    maxSteps = std::max<int64_t>(maxSteps, int64_t(loss.size()));
    QVector<double> x(int(loss.size())), y(int(loss.size()));
    for (int i = 0; i < x.size(); ++i) x[i] = i, y[i] = loss[size_t(i)];
    auto* g = new QCPGraph(bx, by);
    g->setName(tr("loss, %1").arg(runName(r)));
    g->setPen(
        QPen(dashed ? QColor(0x88, 0x88, 0x88) : QColor(0x20, 0x20, 0x20), 1, dashed ? Qt::DashLine : Qt::SolidLine));
    g->setData(x, y, true);
    losses.push_back({r->id(), g->pen()});
  };
  addLoss(run_.get(), false);
  if (cmp_) addLoss(cmp_.get(), true);
  for (int i = 0; i < checked.size(); ++i) addLegendKey(legend, checked[i], QPen(colors::series(i), 2.5));
  const QColor ink(0x40, 0x40, 0x40);
  if (anyScale) addLegendKey(legend, quant_ ? tr("quant scale (solid)") : tr("dequant scale (solid)"), QPen(ink, 1.8));
  if (show_amax_ && !checked.isEmpty()) addLegendKey(legend, tr("amax (dotted)"), QPen(ink, 1, Qt::DotLine));
  const QCPScatterStyle cross(QCPScatterStyle::ssCross, QColor(0xc0, 0, 0), 6),
      circle(QCPScatterStyle::ssCircle, QColor(0xc0, 0, 0), 6);
  if (mainSat) addLegendKey(legend, tr("\u2265 1 element clipped"), Qt::NoPen, &cross);
  if (cmp_) addLegendKey(legend, tr("dashed: %1").arg(cmp_->id()), QPen(ink, 1.3, Qt::DashLine));
  if (cmpSat) addLegendKey(legend, tr("clipped, %1").arg(cmp_->id()), Qt::NoPen, &circle);
  for (const auto& [id, pen] : losses) addLegendKey(legend, tr("loss, %1").arg(id), pen);

  if (checked.isEmpty()) {
    auto* t = new QCPItemText(plot_);
    t->setClipAxisRect(top_);
    t->position->setType(QCPItemPosition::ptAxisRectRatio);
    t->position->setAxisRect(top_);
    t->position->setCoords(0.5, 0.5);
    t->setText(historyTensors(run_.get()).isEmpty()
                   ? tr("Run '%1' recorded no amax / scale history\n(train with record_history: true)").arg(run_->id())
                   : tr("Tick tensors in the list on the left to draw their scales"));
    t->setColor(QColor(0x55, 0x55, 0x55));
  }
  plot_->rescaleAxes();
  if (ty->range().lower <= 0 || !std::isfinite(ty->range().lower)) ty->setRange(1e-3, 1e3);
  ty->scaleRange(1.3, std::sqrt(ty->range().lower * ty->range().upper));
  by->scaleRange(1.1, by->range().center());
  const QCPRange xr(-0.5, double(std::max<int64_t>(1, maxSteps)) - 0.5);
  tx->setRange(xr);
  bx->setRange(xr);
  connect(tx, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), bx, qOverload<const QCPRange&>(&QCPAxis::setRange));
  connect(bx, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), tx, qOverload<const QCPRange&>(&QCPAxis::setRange));
  stylePlot(plot_);
  top_->setRangeDrag(Qt::Horizontal | Qt::Vertical);
  top_->setRangeZoom(Qt::Horizontal | Qt::Vertical);
  bottom_->setRangeDrag(Qt::Horizontal);
  bottom_->setRangeZoom(Qt::Horizontal);
  QStringList info;
  info << tr("%1: %2 scaling, %3")
              .arg(runName(run_.get()),
                   run_->attr(QStringLiteral("scaling")).isEmpty() ? tr("unknown")
                                                                   : run_->attr(QStringLiteral("scaling")),
                   stepsDoneText(*run_, maxSteps));
  if (cmp_) info << tr("dashed: %1").arg(runName(cmp_.get()));
  for (const RunAccess* r : {run_.get(), cmp_.get()})
    if (r && !isScaled(r)) info << tr("%1 is an FP32 run: no scale, amax only").arg(r->id());
  info << tr("%n saturation event(s) marked", nullptr, int(satEvents));
  info << tr("drag / wheel to pan and zoom; the loss plot follows");
  if (!missing.isEmpty())
    info
        << tr("<span style='color:#b00020'>missing: %1</span>").arg(missing.join(QStringLiteral("; ")).toHtmlEscaped());
  info_->setText(info.join(QStringLiteral(" \u00b7 ")));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString ScaleEvolutionView::infoText() const {
  return info_->text();
}

QString ScaleEvolutionView::csv() const {
  if (!run_) return {};
  const QStringList ts = checkedTensors();
  std::vector<std::vector<double>> cols;
  QStringList head{QStringLiteral("step")};
  for (const QString& t : ts) {
    const std::string op = layoutName(t);
    head << t + QStringLiteral(" amax") << t + QStringLiteral(" dequant_scale") << t + QStringLiteral(" saturated");
    cols.push_back(readVec(run_.get(), sessionPath(layout::historyAmax(op))));
    cols.push_back(readVec(run_.get(), sessionPath(layout::historyScale(op))));
    cols.push_back(readVec(run_.get(), sessionPath(layout::historySaturated(op))));
  }
  head << QStringLiteral("loss");
  cols.push_back(readVec(run_.get(), sessionPath(layout::kTrainingLoss)));
  size_t n = 0;
  for (const auto& c : cols) n = std::max(n, c.size());
  if (n == 0) return {};
  QString out = head.join(QLatin1Char(',')) + QLatin1Char('\n');
  for (size_t i = 0; i < n; ++i) {
    QStringList row{QString::number(i)};
    for (const auto& c : cols) row << (i < c.size() ? QString::number(c[i], 'g', 9) : QString());
    out += row.join(QLatin1Char(',')) + QLatin1Char('\n');
  }
  return out;
}

FP8LAB_REGISTER_VIEW(ScaleEvolutionView, "scales", 60);

// fp8lab-render: a training run's scale evolution, beside the session's first other FP8 training
// run when there is one.
FP8LAB_REGISTER_RENDER(ScaleEvolutionView, "scales", {QStringLiteral("scales")},
                       [](const RenderScope& scope, const std::shared_ptr<RunAccess>& a, QList<RenderJob>& jobs) {
                         if (a->type() != QStringLiteral("training") || !scope.wants(QStringLiteral("scales"))) return;
                         std::shared_ptr<RunAccess> cmp;
                         for (const auto& o : scope.all)
                           if (o != a && o->type() == QStringLiteral("training") &&
                               o->attr(QStringLiteral("precision")) == QStringLiteral("fp8")) {
                             cmp = o;
                             break;
                           }
                         jobs << RenderJob{a->id(), QStringLiteral("scales"), [a, cmp] {
                                             auto v = std::make_unique<ScaleEvolutionView>();
                                             v->setRuns(a, cmp);
                                             return std::unique_ptr<View>(std::move(v));
                                           }};
                       },
                       {});

} // namespace fp8lab::ui

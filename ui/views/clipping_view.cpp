#include "views/clipping_view.h"

#include "plot/plot_util.h"
#include "plot/qcp.h"
#include "session/run_box.h"
#include "session/run_sites.h"
#include "session/session_document.h"
#include "session/session_paths.h"
#include "plot/style.h"
#include "views/view_registry.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

namespace fp8lab::ui {

std::vector<ClippingSeries> readClipping(const RunAccess& run, bool underflow) {
  QStringList operands = viewNames(layout::historyOperands(layoutPaths(run.datasets())));
  sortOperandPaths(&operands, runSites(run));
  std::vector<ClippingSeries> out;
  for (const QString& op : operands) {
    const std::string name = layoutName(op);
    const QString path = sessionPath(underflow ? layout::historyUnderflow(name) : layout::historySaturated(name));
    Block b;
    if (!run.has(path) || !run.readAll(path, &b, nullptr)) continue;
    ClippingSeries s{op, {}, 0, 0, -1};
    for (size_t t = 0; t < b.v.size(); ++t) {
      const int64_t c = int64_t(b.v[t]);
      s.count.push_back(c);
      s.total += c;
      if (c > 0 && s.steps_with++ == 0) s.first = int64_t(t);
    }
    out.push_back(std::move(s));
  }
  return out;
}

ClippingView::ClippingView(QWidget* parent) : AnalysisView(RunCap::ClipCounts, parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  auto* bar = new QHBoxLayout;
  addRunBox(bar);
  what_ = new QComboBox(this);
  what_->setObjectName(QStringLiteral("count"));
  what_->addItem(tr("saturated: clipped to \u00b1max finite"), false);
  what_->addItem(tr("underflow: non-zero flushed to zero"), true);
  addLabeled(bar, tr("&Count:"), what_);
  bar->addStretch(1);
  v->addLayout(bar);
  plot_ = new QCustomPlot(this);
  plot_->setObjectName(QStringLiteral("clippingPlot"));
  plot_->setMinimumSize(500, 340);
  plot_->setAutoAddPlottableToLegend(false); // draw() builds the legend
  stylePlot(plot_);
  v->addWidget(plot_, 1);
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("summary"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(summary_);
  connect(what_, &QComboBox::currentIndexChanged, this, [this] { runChosen(Read::BySize); });
  showEmpty(tr("No session open."));
}

void ClippingView::runChosen(Read read) {
  const quint64 gen = newGeneration();
  const QString id = runs() ? runs()->currentId() : QString();
  const int i = session_ && !id.isEmpty() ? session_->indexOf(id) : -1;
  if (i < 0)
    return showEmpty(noRunText(tr("No quantized training run with clipping counts in this session.\nRun a training "
                                  "experiment (the Experiment panel's Training tab) or open a session that has one."),
                               [this](const RunRecord& r) {
                                 const bool fp32 =
                                     r.config.value(QStringLiteral("precision")).toString() == QStringLiteral("fp32") ||
                                     RunAccess::forRecord(r, session_->fileName())->attr(QStringLiteral("precision")) ==
                                         QStringLiteral("fp32");
                                 return fp32 ? tr("Run %1 is an FP32 baseline: it quantizes nothing, so nothing "
                                                  "is clipped.")
                                                   .arg(r.id)
                                             : tr("Run %1 (%2) records no clipping counts.").arg(r.id, r.kind);
                               }));
  const auto run = RunAccess::forRecord(session_->run(i), session_->fileName());
  const bool underflow = what_->currentData().toBool();
  const int64_t elements = int64_t(layout::historyOperands(layoutPaths(run->datasets())).size()) *
                           run->dims(sessionPath(layout::kTrainingLoss)).second;
  loadAsync<std::vector<ClippingSeries>>(
      gen, inBackground(read, elements), [run, underflow] { return readClipping(*run, underflow); },
      [this, run, underflow](const std::vector<ClippingSeries>& s) {
        series_ = s;
        if (series_.empty())
          return showEmpty(
              (run->attr(QStringLiteral("precision")) == QStringLiteral("fp32")
                   ? tr("Run %1 is an FP32 baseline: it quantizes nothing, so nothing is clipped.").arg(run->id())
                   : tr("Run %1 stores no %2 counts per step.")
                         .arg(run->id(), underflow ? tr("underflow") : tr("saturation"))) +
              tr("\nChoose an FP8 or FP4 training run in the Run box above."));
        clearEmpty();
        draw();
      },
      tr("Reading the counts of %1\u2026").arg(id));
}

void ClippingView::draw() {
  plot_->clearPlottables();
  plot_->clearItems();
  plot_->plotLayout()->clear();
  plot_->legend = nullptr; // deleted with the layout
  auto* rect = new QCPAxisRect(plot_);
  plot_->plotLayout()->addElement(0, 0, rect);
  // The legend in a row of its own under the axes (it never covers a count), four to a row.
  auto* legend = new QCPLegend;
  plot_->plotLayout()->addElement(1, 0, legend);
  plot_->plotLayout()->setRowStretchFactors({1.0, 0.001});
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  legend->setWrap(4);
  legend->setBorderPen(Qt::NoPen);
  legend->setLayer(QStringLiteral("legend"));
  const bool underflow = what_->currentData().toBool();
  int64_t steps = 0, top = 0, k = 0;
  for (const ClippingSeries& s : series_) {
    steps = std::max<int64_t>(steps, int64_t(s.count.size()));
    if (s.total == 0) continue;
    auto* g = plot_->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    QVector<double> x, y;
    for (size_t t = 0; t < s.count.size(); ++t) {
      x << double(t);
      y << double(s.count[t]);
      top = std::max(top, s.count[t]);
    }
    g->setData(x, y, true);
    g->setPen(QPen(colors::series(int(k++)), 1.6));
    g->setName(s.operand);
    legend->addItem(new QCPPlottableLegendItem(legend, g));
  }
  rect->axis(QCPAxis::atBottom)->setLabel(tr("training step"));
  rect->axis(QCPAxis::atBottom)->setTicker(wholeNumberTicker());
  rect->axis(QCPAxis::atLeft)->setTicker(wholeNumberTicker());
  rect->axis(QCPAxis::atLeft)
      ->setLabel(underflow ? tr("elements flushed to zero [elements]")
                           : tr("elements clipped to \u00b1max finite [elements]"));
  rect->axis(QCPAxis::atBottom)->setRange(0, std::max<int64_t>(1, steps - 1));
  rect->axis(QCPAxis::atLeft)->setRange(0, std::max<int64_t>(1, top) * 1.08);
  if (k == 0) {
    // Nothing clipped: no legend row. An empty legend left in the layout caps the column's width at
    // its own tiny maximum and squeezes the axes to a sliver.
    plot_->plotLayout()->remove(legend);
    plot_->plotLayout()->simplify();
  }
  replot(plot_);
  summary_->setText(summary());
}

QString ClippingView::summary() const {
  if (series_.empty()) return {};
  const bool underflow = what_->currentData().toBool();
  const ClippingSeries* worst = nullptr;
  int64_t with = 0;
  for (const ClippingSeries& s : series_) {
    with += s.total > 0 ? 1 : 0;
    if (s.total > 0 && (!worst || s.total > worst->total)) worst = &s;
  }
  const QString verb = underflow ? tr("underflowed") : tr("clipped");
  if (!worst) return tr("No element %1 in any of the %2 operands at any step.").arg(verb).arg(series_.size());
  return tr("%1 of %2 operands %3 at some step. Most: %4, %5 elements at %6 of %7 steps (first at step %8).")
      .arg(with)
      .arg(series_.size())
      .arg(verb, worst->operand)
      .arg(worst->total)
      .arg(worst->steps_with)
      .arg(worst->count.size())
      .arg(worst->first);
}

QString ClippingView::csv() const {
  if (series_.empty()) return {};
  QString s = QStringLiteral("step");
  size_t steps = 0;
  for (const ClippingSeries& c : series_) {
    s += QLatin1Char(',') + c.operand;
    steps = std::max(steps, c.count.size());
  }
  s += QLatin1Char('\n');
  for (size_t t = 0; t < steps; ++t) {
    s += QString::number(t);
    for (const ClippingSeries& c : series_)
      s += QLatin1Char(',') + (t < c.count.size() ? QString::number(c.count[t]) : QString());
    s += QLatin1Char('\n');
  }
  return s;
}

void ClippingView::drawEmptyState(const QString& text) {
  series_.clear();
  summary_->clear();
  plotEmptyState(plot_, text);
}

FP8LAB_REGISTER_VIEW(ClippingView, "clipping", 65);

} // namespace fp8lab::ui

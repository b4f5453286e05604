#include "learn/learn_page.h"

#include "learn/learn_demos.h"
#include "views/view_registry.h"

#include "plot/qcp.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QScrollArea>
#include <QSplitter>
#include <QStackedWidget>
#include <QVBoxLayout>

namespace fp8lab::ui {

namespace {
/// One step of the tour: which demo, what to change, what to notice.
struct TourStep {
  int demo;
  const char* change;
  const char* notice;
};
// The order for a class (the list's order): representation first (1–3), then scales over time
// (4, 5), then the GEMM's sum (6), the numerics of the scale itself (7), and the memory that
// motivates it all (8).
const TourStep kTour[] = {
    {0, "Keep the default values, then type 0.1, 0.5, 0.8, 1.0 and try E2M1.",
     "Unscaled small values are subnormal with tens of percent error; one scale per tensor moves them into the "
     "normal range. With FP4 the same values need the scale even more."},
    {1, "Widen the spread \u03c3 to 3.5, then narrow it to 1.",
     "A wide spread flushes most of E4M3FN's values (median error 100 %) while its SQNR hardly moves: SQNR weighs "
     "the big values. A narrow spread fits E4M3FN and its extra mantissa bit halves the error. Gradients are wide: "
     "E5M2."},
    {2, "Change 100 to 10000, then set the scale block to 2 and to 4 channels.",
     "One outlier ruins a per-tensor scale; per-channel (block 1) scales fix it, and a block fails again as soon as "
     "it holds the outlier and a small channel."},
    {3, "Shorten the history to 4, then raise the spike to \u00d7 100000.",
     "The spike step saturates (its scale is the old one); the steps after it lose precision for exactly as many "
     "steps as the history is long."},
    {4,
     "Read step 0 against the Flax guide (1.0, [3, 0, \u2026] and 2.0, [5, 0, \u2026]), then raise the history "
     "length to 64.",
     "Summing the two branches' metadata doubles the history every step; the scale grows coarse until values flush "
     "to zero. Max keeps it right."},
    {5, "Switch to positive operands, then lower the bits to 10, then change N_C.",
     "Without promotion the error grows with K; promoting partial sums to float32 every N_C keeps it flat. That is "
     "DeepSeek-V3's fix."},
    {6, "Press \u201cNext amax where they differ\u201d a few times; type 0.3.",
     "Reciprocal-then-multiply differs from division for about 28 % of amaxes, float64 division never; yet an "
     "element changes code only within one float32 step of a rounding boundary."},
    {7, "Switch the recipe from BF16 to FP8, MXFP8 and NVFP4; raise the batch to 8.",
     "Master weights, gradients and Adam do not shrink; activations and the GEMM copies do. MX and NVFP4 pay for "
     "their block scales (1/32 and 1/16 byte per value)."},
};
} // namespace

LearnPage::LearnPage(QWidget* parent) : View(parent) {
  auto* h = new QHBoxLayout(this);
  auto* split = new QSplitter(this);
  list_ = new QListWidget(split);
  list_->setObjectName(QStringLiteral("demoList"));
  list_->setMaximumWidth(260);
  list_->setWordWrap(true);
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  list_->setSpacing(2);
  stack_ = new QStackedWidget(split);
  split->addWidget(list_);
  split->addWidget(stack_);
  split->setStretchFactor(1, 1);
  h->addWidget(split);

  // In the tour's order (kTour).
  demos_ = {new WhyScaleDemo,   new RangeDemo,        new OutlierDemo,     new LagDemo,
            new SharedMetaDemo, new AccumulationDemo, new DeterminismDemo, new MemoryDemo};
  list_->addItem(tr("\u25b6 Start here: a tour"));
  for (size_t i = 0; i < demos_.size(); ++i) {
    list_->addItem(tr("%1. %2").arg(i + 1).arg(demos_[i]->title()));
    auto* scroll = new QScrollArea(stack_);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(demos_[i]);
    demos_[i]->plot()->setObjectName(QStringLiteral("demoPlot%1").arg(i));
    stack_->addWidget(scroll);
  }
  stack_->addWidget(buildTour()); // index kDemoCount
  connect(list_, &QListWidget::currentRowChanged, this,
          [this](int row) { stack_->setCurrentIndex(row <= 0 ? kDemoCount : row - 1); });
  list_->setCurrentRow(0);
}

QWidget* LearnPage::buildTour() {
  QString html = tr("<h2>Start here: a tour for a class</h2>"
                    "<p>Eight demos, each computed by FP8 Lab's own formats, scaling and GEMM code. Take them in this "
                    "order; each step says what to change and what to notice. Every control recomputes at once.</p>"
                    "<ol>");
  for (const TourStep& s : kTour)
    html += tr("<li><p><a href=\"learn:%1\"><b>%2</b></a><br>Change: %3<br>Notice: %4</p></li>")
                .arg(s.demo)
                .arg(demos_[size_t(s.demo)]->title().toHtmlEscaped(), tr(s.change), tr(s.notice));
  html += tr("</ol><p>The same tour is in docs/gui.md (\u201cLearn\u201d).</p>");
  tour_ = new QLabel(html);
  tour_->setObjectName(QStringLiteral("tour"));
  tour_->setWordWrap(true);
  tour_->setTextFormat(Qt::RichText);
  tour_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  tour_->setMargin(8);
  connect(tour_, &QLabel::linkActivated, this, [this](const QString& link) {
    if (link.startsWith(QStringLiteral("learn:"))) setDemo(link.mid(6).toInt());
  });
  auto* scroll = new QScrollArea(stack_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(tour_);
  return scroll;
}

QString LearnPage::tourText() const {
  return tour_->text();
}

void LearnPage::setDemo(int index) {
  list_->setCurrentRow(index < 0 ? 0 : std::min(index, kDemoCount - 1) + 1);
}

int LearnPage::demo() const {
  const int i = stack_->currentIndex();
  return i >= kDemoCount ? -1 : i;
}

QTableWidget* LearnPage::table(int demo) const {
  demos_[size_t(demo)]->ensureComputed();
  return demos_[size_t(demo)]->table();
}

QCustomPlot* LearnPage::plot(int demo) const {
  demos_[size_t(demo)]->ensureComputed();
  return demos_[size_t(demo)]->plot();
}

QCustomPlot* LearnPage::exportPlot() const {
  return demo() < 0 ? nullptr : plot(demo());
}

QString LearnPage::csv() const {
  if (demo() < 0) return {};
  demos_[size_t(demo())]->ensureComputed();
  return demos_[size_t(demo())]->csv();
}

LagDemo* LearnPage::lag() const {
  return demoAs<LagDemo>(3);
}

void LearnPage::setLagParameters(int history, int spike_step, double spike_amax) {
  lag()->setLagParameters(history, spike_step, spike_amax);
}
const std::vector<double>& LearnPage::lagScaleUsed() const {
  lag()->ensureComputed();
  return lag()->scaleUsed();
}
const std::vector<double>& LearnPage::lagSaturated() const {
  lag()->ensureComputed();
  return lag()->saturated();
}

FP8LAB_REGISTER_VIEW(LearnPage, "learn", 40);

} // namespace fp8lab::ui

#include "views/attention_view.h"
#include "session/session_paths.h"

#include "plot/plot_util.h"
#include "plot/qcp.h"
#include "session/run_box.h"
#include "session/session_document.h"
#include "plot/style.h"
#include "views/view_registry.h"
#include "views/view_render.h"

#ifdef FP8LAB_HAVE_HDF5
#include "training/probes.h"
#endif

#include <QCheckBox>
#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace fp8lab::ui {

namespace {

std::vector<double> readSeries(const RunAccess& run, const QString& path) {
  Block b;
  if (!run.has(path) || !run.readAll(path, &b, nullptr)) return {};
  return b.v;
}

/// The colour of the masked cells above the diagonal (future keys): paler than noDataColor(),
/// which would cover half of every map in mid grey.
QColor maskedColor() {
  return QColor(0xee, 0xee, 0xee);
}

/// Labels every `stride`-th position of the sequence: the bytes themselves when every position is
/// labelled, else the position numbers, followed by the byte when `with_byte` (the query axis,
/// whose labels run across it).
QSharedPointer<QCPAxisTickerText> positionTicker(const QByteArray& tokens, int64_t length, int stride, bool with_byte) {
  auto t = QSharedPointer<QCPAxisTickerText>::create();
  for (int64_t i = 0; i < length; i += stride) {
    const QString b = i < tokens.size() ? tokenLabel(uint8_t(tokens[qsizetype(i)])) : QString();
    t->addTick(double(i), stride == 1 ? b : with_byte ? QStringLiteral("%1 %2").arg(i).arg(b) : QString::number(i));
  }
  return t;
}

} // namespace

QString tokenLabel(uint8_t b) {
  if (b == ' ') return QStringLiteral("\u2423");
  if (b == '\n') return QStringLiteral("\u21b5");
  if (b == '\t') return QStringLiteral("\u21e5");
  if (b >= 0x21 && b < 0x7f) return QString(QLatin1Char(char(b)));
  return QStringLiteral("\\x%1").arg(b, 2, 16, QLatin1Char('0'));
}

QStringList attentionBlocks(const RunAccess& run) {
  return viewNames(layout::attentionBlocks(layoutPaths(run.datasets())));
}

std::vector<int64_t> attentionSteps(const RunAccess& run) {
  std::vector<int64_t> out;
  for (double s : readSeries(run, sessionPath(layout::kAttentionSteps))) out.push_back(int64_t(s));
  return out;
}

QByteArray attentionTokens(const RunAccess& run) {
  QByteArray out;
  for (double b : readSeries(run, sessionPath(layout::kAttentionTokens))) out.append(char(uint8_t(b)));
  return out;
}

bool readAttentionSnapshot(const RunAccess& run, const QString& block, int snapshot, AttentionSnapshot* out,
                           QString* why) {
  *out = {};
  auto fail = [why](const QString& t) {
    if (why) *why = t;
    return false;
  };
  const QString path = sessionPath(layout::attentionProbs(layoutName(block)));
  if (!run.has(path))
    return fail(QObject::tr("Run %1 has no attention snapshots of %2 (%3).").arg(run.id(), block, path));
  const std::vector<int64_t> shape = run.shape(path);
  if (shape.size() != 4 || shape[2] != shape[3] || shape[1] < 1 || shape[2] < 1)
    return fail(QObject::tr("%1 of run %2 is not [snapshots, heads, T, T].").arg(path, run.id()));
  const std::vector<int64_t> steps = attentionSteps(run);
  if (snapshot < 0 || snapshot >= shape[0])
    return fail(QObject::tr("Run %1 has %2 attention snapshot(s); there is no snapshot %3.")
                    .arg(run.id())
                    .arg(shape[0])
                    .arg(snapshot));
  Block b;
  QString err;
  if (!run.readPlane(path, snapshot, &b, &err)) return fail(err);
  out->block = block;
  out->snapshot = snapshot;
  out->step = size_t(snapshot) < steps.size() ? steps[size_t(snapshot)] : -1;
  out->heads = shape[1];
  out->length = shape[2];
  out->probs = std::move(b.v);
  // The sink as the run's probe defines it (probes.h): one sequence, so batch 1.
#ifdef FP8LAB_HAVE_HDF5
  const std::vector<float> f(out->probs.begin(), out->probs.end());
  out->sink = attentionSink(f.data(), 1, out->heads, out->length);
#else
  out->sink.assign(size_t(out->heads), std::nan("")); // no core/training in this build
#endif
  return true;
}

std::vector<std::vector<double>> attentionSinkSeries(const RunAccess& run, const QString& block) {
  std::vector<std::vector<double>> out;
  const QString path = sessionPath(layout::attentionProbs(layoutName(block)));
  const std::vector<int64_t> shape = run.shape(path);
  if (shape.size() != 4) return out;
  for (int64_t s = 0; s < shape[0]; ++s) {
    AttentionSnapshot a;
    if (!readAttentionSnapshot(run, block, int(s), &a, nullptr)) return {};
    out.push_back(a.sink);
  }
  return out;
}

// ---- the view ----------------------------------------------------------------------------------

AttentionView::AttentionView(QWidget* parent) : AnalysisView(RunCap::LanguageModel, parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  auto* bar = new QHBoxLayout;
  addRunBox(bar);
  block_box_ = new QComboBox(this);
  block_box_->setObjectName(QStringLiteral("block"));
  addLabeled(bar, tr("&Layer:"), block_box_);
  head_box_ = new QComboBox(this);
  head_box_->setObjectName(QStringLiteral("head"));
  head_box_->setToolTip(tr("Every head of the layer side by side, or one head large enough to label every byte"));
  addLabeled(bar, tr("&Head:"), head_box_);
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setObjectName(QStringLiteral("step"));
  slider_->setMinimumWidth(180);
  slider_->setPageStep(1);
  slider_->setTickPosition(QSlider::TicksBelow);
  slider_->setToolTip(tr("The snapshot step: the run stores the attention of the same validation sequence every "
                         "probes.attention_every steps"));
  addLabeled(bar, tr("&Step:"), slider_);
  step_label_ = new QLabel(this);
  step_label_->setObjectName(QStringLiteral("stepLabel"));
  step_label_->setMinimumWidth(150);
  bar->addWidget(step_label_);
  log_box_ = new QCheckBox(tr("lo&g colours"), this);
  log_box_->setObjectName(QStringLiteral("log"));
  log_box_->setToolTip(tr("Colour the probabilities on a log\u2081\u2080 scale from 10\u207b\u2074 to 1, to see "
                          "the small ones"));
  bar->addWidget(log_box_);
  bar->addStretch(1);
  v->addLayout(bar);

  sequence_ = new QLabel(this);
  sequence_->setObjectName(QStringLiteral("sequence"));
  sequence_->setWordWrap(true);
  sequence_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  sequence_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  v->addWidget(sequence_);

  plot_ = new QCustomPlot(this);
  plot_->setObjectName(QStringLiteral("attentionPlot"));
  plot_->setMinimumSize(420, 300);
  plot_->setMouseTracking(true);
  v->addWidget(plot_, 1);

  sink_label_ = new QLabel(this);
  sink_label_->setObjectName(QStringLiteral("sink"));
  sink_label_->setWordWrap(true);
  sink_label_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  sink_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(sink_label_);
  hover_ = new QLabel(this);
  hover_->setObjectName(QStringLiteral("hover"));
  hover_->setWordWrap(true);
  hover_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  hover_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(hover_);

  connect(block_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) setBlock(block_box_->currentData().toString());
  });
  connect(head_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) setHead(head_box_->currentData().toInt());
  });
  connect(slider_, &QSlider::valueChanged, this, [this](int i) {
    if (!updating_) setSnapshot(i);
  });
  connect(log_box_, &QCheckBox::toggled, this, [this](bool on) {
    if (!updating_) setLogScale(on);
  });
  connectCellMouse(
      plot_, this,
      [this](const QPoint& p, int64_t* r, int64_t* c) {
        int h = -1, q = -1, k = -1;
        if (!cellAt(p, &h, &q, &k)) return false;
        *r = int64_t(h) * std::max<int64_t>(1, snap_.length) + q;
        *c = k;
        return true;
      },
      [this](int64_t r, int64_t c) {
        const int64_t t = std::max<int64_t>(1, snap_.length);
        hoverAt(int(r / t), int(r % t), int(c));
      },
      [this](int64_t r, int64_t) {
        // A click on one head's map in the all-heads layout shows that head alone.
        if (head_ < 0) {
          const int h = int(r / std::max<int64_t>(1, snap_.length));
          updating_ = true;
          head_box_->setCurrentIndex(head_box_->findData(h));
          updating_ = false;
          setHead(h);
        }
      });
  // Label every byte of the sequence when the map is wide enough for it, else every n-th position.
  connect(plot_, &QCustomPlot::afterLayout, this, [this] {
    if (rects_.empty() || snap_.length <= 0) return;
    arrangeMaps();
    const QFontMetrics fm(rects_.front()->axis(QCPAxis::atBottom)->tickLabelFont());
    // The smallest round step whose labels `need` px each fit cells of `cell` px.
    auto pick = [](double need, double cell) {
      if (cell >= need) return 1;
      const int want = int(std::ceil(need / std::max(cell, 0.01)));
      for (int s : {2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 256, 512, 1024})
        if (s >= want) return s;
      return want;
    };
    for (QCPAxisRect* r : rects_) {
      const double cell = std::min(r->width(), r->height()) / double(snap_.length);
      // Rows: one line of text each; columns: a byte each, or a position number when thinned.
      const int sy = pick(fm.height() * 0.95, cell);
      const double char_w = fm.horizontalAdvance(QStringLiteral("W")) + 2.0;
      const int sx = sy == 1 && cell >= char_w
                         ? 1
                         : std::max(2, pick(fm.horizontalAdvance(QString::number(snap_.length - 1)) + 8.0, cell));
      const int key = sy * 10000 + sx;
      if (r->property("stride").toInt() == key) continue;
      r->setProperty("stride", key);
      r->axis(QCPAxis::atBottom)->setTicker(positionTicker(tokens_, snap_.length, sx, false));
      r->axis(QCPAxis::atLeft)->setTicker(positionTicker(tokens_, snap_.length, sy, true));
    }
  });
  setRunAccess(nullptr);
}

void AttentionView::runChosen(Read) {
  run_ = runs()->access();
  fillBlocks();
  reload();
}

void AttentionView::setRunAccess(std::shared_ptr<RunAccess> run) {
  runs()->showOnly(run ? run->id() : QString());
  run_ = std::move(run);
  fillBlocks();
  reload();
}

void AttentionView::fillBlocks() {
  const QString was = snap_.block.isEmpty() ? block_box_->currentData().toString() : snap_.block;
  const QStringList blocks = run_ ? attentionBlocks(*run_) : QStringList();
  steps_ = run_ ? attentionSteps(*run_) : std::vector<int64_t>();
  tokens_ = run_ ? attentionTokens(*run_) : QByteArray();
  updating_ = true;
  block_box_->clear();
  for (const QString& b : blocks) block_box_->addItem(tr("block %1").arg(b.section(QLatin1Char('.'), 1)), b);
  block_box_->setCurrentIndex(std::max(0, block_box_->findData(was)));
  block_box_->setEnabled(!blocks.isEmpty());
  const int n = int(steps_.size());
  slider_->setRange(0, std::max(0, n - 1));
  // A new run opens at its last snapshot: the attention the run ended with.
  if (snapshot_ < 0 || snapshot_ >= n) snapshot_ = n - 1;
  slider_->setValue(std::max(0, snapshot_));
  slider_->setEnabled(n > 1);
  updating_ = false;
}

bool AttentionView::setBlock(const QString& block) {
  if (!run_ || !attentionBlocks(*run_).contains(block)) return false;
  updating_ = true;
  block_box_->setCurrentIndex(block_box_->findData(block));
  updating_ = false;
  snap_.block = block;
  reload();
  return true;
}

bool AttentionView::setSnapshot(int index) {
  if (!run_ || index < 0 || size_t(index) >= steps_.size()) return false;
  snapshot_ = index;
  updating_ = true;
  slider_->setValue(index);
  updating_ = false;
  reload();
  return true;
}

bool AttentionView::setHead(int head) {
  if (head < -1 || (head >= 0 && (snap_.heads <= 0 || head >= snap_.heads))) return false;
  head_ = head;
  updating_ = true;
  head_box_->setCurrentIndex(std::max(0, head_box_->findData(head)));
  updating_ = false;
  draw();
  return true;
}

void AttentionView::setLogScale(bool on) {
  log_ = on;
  updating_ = true;
  log_box_->setChecked(on);
  updating_ = false;
  if (emptyText().isEmpty() && !snap_.probs.empty()) draw();
}

void AttentionView::reload() {
  hover_text_.clear();
  hover_->clear();
  const QString block = block_box_->currentData().toString();
  AttentionSnapshot keep;
  keep.block = block;
  if (!run_) {
    snap_ = keep;
    sink_series_.clear();
    const int u = session_ && !runs()->unlistedId().isEmpty() ? session_->indexOf(runs()->unlistedId()) : -1;
    showEmpty(u >= 0 ? tr("Run %1 is not a language-model run: attention snapshots come from the transformer.\n"
                          "Choose a transformer run in the Run box above, or train one (see below).")
                               .arg(session_->run(u).id) +
                           QStringLiteral("\n") +
                           tr("fp8lab-cli run resources/experiments/transformer-lm.json --out lm.h5, or the "
                              "Experiment panel's Training tab with Model: transformer.")
                     : tr("No transformer run in this session.\nTrain one: fp8lab-cli run "
                          "resources/experiments/transformer-lm.json --out lm.h5 (then File \u2192 Open),\nor the "
                          "Experiment panel's Training tab (Ctrl+R) with Model: transformer."));
    return;
  }
  if (block.isEmpty() || steps_.empty()) {
    snap_ = keep;
    sink_series_.clear();
    showEmpty(tr("Run %1 has no attention snapshots (attention/).\nTrain it with \"probes\": {\"attention_every\": "
                 "100} (the default of resources/experiments/transformer-lm.json) to store the attention of a fixed "
                 "validation sequence every 100 steps.")
                  .arg(run_->id()));
    return;
  }
  QString why;
  const int index = std::clamp(snapshot_, 0, int(steps_.size()) - 1);
  if (!readAttentionSnapshot(*run_, block, index, &snap_, &why)) {
    snap_ = keep;
    sink_series_.clear();
    showEmpty(why);
    return;
  }
  snapshot_ = index;
  sink_series_ = attentionSinkSeries(*run_, block);
  // The head box lists the heads of this block.
  updating_ = true;
  const int want = head_;
  head_box_->clear();
  head_box_->addItem(tr("all heads"), -1);
  for (int64_t h = 0; h < snap_.heads; ++h) head_box_->addItem(tr("head %1").arg(h), int(h));
  if (want >= snap_.heads) head_ = -1;
  head_box_->setCurrentIndex(std::max(0, head_box_->findData(head_)));
  updating_ = false;
  draw();
}

void AttentionView::drawEmptyState(const QString& text) {
  maps_ = nullptr;
  body_ = nullptr;
  sink_rect_ = nullptr;
  profile_rect_ = nullptr;
  rects_.clear();
  drawn_heads_.clear();
  titles_.clear();
  plot_->clearPlottables();
  plot_->clearItems();
  plotEmptyState(plot_, text);
  step_label_->setText(run_ && !steps_.empty() ? tr("step %1").arg(steps_[size_t(std::max(0, snapshot_))]) : QString());
  sequence_->clear();
  sink_label_->clear();
  head_box_->setEnabled(false);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString AttentionView::sequenceText() const {
  return sequence_->text();
}

QString AttentionView::sinkText() const {
  return sink_label_->text();
}

QString AttentionView::headTitle(int head) const {
  for (size_t i = 0; i < drawn_heads_.size(); ++i)
    if (drawn_heads_[i] == head) return titles_[i];
  return {};
}

QCPAxisRect* AttentionView::headRect(int head) const {
  for (size_t i = 0; i < drawn_heads_.size(); ++i)
    if (drawn_heads_[i] == head) return rects_[i];
  return nullptr;
}

void AttentionView::draw() {
  if (snap_.probs.empty() || snap_.heads <= 0) return;
  clearEmpty();
  head_box_->setEnabled(true);
  const int64_t H = snap_.heads, T = snap_.length;
  const QString pct = QStringLiteral("%1 %");
  auto sinkPct = [&](double s) { return pct.arg(QString::number(100.0 * s, 'f', 1)); };
  step_label_->setText(tr("step %1 (snapshot %2 of %3)").arg(snap_.step).arg(snap_.snapshot + 1).arg(steps_.size()));

  // The sequence, as the axes label it.
  QString seq;
  for (int64_t i = 0; i < T && i < tokens_.size(); ++i) seq += tokenLabel(uint8_t(tokens_[qsizetype(i)]));
  sequence_->setText(
      tr("Validation sequence (%1 bytes; \u2423 space, \u21b5 newline): <tt>%2</tt>").arg(T).arg(seq.toHtmlEscaped()));
  sequence_->setTextFormat(Qt::RichText);

  plot_->clearPlottables();
  plot_->clearItems();
  plot_->plotLayout()->clear();
  plot_->legend = nullptr;
  maps_ = nullptr;
  body_ = nullptr;
  sink_rect_ = nullptr;
  profile_rect_ = nullptr;
  rects_.clear();
  drawn_heads_.clear();
  titles_.clear();
  const QString family = font().family();
  auto* title =
      new QCPTextElement(plot_,
                         tr("Attention probabilities, %1, step %2, run %3 (query \u00d7 key; each row sums to 1)")
                             .arg(block_box_->currentText())
                             .arg(snap_.step)
                             .arg(run_->id()),
                         QFont(family, 10, QFont::Bold));
  plot_->plotLayout()->addElement(0, 0, title);
  auto* body = new QCPLayoutGrid;
  plot_->plotLayout()->addElement(1, 0, body);
  auto* maps = new QCPLayoutGrid;
  body->addElement(0, 0, maps);
  auto* scale = new QCPColorScale(plot_);
  body->addElement(0, 1, scale);
  body_ = body;
  scale->setType(QCPAxis::atRight);
  scale->setBarWidth(12);
  scale->axis()->setLabel(tr("probability P(query \u2192 key)"));

  drawHeadMaps(maps, scale);
  const double uniform = drawSinkPlots(body);
  stylePlot(plot_);
  plot_->setInteractions(QCP::Interactions());

  QStringList per;
  for (int64_t h = 0; h < H; ++h) per << tr("head %1 %2").arg(h).arg(sinkPct(snap_.sink[size_t(h)]));
  sink_label_->setText(tr("Attention sink at step %1 (mean over queries 1\u2026%2 of P[query, 0]; a uniform head "
                          "puts %3 there): %4.")
                           .arg(snap_.step)
                           .arg(T - 1)
                           .arg(pct.arg(QString::number(uniform, 'f', 1)))
                           .arg(per.join(QStringLiteral(", "))));
  hover_->setText(head_ < 0 ? tr("Hover over a cell for its probability; click a head's map to show it alone, "
                                 "larger. Grey above the diagonal: future keys, masked.")
                            : tr("Hover over a cell for its probability. Grey above the diagonal: future keys, "
                                 "masked."));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

/// The probability map of each head shown, [query, key] with future keys masked, on one colour
/// scale; arrangeMaps() lays them out once the plot has its size.
void AttentionView::drawHeadMaps(QCPLayoutGrid* maps, QCPColorScale* scale) {
  const int64_t H = snap_.heads, T = snap_.length;
  const QString family = font().family();
  const QString pct = QStringLiteral("%1 %");
  auto sinkPct = [&](double s) { return pct.arg(QString::number(100.0 * s, 'f', 1)); };
  std::vector<int> heads;
  if (head_ >= 0)
    heads.push_back(head_);
  else
    for (int64_t h = 0; h < H; ++h) heads.push_back(int(h));
  // One row for now: arrangeMaps() chooses the grid once the plot is laid out at its size.
  const int n = int(heads.size());
  const int cols = n;
  maps_ = maps;
  maps_cols_ = cols;
  auto* group = new QCPMarginGroup(plot_);
  QCPColorGradient g = errorGradient();
  g.setNanColor(maskedColor());
  QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  mono.setPointSize(8);
  for (int i = 0; i < n; ++i) {
    const int h = heads[size_t(i)];
    auto* rect = new QCPAxisRect(plot_);
    maps->addElement(i / cols, i % cols, rect);
    rect->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    QCPAxis* top = rect->axis(QCPAxis::atTop);
    auto* map = new QCPColorMap(x, y);
    map->setInterpolate(false);
    map->data()->setSize(int(T), int(T));
    map->data()->setRange(QCPRange(0, double(T - 1)), QCPRange(0, double(T - 1)));
    for (int64_t q = 0; q < T; ++q)
      for (int64_t k = 0; k < T; ++k) map->data()->setCell(int(k), int(q), k > q ? std::nan("") : snap_.at(h, q, k));
    // The colour scale hands its gradient and range to every map attached to it.
    map->setColorScale(scale);
    scale->setGradient(g);
    if (log_) {
      scale->setDataScaleType(QCPAxis::stLogarithmic);
      scale->setDataRange(QCPRange(1e-4, 1.0));
    } else {
      scale->setDataScaleType(QCPAxis::stLinear);
      scale->setDataRange(QCPRange(0.0, 1.0));
    }
    x->setRange(-0.5, double(T) - 0.5);
    y->setRange(-0.5, double(T) - 0.5);
    y->setRangeReversed(true); // query 0 on top: the causal triangle below the diagonal
    x->setTickLabelFont(mono);
    y->setTickLabelFont(mono);
    x->setTicker(positionTicker(tokens_, T, 8, false));
    y->setTicker(positionTicker(tokens_, T, 8, true));
    x->grid()->setVisible(false);
    y->grid()->setVisible(false);
    x->setLabel(tr("key (attended position)"));
    y->setLabel(tr("query (position)"));
    const QString t = tr("head %1 \u00b7 sink %2").arg(h).arg(sinkPct(snap_.sink[size_t(h)]));
    top->setVisible(true);
    top->setTicks(false);
    top->setTickLabels(false);
    top->setBasePen(Qt::NoPen);
    top->setLabel(t);
    QFont tf(family, 9, QFont::Bold);
    top->setLabelFont(tf);
    rects_.push_back(rect);
    drawn_heads_.push_back(h);
    titles_.push_back(t);
  }
  scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
  if (log_) scale->axis()->setTicker(distinctLogTicker());
}

/// Beside the maps: the sink of every head over the snapshot steps (the current step marked, the
/// uniform head's sink dashed) and under it the sink's profile at this step. Returns the uniform
/// head's sink in %: mean over t = 1 … T−1 of 100/(t+1).
double AttentionView::drawSinkPlots(QCPLayoutGrid* body) {
  const int64_t H = snap_.heads, T = snap_.length;
  const QString pct = QStringLiteral("%1 %");
  // The sink of every head over the snapshot steps, the current step marked.
  // The sink plot beside the maps: square maps leave the width, not the height.
  // Under it, the sink's profile at this step: P[t, 0] against the query t, beside the 1/(t+1) a
  // uniform head gives — the curve a sink rises above.
  auto* side = new QCPLayoutGrid;
  body->addElement(0, 2, side);
  auto* srect = new QCPAxisRect(plot_);
  side->addElement(1, 0, srect);
  auto* prect = new QCPAxisRect(plot_);
  side->addElement(2, 0, prect);
  profile_rect_ = prect;
  side->setRowSpacing(12);
  // The maps take the width first (arrangeMaps then limits them to squares); the sink plots keep
  // at least 300 px.
  body->setColumnStretchFactors({10.0, 0.001, 1.0});
  srect->setMinimumSize(300, 100);
  prect->setMinimumSize(300, 100);
  plot_->plotLayout()->setRowStretchFactors({0.001, 1.0});
  sink_rect_ = srect;
  QCPAxis* sx = srect->axis(QCPAxis::atBottom);
  QCPAxis* sy = srect->axis(QCPAxis::atLeft);
  double top_pct = 0;
  for (int64_t h = 0; h < H; ++h) {
    auto* gr = new QCPGraph(sx, sy);
    QVector<double> xs, ys;
    for (size_t s = 0; s < sink_series_.size() && s < steps_.size(); ++s) {
      xs << double(steps_[s]);
      ys << 100.0 * sink_series_[s][size_t(h)];
      top_pct = std::max(top_pct, ys.back());
    }
    gr->setData(xs, ys, true);
    const QColor c = colors::series(int(h));
    gr->setPen(QPen(c, head_ < 0 || head_ == h ? 2.0 : 1.0));
    gr->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, c, c, 5));
    gr->setName(tr("head %1").arg(h));
  }
  // A head that spreads its attention evenly over the causal prefix puts 1/(t+1) on position 0 at
  // query t: the sink's baseline, mean over t = 1 … T−1.
  double uniform = 0;
  for (int64_t t = 1; t < T; ++t) uniform += 1.0 / double(t + 1);
  uniform = T > 1 ? 100.0 * uniform / double(T - 1) : 100.0;
  auto* base = new QCPItemStraightLine(plot_);
  base->setClipAxisRect(srect);
  base->point1->setAxes(sx, sy);
  base->point2->setAxes(sx, sy);
  base->point1->setCoords(0, uniform);
  base->point2->setCoords(1, uniform);
  base->setPen(QPen(QColor(0x66, 0x66, 0x66), 1, Qt::DashLine));
  auto* bt = new QCPItemText(plot_);
  bt->setClipAxisRect(srect);
  bt->position->setAxes(sx, sy);
  bt->position->setCoords(steps_.empty() ? 0.0 : double(steps_.back()), uniform);
  bt->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
  bt->setText(tr("uniform attention %1").arg(pct.arg(QString::number(uniform, 'f', 1))));
  bt->setColor(QColor(0x44, 0x44, 0x44));
  auto* now = new QCPItemStraightLine(plot_);
  now->setClipAxisRect(srect);
  now->point1->setAxes(sx, sy);
  now->point2->setAxes(sx, sy);
  now->point1->setCoords(double(snap_.step), 0);
  now->point2->setCoords(double(snap_.step), 1);
  now->setPen(QPen(Qt::black, 1.5));
  const double x0 = steps_.empty() ? 0.0 : double(steps_.front()), x1 = steps_.empty() ? 1.0 : double(steps_.back());
  const double pad = std::max(1.0, 0.03 * (x1 - x0));
  sx->setRange(x0 - pad, x1 + pad);
  sx->setTicker(wholeNumberTicker());
  sx->setLabel(tr("step (snapshots of the validation sequence)"));
  sy->setRange(0, std::min(100.0, std::max({top_pct, uniform}) * 1.15 + 1.0));
  sy->setLabel(tr("mass on position 0 (%)"));
  auto* side_margins = new QCPMarginGroup(plot_);
  srect->setMarginGroup(QCP::msLeft | QCP::msRight, side_margins);
  auto* legend = new QCPLegend;
  // Above the plot, not in it: a sink that forms early would run under a legend in the corner.
  side->addElement(0, 0, legend);
  legend->setLayer(QStringLiteral("legend"));
  for (int i = 0; i < plot_->graphCount(); ++i) legend->addItem(new QCPPlottableLegendItem(legend, plot_->graph(i)));
  legend->setWrap(4);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  legend->setBorderPen(Qt::NoPen);
  legend->setBrush(Qt::NoBrush);
  side->setRowStretchFactors({0.001, 1.0, 1.0});

  drawSinkProfile(prect, legend, side_margins);
  return uniform;
}

/// The sink's profile at this step: P[t, 0] against the query t for each head shown, over the
/// dashed 1/(t+1) of a uniform head.
void AttentionView::drawSinkProfile(QCPAxisRect* prect, QCPLegend* legend, QCPMarginGroup* side_margins) {
  const int64_t H = snap_.heads, T = snap_.length;
  // The profile: a dot per query t = 1 … T−1 and head shown (every head in the all-heads layout),
  // P[t, 0] in %, over 100/(t+1) dashed. Dots, not lines: a head's mass on position 0 jumps
  // between queries, and lines between the dots would draw a thicket. The graphs stay out of the
  // legend above (the first legend of a plot is the one new plottables join).
  prect->setMarginGroup(QCP::msLeft | QCP::msRight, side_margins);
  QCPAxis* px = prect->axis(QCPAxis::atBottom);
  QCPAxis* py = prect->axis(QCPAxis::atLeft);
  {
    auto* ref = new QCPGraph(px, py);
    QVector<double> xs, ys;
    for (int64_t t = 1; t < T; ++t) {
      xs << double(t);
      ys << 100.0 / double(t + 1);
    }
    ref->setData(xs, ys, true);
    ref->setPen(QPen(QColor(0x44, 0x44, 0x44), 1.5, Qt::DashLine));
    ref->setName(tr("uniform 1/(t+1)"));
    ref->removeFromLegend(legend);
  }
  for (int64_t h = 0; h < H; ++h) {
    if (head_ >= 0 && head_ != h) continue;
    auto* gr = new QCPGraph(px, py);
    QVector<double> xs, ys;
    for (int64_t t = 1; t < T; ++t) {
      xs << double(t);
      ys << 100.0 * snap_.at(h, t, 0);
    }
    gr->setData(xs, ys, true);
    const QColor c = colors::series(int(h));
    gr->setLineStyle(QCPGraph::lsNone);
    gr->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, c, c, 4));
    gr->setName(tr("head %1").arg(h));
    gr->removeFromLegend(legend);
  }
  px->setRange(0.5, double(T) - 0.5);
  px->setTicker(wholeNumberTicker());
  px->setLabel(tr("query t at step %1 (dashed: uniform 1/(t+1))").arg(snap_.step));
  py->setRange(-2.0, 102.0);
  py->setLabel(tr("P[t, 0] (%)"));
}

void AttentionView::arrangeMaps() {
  if (arranging_ || !maps_ || !body_ || rects_.empty()) return;
  arranging_ = true;
  auto relayout = [this] {
    plot_->plotLayout()->update(QCPLayoutElement::upMargins);
    plot_->plotLayout()->update(QCPLayoutElement::upLayout);
  };
  for (QCPAxisRect* r : rects_) r->setMaximumSize(QWIDGETSIZE_MAX, QWIDGETSIZE_MAX);
  // The grid that gives the maps the largest square cells in the area the plot has now (the
  // window's, or an export's size), the sink plot beside them keeping at least 320 px. Every map
  // takes about 60 px for its tick and axis labels.
  const int n = int(rects_.size());
  const double width = body_->rect().width() - body_->element(0, 1)->outerRect().width() - 320.0;
  const double height = body_->rect().height();
  int cols = maps_cols_;
  double best = -1;
  for (int c = 1; c <= n; ++c) {
    const int rows = (n + c - 1) / c;
    const double side = std::min(width / double(c) - 60.0, height / double(rows) - 60.0);
    if (side > best + 0.5) {
      best = side;
      cols = c;
    }
  }
  if (cols != maps_cols_) {
    for (QCPAxisRect* r : rects_) maps_->take(r);
    maps_->simplify();
    for (int i = 0; i < n; ++i) maps_->addElement(i / cols, i % cols, rects_[size_t(i)]);
    maps_cols_ = cols;
  }
  for (int i = 0; i < n; ++i)
    rects_[size_t(i)]->axis(QCPAxis::atLeft)->setLabel(i % cols == 0 ? tr("query (position)") : QString());
  relayout();
  // Square cells: the diagonal of a map at 45°, a row as long as a column.
  int side = QWIDGETSIZE_MAX;
  for (QCPAxisRect* r : rects_) side = std::min({side, r->width(), r->height()});
  if (side > 16) {
    for (QCPAxisRect* r : rects_) r->setMaximumSize(side, side);
    relayout();
  }
  arranging_ = false;
}

bool AttentionView::cellAt(const QPoint& pos, int* h, int* q, int* k) const {
  for (size_t i = 0; i < rects_.size(); ++i) {
    QCPAxisRect* r = rects_[i];
    if (!r->rect().contains(pos)) continue;
    const int kk = int(std::lround(r->axis(QCPAxis::atBottom)->pixelToCoord(pos.x())));
    const int qq = int(std::lround(r->axis(QCPAxis::atLeft)->pixelToCoord(pos.y())));
    if (kk < 0 || qq < 0 || kk >= snap_.length || qq >= snap_.length) return false;
    *h = drawn_heads_[i];
    *q = qq;
    *k = kk;
    return true;
  }
  return false;
}

void AttentionView::hoverAt(int h, int q, int k) {
  if (h < 0 || h >= snap_.heads || q < 0 || k < 0 || q >= snap_.length || k >= snap_.length) return;
  auto byte = [this](int i) {
    return i < tokens_.size() ? QStringLiteral(" \u2018%1\u2019").arg(tokenLabel(uint8_t(tokens_[i]))) : QString();
  };
  if (k > q)
    hover_text_ = tr("head %1, query %2%3 \u2192 key %4%5: masked (a query attends to itself and earlier keys only)")
                      .arg(h)
                      .arg(q)
                      .arg(byte(q))
                      .arg(k)
                      .arg(byte(k));
  else
    hover_text_ = tr("head %1, query %2%3 \u2192 key %4%5: P = %6 (step %7)")
                      .arg(h)
                      .arg(q)
                      .arg(byte(q))
                      .arg(k)
                      .arg(byte(k))
                      .arg(QString::number(snap_.at(h, q, k), 'g', 4))
                      .arg(snap_.step);
  hover_->setText(hover_text_);
}

QString AttentionView::csv() const {
  if (snap_.probs.empty()) return {};
  QString out = QStringLiteral("block,step,head,query,key,query_byte,key_byte,probability\n");
  std::vector<int> heads;
  if (head_ >= 0)
    heads.push_back(head_);
  else
    for (int64_t h = 0; h < snap_.heads; ++h) heads.push_back(int(h));
  auto byte = [this](int64_t i) {
    return i < tokens_.size() ? QString::number(uint8_t(tokens_[qsizetype(i)])) : QString();
  };
  for (int h : heads)
    for (int64_t q = 0; q < snap_.length; ++q)
      for (int64_t k = 0; k <= q; ++k)
        out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8\n")
                   .arg(snap_.block)
                   .arg(snap_.step)
                   .arg(h)
                   .arg(q)
                   .arg(k)
                   .arg(byte(q), byte(k))
                   .arg(QString::number(snap_.at(h, q, k), 'g', 9));
  return out;
}

FP8LAB_REGISTER_VIEW(AttentionView, "attention", 95);

// fp8lab-render: the attention snapshots of a language-model run; --operand names the layer
// (blocks.<l>), --step the snapshot nearest it.
FP8LAB_REGISTER_RENDER(AttentionView, "attention", {QStringLiteral("attention")},
                       [](const RenderScope& scope, const std::shared_ptr<RunAccess>& a, QList<RenderJob>& jobs) {
                         const RenderRequest& req = scope.req;
                         if (!a->has(sessionPath(layout::kAttentionSteps)) || !scope.wants(QStringLiteral("attention")))
                           return;
                         const QStringList blocks = attentionBlocks(*a);
                         if (!req.operand.isEmpty() && !blocks.contains(req.operand) &&
                             scope.named(QStringLiteral("attention")))
                           scope.refuse(QObject::tr("run %1 has no attention snapshots of '%2' (its layers: %3)")
                                            .arg(a->id(), req.operand, blocks.join(QStringLiteral(", "))));
                         if (blocks.isEmpty()) return;
                         jobs << RenderJob{a->id(), QStringLiteral("attention"), [a, req] {
                                             auto v = std::make_unique<AttentionView>();
                                             v->setRunAccess(a);
                                             if (!req.operand.isEmpty()) v->setBlock(req.operand);
                                             if (req.step >= 0) {
                                               const std::vector<int64_t> steps = attentionSteps(*a);
                                               int best = 0;
                                               for (size_t i = 0; i < steps.size(); ++i)
                                                 if (std::llabs(steps[i] - req.step) <
                                                     std::llabs(steps[size_t(best)] - req.step))
                                                   best = int(i);
                                               v->setSnapshot(best);
                                             }
                                             return std::unique_ptr<View>(std::move(v));
                                           }};
                       },
                       {});

} // namespace fp8lab::ui

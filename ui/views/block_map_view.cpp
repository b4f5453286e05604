#include "views/block_map_view.h"
#include "session/session_paths.h"

#include "views/attention_view.h"
#include "session/block_stats.h"
#include "formats/format.h"
#include "plot/plot_util.h"
#include "plot/qcp.h"
#include "session/run_box.h"
#include "session/session_document.h"
#include "plot/style.h"
#include "views/view_registry.h"
#include "views/view_render.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fp8lab::ui {

namespace {

const char* const kMaps[] = {"map_scale",     "map_scale_code", "map_amax",          "map_min_nonzero",
                             "map_underflow", "map_saturated",  "map_dynamic_range", "map_sqnr_db"};

QString hexCode(uint32_t code, int bits) {
  return QStringLiteral("0x%1").arg(code, (bits + 3) / 4, 16, QLatin1Char('0'));
}

} // namespace

std::vector<MapOperand> blockMapOperands(const RunAccess& run) {
  std::vector<MapOperand> out;
  for (const OperandRow& r : blockStatOperands(run)) {
    const QString g = sessionPath(layout::blockStats(layoutName(r.path())));
    if (run.has(g + QStringLiteral("/map_scale"))) out.push_back({g, r.path(), r.label()});
  }
  // one level below block_stats/: a GEMM run's A and B, a checkpoint run's weights
  const QString prefix = sessionPath(layout::kBlockStatsGroup) + QLatin1Char('/'), leaf = QStringLiteral("/map_scale");
  QStringList single;
  for (const QString& d : run.datasets())
    if (d.startsWith(prefix) && d.endsWith(leaf)) {
      const QString op = d.mid(prefix.size(), d.size() - prefix.size() - leaf.size());
      if (!op.isEmpty() && !op.contains(QLatin1Char('/'))) single << op;
    }
  single.sort();
  for (const QString& op : single) out.push_back({prefix + op, op, op});
  return out;
}

std::vector<int64_t> blockMapSteps(const RunAccess& run, const QString& group) {
  std::vector<int64_t> out;
  Block b;
  QString err;
  if (run.has(group + QStringLiteral("/map_steps")) && run.readAll(group + QStringLiteral("/map_steps"), &b, &err))
    for (double s : b.v) out.push_back(int64_t(s));
  if (out.empty() && run.has(group + QStringLiteral("/map_scale"))) out.push_back(0);
  return out;
}

QString blockStatName(BlockStat s) {
  switch (s) {
  case BlockStat::Log2Scale:
    return QObject::tr("log\u2082 of the block scale");
  case BlockStat::Log2Amax:
    return QObject::tr("log\u2082 of the block amax");
  case BlockStat::UnderflowPct:
    return QObject::tr("underflowed elements of the block");
  case BlockStat::Saturated:
    return QObject::tr("saturated elements");
  case BlockStat::DynamicRange:
    return QObject::tr("dynamic range amax / min non-zero");
  case BlockStat::SqnrDb:
    return QObject::tr("block SQNR");
  }
  return {};
}

const std::vector<BlockStat>& allBlockStats() {
  static const std::vector<BlockStat> all{BlockStat::Log2Scale, BlockStat::Log2Amax,     BlockStat::UnderflowPct,
                                          BlockStat::Saturated, BlockStat::DynamicRange, BlockStat::SqnrDb};
  return all;
}

QString blockStatKey(BlockStat s) {
  static const char* const names[] = {"log2_scale", "log2_amax",          "underflow_percent",
                                      "saturated",  "dynamic_range_bits", "sqnr_db"};
  return QLatin1String(names[int(s)]);
}

std::optional<BlockStat> parseBlockStat(const QString& key) {
  for (BlockStat s : allBlockStats())
    if (blockStatKey(s) == key) return s;
  return std::nullopt;
}

QString blockStatUnit(BlockStat s) {
  switch (s) {
  case BlockStat::Log2Scale:
  case BlockStat::Log2Amax:
    return QStringLiteral("log\u2082");
  case BlockStat::UnderflowPct:
    return QStringLiteral("%");
  case BlockStat::Saturated:
    return QObject::tr("elements");
  case BlockStat::DynamicRange:
    return QObject::tr("bits");
  case BlockStat::SqnrDb:
    return QStringLiteral("dB");
  }
  return {};
}

QString BlockMap::stepSuffix() const {
  return stepped ? QObject::tr(", step %1").arg(step) : QString();
}

int64_t BlockMap::elements(int64_t r, int64_t c) const {
  const int64_t h = std::min(block_rows, rows - r * block_rows), w = std::min(block_cols, cols - c * block_cols);
  return std::max<int64_t>(0, h) * std::max<int64_t>(0, w);
}

double BlockMap::value(BlockStat s, int64_t r, int64_t c) const {
  const size_t i = at(r, c);
  auto log2pos = [](double v) { return v > 0 ? std::log2(v) : std::nan(""); };
  switch (s) {
  case BlockStat::Log2Scale: // an all-zero block's scale (E8M0 2^-127, NVFP4 0) scales nothing: no data
    return amax[i] > 0 ? log2pos(scale[i]) : std::nan("");
  case BlockStat::Log2Amax:
    return log2pos(amax[i]);
  case BlockStat::UnderflowPct: {
    const int64_t n = elements(r, c);
    return n > 0 ? 100.0 * underflow[i] / double(n) : std::nan("");
  }
  case BlockStat::Saturated:
    return saturated[i];
  case BlockStat::DynamicRange:
    return dynamic_range[i];
  case BlockStat::SqnrDb:
    return sqnr[i];
  }
  return std::nan("");
}

int64_t mapCost(const RunAccess& run, const QString& group) {
  int64_t n = 0;
  for (const char* m : kMaps) {
    int64_t e = 1;
    const auto s = run.shape(group + QLatin1Char('/') + QLatin1String(m));
    if (s.empty()) continue;
    for (int64_t d : s) e *= d;
    n += e;
  }
  return n;
}

bool readBlockMap(const RunAccess& run, const QString& group, int64_t index, BlockMap* out, QString* why) {
  *out = {};
  out->group = group;
  out->operand = group.mid(qsizetype(layout::blockStats(std::string()).size()));
  out->label = QString(out->operand).replace(QLatin1Char('/'), QLatin1Char(' '));
  auto attr = [&](const char* key) { return run.groupAttr(group, QLatin1String(key)); };
  out->quantization = attr("quantization");
  out->format = attr("format");
  out->scale_format = attr("scale_format");
  out->rows = attr("rows").toLongLong();
  out->cols = attr("cols").toLongLong();
  out->block_rows = std::max<qlonglong>(1, attr("block_rows").toLongLong());
  out->block_cols = std::max<qlonglong>(1, attr("block_cols").toLongLong());
  out->grid_rows = attr("grid_rows").toLongLong();
  out->grid_cols = attr("grid_cols").toLongLong();
  const std::vector<int64_t> steps = blockMapSteps(run, group);
  if (steps.empty()) {
    if (why)
      *why = QObject::tr("Run %1 has no block maps of %2 (%3/map_*).\nRerun it with diagnostics on \u2014 see "
                         "docs/training.md, \u201cPer-block statistics\u201d.")
                 .arg(run.id(), out->label, group);
    return false;
  }
  index = std::clamp<int64_t>(index, 0, int64_t(steps.size()) - 1);
  out->index = index;
  out->step = steps[size_t(index)];
  out->stepped = run.type() == QStringLiteral("training") && run.has(group + QStringLiteral("/map_steps"));
  std::vector<double>* dest[] = {&out->scale,     &out->code,      &out->amax,          &out->min_nonzero,
                                 &out->underflow, &out->saturated, &out->dynamic_range, &out->sqnr};
  for (size_t k = 0; k < std::size(kMaps); ++k) {
    const QString path = group + QLatin1Char('/') + QLatin1String(kMaps[k]);
    if (!run.has(path)) {
      if (k == 1) continue; // float32 scales: no codes
      if (why) *why = QObject::tr("Run %1 lacks %2.").arg(run.id(), path);
      return false;
    }
    Block b;
    QString err;
    if (!run.readPlane(path, index, &b, &err)) {
      if (why) *why = err;
      return false;
    }
    if (out->grid_rows <= 0 || out->grid_cols <= 0) {
      out->grid_rows = b.rows;
      out->grid_cols = b.cols;
    }
    if (b.rows != out->grid_rows || b.cols != out->grid_cols) {
      if (why)
        *why = QObject::tr("%1 is %2\u00d7%3 per step, the grid %4\u00d7%5.")
                   .arg(path)
                   .arg(b.rows)
                   .arg(b.cols)
                   .arg(out->grid_rows)
                   .arg(out->grid_cols);
      return false;
    }
    *dest[k] = std::move(b.v);
  }
  if (out->rows <= 0) out->rows = out->grid_rows * out->block_rows;
  if (out->cols <= 0) out->cols = out->grid_cols * out->block_cols;
  return true;
}

// ---- the view ----------------------------------------------------------------------------------

BlockMapView::BlockMapView(QWidget* parent)
    : AnalysisView(RunCap::MayHoldBlockStats | RunCap::Gemm | RunCap::Checkpoint, parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  auto* bar = new QHBoxLayout;
  addRunBox(bar);
  operand_box_ = new QComboBox(this);
  operand_box_->setObjectName(QStringLiteral("operand"));
  operand_box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  addLabeled(bar, tr("&Operand:"), operand_box_);
  step_box_ = new QComboBox(this);
  step_box_->setObjectName(QStringLiteral("step"));
  step_box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  addLabeled(bar, tr("S&tep:"), step_box_);
  stat_box_ = new QComboBox(this);
  stat_box_->setObjectName(QStringLiteral("stat"));
  for (BlockStat s : allBlockStats())
    stat_box_->addItem(blockStatName(s) + QStringLiteral(" (") + blockStatUnit(s) + QLatin1Char(')'), int(s));
  addLabeled(bar, tr("&Colour:"), stat_box_);
  bar->addStretch(1);
  v->addLayout(bar);

  auto* mid = new QHBoxLayout;
  plot_ = new QCustomPlot(this);
  plot_->setObjectName(QStringLiteral("blockMapPlot"));
  plot_->setMinimumSize(420, 300);
  plot_->setMouseTracking(true);
  mid->addWidget(plot_, 1);
  auto* side = new QVBoxLayout;
  detail_ = new QLabel(this);
  detail_->setObjectName(QStringLiteral("detail"));
  detail_->setWordWrap(true);
  detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  detail_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  detail_->setFixedWidth(270);
  detail_->setText(tr("Click a block for its scale and the bits of its scale code."));
  side->addWidget(detail_, 1);
  bits_button_ = new QPushButton(tr("Show in Bit layout"), this);
  bits_button_->setObjectName(QStringLiteral("showBits"));
  bits_button_->setEnabled(false);
  side->addWidget(bits_button_);
  line_button_ = new QPushButton(tr("Show on number line"), this);
  line_button_->setObjectName(QStringLiteral("showNumberLine"));
  line_button_->setEnabled(false);
  side->addWidget(line_button_);
  mid->addLayout(side);
  v->addLayout(mid, 1);
  hover_ = new QLabel(this);
  hover_->setObjectName(QStringLiteral("hover"));
  hover_->setWordWrap(true);
  hover_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  hover_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(hover_);

  connect(operand_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    fillSteps();
    load(Read::BySize);
  });
  connect(step_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) load(Read::BySize);
  });
  connect(stat_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    stat_ = BlockStat(stat_box_->currentData().toInt());
    if (!map_.scale.empty()) draw();
  });
  connect(bits_button_, &QPushButton::clicked, this, [this] { showScaleBits(); });
  connect(line_button_, &QPushButton::clicked, this, [this] { showOnNumberLine(); });
  connectCellMouse(
      plot_, this, [this](const QPoint& p, int64_t* r, int64_t* c) { return blockAt(p, r, c); },
      [this](int64_t r, int64_t c) { hoverAt(r, c); }, [this](int64_t r, int64_t c) { selectBlock(r, c); });
  setRunAccess(nullptr);
}

void BlockMapView::runChosen(Read read) {
  run_ = runs()->access();
  fillOperands();
  load(read);
}

void BlockMapView::setRunAccess(std::shared_ptr<RunAccess> run) {
  runs()->showOnly(run ? run->id() : QString());
  run_ = std::move(run);
  fillOperands();
  load(Read::Now);
}

void BlockMapView::fillOperands() {
  const QString was = operand();
  operands_ = run_ ? blockMapOperands(*run_) : std::vector<MapOperand>{};
  updating_ = true;
  operand_box_->clear();
  for (const MapOperand& o : operands_) operand_box_->addItem(o.label, o.operand);
  operand_box_->setCurrentIndex(std::max(0, operand_box_->findData(was)));
  operand_box_->setEnabled(!operands_.empty());
  updating_ = false;
  fillSteps();
}

void BlockMapView::fillSteps() {
  const int64_t was = step_box_->currentData().isValid() ? step_box_->currentData().toLongLong() : -1;
  steps_ = run_ && !currentGroup().isEmpty() ? blockMapSteps(*run_, currentGroup()) : std::vector<int64_t>{};
  updating_ = true;
  step_box_->clear();
  for (int64_t s : steps_) step_box_->addItem(QString::number(s), qlonglong(s));
  const int i = step_box_->findData(qlonglong(was));
  step_box_->setCurrentIndex(i >= 0 ? i : 0);
  step_box_->setEnabled(steps_.size() > 1);
  updating_ = false;
}

QString BlockMapView::operand() const {
  return operand_box_->currentData().toString();
}

QString BlockMapView::currentGroup() const {
  const QString op = operand();
  for (const MapOperand& o : operands_)
    if (o.operand == op) return o.group;
  return {};
}

bool BlockMapView::setOperand(const QString& op) {
  const int i = operand_box_->findData(op);
  if (i < 0) return false;
  updating_ = true;
  operand_box_->setCurrentIndex(i);
  updating_ = false;
  fillSteps();
  load(Read::Now);
  return true;
}

void BlockMapView::setStat(BlockStat s) {
  stat_ = s;
  updating_ = true;
  stat_box_->setCurrentIndex(stat_box_->findData(int(s)));
  updating_ = false;
  if (!map_.scale.empty()) draw();
}

void BlockMapView::setStep(int64_t step) {
  if (steps_.empty()) return;
  size_t best = 0;
  for (size_t i = 1; i < steps_.size(); ++i)
    if (std::llabs(steps_[i] - step) < std::llabs(steps_[best] - step)) best = i;
  updating_ = true;
  step_box_->setCurrentIndex(int(best));
  updating_ = false;
  load(Read::Now);
}

bool BlockMapView::showOperand(const QString& runId, const QString& op, qint64 step) {
  if (!run_ || run_->id() != runId) {
    if (!runs()->select(runId)) return false;
    run_ = runs()->access();
    fillOperands();
  }
  if (!run_ || run_->id() != runId) return false;
  if (!op.isEmpty()) {
    const int i = operand_box_->findData(op);
    if (i < 0) return false;
    updating_ = true;
    operand_box_->setCurrentIndex(i);
    updating_ = false;
    fillSteps();
  }
  if (steps_.empty()) return false;
  setStep(step);
  return true;
}

void BlockMapView::load(Read read) {
  const quint64 gen = newGeneration();
  map_ = {};
  sel_r_ = sel_c_ = -1;
  hover_text_.clear();
  hover_->clear();
  detail_->setText(tr("Click a block for its scale and the bits of its scale code."));
  bits_button_->setEnabled(false);
  line_button_->setEnabled(false);
  if (!run_) {
    showEmpty(noRunText(tr("No run to show.\nTrain with diagnostics on (Experiment panel, Training tab) or run a "
                           "GEMM, or open a session that holds one (File \u2192 Open)."),
                        noTrainedBlockStatsText));
    return;
  }
  const QString group = currentGroup();
  if (group.isEmpty()) {
    const int i = session_ ? session_->indexOf(run_->id()) : -1;
    if (run_->type() == QStringLiteral("training") && !whatIfRecipes(*run_).isEmpty() && !hasTrainedBlockStats(*run_))
      showEmpty(tr("Run %1 measured what-if recipes only: summaries per step, no block maps.\nThey are in the Layer "
                   "\u00d7 step view (Recipe box).")
                    .arg(run_->id()));
    else if (run_->type() == QStringLiteral("training") && i >= 0)
      showEmpty(noTrainedBlockStatsText(session_->run(i)));
    else
      showEmpty(run_->type() == QStringLiteral("training")
                    ? tr("Run %1 was recorded without per-block statistics (block_stats/).\nRerun it with "
                         "diagnostics on \u2014 see docs/training.md.")
                          .arg(run_->id())
                    : tr("Run %1 stores no block maps of A or B (block_stats/A, block_stats/B).\nRerun it "
                         "(fp8lab-cli rerun) to record them.")
                          .arg(run_->id()));
    return;
  }
  const int64_t index = std::max(0, step_box_->currentIndex());
  struct Result {
    BlockMap map;
    QString why;
    bool ok = false;
  };
  const auto run = run_;
  auto work = [run, group, index] {
    Result r;
    r.ok = readBlockMap(*run, group, index, &r.map, &r.why);
    return r;
  };
  auto show = [this](const Result& r) {
    if (!r.ok) {
      showEmpty(r.why);
      return;
    }
    map_ = r.map;
    draw();
  };
  loadAsync<Result>(gen, inBackground(read, mapCost(*run_, group)), work, show,
                    tr("Reading the block map of %1 in %2\u2026").arg(operand(), run_->id()));
}

void BlockMapView::drawEmptyState(const QString& text) {
  cmap_ = nullptr;
  scale_ = nullptr;
  sel_rect_ = nullptr;
  plot_->clearPlottables();
  plot_->clearItems();
  plotEmptyState(plot_, text);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void BlockMapView::draw() {
  clearEmpty();
  const BlockMap& m = map_;
  const QString unit = blockStatUnit(stat_);
  double lo = INFINITY, hi = -INFINITY;
  int64_t nodata = 0;
  for (int64_t r = 0; r < m.grid_rows; ++r)
    for (int64_t c = 0; c < m.grid_cols; ++c) {
      const double val = m.value(stat_, r, c);
      if (!std::isfinite(val)) {
        ++nodata;
        continue;
      }
      lo = std::min(lo, val);
      hi = std::max(hi, val);
    }
  // The title says what an exported picture cannot show by hovering: how many blocks are grey,
  // and the value of a tensor that is one block.
  QString third;
  if (m.grid_rows * m.grid_cols == 1)
    third = std::isfinite(lo) ? tr("\none block (per-tensor scale): value %1 (%2)").arg(numberText(lo), unit)
                              : tr("\none block (per-tensor scale), without a finite value");
  else if (nodata > 0)
    third = tr("\n%1 of %2 blocks grey: no finite value (an all-zero block, an exact SQNR)")
                .arg(nodata)
                .arg(m.grid_rows * m.grid_cols);
  const ColorMapLayout l = titledColorMap(plot_,
                                          tr("%1 per block of %2 in %3%4\n%5: %6\u00d7%7 blocks of %8\u00d7%9 "
                                             "elements over [%10, %11]")
                                                  .arg(blockStatName(stat_), m.label, run_->id(), m.stepSuffix())
                                                  .arg(m.quantization.isEmpty() ? m.format : m.quantization)
                                                  .arg(m.grid_rows)
                                                  .arg(m.grid_cols)
                                                  .arg(m.block_rows)
                                                  .arg(m.block_cols)
                                                  .arg(m.rows)
                                                  .arg(m.cols) +
                                              third,
                                          font().family());
  QCPAxis* x = l.x;
  QCPAxis* y = l.y;
  x->setLabel(tr("column (elements)"));
  y->setLabel(tr("row (elements)"));
  y->setRangeReversed(true);
  cmap_ = l.map;
  scale_ = l.scale;
  setBlockGrid(cmap_->data(), m.grid_rows, m.grid_cols, m.block_rows, m.block_cols);
  const int kc = cmap_->data()->keySize(), kr = cmap_->data()->valueSize();
  for (int r = 0; r < kr; ++r)
    for (int c = 0; c < kc; ++c) {
      const double val = m.value(stat_, std::min<int64_t>(r, m.grid_rows - 1), std::min<int64_t>(c, m.grid_cols - 1));
      cmap_->data()->setCell(c, r, std::isfinite(val) ? val : std::nan(""));
    }
  QCPColorGradient g = errorGradient();
  g.setNanColor(noDataColor());
  cmap_->setGradient(g);
  if (!std::isfinite(lo)) lo = hi = 0;
  if (hi <= lo) hi = lo + 1;
  cmap_->setDataRange(QCPRange(lo, hi));
  scale_->axis()->setLabel(tr("%1 (%2)").arg(blockStatName(stat_), unit));
  x->setRange(-0.5, double(m.cols) - 0.5);
  y->setRange(-0.5, double(m.rows) - 0.5);
  stylePlot(plot_);
  sel_rect_ = new QCPItemRect(plot_);
  sel_rect_->setClipAxisRect(l.rect);
  sel_rect_->topLeft->setAxes(x, y);
  sel_rect_->bottomRight->setAxes(x, y);
  sel_rect_->setPen(QPen(Qt::black, 2));
  sel_rect_->setVisible(false);
  hover_->setText((nodata > 0 ? tr("%n block(s) without a finite value (an all-zero block, an exact SQNR) are grey. ",
                                   nullptr, int(nodata))
                              : QString()) +
                  tr("Hover over a block for its numbers; click it for its scale."));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString BlockMapView::plotTitle() const {
  if (!cmap_) return {};
  auto* te = qobject_cast<QCPTextElement*>(plot_->plotLayout()->element(0, 0));
  return te ? te->text() : QString();
}

bool BlockMapView::blockAt(const QPoint& pos, int64_t* r, int64_t* c) const {
  if (!cmap_ || map_.scale.empty()) return false;
  const double ex = cmap_->keyAxis()->pixelToCoord(pos.x()), ey = cmap_->valueAxis()->pixelToCoord(pos.y());
  const int64_t col = int64_t(std::floor((ex + 0.5) / double(map_.block_cols)));
  const int64_t row = int64_t(std::floor((ey + 0.5) / double(map_.block_rows)));
  if (ex < -0.5 || ey < -0.5 || ex >= double(map_.cols) - 0.5 || ey >= double(map_.rows) - 0.5) return false;
  if (row < 0 || col < 0 || row >= map_.grid_rows || col >= map_.grid_cols) return false;
  *r = row;
  *c = col;
  return true;
}

void BlockMapView::hoverAt(int64_t r, int64_t c) {
  const BlockMap& m = map_;
  if (m.scale.empty() || r < 0 || c < 0 || r >= m.grid_rows || c >= m.grid_cols) return;
  const size_t i = m.at(r, c);
  const int64_t r0 = r * m.block_rows, c0 = c * m.block_cols;
  const int64_t r1 = std::min(m.rows, r0 + m.block_rows) - 1, c1 = std::min(m.cols, c0 + m.block_cols) - 1;
  const int64_t n = m.elements(r, c);
  QString code;
  if (!m.code.empty()) {
    const Format* f = Format::byName(m.scale_format.toStdString());
    code = tr(" (code %1 %2)").arg(hexCode(uint32_t(m.code[i]), f ? f->bits() : 8), m.scale_format);
  }
  hover_text_ =
      tr("block (%1, %2): rows %3\u2013%4, columns %5\u2013%6 (%7 elements) \u00b7 scale %8%9 \u00b7 amax %10 \u00b7 "
         "min non-zero %11 \u00b7 underflow %12 (%13 %) \u00b7 saturated %14 \u00b7 dynamic range %15 bits \u00b7 "
         "SQNR %16 dB")
          .arg(r)
          .arg(c)
          .arg(r0)
          .arg(r1)
          .arg(c0)
          .arg(c1)
          .arg(n)
          .arg(valueWithPow2(m.scale[i]), code, numberText(m.amax[i]), numberText(m.min_nonzero[i]))
          .arg(qlonglong(m.underflow[i]))
          .arg(QString::number(m.value(BlockStat::UnderflowPct, r, c), 'g', 4))
          .arg(qlonglong(m.saturated[i]))
          .arg(QString::number(m.dynamic_range[i], 'g', 4), numberText(m.sqnr[i]));
  hover_->setText(hover_text_);
}

void BlockMapView::selectBlock(int64_t r, int64_t c) {
  const BlockMap& m = map_;
  if (m.scale.empty() || r < 0 || c < 0 || r >= m.grid_rows || c >= m.grid_cols) return;
  sel_r_ = r;
  sel_c_ = c;
  hoverAt(r, c);
  const size_t i = m.at(r, c);
  QString text = tr("<b>Block (%1, %2)</b> of %3%4<br>dequant scale %5 (x \u2248 decode(q) \u00b7 scale)<br>")
                     .arg(r)
                     .arg(c)
                     .arg(m.label.toHtmlEscaped(), m.stepSuffix())
                     .arg(valueWithPow2(m.scale[i]).toHtmlEscaped());
  const Format* f = m.code.empty() ? nullptr : Format::byName(m.scale_format.toStdString());
  if (f) {
    const uint32_t code = uint32_t(m.code[i]);
    const auto fl = f->fields(code);
    text += tr("scale code %1 in %2 = %3<br>bits <tt>%4</tt><br>sign %5 \u00b7 exponent %6 \u00b7 mantissa %7")
                .arg(hexCode(code, f->bits()), m.scale_format, numberText(f->decode(code)))
                .arg(QString::fromStdString(f->binaryString(code)))
                .arg(fl.sign)
                .arg(fl.exponent)
                .arg(fl.mantissa);
    if (m.scale_format == QStringLiteral("E4M3FN"))
      text += tr("<br>(NVFP4: the effective scale is this E4M3 scale times the fp32 tensor scale)");
  } else {
    // Float32 scales: the 32 bits of the float, sign | 8 exponent bits | 23 mantissa bits.
    const float s = float(m.scale[i]);
    uint32_t u = 0;
    std::memcpy(&u, &s, 4);
    const QString b = QStringLiteral("%1").arg(u, 32, 2, QLatin1Char('0'));
    text += tr("float32 scale bits <tt>%1 %2 %3</tt><br>sign %4 \u00b7 exponent %5 (bias 127) \u00b7 mantissa "
               "0x%6")
                .arg(b.left(1), b.mid(1, 8), b.mid(9))
                .arg(u >> 31)
                .arg((u >> 23) & 0xff)
                .arg(u & 0x7fffff, 6, 16, QLatin1Char('0'));
  }
  const double sc = m.scale[i];
  if (m.amax[i] > 0 && sc > 0 && std::isfinite(sc))
    text += tr("<br><br>elements after scaling: %1 \u2026 %2 in %3 (min non-zero / scale \u2026 amax / scale)")
                .arg(numberText(m.min_nonzero[i] / sc), numberText(m.amax[i] / sc), m.format);
  detail_->setText(text);
  bits_button_->setEnabled(f != nullptr);
  bits_button_->setToolTip(f ? QString() : tr("float32 scales have no code in a format of the Bit layout view"));
  line_button_->setEnabled(m.amax[i] > 0 && sc > 0 && std::isfinite(sc) && Format::byName(m.format.toStdString()));
  if (sel_rect_) {
    sel_rect_->topLeft->setCoords(double(c * m.block_cols) - 0.5, double(r * m.block_rows) - 0.5);
    sel_rect_->bottomRight->setCoords(double(std::min(m.cols, (c + 1) * m.block_cols)) - 0.5,
                                      double(std::min(m.rows, (r + 1) * m.block_rows)) - 0.5);
    sel_rect_->setVisible(true);
    plot_->replot(QCustomPlot::rpQueuedReplot);
  }
}

QString BlockMapView::detailText() const {
  return detail_->text();
}

bool BlockMapView::showScaleBits() {
  if (sel_r_ < 0 || map_.code.empty() || !Format::byName(map_.scale_format.toStdString())) return false;
  Q_EMIT showCodeRequested(QStringLiteral("bits"), map_.scale_format, uint32_t(map_.code[map_.at(sel_r_, sel_c_)]));
  return true;
}

bool BlockMapView::showOnNumberLine() {
  if (sel_r_ < 0 || !Format::byName(map_.format.toStdString())) return false;
  const size_t i = map_.at(sel_r_, sel_c_);
  const double sc = map_.scale[i];
  if (!(map_.amax[i] > 0) || !(sc > 0) || !std::isfinite(sc)) return false;
  const double lo = map_.min_nonzero[i] > 0 ? map_.min_nonzero[i] / sc : map_.amax[i] / sc;
  const QString label = tr("%1 block (%2, %3)%4").arg(map_.label).arg(sel_r_).arg(sel_c_).arg(map_.stepSuffix());
  Q_EMIT showRangeRequested(QStringLiteral("numberline"), map_.format, lo, map_.amax[i] / sc, label);
  // The block's own elements where the run stores them: a GEMM run's inputs/A|B, a checkpoint
  // run's dequantized weight (training runs keep only the range above).
  const QString elements = blockElementsDataset(*run_, map_.operand);
  if (!elements.isEmpty()) {
    const int64_t r0 = sel_r_ * map_.block_rows, c0 = sel_c_ * map_.block_cols;
    const int64_t nr = std::min(map_.block_rows, map_.rows - r0), nc = std::min(map_.block_cols, map_.cols - c0);
    Block b;
    QString err;
    if (nr > 0 && nc > 0 && run_->read(elements, r0, c0, nr, nc, &b, &err)) {
      QList<float> v;
      v.reserve(qsizetype(b.v.size()));
      for (double x : b.v) v.append(float(x));
      Q_EMIT showValuesRequested(QStringLiteral("numberline"), map_.format, v, label);
    }
  }
  return true;
}

QString blockElementsDataset(const RunAccess& run, const QString& operand) {
  for (const QString& p : {sessionPath(layout::inputs(layoutName(operand))),
                           sessionPath(layout::quantizedDequantized(layoutName(operand)))})
    if (!operand.contains(QLatin1Char('/')) && run.has(p) && run.shape(p).size() == 2) return p;
  return {};
}

QString BlockMapView::csv() const {
  if (map_.scale.empty()) return {};
  QString out = QStringLiteral("block_row,block_col,") + blockStatKey(stat_) + QLatin1Char('\n');
  for (int64_t r = 0; r < map_.grid_rows; ++r)
    for (int64_t c = 0; c < map_.grid_cols; ++c)
      out += QStringLiteral("%1,%2,%3\n").arg(r).arg(c).arg(QString::number(map_.value(stat_, r, c), 'g', 9));
  return out;
}

FP8LAB_REGISTER_VIEW(BlockMapView, "block_map", 90);

// fp8lab-render: the block map of a run with per-block statistics (its first operand at its first
// map step, or --operand / --step / --block-stat).
FP8LAB_REGISTER_RENDER(BlockMapView, "block_map", {QStringLiteral("block_map")},
                       [](const RenderScope& scope, const std::shared_ptr<RunAccess>& a, QList<RenderJob>& jobs) {
                         const RenderRequest& req = scope.req;
                         if (!scope.wants(QStringLiteral("block_map")) || !hasDiagnostics(*a)) return;
                         const std::vector<MapOperand> ops = blockMapOperands(*a);
                         if (ops.empty()) return;
                         if (!req.operand.isEmpty() &&
                             std::none_of(ops.begin(), ops.end(),
                                          [&](const MapOperand& o) { return o.operand == req.operand; }) &&
                             !attentionBlocks(*a).contains(req.operand)) {
                           QStringList names;
                           for (const MapOperand& o : ops) names << o.operand;
                           scope.refuse(QObject::tr("run %1 has no block map of '%2' (its operands: %3)")
                                            .arg(a->id(), req.operand, names.join(QStringLiteral(", "))));
                         }
                         const std::optional<BlockStat> stat =
                             req.block_stat.isEmpty() ? std::nullopt : parseBlockStat(req.block_stat);
                         jobs << RenderJob{a->id(), QStringLiteral("block_map"), [a, stat, req] {
                                             auto v = std::make_unique<BlockMapView>();
                                             v->setRunAccess(a);
                                             if (!req.operand.isEmpty()) v->setOperand(req.operand);
                                             if (req.step >= 0) v->setStep(req.step);
                                             if (stat) v->setStat(*stat);
                                             return std::unique_ptr<View>(std::move(v));
                                           }};
                       },
                       {});

} // namespace fp8lab::ui

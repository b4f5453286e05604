#include "metrics/block_stats.h"
#include "session/session_paths.h"
#include "views/block_scale_view.h"

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
#include <QVBoxLayout>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

namespace fp8lab::ui {

namespace {

/// The session paths of operand A's or B's quantized datasets (core's session layout).
struct QuantizedPaths {
  QString codes, scales, scale_codes, dequantized, rotated;
  explicit QuantizedPaths(char operand) {
    const std::string op(1, operand);
    codes = sessionPath(layout::quantizedCodes(op));
    scales = sessionPath(layout::quantizedScales(op));
    scale_codes = sessionPath(layout::quantizedScaleCodes(op));
    dequantized = sessionPath(layout::quantizedDequantized(op));
    rotated = sessionPath(layout::quantizedRotated(op));
  }
};

/// The block size of a scales dataset: its block_rows / block_cols attributes, else the operand's
/// shape over the grid (rounded up).
std::pair<int64_t, int64_t> blockSize(const RunAccess& run, const QString& scales, std::pair<int64_t, int64_t> grid,
                                      std::pair<int64_t, int64_t> elems) {
  int64_t br = run.datasetAttr(scales, QStringLiteral("block_rows")).toLongLong();
  int64_t bc = run.datasetAttr(scales, QStringLiteral("block_cols")).toLongLong();
  if (br <= 0 && grid.first > 0) br = (elems.first + grid.first - 1) / grid.first;
  if (bc <= 0 && grid.second > 0) bc = (elems.second + grid.second - 1) / grid.second;
  return {std::max<int64_t>(1, br), std::max<int64_t>(1, bc)};
}

/// The second scale level of a two-level format (NVFP4), from the attributes of `<prefix>_scales`.
QString tensorScaleText(const RunAccess& run, const QString& scales) {
  const QString kind = run.datasetAttr(scales, QStringLiteral("tensor_scale_kind"));
  if (kind.isEmpty()) return {};
  const double amax = run.datasetAttr(scales, QStringLiteral("tensor_amax")).toDouble();
  const double value = run.datasetAttr(scales, QStringLiteral("tensor_scale")).toDouble();
  const QString mx = run.datasetAttr(scales, QStringLiteral("fp4_fp8_max"));
  if (kind == QStringLiteral("te_amax"))
    return QObject::tr("tensor scale (Transformer Engine, te_amax): tensor amax %1; block factor = E4M3 scale \u00d7 "
                       "amax / %2")
        .arg(numberText(amax), mx.isEmpty() ? QStringLiteral("2688") : mx);
  return QObject::tr("tensor scale (%1): %2 (tensor amax %3); block factor = tensor scale \u00d7 E4M3 scale")
      .arg(kind, numberText(value), numberText(amax));
}

/// Whether a scale code means trouble (NaN, Inf, zero, subnormal, negative, E8M0's smallest and
/// largest codes), and its short name.
bool troubleOf(const Format& f, uint32_t code, QString* text) {
  const double v = f.decode(code);
  switch (f.classify(code)) {
  case CodeClass::NaN:
    *text = QStringLiteral("NaN");
    return true;
  case CodeClass::Infinity:
    *text = v < 0 ? QStringLiteral("\u2212Inf") : QStringLiteral("+Inf");
    return true;
  case CodeClass::Zero:
    *text = QObject::tr("zero");
    return true;
  case CodeClass::Subnormal:
    *text = QObject::tr("subnormal");
    return true;
  case CodeClass::MaxFinite:
    // An E4M3 block scale of 448 is NVFP4's design point: the block holding the tensor amax gets
    // bamax · (2688/amax)/6 = 448 under TE's rule. E8M0's largest code (2^127) is an overflow.
    if (f.spec().specials == SpecialCodes::FN) return false;
    *text = QObject::tr("max %1").arg(valueWithPow2(std::fabs(v)).section(QStringLiteral(" = "), -1));
    return true;
  case CodeClass::Normal:
    break;
  }
  if (v < 0) {
    *text = QObject::tr("negative");
    return true;
  }
  if (code == 0) { // a format without a zero (E8M0): its smallest scale, an all-zero or underflowed block
    *text = QObject::tr("min %1").arg(valueWithPow2(v).section(QStringLiteral(" = "), -1));
    return true;
  }
  return false;
}

} // namespace

bool blockScaleHistogram(const RunAccess& run, char operand, ScaleHistogram* out, QString* why) {
  *out = {};
  const QuantizedPaths q(operand);
  const QString codes = q.scale_codes, scales = q.scales;
  const bool has_codes = run.has(codes), has_scales = run.has(scales);
  if (!has_codes && !has_scales) {
    if (why)
      *why = QObject::tr("Run %1 stores no block scales of %2 (%3).\nRun a GEMM with an MX or NVFP4 preset "
                         "(scaling mx_floor, mx_rceil, nvfp4_\u2026) and store_quantized on.")
                 .arg(run.id(), QString(QLatin1Char(operand)), q.scales);
    return false;
  }
  const QString ds = has_codes ? codes : scales;
  const auto grid = run.dims(ds);
  const auto elems = run.dims(sessionPath(layout::inputs(std::string(1, operand)))) != std::pair<int64_t, int64_t>{0, 0}
                         ? run.dims(sessionPath(layout::inputs(std::string(1, operand))))
                         : run.dims(q.codes);
  const auto [br, bc] = blockSize(run, has_scales ? scales : codes, grid, elems);
  out->dataset = ds;
  out->block_rows = br;
  out->block_cols = bc;
  out->grid_rows = grid.first;
  out->grid_cols = grid.second;
  out->blocks = grid.first * grid.second;
  if (has_scales) out->tensor_scale = tensorScaleText(run, scales);
  Block b;
  QString err;
  if (!run.readAll(ds, &b, &err)) {
    if (why) *why = err;
    return false;
  }
  if (has_codes) {
    out->source = ScaleHistogram::Source::Codes;
    out->format = run.datasetAttr(codes, QStringLiteral("format"));
    const Format* f = Format::byName(out->format.toStdString());
    if (!f || f->bits() > 8) {
      if (why)
        *why = QObject::tr("%1 has the unknown scale format '%2' (expected E8M0FNU or E4M3FN)").arg(codes, out->format);
      return false;
    }
    std::array<int64_t, 256> count{};
    for (double c : b.v)
      if (c >= 0 && c < 256) ++count[size_t(c)];
    // Positions: log2 |value|; zero one binade below the smallest positive value, NaN / Inf one
    // above the largest. The bar width follows the closest two positive codes.
    const double lo = std::log2(f->minSubnormal()) - 1, hi = std::log2(f->maxFinite()) + 1;
    std::vector<double> pos;
    for (uint32_t c = 0; c < f->codeCount(); ++c) {
      const double v = f->decode(c);
      if (std::isfinite(v) && v > 0) pos.push_back(std::log2(v));
    }
    std::sort(pos.begin(), pos.end());
    double gap = 1;
    for (size_t i = 1; i < pos.size(); ++i)
      if (pos[i] > pos[i - 1]) gap = std::min(gap, pos[i] - pos[i - 1]);
    out->bar_width = 0.85 * gap;
    for (uint32_t c = 0; c < 256; ++c) {
      if (count[c] == 0) continue;
      ScaleBin bin;
      bin.code = int(c);
      bin.count = count[c];
      bin.value = c < f->codeCount() ? f->decode(c) : std::nan("");
      bin.x = !std::isfinite(bin.value) ? hi : bin.value == 0 ? lo : std::log2(std::fabs(bin.value));
      bin.trouble = c >= f->codeCount() || troubleOf(*f, c, &bin.trouble_text);
      if (c >= f->codeCount()) bin.trouble_text = QObject::tr("not a code");
      if (bin.trouble) out->trouble_blocks += bin.count;
      out->bins.push_back(bin);
    }
  } else {
    // Float32 scales only (per-tensor, 1x128, ...): log2 of the dequant scale, in unit bins when
    // every finite scale is a power of two, else in bins of 1/8 binade.
    out->source = ScaleHistogram::Source::Float32Log2;
    out->format = QStringLiteral("float32");
    bool pow2 = true;
    double lo = INFINITY, hi = -INFINITY;
    for (double s : b.v)
      if (std::isfinite(s) && s != 0) {
        const double l = std::log2(std::fabs(s));
        pow2 &= l == std::floor(l);
        lo = std::min(lo, l);
        hi = std::max(hi, l);
      }
    if (!std::isfinite(lo)) lo = hi = 0;
    const double step = pow2 ? 1.0 : 0.125;
    out->bar_width = 0.85 * step;
    struct Acc {
      int64_t count = 0;
      double value = 0;
      QString trouble;
    };
    std::map<double, Acc> bins;
    for (double s : b.v) {
      double x;
      QString t;
      double value = s;
      if (std::isnan(s)) {
        x = std::floor(hi / step) * step + 2 * step + (pow2 ? 0 : step / 2), t = QStringLiteral("NaN");
      } else if (std::isinf(s)) {
        x = std::floor(hi / step) * step + 2 * step + (pow2 ? 0 : step / 2), t = QStringLiteral("Inf");
      } else if (s == 0) {
        x = std::floor(lo / step) * step - 2 * step + (pow2 ? 0 : step / 2), t = QObject::tr("zero");
      } else {
        const double l = std::log2(std::fabs(s));
        const double k = std::floor(l / step);
        x = pow2 ? l : (k + 0.5) * step;
        value = std::exp2(k * step);
        if (s < 0) t = QObject::tr("negative");
      }
      Acc& a = bins[x];
      if (a.count == 0) a.value = value, a.trouble = t;
      ++a.count;
    }
    for (const auto& [x, a] : bins) {
      ScaleBin bin;
      bin.x = x;
      bin.count = a.count;
      bin.value = a.value;
      bin.trouble = !a.trouble.isEmpty();
      bin.trouble_text = a.trouble;
      if (bin.trouble) out->trouble_blocks += bin.count;
      out->bins.push_back(bin);
    }
  }
  std::stable_sort(out->bins.begin(), out->bins.end(), [](const ScaleBin& a, const ScaleBin& b) { return a.x < b.x; });
  return true;
}

bool blockErrorMap(const RunAccess& run, char operand, BlockErrorMap::Measure measure, BlockErrorMap* out, QString* why,
                   const std::function<bool(double)>& progress) {
  *out = {};
  out->measure = measure;
  const QString op{QChar(QLatin1Char(operand))};
  // Hadamard-rotated runs quantized the rotated operand: the error is measured against it.
  const QuantizedPaths q(operand);
  const QString x = run.has(q.rotated) ? q.rotated : sessionPath(layout::inputs(layoutName(op)));
  const QString dq = q.dequantized, scales = q.scales;
  auto fail = [why](const QString& t) {
    if (why) *why = t;
    return false;
  };
  if (!run.has(scales))
    return fail(QObject::tr("Run %1 stores no block scales of %2 (%3).\nRun a GEMM with a block-scaled preset "
                            "(mx_floor, te_block_1x128, nvfp4_\u2026) and store_quantized on.")
                    .arg(run.id(), op, scales));
  if (!run.has(x))
    return fail(QObject::tr("Run %1 stores no float input of %2 (%3).\nRun the GEMM with store_inputs on.")
                    .arg(run.id(), op, x));
  if (!run.has(dq))
    return fail(QObject::tr("Run %1 stores no dequantized %2 (%3).\nRun the GEMM with store_quantized on.")
                    .arg(run.id(), op, dq));
  const auto [rows, cols] = run.dims(x);
  if (run.dims(dq) != std::pair{rows, cols}) return fail(QObject::tr("%1 and %2 have different shapes").arg(x, dq));
  const auto grid = run.dims(scales);
  const auto [br, bc] = blockSize(run, scales, grid, {rows, cols});
  if (grid.first != (rows + br - 1) / br || grid.second != (cols + bc - 1) / bc)
    return fail(QObject::tr("%1 is %2\u00d7%3 blocks, not the blocks of %4\u00d7%5 over %6 [%7\u00d7%8]")
                    .arg(scales)
                    .arg(grid.first)
                    .arg(grid.second)
                    .arg(br)
                    .arg(bc)
                    .arg(x)
                    .arg(rows)
                    .arg(cols));
  out->rows = rows;
  out->cols = cols;
  out->block_rows = br;
  out->block_cols = bc;
  out->grid_rows = grid.first;
  out->grid_cols = grid.second;
  const size_t n = size_t(grid.first * grid.second);
  BlockErrorAccumulator acc(rows, cols, ScaleBlock{br, bc});
  // Bands of whole block rows, about 2^22 elements of each dataset at a time.
  const int64_t band = br * std::max<int64_t>(1, (int64_t(1) << 22) / std::max<int64_t>(1, br * cols));
  Block bx, bd;
  QString e;
  for (int64_t r0 = 0; r0 < rows; r0 += band) {
    const int64_t nr = std::min(band, rows - r0);
    if (!run.read(x, r0, 0, nr, cols, &bx, &e) || !run.read(dq, r0, 0, nr, cols, &bd, &e)) return fail(e);
    acc.addRows(r0, nr, bx.v.data(), bd.v.data());
    if (progress && !progress(double(r0 + nr) / double(rows))) return fail(QObject::tr("cancelled"));
  }
  out->v.resize(n);
  bool any = false;
  for (size_t g = 0; g < n; ++g) {
    const double sqnr = acc.sqnrDb(g);
    const double v = measure == BlockErrorMap::Measure::Sqnr ? sqnr : std::isnan(sqnr) ? sqnr : acc.maxRel(g);
    if (std::isnan(v)) ++out->nan_blocks;
    if (std::isinf(sqnr)) ++out->exact_blocks;
    if (acc.nonFinite(g) > 0) ++out->nonfinite_blocks;
    out->v[g] = v;
    if (std::isfinite(v)) {
      out->min = any ? std::min(out->min, v) : v;
      out->max = any ? std::max(out->max, v) : v;
      any = true;
    }
  }
  return true;
}

namespace {

/// The bottom of the log count axis, half a block: bars stand on it.
constexpr double kLogCountFloor = 0.5;

/// Tick labels 2ⁿ on a log2 axis, at whole binades only.
class Pow2Ticker : public QCPAxisTickerFixed {
public:
  Pow2Ticker() {
    setTickStep(1.0);
    setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  }

protected:
  QString getTickLabel(double tick, const QLocale&, QChar, int) override { return pow2Text(int(std::lround(tick))); }
};

QColor troubleColor() {
  return QColor(0xD5, 0x5E, 0x00); // Okabe–Ito vermillion, apart from the blue of the other bars
}

} // namespace

BlockScaleView::BlockScaleView(QWidget* parent) : AnalysisView(RunCap::Gemm, parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  auto* bar = new QHBoxLayout;
  addRunBox(bar);
  operand_box_ = new QComboBox(this);
  operand_box_->setObjectName(QStringLiteral("operand"));
  operand_box_->addItem(tr("A [M\u00d7K]"), int('A'));
  operand_box_->addItem(tr("B [K\u00d7N]"), int('B'));
  addLabeled(bar, tr("&Operand:"), operand_box_);
  mode_box_ = new QComboBox(this);
  mode_box_->setObjectName(QStringLiteral("mode"));
  mode_box_->addItem(tr("Scale histogram (blocks per scale code)"), int(Mode::Histogram));
  mode_box_->addItem(tr("Error by block: SQNR (dB)"), int(Mode::ErrorSqnr));
  mode_box_->addItem(tr("Error by block: max relative error"), int(Mode::ErrorMaxRel));
  addLabeled(bar, tr("&Show:"), mode_box_);
  bar->addStretch(1);
  v->addLayout(bar);
  plot_ = new QCustomPlot(this);
  plot_->setObjectName(QStringLiteral("blockScalePlot"));
  plot_->setAutoAddPlottableToLegend(false);
  plot_->setMinimumSize(420, 300);
  v->addWidget(plot_, 1);
  caption_ = new QLabel(this);
  caption_->setObjectName(QStringLiteral("caption"));
  caption_->setWordWrap(true);
  caption_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(caption_);

  connect(operand_box_, &QComboBox::currentIndexChanged, this, [this] {
    operand_ = char(operand_box_->currentData().toInt());
    recompute(Read::BySize);
  });
  connect(mode_box_, &QComboBox::currentIndexChanged, this, [this] {
    mode_ = Mode(mode_box_->currentData().toInt());
    recompute(Read::BySize);
  });
  recompute(Read::Now);
}

void BlockScaleView::runChosen(Read read) {
  run_ = runs()->access();
  recompute(read);
}

void BlockScaleView::setRunAccess(std::shared_ptr<RunAccess> run) {
  runs()->showOnly(run ? run->id() : QString());
  run_ = std::move(run);
  recompute(Read::Now);
}

void BlockScaleView::setOperand(char operand) {
  operand_ = operand == 'B' ? 'B' : 'A';
  {
    const QSignalBlocker b(operand_box_);
    operand_box_->setCurrentIndex(operand_box_->findData(int(operand_)));
  }
  recompute(Read::Now);
}

void BlockScaleView::setMode(Mode m) {
  mode_ = m;
  {
    const QSignalBlocker b(mode_box_);
    mode_box_->setCurrentIndex(mode_box_->findData(int(m)));
  }
  recompute(Read::Now);
}

void BlockScaleView::recompute(Read read) {
  const quint64 gen = newGeneration();
  hist_ = {};
  emap_ = {};
  missing_.clear();
  if (!run_) {
    showEmpty(noRunText(tr("No GEMM run to show.\nRun a GEMM with an MX or NVFP4 preset (Experiment panel, Ctrl+R; "
                           "scaling mx_floor, mx_rceil, nvfp4_\u2026)\nor open a session that holds one (File \u2192 "
                           "Open).")));
    return;
  }
  const bool histogram = mode_ == Mode::Histogram;
  const QuantizedPaths q(operand_);
  const auto [gr, gc] = run_->dims(run_->has(q.scale_codes) ? q.scale_codes : q.scales);
  const auto [er, ec] = run_->dims(sessionPath(layout::inputs(std::string(1, operand_))));
  const int64_t size = histogram ? gr * gc : 2 * er * ec;
  struct Result {
    ScaleHistogram hist;
    BlockErrorMap emap;
    QString why;
    bool ok = false;
  };
  const auto run = run_;
  const char op = operand_;
  const BlockErrorMap::Measure measure =
      mode_ == Mode::ErrorMaxRel ? BlockErrorMap::Measure::MaxRel : BlockErrorMap::Measure::Sqnr;
  auto work = [run, op, histogram, measure, wanted = stillWanted(gen)] {
    Result r;
    r.ok = histogram ? blockScaleHistogram(*run, op, &r.hist, &r.why)
                     : blockErrorMap(*run, op, measure, &r.emap, &r.why, [wanted](double) { return wanted(); });
    return r;
  };
  auto show = [this](const Result& r) {
    hist_ = r.hist;
    emap_ = r.emap;
    if (!r.ok) {
      hist_ = {};
      emap_ = {};
      missing_ = r.why;
      showEmpty(r.why);
      return;
    }
    clearEmpty();
    if (mode_ == Mode::Histogram)
      drawHistogram();
    else
      drawErrorMap();
  };
  loadAsync<Result>(gen, inBackground(read, size), work, show,
                    histogram
                        ? tr("Reading the block scales of %1 in %2\u2026").arg(QLatin1Char(op)).arg(run->id())
                        : tr("Computing the error by block of %1 in %2\u2026").arg(QLatin1Char(op)).arg(run->id()));
}

void BlockScaleView::drawEmptyState(const QString& text) {
  plot_->clearPlottables();
  plot_->clearItems();
  plotEmptyState(plot_, text);
  // The plot says it (and so does an exported image); the caption would say it twice.
  caption_->setText(text);
  caption_->hide();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void BlockScaleView::drawHistogram() {
  plot_->clearPlottables();
  plot_->clearItems();
  plot_->plotLayout()->clear();
  plot_->legend = nullptr;
  const ScaleHistogram& h = hist_;
  const bool codes = h.source == ScaleHistogram::Source::Codes;
  const QString op{QChar(QLatin1Char(operand_))};
  // Title (two lines), legend, then the axes: the legend sits above the data, never over it.
  QString title = codes ? tr("Block scale codes of %1 in %2: %3, blocks of %4\u00d7%5")
                              .arg(op, run_->id(), h.format)
                              .arg(h.block_rows)
                              .arg(h.block_cols)
                        : tr("Float32 block scales of %1 in %2 (no scale codes): log\u2082 of the dequant scale, "
                             "blocks of %3\u00d7%4")
                              .arg(op, run_->id())
                              .arg(h.block_rows)
                              .arg(h.block_cols);
  if (!h.tensor_scale.isEmpty()) title += QLatin1Char('\n') + h.tensor_scale;
  auto* te = new QCPTextElement(plot_, title);
  te->setFont(QFont(font().family(), 10, QFont::Bold));
  plot_->plotLayout()->addElement(0, 0, te);
  auto* legend = new QCPLegend;
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  legend->setBorderPen(Qt::NoPen);
  legend->setBrush(Qt::NoBrush);
  plot_->plotLayout()->addElement(1, 0, legend);
  auto* rect = new QCPAxisRect(plot_);
  plot_->plotLayout()->addElement(2, 0, rect);
  plot_->plotLayout()->setRowStretchFactors({0.001, 0.001, 1.0});
  plot_->legend = legend;
  legend->setLayer(QStringLiteral("legend"));
  QCPAxis* x = rect->axis(QCPAxis::atBottom);
  QCPAxis* y = rect->axis(QCPAxis::atLeft);
  auto* ok_bars = new QCPBars(x, y);
  auto* bad_bars = new QCPBars(x, y);
  QVector<double> ok_k, ok_v, bad_k, bad_v;
  double lo = INFINITY, hi = -INFINITY, top = 1;
  for (const ScaleBin& b : h.bins) {
    (b.trouble ? bad_k : ok_k) << b.x;
    (b.trouble ? bad_v : ok_v) << double(b.count);
    lo = std::min(lo, b.x);
    hi = std::max(hi, b.x);
    top = std::max(top, double(b.count));
  }
  for (auto* bars : {ok_bars, bad_bars}) {
    bars->setWidth(h.bar_width);
    bars->setPen(Qt::NoPen);
  }
  ok_bars->setData(ok_k, ok_v, true);
  bad_bars->setData(bad_k, bad_v, true);
  ok_bars->setBrush(colors::series(0));
  bad_bars->setBrush(troubleColor());
  ok_bars->setName(codes ? tr("blocks per scale code") : tr("blocks per bin of log\u2082 scale"));
  ok_bars->addToLegend(legend);
  if (!bad_k.isEmpty()) {
    QStringList kinds;
    for (const ScaleBin& b : h.bins)
      if (b.trouble && !kinds.contains(b.trouble_text)) kinds << b.trouble_text;
    bad_bars->setName(tr("trouble: %1").arg(kinds.join(QStringLiteral(", "))));
    bad_bars->addToLegend(legend);
  }
  // The trouble bars are named over the bar, with their count: a single NaN block among
  // thousands is a bar one pixel high.
  // Labels of trouble bars closer than a tenth of the axis are stacked one above the other.
  const double span = std::max(1.0, (hi - lo) + 2.0);
  double prev_x = -INFINITY;
  int level = 0;
  QList<std::pair<QCPItemText*, int>> labels;
  for (const ScaleBin& b : h.bins) {
    if (!b.trouble) continue;
    level = (b.x - prev_x) / span < 0.1 ? level + 1 : 0;
    prev_x = b.x;
    auto* t = new QCPItemText(plot_);

    t->setClipAxisRect(rect);
    t->position->setAxes(x, y);
    t->position->setCoords(b.x, double(b.count));
    labels << std::pair{t, level};
    t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    const QString code = b.code >= 0 ? QStringLiteral(" (0x%1)")
                                           .arg(b.code, 2, 16, QLatin1Char('0'))
                                           .toUpper()
                                           .replace(QStringLiteral("0X"), QStringLiteral("0x"))
                                     : QString();
    t->setText(QStringLiteral("%1%2\n%3").arg(b.trouble_text, code).arg(b.count));
    t->setColor(troubleColor().darker(130));
    t->setLayer(QStringLiteral("axes")); // above the bars, on a light ground: legible over a neighbour
    t->setBrush(QColor(255, 255, 255, 210));
    QFont f = font();
    f.setPointSizeF(8);
    t->setFont(f);
  }
  x->setTicker(QSharedPointer<Pow2Ticker>::create());
  x->setLabel(codes ? (h.format.startsWith(QStringLiteral("E8M0"))
                           ? tr("block scale 2^(code \u2212 127) (log\u2082 axis; NaN code at the right end)")
                           : tr("block scale value of the %1 code (log\u2082 axis; zero at the left, NaN at the right "
                                "end)")
                                 .arg(h.format))
                    : tr("dequant scale (log\u2082 axis, bins of %1 binade)")
                          .arg(h.bar_width > 0.5 ? QStringLiteral("1") : QStringLiteral("1/8")));
  y->setLabel(tr("blocks (of %1)").arg(h.blocks));
  if (!std::isfinite(lo)) lo = hi = 0;
  x->setRange(lo - 1.0, hi + 1.0);
  // Counts that span more than two decades go on a log axis (bars from 0.5), so that a tail of a
  // few blocks beside thousands stays visible.
  double least = top;
  for (const ScaleBin& b : h.bins) least = std::min(least, double(b.count));
  const bool logy = top / least >= 100;
  if (logy) {
    // QCPBars draws a bar from its base to base + value: the value is the count less the floor,
    // so that a bar's top reads its count on the axis (a count of 1 ends at 1, not at 1.5).
    const double floor = kLogCountFloor;
    for (auto* bars : {ok_bars, bad_bars}) {
      bars->setBaseValue(floor);
      for (auto it = bars->data()->begin(); it != bars->data()->end(); ++it) it->value -= floor;
    }
    y->setScaleType(QCPAxis::stLogarithmic);
    y->setTicker(distinctLogTicker());
    y->setNumberFormat(QStringLiteral("eb"));
    y->setNumberPrecision(0);
    y->setRange(floor, top * 6); // room for the trouble labels above the highest bar
    y->setLabel(tr("blocks (of %1; log axis)").arg(h.blocks));
  } else {
    y->setRange(0, top * 1.25);
    auto yt = QSharedPointer<QCPAxisTicker>::create();
    yt->setTickCount(6);
    y->setTicker(yt);
    y->setNumberFormat(QStringLiteral("g"));
  }
  // A stacked label sits higher by a factor of 4 (log axis) or a tenth of the axis (linear).
  for (auto [t, lv] : labels)
    if (lv > 0) {
      const double yv = t->position->coords().y();
      t->position->setCoords(t->position->coords().x(),
                             logy ? yv * std::pow(4.0, lv) : yv + lv * 0.1 * y->range().size());
    }
  stylePlot(plot_);
  legend->setBorderPen(Qt::NoPen);
  QString cap = codes ? tr("%1 scale codes of %2 (%3): %4 blocks of %5\u00d7%6 elements (grid %7\u00d7%8).")
                            .arg(h.format, op, h.dataset)
                            .arg(h.blocks)
                            .arg(h.block_rows)
                            .arg(h.block_cols)
                            .arg(h.grid_rows)
                            .arg(h.grid_cols)
                      : tr("No scale codes: %1 has float32 scales only (a per-tensor or 1x128 preset); shown is the "
                           "histogram of log\u2082 of its dequant scales (%2), %3 blocks of %4\u00d7%5.")
                            .arg(op, h.dataset)
                            .arg(h.blocks)
                            .arg(h.block_rows)
                            .arg(h.block_cols);
  cap += QLatin1Char(' ') + (h.trouble_blocks == 0 ? tr("No block has a trouble code.")
                                                   : tr("%n block(s) with a trouble code (in vermillion).", nullptr,
                                                        int(h.trouble_blocks)));
  if (!h.tensor_scale.isEmpty())
    cap += QLatin1Char(' ') + h.tensor_scale.left(1).toUpper() + h.tensor_scale.mid(1) + QLatin1Char('.');
  caption_->setText(cap);
  caption_->show();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void BlockScaleView::drawErrorMap() {
  const BlockErrorMap& m = emap_;
  const bool sqnr = m.measure == BlockErrorMap::Measure::Sqnr;
  const QString op{QChar(QLatin1Char(operand_))};
  const ColorMapLayout l =
      titledColorMap(plot_,
                     (sqnr ? tr("Quantization SQNR per scale block of %1 in %2 (blocks of %3\u00d7%4)")
                           : tr("Max relative quantization error per scale block of %1 in %2 (blocks of %3\u00d7%4)"))
                         .arg(op, run_->id())
                         .arg(m.block_rows)
                         .arg(m.block_cols),
                     font().family());
  QCPAxis* x = l.x;
  QCPAxis* y = l.y;
  const bool isA = operand_ == 'A';
  x->setLabel(isA ? tr("column k of A (element)") : tr("column n of B (element)"));
  y->setLabel(isA ? tr("row m of A (element)") : tr("row k of B (element)"));
  y->setRangeReversed(true);
  auto* map = l.map;
  auto* scale = l.scale;
  setBlockGrid(map->data(), m.grid_rows, m.grid_cols, m.block_rows, m.block_cols);
  const int kc = map->data()->keySize(), kr = map->data()->valueSize();
  for (int r = 0; r < kr; ++r)
    for (int c = 0; c < kc; ++c) {
      double v = m.at(std::min<int64_t>(r, m.grid_rows - 1), std::min<int64_t>(c, m.grid_cols - 1));
      // Exact blocks (SQNR +Inf) take the top of the colour scale, counted in the caption.
      if (std::isinf(v)) v = v > 0 ? m.max : m.min;
      map->data()->setCell(c, r, v);
    }
  map->setGradient(errorGradient());
  double lo = m.min, hi = m.max;
  // Relative errors spread over decades (one outlier block beside many small ones) take a log
  // colour scale; exact blocks (0) are drawn in the lowest colour.
  double least = INFINITY;
  for (double v : m.v)
    if (v > 0 && std::isfinite(v)) least = std::min(least, v);
  const bool logc = !sqnr && std::isfinite(least) && hi / least >= 10;
  if (logc) {
    lo = least;
    for (int r = 0; r < kr; ++r)
      for (int c = 0; c < kc; ++c)
        if (map->data()->cell(c, r) <= 0) map->data()->setCell(c, r, least);
    map->setDataScaleType(QCPAxis::stLogarithmic);
    scale->setDataScaleType(QCPAxis::stLogarithmic);
    // Ticks at 1, 2 and 5 of every decade in range (QCPAxisTickerLog over a decade or two labels
    // only its upper part).
    auto ticks = QSharedPointer<QCPAxisTickerText>::create();
    const int e0 = int(std::floor(std::log10(lo))), e1 = int(std::ceil(std::log10(hi)));
    for (int e = e0; e <= e1; ++e)
      for (double f : {1.0, 2.0, 5.0}) {
        if (f > 1 && e1 - e0 > 3) continue; // over more than three decades, the decades only
        const double t = f * std::pow(10.0, e);
        if (t >= lo && t <= hi) ticks->addTick(t, QString::number(t, 'g', 3));
      }
    scale->axis()->setTicker(ticks);
  }
  if (hi <= lo) hi = lo + (sqnr ? 1.0 : std::max(1e-9, std::fabs(lo) * 0.01));
  map->setDataRange(QCPRange(lo, hi));
  scale->axis()->setLabel(sqnr   ? tr("block SQNR (dB; higher is better)")
                          : logc ? tr("max |x_q \u2212 x| / |x| (1, log scale)")
                                 : tr("max |x_q \u2212 x| / |x| (1)"));
  x->setRange(-0.5, double(m.cols) - 0.5);
  y->setRange(-0.5, double(m.rows) - 0.5);
  stylePlot(plot_);
  QString cap = tr("%1 of x_q = quantized/%2_dequantized against x = inputs/%2 over each of the %3\u00d7%4 scale "
                   "blocks (%5\u00d7%6 "
                   "elements each). Range %7 \u2026 %8%9.")
                    .arg(sqnr ? tr("SQNR 10\u00b7log\u2081\u2080(\u03a3x\u00b2 / \u03a3(x_q \u2212 x)\u00b2)")
                              : tr("Largest |x_q \u2212 x| / |x| (x \u2260 0)"),
                         op)
                    .arg(m.grid_rows)
                    .arg(m.grid_cols)
                    .arg(m.block_rows)
                    .arg(m.block_cols)
                    .arg(errorText(m.min), errorText(m.max), sqnr ? tr(" dB") : QString());
  if (m.exact_blocks > 0)
    cap += QLatin1Char(' ') +
           (sqnr ? tr("%n block(s) exact (SQNR \u221e, drawn at the top of the scale).", nullptr, int(m.exact_blocks))
                 : tr("%n block(s) exact.", nullptr, int(m.exact_blocks)));
  if (m.nan_blocks > 0)
    cap += QLatin1Char(' ') + tr("%n block(s) without a finite non-zero input (magenta).", nullptr, int(m.nan_blocks));
  if (m.nonfinite_blocks > 0)
    cap += QLatin1Char(' ') + tr("%n block(s) hold NaN or Inf elements, measured over their finite ones.", nullptr,
                                 int(m.nonfinite_blocks));
  caption_->setText(cap);
  caption_->show();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString BlockScaleView::captionText() const {
  return caption_->text();
}

QString BlockScaleView::csv() const {
  QString out;
  if (!hist_.bins.empty()) {
    out = QStringLiteral("x_log2,code,value,blocks,trouble\n");
    for (const ScaleBin& b : hist_.bins)
      out += QStringLiteral("%1,%2,%3,%4,%5\n")
                 .arg(QString::number(b.x, 'g', 9), b.code >= 0 ? QString::number(b.code) : QString(),
                      QString::number(b.value, 'g', 9), QString::number(b.count), b.trouble_text);
  } else if (!emap_.v.empty()) {
    out = emap_.measure == BlockErrorMap::Measure::Sqnr ? QStringLiteral("block_row,block_col,sqnr_db\n")
                                                        : QStringLiteral("block_row,block_col,max_rel\n");
    for (int64_t r = 0; r < emap_.grid_rows; ++r)
      for (int64_t c = 0; c < emap_.grid_cols; ++c)
        out += QStringLiteral("%1,%2,%3\n").arg(r).arg(c).arg(QString::number(emap_.at(r, c), 'g', 9));
  }
  return out;
}

FP8LAB_REGISTER_VIEW(BlockScaleView, "block_scales", 75);

// fp8lab-render: per GEMM operand with block scale codes (MX, NVFP4), the histogram of its codes
// ("block_scales-A") and, when the run stores its input and dequantized values, the SQNR of each
// block ("block_error-A").
FP8LAB_REGISTER_RENDER(BlockScaleView, "block_scales", {QStringLiteral("block_scales")},
                       [](const RenderScope& scope, const std::shared_ptr<RunAccess>& a, QList<RenderJob>& jobs) {
                         if (!a->type().startsWith(QStringLiteral("gemm")) ||
                             !scope.wants(QStringLiteral("block_scales")))
                           return;
                         for (const char op : {'A', 'B'}) {
                           const QuantizedPaths q(op);
                           if (!a->has(q.scale_codes)) continue;
                           const QString suffix = QStringLiteral("-") + QLatin1Char(op);
                           auto make = [a, op](BlockScaleView::Mode mode) {
                             return [a, op, mode] {
                               auto v = std::make_unique<BlockScaleView>();
                               v->setRunAccess(a);
                               v->setOperand(op);
                               if (mode != BlockScaleView::Mode::Histogram) v->setMode(mode);
                               return std::unique_ptr<View>(std::move(v));
                             };
                           };
                           jobs << RenderJob{a->id(), QStringLiteral("block_scales") + suffix,
                                             make(BlockScaleView::Mode::Histogram), QStringLiteral("block_scales")};
                           if (a->has(sessionPath(layout::inputs(std::string(1, op)))) && a->has(q.dequantized) &&
                               a->has(q.scales))
                             jobs << RenderJob{a->id(), QStringLiteral("block_error") + suffix,
                                               make(BlockScaleView::Mode::ErrorSqnr), QStringLiteral("block_scales")};
                         }
                       },
                       {});

} // namespace fp8lab::ui

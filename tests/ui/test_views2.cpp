// Analysis views of the desktop app, part 2: error heatmap, amax history window,
// scale evolution, comparison, sized export and the offscreen renderer, against a small golden
// session written here with core/session. Every expected number is derived by hand in a comment
// from the golden values (and, for delayed scaling, from Flax's compute_scale in
// flax/linen/fp8_ops.py: scale = 1 / (fp8_max / amax) in float32, from the window BEFORE
// the step's amax is rolled in).
#include "views/amax_history_view.h"
#include "views/clipping_view.h"
#include "session/run_model.h"
#include "views/comparison_view.h"
#include "views/error_heatmap_view.h"
#include "views/heatmap_model.h"
#include "plot/plot_util.h"
#include "plot/qcp.h"
#include "session/run_access.h"
#include "views/scale_evolution_view.h"
#include "session/session_document.h"
#include "views/view_render.h"

#include "session/session.h"

#include <QComboBox>
#include <QDebug>
#include <QImage>
#include <QSet>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QToolButton>
#include <QtTest>

#include <cmath>

using namespace fp8lab;
using namespace fp8lab::ui;

namespace {

const double kNaN = std::nan("");

// Golden GEMM run, D is 4×4. reference/D = ideal, reference/D_quantized_exact = q, output/D = d.
//   ideal row i, col j = (i + 1) · (j + 1)            (1..16)
//   q     = ideal + 0.25 where (i + j) is odd, else ideal
//   d     = q + 0.5 at (1, 2); NaN at (2, 3); else q
// So |d − ideal| (total) = 0.25 on odd (i+j) cells, +0.5 at (1,2) → 0.75, NaN at (2,3);
// quantization |q − ideal| = 0.25 on odd cells; accumulation |d − q| = 0.5 at (1,2), NaN at (2,3).
Run goldenGemm(const std::string& id, double extra = 0) {
  Run r;
  r.id = id;
  r.type = "gemm";
  r.config_json = "{\"type\":\"gemm\",\"tile\":2}";
  r.backend = "cpu";
  r.device = "test";
  std::vector<double> ideal(16), q(16);
  std::vector<float> d(16), abs(16);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int k = i * 4 + j;
      ideal[k] = (i + 1) * (j + 1);
      q[k] = ideal[k] + ((i + j) % 2 ? 0.25 : 0.0);
      d[k] = float(q[k]);
    }
  d[1 * 4 + 2] += float(0.5 + extra);
  d[2 * 4 + 3] = float(kNaN);
  for (int k = 0; k < 16; ++k) abs[k] = std::isnan(d[k]) ? float(kNaN) : float(std::fabs(double(d[k]) - ideal[k]));
  r.datasets["reference/D"] = Dataset::float64({4, 4}, ideal, "1", "ideal");
  r.datasets["reference/D_quantized_exact"] = Dataset::float64({4, 4}, q, "1", "quantized exact");
  r.putFloat32("output/D", d, 4, 4, "1", "D").attrs["output_type"] = std::string("fp32");
  r.putFloat32("error/abs", abs, 4, 4, "1", "|D - ref|");
  // A [4, 2]: row i = (i − 1.5, 2·(i − 1.5)); B [2, 4]: column j = (j, −j).
  std::vector<float> a{-1.5f, -3.0f, -0.5f, -1.0f, 0.5f, 1.0f, 1.5f, 3.0f};
  std::vector<float> b{0, 1, 2, 3, 0, -1, -2, -3};
  r.putFloat32("inputs/A", a, 4, 2, "1", "A");
  r.putFloat32("inputs/B", b, 2, 4, "1", "B");
  r.putFloat32("quantized/A_dequantized", a, 4, 2, "1", "A dq");
  r.putFloat32("quantized/B_dequantized", b, 2, 4, "1", "B dq");
  r.attrs["format_a"] = std::string("E4M3FN");
  r.attrs["format_b"] = std::string("E5M2");
  r.attrs["scaling"] = std::string("te_current");
  r.attrs["accumulation"] = std::string("split");
  r.attrs["output_type"] = std::string("fp32");
  r.attrs["m"] = int64_t(4);
  r.attrs["k"] = int64_t(2);
  r.attrs["n"] = int64_t(4);
  r.setMetric("sqnr_db", 30 + extra, "dB", "");
  r.setMetric("max_rel", 0.125, "1", "");
  r.setMetric("a_saturated", 1, "count", "");
  r.setMetric("b_saturated", 1, "count", "");
  r.setMetric("a_underflow", 2, "count", "");
  r.setMetric("b_underflow", 0, "count", "");
  r.setMetric("gemm_seconds", 0.5, "s", "");
  return r;
}

// Golden training run: one tensor fc1/input, 20 steps, amax 1 except 8 at step 4; Flax delayed
// scaling, history 4 (E4M3FN, fp8_max 448). Recorded: the Flax windows and scales, saturated 3 at
// step 4 (the spike is clipped: the scale in use came from amaxes of 1).
Run goldenTraining(const std::string& id, bool withHistory = true) {
  Run r;
  r.id = id;
  r.type = "training";
  r.config_json = "{\"type\":\"training\"}";
  r.attrs["precision"] = std::string("fp8");
  r.attrs["scaling"] = std::string(withHistory ? "delayed-flax" : "current-te");
  const int n = 20;
  std::vector<float> amax(n, 1.0f), scale(n), loss(n);
  std::vector<int64_t> sat(n, 0);
  amax[4] = 8.0f;
  sat[4] = 3;
  std::vector<float> hist(size_t(n) * 4, 0.0f);
  for (int t = 0; t < n; ++t) {
    float m = 0;
    for (int k = 0; k < 4; ++k) {
      const int s = t - 3 + k;
      hist[size_t(t) * 4 + size_t(k)] = s >= 0 ? amax[size_t(s)] : 0.0f;
      const int old = t - 4 + k; // window before the step's amax
      if (old >= 0) m = std::max(m, amax[size_t(old)]);
    }
    scale[size_t(t)] = m > 0 ? 1.0f / (448.0f / m) : 1.0f;
    loss[size_t(t)] = 2.0f - 0.05f * float(t);
  }
  r.putFloat32("history/fc1/input/amax", amax, n, -1, "1", "amax");
  r.putFloat32("history/fc1/input/scale", scale, n, -1, "1", "dequant scale");
  if (withHistory) r.putFloat32("history/fc1/input/amax_history", hist, n, 4, "1", "window");
  r.datasets["history/fc1/input/saturated"] = Dataset::int64({n}, sat, "count", "clipped");
  r.group_attrs["history/fc1/input"]["format"] = std::string("E4M3FN");
  r.group_attrs["history/fc1/input"]["scaling"] = std::string(withHistory ? "delayed-flax" : "current-te");
  r.group_attrs["history/fc1/input"]["history_len"] = int64_t(4);
  r.putFloat32("training/loss", loss, n, -1, "nats", "loss");
  r.setMetric("final_test_accuracy", withHistory ? 0.8 : 0.82, "1", "");
  r.setMetric("seconds", 12, "s", "");
  return r;
}

// Golden FP32 baseline (core/training/training_session.cpp for precision fp32): amaxes and loss
// only, no scale, no window, no saturation counts.
Run goldenFp32(const std::string& id) {
  Run r;
  r.id = id;
  r.type = "training";
  r.config_json = "{\"type\":\"training\"}";
  r.attrs["precision"] = std::string("fp32");
  r.attrs["scaling"] = std::string("none");
  const int n = 20;
  std::vector<float> amax(n, 1.0f), loss(n);
  for (int t = 0; t < n; ++t) loss[size_t(t)] = 2.0f - 0.04f * float(t);
  r.putFloat32("history/fc1/input/amax", amax, n, -1, "1", "amax");
  r.group_attrs["history/fc1/input"]["format"] = std::string("E4M3FN");
  r.group_attrs["history/fc1/input"]["scaling"] = std::string("none (FP32 baseline)");
  r.group_attrs["history/fc1/input"]["history_len"] = int64_t(0);
  r.putFloat32("training/loss", loss, n, -1, "nats", "loss");
  r.setMetric("final_test_accuracy", 0.83, "1", "");
  return r;
}

/// Why a legend of `plot` misleads, or "" when none does: a legend that overlaps an axis rect
/// (covers data), an entry narrower or lower than its text needs (cut off), or one outside the plot.
QString legendProblems(QCustomPlot* plot) {
  QList<QCPLegend*> legends;
  QList<QCPAxisRect*> rects = plot->axisRects();
  for (QCPLayoutElement* e : plot->plotLayout()->elements(true))
    if (auto* l = qobject_cast<QCPLegend*>(e)) legends << l;
  for (QCPAxisRect* r : rects)
    for (QCPLayoutElement* e : r->insetLayout()->elements(false))
      if (auto* l = qobject_cast<QCPLegend*>(e)) legends << l;
  QStringList out;
  for (QCPLegend* l : legends) {
    if (!l->visible() || l->itemCount() == 0) continue;
    for (QCPAxisRect* r : rects)
      if (l->outerRect().intersects(r->rect()))
        out << QStringLiteral("legend %1 covers axis rect %2")
                   .arg(QDebug::toString(l->outerRect()), QDebug::toString(r->rect()));
    for (int i = 0; i < l->itemCount(); ++i) {
      QCPAbstractLegendItem* it = l->item(i);
      if (!it) continue; // an empty cell of the last row
      const QSize need = it->minimumOuterSizeHint();
      if (it->outerRect().width() < need.width() || it->outerRect().height() < need.height())
        out << QStringLiteral("legend entry %1 is %2 wide, needs %3")
                   .arg(i)
                   .arg(it->outerRect().width())
                   .arg(need.width());
      if (!plot->rect().contains(it->outerRect()))
        out << QStringLiteral("legend entry %1 lies outside the plot").arg(i);
    }
  }
  return out.join(QStringLiteral("; "));
}

/// Pixels of exactly colour `c` in `img`.
int countColour(const QImage& img, const QColor& c) {
  int n = 0;
  const QRgb want = c.rgb();
  const QImage im = img.convertToFormat(QImage::Format_RGB32);
  for (int y = 0; y < im.height(); ++y)
    for (int x = 0; x < im.width(); ++x) n += (im.pixel(x, y) | 0xff000000u) == want;
  return n;
}

} // namespace

class TestViews2 : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString file_;

private Q_SLOTS:
  // A trained-weights GEMM run has no m / k / n attributes: the comparison takes the operands'
  // element count from the shapes of inputs/A [2, 3] and inputs/B [3, 4] (6 + 12 = 18), so
  // a_saturated 2 + b_saturated 1 is 3/18 = 16.67 %, a_underflow 9 is 50 %.
  void comparisonCountsTrainedWeightsRuns() {
    auto run = std::make_shared<fp8lab::Run>();
    run->id = "gemm-fc1";
    run->type = "gemm-trained-weights";
    run->config_json = "{}";
    run->putFloat32("inputs/A", std::vector<float>(6, 1.0f), 2, 3, "1", "A");
    run->putFloat32("inputs/B", std::vector<float>(12, 1.0f), 3, 4, "1", "B");
    run->setMetric("a_saturated", 2, "elements", "");
    run->setMetric("b_saturated", 1, "elements", "");
    run->setMetric("a_underflow", 9, "elements", "");
    run->setMetric("b_underflow", 0, "elements", "");
    const ComparisonRow row = comparisonRow(*RunAccess::fromRun(run));
    QCOMPARE(row.saturated_pct, 100.0 * 3.0 / 18.0);
    QCOMPARE(row.underflow_pct, 50.0);
  }

  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    file_ = dir_.filePath(QStringLiteral("golden.h5"));
    fp8lab::Session s;
    // The FP32 baseline sorts first (runs are stored by id), as in the default experiment's
    // session: a view that picks a default run must not take it for its position.
    s.runs = {goldenFp32("fp32-baseline"), goldenGemm("g1"), goldenGemm("g2", 1.0), goldenTraining("t-delayed"),
              goldenTraining("t-current", false)};
    // A GEMM run that lacks the quantized-exact reference (an older or partial file).
    Run partial = goldenGemm("g3-partial");
    partial.datasets.erase("reference/D_quantized_exact");
    s.runs.push_back(partial);
    const auto st = writeSession(file_.toStdString(), s);
    QVERIFY2(st.ok(), st.message().c_str());
  }

  // Cells of 2×2 over the golden maps (max and mean over finite values; NaN cells stay NaN).
  void heatmapModelCells() {
    QString err;
    auto run = RunAccess::fromFile(file_, QStringLiteral("g1"), &err);
    QVERIFY2(run, qPrintable(err));
    HeatmapModel m(run);
    QCOMPARE(m.shape(ErrorQuantity::Total), (std::pair<int64_t, int64_t>{4, 4}));
    QCOMPARE(m.tileSize(), (std::pair<int64_t, int64_t>{2, 2})); // config "tile": 2
    HeatmapGrid g;
    QVERIFY2(m.compute(ErrorQuantity::Total, ErrorKind::Abs, 0, 0, 4, 4, 2, 2, CellReduce::Max, &g, &err),
             qPrintable(err));
    QCOMPARE(g.grid_rows, 2);
    QCOMPARE(g.grid_cols, 2);
    // Cell (0,0): elements (0,1),(1,0) odd → 0.25; cell (0,1): (1,2) 0.75 is the max;
    // cell (1,0): 0.25; cell (1,1) holds the NaN at (2,3) → NaN.
    QCOMPARE(g.cell(0, 0), 0.25);
    QCOMPARE(g.cell(0, 1), 0.75);
    QCOMPARE(g.cell(1, 0), 0.25);
    QVERIFY(std::isnan(g.cell(1, 1)));
    QCOMPARE(g.nan_elements, 1);
    QCOMPARE(g.nan_cells, 1);
    QCOMPARE(g.max, 0.75);
    // Mean: cell (0,1) holds (0,2) 0, (0,3) 0.25, (1,2) 0.75, (1,3) 0 → 1.0 / 4 = 0.25.
    QVERIFY(m.compute(ErrorQuantity::Total, ErrorKind::Abs, 0, 0, 4, 4, 2, 2, CellReduce::Mean, &g, &err));
    QCOMPARE(g.cell(0, 1), 0.25);
    QCOMPARE(g.cell(0, 0), 0.125); // 0, 0.25, 0.25, 0 → 0.5 / 4
    // Split: quantization is 0.25 on odd cells only; accumulation 0.5 at (1,2) and NaN at (2,3).
    QVERIFY(m.compute(ErrorQuantity::Quantization, ErrorKind::Abs, 0, 0, 4, 4, 1, 1, CellReduce::Max, &g, &err));
    QCOMPARE(g.cell(1, 2), 0.25);
    QCOMPARE(g.cell(2, 2), 0.0);
    QCOMPARE(g.nan_elements, 0);
    QVERIFY(m.compute(ErrorQuantity::Accumulation, ErrorKind::Abs, 0, 0, 4, 4, 1, 1, CellReduce::Max, &g, &err));
    QCOMPARE(g.cell(1, 2), 0.5);
    QCOMPARE(g.cell(0, 1), 0.0);
    QVERIFY(std::isnan(g.cell(2, 3)));
    // Relative total at (1,2): 0.75 / ideal 6 = 0.125.
    QVERIFY(m.compute(ErrorQuantity::Total, ErrorKind::Rel, 1, 2, 1, 1, 1, 1, CellReduce::Max, &g, &err));
    QCOMPARE(g.cell(0, 0), 0.125);
    // A window outside the map is refused with a message.
    QVERIFY(!m.compute(ErrorQuantity::Total, ErrorKind::Abs, 3, 3, 2, 2, 1, 1, CellReduce::Max, &g, &err));
    QVERIFY(err.contains(QStringLiteral("outside")));
    // ULP is for D only.
    QVERIFY(!m.available(ErrorQuantity::OperandA, ErrorKind::Ulp, &err));
  }

  // The overview keeps a single large error (max per cell), zooming shows the exact element.
  void decimationKeepsSpikes() {
    Run r = goldenGemm("big");
    std::vector<float> abs(64 * 64, 0.001f);
    abs[37 * 64 + 5] = 9.0f;
    r.putFloat32("error/abs", abs, 64, 64, "1", "abs");
    r.datasets.erase("reference/D");
    r.datasets.erase("output/D");
    r.datasets.erase("reference/D_quantized_exact");
    ErrorHeatmapView v;
    v.resize(900, 600);
    v.setOverviewCells(16);
    v.setRunAccess(RunAccess::fromRun(std::make_shared<Run>(r)));
    QCOMPARE(v.grids().size(), 1);
    const HeatmapGrid& g = v.grids().first();
    QCOMPARE(g.block_rows, 4); // 64 / 16
    QCOMPARE(g.cell(37 / 4, 5 / 4), 9.0);
    QVERIFY(v.statusText().contains(QStringLiteral("max of 4\u00d74")));
    v.zoomTo(32, 0, 8, 8);
    QCOMPARE(v.grids().first().block_rows, 1);
    QCOMPARE(v.grids().first().r0, 32);
    QCOMPARE(v.grids().first().cell(5, 5), 9.0);
    QVERIFY(v.statusText().contains(QStringLiteral("one element")));
    // Panning (an axis range change, as the mouse does) re-reads the window on the thread pool:
    // the grid is not the new one right after the change and becomes rows 16..23 (range
    // 15.5..23.5 in element-centre coordinates) once the background read is back, and stays so.
    QCPAxis* rows = v.plot()->axisRect(0)->axis(QCPAxis::atLeft);
    rows->setRange(7.5, 15.5);
    QTest::qWait(120); // past the 80 ms refine timer: the read for rows 8..15 is started
    rows->setRange(15.5, 23.5);
    QVERIFY(v.grids().first().r0 != 16);
    QTRY_COMPARE(v.grids().first().r0, 16);
    QCOMPARE(v.grids().first().rows, 8);
    QCOMPARE(v.grids().first().block_rows, 1);
    QTest::qWait(200);
    QCOMPARE(v.grids().first().r0, 16);
  }

  void heatmapViewHoverClickNaN() {
    QString err;
    ErrorHeatmapView v;
    v.resize(1100, 650);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.setRunAccess(RunAccess::fromFile(file_, QStringLiteral("g1"), &err));
    v.setLogScale(false);
    QCOMPARE(v.grids().size(), 1);
    QCOMPARE(v.grids().first().block_rows, 1);
    // NaN is counted and drawn in the NaN colour; the colour range is the finite range [0, 0.75].
    QVERIFY2(v.statusText().contains(QStringLiteral("1 NaN element")), qPrintable(v.statusText()));
    QCOMPARE(v.colorScale()->dataRange().lower, 0.0);
    QCOMPARE(v.colorScale()->dataRange().upper, 0.75);
    QVERIFY(std::isnan(v.colorMaps().first()->data()->cell(3, 2)));
    QVERIFY(v.colorScale()->axis()->label().contains(QStringLiteral("absolute error")));
    // Hover over element (1, 2) with the mouse: reference 6, tested 6.75 (6 + 0.25 + 0.5), error 0.75.
    v.plot()->replot();
    QCPAxisRect* rect = v.plot()->axisRect(0);
    const QPoint px(int(rect->axis(QCPAxis::atBottom)->coordToPixel(2)),
                    int(rect->axis(QCPAxis::atLeft)->coordToPixel(1)));
    QTest::mouseMove(v.plot(), px);
    QTRY_VERIFY(v.hoverText().contains(QStringLiteral("(i, j) = (1, 2)")));
    QVERIFY2(v.hoverText().contains(QStringLiteral("reference/D = 6 ")), qPrintable(v.hoverText()));
    QVERIFY(v.hoverText().contains(QStringLiteral("output/D = 6.75")));
    QVERIFY(v.hoverText().contains(QStringLiteral("error = 0.75")));
    // Click: the element's detail. Row 1 of A = (−0.5, −1): min −1, max −0.5; column 2 of B =
    // (2, −2). D = 6.75 → nearest E4M3FN (fp32 output: A's format) code: 6.75 = 1.6875·2^2 lies
    // between 6.5 and 7 (spacing 0.5 at exponent 2), a tie → RNE picks mantissa 110 (even): 7 = 0x4e.
    QTest::mouseClick(v.plot(), Qt::LeftButton, {}, px);
    QVERIFY2(v.detailText().contains(QStringLiteral("Element (1, 2)")), qPrintable(v.detailText()));
    QVERIFY(v.detailText().contains(QStringLiteral("Row 1 of A")));
    QVERIFY(v.detailText().contains(QStringLiteral("min \u22121, max \u22120.5")));
    QVERIFY(v.detailText().contains(QStringLiteral("Column 2 of B")));
    QCOMPARE(v.detailFormat(), QStringLiteral("E4M3FN"));
    QCOMPARE(v.detailCode(), 0x4eu);
    // Split: three maps (quantization, accumulation, total) on one colour scale.
    v.setMode(ErrorHeatmapView::Mode::Split);
    QCOMPARE(v.grids().size(), 3);
    QCOMPARE(v.grids()[0].cell(1, 2), 0.25);
    QCOMPARE(v.grids()[1].cell(1, 2), 0.5);
    QCOMPARE(v.grids()[2].cell(1, 2), 0.75);
    // Tile max with the run's tile (2): the same cells as the 2×2 model test.
    v.setMode(ErrorHeatmapView::Mode::Total);
    v.setAggregation(ErrorHeatmapView::Aggregation::TileMax);
    QCOMPARE(v.grids().first().block_rows, 2);
    QCOMPARE(v.grids().first().cell(0, 1), 0.75);
    QVERIFY(v.csv().startsWith(QStringLiteral("quantity,kind,unit,row_first,row_last,col_first,col_last,value\n")));
    QVERIFY(v.csv().contains(QStringLiteral(",2,3,2,3,nan\n")));
  }

  // Log colour bars never label two ticks alike. QCustomPlot's log ticker puts ticks between
  // decades when the range is narrower than a few decades; at precision 0 ("eb") 0.26 and 0.3
  // both read "3·10⁻¹". Ranges: one value (0.25 everywhere), 10 … 25, and the golden 0.25 … 0.75.
  void heatmapColourBarLabelsAreDistinct_data() {
    QTest::addColumn<std::vector<float>>("abs");
    QTest::addColumn<double>("lo");
    QTest::addColumn<double>("hi");
    QTest::newRow("one value") << std::vector<float>(16, 0.25f) << 0.25 << 0.25;
    std::vector<float> ramp(16);
    for (int k = 0; k < 16; ++k) ramp[size_t(k)] = 10.0f + float(k);
    QTest::newRow("10..25") << ramp << 10.0 << 25.0;
    std::vector<float> golden(16, 0.0f);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) golden[size_t(i * 4 + j)] = (i + j) % 2 ? 0.25f : 0.0f;
    golden[1 * 4 + 2] = 0.75f;
    QTest::newRow("golden 0.25..0.75") << golden << 0.25 << 0.75;
  }
  void heatmapColourBarLabelsAreDistinct() {
    QFETCH(std::vector<float>, abs);
    QFETCH(double, lo);
    QFETCH(double, hi);
    Run r = goldenGemm("c");
    r.putFloat32("error/abs", abs, 4, 4, "1", "abs");
    r.datasets.erase("reference/D");
    r.datasets.erase("output/D");
    r.datasets.erase("reference/D_quantized_exact");
    ErrorHeatmapView v;
    v.resize(1000, 640);
    v.setRunAccess(RunAccess::fromRun(std::make_shared<Run>(r)));
    v.setLogScale(true);
    v.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QCPAxis* a = v.colorScale()->axis();
    QCOMPARE(a->scaleType(), QCPAxis::stLogarithmic);
    QVERIFY(a->range().lower <= lo && a->range().upper >= hi);
    QStringList shown;
    const QVector<double> ticks = a->tickVector();
    const QVector<QString> labels = a->tickVectorLabels();
    for (int k = 0; k < ticks.size(); ++k)
      if (a->range().contains(ticks[k])) shown << labels[k];
    QVERIFY2(shown.size() >= 2, qPrintable(shown.join(QStringLiteral(" | "))));
    QCOMPARE(QSet<QString>(shown.begin(), shown.end()).size(), shown.size());
  }

  // Picking a big GEMM run (1100×1000 > 2^20 elements) in the heatmap's run box reads its overview
  // on the thread pool: right after the pick the view is reading (no map, the status says so),
  // then the map arrives. A run picked before the read is back replaces it: the older read is
  // never drawn. A small run is drawn at once. big-a: |D − ref| = 1 everywhere; big-b: 3
  // everywhere but 7 at (1099, 999). Overview cells are 3×3 elements (max(⌈1100/512⌉, ⌈1000/512⌉)),
  // so 367 × 334 cells and cell (366, 333) holds element (1099, 999).
  void bigRunPickedInTheHeatmapRunBoxIsReadInTheBackground() {
    auto big = [](const char* id, float value, float last) {
      Run r;
      r.id = id;
      r.type = "gemm";
      r.config_json = "{}";
      std::vector<float> abs(1100 * 1000, value);
      abs.back() = last;
      r.putFloat32("error/abs", abs, 1100, 1000, "1", "|D - ref|");
      return session_io::fromCoreRun(r);
    };
    ui::SessionDocument s;
    s.addRun(session_io::fromCoreRun(goldenGemm("small")));
    s.addRun(big("big-a", 1.0f, 1.0f));
    s.addRun(big("big-b", 3.0f, 7.0f));
    s.setCurrentRun(0);
    ErrorHeatmapView v;
    v.resize(900, 600);
    v.setSession(&s);
    auto* box = v.findChild<QComboBox*>(QStringLiteral("run"));
    QVERIFY(box);
    QCOMPARE(box->currentData().toString(), QStringLiteral("small"));
    QCOMPARE(v.grids().size(), 1);
    QSignalSpy issues(&v, &View::issue);
    QList<double> drawn; // the largest cell of every map drawn from here on
    connect(v.plot(), &QCustomPlot::afterReplot, &v, [&] {
      if (!v.grids().isEmpty()) drawn << v.grids().first().max;
    });

    box->setCurrentIndex(box->findData(QStringLiteral("big-b")));
    QVERIFY(v.isReading());
    QVERIFY(v.grids().isEmpty());
    QVERIFY2(v.statusText().contains(QStringLiteral("Reading the map")), qPrintable(v.statusText()));
    QTRY_VERIFY_WITH_TIMEOUT(!v.isReading(), 30000);
    QCOMPARE(v.grids().size(), 1);
    QCOMPARE(v.grids().first().grid_rows, 367);
    QCOMPARE(v.grids().first().grid_cols, 334);
    QCOMPARE(v.grids().first().cell(0, 0), 3.0);
    QCOMPARE(v.grids().first().cell(366, 333), 7.0);
    QCOMPARE(drawn, QList<double>{7.0});

    // big-a, then big-b before big-a's read is back: only big-b is drawn, also once every read
    // has finished and its result has been delivered.
    drawn.clear();
    box->setCurrentIndex(box->findData(QStringLiteral("big-a")));
    QVERIFY(v.isReading());
    box->setCurrentIndex(box->findData(QStringLiteral("big-b")));
    QVERIFY(v.isReading());
    QTRY_VERIFY_WITH_TIMEOUT(!v.isReading(), 30000);
    QThreadPool::globalInstance()->waitForDone();
    for (int i = 0; i < 3; ++i) QCoreApplication::processEvents();
    QCOMPARE(drawn, QList<double>{7.0});
    QCOMPARE(v.grids().first().cell(0, 0), 3.0);
    QCOMPARE(issues.count(), 0); // the dropped read is no error

    // zoomTo a big window (1100×999) reads on the pool too: the window leaves out column 999, so
    // its largest cell is 3. A small window (the 10×10 corner) is read at once: one element per
    // cell, 7 at its (9, 9).
    v.zoomTo(0, 0, 1100, 999);
    QVERIFY(v.isReading());
    QTRY_VERIFY_WITH_TIMEOUT(!v.isReading(), 30000);
    QCOMPARE(v.grids().first().cols, 999);
    QCOMPARE(v.grids().first().max, 3.0);
    v.zoomTo(1090, 990, 10, 10);
    QVERIFY(!v.isReading());
    QCOMPARE(v.grids().first().block_rows, 1);
    QCOMPARE(v.grids().first().cell(9, 9), 7.0);

    // The small run is drawn at once: its largest error is 0.75 (see goldenGemm).
    box->setCurrentIndex(box->findData(QStringLiteral("small")));
    QVERIFY(!v.isReading());
    QCOMPARE(v.grids().size(), 1);
    QCOMPARE(v.grids().first().max, 0.75);
  }

  void heatmapMissingDatasets() {
    QString err;
    ErrorHeatmapView v;
    v.resize(900, 600);
    v.setRunAccess(RunAccess::fromFile(file_, QStringLiteral("g3-partial"), &err));
    v.setMode(ErrorHeatmapView::Mode::Split);
    // Only the total can be drawn; the status names the missing dataset.
    QCOMPARE(v.grids().size(), 1);
    QVERIFY2(v.statusText().contains(QStringLiteral("reference/D_quantized_exact")), qPrintable(v.statusText()));
    // A training run has no error map: an empty state, no crash.
    v.setRunAccess(RunAccess::fromFile(file_, QStringLiteral("t-delayed"), &err));
    QCOMPARE(v.grids().size(), 0);
    QVERIFY(v.statusText().contains(QStringLiteral("training")));
    v.setRunAccess(nullptr);
    QCOMPARE(v.grids().size(), 0);
  }

  void exportPngPdfSvgCsv() {
    QString err;
    ErrorHeatmapView v;
    v.resize(1000, 640);
    v.setRunAccess(RunAccess::fromFile(file_, QStringLiteral("g1"), &err));
    const QString png = dir_.filePath(QStringLiteral("h.png"));
    QVERIFY2(exportViewSized(&v, png, QSize(800, 500), &err), qPrintable(err));
    QImage img(png);
    QCOMPARE(img.size(), QSize(800, 500));
    // The golden map in the picture (log colour scale over the finite range 0.25 … 0.75): the NaN
    // element (2, 3) as a magenta cell, the largest error 0.75 at (1, 2) in viridis' top colour.
    // Each cell of the 4×4 map covers thousands of pixels at this size.
    QVERIFY2(countColour(img, nanColor()) > 1000, "no NaN cell in the exported heatmap");
    QVERIFY2(countColour(img, QColor(0xfd, 0xe7, 0x25)) > 1000, "no cell at the top of the colour scale");
    for (const char* ext : {"pdf", "svg"}) {
      const QString f = dir_.filePath(QStringLiteral("h.") + QLatin1String(ext));
      QVERIFY2(exportViewSized(&v, f, QSize(800, 500), &err), qPrintable(err));
      QVERIFY(QFileInfo(f).size() > 1000);
    }
    QVERIFY(!exportViewSized(&v, dir_.filePath(QStringLiteral("h.bmp")), QSize(800, 500), &err));
    QVERIFY(err.contains(QStringLiteral("unknown export type")));
    QVERIFY(!exportViewSized(&v, png, QSize(4, 4), &err));
  }

  void amaxHistoryWindowAndWhatIf() {
    QString err;
    AmaxHistoryView v;
    v.resize(1200, 800);
    v.setRunAccess(RunAccess::fromFile(file_, QStringLiteral("t-delayed"), &err));
    QCOMPARE(v.tensors(), QStringList{QStringLiteral("fc1/input")});
    QCOMPARE(v.steps(), 20);
    QCOMPARE(v.whatIf().history_len, 4); // from the group attribute
    QCOMPARE(v.whatIf().preset, DelayedPreset::Flax);
    // amax 8 at step 4 is > 2 × the median (1) of the steps before: the only spike.
    QCOMPARE(v.spikes(), std::vector<int64_t>{4});
    // Window after step 5 (Flax, L = 4): amaxes of steps 2..5 = 1, 1, 8, 1; max 8.
    v.setStep(5);
    QCOMPARE(v.window(), (std::vector<float>{1, 1, 8, 1}));
    QCOMPARE(v.takenValue(), 8.0);
    QVERIFY2(v.infoText().contains(QStringLiteral("what-if window = recorded amax_history")), qPrintable(v.infoText()));
    // After step 8 the spike has left: steps 5..8.
    v.setStep(8);
    QCOMPARE(v.window(), (std::vector<float>{1, 1, 1, 1}));
    QCOMPARE(v.takenValue(), 1.0);
    // Flax scale used at step t comes from the window before a_t: step 0 keeps 1 (empty window),
    // step 4 from {1} → 1/(448/1), steps 5..8 from windows holding 8 → 1/(448/8) = 1/56, step 9 → 1/448.
    const auto& s = v.whatIfScale();
    QCOMPARE(s[0], 1.0);
    QCOMPARE(s[4], double(1.0f / 448.0f));
    QCOMPARE(s[5], double(1.0f / 56.0f));
    QCOMPARE(s[8], double(1.0f / 56.0f));
    QCOMPARE(s[9], double(1.0f / 448.0f));
    QCOMPARE(v.recordedScale(), std::vector<double>(s.begin(), s.end())); // the what-if replays the run
    // What-if L = 2: the spike is gone from the window two steps after it (steps 5, 6 → 1).
    DelayedScalingConfig c = v.whatIf();
    c.history_len = 2;
    v.setWhatIf(c);
    v.setStep(5);
    QCOMPARE(v.window(), (std::vector<float>{8, 1}));
    QCOMPARE(v.whatIfScale()[6], double(1.0f / 56.0f));  // window before step 6: steps 4, 5
    QCOMPARE(v.whatIfScale()[7], double(1.0f / 448.0f)); // steps 5, 6
    QVERIFY(v.infoText().contains(QStringLiteral("differs")));
    // TE most-recent: after step 4 the stored window ends with the cleared staging slot; the
    // newest real amax is the spike.
    c.preset = DelayedPreset::TE;
    c.algo = AmaxAlgo::MostRecent;
    c.history_len = 4;
    v.setWhatIf(c);
    v.setStep(4);
    QCOMPARE(v.takenValue(), 8.0);
    v.setStep(5);
    QCOMPARE(v.takenValue(), 1.0);
    QVERIFY(v.csv().startsWith(QStringLiteral("step,amax,recorded_dequant_scale,whatif_dequant_scale,spike\n0,1,")));
    QVERIFY(v.csv().contains(QStringLiteral("\n4,8,")));
    // Playing advances the step; the slider scrubs.
    v.setStep(0);
    v.setPlaying(true);
    QTRY_VERIFY(v.step() > 2);
    v.setPlaying(false);
    QVERIFY(!v.isPlaying());
    // The simulated sequence (no run): 600 steps, spikes at 150, 300, 450.
    v.setRunAccess(nullptr);
    QCOMPARE(v.steps(), 600);
    QCOMPARE(v.spikes(), (std::vector<int64_t>{150, 300, 450}));
    // A run without amax_history (current scaling keeps none): still draws, and says that the
    // window and its scale are the what-if, not what the run did.
    v.setRunAccess(RunAccess::fromFile(file_, QStringLiteral("t-current"), &err));
    QCOMPARE(v.steps(), 20);
    QVERIFY2(v.infoText().contains(QStringLiteral("keeps no amax history, so the window bars and the dashed curve "
                                                  "are the what-if")),
             qPrintable(v.infoText()));
    QVERIFY2(!v.infoText().contains(QStringLiteral("missing")), qPrintable(v.infoText()));
    v.setStep(5);
    QVERIFY2(v.windowText().contains(QStringLiteral("of the what-if window")), qPrintable(v.windowText()));
    QVERIFY2(v.windowText().contains(QStringLiteral("the run kept no window")), qPrintable(v.windowText()));
  }

  // The recorded windows of a long run (amax_history 1100 × 1000 > 2^20 values) are read on the
  // thread pool when the run is picked in the run box: right after the pick the amaxes (one a
  // step, read at once) are there, the windows are not, and the info line says they are being
  // read; then they arrive. t-long's window after step t is 1000 × (t + 1). A small run picked
  // before they are back replaces them: its windows (4 a step) are read at once, and the long
  // run's, when their read ends, are dropped.
  void longRunWindowsAreReadInTheBackground() {
    Run lr;
    lr.id = "t-long";
    lr.type = "training";
    lr.config_json = "{}";
    lr.attrs["precision"] = std::string("fp8");
    const int steps = 1100, len = 1000;
    std::vector<float> hist(size_t(steps) * len);
    for (int t = 0; t < steps; ++t) std::fill_n(hist.begin() + std::ptrdiff_t(t) * len, len, float(t + 1));
    lr.putFloat32("history/fc1/input/amax", std::vector<float>(steps, 1.0f), steps, -1, "1", "amax");
    lr.putFloat32("history/fc1/input/scale", std::vector<float>(steps, 1.0f), steps, -1, "1", "scale");
    lr.putFloat32("history/fc1/input/amax_history", hist, steps, len, "1", "window");
    lr.group_attrs["history/fc1/input"]["format"] = std::string("E4M3FN");
    lr.group_attrs["history/fc1/input"]["scaling"] = std::string("delayed-flax");
    lr.group_attrs["history/fc1/input"]["history_len"] = int64_t(len);
    ui::SessionDocument s;
    s.addRun(session_io::fromCoreRun(goldenTraining("t-small")));
    s.addRun(session_io::fromCoreRun(lr));
    // An added run becomes the session's current run; the view follows the current run, as every
    // analysis view does: start from the small one.
    s.setCurrentRunId(QStringLiteral("t-small"));
    AmaxHistoryView v;
    v.resize(1200, 800);
    v.setSession(&s);
    auto* box = v.findChild<QComboBox*>(QStringLiteral("run"));
    QVERIFY(box);
    QCOMPARE(box->currentData().toString(), QStringLiteral("t-small"));
    QVERIFY(!v.isReadingWindows());

    box->setCurrentIndex(box->findData(QStringLiteral("t-long")));
    QVERIFY(v.isReadingWindows());
    QCOMPARE(v.steps(), int64_t(steps));
    QVERIFY(v.recordedWindow().empty());
    QVERIFY2(v.infoText().contains(QStringLiteral("reading the recorded windows")), qPrintable(v.infoText()));
    QTRY_VERIFY_WITH_TIMEOUT(!v.isReadingWindows(), 30000);
    v.setStep(7);
    const std::vector<float> w = v.recordedWindow();
    QCOMPARE(w.size(), size_t(len));
    QCOMPARE(w.front(), 8.0f);
    QCOMPARE(w.back(), 8.0f);
    QVERIFY(!v.infoText().contains(QStringLiteral("reading")));

    box->setCurrentIndex(box->findData(QStringLiteral("t-small")));
    box->setCurrentIndex(box->findData(QStringLiteral("t-long")));
    QVERIFY(v.isReadingWindows());
    box->setCurrentIndex(box->findData(QStringLiteral("t-small")));
    QVERIFY(!v.isReadingWindows());
    QCOMPARE(v.steps(), int64_t(20));
    QThreadPool::globalInstance()->waitForDone();
    for (int i = 0; i < 3; ++i) QCoreApplication::processEvents();
    QVERIFY(!v.isReadingWindows());
    QCOMPARE(v.recordedWindow().size(), size_t(4));
    QCOMPARE(v.steps(), int64_t(20));
  }

  void scaleEvolutionLinkedPlots() {
    QString err;
    ScaleEvolutionView v;
    v.resize(1200, 800);
    v.setRuns(RunAccess::fromFile(file_, QStringLiteral("t-delayed"), &err),
              RunAccess::fromFile(file_, QStringLiteral("t-current"), &err));
    QCOMPARE(v.checkedTensors(), QStringList{QStringLiteral("fc1/input")});
    QCOMPARE(v.saturationSteps(QStringLiteral("fc1/input")), QList<int64_t>{4});
    // Scale + amax + saturation marks for each run, loss for each run.
    int top = 0, bottom = 0;
    for (int i = 0; i < v.plot()->plottableCount(); ++i)
      (v.plot()->plottable(i)->keyAxis()->axisRect() == v.scaleRect() ? top : bottom)++;
    QCOMPARE(top, 6);
    QCOMPARE(bottom, 2);
    QCOMPARE(v.scaleRect()->axis(QCPAxis::atLeft)->scaleType(), QCPAxis::stLogarithmic);
    QVERIFY(v.scaleRect()->axis(QCPAxis::atLeft)->label().startsWith(QStringLiteral("dequant scale")));
    // Zoom in the scale plot: the loss plot follows.
    v.scaleRect()->axis(QCPAxis::atBottom)->setRange(3, 9);
    QCOMPARE(v.lossRect()->axis(QCPAxis::atBottom)->range().lower, 3.0);
    QCOMPARE(v.lossRect()->axis(QCPAxis::atBottom)->range().upper, 9.0);
    v.setQuantConvention(true);
    QVERIFY(v.scaleRect()->axis(QCPAxis::atLeft)->label().startsWith(QStringLiteral("quant scale")));
    QVERIFY(
        v.csv().startsWith(QStringLiteral("step,fc1/input amax,fc1/input dequant_scale,fc1/input saturated,loss\n")));
    v.setRuns(nullptr);
    QCOMPARE(v.plot()->plottableCount(), 0);
  }

  // A scale view opens on an FP8 run: the session's first training run is the FP32 baseline,
  // which has no scale; the default is the first FP8 run (t-current, by id) with the next FP8
  // run (t-delayed) dashed. Shown explicitly, the FP32 run draws its amax only and lists nothing as
  // missing (it has no scale to miss).
  void scaleEvolutionOpensOnAnFp8Run() {
    fp8lab::ui::SessionDocument s;
    QString err;
    QVERIFY2(s.load(file_, &err), qPrintable(err));
    QCOMPARE(s.run(0).id, QStringLiteral("fp32-baseline"));
    ScaleEvolutionView v;
    v.resize(1200, 800);
    v.setSession(&s);
    QCOMPARE(v.findChild<QComboBox*>(QStringLiteral("run"))->currentData().toString(), QStringLiteral("t-current"));
    QCOMPARE(v.findChild<QComboBox*>(QStringLiteral("compare"))->currentData().toString(), QStringLiteral("t-delayed"));
    QVERIFY2(!v.infoText().contains(QStringLiteral("missing")), qPrintable(v.infoText()));
    // A run the user selects in the session is shown; the one compared with cannot be it, so it
    // becomes the run shown before.
    s.setCurrentRun(s.indexOf(QStringLiteral("t-delayed")));
    v.runPendingReloads();
    QCOMPARE(v.findChild<QComboBox*>(QStringLiteral("run"))->currentData().toString(), QStringLiteral("t-delayed"));
    QCOMPARE(v.findChild<QComboBox*>(QStringLiteral("compare"))->currentData().toString(), QStringLiteral("t-current"));
    v.setRuns(RunAccess::fromFile(file_, QStringLiteral("fp32-baseline"), &err));
    QVERIFY2(!v.infoText().contains(QStringLiteral("missing")), qPrintable(v.infoText()));
    QVERIFY(!v.infoText().contains(QStringLiteral("FP32 run?")));
    QVERIFY2(v.infoText().contains(QStringLiteral("fp32-baseline is an FP32 run: no scale")), qPrintable(v.infoText()));
    QStringList names;
    for (int i = 0; i < v.plot()->plottableCount(); ++i) names << v.plot()->plottable(i)->name();
    QCOMPARE(names, (QStringList{QStringLiteral("fc1/input amax"), QStringLiteral("loss, fp32-baseline [none]")}));
    QCOMPARE(v.scaleRect()->axis(QCPAxis::atLeft)->label(), QStringLiteral("amax (max |x|, tensor units)"));
  }

  // Opening a second file in the same session: the scale view opens on its first low-precision run
  // with its next one dashed, as on the first file (the compare box is chosen against the new
  // file's runs, not the run the previous file showed).
  void scaleEvolutionFollowsASecondFile() {
    const QString second = dir_.filePath(QStringLiteral("second.h5"));
    fp8lab::Session f;
    f.runs = {goldenFp32("a-fp32"), goldenTraining("b-delayed"), goldenTraining("c-current", false)};
    QVERIFY(writeSession(second.toStdString(), f).ok());
    SessionDocument s;
    QString err;
    QVERIFY2(s.load(file_, &err), qPrintable(err));
    ScaleEvolutionView v;
    v.resize(1200, 800);
    v.setSession(&s);
    auto run = [&] { return v.findChild<QComboBox*>(QStringLiteral("run"))->currentData().toString(); };
    auto compare = [&] { return v.findChild<QComboBox*>(QStringLiteral("compare"))->currentData().toString(); };
    QCOMPARE(run(), QStringLiteral("t-current"));
    QCOMPARE(compare(), QStringLiteral("t-delayed"));
    QVERIFY2(s.load(second, &err), qPrintable(err));
    v.runPendingReloads();
    QCOMPARE(run(), QStringLiteral("b-delayed"));
    QCOMPARE(compare(), QStringLiteral("c-current"));
  }

  // The amax view names no scale for an FP32 run: it recorded none and used none. The window
  // and the dashed curve are the what-if replay, and say so.
  void amaxViewShowsNoScaleForFp32() {
    QString err;
    AmaxHistoryView v;
    v.resize(1200, 800);
    v.setRunAccess(RunAccess::fromFile(file_, QStringLiteral("fp32-baseline"), &err));
    QCOMPARE(v.steps(), 20);
    QVERIFY(v.recordedScale().empty());
    v.setStep(5);
    QVERIFY2(!v.windowText().contains(QStringLiteral("scale ")), qPrintable(v.windowText()));
    QVERIFY(v.windowText().contains(QStringLiteral("used no scale")));
    QVERIFY2(!v.infoText().contains(QStringLiteral("missing")), qPrintable(v.infoText()));
    QVERIFY(!v.infoText().contains(QStringLiteral("recorded dequant scale")));
    QVERIFY(v.infoText().contains(QStringLiteral("FP32 run: no scaling")));
    // A delayed-scaling run keeps its next scale: window max 8 after step 5 → 8 / 448 · 2^0.
    v.setRunAccess(RunAccess::fromFile(file_, QStringLiteral("t-delayed"), &err));
    v.setStep(5);
    QVERIFY2(v.windowText().contains(QStringLiteral("next dequant scale 0.0178571 = 8 / 448")),
             qPrintable(v.windowText()));
  }

  void comparisonTableBarsDiff() {
    QString err;
    ComparisonView v;
    v.resize(1200, 800);
    QList<std::shared_ptr<RunAccess>> runs;
    for (const char* id : {"g1", "g2", "t-delayed"}) runs << RunAccess::fromFile(file_, QString::fromLatin1(id), &err);
    v.setRuns(runs);
    QCOMPARE(v.rows().size(), 3);
    // Saturated % = (1 + 1) / (4·2 + 2·4) · 100 = 12.5; underflow (2 + 0) / 16 · 100 = 12.5.
    QCOMPARE(v.rows()[0].saturated_pct, 12.5);
    QCOMPARE(v.rows()[0].underflow_pct, 12.5);
    QCOMPARE(v.rows()[0].formats, QStringLiteral("E4M3FN \u00d7 E5M2"));
    QCOMPARE(v.rows()[2].final_accuracy, 0.8);
    QVERIFY(std::isnan(v.rows()[2].sqnr_db));
    // Sort by SQNR descending: g2 (31 dB) first, g1 (30) next, the training run (no SQNR) last.
    v.table()->sortByColumn(ComparisonView::ColSqnr, Qt::DescendingOrder); // as a header click
    QCOMPARE(v.table()->item(0, 0)->data(Qt::UserRole).toString(), QStringLiteral("g2"));
    QCOMPARE(v.table()->item(1, 0)->data(Qt::UserRole).toString(), QStringLiteral("g1"));
    v.table()->sortByColumn(ComparisonView::ColSqnr, Qt::AscendingOrder);
    QCOMPARE(v.table()->item(0, 0)->data(Qt::UserRole).toString(), QStringLiteral("g1"));
    QCOMPARE(v.table()->item(2, 0)->data(Qt::UserRole).toString(), QStringLiteral("t-delayed"));
    // Bar chart: one bar per run with the metric (2 of 3 have an SQNR).
    v.setMetric(QStringLiteral("sqnr_db"));
    auto* bars = qobject_cast<QCPBars*>(v.plot()->plottable(0));
    QVERIFY(bars);
    QCOMPARE(bars->dataCount(), 2);
    // Difference of error maps g2 − g1 (4×4, one cell per element): g2's D is 1 larger at (1,2),
    // so the difference there is (0.75 + 1) − 0.75 = 1 and 0 elsewhere; the NaN cell stays NaN.
    QVERIFY(v.selectPair(QStringLiteral("g1"), QStringLiteral("g2")));
    QCOMPARE(v.difference().grid_rows, 4);
    QCOMPARE(v.difference().cell(1, 2), 1.0);
    QCOMPARE(v.difference().cell(0, 0), 0.0);
    QVERIFY(std::isnan(v.difference().cell(2, 3)));
    QVERIFY(v.diffText().contains(QStringLiteral("g2 minus g1")));
    // A training run has no error map.
    QVERIFY(v.selectPair(QStringLiteral("g1"), QStringLiteral("t-delayed")));
    QVERIFY(v.diffText().contains(QStringLiteral("No difference map")));
    QVERIFY(!v.selectPair(QStringLiteral("g1"), QStringLiteral("nope")));
    QVERIFY(v.csv().startsWith(QStringLiteral("id,label,kind,formats")));
  }

  // The difference map of two big runs (1100×1000 > 2^20 elements each) is computed on the thread
  // pool: right after the selection the view says it is computing (the GUI thread did not wait),
  // then the map arrives. a: D = 1, b: D = 3, reference 0 everywhere: |D − ref| is 1 and 3, so every
  // cell (a mean of 5×5 elements: 1100/256 → blocks of 5) of b − a is exactly 2.
  void bigDifferenceMapIsComputedInTheBackground() {
    auto make = [](const char* id, float d) {
      auto r = std::make_shared<fp8lab::Run>();
      r->id = id;
      r->type = "gemm";
      r->config_json = "{}";
      r->putFloat32("output/D", std::vector<float>(1100 * 1000, d), 1100, 1000, "1", "D");
      r->putFloat32("reference/D", std::vector<float>(1100 * 1000, 0.0f), 1100, 1000, "1", "ideal");
      return RunAccess::fromRun(r);
    };
    ComparisonView v;
    v.resize(1200, 800);
    v.setRuns({make("a", 1.0f), make("b", 3.0f)});
    QVERIFY(v.selectPair(QStringLiteral("a"), QStringLiteral("b")));
    QVERIFY2(v.diffText().contains(QStringLiteral("Computing the difference map of a and b")),
             qPrintable(v.diffText()));
    QVERIFY(v.isLoading());
    QCOMPARE(v.emptyText(), QString()); // the table and bars stay; only the map is busy
    QTRY_VERIFY_WITH_TIMEOUT(v.difference().grid_rows > 0, 30000);
    QVERIFY(!v.isLoading());
    QCOMPARE(v.difference().grid_rows, 220);
    QVERIFY(v.difference().cell(0, 0) == 2.0);
    QVERIFY(v.difference().cell(219, 199) == 2.0);
    QVERIFY(v.diffText().contains(QStringLiteral("b minus a")));
  }

  // A session without runs: the Comparison view's empty state says how to get some, and it
  // goes when runs come.
  void comparisonEmptyStateSaysWhatToDo() {
    ComparisonView v;
    v.resize(800, 600);
    v.setRuns({});
    QVERIFY2(v.emptyText().startsWith(QStringLiteral("No runs to compare.\nOpen a session (File \u2192 Open)")),
             qPrintable(v.emptyText()));
    v.setRuns({RunAccess::fromRun(std::make_shared<Run>(goldenFp32("fp32-baseline")))});
    QCOMPARE(v.emptyText(), QString());
  }

  // Bars of runs whose labels share a long prefix get different tick labels; the count of runs
  // without the metric is under the axis, not over the bars; no GUI hint is drawn in the plot
  // (exported images carry it), only in the label beside it.
  void comparisonLabelsAndHints() {
    QList<std::shared_ptr<RunAccess>> runs;
    for (const char* id : {"gemm-fp8-delayed-fc1", "gemm-fp8-delayed-fc2", "gemm-fp8-delayed-fc3"}) {
      Run r = goldenGemm(id);
      r.putFloat32("error/abs", std::vector<float>(size_t(4 * (4 + (id[19] - '0'))), 0.5f), 4, 4 + (id[19] - '0'), "1",
                   "abs"); // three shapes: no default difference pair
      runs << RunAccess::fromRun(std::make_shared<Run>(r));
    }
    runs << RunAccess::fromRun(std::make_shared<Run>(goldenFp32("fp32-baseline")));
    ComparisonView v;
    v.resize(1200, 800);
    v.setRuns(runs);
    v.setMetric(QStringLiteral("sqnr_db"));
    QCPAxis* x = v.plot()->axisRect(0)->axis(QCPAxis::atBottom);
    auto ticker = x->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticker);
    const QStringList labels = ticker->ticks().values();
    QCOMPARE(labels.size(), 4);
    QCOMPARE(QSet<QString>(labels.begin(), labels.end()).size(), 4);
    QCOMPARE(labels[0], QStringLiteral("gemm-fp8-\u2026ayed-fc1"));
    QCOMPARE(labels[3], QStringLiteral("fp32-baseline"));
    QCOMPARE(x->label(), QStringLiteral("run (1 without this metric: no bar)"));
    QStringList drawn;
    for (int i = 0; i < v.plot()->itemCount(); ++i)
      if (auto* t = qobject_cast<QCPItemText*>(v.plot()->item(i))) drawn << t->text();
    for (QCPLayoutElement* e : v.plot()->plotLayout()->elements(true))
      if (auto* t = qobject_cast<QCPTextElement*>(e)) drawn << t->text();
    // The bars' value labels: SQNR 30 dB for each GEMM run, nothing else in the bar plot.
    QVERIFY2(drawn.count(QStringLiteral("30")) == 3, qPrintable(drawn.join(QStringLiteral(" | "))));
    for (const QString& t : drawn) {
      QVERIFY2(!t.contains(QStringLiteral("without this metric")), qPrintable(t));
      QVERIFY2(!t.contains(QStringLiteral("Ctrl")) && !t.contains(QStringLiteral("click")), qPrintable(t));
    }
    QVERIFY(v.diffText().contains(QStringLiteral("Ctrl+click rows")));
    QVERIFY(drawn.contains(QStringLiteral("No difference map: no pair of GEMM runs of the same shape is selected.")));
  }

  // Legends sit beside the data, never over it, and show their entries whole: the amax window's
  // bars and markers, and the scale key of two runs with every tensor ticked.
  void legendsCoverNoData() {
    QString err;
    AmaxHistoryView a;
    a.resize(1000, 620);
    a.show();
    QVERIFY(QTest::qWaitForWindowExposed(&a));
    a.setRunAccess(RunAccess::fromFile(file_, QStringLiteral("t-delayed"), &err));
    a.setStep(5);
    a.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY2(legendProblems(a.plot()).isEmpty(), qPrintable(legendProblems(a.plot())));
    a.setRunAccess(nullptr); // the simulated sequence: spikes near the right end
    a.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY2(legendProblems(a.plot()).isEmpty(), qPrintable(legendProblems(a.plot())));
    ScaleEvolutionView s;
    s.resize(1000, 620);
    s.show();
    QVERIFY(QTest::qWaitForWindowExposed(&s));
    s.setRuns(RunAccess::fromFile(file_, QStringLiteral("t-delayed"), &err),
              RunAccess::fromFile(file_, QStringLiteral("t-current"), &err));
    s.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY2(legendProblems(s.plot()).isEmpty(), qPrintable(legendProblems(s.plot())));
  }

  // The Clipping view reads history/<operand>/saturated per step: t-delayed clips 3 elements of
  // fc1/input at step 4 of 20 (goldenTraining), so the chart has one line, the summary says so,
  // the CSV holds the counts, and the legend sits under the axes. The FP32 baseline and the
  // underflow counts (not in the golden runs) give an empty state that says why.
  void clippingCountsSummaryAndEmptyStates() {
    SessionDocument doc;
    QString err;
    QVERIFY2(doc.load(file_, &err), qPrintable(err));
    ClippingView v;
    v.resize(1000, 620);
    v.setSession(&doc);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    runSelection(&doc)->setCurrentRunId(QStringLiteral("t-delayed"));
    QTRY_VERIFY(!v.isLoading() && v.series().size() == 1);
    QCOMPARE(v.emptyText(), QString());
    const ClippingSeries& c = v.series().front();
    QCOMPARE(c.operand, QStringLiteral("fc1/input"));
    QCOMPARE(c.total, int64_t(3));
    QCOMPARE(c.steps_with, int64_t(1));
    QCOMPARE(c.first, int64_t(4));
    QCOMPARE(v.plot()->graphCount(), 1);
    QCOMPARE(v.summary(), QStringLiteral("1 of 1 operands clipped at some step. Most: fc1/input, 3 elements at 1 of "
                                         "20 steps (first at step 4)."));
    QVERIFY(v.csv().startsWith(QStringLiteral("step,fc1/input\n0,0\n1,0\n2,0\n3,0\n4,3\n5,0\n")));
    v.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY2(legendProblems(v.plot()).isEmpty(), qPrintable(legendProblems(v.plot())));
    v.findChild<QComboBox*>(QStringLiteral("count"))->setCurrentIndex(1);
    QTRY_VERIFY(!v.isLoading());
    QCOMPARE(v.emptyText(), QStringLiteral("Run t-delayed stores no underflow counts per step.\nChoose an FP8 or FP4 "
                                           "training run in the Run box above."));
    v.findChild<QComboBox*>(QStringLiteral("count"))->setCurrentIndex(0);
    runSelection(&doc)->setCurrentRunId(QStringLiteral("fp32-baseline"));
    QTRY_VERIFY(!v.isLoading() && v.emptyText().startsWith(QStringLiteral("Run fp32-baseline is an FP32 baseline")));
    QCOMPARE(v.csv(), QString());
  }

  // A run that clips nothing: no legend row, and the axes keep the plot's width (an empty legend
  // left in the layout used to squeeze them to about 50 px, "0200400600" on the step axis).
  void clippingWithNothingClippedKeepsItsWidth() {
    const QString clean = dir_.filePath(QStringLiteral("clean.h5"));
    fp8lab::Session s;
    Run r = goldenTraining("t-clean");
    r.datasets["history/fc1/input/saturated"] = Dataset::int64({20}, std::vector<int64_t>(20, 0), "count", "clipped");
    s.runs = {r};
    QVERIFY(writeSession(clean.toStdString(), s).ok());
    SessionDocument doc;
    QString err;
    QVERIFY2(doc.load(clean, &err), qPrintable(err));
    ClippingView v;
    v.resize(1000, 620);
    v.setSession(&doc);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    runSelection(&doc)->setCurrentRunId(QStringLiteral("t-clean"));
    QTRY_VERIFY(!v.isLoading() && v.series().size() == 1);
    QCOMPARE(v.series().front().total, int64_t(0));
    QCOMPARE(v.summary(), QStringLiteral("No element clipped in any of the 1 operands at any step."));
    v.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(v.plot()->axisRectCount(), 1);
    QVERIFY2(v.plot()->axisRect()->width() > v.plot()->width() * 6 / 10,
             qPrintable(QStringLiteral("axes %1 px of %2").arg(v.plot()->axisRect()->width()).arg(v.plot()->width())));
  }

  // The play button's label uses no character its font lacks (U+23F8 PAUSE is in few fonts; the
  // button showed an empty box): the symbols are icons from the style.
  void playButtonHasNoMissingGlyph() {
    AmaxHistoryView v;
    v.setRunAccess(nullptr);
    auto* play = v.findChild<QToolButton*>(QStringLiteral("play"));
    QVERIFY(play);
    for (bool on : {false, true}) {
      v.setPlaying(on);
      QCOMPARE(play->text(), on ? QStringLiteral("Pause") : QStringLiteral("Play"));
      QVERIFY(!play->icon().isNull());
      const QFontMetrics fm(play->font());
      for (const uint c : play->text().toUcs4()) QVERIFY2(fm.inFontUcs4(c), qPrintable(QString::number(c, 16)));
    }
    v.setPlaying(false);
  }

  void renderOffscreen() {
    RenderRequest req;
    req.session = file_;
    req.dir = dir_.filePath(QStringLiteral("out"));
    req.size = QSize(900, 600);
    QList<RenderedFile> files;
    QString err;
    QVERIFY2(renderViews(req, &files, &err), qPrintable(err));
    QStringList names;
    for (const auto& f : files) names << QFileInfo(f.file).fileName();
    for (const char* n : {"g1-heatmap.png", "g1-split.png", "g1-heatmap.csv", "t-delayed-amax.png",
                          "t-delayed-scales.png", "g3-partial-split.png", "compare.png", "compare.csv",
                          "decide-gemm.png", "decide-training.png", "decide-training.csv"})
      QVERIFY2(names.contains(QLatin1String(n)), n);
    auto read = [&](const char* name) {
      QFile f(QDir(req.dir).filePath(QLatin1String(name)));
      return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
    };
    // g1's total error map, one row per element (golden values above): 0.25 where i + j is odd,
    // 0.75 at (1, 2), NaN at (2, 3), 0 elsewhere.
    QString heat = QStringLiteral("quantity,kind,unit,row_first,row_last,col_first,col_last,value\n");
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        heat += QStringLiteral("\"total error of D (D vs ideal)\",absolute,\"value units\",%1,%1,%2,%2,%3\n")
                    .arg(i)
                    .arg(j)
                    .arg(i == 2 && j == 3   ? QStringLiteral("nan")
                         : i == 1 && j == 2 ? QStringLiteral("0.75")
                         : (i + j) % 2      ? QStringLiteral("0.25")
                                            : QStringLiteral("0"));
    QCOMPARE(read("g1-heatmap.csv"), heat);
    // The comparison rows of g1 and t-delayed: SQNR 30 dB, max rel 0.125, saturated and underflow
    // (1 + 1) / (4·2 + 2·4) · 100 = (2 + 0) / 16 · 100 = 12.5 %, GEMM 0.5 s; accuracy 0.8, 12 s.
    const QStringList cmp = read("compare.csv").split(QLatin1Char('\n'));
    QCOMPARE(cmp.value(0),
             QStringLiteral("id,label,kind,formats,scaling,accumulation,sqnr_db,max_rel,saturated_pct,"
                            "underflow_pct,quant_sqnr_db,accum_sqnr_db,final_accuracy,seconds,backend,operands,"
                            "group,rank"));
    QVERIFY(
        cmp.contains(QStringLiteral("\"g1\",\"g1\",gemm,\"E4M3FN \u00d7 E5M2\",\"te_current\",\"split \u2192 fp32\","
                                    "30,0.125,12.5,12.5,,,,0.5,\"cpu\",\"\",,")));
    QVERIFY(cmp.contains(QStringLiteral(
        "\"t-delayed\",\"t-delayed\",training,\"E4M3FN / E5M2\",\"delayed-flax\",\"\",,,,,,,0.8,12,\"\",\"\",,")));
    QCOMPARE(cmp.size(), 1 + 6 + 1); // header, six runs, the empty string after the last newline
    // t-delayed's amax window view: Flax dequant scale 1/(448/m) in float32 from the window before
    // the step (history 4): step 0 keeps 1, steps 1..4 see m = 1, steps 5..8 the spike m = 8, then
    // 1 again; the what-if replays the run exactly; the spike is step 4.
    const QString s448 = QString::number(double(1.0f / (448.0f / 1.0f)), 'g', 9),
                  s56 = QString::number(double(1.0f / (448.0f / 8.0f)), 'g', 9);
    QString amax = QStringLiteral("step,amax,recorded_dequant_scale,whatif_dequant_scale,spike\n0,1,1,1,0\n");
    for (int t = 1; t < 20; ++t) {
      const QString sc = t >= 5 && t <= 8 ? s56 : s448;
      amax += QStringLiteral("%1,%2,%3,%3,%4\n").arg(t).arg(t == 4 ? 8 : 1).arg(sc).arg(t == 4 ? 1 : 0);
    }
    QCOMPARE(s448, QStringLiteral("0.00223214296"));
    QCOMPARE(read("t-delayed-amax.csv"), amax);
    QImage img(QDir(req.dir).filePath(QStringLiteral("t-delayed-amax.png")));
    QCOMPARE(img.size(), QSize(900, 600));
    // The window drawn after step 6 (first spike + L/2) holds steps 3..6: the spike bar at step 4
    // is drawn in the spike colour.
    QVERIFY2(countColour(img, QColor(0xd5, 0x5e, 0x00)) > 200, "no spike bar in the amax image");
    req.run = QStringLiteral("nope");
    QVERIFY(!renderViews(req, &files, &err));
    QVERIFY(err.contains(QStringLiteral("no run 'nope'")));
    req.run.clear();
    req.views = {QStringLiteral("bogus")};
    QVERIFY(!renderViews(req, &files, &err));
    QVERIFY(err.contains(QStringLiteral("unknown view")));
    req.views.clear();
    req.session = dir_.filePath(QStringLiteral("missing.h5"));
    QVERIFY(!renderViews(req, &files, &err));
  }
};

QTEST_MAIN(TestViews2)
#include "test_views2.moc"

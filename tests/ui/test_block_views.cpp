// Views of block-scaled tensors: the Block scales view (histogram of the scale codes, error by
// block) and the comparison's ranking of recipes on the same operands, against small runs built
// here with core/session. Every expected number is derived by hand in a comment.
#include "window_options.h"
#include "views/block_scale_view.h"
#include "views/comparison_view.h"
#include "main_window.h"
#include "plot/qcp.h"
#include "session/run_access.h"
#include "session/session_document.h"
#include "views/view_render.h"

#include "session/session.h"

#include <QComboBox>
#include <QHeaderView>
#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace fp8lab;
using namespace fp8lab::ui;

namespace {

const double kNaN = std::nan("");

/// A GEMM run whose operand A has the scale codes `codes` ([rows, cols] blocks of 1×32) of `format`.
std::shared_ptr<Run> scaleCodeRun(const std::string& format, std::vector<uint8_t> codes, int64_t rows, int64_t cols) {
  auto r = std::make_shared<Run>();
  r->id = "mx";
  r->type = "gemm";
  r->config_json = "{}";
  std::vector<float> dq(size_t(rows * cols), 1.0f);
  auto& s = r->putFloat32("quantized/A_scales", dq, rows, cols, "1", "dequant scales");
  s.attrs["block_rows"] = int64_t(1);
  s.attrs["block_cols"] = int64_t(32);
  r->datasets["quantized/A_scale_codes"] = Dataset::uint8({rows, cols}, std::move(codes), "code", "scale codes");
  r->datasets["quantized/A_scale_codes"].attrs["format"] = format;
  return r;
}

/// A GEMM run for the ranking: operands from `a_origin`, total / quantization / accumulation SQNR.
std::shared_ptr<Run> rankedCoreRun(const std::string& id, const std::string& scaling, const std::string& a_origin,
                                   double sqnr, double quant, double accum, const std::string& config = "{}") {
  auto r = std::make_shared<Run>();
  r->id = id;
  r->type = "gemm";
  r->config_json = config;
  r->attrs["format_a"] = std::string("E4M3FN");
  r->attrs["format_b"] = std::string("E4M3FN");
  r->attrs["scaling"] = scaling;
  r->attrs["accumulation"] = std::string("split");
  r->attrs["output_type"] = std::string("fp32");
  r->attrs["m"] = int64_t(64);
  r->attrs["k"] = int64_t(128);
  r->attrs["n"] = int64_t(32);
  r->attrs["a_origin"] = a_origin;
  r->attrs["b_origin"] = std::string("random normal (seed 1, stream 2)");
  r->setMetric("sqnr_db", sqnr, "dB", "");
  r->setMetric("quant_sqnr_db", quant, "dB", "");
  r->setMetric("accum_sqnr_db", accum, "dB", "");
  return r;
}

std::shared_ptr<RunAccess> rankedRun(const std::string& id, const std::string& scaling, const std::string& a_origin,
                                     double sqnr, double quant, double accum, const std::string& config = "{}") {
  return RunAccess::fromRun(rankedCoreRun(id, scaling, a_origin, sqnr, quant, accum, config));
}

} // namespace

class TestBlockViews : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // Four blocks with E8M0 codes 0x7F, 0x7F, 0x80, 0xFF: 2^(0x7F − 127) = 2^0 twice, 2^1 once,
  // and NaN (0xFF) once, placed one binade above the largest scale 2^127, i.e. at 128. Only the
  // NaN bar is trouble. E8M0 scales are powers of two: the closest codes are 1 binade apart, so
  // the bars are 0.85 wide.
  void e8m0HistogramCountsBlocksPerCode() {
    auto run = RunAccess::fromRun(scaleCodeRun("E8M0FNU", {0x7F, 0x7F, 0x80, 0xFF}, 2, 2));
    ScaleHistogram h;
    QString why;
    QVERIFY2(blockScaleHistogram(*run, 'A', &h, &why), qPrintable(why));
    QCOMPARE(h.source, ScaleHistogram::Source::Codes);
    QCOMPARE(h.format, QStringLiteral("E8M0FNU"));
    QCOMPARE(h.blocks, int64_t(4));
    QCOMPARE(h.block_cols, int64_t(32));
    QCOMPARE(h.bar_width, 0.85);
    QCOMPARE(int(h.bins.size()), 3);
    QCOMPARE(h.bins[0].code, 0x7F);
    QCOMPARE(h.bins[0].x, 0.0);
    QCOMPARE(h.bins[0].count, int64_t(2));
    QVERIFY(!h.bins[0].trouble);
    QCOMPARE(h.bins[1].code, 0x80);
    QCOMPARE(h.bins[1].x, 1.0);
    QCOMPARE(h.bins[1].count, int64_t(1));
    QVERIFY(!h.bins[1].trouble);
    QCOMPARE(h.bins[2].code, 0xFF);
    QCOMPARE(h.bins[2].x, 128.0);
    QCOMPARE(h.bins[2].count, int64_t(1));
    QVERIFY(h.bins[2].trouble);
    QCOMPARE(h.bins[2].trouble_text, QStringLiteral("NaN"));
    QCOMPARE(h.trouble_blocks, int64_t(1));

    // The view draws the same counts: blue bars 2 and 1, one vermillion bar of 1, with a legend.
    BlockScaleView v;
    v.resize(1000, 700);
    v.setRunAccess(run);
    QCOMPARE(int(v.histogram().bins.size()), 3);
    auto* ok = qobject_cast<QCPBars*>(v.plot()->plottable(0));
    auto* bad = qobject_cast<QCPBars*>(v.plot()->plottable(1));
    QVERIFY(ok && bad);
    QCOMPARE(ok->dataCount(), 2);
    QCOMPARE(ok->data()->at(0)->value, 2.0);
    QCOMPARE(ok->data()->at(1)->value, 1.0);
    QCOMPARE(bad->dataCount(), 1);
    QCOMPARE(bad->data()->at(0)->key, 128.0);
    QCOMPARE(bad->name(), QStringLiteral("trouble: NaN"));
    QVERIFY2(v.captionText().contains(QStringLiteral("1 block(s) with a trouble code")), qPrintable(v.captionText()));
    QVERIFY(v.csv().startsWith(QStringLiteral("x_log2,code,value,blocks,trouble\n0,127,1,2,\n1,128,2,1,\n")));
  }

  // On a log count axis a bar stands on the axis floor (0.5) and ends at its count: QCPBars draws
  // from its base to base + value, so the value is the count less the floor. Codes 0x7F ×300,
  // 0x80 ×2, 0x81 ×1 (E8M0: 2^0, 2^1, 2^2, at x = 0, 1, 2): counts 300, 2, 1 span 300 ≥ 100, so
  // the count axis is logarithmic. In the window at 1400×900, a point 2 px below a bar's top is
  // inside the bar and a point at 1.15 × its count is not (before, 1 was drawn up to 1.5 and 2 up
  // to 2.5, while the CSV said 1 and 2).
  void logCountBarsEndAtTheirCount() {
    std::vector<uint8_t> codes(303, 0x7F);
    codes[300] = codes[301] = 0x80;
    codes[302] = 0x81;
    BlockScaleView v;
    v.resize(1400, 900);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.setRunAccess(RunAccess::fromRun(scaleCodeRun("E8M0FNU", codes, 1, 303)));
    QVERIFY(v.csv().contains(QStringLiteral("\n0,127,1,300,\n1,128,2,2,\n2,129,4,1,\n")));
    v.plot()->replot(QCustomPlot::rpImmediateRefresh);
    auto* ok = qobject_cast<QCPBars*>(v.plot()->plottable(0));
    QVERIFY(ok);
    QCPAxis* x = ok->keyAxis();
    QCPAxis* y = ok->valueAxis();
    QCOMPARE(y->scaleType(), QCPAxis::stLogarithmic);
    QCOMPARE(y->range().lower, 0.5);
    QCOMPARE(ok->dataCount(), 3);
    const double counts[3] = {300, 2, 1};
    for (int i = 0; i < 3; ++i) {
      const double key = ok->data()->at(i)->key;
      QCOMPARE(key, double(i));
      QCOMPARE(ok->baseValue() + ok->data()->at(i)->value, counts[i]);
      const double px = x->coordToPixel(key);
      QVERIFY2(ok->selectTest(QPointF(px, y->coordToPixel(counts[i]) + 2), false) >= 0, qPrintable(QString::number(i)));
      QVERIFY2(ok->selectTest(QPointF(px, y->coordToPixel(counts[i] * 1.15)), false) < 0,
               qPrintable(QString::number(i)));
    }
  }

  // An NVFP4-like operand: E4M3FN block scale codes 0x00 (zero), 0x01 (2^−9, the smallest
  // subnormal), 0x38 twice (0 0111 000 = 2^(7−7) = 1), 0x7E (448, the largest) and 0x7F (NaN).
  // Positions: zero one binade below 2^−9 → −10; 2^−9 → −9; 1 → 0; 448 → log2 448; NaN one above
  // → log2 448 + 1. Zero, subnormal and NaN are trouble (3 blocks); 448 is not, as NVFP4's
  // tensor-amax block gets exactly 448 by design (bamax · (2688/amax)/6). The closest two E4M3 codes are
  // 1.875 and 2 (log2(16/15) apart). The tensor scale of Transformer Engine's two-level scaling is
  // in the caption.
  void e4m3ScaleCodesOfNvfp4() {
    auto r = scaleCodeRun("E4M3FN", {0x00, 0x01, 0x38, 0x38, 0x7E, 0x7F}, 2, 3);
    auto& s = r->datasets["quantized/A_scales"];
    s.attrs["block_cols"] = int64_t(16);
    s.attrs["tensor_scale_kind"] = std::string("te_amax");
    s.attrs["tensor_amax"] = 6.0;
    s.attrs["tensor_scale"] = 0.5;
    s.attrs["fp4_fp8_max"] = 2688.0;
    ScaleHistogram h;
    QString why;
    QVERIFY2(blockScaleHistogram(*RunAccess::fromRun(r), 'A', &h, &why), qPrintable(why));
    QCOMPARE(int(h.bins.size()), 5);
    const double l448 = std::log2(448.0);
    const double xs[] = {-10, -9, 0, l448, l448 + 1};
    const int64_t counts[] = {1, 1, 2, 1, 1};
    const bool trouble[] = {true, true, false, false, true};
    const char* names[] = {"zero", "subnormal", "", "", "NaN"};
    for (int i = 0; i < 5; ++i) {
      QCOMPARE(h.bins[size_t(i)].x, xs[i]);
      QCOMPARE(h.bins[size_t(i)].count, counts[i]);
      QCOMPARE(h.bins[size_t(i)].trouble, trouble[i]);
      QCOMPARE(h.bins[size_t(i)].trouble_text, QString::fromLatin1(names[i]));
    }
    QCOMPARE(h.trouble_blocks, int64_t(3));
    QVERIFY(std::fabs(h.bar_width - 0.85 * std::log2(16.0 / 15.0)) < 1e-12);
    QVERIFY2(h.tensor_scale.contains(QStringLiteral("te_amax")) && h.tensor_scale.contains(QStringLiteral("amax 6")) &&
                 h.tensor_scale.contains(QStringLiteral("/ 2688")),
             qPrintable(h.tensor_scale));
    BlockScaleView v;
    v.setRunAccess(RunAccess::fromRun(r));
    QVERIFY2(v.captionText().contains(QStringLiteral("E4M3FN scale codes of A")), qPrintable(v.captionText()));
    QVERIFY2(v.captionText().contains(QStringLiteral("Tensor scale (Transformer Engine, te_amax)")),
             qPrintable(v.captionText()));
  }

  // Float32 scales only (no scale codes): log2 of the dequant scale. Scales 0.3, 0.3, 0.5, 0 are
  // not all powers of two, so the bins are 1/8 binade: log2 0.3 = −1.737 lies in [−14/8, −13/8),
  // centre −1.6875 (2 blocks); log2 0.5 = −1 in [−8/8, −7/8), centre −0.9375; the zero scale sits
  // two bins below the lowest bin, at −14/8 − 2/8 + 1/16 = −1.9375, and is trouble. A single
  // power-of-two scale 0.25 (per-tensor) is one unit bin at −2.
  void float32ScalesShowLog2OfTheScale() {
    auto r = std::make_shared<Run>();
    r->id = "te";
    r->type = "gemm";
    r->config_json = "{}";
    r->putFloat32("quantized/A_scales", {0.3f, 0.3f, 0.5f, 0.0f}, 1, 4, "1", "scales").attrs["block_cols"] =
        int64_t(128);
    r->putFloat32("quantized/B_scales", {0.25f}, 1, 1, "1", "scale");
    ScaleHistogram h;
    QString why;
    QVERIFY2(blockScaleHistogram(*RunAccess::fromRun(r), 'A', &h, &why), qPrintable(why));
    QCOMPARE(h.source, ScaleHistogram::Source::Float32Log2);
    QCOMPARE(int(h.bins.size()), 3);
    QCOMPARE(h.bins[0].x, -1.9375);
    QVERIFY(h.bins[0].trouble);
    QCOMPARE(h.bins[0].trouble_text, QStringLiteral("zero"));
    QCOMPARE(h.bins[1].x, -1.6875);
    QCOMPARE(h.bins[1].count, int64_t(2));
    QCOMPARE(h.bins[2].x, -0.9375);
    QCOMPARE(h.bins[2].count, int64_t(1));
    QVERIFY(blockScaleHistogram(*RunAccess::fromRun(r), 'B', &h, &why));
    QCOMPARE(int(h.bins.size()), 1);
    QCOMPARE(h.bins[0].x, -2.0);
    QCOMPARE(h.bar_width, 0.85);
    BlockScaleView v;
    v.setRunAccess(RunAccess::fromRun(r));
    QVERIFY2(v.captionText().startsWith(QStringLiteral("No scale codes: A has float32 scales only")),
             qPrintable(v.captionText()));
  }

  // A [2, 4] in blocks of 1×2 (a 2×2 grid):
  //   x  = 3 4 | 1 1       x̂ = 3 4 | 1 1.5
  //        2 0 | 1 NaN          2.5 0 | 1 1
  // block (0,0) exact: SQNR +Inf, max rel 0; (0,1): Σx² = 2, Σe² = 0.25 → 10·log10(8) dB, max rel
  // 0.5/1 = 0.5; (1,0): Σx² = 4, Σe² = 0.25 → 10·log10(16) dB, max rel 0.5/2 = 0.25 (x = 0 has no
  // relative error); (1,1) holds a NaN input, left out as core's block statistics do: its finite
  // element 1 → 1 is exact (SQNR +Inf, max rel 0), and the block is counted as holding a non-finite
  // element. Finite range 10·log10(8) … 10·log10(16).
  void errorByBlockOfAHandDerivedRun() {
    auto r = std::make_shared<Run>();
    r->id = "blk";
    r->type = "gemm";
    r->config_json = "{}";
    r->putFloat32("inputs/A", {3, 4, 1, 1, 2, 0, 1, float(kNaN)}, 2, 4, "1", "A");
    r->putFloat32("quantized/A_dequantized", {3, 4, 1, 1.5f, 2.5f, 0, 1, 1}, 2, 4, "1", "A dq");
    auto& s = r->putFloat32("quantized/A_scales", {1, 1, 1, 1}, 2, 2, "1", "scales");
    s.attrs["block_rows"] = int64_t(1);
    s.attrs["block_cols"] = int64_t(2);
    auto run = RunAccess::fromRun(r);
    BlockErrorMap m;
    QString why;
    QVERIFY2(blockErrorMap(*run, 'A', BlockErrorMap::Measure::Sqnr, &m, &why), qPrintable(why));
    QCOMPARE(m.grid_rows, int64_t(2));
    QCOMPARE(m.grid_cols, int64_t(2));
    QVERIFY(std::isinf(m.at(0, 0)) && m.at(0, 0) > 0);
    QCOMPARE(m.at(0, 1), 10 * std::log10(8.0));
    QCOMPARE(m.at(1, 0), 10 * std::log10(16.0));
    QVERIFY(std::isinf(m.at(1, 1)) && m.at(1, 1) > 0);
    QCOMPARE(m.exact_blocks, int64_t(2));
    QCOMPARE(m.nan_blocks, int64_t(0));
    QCOMPARE(m.nonfinite_blocks, int64_t(1));
    QCOMPARE(m.min, 10 * std::log10(8.0));
    QCOMPARE(m.max, 10 * std::log10(16.0));
    QVERIFY(blockErrorMap(*run, 'A', BlockErrorMap::Measure::MaxRel, &m, &why));
    QCOMPARE(m.at(0, 0), 0.0);
    QCOMPARE(m.at(0, 1), 0.5);
    QCOMPARE(m.at(1, 0), 0.25);
    QCOMPARE(m.at(1, 1), 0.0);

    // The view draws the grid (the exact block at the top of the colour range) and says so.
    BlockScaleView v;
    v.resize(1000, 700);
    v.setRunAccess(run);
    v.setMode(BlockScaleView::Mode::ErrorSqnr);
    QCOMPARE(v.errorMap().at(0, 1), 10 * std::log10(8.0));
    auto* map = qobject_cast<QCPColorMap*>(v.plot()->plottable(0));
    QVERIFY(map);
    QCOMPARE(map->data()->cell(0, 0), 10 * std::log10(16.0));
    QCOMPARE(map->data()->cell(1, 0), 10 * std::log10(8.0));
    // the two exact blocks, (0,0) and the NaN-holding (1,1), both at the top of the colour range
    QVERIFY(std::isfinite(map->data()->cell(1, 1)));
    QCOMPARE(map->data()->cell(1, 1), map->data()->cell(0, 1));
    QVERIFY2(v.captionText().contains(QStringLiteral("2 block(s) exact")), qPrintable(v.captionText()));
    QVERIFY2(v.captionText().contains(QStringLiteral("1 block(s) hold NaN or Inf elements")),
             qPrintable(v.captionText()));
  }

  // fp8lab-render's block_scales: per operand with scale codes the histogram and, when the run
  // stores the inputs, the SQNR per block; files <run>-block_scales-X and <run>-block_error-X at
  // the size asked, view "block_scales", CSV as the view's. A run without scale codes has none.
  //   A [1, 32] = sixteen 6 then sixteen 0.75, E4M3FN codes 0x7E (448) and 0x66 (0 1100 110 =
  //   2^(12−7)·1.75 = 56) in blocks of 1×16: bars at log2 56 = 5.80735492 and log2 448 =
  //   8.80735492, one block each, 448 the largest E4M3 value (not trouble: the amax block). Dequantized: block 0
  //   exact (SQNR inf); block 1 is 0.75 but one 1.0: Σx² = 16 · 0.5625 = 9, Σe² = 0.25² =
  //   0.0625, SQNR 10·log10(144) = 21.5836249 dB.
  //   B [32, 1], E8M0FNU codes 0x7F twice in blocks of 16×1 (2^0 = 1, at x = 0), no inputs/B: a
  //   histogram only.
  void renderWritesTheBlockScaleViews() {
    QTemporaryDir dir;
    auto r = std::make_shared<Run>(*scaleCodeRun("E4M3FN", {0x7E, 0x66}, 1, 2));
    r->id = "fp4";
    r->datasets["quantized/A_scales"].attrs["block_cols"] = int64_t(16);
    std::vector<float> a(32, 6.0f);
    for (size_t i = 16; i < 32; ++i) a[i] = 0.75f;
    r->putFloat32("inputs/A", a, 1, 32, "1", "A");
    a[20] = 1.0f;
    r->putFloat32("quantized/A_dequantized", a, 1, 32, "1", "A dq");
    auto& bs = r->putFloat32("quantized/B_scales", {1.0f, 1.0f}, 2, 1, "1", "B scales");
    bs.attrs["block_rows"] = int64_t(16);
    bs.attrs["block_cols"] = int64_t(1);
    r->datasets["quantized/B_scale_codes"] = Dataset::uint8({2, 1}, {0x7F, 0x7F}, "code", "B scale codes");
    r->datasets["quantized/B_scale_codes"].attrs["format"] = std::string("E8M0FNU");
    r->putFloat32("output/D", {1.0f}, 1, 1, "1", "D"); // a session's GEMM run needs its output
    Run plain;
    plain.id = "fp8";
    plain.type = "gemm";
    plain.config_json = "{}";
    plain.putFloat32("quantized/A_scales", {0.5f}, 1, 1, "1", "scale");
    plain.putFloat32("output/D", {1.0f}, 1, 1, "1", "D");
    Session s;
    s.runs = {*r, plain};
    const QString file = dir.filePath(QStringLiteral("s.h5"));
    const auto st = writeSession(file.toStdString(), s);
    QVERIFY2(st.ok(), st.message().c_str());
    RenderRequest req;
    req.session = file;
    req.dir = dir.filePath(QStringLiteral("out"));
    req.views = {QStringLiteral("block_scales")};
    req.size = QSize(640, 480);
    QList<RenderedFile> files;
    QString err;
    QVERIFY2(renderViews(req, &files, &err), qPrintable(err));
    QStringList names;
    for (const auto& f : files) {
      QCOMPARE(f.view, QStringLiteral("block_scales"));
      QCOMPARE(f.run, QStringLiteral("fp4"));
      names << QFileInfo(f.file).fileName();
    }
    QCOMPARE(names, (QStringList{QStringLiteral("fp4-block_scales-A.png"), QStringLiteral("fp4-block_scales-A.csv"),
                                 QStringLiteral("fp4-block_error-A.png"), QStringLiteral("fp4-block_error-A.csv"),
                                 QStringLiteral("fp4-block_scales-B.png"), QStringLiteral("fp4-block_scales-B.csv")}));
    auto read = [&](const QString& name) {
      QFile f(QDir(req.dir).filePath(name));
      return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
    };
    for (const QString& n : names)
      if (n.endsWith(QStringLiteral(".png"))) QCOMPARE(QImage(QDir(req.dir).filePath(n)).size(), QSize(640, 480));
    QCOMPARE(read(QStringLiteral("fp4-block_scales-A.csv")),
             QStringLiteral("x_log2,code,value,blocks,trouble\n5.80735492,102,56,1,\n8.80735492,126,448,1,\n"));
    QCOMPARE(read(QStringLiteral("fp4-block_error-A.csv")),
             QStringLiteral("block_row,block_col,sqnr_db\n0,0,inf\n0,1,21.5836249\n"));
    QCOMPARE(read(QStringLiteral("fp4-block_scales-B.csv")),
             QStringLiteral("x_log2,code,value,blocks,trouble\n0,127,1,2,\n"));
    // Only the run without scale codes chosen: nothing to render, and the error says why.
    req.run = QStringLiteral("fp8");
    QVERIFY(!renderViews(req, &files, &err));
    QVERIFY2(err.contains(QStringLiteral("block_scales when they store block scale codes")), qPrintable(err));
  }

  // A choice in the control bar over more than 2^20 values is computed on the thread pool: right
  // after the operand is chosen the view is computing (the GUI thread did not wait), then the map
  // arrives. A [1100, 1000] = 2 everywhere, x_q = 2.5, blocks of 1×1000 (a 1100×1 grid): every
  // block's max relative error is 0.5 / 2 = 0.25.
  void bigErrorMapIsComputedInTheBackground() {
    auto r = std::make_shared<Run>();
    r->id = "big";
    r->type = "gemm";
    r->config_json = "{}";
    r->putFloat32("inputs/A", std::vector<float>(1100 * 1000, 2.0f), 1100, 1000, "1", "A");
    r->putFloat32("quantized/A_dequantized", std::vector<float>(1100 * 1000, 2.5f), 1100, 1000, "1", "A dq");
    auto& s = r->putFloat32("quantized/A_scales", std::vector<float>(1100, 1.0f), 1100, 1, "1", "scales");
    s.attrs["block_rows"] = int64_t(1);
    s.attrs["block_cols"] = int64_t(1000);
    BlockScaleView v;
    v.setRunAccess(RunAccess::fromRun(r));
    v.setOperand('B'); // B has nothing stored: the empty state, at once
    v.setMode(BlockScaleView::Mode::ErrorMaxRel);
    QVERIFY(!v.isComputing());
    auto* box = v.findChild<QComboBox*>(QStringLiteral("operand"));
    QVERIFY(box);
    box->setCurrentIndex(box->findData(int('A'))); // as the user does
    QVERIFY(v.isComputing());
    QVERIFY2(v.captionText().contains(QStringLiteral("Computing the error by block of A in big")),
             qPrintable(v.captionText()));
    QTRY_VERIFY_WITH_TIMEOUT(!v.isComputing(), 60000);
    QCOMPARE(v.errorMap().grid_rows, int64_t(1100));
    QCOMPARE(v.errorMap().grid_cols, int64_t(1));
    QCOMPARE(v.errorMap().at(0, 0), 0.25);
    QCOMPARE(v.errorMap().at(1099, 0), 0.25);
    QCOMPARE(v.errorMap().min, 0.25);
    QCOMPARE(v.errorMap().max, 0.25);
  }

  // Empty and failed states say what to do.
  void emptyStatesSayWhatToDo() {
    BlockScaleView v;
    QVERIFY2(v.captionText().contains(QStringLiteral("Run a GEMM with an MX or NVFP4 preset")),
             qPrintable(v.captionText()));
    auto r = std::make_shared<Run>();
    r->id = "plain";
    r->type = "gemm";
    r->config_json = "{}";
    r->putFloat32("output/D", {1}, 1, 1, "1", "D");
    v.setRunAccess(RunAccess::fromRun(r));
    QVERIFY2(v.captionText().contains(QStringLiteral("Run plain stores no block scales of A")) &&
                 v.captionText().contains(QStringLiteral("store_quantized on")),
             qPrintable(v.captionText()));
    QVERIFY(v.histogram().bins.empty());
    r->putFloat32("quantized/A_scales", {1}, 1, 1, "1", "scale");
    v.setRunAccess(RunAccess::fromRun(r));
    v.setMode(BlockScaleView::Mode::ErrorMaxRel);
    QVERIFY2(v.captionText().contains(QStringLiteral("stores no float input of A (inputs/A)")) &&
                 v.captionText().contains(QStringLiteral("store_inputs on")),
             qPrintable(v.captionText()));
    QVERIFY(v.errorMap().v.empty());
  }

  // Three recipes on the same operands (same shape and origins) with total SQNR 25, 31 and 28 dB
  // rank 31 (1), 28 (2), 25 (3) in group 1. A run on other operands (seed 9), a run whose A is
  // scaled differently in the config, and a run that says nothing about its operands are in no
  // group.
  void comparisonRanksRecipesOnTheSameOperands() {
    const std::string a1 = "random normal (seed 1, stream 1)";
    QList<std::shared_ptr<RunAccess>> runs{
        rankedRun("mx-floor", "mx_floor", a1, 25, 26, 40),
        rankedRun("other-seed", "mx_floor", "random normal (seed 9, stream 1)", 35, 36, 40),
        rankedRun("te-1x128", "te_block_1x128", a1, 31, 32, 45),
        rankedRun("mx-rceil", "mx_rceil", a1, 28, 29, 41),
        rankedRun("scaled-a", "mx_floor", a1, 20, 21, 40, "{\"a\":{\"scale\":4}}"),
    };
    {
      auto unknown = std::make_shared<Run>();
      unknown->id = "unknown";
      unknown->type = "gemm";
      unknown->config_json = "{}";
      unknown->setMetric("sqnr_db", 50, "dB", "");
      runs << RunAccess::fromRun(unknown);
    }
    QVERIFY(operandKey(*runs[5]).isEmpty());
    QCOMPARE(operandKey(*runs[0]), operandKey(*runs[2]));
    QVERIFY(operandKey(*runs[0]) != operandKey(*runs[4]));
    ComparisonView v;
    v.resize(1400, 900);
    v.setRuns(runs);
    const auto& rows = v.rows();
    QCOMPARE(rows[0].group, 1);
    QCOMPARE(rows[0].rank, 3);
    QCOMPARE(rows[2].rank, 1);
    QCOMPARE(rows[3].rank, 2);
    QCOMPARE(rows[2].group_size, 3);
    for (int i : {1, 4, 5}) {
      QCOMPARE(rows[i].group, 0);
      QCOMPARE(rows[i].rank, 0);
    }
    QCOMPARE(rows[2].recipe(), QStringLiteral("te_block_1x128 \u00b7 E4M3FN \u00b7 split \u2192 fp32"));
    // The table starts grouped and ranked: te-1x128, mx-rceil, mx-floor, then the runs in no group.
    QStringList ids;
    for (int row = 0; row < 3; ++row)
      ids << v.table()->item(row, ComparisonView::ColRun)->data(Qt::UserRole).toString();
    QCOMPARE(ids, (QStringList{QStringLiteral("te-1x128"), QStringLiteral("mx-rceil"), QStringLiteral("mx-floor")}));
    QCOMPARE(v.table()->item(0, ComparisonView::ColRank)->text(), QStringLiteral("G1 \u00b7 \u2605 best of 3"));
    QCOMPARE(v.table()->item(1, ComparisonView::ColRank)->text(), QStringLiteral("G1 \u00b7 2 of 3"));
    QVERIFY(v.table()->item(0, ComparisonView::ColSqnr)->font().bold());
    QVERIFY(!v.table()->item(1, ComparisonView::ColSqnr)->font().bold());
    QCOMPARE(v.table()->item(0, ComparisonView::ColQuantSqnr)->text(), QStringLiteral("32"));
    QCOMPARE(v.table()->item(0, ComparisonView::ColAccumSqnr)->text(), QStringLiteral("45"));
    // The ranking chart is the default: total and quantization SQNR bars of the three ranked runs
    // in rank order (31, 28, 25 | 32, 29, 26), accumulation SQNR as markers on the right axis
    // (45, 41, 40), the best marked ★.
    QCOMPARE(v.metric(), QStringLiteral("ranking"));
    QList<QCPBars*> bars;
    QCPGraph* accum = nullptr;
    for (int i = 0; i < v.plot()->plottableCount(); ++i) {
      if (auto* b = qobject_cast<QCPBars*>(v.plot()->plottable(i))) bars << b;
      if (auto* g = qobject_cast<QCPGraph*>(v.plot()->plottable(i))) accum = g;
    }
    QCOMPARE(bars.size(), 2);
    QVERIFY(accum);
    QCOMPARE(accum->valueAxis()->axisType(), QCPAxis::atRight);
    const double expect[3][3] = {{31, 28, 25}, {32, 29, 26}, {45, 41, 40}};
    for (int s = 0; s < 3; ++s) {
      const int count = s < 2 ? bars[s]->dataCount() : accum->dataCount();
      QCOMPARE(count, 3);
      for (int i = 0; i < 3; ++i)
        QCOMPARE(s < 2 ? bars[s]->data()->at(i)->value : accum->data()->at(i)->value, expect[s][i]);
    }
    // Tick labels name what differs within the group: the scaling preset.
    auto ticker = bars[0]->keyAxis()->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticker);
    QCOMPARE(ticker->ticks().value(0), QStringLiteral("\u2605 te_block_1x128"));
    QCOMPARE(ticker->ticks().value(2), QStringLiteral("3. mx_floor"));
    // CSV: operands, group and rank at the end of each row.
    QVERIFY(v.csv().contains(QStringLiteral(",\"64\u00d7128\u00d732, A random normal (seed 1, stream 1), B random "
                                            "normal (seed 1, stream 2)\",1,1\n")));
  }

  // The comparison in the window at 1400×900, on seven GEMM runs in two operand groups (five
  // recipes on imported operands with a long path, two on random ones): the chart has the
  // room an exported image gives it, and nothing of it is cut or drawn over another part.
  //   - the bar chart gets the wider share of the plot (3 : 2) and two thirds of the height;
  //   - the legend sits in a row of its own above the bars, inside the plot, over no axis rect;
  //   - each group caption starts with its "G1: " / "G2: ", lies inside the bar chart between the
  //     dashed lines around its group, and overlaps no other caption;
  //   - the right axis's margin holds its widest tick label and its label, and the difference map
  //     starts right of it;
  //   - the table shows the SQNR, Quant. SQNR and Accum. SQNR columns whole.
  void comparisonInTheWindowHasRoomForItsChart() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const std::string a1 = "/tmp/fp8lab-sweep-2026-03-14/activations_layer3_after_layernorm.npy",
                      a2 = "random normal (seed 1, stream 1)";
    int n = 0;
    for (const auto& [scaling, origin, sqnr] : {std::tuple{"per_row", a1, 29.21},
                                                {"mx_rceil", a1, 28.57},
                                                {"te_block_1x128", a1, 28.56},
                                                {"te_current", a1, 28.52},
                                                {"mx_floor", a1, 26.57},
                                                {"te_current", a2, 28.52},
                                                {"mx_rceil", a2, 28.48}}) {
      ++n;
      Run r = *rankedCoreRun("gemm-E4M3FN-" + std::string(scaling) + (origin == a1 ? "-import" : "-normal") +
                                 std::to_string(n),
                             scaling, origin, sqnr, sqnr, 150 + n);
      w.session()->addRun(session_io::fromCoreRun(r));
    }
    QVERIFY(w.showView(QStringLiteral("compare")));
    auto* v = qobject_cast<ComparisonView*>(w.view(QStringLiteral("compare")));
    QVERIFY(v);
    QTRY_COMPARE(int(v->rows().size()), 7);
    for (int i = 0; i < 3; ++i) QCoreApplication::processEvents();
    QCOMPARE(v->metric(), QStringLiteral("ranking"));
    QCustomPlot* plot = v->plot();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    const QRect bars = v->barRect()->rect(), diff = v->diffRect()->rect();
    // Room: before, the bars had half of a plot 60 % of the view high, a rect 330 px wide.
    QVERIFY2(
        v->barRect()->outerRect().width() >= 0.55 * plot->width() && bars.width() > diff.width(),
        qPrintable(
            QStringLiteral("bars %1 px, diff %2 px of %3").arg(bars.width()).arg(diff.width()).arg(plot->width())));
    QVERIFY2(plot->height() >= 0.55 * v->height(),
             qPrintable(QStringLiteral("%1 of %2").arg(plot->height()).arg(v->height())));
    // Legend.
    QCPLegend* legend = nullptr;
    for (QCPLayoutElement* e : plot->plotLayout()->elements(true))
      if (auto* l = qobject_cast<QCPLegend*>(e)) legend = l;
    QVERIFY(legend);
    QCOMPARE(legend->itemCount(), 3);
    QVERIFY(plot->viewport().contains(legend->outerRect()));
    for (QCPAxisRect* r : plot->axisRects()) QVERIFY(!legend->outerRect().intersects(r->rect()));
    for (int i = 0; i < legend->itemCount(); ++i) {
      auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->item(i));
      QVERIFY(item);
      const int need = legend->iconSize().width() + legend->iconTextPadding() +
                       QFontMetrics(legend->font()).horizontalAdvance(item->plottable()->name());
      QVERIFY2(item->rect().width() >= need && legend->outerRect().contains(item->rect()),
               qPrintable(item->plottable()->name()));
    }
    // Captions.
    QList<QRectF> boxes;
    for (int i = 0; i < plot->itemCount(); ++i) {
      auto* t = qobject_cast<QCPItemText*>(plot->item(i));
      if (!t || !t->text().startsWith(QLatin1Char('G'))) continue;
      QVERIFY2(t->text().startsWith(QStringLiteral("G%1: ").arg(boxes.size() + 1)), qPrintable(t->text()));
      const QRectF box(t->topLeft->pixelPosition(), t->bottomRight->pixelPosition());
      QVERIFY2(QRectF(bars).contains(box), qPrintable(t->text()));
      const QFontMetrics fm(t->font());
      for (const QString& line : t->text().split(QLatin1Char('\n')))
        QVERIFY2(fm.horizontalAdvance(line) <= box.width(), qPrintable(line));
      for (const QRectF& b : boxes) QVERIFY2(!b.intersects(box), qPrintable(t->text()));
      boxes << box;
    }
    QCOMPARE(boxes.size(), 2);
    // The first caption stays left of the dashed line between the groups (key 4 + 1 = 5).
    QVERIFY(boxes[0].right() <= v->barRect()->axis(QCPAxis::atBottom)->coordToPixel(5.0));
    // Right axis.
    QCPAxis* y2 = v->barRect()->axis(QCPAxis::atRight);
    QVERIFY(y2->visible());
    int widest = 0;
    for (const QString& l : y2->tickVectorLabels())
      widest = std::max(widest, QFontMetrics(y2->tickLabelFont()).horizontalAdvance(l));
    QVERIFY(widest > 0);
    const int need = y2->tickLabelPadding() + widest + y2->labelPadding() + QFontMetrics(y2->labelFont()).height();
    QVERIFY2(v->barRect()->margins().right() >= need,
             qPrintable(QStringLiteral("%1 < %2").arg(v->barRect()->margins().right()).arg(need)));
    QVERIFY(v->barRect()->outerRect().right() < v->diffRect()->outerRect().left());
    // Table.
    QTableWidget* t = v->table();
    for (const int c : {ComparisonView::ColSqnr, ComparisonView::ColQuantSqnr, ComparisonView::ColAccumSqnr}) {
      const int x = t->columnViewportPosition(c);
      QVERIFY2(x >= 0 && x + t->columnWidth(c) <= t->viewport()->width(),
               qPrintable(t->horizontalHeaderItem(c)->text()));
      QVERIFY(t->columnWidth(c) >= t->horizontalHeader()->sectionSizeHint(c));
    }
    if (!qEnvironmentVariableIsEmpty("FP8LAB_TEST_GRAB")) w.grab().save(qEnvironmentVariable("FP8LAB_TEST_GRAB"));
  }

  // Switching the chart between SQNR (no legend) and the ranking (a legend row above the bars)
  // around a difference map keeps every part in its place: the legend above the bars, the
  // colour scale beside the map (the map's row, whether or not the legend's row is there).
  void comparisonLayoutSurvivesMetricChanges() {
    QList<std::shared_ptr<RunAccess>> runs;
    const std::string a1 = "random normal (seed 1, stream 1)";
    for (const auto& [id, scaling, sqnr] : {std::tuple{"a", "mx_floor", 25.0}, {"b", "mx_rceil", 28.0}}) {
      auto r = rankedCoreRun(id, scaling, a1, sqnr, sqnr + 1, 40);
      std::vector<float> abs(16);
      for (int k = 0; k < 16; ++k) abs[size_t(k)] = float(k) / (sqnr / 10); // |D − ideal|, differing per run
      r->putFloat32("error/abs", abs, 4, 4, "1", "|D - ref|");
      runs << RunAccess::fromRun(r);
    }
    ComparisonView v;
    v.resize(1400, 900);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.setRuns(runs);
    auto check = [&](bool legend_expected) {
      v.plot()->replot(QCustomPlot::rpImmediateRefresh);
      QCPLegend* legend = nullptr;
      QCPColorScale* scale = nullptr;
      for (QCPLayoutElement* e : v.plot()->plotLayout()->elements(true)) {
        if (auto* l = qobject_cast<QCPLegend*>(e)) legend = l;
        if (auto* c = qobject_cast<QCPColorScale*>(e)) scale = c;
      }
      QCOMPARE(legend != nullptr, legend_expected);
      if (legend) QVERIFY(legend->outerRect().bottom() <= v.barRect()->outerRect().top());
      QVERIFY(scale);
      QCOMPARE(scale->outerRect().top(), v.diffRect()->outerRect().top());
      QVERIFY(scale->outerRect().left() >= v.diffRect()->outerRect().right());
      QCOMPARE(v.barRect()->outerRect().top(), v.diffRect()->outerRect().top());
    };
    QCOMPARE(v.metric(), QStringLiteral("ranking"));
    QVERIFY(v.difference().grid_rows > 0);
    check(true);
    v.setMetric(QStringLiteral("sqnr_db"));
    check(false);
    QVERIFY(v.selectPair(QStringLiteral("a"), QStringLiteral("b"))); // redraws the map without a legend row
    check(false);
    v.setMetric(QStringLiteral("ranking"));
    check(true);
    QVERIFY(v.selectPair(QStringLiteral("b"), QStringLiteral("a")));
    check(true);
  }

  // Without two runs on the same operands the chart falls back to SQNR and nothing is ranked.
  void noRankingWithoutAGroup() {
    ComparisonView v;
    v.setRuns({rankedRun("a", "mx_floor", "random normal (seed 1, stream 1)", 25, 26, 40),
               rankedRun("b", "mx_floor", "random normal (seed 2, stream 1)", 28, 29, 41)});
    QCOMPARE(v.metric(), QStringLiteral("sqnr_db"));
    QCOMPARE(v.rows()[0].rank, 0);
    QCOMPARE(v.table()->item(0, ComparisonView::ColRank)->text(), QStringLiteral("\u2014"));
  }
};

QTEST_MAIN(TestBlockViews)
#include "test_block_views.moc"

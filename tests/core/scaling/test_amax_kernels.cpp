// The float32 amax (scaling.h amaxOf) at the CPU level the process runs (CTest runs this suite at
// each level: FP8LAB_CPU=baseline|avx2|avx512). The definition written here: amax = max |x| over the
// elements that are not NaN (±Inf counts as Inf; 0 when there are none), and with ignore_nan false
// any NaN, of either sign or payload, makes the amax NaN. The vector kernels read 16 or 32 elements
// a step with a masked or scalar tail, so the cases put the largest element and the NaN at every
// position of every length up to 100. The block maxima and scaled rows of 1×B block quantization
// (quantize() with blocks narrower than 64: MX's 32, 16, 24, and widths that are not a multiple of 8)
// are compared with the same quantization of each block column alone, which takes the path of one
// block per row.
#include <QtTest>

#include "common/cpu_level.h"
#include "cpu_level_skip.h"
#include "formats/format.h"
#include "scaling/scaling.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace fp8lab;

namespace {

/// Values in [-1, 1) on a 1/64 grid from a xorshift stream: none larger than the planted ones.
std::vector<float> background(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  for (float& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = float(int64_t(s % 128) - 64) / 64.0f;
  }
  return v;
}

float nanWithBits(uint32_t bits) {
  return std::bit_cast<float>(bits);
}

} // namespace

class TestAmaxKernels : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void initTestCase() {
    test::skipWhenCpuLevelRefused();
    qInfo("CPU level %s", cpuLevelDescription().c_str());
  }

  // By hand: no elements → 0; |−0| = +0; the smallest subnormal 2^-149 is its own amax; −Inf → Inf;
  // a NaN alone → 0 when ignored (no element left), NaN otherwise.
  void byHand() {
    QCOMPARE(amaxOf(static_cast<const float*>(nullptr), 0, true), 0.0);
    const float neg_zero = -0.0f, tiny = std::bit_cast<float>(1u), minus_inf = -INFINITY, nan = NAN;
    QCOMPARE(std::bit_cast<uint64_t>(amaxOf(&neg_zero, 1, true)), 0ull);
    QCOMPARE(amaxOf(&tiny, 1, true), std::ldexp(1.0, -149));
    QCOMPARE(amaxOf(&minus_inf, 1, false), double(INFINITY));
    QCOMPARE(amaxOf(&nan, 1, true), 0.0);
    QVERIFY(std::isnan(amaxOf(&nan, 1, false)));
  }

  // The largest magnitude −3.5 (then +Inf) planted at each position of each length: amax 3.5 (Inf).
  void largestAtEveryPosition() {
    for (size_t n = 1; n <= 100; ++n)
      for (size_t at = 0; at < n; ++at) {
        std::vector<float> x = background(n, n * 131 + at);
        x[at] = -3.5f;
        QCOMPARE(amaxOf(x.data(), n, false), 3.5);
        x[at] = INFINITY;
        QCOMPARE(amaxOf(x.data(), n, false), double(INFINITY));
      }
  }

  // A NaN (quiet, signalling, negative, largest payload) at each position beside a planted 2.25:
  // ignored it leaves 2.25 (the NaN's magnitude bits, above Inf's, must not win the max); not
  // ignored it gives NaN.
  void nanAtEveryPosition() {
    const uint32_t nans[] = {0x7FC00000u, 0x7F800001u, 0xFFC00000u, 0xFFFFFFFFu};
    for (size_t n = 2; n <= 100; ++n)
      for (size_t at = 0; at < n; ++at) {
        std::vector<float> x = background(n, n * 17 + at);
        x[(at + 1) % n] = 2.25f;
        x[at] = nanWithBits(nans[(n + at) % 4]);
        QCOMPARE(amaxOf(x.data(), n, true), 2.25);
        QVERIFY(std::isnan(amaxOf(x.data(), n, false)));
      }
  }

  // x [R, C] quantized in 1×B blocks equals, block column by block column, the slice x[:, c0:c1]
  // quantized on its own (one block per row: the scale applied inside the encode, no row buffer):
  // the same codes, scales and E8M0 codes, and the stats add up. Each block's scale is also the
  // rule's scale of the block's amax worked out here (max |x|; NaN when the block holds one and the
  // rule propagates it: mx_floor, not mx_rceil), independently of the kernels. Each block row holds
  // a NaN, an Inf, an all-zero block or a planted maximum at a varying position (tails included), C
  // leaves a partial block, and 100 rows of 101 columns span two row buffers.
  void narrowBlocksAgreeWithSlices_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<int>("block");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<bool>("divide");
    QTest::newRow("MX 1x32 rceil, 5 x 101") << QStringLiteral("mx_rceil") << 32 << 5 << 101 << false;
    QTest::newRow("MX 1x32 floor (NaN amax), 100 x 101") << QStringLiteral("mx_floor") << 32 << 100 << 101 << false;
    QTest::newRow("MX 1x32 floor divide, 5 x 96") << QStringLiteral("mx_floor") << 32 << 5 << 96 << true;
    QTest::newRow("1x16, 7 x 70") << QStringLiteral("mx_rceil") << 16 << 7 << 70 << false;
    QTest::newRow("1x24, 5 x 77") << QStringLiteral("mx_floor") << 24 << 5 << 77 << false;
    QTest::newRow("1x20 (not a multiple of 8), 6 x 67") << QStringLiteral("mx_floor") << 20 << 6 << 67 << false;
    QTest::newRow("1x12 (not a multiple of 8), 6 x 40 divide") << QStringLiteral("mx_rceil") << 12 << 6 << 40 << true;
    QTest::newRow("1x8, 5 x 30") << QStringLiteral("mx_rceil") << 8 << 5 << 30 << true;
  }
  void narrowBlocksAgreeWithSlices() {
    QFETCH(QString, preset);
    QFETCH(int, block);
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(bool, divide);
    const int64_t R = rows, C = cols, B = block;
    ScalingConfig cfg = requireScalingPreset(preset.toStdString());
    cfg.block = B;
    cfg.op = divide ? Format::ScaleOp::Divide : Format::ScaleOp::Multiply;
    std::vector<float> x = background(size_t(R * C), uint64_t(B * 1000 + C));
    for (int64_t i = 0; i < R; ++i)
      for (int64_t c0 = 0, gj = 0; c0 < C; c0 += B, ++gj) {
        const int64_t w = std::min(B, C - c0), at = c0 + (i * 7 + gj * 3) % w;
        float* row = x.data() + i * C;
        switch ((i + gj) % 5) {
        case 0:
          row[at] = nanWithBits(0x7FC00000u);
          break;
        case 1:
          row[at] = -INFINITY;
          break;
        case 2:
          std::fill(row + c0, row + c0 + w, 0.0f);
          break;
        default:
          row[at] = float(-37.5 * double(i % 9 + 1));
          break;
        }
      }
    const Format& f = Format::E4M3FN();
    const QuantizedTensor q = quantize(x.data(), R, C, f, cfg);
    const int64_t GC = (C + B - 1) / B;
    QCOMPARE(int64_t(q.dequant_scales.size()), R * GC);
    const bool nan_amax = preset == QStringLiteral("mx_floor");
    for (int64_t i = 0; i < R; ++i)
      for (int64_t c0 = 0, gj = 0; c0 < C; c0 += B, ++gj) {
        double amax = 0;
        bool nan = false;
        for (int64_t j = c0; j < std::min(C, c0 + B); ++j) {
          const float v = x[size_t(i * C + j)];
          if (std::isnan(v))
            nan = true;
          else
            amax = std::max(amax, double(std::fabs(v)));
        }
        const BlockScale want = blockScaleFromAmax(nan && nan_amax ? double(NAN) : amax, f, cfg);
        QCOMPARE(std::bit_cast<uint32_t>(q.dequant_scales[size_t(i * GC + gj)]), std::bit_cast<uint32_t>(want.dequant));
      }
    QuantizeStats sum;
    for (int64_t c0 = 0, gj = 0; c0 < C; c0 += B, ++gj) {
      const int64_t w = std::min(B, C - c0);
      std::vector<float> slice(size_t(R * w));
      for (int64_t i = 0; i < R; ++i) std::copy_n(x.data() + i * C + c0, w, slice.data() + i * w);
      const QuantizedTensor s = quantize(slice.data(), R, w, f, cfg);
      QCOMPARE(int64_t(s.dequant_scales.size()), R);
      for (int64_t i = 0; i < R; ++i) {
        QCOMPARE(std::bit_cast<uint32_t>(q.dequant_scales[size_t(i * GC + gj)]),
                 std::bit_cast<uint32_t>(s.dequant_scales[size_t(i)]));
        QCOMPARE(q.scale_codes[size_t(i * GC + gj)], s.scale_codes[size_t(i)]);
        for (int64_t j = 0; j < w; ++j)
          if (q.codes[size_t(i * C + c0 + j)] != s.codes[size_t(i * w + j)])
            QFAIL(qPrintable(QStringLiteral("code of x[%1, %2] differs").arg(i).arg(c0 + j)));
      }
      sum.elements += s.stats.elements;
      sum.saturated += s.stats.saturated;
      sum.underflow += s.stats.underflow;
      sum.subnormal += s.stats.subnormal;
      sum.nan_inputs += s.stats.nan_inputs;
      sum.inf_inputs += s.stats.inf_inputs;
      sum.zero_inputs += s.stats.zero_inputs;
    }
    QCOMPARE(q.stats.elements, R * C);
    QCOMPARE(q.stats.elements, sum.elements);
    QCOMPARE(q.stats.saturated, sum.saturated);
    QCOMPARE(q.stats.underflow, sum.underflow);
    QCOMPARE(q.stats.subnormal, sum.subnormal);
    QCOMPARE(q.stats.nan_inputs, sum.nan_inputs);
    QCOMPARE(q.stats.inf_inputs, sum.inf_inputs);
    QCOMPARE(q.stats.zero_inputs, sum.zero_inputs);
    QVERIFY(q.stats.nan_inputs > 0 && q.stats.inf_inputs > 0 && q.stats.zero_inputs >= B);
  }

  // A NaN input keeps its sign through the scaling, also in a block whose scale is NaN (mx_floor
  // propagates the NaN amax): under ml_dtypes' specials the code of −NaN is 0xFF and of +NaN 0x7F,
  // for 1×32 blocks (a factor per block) and 32×1 blocks (per-column factors), float32 and float64.
  void nanInputKeepsItsSign() {
    ScalingConfig cfg = requireScalingPreset("mx_floor");
    cfg.encode.specials = SpecialsPolicy::MlDtypes;
    const Format& f = Format::E4M3FN();
    for (const uint32_t bits : {0xFFC00000u, 0x7FC00000u}) {
      const uint8_t want = (bits >> 31) ? 0xFF : 0x7F;
      std::vector<float> x(64, 1.0f);
      x[0] = nanWithBits(bits);
      x[40] = nanWithBits(bits ^ 0x80000000u); // the second block: the opposite sign
      const QuantizedTensor q = quantize(x.data(), 1, 64, f, cfg);
      QVERIFY(std::isnan(q.dequant_scales[0]) && std::isnan(q.dequant_scales[1]));
      QCOMPARE(int(q.codes[0]), int(want));
      QCOMPARE(int(q.codes[40]), int(want ^ 0x80));
      const std::vector<double> xd(x.begin(), x.end());
      const QuantizedTensor qd = quantize(xd.data(), 1, 64, f, cfg);
      QCOMPARE(int(qd.codes[0]), int(want));
      QCOMPARE(int(qd.codes[40]), int(want ^ 0x80));
      // x [32, 3] contracted along its rows: column 1 holds the NaN at row 5
      std::vector<float> xc(96, 1.0f);
      xc[5 * 3 + 1] = nanWithBits(bits);
      const QuantizedTensor qc = quantize(xc.data(), 32, 3, f, cfg, Axis::Rows);
      QCOMPARE(int(qc.codes[5 * 3 + 1]), int(want));
    }
  }

  // Blocks B×1 (an operand contracted along its rows: per-column factors in the row buffer) equal
  // the transposed tensor's 1×B blocks, which the test above ties to the one-block-per-row path.
  void columnBlocksAgreeWithTransposedRows_data() {
    QTest::addColumn<bool>("divide");
    QTest::newRow("multiply") << false;
    QTest::newRow("divide") << true;
  }
  void columnBlocksAgreeWithTransposedRows() {
    QFETCH(bool, divide);
    const int64_t R = 70, C = 21, B = 32, GR = (R + B - 1) / B;
    ScalingConfig cfg = requireScalingPreset("mx_rceil");
    cfg.op = divide ? Format::ScaleOp::Divide : Format::ScaleOp::Multiply;
    std::vector<float> x = background(size_t(R * C), 99);
    for (int64_t j = 0; j < C; ++j) x[size_t(((j * 5) % R) * C + j)] = j % 3 == 0 ? NAN : float(-9.25 * double(j + 1));
    std::vector<float> xt(x.size());
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) xt[size_t(j * R + i)] = x[size_t(i * C + j)];
    const Format& f = Format::E4M3FN();
    const QuantizedTensor q = quantize(x.data(), R, C, f, cfg, Axis::Rows);
    const QuantizedTensor t = quantize(xt.data(), C, R, f, cfg, Axis::Cols);
    QCOMPARE(int64_t(q.dequant_scales.size()), GR * C);
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) {
        QCOMPARE(q.codes[size_t(i * C + j)], t.codes[size_t(j * R + i)]);
        if (i % B == 0)
          QCOMPARE(std::bit_cast<uint32_t>(q.dequant_scales[size_t((i / B) * C + j)]),
                   std::bit_cast<uint32_t>(t.dequant_scales[size_t(j * GR + i / B)]));
      }
    QCOMPARE(q.stats.underflow, t.stats.underflow);
    QCOMPARE(q.stats.subnormal, t.stats.subnormal);
    QCOMPARE(q.stats.nan_inputs, int64_t(7));
    QCOMPARE(t.stats.nan_inputs, int64_t(7));
  }
};

QTEST_GUILESS_MAIN(TestAmaxKernels)
#include "test_amax_kernels.moc"

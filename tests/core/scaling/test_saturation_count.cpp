// Saturation counters: an element counts as saturated only when it overflows by the OCP OFP8
// v1.0 §3 rule — its round-to-nearest-even result with an unbounded exponent lies beyond max
// finite. A scaled value one float32 ulp above max (448.00003 in E4M3FN) rounds to max and is
// not clipped. Expected values are hand derivations (written out per case) and numpy float32
// arithmetic (np.float32(448) / a, then * a), not the code under test.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "formats/format.h"
#include "metrics/distribution_stats.h"
#include "scaling/scaling.h"

using namespace fp8lab;

namespace {
ScalingConfig preset(const char* name) {
  auto c = scalingPreset(name);
  if (!c) qFatal("unknown preset %s", name);
  return *c;
}
uint64_t bits(double v) {
  return std::bit_cast<uint64_t>(v);
}
uint32_t bits(float v) {
  return std::bit_cast<uint32_t>(v);
}
} // namespace

class TestSaturationCount : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void overflowBoundPerFormat_data();
  void overflowBoundPerFormat();
  void currentScalingOneUlpAboveMaxIsNotSaturated();
  void mxFloorCountsOnlyTrueOverflow();
  void operandStatsRecountAgrees();
};

// Bound = max + ulp(max)/2 when the tie rounds to the even max (max's last mantissa bit 0), else the
// value just below it (the tie rounds up, past max):
//   E4M3FN  max 448 = 1.110b·2^8, ulp 32: midpoint 464, mantissa 110 even → 464 itself is finite.
//   E5M2    max 57344 = 1.11b·2^15, ulp 8192: midpoint 61440, mantissa 11 odd → just below 61440.
//   E4M3FNUZ / E4M3  max 240 = 1.111b·2^7, ulp 16: midpoint 248, odd → just below 248.
//   E5M2FNUZ max 57344 as E5M2 → just below 61440.
//   E2M1    max 6 = 1.1b·2^2, ulp 2: midpoint 7, odd → just below 7 (0x40dfffff in float32).
//   E3M2    max 28 = 1.11b·2^4, ulp 4: midpoint 30, odd → just below 30.
//   E2M3    max 7.5 = 1.111b·2^2, ulp 0.5: midpoint 7.75, odd → just below 7.75.
//   FP16    max 65504 = (2−2^−10)·2^15, ulp 32: midpoint 65520, mantissa all ones (odd) → below.
void TestSaturationCount::overflowBoundPerFormat_data() {
  QTest::addColumn<QString>("format");
  QTest::addColumn<double>("midpoint");
  QTest::addColumn<bool>("tieIsFinite");
  QTest::addColumn<uint32_t>("f32Bits");
  QTest::newRow("E4M3FN") << QStringLiteral("E4M3FN") << 464.0 << true << 0x43e80000u;
  QTest::newRow("E5M2") << QStringLiteral("E5M2") << 61440.0 << false << 0x476fffffu;
  QTest::newRow("E4M3FNUZ") << QStringLiteral("E4M3FNUZ") << 248.0 << false << 0x4377ffffu;
  QTest::newRow("E5M2FNUZ") << QStringLiteral("E5M2FNUZ") << 61440.0 << false << 0x476fffffu;
  QTest::newRow("E4M3") << QStringLiteral("E4M3") << 248.0 << false << 0x4377ffffu;
  QTest::newRow("E2M1") << QStringLiteral("E2M1") << 7.0 << false << 0x40dfffffu;
  QTest::newRow("E3M2") << QStringLiteral("E3M2") << 30.0 << false << 0x41efffffu;
  QTest::newRow("E2M3") << QStringLiteral("E2M3") << 7.75 << false << 0x40f7ffffu;
  QTest::newRow("FP16") << QStringLiteral("FP16") << 65520.0 << false << 0x477fefffu;
}

void TestSaturationCount::overflowBoundPerFormat() {
  QFETCH(QString, format);
  QFETCH(double, midpoint);
  QFETCH(bool, tieIsFinite);
  QFETCH(uint32_t, f32Bits);
  const Format* f = Format::byName(format.toStdString());
  QVERIFY(f);
  const double want = tieIsFinite ? midpoint : std::nextafter(midpoint, 0.0);
  QCOMPARE(bits(f->rneFiniteLimit()), bits(want));
  QCOMPARE(bits(f->rneFiniteLimitF32()), f32Bits);
}

// te_current: s = float32(448 / amax), y = float32(x · s). For amax a = 1.00525f (0x3f80ac08),
// numpy float32 gives s = 445.6603 (0x43ded485) and y = a·s = 448.00003 (0x43e00001), one float32
// ulp above 448. y rounds to 448 (|y − 448| = 2^−15 ≪ 16, half the E4M3FN quantum at 448), code
// 0x7e; nothing overflowed, so nothing is saturated. The other elements are far below max.
void TestSaturationCount::currentScalingOneUlpAboveMaxIsNotSaturated() {
  const float a = std::bit_cast<float>(0x3f80ac08u);
  const std::vector<float> x{a, 0.5f, -0.25f, -a};
  const QuantizedTensor q = quantize(x.data(), 1, int64_t(x.size()), Format::E4M3FN(), preset("te_current"));
  QCOMPARE(bits(q.quant_scales.at(0)), 0x43ded485u);
  QCOMPARE(int(q.codes[0]), 0x7e);
  QCOMPARE(int(q.codes[3]), 0xfe);
  QCOMPARE(q.stats.saturated, int64_t(0));
  // torchao's tensorwise rule computes the scale in float64 (float32(448.0 / amax)): the same
  // element lands at or just above 448 — again not an overflow.
  const QuantizedTensor t = quantize(x.data(), 1, int64_t(x.size()), Format::E4M3FN(), preset("torchao_tensorwise"));
  QCOMPARE(t.stats.saturated, int64_t(0));
  QCOMPARE(int(t.codes[0]), 0x7e);
}

// mx_floor (OCP MX v1.0 §6.3): shared exponent = floor(log2 amax) − emax(E4M3FN) = 8 − 8 = 0 for
// any amax in [256, 512), so the block is cast with scale 2^0 = 1 and elements keep their values:
//   464: the tie between 448 and 480 (480 would be the NaN mantissa 111 in E4M3FN; with an unbounded
//        exponent it is the odd neighbour) rounds to the even 448 — no overflow, not saturated.
//   465: above the midpoint, rounds to 480 > 448 — overflows, clipped to 448: saturated.
//  -500: overflows likewise: saturated.
void TestSaturationCount::mxFloorCountsOnlyTrueOverflow() {
  std::vector<float> x(32, 1.0f);
  x[0] = 464.0f;
  const QuantizedTensor q0 = quantize(x.data(), 1, 32, Format::E4M3FN(), preset("mx_floor"));
  QCOMPARE(int(q0.scale_codes.at(0)), 127); // 2^0
  QCOMPARE(int(q0.codes[0]), 0x7e);
  QCOMPARE(q0.stats.saturated, int64_t(0));
  x[1] = 465.0f;
  x[2] = -500.0f;
  const QuantizedTensor q1 = quantize(x.data(), 1, 32, Format::E4M3FN(), preset("mx_floor"));
  QCOMPARE(int(q1.scale_codes.at(0)), 127);
  QCOMPARE(int(q1.codes[1]), 0x7e);
  QCOMPARE(int(q1.codes[2]), 0xfe);
  QCOMPARE(q1.stats.saturated, int64_t(2));
}

// operandStats(x, q) recounts from the inputs; it must apply the same rule.
void TestSaturationCount::operandStatsRecountAgrees() {
  const float a = std::bit_cast<float>(0x3f80ac08u);
  const std::vector<float> x{a, 0.5f, -0.25f, -a};
  const QuantizedTensor q = quantize(x.data(), 1, int64_t(x.size()), Format::E4M3FN(), preset("te_current"));
  QCOMPARE(operandStats(x.data(), q).saturated, int64_t(0));
  std::vector<float> y(32, 1.0f);
  y[0] = 464.0f;
  y[1] = 465.0f;
  y[2] = -500.0f;
  const QuantizedTensor m = quantize(y.data(), 1, 32, Format::E4M3FN(), preset("mx_floor"));
  QCOMPARE(operandStats(y.data(), m).saturated, int64_t(2));
}

QTEST_APPLESS_MAIN(TestSaturationCount)
#include "test_saturation_count.moc"

// Tests for core/metrics: error summaries, maps, tile maps, operand counts and binade
// histograms, on hand-derived cases (derivations in the comments).
#include <QtTest>

#include <cmath>
#include <limits>

#include "compare_bits.h"
#include "metrics/distribution_stats.h"
#include "metrics/error_metrics.h"

using namespace fp8lab;

class TestMetrics : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void scalarMetricsHandDerived();
  void nonFiniteCountedAndExcluded();
  void identicalAndZeroReference();
  void errorMaps();
  void tileMapMeanAndMax();
  void operandStatsHandDerived();
  void binadeHistogramAlignedWithFormat();
  void largeComparisonIsDeterministic();
};

// ref = [1, 2, 0, 4], test = [1.5, 2, 0.5, 3] → |e| = [0.5, 0, 0.5, 1]
//   max_abs = 1 at index 3; max_rel over ref ≠ 0 = max(0.5/1, 0/2, 1/4) = 0.5 at index 0
//   Σe² = 0.25 + 0 + 0.25 + 1 = 1.5, Σref² = 1 + 4 + 0 + 16 = 21
//   rmse = sqrt(1.5/4), rel_fro = sqrt(1.5/21), sqnr = 10·log10(21/1.5) = 10·log10(14)
// max_abs, max_rel, rmse = sqrt(0.375) and ref_rms = sqrt(5.25) are exact or one correctly
// rounded square root of an exact double, so they are compared bit for bit; rel_fro (1/14 is
// not a double) and sqnr (log10) carry a rounding of their own and get QCOMPARE's tolerance.
void TestMetrics::scalarMetricsHandDerived() {
  const double ref[] = {1, 2, 0, 4};
  const float test[] = {1.5f, 2, 0.5f, 3};
  const ErrorMetrics m = compareErrors(ref, test, 4);
  QCOMPARE(m.count, int64_t(4));
  QCOMPARE(m.finite_pairs, int64_t(4));
  QCOMPARE(m.zero_ref, int64_t(1));
  QCOMPARE_BITS(m.max_abs, 1.0);
  QCOMPARE(m.max_abs_index, int64_t(3));
  QCOMPARE_BITS(m.max_rel, 0.5);
  QCOMPARE(m.max_rel_index, int64_t(0));
  QCOMPARE_BITS(m.rmse, std::sqrt(1.5 / 4));
  QCOMPARE(m.rel_fro, std::sqrt(1.5 / 21));
  QCOMPARE(m.sqnr_db, 10 * std::log10(14.0));
  QCOMPARE_BITS(m.ref_rms, std::sqrt(21.0 / 4));
}

void TestMetrics::nonFiniteCountedAndExcluded() {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const double ref[] = {1, nan, 3, inf, 2};
  const double test[] = {2, 1, nan, 4, -inf};
  const ErrorMetrics m = compareErrors(ref, test, 5);
  QCOMPARE(m.nan_ref, int64_t(1));
  QCOMPARE(m.inf_ref, int64_t(1));
  QCOMPARE(m.nan_test, int64_t(1));
  QCOMPARE(m.inf_test, int64_t(1));
  QCOMPARE(m.finite_pairs, int64_t(1)); // only (1, 2)
  QCOMPARE_BITS(m.max_abs, 1.0);
  QCOMPARE_BITS(m.rel_fro, 1.0);
  QCOMPARE_BITS(m.sqnr_db, 0.0); // 10·log10(1/1)
}

void TestMetrics::identicalAndZeroReference() {
  const double ref[] = {1, -2};
  const ErrorMetrics same = compareErrors(ref, ref, 2);
  QCOMPARE_BITS(same.max_abs, 0.0);
  QVERIFY(std::isinf(same.sqnr_db) && same.sqnr_db > 0);
  QCOMPARE_BITS(same.rel_fro, 0.0);
  const double zero[] = {0, 0}, one[] = {1, 0};
  const ErrorMetrics z = compareErrors(zero, one, 2);
  QVERIFY(std::isinf(z.rel_fro));
  QCOMPARE(z.max_rel_index, int64_t(-1)); // no non-zero reference
  const ErrorMetrics empty = compareErrors(zero, zero, 0);
  QCOMPARE(empty.count, int64_t(0));
}

// ULPs: float32 spacing at 1 is 2^-23, so 1 + 2^-22 is 2 ulps from 1; BF16 spacing at 1 is
// 2^-7, so 1 + 2^-6 is 2 BF16 ulps; E4M3FN spacing at 1 is 2^-3 and with an output scale of
// 4 the reference 0.25 sits at 1 in the format: the spacing in D units is 2^-3/4 = 2^-5, so
// an error of 2^-4 is 2 ulps. Relative: |1.5 − 1|/1 = 0.5; 0 vs 0 → 0; 0 vs 1 → NaN.
void TestMetrics::errorMaps() {
  const double ref[] = {1, 1, 0, 0};
  const float test[] = {1.0f + std::ldexp(1.0f, -22), 1.5f, 0, 1};
  const std::vector<float> ulp = errorMap(ref, test, 2, ErrorMapKind::Ulp);
  QCOMPARE_BITS(ulp[0], 2.0f);
  QCOMPARE_BITS(ulp[1], std::ldexp(1.0f, 22)); // 0.5 / 2^-23
  const std::vector<float> rel = errorMap(ref, test, 4, ErrorMapKind::Rel);
  QCOMPARE_BITS(rel[1], 0.5f);
  QCOMPARE_BITS(rel[2], 0.0f);
  QVERIFY(std::isnan(rel[3]));
  const std::vector<float> abs = errorMap(ref, test, 4, ErrorMapKind::Abs);
  QCOMPARE_BITS(abs[3], 1.0f);
  const double r1[] = {1};
  const float t1[] = {1.0f + std::ldexp(1.0f, -6)};
  QCOMPARE_BITS(errorMap(r1, t1, 1, ErrorMapKind::Ulp, &Format::BF16())[0], 2.0f);
  const double r2[] = {0.25};
  const float t2[] = {0.25f + std::ldexp(1.0f, -4)};
  QCOMPARE_BITS(errorMap(r2, t2, 1, ErrorMapKind::Ulp, &Format::E4M3FN(), 4.0)[0], 2.0f);
  const double rn[] = {std::nan("")};
  QVERIFY(std::isnan(errorMap(rn, t1, 1, ErrorMapKind::Abs)[0]));
  QCOMPARE_BITS(ulpFloat32(0.0), std::ldexp(1.0, -149));
  QCOMPARE_BITS(ulpFloat32(-3.0), std::ldexp(1.0, -22));
}

// A 3×5 map, tiles 2×2 → grid 2×3:
//   row0: 1 2 3 4 5          tile(0,0) = {1,2,6,7}: mean 4, max 7
//   row1: 6 7 8 9 NaN        tile(0,1) = {3,4,8,9}: mean 6, max 9
//   row2: 0 0 1 1 2          tile(0,2) = {5, NaN}: mean 5, max 5, 1 NaN
//                            tile(1,0) = {0,0}: 0/0; tile(1,1) = {1,1}; tile(1,2) = {2}
void TestMetrics::tileMapMeanAndMax() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> map = {1, 2, 3, 4, 5, 6, 7, 8, 9, nan, 0, 0, 1, 1, 2};
  const TileMap t = tileMap(map, 3, 5, 2, 2);
  QCOMPARE(t.grid_rows, int64_t(2));
  QCOMPARE(t.grid_cols, int64_t(3));
  const std::vector<float> mean = {4, 6, 5, 0, 1, 2}, max = {7, 9, 5, 0, 1, 2};
  for (size_t i = 0; i < 6; ++i) {
    QCOMPARE_BITS(t.mean[i], mean[i]);
    QCOMPARE_BITS(t.max[i], max[i]);
  }
  QCOMPARE(t.nan_count[2], int64_t(1));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, tileMap(map, 4, 5));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, tileMap(map, 3, 5, 0, 2));
  const TileMap d = tileMap(std::vector<float>(300 * 300, 1.0f), 300, 300); // default 128: 3×3 with partial edges
  QCOMPARE(d.grid_rows, int64_t(3));
  QCOMPARE_BITS(d.mean[8], 1.0f);
}

// E4M3FN, per-tensor dequant scale 0.5 (y = x / 0.5 = 2x):
//   x = 300  → y = 600 > 448: saturated (code 0x7E)
//   x = 1e-4 → y = 2e-4 < 2^-10 (half of min subnormal 2^-9): flushed to zero
//   x = 0.002 → y = 0.004 ≈ 2·2^-9 (subnormal code 0x02)
//   x = 1 → y = 2 (normal); x = 0 → zero; NaN, −Inf inputs counted
void TestMetrics::operandStatsHandDerived() {
  const float x[] = {
      300, 1e-4f, 0.002f, 1, 0, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()};
  QuantizedTensor q;
  q.rows = 1;
  q.cols = 7;
  q.format = &Format::E4M3FN();
  q.block = {1, 7};
  q.dequant_scales = {0.5f};
  EncodeOptions sat;
  for (float v : x) q.codes.push_back(static_cast<uint8_t>(Format::E4M3FN().encode(static_cast<double>(v) / 0.5, sat)));
  QCOMPARE(int(q.codes[0]), 0x7E);
  QCOMPARE(int(q.codes[2]), 0x02);
  const OperandStats s = operandStats(x, q);
  QCOMPARE(s.elements, int64_t(7));
  QCOMPARE(s.saturated, int64_t(1));
  QCOMPARE(s.flushed, int64_t(1));
  QCOMPARE(s.subnormal, int64_t(1));
  QCOMPARE(s.zero, int64_t(1));
  QCOMPARE(s.nan, int64_t(1));
  QCOMPARE(s.inf, int64_t(1));
  QCOMPARE_BITS(s.saturatedPercent(), 100.0 / 7); // one correctly rounded division
  QuantizeStats qs;
  qs.elements = 10;
  qs.underflow = 3;
  QCOMPARE_BITS(operandStats(qs).flushedPercent(), 30.0);
  q.codes.pop_back();
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, operandStats(x, q));
}

// E4M3FN binades: min subnormal 2^-9, min normal 2^-6, max 448 = 1.75·2^8 → landmarks −9, −6, 8.
// With margin 4 the bins run from 2^-13 to 2^12 (26 bins). Values: 1 and 1.5 → bin of 2^0;
// 2 → 2^1; 0.25 → 2^-2; 448 → 2^8; 2^-20 → below; 2^13 → above; 0 → zeros; NaN → nonfinite.
// With scale 4 every value moves up two binades.
void TestMetrics::binadeHistogramAlignedWithFormat() {
  const float x[] = {
      1, 1.5f, 2, 0.25f, 448, std::ldexp(1.0f, -20), std::ldexp(1.0f, 13), 0, std::numeric_limits<float>::quiet_NaN()};
  const BinadeHistogram h = binadeHistogram(x, 9, Format::E4M3FN());
  QCOMPARE(h.format_min_subnormal_exponent, -9);
  QCOMPARE(h.format_min_normal_exponent, -6);
  QCOMPARE(h.format_max_exponent, 8);
  QCOMPARE(h.min_exponent, -13);
  QCOMPARE(h.maxExponent(), 12);
  QCOMPARE(h.counts.size(), size_t(26));
  auto bin = [&](const BinadeHistogram& hh, int e) { return hh.counts[static_cast<size_t>(e - hh.min_exponent)]; };
  QCOMPARE(bin(h, 0), int64_t(2));
  QCOMPARE(bin(h, 1), int64_t(1));
  QCOMPARE(bin(h, -2), int64_t(1));
  QCOMPARE(bin(h, 8), int64_t(1));
  QCOMPARE(h.below, int64_t(1));
  QCOMPARE(h.above, int64_t(1));
  QCOMPARE(h.zeros, int64_t(1));
  QCOMPARE(h.nonfinite, int64_t(1));
  const BinadeHistogram h4 = binadeHistogram(x, 9, Format::E4M3FN(), 4.0);
  QCOMPARE(bin(h4, 2), int64_t(2));
  QCOMPARE(bin(h4, 10), int64_t(1));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, binadeHistogram(x, 9, Format::E4M3FN(), 0.0));
  // from codes: E5M2 code 0x3C = 1.0, 0x01 = 2^-16 (min subnormal)
  QuantizedTensor q;
  q.rows = 1;
  q.cols = 2;
  q.format = &Format::E5M2();
  q.codes = {0x3C, 0x01};
  const BinadeHistogram hq = binadeHistogram(q, 0);
  QCOMPARE(hq.min_exponent, -16);
  QCOMPARE(bin(hq, 0), int64_t(1));
  QCOMPARE(bin(hq, -16), int64_t(1));
}

// Summaries of 1M elements do not depend on the thread count (fixed chunks, ordered combine):
// every summary is the same double, bit for bit, for 1 and 3 threads.
//
// ref = sin(i) (double), test = float32(ref) with round-to-nearest. Only sin(0) is 0, so
// zero_ref = 1 and max_rel covers the other 2^20 − 1 elements. Bound on max_rel: every other
// |ref| is a float32 normal (the smallest |sin(i)| for 0 < i < 2^20 is ~1e-6 ≫ 2^-126); for
// 2^e ≤ |r| < 2^(e+1) the float32 rounding error is at most half a float32 ulp, 2^(e−24), so
// |test − r| / |r| ≤ 2^-24 · 2^e / |r| ≤ 2^-24 = u. In double, test − r is exact (Sterbenz:
// test and r are within a factor 2) and the quotient is rounded once; the exact quotient is
// ≤ u and u is a double, so the rounded one is ≤ u too: max_rel ≤ 2^-24, no slack needed.
// The bound is nearly reached: about 1% of the elements (mantissa of |r| within 1.11 of a
// power of two and rounding error within 10% of half an ulp) have a relative error above 0.9·u,
// so max_rel > 0.9·2^-24 — a summary that measured something else (error relative to test,
// float32 arithmetic, zero references included) would not land in (0.9·u, u].
void TestMetrics::largeComparisonIsDeterministic() {
  const int64_t n = 1 << 20;
  std::vector<double> ref(static_cast<size_t>(n));
  std::vector<float> test(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ref[static_cast<size_t>(i)] = std::sin(static_cast<double>(i));
    test[static_cast<size_t>(i)] = static_cast<float>(ref[static_cast<size_t>(i)]);
  }
  const ErrorMetrics a = compareErrors(ref.data(), test.data(), n, 1), b = compareErrors(ref.data(), test.data(), n, 3);
  QCOMPARE_BITS(a.rmse, b.rmse);
  QCOMPARE_BITS(a.max_rel, b.max_rel);
  QCOMPARE_BITS(a.max_abs, b.max_abs);
  QCOMPARE_BITS(a.rel_fro, b.rel_fro);
  QCOMPARE_BITS(a.sqnr_db, b.sqnr_db);
  QCOMPARE_BITS(a.ref_rms, b.ref_rms);
  QCOMPARE(a.max_abs_index, b.max_abs_index);
  QCOMPARE(a.max_rel_index, b.max_rel_index);
  QCOMPARE(a.zero_ref, int64_t(1));
  const double u = std::ldexp(1.0, -24);
  QVERIFY2(a.max_rel <= u && a.max_rel > 0.9 * u,
           qPrintable(QStringLiteral("max_rel %1 = %2 u").arg(a.max_rel, 0, 'g', 17).arg(a.max_rel / u, 0, 'g', 17)));
  QVERIFY(a.max_rel_index > 0); // never the zero reference at index 0
}

QTEST_APPLESS_MAIN(TestMetrics)
#include "test_metrics.moc"

// Tests for core/metrics/robust_metrics.h (percentiles, outlier channels, the statistics that
// survive outliers) and for the channel-outlier distribution of core/gemm/random_matrix.h, on
// hand-derived cases (derivations in the comments).
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "gemm/random_matrix.h"
#include "metrics/robust_metrics.h"

using namespace fp8lab;

class TestRobustMetrics : public QObject {
  Q_OBJECT

private Q_SLOTS:
  // numpy.percentile's "linear" method: h = (n − 1)·p/100, x[⌊h⌋] + (h − ⌊h⌋)(x[⌊h⌋+1] − x[⌊h⌋]).
  //   {4, 1, 3, 2}: sorted 1 2 3 4, p50 → h = 1.5 → 2 + 0.5·1 = 2.5
  //   1…100: p99 → h = 98.01 → x[98] + 0.01·(x[99] − x[98]) = 99 + 0.01 = 99.01; p50 → h = 49.5 → 50.5
  //   p0 = the minimum, p100 = the maximum; one value is every percentile; none is NaN.
  void percentileOfKnownLists() {
    std::vector<double> v{4, 1, 3, 2};
    QCOMPARE(percentile(v, 50), 2.5);
    std::vector<double> h(100);
    for (int i = 0; i < 100; ++i) h[size_t(i)] = 100 - i; // descending: the function sorts
    std::vector<double> c = h;
    QCOMPARE(percentile(c, 99), 99.01);
    c = h;
    QCOMPARE(percentile(c, 50), 50.5);
    c = h;
    QCOMPARE(percentile(c, 0), 1.0);
    c = h;
    QCOMPARE(percentile(c, 100), 100.0);
    std::vector<double> one{7};
    QCOMPARE(percentile(one, 99), 7.0);
    std::vector<double> none;
    QVERIFY(std::isnan(percentile(none, 50)));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, percentile(v, 101));
  }

  // ref (3×3) with an outlier row and column through the 64:
  //   ref  = [1, 2, 2^-7;  4, 64, 3;  2, 1, 2]
  //   test = [1.125, 2.5, 0;  4.5, 64, 3.25;  2, 1.25, 2.25]   (all exact in float)
  // Row amaxes 2, 64, 2: median 2, 64 > 8·2 → row 1 is an outlier. Column amaxes 4, 64, 3: median
  // 4, 64 > 8·4 → column 1 is an outlier.
  void outlierChannelsByTheStatedRule() {
    const double ref[] = {1, 2, 0x1p-7, 4, 64, 3, 2, 1, 2};
    QCOMPARE(outlierChannels(ref, 3, 3, true), (std::vector<bool>{false, true, false}));
    QCOMPARE(outlierChannels(ref, 3, 3, false), (std::vector<bool>{false, true, false}));
    // k = 40: 64 > 40·2 is false for rows, 64 > 40·4 false for columns.
    RobustErrorRule loose;
    loose.outlier_k = 40;
    QCOMPARE(countSet(outlierChannels(ref, 3, 3, true, loose)), int64_t(0));
    // All zero: median 0, no outliers (no division by a zero median).
    const float zeros[6] = {};
    QCOMPARE(countSet(outlierChannels(zeros, 2, 3, false)), int64_t(0));
  }

  // The whole matrix:
  //   e = test − ref = [0.125, 0.5, −2^-7;  0.5, 0, 0.25;  0, 0.25, 0.25]
  //   Σref² = 1 + 4 + 2^-14 + 16 + 4096 + 9 + 4 + 1 + 4 = 4135 + 2^-14
  //   Σe²   = 2^-6 + 0.25 + 2^-14 + 0.25 + 0.0625·3 = 0.703125 + 2^-14
  //   Σref·test = 1.125 + 5 + 0 + 18 + 4096 + 9.75 + 4 + 1.25 + 4.5 = 4139.625
  //   Σtest²    = 1.265625 + 6.25 + 0 + 20.25 + 4096 + 10.5625 + 4 + 1.5625 + 5.0625 = 4144.953125
  //   underflow: ref 2^-7 ≠ 0 became 0 → 1
  //   floor: non-zero |ref| sorted 2^-7 1 1 2 2 2 3 4 64, median (h = 4) 2 → 0.2; 2^-7 is below it.
  //   relative errors of the other 8: 0.125 0.25 0.125 0 1/12 0 0.25 0.125 → sorted
  //     0 0 1/12 0.125 0.125 0.125 0.25 0.25: median (h = 3.5) 0.125, p99 (h = 6.93) 0.25
  // Without row 1 and column 1 (the outlier channels): ref 1 2^-7 2 2, test 1.125 0 2 2.25
  //   Σref² = 9 + 2^-14, Σe² = 2^-6 + 2^-14 + 0.0625; floor: median of 2^-7 1 2 2 (h = 1.5) 1.5
  //   → 0.15; relative errors 0.125, 0, 0.125 → median 0.125.
  void statisticsHandDerived() {
    const double ref[] = {1, 2, 0x1p-7, 4, 64, 3, 2, 1, 2};
    const float test[] = {1.125f, 2.5f, 0, 4.5f, 64, 3.25f, 2, 1.25f, 2.25f};
    const RobustErrors r = robustErrors(ref, test, 3, 3);
    QCOMPARE(r.pairs, int64_t(9));
    QCOMPARE(r.sqnr_db, 10.0 * std::log10((4135 + 0x1p-14) / (0.703125 + 0x1p-14)));
    QCOMPARE(r.cosine, 4139.625 / std::sqrt((4135 + 0x1p-14) * 4144.953125));
    QCOMPARE(r.underflow, int64_t(1));
    QCOMPARE(r.rel_floor, 0.2);
    QCOMPARE(r.rel_counted, int64_t(8));
    QCOMPARE(r.rel_median, 0.125);
    QCOMPARE(r.rel_p99, 0.25);

    const std::vector<bool> rows{false, true, false}, cols{false, true, false};
    const RobustErrors b = robustErrors(ref, test, 3, 3, {}, &rows, &cols);
    QCOMPARE(b.pairs, int64_t(4));
    QCOMPARE(b.sqnr_db, 10.0 * std::log10((9 + 0x1p-14) / (0x1p-6 + 0x1p-14 + 0.0625)));
    QCOMPARE(b.rel_floor, 0.15);
    QCOMPARE(b.rel_counted, int64_t(3));
    QCOMPARE(b.rel_median, 0.125);
    QCOMPARE(b.underflow, int64_t(1));
  }

  // cos((1, 0), (1, 1)) = 1/√2; an exact result has SQNR +∞ and cosine 1; non-finite pairs are
  // left out; an all-zero reference has no SQNR and no cosine.
  void cosineAndEdgeCases() {
    const double ref[] = {1, 0};
    const float test[] = {1, 1};
    QCOMPARE(robustErrors(ref, test, 1, 2).cosine, 1.0 / std::sqrt(2.0));
    const float same[] = {1, 0};
    const RobustErrors e = robustErrors(ref, same, 1, 2);
    QVERIFY(std::isinf(e.sqnr_db) && e.sqnr_db > 0);
    QCOMPARE(e.cosine, 1.0);
    const double refn[] = {1, NAN, 2};
    const float testn[] = {1, 5, INFINITY};
    QCOMPARE(robustErrors(refn, testn, 1, 3).pairs, int64_t(1));
    const double z[] = {0, 0};
    const RobustErrors ez = robustErrors(z, test, 1, 2);
    QVERIFY(std::isnan(ez.sqnr_db));
    QVERIFY(std::isnan(ez.cosine));
    QVERIFY(std::isnan(ez.rel_median));
    QCOMPARE(ez.rel_counted, int64_t(0));
    const std::vector<bool> wrong(5, false);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, robustErrors(ref, test, 1, 2, {}, &wrong));
  }

  // ChannelOutliers: the chosen columns (outlierChannelIndices: distinct, ascending, from the seed)
  // hold the normal values × the factor; the other columns are the Normal distribution's values of
  // the same seed and stream, bit for bit. Rows instead of columns with outlier_rows.
  void channelOutlierDistribution() {
    const auto idx = outlierChannelIndices(64, 4, 5, 1);
    QCOMPARE(idx.size(), size_t(4));
    for (size_t i = 1; i < idx.size(); ++i) QVERIFY(idx[i - 1] < idx[i]);
    QVERIFY(idx.front() >= 0 && idx.back() < 64);
    QCOMPARE(outlierChannelIndices(64, 4, 5, 1), idx); // a pure function of (seed, stream)
    QVERIFY(outlierChannelIndices(64, 4, 6, 1) != idx || outlierChannelIndices(64, 4, 7, 1) != idx);
    QCOMPARE(outlierChannelIndices(5, 5, 1, 1), (std::vector<int64_t>{0, 1, 2, 3, 4}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, outlierChannelIndices(3, 4, 1, 1));

    RandomMatrixOptions n;
    RandomMatrixOptions o;
    o.distribution = Distribution::ChannelOutliers;
    o.outlier_channels = 4;
    o.outlier_factor = 50;
    const auto base = randomMatrix(8, 64, 5, n, 1, 1);
    const auto out = randomMatrix(8, 64, 5, o, 1, 2);
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t j = 0; j < 64; ++j) {
        const size_t e = size_t(i * 64 + j);
        if (std::find(idx.begin(), idx.end(), j) != idx.end())
          QVERIFY2(std::fabs(double(out[e]) / double(base[e]) - 50.0) < 1e-5, qPrintable(QString::number(j)));
        else
          QCOMPARE(out[e], base[e]);
      }
    // The rule of robust_metrics finds exactly those columns (50× is above 8× the median column amax).
    std::vector<bool> want(64, false);
    for (int64_t c : idx) want[size_t(c)] = true;
    QCOMPARE(outlierChannels(out.data(), 8, 64, false), want);
    o.outlier_rows = true;
    const auto rowsm = randomMatrix(64, 8, 5, o, 1);
    std::vector<bool> wr(64, false);
    for (int64_t c : outlierChannelIndices(64, 4, 5, 1)) wr[size_t(c)] = true;
    QCOMPARE(outlierChannels(rowsm.data(), 64, 8, true), wr);
    o.outlier_channels = 65;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, randomMatrix(8, 64, 5, o, 1));
    QCOMPARE(parseDistribution("channel_outliers").value(), Distribution::ChannelOutliers);
    QCOMPARE(QString::fromLatin1(toString(Distribution::ChannelOutliers)), QStringLiteral("channel_outliers"));
  }
};

QTEST_APPLESS_MAIN(TestRobustMetrics)
#include "test_robust_metrics.moc"

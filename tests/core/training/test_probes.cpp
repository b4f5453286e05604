// The transformer probes (core/training/probes.h) on small tensors whose values are derived by
// hand from the published definitions, in the comments beside each check.
#include "training/probes.h"

#include <QtTest>

#include <cmath>

using namespace fp8lab;

class TestProbes : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // He et al. 2024 (simplified_transformers report_outliers), X = [[1, 2, 3, 6], [2, 2, 2, 2]]:
  // centred over the width: [−2, −1, 0, 3] and [0, 0, 0, 0]; mean of squares 14/8 = 1.75, r = √1.75;
  // m_j = x̃_1j² / (2 r²) = [4, 1, 0, 9] / 3.5 = [8/7, 2/7, 0, 18/7] (mean 1);
  // kurtosis = Σ (m_j − 1)² / (4 − 1) = (1 + 25 + 49 + 121) / 49 / 3 = 4/3.
  // max/median per token: |x̃_1| = [2, 1, 0, 3] → max 3, lower median 1 → 3; the zero row counts 0;
  // mean over the two tokens 1.5.
  void outlierStatsByHand() {
    const float x[] = {1, 2, 3, 6, 2, 2, 2, 2};
    const OutlierStats s = outlierStats(x, 2, 4);
    QVERIFY(std::fabs(s.rms - std::sqrt(1.75)) < 1e-12);
    QVERIFY2(std::fabs(s.kurtosis - 4.0 / 3.0) < 1e-7, qPrintable(QString::number(s.kurtosis, 'g', 17)));
    QCOMPARE(s.max_median, 1.5);
    // Every channel with the same energy: kurtosis 0. X = [[1, −1], [−1, 1]] centred is itself,
    // m = [1, 1].
    const float flat[] = {1, -1, -1, 1};
    QVERIFY(std::fabs(outlierStats(flat, 2, 2).kurtosis) < 1e-12);
    // One channel carrying everything: X = [[0, 0, 0, 4]] → x̃ = [−1, −1, −1, 3], r² = 12/4 = 3,
    // m = [1, 1, 1, 9]/3, mean 1, Σ(m − 1)² = 3·(2/3)² + 2² = 4/3 + 4 = 16/3, /3 = 16/9.
    const float one[] = {0, 0, 0, 4};
    QVERIFY(std::fabs(outlierStats(one, 1, 4).kurtosis - 16.0 / 9.0) < 1e-7);
  }

  // Sun et al. 2024: |x| above the absolute threshold and ≥ 1000 × the median |x| of its row.
  // Row [200, 0.125, 0.125, 0.125]: median 0.125, 200 ≥ 125 and > 100 → 1; row [200, 1, 1, 1]:
  // 200 < 1000.
  void massiveActivationsByHand() {
    const float x[] = {200, 0.125f, 0.125f, 0.125f, 200, 1, 1, 1};
    QCOMPARE(massiveActivations(x, 2, 4, 100.0), int64_t{1});
    QCOMPARE(massiveActivations(x, 2, 4, 250.0), int64_t{0});         // the absolute threshold
    QCOMPARE(massiveActivations(x, 2, 4, 100.0, 1600.0), int64_t{1}); // 200 ≥ 1600 × 0.125 = 200
    QCOMPARE(massiveActivations(x, 2, 4, 100.0, 1601.0), int64_t{0});
  }

  // A uniform causal head over T = 4: query t puts 1/(t + 1) on key 0, so the sink is the mean
  // over t = 1, 2, 3 of 1/2, 1/3, 1/4 = (13/12)/3 = 13/36. A head that always looks at key 0: 1.
  void attentionSinkByHand() {
    const int64_t T = 4;
    std::vector<float> p(2 * T * T, 0.0f); // one batch, two heads
    for (int64_t q = 0; q < T; ++q)
      for (int64_t k = 0; k <= q; ++k) p[size_t(q * T + k)] = 1.0f / float(q + 1);
    for (int64_t q = 0; q < T; ++q) p[size_t(T * T + q * T)] = 1.0f;
    const std::vector<double> s = attentionSink(p.data(), 1, 2, T);
    QVERIFY(std::fabs(s[0] - 13.0 / 36.0) < 1e-7);
    QCOMPARE(s[1], 1.0);
  }

  // E4M3FN's smallest subnormal is 2^−9; with quant multiplier 1 a probability of 2^−11 is below
  // half of it and rounds to zero, 2^−9 stays: 1 of the 3 non-zero values (0 is not counted).
  // With the static scale 256 (arXiv 2606.06521) 2^−11 becomes 2^−3: nothing flushes.
  void softmaxCastUnderflowByHand() {
    const float p[] = {0.5f, std::ldexp(1.0f, -11), std::ldexp(1.0f, -9), 0.0f};
    QVERIFY(std::fabs(softmaxCastUnderflow(p, 4, Format::E4M3FN(), 1.0f) - 1.0 / 3.0) < 1e-15);
    QCOMPARE(softmaxCastUnderflow(p, 4, Format::E4M3FN(), 256.0f), 0.0);
    // E5M2's smallest subnormal is 2^−16: 2^−11 survives with scale 1.
    QCOMPARE(quantizationUnderflow(p, 4, Format::E5M2(), 1.0f), 0.0);
  }

  // The share counts exactly the elements the format's own encode flushes: magnitudes at, just
  // below and just above half of each format's smallest positive value (the tie 2^−10 for
  // E4M3FN rounds to the even code 0), both signs, against encode + decode element by element.
  void underflowAgreesWithTheEncoder() {
    for (const Format* f : {&Format::E4M3FN(), &Format::E5M2(), &Format::E4M3FNUZ(), &Format::E5M2FNUZ()}) {
      const float half = float(f->decode(1) / 2);
      for (const float m : {half, std::nextafter(half, 0.0f), std::nextafter(half, 1.0f), 2 * half, half / 2})
        for (const float v : {m, -m}) {
          const double expected = f->decode(f->encode(double(v))) == 0.0 ? 1.0 : 0.0;
          QCOMPARE(softmaxCastUnderflow(&v, 1, *f, 1.0f), expected);
        }
      QCOMPARE(softmaxCastUnderflow(&half, 1, *f, 1.0f), 1.0);
    }
  }

  // ‖g‖ / ‖Q(g) − g‖: g = [3, 4] (‖g‖ = 5), Q(g) = [3, 4.5] (error 0.5) → 10; exact → +Inf.
  void gradientNoiseRatioByHand() {
    const float g[] = {3, 4}, q[] = {3, 4.5f};
    QCOMPARE(gradientNoiseRatio(g, q, 2), 10.0);
    QVERIFY(std::isinf(gradientNoiseRatio(g, g, 2)));
  }
};

QTEST_GUILESS_MAIN(TestProbes)
#include "test_probes.moc"

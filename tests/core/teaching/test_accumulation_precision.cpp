// Tests for core/teaching/accumulation_precision: the four accumulation models of the demo and the
// error sweep against K. Expected values are derived by hand (comments) on operands whose sums are
// exact in float32, so the only error is the modelled accumulator's.
#include <QtTest>

#include <cmath>
#include <vector>

#include "compare_bits.h"
#include "gemm/gemm.h"
#include "scaling/scaling.h"
#include "teaching/accumulation_precision.h"

using namespace fp8lab;

namespace {
QuantizedTensor ones(int64_t rows, int64_t cols) {
  const std::vector<float> x(size_t(rows * cols), 1.0f);
  return quantizeWithScale(x.data(), rows, cols, Format::E4M3FN(), BlockScale{1.0f, 1.0f, -1},
                           Format::ScaleOp::Multiply);
}
} // namespace

class TestAccumulationPrecision : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // A = ones [1, K], B = ones [K, 1]: every product is 1 and D = K exactly.
  // Fast accumulation with H100's rules at 14 bits (13 fraction bits), groups of 32: a group adds
  // its 32 products (alignment exponent e(1) + e(1) = 0) to the running sum S after truncating all
  // of them to the grid 2^(E − 13) of the largest exponent E among them (S's own). The sum, an
  // integer below 2^14 + 32, keeps its value when cut to 13 fraction bits. While S < 2^14 the grid is ≤ 1 and the ones
  // are kept; once S = 2^14 (E = 14) the grid is 2 and each 1 truncates to 0: S stalls at 16384. So for K = 32768:
  //   no promotion → 16384 (half of K lost); promoted every 128 → each window sums 128 exactly,
  //   and the float32 accumulator adds 256 windows exactly → 32768; float32 partials and one
  //   float32 sum → 32768 (integers below 2^24 are exact in float32).
  // For K = 16384 the fast sum reaches 2^14 only with the last group: every model gives 16384.
  void allOnesByHand() {
    const auto models = accumulationModels(14, 128);
    QCOMPARE(models.size(), size_t(4));
    auto backend = makeCpuGemmBackend();
    const float expect32768[4] = {16384.0f, 32768.0f, 32768.0f, 32768.0f};
    const QuantizedTensor a = ones(1, 32768), b = ones(32768, 1);
    for (size_t i = 0; i < 4; ++i) {
      const GemmOutput d = backend->run(a, b, models[i].options);
      QCOMPARE_BITS(d.d[0], expect32768[i]);
    }
    const QuantizedTensor a2 = ones(1, 16384), b2 = ones(16384, 1);
    for (size_t i = 0; i < 4; ++i) QCOMPARE_BITS(backend->run(a2, b2, models[i].options).d[0], 16384.0f);
    // 10 bits: S stalls at 2^10 = 1024 without promotion; promoted windows of 128 stay below it.
    const auto ten = accumulationModels(10, 128);
    const QuantizedTensor a3 = ones(1, 4096), b3 = ones(4096, 1);
    QCOMPARE_BITS(backend->run(a3, b3, ten[0].options).d[0], 1024.0f);
    QCOMPARE_BITS(backend->run(a3, b3, ten[1].options).d[0], 4096.0f);
  }

  // The sweep pairs each model with the quantized-exact product of the same operands: with one
  // K below the promotion interval (K = 96 ≤ 128), the promoted and unpromoted fast models are
  // the same computation, and so are the float32 partials and the single float32 sum.
  void sweepShape() {
    AccumulationSweepConfig c;
    c.ks = {96, 4096};
    c.m = c.n = 16;
    const AccumulationSweep s = sweepAccumulationError(c);
    QCOMPARE(s.ks, (std::vector<int64_t>{96, 4096}));
    QCOMPARE(s.error.size(), size_t(4));
    for (const auto& e : s.error) QCOMPARE(e.size(), size_t(2));
    QCOMPARE(s.error[0][0].rel_fro, s.error[1][0].rel_fro);
    QCOMPARE(s.error[2][0].rel_fro, s.error[3][0].rel_fro);
    // At K = 4096: float32 partials err by ~2^-24 per addition; 14-bit fast accumulation by ~2^-14
    // per group: orders of magnitude apart, and promotion bounds the fast model's growth.
    QVERIFY(s.error[3][1].rel_fro < 1e-5);
    QVERIFY(s.error[0][1].rel_fro > 100 * s.error[3][1].rel_fro);
    QVERIFY(s.error[1][1].rel_fro < s.error[0][1].rel_fro);
    QCOMPARE(s.error[0][1].count, int64_t(256));
  }

  void badConfig() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, accumulationModels(1, 128));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, accumulationModels(14, 0));
    AccumulationSweepConfig c;
    c.format = "E9M9";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sweepAccumulationError(c));
    c.format = "E4M3FN";
    c.ks = {0};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sweepAccumulationError(c));
  }
};

QTEST_MAIN(TestAccumulationPrecision)
#include "test_accumulation_precision.moc"

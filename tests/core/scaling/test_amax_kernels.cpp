// The float32 amax (scaling.h amaxOf) at the CPU level the process runs (CTest runs this suite at
// each level: FP8LAB_CPU=baseline|avx2|avx512). The definition written here: amax = max |x| over the
// elements that are not NaN (±Inf counts as Inf; 0 when there are none), and with ignore_nan false
// any NaN, of either sign or payload, makes the amax NaN. The vector kernels read 16 or 32 elements
// a step with a masked or scalar tail, so the cases put the largest element and the NaN at every
// position of every length up to 100.
#include <QtTest>

#include "common/cpu_level.h"
#include "cpu_level_skip.h"
#include "scaling/scaling.h"

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
};

QTEST_GUILESS_MAIN(TestAmaxKernels)
#include "test_amax_kernels.moc"

// e^x in float32 (training/exp.h) at the CPU level the process runs (CTest runs this suite at
// each level: FP8LAB_CPU=baseline|avx2|avx512). expF32 follows glibc's expf algorithm (ARM
// optimized-routines) as its FMA build computes it, so the published behaviour it must reproduce is
// glibc's `expf` on a CPU with FMA: compared bit for bit on a sweep of 2^24 inputs spread over all
// 2^32 bit patterns where this process runs such a glibc; everywhere, each result is within
// 0.502 ulp of e^x computed in float64, and the special cases are those derived by hand below.
#include <QtTest>

#include "common/cpu_level.h"
#include "cpu_level_skip.h"
#include "training/exp.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

using namespace fp8lab;

namespace {

uint32_t bits(float x) {
  return std::bit_cast<uint32_t>(x);
}

/// |got − e^x| in units of the float32 ulp at e^x (float64 e^x: its own error, < 1 ulp of float64,
/// is far below the 0.002 ulp of margin the bound leaves).
double ulpError(float x, float got) {
  const double want = std::exp(double(x));
  int e = 0;
  std::frexp(want, &e);
  const double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::fabs(double(got) - want) / ulp;
}

/// Whether std::exp here is glibc's ≥ 2.29 expf / exp (optimized-routines' algorithms, 2.27 for
/// expf) on its FMA code path: the ones these functions reproduce bit for bit.
bool libmIsGlibcFma(QString* why) {
#if defined(__GLIBC__) && defined(__x86_64__)
  const QString version = QString::fromLatin1(gnu_get_libc_version());
  const QStringList parts = version.split(QLatin1Char('.'));
  const int major = parts.value(0).toInt(), minor = parts.value(1).toInt();
  if (major < 2 || (major == 2 && minor < 29)) {
    *why = QStringLiteral("glibc %1 predates the exp of 2.29").arg(version);
    return false;
  }
  if (!__builtin_cpu_supports("fma")) {
    *why = QStringLiteral("this CPU has no FMA: glibc runs its non-FMA expf");
    return false;
  }
  return true;
#else
  *why = QStringLiteral("not glibc on x86-64");
  return false;
#endif
}

} // namespace

class TestExp : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void initTestCase() {
    test::skipWhenCpuLevelRefused();
    qInfo("CPU level %s", cpuLevelDescription().c_str());
  }

  // By hand. x = 0: z = 0, k = 0, r = 0, 2^(0/32) = 1, the cubic is exactly 1 → 1. −∞ → +0 and
  // +∞ → +∞ (e^x's limits); NaN stays NaN. 89 > ln 2^128 = 88.7228 → +∞ (overflow); −104 <
  // ln 2^−150 = −103.972 → +0 (below half the smallest subnormal); −103.5 lies between ln 2^−150 and
  // ln 2^−149 = −103.279: e^x ∈ (2^−150, 2^−149) rounds to the smallest subnormal 2^−149. −0 → 1.
  void specialValues() {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> x = {0.0f, -0.0f, -inf, inf, std::numeric_limits<float>::quiet_NaN(), 89.0f, -104.0f, -103.5f};
    const std::vector<float> want = {1.0f, 1.0f, 0.0f, inf, 0.0f, inf, 0.0f, 0x1p-149f};
    // Every value at every lane of the 8-wide kernel and in its scalar tail.
    for (int shift = 0; shift < 9; ++shift) {
      std::vector<float> in(17, 1.0f), out(17);
      for (size_t i = 0; i < x.size(); ++i) in[(i + shift) % 17] = x[i];
      expF32(in.data(), out.data(), 17);
      for (size_t i = 0; i < x.size(); ++i) {
        const float got = out[(i + shift) % 17], one = expF32(x[i]);
        if (std::isnan(x[i])) {
          QVERIFY(std::isnan(got) && std::isnan(one));
          continue;
        }
        QCOMPARE(bits(got), bits(want[i]));
        QCOMPARE(bits(one), bits(want[i]));
      }
    }
  }

  // The only two float32 inputs (of all 2^32, searched exhaustively) where computing r as the
  // rounded z minus k instead of one fused x·32/ln 2 − k changes the result; glibc 2.36's expf on
  // an FMA CPU gives the values below (the unfused reduction gives 0x1.f93e36p+46 and
  // 0x1.f45324p-92), at every lane of the bulk kernel.
  void fusedReduction() {
    const std::vector<float> x = {0x1.04845ep+5f, -0x1.f8cbb2p+5f};
    const std::vector<float> want = {0x1.f93e38p+46f, 0x1.f45326p-92f};
    for (size_t i = 0; i < x.size(); ++i) {
      QCOMPARE(bits(expF32(x[i])), bits(want[i]));
      for (int lane = 0; lane < 9; ++lane) {
        std::vector<float> in(9, 0.0f), out(9);
        in[size_t(lane)] = x[i];
        expF32(in.data(), out.data(), 9);
        QCOMPARE(bits(out[size_t(lane)]), bits(want[i]));
      }
    }
  }

  // 2^24 inputs, every 256th bit pattern at a varying offset (both signs, every exponent, the
  // special ranges): the bulk and the scalar function agree, stay within 0.502 ulp of e^x, and equal
  // glibc's expf where this process has it.
  void sweep() {
    QString why;
    const bool compare_libm = libmIsGlibcFma(&why);
    if (!compare_libm) qInfo("no bit comparison with the C library's expf: %s", qPrintable(why));
    constexpr int64_t kBlock = 4096;
    std::vector<float> x(kBlock), y(kBlock);
    int64_t compared = 0;
    for (uint64_t base = 0; base < (1ull << 32); base += kBlock * 256) {
      for (int64_t i = 0; i < kBlock; ++i)
        x[size_t(i)] = std::bit_cast<float>(uint32_t(base + uint64_t(i) * 256 + uint64_t(i % 251)));
      expF32(x.data(), y.data(), kBlock);
      for (int64_t i = 0; i < kBlock; ++i) {
        const float xi = x[size_t(i)], got = y[size_t(i)];
        if (std::isnan(xi)) {
          if (!std::isnan(got)) QFAIL(qPrintable(QStringLiteral("e^NaN = %1").arg(double(got))));
          continue;
        }
        if (bits(expF32(xi)) != bits(got))
          QFAIL(qPrintable(QStringLiteral("x = %1: bulk %2, scalar %3")
                               .arg(double(xi), 0, 'a')
                               .arg(double(got), 0, 'a')
                               .arg(double(expF32(xi)), 0, 'a')));
        if (std::isfinite(got) && got != 0.0f && got > 0x1p-126f && ulpError(xi, got) > 0.502)
          QFAIL(qPrintable(QStringLiteral("x = %1: %2 is %3 ulp from e^x")
                               .arg(double(xi), 0, 'a')
                               .arg(double(got), 0, 'a')
                               .arg(ulpError(xi, got))));
        if (compare_libm && bits(std::exp(xi)) != bits(got))
          QFAIL(qPrintable(QStringLiteral("x = %1: %2, glibc expf %3")
                               .arg(double(xi), 0, 'a')
                               .arg(double(got), 0, 'a')
                               .arg(double(std::exp(xi)), 0, 'a')));
        ++compared;
      }
    }
    QVERIFY(compared > 16000000);
  }

  // float64 by hand. 0 and any |x| < 2^−54: 1 + x rounds to 1 (tiny x); −∞ → +0; +∞ → +∞; NaN stays
  // NaN; 710 > ln(max double) = 709.78 → +∞; −746 < ln 2^−1075 = −745.13 → +0; 1 → e rounded,
  // 0x1.5bf0a8b145769p+1 (e = 2.71828182845904523536…, the nearest float64); −745 lies between
  // ln 2^−1075 and ln 2^−1074 = −744.44, e^−745 = 2^−1074 · 0.99 → the smallest subnormal 2^−1074.
  void specialValues64() {
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> x = {0.0,   -0.0,   0x1p-60, -inf,  inf, std::numeric_limits<double>::quiet_NaN(),
                                   710.0, -746.0, 1.0,     -745.0};
    const std::vector<double> want = {1.0, 1.0, 1.0, 0.0, inf, 0.0, inf, 0.0, 0x1.5bf0a8b145769p+1, 0x1p-1074};
    for (int shift = 0; shift < 5; ++shift) {
      std::vector<double> in(13, 1.0), out(13);
      for (size_t i = 0; i < x.size(); ++i) in[(i + size_t(shift)) % 13] = x[i];
      expF64(in.data(), out.data(), 13);
      for (size_t i = 0; i < x.size(); ++i) {
        const double got = out[(i + size_t(shift)) % 13], one = expF64(x[i]);
        if (std::isnan(x[i])) {
          QVERIFY(std::isnan(got) && std::isnan(one));
          continue;
        }
        QCOMPARE(std::bit_cast<uint64_t>(got), std::bit_cast<uint64_t>(want[i]));
        QCOMPARE(std::bit_cast<uint64_t>(one), std::bit_cast<uint64_t>(want[i]));
      }
    }
  }

  // 2^22 float64 inputs: half uniform over [−760, 720] (every path: main, 512 ≤ |x| < 1024 in both
  // directions, subnormal results, overflow), half random bit patterns; and every 1024th float32
  // bit pattern as a float64 (the softmax's arguments are float32 differences). Bulk = scalar,
  // within 0.509 ulp of e^x in long double for normal results, and glibc's exp where present.
  void sweep64() {
    QString why;
    const bool compare_libm = libmIsGlibcFma(&why);
    if (!compare_libm) qInfo("no bit comparison with the C library's exp: %s", qPrintable(why));
    std::mt19937_64 gen(20261208);
    std::uniform_real_distribution<double> uniform(-760.0, 720.0);
    constexpr int64_t kBlock = 4096;
    std::vector<double> x(kBlock), y(kBlock);
    auto check = [&]() {
      expF64(x.data(), y.data(), kBlock);
      for (int64_t i = 0; i < kBlock; ++i) {
        const double xi = x[size_t(i)], got = y[size_t(i)];
        if (std::isnan(xi)) {
          if (!std::isnan(got)) QFAIL("e^NaN is not NaN");
          continue;
        }
        if (std::bit_cast<uint64_t>(expF64(xi)) != std::bit_cast<uint64_t>(got))
          QFAIL(qPrintable(QStringLiteral("x = %1: bulk and scalar differ").arg(xi, 0, 'a')));
        if (std::isfinite(got) && got >= 0x1p-1022) {
          const long double want = std::exp(static_cast<long double>(xi));
          int e = 0;
          std::frexp(got, &e);
          const long double err = std::fabs(static_cast<long double>(got) - want) / std::ldexp(1.0L, e - 53);
          if (err > 0.509L) QFAIL(qPrintable(QStringLiteral("x = %1: %2 ulp").arg(xi, 0, 'a').arg(double(err))));
        }
        if (compare_libm && std::bit_cast<uint64_t>(std::exp(xi)) != std::bit_cast<uint64_t>(got))
          QFAIL(qPrintable(
              QStringLiteral("x = %1: %2, glibc exp %3").arg(xi, 0, 'a').arg(got, 0, 'a').arg(std::exp(xi), 0, 'a')));
      }
    };
    for (int64_t block = 0; block < (1 << 22) / kBlock; ++block) {
      for (int64_t i = 0; i < kBlock; ++i)
        x[size_t(i)] = (i & 1) ? uniform(gen) : std::bit_cast<double>(static_cast<uint64_t>(gen()));
      check();
    }
    for (uint64_t base = 0; base < (1ull << 32); base += kBlock * 1024) {
      for (int64_t i = 0; i < kBlock; ++i)
        x[size_t(i)] = std::bit_cast<float>(uint32_t(base + uint64_t(i) * 1024 + uint64_t(i % 1021)));
      check();
    }
  }

  // In place (y = x), at lengths around the 8-wide blocks.
  void inPlace() {
    for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 100}) {
      std::vector<float> v(static_cast<size_t>(n)), want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        v[size_t(i)] = float(i) * 0.37f - 11.0f;
        want[size_t(i)] = expF32(v[size_t(i)]);
      }
      expF32(v.data(), v.data(), n);
      for (int64_t i = 0; i < n; ++i) QCOMPARE(bits(v[size_t(i)]), bits(want[size_t(i)]));
    }
  }
};

QTEST_GUILESS_MAIN(TestExp)
#include "test_exp.moc"

// The float32 training GEMM (training/dense.h matmulF32) at the CPU level the process runs (CTest
// runs this suite at each level: FP8LAB_CPU=baseline|avx2|avx512): every element must equal the
// definition written here — C[i,j] = (((0 + a[i,0]·b[0,j]) + a[i,1]·b[1,j]) + …) in float32, each
// product and each sum rounded once (no fused multiply-add), k ascending — bit for bit, whatever the
// shape, the thread count, or the register tile of the vector kernels. The same for the product with
// a transposed A (matmulF32At), and the transpose itself is a bit-exact copy.
#include <QtTest>

#include "common/cpu_level.h"
#include "cpu_level_skip.h"
#include "training/dense.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace fp8lab;

namespace {

std::vector<float> values(int64_t rows, int64_t cols, uint64_t seed, bool specials) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    // magnitudes over 2^-20 .. 2^20 and both signs: the sums round at many different exponents
    const double u = double(s >> 11) / double(1ull << 53);
    const int e = int(s % 41) - 20;
    x = static_cast<float>((u * 2 - 1) * std::ldexp(1.0, e));
  }
  if (specials && v.size() > 8) {
    v[1] = -0.0f;
    v[3] = 0.0f;
    v[5] = std::numeric_limits<float>::infinity();
    v[7] = std::numeric_limits<float>::quiet_NaN();
  }
  return v;
}

/// The definition, one element at a time. `volatile` keeps each product and each sum a separate
/// float32 rounding whatever the compiler would otherwise do.
std::vector<float> reference(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>* c0,
                             int64_t m, int64_t k, int64_t n) {
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      volatile float acc = c0 ? (*c0)[size_t(i * n + j)] : 0.0f;
      for (int64_t p = 0; p < k; ++p) {
        volatile float prod = a[size_t(i * k + p)] * b[size_t(p * n + j)];
        acc = acc + prod;
      }
      c[size_t(i * n + j)] = acc;
    }
  return c;
}

bool sameBits(const std::vector<float>& x, const std::vector<float>& y, QString* where, int64_t n) {
  for (size_t i = 0; i < x.size(); ++i)
    if (std::bit_cast<uint32_t>(x[i]) != std::bit_cast<uint32_t>(y[i])) {
      *where = QStringLiteral("C[%1, %2]: %3 (0x%4) instead of %5 (0x%6)")
                   .arg(int64_t(i) / n)
                   .arg(int64_t(i) % n)
                   .arg(double(y[i]), 0, 'g', 9)
                   .arg(std::bit_cast<uint32_t>(y[i]), 8, 16, QLatin1Char('0'))
                   .arg(double(x[i]), 0, 'g', 9)
                   .arg(std::bit_cast<uint32_t>(x[i]), 8, 16, QLatin1Char('0'));
      return false;
    }
  return true;
}

} // namespace

class TestDenseKernels : public QObject {
  Q_OBJECT

  /// Every shape of the grid, accumulating or not, on 1 and 2 threads, against the reference:
  /// matmulF32, or matmulF32At on A's transposed copy.
  void checkShapes(std::initializer_list<int64_t> ms, std::initializer_list<int64_t> ks,
                   std::initializer_list<int64_t> ns, bool transposed, uint64_t seed) {
    for (int64_t m : ms)
      for (int64_t k : ks)
        for (int64_t n : ns)
          for (bool accumulate : {false, true}) {
            const std::vector<float> a = values(m, k, seed++, m * k > 16), b = values(k, n, seed++, false);
            const std::vector<float> c0 = values(m, n, seed++, false);
            std::vector<float> at(a.size());
            for (int64_t i = 0; i < m; ++i)
              for (int64_t p = 0; p < k; ++p) at[size_t(p * m + i)] = a[size_t(i * k + p)];
            const std::vector<float> want = reference(a, b, accumulate ? &c0 : nullptr, m, k, n);
            for (int threads : {1, 2}) {
              std::vector<float> got = c0;
              if (transposed)
                matmulF32At(at.data(), b.data(), got.data(), m, k, n, threads, accumulate);
              else
                matmulF32(a.data(), b.data(), got.data(), m, k, n, threads, accumulate);
              QString where;
              if (!sameBits(want, got, &where, n))
                QFAIL(qPrintable(QStringLiteral("%1m %2 k %3 n %4 accumulate %5 threads %6: %7")
                                     .arg(transposed ? QStringLiteral("Aᵀ: ") : QString())
                                     .arg(m)
                                     .arg(k)
                                     .arg(n)
                                     .arg(accumulate)
                                     .arg(threads)
                                     .arg(where)));
            }
          }
  }

private Q_SLOTS:
  void initTestCase() {
    test::skipWhenCpuLevelRefused();
    qInfo("CPU level %s", cpuLevelDescription().c_str());
  }

  // By hand: +0 + (−1 · 0) = +0 + −0 = +0 (IEEE 754 §6.3: a sum of opposite-signed zeros is +0 under
  // round-to-nearest), so a product of −0 alone still gives +0; 2^24 + 1 + 1 = 2^24 in float32 step
  // by step (each +1 is a tie that rounds to the even 2^24), where a fused or reordered sum would
  // give 2^24 + 2.
  void byHand() {
    std::vector<float> a = {-1.0f}, b = {0.0f}, c(1);
    matmulF32(a.data(), b.data(), c.data(), 1, 1, 1, 1);
    QCOMPARE(std::bit_cast<uint32_t>(c[0]), 0u);
    a = {16777216.0f, 1.0f, 1.0f};
    b = {1.0f, 1.0f, 1.0f};
    matmulF32(a.data(), b.data(), c.data(), 1, 3, 1, 1);
    QCOMPARE(c[0], 16777216.0f);
  }

  // m covers every row count of the vector kernels' last tile (1 … 8 rows), k one and several chunks
  // of K (the kernels store partial sums to C every 256 terms and resume from them), n whole and
  // partial 16- and 32-column panels.
  void shapesAndThreads() {
    checkShapes({1, 3, 4, 5, 6, 7, 8, 9, 13, 64, 130}, {0, 1, 2, 17, 64, 256, 300, 600},
                {1, 7, 15, 16, 17, 31, 32, 33, 64, 100, 257}, false, 1);
  }

  // matmulF32At reads A from its transpose: the same definition over A[i, p] = at[p, i], so the
  // same bits as the reference of the un-transposed A.
  void transposedA() { checkShapes({1, 4, 5, 6, 9, 64, 130}, {1, 17, 300, 1024}, {1, 16, 33, 257}, true, 1000); }

  // out[j, i] = in[i, j] for every element, bit for bit (NaN payloads and −0 included), for shapes
  // with and without whole 8 × 8 and 32 × 32 blocks.
  void transpose() {
    uint64_t seed = 2000;
    for (int64_t m : {1, 7, 8, 9, 31, 32, 33, 64, 100})
      for (int64_t n : {1, 8, 15, 16, 40, 64, 257}) {
        std::vector<float> in = values(m, n, seed++, true);
        if (in.size() > 2) in[2] = std::bit_cast<float>(0xFFC00001u);
        std::vector<float> out(in.size(), 1.0f);
        transposeF32(in.data(), out.data(), m, n);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            if (std::bit_cast<uint32_t>(out[size_t(j * m + i)]) != std::bit_cast<uint32_t>(in[size_t(i * n + j)]))
              QFAIL(qPrintable(QStringLiteral("%1 × %2: out[%3, %4] is not in[%4, %3]").arg(m).arg(n).arg(j).arg(i)));
      }
  }
};

QTEST_GUILESS_MAIN(TestDenseKernels)
#include "test_dense_kernels.moc"

// Tests for core/gemm: the CPU FP8 GEMM models, the vector kernels (AVX512-BF16, AVX512 FMA, AVX2
// FMA) against the portable one, the three-result experiment, the seeded generator and bad
// inputs. Operands are built directly (codes + scales), so these tests do not depend on
// core/scaling. Expected values come from integer arithmetic in the test, hand derivations in
// comments, or published constants.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <tuple>

#include "compare_bits.h"
#include "cpu_level_skip.h"
#include "gemm/gemm.h"
#include "gemm/error_split.h"
#include "gemm/random_matrix.h"

using namespace fp8lab;

namespace {

/// A tensor whose elements are the given exactly representable values, with the given
/// block shape and dequant scales (block grid row-major).
QuantizedTensor makeTensor(const std::vector<double>& values, int64_t rows, int64_t cols, const Format& f,
                           ScaleBlock block, std::vector<float> scales) {
  QuantizedTensor q;
  q.rows = rows;
  q.cols = cols;
  q.format = &f;
  q.block = block;
  q.codes.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    q.codes[i] = static_cast<uint8_t>(f.encode(values[i]));
    if (f.decode(q.codes[i]) != values[i] && !std::isnan(values[i]))
      throw std::runtime_error("value not exact in format");
  }
  q.dequant_scales = std::move(scales);
  return q;
}

/// Per-tensor E4M3 quantization done in the test (scale = amax/448, RNE via Format::encode).
QuantizedTensor quantizePerTensor(const std::vector<float>& x, int64_t rows, int64_t cols, const Format& f,
                                  ScaleBlock block = {0, 0}) {
  if (block.rows == 0) block = {rows, cols};
  QuantizedTensor q;
  q.rows = rows;
  q.cols = cols;
  q.format = &f;
  q.block = block;
  const int64_t br = q.blockRows(), bc = q.blockCols();
  std::vector<double> amax(static_cast<size_t>(br * bc), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double& a = amax[static_cast<size_t>((i / block.rows) * bc + j / block.cols)];
      a = std::max(a, std::fabs(static_cast<double>(x[static_cast<size_t>(i * cols + j)])));
    }
  for (double a : amax) q.dequant_scales.push_back(a > 0 ? static_cast<float>(a / f.maxFinite()) : 1.0f);
  q.codes.resize(x.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      q.codes[static_cast<size_t>(i * cols + j)] = static_cast<uint8_t>(
          f.encode(static_cast<double>(x[static_cast<size_t>(i * cols + j)]) / q.dequantScaleAt(i, j)));
  return q;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b, QString* where = nullptr) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    uint32_t x, y;
    std::memcpy(&x, &a[i], 4);
    std::memcpy(&y, &b[i], 4);
    if (x != y && !(std::isnan(a[i]) && std::isnan(b[i]))) {
      if (where)
        *where = QStringLiteral("index %1: %2 vs %3")
                     .arg(i)
                     .arg(static_cast<double>(a[i]), 0, 'g', 17)
                     .arg(static_cast<double>(b[i]), 0, 'g', 17);
      return false;
    }
  }
  return true;
}

const std::vector<Accumulation> kModels = {Accumulation::Exact, Accumulation::FP32, Accumulation::SplitFP32,
                                           Accumulation::FastAccum};
const std::vector<OutputType> kOutputs = {OutputType::FP32, OutputType::BF16, OutputType::FP16, OutputType::E4M3FN,
                                          OutputType::E5M2};

} // namespace

class TestGemm : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void initTestCase() {
    test::skipWhenCpuLevelRefused();
    qInfo("CPU level %s; CPU backend: %s", cpuLevelDescription().c_str(), makeCpuGemmBackend()->device().c_str());
  }
  void idealGemmIsTheSequentialDoubleSum();
  void fp8OutputClippingIsCounted();
  void exactByConstruction_data();
  void exactByConstruction();
  void blockScalesAppliedAtPromotionWithFma();
  void splitPromotionWindowsHandDerived_data();
  void splitPromotionWindowsHandDerived();
  void fastAccumulationErrorExceedsSplit();
  void vectorKernelsEqualPortable_data();
  void vectorKernelsEqualPortable();
  void threadCountDoesNotChangeResult();
  void experimentSplitsErrors();
  void fp8OutputScaleAndAmax();
  void nanAndInfInputsCountedNotFatal();
  void vectorKernelsNaNCodesAmongFinite();
  void e5m2TimesE5m2Flagged();
  void badInputs();
  void randomMatrixReproducible();
};

// ---- exact by construction ----------------------------------------------------------------------
// Elements are integers in [-3, 3] (exact in every format used: E4M3FN, E5M2, FNUZ, E2M3, E3M2,
// E2M1) and all scales are powers of two. With K = 300 every partial and final sum is an
// integer of magnitude ≤ 9·300 = 2700 < 2^12 times a power of two, so every model — double,
// FP32 in any order, split, and the 14-bit fast-accumulation model (its quantum 2^(E−13) ≤ 1
// while sums stay below 2^13) — is exact and must return the same bits. The expected D is
// computed here with int64 arithmetic and the power-of-two scales; the output casts use the
// format library (tested against the CUDA / ml_dtypes oracles in test_formats).
void TestGemm::exactByConstruction_data() {
  QTest::addColumn<QString>("aFormat");
  QTest::addColumn<QString>("bFormat");
  QTest::addColumn<int>("scaling"); // 0 per-tensor, 1 per-row/col, 2 1x128 & 128x128, 3 MX-32
  const QStringList pairs = {QStringLiteral("E4M3FN/E4M3FN"),     QStringLiteral("E4M3FN/E5M2"),
                             QStringLiteral("E5M2/E4M3FN"),       QStringLiteral("E5M2/E5M2"),
                             QStringLiteral("E4M3FNUZ/E5M2FNUZ"), QStringLiteral("E2M3/E3M2"),
                             QStringLiteral("E2M1/E2M1")};
  for (const QString& p : pairs)
    for (int s = 0; s < 4; ++s) {
      const QStringList f = p.split(QLatin1Char('/'));
      QTest::addRow("%s x %s, scaling %d", qPrintable(f[0]), qPrintable(f[1]), s) << f[0] << f[1] << s;
    }
}

void TestGemm::exactByConstruction() {
  QFETCH(QString, aFormat);
  QFETCH(QString, bFormat);
  QFETCH(int, scaling);
  const Format& fa = *Format::byName(aFormat.toStdString());
  const Format& fb = *Format::byName(bFormat.toStdString());
  const int64_t M = 37, N = 45, K = 300; // partial 8-row / 32-column tiles, partial 128-blocks, odd pairs
  std::vector<double> av(static_cast<size_t>(M * K)), bv(static_cast<size_t>(K * N));
  for (int64_t i = 0; i < M * K; ++i)
    av[static_cast<size_t>(i)] = static_cast<double>(static_cast<int>(splitmix64(static_cast<uint64_t>(i)) % 7) - 3);
  for (int64_t i = 0; i < K * N; ++i)
    bv[static_cast<size_t>(i)] =
        static_cast<double>(static_cast<int>(splitmix64(static_cast<uint64_t>(i) + 99991) % 7) - 3);
  ScaleBlock ba, bb;
  switch (scaling) {
  case 0:
    ba = {M, K};
    bb = {K, N};
    break;
  case 1:
    ba = {1, K};
    bb = {K, 1};
    break;
  case 2:
    ba = {1, 128};
    bb = {128, 128};
    break;
  default:
    ba = {1, 32};
    bb = {32, 1};
    break;
  }
  auto pow2Scales = [](int64_t count, int salt) {
    std::vector<float> s;
    for (int64_t i = 0; i < count; ++i)
      s.push_back(std::ldexp(1.0f, static_cast<int>((i * 7 + salt) % 5) - 2)); // 2^-2..2^2
    return s;
  };
  QuantizedTensor a = makeTensor(av, M, K, fa, ba, {});
  QuantizedTensor b = makeTensor(bv, K, N, fb, bb, {});
  a.dequant_scales = pow2Scales(a.blockRows() * a.blockCols(), 1);
  b.dequant_scales = pow2Scales(b.blockRows() * b.blockCols(), 3);
  // expected D in exact arithmetic: Σ_k a·sa(i,k) · b·sb(k,j); all terms are dyadic with small
  // numerators, so double holds them exactly.
  std::vector<double> expected(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += av[static_cast<size_t>(i * K + k)] * a.dequantScaleAt(i, k) * bv[static_cast<size_t>(k * N + j)] *
             b.dequantScaleAt(k, j);
      expected[static_cast<size_t>(i * N + j)] = s;
    }
  auto backend = makeCpuGemmBackend();
  for (OutputType ot : kOutputs) {
    std::vector<float> want(expected.size());
    const float scale_d = 0.25f;
    for (size_t i = 0; i < expected.size(); ++i) {
      switch (ot) {
      case OutputType::FP32:
        want[i] = static_cast<float>(expected[i]);
        break;
      case OutputType::BF16:
        want[i] = static_cast<float>(Format::BF16().decode(Format::BF16().encode(expected[i])));
        break;
      case OutputType::FP16:
        want[i] = static_cast<float>(Format::FP16().decode(Format::FP16().encode(expected[i])));
        break;
      case OutputType::E4M3FN:
        want[i] = static_cast<float>(Format::E4M3FN().decode(Format::E4M3FN().encode(expected[i] * scale_d)) / scale_d);
        break;
      case OutputType::E5M2:
        want[i] = static_cast<float>(Format::E5M2().decode(Format::E5M2().encode(expected[i] * scale_d)) / scale_d);
        break;
      }
    }
    for (Accumulation acc : kModels)
      for (bool promote : {true, false}) {
        if (!promote && acc != Accumulation::FastAccum) continue;
        GemmOptions o;
        o.accumulation = acc;
        o.fast_accum_promotes = promote;
        o.output = ot;
        // scale_D applies to FP8 outputs only (cuBLASLt D_SCALE); other outputs refuse one ≠ 1.
        o.output_quant_scale = (ot == OutputType::E4M3FN || ot == OutputType::E5M2) ? scale_d : 1.0f;
        o.threads = 2;
        const GemmOutput out = backend->run(a, b, o);
        QString where;
        QVERIFY2(sameBits(out.d, want, &where),
                 qPrintable(QStringLiteral("%1 accumulation, %2 output: %3")
                                .arg(QString::fromLatin1(toString(acc)), QString::fromLatin1(toString(ot)), where)));
      }
  }
}

// ---- block scales at promotion ------------------------------------------------------------------
// K = 256, A has 1x128 scales, B per-tensor scale 1. Row 0 of A / column 0 of B:
//   window 0 (k < 128): a[0] = −1, b[0] = 1, scale sa0 = 1     → partial −1, acc = −1
//   window 1 (k ≥ 128): a[128] = 1,    b[128] = 1    → 1
//                       a[129] = 2^-6, b[129] = 2^-6 → 2^-12   partial p1 = 1 + 2^-12
//                       sa1 = 1 + 2^-12 (a float32 scale)
// DeepGEMM's promotion acc = fma(sa1·sb, p1, acc) = round(−1 + (1 + 2^-12)²)
//   = round(2^-11 + 2^-24) = 2^-11 + 2^-24   (exact: 14 significant bits).
// Had the product been rounded first, fl((1+2^-12)²) = fl(1 + 2^-11 + 2^-24) = 1 + 2^-11 (tie to
// even at 1's ulp 2^-23), giving 2^-11: the test tells the two apart. Scaling the products
// instead (no promotion) also gives 2^-11 + 2^-24 here only by accident of exactness, so a
// second column checks the window structure: b[0] = 0 there, so D = p1·sa1 rounded once.
void TestGemm::blockScalesAppliedAtPromotionWithFma() {
  const int64_t M = 1, N = 2, K = 256;
  std::vector<double> av(K, 0.0), bv(static_cast<size_t>(K * N), 0.0);
  av[0] = -1;
  av[128] = 1;
  av[129] = std::ldexp(1.0, -6);
  bv[0 * N + 0] = 1;
  bv[128 * N + 0] = 1;
  bv[129 * N + 0] = std::ldexp(1.0, -6);
  bv[128 * N + 1] = 1; // column 1: window 1 only, p1 = 1 → D = sa1 = 1 + 2^-12
  const float sa1 = 1.0f + std::ldexp(1.0f, -12);
  const QuantizedTensor a = makeTensor(av, M, K, Format::E4M3FN(), {1, 128}, {1.0f, sa1});
  const QuantizedTensor b = makeTensor(bv, K, N, Format::E4M3FN(), {K, N}, {1.0f});
  auto backend = makeCpuGemmBackend();
  const float want0 = std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24);
  for (Accumulation acc : {Accumulation::FP32, Accumulation::SplitFP32, Accumulation::FastAccum})
    for (CpuKernel kern : {CpuKernel::Portable, CpuKernel::Avx512Bf16, CpuKernel::Avx512Fma, CpuKernel::Avx2Fma}) {
      GemmOptions o;
      o.accumulation = acc;
      o.cpu_kernel = kern;
      const GemmOutput out = backend->run(a, b, o);
      QCOMPARE_BITS(out.d[0], want0);
      QCOMPARE_BITS(out.d[1], sa1);
    }
  // The Exact model in double: −1 + (1 + 2^-12)² = 2^-11 + 2^-24 exactly.
  QCOMPARE_BITS(quantizedExactGemm(a, b)[0], std::ldexp(1.0, -11) + std::ldexp(1.0, -24));
}

// ---- where the split-FP32 promotion windows fall ----------------------------------------------
// E5M2 operands (4096 = 2^12: exponent field 27, exact; 1 exact), K = 256, per-tensor scales 1.
// Every row of A and every column of B is a = b = 4096 at k = 0 and a = b = 1 at k = 127, 128,
// 129, zero elsewhere, so every output sums the exact products
//   p_0 = 2^24,  p_127 = p_128 = p_129 = 1,  p_k = 0 otherwise        (exact sum 2^24 + 3).
// float32 spacing in [2^24, 2^25) is 2: 2^24 + 1 is the tie between 2^24 (even significand) and
// 2^24 + 2 (odd) → RNE gives 2^24; 2^24 + 3 is the tie between 2^24 + 2 (odd) and 2^24 + 4
// (even) → 2^24 + 4; 2^24 + 2 is exact. A fresh window partial holds the small products (1, 2,
// 3) exactly until it is promoted, while a running sum at 2^24 loses each +1 on its own.
// No scale varies along K, so a promotion is acc = acc + partial (docs/gemm.md) and D = 1·acc.
//   FP32 (one window [0, 256), whatever N_C): 2^24 + 1 → 2^24 three times      → D = 2^24
//   Split N_C = 128: [0,128) = 2^24 (k = 127 lost), [128,256) = 1 + 1 = 2,
//                    acc = 2^24 + 2 (exact)                                    → D = 2^24 + 2
//   Split N_C = 127: [0,127) = 2^24, [127,254) = 3 (k = 127, 128, 129), [254,256) = 0,
//                    acc = 2^24 + 3 → tie → 2^24 + 4                           → D = 2^24 + 4
//   Split N_C = 129: [0,129) = 2^24 (k = 127 and 128 lost), [129,256) = 1,
//                    acc = 2^24 + 1 → tie → 2^24                               → D = 2^24
// Misplaced windows give another row's value: windows of N_C + 1 turn 128 into 129's 2^24 and
// 127 into 128's 2^24 + 2; windows of 2·N_C (256, 254, 258) give 2^24 for 128 and 127. The
// Exact model (double) keeps 2^24 + 3. M = 13, N = 33 cross the AVX512 FMA kernel's 12-row and
// 32-column panels and the AVX2 one's 6-row and 16-column panels, so edge tiles are checked too.
// Each kernel is forced in turn; the vector kernels must actually run where the CPU level has them, except that the
// BF16 pair kernel declines N_C = 127 (a window starts at the odd k = 127) and hands over to the portable kernel.
void TestGemm::splitPromotionWindowsHandDerived_data() {
  QTest::addColumn<int>("accumulation");
  QTest::addColumn<int>("interval");
  QTest::addColumn<float>("expected");
  const float two24 = std::ldexp(1.0f, 24);
  for (int nc : {128, 127, 129}) QTest::addRow("FP32, N_C %d", nc) << int(Accumulation::FP32) << nc << two24;
  QTest::addRow("SplitFP32, N_C 128") << int(Accumulation::SplitFP32) << 128 << two24 + 2.0f;
  QTest::addRow("SplitFP32, N_C 127") << int(Accumulation::SplitFP32) << 127 << two24 + 4.0f;
  QTest::addRow("SplitFP32, N_C 129") << int(Accumulation::SplitFP32) << 129 << two24;
}

void TestGemm::splitPromotionWindowsHandDerived() {
  QFETCH(int, accumulation);
  QFETCH(int, interval);
  QFETCH(float, expected);
  const int64_t M = 13, N = 33, K = 256;
  std::vector<double> av(static_cast<size_t>(M * K), 0.0), bv(static_cast<size_t>(K * N), 0.0);
  for (int64_t i = 0; i < M; ++i) {
    av[static_cast<size_t>(i * K)] = 4096;
    for (int64_t k : {127, 128, 129}) av[static_cast<size_t>(i * K + k)] = 1;
  }
  for (int64_t j = 0; j < N; ++j) {
    bv[static_cast<size_t>(j)] = 4096;
    for (int64_t k : {127, 128, 129}) bv[static_cast<size_t>(k * N + j)] = 1;
  }
  const QuantizedTensor a = makeTensor(av, M, K, Format::E5M2(), {M, K}, {1.0f});
  const QuantizedTensor b = makeTensor(bv, K, N, Format::E5M2(), {K, N}, {1.0f});
  QCOMPARE_BITS(quantizedExactGemm(a, b)[0], std::ldexp(1.0, 24) + 3.0);
  auto backend = makeCpuGemmBackend();
  const std::string device = backend->device();
  for (auto [kernel, name, has] :
       {std::tuple{CpuKernel::Portable, "portable", true},
        std::tuple{CpuKernel::Avx512Fma, "avx512-fma", device.find("AVX512-FMA") != std::string::npos},
        std::tuple{CpuKernel::Avx512Bf16, "avx512-bf16", device.find("AVX512-BF16") != std::string::npos},
        std::tuple{CpuKernel::Avx2Fma, "avx2-fma", device.find("AVX2-FMA") != std::string::npos}}) {
    GemmOptions o;
    o.accumulation = static_cast<Accumulation>(accumulation);
    o.promotion_interval = interval;
    o.cpu_kernel = kernel;
    const GemmOutput out = backend->run(a, b, o);
    const bool odd_window = o.accumulation == Accumulation::SplitFP32 && interval % 2 != 0;
    const char* ran = !has || (kernel == CpuKernel::Avx512Bf16 && odd_window) ? "portable" : name;
    QVERIFY2(out.algorithm.find(ran) != std::string::npos,
             qPrintable(QStringLiteral("asked for %1, ran %2")
                            .arg(QString::fromLatin1(name), QString::fromStdString(out.algorithm))));
    if (!has) qInfo("%s kernel not on this CPU: checked the portable fallback", name);
    QCOMPARE(out.d.size(), size_t(M * N));
    for (size_t i = 0; i < out.d.size(); ++i) QCOMPARE_BITS(out.d[i], expected);
  }
}

// ---- fast accumulation vs split -----------------------------------------------------------------
// Random N(0,1) inputs, K = 4096, per-tensor E4M3 (as in DeepSeek-V3 §3.3.2's experiment).
// Split model: every window sum and every promotion rounds to float32 (unit roundoff
// u = 2^-24 ≈ 6e-8), so its relative Frobenius error against the exact sum is ~u·sqrt(terms
// per output) / sqrt(mean) … in practice 1e-8 .. 1e-6.
// Fast model (14 bits): every group of 32 products is aligned to its largest exponent E and
// truncated to multiples of q = 2^(E−13). With products of unit-variance values the group max
// is ~4..16 (E ≈ 2..4) and the running window sum ~sqrt(128) ≈ 11, so q ≈ 2^-10.5; each of the
// ~33 truncated terms errs by up to q (uniform, sign of the term), ≈ sqrt(33/3)·q ≈ 2.3e-3 per
// group, ×sqrt(128 groups) ≈ 2.6e-2 per output, against |D| ~ sqrt(4096) = 64 → ~4e-4 relative.
// The order of magnitude is therefore 1e-4 (pinned to [3e-5, 1e-3]); > 100× the split model.
// Without promotion the running sum grows to ~64 (E ≈ 6), q grows ×4–8, and so does the error.
void TestGemm::fastAccumulationErrorExceedsSplit() {
  const int64_t M = 48, N = 40, K = 4096;
  const std::vector<float> x = randomMatrix(M, K, 11), y = randomMatrix(K, N, 12);
  const QuantizedTensor a = quantizePerTensor(x, M, K, Format::E4M3FN()),
                        b = quantizePerTensor(y, K, N, Format::E4M3FN());
  auto run = [&](Accumulation acc, bool promote) {
    GemmOptions o;
    o.accumulation = acc;
    o.fast_accum_promotes = promote;
    return runGemmExperiment(nullptr, nullptr, a, b, o).accumulation.rel_fro;
  };
  const double split = run(Accumulation::SplitFP32, true);
  const double fast = run(Accumulation::FastAccum, true);
  const double fastNoPromo = run(Accumulation::FastAccum, false);
  qInfo("relative Frobenius accumulation error: split %.3g, fast (promoted) %.3g, fast (no promotion) %.3g", split,
        fast, fastNoPromo);
  QVERIFY(split > 1e-9 && split < 1e-6);
  QVERIFY(fast > 3e-5 && fast < 1e-3);
  QVERIFY(fast > 100 * split);
  QVERIFY(fastNoPromo > 2 * fast);
}

// ---- dispatched kernel == portable kernel -------------------------------------------------------
void TestGemm::vectorKernelsEqualPortable_data() {
  QTest::addColumn<QString>("aFormat");
  QTest::addColumn<QString>("bFormat");
  QTest::addColumn<int>("scaling");
  QTest::addColumn<int>("m");
  QTest::addColumn<int>("n");
  QTest::addColumn<int>("k");
  QTest::newRow("E4M3 per-tensor 131x97x1000")
      << QStringLiteral("E4M3FN") << QStringLiteral("E4M3FN") << 0 << 131 << 97 << 1000;
  QTest::newRow("E4M3xE5M2 per-row/col 64x64x777")
      << QStringLiteral("E4M3FN") << QStringLiteral("E5M2") << 1 << 64 << 64 << 777;
  QTest::newRow("E5M2xE4M3 1x128/128x128 130x300x520")
      << QStringLiteral("E5M2") << QStringLiteral("E4M3FN") << 2 << 130 << 300 << 520;
  // Past the AVX2 FMA kernel's 240-row jobs and the 256-column blocks of both FMA kernels.
  QTest::newRow("E4M3xE5M2 per-tensor 250x300x300")
      << QStringLiteral("E4M3FN") << QStringLiteral("E5M2") << 0 << 250 << 300 << 300;
  QTest::newRow("E4M3 MX-32 9x33x96") << QStringLiteral("E4M3FN") << QStringLiteral("E4M3FN") << 3 << 9 << 33 << 96;
  QTest::newRow("E2M1 per-tensor 17x40x1501")
      << QStringLiteral("E2M1") << QStringLiteral("E2M1") << 0 << 17 << 40 << 1501;
}

void TestGemm::vectorKernelsEqualPortable() {
  QFETCH(QString, aFormat);
  QFETCH(QString, bFormat);
  QFETCH(int, scaling);
  QFETCH(int, m);
  QFETCH(int, n);
  QFETCH(int, k);
  const std::string device = makeCpuGemmBackend()->device();
  if (device.find("AVX512-BF16") == std::string::npos && device.find("AVX512-FMA") == std::string::npos &&
      device.find("AVX2-FMA") == std::string::npos)
    QSKIP("no vector kernel at this CPU level: only the portable kernel runs here");
  const std::vector<float> x = randomMatrix(m, k, 5), y = randomMatrix(k, n, 6);
  ScaleBlock ba{m, k}, bb{k, n};
  if (scaling == 1) {
    ba = {1, k};
    bb = {k, 1};
  }
  if (scaling == 2) {
    ba = {1, 128};
    bb = {128, 128};
  }
  if (scaling == 3) {
    ba = {1, 32};
    bb = {32, 1};
  }
  const QuantizedTensor a = quantizePerTensor(x, m, k, *Format::byName(aFormat.toStdString()), ba);
  const QuantizedTensor b = quantizePerTensor(y, k, n, *Format::byName(bFormat.toStdString()), bb);
  auto backend = makeCpuGemmBackend();
  for (Accumulation acc : {Accumulation::FP32, Accumulation::SplitFP32})
    for (int interval : {128, 64, 256, 127}) {
      GemmOptions o;
      o.accumulation = acc;
      o.promotion_interval = interval;
      o.cpu_kernel = CpuKernel::Portable;
      const GemmOutput p = backend->run(a, b, o);
      for (auto [kernel, name, has] :
           {std::tuple{CpuKernel::Avx512Bf16, "avx512-bf16", device.find("AVX512-BF16") != std::string::npos},
            std::tuple{CpuKernel::Avx512Fma, "avx512-fma", device.find("AVX512-FMA") != std::string::npos},
            std::tuple{CpuKernel::Avx2Fma, "avx2-fma", device.find("AVX2-FMA") != std::string::npos}}) {
        if (!has) continue;
        if (kernel == CpuKernel::Avx512Bf16 && interval == 127) continue; // checked below
        o.cpu_kernel = kernel;
        const GemmOutput f = backend->run(a, b, o);
        QVERIFY2(f.algorithm.find(name) != std::string::npos, f.algorithm.c_str());
        QString where;
        QVERIFY2(sameBits(p.d, f.d, &where),
                 qPrintable(QStringLiteral("%1, %2, N_C %3: %4")
                                .arg(QString::fromLatin1(name), QString::fromLatin1(toString(acc)))
                                .arg(interval)
                                .arg(where)));
      }
    }
  if (device.find("AVX512-BF16") == std::string::npos) return;
  // An odd promotion interval cuts windows at odd k: the BF16 pair kernel declines and says so.
  if (k <= 127 || scaling == 3) return; // no window boundary at 127 (or MX cuts at multiples of 32 first)
  GemmOptions o;
  o.accumulation = Accumulation::SplitFP32;
  o.promotion_interval = 127;
  o.cpu_kernel = CpuKernel::Avx512Bf16;
  const GemmOutput f = backend->run(a, b, o);
  QVERIFY(f.algorithm.find("portable") != std::string::npos);
  QVERIFY(!f.warnings.empty());
}

void TestGemm::threadCountDoesNotChangeResult() {
  const int64_t M = 70, N = 90, K = 640;
  const std::vector<float> x = randomMatrix(M, K, 1), y = randomMatrix(K, N, 2);
  const QuantizedTensor a = quantizePerTensor(x, M, K, Format::E4M3FN(), {1, 128});
  const QuantizedTensor b = quantizePerTensor(y, K, N, Format::E4M3FN(), {128, 128});
  auto backend = makeCpuGemmBackend();
  for (Accumulation acc : kModels) {
    GemmOptions o;
    o.accumulation = acc;
    o.threads = 1;
    const GemmOutput one = backend->run(a, b, o);
    o.threads = 3;
    const GemmOutput three = backend->run(a, b, o);
    QVERIFY2(sameBits(one.d, three.d), toString(acc));
  }
}

// Quantization error ≫ accumulation error for E4M3 per-tensor with split accumulation: E4M3 has
// 3 mantissa bits (relative rounding error ≤ 2^-4 per element, ~2^-4/sqrt(3) rms), so the
// quantized-exact product is off by a few percent of |D|·(1/sqrt(K))… measured ~3.7e-2 relative
// Frobenius for K = 512 normal data; split accumulation adds ~1e-7. The total must equal the
// quantization part to within the accumulation part (triangle inequality on the norms).
void TestGemm::experimentSplitsErrors() {
  const int64_t M = 64, N = 48, K = 512;
  const std::vector<float> x = randomMatrix(M, K, 21), y = randomMatrix(K, N, 22);
  const QuantizedTensor a = quantizePerTensor(x, M, K, Format::E4M3FN()),
                        b = quantizePerTensor(y, K, N, Format::E4M3FN());
  GemmOptions o;
  o.accumulation = Accumulation::SplitFP32;
  const GemmExperimentResult r = runGemmExperiment(x.data(), y.data(), a, b, o);
  QCOMPARE(r.ideal.size(), size_t(M * N));
  QVERIFY(r.quantization.rel_fro > 1e-2 && r.quantization.rel_fro < 1e-1);
  QVERIFY(r.accumulation.rel_fro < 1e-6);
  QVERIFY(std::fabs(r.total.rel_fro - r.quantization.rel_fro) <= r.accumulation.rel_fro * 1.0001 + 1e-12);
  // ideal: spot-check one element against a direct double sum
  double s = 0;
  for (int64_t k = 0; k < K; ++k)
    s +=
        static_cast<double>(x[static_cast<size_t>(3 * K + k)]) * static_cast<double>(y[static_cast<size_t>(k * N + 5)]);
  QCOMPARE(r.ideal[static_cast<size_t>(3 * N + 5)], s);
  QCOMPARE(r.a_stats.elements, M * K);
}

// FP8 output built to hit known codes. A = [[1, 1]], B = [[112],[128]] (exact in E4M3FN:
// 112 = 1.75·2^6, 128 = 2^7), per-tensor scales 1.
// D = 240. amax_D = 240 (before scale_D). With scale_D = 2: 480 > 448 saturates to 448
// (code 0x7E), so d = 448 / 2 = 224. With scale_D = 0.5: 120 → code 0x6F (120 = 1.875·2^6),
// d = 240.
void TestGemm::fp8OutputScaleAndAmax() {
  const QuantizedTensor a = makeTensor({1, 1}, 1, 2, Format::E4M3FN(), {1, 2}, {1.0f});
  const QuantizedTensor b = makeTensor({112, 128}, 2, 1, Format::E4M3FN(), {2, 1}, {1.0f});
  auto backend = makeCpuGemmBackend();
  GemmOptions o;
  o.output = OutputType::E4M3FN;
  o.output_quant_scale = 2.0f;
  GemmOutput out = backend->run(a, b, o);
  QCOMPARE_BITS(out.amax_d, 240.0f);
  QCOMPARE(int(out.d_codes.at(0)), 0x7E);
  QCOMPARE_BITS(out.d[0], 224.0f);
  o.output_quant_scale = 0.5f;
  out = backend->run(a, b, o);
  QCOMPARE(int(out.d_codes.at(0)), 0x6F);
  QCOMPARE_BITS(out.d[0], 240.0f);
}

// The vector kernels decode whole groups of codes at once (the AVX2 kernel: eight elements of K of
// six rows of A, sixteen columns of a row of B) and hand a group holding a NaN code to the table.
// Every code of E4M3FN / E5M2 except NaN and Inf once each in A and B (13 × 40 and 40 × 33: tiles
// past M and N, a last group of K shorter than eight), then a NaN code at A[3, 17] and at B[20, 5]:
// the portable kernel and each vector kernel the CPU level has give the same bits, NaN exactly in
// row 3 and column 5 (NaN times a finite or zero product is NaN), finite elsewhere.
void TestGemm::vectorKernelsNaNCodesAmongFinite() {
  const std::string device = makeCpuGemmBackend()->device();
  for (const Format* f : {&Format::E4M3FN(), &Format::E5M2()}) {
    std::vector<double> finite;
    for (int c = 0; c < 256; ++c) {
      const double v = f->decode(static_cast<uint32_t>(c));
      if (std::isfinite(v)) finite.push_back(v); // products ≤ 57344², sums of 40 far below FLT_MAX
    }
    const int64_t M = 13, K = 40, N = 33;
    std::vector<double> av(size_t(M * K)), bv(size_t(K * N));
    for (size_t i = 0; i < av.size(); ++i) av[i] = finite[(i * 7) % finite.size()];
    for (size_t i = 0; i < bv.size(); ++i) bv[i] = finite[(i * 11 + 3) % finite.size()];
    av[size_t(3 * K + 17)] = std::nan("");
    bv[size_t(20 * N + 5)] = std::nan("");
    const QuantizedTensor a = makeTensor(av, M, K, *f, {M, K}, {1.0f});
    const QuantizedTensor b = makeTensor(bv, K, N, *f, {K, N}, {1.0f});
    auto backend = makeCpuGemmBackend();
    GemmOptions o;
    o.accumulation = Accumulation::FP32;
    o.cpu_kernel = CpuKernel::Portable;
    const GemmOutput p = backend->run(a, b, o);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) QCOMPARE(bool(std::isnan(p.d[size_t(i * N + j)])), i == 3 || j == 5);
    for (auto [kernel, name] :
         {std::pair{CpuKernel::Avx512Fma, "AVX512-FMA"}, std::pair{CpuKernel::Avx2Fma, "AVX2-FMA"}}) {
      if (device.find(name) == std::string::npos) continue;
      o.cpu_kernel = kernel;
      const GemmOutput v = backend->run(a, b, o);
      QString where;
      QVERIFY2(sameBits(p.d, v.d, &where), qPrintable(QStringLiteral("%1 %2: %3")
                                                          .arg(QString::fromStdString(f->name()))
                                                          .arg(QString::fromLatin1(name), where)));
    }
  }
}

void TestGemm::nanAndInfInputsCountedNotFatal() {
  // E5M2 has Inf (0x7C) and NaN (0x7F) codes. Row 0 of A holds a NaN, row 1 an Inf.
  QuantizedTensor a = makeTensor({1, 2, 1, 2, 1, 1}, 3, 2, Format::E5M2(), {3, 2}, {1.0f});
  a.codes[0] = 0x7F;
  a.codes[2] = 0x7C;
  const QuantizedTensor b = makeTensor({1, 1, 1, 1}, 2, 2, Format::E5M2(), {2, 2}, {1.0f});
  auto backend = makeCpuGemmBackend();
  for (Accumulation acc : kModels) {
    GemmOptions o;
    o.accumulation = acc;
    const GemmOutput out = backend->run(a, b, o);
    QVERIFY(std::isnan(out.d[0]) && std::isnan(out.d[1]));
    QVERIFY(std::isinf(out.d[2]) && out.d[2] > 0);
    QCOMPARE_BITS(out.d[4], 2.0f);
    QVERIFY(std::isnan(out.amax_d));
  }
  const GemmExperimentResult r = runGemmExperiment(nullptr, nullptr, a, b, GemmOptions{});
  QCOMPARE(r.accumulation.nan_test, int64_t(2));
  QCOMPARE(r.accumulation.inf_test, int64_t(2));
  QCOMPARE(r.accumulation.finite_pairs, int64_t(2));
  QCOMPARE_BITS(r.accumulation.max_abs, 0.0);
}

void TestGemm::e5m2TimesE5m2Flagged() {
  const QuantizedTensor a = makeTensor({1, 2}, 1, 2, Format::E5M2(), {1, 2}, {1.0f});
  const QuantizedTensor b = makeTensor({3, 4}, 2, 1, Format::E5M2(), {2, 1}, {1.0f});
  const GemmOutput out = makeCpuGemmBackend()->run(a, b, GemmOptions{});
  QCOMPARE_BITS(out.d[0], 11.0f);
  bool flagged = false;
  for (const Issue& w : out.warnings) flagged |= w.detail.find("not supported by cuBLASLt") != std::string::npos;
  QVERIFY(flagged);
  const QuantizedTensor b4 = makeTensor({3, 4}, 2, 1, Format::E4M3FN(), {2, 1}, {1.0f});
  for (const Issue& w : makeCpuGemmBackend()->run(a, b4, GemmOptions{}).warnings)
    QVERIFY(w.detail.find("not supported by cuBLASLt") == std::string::npos);
}

void TestGemm::badInputs() {
  auto backend = makeCpuGemmBackend();
  const QuantizedTensor a = makeTensor({1, 2, 3, 1, 2, 3}, 2, 3, Format::E4M3FN(), {2, 3}, {1.0f});
  const QuantizedTensor b2 = makeTensor({1, 2, 3, 4}, 2, 2, Format::E4M3FN(), {2, 2}, {1.0f});
  auto expectInvalid = [&](const std::function<void()>& f, const char* needle) {
    try {
      f();
      QFAIL("no exception");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
    }
  };
  expectInvalid([&] { backend->run(a, b2, GemmOptions{}); }, "shape mismatch");
  QuantizedTensor a0 = makeTensor({}, 2, 0, Format::E4M3FN(), {2, 1}, {});
  QuantizedTensor b0 = makeTensor({}, 0, 2, Format::E4M3FN(), {1, 2}, {});
  expectInvalid([&] { backend->run(a0, b0, GemmOptions{}); }, "K = 0");
  QuantizedTensor bad = a;
  bad.codes.pop_back();
  expectInvalid([&] { backend->run(bad, b2, GemmOptions{}); }, "codes");
  bad = a;
  bad.dequant_scales.push_back(1.0f);
  expectInvalid([&] { backend->run(bad, b2, GemmOptions{}); }, "dequant scales");
  bad = a;
  bad.format = &Format::BF16();
  expectInvalid([&] { backend->run(bad, b2, GemmOptions{}); }, "at most 8 bits");
  const QuantizedTensor b = makeTensor({1, 2, 3, 4, 5, 6}, 3, 2, Format::E4M3FN(), {3, 2}, {1.0f});
  GemmOptions o;
  o.promotion_interval = 0;
  expectInvalid([&] { backend->run(a, b, o); }, "promotion interval");
  o = {};
  o.output = OutputType::E4M3FN;
  o.output_quant_scale = 0;
  expectInvalid([&] { backend->run(a, b, o); }, "output scale");
  // scale_D with a BF16 / FP16 / FP32 output: cuBLASLt applies D_SCALE only to FP8 outputs, so it
  // would be dropped without a word — refused instead.
  for (OutputType ot : {OutputType::BF16, OutputType::FP16, OutputType::FP32}) {
    o = {};
    o.output = ot;
    o.output_quant_scale = 16.0f;
    expectInvalid([&] { backend->run(a, b, o); }, "applies only to FP8 outputs");
  }
  // memory: a limit of 16 bytes refuses even this 2x2x3 GEMM (84 bytes of buffers), naming the size
  o = {};
  o.memory_limit_bytes = 16;
  try {
    backend->run(a, b, o);
    QFAIL("no exception");
  } catch (const std::runtime_error& e) {
    QVERIFY2(std::string(e.what()).find("needs") != std::string::npos, e.what());
  }
  QVERIFY(!backend->unsupportedReason(a, b, o).empty());
  // a GEMM far beyond any memory is refused up front (no allocation attempted)
  QuantizedTensor huge;
  huge.rows = 1 << 20;
  huge.cols = 1 << 20;
  huge.format = &Format::E4M3FN();
  huge.block = {huge.rows, huge.cols};
  // codes deliberately not allocated: validation reports the count first
  expectInvalid([&] { backend->run(huge, huge, GemmOptions{}); }, "codes");
  QVERIFY(backend->unsupportedReason(a, b, GemmOptions{}).empty());
  // progress cancel
  const std::vector<float> x = randomMatrix(64, 256, 1);
  const QuantizedTensor q = quantizePerTensor(x, 64, 256, Format::E4M3FN());
  const QuantizedTensor qt = quantizePerTensor(x, 256, 64, Format::E4M3FN());
  QVERIFY_THROWS_EXCEPTION(Cancelled,
                           backend->run(q, qt, GemmOptions{}, [](double, const std::string&) { return false; }));
}

// splitmix64 reference outputs: the first three words of the splitmix64 generator seeded with
// 0 (state += 0x9E3779B97F4A7C15 before each mix), as published with the xoshiro generators
// (Vigna, prng.di.unimi.it, splitmix64.c): e220a8397b1dcdaf, 6e789e6aa1b965f4, 06c45d188009454f.
void TestGemm::randomMatrixReproducible() {
  QCOMPARE(splitmix64(0), 0xE220A8397B1DCDAFull);
  QCOMPARE(splitmix64(0x9E3779B97F4A7C15ull), 0x6E789E6AA1B965F4ull);
  QCOMPARE(splitmix64(2 * 0x9E3779B97F4A7C15ull), 0x06C45D188009454Full);
  // same seed → same bits, whatever the thread count; other seed → different
  const std::vector<float> one = randomMatrix(300, 301, 42, {}, 0, 1);
  const std::vector<float> many = randomMatrix(300, 301, 42, {}, 0, 4);
  QVERIFY(sameBits(one, many));
  QVERIFY(!sameBits(one, randomMatrix(300, 301, 43)));
  // moments of N(0,1) over 90300 samples: mean within 5σ/sqrt(n) ≈ 0.017, variance within ±0.03
  double s = 0, s2 = 0;
  for (float v : one) {
    s += v;
    s2 += static_cast<double>(v) * v;
  }
  const double mean = s / static_cast<double>(one.size()), var = s2 / static_cast<double>(one.size()) - mean * mean;
  QVERIFY(std::fabs(mean) < 0.017);
  QVERIFY(std::fabs(var - 1.0) < 0.03);
  // uniform in [−2, 2), lognormal signed, outliers present at about the given rate
  RandomMatrixOptions u;
  u.distribution = Distribution::Uniform;
  u.scale = 2;
  for (float v : randomMatrix(100, 100, 1, u)) QVERIFY(v >= -2.0f && v < 2.0f);
  RandomMatrixOptions ol;
  ol.distribution = Distribution::Outliers;
  ol.outlier_fraction = 0.01;
  int big = 0;
  for (float v : randomMatrix(200, 500, 3, ol)) big += std::fabs(v) > 10.0f;
  QVERIFY(big > 700 && big < 1300); // 1000 expected outliers; |N(0,1)|·100 > 10 with prob 0.92
  QCOMPARE(parseDistribution("LogNormal").value(), Distribution::LogNormal);
  QVERIFY(!parseDistribution("cauchy"));
}

// The float64 ideal GEMM is the textbook sum in double, each output's products added in
// ascending k with one rounding per addition (a product of two float32 values is exact in double):
// compared bit for bit with that loop written out here, on shapes that leave partial register
// tiles (rows not a multiple of 4, columns not a multiple of 16, K across several chunks), values of
// both signs over many binades, with 1 and 2 threads.
void TestGemm::idealGemmIsTheSequentialDoubleSum() {
  const int64_t M = 23, K = 700, N = 45;
  std::vector<float> a(size_t(M * K)), b(size_t(K * N));
  uint64_t st = 7;
  auto next = [&] {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    const double u = double(st >> 11) * 0x1.0p-53;              // [0, 1)
    const double e = std::ldexp(1.0, int((st >> 3) % 24) - 12); // 2^-12 .. 2^11
    return float((u - 0.5) * e);
  };
  for (auto& x : a) x = next();
  for (auto& x : b) x = next();
  std::vector<double> want(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s = s + double(a[size_t(i * K + k)]) * double(b[size_t(k * N + j)]);
      want[size_t(i * N + j)] = s;
    }
  for (int threads : {1, 2}) {
    const std::vector<double> got = idealGemm(a.data(), b.data(), M, K, N, threads);
    QCOMPARE(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) QCOMPARE_BITS(got[i], want[i]);
  }
}

// An FP8 output clips what scale_D pushes beyond max finite, and the experiment says how much.
// A = [16 16] (1×2), B = [[16 1], [16 1]] (2×2), scales 1: D = [16·16 + 16·16, 16 + 16] = [512, 32].
// E4M3FN output, scale_D 1: 512 > 464 (the overflow bound, 448 + 32/2) → clipped; 32 is fine:
// d_saturated = 1, and a warning. scale_D 0.5: 256 and 16 → nothing clipped. A BF16 output has no
// scale_D: −1.
void TestGemm::fp8OutputClippingIsCounted() {
  const QuantizedTensor a = makeTensor({16, 16}, 1, 2, Format::E4M3FN(), {1, 2}, {1.0f});
  const QuantizedTensor b = makeTensor({16, 1, 16, 1}, 2, 2, Format::E4M3FN(), {2, 2}, {1.0f});
  GemmOptions o;
  o.output = OutputType::E4M3FN;
  o.output_quant_scale = 1.0f;
  GemmExperimentResult r = runGemmExperiment(nullptr, nullptr, a, b, o);
  QCOMPARE_BITS(r.quantized_exact[0], 512.0);
  QCOMPARE_BITS(r.quantized_exact[1], 32.0);
  QCOMPARE(r.d_saturated, int64_t(1));
  bool warned = false;
  for (const auto& w : r.output.warnings) warned = warned || w.what == "e4m3fn output clipped";
  QVERIFY(warned);
  o.output_quant_scale = 0.5f;
  r = runGemmExperiment(nullptr, nullptr, a, b, o);
  QCOMPARE(r.d_saturated, int64_t(0));
  o.output = OutputType::BF16;
  o.output_quant_scale = 1.0f;
  QCOMPARE(runGemmExperiment(nullptr, nullptr, a, b, o).d_saturated, int64_t(-1));
}

QTEST_APPLESS_MAIN(TestGemm)
#include "test_gemm.moc"

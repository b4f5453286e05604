// The blocked AVX-512 and AVX2 float64 GEMMs (gemm_double.cpp) against the portable kernel they
// replace (gemm_kernels.cpp), bit for bit: the ideal reference's plan (one window), the Exact
// model's windowed plans with block scales promoted by FMA, edge shapes around the 8 × 16 and
// 4 × 12 micro-tiles, the 128-row job and the 1024-column block, non-finite and subnormal inputs,
// codes decoded while packing, 1 and 2 threads. The portable kernel is the specification
// (docs/gemm.md: ascending k, one double rounding per addition).
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <tuple>
#include <limits>
#include <vector>

#include "common/cpu_level.h"
#include "cpu_level_skip.h"
#include "gemm/gemm_internal.h"
#include "gemm/random_matrix.h"
#include "scaling/scaling.h"

using namespace fp8lab;
using namespace fp8lab::gemm_detail;

namespace {

Plan onePlan(int64_t m, int64_t k, int64_t n) {
  Plan p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.windows = {Window{0, k, 0, 0}};
  p.ca.assign(size_t(m), 1.0f);
  p.cb.assign(size_t(n), 1.0f);
  return p;
}

/// Every element bit for bit; NaN results only as NaN. Which of several NaN operands a sum keeps
/// (its sign and payload) is the instruction's operand order, which the portable kernel itself does
/// not fix (its 4 × 16 tiles and its row loop order them differently).
bool sameBits(const std::vector<double>& x, const std::vector<double>& y, QString* where) {
  for (size_t i = 0; i < x.size(); ++i)
    if (std::isnan(x[i]) ? !std::isnan(y[i]) : std::bit_cast<uint64_t>(x[i]) != std::bit_cast<uint64_t>(y[i])) {
      *where = QStringLiteral("element %1: %2 vs %3").arg(i).arg(x[i], 0, 'g', 17).arg(y[i], 0, 'g', 17);
      return false;
    }
  return true;
}

std::vector<float> inputs(int64_t rows, int64_t cols, uint64_t seed, bool specials) {
  RandomMatrixOptions o;
  o.distribution = Distribution::LogNormal;
  o.sigma = 3.0;
  std::vector<float> x = randomMatrix(rows, cols, seed, o, 0, 1);
  if (specials && x.size() > 40) {
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[11] = std::numeric_limits<float>::infinity();
    x[17] = -std::numeric_limits<float>::infinity();
    x[23] = 1e-42f; // subnormal
    x[29] = -0.0f;
    x[31] = 3e38f;
  }
  return x;
}

/// A blocked float64 kernel and its decode-while-packing twin.
struct Blocked {
  const char* name;
  void (*values)(const Plan&, const float*, const float*, double*, int, const ProgressFn&);
  void (*codes)(const Plan&, const QuantizedTensor&, const QuantizedTensor&, double*, int, const ProgressFn&);
};

/// The blocked kernels this process may run: those of cpuLevel() and below (FP8LAB_CPU forces the
/// level down; CTest runs this suite once per level the machine has).
std::vector<Blocked> blockedKernels() {
  std::vector<Blocked> k;
  if (cpuLevel() >= CpuLevel::Avx512) k.push_back({"avx512", gemmDoubleAvx512, gemmDoubleCodesAvx512});
  if (cpuLevel() >= CpuLevel::Avx2) k.push_back({"avx2", gemmDoubleAvx2, gemmDoubleCodesAvx2});
  return k;
}

} // namespace

class TestGemmDouble : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void initTestCase() {
    test::skipWhenCpuLevelRefused();
    qInfo("CPU level %s; blocked float64 kernels compared with the portable one: %d", cpuLevelDescription().c_str(),
          int(blockedKernels().size()));
  }

  void idealPlanShapes() {
    const std::vector<Blocked> kernels = blockedKernels();
    if (kernels.empty())
      QSKIP(qPrintable(QStringLiteral("no blocked float64 kernel at CPU level %1 (only the portable kernel runs here)")
                           .arg(QString::fromUtf8(toString(cpuLevel())))));
    const int64_t sizes[] = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 63, 64, 65, 129, 130};
    uint64_t seed = 1;
    for (int64_t m : sizes)
      for (int64_t n : {int64_t(1), int64_t(11), int64_t(12), int64_t(13), int64_t(16), int64_t(17), int64_t(127),
                        int64_t(128), int64_t(129), int64_t(300)})
        for (int64_t k : {int64_t(1), int64_t(2), int64_t(127), int64_t(128), int64_t(129), int64_t(300)}) {
          const std::vector<float> a = inputs(m, k, seed++, true), b = inputs(k, n, seed++, false);
          const Plan p = onePlan(m, k, n);
          std::vector<double> want(size_t(m * n), 0.0);
          gemmDoublePortable(p, a.data(), b.data(), want.data(), 1, {});
          for (const Blocked& kern : kernels) {
            std::vector<double> got(size_t(m * n), 0.0);
            kern.values(p, a.data(), b.data(), got.data(), 2, {});
            QString where;
            if (!sameBits(want, got, &where))
              QFAIL(qPrintable(QStringLiteral("%1, m %2 n %3 k %4: %5")
                                   .arg(QString::fromUtf8(kern.name))
                                   .arg(m)
                                   .arg(n)
                                   .arg(k)
                                   .arg(where)));
          }
        }
  }

  // The Exact model's plans: windows at the scale blocks (1x128 on A, 128x128 on B) and at a
  // promotion interval of 96, promoted with fma(float64(sa)·float64(sb), partial, acc).
  void windowedPlans() {
    const std::vector<Blocked> kernels = blockedKernels();
    if (kernels.empty())
      QSKIP(qPrintable(QStringLiteral("no blocked float64 kernel at CPU level %1 (only the portable kernel runs here)")
                           .arg(QString::fromUtf8(toString(cpuLevel())))));
    for (const char* preset : {"deepgemm_1x128", "deepgemm_128x128", "mx_rceil", "te_current"})
      for (int64_t k : {int64_t(96), int64_t(256), int64_t(300), int64_t(1000)}) {
        const int64_t m = 70, n = 150;
        const std::vector<float> x = inputs(m, k, 5, false), y = inputs(k, n, 6, false);
        const ScalingConfig sc = *scalingPreset(preset);
        const QuantizedTensor qa = quantize(x.data(), m, k, Format::E4M3FN(), sc, Axis::Cols);
        const QuantizedTensor qb = quantize(y.data(), k, n, Format::E4M3FN(), sc, Axis::Rows);
        GemmOptions o;
        o.accumulation = Accumulation::Exact;
        Plan p = makePlan(qa, qb, o);
        if (std::string(preset) == "te_current") p.windows = makeWindows(qa, qb, false, false, k, 96);
        std::vector<float> af(qa.codes.size()), bf(qb.codes.size());
        qa.format->decodeBulk(qa.codes.data(), af.data(), af.size());
        qb.format->decodeBulk(qb.codes.data(), bf.data(), bf.size());
        std::vector<double> want(size_t(m * n), 0.0);
        gemmDoublePortable(p, af.data(), bf.data(), want.data(), 1, {});
        for (const Blocked& kern : kernels) {
          std::vector<double> got(size_t(m * n), 0.0), codes(size_t(m * n), 0.0);
          kern.values(p, af.data(), bf.data(), got.data(), 2, {});
          kern.codes(p, qa, qb, codes.data(), 2, {}); // decoded while packing
          const QString what =
              QStringLiteral("%1, %2, k %3").arg(QString::fromUtf8(kern.name), QString::fromUtf8(preset)).arg(k);
          QString where;
          if (!sameBits(want, got, &where)) QFAIL(qPrintable(what + QStringLiteral(": ") + where));
          if (!sameBits(want, codes, &where))
            QFAIL(qPrintable(QStringLiteral("codes, ") + what + QStringLiteral(": ") + where));
        }
      }
  }

  // Codes decoded while packing, for every ≤ 8-bit format (E2M1's 16-entry table included) and
  // shapes around the tiles, against the portable kernel on decodeBulk's floats.
  void codesAllFormats() {
    uint64_t seed = 40;
    for (const char* name : {"E4M3FN", "E5M2", "E4M3FNUZ", "E3M2", "E2M1"})
      for (int64_t m : {int64_t(5), int64_t(129)})
        for (int64_t n : {int64_t(9), int64_t(1030)})
          for (int64_t k : {int64_t(3), int64_t(257)}) {
            const Format& f = *Format::byName(name);
            QuantizedTensor qa, qb;
            for (auto [q, r, c] : {std::tuple{&qa, m, k}, std::tuple{&qb, k, n}}) {
              q->rows = r;
              q->cols = c;
              q->format = &f;
              q->block = {r, c};
              q->dequant_scales = {1.0f};
              q->codes.resize(size_t(r * c));
              for (size_t i = 0; i < q->codes.size(); ++i)
                q->codes[i] = uint8_t(randomWord(seed, 0, i) % f.codeCount());
              ++seed;
            }
            GemmOptions o;
            o.accumulation = Accumulation::Exact;
            const Plan p = makePlan(qa, qb, o);
            std::vector<float> af(qa.codes.size()), bf(qb.codes.size());
            f.decodeBulk(qa.codes.data(), af.data(), af.size());
            f.decodeBulk(qb.codes.data(), bf.data(), bf.size());
            std::vector<double> want(size_t(m * n), 0.0), got(size_t(m * n), 0.0);
            gemmDoublePortable(p, af.data(), bf.data(), want.data(), 1, {});
            gemmDoubleCodes(p, qa, qb, got.data(), 2, {});
            QString where;
            if (!sameBits(want, got, &where))
              QFAIL(qPrintable(QStringLiteral("%1 m %2 n %3 k %4: %5")
                                   .arg(QString::fromUtf8(name))
                                   .arg(m)
                                   .arg(n)
                                   .arg(k)
                                   .arg(where)));
          }
  }

  // The public references through the dispatcher: the same bits with 1 and 2 threads.
  void threadsDoNotMatter() {
    const int64_t m = 200, k = 333, n = 260;
    const std::vector<float> a = inputs(m, k, 8, false), b = inputs(k, n, 9, false);
    const Plan p = onePlan(m, k, n);
    std::vector<double> one(size_t(m * n), 0.0), two(size_t(m * n), 0.0);
    gemmDouble(p, a.data(), b.data(), one.data(), 1, {});
    gemmDouble(p, a.data(), b.data(), two.data(), 2, {});
    QString where;
    QVERIFY2(sameBits(one, two, &where), qPrintable(where));
  }
};

QTEST_MAIN(TestGemmDouble)
#include "test_gemm_double.moc"

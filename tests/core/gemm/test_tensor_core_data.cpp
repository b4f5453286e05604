// The accumulation presets against outputs of real GPUs, bit for bit: the 30000 published samples
// of tests/data/tensor_core (MATLAB-tensor-core's model_validation: H100 wgmma, Ada mma.sync and B200,
// E4M3 and E5M2, 5000 K = 32 inner products each). Each chunk of samples is the diagonal of a GEMM
// of codes: A [n, 32] holds the samples' a vectors as rows, B [32, n] their b vectors as columns,
// C [n, n] their c on the diagonal, and D's diagonal must equal the measured d in every bit. H100's
// d were computed with C = 0 (its validation script, line 74; its published c give 0 matches), so
// its GEMMs have beta = 0; Ada's and B200's take beta = 1 and the preset decides where C enters.
// The same samples embedded block-diagonally in one GEMM (every element of D then measured or
// exactly 0) let the kernel check's fit name the instruction.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "formats/format.h"
#include "gemm/accumulation_preset.h"
#include "gemm/gemm.h"
#include "gemm/kernel_check.h"
#include "tensor_core_samples.h"

using namespace fp8lab;
using namespace fp8lab::test;

namespace {

QuantizedTensor codesTensor(int64_t rows, int64_t cols, const Format& f, std::vector<uint8_t> codes) {
  QuantizedTensor q;
  q.rows = rows;
  q.cols = cols;
  q.format = &f;
  q.block = {rows, cols};
  q.dequant_scales = {1.0f};
  q.codes = std::move(codes);
  return q;
}

struct DataSet {
  const char* stem;
  const char* format;
  const char* preset;
  bool c_used;
};

const DataSet kSets[] = {
    {"h100_e4m3", "E4M3FN", "hopper_fp8", false},   {"h100_e5m2", "E5M2", "hopper_fp8", false},
    {"ada_e4m3", "E4M3FN", "ada_fp8", true},        {"ada_e5m2", "E5M2", "ada_fp8", true},
    {"b200_e4m3", "E4M3FN", "blackwell_fp8", true}, {"b200_e5m2", "E5M2", "blackwell_fp8", true},
};

/// The diagonal of the chunk's GEMM under `preset`: how many samples it reproduces, and the first miss.
int64_t diagonalMatches(const std::vector<TensorCoreSample>& s, size_t from, size_t n, const Format& f,
                        const AccumulationPreset& preset, bool c_used, QString* first_miss) {
  std::vector<uint8_t> a(n * 32), b(32 * n);
  auto c = std::make_shared<std::vector<float>>(n * n, 0.0f);
  for (size_t i = 0; i < n; ++i) {
    const TensorCoreSample& x = s[from + i];
    for (int k = 0; k < 32; ++k) {
      a[i * 32 + size_t(k)] = x.a[k];
      b[size_t(k) * n + i] = x.b[k];
    }
    (*c)[i * n + i] = std::bit_cast<float>(x.c);
  }
  GemmOptions o = withAccumulationPreset(GemmOptions{}, preset);
  if (c_used) {
    o.beta = 1.0f;
    o.c = c;
  }
  const GemmOutput out = makeCpuGemmBackend()->run(codesTensor(int64_t(n), 32, f, std::move(a)),
                                                   codesTensor(32, int64_t(n), f, std::move(b)), o);
  int64_t ok = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t got = std::bit_cast<uint32_t>(out.d[i * n + i]), want = s[from + i].d;
    if (got == want) {
      ++ok;
    } else if (first_miss->isEmpty()) {
      *first_miss = QStringLiteral("sample %1: model %2 (0x%3), GPU %4 (0x%5)")
                        .arg(from + i)
                        .arg(double(std::bit_cast<float>(got)), 0, 'g', 9)
                        .arg(got, 8, 16, QLatin1Char('0'))
                        .arg(double(std::bit_cast<float>(want)), 0, 'g', 9)
                        .arg(want, 8, 16, QLatin1Char('0'));
    }
  }
  return ok;
}

} // namespace

class TestTensorCoreData : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void everySampleBitForBit_data() {
    QTest::addColumn<int>("set");
    for (int i = 0; i < int(std::size(kSets)); ++i) QTest::newRow(kSets[i].stem) << i;
  }

  // 5000 of 5000 per data set under its preset, in GEMMs of 500 × 32 · 32 × 500.
  void everySampleBitForBit() {
    QFETCH(int, set);
    const DataSet& ds = kSets[set];
    QString error;
    const std::vector<TensorCoreSample> s = readTensorCoreSamples(QString::fromLatin1(ds.stem), &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(s.size(), size_t(5000));
    const AccumulationPreset p = *accumulationPreset(ds.preset);
    const Format& f = *Format::byName(ds.format);
    int64_t ok = 0;
    QString miss;
    for (size_t from = 0; from < s.size(); from += 500) ok += diagonalMatches(s, from, 500, f, p, ds.c_used, &miss);
    qInfo("%s under %s: %lld of %zu samples bit for bit", ds.stem, ds.preset, static_cast<long long>(ok), s.size());
    QVERIFY2(ok == int64_t(s.size()), qPrintable(QStringLiteral("%1 of 5000; first miss %2").arg(ok).arg(miss)));
  }

  // What the data reject: the earlier prose model (product alignment, 14 significant bits, exact
  // group sums, RNE to float32) and each measured preset on another GPU's data. The counts are the
  // independent Python replay's (docs/scripts/tensor_core_models.py sweep) where it ran the same rule.
  void otherRulesAreRejected() {
    QString error;
    const std::vector<TensorCoreSample> h100 = readTensorCoreSamples(QStringLiteral("h100_e4m3"), &error);
    const std::vector<TensorCoreSample> ada = readTensorCoreSamples(QStringLiteral("ada_e4m3"), &error);
    const std::vector<TensorCoreSample> b200 = readTensorCoreSamples(QStringLiteral("b200_e5m2"), &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const Format& e4 = Format::E4M3FN();
    QString miss;
    // The prose model the presets replace (bits 14, group 32, product alignment, exact sums).
    AccumulationPreset prose = *accumulationPreset("hopper_fp8");
    prose.rules = MmaRules{};
    int64_t ok = 0;
    for (size_t from = 0; from < 5000; from += 500) ok += diagonalMatches(h100, from, 500, e4, prose, false, &miss);
    qInfo("H100 E4M3 under the prose model: %lld of 5000", static_cast<long long>(ok));
    QVERIFY(ok < 5000);
    // Ada's data under Hopper's rules (groups of 32), and with C after the MMA.
    ok = 0;
    for (size_t from = 0; from < 5000; from += 500)
      ok += diagonalMatches(ada, from, 500, e4, *accumulationPreset("hopper_fp8"), true, &miss);
    qInfo("Ada E4M3 under hopper_fp8: %lld of 5000", static_cast<long long>(ok));
    QCOMPARE(ok, int64_t(3940)); // tensor_core_models.py sweep: Ada E4M3 with G = 32
    AccumulationPreset ada_epilogue = *accumulationPreset("ada_fp8");
    ada_epilogue.rules.c_entry = MmaCEntry::Epilogue;
    ok = 0;
    for (size_t from = 0; from < 5000; from += 500)
      ok += diagonalMatches(ada, from, 500, e4, ada_epilogue, true, &miss);
    QVERIFY2(ok <= 1, qPrintable(QStringLiteral("%1").arg(ok))); // the sweep: 0 (E4M3)
    // B200 with C inside the MMA (MMA-Sim's tcgen05 rule): 3236 of 5000 on E5M2 (the sweep).
    ok = 0;
    for (size_t from = 0; from < 5000; from += 500)
      ok += diagonalMatches(b200, from, 500, Format::E5M2(), *accumulationPreset("blackwell_tcgen05"), true, &miss);
    QCOMPARE(ok, int64_t(3236));
  }

  // The instructions without measured data, against values computed from MMA-Sim's published rules
  // by the independent Python replay (docs/scripts/tensor_core_models.py vectors →
  // tests/data/tensor_core/mmasim_rules_vectors.txt, 300 random inner products per kind): the
  // block-scaled tcgen05 kinds with their scale codes (E8M0 block 32 / 16, UE4M3 block 16) and AMD
  // CDNA3's FP8 MFMA on E4M3FNUZ, each as the diagonal of one GEMM with C on its diagonal.
  void mmaSimRuleVectors_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("preset");
    QTest::newRow("mxf8f6f4") << QStringLiteral("mxf8f6f4") << QStringLiteral("tcgen05_mxf8f6f4");
    QTest::newRow("mxf4 ue8m0 32") << QStringLiteral("mxf4_ue8m0_32") << QStringLiteral("tcgen05_mxf4nvf4");
    QTest::newRow("mxf4 ue8m0 16") << QStringLiteral("mxf4_ue8m0_16") << QStringLiteral("tcgen05_mxf4nvf4");
    QTest::newRow("nvf4 ue4m3 16") << QStringLiteral("nvf4_ue4m3_16") << QStringLiteral("tcgen05_mxf4nvf4");
    QTest::newRow("cdna3 e4m3fnuz") << QStringLiteral("cdna3_e4m3fnuz") << QStringLiteral("cdna3_fp8");
  }
  void mmaSimRuleVectors() {
    QFETCH(QString, kind);
    QFETCH(QString, preset);
    QFile f(QStringLiteral(FP8LAB_SOURCE_DIR "/tests/data/tensor_core/mmasim_rules_vectors.txt"));
    QVERIFY2(f.open(QIODevice::ReadOnly), "tests/data/tensor_core/mmasim_rules_vectors.txt is missing");
    struct Row {
      std::vector<uint8_t> a, b, sa, sb;
      uint32_t c, d;
    };
    std::vector<Row> rows;
    int K = 0;
    while (!f.atEnd()) {
      const QList<QByteArray> w = f.readLine().trimmed().split(' ');
      if (w.size() != 8 || QString::fromLatin1(w[0]) != kind) continue;
      K = w[1].toInt();
      const int digits = w[2].size() / K; // 2 hex digits per FP8 code, 1 per E2M1 code
      Row r;
      auto codes = [](const QByteArray& h, int per) {
        std::vector<uint8_t> v;
        if (h == "-") return v;
        for (int i = 0; i + per <= h.size(); i += per) v.push_back(uint8_t(h.mid(i, per).toUInt(nullptr, 16)));
        return v;
      };
      r.a = codes(w[2], digits);
      r.b = codes(w[3], digits);
      r.sa = codes(w[4], 2);
      r.sb = codes(w[5], 2);
      r.c = w[6].toUInt(nullptr, 16);
      r.d = w[7].toUInt(nullptr, 16);
      rows.push_back(std::move(r));
    }
    QCOMPARE(rows.size(), size_t(300));
    const size_t n = rows.size();
    const bool cdna3 = kind.startsWith(QStringLiteral("cdna3"));
    const bool fp4 = kind.startsWith(QStringLiteral("mxf4")) || kind.startsWith(QStringLiteral("nvf4"));
    const Format& f8 = cdna3 ? *Format::byName("E4M3FNUZ") : fp4 ? Format::E2M1() : Format::E4M3FN();
    const int nscales = int(rows[0].sa.size());
    QuantizedTensor a = codesTensor(int64_t(n), K, f8, {}), b = codesTensor(K, int64_t(n), f8, {});
    a.codes.resize(n * size_t(K));
    b.codes.resize(n * size_t(K));
    if (nscales > 0) {
      const Format& sf = kind.contains(QStringLiteral("ue4m3")) ? Format::E4M3FN() : Format::E8M0FNU();
      a.block = {1, K / nscales};
      b.block = {K / nscales, 1};
      a.scale_format = b.scale_format = &sf;
      a.dequant_scales.assign(n * size_t(nscales), 0.0f);
      b.dequant_scales.assign(n * size_t(nscales), 0.0f);
      a.scale_codes.assign(n * size_t(nscales), 0);
      b.scale_codes.assign(n * size_t(nscales), 0);
    }
    auto c = std::make_shared<std::vector<float>>(n * n, 0.0f);
    for (size_t i = 0; i < n; ++i) {
      for (int k = 0; k < K; ++k) {
        a.codes[i * size_t(K) + size_t(k)] = rows[i].a[size_t(k)];
        b.codes[size_t(k) * n + i] = rows[i].b[size_t(k)];
      }
      for (int s = 0; s < nscales; ++s) {
        const Format& sf = *a.scale_format;
        a.scale_codes[i * size_t(nscales) + size_t(s)] = rows[i].sa[size_t(s)];
        a.dequant_scales[i * size_t(nscales) + size_t(s)] = float(sf.decode(rows[i].sa[size_t(s)]));
        b.scale_codes[size_t(s) * n + i] = rows[i].sb[size_t(s)];
        b.dequant_scales[size_t(s) * n + i] = float(sf.decode(rows[i].sb[size_t(s)]));
      }
      (*c)[i * n + i] = std::bit_cast<float>(rows[i].c);
    }
    GemmOptions o = withAccumulationPreset(GemmOptions{}, *accumulationPreset(preset.toStdString()));
    o.beta = 1.0f;
    o.c = c;
    const GemmOutput out = makeCpuGemmBackend()->run(a, b, o);
    int64_t ok = 0;
    QString miss;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t got = std::bit_cast<uint32_t>(out.d[i * n + i]);
      const bool same =
          got == rows[i].d || (std::isnan(out.d[i * n + i]) && std::isnan(std::bit_cast<float>(rows[i].d)));
      ok += same;
      if (!same && miss.isEmpty())
        miss = QStringLiteral("vector %1: model 0x%2, rules 0x%3")
                   .arg(i)
                   .arg(got, 8, 16, QLatin1Char('0'))
                   .arg(rows[i].d, 8, 16, QLatin1Char('0'));
    }
    qInfo("%s under %s: %lld of %zu", qPrintable(kind), qPrintable(preset), static_cast<long long>(ok), n);
    QVERIFY2(ok == int64_t(n), qPrintable(QStringLiteral("%1 of %2; first miss %3").arg(ok).arg(n).arg(miss)));
  }

  // The kernel check's fit over the presets and a grid of the family names hopper_fp8 for the first
  // 96 H100 samples embedded
  // block-diagonally: A [n, 32n] with row i's codes in K-block i, B [32n, n] with column j's in
  // block j, so D[i,i] is sample i's inner product (the other K-blocks add exact zeros, which leave a
  // binary32 running sum and the promotion unchanged) and D[i,j≠i] = +0 under any model.
  void fitNamesHopperOnH100Samples() {
    QString error;
    const std::vector<TensorCoreSample> s = readTensorCoreSamples(QStringLiteral("h100_e5m2"), &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const size_t n = 96;
    const Format& f = Format::E5M2();
    std::vector<uint8_t> a(n * 32 * n, 0), b(32 * n * n, 0);
    ObservedOutput obs;
    obs.rows = obs.cols = int64_t(n);
    obs.values.assign(n * n, 0.0f);
    obs.origin = "H100 E5M2 samples 0..95";
    for (size_t i = 0; i < n; ++i) {
      for (int k = 0; k < 32; ++k) {
        a[i * 32 * n + i * 32 + size_t(k)] = s[i].a[k];
        b[(i * 32 + size_t(k)) * n + i] = s[i].b[k];
      }
      obs.values[i * n + i] = std::bit_cast<float>(s[i].d);
    }
    const QuantizedTensor qa = codesTensor(int64_t(n), int64_t(32 * n), f, a);
    const QuantizedTensor qb = codesTensor(int64_t(32 * n), int64_t(n), f, b);
    FitOptions fo;
    fo.sample_rows = fo.sample_cols = 96; // every diagonal element in the screening
    // A grid around the measured rules (every preset is a candidate whatever the grid): 10..16
    // bits × groups 8..64 × N_C 128, 256 and none, each with the measured and the prose rules.
    fo.grid.bits = {10, 11, 12, 13, 14, 15, 16};
    fo.grid.groups = {8, 16, 32, 64};
    fo.grid.intervals = {128, 256};
    const FitResult fit = fitAccumulation(qa, qb, GemmOptions{}, obs, fo);
    qInfo("%s", fit.verdict.c_str());
    QCOMPARE(fit.best.comparison.identical, int64_t(n * n));
    QCOMPARE(QString::fromStdString(fit.best.model.preset), QStringLiteral("hopper_fp8"));
  }
};

QTEST_MAIN(TestTensorCoreData)
#include "test_tensor_core_data.moc"

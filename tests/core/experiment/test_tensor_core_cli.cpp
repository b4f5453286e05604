// The loop docs/gemm.md shows a kernel developer: `fp8lab-cli probe-vectors --out DIR` writes A, B
// and C; the kernel computes D = A·B + C; `fp8lab-cli gemm … --c-file c.npy --beta 1 --observed d.npy`
// names the model the kernel computes. The "kernels" here are the CPU reference under each
// accumulation preset (their rules reproduce real GPUs' published outputs: test_tensor_core_data),
// their D written as a kernel would write it. Also C from a file: its shape and values checked.
#include "cli_runner.h"
#include <QTemporaryDir>
#include <QtTest>

#include "gemm/accumulation_preset.h"
#include "gemm/gemm.h"
#include "io/npy_writer.h"
#include "io/tensor_import.h"

#include <QJsonArray>
#include <QJsonObject>

using fp8lab::testsupport::CliResult;
using fp8lab::testsupport::runCli;
using namespace fp8lab;

namespace {

QuantizedTensor codesFrom(const QString& path) {
  const Result<Dataset> d = importCodeTensor(path.toStdString());
  if (!d.ok()) throw std::runtime_error(d.errors());
  QuantizedTensor q;
  q.rows = d.value.shape[0];
  q.cols = d.value.shape[1];
  q.format = &Format::E4M3FN();
  q.block = {q.rows, q.cols};
  q.dequant_scales = {1.0f};
  q.codes = d.value.u8;
  return q;
}

} // namespace

class TestTensorCoreCli : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString dir_;

  QStringList checkArgs(const QString& d) const {
    return {QStringLiteral("gemm"),
            QStringLiteral("--a-codes"),
            dir_ + QStringLiteral("/a.npy"),
            QStringLiteral("--a-scales"),
            QStringLiteral("1"),
            QStringLiteral("--b-codes"),
            dir_ + QStringLiteral("/b.npy"),
            QStringLiteral("--b-scales"),
            QStringLiteral("1"),
            QStringLiteral("--c-file"),
            dir_ + QStringLiteral("/c.npy"),
            QStringLiteral("--beta"),
            QStringLiteral("1"),
            QStringLiteral("--observed"),
            d,
            QStringLiteral("--backend"),
            QStringLiteral("cpu"),
            QStringLiteral("--json")};
  }

private Q_SLOTS:
  void initTestCase() {
    dir_ = tmp_.path() + QStringLiteral("/probes");
    const CliResult r = runCli({QStringLiteral("probe-vectors"), QStringLiteral("--out"), dir_, QStringLiteral("--m"),
                                QStringLiteral("24"), QStringLiteral("--n"), QStringLiteral("24"),
                                QStringLiteral("--json"), QStringLiteral("-q")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonObject j = r.json();
    // Every preset and reference model gives its own output on the probes, except the two presets
    // with the same rules (hopper_mma_sync is assumed to be wgmma's datapath).
    const QJsonArray ties = j.value(QStringLiteral("reference_ties")).toArray();
    QCOMPARE(ties.size(), 1);
    QCOMPARE(ties[0].toString(), QStringLiteral("hopper_fp8 = hopper_mma_sync"));
    QVERIFY(j.value(QStringLiteral("distinct_outputs")).toDouble() >
            0.9 * j.value(QStringLiteral("candidate_models")).toDouble());
    for (const char* f : {"a.npy", "b.npy", "c.npy", "probe.json"})
      QVERIFY(QFile::exists(dir_ + QLatin1Char('/') + QLatin1String(f)));
  }

  // The kernel's D, from each preset's rules; the fit over all candidates names that preset.
  void fitNamesTheKernelsInstruction_data() {
    QTest::addColumn<QString>("preset");
    for (const char* p : {"hopper_fp8", "hopper_fp8_fast_accum", "ada_fp8", "blackwell_fp8", "blackwell_tcgen05"})
      QTest::newRow(p) << QString::fromLatin1(p);
  }
  void fitNamesTheKernelsInstruction() {
    QFETCH(QString, preset);
    const QuantizedTensor a = codesFrom(dir_ + QStringLiteral("/a.npy")),
                          b = codesFrom(dir_ + QStringLiteral("/b.npy"));
    const Result<Dataset> c = importTensor((dir_ + QStringLiteral("/c.npy")).toStdString());
    QVERIFY(c.ok());
    GemmOptions o = withAccumulationPreset(GemmOptions{}, *accumulationPreset(preset.toStdString()));
    o.beta = 1.0f;
    o.c = std::make_shared<const std::vector<float>>(c.value.f32);
    const GemmOutput d = makeCpuGemmBackend()->run(a, b, o);
    const QString dpath = tmp_.path() + QStringLiteral("/d_") + preset + QStringLiteral(".npy");
    QVERIFY(writeNpy(dpath.toStdString(), {d.m, d.n}, d.d).ok());
    const CliResult r = runCli(checkArgs(dpath) + QStringList{QStringLiteral("--reference"), preset});
    QVERIFY2(r.code == 0, (r.err + r.out.left(2000)).constData());
    const QJsonObject check = r.json().value(QStringLiteral("check")).toObject();
    const QJsonObject best = check.value(QStringLiteral("fit")).toObject().value(QStringLiteral("best")).toObject();
    QCOMPARE(best.value(QStringLiteral("preset")).toString(), preset);
    QCOMPARE(best.value(QStringLiteral("identical_share")).toDouble(), 1.0);
    QVERIFY(check.value(QStringLiteral("passed")).toBool());
  }

  // C from a file of the wrong shape, or with a NaN that beta ≠ 0 would read: refused, named.
  void badCRefused() {
    const QString bad = tmp_.path() + QStringLiteral("/c_bad.npy");
    QVERIFY(writeNpy(bad.toStdString(), {24, 23}, std::vector<float>(24 * 23, 1.0f)).ok());
    QStringList args = checkArgs(tmp_.path() + QStringLiteral("/none.npy"));
    args[args.indexOf(QStringLiteral("--c-file")) + 1] = bad;
    args.removeAt(args.indexOf(QStringLiteral("--observed")) + 1);
    args.removeAll(QStringLiteral("--observed"));
    CliResult r = runCli(args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("is 24 × 23 but D = A·B is 24 × 24"), r.err.constData());
    std::vector<float> nan(24 * 24, 1.0f);
    nan[5] = std::nanf("");
    QVERIFY(writeNpy(bad.toStdString(), {24, 24}, nan).ok());
    r = runCli(args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("non-finite value at [0, 5]"), r.err.constData());
    // C given with beta = 0 is not read by cuBLASLt: refused rather than ignored.
    args.removeAt(args.indexOf(QStringLiteral("--beta")) + 1);
    args.removeAll(QStringLiteral("--beta"));
    r = runCli(args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--c-file: C is read only when --beta is not 0"), r.err.constData());
  }
};

QTEST_MAIN(TestTensorCoreCli)
#include "test_tensor_core_cli.moc"

// `fp8lab-cli gemm` is a front end of the one GEMM error experiment: its flags and the equivalent
// `run` config give the same run (every dataset and metric bit for bit, compareRuns), --out saves
// it with the config that reproduces it, and `rerun` reproduces it. Runs the built fp8lab-cli.
#include <QtTest>

#include "experiment/gemm_run.h"
#include "session/session.h"

using namespace fp8lab;

namespace {

int cli(const QStringList& args, QByteArray* err = nullptr) {
  QProcess p;
  p.start(QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli"), args);
  if (!p.waitForFinished(120000)) return -1;
  if (err) *err = p.readAllStandardError();
  return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
}

Run readOnly(const QString& file) {
  auto rd = SessionReader::open(file.toStdString());
  if (!rd.ok()) qFatal("%s", rd.errors().c_str());
  const auto runs = rd.value->info().runs;
  if (runs.size() != 1) qFatal("%s: %d runs", qPrintable(file), int(runs.size()));
  auto r = rd.value->readRun(runs.front().id);
  if (!r.ok()) qFatal("%s", r.errors().c_str());
  return std::move(r.value);
}

} // namespace

class TestGemmCli : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // Different presets for A and B, an FP8 output with the automatic scale_D, the fast
  // accumulation model and log-normal operands: every option the flags have that the config
  // spells differently.
  void gemmFlagsAndTheEquivalentConfigGiveTheSameRun() {
    QTemporaryDir dir;
    const QString a = dir.filePath(QStringLiteral("flags.h5")), b = dir.filePath(QStringLiteral("config.h5"));
    QByteArray err;
    QCOMPARE(cli({QStringLiteral("gemm"),
                  QStringLiteral("--m"),
                  QStringLiteral("40"),
                  QStringLiteral("--n"),
                  QStringLiteral("24"),
                  QStringLiteral("--k"),
                  QStringLiteral("300"),
                  QStringLiteral("--seed"),
                  QStringLiteral("11"),
                  QStringLiteral("--a-scaling"),
                  QStringLiteral("te_current"),
                  QStringLiteral("--b-scaling"),
                  QStringLiteral("torchao_rowwise"),
                  QStringLiteral("--output"),
                  QStringLiteral("e4m3fn"),
                  QStringLiteral("--accumulation"),
                  QStringLiteral("fast"),
                  QStringLiteral("--distribution"),
                  QStringLiteral("lognormal"),
                  QStringLiteral("--scale"),
                  QStringLiteral("0.5"),
                  QStringLiteral("--backend"),
                  QStringLiteral("cpu"),
                  QStringLiteral("--out"),
                  a},
                 &err),
             0);
    QVERIFY2(err.contains("saved as run gemm-E4M3FN-te_current-lognormal in"), err.constData());
    QFile cfg(dir.filePath(QStringLiteral("c.json")));
    QVERIFY(cfg.open(QIODevice::WriteOnly));
    cfg.write(R"({"type": "gemm", "m": 40, "n": 24, "k": 300, "seed": 11, "scaling": "te_current",
                  "scaling_b": "torchao_rowwise", "output": "e4m3fn", "output_quant_scale": "auto",
                  "accumulation": "fast_accum",
                  "a": {"distribution": "lognormal", "scale": 0.5}, "b": {"distribution": "lognormal", "scale": 0.5}})");
    cfg.close();
    QCOMPARE(cli({QStringLiteral("run"), cfg.fileName(), QStringLiteral("--backend"), QStringLiteral("cpu"),
                  QStringLiteral("--out"), b},
                 &err),
             0);
    const Run ra = readOnly(a), rb = readOnly(b);
    int nd = 0, nm = 0;
    const auto diffs = compareRuns(ra, rb, &nd, &nm);
    QVERIFY2(diffs.empty(), diffs.empty() ? "" : diffs.front().c_str());
    QVERIFY(nd >= 15);
    QVERIFY(nm >= 20);
    QCOMPARE(QString::fromStdString(attrString(ra.attrs, "scaling_b").value_or("")), QStringLiteral("torchao_rowwise"));
    // The saved flags run re-runs from its stored config.
    QCOMPARE(cli({QStringLiteral("rerun"), a, QStringLiteral("gemm-E4M3FN-te_current-lognormal")}, &err), 0);
  }

  // An NVFP4 run (stochastic rounding, so the seed matters) saved by `gemm --out` re-runs bit for
  // bit with `rerun` (which exits non-zero on any difference); the formats default to E2M1 and a
  // different one beside an NVFP4 preset is refused naming the flag.
  void nvfp4GemmRerunsBitForBit() {
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("nvfp4.h5"));
    QByteArray err;
    QCOMPARE(cli({QStringLiteral("gemm"), QStringLiteral("--m"), QStringLiteral("32"), QStringLiteral("--n"),
                  QStringLiteral("16"), QStringLiteral("--k"), QStringLiteral("64"), QStringLiteral("--scaling"),
                  QStringLiteral("nvfp4_te_sr"), QStringLiteral("--out"), f},
                 &err),
             0);
    const Run run = readOnly(f);
    QCOMPARE(run.id, std::string("gemm-E2M1-nvfp4_te_sr-normal"));
    QCOMPARE(attrString(run.find("quantized/A_scale_codes")->attrs, "format").value_or(""), std::string("E4M3FN"));
    QCOMPARE(cli({QStringLiteral("rerun"), f, QStringLiteral("gemm-E2M1-nvfp4_te_sr-normal")}, &err), 0);
    QCOMPARE(cli({QStringLiteral("gemm"), QStringLiteral("--k"), QStringLiteral("64"), QStringLiteral("--scaling"),
                  QStringLiteral("nvfp4_te"), QStringLiteral("--a-format"), QStringLiteral("E4M3FN")},
                 &err),
             2);
    QVERIFY2(err.contains("--a-format: is 'E4M3FN' beside the NVFP4 preset 'nvfp4_te'"), err.constData());
  }

  // Without --out nothing is written; a bad --out is refused before computing.
  void outIsCheckedFirst() {
    QTemporaryDir dir;
    QByteArray err;
    QCOMPARE(cli({QStringLiteral("gemm"), QStringLiteral("--m"), QStringLiteral("8"), QStringLiteral("--out"),
                  dir.filePath(QStringLiteral("no/such/dir/x.h5"))},
                 &err),
             2);
    QVERIFY2(!err.isEmpty(), "an error message");
  }
};

QTEST_MAIN(TestGemmCli)
#include "test_gemm_cli.moc"

// `--backend auto|cpu|gpu` of fp8lab-cli as a user meets it: which backend ran is
// printed and stored, auto without a usable GPU runs on the CPU with a one-line note naming the
// reason, gpu without one is an error (exit 2) naming the same reason, a bad value is an error,
// sessions record backend / device / backend_request / backend_note, rerun reproduces on the CPU.
// On a machine with a usable GPU the same suite checks the GPU side instead: auto runs E4M3FN on
// "cuda" with versions and FAST_ACCUM, falls back for E5M2 x E5M2 with cuBLASLt's reason, gpu
// refuses it. Runs the built fp8lab-cli (FP8LAB_BINARY_DIR/app/fp8lab-cli) with QProcess.
#include "cli_runner.h"
#include <QtTest>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include "session/session.h"

using namespace fp8lab;

namespace {

QString cliPath() {
  return QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli");
}

using fp8lab::testsupport::CliResult;

CliResult cli(const QStringList& args) {
  return fp8lab::testsupport::runCli(args);
}

const QStringList kSmallGemm = {QStringLiteral("gemm"), QStringLiteral("--m"), QStringLiteral("16"),
                                QStringLiteral("--n"),  QStringLiteral("16"),  QStringLiteral("--k"),
                                QStringLiteral("64")};

QString writeFile(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
  const QString p = dir.filePath(name);
  QFile f(p);
  if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(p));
  f.write(text);
  return p;
}

} // namespace

class TestBackendCli : public QObject {
  Q_OBJECT

  bool gpu_ = false; // `--backend gpu` ran: this machine has a usable GPU
  QString no_gpu_;   // otherwise: the reason, as the CLI names it

private Q_SLOTS:
  void initTestCase() {
    QVERIFY2(QFileInfo::exists(cliPath()), qPrintable(QStringLiteral("build fp8lab-cli first: %1").arg(cliPath())));
    const CliResult r =
        cli(kSmallGemm + QStringList{QStringLiteral("--backend"), QStringLiteral("gpu"), QStringLiteral("--json")});
    QVERIFY2(r.code == 0 || r.code == 2, r.err.constData());
    gpu_ = r.code == 0;
    if (!gpu_) {
      // "fp8lab-cli: error: --backend gpu: <reason>" and nothing on stdout
      const QString e = QString::fromUtf8(r.err).trimmed();
      const QString prefix = QStringLiteral("fp8lab-cli: error: --backend gpu: ");
      QVERIFY2(e.startsWith(prefix), qPrintable(e));
      QVERIFY(r.out.isEmpty());
      no_gpu_ = e.mid(prefix.size());
      // the reasons gpu/ gives (makeCudaGemmBackend) or a build without CUDA
      QVERIFY2(no_gpu_.startsWith(QStringLiteral("no CUDA device (")) ||
                   no_gpu_.startsWith(QStringLiteral("this build has no CUDA support")) ||
                   no_gpu_.contains(QStringLiteral("has no FP8 tensor cores")),
               qPrintable(no_gpu_));
      qInfo("no usable GPU: %s", qPrintable(no_gpu_));
    }
  }

  void badValueIsAnError() {
    const CliResult r = cli(kSmallGemm + QStringList{QStringLiteral("--backend"), QStringLiteral("tpu")});
    QCOMPARE(r.code, 2);
    QCOMPARE(QString::fromUtf8(r.err).trimmed(),
             QStringLiteral("fp8lab-cli: error: --backend must be auto, cpu or gpu (got 'tpu')"));
    QVERIFY(r.out.isEmpty());
  }

  void gemmCpuIsQuiet() {
    const CliResult r =
        cli(kSmallGemm + QStringList{QStringLiteral("--backend"), QStringLiteral("cpu"), QStringLiteral("--json")});
    QCOMPARE(r.code, 0);
    const QJsonObject j = r.json();
    QCOMPARE(j.value(QStringLiteral("backend")).toString(), QStringLiteral("cpu"));
    QCOMPARE(j.value(QStringLiteral("backend_request")).toString(), QStringLiteral("cpu"));
    QCOMPARE(j.value(QStringLiteral("backend_note")).toString(), QString());
    QVERIFY(!j.value(QStringLiteral("device")).toString().isEmpty());
    QVERIFY2(!r.err.contains("note:"), r.err.constData());
  }

  void gemmAutoWithoutGpuRunsOnCpuWithNote() {
    if (gpu_) QSKIP("this machine has a usable GPU (gemmAutoOnGpu checks it)");
    const CliResult r = cli(kSmallGemm + QStringList{QStringLiteral("--json")}); // default: auto
    QCOMPARE(r.code, 0);
    const QJsonObject j = r.json();
    QCOMPARE(j.value(QStringLiteral("backend")).toString(), QStringLiteral("cpu"));
    QCOMPARE(j.value(QStringLiteral("backend_request")).toString(), QStringLiteral("auto"));
    QCOMPARE(j.value(QStringLiteral("backend_note")).toString(), no_gpu_);
    QVERIFY(!j.contains(QStringLiteral("versions"))); // GPU runs only
    if (no_gpu_.startsWith(QStringLiteral("this build has no CUDA support"))) {
      QVERIFY2(!r.err.contains("note:"), r.err.constData()); // a CPU-only build runs on the CPU silently
    } else {
      // exactly one note line naming the reason
      QCOMPARE(r.err.count("note:"), 1);
      QVERIFY2(
          r.err.contains(
              QStringLiteral("note: --backend auto: %1; running on the CPU reference backend\n").arg(no_gpu_).toUtf8()),
          r.err.constData());
    }
    // text output says which backend ran
    const CliResult t = cli(kSmallGemm);
    QCOMPARE(t.code, 0);
    QVERIFY2(t.out.contains("\nbackend cpu (--backend auto): "), t.out.constData());
  }

  void gemmAutoOnGpu() {
    if (!gpu_) QSKIP("no usable GPU here");
    const CliResult r = cli(kSmallGemm + QStringList{QStringLiteral("--json")});
    QCOMPARE(r.code, 0);
    const QJsonObject j = r.json();
    QCOMPARE(j.value(QStringLiteral("backend")).toString(), QStringLiteral("cuda"));
    QCOMPARE(j.value(QStringLiteral("fast_accum")).toBool(true), false); // split accumulation: FAST_ACCUM = 0
    const QJsonObject v = j.value(QStringLiteral("versions")).toObject();
    QVERIFY(v.value(QStringLiteral("cuda_runtime")).toInt() > 0);
    QVERIFY(v.value(QStringLiteral("cublaslt")).toDouble() > 0);
    // E5M2 x E5M2: cuBLASLt refuses (one operand must be E4M3FN); auto falls back and says why
    const QStringList e5 = kSmallGemm + QStringList{QStringLiteral("--a-format"), QStringLiteral("E5M2"),
                                                    QStringLiteral("--b-format"), QStringLiteral("E5M2")};
    const CliResult f = cli(e5 + QStringList{QStringLiteral("--json")});
    QCOMPARE(f.code, 0);
    QCOMPARE(f.json().value(QStringLiteral("backend")).toString(), QStringLiteral("cpu"));
    QVERIFY2(f.json()
                 .value(QStringLiteral("backend_note"))
                 .toString()
                 .contains(QStringLiteral("E5M2 x E5M2 is not supported")),
             f.out.constData());
    QVERIFY2(f.err.contains("note: --backend auto: "), f.err.constData());
    const CliResult g = cli(e5 + QStringList{QStringLiteral("--backend"), QStringLiteral("gpu")});
    QCOMPARE(g.code, 2);
    QVERIFY2(g.err.contains("E5M2 x E5M2 is not supported"), g.err.constData());
  }

  void runRecordsTheBackendAndRerunUsesTheCpu() {
    QTemporaryDir dir;
    const QString cfg =
        writeFile(dir, QStringLiteral("g.json"), R"({"type": "gemm", "m": 16, "k": 64, "n": 16, "seed": 5})");
    const QString out = dir.filePath(QStringLiteral("s.h5"));
    // gpu without a GPU: refused before anything is written
    if (!gpu_) {
      const CliResult g = cli({QStringLiteral("run"), cfg, QStringLiteral("--out"), out, QStringLiteral("--backend"),
                               QStringLiteral("gpu")});
      QCOMPARE(g.code, 2);
      QVERIFY2(g.err.contains(QStringLiteral("--backend gpu: %1").arg(no_gpu_).toUtf8()), g.err.constData());
      QVERIFY(!QFileInfo::exists(out));
    }
    const CliResult r = cli({QStringLiteral("run"), cfg, QStringLiteral("--out"), out, QStringLiteral("--id"),
                             QStringLiteral("g1"), QStringLiteral("--json")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonObject j = r.json();
    const QString ran = gpu_ ? QStringLiteral("cuda") : QStringLiteral("cpu");
    QCOMPARE(j.value(QStringLiteral("backend")).toString(), ran);
    QCOMPARE(j.value(QStringLiteral("backend_request")).toString(), QStringLiteral("auto"));
    QVERIFY(!j.value(QStringLiteral("device")).toString().isEmpty());
    QVERIFY(!j.value(QStringLiteral("algorithm")).toString().isEmpty());

    auto s = loadSession(out.toStdString());
    QVERIFY2(s.ok(), s.errors().c_str());
    QCOMPARE(s.value.runs.size(), size_t(1));
    const Run& run = s.value.runs[0];
    QCOMPARE(QString::fromStdString(run.backend), ran);
    QCOMPARE(QString::fromStdString(run.device), j.value(QStringLiteral("device")).toString());
    QCOMPARE(attrString(run.attrs, "backend_request").value_or(""), std::string("auto"));
    QCOMPARE(QString::fromStdString(attrString(run.attrs, "algorithm").value_or("")),
             j.value(QStringLiteral("algorithm")).toString());
    if (gpu_) {
      QCOMPARE(attrInt(run.attrs, "fast_accum").value_or(-1), int64_t(0));
      QVERIFY(attrInt(run.attrs, "cublaslt_version").value_or(0) > 0);
      QVERIFY(attrInt(run.attrs, "cuda_runtime_version").value_or(0) > 0);
    } else {
      QCOMPARE(QString::fromStdString(attrString(run.attrs, "backend_note").value_or("")), no_gpu_);
      QVERIFY(!attrInt(run.attrs, "cublaslt_version")); // GPU runs only
      // rerun reproduces on the CPU backend, bit for bit, and says so
      const CliResult re = cli({QStringLiteral("rerun"), out, QStringLiteral("g1")});
      QVERIFY2(re.code == 0, (re.out + re.err).constData());
      QVERIFY2(re.out.contains("on the CPU backend"), re.out.constData());
    }
    // rerun takes no other backend: it says why instead of running elsewhere
    const CliResult rg =
        cli({QStringLiteral("rerun"), out, QStringLiteral("g1"), QStringLiteral("--backend"), QStringLiteral("gpu")});
    QCOMPARE(rg.code, 2);
    QVERIFY2(rg.err.contains("rerun reproduces on the CPU reference backend only"), rg.err.constData());
  }

  void sweepTakesTheBackend() {
    QTemporaryDir dir;
    const QString cfg =
        writeFile(dir, QStringLiteral("s.json"),
                  R"({"type": "gemm", "m": 16, "k": 32, "n": 16, "sweep": {"formats": ["E4M3FN", "E5M2"]}})");
    const QString out = dir.filePath(QStringLiteral("s.h5"));
    const CliResult bad = cli({QStringLiteral("sweep"), cfg, QStringLiteral("--out"), out, QStringLiteral("--backend"),
                               QStringLiteral("xpu")});
    QCOMPARE(bad.code, 2);
    QVERIFY(!QFileInfo::exists(out));
    const CliResult r = cli({QStringLiteral("sweep"), cfg, QStringLiteral("--out"), out, QStringLiteral("--backend"),
                             QStringLiteral("cpu"), QStringLiteral("--json")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonObject j = r.json();
    QCOMPARE(j.value(QStringLiteral("backend_request")).toString(), QStringLiteral("cpu"));
    const QJsonArray rows = j.value(QStringLiteral("runs")).toArray();
    QCOMPARE(rows.size(), 2);
    for (const auto& x : rows)
      QCOMPARE(x.toObject().value(QStringLiteral("backend")).toString(), QStringLiteral("cpu"));
    if (!gpu_) {
      const CliResult g =
          cli({QStringLiteral("sweep"), cfg, QStringLiteral("--out"), dir.filePath(QStringLiteral("g.h5")),
               QStringLiteral("--backend"), QStringLiteral("gpu")});
      QCOMPARE(g.code, 2);
      QVERIFY2(g.err.contains(QStringLiteral("--backend gpu: %1").arg(no_gpu_).toUtf8()), g.err.constData());
      QVERIFY(!QFileInfo::exists(dir.filePath(QStringLiteral("g.h5"))));
    }
  }
};

QTEST_GUILESS_MAIN(TestBackendCli)
#include "test_backend_cli.moc"

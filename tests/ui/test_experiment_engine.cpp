// The desktop app and the CLI on one experiment model: a GEMM run made in the window stores the
// canonical config and `fp8lab-cli rerun` reproduces it bit for bit; a training experiment runs in
// process with per-step progress, Cancel keeps the finished steps (status "cancelled"), and the
// CLI reproduces that run too; the panel's Save config… / Load config… round-trip every scaling
// choice it offers.
#include "experiment_panel.h"
#include "experiment_runner.h"
#include "job.h"
#include "main_window.h"
#include "session.h"

#include "io/json_document.h"
#include "session/session.h"

#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace fp8lab::ui;

namespace {

const QString kCli = QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli");

MainWindow::Options testOptions() {
  MainWindow::Options o;
  o.restore_settings = false;
  o.open_default_session = false;
  o.probe_backend = false;
  return o;
}

/// fp8lab-cli with `args`; its exit code, stdout+stderr in *output.
int cli(const QStringList& args, QByteArray* output) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(kCli, args);
  if (!p.waitForFinished(300000)) return -1;
  *output = p.readAll();
  return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
}

fp8lab::Json storedConfig(const QString& file, const QString& run) {
  auto rd = fp8lab::SessionReader::open(file.toStdString());
  if (!rd.ok()) return {};
  for (const auto& ri : rd.value->info().runs)
    if (ri.id == run.toStdString()) return fp8lab::Json::parse(ri.config_json);
  return {};
}

} // namespace

class TestExperimentEngine : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // A GEMM run from the panel (per-row scaling, split accumulation — the panel's spelling
  // "split-fp32") stores the canonical config: format_a, the preset name, the canonical
  // accumulation name; the CLI re-runs it from the saved file and finds every dataset and metric
  // identical.
  void guiGemmRunRerunsBitForBitWithTheCli() {
    MainWindow w(testOptions());
    if (!w.hasExperimentRunner()) QSKIP("no experiment runner in this build");
    if (!QFileInfo(kCli).isExecutable()) QSKIP("no fp8lab-cli in this build");
    QJsonObject c = ExperimentPanel::defaultConfig();
    c[QStringLiteral("m")] = 48;
    c[QStringLiteral("n")] = 40;
    c[QStringLiteral("k")] = 256;
    c[QStringLiteral("scaling")] = QStringLiteral("per-row");
    c[QStringLiteral("accumulation")] = QStringLiteral("split-fp32");
    c[QStringLiteral("backend")] = QStringLiteral("cpu");
    QSignalSpy ended(w.job(), &Job::ended);
    QVERIFY(w.runExperiment(c));
    QVERIFY(ended.wait(120000));
    QCOMPARE(w.session()->runCount(), 1);
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("gui.h5"));
    QString error;
    QVERIFY2(w.writeSession(file, &error), qPrintable(error));
    const QString id = w.session()->run(0).id;
    const fp8lab::Json cfg = storedConfig(file, id);
    QCOMPARE(QString::fromStdString(cfg.value("type", "")), QStringLiteral("gemm"));
    QCOMPARE(QString::fromStdString(cfg.value("scaling", "")), QStringLiteral("torchao_rowwise"));
    QCOMPARE(QString::fromStdString(cfg.value("format_a", "")), QStringLiteral("E4M3FN"));
    QCOMPARE(QString::fromStdString(cfg.value("accumulation", "")), QStringLiteral("split"));
    QVERIFY(!cfg.contains("a_format"));
    QByteArray out;
    QCOMPARE(cli({QStringLiteral("rerun"), file, id}, &out), 0);
    QVERIFY2(out.contains("reproduced bit for bit"), out.constData());
  }

  // A training experiment in process: progress is reported per step (many distinct fractions,
  // not a busy bar), Cancel after a few steps keeps the run with the steps it finished (status
  // cancelled, steps_completed between 1 and the total), the window opens the file, and the CLI
  // re-runs the cancelled run bit for bit (it stops at the same step).
  void guiTrainingRunsInProcessAndCancelKeepsTheSteps() {
    MainWindow w(testOptions());
    if (!QFileInfo(kCli).isExecutable()) QSKIP("no fp8lab-cli in this build");
    // 1024 images, batch 64: 16 steps per epoch, 4 epochs = 64 steps.
    const QByteArray config = R"({"type": "training", "id": "tiny", "train_limit": 1024, "test_limit": 256,
      "batch_size": 64, "epochs": 4, "layers": [784, 32, 10], "seed": 5,
      "scaling": {"strategy": "delayed-te", "history_len": 16}})";
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("train.h5"));
    QSignalSpy ended(w.job(), &Job::ended);
    QSignalSpy cancelled(w.job(), &Job::cancelled);
    QSignalSpy failed(w.job(), &Job::failed);
    QList<double> fractions;
    connect(w.job(), &Job::progress, this, [&](double f, const QString&) {
      fractions << f;
      if (f > 0.3) w.job()->cancel();
    });
    QVERIFY(w.runTrainingExperiment(config, file, QStringLiteral("tiny training")));
    QVERIFY(ended.wait(300000));
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed[0][0].toString()));
    QCOMPARE(cancelled.count(), 0); // the finished steps were kept: the job ends as finished
    QVERIFY(std::adjacent_find(fractions.begin(), fractions.end(), std::greater<double>()) == fractions.end());
    QVERIFY2(std::any_of(fractions.begin(), fractions.end(), [](double f) { return f > 0 && f < 1; }),
             "a fraction of the experiment, not a busy bar");
    auto rd = fp8lab::SessionReader::open(file.toStdString());
    QVERIFY2(rd.ok(), rd.errors().c_str());
    auto run = rd.value->readRun("tiny");
    QVERIFY2(run.ok(), run.errors().c_str());
    QCOMPARE(QString::fromStdString(fp8lab::attrString(run.value.attrs, "status").value_or("")),
             QStringLiteral("cancelled"));
    const int64_t steps = fp8lab::attrInt(run.value.attrs, "steps_completed").value_or(-1);
    QVERIFY2(steps >= 1 && steps < 64, qPrintable(QString::number(steps)));
    rd.value.reset();
    QCOMPARE(w.session()->fileName(), file); // opened when the job ended
    QByteArray out;
    QCOMPARE(cli({QStringLiteral("rerun"), file, QStringLiteral("tiny")}, &out), 0);
    QVERIFY2(out.contains("reproduced bit for bit"), out.constData());
  }

  // Save config… writes the canonical config; Load config… into a panel set to other values gives
  // back the same preset and the same canonical text, for every scaling choice the panel offers.
  void panelConfigRoundTripsEveryScalingChoice() {
    QTemporaryDir dir;
    int checked = 0;
    for (const char* s : {"per-tensor-current", "per-row", "1x128", "128x128", "mx32"})
      for (const char* p : {"te", "torchao", "deepgemm", "flax"})
        for (bool pow2 : {false, true})
          for (const char* mx : {"floor", "rceil"}) {
            ExperimentPanel a;
            QJsonObject c = ExperimentPanel::defaultConfig();
            c[QStringLiteral("scaling")] = QString::fromLatin1(s);
            c[QStringLiteral("preset")] = QString::fromLatin1(p);
            c[QStringLiteral("pow2_scales")] = pow2;
            c[QStringLiteral("mx_rule")] = QString::fromLatin1(mx);
            c[QStringLiteral("accumulation")] = QStringLiteral("fast");
            c[QStringLiteral("seed")] = 7;
            a.setConfig(c);
            const QString preset = scalingPresetFor(a.config(), nullptr);
            const QString f = dir.filePath(QStringLiteral("c.json"));
            QString why;
            if (preset.isEmpty()) {
              QVERIFY(!a.saveConfig(f, &why)); // no preset: nothing to save, and it says why
              QVERIFY(!why.isEmpty());
              continue;
            }
            QVERIFY2(a.saveConfig(f, &why), qPrintable(why));
            ExperimentPanel b; // defaults: te per-tensor, split, seed 42
            QVERIFY2(b.loadConfig(f, &why), qPrintable(why));
            QCOMPARE(scalingPresetFor(b.config(), nullptr), preset);
            QCOMPARE(canonicalGemmConfig(b.config(), QString(), &why),
                     canonicalGemmConfig(a.config(), QString(), &why));
            ++checked;
          }
    QVERIFY(checked > 0);
  }

  // Load config… refuses what the panel cannot express, and leaves the fields as they were.
  void panelLoadRefusesWhatItCannotShow() {
    ExperimentPanel p;
    const QJsonObject before = p.config();
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("c.json"));
    QFile out(f);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(R"({"type": "gemm", "m": 8, "k": 8, "n": 8, "a": {"distribution": "normal"},
                  "b": {"distribution": "lognormal"}})");
    out.close();
    QString why;
    QVERIFY(!p.loadConfig(f, &why));
    QVERIFY2(why.contains(QStringLiteral("one distribution")), qPrintable(why));
    QCOMPARE(p.config(), before);
  }
};

QTEST_MAIN(TestExperimentEngine)
#include "test_experiment_engine.moc"

// The training path of fp8lab-cli as a user meets it: SIGINT during training stops after the
// current step and leaves a valid session holding everything so far; a missing
// Fashion-MNIST package gives a message naming it and writes nothing; a bad config names the key;
// the first non-finite value of a run is one line on stderr, in the JSON summary and in inspect.
// Runs the built fp8lab-cli (FP8LAB_BINARY_DIR/app/fp8lab-cli) with QProcess.
#include <QtTest>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include "session/session.h"

#include <csignal>
#include <sys/types.h>

using namespace fp8lab;

namespace {

QString cliPath() {
  return QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli");
}

/// A small training experiment: 2 runs on the first 4096 images, many epochs so that the
/// interrupt always lands during training.
QByteArray smallConfig(int epochs) {
  return QStringLiteral(R"({
  "type": "training",
  "train_limit": 4096, "test_limit": 500,
  "defaults": {"epochs": %1, "batch_size": 128, "seed": 3},
  "runs": [
    {"id": "delayed", "precision": "fp8", "scaling": {"strategy": "delayed-flax", "history_len": 16}},
    {"id": "baseline", "precision": "fp32"}
  ]
})")
      .arg(epochs)
      .toUtf8();
}

QString writeConfig(const QTemporaryDir& dir, const QByteArray& text) {
  const QString p = dir.filePath(QStringLiteral("config.json"));
  QFile f(p);
  if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write config");
  f.write(text);
  return p;
}

} // namespace

class TestTrainingCli : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void initTestCase() {
    QVERIFY2(QFileInfo::exists(cliPath()), qPrintable(QStringLiteral("build fp8lab-cli first: %1").arg(cliPath())));
  }

  void sigintSavesTheSessionSoFar() {
    QTemporaryDir dir;
    const QString cfg = writeConfig(dir, smallConfig(200));
    const QString out = dir.filePath(QStringLiteral("s.h5"));
    QProcess p;
    // --backend cpu: rerun below promises identical bits for CPU runs (auto would take a GPU)
    p.start(cliPath(), {QStringLiteral("train"), cfg, QStringLiteral("--out"), out, QStringLiteral("--backend"),
                        QStringLiteral("cpu")});
    QVERIFY(p.waitForStarted());
    // Wait until the delayed run has reported its first epoch, so it is mid-training (the baseline
    // trains beside it and may report its own first epoch earlier).
    QByteArray err;
    QElapsedTimer t;
    t.start();
    while (!err.contains("delayed: epoch 1:") && t.elapsed() < 120000) {
      p.waitForReadyRead(200);
      err += p.readAllStandardError();
      QVERIFY2(p.state() == QProcess::Running, err.constData());
    }
    QVERIFY2(err.contains("delayed: epoch 1:"), err.constData());
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(60000));
    err += p.readAllStandardError();
    QCOMPARE(p.exitStatus(), QProcess::NormalExit); // handled, not killed by the signal
    QCOMPARE(p.exitCode(), 130);
    QVERIFY2(err.contains("interrupted") && err.contains(out.toUtf8()), err.constData());
    // The file is a valid session with the interrupted run, marked cancelled, consistent.
    auto rd = SessionReader::open(out.toStdString());
    QVERIFY2(rd.ok(), rd.message().c_str());
    auto run = rd.value->readRun("delayed");
    QVERIFY2(run.ok(), run.message().c_str());
    const Run& r = run.value;
    QCOMPARE(r.type, std::string("training"));
    QCOMPARE(attrString(r.attrs, "status").value_or(""), std::string("cancelled"));
    const int64_t steps = attrInt(r.attrs, "steps_completed").value_or(-1);
    QVERIFY2(steps >= 32 && steps < 200 * 32, qPrintable(QString::number(steps))); // ≥ 1 epoch of 32 steps
    QCOMPARE(r.find("training/loss")->shape, (std::vector<int64_t>{steps}));
    QCOMPARE(r.find("history/fc2/kernel/amax_history")->shape, (std::vector<int64_t>{steps, 16}));
    QCOMPARE(r.find("history/fc3/output_grad/scale")->shape, (std::vector<int64_t>{steps}));
    QVERIFY(r.find("training/accuracy")->shape[0] >= 1);
    QCOMPARE(r.find("weights/fc1/kernel")->shape, (std::vector<int64_t>{784, 256}));
    // The next run trains beside the first (two Fashion-MNIST runs share the cores): the interrupt
    // stops it too, and it is saved as cancelled with the steps it finished, or not at all when it
    // had not finished its first step.
    if (rd.value->info().find("baseline")) {
      auto base = rd.value->readRun("baseline");
      QVERIFY2(base.ok(), base.message().c_str());
      QCOMPARE(attrString(base.value.attrs, "status").value_or(""), std::string("cancelled"));
    }
    // No temporary files are left beside it.
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 2); // config.json, s.h5
    rd.value.reset();
    // The interrupted run is reproducible: rerun trains the same seed up to the same step and
    // compares every dataset bit for bit (exit 0 = identical).
    QProcess re;
    re.start(cliPath(), {QStringLiteral("rerun"), out, QStringLiteral("delayed"), QStringLiteral("--json")});
    QVERIFY(re.waitForFinished(120000));
    const QByteArray rout = re.readAllStandardOutput();
    QVERIFY2(re.exitCode() == 0 && rout.contains("\"identical\": true"),
             (rout + re.readAllStandardError()).constData());
  }

  void runCommandDispatchesTrainingConfigs() {
    // `fp8lab-cli run` (the main job's command) sends "type": "training" here; --id names the run.
    QTemporaryDir dir;
    const QString cfg =
        writeConfig(dir, R"({"type": "training", "precision": "fp8", "scaling": {"strategy": "current-te"},
      "train_limit": 256, "test_limit": 100, "epochs": 1, "batch_size": 64})");
    const QString out = dir.filePath(QStringLiteral("s.h5"));
    QProcess p;
    p.start(cliPath(), {QStringLiteral("run"), cfg, QStringLiteral("--out"), out, QStringLiteral("--id"),
                        QStringLiteral("tiny"), QStringLiteral("--json")});
    QVERIFY(p.waitForFinished(120000));
    const QByteArray o = p.readAllStandardOutput();
    QVERIFY2(p.exitCode() == 0, (o + p.readAllStandardError()).constData());
    const QJsonObject j = QJsonDocument::fromJson(o).object();
    QCOMPARE(j.value(QStringLiteral("runs")).toArray().at(0).toObject().value(QStringLiteral("id")).toString(),
             QStringLiteral("tiny"));
    QCOMPARE(j.value(QStringLiteral("runs")).toArray().at(0).toObject().value(QStringLiteral("steps")).toInt(),
             4); // 256 / 64
    auto rd = SessionReader::open(out.toStdString());
    QVERIFY2(rd.ok(), rd.message().c_str());
    QVERIFY(rd.value->info().find("tiny") != nullptr);
  }

  void firstNonFiniteIsPrintedAndInspected() {
    // Every pixel of the batch × 1e6 at step 5 through a non-saturating E4M3FN cast whose delayed
    // scale came from amaxes of 1 (quant 448 / 2^4 = 28): each non-zero pixel scales to ≥ 1e6 / 255 · 28
    // ≫ 464 and becomes NaN, so the first non-finite value is fc1's quantized input at step 5, at the
    // first non-zero pixel of batch row 0 (which pixel depends on the shuffled image; the session names it).
    QTemporaryDir dir;
    const QString cfg = writeConfig(dir, R"({"type": "training", "id": "nf", "train_limit": 512, "test_limit": 100,
      "epochs": 2, "batch_size": 64,
      "scaling": {"strategy": "delayed-te", "history_len": 4, "margin": 4, "saturate": false},
      "spike": {"step": 5, "factor": 1e6, "layer": 0}})");
    const QString out = dir.filePath(QStringLiteral("s.h5"));
    QProcess p;
    p.start(cliPath(), {QStringLiteral("train"), cfg, QStringLiteral("--out"), out, QStringLiteral("--json")});
    QVERIFY(p.waitForFinished(120000));
    const QByteArray o = p.readAllStandardOutput(), err = p.readAllStandardError();
    QVERIFY2(p.exitCode() == 0, (o + err).constData());
    const QJsonObject run =
        QJsonDocument::fromJson(o).object().value(QStringLiteral("runs")).toArray().at(0).toObject();
    QCOMPARE(run.value(QStringLiteral("status")).toString(), QStringLiteral("stopped_nonfinite"));
    QCOMPARE(run.value(QStringLiteral("steps")).toInt(), 6); // steps 0 … 5: the step of the record is kept
    auto rd = SessionReader::open(out.toStdString());
    QVERIFY2(rd.ok(), rd.message().c_str());
    const RunInfo* info = rd.value->info().find("nf");
    QVERIFY(info);
    const Attributes& g = info->group_attrs.at("nonfinite");
    QCOMPARE(attrInt(g, "step").value_or(-1), int64_t{5});
    QCOMPARE(attrInt(g, "row").value_or(-1), int64_t{0});
    const QString where =
        QStringLiteral("step 5, layer fc1, fprop.input[0,%1] = nan").arg(attrInt(g, "col").value_or(-1));
    // one line on stderr when the run is saved, and the same in the JSON summary and in inspect
    const QString line = QStringLiteral("nf: first non-finite value: ") + where;
    QVERIFY2(err.contains(line.toUtf8()) && err.contains("; run stopped (on_nonfinite stop)\n"), err.constData());
    QCOMPARE(err.count("first non-finite value"), 1);
    QVERIFY(run.value(QStringLiteral("first_nonfinite")).toString().startsWith(where));
    QProcess ins;
    ins.start(cliPath(), {QStringLiteral("inspect"), out});
    QVERIFY(ins.waitForFinished(60000));
    const QByteArray text = ins.readAllStandardOutput();
    QVERIFY2(text.contains((QStringLiteral("  first non-finite value: ") + where).toUtf8()), text.constData());
    QVERIFY2(text.contains("  status = stopped_nonfinite\n"), text.constData());
  }

  void missingDatasetNamesThePackageAndWritesNothing() {
    QTemporaryDir dir;
    const QString cfg = writeConfig(dir, smallConfig(1));
    const QString out = dir.filePath(QStringLiteral("s.h5"));
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("FP8LAB_FASHION_MNIST_DIR"), dir.filePath(QStringLiteral("no-such-dir")));
    p.setProcessEnvironment(env);
    p.start(cliPath(), {QStringLiteral("train"), cfg, QStringLiteral("--out"), out});
    QVERIFY(p.waitForFinished(60000));
    const QByteArray err = p.readAllStandardError();
    QCOMPARE(p.exitCode(), 2);
    QVERIFY2(err.contains("apt-get install dataset-fashion-mnist"), err.constData());
    QVERIFY2(err.contains("no-such-dir"), err.constData());
    QVERIFY(!QFileInfo::exists(out));
  }

  void badConfigNamesTheKey() {
    QTemporaryDir dir;
    const QString cfg =
        writeConfig(dir, R"({"type": "training", "runs": [{"precision": "fp8", "scaling": {"strategy": "dalayed"}}]})");
    QProcess p;
    p.start(cliPath(), {QStringLiteral("train"), cfg, QStringLiteral("--out"), dir.filePath(QStringLiteral("s.h5"))});
    QVERIFY(p.waitForFinished(60000));
    const QByteArray err = p.readAllStandardError();
    QCOMPARE(p.exitCode(), 2);
    QVERIFY2(err.contains("runs[0].scaling.strategy") && err.contains("dalayed"), err.constData());
  }

  void unwritableOutputFailsBeforeTraining() {
    QTemporaryDir dir;
    const QString cfg = writeConfig(dir, smallConfig(1));
    QProcess p;
    p.start(cliPath(),
            {QStringLiteral("train"), cfg, QStringLiteral("--out"), QStringLiteral("/nonexistent-dir/s.h5")});
    QVERIFY(p.waitForFinished(20000));
    const QByteArray err = p.readAllStandardError();
    QCOMPARE(p.exitCode(), 2);
    QVERIFY2(err.contains("/nonexistent-dir"), err.constData());
    QVERIFY2(!err.contains("epoch"), err.constData());
  }
};

QTEST_GUILESS_MAIN(TestTrainingCli)
#include "test_training_cli.moc"

// Reliability, signals (docs/reliability.md, suite `rel`): The CLI stopped by signals: the first keeps the finished
// runs, a second still saves, a third stops and says what is lost; several experiments saved in one rewrite; a sweep
// resumed.
#include "reliability_util.h"

using namespace fp8lab;
using namespace reliability;

class TestReliabilitySignals : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void cliSignalStopsAndKeepsFinishedRuns_data();
  void cliSignalStopsAndKeepsFinishedRuns();
  void cliRunSavesSeveralExperimentsInOneRewrite();
  void cliSecondSignalStillSaves_data();
  void cliSecondSignalStillSaves();
  void cliThirdSignalStopsAndSaysWhatIsLost();
  void cliSweepResumesFinishedPoints();
};

// SIGINT / SIGTERM / SIGHUP during `run` and `sweep` (InterruptGuard, app/cli/cli_util.h): the
// command stops at its next check point, keeps the runs finished before, says so, and exits with
// 128 + the signal, so a SIGTERM from timeout, Slurm or systemd loses only the run in progress.
// The signal is sent once the first run is in the file,
// while the second (a 2048³ GEMM, seconds on the CPU) computes.
void TestReliabilitySignals::cliSignalStopsAndKeepsFinishedRuns_data() {
  QTest::addColumn<QString>("command");
  QTest::addColumn<int>("signal");
  QTest::newRow("run, SIGTERM") << QStringLiteral("run") << int(SIGTERM);
  QTest::newRow("run, SIGINT") << QStringLiteral("run") << int(SIGINT);
  QTest::newRow("sweep, SIGHUP") << QStringLiteral("sweep") << int(SIGHUP);
}

void TestReliabilitySignals::cliSignalStopsAndKeepsFinishedRuns() {
  QFETCH(QString, command);
  QFETCH(int, signal);
  QTemporaryDir dir;
  const QString cfg = dir.filePath(QStringLiteral("c.json")), out = dir.filePath(QStringLiteral("o.h5"));
  QFile f(cfg);
  QVERIFY(f.open(QIODevice::WriteOnly));
  QStringList args;
  if (command == QStringLiteral("run")) {
    f.write(R"({"experiments": [{"type": "gemm", "m": 16, "n": 16, "k": 32, "name": "small"},
                                {"type": "gemm", "m": 2048, "n": 2048, "k": 2048, "name": "big"}]})");
    args = {QStringLiteral("run"), cfg, QStringLiteral("--out"), out};
  } else {
    // Three grid points of 1024³ (seconds each): the first is not flushed yet (pending < 256 MiB), so the sweep
    // must save it when interrupted during the second.
    f.write(
        R"({"type": "gemm", "m": 1024, "n": 1024, "k": 1024, "sweep": {"formats": ["E4M3FN", "E5M2", "E4M3FNUZ"]}})");
    args = {QStringLiteral("sweep"), cfg, QStringLiteral("--out"), out};
  }
  f.close();
  QProcess p;
  p.start(cliPath(), args);
  QVERIFY(p.waitForStarted());
  {
    // Wait until the first run is finished (not yet saved: both commands save runs in batches,
    // so the interrupt must save it). stderr is not a terminal here: `run` prints
    // "run: experiment 1/2 done", the sweep "sweep: 1/3 ... done", after each.
    const QByteArray mark =
        command == QStringLiteral("run") ? QByteArray("run: experiment 1/2 done") : QByteArray("sweep: 1/3");
    QByteArray seen;
    QElapsedTimer t;
    t.start();
    while (!seen.contains(mark) && t.elapsed() < 120000 && p.state() == QProcess::Running) {
      p.waitForReadyRead(200);
      seen += p.readAllStandardError();
    }
    QVERIFY2(seen.contains(mark), seen.constData());
    if (command == QStringLiteral("run")) QVERIFY2(!QFileInfo::exists(out), "run saved before the batch ended");
  }
  QVERIFY(::kill(static_cast<pid_t>(p.processId()), signal) == 0);
  QVERIFY(p.waitForFinished(120000));
  const QString err = QString::fromUtf8(p.readAllStandardError());
  QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  QVERIFY2(p.exitCode() == 128 + signal, qPrintable(err));
  QVERIFY2(err.contains(QStringLiteral("interrupted by")), qPrintable(err));
  auto r = SessionReader::open(out.toStdString());
  QVERIFY2(r.ok(), r.message().c_str());
  QCOMPARE(r.value->info().runs.size(), size_t(1));
}

// `run` with N GEMM experiments saves their runs in one batch (one rewrite of the session, not N:
// each save rewrites the file, so N saves would write O(N²) bytes): each experiment's line is printed after the
// save, with the id it was stored under (a taken id gets -2), in config order; a failure in a later
// experiment still saves the finished ones.
void TestReliabilitySignals::cliRunSavesSeveralExperimentsInOneRewrite() {
  QTemporaryDir dir;
  const QString cfg = dir.filePath(QStringLiteral("c.json")), out = dir.filePath(QStringLiteral("o.h5"));
  QVERIFY(writeSession(out.toStdString(), Session{1, {}, {}, {}, {bigRun("a", 4, 1.0f)}}).ok());
  auto runCli = [&](const QByteArray& config, QString* so, QString* se) {
    QFile f(cfg);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return -1;
    f.write(config);
    f.close();
    QProcess p;
    p.start(cliPath(), {QStringLiteral("run"), cfg, QStringLiteral("--out"), out});
    if (!p.waitForFinished(120000)) return -1;
    *so = QString::fromUtf8(p.readAllStandardOutput());
    *se = QString::fromUtf8(p.readAllStandardError());
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  };
  QString so, se;
  QCOMPARE(runCli(R"({"experiments": [{"type": "gemm", "m": 8, "n": 8, "k": 16, "name": "a"},
                                     {"type": "gemm", "m": 8, "n": 8, "k": 16, "name": "b"},
                                     {"type": "gemm", "m": 8, "n": 8, "k": 16, "name": "c"}]})",
                  &so, &se),
           0);
  const QStringList lines = so.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  QStringList heads;
  for (const QString& l : lines)
    if (l.startsWith(QStringLiteral("run "))) heads << l.section(QLatin1Char(' '), 1, 1);
  QCOMPARE(heads, (QStringList{QStringLiteral("a-2"), QStringLiteral("b"), QStringLiteral("c")}));
  QVERIFY2(se.contains(QStringLiteral("run: experiment 2/3 done (its run is saved with the next batch)")),
           qPrintable(se));
  auto ids = [&] {
    std::vector<std::string> v;
    for (const auto& r : loadSession(out.toStdString()).value.runs) v.push_back(r.id);
    return v;
  };
  QCOMPARE(ids(), (std::vector<std::string>{"a", "a-2", "b", "c"}));
  // The second experiment fails at run time (its tensor file is missing): the first is kept.
  const int rc = runCli(R"({"experiments": [{"type": "gemm", "m": 8, "n": 8, "k": 16, "name": "d"},
                                           {"type": "gemm", "a": {"tensor": "/nonexistent/a.npy"}, "n": 8, "name": "e"}]})",
                        &so, &se);
  QVERIFY2(rc == 2, qPrintable(se));
  QCOMPARE(ids(), (std::vector<std::string>{"a", "a-2", "b", "c", "d"}));
}

// Two SIGTERMs 2 ms apart (what `timeout`, Slurm or `docker stop` deliver): the second signal must
// not skip the save of the runs that finished — whether it arrives while the next run computes or while the save is
// under way (the save is paused before its commit with FP8LAB_TEST_SAVE_PAUSE, so the signals land in it on any
// machine).
void TestReliabilitySignals::cliSecondSignalStillSaves_data() {
  QTest::addColumn<QString>("command");
  QTest::addColumn<bool>("duringSave");
  QTest::addColumn<int>("tries");
  QTest::newRow("run, while the second experiment computes") << QStringLiteral("run") << false << 4;
  QTest::newRow("run, during the save") << QStringLiteral("run") << true << 2;
  QTest::newRow("sweep, while the second point computes") << QStringLiteral("sweep") << false << 2;
}

void TestReliabilitySignals::cliSecondSignalStillSaves() {
  QFETCH(QString, command);
  QFETCH(bool, duringSave);
  QFETCH(int, tries);
  QVERIFY2(QFileInfo::exists(cliPath()), qPrintable(QStringLiteral("build fp8lab-cli first: %1").arg(cliPath())));
  for (int t = 0; t < tries; ++t) {
    QTemporaryDir dir;
    const QString cfg = dir.filePath(QStringLiteral("c.json")), out = dir.filePath(QStringLiteral("o.h5"));
    const QString pause = duringSave ? dir.filePath(QStringLiteral("paused")) : QString();
    QStringList args{command, cfg, QStringLiteral("--out"), out};
    QByteArray mark;
    if (command == QStringLiteral("sweep")) {
      QVERIFY(writeConfig(
          cfg,
          R"({"type": "gemm", "m": 1024, "n": 1024, "k": 1024, "sweep": {"formats": ["E4M3FN", "E5M2", "E4M3FNUZ"]}})"));
      mark = "sweep: 1/3";
    } else if (duringSave) {
      // Two experiments: both finish, the signals land in the final save of their batch.
      QVERIFY(writeConfig(cfg, R"({"experiments": [{"type": "gemm", "m": 64, "n": 64, "k": 64, "name": "one"},
                                                  {"type": "gemm", "m": 32, "n": 32, "k": 32, "name": "two"}]})"));
    } else {
      QVERIFY(writeConfig(cfg, R"({"experiments": [{"type": "gemm", "m": 16, "n": 16, "k": 32, "name": "small"},
                                                  {"type": "gemm", "m": 2048, "n": 2048, "k": 2048, "name": "big"}]})"));
      mark = "run: experiment 1/2 done";
    }
    QProcess p;
    startCli(p, args, pause);
    QVERIFY(p.waitForStarted());
    QByteArray seen;
    if (duringSave) {
      QVERIFY2(waitForFile(p, pause), "the save did not pause");
    } else {
      seen = waitForStderr(p, mark);
      QVERIFY2(seen.contains(mark), seen.constData());
    }
    signalTimes(p, SIGTERM, 2, 2000);
    if (duringSave) {
      // Both signals handled while the save waits; then it commits.
      p.waitForFinished(300);
      QVERIFY2(p.state() == QProcess::Running, "the second signal ended the process during its save");
      QVERIFY(QFile::remove(pause));
    }
    QVERIFY(p.waitForFinished(120000));
    const QString err = QString::fromUtf8(seen + p.readAllStandardError());
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QVERIFY2(p.exitCode() == 128 + SIGTERM, qPrintable(err));
    // (Two signals this close can reach the process as one — POSIX does not queue a standard
    // signal that is already pending — so the "another signal" line is not required; the save is.)
    QVERIFY2(err.contains(QStringLiteral("interrupted by SIGTERM")), qPrintable(err));
    QCOMPARE(runsIn(out), size_t(duringSave ? 2 : 1));
  }
}

// A third signal stops at once, and stderr says what was lost; the atomic save leaves the previous
// file as it was. Signalled while the save of the run is paused before its commit.
void TestReliabilitySignals::cliThirdSignalStopsAndSaysWhatIsLost() {
  QVERIFY2(QFileInfo::exists(cliPath()), qPrintable(QStringLiteral("build fp8lab-cli first: %1").arg(cliPath())));
  QTemporaryDir dir;
  const QString cfg = dir.filePath(QStringLiteral("c.json")), out = dir.filePath(QStringLiteral("o.h5")),
                pause = dir.filePath(QStringLiteral("paused"));
  QVERIFY(writeSession(out.toStdString(), Session{1, {}, {}, {}, {bigRun("old", 8, 1.0f)}}).ok());
  const std::string before = readBytes(out.toStdString());
  QVERIFY(writeConfig(cfg, R"({"type": "gemm", "m": 64, "n": 64, "k": 64, "name": "new"})"));
  QProcess p;
  startCli(p, {QStringLiteral("run"), cfg, QStringLiteral("--out"), out}, pause);
  QVERIFY(p.waitForStarted());
  QVERIFY2(waitForFile(p, pause), "the save did not pause");
  // 20 ms apart, so each is delivered on its own (a signal already pending is not queued again).
  signalTimes(p, SIGTERM, 3, 20000);
  QVERIFY(p.waitForFinished(30000));
  QFile::remove(pause);
  const QString err = QString::fromUtf8(p.readAllStandardError());
  QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  QVERIFY2(p.exitCode() == 128 + SIGTERM, qPrintable(err));
  QVERIFY2(err.contains(QStringLiteral("another signal: still stopping and saving what is finished; a third one stops "
                                       "at once and loses it")),
           qPrintable(err));
  QVERIFY2(err.contains(QStringLiteral("third signal: stopped at once; lost: the save of run 'new' in progress (%1 "
                                       "keeps what it held before; saves are atomic)")
                            .arg(out)),
           qPrintable(err));
  QVERIFY(readBytes(out.toStdString()) == before);
  QCOMPARE(runsIn(out), size_t(1));
}

// `sweep` run again with the same --out skips the grid points already there with the same
// configuration, so a sweep interrupted and started again resumes. --recompute runs them again.
void TestReliabilitySignals::cliSweepResumesFinishedPoints() {
  QVERIFY2(QFileInfo::exists(cliPath()), qPrintable(QStringLiteral("build fp8lab-cli first: %1").arg(cliPath())));
  QTemporaryDir dir;
  const QString cfg = dir.filePath(QStringLiteral("c.json")), out = dir.filePath(QStringLiteral("o.h5"));
  QVERIFY(writeConfig(
      cfg,
      R"({"type": "gemm", "m": 8, "n": 8, "k": 16, "sweep": {"formats": ["E4M3FN", "E5M2"], "scalings": ["te_current"]}})"));
  auto sweep = [&](const QStringList& extra, QString* so, QString* se) {
    QProcess p;
    p.start(cliPath(), QStringList{QStringLiteral("sweep"), cfg, QStringLiteral("--out"), out} + extra);
    if (!p.waitForFinished(120000)) return -1;
    *so = QString::fromUtf8(p.readAllStandardOutput());
    *se = QString::fromUtf8(p.readAllStandardError());
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  };
  auto ids = [&] {
    std::vector<std::string> v;
    for (const auto& r : loadSession(out.toStdString()).value.runs) v.push_back(r.id);
    return v;
  };
  QString so, se;
  QVERIFY2(sweep({}, &so, &se) == 0, qPrintable(se));
  const std::vector<std::string> two{"sweep-E4M3FN-te_current-normal", "sweep-E5M2-te_current-normal"};
  QCOMPARE(ids(), two);
  QVERIFY2(sweep({}, &so, &se) == 0, qPrintable(se));
  QVERIFY2(se.contains(QStringLiteral("sweep: 2 grid point(s) already in %1 with the same configuration, skipped "
                                      "(--recompute runs them again): sweep-E4M3FN-te_current-normal, "
                                      "sweep-E5M2-te_current-normal")
                           .arg(out)),
           qPrintable(se));
  QCOMPARE(ids(), two);
  // A grid with one more point computes only that one.
  QVERIFY2(sweep({QStringLiteral("--formats"), QStringLiteral("E4M3FN,E5M2,E4M3FNUZ"), QStringLiteral("--json")}, &so,
                 &se) == 0,
           qPrintable(se));
  const QJsonObject j = QJsonDocument::fromJson(so.toUtf8()).object();
  QCOMPARE(j.value(QStringLiteral("skipped")).toArray().size(), 2);
  QCOMPARE(j.value(QStringLiteral("runs")).toArray().size(), 1);
  QCOMPARE(ids(), (std::vector<std::string>{"sweep-E4M3FN-te_current-normal", "sweep-E4M3FNUZ-te_current-normal",
                                            "sweep-E5M2-te_current-normal"}));
  // The same id with another configuration (here another seed) is not a finished point.
  QVERIFY(writeConfig(
      cfg,
      R"({"type": "gemm", "m": 8, "n": 8, "k": 16, "seed": 7, "sweep": {"formats": ["E4M3FN"], "scalings": ["te_current"]}})"));
  QVERIFY2(sweep({}, &so, &se) == 0, qPrintable(se));
  QVERIFY2(!se.contains(QStringLiteral("skipped")), qPrintable(se));
  QCOMPARE(ids().size(), size_t(4));
  QVERIFY2(sweep({QStringLiteral("--recompute")}, &so, &se) == 0, qPrintable(se));
  QCOMPARE(ids().size(), size_t(5));
}

int main(int argc, char** argv) {
  TestReliabilitySignals t;
  QTEST_SET_MAIN_SOURCE_PATH
  return QTest::qExec(&t, argc, argv);
}

#include "test_reliability_signals.moc"

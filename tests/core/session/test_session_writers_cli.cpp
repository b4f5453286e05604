// Several `fp8lab-cli` processes writing one session file at once, as scripts, shells and Slurm
// array jobs do: every run they say they saved is in the file; --no-wait fails at once naming the
// process that holds the file; a writer killed while it holds the lock does not block the next.
// Runs the built fp8lab-cli.
#include "session/session.h"
#include "session/session_lock.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <set>

#include <sys/wait.h>
#include <unistd.h>

using namespace fp8lab;

namespace {

const QString kCli = QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli");

std::set<std::string> runIds(const QString& file) {
  std::set<std::string> ids;
  auto r = SessionReader::open(file.toStdString());
  if (!r.ok()) return ids;
  for (const auto& ri : r.value->info().runs) ids.insert(ri.id);
  return ids;
}

} // namespace

class TestSessionWritersCli : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // Eight `gemm --out same.h5 --id gN` started together: each exits 0 saying it saved its run,
  // and all eight runs are in the file (without the writer's lock the file kept one to three).
  void parallelGemmAppendsKeepEveryRun_data() {
    QTest::addColumn<int>("writers");
    for (int rep = 0; rep < 3; ++rep) QTest::addRow("8 gemm writers #%d", rep) << 8;
  }
  void parallelGemmAppendsKeepEveryRun() {
    QFETCH(int, writers);
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("same.h5"));
    std::vector<std::unique_ptr<QProcess>> ps;
    for (int w = 0; w < writers; ++w) {
      auto p = std::make_unique<QProcess>();
      p->start(kCli, {QStringLiteral("gemm"), QStringLiteral("--m"), QStringLiteral("64"), QStringLiteral("--n"),
                      QStringLiteral("64"), QStringLiteral("--k"), QStringLiteral("128"), QStringLiteral("--seed"),
                      QString::number(w + 1), QStringLiteral("--out"), out, QStringLiteral("--id"),
                      QStringLiteral("g%1").arg(w)});
      ps.push_back(std::move(p));
    }
    std::set<std::string> want;
    for (int w = 0; w < writers; ++w) {
      QProcess& p = *ps[size_t(w)];
      QVERIFY(p.waitForFinished(120000));
      const QByteArray err = p.readAllStandardError();
      QVERIFY2(p.exitCode() == 0, err.constData());
      QVERIFY2(err.contains("saved as run g" + QByteArray::number(w) + " "), err.constData());
      want.insert("g" + std::to_string(w));
    }
    QCOMPARE(runIds(out), want);
  }

  // While another process holds the file's lock: --no-wait fails at once (exit 2) naming it and
  // saving nothing; --lock-timeout gives up after its seconds. After that process is killed, the
  // next writer saves.
  void noWaitNamesTheHolderAndAKilledHolderDoesNotBlock() {
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("s.h5"));
    const QString ready = dir.filePath(QStringLiteral("ready"));
    const pid_t holder = ::fork();
    if (holder == 0) {
      Status st;
      auto lock = SessionLock::acquire(out.toStdString(), LockWait{}, {}, &st);
      if (!lock) ::_exit(3);
      if (FILE* f = std::fopen(ready.toLocal8Bit().constData(), "w")) std::fclose(f);
      ::sleep(120);
      ::_exit(0);
    }
    QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(ready), 10000);
    const QStringList gemm = {QStringLiteral("gemm"), QStringLiteral("--m"),   QStringLiteral("32"),
                              QStringLiteral("--n"),  QStringLiteral("32"),    QStringLiteral("--k"),
                              QStringLiteral("64"),   QStringLiteral("--out"), out};
    QProcess p;
    p.start(kCli, QStringList{QStringLiteral("--no-wait")} + gemm);
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(err.contains("pid " + QByteArray::number(holder)), err.constData());
    QVERIFY2(err.contains("nothing was written"), err.constData());
    QProcess t;
    t.start(kCli, gemm + QStringList{QStringLiteral("--lock-timeout"), QStringLiteral("0.5")});
    QVERIFY(t.waitForFinished(60000));
    QCOMPARE(t.exitCode(), 2);
    QVERIFY(t.readAllStandardError().contains("gave up"));
    QVERIFY(runIds(out).empty());
    // A waiting writer says who it waits for, then saves once the holder is gone.
    QProcess waiting;
    waiting.start(kCli, gemm + QStringList{QStringLiteral("--id"), QStringLiteral("after")});
    QByteArray said;
    QTRY_VERIFY_WITH_TIMEOUT((said += waiting.readAllStandardError()).contains("waiting for"), 20000);
    QVERIFY2(said.contains("locked by pid " + QByteArray::number(holder)), said.constData());
    QCOMPARE(::kill(holder, SIGKILL), 0);
    int status = 0;
    QCOMPARE(::waitpid(holder, &status, 0), holder);
    QVERIFY(waiting.waitForFinished(60000));
    QCOMPARE(waiting.exitCode(), 0);
    QCOMPARE(runIds(out), (std::set<std::string>{"after"}));
  }
};

QTEST_GUILESS_MAIN(TestSessionWritersCli)
#include "test_session_writers_cli.moc"

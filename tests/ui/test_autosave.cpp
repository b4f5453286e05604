// GUI autosave and crash recovery (ui/session/autosave.h): the recovery file is written only
// while there are unsaved changes, holds exactly the session's runs, leaves the session's file
// name and modified flag alone, survives a crash (a process that never called discard()), is
// offered and restored on the next start as a new untitled session of unsaved runs (never added
// to the session that start opened, e.g. the bundled default), and a damaged one is moved aside.
#include "session/autosave.h"
#include "session/session_document.h"

#include "session/session.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include <sys/wait.h>
#include <unistd.h>

using namespace fp8lab::ui;

namespace {
/// A GUI run made from a core run with a 2×3 output whose values are 1..6.
RunRecord makeRun(const std::string& id) {
  fp8lab::Run r;
  r.id = id;
  r.type = "gemm";
  r.config_json = "{}";
  r.putFloat32("output/D", {1, 2, 3, 4, 5, 6}, 2, 3, "1", "D");
  r.setMetric("sqnr_db", 30.5, "dB", "test");
  return session_io::fromCoreRun(r);
}
} // namespace

class TestAutosave : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("FP8 Lab tests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_autosave"));
  }

  void writesOnlyUnsavedWorkAndLeavesTheSessionAlone() {
    QTemporaryDir dir;
    const QString rec = dir.filePath(QStringLiteral("rec.h5"));
    SessionDocument s;
    Autosave a(&s, rec, 0);
    QVERIFY(a.saveNow());
    QVERIFY(!QFile::exists(rec)); // nothing unsaved: no file
    s.addRun(makeRun("run-0001"));
    s.addRun(makeRun("run-0002"));
    QVERIFY(s.isModified());
    QVERIFY(a.saveNow());
    QVERIFY(QFile::exists(rec));
    QVERIFY(s.isModified());         // still unsaved for the user
    QVERIFY(s.fileName().isEmpty()); // and still untitled
    auto loaded = fp8lab::loadSession(rec.toStdString());
    QVERIFY2(loaded.ok(), loaded.message().c_str());
    QCOMPARE(loaded.value.runs.size(), size_t(2));
    QCOMPARE(loaded.value.runs[0].id, std::string("run-0001"));
    QCOMPARE(loaded.value.runs[1].find("output/D")->f32, (std::vector<float>{1, 2, 3, 4, 5, 6}));
    Autosave::Info info;
    QVERIFY(Autosave::pending(rec, &info));
    QCOMPARE(info.runs, 2);
    QVERIFY(info.original_file.isEmpty());
    // Saved by the user → the next autosave removes the recovery file.
    QVERIFY(s.save(dir.filePath(QStringLiteral("mine.h5")), nullptr));
    QVERIFY(!s.isModified());
    QVERIFY(a.saveNow());
    QVERIFY(!QFile::exists(rec));
    QVERIFY(!Autosave::pending(rec));
  }

  void timerSavesPeriodically() {
    QTemporaryDir dir;
    const QString rec = dir.filePath(QStringLiteral("rec.h5"));
    SessionDocument s;
    Autosave a(&s, rec, 50);
    QSignalSpy saved(&a, &Autosave::saved);
    s.addRun(makeRun("run-0001"));
    QTRY_VERIFY_WITH_TIMEOUT(saved.count() >= 1, 10000);
    QVERIFY(QFile::exists(rec));
    a.discard();
    QVERIFY(!QFile::exists(rec));
    QVERIFY(!QFile::exists(rec + QStringLiteral(".json")));
  }

  // A child process autosaves and dies without discard() (like a crash or kill -9); the parent, as
  // the next start, finds the orphan, is asked, and gets the runs back as unsaved work.
  void crashThenRecoverOnNextStart() {
    const QString rec_dir = QFileInfo(Autosave::defaultRecoveryPath()).absolutePath();
    QDir(rec_dir).removeRecursively();
    const pid_t pid = fork();
    if (pid == 0) {
      SessionDocument s;
      s.addRun(makeRun("run-0007"));
      Autosave a(&s, Autosave::defaultRecoveryPath(), 0);
      _exit(a.saveNow() ? 0 : 1); // no discard(): the file stays, as after a crash
    }
    int status = 0;
    QCOMPARE(waitpid(pid, &status, 0), pid);
    QVERIFY(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    const QString orphan = Autosave::findOrphan();
    QVERIFY2(orphan.endsWith(QStringLiteral("session-recovery-%1.h5").arg(pid)), qPrintable(orphan));

    SessionDocument s;
    int asked = 0;
    auto mine = Autosave::start(nullptr, &s, [&](const Autosave::Info& i) {
      ++asked;
      return i.runs == 1;
    });
    QVERIFY(mine);
    QCOMPARE(asked, 1);
    QCOMPARE(s.runCount(), 1);
    QCOMPARE(s.run(0).id, QStringLiteral("run-0007"));
    QCOMPARE(s.run(0).metric(QStringLiteral("sqnr_db")), 30.5);
    QVERIFY(s.isModified());
    QVERIFY(s.fileName().isEmpty());
    QVERIFY(!QFile::exists(orphan)); // offered once
    QVERIFY(Autosave::findOrphan().isEmpty());
    QCOMPARE(mine->recoveryPath(), Autosave::defaultRecoveryPath());
    mine->discard();
  }

  // The next start has already opened a session (the bundled default session, a file on the
  // command line) when the recovery question comes. The recovered runs must not join it: they
  // open as a new untitled session, as the question says, and the open file is not touched.
  void recoveryOpensAsNewUntitledSession() {
    QTemporaryDir dir;
    const QString opened = dir.filePath(QStringLiteral("default-session.h5"));
    {
      SessionDocument d;
      d.addRun(makeRun("bundled-1"));
      d.addRun(makeRun("bundled-2"));
      QVERIFY(d.save(opened, nullptr));
    }
    QFile f(opened);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray before = f.readAll();
    f.close();

    const QString rec_dir = QFileInfo(Autosave::defaultRecoveryPath()).absolutePath();
    QDir(rec_dir).removeRecursively();
    const pid_t pid = fork();
    if (pid == 0) {
      SessionDocument s;
      s.addRun(makeRun("run-0001"));
      Autosave a(&s, Autosave::defaultRecoveryPath(), 0);
      _exit(a.saveNow() ? 0 : 1);
    }
    int status = 0;
    QCOMPARE(waitpid(pid, &status, 0), pid);
    QVERIFY(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    SessionDocument s;
    QString error;
    QVERIFY2(s.load(opened, &error), qPrintable(error));
    QCOMPARE(s.runCount(), 2);
    auto mine = Autosave::start(nullptr, &s, [](const Autosave::Info&) { return true; });
    QVERIFY(mine);
    QCOMPARE(s.runCount(), 1); // only the recovered run, not 2 bundled + 1
    QCOMPARE(s.run(0).id, QStringLiteral("run-0001"));
    QVERIFY(s.fileName().isEmpty()); // Save asks for a file name
    QCOMPARE(s.displayName(), QStringLiteral("Untitled"));
    QVERIFY(s.isModified());
    // Undo removes the recovered run; it does not bring the bundled runs back into this session.
    s.undoStack()->undo();
    QCOMPARE(s.runCount(), 0);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), before);
    f.close();
    mine->discard();
  }

  void damagedRecoveryIsMovedAside() {
    QTemporaryDir dir;
    const QString rec = dir.filePath(QStringLiteral("rec.h5"));
    QFile f(rec);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray("\x89HDF\r\n\x1a\n", 8) + QByteArray(100, '\x01'));
    f.close();
    SessionDocument s;
    QString error;
    QCOMPARE(Autosave::restoreAsNewSession(&s, rec, &error), -1);
    QVERIFY(!error.isEmpty());
    QCOMPARE(s.runCount(), 0);
    QVERIFY(!QFile::exists(rec));
    QVERIFY(QFile::exists(rec + QStringLiteral(".bad")));
  }
};

QTEST_MAIN(TestAutosave)
#include "test_autosave.moc"

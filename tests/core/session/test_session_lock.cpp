// Writers of one session file, one at a time (core/session/session_lock.h): parallel appenders in
// separate processes keep every run; a writer killed while it holds the lock does not block the
// next; --no-wait and timeouts fail naming the holder; the desktop app's merging save keeps runs
// another process added and keeps its own deletions.
#include "session/session.h"
#include "session/session_lock.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

using namespace fp8lab;

namespace {

Run smallRun(const std::string& id, float value = 1.0f) {
  Run r;
  r.id = id;
  r.type = "gemm";
  r.config_json = "{}";
  r.putFloat32("output/D", std::vector<float>(64, value), 8, 8, "1", "test data");
  r.setMetric("sqnr_db", 30.0, "dB", "test metric");
  return r;
}

std::vector<std::string> runIds(const std::string& path) {
  auto r = SessionReader::open(path);
  std::vector<std::string> ids;
  if (!r.ok()) return ids;
  for (const auto& ri : r.value->info().runs) ids.push_back(ri.id);
  return ids;
}

/// Waits until `path` exists (a child's "ready" marker), at most `seconds`.
bool waitForFile(const std::string& path, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (::access(path.c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

/// A child process that takes the lock of `session`, creates `ready`, then sleeps `hold_s`
/// seconds (or until killed) and exits 0.
pid_t holdLockInChild(const std::string& session, const std::string& ready, double hold_s) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    Status st;
    auto lock = SessionLock::acquire(session, LockWait{}, {}, &st);
    if (!lock || !lock->held()) ::_exit(3);
    if (FILE* f = std::fopen(ready.c_str(), "w")) std::fclose(f);
    ::usleep(useconds_t(hold_s * 1e6));
    ::_exit(0);
  }
  return pid;
}

} // namespace

class TestSessionLock : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // N processes append to one file at the same moment (a pipe releases them together); each
  // must find its run in the file afterwards. Without the lock each copies the file as it was
  // when it started and the last rename wins (8 appends kept 2).
  void parallelAppendersKeepEveryRun_data() {
    QTest::addColumn<int>("writers");
    QTest::addColumn<bool>("existing"); // append to a session that exists, or create it
    for (int rep = 0; rep < 3; ++rep) {
      QTest::addRow("8 writers, new file #%d", rep) << 8 << false;
      QTest::addRow("8 writers, existing file #%d", rep) << 8 << true;
    }
    QTest::addRow("12 writers, existing file") << 12 << true;
  }
  void parallelAppendersKeepEveryRun() {
    QFETCH(int, writers);
    QFETCH(bool, existing);
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("same.h5")).toStdString();
    if (existing) QVERIFY(appendRuns(path, {smallRun("first")}).ok());
    int go[2];
    QCOMPARE(::pipe(go), 0);
    std::vector<pid_t> kids;
    for (int w = 0; w < writers; ++w) {
      const pid_t pid = ::fork();
      QVERIFY(pid >= 0);
      if (pid == 0) {
        ::close(go[1]);
        char c;
        [[maybe_unused]] const ssize_t n = ::read(go[0], &c, 1); // blocks until the parent closes the pipe
        const Status st = appendRuns(path, {smallRun("w" + std::to_string(w), float(w))});
        ::_exit(st.ok() ? 0 : 1);
      }
      kids.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]); // every child's read returns now
    for (pid_t k : kids) {
      int status = 0;
      QCOMPARE(::waitpid(k, &status, 0), k);
      QVERIFY(WIFEXITED(status));
      QCOMPARE(WEXITSTATUS(status), 0);
    }
    std::set<std::string> want;
    for (int w = 0; w < writers; ++w) want.insert("w" + std::to_string(w));
    if (existing) want.insert("first");
    const auto ids = runIds(path);
    QCOMPARE(std::set<std::string>(ids.begin(), ids.end()), want);
    // Each run holds what its writer wrote.
    auto r = SessionReader::open(path);
    QVERIFY(r.ok());
    for (int w = 0; w < writers; ++w) {
      auto d = r.value->read("w" + std::to_string(w), "output/D");
      QVERIFY(d.ok());
      QCOMPARE(d.value.f32.at(63), float(w));
    }
  }

  // The holder is named while it holds the lock; --no-wait fails at once naming it; a holder
  // killed with SIGKILL (no chance to unlock) does not block the next writer: the kernel drops
  // a flock with the last descriptor of the process.
  void killedWriterDoesNotBlockTheNext() {
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("s.h5")).toStdString();
    const std::string ready = dir.filePath(QStringLiteral("ready")).toStdString();
    QVERIFY(appendRuns(path, {smallRun("a")}).ok());
    const pid_t holder = holdLockInChild(path, ready, 120);
    QVERIFY(waitForFile(ready, 10));

    const LockHolder h = SessionLock::holderOf(path);
    QVERIFY(h.held);
    QCOMPARE(h.pid, int64_t(holder));
    QVERIFY(!h.host.empty());

    WriteOptions no_wait;
    no_wait.lock.wait = false;
    const Status refused = appendRuns(path, {smallRun("b")}, no_wait);
    QVERIFY(!refused.ok());
    QCOMPARE(refused.issues.front().code, Issue::Code::Locked);
    QVERIFY2(refused.firstError().find("pid " + std::to_string(holder)) != std::string::npos,
             refused.firstError().c_str());
    QCOMPARE(runIds(path), std::vector<std::string>({"a"})); // nothing written

    QCOMPARE(::kill(holder, SIGKILL), 0);
    int status = 0;
    QCOMPARE(::waitpid(holder, &status, 0), holder);
    QVERIFY(WIFSIGNALED(status));
    QVERIFY(!SessionLock::holderOf(path).held);

    WriteOptions bounded;
    bounded.lock.timeout_s = 5;
    const Status st = appendRuns(path, {smallRun("b")}, bounded);
    QVERIFY2(st.ok(), st.message().c_str());
    QCOMPARE(runIds(path), std::vector<std::string>({"a", "b"}));
  }

  // A writer that finds the lock busy waits, says once after notify_after_s who holds it, and
  // writes when the holder is done; with a timeout it gives up, naming the holder.
  void busyLockIsWaitedForAndSaid() {
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("s.h5")).toStdString();
    const std::string ready = dir.filePath(QStringLiteral("ready")).toStdString();
    const pid_t holder = holdLockInChild(path, ready, 1.0);
    QVERIFY(waitForFile(ready, 10));
    WriteOptions opt;
    std::vector<std::string> said;
    opt.lock.notify_after_s = 0.2;
    opt.lock.on_wait = [&](const std::string& m) { said.push_back(m); };
    const auto t0 = std::chrono::steady_clock::now();
    const Status st = appendRuns(path, {smallRun("after")}, opt);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QVERIFY2(st.ok(), st.message().c_str());
    QVERIFY2(waited > 0.5, "the writer did not wait for the holder");
    QCOMPARE(said.size(), size_t(1));
    QVERIFY2(said[0].find("locked by pid " + std::to_string(holder)) != std::string::npos, said[0].c_str());
    int status = 0;
    ::waitpid(holder, &status, 0);
    QCOMPARE(runIds(path), std::vector<std::string>({"after"}));

    const std::string ready2 = dir.filePath(QStringLiteral("ready2")).toStdString();
    const pid_t holder2 = holdLockInChild(path, ready2, 30);
    QVERIFY(waitForFile(ready2, 10));
    WriteOptions timed;
    timed.lock.timeout_s = 0.3;
    const Status late = appendRuns(path, {smallRun("late")}, timed);
    QVERIFY(!late.ok());
    QCOMPARE(late.issues.front().code, Issue::Code::Locked);
    QVERIFY(late.firstError().find("gave up") != std::string::npos);
    QVERIFY(late.firstError().find("pid " + std::to_string(holder2)) != std::string::npos);
    // A cancel through the progress callback ends the wait too.
    WriteOptions cancelled;
    cancelled.progress = [](double, const std::string&) { return false; };
    const Status c = appendRuns(path, {smallRun("late")}, cancelled);
    QVERIFY(!c.ok());
    QVERIFY(c.firstError().find("cancelled while waiting") != std::string::npos);
    ::kill(holder2, SIGKILL);
    ::waitpid(holder2, &status, 0);
    QCOMPARE(runIds(path), std::vector<std::string>({"after"}));
  }

  // Every writer takes the lock, not only appendRuns: rename, delete, merge and whole saves fail
  // with --no-wait while another process holds it.
  void everyWriterTakesTheLock() {
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("s.h5")).toStdString();
    const std::string other = dir.filePath(QStringLiteral("o.h5")).toStdString();
    const std::string ready = dir.filePath(QStringLiteral("ready")).toStdString();
    QVERIFY(appendRuns(path, {smallRun("a"), smallRun("b")}).ok());
    QVERIFY(appendRuns(other, {smallRun("c")}).ok());
    const pid_t holder = holdLockInChild(path, ready, 60);
    QVERIFY(waitForFile(ready, 10));
    WriteOptions nw;
    nw.lock.wait = false;
    Session s;
    s.runs.push_back(smallRun("z"));
    const std::vector<Status> all = {
        writeSession(path, s, nw),
        writeSessionItems(path, {SaveItem{nullptr, path, "a", "a", {}}}, nw),
        deleteRuns(path, {"a"}, nw),
        renameRun(path, "a", "x", nw),
        mergeSessions(path, {path, other}, nw),
        saveSessionMerging(path, {}, {"a", "b"}, nw),
    };
    for (const Status& st : all) {
      QVERIFY(!st.ok());
      QCOMPARE(st.issues.front().code, Issue::Code::Locked);
    }
    int status = 0;
    ::kill(holder, SIGKILL);
    ::waitpid(holder, &status, 0);
    QCOMPARE(runIds(path), std::vector<std::string>({"a", "b"}));
  }

  // One lock per file, however the path is spelled: "./s.h5", "DIR/sub/../s.h5" and a symbolic
  // link to it lock ".s.h5.lock" in the file's real directory.
  void lockFileBesideTheRealFile() {
    QTemporaryDir dir;
    const QString d = dir.path();
    QVERIFY(QDir(d).mkdir(QStringLiteral("sub")));
    const std::string direct = (d + QStringLiteral("/s.h5")).toStdString();
    const std::string dotted = (d + QStringLiteral("/sub/../s.h5")).toStdString();
    const std::string want = (QFileInfo(d).canonicalFilePath() + QStringLiteral("/.s.h5.lock")).toStdString();
    QCOMPARE(SessionLock::lockPathFor(direct), want);
    QCOMPARE(SessionLock::lockPathFor(dotted), want);
    // Through a link: the writers resolve it first, so a write through the link holds the lock
    // of the file it points to.
    QVERIFY(appendRuns(direct, {smallRun("a")}).ok());
    const std::string link = (d + QStringLiteral("/sub/link.h5")).toStdString();
    QCOMPARE(::symlink(direct.c_str(), link.c_str()), 0);
    const std::string ready = (d + QStringLiteral("/ready")).toStdString();
    const pid_t holder = holdLockInChild(direct, ready, 60);
    QVERIFY(waitForFile(ready, 10));
    WriteOptions nw;
    nw.lock.wait = false;
    const Status st = appendRuns(link, {smallRun("b")}, nw);
    QVERIFY(!st.ok());
    QCOMPARE(st.issues.front().code, Issue::Code::Locked);
    int status = 0;
    ::kill(holder, SIGKILL);
    ::waitpid(holder, &status, 0);
  }

  // The desktop app's save over its open file: it had loaded {a, b}, removed b, added d; meanwhile
  // another process appended c and d. The save keeps a, its own d, the other's c and d (as d-2),
  // and b stays deleted.
  void mergingSaveKeepsOtherWritersRuns() {
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("s.h5")).toStdString();
    QVERIFY(appendRuns(path, {smallRun("a", 1), smallRun("b", 2)}).ok());
    const std::vector<std::string> known = {"a", "b"};
    QVERIFY(appendRuns(path, {smallRun("c", 3), smallRun("d", 4)}).ok()); // the other writer
    const Run mine = smallRun("d", 5);
    const std::vector<SaveItem> items = {SaveItem{nullptr, path, "a", "a", "label of a"},
                                         SaveItem{&mine, {}, {}, {}, {}}};
    SaveMerge m;
    const Status st = saveSessionMerging(path, items, known, {}, &m);
    QVERIFY2(st.ok(), st.message().c_str());
    QCOMPARE(runIds(path), std::vector<std::string>({"a", "c", "d", "d-2"}));
    QCOMPARE(m.kept, (std::vector<std::pair<std::string, std::string>>{{"c", "c"}, {"d", "d-2"}}));
    QVERIFY(m.vanished.empty());
    auto r = SessionReader::open(path);
    QCOMPARE(r.value->read("d", "output/D").value.f32.at(0), 5.0f);   // this session's d
    QCOMPARE(r.value->read("d-2", "output/D").value.f32.at(0), 4.0f); // the other writer's d
    QCOMPARE(r.value->read("c", "output/D").value.f32.at(0), 3.0f);
    QCOMPARE(attrString(r.value->info().find("a")->attrs, "label").value_or(""), std::string("label of a"));
  }

  // A run the app still shows (read lazily from the file) that another process deleted cannot be
  // copied: the save leaves it out and says so instead of failing.
  void mergingSaveReportsVanishedRuns() {
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("s.h5")).toStdString();
    QVERIFY(appendRuns(path, {smallRun("a"), smallRun("b")}).ok());
    QVERIFY(deleteRuns(path, {"b"}).ok()); // the other writer
    SaveMerge m;
    const Status st = saveSessionMerging(
        path, {SaveItem{nullptr, path, "a", "a", {}}, SaveItem{nullptr, path, "b", "b", {}}}, {"a", "b"}, {}, &m);
    QVERIFY2(st.ok(), st.message().c_str());
    QCOMPARE(m.vanished, std::vector<std::string>({"b"}));
    QCOMPARE(runIds(path), std::vector<std::string>({"a"}));
    // A new file: nothing to merge.
    const std::string fresh = dir.filePath(QStringLiteral("new.h5")).toStdString();
    const Run z = smallRun("z");
    SaveMerge none;
    QVERIFY(saveSessionMerging(fresh, {SaveItem{&z, {}, {}, {}, {}}}, {}, {}, &none).ok());
    QVERIFY(none.kept.empty() && none.vanished.empty());
    QCOMPARE(runIds(fresh), std::vector<std::string>({"z"}));
  }
};

QTEST_GUILESS_MAIN(TestSessionLock)
#include "test_session_lock.moc"

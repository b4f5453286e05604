// Reliability, files (docs/reliability.md, suite `rel`): Session files survive what happens to them: kill -9 during a
// save (this binary re-executed as the child, "--child-save FILE"; and a real `fp8lab-cli run`), a full disk, FIFOs and
// devices given as input, a cancelled read, read-only and unreadable files, rewrites that keep runs exactly,
// write-protected outputs, and merge / delete that are all or nothing.
#include "reliability_util.h"

using namespace fp8lab;
using namespace reliability;

class TestReliabilityFiles : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void killDuringSaveKeepsPreviousFile();
  void killCliDuringAppendKeepsPreviousFile();
  void fullDiskKeepsPreviousFile();
  void fifoAndDevicesAreRefusedNotHung_data();
  void fifoAndDevicesAreRefusedNotHung();
  void cancelledReadLeavesFileAndReturnsCancelled();
  void cliRefusesWriteProtectedOutputEvenForRoot();
  void hdf5RewritesKeepRunsExactly();
  void readOnlySessionIsNotRewritten();
  void unreadableFileIsPermissionDenied();
  void cliMergeKeepsAnUnrelatedOutputAndDeleteIsAllOrNothing();
};

// kill -9 in the middle of writeSession: the temporary file is half written, the previous file is
// byte-identical and opens with its run intact; the next save succeeds despite the stale temporary.
void TestReliabilityFiles::killDuringSaveKeepsPreviousFile() {
  QTemporaryDir dir;
  const std::string p = dir.path().toStdString() + "/work.h5";
  Session old;
  old.runs.push_back(bigRun("old", 64, 7.0f));
  QVERIFY(writeSession(p, old).ok());
  const std::string before = readBytes(p);

  int fds[2];
  QVERIFY(pipe(fds) == 0);
  const std::string exe = selfExe();
  QVERIFY(!exe.empty());
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    execl(exe.c_str(), exe.c_str(), "--child-save", p.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  char c = 0;
  // The child signals once 3 datasets (12 MiB) are in the temporary file (ASan builds are slow).
  pollfd pfd{fds[0], POLLIN, 0};
  const int ready = poll(&pfd, 1, 120000);
  const bool got = ready == 1 && read(fds[0], &c, 1) == 1 && c == 'S';
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  QVERIFY2(got, "the child did not reach the middle of the save");
  QVERIFY(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  // The half-written temporary is there (the kill happened mid-save) ...
  const auto temps = tempFiles(dir.path().toStdString());
  QCOMPARE(temps.size(), size_t(1));
  QVERIFY(fs::file_size(temps[0]) > (size_t(8) << 20));
  // ... and the previous file is untouched and opens intact.
  QVERIFY(readBytes(p) == before);
  auto r = loadSession(p);
  QVERIFY2(r.ok(), r.message().c_str());
  QCOMPARE(r.value.runs.size(), size_t(1));
  QCOMPARE(r.value.runs[0].id, std::string("old"));
  const Dataset* d = r.value.runs[0].find("output/D");
  QVERIFY(d);
  QCOMPARE(d->f32[4095], 7.0f + 1023.0f); // bigRun: base + i % 1024 at i = 4095
  // A new save over it still works (the stale temporary does not block it).
  Session next;
  next.runs.push_back(bigRun("next", 8, 1.0f));
  QVERIFY(writeSession(p, next).ok());
  QCOMPARE(loadSession(p).value.runs[0].id, std::string("next"));
}

// kill -9 of `fp8lab-cli run --out existing.h5` while it writes (appends) its run: the existing
// session still opens with its run.
void TestReliabilityFiles::killCliDuringAppendKeepsPreviousFile() {
  if (!QFileInfo::exists(cliPath())) QFAIL(qPrintable(QStringLiteral("build fp8lab-cli first: %1").arg(cliPath())));
  QTemporaryDir dir;
  const std::string p = dir.path().toStdString() + "/s.h5";
  Session old;
  old.runs.push_back(bigRun("old", 32, 3.0f));
  QVERIFY(writeSession(p, old).ok());
  const std::string before = readBytes(p);
  const std::string cfg = dir.path().toStdString() + "/big.json";
  // 2048² outputs: D, reference, quantized-exact, error maps ≈ 100 MiB uncompressed to write.
  writeBytes(
      cfg,
      R"({"type": "gemm", "m": 2048, "k": 64, "n": 2048, "seed": 1, "format": "E4M3FN", "scaling": "te_current"})");
  const std::string cli = cliPath().toStdString();
  // The save pauses before its commit (FP8LAB_TEST_SAVE_PAUSE, session_writer.cpp): the temporary
  // file holds every run, the target is not replaced yet. The kill lands there on any machine.
  const std::string pause = dir.path().toStdString() + "/save-paused";
  const pid_t pid = fork();
  if (pid == 0) {
    const int nul = open("/dev/null", O_WRONLY);
    dup2(nul, 1);
    dup2(nul, 2);
    setenv("FP8LAB_TEST_SAVE_PAUSE", pause.c_str(), 1);
    execl(cli.c_str(), cli.c_str(), "run", cfg.c_str(), "--out", p.c_str(), "--no-compress", "-q",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  bool killed_mid_save = false;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) break; // ended without pausing: fails below
    if (fs::exists(pause)) {
      const auto t = tempFiles(dir.path().toStdString());
      std::error_code ec;
      const bool has_temporary = t.size() == 1 && fs::file_size(t[0], ec) > (size_t(1) << 20);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      killed_mid_save = true;
      QVERIFY2(has_temporary, "the paused save has no temporary file holding the run");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!killed_mid_save && waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  QVERIFY2(killed_mid_save, "fp8lab-cli was not caught during its save");
  QVERIFY(readBytes(p) == before);
  auto r = loadSession(p);
  QVERIFY2(r.ok(), r.message().c_str());
  QCOMPARE(r.value.runs.size(), size_t(1));
  QCOMPARE(r.value.runs[0].id, std::string("old"));
}

// A full disk (simulated with RLIMIT_FSIZE: writes past 2 MiB fail with EFBIG, as ENOSPC would):
// WriteFailed, the previous file untouched, no temporary left.
void TestReliabilityFiles::fullDiskKeepsPreviousFile() {
  QTemporaryDir dir;
  const std::string p = dir.path().toStdString() + "/full.h5";
  Session old;
  old.runs.push_back(bigRun("old", 16, 1.0f));
  QVERIFY(writeSession(p, old).ok());
  const std::string before = readBytes(p);
  const int rc = inChild(
      [&] {
        signal(SIGXFSZ, SIG_IGN);
        rlimit lim{2 << 20, 2 << 20};
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0) return 10;
        Session s;
        s.runs.push_back(bigRun("big", 1024, 0.0f)); // 4 MiB > 2 MiB
        WriteOptions opt;
        opt.compress = false;
        const Status st = writeSession(p, s, opt);
        if (st.ok()) return 11;
        if (!hasCode(st, Code::WriteFailed)) return 12;
        std::fprintf(stderr, "full disk: %s\n", st.firstError().c_str());
        return 0;
      },
      120);
  QCOMPARE(rc, 0);
  QVERIFY(readBytes(p) == before);
  QCOMPARE(tempFiles(dir.path().toStdString()).size(), size_t(0));
  QVERIFY(loadSession(p).ok());
}

// A FIFO (would block open() forever), a character device and a directory given where a file is
// expected: refused with a message, within seconds, by every reader.
void TestReliabilityFiles::fifoAndDevicesAreRefusedNotHung_data() {
  QTest::addColumn<QString>("reader");
  QTest::addColumn<QString>("kind");
  for (const char* reader : {"session", "hdf5-import", "npy", "safetensors", "idx"})
    for (const char* kind : {"fifo", "device", "directory"})
      QTest::newRow((std::string(reader) + "/" + kind).c_str())
          << QString::fromLatin1(reader) << QString::fromLatin1(kind);
}

void TestReliabilityFiles::fifoAndDevicesAreRefusedNotHung() {
  QFETCH(QString, reader);
  QFETCH(QString, kind);
  QTemporaryDir dir;
  std::string path;
  if (kind == QStringLiteral("fifo")) {
    path = dir.path().toStdString() + "/pipe";
    QVERIFY(mkfifo(path.c_str(), 0600) == 0);
  } else if (kind == QStringLiteral("device")) {
    path = "/dev/zero"; // endless zeros: must not be read to the end
  } else {
    path = dir.path().toStdString();
  }
  const std::string r = reader.toStdString();
  const int rc = inChild(
      [&] {
        if (r == "session") return SessionReader::open(path).ok() ? 1 : 0;
        if (r == "hdf5-import") return importHdf5Dataset(path, "/x").ok() || listHdf5Tensors(path).ok() ? 1 : 0;
        if (r == "npy") return importNpy(path).ok() ? 1 : 0;
        if (r == "safetensors") return listSafetensors(path).ok() ? 1 : 0;
        try {
          readIdxFile(path, 3);
          return 1;
        } catch (const IdxError& e) {
          std::fprintf(stderr, "idx: %s\n", e.what());
          return 0;
        }
      },
      20);
  QVERIFY2(rc != -1, "the reader hung");
  QCOMPARE(rc, 0);
}

// Cancel while reading a session (progress returns false): Cancelled, the file is unchanged.
void TestReliabilityFiles::cancelledReadLeavesFileAndReturnsCancelled() {
  QTemporaryDir dir;
  const std::string p = dir.path().toStdString() + "/c.h5";
  Session s;
  s.runs.push_back(bigRun("a", 32, 1.0f));
  s.runs.push_back(bigRun("b", 32, 2.0f));
  QVERIFY(writeSession(p, s).ok());
  const std::string before = readBytes(p);
  bool cancelled = false;
  try {
    auto r = loadSession(p, [](double, const std::string&) { return false; });
    // A loader that reports cancel as an issue instead of throwing is fine too — but not "ok".
    cancelled = !r.ok();
  } catch (const Cancelled&) {
    cancelled = true;
  }
  QVERIFY(cancelled);
  QVERIFY(readBytes(p) == before);
  QVERIFY(loadSession(p).ok());
}

// A session without any write permission bit is not rewritten by `run` (refused before
// computing) nor by the writers (delete, merge, append), also for root (who may write any file:
// access() says yes).
void TestReliabilityFiles::cliRefusesWriteProtectedOutputEvenForRoot() {
  QVERIFY2(QFileInfo::exists(cliPath()), qPrintable(QStringLiteral("build fp8lab-cli first: %1").arg(cliPath())));
  QTemporaryDir dir;
  const QString cfg = dir.filePath(QStringLiteral("c.json")), out = dir.filePath(QStringLiteral("ro.h5"));
  QVERIFY(writeSession(out.toStdString(), Session{1, {}, {}, {}, {bigRun("old", 4, 1.0f)}}).ok());
  QCOMPARE(chmod(qPrintable(out), 0444), 0);
  const std::string before = readBytes(out.toStdString());
  QVERIFY(writeConfig(cfg, R"({"type": "gemm", "m": 8, "n": 8, "k": 8})"));
  QProcess p;
  p.start(cliPath(), {QStringLiteral("run"), cfg, QStringLiteral("--out"), out, QStringLiteral("-q")});
  QVERIFY(p.waitForFinished(60000));
  const QString err = QString::fromUtf8(p.readAllStandardError());
  QCOMPARE(p.exitCode(), 2);
  QVERIFY2(err.contains(QStringLiteral("write failed: %1 is read-only (the session is kept as it is; choose another "
                                       "--out)")
                            .arg(out)),
           qPrintable(err));
  QVERIFY(readBytes(out.toStdString()) == before);
  // The writers themselves (runs delete, merge, append) refuse it too.
  const std::string o = out.toStdString();
  for (const Status& st : {deleteRun(o, "old"), mergeSessions(o, {o}), appendRuns(o, {bigRun("new", 4, 2.0f)})}) {
    QVERIFY(!st.ok());
    QVERIFY2(st.message().find("the file is read-only") != std::string::npos, st.message().c_str());
  }
  QVERIFY(readBytes(o) == before);
}

// Rewrites (append, rename, delete, merge) keep the runs they do not touch exactly as they are
// (H5Ocopy, no re-encoding: docs/session-format.md): gzip, big-endian types, int32 / fixed-string
// attributes and soft links — also for a file handled as untrusted (checked out of process first).
// Reference: the same rewrite with the check off.
void TestReliabilityFiles::hdf5RewritesKeepRunsExactly() {
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const std::string base = tmp.filePath(QStringLiteral("base.h5")).toStdString();
  Session s{1, {}, {}, {}, {bigRun("a", 96, 1.0f), bigRun("b", 8, 2.0f)}}; // a: 9216 elements, gzip
  QVERIFY(writeSession(base, s).ok());
  {
    hid_t f = H5Fopen(base.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t g = H5Gopen2(f, "runs/a", H5P_DEFAULT);
    const int32_t v = 7;
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t at = H5Acreate2(g, "int32_note", H5T_STD_I32BE, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(at, H5T_NATIVE_INT32, &v);
    H5Aclose(at);
    hid_t fixed = H5Tcopy(H5T_C_S1);
    H5Tset_size(fixed, 5);
    at = H5Acreate2(g, "fixed_note", fixed, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(at, fixed, "ab\0cd");
    H5Aclose(at);
    H5Tclose(fixed);
    H5Sclose(sp);
    H5Lcreate_soft("/runs/a/output/D", g, "alias", H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    H5Fclose(f);
  }
  const std::string off = tmp.filePath(QStringLiteral("off.h5")).toStdString(),
                    on = tmp.filePath(QStringLiteral("on.h5")).toStdString();
  QVERIFY(QFile::copy(QString::fromStdString(base), QString::fromStdString(off)));
  QVERIFY(QFile::copy(QString::fromStdString(base), QString::fromStdString(on)));
  setHdf5Isolation(false);
  QVERIFY(renameRun(off, "b", "b2").ok());
  QVERIFY(appendRuns(off, {bigRun("c", 4, 3.0f)}).ok());
  setHdf5Isolation(true);
  setHdf5Untrusted(true);
  const Status r1 = renameRun(on, "b", "b2");
  const Status r2 = appendRuns(on, {bigRun("c", 4, 3.0f)});
  setHdf5Untrusted(false);
  QVERIFY2(r1.ok(), r1.message().c_str());
  QVERIFY2(r2.ok(), r2.message().c_str());
  const std::string want = structureOf(off), got = structureOf(on);
  QVERIFY2(want.find("a/alias -> /runs/a/output/D") != std::string::npos, want.c_str()); // the reference kept it
  QVERIFY2(want.find("@int32_note:0/4") != std::string::npos, want.c_str());
  QVERIFY2(want.find("filters 2") != std::string::npos, want.c_str()); // shuffle + gzip on a/output/D
  QCOMPARE(got, want);
  // Sizes within 1 % (the same objects, the same compression).
  const double so = double(fs::file_size(off)), sn = double(fs::file_size(on));
  QVERIFY2(std::abs(sn - so) <= 0.01 * so, qPrintable(QStringLiteral("%1 vs %2 bytes").arg(sn).arg(so)));
}

// As a normal user, `chmod 444 ro.h5; fp8lab-cli run g.json --out ro.h5` leaves the write-protected
// session alone: every writer refuses an existing target the user may not write (a rename needs
// only the directory writable, so the check is explicit). Runs as nobody (see asUnprivileged).
void TestReliabilityFiles::readOnlySessionIsNotRewritten() {
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const std::string dir = tmp.path().toStdString();
  const std::string ro = dir + "/ro.h5", other = dir + "/other.h5", link = dir + "/link.h5";
  QVERIFY(writeSession(ro, Session{1, {}, {}, {}, {bigRun("r1", 4, 1.0f), bigRun("r2", 4, 2.0f)}}).ok());
  QVERIFY(writeSession(other, Session{1, {}, {}, {}, {bigRun("o1", 4, 3.0f)}}).ok());
  fs::create_symlink("ro.h5", link);
  giveToUnprivileged(ro);
  giveToUnprivileged(other);
  giveToUnprivileged(dir);
  QCOMPARE(chmod(dir.c_str(), 0777), 0); // the directory is writable: only the file's mode protects it
  QCOMPARE(chmod(ro.c_str(), 0444), 0);
  const std::string before = readBytes(ro);
  const std::string report = asUnprivileged([&] {
    const std::string want = "write failed|%P|the file is read-only (permission denied); nothing was written\n";
    auto expect = [&](const char* what, const Status& st, const std::string& shown) -> std::string {
      std::string w = want;
      w.replace(w.find("%P"), 2, shown);
      const std::string got = errorLines(st);
      return got == w ? std::string() : std::string(what) + ": got '" + got + "' want '" + w + "'\n";
    };
    std::string r;
    Session s{1, {}, {}, {}, {bigRun("new", 4, 5.0f)}};
    r += expect("writeSession", writeSession(ro, s), ro);
    r += expect("appendRuns", appendRuns(ro, {bigRun("new", 4, 5.0f)}), ro);
    r += expect("deleteRun", deleteRun(ro, "r1"), ro);
    r += expect("renameRun", renameRun(ro, "r1", "r9"), ro);
    r += expect("mergeSessions", mergeSessions(ro, {ro, other}), ro);
    r += expect("appendRuns through a link", appendRuns(link, {bigRun("new", 4, 5.0f)}), link);
    // The CLI refuses the read-only --out before computing, not after.
    {
      const std::string cfg = dir + "/c.json", errf = dir + "/cli-err.txt";
      FILE* f = std::fopen(cfg.c_str(), "w");
      if (!f) return std::string("cannot write the config");
      std::fputs(R"({"type": "gemm", "m": 256, "k": 256, "n": 256})", f);
      std::fclose(f);
      const std::string cli = cliPath().toStdString();
      const pid_t pid = fork();
      if (pid == 0) {
        const int e = open(errf.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(e, 2);
        execl(cli.c_str(), cli.c_str(), "run", cfg.c_str(), "--out", ro.c_str(), "-q", static_cast<char*>(nullptr));
        _exit(127);
      }
      int st = 0;
      waitpid(pid, &st, 0);
      const std::string err = readBytes(errf);
      // The up-front refusal's own words (the save's refusal after computing says "nothing was written").
      const std::string want =
          "write failed: " + ro + " is read-only (the session is kept as it is; choose another --out)";
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 2 || err.find(want) == std::string::npos)
        r += "CLI run --out read-only: exit " + std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : -1) + ": " + err;
      std::remove(errf.c_str());
      std::remove(cfg.c_str());
    }
    // A writable file of the same user in the same directory is written normally.
    const Status ok = appendRuns(other, {bigRun("o2", 4, 6.0f)});
    if (!ok.ok()) r += "appendRuns to a writable file failed: " + ok.message() + "\n";
    return r.empty() ? std::string("OK") : r;
  });
  if (report.rfind("SKIP", 0) == 0) QSKIP(report.c_str());
  QVERIFY2(report == "OK", report.c_str());
  QVERIFY(readBytes(ro) == before);
  QVERIFY(fs::is_symlink(link));
  QCOMPARE(tempFiles(dir), std::vector<std::string>{});
  QCOMPARE(loadSession(other).value.runs.size(), size_t(2));
}

// `chmod 000 noread.h5; fp8lab-cli inspect noread.h5` (as a normal user), and writing to it, give
// PermissionDenied, checked before HDF5 sees the file — not "corrupt file" or "not a valid FP8 Lab
// session".
void TestReliabilityFiles::unreadableFileIsPermissionDenied() {
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const std::string dir = tmp.path().toStdString();
  const std::string noread = dir + "/noread.h5", closed = dir + "/closed", hidden = closed + "/s.h5";
  QVERIFY(writeSession(noread, Session{1, {}, {}, {}, {bigRun("r1", 4, 1.0f)}}).ok());
  fs::create_directory(closed);
  QVERIFY(writeSession(hidden, Session{1, {}, {}, {}, {bigRun("r1", 4, 1.0f)}}).ok());
  const std::string before = readBytes(noread);
  giveToUnprivileged(noread);
  giveToUnprivileged(dir);
  QCOMPARE(chmod(dir.c_str(), 0777), 0);
  QCOMPARE(chmod(noread.c_str(), 0000), 0);
  QCOMPARE(chmod(closed.c_str(), 0700), 0); // as root: root's; otherwise ours, made unsearchable below
  const bool asRoot = geteuid() == 0;
  if (!asRoot) QCOMPARE(chmod(closed.c_str(), 0000), 0);
  const std::string report = asUnprivileged([&] {
    std::string r;
    auto expect = [&](const char* what, const Status& st, const std::string& want) {
      const std::string got = errorLines(st);
      if (got != want) r += std::string(what) + ": got '" + got + "' want '" + want + "'\n";
    };
    const std::string denied =
        "permission denied|" + noread + "|this user may not read the file (check its permissions)\n";
    expect("open", SessionReader::open(noread), denied);
    expect("append", appendRuns(noread, {bigRun("new", 4, 5.0f)}),
           denied + "write failed|" + noread +
               "|cannot read the existing file to keep its runs; nothing was written\n");
    expect("open below an unsearchable directory", SessionReader::open(hidden),
           "permission denied|" + hidden +
               "|cannot reach the file: a directory on its path is not searchable by this user\n");
    const auto st = SessionReader::open(noread);
    if (st.issues.empty() || st.issues[0].toString() != "error: permission denied at " + noread +
                                                            ": this user may not read the file (check its permissions)")
      r += "toString: " + (st.issues.empty() ? std::string("(none)") : st.issues[0].toString()) + "\n";
    return r.empty() ? std::string("OK") : r;
  });
  if (!asRoot) chmod(closed.c_str(), 0700);
  if (report.rfind("SKIP", 0) == 0) QSKIP(report.c_str());
  QVERIFY2(report == "OK", report.c_str());
  QCOMPARE(chmod(noread.c_str(), 0600), 0);
  QVERIFY(readBytes(noread) == before);
  QVERIFY(SessionReader::open(noread).ok());
  QCOMPARE(tempFiles(dir), std::vector<std::string>{});
}

// The same through the CLI: `merge keep.h5 other.h5` refuses to replace keep.h5 (--force does);
// `merge text.h5 ...` never turns a text file into HDF5; `runs delete d.h5 small nope` deletes
// nothing and says "file unchanged".
void TestReliabilityFiles::cliMergeKeepsAnUnrelatedOutputAndDeleteIsAllOrNothing() {
  QVERIFY2(QFileInfo::exists(cliPath()), qPrintable(QStringLiteral("build fp8lab-cli first: %1").arg(cliPath())));
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const std::string dir = tmp.path().toStdString();
  const std::string keep = dir + "/keep.h5", other = dir + "/other.h5", text = dir + "/text.h5", d = dir + "/d.h5";
  QVERIFY(writeSession(keep, Session{1, {}, {}, {}, {bigRun("k1", 4, 1.0f)}}).ok());
  QVERIFY(writeSession(other, Session{1, {}, {}, {}, {bigRun("o1", 4, 2.0f)}}).ok());
  QVERIFY(writeSession(d, Session{1, {}, {}, {}, {bigRun("small", 4, 1.0f), bigRun("big", 8, 2.0f)}}).ok());
  writeBytes(text, "lab notes, not a session\n");
  auto cli = [&](const QStringList& args, QString* err) {
    QProcess p;
    p.start(cliPath(), args);
    if (!p.waitForFinished(60000)) {
      p.kill();
      return -1;
    }
    *err = QString::fromUtf8(p.readAllStandardError());
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  };
  const QString K = QString::fromStdString(keep), O = QString::fromStdString(other), T = QString::fromStdString(text);
  const std::string keepBefore = readBytes(keep), textBefore = readBytes(text), dBefore = readBytes(d);
  QString err;
  QCOMPARE(cli({QStringLiteral("merge"), K, O}, &err), 2);
  QVERIFY2(err.contains(K + QStringLiteral(": already exists and is not one of the inputs")), qPrintable(err));
  QVERIFY2(err.contains(QStringLiteral("name it as an input too")) && err.contains(QStringLiteral("--force")),
           qPrintable(err));
  QVERIFY(readBytes(keep) == keepBefore);
  for (const QStringList& args : {QStringList{QStringLiteral("merge"), T, K, O},
                                  QStringList{QStringLiteral("merge"), QStringLiteral("--force"), T, K, O}}) {
    QCOMPARE(cli(args, &err), 2);
    QVERIFY2(err.contains(T + QStringLiteral(": refusing to modify a file that is not a valid FP8 Lab session")),
             qPrintable(err));
    QVERIFY(readBytes(text) == textBefore);
  }
  QCOMPARE(cli({QStringLiteral("merge"), K, K, O}, &err), 0); // merge into it
  QCOMPARE(loadSession(keep).value.runs.size(), size_t(2));
  QCOMPARE(cli({QStringLiteral("merge"), QStringLiteral("--force"), K, O}, &err), 0); // replace it
  QCOMPARE(loadSession(keep).value.runs.size(), size_t(1));
  QCOMPARE(loadSession(keep).value.runs[0].id, std::string("o1"));

  const QString D = QString::fromStdString(d);
  {
    // runs list --json: one object per run, sorted by id, from the file.
    QProcess p;
    p.start(cliPath(), {QStringLiteral("runs"), QStringLiteral("list"), D, QStringLiteral("--json")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const QJsonArray a = QJsonDocument::fromJson(p.readAllStandardOutput()).array();
    QCOMPARE(a.size(), 2);
    QCOMPARE(a[0].toObject().value(QStringLiteral("id")).toString(), QStringLiteral("big"));
    QCOMPARE(a[1].toObject().value(QStringLiteral("id")).toString(), QStringLiteral("small"));
    QVERIFY(a[0].toObject().value(QStringLiteral("datasets")).toInt() > 0);
    QCOMPARE(cli({QStringLiteral("runs"), QStringLiteral("list"), D, QStringLiteral("extra")}, &err), 2);
    QVERIFY2(err.contains(QStringLiteral("runs list takes only FILE.h5")), qPrintable(err));
  }
  QCOMPARE(
      cli({QStringLiteral("runs"), QStringLiteral("delete"), D, QStringLiteral("small"), QStringLiteral("nope")}, &err),
      2);
  QVERIFY2(err.contains(D + QStringLiteral("#/runs/nope: no such run (nothing deleted, file unchanged)")),
           qPrintable(err));
  QVERIFY(readBytes(d) == dBefore);
  QCOMPARE(
      cli({QStringLiteral("runs"), QStringLiteral("delete"), D, QStringLiteral("small"), QStringLiteral("big")}, &err),
      0);
  QCOMPARE(loadSession(d).value.runs.size(), size_t(0));
  QCOMPARE(tempFiles(dir), std::vector<std::string>{});
}

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--child-save") == 0) return childSave(argv[2]);
  TestReliabilityFiles t;
  QTEST_SET_MAIN_SOURCE_PATH
  return QTest::qExec(&t, argc, argv);
}

#include "test_reliability_files.moc"

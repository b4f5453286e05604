// Reliability: the bad inputs of docs/reliability.md not already covered by
// test_session / test_import / test_training / test_training_cli — kill -9 during a save (a child
// process, SIGKILLed mid-write: the previous file must open intact), a full disk, FIFOs and devices
// given as input files (must be refused, not hang), NaN / Inf / all-zero / empty tensors in the GEMM
// experiment, runs too large for memory refused up front naming the size, cancel of reads and of
// the GEMM experiment, and the fuzzers' regression inputs.
//
// The kill -9 test re-executes this test binary as the child ("--child-save FILE"): it writes a
// large session and, once a few datasets are in the temporary file, tells the parent through a pipe
// and waits to be killed. A second case kills a real `fp8lab-cli run` during its save.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QtTest>

#include "experiment/gemm/gemm_run.h"
#include "gemm/gemm.h"
#include "io/tensor_import.h"
#include "session/hdf5_isolation.h"
#include "session/session.h"
#include "training/fashion_mnist.h"
#include "training/idx_reader.h"
#include "training/trainer.h"

#include <hdf5.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace fp8lab;
namespace fs = std::filesystem;
using Code = Issue::Code;

namespace {

std::string readBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool hasCode(const Status& st, Code c) {
  for (const auto& i : st.issues)
    if (i.code == c) return true;
  return false;
}

/// Hidden temporaries the writer leaves behind when killed (".<name>.tmp-XXXXXX").
std::vector<std::string> tempFiles(const std::string& dir) {
  std::vector<std::string> r;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) r.push_back(e.path().string());
  return r;
}

/// A .npy v1.0 file of little-endian float32 [rows, cols] (NEP 1: magic, version, header length,
/// a Python dict literal padded with spaces to a multiple of 64 bytes ending in '\n').
std::string npy(int64_t rows, int64_t cols, const std::vector<float>& v) {
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                  std::to_string(cols) + "), }";
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  out += h;
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  return out;
}

/// A run with one float32 dataset of n×n elements, element i = base + i mod 1024 (exact in float32).
Run bigRun(const std::string& id, int64_t n, float base) {
  Run r;
  r.id = id;
  r.type = "reliability-test"; // not "gemm": the reader requires inputs/A and inputs/B of those
  r.config_json = "{}";
  std::vector<float> v(static_cast<size_t>(n * n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(i % 1024);
  r.putFloat32("output/D", std::move(v), n, n, "1", "test data");
  return r;
}

/// Runs fn in a forked child with a time limit; returns the child's exit code, or -1 when it had to
/// be killed (it hung), or -2 - signal when it died of a signal.
int inChild(const std::function<int()>& fn, int seconds) {
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(static_cast<unsigned>(seconds + 5)); // belt and braces if the parent dies
    _exit(fn());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (true) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return -2 - WTERMSIG(status);
}

/// Replays session inputs (replaySessionInput, in order) in a new process started from this test
/// binary (`--replay-sequence DIR`): nothing of this process's libhdf5 state is inherited, which a
/// fork would carry over (libhdf5 reads memory earlier files left behind: tests/fuzz/
/// in-process-limits). The exit code, or −2 − signal, or −1 after `seconds`.
int replayInFreshProcess(const std::vector<std::string>& files, int seconds) {
  QTemporaryDir dir;
  for (size_t i = 0; i < files.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "%04zu.h5", i);
    if (!QFile::copy(QString::fromStdString(files[i]), dir.filePath(QString::fromLatin1(name)))) return -100;
  }
  QProcess p;
  p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
  p.start(QFileInfo(QStringLiteral("/proc/self/exe")).symLinkTarget(),
          {QStringLiteral("--replay-sequence"), dir.path()});
  if (!p.waitForFinished(seconds * 1000)) {
    p.kill();
    p.waitForFinished();
    return -1;
  }
  if (p.exitStatus() == QProcess::CrashExit) return -2 - 11;
  return p.exitCode();
}

/// What fuzz_session does with one input (the reader still open during loadSession), as for a
/// session from elsewhere: checked out of process first.
void replaySessionInput(const std::string& f) {
  setHdf5Untrusted(true);
  auto r = SessionReader::open(f);
  if (r.ok())
    for (const auto& run : r.value->info().runs)
      for (const auto& ds : run.datasets) (void)r.value->read(run.id, ds.path);
  (void)loadSession(f);
  const auto list = listHdf5Tensors(f);
  if (list.ok())
    for (size_t i = 0; i < list.value.size() && i < 8; ++i) (void)importHdf5Dataset(f, list.value[i].name);
}

/// Whether the HDF5 checking helper is built with AddressSanitizer (`fp8lab-h5check --features`).
bool checkerIsMemoryChecked() {
  QProcess p;
  p.start(QString::fromStdString(hdf5CheckerPath()), {QStringLiteral("--features")});
  return p.waitForFinished(30000) && p.readAllStandardOutput().startsWith("memory-checked");
}

std::string selfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

QString cliPath() {
  return QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli");
}

/// The child of killDuringSaveKeepsPreviousFile: writes 6 runs of 1024×1024 float32 (4 MiB each,
/// uncompressed); once 3 datasets are written reports "S" on stdout and sleeps until killed.
int childSave(const std::string& path) {
  Session s;
  for (int i = 0; i < 6; ++i) s.runs.push_back(bigRun("new" + std::to_string(i), 1024, float(100 * i)));
  WriteOptions opt;
  opt.compress = false;
  int calls = 0;
  opt.progress = [&](double, const std::string&) {
    if (++calls == 4) { // progress comes before each dataset: 3 written (12 MiB)
      if (write(1, "S", 1) != 1) _exit(3);
      for (;;) pause(); // mid-save: the temporary file is open and half written
    }
    return true;
  };
  const Status st = writeSession(path, s, opt);
  return st.ok() ? 0 : 4; // reaching here means the parent did not kill us: the test fails
}

/// Runs fn in a forked child as an unprivileged user and returns the text it reports, so that
/// permission checks are tested also where the suite runs as root (CI containers; root passes
/// every access() check). As root the child drops to nobody/nogroup (65534) with setgroups +
/// setresgid + setresuid; as any other user it keeps its ids. "SKIP: why" when the ids cannot be
/// dropped; "CHILD FAILED ..." when it dies or hangs (time limit 60 s).
std::string asUnprivileged(const std::function<std::string()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) return "CHILD FAILED: pipe";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(60);
    std::string report;
    if (geteuid() == 0 &&
        (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0))
      report = std::string("SKIP: cannot drop root privileges: ") + std::strerror(errno);
    if (report.empty()) report = fn();
    for (size_t off = 0; off < report.size();) {
      const ssize_t n = write(fds[1], report.data() + off, report.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string report;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) report.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "CHILD FAILED (status " + std::to_string(status) + ")";
  return report;
}

/// Makes `path` belong to the user asUnprivileged() runs as (when root; otherwise it already does).
void giveToUnprivileged(const std::string& path) {
  if (geteuid() == 0 && chown(path.c_str(), 65534, 65534) != 0) qWarning("chown %s failed", path.c_str());
}

/// The Error issues of st as "code|where|detail" lines (exact comparison in the tests).
std::string errorLines(const Status& st) {
  std::string r;
  for (const auto& i : st.issues)
    if (i.severity == Severity::Error) r += std::string(codeName(i.code)) + "|" + i.where + "|" + i.detail + "\n";
  return r;
}

} // namespace

class TestReliability : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void killDuringSaveKeepsPreviousFile();
  void killCliDuringAppendKeepsPreviousFile();
  void fullDiskKeepsPreviousFile();
  void fifoAndDevicesAreRefusedNotHung_data();
  void fifoAndDevicesAreRefusedNotHung();
  void nanInfZeroTensorsInGemmExperiment();
  void emptyTensorIsRefusedWithItsShape();
  void hugeGemmIsRefusedUpFrontNamingTheSize();
  void hugeTrainingIsRefusedUpFrontNamingTheSize();
  void cancelledReadLeavesFileAndReturnsCancelled();
  void cancelledGemmExperimentWritesNothing();
  void cliBadInput_data();
  void cliBadInput();
  void cliNumbersIgnoreTheUserLocale();
  void cliRefusesOversizedConfigUpFront();
  void cliSignalStopsAndKeepsFinishedRuns_data();
  void cliSignalStopsAndKeepsFinishedRuns();
  void cliRunSavesSeveralExperimentsInOneRewrite();
  void cliSecondSignalStillSaves_data();
  void cliSecondSignalStillSaves();
  void cliThirdSignalStopsAndSaysWhatIsLost();
  void cliSweepResumesFinishedPoints();
  void cliRefusesWriteProtectedOutputEvenForRoot();
  void fuzzRegressions_data();
  void fuzzRegressions();
  void inProcessLimitsAreEachCheckedAlone();
  void hdf5LibraryCrashesAreContained_data();
  void hdf5LibraryCrashesAreContained();
  void hdf5CheckPassesGoodFilesAndFallsBack();
  void hdf5CheckSurvivesHostileEnvironment();
  void hdf5ChecksRunOnlyForFilesFromElsewhere();
  void hdf5RewritesKeepRunsExactly();
  void readOnlySessionIsNotRewritten();
  void unreadableFileIsPermissionDenied();
  void cliMergeKeepsAnUnrelatedOutputAndDeleteIsAllOrNothing();
};

// kill -9 in the middle of writeSession: the temporary file is half written, the previous file is
// byte-identical and opens with its run intact; the next save succeeds despite the stale temporary.
void TestReliability::killDuringSaveKeepsPreviousFile() {
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
void TestReliability::killCliDuringAppendKeepsPreviousFile() {
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
void TestReliability::fullDiskKeepsPreviousFile() {
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
void TestReliability::fifoAndDevicesAreRefusedNotHung_data() {
  QTest::addColumn<QString>("reader");
  QTest::addColumn<QString>("kind");
  for (const char* reader : {"session", "hdf5-import", "npy", "safetensors", "idx"})
    for (const char* kind : {"fifo", "device", "directory"})
      QTest::newRow((std::string(reader) + "/" + kind).c_str())
          << QString::fromLatin1(reader) << QString::fromLatin1(kind);
}

void TestReliability::fifoAndDevicesAreRefusedNotHung() {
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

// NaN / Inf / all-zero operands through the whole GEMM experiment: it runs, D's non-finite
// elements are counted, Inf/NaN inputs are reported (warning + a_nonfinite), all-zero inputs give
// exact zeros (scale rule: amax 0 keeps scale 1, TE / Flax) and an error of exactly 0.
void TestReliability::nanInfZeroTensorsInGemmExperiment() {
  QTemporaryDir dir;
  const std::string d = dir.path().toStdString();
  std::vector<float> a(4 * 8, 1.0f), b(8 * 4, 1.0f);
  auto runWith = [&](const std::vector<float>& av) {
    writeBytes(d + "/a.npy", npy(4, 8, av));
    writeBytes(d + "/b.npy", npy(8, 4, b));
    GemmExperimentConfig cfg;
    cfg.a.tensor = d + "/a.npy";
    cfg.b.tensor = d + "/b.npy";
    cfg.format_a = cfg.format_b = "E4M3FN";
    cfg.scaling = "te_current";
    auto backend = makeCpuGemmBackend();
    return runGemmExperimentRun(cfg, "{}", "t", *backend);
  };
  auto warned = [](const Status& st) {
    for (const auto& i : st.issues)
      if (i.severity == Severity::Warning && i.detail.find("NaN or Inf") != std::string::npos) return true;
    return false;
  };
  {
    std::vector<float> av = a;
    av[1 * 8 + 2] = std::numeric_limits<float>::quiet_NaN(); // row 1 of A → row 1 of D is NaN
    auto r = runWith(av);
    QVERIFY2(r.ok(), r.message().c_str());
    QVERIFY(warned(r));
    QCOMPARE(r.value.metrics.at("a_nonfinite").value, 1.0);
    QCOMPARE(r.value.metrics.at("b_nonfinite").value, 0.0);
    QCOMPARE(r.value.metrics.at("nonfinite_d").value, 4.0); // the 4 elements of row 1
  }
  {
    std::vector<float> av = a;
    av[0] = std::numeric_limits<float>::infinity();
    auto r = runWith(av);
    QVERIFY2(r.ok(), r.message().c_str());
    QVERIFY(warned(r));
    QCOMPARE(r.value.metrics.at("a_nonfinite").value, 1.0);
  }
  {
    auto r = runWith(std::vector<float>(32, 0.0f));
    QVERIFY2(r.ok(), r.message().c_str());
    QVERIFY(!warned(r));
    QVERIFY(!r.value.metrics.count("a_nonfinite"));
    // 0 · anything = 0 exactly: D, the reference and every error are 0.
    const Dataset* D = r.value.find("output/D");
    QVERIFY(D);
    for (float x : D->f32) QCOMPARE(x, 0.0f);
    QCOMPARE(r.value.metrics.at("max_abs").value, 0.0);
    QCOMPARE(r.value.metrics.at("nonfinite_d").value, 0.0);
  }
}

// A 0×8 tensor (valid .npy) as operand A: refused naming the shapes, not a confusing internal error.
void TestReliability::emptyTensorIsRefusedWithItsShape() {
  QTemporaryDir dir;
  const std::string d = dir.path().toStdString();
  writeBytes(d + "/a.npy", npy(0, 8, {}));
  writeBytes(d + "/b.npy", npy(8, 4, std::vector<float>(32, 1.0f)));
  auto imp = importNpy(d + "/a.npy");
  QVERIFY2(imp.ok(), imp.message().c_str()); // an empty array is a valid .npy file
  QCOMPARE(imp.value.shape, (std::vector<int64_t>{0, 8}));
  GemmExperimentConfig cfg;
  cfg.a.tensor = d + "/a.npy";
  cfg.b.tensor = d + "/b.npy";
  cfg.scaling = "te_current";
  auto backend = makeCpuGemmBackend();
  auto r = runGemmExperimentRun(cfg, "{}", "t", *backend);
  QVERIFY(!r.ok());
  QVERIFY(hasCode(r, Code::InvalidArgument));
  QVERIFY2(r.firstError().find("A is [0, 8]") != std::string::npos, r.firstError().c_str());
  QVERIFY2(r.firstError().find("empty operand") != std::string::npos, r.firstError().c_str());
}

// m = k = n = 2^20 (allowed by the config parser): 21·2·2^40 + 36·2^40 B = 78 TiB of buffers.
// Refused before any allocation, naming the size; with an explicit 1 MiB limit a 256³ GEMM
// (21·2·2^16 + 36·2^16 = 5,111,808 B = 4.88 MiB) is refused the same way.
void TestReliability::hugeGemmIsRefusedUpFrontNamingTheSize() {
  auto backend = makeCpuGemmBackend();
  GemmExperimentConfig cfg;
  cfg.m = cfg.k = cfg.n = int64_t(1) << 20;
  cfg.scaling = "te_current";
  auto r = runGemmExperimentRun(cfg, "{}", "huge", *backend);
  QVERIFY(!r.ok());
  QVERIFY2(r.firstError().find("needs about 7.99e+04 GiB") != std::string::npos, r.firstError().c_str());
  QVERIFY2(r.firstError().find("of memory available") != std::string::npos, r.firstError().c_str());

  GemmExperimentConfig small;
  small.scaling = "te_current";
  small.gemm.memory_limit_bytes = int64_t(1) << 20;
  auto s = runGemmExperimentRun(small, "{}", "small", *backend);
  QVERIFY(!s.ok());
  QVERIFY2(s.firstError().find("needs about 4.88 MiB of buffers, more than the 1 MiB allowed") != std::string::npos,
           s.firstError().c_str());
  small.gemm.memory_limit_bytes = 5111808; // exactly the estimate: accepted
  QVERIFY(runGemmExperimentRun(small, "{}", "small", *backend).ok());
}

// Training: the default 784-256-128-10 MLP, 1 epoch of 1 image, current scaling (no history
// window): weights 784·256 + 256·128 + 128·10 = 234,752 → 24 B each = 5,634,048 B; activations
// Σ(in+out) = 1040 + 384 + 138 = 1562, × 12 B × (batch 128 + eval 1000) = 21,143,232 B; 1 step ×
// (3·3·40 + 8) = 368 B; diagnostics (block_stats on, map_every 250): 9 summaries × 80 B = 720 B and
// (⌊0/250⌋ + 2) = 2 maps × ⌊434,688 / 16⌋ = 27,168 blocks × 45 B × 2 = 4,890,240 B (the 9 operands
// hold 128·784 + 784·256 + 128·256 + 128·256 + 256·128 + 128·128 + 128·128 + 128·10 + 128·10 =
// 434,688 elements). Total 31,668,608 B = 30.2 MiB > a 16 MiB limit: refused naming both.
void TestReliability::hugeTrainingIsRefusedUpFrontNamingTheSize() {
  TrainingConfig c;
  c.label = "big";
  c.epochs = 1;
  c.scaling.kind = TrainingScalingKind::CurrentTE;
  static_assert(sizeof(BlockStatsSummary) == 80);
  QCOMPARE(estimateTrainingBytes(c, 1), 31668608.0);
  c.forward_gemm.memory_limit_bytes = int64_t(16) << 20;
  ImageDataset one;
  one.count = 1;
  one.pixels.assign(784, 0.5f);
  one.labels = {3};
  try {
    TrainingRun run(c, one, one);
    QFAIL("a run larger than the limit was accepted");
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    QVERIFY2(m.find("needs about 30.2 MiB") != std::string::npos, e.what());
    QVERIFY2(m.find("more than the 16 MiB allowed") != std::string::npos, e.what());
  }
  c.forward_gemm.memory_limit_bytes = 31668608; // exactly enough
  TrainingRun ok(c, one, one);
  Q_UNUSED(ok);
  // Without a limit: 65536-wide layers (parser maximum) need 24·(784·65536 + 65536² + 65536·10)
  // B ≥ 96 GiB for the weights alone — refused on any machine with less memory than that.
  TrainingConfig h;
  h.layer_sizes = {784, 65536, 65536, 10};
  QVERIFY(estimateTrainingBytes(h, 60000) > 96.0 * 0x1p30);
}

// Cancel while reading a session (progress returns false): Cancelled, the file is unchanged.
void TestReliability::cancelledReadLeavesFileAndReturnsCancelled() {
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

// Cancel during the GEMM experiment: Cancelled is thrown, nothing is returned to be written.
void TestReliability::cancelledGemmExperimentWritesNothing() {
  auto backend = makeCpuGemmBackend();
  GemmExperimentConfig cfg;
  cfg.m = cfg.k = cfg.n = 64;
  cfg.scaling = "te_current";
  for (double stop_at : {0.0, 0.1, 0.5, 0.92}) { // operands, quantize, GEMM, metrics stages
    bool thrown = false;
    try {
      runGemmExperimentRun(cfg, "{}", "c", *backend, [&](double f, const std::string&) { return f < stop_at; });
    } catch (const Cancelled&) {
      thrown = true;
    }
    QVERIFY2(thrown, qPrintable(QStringLiteral("no cancel at %1").arg(stop_at)));
  }
}

// fp8lab-cli on bad configs, files and arguments: exit code 2 and a message naming the problem,
// nothing written. %D is replaced by a scratch directory holding the files named in the row.
void TestReliability::cliBadInput_data() {
  QTest::addColumn<QStringList>("args");
  QTest::addColumn<QByteArray>("config"); // written to %D/c.json when non-empty
  QTest::addColumn<QString>("mentions");
  const QString c = QStringLiteral("%D/c.json"), o = QStringLiteral("%D/out.h5");
  auto run = [&](const char* name, const QByteArray& cfg, const char* m) {
    QTest::newRow(name) << QStringList{QStringLiteral("run"), c, QStringLiteral("--out"), o, QStringLiteral("-q")}
                        << cfg << QString::fromUtf8(m);
  };
  run("config: empty file", QByteArray(" "), "is not valid JSON");
  // Extra words are refused, not ignored: `table E5M2` would otherwise print E4M3FN's table.
  QTest::newRow("table with a positional format")
      << QStringList{QStringLiteral("table"), QStringLiteral("E5M2")} << QByteArray()
      << QStringLiteral("table takes no arguments (got 'E5M2'); name the format with --format E5M2");
  QTest::newRow("formats with an argument") << QStringList{QStringLiteral("formats"), QStringLiteral("x")}
                                            << QByteArray() << QStringLiteral("formats takes no arguments (got 'x')");
  // --threads is bounded to 0..1024 (100000 would start 100000 worker threads).
  QTest::newRow("run --threads 100000")
      << QStringList{QStringLiteral("run"),   c, QStringLiteral("--out"), o, QStringLiteral("--threads"),
                     QStringLiteral("100000")}
      << QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4})")
      << QStringLiteral("--threads: expected an integer 0..1024 (0 = one per core), got '100000'");
  QTest::newRow("sweep --threads -1") << QStringList{QStringLiteral("sweep"),     c,
                                                     QStringLiteral("--out"),     o,
                                                     QStringLiteral("--threads"), QStringLiteral("-1")}
                                      << QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4})")
                                      << QStringLiteral("--threads: expected an integer 0..1024");
  run("config: not JSON", QByteArray("{\"type\": \"gemm\",\n \"m\": }"), "line 2, column");
  run("config: top-level array", QByteArray("[1, 2]"), "expected a JSON object at the top");
  // A key given twice is refused: JSON readers disagree on which value wins ({"m": 4, "m": 4096}).
  run("config: key given twice", QByteArray("{\"type\": \"gemm\", \"m\": 4,\n \"k\": 4, \"n\": 4, \"m\": 4096}"),
      "key \"m\" appears twice in the same object (the second at line 2, column 18)"); // line 2 = ` "k": 4, "n": 4,
                                                                                       // "m"...`: its quote is
                                                                                       // character 18
  run("config: nested key given twice (escaped)",
      QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "a": {"scale": 1, "sc\u0061le": 2}})"),
      "key \"scale\" appears twice");
  run("config: unknown key", QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "colour": 1})"), "colour");
  run("config: m = 0", QByteArray(R"({"type": "gemm", "m": 0, "k": 4, "n": 4})"),
      "m: expected an integer in [1, 1048576]");
  run("config: m is a string", QByteArray(R"({"type": "gemm", "m": "64", "k": 4, "n": 4})"),
      "m: expected an integer in [1, 1048576]");
  run("config: m = 1e300", QByteArray(R"({"type": "gemm", "m": 1e300, "k": 4, "n": 4})"),
      "m: expected an integer in [1, 1048576]");
  run("config: NaN-like scale", QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "a": {"scale": "nan"}})"),
      "a.scale: expected a finite number");
  run("config: unknown type", QByteArray(R"({"type": "conv", "m": 4})"), "conv");
  run("config: unknown format", QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "format": "E9M9"})"), "E9M9");
  run("config: missing tensor file", QByteArray(R"({"type": "gemm", "a": {"tensor": "/nonexistent/a.npy"}})"),
      "/nonexistent/a.npy");
  run("config: GEMM larger than memory", QByteArray(R"({"type": "gemm", "m": 1048576, "k": 1048576, "n": 1048576})"),
      "GiB of buffers, more than the");
  run("config: training, huge layers",
      QByteArray(R"({"type": "training", "layers": [784, 65536, 65536, 10], "train_limit": 10, "test_limit": 10})"),
      "more than the");
  // A layer size of 2^53 + 1 gives the message and nothing else: it is never converted to int
  // (undefined behaviour, which UBSan would report).
  run("config: training, layer size 2^53+1",
      QByteArray(R"({"type": "training", "layers": [784, 9007199254740993, 10]})"),
      "sizes must be integers in 1..65536");
  // Every experiment is checked before the first runs: the good first one is not computed and
  // saved only for the command to fail on the second (and the error names which one).
  run("config: second of two experiments has k = 0",
      QByteArray(
          R"({"experiments": [{"type": "gemm", "m": 8, "n": 8, "k": 8}, {"type": "gemm", "m": 8, "n": 8, "k": 0}]})"),
      "experiments[1]: k: expected an integer in [1, 1048576]");
  run("config: m beside a tensor operand",
      QByteArray(R"({"type": "gemm", "m": 999, "a": {"tensor": "a.npy"}, "b": {"tensor": "b.npy"}})"),
      "m: comes from the shape of the tensor file 'a.npy'; leave it out");
  run("config: scale on a tensor operand", QByteArray(R"({"type": "gemm", "a": {"tensor": "a.npy", "scale": 2}})"),
      "a.scale: applies to random operands only");
  run("config: training, unknown strategy", QByteArray(R"({"type": "training", "scaling": {"strategy": "dalayed"}})"),
      "dalayed");
  QTest::newRow("config file missing") << QStringList{QStringLiteral("run"), QStringLiteral("%D/none.json"),
                                                      QStringLiteral("--out"), o}
                                       << QByteArray() << QStringLiteral("none.json': no such file");
  QTest::newRow("config is a directory") << QStringList{QStringLiteral("run"), QStringLiteral("%D"),
                                                        QStringLiteral("--out"), o}
                                         << QByteArray() << QStringLiteral("is a directory");
  // Configs and value lists are read only from what can be one (cli_util readInputFile): /dev/zero
  // would be read until memory runs out, and a FIFO blocks until a writer appears.
  QTest::newRow("config is /dev/zero") << QStringList{QStringLiteral("run"), QStringLiteral("/dev/zero"),
                                                      QStringLiteral("--out"), o}
                                       << QByteArray() << QStringLiteral("config '/dev/zero' is a device");
  QTest::newRow("train config is /dev/urandom")
      << QStringList{QStringLiteral("train"), QStringLiteral("/dev/urandom"), QStringLiteral("--out"), o}
      << QByteArray() << QStringLiteral("config '/dev/urandom' is a device");
  QTest::newRow("config is a FIFO") << QStringList{QStringLiteral("run"), QStringLiteral("%D/fifo"),
                                                   QStringLiteral("--out"), o}
                                    << QByteArray() << QStringLiteral("is a FIFO or socket, not a regular file");
  QTest::newRow("encode --input /dev/zero")
      << QStringList{QStringLiteral("encode"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
                     QStringLiteral("--input"), QStringLiteral("/dev/zero")}
      << QByteArray() << QStringLiteral("--input '/dev/zero' is a device");
  QTest::newRow("quantize --input /dev/zero")
      << QStringList{QStringLiteral("quantize"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
                     QStringLiteral("--input"), QStringLiteral("/dev/zero")}
      << QByteArray() << QStringLiteral("--input '/dev/zero' is a device");
  QTest::newRow("scaling simulate --input /dev/zero")
      << QStringList{QStringLiteral("scaling"), QStringLiteral("simulate"), QStringLiteral("--preset"),
                     QStringLiteral("te"),      QStringLiteral("--input"),  QStringLiteral("/dev/zero")}
      << QByteArray() << QStringLiteral("--input '/dev/zero' is a device");
  QTest::newRow("output dir missing") << QStringList{QStringLiteral("run"), c, QStringLiteral("--out"),
                                                     QStringLiteral("%D/no/such/dir/out.h5"), QStringLiteral("-q")}
                                      << QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4})")
                                      << QStringLiteral("%D/no/such/dir");
  QTest::newRow("inspect a FIFO") << QStringList{QStringLiteral("inspect"), QStringLiteral("%D/fifo")} << QByteArray()
                                  << QStringLiteral("not a regular file");
  QTest::newRow("inspect a text file") << QStringList{QStringLiteral("inspect"), c} << QByteArray("hello")
                                       << QStringLiteral("HDF5");
  QTest::newRow("unknown command") << QStringList{QStringLiteral("frobnicate")} << QByteArray()
                                   << QStringLiteral("unknown command 'frobnicate'");
  QTest::newRow("unknown option") << QStringList{QStringLiteral("encode"), QStringLiteral("--formt"),
                                                 QStringLiteral("E4M3FN"), QStringLiteral("1")}
                                  << QByteArray() << QStringLiteral("formt");
  QTest::newRow("encode: not a number") << QStringList{QStringLiteral("encode"), QStringLiteral("--format"),
                                                       QStringLiteral("E4M3FN"), QStringLiteral("1e")}
                                        << QByteArray() << QStringLiteral("not a number: '1e'");
  QTest::newRow("scaling simulate: negative amax")
      << QStringList{QStringLiteral("scaling"), QStringLiteral("simulate"), QStringLiteral("--preset"),
                     QStringLiteral("te"),      QStringLiteral("--amax"),   QStringLiteral("1,2,-1")}
      << QByteArray() << QStringLiteral("amax -1 (item 3) is negative");
  QTest::newRow("gemm: --scale overflows float32")
      << QStringList{QStringLiteral("gemm"), QStringLiteral("-m"),      QStringLiteral("8"),
                     QStringLiteral("-n"),   QStringLiteral("8"),       QStringLiteral("-k"),
                     QStringLiteral("16"),   QStringLiteral("--scale"), QStringLiteral("1e45")}
      << QByteArray()
      << QStringLiteral("scale 1e+45 of the random normal A overflows float32 (max 3.40282e+38): 128 of 128 "
                        "elements of A are infinite");
  // The same check in `run` (one GEMM run behind both): |normal| · 1e45 > FLT_MAX for every one of
  // B's 16 draws (|z| would have to be below 3.4e-7).
  run("config: random scale overflows float32",
      QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "b": {"scale": 1e45}})"),
      "scale 1e+45 of the random normal B overflows float32 (max 3.40282e+38): 16 of 16 elements of B are infinite");
  QTest::newRow("sweep: three-part format")
      << QStringList{QStringLiteral("sweep"), c, QStringLiteral("--dry-run"), QStringLiteral("--formats"),
                     QStringLiteral("E4M3FN:E5M2:E2M1")}
      << QByteArray(R"({"type": "gemm", "m": 8, "n": 8, "k": 8})")
      << QStringLiteral("'E4M3FN:E5M2:E2M1' is not FORMAT or FORMAT_A:FORMAT_B");
  QTest::newRow("sweep: empty formats list")
      << QStringList{QStringLiteral("sweep"), c, QStringLiteral("--dry-run")}
      << QByteArray(R"({"type": "gemm", "m": 8, "n": 8, "k": 8, "sweep": {"formats": []}})")
      << QStringLiteral("sweep.formats: an empty list");
  // strtod turns 1e400 into inf and 1e-400 into 0 (ERANGE): refused with the reason instead.
  QTest::newRow("encode: 1e400 beyond float64")
      << QStringList{QStringLiteral("encode"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
                     QStringLiteral("1e400")}
      << QByteArray() << QStringLiteral("'1e400' is beyond the float64 range");
  QTest::newRow("encode: 1e-400 underflows float64")
      << QStringList{QStringLiteral("encode"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
                     QStringLiteral("1e-400")}
      << QByteArray() << QStringLiteral("'1e-400' underflows to 0 in float64");
  QTest::newRow("encode: unknown format")
      << QStringList{QStringLiteral("encode"), QStringLiteral("--format"), QStringLiteral("E4M4"), QStringLiteral("1")}
      << QByteArray() << QStringLiteral("E4M4");
  // Options that would do nothing are refused with the reason. scale_D: cuBLASLt applies D_SCALE
  // only to FP8 outputs.
  auto gemmArgs = [](std::initializer_list<const char*> extra) {
    QStringList a{QStringLiteral("gemm"), QStringLiteral("-m"), QStringLiteral("8"), QStringLiteral("-n"),
                  QStringLiteral("8"),    QStringLiteral("-k"), QStringLiteral("16")};
    for (const char* e : extra) a << QString::fromLatin1(e);
    return a;
  };
  QTest::newRow("gemm: --output-scale with a BF16 output")
      << gemmArgs({"--output", "bf16", "--output-scale", "16"}) << QByteArray()
      << QStringLiteral("--output-scale applies only to FP8 outputs");
  run("config: output_quant_scale with an FP32 output",
      QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "output": "fp32", "output_quant_scale": 16})"),
      "output_quant_scale: an output scale scale_D applies only to FP8 outputs");
  // per_column on A, or a per-row B, puts scales along K: no GEMM can take them out of its sum.
  QTest::newRow("gemm: per_column scales A along K")
      << gemmArgs({"--scaling", "per_column"}) << QByteArray()
      << QStringLiteral("'per_column' gives A [M, K] one scale per column, so its scales vary along K");
  run("config: per_column GEMM", QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "scaling": "per_column"})"),
      "scaling: 'per_column' gives A [M, K] one scale per column");
  auto quantizeArgs = [](std::initializer_list<const char*> extra) {
    QStringList a{QStringLiteral("quantize"), QStringLiteral("-f"), QStringLiteral("E4M3FN"),
                  QStringLiteral("--values"), QStringLiteral("3,1")};
    for (const char* e : extra) a << QString::fromLatin1(e);
    return a;
  };
  QTest::newRow("quantize: --pow2 on a delayed preset")
      << quantizeArgs({"-s", "te_delayed", "--pow2"}) << QByteArray()
      << QStringLiteral("te_delayed follows TE DelayedScaling, whose per-tensor delayed scaling computes float32 "
                        "scales with no power-of-two option");
  QTest::newRow("quantize: --margin on torchao")
      << quantizeArgs({"-s", "torchao_tensorwise", "--margin", "1"}) << QByteArray()
      << QStringLiteral("'torchao_tensorwise' follows torchao, which has "
                        "no margin");
  QTest::newRow("quantize: --history-len on a current preset")
      << quantizeArgs({"-s", "te_current", "--history-len", "16"}) << QByteArray()
      << QStringLiteral("--history-len applies to delayed presets");
  QTest::newRow("quantize: --seed without stochastic rounding")
      << quantizeArgs({"--seed", "7"}) << QByteArray()
      << QStringLiteral("--seed applies only to --rounding stochastic");
  QTest::newRow("quantize: --no-saturate on a delayed preset")
      << quantizeArgs({"-s", "flax_delayed", "--no-saturate"}) << QByteArray()
      << QStringLiteral("flax_delayed follows Flax fp8_ops, whose per-tensor delayed scaling casts with "
                        "round-to-nearest-even, saturating");
  QTest::newRow("quantize: --pow2 on MX") << quantizeArgs({"-s", "mx_floor", "--pow2"}) << QByteArray()
                                          << QStringLiteral("E8M0 scales, powers of two by construction");
  // Outputs that cannot hold a session, refused before computing (also for root).
  QTest::newRow("run --out /dev/null") << QStringList{QStringLiteral("run"), c, QStringLiteral("--out"),
                                                      QStringLiteral("/dev/null"), QStringLiteral("-q")}
                                       << QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4})")
                                       << QStringLiteral("--out /dev/null is not a regular file (a device");
  QTest::newRow("run --out in /proc") << QStringList{QStringLiteral("run"), c, QStringLiteral("--out"),
                                                     QStringLiteral("/proc/fp8lab-out.h5"), QStringLiteral("-q")}
                                      << QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4})")
                                      << QStringLiteral("write failed: cannot create files in /proc (");
  QTest::newRow("sweep --out a text file")
      << QStringList{QStringLiteral("sweep"), c, QStringLiteral("--out"), c, QStringLiteral("-q")}
      << QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4})")
      << QStringLiteral("c.json exists and is not an HDF5 session");
}

void TestReliability::cliBadInput() {
  QFETCH(QStringList, args);
  QFETCH(QByteArray, config);
  QFETCH(QString, mentions);
  QVERIFY2(QFileInfo::exists(cliPath()), qPrintable(QStringLiteral("build fp8lab-cli first: %1").arg(cliPath())));
  QTemporaryDir dir;
  QVERIFY(mkfifo(qPrintable(dir.filePath(QStringLiteral("fifo"))), 0600) == 0);
  if (!config.isEmpty()) {
    QFile f(dir.filePath(QStringLiteral("c.json")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(config);
  }
  for (QString& a : args) a.replace(QStringLiteral("%D"), dir.path());
  mentions.replace(QStringLiteral("%D"), dir.path());
  QProcess p;
  p.start(cliPath(), args);
  const bool finished = p.waitForFinished(120000);
  if (!finished) p.kill();
  QVERIFY2(finished, "fp8lab-cli hung");
  const QString err = QString::fromUtf8(p.readAllStandardError());
  QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  QVERIFY2(p.exitCode() == 2, qPrintable(QStringLiteral("exit %1: %2").arg(p.exitCode()).arg(err)));
  QVERIFY2(err.contains(QStringLiteral("error")), qPrintable(err));
  QVERIFY2(err.contains(mentions), qPrintable(QStringLiteral("'%1' not in: %2").arg(mentions, err)));
  QVERIFY2(!QFileInfo::exists(dir.filePath(QStringLiteral("out.h5"))), "an output file was written");
}

// A config larger than 64 MiB is refused from its size before anything is read (reading a 3 GB
// sparse file as a config would take 3 GB of memory before the JSON error).
void TestReliability::cliRefusesOversizedConfigUpFront() {
  QTemporaryDir dir;
  const QString big = dir.filePath(QStringLiteral("big.json"));
  {
    QFile f(big);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QVERIFY(f.resize(qint64(3) << 30)); // sparse: 3 GiB of zero bytes, no disk used
  }
  QProcess p;
  p.start(cliPath(), {QStringLiteral("run"), big, QStringLiteral("--out"), dir.filePath(QStringLiteral("o.h5"))});
  QVERIFY(p.waitForFinished(60000));
  const QString err = QString::fromUtf8(p.readAllStandardError());
  QCOMPARE(p.exitCode(), 2);
  QVERIFY2(err.contains(QStringLiteral("is 3.0 GiB; the limit is 64.0 MiB")), qPrintable(err));
}

// SIGINT / SIGTERM / SIGHUP during `run` and `sweep` (InterruptGuard, app/cli/cli_util.h): the
// command stops at its next check point, keeps the runs finished before, says so, and exits with
// 128 + the signal, so a SIGTERM from timeout, Slurm or systemd loses only the run in progress.
// The signal is sent once the first run is in the file,
// while the second (a 2048³ GEMM, seconds on the CPU) computes.
void TestReliability::cliSignalStopsAndKeepsFinishedRuns_data() {
  QTest::addColumn<QString>("command");
  QTest::addColumn<int>("signal");
  QTest::newRow("run, SIGTERM") << QStringLiteral("run") << int(SIGTERM);
  QTest::newRow("run, SIGINT") << QStringLiteral("run") << int(SIGINT);
  QTest::newRow("sweep, SIGHUP") << QStringLiteral("sweep") << int(SIGHUP);
}

void TestReliability::cliSignalStopsAndKeepsFinishedRuns() {
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
void TestReliability::cliRunSavesSeveralExperimentsInOneRewrite() {
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

namespace {
/// Writes `text` to `path` (a config).
bool writeConfig(const QString& path, const QByteArray& text) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
  return f.write(text) == text.size();
}

/// Starts `fp8lab-cli args` with FP8LAB_TEST_SAVE_PAUSE=pause when `pause` is not empty.
void startCli(QProcess& p, const QStringList& args, const QString& pause = {}) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  if (!pause.isEmpty()) env.insert(QStringLiteral("FP8LAB_TEST_SAVE_PAUSE"), pause);
  p.setProcessEnvironment(env);
  p.start(cliPath(), args);
}

/// Reads stderr until it contains `mark` (or 120 s pass, or the process ends); returns all read.
QByteArray waitForStderr(QProcess& p, const QByteArray& mark) {
  QByteArray seen;
  QElapsedTimer t;
  t.start();
  while (!seen.contains(mark) && t.elapsed() < 120000 && p.state() == QProcess::Running) {
    p.waitForReadyRead(100);
    seen += p.readAllStandardError();
  }
  return seen;
}

/// Waits until `path` exists (the save paused there) or the process ends; true when it exists.
bool waitForFile(QProcess& p, const QString& path) {
  QElapsedTimer t;
  t.start();
  while (!QFileInfo::exists(path) && t.elapsed() < 120000 && p.state() == QProcess::Running) p.waitForFinished(5);
  return QFileInfo::exists(path);
}

/// `count` signals to the process, `gap_us` microseconds apart (what `timeout`, Slurm or
/// `docker stop` deliver: one to the process, one to its group, milliseconds apart).
void signalTimes(QProcess& p, int sig, int count, int gap_us) {
  for (int i = 0; i < count; ++i) {
    ::kill(static_cast<pid_t>(p.processId()), sig);
    if (i + 1 < count) ::usleep(static_cast<useconds_t>(gap_us));
  }
}

size_t runsIn(const QString& path) {
  auto r = SessionReader::open(path.toStdString());
  return r.ok() ? r.value->info().runs.size() : size_t(0);
}
} // namespace

// Two SIGTERMs 2 ms apart (what `timeout`, Slurm or `docker stop` deliver): the second signal must
// not skip the save of the runs that finished — whether it arrives while the next run computes or while the save is
// under way (the save is paused before its commit with FP8LAB_TEST_SAVE_PAUSE, so the signals land in it on any
// machine).
void TestReliability::cliSecondSignalStillSaves_data() {
  QTest::addColumn<QString>("command");
  QTest::addColumn<bool>("duringSave");
  QTest::addColumn<int>("tries");
  QTest::newRow("run, while the second experiment computes") << QStringLiteral("run") << false << 4;
  QTest::newRow("run, during the save") << QStringLiteral("run") << true << 2;
  QTest::newRow("sweep, while the second point computes") << QStringLiteral("sweep") << false << 2;
}

void TestReliability::cliSecondSignalStillSaves() {
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
void TestReliability::cliThirdSignalStopsAndSaysWhatIsLost() {
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
void TestReliability::cliSweepResumesFinishedPoints() {
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

// A session without any write permission bit is not rewritten by `run` (refused before
// computing) nor by the writers (delete, merge, append), also for root (who may write any file:
// access() says yes).
void TestReliability::cliRefusesWriteProtectedOutputEvenForRoot() {
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

// QCoreApplication sets the user's locale (setlocale(LC_ALL, "")); under de_DE (decimal comma)
// strtod rejected "0.5" — `fp8lab-cli encode --format E4M3FN 0.5` failed on a German desktop.
// The locale is compiled with localedef into a temporary LOCPATH (needs Debian's locale sources).
void TestReliability::cliNumbersIgnoreTheUserLocale() {
  QVERIFY2(QFileInfo::exists(cliPath()), qPrintable(QStringLiteral("build fp8lab-cli first: %1").arg(cliPath())));
  if (!QFileInfo::exists(QStringLiteral("/usr/share/i18n/locales/de_DE")) ||
      QStandardPaths::findExecutable(QStringLiteral("localedef")).isEmpty())
    QSKIP("no locale sources (/usr/share/i18n/locales/de_DE, package 'locales') to build de_DE.UTF-8");
  QTemporaryDir dir;
  QProcess def;
  def.start(QStringLiteral("localedef"), {QStringLiteral("-i"), QStringLiteral("de_DE"), QStringLiteral("-f"),
                                          QStringLiteral("UTF-8"), dir.filePath(QStringLiteral("de_DE.UTF-8"))});
  QVERIFY(def.waitForFinished(180000));
  QVERIFY2(QFileInfo::exists(dir.filePath(QStringLiteral("de_DE.UTF-8/LC_NUMERIC"))),
           def.readAllStandardError().constData());
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("LOCPATH"), dir.path());
  env.insert(QStringLiteral("LC_ALL"), QStringLiteral("de_DE.UTF-8"));
  // glibc's setlocale keeps the loaded locale's data for the life of the process; LeakSanitizer
  // (sanitizer builds) reports it (argz_add_sep) and would turn exit 0 into 1.
  env.insert(QStringLiteral("ASAN_OPTIONS"), QStringLiteral("detect_leaks=0"));
  auto encode = [&](const QString& v, QByteArray* out) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(cliPath(), {QStringLiteral("encode"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
                        QStringLiteral("--json"), v});
    if (!p.waitForFinished(60000)) return -1;
    *out = p.readAllStandardOutput() + p.readAllStandardError();
    return p.exitCode();
  };
  QByteArray out;
  // 0.5 = 2^-1 → E4M3FN exponent field 7 - 1 = 6: 0 0110 000 = 0x30.
  QCOMPARE(encode(QStringLiteral("0.5"), &out), 0);
  QVERIFY2(out.contains("\"code\":\"0x30\""), out.constData());
  QVERIFY2(out.contains("\"value\":0.5"), out.constData());
  // The same text means the same number everywhere: "0,5" is not a number in any locale.
  QCOMPARE(encode(QStringLiteral("0,5"), &out), 2);
  QVERIFY2(out.contains("not a number"), out.constData());
}

// Inputs found by the fuzzers (tests/fuzz), replayed: each must give an error, not a crash.
// Files live in tests/fuzz/regressions/<target>/; the row name is the file name.
void TestReliability::fuzzRegressions_data() {
  QTest::addColumn<QString>("target");
  QTest::addColumn<QString>("file");
  const QDir root(QStringLiteral(FP8LAB_SOURCE_DIR "/tests/fuzz/regressions"));
  int rows = 0;
  // A sub-folder holds a sequence: its files, in name order, read by one process (a finding that
  // needs the library state the earlier files left behind).
  for (const QString& t : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot))
    for (const QString& f : QDir(root.filePath(t)).entryList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot)) {
      QTest::newRow(qPrintable(t + QLatin1Char('/') + f)) << t << root.filePath(t + QLatin1Char('/') + f);
      ++rows;
    }
  if (rows == 0) QTest::newRow("none") << QString() << QString();
}

void TestReliability::fuzzRegressions() {
  QFETCH(QString, target);
  QFETCH(QString, file);
  if (target.isEmpty()) return; // no fuzzer finding recorded yet
  std::vector<std::string> files;
  if (QFileInfo(file).isDir()) {
    const QDir seq(file);
    for (const QString& f : seq.entryList(QDir::Files, QDir::Name)) files.push_back(seq.filePath(f).toStdString());
    QVERIFY2(!files.empty(), qPrintable(file + QStringLiteral(": empty sequence folder")));
  } else {
    files.push_back(file.toStdString());
  }
  const auto replay = [&](const std::string& f) -> int {
    if (target == QStringLiteral("fuzz_npy"))
      (void)importNpy(f);
    else if (target == QStringLiteral("fuzz_safetensors")) {
      auto l = listSafetensors(f);
      if (l.ok())
        for (const auto& e : l.value) (void)importSafetensors(f, e.name);
    } else if (target == QStringLiteral("fuzz_session")) {
      replaySessionInput(f);
    } else if (target == QStringLiteral("fuzz_config")) {
      // Through the real CLI: exit 0 or 2, never a signal (the sanitizer build aborts on UB).
      const std::string cli = cliPath().toStdString(), out = f + ".out-" + std::to_string(getpid()) + ".h5";
      const pid_t pid = fork();
      if (pid == 0) {
        const int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(nul, 2);
        execl(cli.c_str(), cli.c_str(), "run", f.c_str(), "--out", "/nonexistent-dir/x.h5", "-q",
              static_cast<char*>(nullptr));
        _exit(127);
      }
      int st = 0;
      waitpid(pid, &st, 0);
      return WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 2) ? 0 : 9;
    } else if (target == QStringLiteral("fuzz_idx")) {
      const std::string b = readBytes(f);
      if (b.empty()) return 0;
      std::vector<uint8_t> bytes(b.begin() + 1, b.end());
      try {
        if (b[0] & 1) bytes = gunzip(bytes, "x", int64_t{1} << 20);
        (void)parseIdx(bytes, "x", (b[0] >> 1) & 3, int64_t{1} << 24);
      } catch (const IdxError&) {
      }
    }
    return 0;
  };
  // Session inputs in a new process: a fork would inherit the library state of every file this
  // test binary opened before (the in-process limit of tests/fuzz/in-process-limits/).
  const int rc = target == QStringLiteral("fuzz_session") ? replayInFreshProcess(files, 60 * int(files.size()))
                                                          : inChild(
                                                                [&] {
                                                                  for (const std::string& f : files)
                                                                    if (const int r = replay(f); r != 0) return r;
                                                                  return 0;
                                                                },
                                                                60 * int(files.size()));
  QCOMPARE(rc, 0);
}

// tests/fuzz/in-process-limits/: files that pass the out-of-process check one by one but crash
// libhdf5 when read in sequence in one process (docs/reliability.md row 92, not contained). Each
// file alone must be handled — opened or refused — as an untrusted file by `fp8lab-cli
// --untrusted`, in a fresh process.
void TestReliability::inProcessLimitsAreEachCheckedAlone() {
  const QDir root(QStringLiteral(FP8LAB_SOURCE_DIR "/tests/fuzz/in-process-limits"));
  int files = 0;
  for (const QString& d : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot))
    for (const QString& f : QDir(root.filePath(d)).entryList(QDir::Files, QDir::Name)) {
      const std::string path = root.filePath(d + QLatin1Char('/') + f).toStdString();
      // The user's command, in its own process: opened (0) or refused (2), never a crash. (In
      // this test binary's own layout the stale global-heap read can land on unmapped memory even
      // for one file: where it lands depends on the process, which is why it is not contained.)
      QProcess p;
      p.start(QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli"),
              {QStringLiteral("--untrusted"), QStringLiteral("inspect"), QString::fromStdString(path)});
      QVERIFY(p.waitForFinished(60000));
      QVERIFY2(p.exitStatus() == QProcess::NormalExit && (p.exitCode() == 0 || p.exitCode() == 2), path.c_str());
      ++files;
    }
  QVERIFY2(files >= 2, "tests/fuzz/in-process-limits/ holds no inputs");
}

// Files that crash or hang libhdf5 1.10.8 itself (found by fuzz_session; tests/fuzz/
// known-libhdf5-crashes/): opened in-process they SEGV or loop inside the library. FP8 Lab walks
// a file's metadata in the separate fp8lab-h5check process first (core/session/hdf5_isolation.h),
// so each open must come back as one Corrupt error that says the checking process crashed or ran
// past its time limit — and this process must survive. The open runs in a forked child with a
// time limit, so a regression fails this row instead of killing the suite.
void TestReliability::hdf5LibraryCrashesAreContained_data() {
  QTest::addColumn<QString>("file");
  const QDir dir(QStringLiteral(FP8LAB_SOURCE_DIR "/tests/fuzz/known-libhdf5-crashes"));
  const QStringList files = dir.entryList({QStringLiteral("*.h5")}, QDir::Files);
  QVERIFY2(!files.isEmpty(), "tests/fuzz/known-libhdf5-crashes/*.h5 missing");
  for (const QString& f : files) QTest::newRow(qPrintable(f)) << dir.filePath(f);
}

void TestReliability::hdf5LibraryCrashesAreContained() {
  QFETCH(QString, file);
  QVERIFY2(!hdf5CheckerPath().empty(), "fp8lab-h5check not found (it is built with fp8lab_data)");
  // *.memcheck.h5: libhdf5 copies from past the end of a block on these, which faults or not
  // depending on the heap layout — only the memory-checked helper (FP8LAB_H5CHECK_ASAN) sees it.
  if (file.contains(QStringLiteral(".memcheck.")) && !checkerIsMemoryChecked())
    QSKIP("fp8lab-h5check is built without AddressSanitizer (FP8LAB_H5CHECK_ASAN=OFF or no libasan)");
  setHdf5CheckTimeoutSeconds(5); // the hanging file loops for minutes; 5 s is plenty for a real walk
  const std::string f = file.toStdString();
  const int rc = inChild(
      [&] {
        setHdf5Untrusted(true); // a session from elsewhere (--untrusted, Open untrusted…)
        // The importer's listing first, in this fresh process: it must be refused as well, though
        // the listing alone does not touch the attribute tables these files damage — the helper
        // runs the session walk too (an in-process listing of such a file left libhdf5's heap
        // damaged; tests/fuzz/regressions/fuzz_session/sequence-heap-use-after-free).
        const auto l = listHdf5Tensors(f);
        if (l.ok()) return 7;
        if (l.message().find("separate checking process") == std::string::npos) return 8;
        auto r = SessionReader::open(f);
        if (r.ok()) return 3; // these files are not valid sessions: must be refused
        if (!hasCode(r, Code::Corrupt)) return 4;
        const std::string m = r.message();
        if (m.find("separate checking process") == std::string::npos) return 5;
        // a signal (a plain helper), the memory checker's report (the ASan-built helper, exit 5), a
        // sanitizer's exit status (the whole-ASan build's helper), the time limit, or the memory limit
        if (m.find("crashed (signal") == std::string::npos && m.find("failed (exit status") == std::string::npos &&
            m.find("did not finish") == std::string::npos &&
            m.find("MiB of memory in a separate") == std::string::npos &&
            m.find("made a memory error") == std::string::npos)
          return 6;
        return 0;
      },
      40);
  setHdf5CheckTimeoutSeconds(0);
  QCOMPARE(rc, 0);
}

// The check lets a valid session through unchanged, and without a helper program the open still
// works (unprotected, as before the check existed).
// The memory-checked helper (AddressSanitizer runtime) must not turn an unusual environment into
// "every file refused" or "every file unprotected": a library preloaded in front of the ASan
// runtime is dropped from the helper's environment (the crafted file is still refused), and an
// address-space limit too small for ASan's shadow memory makes the helper unusable — then a good
// file opens (unprotected, as without the helper) instead of being called damaged.
void TestReliability::hdf5CheckSurvivesHostileEnvironment() {
  if (!checkerIsMemoryChecked()) QSKIP("fp8lab-h5check is built without AddressSanitizer");
  QTemporaryDir tmp;
  const std::string good = tmp.filePath(QStringLiteral("good.h5")).toStdString();
  Session s;
  s.runs.push_back(bigRun("r1", 8, 1.0f));
  QVERIFY(writeSession(good, s).ok());
  const std::string crafted = FP8LAB_SOURCE_DIR "/tests/fuzz/known-libhdf5-crashes/H5Aiterate2-H5A__close-segv.h5";
  const std::string bigAlloc =
      FP8LAB_SOURCE_DIR "/tests/fuzz/known-libhdf5-crashes/H5HL_protect-1.4GB-local-heap.memcheck.h5";
  int rc = inChild(
      [&] {
        setHdf5Untrusted(true);
        setenv("LD_PRELOAD", "libz.so.1", 1); // any library: ASan insists on coming first
        // Inherited sanitizer settings (a fuzzer's, a test run's) must not loosen the helper's: with
        // these, libhdf5's 1.4 GB allocation would be allowed, or returned as NULL, and pass.
        setenv("ASAN_OPTIONS", "allocator_may_return_null=1:max_allocation_size_mb=100000:redzone=16", 1);
        auto bad = SessionReader::open(crafted);
        if (bad.ok() || bad.message().find("separate checking process") == std::string::npos) return 3;
        auto big = SessionReader::open(bigAlloc);
        if (big.ok() || big.message().find("asked for more than 512 MiB at once") == std::string::npos) {
          std::fprintf(stderr, "%s\n", big.message().c_str());
          return 5;
        }
        auto ok = SessionReader::open(good);
        return ok.ok() ? 0 : 4;
      },
      60);
  QCOMPARE(rc, 0);
#if !defined(__SANITIZE_ADDRESS__) // this process's own ASan runtime would not survive the limit either
  rc = inChild(
      [&] {
        setHdf5Untrusted(true);
        rlimit lim{rlim_t(4) << 30, rlim_t(4) << 30}; // 4 GiB: plenty for FP8 Lab, far too little for ASan's shadow
        if (setrlimit(RLIMIT_AS, &lim) != 0) return 10;
        auto ok = SessionReader::open(good);
        if (!ok.ok()) {
          std::fprintf(stderr, "%s\n", ok.message().c_str());
          return 11;
        }
        return ok.value->info().runs.size() == 1 ? 0 : 12;
      },
      60);
  QCOMPARE(rc, 0);
#endif
}

void TestReliability::hdf5CheckPassesGoodFilesAndFallsBack() {
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const std::string path = tmp.filePath(QStringLiteral("good.h5")).toStdString();
  Session s;
  s.runs.push_back(bigRun("r1", 8, 1.0f));
  QVERIFY(writeSession(path, s).ok());
  QVERIFY(checkHdf5FileOutOfProcess(path).ok());
  auto r = SessionReader::open(path);
  QVERIFY2(r.ok(), r.message().c_str());
  QCOMPARE(r.value->info().runs.size(), size_t(1));
  const int rc = inChild(
      [&] {
        setenv("FP8LAB_H5CHECK", "/nonexistent/fp8lab-h5check", 1);
        setHdf5Untrusted(true);
        if (!hdf5CheckerPath().empty()) return 3;
        auto r2 = SessionReader::open(path);
        return r2.ok() && r2.value->info().runs.size() == 1 ? 0 : 4;
      },
      30);
  QCOMPARE(rc, 0);
}

// Sessions open in process (as h5py or HDFView do); the separate checking process runs only for
// files from elsewhere: foreign-dataset imports always, sessions opened as untrusted. The
// reference is the trusted open: an untrusted open must show exactly the same session, data,
// listing and imports, read from the original file itself (no copy), after one helper run per
// file version (a second open of the same version reuses the verdict).
void TestReliability::hdf5ChecksRunOnlyForFilesFromElsewhere() {
  QVERIFY2(!hdf5CheckerPath().empty(), "fp8lab-h5check not found (it is built with fp8lab_data)");
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const std::string sess = tmp.filePath(QStringLiteral("s.h5")).toStdString();
  Session s;
  s.created_utc = "2026-01-02T03:04:05Z";
  s.attrs["note"] = std::string("root note");
  s.attrs["count"] = int64_t(7);
  Run a = bigRun("a", 96, 1.0f); // 9216 elements: chunked + gzip (≥ 4096)
  a.attrs["label"] = std::string("first");
  a.attrs["lr"] = 0.125;
  a.seed = 0xFEDCBA9876543210ull; // above INT64_MAX: the u64 attribute must survive the copy
  a.setMetric("snr", 31.5, "dB", "signal to noise");
  a.putFloat32("small/v", {1.5f, -2.25f, 3.0f}, 3, -1, "1", "contiguous");
  a.datasets["codes"] = Dataset::uint8({2, 3}, {0, 1, 2, 253, 254, 255}, "1", "codes");
  a.datasets["steps"] = Dataset::int64({2}, {-5, int64_t(1) << 40}, "step", "steps");
  a.datasets["wide"] = Dataset::float64({1, 2}, {0.1, -1e300}, "1", "float64");
  a.group_attrs["small"]["group_note"] = std::string("g");
  s.runs.push_back(a);
  s.runs.push_back(bigRun("b", 8, 5.0f));
  QVERIFY(writeSession(sess, s).ok());
  // A foreign file: big-endian float64 [3, 4], float32 [5] with an attribute, a rank-3 float (listed,
  // not importable) and an integer dataset (not listed).
  const std::string foreign = tmp.filePath(QStringLiteral("f.h5")).toStdString();
  {
    hid_t f = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    auto put = [&](const char* name, hid_t ftype, hid_t mtype, std::vector<hsize_t> dims, const void* data) {
      hid_t sp = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
      hid_t d = H5Dcreate2(f, name, ftype, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
      H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
      H5Dclose(d);
      H5Sclose(sp);
    };
    const double w[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -0.5};
    const float v[5] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f};
    const float cube[8] = {};
    const int ints[3] = {1, 2, 3};
    put("/model/w", H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, {3, 4}, w);
    put("/v", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {5}, v);
    put("/cube", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {2, 2, 2}, cube);
    put("/ints", H5T_STD_I32LE, H5T_NATIVE_INT, {3}, ints);
    H5Pclose(lcpl);
    H5Fclose(f);
  }
  struct Seen {
    SessionInfo info;
    std::vector<Dataset> data;
    std::vector<TensorEntry> list;
    std::vector<Dataset> imports;
    std::vector<std::string> open_files;             // what libhdf5 held while the reader was open
    uint64_t session_checks = 0, foreign_checks = 0; // helper runs during the session / foreign part
  };
  auto look = [&](Seen* out) {
    const uint64_t c0 = hdf5CheckerRuns();
    auto r = SessionReader::open(sess);
    out->session_checks = hdf5CheckerRuns() - c0;
    QVERIFY2(r.ok() && r.issues.empty(), r.message().c_str());
    out->info = r.value->info();
    for (const auto& run : out->info.runs)
      for (const auto& d : run.datasets) {
        auto ds = r.value->read(run.id, d.path);
        QVERIFY2(ds.ok(), ds.message().c_str());
        out->data.push_back(ds.value);
      }
    std::vector<hid_t> ids(64);
    const ssize_t n = H5Fget_obj_ids(H5F_OBJ_ALL, H5F_OBJ_FILE, ids.size(), ids.data());
    for (ssize_t i = 0; i < n; ++i) {
      char name[4096] = {};
      H5Fget_name(ids[size_t(i)], name, sizeof name);
      out->open_files.emplace_back(name);
    }
    const uint64_t c1 = hdf5CheckerRuns();
    auto l = listHdf5Tensors(foreign);
    QVERIFY2(l.ok(), l.message().c_str());
    out->list = l.value;
    for (const char* name : {"/model/w", "/v"}) {
      auto d = importHdf5Dataset(foreign, name);
      QVERIFY2(d.ok(), d.message().c_str());
      out->imports.push_back(d.value);
    }
    auto bad = importHdf5Dataset(foreign, "/cube");
    QVERIFY(!bad.ok() && hasCode(bad, Code::WrongShape)); // rank 3: the same refusal both ways
    out->foreign_checks = hdf5CheckerRuns() - c1;
  };
  Seen ref, iso;
  look(&ref);
  setHdf5Untrusted(true);
  look(&iso);
  Seen again;
  look(&again);
  setHdf5Untrusted(false);
  QCOMPARE(ref.open_files, std::vector<std::string>{sess}); // the session itself, in process
  QCOMPARE(iso.open_files, std::vector<std::string>{sess}); // no copy
  QCOMPARE(ref.session_checks, uint64_t(0));                // a trusted open starts no helper
  QCOMPARE(ref.foreign_checks, uint64_t(1));                // the foreign file: one verdict, then reused
  QCOMPARE(iso.session_checks, uint64_t(1));                // untrusted: checked first
  QCOMPARE(iso.foreign_checks, uint64_t(0));
  QCOMPARE(again.session_checks + again.foreign_checks, uint64_t(0));
  // The session as the reader shows it.
  QCOMPARE(iso.info.path, sess);
  QCOMPARE(iso.info.format_version, ref.info.format_version);
  QCOMPARE(iso.info.app_version, ref.info.app_version);
  QCOMPARE(iso.info.created_utc, std::string("2026-01-02T03:04:05Z"));
  QCOMPARE(iso.info.modified_utc, ref.info.modified_utc);
  QVERIFY(iso.info.attrs == ref.info.attrs);
  QCOMPARE(iso.info.runs.size(), size_t(2));
  for (size_t i = 0; i < ref.info.runs.size(); ++i) {
    const RunInfo &x = ref.info.runs[i], &y = iso.info.runs[i];
    QCOMPARE(y.id, x.id);
    QCOMPARE(y.seed, x.seed);
    QCOMPARE(y.type, x.type);
    QCOMPARE(y.config_json, x.config_json);
    QCOMPARE(y.created_utc, x.created_utc);
    QVERIFY(y.attrs == x.attrs);
    QVERIFY(y.group_attrs == x.group_attrs);
    QCOMPARE(y.metrics.size(), x.metrics.size());
    for (const auto& [k, m] : x.metrics) {
      QCOMPARE(y.metrics.at(k).value, m.value);
      QCOMPARE(y.metrics.at(k).units, m.units);
    }
    QCOMPARE(y.datasets.size(), x.datasets.size());
    for (size_t j = 0; j < x.datasets.size(); ++j) {
      QCOMPARE(y.datasets[j].path, x.datasets[j].path);
      QVERIFY(y.datasets[j].dtype == x.datasets[j].dtype);
      QCOMPARE(y.datasets[j].shape, x.datasets[j].shape);
      QVERIFY(y.datasets[j].attrs == x.datasets[j].attrs);
      QCOMPARE(y.datasets[j].chunked, x.datasets[j].chunked);
      QCOMPARE(y.datasets[j].compressed, x.datasets[j].compressed);
    }
  }
  QCOMPARE(ref.info.runs[0].seed, uint64_t(0xFEDCBA9876543210ull));
  QCOMPARE(ref.info.runs[0].datasets.size(), size_t(5));
  QVERIFY(ref.info.runs[0].datasets[1].compressed);  // output/D (sorted: codes, output/D, small/v, ...), 9216 elements
  QVERIFY(!ref.info.runs[0].datasets[2].compressed); // small/v
  QCOMPARE(iso.data.size(), ref.data.size());
  for (size_t i = 0; i < ref.data.size(); ++i) {
    QCOMPARE(iso.data[i].shape, ref.data[i].shape);
    QVERIFY(iso.data[i].f32 == ref.data[i].f32 && iso.data[i].f64 == ref.data[i].f64 &&
            iso.data[i].u8 == ref.data[i].u8 && iso.data[i].i64 == ref.data[i].i64);
  }
  // The importer, through the helper.
  QCOMPARE(iso.list.size(), ref.list.size());
  QCOMPARE(ref.list.size(), size_t(3)); // /cube, /model/w, /v (floats only)
  for (size_t i = 0; i < ref.list.size(); ++i) {
    QCOMPARE(iso.list[i].name, ref.list[i].name);
    QCOMPARE(iso.list[i].dtype, ref.list[i].dtype);
    QCOMPARE(iso.list[i].shape, ref.list[i].shape);
    QCOMPARE(iso.list[i].importable, ref.list[i].importable);
  }
  for (size_t i = 0; i < ref.imports.size(); ++i) {
    QVERIFY(iso.imports[i].dtype == ref.imports[i].dtype);
    QCOMPARE(iso.imports[i].shape, ref.imports[i].shape);
    QVERIFY(iso.imports[i].f32 == ref.imports[i].f32 && iso.imports[i].f64 == ref.imports[i].f64);
    QVERIFY(iso.imports[i].attrs == ref.imports[i].attrs);
  }
  QCOMPARE(ref.imports[0].f64.back(), -0.5);                                  // big-endian float64, exact
  QCOMPARE(attrString(ref.imports[0].attrs, "source").value_or(""), foreign); // the original path, not the copy
  QCOMPARE(attrString(iso.imports[0].attrs, "source_dtype").value_or(""), std::string(">float64"));
}

namespace {
/// Every link of an HDF5 file with what a rewrite must keep: link kind (hard / soft / external, with
/// the soft link's target), and for objects their attributes' names and types, and for datasets
/// the element type, layout and filter count. One line per link, in name order.
std::string structureOf(const std::string& path) {
  struct Ctx {
    hid_t file;
    std::string out;
  } ctx{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), {}};
  if (ctx.file < 0) return "cannot open " + path;
  auto visit = [](hid_t g, const char* name, const H5L_info_t* li, void* p) -> herr_t {
    auto& c = *static_cast<Ctx*>(p);
    c.out += name;
    if (li->type == H5L_TYPE_SOFT) {
      char target[1024] = {};
      H5Lget_val(g, name, target, sizeof target, H5P_DEFAULT);
      c.out += std::string(" -> ") + target + "\n";
      return 0;
    }
    if (li->type != H5L_TYPE_HARD) {
      c.out += " (external)\n";
      return 0;
    }
    hid_t o = H5Oopen(g, name, H5P_DEFAULT);
    if (H5Iget_type(o) == H5I_DATASET) {
      hid_t t = H5Dget_type(o), pl = H5Dget_create_plist(o);
      c.out += " dataset " + std::to_string(int(H5Tget_class(t))) + "/" + std::to_string(H5Tget_size(t)) + "/" +
               std::to_string(int(H5Tget_order(t))) + " layout " + std::to_string(int(H5Pget_layout(pl))) +
               " filters " + std::to_string(H5Pget_nfilters(pl));
      H5Tclose(t);
      H5Pclose(pl);
    }
    H5O_info_t oi;
    H5Oget_info2(o, &oi, H5O_INFO_NUM_ATTRS);
    for (hsize_t i = 0; i < oi.num_attrs; ++i) {
      hid_t a = H5Aopen_by_idx(o, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT);
      char an[256] = {};
      H5Aget_name(a, sizeof an, an);
      hid_t t = H5Aget_type(a);
      c.out += std::string(" @") + an + ":" + std::to_string(int(H5Tget_class(t))) + "/" +
               std::to_string(H5Tget_size(t)) + (H5Tis_variable_str(t) > 0 ? "/vlen" : "");
      H5Tclose(t);
      H5Aclose(a);
    }
    H5Oclose(o);
    c.out += "\n";
    return 0;
  };
  hid_t runs = H5Gopen2(ctx.file, "runs", H5P_DEFAULT);
  H5Lvisit(runs, H5_INDEX_NAME, H5_ITER_INC, visit, &ctx);
  H5Gclose(runs);
  H5Fclose(ctx.file);
  return ctx.out;
}
} // namespace

// Rewrites (append, rename, delete, merge) keep the runs they do not touch exactly as they are
// (H5Ocopy, no re-encoding: docs/session-format.md): gzip, big-endian types, int32 / fixed-string
// attributes and soft links — also for a file handled as untrusted (checked out of process first).
// Reference: the same rewrite with the check off.
void TestReliability::hdf5RewritesKeepRunsExactly() {
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
void TestReliability::readOnlySessionIsNotRewritten() {
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
void TestReliability::unreadableFileIsPermissionDenied() {
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
void TestReliability::cliMergeKeepsAnUnrelatedOutputAndDeleteIsAllOrNothing() {
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
  if (argc == 3 && std::strcmp(argv[1], "--replay-sequence") == 0) { // tests/fuzz/in-process-limits/README.md
    const QDir seq(QString::fromLocal8Bit(argv[2]));
    for (const QString& f : seq.entryList(QDir::Files, QDir::Name)) {
      std::fprintf(stderr, "replaying %s\n", qPrintable(seq.filePath(f)));
      replaySessionInput(seq.filePath(f).toStdString());
    }
    return 0;
  }
  TestReliability t;
  QTEST_SET_MAIN_SOURCE_PATH
  return QTest::qExec(&t, argc, argv);
}

#include "test_reliability.moc"

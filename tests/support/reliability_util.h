// The shared helpers of the reliability suites (tests/core/session/test_reliability_*.cpp):
// file bytes, temporary files, a child process with a time limit, replays of session inputs in a
// fresh process, the HDF5 checking helper's build, the CLI, and an unprivileged user.
#pragma once

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

namespace reliability {

using namespace fp8lab;
namespace fs = std::filesystem;
using Code = Issue::Code;

inline std::string readBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline bool hasCode(const Status& st, Code c) {
  for (const auto& i : st.issues)
    if (i.code == c) return true;
  return false;
}

/// Hidden temporaries the writer leaves behind when killed (".<name>.tmp-XXXXXX").
inline std::vector<std::string> tempFiles(const std::string& dir) {
  std::vector<std::string> r;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) r.push_back(e.path().string());
  return r;
}

/// A .npy v1.0 file of little-endian float32 [rows, cols] (NEP 1: magic, version, header length,
/// a Python dict literal padded with spaces to a multiple of 64 bytes ending in '\n').
inline std::string npy(int64_t rows, int64_t cols, const std::vector<float>& v) {
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
inline Run bigRun(const std::string& id, int64_t n, float base) {
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
inline int inChild(const std::function<int()>& fn, int seconds) {
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
inline int replayInFreshProcess(const std::vector<std::string>& files, int seconds) {
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
inline void replaySessionInput(const std::string& f) {
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
inline bool checkerIsMemoryChecked() {
  QProcess p;
  p.start(QString::fromStdString(hdf5CheckerPath()), {QStringLiteral("--features")});
  return p.waitForFinished(30000) && p.readAllStandardOutput().startsWith("memory-checked");
}

inline std::string selfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

inline QString cliPath() {
  return QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli");
}

/// The child of killDuringSaveKeepsPreviousFile: writes 6 runs of 1024×1024 float32 (4 MiB each,
/// uncompressed); once 3 datasets are written reports "S" on stdout and sleeps until killed.
inline int childSave(const std::string& path) {
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
inline std::string asUnprivileged(const std::function<std::string()>& fn) {
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
inline void giveToUnprivileged(const std::string& path) {
  if (geteuid() == 0 && chown(path.c_str(), 65534, 65534) != 0) qWarning("chown %s failed", path.c_str());
}

/// The Error issues of st as "code|where|detail" lines (exact comparison in the tests).
inline std::string errorLines(const Status& st) {
  std::string r;
  for (const auto& i : st.issues)
    if (i.severity == Severity::Error) r += std::string(codeName(i.code)) + "|" + i.where + "|" + i.detail + "\n";
  return r;
}

/// Writes `text` to `path` (a config).
inline bool writeConfig(const QString& path, const QByteArray& text) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
  return f.write(text) == text.size();
}

/// Starts `fp8lab-cli args` with FP8LAB_TEST_SAVE_PAUSE=pause when `pause` is not empty.
inline void startCli(QProcess& p, const QStringList& args, const QString& pause = {}) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  if (!pause.isEmpty()) env.insert(QStringLiteral("FP8LAB_TEST_SAVE_PAUSE"), pause);
  p.setProcessEnvironment(env);
  p.start(cliPath(), args);
}

/// Reads stderr until it contains `mark` (or 120 s pass, or the process ends); returns all read.
inline QByteArray waitForStderr(QProcess& p, const QByteArray& mark) {
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
inline bool waitForFile(QProcess& p, const QString& path) {
  QElapsedTimer t;
  t.start();
  while (!QFileInfo::exists(path) && t.elapsed() < 120000 && p.state() == QProcess::Running) p.waitForFinished(5);
  return QFileInfo::exists(path);
}

/// `count` signals to the process, `gap_us` microseconds apart (what `timeout`, Slurm or
/// `docker stop` deliver: one to the process, one to its group, milliseconds apart).
inline void signalTimes(QProcess& p, int sig, int count, int gap_us) {
  for (int i = 0; i < count; ++i) {
    ::kill(static_cast<pid_t>(p.processId()), sig);
    if (i + 1 < count) ::usleep(static_cast<useconds_t>(gap_us));
  }
}

inline size_t runsIn(const QString& path) {
  auto r = SessionReader::open(path.toStdString());
  return r.ok() ? r.value->info().runs.size() : size_t(0);
}

/// Every link of an HDF5 file with what a rewrite must keep: link kind (hard / soft / external, with
/// the soft link's target), and for objects their attributes' names and types, and for datasets
/// the element type, layout and filter count. One line per link, in name order.
inline std::string structureOf(const std::string& path) {
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

} // namespace reliability

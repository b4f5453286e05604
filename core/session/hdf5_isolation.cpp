// FP8 Lab — metadata check of HDF5 files in a separate process (see hdf5_isolation.h).
#include "session/hdf5_isolation.h"

#include "io/tensor_import.h"
#include "session/hdf5_util.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <vector>
#include <unistd.h>

extern char** environ;

namespace fp8lab {

namespace {

using C = SessionIssue::Code;

std::atomic<int> g_isolation{-1};     // -1: not decided yet (read the environment)
std::atomic<double> g_timeout_s{0.0}; // 0: default / environment
thread_local bool t_in_walk = false;  // the walk itself never spawns a checker

// A file version: (device, inode, size, mtime ns). One verdict, copy and listing per version (the
// helper runs every walk), kept in g_cache below under g_passed_mu.
using Key = std::tuple<uint64_t, uint64_t, int64_t, int64_t>;
std::mutex g_passed_mu;

bool fileKey(const std::string& path, Key* k) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  const int64_t mtime = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  *k = Key{uint64_t(st.st_dev), uint64_t(st.st_ino), int64_t(st.st_size), mtime};
  return true;
}

bool isExecutable(const std::string& p) {
  return !p.empty() && ::access(p.c_str(), X_OK) == 0;
}

std::string selfDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string s(buf, size_t(n));
  const auto slash = s.rfind('/');
  return slash == std::string::npos ? std::string() : s.substr(0, slash);
}

std::string signalText(int sig) {
  const char* d = ::strsignal(sig);
  return "signal " + std::to_string(sig) + (d ? std::string(", ") + d : std::string());
}

/// The environment for the helper: this process's, without LD_PRELOAD (a preloaded library in
/// front of the AddressSanitizer runtime makes the memory-checked helper refuse to start).
std::vector<std::string> checkerEnvironment(double limit) {
  std::vector<std::string> env;
  std::string asan;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) == 0 || std::strncmp(*e, "FP8LAB_H5CHECK_PARENT=", 22) == 0 ||
        std::strncmp(*e, "FP8LAB_H5CHECK_CPU_S=", 21) == 0)
      continue;
    if (std::strncmp(*e, "ASAN_OPTIONS=", 13) == 0) {
      asan = *e + 13;
      continue;
    }
    env.emplace_back(*e);
  }
  // The helper's own settings come last, so they win over anything inherited (a fuzzer's or a
  // test run's allocator_may_return_null=1 would let a 1.4 GB allocation pass unseen).
  env.push_back("ASAN_OPTIONS=" + asan + (asan.empty() ? "" : ":") + hdf5CheckerAsanOptions());
  // The helper ends itself when this process is gone (it is killed at the time limit by this
  // process, which a kill -9 of the application would skip): see app/h5check/main.cpp.
  env.push_back("FP8LAB_H5CHECK_PARENT=" + std::to_string(::getpid()));
  env.push_back("FP8LAB_H5CHECK_CPU_S=" + std::to_string(long(std::ceil(limit)) + 5));
  return env;
}

/// Starts `helper args...` with stdin/stdout/stderr on /dev/null and waits up to `limit` seconds
/// (then SIGKILL: *timed_out). False when it cannot be started or waited for.
bool runChecker(const std::string& helper, const std::vector<std::string>& args, double limit, int* wstatus,
                bool* timed_out) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> argStore{helper};
  argStore.insert(argStore.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argStore) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> envStore = checkerEnvironment(limit);
  std::vector<char*> envp;
  for (auto& e : envStore) envp.push_back(e.data());
  envp.push_back(nullptr);
  // Its own process group: a signal to the application's group (Ctrl-C at a terminal, `timeout`,
  // Slurm, `docker stop`) must not kill a check the application is waiting for while it stops
  // and saves; the helper still ends with the application (see above) and at the time limit.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, helper.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return false; // cannot start it (resource limits, missing)

  const auto t0 = std::chrono::steady_clock::now();
  *timed_out = false;
  auto nap = std::chrono::microseconds(200);
  for (;;) {
    const pid_t w = ::waitpid(pid, wstatus, WNOHANG);
    if (w == pid) return true;
    if (w < 0 && errno != EINTR) return false; // lost the child (SIGCHLD ignored elsewhere)
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > limit) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, wstatus, 0) < 0 && errno == EINTR) {
      }
      *timed_out = true;
      return true;
    }
    std::this_thread::sleep_for(nap);
    if (nap < std::chrono::milliseconds(20)) nap *= 2;
  }
}

/// Whether `helper --features` runs to a normal end in this process's environment (asked once
/// per helper path, only after a helper exited with an unexpected status).
bool checkerRuns(const std::string& helper) {
  static std::mutex mu;
  static std::map<std::string, bool> known;
  std::lock_guard<std::mutex> lk(mu);
  if (auto it = known.find(helper); it != known.end()) return it->second;
  int ws = 0;
  bool timed_out = false;
  const bool ok =
      runChecker(helper, {"--features"}, 30.0, &ws, &timed_out) && !timed_out && WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
  known[helper] = ok;
  return ok;
}

} // namespace

void setHdf5Isolation(bool on) {
  g_isolation.store(on ? 1 : 0);
}

bool hdf5IsolationEnabled() {
  int v = g_isolation.load();
  if (v < 0) {
    const char* e = std::getenv("FP8LAB_HDF5_ISOLATION");
    v = (e && std::strcmp(e, "0") == 0) ? 0 : 1;
    int expected = -1;
    g_isolation.compare_exchange_strong(expected, v);
    v = g_isolation.load();
  }
  return v == 1;
}

void setHdf5CheckTimeoutSeconds(double seconds) {
  g_timeout_s.store(seconds > 0 ? seconds : 0.0);
}

namespace {
/// A positive number below 1e6 from the environment variable `name`, else `fallback`.
double envPositive(const char* name, double fallback) {
  if (const char* e = std::getenv(name)) {
    char* end = nullptr;
    const double v = std::strtod(e, &end);
    if (end != e && v > 0 && v < 1e6) return v;
  }
  return fallback;
}
} // namespace

double hdf5CheckTimeoutSeconds() {
  const double t = g_timeout_s.load();
  return t > 0 ? t : envPositive("FP8LAB_HDF5_CHECK_TIMEOUT_S", 30.0);
}

double hdf5CheckMemoryLimitMiB() {
  return envPositive("FP8LAB_HDF5_CHECK_MAX_MIB", 512.0);
}

std::string hdf5CheckerAsanOptions() {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "redzone=512:max_allocation_size_mb=0:allocator_may_return_null=0:detect_leaks=0:exitcode=%d:"
                "quarantine_size_mb=64",
                kHdf5CheckExitMemoryError);
  return buf;
}

std::string hdf5CheckerPath() {
  if (const char* e = std::getenv("FP8LAB_H5CHECK"); e && *e) return isExecutable(e) ? std::string(e) : std::string();
  const std::string beside = selfDir() + "/fp8lab-h5check";
  if (isExecutable(beside)) return beside;
#ifdef FP8LAB_H5CHECK_BUILD_PATH
  if (isExecutable(FP8LAB_H5CHECK_BUILD_PATH)) return FP8LAB_H5CHECK_BUILD_PATH;
#endif
#ifdef FP8LAB_H5CHECK_INSTALL_PATH
  if (isExecutable(FP8LAB_H5CHECK_INSTALL_PATH)) return FP8LAB_H5CHECK_INSTALL_PATH;
#endif
  return {};
}

double peakMemoryMiBOfThisProcess() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  double kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmHWM:", 6) == 0) {
      kib = std::strtod(line + 6, nullptr);
      break;
    }
  std::fclose(f);
  return kib / 1024.0;
}

std::atomic<size_t> g_hdf5HelperAllocationLimit{0};

namespace {

// ---- findings files (helper → application) --------------------------------------------------
// One record per line, fields separated by tabs; backslash, tab, CR and LF escaped.

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\\')
      o += "\\\\";
    else if (c == '\t')
      o += "\\t";
    else if (c == '\n')
      o += "\\n";
    else if (c == '\r')
      o += "\\r";
    else
      o += c;
  }
  return o;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> f(1);
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\t') {
      f.emplace_back();
    } else if (c == '\\' && i + 1 < line.size()) {
      const char n = line[++i];
      f.back() += n == 't' ? '\t' : n == 'n' ? '\n' : n == 'r' ? '\r' : n;
    } else {
      f.back() += c;
    }
  }
  return f;
}

std::string issueLines(const Status& st) {
  std::string o;
  for (const auto& i : st.issues)
    o += "issue\t" + std::to_string(int(i.severity)) + "\t" + std::to_string(int(i.code)) + "\t" + esc(i.where) + "\t" +
         esc(i.detail) + "\n";
  return o;
}

/// Adds an "issue" record to `st`; false when the record is malformed.
bool parseIssue(const std::vector<std::string>& f, Status* st) {
  if (f.size() != 5 || f[0] != "issue") return false;
  char* end = nullptr;
  const long sev = std::strtol(f[1].c_str(), &end, 10);
  if (*end || sev < 0 || sev > int(Warning::Severity::Error)) return false;
  const long code = std::strtol(f[2].c_str(), &end, 10);
  if (*end || code < 0 || code > int(C::PermissionDenied)) return false;
  SessionIssue i;
  i.severity = Warning::Severity(sev);
  i.code = C(code);
  i.where = f[3];
  i.detail = f[4];
  st->issues.push_back(std::move(i));
  return true;
}

bool writeText(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok;
}

bool readLines(const std::string& path, std::vector<std::vector<std::string>>* out) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  size_t a = 0;
  while (a < text.size()) {
    size_t b = text.find('\n', a);
    if (b == std::string::npos) return false; // cut short: not a finished file
    out->push_back(fields(text.substr(a, b - a)));
    a = b + 1;
  }
  return true;
}

// ---- the private directory of checked copies ------------------------------------------------

pid_t g_copy_dir_owner = 0;
std::string g_copy_dir;

void removeCopyDir() {
  if (g_copy_dir.empty() || ::getpid() != g_copy_dir_owner) return; // a forked child leaves it alone
  std::error_code ec;
  std::filesystem::remove_all(g_copy_dir, ec);
}

/// This process's directory for checked copies, created on first use ("" when none can be made);
/// made anew when this process may no longer write the one it has (a forked child that dropped
/// privileges, a directory removed under it).
std::string copyDir() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lk(mu);
  if (!g_copy_dir.empty() && ::access(g_copy_dir.c_str(), W_OK | X_OK) == 0) return g_copy_dir;
  g_copy_dir.clear();
  [] {
    std::vector<std::string> bases;
    for (const char* v : {"FP8LAB_HDF5_COPY_DIR", "TMPDIR"})
      if (const char* e = std::getenv(v); e && *e) bases.emplace_back(e);
    bases.emplace_back("/var/tmp");
    bases.emplace_back("/tmp");
    for (const auto& base : bases) {
      // Directories left by processes that died (kill -9, a crash) are removed first.
      std::error_code ec;
      for (auto it = std::filesystem::directory_iterator(base, ec); !ec && it != std::filesystem::directory_iterator();
           it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind("fp8lab-checked-", 0) != 0) continue;
        const long pid = std::strtol(name.c_str() + 15, nullptr, 10);
        struct stat st {};
        if (pid <= 0 || ::lstat(it->path().c_str(), &st) != 0 || st.st_uid != ::geteuid()) continue;
        if (::kill(pid_t(pid), 0) != 0 && errno == ESRCH) {
          std::error_code e2;
          std::filesystem::remove_all(it->path(), e2);
        }
      }
      std::string templ = base + "/fp8lab-checked-" + std::to_string(::getpid()) + "-XXXXXX";
      std::vector<char> buf(templ.begin(), templ.end());
      buf.push_back('\0');
      if (::mkdtemp(buf.data())) {
        g_copy_dir = buf.data();
        if (g_copy_dir_owner != ::getpid()) std::atexit(removeCopyDir); // once per process
        g_copy_dir_owner = ::getpid();
        return;
      }
    }
  }();
  return g_copy_dir;
}

std::atomic<uint64_t> g_serial{0};

// ---- the cache of prepared file versions ----------------------------------------------------

struct Entry {
  uint64_t order = 0;
  Result<PreparedHdf5> prepared;
  std::string carry_path;                            ///< made on first use (hdf5CarryCopy)
  std::map<std::string, std::string> carry_failures; ///< run id → why H5Ocopy failed
  std::vector<std::string> files;                    ///< removed when the entry goes
};
std::map<Key, Entry> g_cache; // under g_passed_mu
std::set<Key> g_trusted;      // files the helper wrote for this process (under g_passed_mu)
constexpr size_t kMaxEntries = 64;

void dropFiles(const std::vector<std::string>& files) {
  for (const auto& f : files) {
    Key k;
    if (fileKey(f, &k)) g_trusted.erase(k);
    ::unlink(f.c_str());
  }
}

/// Stores `e` under `key` (g_passed_mu held): older versions of the same file and the oldest
/// entries beyond kMaxEntries go, with their copies.
void remember(const Key& key, Entry e) {
  for (auto it = g_cache.begin(); it != g_cache.end();) {
    const bool older_version =
        std::get<0>(it->first) == std::get<0>(key) && std::get<1>(it->first) == std::get<1>(key) && it->first != key;
    if (older_version) {
      dropFiles(it->second.files);
      it = g_cache.erase(it);
    } else {
      ++it;
    }
  }
  if (auto it = g_cache.find(key); it != g_cache.end()) { // another thread was first: keep its copy
    dropFiles(e.files);
    return;
  }
  while (g_cache.size() >= kMaxEntries) {
    auto oldest = std::min_element(g_cache.begin(), g_cache.end(),
                                   [](const auto& a, const auto& b) { return a.second.order < b.second.order; });
    dropFiles(oldest->second.files);
    g_cache.erase(oldest);
  }
  g_cache.emplace(key, std::move(e));
}

/// The helper's end as a verdict: ok, or one Corrupt refusal. *unusable when the helper cannot
/// run in this environment at all (then the caller opens the file as without the helper).
Status verdictOf(const std::string& path, const std::string& helper, int wstatus, bool timed_out, double limit,
                 const std::string& what, bool* unusable) {
  Status st;
  *unusable = false;
  auto refuse = [&](const std::string& why, bool crashed = false) {
    st.add(C::Corrupt, path,
           why + "; the file is damaged or crafted, so it was not opened" +
               (crashed ? " (FP8 Lab and your other work are unaffected)" : ""));
    return st;
  };
  char limit_mib[32];
  std::snprintf(limit_mib, sizeof limit_mib, "%.0f MiB", hdf5CheckMemoryLimitMiB());
  if (timed_out) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", limit);
    return refuse("the HDF5 library did not finish reading this file's " + what + " within " + secs +
                  " s in a separate checking process (a damaged file can make it loop forever; if the file is "
                  "very large or the machine busy, raise FP8LAB_HDF5_CHECK_TIMEOUT_S)");
  }
  // A damaged length field (a variable-length string claiming 1.7 GB, found by fuzz_session) makes
  // libhdf5 allocate and fill that much while reading metadata that is normally a few kB. The
  // helper measures its own peak (VmHWM of its address space: the parent's ru_maxrss would
  // include this process's memory, inherited through exec) and exits with kHdf5CheckExitMemory.
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == kHdf5CheckExitMemory)
    return refuse("reading this file's " + what + " took the HDF5 library more than " + limit_mib +
                  " of memory in a separate checking process — a damaged length field");
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == kHdf5CheckExitMemoryError)
    return refuse("the HDF5 library made a memory error (read, wrote or freed memory it does not own, crashed, "
                  "or asked for more than " +
                      std::string(limit_mib) + " at once) while reading this file's " + what +
                      " in a separate checking process, whose memory checker caught it",
                  true);
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return st;
  // Any other end — a signal, another exit status (the whole-ASan build's helper reporting a
  // crash) — blames the file, unless the helper cannot run in this environment at all (ASan's
  // runtime aborts at start under a small RLIMIT_AS, for one): that would refuse every file, so
  // it counts as "no helper", and the file is opened unprotected, as without the program.
  if (!checkerRuns(helper)) {
    *unusable = true;
    return st;
  }
  const std::string how = WIFSIGNALED(wstatus) ? "crashed (" + signalText(WTERMSIG(wstatus)) + ")"
                                               : "failed (exit status " + std::to_string(WEXITSTATUS(wstatus)) + ")";
  return refuse("the HDF5 library " + how + " while reading this file's " + what + " in a separate checking process",
                true);
}

/// How one helper run on a file ended.
struct HelperEnd {
  bool started = false;  ///< false: it could not be started or was lost (no verdict)
  bool unusable = false; ///< the helper cannot run in this environment at all (see verdictOf)
  Status verdict;        ///< ok, or the Corrupt refusal
};

/// Runs `helper args...` on the file `path` of `bytes` bytes and judges its end. Time limit: the
/// metadata limit plus 1 s per 20 MB (a checked copy reads every dataset). `what` words a refusal.
HelperEnd runHelperOn(const std::string& helper, const std::string& path, int64_t bytes,
                      const std::vector<std::string>& args, const std::string& what) {
  HelperEnd end;
  const double limit = hdf5CheckTimeoutSeconds() + double(std::max<int64_t>(bytes, 0)) / 20e6;
  int wstatus = 0;
  bool timed_out = false;
  end.started = runChecker(helper, args, limit, &wstatus, &timed_out);
  if (end.started) end.verdict = verdictOf(path, helper, wstatus, timed_out, limit, what, &end.unusable);
  return end;
}

} // namespace

Status checkHdf5FileIsolated(const std::string& path, Hdf5CheckKind) {
  return prepareHdf5File(path);
}

Result<PreparedHdf5> prepareHdf5File(const std::string& path) {
  Result<PreparedHdf5> r;
  r.value.session_path = path;
  if (t_in_walk || !hdf5IsolationEnabled()) return r;
  Key key;
  if (!fileKey(path, &key)) return r; // the open itself reports the missing file
  {
    std::lock_guard<std::mutex> lk(g_passed_mu);
    if (g_trusted.count(key)) return r;
    if (auto it = g_cache.find(key); it != g_cache.end()) {
      // The copy must still be there (a forked child sharing the directory may have evicted it).
      const std::string& copy = it->second.prepared.value.session_path;
      if (!it->second.prepared.value.isolated || copy == path || copy.empty() || ::access(copy.c_str(), R_OK) == 0)
        return it->second.prepared;
      g_cache.erase(it);
    }
  }
  const std::string helper = hdf5CheckerPath();
  if (helper.empty()) return r; // no helper installed: open unprotected
  const std::string dir = copyDir();
  if (dir.empty()) {
    r.add(C::Hdf5Error, path,
          "FP8 Lab reads HDF5 files through a checked copy and found no writable temporary directory for it "
          "(tried $FP8LAB_HDF5_COPY_DIR, $TMPDIR, /var/tmp, /tmp); set FP8LAB_HDF5_COPY_DIR to a directory with room");
    return r;
  }
  const std::string prefix = dir + "/" + std::to_string(g_serial.fetch_add(1));
  const HelperEnd end = runHelperOn(helper, path, std::get<2>(key), {"prepare", path, prefix}, "contents");
  if (!end.started) return r; // cannot start or lost it: unprotected
  Entry e;
  e.order = g_serial.fetch_add(1);
  e.files = {prefix + ".h5", prefix + ".session", prefix + ".list"};
  auto unlinkAll = [&] {
    for (const auto& f : e.files) ::unlink(f.c_str());
    e.files.clear();
  };
  if (end.unusable) {
    unlinkAll();
    return r;
  }
  if (!end.verdict.ok()) {
    r.merge(end.verdict);
    unlinkAll();
  } else {
    std::vector<std::vector<std::string>> sess, list;
    if (!readLines(prefix + ".session", &sess) || !readLines(prefix + ".list", &list)) {
      // The walk passed but the helper could not write its findings (disk full?). Never fall back to
      // reading the original in this process: it is exactly what the copy exists to avoid.
      unlinkAll();
      r.add(C::Hdf5Error, path,
            "the separate checking process could not hand back its findings (is " + dir +
                " full?); free disk space there or set FP8LAB_HDF5_COPY_DIR to a directory with room");
      return r; // not remembered: the next open tries again
    } else {
      PreparedHdf5& p = r.value;
      p.isolated = true;
      p.session_path.clear();
      for (const auto& f : sess) {
        if (parseIssue(f, &p.session)) continue;
        if (f.size() >= 2 && f[0] == "copy" && f[1] == "ok") p.session_path = prefix + ".h5";
        if (f.size() >= 3 && f[0] == "copy" && f[1] == "failed")
          r.add(C::Hdf5Error, path,
                "FP8 Lab reads HDF5 files through a checked copy, which could not be written (" + f[2] +
                    "); free disk space in " + dir + " or set FP8LAB_HDF5_COPY_DIR to a directory with room");
        if (f.size() == 4 && f[0] == "layout") p.layout[f[1]] = {f[2] == "1", f[3] == "1"};
      }
      for (const auto& f : list) {
        if (parseIssue(f, &p.listing)) continue;
        if (f.size() == 5 && f[0] == "entry") {
          TensorEntry t;
          t.name = f[1];
          t.dtype = f[2];
          t.importable = f[3] == "1";
          for (const auto& d : fields(f[4])) // dims separated by tabs inside the escaped field
            if (!d.empty()) t.shape.push_back(std::strtoll(d.c_str(), nullptr, 10));
          p.listing.value.push_back(std::move(t));
        }
      }
      ::unlink((prefix + ".session").c_str()); // read; only the copy stays
      ::unlink((prefix + ".list").c_str());
      e.files = {prefix + ".h5"};
      if (p.session_path != prefix + ".h5") {
        ::unlink((prefix + ".h5").c_str());
        e.files.clear();
      }
    }
  }
  if (r.value.isolated && !r.ok()) { // the copy could not be written: not remembered, tried again next time
    unlinkAll();
    return r;
  }
  e.prepared = r;
  std::lock_guard<std::mutex> lk(g_passed_mu);
  if (r.value.session_path == prefix + ".h5") {
    Key ck;
    if (fileKey(prefix + ".h5", &ck)) g_trusted.insert(ck);
  }
  remember(key, std::move(e));
  if (auto it = g_cache.find(key); it != g_cache.end()) return it->second.prepared;
  return r;
}

Result<std::string> hdf5CarryCopy(const std::string& path, std::map<std::string, std::string>* failures) {
  Result<std::string> r;
  r.value = path;
  failures->clear();
  auto prep = prepareHdf5File(path);
  if (!prep.ok()) {
    r.merge(prep);
    return r;
  }
  if (!prep.value.isolated) return r;
  Key key;
  if (!fileKey(path, &key)) return r;
  {
    std::lock_guard<std::mutex> lk(g_passed_mu);
    if (auto it = g_cache.find(key);
        it != g_cache.end() && !it->second.carry_path.empty() && ::access(it->second.carry_path.c_str(), R_OK) == 0) {
      r.value = it->second.carry_path;
      *failures = it->second.carry_failures;
      return r;
    }
  }
  const std::string helper = hdf5CheckerPath();
  const std::string dir = copyDir();
  if (helper.empty() || dir.empty()) {
    r.add(C::Hdf5Error, path, "no checking process or temporary directory to copy the existing runs through");
    return r;
  }
  const std::string prefix = dir + "/carry-" + std::to_string(g_serial.fetch_add(1));
  auto drop = [&] {
    ::unlink((prefix + ".h5").c_str());
    ::unlink((prefix + ".carry").c_str());
  };
  const HelperEnd end = runHelperOn(helper, path, std::get<2>(key), {"carry", path, prefix}, "runs");
  if (!end.started) {
    drop();
    r.add(C::Hdf5Error, path, "cannot start the checking process to copy the existing runs");
    return r;
  }
  std::vector<std::vector<std::string>> lines;
  if (end.unusable || !end.verdict.ok() || !readLines(prefix + ".carry", &lines)) {
    drop();
    r.merge(end.verdict);
    if (r.ok())
      r.add(C::Hdf5Error, path,
            "the separate checking process could not copy the existing runs (is " + dir + " full?)");
    return r;
  }
  ::unlink((prefix + ".carry").c_str());
  for (const auto& f : lines)
    if (f.size() == 3 && f[0] == "failed") (*failures)[f[1]] = f[2];
  std::lock_guard<std::mutex> lk(g_passed_mu);
  auto it = g_cache.find(key);
  if (it == g_cache.end()) { // evicted meanwhile: use it once, remove it at exit
    r.value = prefix + ".h5";
    return r;
  }
  if (!it->second.carry_path.empty()) ::unlink(it->second.carry_path.c_str());
  it->second.carry_path = prefix + ".h5";
  it->second.carry_failures = *failures;
  it->second.files.push_back(prefix + ".h5");
  r.value = prefix + ".h5";
  return r;
}

Result<Dataset> importHdf5DatasetIsolated(const std::string& path, const std::string& dataset_path, bool* handled) {
  Result<Dataset> r;
  *handled = false;
  auto prep = prepareHdf5File(path);
  if (!prep.ok()) {
    *handled = true;
    r.merge(prep);
    return r;
  }
  if (!prep.value.isolated) return r; // isolation off, no helper, or a file the helper wrote
  const std::string helper = hdf5CheckerPath();
  Key key;
  const std::string dir = copyDir();
  if (helper.empty() || dir.empty() || !fileKey(path, &key)) return r;
  const std::string prefix = dir + "/import-" + std::to_string(g_serial.fetch_add(1));
  const HelperEnd end =
      runHelperOn(helper, path, std::get<2>(key), {"import", path, dataset_path, prefix}, "dataset " + dataset_path);
  if (!end.started) return r;
  *handled = true;
  const std::vector<std::string> files{prefix + ".h5", prefix + ".issues"};
  struct Cleanup {
    const std::vector<std::string>& f;
    ~Cleanup() {
      std::lock_guard<std::mutex> lk(g_passed_mu);
      dropFiles(f);
    }
  } cleanup{files};
  if (end.unusable) {
    *handled = false;
    return r;
  }
  if (!end.verdict.ok()) {
    r.merge(end.verdict);
    return r;
  }
  std::vector<std::vector<std::string>> lines;
  if (!readLines(prefix + ".issues", &lines)) {
    r.add(C::Hdf5Error, path + ":" + dataset_path, "the separate checking process did not hand the dataset back");
    return r;
  }
  for (const auto& f : lines) parseIssue(f, &r);
  if (!r.ok()) return r;
  Key ck;
  {
    std::lock_guard<std::mutex> lk(g_passed_mu);
    if (fileKey(prefix + ".h5", &ck)) g_trusted.insert(ck);
  }
  auto s = loadSession(prefix + ".h5");
  const Dataset* d = s.ok() && s.value.runs.size() == 1 ? s.value.runs[0].find("tensor") : nullptr;
  if (!d) {
    r.merge(s);
    r.add(C::Hdf5Error, path + ":" + dataset_path, "the separate checking process did not hand the dataset back");
    return r;
  }
  r.value = *d;
  return r;
}

// ---- the helper's side ----------------------------------------------------------------------

int runHdf5HelperPrepare(const std::string& path, const std::string& prefix) {
  setHdf5Isolation(false);
  t_in_walk = true;
  // The metadata walk, under the allocation limit: the session open twice (the second while the
  // first is open, as the GUI does) and the importer's listing.
  g_hdf5HelperAllocationLimit.store(size_t(std::max(1.0, hdf5CheckMemoryLimitMiB()) * 1048576.0));
  auto reader = SessionReader::open(path);
  { auto again = SessionReader::open(path); }
  const auto listing = listHdf5Tensors(path);
  g_hdf5HelperAllocationLimit.store(0);
  if (peakMemoryMiBOfThisProcess() > hdf5CheckMemoryLimitMiB()) {
    std::printf("peak memory %.0f MiB above the limit %.0f MiB\n", peakMemoryMiBOfThisProcess(),
                hdf5CheckMemoryLimitMiB());
    return kHdf5CheckExitMemory;
  }
  std::string list = issueLines(listing);
  for (const auto& e : listing.value) {
    std::string dims;
    for (auto d : e.shape) dims += std::to_string(d) + "\t";
    list += "entry\t" + esc(e.name) + "\t" + esc(e.dtype) + "\t" + (e.importable ? "1" : "0") + "\t" + esc(dims) + "\n";
  }
  std::string sess = issueLines(reader);
  if (reader.ok() && reader.value) {
    const Status copy = writeCheckedSessionCopy(*reader.value, reader, path, prefix + ".h5");
    sess += copy.ok() ? "copy\tok\n" : "copy\tfailed\t" + esc(copy.message()) + "\n";
    for (const auto& run : reader.value->info().runs)
      for (const auto& d : run.datasets)
        sess += "layout\t" + esc(run.id + "/" + d.path) + "\t" + (d.chunked ? "1" : "0") + "\t" +
                (d.compressed ? "1" : "0") + "\n";
  } else {
    sess += "copy\tnone\n";
  }
  reader.value.reset();
  if (!writeText(prefix + ".list", list) || !writeText(prefix + ".session", sess)) return 0; // see prepareHdf5File
  std::printf("%s%s", sess.c_str(), list.c_str());
  return 0;
}

int runHdf5HelperCarry(const std::string& path, const std::string& prefix) {
  setHdf5Isolation(false);
  t_in_walk = true;
  h5::quietErrors();
  std::string lines;
  h5::Handle src = h5::file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  h5::Handle dst = h5::file(H5Fcreate((prefix + ".h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  if (!src.valid() || !dst.valid()) return 0; // no .carry file: the application reports it
  h5::Handle runs = h5::group(H5Gcreate2(dst, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  h5::Handle from = h5::group(H5Gopen2(src, "runs", H5P_DEFAULT));
  if (!runs.valid() || !from.valid()) return 0;
  for (const auto& id : h5::linkNames(from)) {
    if (H5Ocopy(from, id.c_str(), runs, id.c_str(), H5P_DEFAULT, H5P_DEFAULT) < 0) {
      lines += "failed\t" + esc(id) + "\t" + esc(h5::errorText()) + "\n";
      H5Eclear2(H5E_DEFAULT);
      if (H5Lexists(runs, id.c_str(), H5P_DEFAULT) > 0) H5Ldelete(runs, id.c_str(), H5P_DEFAULT);
      H5Eclear2(H5E_DEFAULT);
    }
  }
  runs.reset();
  from.reset();
  src.reset();
  if (H5Fflush(dst, H5F_SCOPE_GLOBAL) < 0 || !dst.reset()) return 0;
  writeText(prefix + ".carry", lines + "done\n");
  return 0;
}

int runHdf5HelperImport(const std::string& path, const std::string& dataset_path, const std::string& prefix) {
  setHdf5Isolation(false);
  t_in_walk = true;
  auto d = importHdf5Dataset(path, dataset_path);
  Status st = d;
  if (d.ok()) {
    Session s;
    Run run;
    run.id = "import";
    run.type = "import";
    run.config_json = "{}";
    run.datasets["tensor"] = std::move(d.value);
    s.runs.push_back(std::move(run));
    WriteOptions opt;
    opt.compress = false;
    st.merge(writeSession(prefix + ".h5", s, opt));
  }
  if (!writeText(prefix + ".issues", issueLines(st))) return 0; // the application reports the missing result
  return 0;
}

} // namespace fp8lab

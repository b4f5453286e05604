// FP8 Lab — metadata check of HDF5 files in a separate process (see hdf5_isolation.h).
#include "session/hdf5_isolation.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
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

using C = Issue::Code;

std::atomic<int> g_isolation{-1};     // -1: not decided yet (read the environment)
std::atomic<double> g_timeout_s{0.0}; // 0: default / environment
thread_local bool t_in_walk = false;  // the walk itself never spawns a checker

// A file version: (device, inode, size, mtime ns). One verdict per version, kept in g_verdicts
// below under g_mu.
using Key = std::tuple<uint64_t, uint64_t, int64_t, int64_t>;
std::mutex g_mu;
std::atomic<uint64_t> g_runs{0}; // helper runs on files

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

namespace {
/// A process-wide on/off switch that a setter may set, else decided once from the environment:
/// on when `var` equals `on_text`, or (on_text null) unless it equals "0".
bool envSwitch(std::atomic<int>& state, const char* var, const char* on_text) {
  int v = state.load();
  if (v < 0) {
    const char* e = std::getenv(var);
    v = on_text ? (e && std::strcmp(e, on_text) == 0) : !(e && std::strcmp(e, "0") == 0);
    int expected = -1;
    state.compare_exchange_strong(expected, v);
    v = state.load();
  }
  return v == 1;
}
} // namespace

bool hdf5IsolationEnabled() {
  return envSwitch(g_isolation, "FP8LAB_HDF5_ISOLATION", nullptr);
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

/// Runs `helper args...` on the file `path` and judges its end (time limit: the metadata limit; the
/// walk reads no data). `what` words a refusal.
HelperEnd runHelperOn(const std::string& helper, const std::string& path, const std::vector<std::string>& args,
                      const std::string& what) {
  HelperEnd end;
  const double limit = hdf5CheckTimeoutSeconds();
  g_runs.fetch_add(1);
  int wstatus = 0;
  bool timed_out = false;
  end.started = runChecker(helper, args, limit, &wstatus, &timed_out);
  if (end.started) end.verdict = verdictOf(path, helper, wstatus, timed_out, limit, what, &end.unusable);
  return end;
}

/// Verdicts per file version (under g_mu), at most kMaxVerdicts (the oldest half dropped beyond).
std::map<Key, Status> g_verdicts;
std::set<std::pair<uint64_t, uint64_t>> g_marked; // (device, inode) of files marked untrusted
std::atomic<int> g_untrusted{-1};                 // -1: not decided yet (read the environment)
constexpr size_t kMaxVerdicts = 1024;

} // namespace

uint64_t hdf5CheckerRuns() {
  return g_runs.load();
}

void setHdf5Untrusted(bool on) {
  g_untrusted.store(on ? 1 : 0);
}

bool hdf5Untrusted() {
  return envSwitch(g_untrusted, "FP8LAB_HDF5_UNTRUSTED", "1");
}

void markHdf5Untrusted(const std::string& path) {
  Key k;
  if (!fileKey(path, &k)) return;
  std::lock_guard<std::mutex> lk(g_mu);
  g_marked.insert({std::get<0>(k), std::get<1>(k)});
}

bool hdf5NeedsCheck(const std::string& path) {
  if (hdf5Untrusted()) return true;
  Key k;
  if (!fileKey(path, &k)) return false;
  std::lock_guard<std::mutex> lk(g_mu);
  return g_marked.count({std::get<0>(k), std::get<1>(k)}) > 0;
}

Status checkHdf5FileOutOfProcess(const std::string& path) {
  if (t_in_walk || !hdf5IsolationEnabled()) return {};
  Key key;
  if (!fileKey(path, &key)) return {}; // the open itself reports the missing file
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (auto it = g_verdicts.find(key); it != g_verdicts.end()) return it->second;
  }
  const std::string helper = hdf5CheckerPath();
  if (helper.empty()) return {}; // no helper installed: opened unchecked
  const HelperEnd end = runHelperOn(helper, path, {"check", path}, "metadata");
  if (!end.started || end.unusable) return {}; // cannot start it, or it cannot run here: unchecked
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_verdicts.size() >= kMaxVerdicts) g_verdicts.clear(); // rare; a later open checks again
  g_verdicts[key] = end.verdict;
  return end.verdict;
}

// ---- the helper's side ----------------------------------------------------------------------

int runHdf5HelperCheck(const std::string& path, const std::function<Hdf5WalkReport(const std::string&)>& walk) {
  setHdf5Isolation(false);
  t_in_walk = true;
  // The metadata walk, under the allocation limit: the session open twice (the second while the
  // first is open, as the GUI does) and the importer's listing.
  g_hdf5HelperAllocationLimit.store(size_t(std::max(1.0, hdf5CheckMemoryLimitMiB()) * 1048576.0));
  auto reader = SessionReader::open(path);
  { auto again = SessionReader::open(path); }
  const Hdf5WalkReport listing = walk ? walk(path) : Hdf5WalkReport{};
  g_hdf5HelperAllocationLimit.store(0);
  if (peakMemoryMiBOfThisProcess() > hdf5CheckMemoryLimitMiB()) {
    std::printf("peak memory %.0f MiB above the limit %.0f MiB\n", peakMemoryMiBOfThisProcess(),
                hdf5CheckMemoryLimitMiB());
    return kHdf5CheckExitMemory;
  }
  for (const auto& i : reader.issues) std::printf("session: %s\n", i.toString().c_str());
  for (const auto& i : listing.issues) std::printf("listing: %s\n", i.toString().c_str());
  std::printf("%zu run(s), %zu dataset(s) listed\n", reader.ok() && reader.value ? reader.value->info().runs.size() : 0,
              listing.listed);
  return 0;
}

} // namespace fp8lab

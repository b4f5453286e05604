// FP8 Lab — the writer's lock of a session file (see session_lock.h).
#include "session/session_lock.h"

#include "session/session.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fp8lab {

namespace fs = std::filesystem;
using C = Issue::Code;

namespace {

/// "fp8lab-cli gemm": the first two words of this process's command line, program without its
/// directory ("?" when /proc is not there).
std::string thisProgram() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out;
  size_t pos = 0;
  for (int word = 0; word < 2 && pos < all.size(); ++word) {
    const size_t end = all.find('\0', pos);
    std::string w = all.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (word == 0) w = fs::path(w).filename().string();
    if (word == 1 && (w.empty() || w[0] == '-' || w.find('/') != std::string::npos)) break;
    out += (out.empty() ? "" : " ") + w;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out.empty() ? std::string("?") : out;
}

std::string hostName() {
  char h[256] = {};
  if (::gethostname(h, sizeof h - 1) != 0) return "?";
  return h;
}

LockHolder parseHolder(const std::string& text) {
  LockHolder h;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "pid")
      h.pid = std::strtoll(v.c_str(), nullptr, 10);
    else if (k == "host")
      h.host = v;
    else if (k == "program")
      h.program = v;
    else if (k == "since")
      h.since_utc = v;
  }
  return h;
}

std::string readAll(int fd) {
  std::string s;
  char buf[512];
  if (::lseek(fd, 0, SEEK_SET) < 0) return s;
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0 && s.size() < 4096;) s.append(buf, size_t(n));
  return s;
}

bool unsupported(int e) {
  return e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS || e == EINVAL;
}

} // namespace

std::string LockHolder::describe() const {
  if (pid <= 0) return "another process";
  std::string s = "pid " + std::to_string(pid);
  if (!program.empty()) s += " (" + program + ")";
  if (!host.empty()) s += " on host " + host;
  if (!since_utc.empty()) s += " since " + since_utc;
  return s;
}

std::string SessionLock::lockPathFor(const std::string& real_path) {
  const fs::path p(real_path);
  std::error_code ec;
  fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const fs::path canon = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (!ec && !canon.empty()) dir = canon;
  return (dir / ("." + p.filename().string() + ".lock")).string();
}

LockHolder SessionLock::holderOf(const std::string& real_path) {
  const std::string lp = lockPathFor(real_path);
  const int fd = ::open(lp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  LockHolder h = parseHolder(readAll(fd));
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    ::flock(fd, LOCK_UN);
    h.held = false;
  } else {
    h.held = errno == EWOULDBLOCK;
  }
  ::close(fd);
  return h;
}

namespace {
/// Whether the lock file at `path` is still the file `fd` has open: a releasing writer unlinks the
/// file before it unlocks, so a waiter that then gets the lock of the unlinked file must try again
/// with the file now at the path.
bool stillThere(int fd, const std::string& path) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
} // namespace

std::unique_ptr<SessionLock> SessionLock::acquire(const std::string& real_path, const LockWait& how,
                                                  const ProgressFn& cancel, Status* st) {
  std::unique_ptr<SessionLock> lock(new SessionLock);
  lock->lock_path_ = lockPathFor(real_path);
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  bool notified = false;
  int fd = -1;
  for (;;) {
    if (fd < 0) {
      fd = ::open(lock->lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd < 0) {
        st->add(C::WriteFailed, real_path,
                "cannot create the lock file '" + lock->lock_path_ + "': " + std::strerror(errno) +
                    "; nothing was written");
        return nullptr;
      }
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      if (stillThere(fd, lock->lock_path_)) break;
      ::close(fd); // the file the holder unlinked: take the one at the path now
      fd = -1;
      continue;
    }
    const int e = errno;
    if (e == EINTR) continue;
    if (unsupported(e)) {
      st->add(C::Locked, real_path,
              std::string("this filesystem does not support flock (") + std::strerror(e) +
                  "): writers of this session are not serialised; do not write it from two processes at once",
              Severity::Warning);
      ::close(fd);
      ::unlink(lock->lock_path_.c_str());
      return lock; // held() == false
    }
    if (e != EWOULDBLOCK) {
      st->add(C::WriteFailed, real_path,
              "cannot lock '" + lock->lock_path_ + "': " + std::strerror(e) + "; nothing was written");
      ::close(fd);
      return nullptr;
    }
    const LockHolder holder = parseHolder(readAll(fd));
    const double waited = std::chrono::duration<double>(clock::now() - start).count();
    if (!how.wait || (how.timeout_s >= 0 && waited >= how.timeout_s)) {
      st->add(C::Locked, real_path,
              "another writer holds this session: " + holder.describe() +
                  (how.wait ? "; gave up after " + std::to_string(int(how.timeout_s)) + " s" : "") +
                  "; nothing was written (try again when it has finished" +
                  (how.wait ? ")" : ", or leave out --no-wait to wait for it)"));
      ::close(fd);
      return nullptr;
    }
    const std::string message = "waiting for " + real_path + ": locked by " + holder.describe();
    if (!notified && waited >= how.notify_after_s) {
      notified = true;
      if (how.on_wait) how.on_wait(message);
    }
    if (cancel && !cancel(0.0, message)) {
      st->add(C::WriteFailed, real_path, "cancelled while waiting for another writer; nothing was written");
      ::close(fd);
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Ours: say who holds it, for the messages of the writers that wait.
  const std::string text = "pid=" + std::to_string(::getpid()) + "\nhost=" + hostName() + "\nprogram=" + thisProgram() +
                           "\nsince=" + utcNow() + "\n";
  if (::ftruncate(fd, 0) == 0 && ::lseek(fd, 0, SEEK_SET) == 0) {
    [[maybe_unused]] const ssize_t n = ::write(fd, text.data(), text.size());
  }
  lock->fd_ = fd;
  return lock;
}

SessionLock::~SessionLock() {
  if (fd_ >= 0) {
    // Unlink while still holding the lock, then unlock: no lock file is left behind, and a waiter
    // that gets the lock of the unlinked file sees it is gone (stillThere) and takes the next one.
    ::unlink(lock_path_.c_str());
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

} // namespace fp8lab

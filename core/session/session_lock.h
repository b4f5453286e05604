// FP8 Lab — the writer's lock of a session file: one writer at a time per file, for the whole
// read-modify-write of an append, merge, delete, rename or save.
//
// Every writer of core/session (writeSession, writeSessionItems, appendRuns, deleteRuns,
// renameRun, mergeSessions, saveSessionMerging) holds the lock of the file it replaces from before
// it reads the runs already there until after the rename that commits the new file. Two writers
// of one file therefore run one after the other and neither loses the other's runs (without it,
// eight parallel `fp8lab-cli gemm --out same.h5` kept two runs). Readers never take it: a save
// replaces the file by rename, so a reader always sees one whole version.
//
// The lock is an advisory BSD lock (flock(2), LOCK_EX) on a lock file beside the session,
// "<dir>/.<name>.lock" of the session's real path (symbolic links resolved), as git's
// "index.lock" and LibreOffice's ".~lock.<name>#" sit beside what they guard. The kernel drops a
// flock when the process holding it exits in any way (kill -9, a crash), so a crashed writer
// never blocks the next one: there is no stale lock to time out — the next writer takes the lock
// file over. A writer unlinks the lock file before it unlocks, and a writer that gets the lock
// checks that the file it locked is still the one at the path (else it retries with the new one),
// so no lock file stays behind after a normal save and two writers never hold locks on two
// different files. The file holds the holder's pid, host, program and start time, for the
// messages only. It is opened O_CLOEXEC, so child processes do not inherit the lock.
#pragma once

#include "common/progress.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace fp8lab {

struct Status;

/// Who holds a session's lock, as its lock file says (empty fields when the file is unreadable).
struct LockHolder {
  int64_t pid = 0;       ///< process id (0: unknown)
  std::string host;      ///< host name of the holder
  std::string program;   ///< its command, e.g. "fp8lab-cli gemm"
  std::string since_utc; ///< when it took the lock, ISO 8601 UTC
  bool held = false;     ///< whether a process holds the lock now (holderOf)
  /// "pid 4242 (fp8lab-cli gemm) on host node7 since 2026-12-02T15:03:02Z", or "another process"
  /// when the lock file names nobody.
  std::string describe() const;
};

/// How a writer waits for a lock another process holds.
struct LockWait {
  /// false: fail at once (Issue::Code::Locked naming the holder) — `--no-wait` of the CLI.
  bool wait = true;
  /// Give up after this many seconds (Locked, naming the holder); < 0: wait until the lock is
  /// free or the writer's ProgressFn cancels.
  double timeout_s = -1;
  /// Called once, on the waiting thread, when the lock has been busy for `notify_after_s` seconds
  /// (the CLI prints it on stderr, the GUI in its save dialog): "waiting for FILE: locked by ...".
  std::function<void(const std::string& message)> on_wait;
  double notify_after_s = 1.0;
};

/// An acquired lock; released by the destructor (or when the process ends).
class SessionLock {
public:
  /// Locks the session at `real_path` (the file a save replaces, symbolic links already resolved
  /// by the caller; it need not exist yet). Waits as
  /// `how` says, polling every 20 ms; `cancel` (may be empty) is asked at each poll with the
  /// waiting message as its stage and cancels the wait when it returns false. Errors (in *st,
  /// nullptr returned): Locked (busy and not waiting, or the timeout passed; the detail names the
  /// holder), WriteFailed (the lock file cannot be created: an unwritable directory), and
  /// WriteFailed "cancelled" after a cancel. A filesystem without flock support (ENOLCK,
  /// EOPNOTSUPP) gives an unlocked SessionLock and a Warning in *st saying writers are not
  /// serialised there.
  static std::unique_ptr<SessionLock> acquire(const std::string& real_path, const LockWait& how,
                                              const ProgressFn& cancel, Status* st);
  ~SessionLock();
  SessionLock(const SessionLock&) = delete;
  SessionLock& operator=(const SessionLock&) = delete;

  /// The lock file's path ("<dir>/.<name>.lock").
  const std::string& lockPath() const { return lock_path_; }
  /// Whether the lock is really held (false only on filesystems without flock).
  bool held() const { return fd_ >= 0; }

  /// The lock file that guards `real_path`: ".<name>.lock" in its directory, the directory made
  /// absolute and canonical, so "./s.h5" and "/data/s.h5" share one lock.
  static std::string lockPathFor(const std::string& real_path);
  /// Who holds the lock of `real_path` now (held = false when nobody does; the other fields then
  /// name the last holder, if any).
  static LockHolder holderOf(const std::string& real_path);

private:
  SessionLock() = default;
  int fd_ = -1;
  std::string lock_path_;
};

} // namespace fp8lab

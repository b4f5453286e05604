// FP8 Lab — stopping a long command cleanly on SIGINT, SIGTERM and SIGHUP (POSIX signals).
#pragma once

#include <csignal>
#include <string>

namespace fp8lab {

/// While alive, SIGINT (Ctrl-C), SIGTERM (timeout, Slurm, systemd, docker stop) and SIGHUP (a
/// closed terminal) only set a flag, so a long command can stop at its next check point, save
/// what is finished and say so. A second signal — `timeout`, Slurm and `docker stop` often send
/// one to the process and one to its group, milliseconds apart — changes nothing: the save goes
/// on (stderr says so). A third ends the process at once with 128 + the first signal, after
/// writing to stderr what is lost (setInterruptLossNote); an atomic save in progress then leaves
/// only its hidden temporary, the previous file intact. Handlers are installed with SA_RESTART,
/// so a save's system calls are not interrupted by them. The old handlers are restored on
/// destruction. Guards nest: only the outermost installs and restores. Main thread only.
class InterruptGuard {
public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

private:
  struct sigaction old_[3];
};

/// Says what a forced stop (the third signal) would lose now, e.g. "2 finished runs not yet
/// saved; out.h5 keeps what it held" (UTF-8). Called from the main thread whenever that changes;
/// the signal handler prints the latest note. Notes longer than 400 bytes are cut.
void setInterruptLossNote(const std::string& note);

/// True once one of the guarded signals arrived (cleared when an outermost InterruptGuard is
/// created).
bool interrupted();
/// The signal that arrived first (SIGINT, SIGTERM, SIGHUP), 0 when none.
int interruptSignal();
/// "Ctrl-C (SIGINT)", "SIGTERM", "SIGHUP" ("a signal" when none) — for messages.
std::string interruptName();
/// The exit status of an interrupted command: 128 + the signal (130 for Ctrl-C, 143 for
/// SIGTERM), what a shell reports for a process killed by it; 130 when none arrived.
int interruptedExitCode();

} // namespace fp8lab

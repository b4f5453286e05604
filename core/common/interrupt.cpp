// Signals that only ask a long command to stop (interrupt.h).
#include "common/interrupt.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace fp8lab {

namespace {
std::atomic<int> g_signal{0};       // the first guarded signal that arrived, 0 when none
std::atomic<int> g_signal_count{0}; // how many arrived
constexpr int kGuarded[3] = {SIGINT, SIGTERM, SIGHUP};
// The loss note, double-buffered: the main thread writes the buffer the handler is not pointed at,
// then publishes it; the handler reads only a published, NUL-terminated buffer.
constexpr size_t kNoteBytes = 401;
char g_note[2][kNoteBytes] = {{0}, {0}};
std::atomic<int> g_note_index{-1};
int g_guard_depth = 0; // guards nest (run → its training experiments); the outermost installs

void writeAll(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

extern "C" void onInterrupt(int sig) {
  const int saved_errno = errno;
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);
  const int count = g_signal_count.fetch_add(1) + 1;
  if (count == 2) {
    writeAll("\nfp8lab-cli: another signal: still stopping and saving what is finished; a third one stops at "
             "once and loses it\n");
  } else if (count >= 3) {
    writeAll("\nfp8lab-cli: third signal: stopped at once; lost: ");
    const int i = g_note_index.load();
    writeAll(i >= 0 ? g_note[i] : "whatever was not saved yet");
    writeAll("\n");
    ::_exit(128 + g_signal.load());
  }
  errno = saved_errno;
}
} // namespace

InterruptGuard::InterruptGuard() {
  if (g_guard_depth++ > 0) return;
  g_signal.store(0);
  g_signal_count.store(0);
  g_note_index.store(-1);
  struct sigaction sa {};
  sa.sa_handler = onInterrupt;
  sigemptyset(&sa.sa_mask);
  for (int s : kGuarded) sigaddset(&sa.sa_mask, s); // one handler at a time
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < 3; ++i) ::sigaction(kGuarded[i], &sa, &old_[i]);
}

InterruptGuard::~InterruptGuard() {
  if (--g_guard_depth > 0) return;
  for (int i = 0; i < 3; ++i) ::sigaction(kGuarded[i], &old_[i], nullptr);
}

void setInterruptLossNote(const std::string& note) {
  const int next = g_note_index.load() == 0 ? 1 : 0;
  const size_t n = std::min(note.size(), kNoteBytes - 1);
  std::memcpy(g_note[next], note.data(), n);
  g_note[next][n] = 0;
  g_note_index.store(next);
}

bool interrupted() {
  return g_signal.load() != 0;
}

int interruptSignal() {
  return g_signal.load();
}

std::string interruptName() {
  switch (g_signal.load()) {
  case SIGINT:
    return "Ctrl-C (SIGINT)";
  case SIGTERM:
    return "SIGTERM";
  case SIGHUP:
    return "SIGHUP";
  default:
    return "a signal";
  }
}

int interruptedExitCode() {
  const int s = g_signal.load();
  return s ? 128 + s : 130;
}

} // namespace fp8lab

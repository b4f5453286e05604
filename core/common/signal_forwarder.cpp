// Signals handed on to a child process (signal_forwarder.h).
#include "common/signal_forwarder.h"

#include <atomic>
#include <csignal>

namespace fp8lab {

namespace {

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

/// The running child, for forwardSignal(); 0 when none.
std::atomic<pid_t> g_child{0};
static_assert(std::atomic<pid_t>::is_always_lock_free, "read in a signal handler");

std::atomic<int> g_pending{0}; // a signal that came before the child had a pid
static_assert(std::atomic<int>::is_always_lock_free, "written in a signal handler");

extern "C" void forwardSignal(int sig) {
  if (const pid_t child = g_child.load(); child > 0)
    ::kill(child, sig);
  else
    g_pending.store(sig);
}

} // namespace

ChildSignalForwarder::ChildSignalForwarder() {
  g_child.store(0);
  g_pending.store(0);
  struct sigaction sa {};
  sa.sa_handler = forwardSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
}

ChildSignalForwarder::~ChildSignalForwarder() {
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
  g_child.store(0);
}

void ChildSignalForwarder::setChild(pid_t child) {
  g_child.store(child);
  if (const int sig = g_pending.exchange(0); sig != 0 && child > 0) ::kill(child, sig);
}

int ChildSignalForwarder::pending() {
  return g_pending.load();
}

} // namespace fp8lab

// FP8 Lab — a process that runs a child and waits for it hands the signals that would end it
// (SIGINT, SIGTERM, SIGHUP) on to the child, and ends with the child's status instead (POSIX).
// `fp8lab-cli render` runs fp8lab-render this way.
#pragma once

#include <signal.h>
#include <sys/types.h>

namespace fp8lab {

/// While alive, SIGINT, SIGTERM and SIGHUP sent to this process are sent to the child set with
/// setChild() instead of ending this process. Install it before the child starts: a signal that
/// comes while the child starts is kept and sent to it once it has a pid. The old handlers are
/// restored on destruction. One at a time per process (the handler's state is global).
class ChildSignalForwarder {
public:
  ChildSignalForwarder();
  ~ChildSignalForwarder();
  ChildSignalForwarder(const ChildSignalForwarder&) = delete;
  ChildSignalForwarder& operator=(const ChildSignalForwarder&) = delete;

  /// The child's pid; a signal kept while it started is sent now.
  void setChild(pid_t child);
  /// The signal that came before there was a child (0: none).
  static int pending();

private:
  struct sigaction old_[3];
};

} // namespace fp8lab

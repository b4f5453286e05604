// Signals handed on to a child (core/common/signal_forwarder.h): a SIGTERM sent to this process
// ends the child (not this process), a signal that came before the child existed is sent to it
// once it has a pid, and the old handlers come back. The child is /bin/sleep, spawned with the
// three signals at their default action (POSIX_SPAWN_SETSIGDEF), so it dies of what it is sent.
#include "common/signal_forwarder.h"

#include <QtTest>

#include <csignal>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

using namespace fp8lab;

namespace {

pid_t spawnSleep() {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t def;
  sigemptyset(&def);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&def, s);
  posix_spawnattr_setsigdefault(&attr, &def);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  char arg0[] = "sleep", arg1[] = "30";
  char* argv[] = {arg0, arg1, nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/bin/sleep", nullptr, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

/// The signal that ended `pid` (waits for it); 0 when it exited.
int endingSignal(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

} // namespace

class TestSignalForwarder : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void signalGoesToTheChild() {
    ChildSignalForwarder f;
    const pid_t child = spawnSleep();
    QVERIFY(child > 0);
    f.setChild(child);
    ::raise(SIGTERM); // this process lives on
    QCOMPARE(endingSignal(child), SIGTERM);
  }

  void signalBeforeTheChildIsKept() {
    ChildSignalForwarder f;
    ::raise(SIGHUP);
    QCOMPARE(ChildSignalForwarder::pending(), SIGHUP);
    const pid_t child = spawnSleep();
    QVERIFY(child > 0);
    f.setChild(child);
    QCOMPARE(ChildSignalForwarder::pending(), 0);
    QCOMPARE(endingSignal(child), SIGHUP);
  }

  void oldHandlersComeBack() {
    struct sigaction before {
    }, during{}, after{};
    ::sigaction(SIGINT, nullptr, &before);
    {
      ChildSignalForwarder f;
      ::sigaction(SIGINT, nullptr, &during);
      QVERIFY(during.sa_handler != before.sa_handler);
    }
    ::sigaction(SIGINT, nullptr, &after);
    QCOMPARE(reinterpret_cast<void*>(after.sa_handler), reinterpret_cast<void*>(before.sa_handler));
  }
};

QTEST_GUILESS_MAIN(TestSignalForwarder)
#include "test_signal_forwarder.moc"

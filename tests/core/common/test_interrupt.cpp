// Tests for core/common/interrupt: a guarded signal only sets the flag, the exit code is 128 +
// the signal as a POSIX shell reports it (SIGINT 2 → 130, SIGTERM 15 → 143), and the guard
// restores the previous handler.
#include <QtTest>

#include <csignal>

#include "common/interrupt.h"

using namespace fp8lab;

namespace {
volatile std::sig_atomic_t g_old_handler_ran = 0;
extern "C" void oldHandler(int) {
  g_old_handler_ran = 1;
}
} // namespace

class TestInterrupt : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void signalSetsFlag() {
    std::signal(SIGTERM, oldHandler);
    {
      InterruptGuard guard;
      QVERIFY(!interrupted());
      QCOMPARE(interruptName(), std::string("a signal"));
      std::raise(SIGTERM);
      QVERIFY(interrupted());
      QCOMPARE(interruptSignal(), SIGTERM);
      QCOMPARE(interruptedExitCode(), 143);
      QCOMPARE(interruptName(), std::string("SIGTERM"));
      QCOMPARE(g_old_handler_ran, std::sig_atomic_t(0));
      {
        InterruptGuard inner; // nested: changes nothing, clears nothing
        QVERIFY(interrupted());
      }
      std::raise(SIGINT); // a second signal: the first one stays the one reported
      QCOMPARE(interruptSignal(), SIGTERM);
    }
    std::raise(SIGTERM); // the guard restored oldHandler
    QCOMPARE(g_old_handler_ran, std::sig_atomic_t(1));
    std::signal(SIGTERM, SIG_DFL);
    InterruptGuard fresh; // an outermost guard clears the flag
    QVERIFY(!interrupted());
    std::raise(SIGINT);
    QCOMPARE(interruptedExitCode(), 130);
    QCOMPARE(interruptName(), std::string("Ctrl-C (SIGINT)"));
  }
};

QTEST_APPLESS_MAIN(TestInterrupt)
#include "test_interrupt.moc"

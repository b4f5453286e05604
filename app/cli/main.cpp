// fp8lab-cli — headless FP8 Lab. Thin dispatcher over the registered commands (command.h). Links
// Qt Core only: `render` and `export --png` run fp8lab-render for the views (cmd_render.cpp).
#include "cli_util.h"
#include "command.h"

#include "common/cpu_level.h"
#include "session/hdf5_isolation.h"

#include <QCoreApplication>

#include <exception>

using namespace fp8lab::cli;

static void printUsage() {
  QString t = QStringLiteral("Usage: fp8lab-cli <command> [options]\n\n"
                             "FP8 Lab " FP8LAB_VERSION
                             " — bit-exact FP8 / MX number formats, scaling strategies and FP8 GEMM.\n\n"
                             "Commands:\n");
  for (const auto& c : commands()) t += QStringLiteral("  %1 %2\n").arg(c.name, -10).arg(c.summary);
  t += QStringLiteral("\nEvery command takes --help and --json (machine-readable output).\n"
                      "Options: --help, --version\n"
                      "  --untrusted  (before or after the command) HDF5 files from elsewhere: check each session\n"
                      "               in a separate process before opening it (foreign-dataset imports always are)\n"
                      "  --no-wait    (before or after the command) when another process is writing the same session\n"
                      "               file, fail at once naming it instead of waiting for it to finish\n"
                      "  --lock-timeout S  wait at most S seconds for another writer of the same session file\n");
  out(t);
}

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  QCoreApplication::setApplicationName(QStringLiteral("fp8lab-cli"));
  QCoreApplication::setApplicationVersion(QStringLiteral(FP8LAB_VERSION));
  QCoreApplication::setOrganizationName(QStringLiteral("FP8 Lab"));
  QStringList args = QCoreApplication::arguments();
  // --untrusted anywhere before a "--": every session this command opens is checked out of process
  // first (core/session/hdf5_isolation.h).
  // --no-wait / --lock-timeout S likewise: how every session write of this command waits for
  // another writer of the same file (core/session/session_lock.h).
  bool lock_wait = true;
  double lock_timeout = -1;
  for (qsizetype i = 1; i < args.size() && args[i] != QStringLiteral("--");)
    if (args[i] == QStringLiteral("--untrusted")) {
      fp8lab::setHdf5Untrusted(true);
      args.removeAt(i);
    } else if (args[i] == QStringLiteral("--no-wait")) {
      lock_wait = false;
      args.removeAt(i);
    } else if (args[i] == QStringLiteral("--lock-timeout") || args[i].startsWith(QStringLiteral("--lock-timeout="))) {
      QString v;
      if (args[i].contains(QLatin1Char('='))) {
        v = args[i].section(QLatin1Char('='), 1);
        args.removeAt(i);
      } else {
        args.removeAt(i);
        if (i < args.size()) v = args.takeAt(i);
      }
      bool ok = false;
      lock_timeout = v.toDouble(&ok);
      if (!ok || !(lock_timeout >= 0) || lock_timeout > 1e6)
        return fail(QStringLiteral("--lock-timeout: expected seconds 0..1000000, got '%1'").arg(v));
    } else {
      ++i;
    }
  setSessionLockPolicy(lock_wait, lock_timeout);
  // FP8LAB_CPU (core/common/cpu_level.h): a value that is not a level, or a level above this CPU's,
  // is refused before any work rather than deep inside the first GEMM.
  if (const std::string why = fp8lab::cpuLevelEnvironmentError(); !why.empty())
    return fail(QString::fromStdString(why));
  if (args.size() < 2 || args[1] == QStringLiteral("--help") || args[1] == QStringLiteral("-h") ||
      args[1] == QStringLiteral("help")) {
    printUsage();
    return args.size() < 2 ? 2 : 0;
  }
  if (args[1] == QStringLiteral("--version") || args[1] == QStringLiteral("-v")) {
    out(QStringLiteral("fp8lab-cli " FP8LAB_VERSION "\n"));
    return 0;
  }
  for (const auto& c : commands()) {
    if (c.name == args[1]) {
      QStringList rest = args.mid(2);
      rest.prepend(args[0] + QLatin1Char(' ') + c.name);
      try {
        return c.run(rest);
      } catch (const std::exception& e) {
        return fail(QString::fromUtf8(e.what()));
      }
    }
  }
  fail(QStringLiteral("unknown command '%1' (see fp8lab-cli --help)").arg(args[1]));
  return 2;
}

// fp8lab-cli — headless FP8 Lab. Thin dispatcher over the registered commands (command.h).
#include "cli_util.h"
#include "command.h"

#include "session/hdf5_isolation.h"

#include <QCoreApplication>

#include <cstdio>
#include <cstring>
#include <memory>

#ifdef FP8LAB_HAVE_UI
#include <QApplication>
#endif

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
                      "               in a separate process before opening it (foreign-dataset imports always are)\n");
  out(t);
}

int main(int argc, char** argv) {
#ifdef FP8LAB_HAVE_UI
  // `render` and `export --png` draw the desktop app's views offscreen (cmd_render.cpp): they
  // need a QApplication; every other command keeps the lighter QCoreApplication.
  int cmd = 1; // the command word: the first argument that is not the global --untrusted
  while (cmd < argc && std::strcmp(argv[cmd], "--untrusted") == 0) ++cmd;
  bool widgets = cmd < argc && std::strcmp(argv[cmd], "render") == 0;
  for (int i = cmd + 1; cmd < argc && std::strcmp(argv[cmd], "export") == 0 && i < argc; ++i)
    widgets = widgets || std::strcmp(argv[i], "--png") == 0 || std::strncmp(argv[i], "--png=", 6) == 0;
  if (widgets && !qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  std::unique_ptr<QCoreApplication> app_ptr(widgets ? new QApplication(argc, argv) : new QCoreApplication(argc, argv));
#else
  auto app_ptr = std::make_unique<QCoreApplication>(argc, argv);
#endif
  QCoreApplication::setApplicationName(QStringLiteral("fp8lab-cli"));
  QCoreApplication::setApplicationVersion(QStringLiteral(FP8LAB_VERSION));
  QCoreApplication::setOrganizationName(QStringLiteral("FP8 Lab"));
  QStringList args = QCoreApplication::arguments();
  // --untrusted anywhere before a "--": every session this command opens is checked out of process
  // first (core/session/hdf5_isolation.h).
  for (qsizetype i = 1; i < args.size() && args[i] != QStringLiteral("--");)
    if (args[i] == QStringLiteral("--untrusted")) {
      fp8lab::setHdf5Untrusted(true);
      args.removeAt(i);
    } else {
      ++i;
    }
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

// fp8lab-cli render FILE.h5 [--run ID] --png DIR — runs fp8lab-render (app/render/main.cpp), the
// program that draws the desktop app's analysis views offscreen, with the same arguments. It is
// a program of its own so that fp8lab-cli links Qt Core only (no Widgets, Gui or QCustomPlot);
// `fp8lab-cli export FILE.h5 --run ID --png DIR` comes here too (cmd_session.cpp).
#include "cmd_render.h"

#include "cli_util.h"
#include "command.h"

#include "common/signal_forwarder.h"
#include "session/hdf5_isolation.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>

#include <csignal>
#include <cstdio>

#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace fp8lab::cli {

const QString kRenderer = QStringLiteral("fp8lab-render");

QString rendererPath() {
  const QFileInfo beside(QDir(QCoreApplication::applicationDirPath()).filePath(kRenderer));
  if (beside.isFile() && beside.isExecutable()) return beside.absoluteFilePath();
  return QStandardPaths::findExecutable(kRenderer);
}

int runRenderer(const QStringList& args, const QString& command) {
  const QString program = rendererPath();
  if (program.isEmpty())
    return fail(QStringLiteral("%1 needs %2, the program that draws the desktop app's views offscreen, and there is "
                               "none beside fp8lab-cli (%3) or on PATH. It is built and installed with the desktop "
                               "app: configure with -DFP8LAB_BUILD_GUI=ON (the default; needs Qt Widgets, Svg, "
                               "PrintSupport and QCustomPlot), or install the fp8lab package")
                    .arg(command, kRenderer, QDir::toNativeSeparators(QCoreApplication::applicationDirPath())));
  QStringList childArgs = args;
  if (fp8lab::hdf5Untrusted()) childArgs.prepend(QStringLiteral("--untrusted"));
  QProcess proc;
  proc.setProcessChannelMode(QProcess::ForwardedChannels);
  proc.setInputChannelMode(QProcess::ForwardedInputChannel);
#ifdef __linux__
  // The child is sent SIGTERM when this process dies, whatever kills it (SIGKILL included). If
  // this process died before prctl took effect, the child has been adopted already: it stops.
  const pid_t parent = ::getpid();
  proc.setChildProcessModifier([parent] {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);
  });
#endif
  std::fflush(nullptr);
  {
    ChildSignalForwarder forward;
    proc.start(program, childArgs);
    if (!proc.waitForStarted(-1)) {
      if (const int sig = ChildSignalForwarder::pending(); sig != 0) return 128 + sig;
      return fail(QStringLiteral("could not run %1: %2").arg(QDir::toNativeSeparators(program), proc.errorString()));
    }
    forward.setChild(static_cast<pid_t>(proc.processId()));
    proc.waitForFinished(-1);
  }
  // On Unix, QProcess's exitCode() after a CrashExit is the signal that ended the child.
  if (proc.exitStatus() == QProcess::CrashExit) return 128 + proc.exitCode();
  return proc.exitCode();
}

namespace {
const CommandRegistrar regRender(
    {QStringLiteral("render"),
     QStringLiteral("Render a session's analysis views offscreen to PNG / PDF / SVG (+ CSV); runs fp8lab-render"),
     [](const QStringList& args) { return runRenderer(args.mid(1), QStringLiteral("render")); }, 72});
} // namespace

} // namespace fp8lab::cli

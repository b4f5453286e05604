// fp8lab-cli render / export --png: the desktop app's views drawn offscreen by fp8lab-render.
#pragma once

#include <QString>
#include <QStringList>

namespace fp8lab::cli {

/// Where fp8lab-render is: beside this executable (QCoreApplication::applicationDirPath()), else
/// the first one on PATH; empty when there is none.
QString rendererPath();

/// Runs fp8lab-render with `args` (what follows the command word, passed unchanged; "--untrusted"
/// is put first when sessions are untrusted in this process, fp8lab::hdf5Untrusted()). Its stdout,
/// stderr and stdin are this process's own. SIGINT, SIGTERM and SIGHUP sent to fp8lab-cli while it
/// runs are passed on to it, and it is sent SIGTERM if fp8lab-cli dies. Returns its exit code, or
/// 128 + the signal that ended it. Without an fp8lab-render (a build without the desktop app),
/// prints an error naming what is missing and how to get it, naming the caller as `command`
/// ("render", "export --png"), and returns 2.
int runRenderer(const QStringList& args, const QString& command);

} // namespace fp8lab::cli

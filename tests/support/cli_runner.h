// FP8 Lab tests — running the built fp8lab-cli as a user would, for the tests that check its
// output and exit status.
#pragma once

#include <QByteArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace fp8lab::testsupport {

/// What one fp8lab-cli run gave: its exit code (-1 when it crashed or timed out), stdout, stderr.
struct CliResult {
  int code = -1;
  QByteArray out, err;
  QJsonObject json() const { return QJsonDocument::fromJson(out).object(); }
};

/// Runs the build tree's fp8lab-cli with `args` and waits up to `timeout_ms`; a run that takes
/// longer is killed and reported with code -1 and err "timed out".
inline CliResult runCli(const QStringList& args, int timeout_ms = 300000) {
  QProcess p;
  p.start(QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli"), args);
  CliResult r;
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out";
    return r;
  }
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = p.readAllStandardOutput();
  r.err = p.readAllStandardError();
  return r;
}

} // namespace fp8lab::testsupport

// fp8lab-cli gemm — codes operands and the kernel check from flags (kernel_check_cli.h).
#include "kernel_check_cli.h"

#include "cli_util.h"

#include "experiment/kernel_check/kernel_check_flags.h"

namespace fp8lab::cli {

void addKernelCheckOptions(QCommandLineParser& p) {
  for (const CheckFlag& f : kernelCheckFlags()) {
    const QString name = QString::fromStdString(f.name), help = QString::fromStdString(f.help);
    p.addOption(f.value.empty() ? QCommandLineOption(name, help)
                                : QCommandLineOption(name, help, QString::fromStdString(f.value)));
  }
}

bool codesOperand(const QCommandLineParser& p, char operand) {
  return p.isSet(QString(QLatin1Char(operand)) + QStringLiteral("-codes"));
}

QString applyKernelCheckFlags(const QCommandLineParser& p, GemmExperimentConfig* cfg) {
  std::map<std::string, GivenFlag> given;
  const auto take = [&](const std::string& name) {
    if (!p.isSet(QString::fromStdString(name))) return;
    const QString v = p.value(QString::fromStdString(name));
    given[name] = {v.toStdString(), parseNumber(v), numberProblem(v).toStdString()};
  };
  for (const CheckFlag& f : kernelCheckFlags()) take(f.name);
  if (codesOperand(p, 'a') || codesOperand(p, 'b'))
    for (const char* dim : {"m", "k", "n"}) take(dim);
  return QString::fromStdString(fp8lab::applyKernelCheckFlags(given, cfg));
}

} // namespace fp8lab::cli

// The command-line options of the parameter schema (core/experiment/param_schema.h): the flag,
// the help and the default of each option come from its schema entry, so `gemm`, `quantize` and
// `train` name the same ranges and choices as the config parser and the desktop app.
#pragma once

#include "experiment/param_schema.h"

#include <QCommandLineOption>
#include <QCommandLineParser>

namespace fp8lab::cli {

/// The option of a schema entry: its flag, its help (paramHelp: the default, the range or the
/// choices) and, but for a boolean, a value with the flag's default ("auto" for --output-scale,
/// whose number has no default).
inline QCommandLineOption schemaOption(const ParamSpec& s) {
  const QString help = QString::fromStdString(paramHelp(s, true));
  if (s.type == ParamType::Boolean) return {QString::fromStdString(s.flag), help};
  QString value = QString::fromStdString(s.flag).toUpper().replace(QLatin1Char('-'), QLatin1Char('_'));
  return {QString::fromStdString(s.flag), help, value,
          s.flag == "output-scale" ? QStringLiteral("auto") : QString::fromStdString(s.flagDefault())};
}

/// "" when the value of `s`'s flag in `p` lies in the entry's range (or the entry is not a
/// number), else the refusal naming the flag and the range (checkParamText).
inline QString schemaFlagProblem(const QCommandLineParser& p, const ParamSpec& s) {
  const QString v = p.value(QString::fromStdString(s.flag));
  if (v.isEmpty()) return {};
  return QString::fromStdString(checkParamText(s, v.toStdString()));
}

} // namespace fp8lab::cli

// Session dataset paths for the views, from core's session layout (core/session/session_layout.h):
// the views name a dataset only through these, never by a literal path.
#pragma once

#include "session/run_index.h"
#include "session/session_layout.h"

#include <QString>
#include <QStringList>

#include <string>
#include <vector>

namespace fp8lab::ui {

/// A layout path as the QString RunAccess takes ("history/fc1/input/amax").
inline QString sessionPath(const std::string& path) {
  return QString::fromStdString(path);
}

/// A view's name (an operand, a tensor) as the std::string the layout functions take.
inline std::string layoutName(const QString& name) {
  return name.toStdString();
}

/// A run's dataset paths (RunAccess::datasets()) as the run index takes them (run_index.h).
inline std::vector<std::string> layoutPaths(const QStringList& datasets) {
  std::vector<std::string> out;
  out.reserve(size_t(datasets.size()));
  for (const QString& d : datasets) out.push_back(d.toStdString());
  return out;
}

/// Names from core (operands, recipes, blocks) as the views list them.
inline QStringList viewNames(const std::vector<std::string>& names) {
  QStringList out;
  for (const std::string& n : names) out << QString::fromStdString(n);
  return out;
}

} // namespace fp8lab::ui

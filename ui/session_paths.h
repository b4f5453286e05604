// Session dataset paths for the views, from core's session layout (core/session/session_layout.h):
// the views name a dataset only through these, never by a literal path.
#pragma once

#include "session/session_layout.h"

#include <QString>

namespace fp8lab::ui {

/// A layout path as the QString RunAccess takes ("history/fc1/input/amax").
inline QString sessionPath(const std::string& path) {
  return QString::fromStdString(path);
}

/// A view's name (an operand, a tensor) as the std::string the layout functions take.
inline std::string layoutName(const QString& name) {
  return name.toStdString();
}

} // namespace fp8lab::ui

// FP8 Lab tests — the main window as the UI tests open it: no saved settings restored, no
// bundled default session, no GPU probe (so a test sees only the session it builds).
#pragma once

#include "main_window.h"

namespace fp8lab::testsupport {

inline fp8lab::ui::MainWindow::Options testWindowOptions() {
  fp8lab::ui::MainWindow::Options o;
  o.restore_settings = false;
  o.open_default_session = false;
  o.probe_backend = false;
  return o;
}

} // namespace fp8lab::testsupport

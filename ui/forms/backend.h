// Which backend runs GEMMs: the CUDA GPU when this build has gpu/ and a device answers, else the
// CPU reference. The probe can take a while (driver start-up), so the app calls it off the GUI
// thread and shows the answer in the status bar when it arrives.
#pragma once

#include <QString>

namespace fp8lab::ui {

struct BackendInfo {
  bool gpu = false; ///< a CUDA device is usable
  QString name;     ///< "CPU" or the GPU's name
  QString detail;   ///< CPU model / compute capability, or why there is no GPU
};

/// Probes (may take up to a few seconds on a GPU machine). Thread-safe.
BackendInfo probeBackend();

} // namespace fp8lab::ui

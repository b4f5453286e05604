// The bridge from the experiment panel's configuration to core/experiment. Kept in one file so the
// rest of the GUI does not depend on the runner's API.
#pragma once

#include "main_window.h"

namespace fp8lab::ui {

/// The runner this build has: core/experiment when present, else an empty function (the panel
/// then says why Run is off).
ExperimentRunner builtinExperimentRunner();
/// Why there is no runner (empty when there is one).
QString experimentRunnerMissingReason();

} // namespace fp8lab::ui

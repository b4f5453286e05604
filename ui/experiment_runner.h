// The bridge from the experiment panel's configuration (ExperimentPanel::config(), JSON) to
// core/experiment's GEMM error experiment. Kept in one file so the rest of the GUI does not
// depend on the runner's API.
#pragma once

#include "main_window.h"

namespace fp8lab::ui {

/// The runner this build has: core/experiment (runGemmExperimentRun) on the backend the config
/// names; empty when the build has no core/experiment (then the panel says why Run is off).
ExperimentRunner builtinExperimentRunner();
/// Why there is no runner (empty when there is one).
QString experimentRunnerMissingReason();

/// The core/scaling preset name for the panel's strategy + preset + options, or "" with *why
/// when that combination has no preset (e.g. Flax has no per-tensor current scaling).
QString scalingPresetFor(const QJsonObject& config, QString* why);

} // namespace fp8lab::ui

#include "experiment_runner.h"

#include "job.h"

namespace fp8lab::ui {

ExperimentRunner builtinExperimentRunner() { return {}; }

QString experimentRunnerMissingReason() {
  return QObject::tr("Run needs the experiment runner (core/experiment), which this build does not have yet.");
}

} // namespace fp8lab::ui

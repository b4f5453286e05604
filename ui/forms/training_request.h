// A training experiment as the GUI hands it to core's runner (experiment_runner.h makes and runs
// it): the spec core parsed once, when the request was made, and the config text it came from.
#pragma once

#include <QByteArray>

#include <memory>

namespace fp8lab {
struct TrainingExperimentSpec;
}

namespace fp8lab::ui {

/// The parsed spec (core's TrainingExperimentSpec, experiment/training/training_config.h) and its
/// config text — for the Training tab, the one-run config that reproduces the run (what the run
/// stores). Empty (spec null) when core refused the config.
struct TrainingRequest {
  QByteArray config_json;
  std::shared_ptr<const TrainingExperimentSpec> spec;
  bool ok() const { return spec != nullptr; }
};

} // namespace fp8lab::ui

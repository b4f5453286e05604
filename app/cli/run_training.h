// fp8lab-cli — the training path of `fp8lab-cli run` and `train`: a training experiment config
// (core/experiment/training_config.h) run by core's runner (training_experiment.h) with a
// progress bar and per-epoch lines on the terminal, each finished run appended to the session
// file as soon as it ends. On SIGINT / SIGTERM / SIGHUP the run in progress stops after its
// current step, is saved with status=cancelled and the command exits 128+signal.
#pragma once

#include "backend_choice.h"
#include "experiment/config_reader.h"
#include "io/json_document.h"

#include <QJsonArray>
#include <QString>

namespace fp8lab::cli {

struct TrainingCliOptions {
  bool json = false;              ///< print a JSON summary on stdout
  bool quiet = false;             ///< no per-epoch lines on stderr
  QString data_dir;               ///< --data-dir, overrides the config
  QString only_run;               ///< run just this id
  QString run_id;                 ///< --id: id of a single-run config's run
  int threads = 0;                ///< > 0: GEMM threads for every run (results do not depend on it)
  bool compress = true;           ///< shuffle + gzip large datasets
  bool print_session_line = true; ///< end with "session written: FILE" (run prints its own)
  /// --backend: where the FP8 GEMMs run (backend_choice.h); not owned; null = the CPU reference.
  FallbackGemmBackend* backend = nullptr;
  /// `run` of a multi-experiment config: the JSON summary goes here (one document for all), not to stdout.
  QJsonArray* json_out = nullptr;
};

/// Runs the training experiment `config` (at `at` in `doc`, which may be null) and writes its
/// runs into `out` (created, or appended to with renamed ids on conflict). Returns the exit code:
/// 0 done, 2 bad config / missing data set / unwritable output, 128+signal when interrupted (the
/// session so far is saved and valid).
int runTrainingExperiment(const Json& config, const ConfigPath& at, const JsonDocument* doc, const QString& out,
                          const TrainingCliOptions& opt);

} // namespace fp8lab::cli

// fp8lab-cli run / sweep / rerun / train — experiment configs (JSON) into session runs. The
// experiment types, their checks, the batched saving of a multi-experiment config and the
// results are core/experiment's (experiment_registry.h, experiment_batch.h, run_results.h,
// sweep_file.h, training_report.h); this side reads the files, prints and keeps the signal state.
#pragma once

#include "backend_choice.h"
#include "experiment/config_reader.h"
#include "io/json_document.h"
#include "session/session.h"

#include <QJsonArray>
#include <QString>

#include <string>
#include <vector>

namespace fp8lab::cli {

/// A config file (or the embedded default when `path` is empty) read and parsed: at most 64 MiB,
/// a regular file (readInputFile), then parseConfigText (valid JSON, an object at the top, no
/// key given twice in one object).
struct LoadedConfig {
  JsonDocument doc;
  std::string text;
  QString origin;
};
/// Loads `path`; false after printing the error (naming the file, line and column).
bool loadConfig(const QString& path, LoadedConfig* c);

/// Appends runs to `out` (Rename on conflict), printing the ids assigned; false after printing
/// the error.
bool appendRunsToFile(const QString& out, const std::vector<Run>& runs, bool compress, std::vector<std::string>* ids);

/// Options of a training experiment run from `run` or `train`.
struct TrainingCliOptions {
  bool json = false;                      ///< a JSON summary on stdout
  bool quiet = false;                     ///< no per-epoch lines on stderr
  QString data_dir, only_run;             ///< --data-dir (overrides the config); --run: just this id
  QString run_id;                         ///< --id: id of a single-run config's run
  int threads = 0;                        ///< > 0: GEMM threads of every run (results do not depend on it)
  bool compress = true;                   ///< shuffle + gzip large datasets
  bool print_session_line = true;         ///< end with "session written: FILE" (run prints its own)
  FallbackGemmBackend* backend = nullptr; ///< --backend (not owned); null = the CPU reference
  QJsonArray* json_out = nullptr;         ///< `run` of several experiments: the JSON summary goes here
};

/// Runs the training experiment `config` (at `at` in `doc`, which may be null) with core's runner
/// (training_experiment.h), a progress bar and per-epoch lines, appending each finished run to
/// `out` as it ends. On SIGINT / SIGTERM / SIGHUP the run in progress stops after its step and is
/// saved as cancelled. Returns the exit code: 0 done, 2 bad config / missing data set /
/// unwritable output, 128+signal when interrupted (the session so far is saved and valid).
int runTrainingCli(const Json& config, const ConfigPath& at, const JsonDocument* doc, const QString& out,
                   const TrainingCliOptions& opt);

} // namespace fp8lab::cli

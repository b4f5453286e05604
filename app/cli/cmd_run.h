// fp8lab-cli run / sweep / rerun — experiment configs (JSON) to session runs.
//
// A config file holds one experiment object, or {"experiments": [obj, obj, ...]}. Every
// experiment object has a "type" (core/experiment/experiment_registry.h, which also checks the
// objects and reproduces stored runs for `rerun`); its front end in experimentTypes() ("gemm"
// here, "training" in cmd_run_training.cpp) runs it and appends its runs to the output session.
#pragma once

#include "backend_choice.h"
#include "common/progress.h"
#include "experiment/config_reader.h"
#include "experiment/gemm_run.h"
#include "io/json_document.h"
#include "session/session.h"

#include <QJsonArray>
#include <QString>

#include <functional>
#include <optional>
#include <vector>

namespace fp8lab::cli {

/// Options of `run` shared by every experiment type.
struct RunCliOptions {
  QString out;          ///< session file (created, or appended to; conflicting ids get -2, -3...)
  QString run_id;       ///< --id: id of the (single) run; "" = from the config / automatic
  bool json = false;    ///< JSON summary on stdout
  bool quiet = false;   ///< no progress or per-run lines on stderr
  bool compress = true; ///< gzip large datasets
  int threads = 0;      ///< 0 = all cores (results do not depend on it)
  QString data_dir;     ///< --data-dir (training data)
  /// --backend: where the GEMMs run (backend_choice.h); made once per command, not owned.
  /// Null = the CPU reference backend.
  FallbackGemmBackend* backend = nullptr;
  /// A finished run waiting to be saved, and what to print once it is (with the id it was
  /// stored under: a taken id gets -2, -3...).
  struct PendingRun {
    Run run;
    std::function<void(const Run& run, const QString& stored)> report;
  };
  /// Multi-experiment configs: GEMM experiments put their finished runs here instead of saving
  /// each at once (each save rewrites the whole file, so N saves cost O(N²)); `run` saves the
  /// batch with one rewrite — before a training experiment, past 256 MiB, at the end, and on an
  /// error or interrupt. Null = save at once.
  std::vector<PendingRun>* batch = nullptr;
  /// The parsed config the experiment objects come from (line and column in messages).
  const JsonDocument* doc = nullptr;
  /// --json of a multi-experiment config: each experiment's JSON result is appended here, and
  /// `run` prints the array as one document at the end (null: each prints its own object).
  QJsonArray* json_out = nullptr;
};

/// How `run` runs one experiment type (the types and their checks: core/experiment/experiment_registry.h).
struct ExperimentType {
  QString type;
  /// Runs one experiment object (at `at` in opt.doc). `text` is the JSON text of the object as
  /// given. Returns the process exit code (0 = ok).
  std::function<int(const Json& config, const std::string& text, const ConfigPath& at, const RunCliOptions& opt)> run;
};

/// The registered front ends of the experiment types (one per core ExperimentKind).
std::vector<ExperimentType>& experimentTypes();
struct ExperimentTypeRegistrar {
  explicit ExperimentTypeRegistrar(ExperimentType t);
};

/// A config file (or the embedded default when `path` is empty) read and parsed: at most 64 MiB,
/// a regular file, valid JSON with an object at the top and no key given twice in one object.
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

} // namespace fp8lab::cli

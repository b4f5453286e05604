// fp8lab-cli run / sweep / rerun — experiment configs (JSON) to session runs.
//
// A config file holds one experiment object, or {"experiments": [obj, obj, ...]}. Every
// experiment object has a "type" that picks its handler in experimentTypes() ("gemm" here; the
// training path registers "training"). A handler parses its object into a plain C++ config
// (Qt JSON stays in the CLI layer), runs it, and appends its runs to the output session.
// `rerun` looks up the stored run's type and asks the same handler to reproduce it.
#pragma once

#include "backend_choice.h"
#include "common/progress.h"
#include "experiment/gemm_experiment.h"
#include "session/session.h"

#include <QJsonObject>
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
  ChosenGemmBackend* backend = nullptr;
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
};

/// One experiment type.
struct ExperimentType {
  QString type;
  /// Runs one experiment object. `text` is the JSON text to store as each run's config (the file
  /// as given for single-experiment files). Returns the process exit code (0 = ok).
  std::function<int(const QJsonObject& config, const QString& text, const RunCliOptions& opt)> run;
  /// Reproduces a stored run from its config (CPU backend); nullopt with *error on failure.
  std::function<std::optional<Run>(const Run& stored, int threads, const ProgressFn& progress, QString* error)>
      reproduce;
  /// Checks one experiment object without running it (the schema: keys, types, ranges); false
  /// with *error set. `run` checks every experiment of a config with it before running the first,
  /// so a mistake in the last one does not cost the work of the earlier ones. May be empty.
  std::function<bool(const QJsonObject& config, QString* error)> validate;
};

/// The registered experiment types ("gemm", and whatever registers itself).
std::vector<ExperimentType>& experimentTypes();
struct ExperimentTypeRegistrar {
  explicit ExperimentTypeRegistrar(ExperimentType t);
};

/// Parses a GEMM experiment object (keys in docs/session-format.md, "GEMM experiment config");
/// unknown keys are errors naming the key. Returns false with *error set.
bool parseGemmConfig(const QJsonObject& o, GemmExperimentConfig* cfg, QString* error);

/// A key given twice in one JSON object, where the second one starts (1-based line and column).
struct DuplicateKey {
  QString key;
  int line = 1, column = 1;
};
/// The first key that appears twice in one JSON object of `json` (valid JSON: call it after Qt
/// parsed the text), with its line and column; nullopt when every object's keys are distinct. Qt's
/// parser (like most) keeps the last value silently, so `{"m": 64, "m": 4096}` would run m = 4096
/// with nothing said — RFC 8259 §4: names "SHOULD be unique", and parsers disagree on which one
/// wins. Keys are compared after JSON unescaping ("m" and "\u006d" are the same key).
std::optional<DuplicateKey> firstDuplicateKey(const QByteArray& json);

/// Appends runs to `out` (Rename on conflict), printing the ids assigned; false after printing
/// the error.
bool appendRunsToFile(const QString& out, const std::vector<Run>& runs, bool compress, std::vector<std::string>* ids);

} // namespace fp8lab::cli

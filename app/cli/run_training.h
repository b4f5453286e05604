// fp8lab-cli — the training path of `fp8lab-cli run` (and `rerun` of training runs): reads a
// training experiment config (JSON), loads Fashion-MNIST, trains every run with progress,
// writes each finished run into the session file, and on SIGINT stops after the current step,
// saves the session so far (the interrupted run marked status=cancelled) and exits 130.
//
// Config schema: docs/training.md. A config is either one run object ("type": "training") or an
// experiment: {"type": "training", "defaults": {...}, "runs": [{...}, ...],
// "gemm_on_trained_weights": {...}} — resources/experiments/default.json is the example.
#pragma once

#include "backend_choice.h"
#include "session/session.h"
#include "training/trainer.h"
#include "training/weight_gemm.h"

#include <QJsonObject>
#include <QString>

#include <optional>
#include <vector>

namespace fp8lab::cli {

/// One training run parsed from JSON.
struct TrainingRunSpec {
  QString id; ///< run id in the session
  TrainingConfig config;
  QString data_dir;        ///< "" = automatic (FP8LAB_FASHION_MNIST_DIR, then the package)
  int64_t train_limit = 0; ///< > 0: first N training images only
  int64_t test_limit = 0;
};

/// The GEMM error experiment on trained weights, parsed.
struct WeightGemmSpec {
  QString from_run;        ///< id of a training run of the same experiment
  std::vector<int> layers; ///< 0-based
  WeightGemmConfig gemm;   ///< layer field set per layer
};

struct TrainingExperimentSpec {
  QString name;
  std::vector<TrainingRunSpec> runs;
  std::optional<WeightGemmSpec> weight_gemm;
};

/// True when the object is a training config ("type": "training", or it has "runs" whose
/// entries are training runs).
bool isTrainingConfig(const QJsonObject& config);

/// Parses and validates a whole training config; on failure returns nullopt and sets *error
/// to a message naming the key (e.g. "runs[1].scaling.strategy: unknown strategy 'dalayed'").
std::optional<TrainingExperimentSpec> parseTrainingExperiment(const QJsonObject& config, QString* error);

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
  ChosenGemmBackend* backend = nullptr;
};

/// Runs a training experiment and writes its runs into `out` (created, or appended to with
/// renamed ids on conflict; each run is written as soon as it finishes). Returns the exit code:
/// 0 done, 2 bad config / missing data set / unwritable output, 130 interrupted by SIGINT (the
/// session so far is saved and valid).
int runTrainingExperiment(const QJsonObject& config, const QString& out, const TrainingCliOptions& opt);

/// Re-runs one stored training run from its config JSON (for `fp8lab-cli rerun`): returns the
/// Run as it would be stored, or nullopt with *error set. CPU backend, same seed → same numbers;
/// a run stored as cancelled is stopped after the same number of steps.
std::optional<Run> reproduceTrainingRun(const Run& stored, int threads, const ProgressFn& progress, QString* error);

/// Re-runs a stored "gemm-trained-weights" run from its stored inputs/A and inputs/B.
std::optional<Run> reproduceWeightGemmRun(const Run& stored, int threads, const ProgressFn& progress, QString* error);

} // namespace fp8lab::cli

// FP8 Lab — the training experiment config as JSON: one parser with its validation, used by
// `fp8lab-cli run / rerun`, the desktop app and the tests. Schema: docs/training.md.
//
// A config is one run object ("type": "training", ...) or an experiment:
//   {"type": "training", "defaults": {...}, "runs": [{...}, ...], "gemm_on_trained_weights": {...}}
// where each run is `defaults` with the run's own members laid over it (nested objects merged
// one level). resources/experiments/default.json is the example. Each run is stored with the
// one-run config that reproduces it (trainingConfigJson, core/training/training_session.h).
#pragma once

#include "experiment/config_reader.h"
#include "json/json_document.h"
#include "experiment/training/model_mlp.h"
#include "experiment/training/model_transformer.h"
#include "experiment/training/training_models.h"
#include "experiment/training/weight_gemm.h"

#include <any>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp8lab {

/// One training run of an experiment: its id, its model kind and the kind's config. The kind's
/// file reads, writes and uses the config (training_models.h); everything else reaches the
/// settings every run has through run(), and the model through the kind's entries.
struct TrainingRunSpec {
  std::string id; ///< run id in the session
  /// The model kind, the registry's key (training_models.h): "mlp" or "transformer", set by the
  /// parser.
  std::string model_kind = "mlp";
  /// The model kind's config, of the kind's own type: MlpRunConfig (model_mlp.h, mlpRun) for
  /// "mlp", LmTrainingConfig (model_transformer.h, lmRun) for "transformer". A spec made without
  /// the parser is an MLP run with every default.
  std::any model = MlpRunConfig{};
  /// The model's config as type C; throws std::logic_error naming the run when it is another
  /// kind's.
  template <class C> C& modelConfig() {
    if (C* c = std::any_cast<C>(&model)) return *c;
    throw std::logic_error("training run '" + id + "' of model kind '" + model_kind +
                           "' has no config of the type asked for");
  }
  template <class C> const C& modelConfig() const { return const_cast<TrainingRunSpec*>(this)->modelConfig<C>(); }

  /// The one-run config that reproduces this run (stored as the run's config).
  std::string configJson() const;

  /// The entry of model_kind (throws std::logic_error for a kind the registry lacks).
  const TrainingModelKind& kind() const;
  /// The shared run settings of the model's config.
  TrainingRunConfig& run();
  const TrainingRunConfig& run() const;
  /// The model's sites; its optimizer steps.
  SiteTable sites() const;
  int64_t steps() const;
};

/// The GEMM error experiment on the weights a training run learned.
struct WeightGemmSpec {
  std::string from_run;    ///< id of a training run of the same experiment
  std::vector<int> layers; ///< 0-based
  WeightGemmConfig gemm;   ///< layer field set per layer
  /// The config of the run for layer `layer` (stored as its config; reproduced from its inputs).
  std::string configJson(int layer) const;
  /// "gemm-<from_run>-fc<layer+1>".
  std::string runId(int layer) const;
};

struct TrainingExperimentSpec {
  std::string name;
  std::vector<TrainingRunSpec> runs;
  std::optional<WeightGemmSpec> weight_gemm;
  /// The config's "seeds" key (a list of seeds, or a string "1-3,5" as parseSeedList reads it):
  /// every run is repeated with each seed (expandTrainingSeeds, training_sweep.h). Empty: each run
  /// once, with its own "seed".
  std::vector<uint64_t> seeds;
};

/// True when `config` is a training config ("type": "training", or "runs" whose first entry is).
bool isTrainingConfig(const Json& config);

/// Parses and validates a whole training config; nullopt with *error naming the key path (and,
/// with `doc`, its line and column), e.g. "runs[1].scaling.strategy: unknown strategy 'dalayed'
/// (...)". `at` is where `config` sits in `doc` (inside {"experiments": [...]}).
std::optional<TrainingExperimentSpec> parseTrainingExperiment(const Json& config, std::string* error,
                                                              const JsonDocument* doc = nullptr,
                                                              const ConfigPath& at = {});

/// Parses the config a "gemm-trained-weights" run stores (WeightGemmSpec::configJson).
std::optional<WeightGemmConfig> parseWeightGemmRunConfig(const Json& config, std::string* error);

} // namespace fp8lab

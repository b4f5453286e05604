// FP8 Lab — the one-run config a training run stores (the "run" object `fp8lab-cli rerun` reads
// back to reproduce it), written with nlohmann::json (ordered): the shared run settings
// (TrainingRunConfig) each by one function, the model's own keys by the model's writer. The text
// keeps one top-level key per line and every nested value on that line, numbers as their shortest
// round-trip text (a float32 setting such as "learning_rate": 0.001 reads back bit for bit).
// Schema: docs/training.md.
#pragma once

#include "training/lm_trainer.h"
#include "training/trainer.h"

#include <string>

namespace fp8lab {

/// The JSON object of a block recipe as the config reads it (docs/training.md), every option
/// written out: {"name": "te_nvfp4", "fp8_format": "E4M3", "weight_2d": true, "hadamard": true,
/// "stochastic_rounding": true, "overrides": {"wgrad.input": {"recipe": "high_precision"}}}.
std::string recipeJson(const TrainingRecipeConfig& r);

/// The JSON of a precision policy as the config reads it: [{"sites": ..., "gemms": [...],
/// "precision": ..., "from_step": ..., "until_step": ...}, ...].
std::string policyJson(const PrecisionPolicy& p);

/// The JSON text of one MLP training run's configuration. `data_dir` is written when non-empty.
std::string trainingConfigJson(const TrainingConfig& c, const std::string& run_id, int64_t train_limit = 0,
                               int64_t test_limit = 0, const std::string& data_dir = {});

/// The one-run config of a language-model run.
std::string lmConfigJson(const LmTrainingConfig& c, const std::string& run_id);

} // namespace fp8lab

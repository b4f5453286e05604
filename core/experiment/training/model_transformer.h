// FP8 Lab — the language model's part of a training run spec (model kind "transformer";
// model_transformer.cpp is the kind's entry, training_models.h).
#pragma once

#include "training/lm_trainer.h"

namespace fp8lab {

struct TrainingRunSpec;

/// The language model's config of a run of kind "transformer"; throws std::logic_error for a run
/// of another kind.
LmTrainingConfig& lmRun(TrainingRunSpec& spec);
const LmTrainingConfig& lmRun(const TrainingRunSpec& spec);

} // namespace fp8lab

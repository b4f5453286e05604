// FP8 Lab — the Fashion-MNIST MLP's part of a training run spec (model kind "mlp", the run without
// "model"; model_mlp.cpp is the kind's entry, training_models.h).
#pragma once

#include "training/trainer.h"

#include <cstdint>
#include <string>

namespace fp8lab {

struct TrainingRunSpec;

/// The MLP's config of a run and where its images come from.
struct MlpRunConfig {
  TrainingConfig config;
  std::string data_dir;    ///< "" = automatic (FP8LAB_FASHION_MNIST_DIR, then the package)
  int64_t train_limit = 0; ///< > 0: first N training images only
  int64_t test_limit = 0;  ///< > 0: first N test images only
};

/// The MLP part of a run of kind "mlp"; throws std::logic_error for a run of another kind.
MlpRunConfig& mlpRun(TrainingRunSpec& spec);
const MlpRunConfig& mlpRun(const TrainingRunSpec& spec);

} // namespace fp8lab

// FP8 Lab — the training parameter schema: every number a training config holds for the Fashion-
// MNIST MLP and the transformer language model, once, with its config key, model, range, default,
// unit and help. The config parser (training_config.cpp) reads its ranges and defaults from it, and
// the desktop app's Training tab takes its spin boxes' ranges and defaults from it; the GEMM
// parameters of a training run (accumulation, promotion interval, scaling history and margin) are
// the GEMM schema's entries (param_schema.h). tests/ui/test_param_schema_panel.cpp checks the
// Training tab against it; docs/training.md lists it.
#pragma once

#include "experiment/param_schema.h"

#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// Which model reads a training parameter.
enum class TrainingModel {
  Any, ///< both (seed, threads)
  Mlp, ///< the Fashion-MNIST MLP (a config without "model")
  Lm,  ///< the transformer language model ("model": {"kind": "transformer", ...})
};
const char* toString(TrainingModel m); ///< "any", "mlp", "lm"

/// One entry: `spec.key` is the dotted path in the training config ("model.d_model",
/// "optimizer.learning_rate", "steps"); spec.type, unit, min / max, def and help as in the GEMM
/// schema. An empty def is computed from other keys, as `help` says (ffn_hidden = 4·d_model).
struct TrainingParam {
  ParamSpec spec;
  TrainingModel model = TrainingModel::Any;
};

/// Every training parameter, the MLP's first, then the language model's.
const std::vector<TrainingParam>& trainingSchema();

/// The entry with this dotted key for `model` (an Any entry serves both); throws std::logic_error
/// naming the key when the schema has none (a caller asking for a key the table lacks is a
/// programming error).
const ParamSpec& trainingParam(std::string_view key, TrainingModel model);

/// The schema as Markdown rows (docs/training.md, "Parameters"): key, model, type, range, default,
/// help.
std::string trainingSchemaMarkdown();

} // namespace fp8lab

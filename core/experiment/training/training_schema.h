// FP8 Lab — the training parameter schema: every number and choice a training config holds, once,
// with its config key, model kind, range, default, unit and help. The settings every run has are
// listed here; each model kind brings its own rows (TrainingModelKind::schema, in its file:
// model_mlp.cpp, model_transformer.cpp). The config parser (training_config.cpp and the kinds'
// parsers) reads its ranges and defaults from it, and
// the desktop app's Training tab takes its spin boxes' ranges and defaults from it; the GEMM
// parameters of a training run (accumulation, promotion interval, scaling history and margin) are
// the GEMM schema's entries (param_schema.h). tests/ui/test_param_schema_panel.cpp checks the
// Training tab against it; docs/training.md lists it.
#pragma once

#include "experiment/param_schema.h"

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// One entry: `spec.key` is the dotted path in the training config ("model.d_model",
/// "optimizer.learning_rate", "steps"); spec.type, unit, min / max, def and help as in the GEMM
/// schema. An empty def is computed from other keys, as `help` says (ffn_hidden = 4·d_model).
/// `model` is the model kind that reads it ("mlp", "transformer": TrainingModelKind::kind,
/// training_models.h), or "" for the settings every run has.
struct TrainingParam {
  ParamSpec spec;
  std::string model;
};

/// An entry of the schema (for its table of shared settings and each kind's `schema`).
TrainingParam trainingEntry(std::string model, std::string key, ParamType type, std::string unit, double min,
                            double max, std::string def, std::string help);
/// A choice entry: `choices` are the canonical names (choiceNames of an enum's values).
TrainingParam trainingChoiceEntry(std::string model, std::string key, std::vector<std::string> choices, std::string def,
                                  std::string help);
/// The canonical names of an enum's values, from its toString.
template <class E> std::vector<std::string> choiceNames(std::initializer_list<E> values) {
  std::vector<std::string> v;
  for (E e : values) v.push_back(toString(e));
  return v;
}
/// The help text of "block_gemm", an entry of every kind with its own default.
extern const char* const kTrainingBlockGemmHelp;

/// Every training parameter: the settings every run has, then each model kind's
/// (TrainingModelKind::schema), in the registry's order.
const std::vector<TrainingParam>& trainingSchema();

/// The entry with this dotted key for model kind `model` (an entry of every kind serves each);
/// throws std::logic_error naming the key when the schema has none (a caller asking for a key the
/// table lacks is a programming error).
const ParamSpec& trainingParam(std::string_view key, std::string_view model);

/// The schema as Markdown rows (docs/training.md, "Parameters"): key, model, type, range, default,
/// help.
std::string trainingSchemaMarkdown();

} // namespace fp8lab

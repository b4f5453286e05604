// FP8 Lab — the training parameter schema (training_schema.h).
#include "experiment/training/training_schema.h"

#include "experiment/config_reader.h"
#include "experiment/training/training_models.h"
#include "training/nonfinite.h"
#include "training/operand_scaler.h"
#include "training/run_config.h"

#include <stdexcept>

namespace fp8lab {

const char* const kTrainingBlockGemmHelp =
    "How block recipes multiply: float32 GEMMs of the dequantized operands (fake quantization), or core/gemm "
    "with the block-scaled operands under the accumulation model.";

namespace {

std::vector<TrainingParam> build() {
  using T = ParamType;
  using K = TrainingScalingKind;
  std::vector<TrainingParam> all = {
      trainingChoiceEntry(
          "", "precision", choiceNames({TrainingPrecision::FP8, TrainingPrecision::FP32}), "fp8",
          "fp8: the run's GEMMs in low precision under the scaling strategy or block recipe; fp32: the float32 "
          "baseline (operand amaxes still recorded)."),
      trainingChoiceEntry(
          "", "scaling.strategy", choiceNames({K::DelayedFlax, K::DelayedTE, K::CurrentTE, K::CurrentTorchao}),
          "delayed-flax",
          "Per-tensor scaling of every operand: delayed (Flax fp8_ops, TE DelayedScaling: the scale from an amax "
          "history) or current (TE Float8CurrentScaling, torchao tensorwise: the scale from this step's amax)."),
      trainingChoiceEntry(
          "", "on_nonfinite", choiceNames({NonFinitePolicy::Stop, NonFinitePolicy::Continue, NonFinitePolicy::Off}),
          "stop",
          "A step that produces a NaN or ±Inf: record it and stop after the step, record it and continue, or do "
          "not check (docs/training.md \"The first non-finite value\")."),
      trainingEntry(
          "", "seed", T::Seed, "", 0, 0, "1",
          "Initial weights and the data order (the per-epoch shuffles; the LM's windows); same-seed runs of two "
          "recipes are pairs (docs/decide.md)."),
      trainingEntry("", "threads", T::Integer, "threads", 0, 1024, "0",
                    "Threads of the run's GEMMs and kernels (0: every core); results do not depend on it."),
  };
  for (const TrainingModelKind* k : trainingModelKinds())
    for (TrainingParam& p : k->schema()) all.push_back(std::move(p));
  return all;
}

} // namespace

TrainingParam trainingEntry(std::string model, std::string key, ParamType type, std::string unit, double min,
                            double max, std::string def, std::string help) {
  TrainingParam p;
  p.model = std::move(model);
  p.spec.key = std::move(key);
  p.spec.scope = ParamScope::None;
  p.spec.type = type;
  p.spec.unit = std::move(unit);
  p.spec.min = min;
  p.spec.max = max;
  p.spec.def = std::move(def);
  p.spec.commands = "train run";
  p.spec.help = std::move(help);
  return p;
}

TrainingParam trainingChoiceEntry(std::string model, std::string key, std::vector<std::string> choices, std::string def,
                                  std::string help) {
  TrainingParam p =
      trainingEntry(std::move(model), std::move(key), ParamType::Choice, "", 0, 0, std::move(def), std::move(help));
  p.spec.choices = std::move(choices);
  return p;
}

const std::vector<TrainingParam>& trainingSchema() {
  static const std::vector<TrainingParam> all = build();
  return all;
}

const ParamSpec& trainingParam(std::string_view key, std::string_view model) {
  for (const TrainingParam& p : trainingSchema())
    if (p.spec.key == key && (p.model == model || p.model.empty())) return p.spec;
  throw std::logic_error("training schema has no parameter '" + std::string(key) + "' for model kind '" +
                         std::string(model) + "'");
}

std::string trainingSchemaMarkdown() {
  std::string s = "| key | model | type | range | default | help |\n|---|---|---|---|---|---|\n";
  for (const TrainingParam& p : trainingSchema()) {
    const ParamSpec& x = p.spec;
    const char* type = x.type == ParamType::Integer  ? "integer"
                       : x.type == ParamType::Number ? "number"
                       : x.type == ParamType::Choice ? "choice"
                                                     : "seed";
    std::string range = x.type == ParamType::Number && x.min == 0 && x.max == 0 ? std::string() : x.rangeText();
    if (x.type == ParamType::Choice) range = joinNames(x.choices);
    if (!range.empty() && !x.unit.empty()) range += " " + x.unit;
    if (x.type == ParamType::Seed) range = "unsigned 64-bit: an integer up to 2^53, or a decimal string";
    s += "| `" + x.key + "` | " + (p.model.empty() ? std::string("any") : p.model) + " | " + type + " | " +
         (range.empty() ? "any finite" : range) + " | " + (x.def.empty() ? "see help" : x.def) + " | " + x.help +
         " |\n";
  }
  return s;
}

} // namespace fp8lab

// FP8 Lab — the registry of training model kinds (see training_models.h).
#include "experiment/training/training_models.h"

namespace fp8lab {

const std::vector<const TrainingModelKind*>& trainingModelKinds() {
  static const std::vector<const TrainingModelKind*> kinds = {
      &mlpModelKind(),
      &transformerModelKind(),
  };
  return kinds;
}

const TrainingModelKind* findTrainingModelKind(std::string_view kind) {
  for (const TrainingModelKind* k : trainingModelKinds())
    if (k->kind == kind) return k;
  return nullptr;
}

std::string trainingModelKindNames() {
  std::string s;
  for (const TrainingModelKind* k : trainingModelKinds()) s += (s.empty() ? "" : ", ") + k->kind;
  return s;
}

} // namespace fp8lab

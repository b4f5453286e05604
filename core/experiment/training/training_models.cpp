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

bool trainAloneStopping(const std::function<void(const ProgressFn&)>& train, const std::function<int64_t()>& steps_done,
                        int64_t stop_after, const ProgressFn& progress, std::string* error) {
  try {
    train([&](double f, const std::string& stage) {
      if (stop_after >= 0 && steps_done() >= stop_after) return false;
      return progress ? progress(f, stage) : true;
    });
  } catch (const Cancelled&) {
    if (stop_after < 0 || steps_done() != stop_after) {
      *error = "cancelled";
      return false;
    }
  }
  return true;
}

std::string trainingModelKindNames() {
  std::string s;
  for (const TrainingModelKind* k : trainingModelKinds()) s += (s.empty() ? "" : ", ") + k->kind;
  return s;
}

} // namespace fp8lab

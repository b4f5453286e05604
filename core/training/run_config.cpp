// FP8 Lab — what every training run shares (see run_config.h).
#include "training/run_config.h"

#include "scaling/delayed_scaling.h"

namespace fp8lab {

const char* toString(TrainingPrecision p) {
  return p == TrainingPrecision::FP8 ? "fp8" : "fp32";
}

std::string TrainingRunConfig::scalingName() const {
  if (!fp8()) return "none";
  if (recipe.recipe != TrainingRecipe::PerTensor) return toString(recipe.recipe);
  return toString(scaling.kind);
}

std::string TrainingRunConfig::validateRun(const SiteTable& sites) const {
  if (fp8()) {
    if (!forward_format || !backward_format) return "FP8 formats missing";
    if (forward_format->bits() > 8 || backward_format->bits() > 8) return "FP8 runs need 8-bit (or narrower) formats";
    if (recipe.recipe == TrainingRecipe::PerTensor && isDelayed(scaling.kind) &&
        !(scaling.history_len >= 1 && scaling.history_len <= kMaxAmaxHistoryLen))
      return "amax history length must be in " + amaxHistoryRangeText();
    if (const std::string why = recipe.validate(); !why.empty()) return "recipe: " + why;
  } else if (recipe.recipe != TrainingRecipe::PerTensor) {
    return "a recipe needs precision fp8";
  }
  if (const std::string why = diagnostics.validate(); !why.empty()) return why;
  if (const std::string why = policy.validate(sites); !why.empty()) return "policy: " + why;
  return {};
}

} // namespace fp8lab

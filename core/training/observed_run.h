// FP8 Lab — a training run observed from outside: the operands of a model trained by another
// framework (PyTorch, through the Python module's `fp8lab.torch.attach`) recorded as a session run
// of type "training", with the layout of the project's own training runs (training_session.h), so
// every view, `decide`, `report` and `inspect` read it.
//
// Observation only, as Transformer Engine's debug API (nvidia-dlframework-inspect) does: the model
// trains in its own precision; at each recorded step every Linear site's three operands
//   input        x  [N, in]   (the activation entering y = x·W, leading dimensions flattened)
//   kernel       W  [in, out] (PyTorch stores weight [out, in]: observe() takes it transposed)
//   output_grad  g  [N, out]  (∂loss/∂y)
// are quantized under the chosen recipe exactly as the training engine quantizes them (per-tensor
// scaling with its state: operand_scaler.h; a block recipe's fprop.input, fprop.weight and
// wgrad.grad_output roles: recipe.h), and their amax, scale, clipping counts, per-block statistics,
// what-if recipes and first non-finite value recorded (linear_site.h's SiteRecorder, diagnostics.h).
// Scale convention of everything recorded: dequant_scale (x ≈ decode(code) · scale), quant_scale =
// the quantize op's multiplier.
#pragma once

#include "session/session.h"
#include "training/diagnostics.h"
#include "training/nonfinite.h"
#include "training/operand_scaler.h"
#include "training/recipe.h"
#include "training/sites.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// The recipe an observed run quantizes with: FP32 (amax only), per-tensor scaling, or a block
/// recipe.
struct ObservedRecipe {
  std::string name = "fp32";                        ///< canonical: "fp32", a per-tensor strategy or a block recipe name
  bool fp8 = false;                                 ///< false: FP32 (amaxes only)
  TrainingScalingConfig scaling;                    ///< per-tensor recipes (recipe.recipe == PerTensor)
  TrainingRecipeConfig recipe;                      ///< block recipes
  const Format* forward_format = &Format::E4M3FN(); ///< per-tensor: inputs and weights
  const Format* backward_format = &Format::E5M2();  ///< per-tensor: output gradients (TE HYBRID)
  bool block() const { return fp8 && recipe.recipe != TrainingRecipe::PerTensor; }
};

/// Parses a recipe name, the training config's or the scaling presets' (case-insensitive, '-' = '_'):
///   "fp32" / "none"                                  amaxes only
///   "current-te" = "te_current" = "per-tensor"       TE Float8CurrentScaling
///   "te_current_pow2"                                the same with power-of-two scales
///   "current-torchao" = "torchao_tensorwise"         torchao tensorwise
///   "delayed-te" = "te_delayed"                      TE DelayedScaling (history_len, margin)
///   "delayed-flax" = "flax_delayed"                  Flax fp8_ops
///   "te_float8_block" = "float8-block"               TE Float8BlockScaling
///   "te_mxfp8" = "mxfp8"                             TE MXFP8BlockScaling
///   "te_nvfp4" = "nvfp4"                             TE NVFP4BlockScaling
///   "deepseek_v3"                                    DeepSeek-V3 1×128 / 128×128
/// Per-tensor recipes use E4M3FN forward and E5M2 for gradients (TE Format.HYBRID); block recipes
/// their TE defaults (recipe.h). `history_len` (≥ 1) and `margin` apply to the delayed recipes.
/// nullopt and *why (naming the known names) for anything else.
std::optional<ObservedRecipe> parseObservedRecipe(const std::string& name, int history_len, int margin,
                                                  std::string* why);

/// One Linear site of the observed model: its module path ("transformer.h.0.attn.c_attn") and its
/// weight's shape as this project writes it, W [in, out].
struct ObservedSite {
  std::string path;
  int64_t in = 0, out = 0;
};

/// What an observed run records and how.
struct ObservedRunConfig {
  ObservedRecipe recipe;
  TrainingDiagnostics diagnostics; ///< per-block statistics, maps, what-if recipes (indices of recorded steps)
  NonFinitePolicy on_nonfinite = NonFinitePolicy::Continue; ///< Off: no check; otherwise the first one is kept
  uint64_t seed = 1;                                        ///< stochastic rounding seeds (NVFP4 gradients)
  int threads = 0;                                          ///< 0: all cores
  int64_t every = 1;                                        ///< the loop records every `every`-th step (informational)
  std::string label;                                        ///< the run's label ("" = its id)
  std::string model;                                        ///< what was observed ("GPT", the module's class)
  int64_t parameters = 0;                                   ///< the model's parameter count
};

/// Records an observed run step by step. Not thread-safe: one caller at a time (the module holds it
/// under a lock).
class ObservedRun {
public:
  /// Throws std::invalid_argument for an empty site list, a duplicate or empty path, a
  /// non-positive shape, or a diagnostics config that validate() refuses.
  ObservedRun(ObservedRunConfig cfg, std::vector<ObservedSite> sites);
  ~ObservedRun();
  ObservedRun(const ObservedRun&) = delete;
  ObservedRun& operator=(const ObservedRun&) = delete;

  const SiteTable& sites() const;
  const ObservedRunConfig& config() const;

  /// Starts a recorded step; `train_step` is the training loop's own step number (stored beside
  /// the histories). Throws std::logic_error when a step is already open.
  void beginStep(int64_t train_step);
  /// Whether a step is open.
  bool inStep() const;
  /// One operand of site `site` at the open step: x [rows, cols] row-major float32, in the
  /// orientation of the top of this file; for the kernel `transposed` says x is PyTorch's weight
  /// [out, in] (it is transposed here). The first call per operand and step counts; later ones
  /// are ignored (the caller counts repeated module calls with noteRepeatedCall()). Throws
  /// std::invalid_argument for a site out of range or a shape that disagrees with the site.
  void observe(size_t site, SiteOperand operand, const float* x, int64_t rows, int64_t cols, bool transposed = false);
  /// Ends the open step: every operand not observed in it (a module the forward skipped, a
  /// backward that did not run) is recorded with amax NaN, so all histories keep one entry per
  /// recorded step.
  void endStep();
  /// The training loss of loop step `train_step` (any step, recorded or not).
  void logLoss(int64_t train_step, double loss);
  /// A validation loss measured after loop step `train_step`.
  void logValidation(int64_t train_step, double loss);

  /// A module called again within the open step (weight sharing, gradient accumulation's
  /// micro-batches): its first call is the one recorded; this one is counted (repeatedCalls()).
  void noteRepeatedCall();

  int64_t recordedSteps() const;
  int64_t repeatedCalls() const;
  const NonFiniteRecord& firstNonFinite() const;

  /// Builds the session Run (type "training", attribute model = "pytorch"; docs/session-format.md
  /// "Observed runs"). `config_json` is stored as the run's config; `cancelled` sets the status.
  /// Closes the diagnostics: call once, last.
  Run finish(const std::string& run_id, const std::string& config_json, bool cancelled = false);

private:
  struct Impl;
  std::unique_ptr<Impl> d;
};

} // namespace fp8lab

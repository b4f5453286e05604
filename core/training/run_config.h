// FP8 Lab — what every training run shares, whatever its model: the run config every model's
// config embeds (TrainingRunConfig: the MLP's TrainingConfig, trainer.h, and the language model's
// LmTrainingConfig, lm_trainer.h, derive from it), and the per-step record of each GEMM operand
// the sites keep (OperandHistory). The model-specific parts (layer sizes, the transformer's shape,
// data, optimizer schedule) live in the model's config.
//
// Scale convention of everything recorded: dequant_scale (x ≈ decode(code) · scale) and
// quant_scale = the quantize op's multiplier (x_q = cast(x · quant_scale)).
#pragma once

#include "formats/format.h"
#include "gemm/gemm.h"
#include "training/diagnostics.h"
#include "training/nonfinite.h"
#include "training/operand_scaler.h"
#include "training/recipe.h"
#include "training/sites.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fp8lab {

enum class TrainingPrecision { FP8, FP32 };
const char* toString(TrainingPrecision p); ///< "fp8" / "fp32"

/// The settings every training run has, whatever the model (the shared part of each model's
/// config; the parameter schema, experiment/training/training_schema.h, lists their ranges and
/// defaults). FP8 here means low precision: 8-bit per-tensor formats or a block recipe (MXFP8,
/// NVFP4, ...).
struct TrainingRunConfig {
  std::string label; ///< run label, e.g. "fp8-delayed-flax" ("" = the precision's name)
  TrainingPrecision precision = TrainingPrecision::FP8;
  TrainingScalingConfig scaling;                    ///< FP8 per-tensor recipe only
  TrainingRecipeConfig recipe;                      ///< FP8 only; PerTensor = `scaling` with the formats below
  const Format* forward_format = &Format::E4M3FN(); ///< input and kernel (per-tensor recipe)
  const Format* backward_format = &Format::E5M2();  ///< output gradient (per-tensor recipe)
  /// Accumulation etc. of the forward GEMMs; `output` (fp32 default, bf16, fp16: per-tensor FP8
  /// runs only) is the type D is rounded to — fp16 overflows to ±Inf beyond 65504.
  GemmOptions forward_gemm;
  GemmOptions backward_gemm; ///< ... of dgrad and wgrad
  /// How block recipes multiply (linear_site.h): fake quantization (float32 GEMMs of the
  /// dequantized operands) or core/gemm with the block-scaled operands under forward_gemm /
  /// backward_gemm's accumulation model. The default is the model's: FakeQuant for the MLP (what
  /// every MLP session before the core path used), Core for the language model.
  BlockGemmPath block_gemm = BlockGemmPath::FakeQuant;
  /// Which sites run in the recipe and which in high precision, by step (sites.h); empty: every
  /// site follows the run.
  PrecisionPolicy policy;
  uint64_t seed = 1;          ///< initial weights (seed) and the data order (seed + 1)
  int threads = 0;            ///< worker threads (≤ 0: all cores); results do not depend on it
  bool record_history = true; ///< keep the amax-history window of every step
  /// What a step that produces a NaN / ±Inf does (nonfinite.h): stop (default) or continue; the
  /// first occurrence is recorded either way. Off: no check.
  NonFinitePolicy on_nonfinite = NonFinitePolicy::Stop;
  /// Per-block statistics (FP8 runs) and what-if recipes (any run): diagnostics.h.
  TrainingDiagnostics diagnostics;

  bool fp8() const { return precision == TrainingPrecision::FP8; }
  /// Sets `threads` and the threads of both GEMM settings to `n` (results do not depend on it).
  void setThreads(int n) { threads = forward_gemm.threads = backward_gemm.threads = n; }
  bool blockRecipe() const { return fp8() && recipe.recipe != TrainingRecipe::PerTensor; }
  /// What quantizes the run's GEMM operands, for display and the session's "scaling" attribute:
  /// the block recipe's name ("te_mxfp8", ...), else the per-tensor strategy ("delayed-flax", ...),
  /// "none" for FP32 runs.
  std::string scalingName() const;
  /// The checks every run's config passes, for a model with sites `sites`: empty when usable,
  /// else what is wrong (one line).
  std::string validateRun(const SiteTable& sites) const;
};

/// Per-step record of one GEMM operand of a site, "<site>/<input|kernel|output_grad>" (e.g.
/// "fc1/input", "blocks.0.attn.qkv/output_grad").
struct OperandHistory {
  std::string layer;   ///< the site path: "fc1", "blocks.0.ffn.up", ...
  std::string operand; ///< "input", "kernel", "output_grad"
  std::string format;  ///< "E4M3FN" / "E5M2" / "E2M1" (FP32 runs and float32 roles: "FP32")
  /// Block recipes: the recorded role and its quantization, e.g. "fprop.input: te_mxfp8 E4M3FN
  /// 1x32". input records fprop.input, kernel fprop.weight, output_grad wgrad.grad_output (the
  /// one gradient copy every layer has). Empty for per-tensor and FP32 runs.
  std::string quantization;
  int history_len = 0;     ///< L (0: no history — current scaling or FP32)
  std::vector<float> amax; ///< [steps] max |x| of the operand at that step
  /// [steps] scale used: x ≈ decode(q) · dequant_scale (FP8 only). Block recipes: the
  /// representative scale of RoleQuantRecord (median block scale; NVFP4: 1/S_enc).
  std::vector<float> dequant_scale;
  std::vector<float> quant_scale;     ///< [steps] the quant multiplier used (FP8 only)
  std::vector<uint8_t> kept_previous; ///< [steps] 1 when an edge rule kept the previous scale
  std::vector<int64_t> saturated;     ///< [steps] elements clipped to ±max finite
  std::vector<int64_t> underflow;     ///< [steps] non-zero elements that became 0
  /// [steps, history_len] row-major: the amax window after the step, chronological (oldest
  /// first) — the L amaxes whose max sets the next step's scale (see OperandStepRecord).
  std::vector<float> history;
  std::string name() const { return layer + "/" + operand; }
};

} // namespace fp8lab

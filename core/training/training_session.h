// FP8 Lab — storing a training run in a session (core/session): the layout of a "training" run.
//
//   /runs/<id>/                attrs: type "training", config (JSON), seed, backend, device,
//                                     precision, scaling, status ("completed" | "cancelled" |
//                                     "stopped_nonfinite", then also status_reason),
//                                     steps_completed, steps_per_epoch, scale_convention
//   training/loss              float32 [steps]      nats; mean softmax cross-entropy of the
//                                                   step's batch, before the update
//   training/accuracy          float32 [epochs]     1; test-set accuracy after each epoch
//   training/test_loss         float32 [epochs]     nats
//   training/train_loss        float32 [epochs]     nats; mean of the epoch's step losses
//   training/epoch_end_step    int64   [epochs]     steps done after the epoch
//   history/<fcN>/<operand>/   operand ∈ input | kernel | output_grad; group attrs: format,
//                              scaling, history_len, scale_convention, history_order
//       amax                   float32 [steps]      max |x| of the operand at each step
//       scale                  float32 [steps]      dequant scale used (x ≈ decode(q)·scale)   (FP8)
//       quant_scale            float32 [steps]      quant multiplier (x_q = cast(x·s))          (FP8)
//       amax_history           float32 [steps, L]   window after each step, oldest first (delayed)
//       saturated, underflow   int64   [steps]      element counts                              (FP8)
//       kept_previous          uint8   [steps]      1 where an edge rule kept the old scale     (FP8)
//   nonfinite/                 group attrs: policy, found (0/1), description; when found: step,
//                              layer, tensor, kind, rows, cols, row, col, value, value_text, and
//                              input_names or k_len, a/b_operand, a/b_amax, a/b_scale
//       inputs                 float32 [n]          the op's inputs at the element (elementwise)
//       terms_k, terms_a, terms_b, terms_product    the largest |a_k·b_k| terms (GEMM outputs)
//   block_stats/<fcN>/<operand>/  per-block statistics of the recipe that trained (FP8 runs):
//                              nine per-step float32 series [steps] and full maps
//                              map_* [m, grid_rows, grid_cols] at map_steps (putBlockStatsSeries)
//   what_if/steps              int64 [w]; what_if/<recipe>/<fcN>/<operand>/ the nine series [w]
//   weights/<fcN>/kernel       float32 [in, out]    FP32 master weights after the last step
//   weights/<fcN>/bias         float32 [out]
//   metrics: final_test_accuracy, final_test_loss, best_test_accuracy, final_loss, steps,
//            epochs_completed, saturated_total, underflow_total; wall times (not compared by
//            rerun): seconds, mean_epoch_seconds, epoch<N>_seconds
#pragma once

#include "session/session.h"
#include "training/trainer.h"

#include <string>

namespace fp8lab {

/// The JSON object of a block recipe as the config reads it (docs/training.md), every option
/// written out: {"name": "te_nvfp4", "fp8_format": "E4M3", "weight_2d": true, "hadamard": true,
/// "stochastic_rounding": true, "overrides": {"wgrad.input": {"recipe": "high_precision"}}}.
std::string recipeJson(const TrainingRecipeConfig& r);

/// The JSON text of one training run's configuration (the "run" object the CLI reads back:
/// `fp8lab-cli rerun` reproduces the run from it). `extra` is inserted verbatim as additional
/// members (e.g. "\"data_dir\": \"/x\"" ) when non-empty.
std::string trainingConfigJson(const TrainingConfig& c, const std::string& run_id, int64_t train_limit = 0,
                               int64_t test_limit = 0, const std::string& data_dir = {});

/// Builds the session Run of a (possibly cancelled) training result. config_json is stored as
/// given (normally trainingConfigJson()).
Run trainingRunToSession(const TrainingResult& r, const std::string& run_id, const std::string& config_json);

/// Stores one operand's per-block statistics under `group` (docs/session-format.md "Per-block
/// statistics"): group attributes layer, operand, quantization, format, scale_format, rows, cols,
/// block_rows, block_cols, grid_rows, grid_cols, map_every; the nine per-step float32 series
/// [s.steps.size()] (log2_scale_min … sqnr_db); and, when s.maps is non-empty, map_steps int64
/// [m] and the maps map_scale, map_scale_code (when the scales have codes), map_amax,
/// map_min_nonzero, map_underflow, map_saturated, map_dynamic_range, map_sqnr_db [m, grid_rows,
/// grid_cols]. `extra` attributes are added to the group.
void putBlockStatsSeries(Run& run, const std::string& group, const OperandBlockSeries& s, int64_t map_every,
                         const Attributes& extra = {});

/// Reads the FP32 master weights of layer `layer` ("fc1", ...) back from a stored training run.
/// Errors name the missing dataset.
Result<LayerWeights> trainedWeightsFromRun(const Run& run, const std::string& layer);

} // namespace fp8lab

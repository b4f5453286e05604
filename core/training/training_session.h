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
#include "training/config_json.h"
#include "training/lm_trainer.h"
#include "training/trainer.h"

#include <string>

namespace fp8lab {

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

/// The pieces every training run stores (the MLP's and the language model's):
/// history/<site>/<operand>/… of every operand (amax; FP8 runs: scale, quant_scale, amax_history,
/// saturated, underflow, kept_previous), with the group attributes of docs/session-format.md.
/// `history_len` is the strategy's window (0: none). Returns the saturated / underflow totals.
struct OperandTotals {
  int64_t saturated = 0, underflow = 0;
};
OperandTotals putOperandHistories(Run& run, const std::vector<OperandHistory>& operands, int64_t steps, bool fp8,
                                  bool block, const std::string& scaling_name, int history_len);
/// The "nonfinite" group: attributes always, the dot-product terms and the elementwise inputs as
/// small datasets when a value was found.
void putNonFiniteGroup(Run& run, const NonFiniteRecord& first, NonFinitePolicy policy);
/// The diagnostics groups: block_stats/<site>/<operand>/… and what_if/… (operands without steps,
/// such as attention operands no recipe measures, are left out).
void putDiagnosticsGroups(Run& run, const DiagnosticsResult& d);

/// The run's sites (docs/session-format.md "Language-model runs"): the attribute `sites` (the paths,
/// comma-separated, in recording order) and sites/in, sites/out, sites/block (int64 [sites]).
void putSiteTable(Run& run, const SiteTable& table);

/// Builds the session Run of a (possibly cancelled) language-model run: type "training", attribute
/// model "transformer"; training/loss, lr, grad_norm [steps], val_step, val_loss; sites/in, out,
/// block; history/<site>/<operand>/…, nonfinite, block_stats, what_if as the MLP's; probes/steps and
/// probes/<tensor>/<probe>; attention/steps, attention/tokens, attention/blocks.<l>/probs
/// [snapshots, H, T, T]; weights/<parameter name> (docs/session-format.md).
Run lmRunToSession(const LmTrainingResult& r, const std::string& run_id, const std::string& config_json);

/// Reads the FP32 master weights of layer `layer` ("fc1", ...) back from a stored training run.
/// Errors name the missing dataset.
Result<LayerWeights> trainedWeightsFromRun(const Run& run, const std::string& layer);

} // namespace fp8lab

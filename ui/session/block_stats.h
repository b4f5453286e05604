// The per-block statistics of a session run (`block_stats/`, `what_if/`, and the first
// non-finite value in `nonfinite`; docs/session-format.md) as the diagnostic views and the main
// window read them: which operands a run has, its what-if recipes, and where its first non-finite
// value is. No widgets.
#pragma once

#include "session/run_access.h"

#include <QString>
#include <QStringList>

#include <vector>

namespace fp8lab::ui {

/// One operand with per-block statistics (a row of the layer × step map): with statistics
/// `block_stats/<layer>/<operand>`.
struct OperandRow {
  QString layer;   ///< the site: "fc1", "blocks.0.attn.qkv"
  QString operand; ///< "input", "kernel" or "output_grad"
  /// "fc1/input": the operand as View::showOperand and the amax history name it.
  QString path() const { return layer + QLatin1Char('/') + operand; }
  /// "fc1 input": the row label.
  QString label() const { return layer + QLatin1Char(' ') + operand; }
  bool operator==(const OperandRow&) const = default;
};

struct RunRecord;

/// Whether a training run can hold per-block statistics or what-if results, from its config
/// alone (the run boxes list runs before their datasets are read): an FP8 run without
/// "diagnostics": {"block_stats": false}, or any run with diagnostics.what_if. FP32 runs quantize
/// nothing and record no block_stats.
bool mayHoldBlockStats(const RunRecord& r);

/// Why run `r` has no per-block statistics as trained, from its kind and config, with what to do
/// (an FP32 run quantizes nothing; "block_stats": false; a GEMM or checkpoint run has one map and
/// no steps). For the empty states of the diagnostic views.
QString noTrainedBlockStatsText(const RunRecord& r);

/// The operands of `run` that have `block_stats/<site>/<operand>/` datasets or, for a run that
/// measured what-if recipes without statistics as trained (an FP32 run, "block_stats": false),
/// `what_if/<recipe>/<site>/<operand>/` datasets; in site order (runSites: the `sites` attribute,
/// else by layer number), then input, kernel, output_grad (other operand names after those).
std::vector<OperandRow> blockStatOperands(const RunAccess& run);
/// Whether `run` has per-block statistics as trained (`block_stats/<site>/<operand>/`).
bool hasTrainedBlockStats(const RunAccess& run);

/// The what-if recipe ids of `run`: the `recipes` attribute of group `what_if` (comma-separated),
/// else the recipe groups found under `what_if/`; empty when the run has none.
QStringList whatIfRecipes(const RunAccess& run);

/// Where the first non-finite value of a training run is, read from its `nonfinite` group.
struct NonfiniteJump {
  bool found = false;  ///< the group's `found` is 1
  int64_t step = -1;   ///< global optimizer step, 0-based
  QString layer;       ///< the site: "fc1", "blocks.0.ffn.down", ...
  QString tensor;      ///< "fprop.input", "activation", ...
  QString kind;        ///< "gemm_output", "quantized_operand", "elementwise"
  QString description; ///< the one-line description
  /// The operand row it maps to ("fc1/input"; "" when none): fprop.input / input → input,
  /// fprop.weight / weight → kernel, wgrad.grad_output / output_grad / loss_grad → output_grad of
  /// that layer (layer `loss` / `loss_grad`: the last site); a GEMM output → its a_operand.
  QString operand;
};
/// Reads the first non-finite value of `run`; found is false when the run has none (or no group).
/// `rows` (blockStatOperands(run) when empty) names the operands that exist.
NonfiniteJump nonfiniteJump(const RunAccess& run, const std::vector<OperandRow>& rows = {});

} // namespace fp8lab::ui

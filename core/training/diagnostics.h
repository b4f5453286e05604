// FP8 Lab — the training run's diagnostics: per-block statistics of every quantized operand at
// every step (core/metrics/block_stats.h), full per-block maps every `map_every` steps, and
// "what-if" recipes — at every `what_if_every`-th step each operand's high-precision tensor is
// also quantized under other recipes and the same statistics recorded, without changing the
// training. The session layout is docs/session-format.md ("Per-block statistics", "What-if
// recipes"); how to read them, docs/training.md.
//
// Operands are those the run records (trainer.h OperandHistory): per layer the input x [B,in]
// with blocks along in (Axis::Cols), the kernel W [in,out] along in (Axis::Rows) and the output
// gradient g [B,out] along the batch (Axis::Rows): the roles fprop.input, fprop.weight and
// wgrad.grad_output of recipe.h. What-if quantizations use these axes too.
#pragma once

#include "formats/format.h"
#include "metrics/block_stats.h"
#include "scaling/delayed_scaling.h"
#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// One what-if recipe: how an operand would have been quantized.
struct WhatIfRecipe {
  enum class Kind {
    Scaling, ///< a core/scaling preset (te_current, te_block_1x128, mx_rceil, deepgemm_1x128, ...)
    Nvfp4,   ///< an NVFP4 preset (nvfp4_te, nvfp4_torchao, ...): E2M1 elements
    Delayed, ///< TE DelayedScaling with its own amax history of the operand's amaxes
  };
  std::string id; ///< as configured: "te_current", "mx_rceil@E5M2", "delayed_L16", "nvfp4_te"
  Kind kind = Kind::Scaling;
  ScalingConfig scaling;        ///< Kind::Scaling
  Nvfp4Config nvfp4;            ///< Kind::Nvfp4
  DelayedScalingConfig delayed; ///< Kind::Delayed (preset TE)
  /// Element format forced by an "@FORMAT" suffix; null: E4M3FN for inputs and kernels, E5M2 for
  /// output gradients (TE Format.HYBRID). NVFP4: always E2M1.
  const Format* format = nullptr;
  std::string semantics; ///< the system the rule follows, one line
  /// The element format this recipe gives an operand (gradient: the output gradient).
  const Format& formatFor(bool gradient) const;
  /// "te_mxfp8-like: mx_rceil E4M3FN 1x32", for the session's `quantization` attribute.
  std::string describe(bool gradient) const;
};

/// Parses a what-if recipe id: a scaling preset name (not the delayed presets, which need state),
/// an NVFP4 preset name, or delayed_L<N> / delayed_L<N>_most_recent (TE DelayedScaling,
/// amax_history_len N ≥ 1, amax_compute_algo max / most_recent, margin 0); the scaling presets
/// and delayed_* take an optional "@E4M3FN" / "@E5M2" suffix (any 8-bit format). nullopt and
/// *why (one line, naming the valid forms) when unusable.
std::optional<WhatIfRecipe> parseWhatIfRecipe(const std::string& id, std::string* why);

/// Parses a comma-separated list of what-if recipe ids ("te_current, mx_rceil"): each item
/// trimmed of white space, empty items skipped, each parsed by parseWhatIfRecipe. nullopt and
/// *why for the first item that is unusable (parseWhatIfRecipe's words) or whose recipe (by its
/// canonical id) is already listed ("'te_current' is listed twice").
std::optional<std::vector<WhatIfRecipe>> parseWhatIfList(const std::string& ids, std::string* why);

/// What the run records besides the per-step history.
struct TrainingDiagnostics {
  bool block_stats = true; ///< per-block statistics of the recipe that trained (FP8 runs)
  /// Full per-block maps at every map_every-th step from 0 and at the last step; 0: step 0 and
  /// the last step only. Summaries are recorded every step.
  int map_every = 250;
  std::vector<WhatIfRecipe> what_if; ///< empty: no what-if
  int what_if_every = 50;            ///< ≥ 1: what-if at steps s with s % every == 0, and at the last
  /// Empty when usable, else why not.
  std::string validate() const;
};

/// The per-step statistics of one operand under one quantization.
struct OperandBlockSeries {
  std::string layer, operand; ///< "fc1", "input" (GEMM runs: "", "A")
  std::string quantization;   ///< what quantized it (see docs/session-format.md)
  std::string format;         ///< element format name
  std::string scale_format;   ///< "E8M0FNU", "E4M3FN" or "float32"
  int64_t rows = 0, cols = 0; ///< tensor shape as quantized
  ScaleBlock block;
  int64_t grid_rows = 0, grid_cols = 0;
  std::vector<BlockStatsSummary> steps; ///< one per recorded step
  std::vector<int64_t> map_steps;       ///< steps of the full maps, ascending
  std::vector<BlockStatsMap> maps;      ///< one per map step
  /// Sets the shape attributes from a map (rows, cols, block, grid).
  void setShape(const BlockStatsMap& m);
};

/// What-if results of one recipe: one series per operand (in the run's operand order).
struct WhatIfSeries {
  std::string id, semantics;
  std::vector<OperandBlockSeries> operands;
};

/// Everything the diagnostics recorded, moved into TrainingResult at the end of the run.
struct DiagnosticsResult {
  int map_every = 0;
  std::vector<OperandBlockSeries> block_stats; ///< one per quantized operand (empty: none recorded)
  int what_if_every = 0;
  std::vector<int64_t> what_if_steps;
  std::vector<WhatIfSeries> what_if;
};

/// Records the diagnostics of a run while it trains. One per run; not thread-safe.
class DiagnosticsRecorder {
public:
  struct Operand {
    std::string layer, operand;
    bool gradient = false; ///< the output gradient (what-if format E5M2 by default)
    bool quantized = true; ///< the recipe that trained quantizes it (false: FP32 run or high_precision role)
    std::string quantization;
  };
  /// `total_steps` is the planned number of steps (the last step gets a map and a what-if).
  DiagnosticsRecorder(TrainingDiagnostics cfg, std::vector<Operand> operands, int64_t total_steps, int threads);
  ~DiagnosticsRecorder();

  /// The quantization that trained operand `op` at `step`: q and the tensor it was quantized from
  /// (for RHT operands the rotated tensor), both [q.rows, q.cols]. Called once per step and
  /// operand, steps in order. No-op when block_stats is off.
  void trained(size_t op, int64_t step, const float* x, const QuantizedTensor& q);
  /// The high-precision tensor of operand `op` at `step`, x [rows, cols] row-major, quantized
  /// along `axis`: updates the delayed what-if states and, at what-if steps, quantizes it under
  /// every what-if recipe. Called once per step and operand. No-op without what-if recipes.
  void whatIf(size_t op, int64_t step, const float* x, int64_t rows, int64_t cols, Axis axis);
  /// Completes the maps (the last step of the first step's shape: a short last batch is summarized
  /// but not mapped) and returns the results; `steps_done` = the
  /// steps completed.
  DiagnosticsResult finish(int64_t steps_done);

  bool isMapStep(int64_t step) const;
  bool isWhatIfStep(int64_t step) const;

private:
  struct Impl;
  std::unique_ptr<Impl> d;
};

/// What per-block statistics see of an NVFP4 quantization `t` (config `nc`, blocks along `axis`)
/// of `src` [pr, pc]: x [rows, cols] zero padded to whole 16-element blocks (both axes for 2-D
/// tiles). `q` is toQuantizedTensor(t) with 2-D tiles merged into 16×16 scale blocks, cropped to
/// the real [rows, cols] (cropQuantized) except along the block axis of an RHT operand, whose
/// rotated pad belongs to its blocks; `x` holds the matching elements (rotated for RHT), or is
/// empty when they are `src` as it is. Both the trained operands (fakeQuantize's observer) and
/// the what-if recipes are measured through it. `q.stats` holds the element count only (the
/// per-block statistics count underflow and saturation per block themselves).
struct Nvfp4StatsView {
  QuantizedTensor q;
  std::vector<float> x;
  const float* elements(const float* src) const { return x.empty() ? src : x.data(); }
};
Nvfp4StatsView nvfp4StatsView(const Nvfp4Tensor& t, const Nvfp4Config& nc, const float* src, int64_t pr, int64_t pc,
                              int64_t rows, int64_t cols, Axis axis, int threads);

/// Bytes the diagnostics of a run keep, for estimateTrainingBytes: per operand and step one
/// BlockStatsSummary (80 B) with block_stats on; (⌊(steps − 1) / map_every⌋ + 2) maps (map_every
/// 0: 2) of at most ⌊elements / 16⌋ blocks × 45 B, twice (result and stored run); per what-if
/// recipe, operand and what-if step (⌊(steps − 1) / every⌋ + 2) one summary. `elements` = Σ of the
/// recorded operands' elements, `operands` their number.
double estimateDiagnosticsBytes(const TrainingDiagnostics& cfg, int64_t steps, int64_t operands, int64_t elements);

} // namespace fp8lab

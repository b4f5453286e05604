// FP8 Lab — per-tensor delayed scaling: an amax history and the scale derived from it, with the
// exact timing, storage and edge rules of Flax `fp8_ops` and Transformer Engine `DelayedScaling`
// (flax/linen/fp8_ops.py; TE's fused update kernel_bulk; docs/scaling.md). The update rules
// themselves are the host/device functions of delayed_update.h; this class holds one tensor's
// state and records what each step did.
//
// One DelayedScaling object is the scaling state of ONE tensor (an input, a weight or an output
// gradient of one GEMM). The training helper records with it; the GUI replays an amax sequence
// through a fresh object to answer "what if the window were 16 instead of 1024?".
//
// Conventions. scale() is the preset's own stored value:
//   Flax: the **dequant** multiplier (≈ amax/fp8_max); tensors are quantized as cast(x / scale).
//   TE, TE JAX: the **quant** multiplier (≈ fp8_max/amax); tensors are quantized as cast(x · scale).
// quantScale() / dequantScale() give both conventions for either preset (the other one is the
// float32 reciprocal, as TE's scale_inv = 1/scale).
//
// Timing. Both presets use the same window for the scale of step t: the L amaxes before it
// (Flax: L = history_len values, TE: the L−1 stored values plus the staged one). They differ in
// WHEN the scale is computed and in what the array holds:
//   Flax update(a_t): scale_t from max(old history) → roll left, hist[0] = a_t → quantize with
//        scale_t. So after update(), scale() is the scale USED for this step's tensor.
//   TE   quantize with the current scale → record(a_t) into the staging slot hist[0] → update()
//        at the end of the step: roll (unless the amax is 0), hist[0] = 0, new scale from the
//        window incl. a_t. So after update(), scale() is the scale for the NEXT step.
// historyRaw() is the array as the system stores it; historyChronological() is
// hist[1:] + [hist[0]] (oldest first) for both layouts: for TE after an update its last element
// is the cleared staging slot (0).
#pragma once

#include "common/progress.h"
#include "formats/format.h"
#include "scaling/delayed_update.h"
#include "scaling/quantized_tensor.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// How per-use metadata is combined when a tensor's meta is used several times in one step.
enum class MetaCombine {
  Max, ///< Flax `fp32_max_grad`: elementwise max (correct)
  Sum, ///< plain autodiff: elementwise sum (the bug Flax #3623 fixed; for demonstration)
};

/// The longest amax history a delayed-scaling state keeps (2^20 steps): `scaling simulate` streams
/// one step at a time in O(L) memory (docs/reliability.md). The parameter schema's history_len
/// range is [1, kMaxAmaxHistoryLen].
inline constexpr int kMaxAmaxHistoryLen = 1 << 20;
/// "[1, 1048576]": the accepted history lengths, as the refusals name them.
inline std::string amaxHistoryRangeText() {
  return "[1, " + std::to_string(kMaxAmaxHistoryLen) + "]";
}

/// Settings of one delayed-scaling state. fp8_max comes from the format.
struct DelayedScalingConfig {
  DelayedPreset preset = DelayedPreset::TE;
  int history_len = 1024;        ///< L ≥ 1 (default 1024 in both systems)
  AmaxAlgo algo = AmaxAlgo::Max; ///< Flax: Max only
  /// Scale divided by 2^margin. TE: the recipe's `margin`; Flax always uses 0 (compute_scale has
  /// the parameter but update_fp8_meta never passes it) — non-zero is a what-if.
  int margin = 0;
};

/// What one update did (for recording and for the CLI's per-step output).
struct DelayedUpdate {
  double amax = 0;        ///< the amax given (as float32)
  float window_amax = 0;  ///< the amax the scale rule saw (max of the window, or most recent)
  float scale_before = 1; ///< stored scale before the update (preset convention)
  float scale = 1;        ///< stored scale after the update (preset convention)
  /// The scale that quantizes this step's tensor (preset convention): Flax: == scale (computed
  /// from the old window); TE: == scale_before (the update takes effect next step).
  float scale_used = 1;
  float quant_scale = 1;      ///< scale after the update as a quant multiplier
  float dequant_scale = 1;    ///< scale after the update as a dequant multiplier
  bool kept_previous = false; ///< an edge rule kept the old scale (amax 0, inf, NaN, empty window)
  bool clamped = false;       ///< TE: the scale overflowed and was clamped to FLT_MAX
  bool rolled = true;         ///< the history moved (TE fused update skips the roll when amax is 0)
};

/// Amax history + scale of one tensor under Flax or TE delayed scaling. Copyable value type.
class DelayedScaling {
public:
  /// Initial state as both systems: history zeros, scale 1.0. Throws std::invalid_argument for
  /// history_len < 1, a format of more than 8 bits, or Flax with AmaxAlgo::MostRecent.
  DelayedScaling(const Format& fmt, DelayedScalingConfig cfg = {});

  const DelayedScalingConfig& config() const { return cfg_; }
  const Format& format() const { return *fmt_; }
  /// Stored scale, preset convention (Flax dequant, TE quant).
  float scale() const { return scale_; }
  /// The current scale as a quant multiplier (TE: scale(); Flax: 1/scale() in float32).
  float quantScale() const;
  /// The current scale as a dequant multiplier (TE: 1/scale() = scale_inv; Flax: scale()).
  float dequantScale() const;
  /// How this preset applies its scale: TE Multiply by quantScale(), Flax Divide by scale().
  Format::ScaleOp scaleOp() const;
  /// The history exactly as the system stores it (length L; see the file comment).
  const std::vector<float>& historyRaw() const { return hist_; }
  /// Oldest first: hist[1:] + [hist[0]].
  std::vector<float> historyChronological() const;
  /// Flags of the last update (false before the first one).
  bool keptPrevious() const { return last_.kept_previous; }
  const DelayedUpdate& lastUpdate() const { return last_; }
  /// Number of update() calls so far.
  int64_t steps() const { return steps_; }

  /// TE: max-reduces an amax into the staging slot hist[0] (as the cast kernel's atomic max;
  /// several uses in one step combine by max). Flax has no staging: throws std::logic_error.
  void record(float amax);
  /// TE: the end-of-step update from the staged amax (fused kernel_bulk rules). Throws
  /// std::logic_error for Flax.
  DelayedUpdate update();
  /// One step with this tensor's amax. Flax: scale from the old window, then roll and write.
  /// TE: record(amax) then update().
  DelayedUpdate update(float amax);

  /// Quantizes a tensor [rows, cols] as the preset does in one training step and updates the
  /// state: Flax: update(amax) then cast(x / scale); TE: cast(x · scale) then update(amax).
  /// amax: NaN-propagating for Flax (jnp.max), NaN-ignoring for TE (fmaxf). If `upd` is given it
  /// receives the update record.
  QuantizedTensor quantizeStep(const float* x, int64_t rows, int64_t cols, DelayedUpdate* upd = nullptr,
                               const ProgressFn& progress = {});

  /// Restores a saved state (e.g. from a session). raw_history must have length L.
  void setState(float scale, std::vector<float> raw_history);

  /// Combines the states reached by several uses of the same metadata in one step, each started
  /// from the same state (Flax scan / pipeline microbatches): elementwise max (fp32_max_grad) or
  /// sum of the histories and the stored scales. All uses must share format and config; throws
  /// std::invalid_argument otherwise or when `uses` is empty.
  static DelayedScaling combineUses(std::span<const DelayedScaling> uses, MetaCombine how);

  /// Replays an amax sequence through a fresh state: one DelayedUpdate per amax.
  static std::vector<DelayedUpdate> simulate(const Format& fmt, const DelayedScalingConfig& cfg,
                                             std::span<const double> amaxes,
                                             std::vector<std::vector<float>>* histories = nullptr);

private:
  DelayedUpdateParams params() const;
  DelayedUpdate finish(float scale_before, const DelayedStep& step);
  void fillConventions(DelayedUpdate& u) const;

  const Format* fmt_;
  DelayedScalingConfig cfg_;
  float fp8_max_;
  float scale_ = 1.0f;
  std::vector<float> hist_;
  DelayedUpdate last_{};
  int64_t steps_ = 0;
};

const char* toString(DelayedPreset p);
const char* toString(AmaxAlgo a);
std::optional<DelayedPreset> parseDelayedPreset(std::string_view s); ///< "flax", "te", "te_jax" (+ "_delayed")
std::optional<AmaxAlgo> parseAmaxAlgo(std::string_view s);           ///< "max", "most_recent"

} // namespace fp8lab

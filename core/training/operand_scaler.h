// FP8 Lab — per-operand scaling of the training experiment: one OperandScaler per GEMM operand
// (input, kernel, output gradient of every Linear layer), holding that operand's scaling state
// (amax history for delayed scaling) and quantizing it once per training step, as Flax's
// Fp8DotGeneral does (each of the three operands has its own scale + amax history; the
// quantized input is reused by the wgrad GEMM, the quantized kernel by the dgrad GEMM).
//
// Scale convention: dequant_scale (x ≈ decode(code) · dequant_scale); quant_scale is the
// multiplier the quantize op used (TE's `scale`; for Flax the stored dequant scale divides).
// The rules are those of Flax (flax/linen/fp8_ops.py), Transformer Engine (DelayedScaling,
// Float8CurrentScaling) and torchao (float8_utils.py amax_to_scale), implemented by core/scaling
// (docs/scaling.md).
#pragma once

#include "formats/format.h"
#include "scaling/quantized_tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fp8lab {

/// Which scaling strategy the FP8 GEMM operands of a training run use.
enum class TrainingScalingKind {
  DelayedFlax,    ///< per-tensor delayed, Flax fp8_ops preset (window excludes the current step)
  DelayedTE,      ///< per-tensor delayed, Transformer Engine DelayedScaling preset (fused update)
  CurrentTE,      ///< per-tensor current, TE Float8CurrentScaling (amax 0/inf/NaN → 1.0, inf → FLT_MAX)
  CurrentTorchao, ///< per-tensor current, torchao tensorwise (amax ≥ 1e-12, float64 division)
};

/// Parses "delayed-flax" | "delayed-te" | "current-te" | "current-torchao" (also "delayed" =
/// delayed-flax, "current" = current-te); false when unknown.
bool parseTrainingScalingKind(const std::string& s, TrainingScalingKind* out);
/// The canonical name ("delayed-flax", ...).
const char* toString(TrainingScalingKind k);
/// True for the two delayed presets.
bool isDelayed(TrainingScalingKind k);

/// Options of the strategy (delayed presets only use history_len, algo and margin).
struct TrainingScalingConfig {
  TrainingScalingKind kind = TrainingScalingKind::DelayedFlax;
  int history_len = 1024;    ///< L, amax history length (Flax and TE default 1024)
  bool most_recent = false;  ///< TE amax_compute_algo "most_recent" instead of "max" (TE only)
  int margin = 0;            ///< TE margin: scale divided by 2^margin (Flax: always 0)
  bool power_of_two = false; ///< current presets: round the quant scale down to a power of two
  /// The FP8 casts saturate (values beyond max finite become ±max, every preset's default). false:
  /// they overflow to Inf where the format has one (E5M2), else NaN (E4M3FN) — OCP "non-SAT".
  bool saturate = true;
};

/// What one quantization of an operand did (one training step).
struct OperandStepRecord {
  float amax = 0;             ///< max |x| of this step's tensor (before any scaling)
  float dequant_scale = 0;    ///< scale the tensor was quantized with (x ≈ q · dequant_scale)
  float quant_scale = 0;      ///< the quant multiplier (x_q = cast(x · quant_scale)) = exact value used
  bool kept_previous = false; ///< an edge rule kept the previous scale (amax 0 / inf / NaN)
  int64_t saturated = 0;      ///< elements clipped to ±max finite
  int64_t underflow = 0;      ///< non-zero elements that became zero
  /// Delayed scaling: the amax history after this step's update, chronological (oldest first,
  /// hist[1:] + [hist[0]] for Flax and TE alike), length L. Empty for current scaling.
  std::vector<float> history;
};

/// Scaling state + quantization of one per-tensor operand. Copyable (evaluation quantizes with
/// a copy, so the training state is not advanced by test batches).
class OperandScaler {
public:
  OperandScaler(const TrainingScalingConfig& cfg, const Format& format);
  ~OperandScaler();
  OperandScaler(const OperandScaler&);
  OperandScaler& operator=(const OperandScaler&);

  /// Quantizes x [rows, cols] (row-major float32) per tensor with the strategy, advancing the
  /// state (delayed: the amax is entered into the history). RNE cast, saturating unless
  /// config().saturate is false (then the same scale and amax rules, non-saturating cast). Writes into
  /// `out` (buffers reused across calls) and fills `*record` when non-null.
  void quantize(const float* x, int64_t rows, int64_t cols, QuantizedTensor& out, OperandStepRecord* record = nullptr);

  const Format& format() const;
  const TrainingScalingConfig& config() const;

private:
  struct Impl;
  std::unique_ptr<Impl> d;
};

/// Transposes a per-tensor quantized tensor (codes [rows, cols] → [cols, rows], same scale),
/// reusing out's buffers: the operand of the dgrad (Wᵀ) and wgrad (xᵀ) GEMMs.
void transposeQuantized(const QuantizedTensor& in, QuantizedTensor& out);

} // namespace fp8lab

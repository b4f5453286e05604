// FP8 Lab — the first non-finite value of a training run: where a NaN or ±Inf first appeared
// (step, layer, tensor, element), its value, and the finite inputs that produced it.
//
// The trainer checks every tensor of a step in the order it computes them (docs/training.md,
// "The first non-finite value"): float32 tensors with one integer pass (allFinite), quantized
// operands from the counters their quantization already keeps (QuantizeStats), so the check
// costs one read of each float32 result per step and nothing for the quantized copies. Only
// when a tensor fails is it scanned again for the first element and the record built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fp8lab {

/// What a run does when a step produces a non-finite value (config "on_nonfinite").
enum class NonFinitePolicy {
  Stop,     ///< record the first one, finish that step, stop the run (status "stopped_nonfinite")
  Continue, ///< record the first one and train on to the end (later ones are not recorded)
  Off,      ///< no check (nothing recorded)
};
const char* toString(NonFinitePolicy p); ///< "stop" / "continue" / "off"
/// Parses "stop" | "continue" | "off"; false when unknown.
bool parseNonFinitePolicy(const std::string& s, NonFinitePolicy* out);

/// One term a_k · b_k of the dot product behind a GEMM output element D[i, j] = Σ_k a_k · b_k.
struct DotTerm {
  int64_t k = 0;      ///< index along the contraction axis, 0-based
  float a = 0;        ///< A[i, k] as the GEMM used it (dequantized: decode(code) · scale)
  float b = 0;        ///< B[k, j] as the GEMM used it
  double product = 0; ///< a · b in float64 (exact for two float32 values unless it overflows float64)
};

/// Where the first non-finite value of a run appeared and what produced it.
struct NonFiniteRecord {
  bool found = false;
  int64_t step = -1; ///< global optimizer step, 0-based
  std::string layer; ///< "fc1", "fc2", ...; the loss and its gradient name the last layer
  /// The tensor, in the trainer's vocabulary: "input" (float32 layer input after ReLU and any
  /// spike), the quantized GEMM operands "fprop.input", "fprop.weight", "wgrad.grad_output", the GEMM
  /// outputs "fprop.output", "wgrad.output", "dgrad.output" (before bias / ReLU mask), "activation"
  /// (fprop.output + bias), "loss", "loss_grad" (∂loss/∂logits), "bias_grad", "input_grad"
  /// (dgrad.output × spike factor, ReLU-masked), "weight" and "bias" (master copies after the update).
  std::string tensor;
  std::string kind;           ///< "gemm_output" | "quantized_operand" | "elementwise"
  int64_t rows = 0, cols = 0; ///< the tensor's shape [rows, cols] (row-major; vectors and the loss: rows = 1)
  int64_t row = 0, col = 0;   ///< the first non-finite element in row-major order
  float value = 0;            ///< its value: NaN, +Inf or −Inf
  /// Elementwise ops and quantized operands: the op's input values at the element, named by
  /// input_names (e.g. {"x", "quant_scale"} for a quantization, {"gemm", "bias"} for the bias add).
  std::vector<float> inputs;
  std::vector<std::string> input_names;
  /// GEMM outputs: D[row, col] = Σ_k A[row, k] · B[k, col] over k_len terms; the largest |a_k · b_k|
  /// (at most kTopTerms, largest first, NaN products first, ties by k) and the two operands.
  int64_t k_len = 0;
  std::vector<DotTerm> terms;
  std::string a_operand, b_operand; ///< the recorded operand of A and B, e.g. "fc2/input", "fc2/kernel"
  float a_amax = 0, b_amax = 0;     ///< max |x| of the float32 operand at this step
  float a_scale = 1, b_scale = 1;   ///< dequant scale at this step (1 in FP32 runs)
  /// True when a and b of the terms are the float32 operands before quantization (block recipes
  /// quantize inside the GEMM call; their dequantized copies are not kept).
  bool terms_before_quantization = false;

  static constexpr int kTopTerms = 8;
  /// One line, e.g. "step 12, layer fc2, fprop.output D[3,7] = inf (largest term k=5: 3.1e38 ×
  /// 2.0 = 6.2e38)".
  std::string describe() const;
};

/// True when none of x[0, n) is NaN or ±Inf. One integer pass over the magnitude bits (scaling.h
/// amaxOf, vectorised at the CPU level), no floating-point compare.
bool allFinite(const float* x, size_t n);
/// Index of the first NaN / ±Inf of x[0, n), or −1.
int64_t firstNonFinite(const float* x, size_t n);

/// The largest |a_k · b_k| terms of Σ_k a[k·a_stride] · b[k·b_stride], k ∈ [0, k_len): at most
/// `top`, ordered by |product| descending (NaN products first), ties by k ascending.
std::vector<DotTerm> largestDotTerms(const float* a, int64_t a_stride, const float* b, int64_t b_stride, int64_t k_len,
                                     int top = NonFiniteRecord::kTopTerms);

/// "nan", "inf", "-inf", or the shortest decimal text of a finite value.
std::string floatText(float v);

} // namespace fp8lab

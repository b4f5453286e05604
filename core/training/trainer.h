// FP8 Lab — the FP8 training experiment: an MLP on Fashion-MNIST whose every Linear layer runs
// its GEMMs in FP8 through core/gemm, with the scaling strategies of core/scaling, recording the
// loss and the amax / scale / amax-history of every GEMM operand at every step.
//
// Model (defaults): 784-256-128-10, ReLU between layers, softmax cross-entropy (mean over the
// batch), batch 128, Adam (lr 1e-3, β1 0.9, β2 0.999, ε 1e-8, bias-corrected; Kingma & Ba 2015),
// FP32 master weights and biases. Weights ~ U(−√(6/fan_in), √(6/fan_in)) (He uniform), biases 0.
//
// FP8 precision, per Linear layer y = x·W + b (x [B,in], W [in,out]), as Flax Fp8DotGeneral /
// TE's HYBRID format:
//   forward  y  = deq(Q_e4m3(x)) · deq(Q_e4m3(W))     GEMM A = x  [B,in],  B = W  [in,out]
//   dgrad    dx = deq(Q_e5m2(g)) · deq(Q_e4m3(W))ᵀ    GEMM A = g  [B,out], B = Wᵀ [out,in]
//   wgrad    dW = deq(Q_e4m3(x))ᵀ · deq(Q_e5m2(g))    GEMM A = xᵀ [in,B],  B = g  [B,out]
// with g = ∂loss/∂y. Each operand (input x, kernel W, output gradient g) is quantized ONCE per
// step with its own per-tensor scaling state; the quantized x is reused (transposed) by wgrad and
// the quantized W by dgrad, exactly as Flax's custom VJP does. The bias gradient is Σ_batch g in
// float32 (the bias add is outside the FP8 dot). The first layer's dgrad (the gradient w.r.t. the
// images) is not computed: nothing uses it (JAX removes it too).
//
// Block recipes (config "recipe", recipe.h): TE's Float8BlockScaling, MXFP8BlockScaling and
// NVFP4BlockScaling. Each of the six GEMM operands (roles) is quantized separately from the
// float32 tensor along its own contraction axis, dequantized, and the GEMM is a float32 GEMM of
// the dequantized operands (fake quantization); per-role overrides can keep a role in float32.
//
// FP32 precision: the same model, data order and initial weights with float32 GEMMs (the
// baseline). The operands' amax is still recorded (what FP8 would have had to cover).
#pragma once

#include "common/progress.h"
#include "formats/format.h"
#include "gemm/gemm.h"
#include "training/diagnostics.h"
#include "training/fashion_mnist.h"
#include "training/nonfinite.h"
#include "training/operand_scaler.h"
#include "training/recipe.h"
#include "training/run_config.h"
#include "training/sites.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fp8lab {

/// Multiply one batch's activations by `factor` at global step `step` (0-based): the input of
/// Linear layer `layer` (0 = the images) — to show delayed scaling's lag (the scale in use was
/// computed from earlier, smaller amaxes, so the spike saturates) and current scaling's lack of it.
/// With `row` / `col` ≥ 0 only that element of the layer input [batch, in] is multiplied (the
/// injected overflow of docs/training.md's non-finite section); −1 = every row / column.
struct SpikeConfig {
  bool enabled = false;
  int64_t step = 0;
  float factor = 1.0f;
  int layer = 0;
  int64_t row = -1; ///< batch row of the layer input, 0-based; −1: all rows
  int64_t col = -1; ///< input column (feature), 0-based; −1: all columns
};

/// The MLP run's config: what every run shares (TrainingRunConfig: precision, recipe, GEMMs,
/// policy, seed, records) and the MLP's own model, data and optimizer settings.
struct TrainingConfig : TrainingRunConfig {
  std::vector<int> layer_sizes = {784, 256, 128, 10}; ///< first = 784 (28×28), last = 10 classes
  int batch_size = 128;
  int epochs = 3;
  float learning_rate = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, adam_epsilon = 1e-8f;
  SpikeConfig spike;
  int eval_batch_size = 1000; ///< test-set forward batch

  /// Empty when usable; else what is wrong (one line), e.g. "batch_size must be ≥ 1".
  std::string validate() const;
};

struct EpochRecord {
  int epoch = 0;            ///< 1-based
  int64_t end_step = 0;     ///< global steps done after this epoch
  double train_loss = 0;    ///< mean of the epoch's step losses
  double test_loss = 0;     ///< mean cross-entropy over the test set
  double test_accuracy = 0; ///< fraction of test images classified correctly, in [0, 1]
  double seconds = 0;       ///< wall time of the epoch's training steps (without evaluation)
};

struct LayerWeights {
  int64_t in = 0, out = 0;
  std::vector<float> kernel; ///< [in, out] row-major float32 master weights
  std::vector<float> bias;   ///< [out]
};

struct TrainingResult {
  TrainingConfig config;
  int64_t steps_per_epoch = 0;
  int64_t steps_done = 0; ///< completed optimizer steps (all records have this length)
  bool cancelled = false; ///< stopped early by the ProgressFn (records hold steps_done)
  /// on_nonfinite stop: the run stopped after the step of first_nonfinite (that step is complete
  /// and recorded; steps_done = first_nonfinite.step + 1; no evaluation of the unfinished epoch).
  bool stopped_nonfinite = false;
  NonFiniteRecord first_nonfinite;      ///< where the first NaN / ±Inf appeared (found = false: none)
  std::vector<float> loss;              ///< [steps] mean cross-entropy of the batch (nats), before the update
  std::vector<OperandHistory> operands; ///< 3 per layer: input, kernel, output_grad
  std::vector<EpochRecord> epochs;      ///< completed epochs only
  std::vector<LayerWeights> weights;    ///< master weights after the last completed step
  double seconds = 0;                   ///< total wall time
  std::string gemm_backend, gemm_device, gemm_algorithm; ///< FP8 runs: where the GEMMs ran
  int64_t gemm_runs_gpu = 0, gemm_runs_cpu = 0;          ///< FP8 runs: how many GEMMs ran on each side
  std::vector<Issue> warnings;
  /// Per-block statistics of the operands under the recipe that trained (FP8 runs), and what-if
  /// recipes; operands in the order of `operands`.
  DiagnosticsResult diagnostics;

  const OperandHistory* find(const std::string& name) const; ///< by "fc1/input"
};

/// Bytes a training run needs at its peak (runs that cannot fit are refused up front, before
/// anything is allocated): per weight 24 B (master float32, gradient, Adam m and v, FP8 codes and dequantized
/// copy), per activation 12 B × (batch + eval batch) × Σ(in + out), and per recorded step
/// 3 operands per layer × (40 B + 2 × 4 B × history_len when the window is recorded — once in
/// the result, once when stored as a session run), plus the diagnostics (estimateDiagnosticsBytes
/// over the recorded operands). `train_images` sets the step count
/// (epochs × ceil(train_images / batch_size)). An estimate, meant to be within 2× of the truth.
double estimateTrainingBytes(const TrainingConfig& config, int64_t train_images);

/// One training run. Not thread-safe; run() may be called once.
class TrainingRun {
public:
  /// `train` / `test` must outlive the run. `backend` (FP8 runs; not owned, may be null =
  /// the CPU reference backend) runs the FP8 GEMMs. Throws std::invalid_argument when
  /// config.validate() fails or the data do not match layer_sizes.front(), and when
  /// estimateTrainingBytes() exceeds the memory available (or forward_gemm.memory_limit_bytes
  /// when > 0) — the message names both sizes; nothing large has been allocated then.
  TrainingRun(TrainingConfig config, const ImageDataset& train, const ImageDataset& test,
              GemmBackend* backend = nullptr);
  ~TrainingRun();

  /// Trains config.epochs epochs, evaluating on the test set after each. progress(fraction,
  /// stage) is called after every step (and, progress only, before each evaluation); when the
  /// call after a step returns false the run stops there (the current step always completes; after
  /// an epoch's last step, that epoch's evaluation too), sets result().cancelled and throws
  /// Cancelled — result() then holds everything up to that step, consistent and complete (epochs
  /// whose evaluation ran are in result().epochs). A stop after the last step of the last epoch
  /// leaves nothing undone: the run returns normally.
  /// A step that produces a non-finite value is recorded in result().first_nonfinite (the first
  /// one only); with on_nonfinite stop the run returns after that step with
  /// result().stopped_nonfinite set (no exception).
  /// GEMM failures propagate as std::runtime_error.
  void run(const ProgressFn& progress = {});
  const TrainingResult& result() const;
  TrainingResult takeResult();

private:
  struct Impl;
  struct Loop;
  std::unique_ptr<Impl> d;
};

/// The float32 input of Linear layer `layer` (0 = x itself) for `rows` rows of x through the
/// MLP `weights` (float32 GEMMs, bias, ReLU): the forward pass the training runs, without
/// quantization. [rows, weights[layer].in].
std::vector<float> mlpLayerInputF32(const std::vector<LayerWeights>& weights, const float* x, int64_t rows,
                                    size_t layer, int threads = 0);

/// Test-set evaluation of given weights with float32 GEMMs: {mean loss, accuracy}.
std::pair<double, double> evaluateFp32(const std::vector<LayerWeights>& weights, const ImageDataset& test,
                                       int batch = 1000, int threads = 0);

} // namespace fp8lab

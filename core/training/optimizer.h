// FP8 Lab — the optimizers of the training engine, apart from the models: Adam (Kingma & Ba 2015,
// Algorithm 1, bias-corrected; with decoupled weight decay, AdamW, Loshchilov & Hutter 2019) and
// SGD with momentum (PyTorch torch.optim.SGD: v = μ·v + g, p −= lr·v), gradient clipping by the
// global norm (torch.nn.utils.clip_grad_norm_) and the learning-rate schedule of the language
// model (linear warm-up, then cosine decay to a floor, as nanoGPT's get_lr). The FP32 master
// weights are what they update; the low-precision copies are made from them each step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fp8lab {

/// One parameter tensor the optimizer updates: its values, its gradient and its state (Adam: m,
/// v; SGD: the momentum buffer in m), all of the same length. `decay`: whether weight decay
/// applies (matrices yes; biases and norm gains no, as GPT-2 / nanoGPT do).
struct ParamRef {
  std::vector<float>* value = nullptr;
  std::vector<float>* grad = nullptr;
  std::vector<float>* m = nullptr;
  std::vector<float>* v = nullptr;
  bool decay = false;
};

enum class OptimizerKind { Adam, Sgd };
const char* toString(OptimizerKind k); ///< "adam" / "sgd"

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Adam;
  float learning_rate = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f; ///< Adam
  float momentum = 0.9f;                               ///< SGD
  float weight_decay = 0.0f; ///< AdamW decoupled decay (p −= lr·wd·p); SGD: added to the gradient
};

/// Updates parameters in place. step() is called once per optimizer step with the step's
/// learning rate; Adam's bias correction counts its own calls (t = 1, 2, ...).
class Optimizer {
public:
  explicit Optimizer(OptimizerConfig cfg) : cfg_(cfg) {}
  const OptimizerConfig& config() const { return cfg_; }
  /// One update of every parameter, in order. Adam:
  ///   m = β1·m + (1 − β1)·g;  v = β2·v + (1 − β2)·g²;
  ///   p −= (lr / (1 − β1^t)) · m / (√v / √(1 − β2^t) + ε)   [and p −= lr·wd·p when decay]
  /// with the bias corrections computed in double and rounded to float32 once per step — the
  /// arithmetic the MLP has always used, bit for bit. SGD: g' = g + wd·p, m = μ·m + g', p −= lr·m.
  void step(const std::vector<ParamRef>& params, float learning_rate);
  int64_t steps() const { return t_; }

private:
  OptimizerConfig cfg_;
  int64_t t_ = 0;
};

/// Scales every gradient by min(1, max_norm / ‖g‖₂) where ‖g‖₂ is the norm of all gradients
/// together (summed in double); returns ‖g‖₂ before clipping. max_norm ≤ 0: no clipping, the
/// norm is still returned.
double clipGradNorm(const std::vector<ParamRef>& params, double max_norm);

/// The learning rate at `step` (0-based) of `total`: linear warm-up from lr/warmup to lr over
/// `warmup` steps, then cosine decay from lr to lr·min_ratio at the last step (nanoGPT get_lr).
/// warmup 0 and min_ratio 1: constant.
float scheduledLearningRate(float lr, int64_t step, int64_t total, int64_t warmup, double min_ratio);

} // namespace fp8lab

// FP8 Lab — what a model of the training engine is made of: named parameter tensors (Param) and
// the interface through which its GEMMs run (LinearOps). A model (mlp.h, transformer.h) is a
// template on T with one forward and one backward built from the layer kinds of layers.h; its
// Linear layers and attention matmuls are operand sites (sites.h), which it hands to LinearOps:
//   - SiteLinearOps (linear_site.h), T = float: the training run's GEMMs, quantized under the
//     recipe and the precision policy, every operand recorded;
//   - Fp32LinearOps, T = float: float32 GEMMs (dense.h matmulF32), for evaluation and reference
//     forwards of the same weights;
//   - PlainLinearOps, T = double: plain float64 products, for the whole-model gradient checks
//     (tests/core/training/test_gradient_check.cpp).
// The training loop around a model is training_loop.h; the optimizer optimizer.h.
#pragma once

#include "training/sites.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fp8lab {

/// One parameter tensor: value, gradient and optimizer state (Adam m, v; SGD momentum in m).
/// Named as PyTorch module paths ("fc1.weight", "blocks.0.attn.qkv.bias"); Linear weights are
/// stored [in, out].
template <class T> struct Param {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<T> value, grad, m, v;
  bool decay = false; ///< weight decay applies (matrices and embeddings, not biases and gains)
};

/// The names and values of an elementwise op's inputs at element (i, j) of its result, filled for
/// the record of the first non-finite value (nonfinite.h: input_names, inputs).
using OpInputs = std::function<void(int64_t i, int64_t j, std::vector<std::string>& names, std::vector<float>& values)>;

/// How a model's GEMMs run, and who sees its elementwise results.
template <class T> class LinearOps {
public:
  virtual ~LinearOps() = default;
  /// y [n, out] = x [n, in] · w [in, out] for Linear site `site` (y resized); x and w stay valid
  /// until backward of the same site.
  virtual void linearForward(size_t site, const T* x, int64_t n, const T* w, int64_t in, int64_t out,
                             std::vector<T>& y) = 0;
  /// gw [in, out] (written) and, when dx is not null, dx [n, in] (written) from g [n, out].
  virtual void linearBackward(size_t site, const T* g, std::vector<T>& gw, std::vector<T>* dx) = 0;
  /// Whether attention site `site` (scores or context) multiplies in low precision at this step;
  /// then `quantize` fake-quantizes its operand in place (Q, K: the scores; P rows, V: the
  /// context) and the backward passes the gradient straight through the cast.
  virtual bool attentionLow(size_t /*site*/) { return false; }
  virtual void quantize(size_t /*site*/, SiteOperand /*operand*/, T* /*x*/, int64_t /*n*/) {}
  /// Receives an attention site's operand (x [n]) for the record, after any quantization: the
  /// inputs and kernels in the forward, the output gradients (as their amax) in the backward.
  virtual void observe(size_t /*site*/, SiteOperand /*operand*/, const T* /*x*/, int64_t /*n*/) {}
  virtual void observeAmax(size_t /*site*/, SiteOperand /*operand*/, double /*amax*/) {}
  /// An elementwise result x [rows, cols] of the model ("blocks.1" "ln1", "fc2" "input_grad",
  /// ...), for the first non-finite value (GEMM outputs and operands are checked by the sites);
  /// `inputs` (may be empty) names the op's inputs at a failing element.
  virtual void check(const std::string& /*where*/, const char* /*tensor*/, const T* /*x*/, int64_t /*rows*/,
                     int64_t /*cols*/, const OpInputs& /*inputs*/ = {}) {}
  /// The bias add y[i, :] + bias of Linear layer `where` [rows, cols], looked at before it is
  /// written (an overflowing sum is recorded with its two inputs, "fprop.output" and "bias").
  virtual void checkBiasAdd(const std::string& /*where*/, const T* /*y*/, const T* /*bias*/, int64_t /*rows*/,
                            int64_t /*cols*/) {}
};

/// Plain GEMMs in T, k ascending (the float64 reference of the gradient checks).
template <class T> class PlainLinearOps : public LinearOps<T> {
public:
  void linearForward(size_t site, const T* x, int64_t n, const T* w, int64_t in, int64_t out,
                     std::vector<T>& y) override;
  void linearBackward(size_t site, const T* g, std::vector<T>& gw, std::vector<T>* dx) override;

private:
  struct Saved {
    const T* x = nullptr;
    const T* w = nullptr;
    int64_t n = 0, in = 0, out = 0;
  };
  std::vector<Saved> saved_;
};

/// Float32 GEMMs (dense.h matmulF32: k ascending, one float32 accumulator per element, threaded),
/// forward only: a model as an FP32 run computes it, for evaluation and reference forwards.
/// linearBackward throws std::logic_error.
class Fp32LinearOps : public LinearOps<float> {
public:
  explicit Fp32LinearOps(int threads = 0) : threads_(threads) {}
  void linearForward(size_t site, const float* x, int64_t n, const float* w, int64_t in, int64_t out,
                     std::vector<float>& y) override;
  void linearBackward(size_t site, const float* g, std::vector<float>& gw, std::vector<float>* dx) override;

private:
  int threads_;
};

extern template class PlainLinearOps<float>;
extern template class PlainLinearOps<double>;

} // namespace fp8lab

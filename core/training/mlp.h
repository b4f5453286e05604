// FP8 Lab — the Fashion-MNIST classifier as a model of the training engine (model.h): a
// multi-layer perceptron built from the layer kinds of layers.h, one forward and one backward,
// with its Linear layers as operand sites fc1, fc2, ... (SiteTable::mlp) whose GEMMs run through
// LinearOps — the training run's sites (SiteLinearOps), float32 GEMMs (Fp32LinearOps) or plain
// float64 products for the whole-model gradient check (PlainLinearOps<double>).
//
//   x_1 = images [N, sizes[0]]
//   for each layer l = 1 .. L:      y_l = x_l · W_l + b_l        site fc<l>, W_l [in, out]
//                                   x_{l+1} = ReLU(y_l)          (not after the last layer)
//   loss = mean softmax cross-entropy of y_L against the labels (nn::softmaxCrossEntropy)
//
// Parameters, in order: "fc1.weight" [in, out], "fc1.bias" [out], "fc2.weight", ... Weights ~
// U(−√(6/fan_in), √(6/fan_in)) (He uniform) drawn in that order from TrainingRng(seed), biases 0.
// The first layer's input gradient (w.r.t. the images) is not computed: nothing uses it.
//
// The spike (trainer.h SpikeConfig) multiplies one layer's input in one forward, and its gradient
// by the same factor in the backward (x_l = factor · ReLU(y_{l−1}): the chain rule brings it back).
#pragma once

#include "training/model.h"
#include "training/sites.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace fp8lab {

/// The input of one Linear layer multiplied in the next forward (and its gradient in the backward):
/// element (row, col) of x_layer, every row / column where −1.
struct MlpSpike {
  int layer = -1; ///< 0-based Linear layer; −1: no spike
  int64_t row = -1, col = -1;
  float factor = 1.0f;
};

template <class T> class MlpModel {
public:
  /// `sizes` = {inputs, hidden..., classes} (at least 2 entries, each ≥ 1); parameters initialised
  /// from `seed` (He uniform, above). Throws std::invalid_argument for fewer than 2 sizes.
  MlpModel(std::vector<int> sizes, uint64_t seed);
  /// A model with given weights: kernel [in, out] and bias [out] per layer, in layer order.
  MlpModel(const std::vector<std::vector<T>>& kernels, const std::vector<std::vector<T>>& biases,
           std::vector<int> sizes);
  ~MlpModel();
  MlpModel(MlpModel&&) noexcept;

  const std::vector<int>& sizes() const;
  /// SiteTable::mlp(sizes): fc1, fc2, ...
  const SiteTable& sites() const;
  size_t layers() const;
  std::vector<Param<T>>& params();
  const std::vector<Param<T>>& params() const;
  Param<T>& weight(size_t layer);
  Param<T>& bias(size_t layer);

  /// Forward pass over x [rows, sizes[0]]: returns the sum of the cross-entropy over the rows
  /// (targets [rows], class ids; null: no loss, 0), in nats. `spike` applies to this forward and
  /// the next backward. Keeps what backward needs; logits() holds [rows, classes] afterwards.
  double forward(const T* x, const int32_t* targets, int64_t rows, LinearOps<T>& ops, const MlpSpike& spike = {});
  /// Backward of the last forward, for the mean loss over `count` rows: the bias gradients are
  /// added into Param::grad (zero them first with zeroGrad), the weight gradients written (each
  /// weight is used once).
  void backward(int64_t count, LinearOps<T>& ops);
  void zeroGrad();
  /// The logits of the last forward [rows, classes].
  const std::vector<T>& logits() const;
  /// The input of Linear layer `layer` < layers() in the last forward [rows, sizes[layer]] (0: the
  /// images; after the ReLU and any spike). Throws std::out_of_range for another layer.
  const std::vector<T>& layerInput(size_t layer) const;

private:
  struct Impl;
  std::unique_ptr<Impl> d;
};

extern template class MlpModel<float>;
extern template class MlpModel<double>;

} // namespace fp8lab

// FP8 Lab — the MLP as a model of the training engine (see mlp.h).
#include "training/mlp.h"

#include "training/layers.h"
#include "training/random.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace fp8lab {

template <class T> struct MlpModel<T>::Impl {
  std::vector<int> sizes;
  SiteTable table;
  std::vector<Param<T>> params;       // weight, bias per layer
  std::vector<std::vector<T>> xs, ys; // per layer: input [N, in] (after ReLU and any spike), output [N, out]
  std::vector<int32_t> targets;
  int64_t rows = 0;
  MlpSpike spike;

  void setUp(std::vector<int> s) {
    if (s.size() < 2) throw std::invalid_argument("an MLP needs at least an input and an output size");
    sizes = std::move(s);
    table = SiteTable::mlp(sizes);
    for (size_t l = 0; l + 1 < sizes.size(); ++l) {
      const std::string name = mlpLayerName(int64_t(l));
      const int64_t in = sizes[l], out = sizes[l + 1];
      Param<T> w, b;
      w.name = name + ".weight";
      w.shape = {in, out};
      w.value.assign(size_t(in * out), T(0));
      b.name = name + ".bias";
      b.shape = {out};
      b.value.assign(size_t(out), T(0));
      params.push_back(std::move(w));
      params.push_back(std::move(b));
    }
    for (Param<T>& p : params) {
      p.grad.assign(p.value.size(), T(0));
      p.m.assign(p.value.size(), T(0));
      p.v.assign(p.value.size(), T(0));
    }
    xs.resize(sizes.size() - 1);
    ys.resize(sizes.size() - 1);
  }
  size_t layers() const { return sizes.size() - 1; }
  bool spiked(size_t l) const { return spike.layer == int(l) && spike.layer >= 0; }
  void applySpike(std::vector<T>& x, int64_t cols) const {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        if ((spike.row < 0 || spike.row == i) && (spike.col < 0 || spike.col == j))
          x[size_t(i * cols + j)] *= T(spike.factor);
  }
  OpInputs spikeInputs() const {
    const float f = spike.factor;
    return [f](int64_t, int64_t, std::vector<std::string>& names, std::vector<float>& values) {
      names = {"spike_factor"};
      values = {f};
    };
  }
};

template <class T> MlpModel<T>::MlpModel(std::vector<int> sizes, uint64_t seed) : d(std::make_unique<Impl>()) {
  d->setUp(std::move(sizes));
  TrainingRng rng(seed);
  for (size_t l = 0; l < d->layers(); ++l) {
    const float bound = std::sqrt(6.0f / static_cast<float>(d->sizes[l]));
    for (T& v : d->params[2 * l].value) v = T(rng.uniform(-bound, bound));
  }
}

template <class T>
MlpModel<T>::MlpModel(const std::vector<std::vector<T>>& kernels, const std::vector<std::vector<T>>& biases,
                      std::vector<int> sizes)
    : d(std::make_unique<Impl>()) {
  d->setUp(std::move(sizes));
  if (kernels.size() != d->layers() || biases.size() != d->layers())
    throw std::invalid_argument("MLP weights: one kernel and one bias per layer expected");
  for (size_t l = 0; l < d->layers(); ++l) {
    if (kernels[l].size() != d->params[2 * l].value.size() || biases[l].size() != d->params[2 * l + 1].value.size())
      throw std::invalid_argument("MLP weights: " + mlpLayerName(int64_t(l)) + " does not match the layer sizes");
    d->params[2 * l].value = kernels[l];
    d->params[2 * l + 1].value = biases[l];
  }
}

template <class T> MlpModel<T>::~MlpModel() = default;
template <class T> MlpModel<T>::MlpModel(MlpModel&&) noexcept = default;

template <class T> const std::vector<int>& MlpModel<T>::sizes() const {
  return d->sizes;
}
template <class T> const SiteTable& MlpModel<T>::sites() const {
  return d->table;
}
template <class T> size_t MlpModel<T>::layers() const {
  return d->layers();
}
template <class T> std::vector<Param<T>>& MlpModel<T>::params() {
  return d->params;
}
template <class T> const std::vector<Param<T>>& MlpModel<T>::params() const {
  return d->params;
}
template <class T> Param<T>& MlpModel<T>::weight(size_t layer) {
  return d->params[2 * layer];
}
template <class T> Param<T>& MlpModel<T>::bias(size_t layer) {
  return d->params[2 * layer + 1];
}
template <class T> const std::vector<T>& MlpModel<T>::logits() const {
  return d->ys.back();
}

template <class T> void MlpModel<T>::zeroGrad() {
  for (Param<T>& p : d->params) std::fill(p.grad.begin(), p.grad.end(), T(0));
}

template <class T>
double MlpModel<T>::forward(const T* x, const int32_t* targets, int64_t rows, LinearOps<T>& ops,
                            const MlpSpike& spike) {
  Impl& m = *d;
  m.rows = rows;
  m.spike = spike;
  m.xs[0].assign(x, x + rows * m.sizes[0]);
  for (size_t l = 0; l < m.layers(); ++l) {
    const int64_t in = m.sizes[l], out = m.sizes[l + 1];
    const std::string& name = m.table[l].path;
    std::vector<T>& xl = m.xs[l];
    if (l > 0) {
      xl.resize(m.ys[l - 1].size());
      nn::reluForward(m.ys[l - 1].data(), xl.data(), int64_t(xl.size()));
    }
    // the images, or a spiked input (otherwise the input is the ReLU of a checked activation)
    if (m.spiked(l)) {
      m.applySpike(xl, in);
      ops.check(name, "input", xl.data(), rows, in, m.spikeInputs());
    } else if (l == 0) {
      ops.check(name, "input", xl.data(), rows, in);
    }
    ops.linearForward(l, xl.data(), rows, m.params[2 * l].value.data(), in, out, m.ys[l]);
    ops.checkBiasAdd(name, m.ys[l].data(), m.params[2 * l + 1].value.data(), rows, out);
    nn::biasForward(m.ys[l].data(), m.params[2 * l + 1].value.data(), rows, out);
  }
  if (!targets) {
    m.targets.clear();
    return 0;
  }
  m.targets.assign(targets, targets + rows);
  return nn::softmaxCrossEntropy<T>(m.ys.back().data(), targets, rows, m.sizes.back(), nullptr, rows);
}

template <class T> void MlpModel<T>::backward(int64_t count, LinearOps<T>& ops) {
  Impl& m = *d;
  if (m.targets.size() != size_t(m.rows)) throw std::logic_error("MlpModel::backward: the last forward had no targets");
  const size_t last = m.layers() - 1;
  const int64_t C = m.sizes.back();
  // the gradient of the mean loss w.r.t. the logits: (softmax − onehot) / count
  std::vector<T> g(size_t(m.rows * C));
  (void)nn::softmaxCrossEntropy<T>(m.ys[last].data(), m.targets.data(), m.rows, C, g.data(), count);
  const std::vector<T>& logits = m.ys[last];
  ops.check(m.table[last].path, "loss_grad", g.data(), m.rows, C,
            [&logits, C](int64_t i, int64_t j, std::vector<std::string>& names, std::vector<float>& values) {
              names = {"logit"};
              values = {float(logits[size_t(i * C + j)])};
            });
  std::vector<T> dx;
  for (size_t li = m.layers(); li-- > 0;) {
    const int64_t in = m.sizes[li], out = m.sizes[li + 1];
    const std::string& name = m.table[li].path;
    Param<T>& b = m.params[2 * li + 1];
    // bias gradient: Σ over the rows of the unquantized g
    nn::biasBackward(g.data(), b.grad.data(), m.rows, out);
    ops.check(name, "bias_grad", b.grad.data(), 1, out);
    const bool need_dx = li > 0;
    ops.linearBackward(li, g.data(), m.params[2 * li].grad, need_dx ? &dx : nullptr);
    if (!need_dx) break;
    if (m.spiked(li)) {
      m.applySpike(dx, in);
      ops.check(name, "input_grad", dx.data(), m.rows, in, m.spikeInputs());
    }
    // through the ReLU of the previous layer: zero where its pre-activation was ≤ 0
    nn::reluBackward(dx.data(), m.ys[li - 1].data(), dx.data(), int64_t(dx.size()));
    g.swap(dx);
  }
}

template <class T> const std::vector<T>& MlpModel<T>::layerInput(size_t layer) const {
  return d->xs.at(layer);
}

template class MlpModel<float>;
template class MlpModel<double>;

} // namespace fp8lab

// FP8 Lab — the pieces every model of the training engine shares (see model.h).
#include "training/model.h"

#include "training/dense.h"
#include "training/layers.h"

#include <stdexcept>

namespace fp8lab {

// ---- PlainLinearOps -------------------------------------------------------------------------

template <class T>
void PlainLinearOps<T>::linearForward(size_t site, const T* x, int64_t n, const T* w, int64_t in, int64_t out,
                                      std::vector<T>& y) {
  if (saved_.size() <= site) saved_.resize(site + 1);
  saved_[site] = Saved{x, w, n, in, out};
  y.resize(static_cast<size_t>(n * out));
  nn::matmul(x, w, y.data(), n, in, out);
}

template <class T>
void PlainLinearOps<T>::linearBackward(size_t site, const T* g, std::vector<T>& gw, std::vector<T>* dx) {
  const Saved& s = saved_.at(site);
  std::vector<T> xT(static_cast<size_t>(s.n * s.in)), wT(static_cast<size_t>(s.in * s.out));
  nn::transpose(s.x, xT.data(), s.n, s.in);
  gw.resize(static_cast<size_t>(s.in * s.out));
  nn::matmul(xT.data(), g, gw.data(), s.in, s.n, s.out);
  if (dx) {
    nn::transpose(s.w, wT.data(), s.in, s.out);
    dx->resize(static_cast<size_t>(s.n * s.in));
    nn::matmul(g, wT.data(), dx->data(), s.n, s.out, s.in);
  }
}

// ---- Fp32LinearOps ---------------------------------------------------------------------------

void Fp32LinearOps::linearForward(size_t, const float* x, int64_t n, const float* w, int64_t in, int64_t out,
                                  std::vector<float>& y) {
  y.resize(static_cast<size_t>(n * out));
  matmulF32(x, w, y.data(), n, in, out, threads_);
}

void Fp32LinearOps::linearBackward(size_t, const float*, std::vector<float>&, std::vector<float>*) {
  throw std::logic_error("Fp32LinearOps: forward only");
}

template class PlainLinearOps<float>;
template class PlainLinearOps<double>;

} // namespace fp8lab

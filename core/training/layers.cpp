// FP8 Lab — the layer kinds of the training engine (see layers.h).
#include "training/layers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fp8lab::nn {

template <class T> void matmul(const T* a, const T* b, T* c, int64_t m, int64_t k, int64_t n, bool accumulate) {
  if (!accumulate) std::fill(c, c + m * n, T(0));
  for (int64_t i = 0; i < m; ++i) {
    T* ci = c + i * n;
    for (int64_t p = 0; p < k; ++p) {
      const T x = a[i * k + p];
      const T* bp = b + p * n;
      for (int64_t j = 0; j < n; ++j) ci[j] += x * bp[j];
    }
  }
}

template <class T> void transpose(const T* in, T* out, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) out[j * m + i] = in[i * n + j];
}

// ---- activations

template <class T> void reluForward(const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::max(x[i], T(0));
}

template <class T> void reluBackward(const T* dy, const T* x, T* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > T(0) ? dy[i] : T(0);
}

namespace {
constexpr double kGeluC = 0.7978845608028654; // √(2/π)
constexpr double kGeluA = 0.044715;
} // namespace

template <class T> void geluForward(const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    const T u = T(kGeluC) * (v + T(kGeluA) * v * v * v);
    y[i] = T(0.5) * v * (T(1) + std::tanh(u));
  }
}

template <class T> void geluBackward(const T* dy, const T* x, T* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    const T u = T(kGeluC) * (v + T(kGeluA) * v * v * v);
    const T th = std::tanh(u);
    const T sech2 = T(1) - th * th;
    const T du = T(kGeluC) * (T(1) + T(3 * kGeluA) * v * v);
    dx[i] = dy[i] * (T(0.5) * (T(1) + th) + T(0.5) * v * sech2 * du);
  }
}

template <class T> void swigluForward(const T* gate, const T* up, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T g = gate[i];
    const T s = T(1) / (T(1) + std::exp(-g));
    y[i] = g * s * up[i];
  }
}

template <class T> void swigluBackward(const T* dy, const T* gate, const T* up, T* dgate, T* dup, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T g = gate[i];
    const T s = T(1) / (T(1) + std::exp(-g));
    const T silu = g * s;
    dup[i] = dy[i] * silu;
    dgate[i] = dy[i] * up[i] * (s + g * s * (T(1) - s)); // d silu/dg = σ + g·σ·(1 − σ)
  }
}

// ---- normalisation

template <class T>
void layerNormForward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, int64_t n, int64_t c,
                      double eps) {
  for (int64_t i = 0; i < n; ++i) {
    const T* xi = x + i * c;
    double s = 0;
    for (int64_t j = 0; j < c; ++j) s += double(xi[j]);
    const double mu = s / double(c);
    double v = 0;
    for (int64_t j = 0; j < c; ++j) {
      const double d = double(xi[j]) - mu;
      v += d * d;
    }
    const double r = 1.0 / std::sqrt(v / double(c) + eps);
    T* yi = y + i * c;
    for (int64_t j = 0; j < c; ++j) yi[j] = T((double(xi[j]) - mu) * r) * gamma[j] + beta[j];
    mean[i] = T(mu);
    rstd[i] = T(r);
  }
}

template <class T>
void layerNormBackward(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd, T* dx, T* dgamma,
                       T* dbeta, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i) {
    const T* dyi = dy + i * c;
    const T* xi = x + i * c;
    const double mu = double(mean[i]), r = double(rstd[i]);
    // x̂ = (x − μ)·rstd; dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) with g = dy·γ.
    double mg = 0, mgx = 0;
    for (int64_t j = 0; j < c; ++j) {
      const double xh = (double(xi[j]) - mu) * r;
      const double g = double(dyi[j]) * double(gamma[j]);
      mg += g;
      mgx += g * xh;
    }
    mg /= double(c);
    mgx /= double(c);
    T* dxi = dx + i * c;
    for (int64_t j = 0; j < c; ++j) {
      const double xh = (double(xi[j]) - mu) * r;
      const double g = double(dyi[j]) * double(gamma[j]);
      dxi[j] = T(r * (g - mg - xh * mgx));
      dgamma[j] += T(double(dyi[j]) * xh);
      dbeta[j] += dyi[j];
    }
  }
}

template <class T> void rmsNormForward(const T* x, const T* gamma, T* y, T* rstd, int64_t n, int64_t c, double eps) {
  for (int64_t i = 0; i < n; ++i) {
    const T* xi = x + i * c;
    double s = 0;
    for (int64_t j = 0; j < c; ++j) s += double(xi[j]) * double(xi[j]);
    const double r = 1.0 / std::sqrt(s / double(c) + eps);
    T* yi = y + i * c;
    for (int64_t j = 0; j < c; ++j) yi[j] = T(double(xi[j]) * r) * gamma[j];
    rstd[i] = T(r);
  }
}

template <class T>
void rmsNormBackward(const T* dy, const T* x, const T* gamma, const T* rstd, T* dx, T* dgamma, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i) {
    const T* dyi = dy + i * c;
    const T* xi = x + i * c;
    const double r = double(rstd[i]);
    // x̂ = x·rstd; dx = rstd·(g − x̂·mean(g·x̂)) with g = dy·γ.
    double mgx = 0;
    for (int64_t j = 0; j < c; ++j) mgx += double(dyi[j]) * double(gamma[j]) * double(xi[j]) * r;
    mgx /= double(c);
    T* dxi = dx + i * c;
    for (int64_t j = 0; j < c; ++j) {
      const double xh = double(xi[j]) * r;
      dxi[j] = T(r * (double(dyi[j]) * double(gamma[j]) - xh * mgx));
      dgamma[j] += T(double(dyi[j]) * xh);
    }
  }
}

// ---- embeddings, residual, bias

template <class T>
void embeddingForward(const int32_t* tokens, const T* wte, const T* wpe, T* out, int64_t batch, int64_t t, int64_t c) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < t; ++p) {
      const int64_t row = b * t + p;
      const T* e = wte + int64_t(tokens[row]) * c;
      T* o = out + row * c;
      if (wpe) {
        const T* q = wpe + p * c;
        for (int64_t j = 0; j < c; ++j) o[j] = e[j] + q[j];
      } else {
        std::copy(e, e + c, o);
      }
    }
}

template <class T>
void embeddingBackward(const T* dout, const int32_t* tokens, T* dwte, T* dwpe, int64_t batch, int64_t t, int64_t c) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < t; ++p) {
      const int64_t row = b * t + p;
      const T* d = dout + row * c;
      T* e = dwte + int64_t(tokens[row]) * c;
      for (int64_t j = 0; j < c; ++j) e[j] += d[j];
      if (dwpe) {
        T* q = dwpe + p * c;
        for (int64_t j = 0; j < c; ++j) q[j] += d[j];
      }
    }
}

template <class T> void residualForward(const T* a, const T* b, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <class T> void biasForward(T* y, const T* bias, int64_t rows, int64_t c) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < c; ++j) y[i * c + j] += bias[j];
}

template <class T> void biasBackward(const T* dy, T* dbias, int64_t rows, int64_t c) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < c; ++j) dbias[j] += dy[i * c + j];
}

// ---- attention

template <class T>
void attentionForward(const T* qkv, T* out, T* probs, int64_t batch, int64_t t, int64_t c, int64_t heads,
                      const std::function<void(T* row, int64_t n)>& p_cast) {
  const int64_t hs = c / heads;
  const double scale = 1.0 / std::sqrt(double(hs));
  std::vector<double> row(static_cast<size_t>(t));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t1 = 0; t1 < t; ++t1) {
        const T* q = qkv + (b * t + t1) * 3 * c + h * hs;
        double mx = -INFINITY;
        for (int64_t t2 = 0; t2 <= t1; ++t2) {
          const T* k = qkv + (b * t + t2) * 3 * c + c + h * hs;
          T dot = 0;
          for (int64_t i = 0; i < hs; ++i) dot += q[i] * k[i];
          row[size_t(t2)] = double(dot) * scale;
          mx = std::max(mx, row[size_t(t2)]);
        }
        double se = 0;
        for (int64_t t2 = 0; t2 <= t1; ++t2) se += std::exp(row[size_t(t2)] - mx);
        T* p = probs + ((b * heads + h) * t + t1) * t;
        for (int64_t t2 = 0; t2 < t; ++t2) p[t2] = t2 <= t1 ? T(std::exp(row[size_t(t2)] - mx) / se) : T(0);
        if (p_cast) p_cast(p, t1 + 1);
        T* o = out + (b * t + t1) * c + h * hs;
        std::fill(o, o + hs, T(0));
        for (int64_t t2 = 0; t2 <= t1; ++t2) {
          const T* v = qkv + (b * t + t2) * 3 * c + 2 * c + h * hs;
          for (int64_t i = 0; i < hs; ++i) o[i] += p[t2] * v[i];
        }
      }
}

template <class T>
void attentionBackward(const T* dout, const T* qkv, const T* probs, T* dqkv, int64_t batch, int64_t t, int64_t c,
                       int64_t heads, double* ds_amax) {
  double dsmax = 0;
  const int64_t hs = c / heads;
  const T scale = T(1.0 / std::sqrt(double(hs)));
  std::fill(dqkv, dqkv + batch * t * 3 * c, T(0));
  std::vector<T> dp(static_cast<size_t>(t)), ds(static_cast<size_t>(t));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t1 = 0; t1 < t; ++t1) {
        const T* p = probs + ((b * heads + h) * t + t1) * t;
        const T* d = dout + (b * t + t1) * c + h * hs;
        // O = P·V: dP[t2] = dO·V[t2], dV[t2] += P[t2]·dO.
        for (int64_t t2 = 0; t2 <= t1; ++t2) {
          const T* v = qkv + (b * t + t2) * 3 * c + 2 * c + h * hs;
          T* dv = dqkv + (b * t + t2) * 3 * c + 2 * c + h * hs;
          T s = 0;
          for (int64_t i = 0; i < hs; ++i) {
            s += d[i] * v[i];
            dv[i] += p[t2] * d[i];
          }
          dp[size_t(t2)] = s;
        }
        // P = softmax(S): dS = P ∘ (dP − Σ P·dP).
        double dot = 0;
        for (int64_t t2 = 0; t2 <= t1; ++t2) dot += double(p[t2]) * double(dp[size_t(t2)]);
        for (int64_t t2 = 0; t2 <= t1; ++t2) {
          ds[size_t(t2)] = T(double(p[t2]) * (double(dp[size_t(t2)]) - dot));
          dsmax = std::max(dsmax, std::fabs(double(ds[size_t(t2)])));
        }
        // S = Q·Kᵀ·scale: dQ += dS[t2]·K[t2]·scale, dK[t2] += dS[t2]·Q·scale.
        const T* q = qkv + (b * t + t1) * 3 * c + h * hs;
        T* dq = dqkv + (b * t + t1) * 3 * c + h * hs;
        for (int64_t t2 = 0; t2 <= t1; ++t2) {
          const T* k = qkv + (b * t + t2) * 3 * c + c + h * hs;
          T* dk = dqkv + (b * t + t2) * 3 * c + c + h * hs;
          const T g = ds[size_t(t2)] * scale;
          for (int64_t i = 0; i < hs; ++i) {
            dq[i] += g * k[i];
            dk[i] += g * q[i];
          }
        }
      }
  if (ds_amax) *ds_amax = dsmax;
}

// ---- loss

template <class T>
double softmaxCrossEntropy(const T* logits, const int32_t* targets, int64_t rows, int64_t classes, T* dlogits,
                           int64_t scale_rows, int64_t* correct, double running) {
  double loss = running;
  for (int64_t i = 0; i < rows; ++i) {
    const T* z = logits + i * classes;
    const int32_t label = targets[i];
    if (label < 0) {
      if (dlogits) std::fill(dlogits + i * classes, dlogits + (i + 1) * classes, T(0));
      continue;
    }
    const T m = *std::max_element(z, z + classes);
    double se = 0;
    for (int64_t j = 0; j < classes; ++j) se += std::exp(static_cast<double>(z[j] - m));
    loss += std::log(se) - static_cast<double>(z[label] - m);
    if (correct && std::max_element(z, z + classes) - z == label) ++*correct;
    if (dlogits)
      for (int64_t j = 0; j < classes; ++j) {
        const double p = std::exp(static_cast<double>(z[j] - m)) / se;
        dlogits[i * classes + j] = static_cast<T>((p - (j == label ? 1.0 : 0.0)) / static_cast<double>(scale_rows));
      }
  }
  return loss;
}

#define FP8LAB_NN_INSTANTIATE(T)                                                                                       \
  template void matmul<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, bool);                                    \
  template void transpose<T>(const T*, T*, int64_t, int64_t);                                                          \
  template void reluForward<T>(const T*, T*, int64_t);                                                                 \
  template void reluBackward<T>(const T*, const T*, T*, int64_t);                                                      \
  template void geluForward<T>(const T*, T*, int64_t);                                                                 \
  template void geluBackward<T>(const T*, const T*, T*, int64_t);                                                      \
  template void swigluForward<T>(const T*, const T*, T*, int64_t);                                                     \
  template void swigluBackward<T>(const T*, const T*, const T*, T*, T*, int64_t);                                      \
  template void layerNormForward<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, double);               \
  template void layerNormBackward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t);  \
  template void rmsNormForward<T>(const T*, const T*, T*, T*, int64_t, int64_t, double);                               \
  template void rmsNormBackward<T>(const T*, const T*, const T*, const T*, T*, T*, int64_t, int64_t);                  \
  template void embeddingForward<T>(const int32_t*, const T*, const T*, T*, int64_t, int64_t, int64_t);                \
  template void embeddingBackward<T>(const T*, const int32_t*, T*, T*, int64_t, int64_t, int64_t);                     \
  template void residualForward<T>(const T*, const T*, T*, int64_t);                                                   \
  template void biasForward<T>(T*, const T*, int64_t, int64_t);                                                        \
  template void biasBackward<T>(const T*, T*, int64_t, int64_t);                                                       \
  template void attentionForward<T>(const T*, T*, T*, int64_t, int64_t, int64_t, int64_t,                              \
                                    const std::function<void(T*, int64_t)>&);                                          \
  template void attentionBackward<T>(const T*, const T*, const T*, T*, int64_t, int64_t, int64_t, int64_t, double*);   \
  template double softmaxCrossEntropy<T>(const T*, const int32_t*, int64_t, int64_t, T*, int64_t, int64_t*, double);

FP8LAB_NN_INSTANTIATE(float)
FP8LAB_NN_INSTANTIATE(double)

} // namespace fp8lab::nn

// FP8 Lab — the layer kinds of the training engine (see layers.h).
#include "training/layers.h"

#include "common/worker_pool.h"
#include "training/dense.h"
#include "training/exp.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace fp8lab::nn {

namespace {

/// Runs f(lo, hi) over [0, n) cut into pieces of `grain`, each piece a job of the pool's
/// parallelJobs (worker_pool.h; `threads` 0 = all cores). Element-wise and row-wise loops only:
/// what a piece computes does not depend on which worker runs it or on the other pieces, so the
/// result is the same for every thread count.
template <class F> void parallelRanges(int64_t n, int threads, int64_t grain, F f) {
  const int64_t pieces = (n + grain - 1) / grain;
  parallelJobs(pieces, threads, {}, {}, 0.0, 1.0, [&](int64_t p) { f(p * grain, std::min(n, (p + 1) * grain)); });
}

/// Elements per piece of an element-wise loop, and rows per piece of a row-wise one: enough work
/// (tens of microseconds) that handing it to a worker costs little beside it.
constexpr int64_t kElementGrain = 16384;
int64_t rowGrain(int64_t c) {
  return std::max<int64_t>(1, kElementGrain / std::max<int64_t>(c, 1));
}

} // namespace

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

namespace {
template <class T> T fastTanh(T u) {
  if constexpr (std::is_same_v<T, double>) {
    return std::tanh(u);
  } else {
    const float e = expF32(-2.0f * std::fabs(u));
    return std::copysign((1.0f - e) / (1.0f + e), u);
  }
}
} // namespace

/// Elements per chunk of the element-wise loops that take e^x of a whole chunk at once, on the
/// stack of the worker running the piece.
constexpr int64_t kExpChunk = 512;

/// v[i] = e^v[i] for i < n: float32 through expF32's vector kernel, float64 through std::exp.
inline void expInPlace(float* v, int64_t n) {
  expF32(v, v, n);
}
inline void expInPlace(double* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = std::exp(v[i]);
}

template <class T> void geluForward(const T* x, T* y, int64_t n, T* th, int threads) {
  parallelRanges(n, threads, kElementGrain, [&](int64_t lo, int64_t hi) {
    if constexpr (std::is_same_v<T, float>) {
      // fastTanh's float formula, its e^(−2|u|) taken for a chunk at a time.
      float u[kExpChunk], e[kExpChunk];
      for (int64_t c0 = lo; c0 < hi; c0 += kExpChunk) {
        const int64_t m = std::min(kExpChunk, hi - c0);
        for (int64_t i = 0; i < m; ++i) {
          const float v = x[c0 + i];
          u[i] = float(kGeluC) * (v + float(kGeluA) * v * v * v);
          e[i] = -2.0f * std::fabs(u[i]);
        }
        expF32(e, e, m);
        for (int64_t i = 0; i < m; ++i) {
          const float t = std::copysign((1.0f - e[i]) / (1.0f + e[i]), u[i]);
          if (th) th[c0 + i] = t;
          y[c0 + i] = 0.5f * x[c0 + i] * (1.0f + t);
        }
      }
    } else {
      for (int64_t i = lo; i < hi; ++i) {
        const T v = x[i];
        const T u = T(kGeluC) * (v + T(kGeluA) * v * v * v);
        const T t = fastTanh(u);
        if (th) th[i] = t;
        y[i] = T(0.5) * v * (T(1) + t);
      }
    }
  });
}

template <class T> void geluBackward(const T* dy, const T* x, T* dx, int64_t n, const T* th, int threads) {
  parallelRanges(n, threads, kElementGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const T v = x[i];
      const T t = th ? th[i] : fastTanh(T(kGeluC) * (v + T(kGeluA) * v * v * v));
      const T sech2 = T(1) - t * t;
      const T du = T(kGeluC) * (T(1) + T(3 * kGeluA) * v * v);
      dx[i] = dy[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * sech2 * du);
    }
  });
}

/// s[i] = σ(g[i]) = 1 / (1 + e^(−g[i])) for i < m (m ≤ kExpChunk).
template <class T> void sigmoidChunk(const T* g, T* s, int64_t m) {
  for (int64_t i = 0; i < m; ++i) s[i] = -g[i];
  expInPlace(s, m);
  for (int64_t i = 0; i < m; ++i) s[i] = T(1) / (T(1) + s[i]);
}

template <class T> void swigluForward(const T* gate, const T* up, T* y, int64_t n, int threads) {
  parallelRanges(n, threads, kElementGrain, [&](int64_t lo, int64_t hi) {
    T sig[kExpChunk];
    for (int64_t c0 = lo; c0 < hi; c0 += kExpChunk) {
      const int64_t m = std::min(kExpChunk, hi - c0);
      sigmoidChunk(gate + c0, sig, m);
      for (int64_t i = 0; i < m; ++i) {
        const T g = gate[c0 + i];
        y[c0 + i] = g * sig[i] * up[c0 + i];
      }
    }
  });
}

template <class T>
void swigluBackward(const T* dy, const T* gate, const T* up, T* dgate, T* dup, int64_t n, int threads) {
  parallelRanges(n, threads, kElementGrain, [&](int64_t lo, int64_t hi) {
    T sig[kExpChunk];
    for (int64_t c0 = lo; c0 < hi; c0 += kExpChunk) {
      const int64_t m = std::min(kExpChunk, hi - c0);
      sigmoidChunk(gate + c0, sig, m);
      for (int64_t j = 0; j < m; ++j) {
        const int64_t i = c0 + j;
        const T g = gate[i];
        const T s = sig[j];
        const T silu = g * s;
        dup[i] = dy[i] * silu;
        dgate[i] = dy[i] * up[i] * (s + g * s * (T(1) - s)); // d silu/dg = σ + g·σ·(1 − σ)
      }
    }
  });
}

// ---- normalisation

template <class T>
void layerNormForward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, int64_t n, int64_t c,
                      double eps, int threads) {
  parallelRanges(n, threads, rowGrain(c), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
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
  });
}

template <class T>
void layerNormBackward(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd, T* dx, T* dgamma,
                       T* dbeta, int64_t n, int64_t c, int threads) {
  // dx row by row; then dgamma and dbeta column by column, each summed over the rows in order.
  parallelRanges(n, threads, rowGrain(c), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
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
      }
    }
  });
  parallelRanges(c, n * c >= 2 * kElementGrain ? threads : 1, 16, [&](int64_t j0, int64_t j1) {
    for (int64_t i = 0; i < n; ++i) {
      const T* dyi = dy + i * c;
      const T* xi = x + i * c;
      const double mu = double(mean[i]), r = double(rstd[i]);
      for (int64_t j = j0; j < j1; ++j) {
        const double xh = (double(xi[j]) - mu) * r;
        dgamma[j] += T(double(dyi[j]) * xh);
        dbeta[j] += dyi[j];
      }
    }
  });
}

template <class T>
void rmsNormForward(const T* x, const T* gamma, T* y, T* rstd, int64_t n, int64_t c, double eps, int threads) {
  parallelRanges(n, threads, rowGrain(c), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const T* xi = x + i * c;
      double s = 0;
      for (int64_t j = 0; j < c; ++j) s += double(xi[j]) * double(xi[j]);
      const double r = 1.0 / std::sqrt(s / double(c) + eps);
      T* yi = y + i * c;
      for (int64_t j = 0; j < c; ++j) yi[j] = T(double(xi[j]) * r) * gamma[j];
      rstd[i] = T(r);
    }
  });
}

template <class T>
void rmsNormBackward(const T* dy, const T* x, const T* gamma, const T* rstd, T* dx, T* dgamma, int64_t n, int64_t c,
                     int threads) {
  parallelRanges(n, threads, rowGrain(c), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
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
      }
    }
  });
  parallelRanges(c, n * c >= 2 * kElementGrain ? threads : 1, 16, [&](int64_t j0, int64_t j1) {
    for (int64_t i = 0; i < n; ++i) {
      const T* dyi = dy + i * c;
      const T* xi = x + i * c;
      const double r = double(rstd[i]);
      for (int64_t j = j0; j < j1; ++j) dgamma[j] += T(double(dyi[j]) * (double(xi[j]) * r));
    }
  });
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

template <class T> void residualForward(const T* a, const T* b, T* out, int64_t n, int threads) {
  parallelRanges(n, threads, 4 * kElementGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = a[i] + b[i];
  });
}

template <class T> void biasForward(T* y, const T* bias, int64_t rows, int64_t c, int threads) {
  parallelRanges(rows, threads, 4 * rowGrain(c), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      for (int64_t j = 0; j < c; ++j) y[i * c + j] += bias[j];
  });
}

template <class T> void biasBackward(const T* dy, T* dbias, int64_t rows, int64_t c, int threads) {
  // each column summed over the rows in order; columns split between the workers
  parallelRanges(c, rows * c >= 4 * kElementGrain ? threads : 1, 16, [&](int64_t j0, int64_t j1) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = j0; j < j1; ++j) dbias[j] += dy[i * c + j];
  });
}

// ---- attention

namespace {

// The per-(batch, head) attention kernels. Every sum runs in the order the formulas of layers.h
// give (the dot products over the head's channels ascending, the softmax sums in double over the
// keys ascending); the loops are arranged so that the innermost one runs over independent sums —
// the keys of a score row through Kᵀ, or the channels of a head — and the float32 versions are
// compiled for AVX-512, AVX2 and baseline (this file is built without fused multiply-adds), each
// giving the same bits.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define FP8LAB_NN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FP8LAB_NN_CLONES
#endif

/// Keys (or channels) a register block of the attention kernels holds: one AVX-512 vector of
/// float32. Kᵀ and Vᵀ rows are padded with zeros to a multiple of it.
constexpr int64_t kLanes = 16;
int64_t paddedKeys(int64_t t) {
  return (t + kLanes - 1) / kLanes * kLanes;
}

/// out[l] = Σ_i a[i]·m[i·ld + l] for the kLanes columns l of m, i ascending from +0: kLanes
/// independent dot products, their partial sums in registers.
template <class T>
inline __attribute__((always_inline)) void dotColumns(const T* a, const T* m, int64_t ld, int64_t len, T* out) {
  T acc[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) acc[l] = T(0);
  for (int64_t i = 0; i < len; ++i) {
    const T x = a[i];
    const T* mi = m + i * ld;
    for (int64_t l = 0; l < kLanes; ++l) acc[l] = acc[l] + x * mi[l];
  }
  for (int64_t l = 0; l < kLanes; ++l) out[l] = acc[l];
}

/// o[i] = Σ_{r = from}^{to − 1} w[r·ws]·v[r·hs + i] for every channel i, r ascending from +0: a
/// row (ws = 1) or column (ws = row length) of P or G times the rows of V, K, dO or Q.
template <class T>
inline __attribute__((always_inline)) void weightedRowsFrom(const T* w, int64_t ws, const T* v, int64_t from,
                                                            int64_t to, int64_t hs, T* o) {
  int64_t i0 = 0;
  for (; i0 + kLanes <= hs; i0 += kLanes) {
    T acc[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) acc[l] = T(0);
    for (int64_t r = from; r < to; ++r) {
      const T x = w[r * ws];
      const T* vr = v + r * hs + i0;
      for (int64_t l = 0; l < kLanes; ++l) acc[l] = acc[l] + x * vr[l];
    }
    for (int64_t l = 0; l < kLanes; ++l) o[i0 + l] = acc[l];
  }
  for (int64_t i = i0; i < hs; ++i) {
    T acc = T(0);
    for (int64_t r = from; r < to; ++r) acc = acc + w[r * ws] * v[r * hs + i];
    o[i] = acc;
  }
}

/// One (batch, head) of the causal attention forward: Q, V [t, hs] and Kᵀ [hs, paddedKeys(t)]
/// contiguous copies; writes P [t, t] and O [t, hs]. `row` holds paddedKeys(t) scores.
template <class T>
inline __attribute__((always_inline)) void attendOneBody(const T* q, const T* kt, const T* v, T* p, T* o, int64_t t,
                                                         int64_t hs, double scale,
                                                         const std::function<void(T*, int64_t)>& p_cast, T* row) {
  const int64_t tp = paddedKeys(t);
  for (int64_t t1 = 0; t1 < t; ++t1) {
    const T* qi = q + t1 * hs;
    const int64_t keys = t1 + 1;
    // S[t1, t2] = Σ_i Q[t1, i]·K[t2, i], i ascending, kLanes keys t2 at a time.
    for (int64_t t0 = 0; t0 < keys; t0 += kLanes) dotColumns(qi, kt + t0, tp, hs, row + t0);
    T mx = -std::numeric_limits<T>::infinity();
    for (int64_t t2 = 0; t2 < keys; ++t2) {
      row[t2] = T(double(row[t2]) * scale);
      mx = std::max(mx, row[t2]);
    }
    T* pi = p + t1 * t;
    double se = 0;
    for (int64_t t2 = 0; t2 < keys; ++t2) row[t2] = row[t2] - mx;
    expInPlace(row, keys);
    for (int64_t t2 = 0; t2 < keys; ++t2) se += double(row[t2]);
    const T inv = T(1.0 / se);
    for (int64_t t2 = 0; t2 < keys; ++t2) pi[t2] = row[t2] * inv;
    for (int64_t t2 = keys; t2 < t; ++t2) pi[t2] = T(0);
    if (p_cast) p_cast(pi, keys);
    weightedRowsFrom(pi, 1, v, 0, keys, hs, o + t1 * hs);
  }
}

FP8LAB_NN_CLONES void attendOne(const float* q, const float* kt, const float* v, float* p, float* o, int64_t t,
                                int64_t hs, double scale, const std::function<void(float*, int64_t)>& p_cast,
                                float* row) {
  attendOneBody(q, kt, v, p, o, t, hs, scale, p_cast, row);
}
void attendOne(const double* q, const double* kt, const double* v, double* p, double* o, int64_t t, int64_t hs,
               double scale, const std::function<void(double*, int64_t)>& p_cast, double* row) {
  attendOneBody(q, kt, v, p, o, t, hs, scale, p_cast, row);
}

/// One (batch, head) of the attention backward: Q, K, dO [t, hs] and Vᵀ [hs, paddedKeys(t)];
/// P [t, t]; writes dQ, dK, dV [t, hs]; returns max |dS|. Scratch: dp [paddedKeys(t)], g
/// [t, paddedKeys(t)].
template <class T>
inline __attribute__((always_inline)) double attendBackOneBody(const T* q, const T* k, const T* vt, const T* d,
                                                               const T* P, T* dq, T* dk, T* dv, int64_t t, int64_t hs,
                                                               T scale, T* dp, T* g) {
  const int64_t tp = paddedKeys(t);
  double mx = 0;
  for (int64_t t1 = 0; t1 < t; ++t1) {
    const T* p = P + t1 * t;
    const T* di = d + t1 * hs;
    T* gi = g + t1 * tp;
    const int64_t keys = t1 + 1;
    // O = P·V: dP[t2] = Σ_i dO[i]·V[t2, i] (i ascending, every key at once).
    for (int64_t t0 = 0; t0 < keys; t0 += kLanes) dotColumns(di, vt + t0, tp, hs, dp + t0);
    // P = softmax(S): dS = P ∘ (dP − Σ P·dP); G = dS·scale, the weight of S = Q·Kᵀ·scale.
    double dot = 0;
    for (int64_t t2 = 0; t2 < keys; ++t2) dot += double(p[t2]) * double(dp[t2]);
    for (int64_t t2 = 0; t2 < keys; ++t2) {
      const T ds = T(double(p[t2]) * (double(dp[t2]) - dot));
      mx = std::max(mx, std::fabs(double(ds)));
      gi[t2] = ds * scale;
    }
    // dQ[t1] = Σ_{t2 ≤ t1} G[t1, t2]·K[t2], t2 ascending from +0.
    weightedRowsFrom(gi, 1, k, 0, keys, hs, dq + t1 * hs);
  }
  // dV[t2] = Σ_{t1 ≥ t2} P[t1, t2]·dO[t1] and dK[t2] = Σ_{t1 ≥ t2} G[t1, t2]·Q[t1], t1 ascending
  // from +0: the order in which the queries reach key t2.
  for (int64_t t2 = 0; t2 < t; ++t2) {
    weightedRowsFrom(P + t2, t, d, t2, t, hs, dv + t2 * hs);
    weightedRowsFrom(g + t2, tp, q, t2, t, hs, dk + t2 * hs);
  }
  return mx;
}

FP8LAB_NN_CLONES double attendBackOne(const float* q, const float* k, const float* vt, const float* d, const float* P,
                                      float* dq, float* dk, float* dv, int64_t t, int64_t hs, float scale, float* dp,
                                      float* g) {
  return attendBackOneBody(q, k, vt, d, P, dq, dk, dv, t, hs, scale, dp, g);
}
double attendBackOne(const double* q, const double* k, const double* vt, const double* d, const double* P, double* dq,
                     double* dk, double* dv, int64_t t, int64_t hs, double scale, double* dp, double* g) {
  return attendBackOneBody(q, k, vt, d, P, dq, dk, dv, t, hs, scale, dp, g);
}

} // namespace

template <class T>
void attentionForward(const T* qkv, T* out, T* probs, int64_t batch, int64_t t, int64_t c, int64_t heads,
                      const std::function<void(T* row, int64_t n)>& p_cast, int threads) {
  const int64_t hs = c / heads;
  const double scale = 1.0 / std::sqrt(double(hs));
  parallelJobs(batch * heads, threads, {}, {}, 0.0, 1.0, [&](int64_t bh) {
    const int64_t b = bh / heads, h = bh % heads;
    const size_t th = static_cast<size_t>(t * hs);
    const int64_t tp = paddedKeys(t);
    std::vector<T> q(th), kt(static_cast<size_t>(hs * tp), T(0)), v(th), o(th), row(static_cast<size_t>(tp));
    for (int64_t i = 0; i < t; ++i) {
      const T* src = qkv + (b * t + i) * 3 * c + h * hs;
      std::copy_n(src, hs, q.begin() + i * hs);
      for (int64_t j = 0; j < hs; ++j) kt[size_t(j * tp + i)] = src[c + j];
      std::copy_n(src + 2 * c, hs, v.begin() + i * hs);
    }
    attendOne(q.data(), kt.data(), v.data(), probs + bh * t * t, o.data(), t, hs, scale, p_cast, row.data());
    for (int64_t i = 0; i < t; ++i) std::copy_n(o.begin() + i * hs, hs, out + (b * t + i) * c + h * hs);
  });
}

template <class T>
void attentionBackward(const T* dout, const T* qkv, const T* probs, T* dqkv, int64_t batch, int64_t t, int64_t c,
                       int64_t heads, double* ds_amax, int threads) {
  const int64_t hs = c / heads;
  const T scale = T(1.0 / std::sqrt(double(hs)));
  std::vector<double> amax(size_t(batch * heads), 0.0);
  parallelJobs(batch * heads, threads, {}, {}, 0.0, 1.0, [&](int64_t bh) {
    const int64_t b = bh / heads, h = bh % heads;
    const size_t th = static_cast<size_t>(t * hs);
    const int64_t tp = paddedKeys(t);
    std::vector<T> q(th), k(th), vt(static_cast<size_t>(hs * tp), T(0)), d(th), dq(th), dk(th), dv(th);
    std::vector<T> dp(static_cast<size_t>(tp)), g(static_cast<size_t>(t * tp));
    for (int64_t i = 0; i < t; ++i) {
      const T* src = qkv + (b * t + i) * 3 * c + h * hs;
      std::copy_n(src, hs, q.begin() + i * hs);
      std::copy_n(src + c, hs, k.begin() + i * hs);
      for (int64_t j = 0; j < hs; ++j) vt[size_t(j * tp + i)] = src[2 * c + j];
      std::copy_n(dout + (b * t + i) * c + h * hs, hs, d.begin() + i * hs);
    }
    const double mx = attendBackOne(q.data(), k.data(), vt.data(), d.data(), probs + bh * t * t, dq.data(), dk.data(),
                                    dv.data(), t, hs, scale, dp.data(), g.data());
    amax[size_t(bh)] = mx;
    for (int64_t i = 0; i < t; ++i) {
      T* dst = dqkv + (b * t + i) * 3 * c + h * hs;
      std::copy_n(dq.begin() + i * hs, hs, dst);
      std::copy_n(dk.begin() + i * hs, hs, dst + c);
      std::copy_n(dv.begin() + i * hs, hs, dst + 2 * c);
    }
  });
  if (ds_amax) *ds_amax = *std::max_element(amax.begin(), amax.end());
}

// ---- loss

template <class T>
double softmaxCrossEntropy(const T* logits, const int32_t* targets, int64_t rows, int64_t classes, T* dlogits,
                           int64_t scale_rows, int64_t* correct, double running, int threads) {
  // Rows in parallel, each row's loss kept; then the losses summed in row order from `running`.
  std::vector<double> row_loss(static_cast<size_t>(rows), 0.0);
  std::vector<uint8_t> row_correct(correct ? static_cast<size_t>(rows) : 0, 0);
  parallelRanges(rows, threads, rowGrain(4 * classes), [&](int64_t lo, int64_t hi) {
    std::vector<double> e(static_cast<size_t>(classes));
    for (int64_t i = lo; i < hi; ++i) {
      const T* z = logits + i * classes;
      const int32_t label = targets[i];
      if (label < 0) {
        if (dlogits) std::fill(dlogits + i * classes, dlogits + (i + 1) * classes, T(0));
        continue;
      }
      const T m = *std::max_element(z, z + classes);
      double se = 0;
      for (int64_t j = 0; j < classes; ++j) e[size_t(j)] = static_cast<double>(z[j] - m);
      expF64(e.data(), e.data(), classes);
      for (int64_t j = 0; j < classes; ++j) se += e[size_t(j)];
      row_loss[size_t(i)] = std::log(se) - static_cast<double>(z[label] - m);
      if (correct && std::max_element(z, z + classes) - z == label) row_correct[size_t(i)] = 1;
      if (dlogits)
        for (int64_t j = 0; j < classes; ++j) {
          const double p = e[size_t(j)] / se;
          dlogits[i * classes + j] = static_cast<T>((p - (j == label ? 1.0 : 0.0)) / static_cast<double>(scale_rows));
        }
    }
  });
  double loss = running;
  for (int64_t i = 0; i < rows; ++i)
    if (targets[i] >= 0) loss += row_loss[size_t(i)];
  if (correct)
    for (uint8_t c : row_correct) *correct += c;
  return loss;
}

#define FP8LAB_NN_INSTANTIATE(T)                                                                                       \
  template void matmul<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, bool);                                    \
  template void transpose<T>(const T*, T*, int64_t, int64_t);                                                          \
  template void reluForward<T>(const T*, T*, int64_t);                                                                 \
  template void reluBackward<T>(const T*, const T*, T*, int64_t);                                                      \
  template void geluForward<T>(const T*, T*, int64_t, T*, int);                                                        \
  template void geluBackward<T>(const T*, const T*, T*, int64_t, const T*, int);                                       \
  template void swigluForward<T>(const T*, const T*, T*, int64_t, int);                                                \
  template void swigluBackward<T>(const T*, const T*, const T*, T*, T*, int64_t, int);                                 \
  template void layerNormForward<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, double, int);          \
  template void layerNormBackward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t,   \
                                     int);                                                                             \
  template void rmsNormForward<T>(const T*, const T*, T*, T*, int64_t, int64_t, double, int);                          \
  template void rmsNormBackward<T>(const T*, const T*, const T*, const T*, T*, T*, int64_t, int64_t, int);             \
  template void embeddingForward<T>(const int32_t*, const T*, const T*, T*, int64_t, int64_t, int64_t);                \
  template void embeddingBackward<T>(const T*, const int32_t*, T*, T*, int64_t, int64_t, int64_t);                     \
  template void residualForward<T>(const T*, const T*, T*, int64_t, int);                                              \
  template void biasForward<T>(T*, const T*, int64_t, int64_t, int);                                                   \
  template void biasBackward<T>(const T*, T*, int64_t, int64_t, int);                                                  \
  template void attentionForward<T>(const T*, T*, T*, int64_t, int64_t, int64_t, int64_t,                              \
                                    const std::function<void(T*, int64_t)>&, int);                                     \
  template void attentionBackward<T>(const T*, const T*, const T*, T*, int64_t, int64_t, int64_t, int64_t, double*,    \
                                     int);                                                                             \
  template double softmaxCrossEntropy<T>(const T*, const int32_t*, int64_t, int64_t, T*, int64_t, int64_t*, double,    \
                                         int);

FP8LAB_NN_INSTANTIATE(float)
FP8LAB_NN_INSTANTIATE(double)

} // namespace fp8lab::nn

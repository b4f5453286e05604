// FP8 Lab — the layer kinds of the training engine: one forward and one backward each, on
// row-major arrays, for T = float (training) and T = double (the gradient checks,
// tests/core/training/test_gradient_check.cpp). Shapes follow karpathy/llm.c's train_gpt2.c: N rows
// (tokens or images) of C channels. The GEMMs of a Linear layer are not here: they are operand
// sites (sites.h) and run through the precision policy (linear_site.h); `matmul` below is the
// plain high-precision product the float64 checks and the FP32 pieces use.
//
// Threads: the functions taking `threads` split their rows or elements (or, for the parameter
// gradients, their columns) over the worker pool (0 = all cores, default 1); no sum is ever split,
// so every thread count gives the same bits.
//
// Conventions: every backward *adds* into the parameter gradients it is given (dgamma, dwte, ...:
// a parameter used twice, as tied embeddings are, sums its two contributions) and *writes* the
// input gradient (dx) unless it says otherwise. Reductions that decide training results (softmax
// sums, normalisation statistics) are accumulated in double for T = float too, so the float path
// is deterministic and close to the float64 one.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace fp8lab::nn {

/// C[M,N] = A[M,K] · B[K,N] (accumulate: C +=), row-major, k ascending per element, one
/// accumulator of type T. Single-threaded; for T = float the training path uses dense.h's
/// matmulF32 (same order, threaded) instead.
template <class T> void matmul(const T* a, const T* b, T* c, int64_t m, int64_t k, int64_t n, bool accumulate = false);
/// out[N,M] = in[M,N]ᵀ.
template <class T> void transpose(const T* in, T* out, int64_t m, int64_t n);

// ---- activations --------------------------------------------------------------------------

/// ReLU: y = max(x, 0). Backward: dx = dy where x > 0, else 0 (also for x = 0 and NaN), as the
/// MLP has always masked it.
template <class T> void reluForward(const T* x, T* y, int64_t n);
template <class T> void reluBackward(const T* dy, const T* x, T* dx, int64_t n);

/// GELU, tanh approximation (Hendrycks & Gimpel 2016; GPT-2's "gelu_new", llm.c gelu_forward):
/// y = ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). Backward: the exact derivative of that formula.
/// `th` (may be null) receives / gives the tanh of each element, so the backward need not compute
/// it again. For T = float tanh(u) is evaluated as sign(u)·(1 − e)/(1 + e), e = exp(−2|u|), in
/// float (within a few float32 ulps of tanhf, at a third of its cost); T = double uses std::tanh.
template <class T> void geluForward(const T* x, T* y, int64_t n, T* th = nullptr, int threads = 1);
template <class T> void geluBackward(const T* dy, const T* x, T* dx, int64_t n, const T* th = nullptr, int threads = 1);

/// SwiGLU (Shazeer 2020, "GLU variants improve Transformer"): y = silu(gate) · up with
/// silu(g) = g·σ(g). gate, up, y: [n]. Backward writes dgate and dup.
template <class T> void swigluForward(const T* gate, const T* up, T* y, int64_t n, int threads = 1);
template <class T>
void swigluBackward(const T* dy, const T* gate, const T* up, T* dgate, T* dup, int64_t n, int threads = 1);

// ---- normalisation --------------------------------------------------------------------------

/// LayerNorm over the C channels of each of N rows (Ba, Kiros & Hinton 2016):
/// y = (x − μ)·rstd·γ + β with μ, σ² the row's mean and biased variance, rstd = 1/√(σ² + eps).
/// mean, rstd: [N] (saved for the backward).
template <class T>
void layerNormForward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, int64_t n, int64_t c,
                      double eps = 1e-5, int threads = 1);
/// dx (written), dgamma and dbeta (added) from dy, the input x and the saved mean and rstd.
template <class T>
void layerNormBackward(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd, T* dx, T* dgamma,
                       T* dbeta, int64_t n, int64_t c, int threads = 1);

/// RMSNorm (Zhang & Sennrich 2019): y = x·rstd·γ with rstd = 1/√(mean(x²) + eps). rstd: [N].
template <class T>
void rmsNormForward(const T* x, const T* gamma, T* y, T* rstd, int64_t n, int64_t c, double eps = 1e-5,
                    int threads = 1);
template <class T>
void rmsNormBackward(const T* dy, const T* x, const T* gamma, const T* rstd, T* dx, T* dgamma, int64_t n, int64_t c,
                     int threads = 1);

// ---- embeddings, residual, bias --------------------------------------------------------------

/// Token + position embedding: out[b·T + t, :] = wte[tokens[b·T + t], :] + wpe[t, :] (GPT-2;
/// wpe may be null: no position embedding). tokens: [B·T] ids < V; wte [V, C], wpe [T, C].
template <class T>
void embeddingForward(const int32_t* tokens, const T* wte, const T* wpe, T* out, int64_t batch, int64_t t, int64_t c);
/// dwte[token] += dout, dwpe[t] += dout.
template <class T>
void embeddingBackward(const T* dout, const int32_t* tokens, T* dwte, T* dwpe, int64_t batch, int64_t t, int64_t c);

/// out = a + b (n elements). Its backward passes dout to both inputs unchanged.
template <class T> void residualForward(const T* a, const T* b, T* out, int64_t n, int threads = 1);
/// y[i, :] += bias (rows × c); its backward: dbias += Σ_i dy[i, :] (rows ascending).
template <class T> void biasForward(T* y, const T* bias, int64_t rows, int64_t c, int threads = 1);
template <class T> void biasBackward(const T* dy, T* dbias, int64_t rows, int64_t c, int threads = 1);

// ---- attention --------------------------------------------------------------------------------

/// Causal multi-head self-attention's middle (Vaswani et al. 2017; llm.c attention_forward):
/// qkv [B, T, 3C] holds Q, K, V side by side (C = H·hs); per batch b and head h,
///   S = Q·Kᵀ / √hs  (keys t2 ≤ t1 only),  P = softmax(S) over t2,  O = P·V,
/// out [B, T, C] has head h in columns h·hs .. (h+1)·hs. `probs` [B, H, T, T] receives P (zero
/// above the diagonal), kept for the backward and for the attention-sink probe. The softmax
/// subtracts the row maximum and sums in double.
/// `p_cast` (may be empty) is applied to each row of P (its t1 + 1 causal entries) before P·V and
/// before it is stored: the cast of the softmax probabilities to a low-precision format (FP8
/// attention), whose result both the product and the backward then use. Batches and heads are
/// independent and run on the worker pool (`threads`, 0: all cores; p_cast is then called from
/// several threads at once); the result does not depend on the thread count.
template <class T>
void attentionForward(const T* qkv, T* out, T* probs, int64_t batch, int64_t t, int64_t c, int64_t heads,
                      const std::function<void(T* row, int64_t n)>& p_cast = {}, int threads = 1);
/// dqkv (written) from dout [B, T, C], qkv and the saved probs. `ds_amax` (may be null) receives
/// max |∂loss/∂S| over every score, the output gradient of the Q·Kᵀ matmul.
template <class T>
void attentionBackward(const T* dout, const T* qkv, const T* probs, T* dqkv, int64_t batch, int64_t t, int64_t c,
                       int64_t heads, double* ds_amax = nullptr, int threads = 1);

// ---- loss -------------------------------------------------------------------------------------

/// Softmax cross-entropy of `rows` logit rows [rows, classes] against integer targets, as the
/// MLP has always computed it: m = max of the row (float T), se = Σ exp(z − m) in double,
/// loss_i = log(se) − (z_target − m); returns Σ_i loss_i (double; divide by rows for the mean).
/// `dlogits` (may be null) receives (softmax − onehot) / `scale_rows`, rounded to T — the gradient
/// of the mean loss over `scale_rows` rows. A target < 0 is a masked row: no loss, zero gradient.
/// `correct` (may be null) counts rows whose first maximal logit is the target. The sum starts
/// from `running` (callers summing over batches pass their running sum, so the rows are added in
/// one sequence whatever the batch size).
template <class T>
double softmaxCrossEntropy(const T* logits, const int32_t* targets, int64_t rows, int64_t classes, T* dlogits,
                           int64_t scale_rows, int64_t* correct = nullptr, double running = 0.0, int threads = 1);

} // namespace fp8lab::nn

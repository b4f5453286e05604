// FP8 Lab — a tiny decoder-only transformer language model, built from the engine's layers
// (layers.h) with its Linear layers and attention matmuls as operand sites (sites.h), in the shape
// of karpathy/llm.c's train_gpt2.c: every parameter and activation a named tensor, one forward
// and one backward per layer kind, read top to bottom.
//
//   x = wte[token] + wpe[position]                               embedding  [N, C], N = B·T
//   for each block l:                                            (pre-norm, GPT-2)
//     h  = norm1(x);  qkv = h·W_qkv + b            site blocks.l.attn.qkv
//     S  = Q·Kᵀ/√hs (causal) per head              site blocks.l.attn.scores
//     P  = softmax(S);  a = P·V                    site blocks.l.attn.context
//     x  = x + (a·W_out + b)                       site blocks.l.attn.out
//     h  = norm2(x);  u = h·W_up + b               site blocks.l.ffn.up   (and ffn.gate for SwiGLU)
//     x  = x + (act(u)·W_down + b)                 site blocks.l.ffn.down (act: GELU, or SwiGLU)
//   logits = norm_f(x) · W_lm                      site lm_head (W_lm = wteᵀ when tied)
// Post-norm (the original Transformer's order, Vaswani et al. 2017; the explainer's contrast):
// x = norm1(x + attn(x)); x = norm2(x + ffn(x)); no final norm. Norms are LayerNorm or RMSNorm.
//
// Weights are stored [in, out] (GPT-2's Conv1D layout, the engine's Linear convention), named as
// PyTorch module paths: "wte.weight" [V, C], "wpe.weight" [T, C], "blocks.0.ln1.weight",
// "blocks.0.attn.qkv.weight" [C, 3C], "blocks.0.attn.qkv.bias", ..., "ln_f.weight",
// "lm_head.weight" [C, V] (untied only). Initialisation as GPT-2 / nanoGPT: weights and
// embeddings N(0, 0.02²), the two residual projections (attn.out, ffn.down) N(0, (0.02/√(2L))²),
// biases 0, norm gains 1.
//
// The model is a template on T: T = float trains (its GEMMs through LinearOps: the sites and the
// precision policy), T = double is the plain float64 model the gradient checks compare with finite
// differences.
#pragma once

#include "training/layers.h"
#include "training/model.h"
#include "training/sites.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fp8lab {

enum class FfnKind { Gelu, Swiglu };
enum class NormKind { LayerNorm, RmsNorm };
const char* toString(FfnKind k);  ///< "gelu", "swiglu"
const char* toString(NormKind k); ///< "layernorm", "rmsnorm"

struct TransformerConfig {
  int64_t vocab = 256;      ///< byte-level
  int64_t d_model = 64;     ///< C
  int64_t layers = 2;       ///< L
  int64_t heads = 4;        ///< H (d_model must be a multiple)
  int64_t context = 64;     ///< T, the longest sequence
  int64_t ffn_hidden = 256; ///< F
  FfnKind ffn = FfnKind::Gelu;
  NormKind norm = NormKind::LayerNorm;
  bool pre_norm = true;
  bool tied_embeddings = true;
  bool position_embedding = true;
  /// Biases in every Linear (GPT-2's); false: none (LLaMA's, Touvron et al. 2023), so a constant
  /// offset the model needs has to come from its activations (Sun et al. 2024, arXiv 2402.17762,
  /// §5: massive activations act as such biases).
  bool linear_bias = true;
  double norm_eps = 1e-5;
  /// Empty when usable, else why not (one line).
  std::string validate() const;
  /// The model's sites, in recording order: per block attn.qkv, attn.scores, attn.context,
  /// attn.out, ffn.up, [ffn.gate], ffn.down; then lm_head.
  SiteTable sites() const;
  /// Number of parameters.
  int64_t parameterCount() const;
};

/// The activations the probes look at after a forward pass (pointers into the model's buffers,
/// valid until the next forward).
template <class T> struct TransformerTaps {
  std::vector<const T*> block_out;  ///< per block: the residual stream after it [N, C]
  std::vector<const T*> attn_probs; ///< per block: P [B, H, T, T]
  std::vector<const T*> site_input; ///< per site: its input (Linear: x [N, in]; attention: null)
  std::vector<int64_t> site_input_cols;
  const T* embedding = nullptr; ///< the blocks' input [N, C]
  int64_t n = 0, batch = 0, t = 0;
};

template <class T> class TransformerModel {
public:
  /// Parameters initialised from `seed` (GPT-2 initialisation, above). Throws
  /// std::invalid_argument when cfg.validate() fails.
  TransformerModel(const TransformerConfig& cfg, uint64_t seed);
  ~TransformerModel();
  TransformerModel(TransformerModel&&) noexcept;

  const TransformerConfig& config() const;
  std::vector<Param<T>>& params();
  const std::vector<Param<T>>& params() const;
  Param<T>* find(const std::string& name);

  /// Forward pass over tokens [batch, t] (t ≤ context, ids < vocab): returns the sum of the
  /// cross-entropy over every position whose target is ≥ 0 (targets [batch, t]; may be null: no
  /// loss), in nats; `logits` (may be null) receives [batch·t, vocab]. Keeps what backward needs.
  double forward(const int32_t* tokens, const int32_t* targets, int64_t batch, int64_t t, LinearOps<T>& ops,
                 std::vector<T>* logits = nullptr);
  /// Backward of the last forward, for the mean loss over `count` positions: adds every
  /// parameter's gradient into Param::grad (zero them first with zeroGrad).
  void backward(int64_t count, LinearOps<T>& ops);
  void zeroGrad();
  /// Worker threads of the attention and of nothing else (the GEMMs take their own); 0: all
  /// cores. Results do not depend on it.
  void setThreads(int threads);
  /// The activations of the last forward.
  TransformerTaps<T> taps() const;
  /// The token ids of a greedy or sampled continuation of `prompt` (temperature ≤ 0: greedy).
  std::vector<int32_t> generate(std::vector<int32_t> prompt, int64_t count, double temperature, uint64_t seed,
                                LinearOps<T>& ops);

private:
  struct Impl;
  std::unique_ptr<Impl> d;
};

extern template class TransformerModel<float>;
extern template class TransformerModel<double>;

} // namespace fp8lab

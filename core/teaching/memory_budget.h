// FP8 Lab — the memory arithmetic of low-precision training: bytes per tensor class (weights the
// GEMMs read, FP32 master weights, gradients, Adam moments, saved activations, scaling state) of a
// decoder-only transformer under a recipe, with each recipe's scale overhead derived from its
// block sizes and scale formats (core/scaling/scale_overhead.h).
//
// A model, not a measurement: it counts the tensors a training step keeps, once each, as
// Megatron-style mixed precision lays them out (float32 master weights, gradients and Adam
// moments; the GEMM copy of each weight in the recipe's format; one copy of each GEMM input saved
// for backward in the recipe's format, everything else saved in BF16, or float32 for the float32
// recipe). Not counted: framework workspaces, the allocator's fragmentation, transposed copies
// some kernels keep (TE's columnwise FP8 data), activation recomputation, tensor / pipeline
// parallel sharding.
//
// Saved activations per layer follow Korthikanti et al., "Reducing Activation Recomputation in
// Large Transformer Models" (2022), §4.1, Eq. 1: 34·s·b·h + 5·a·s²·b bytes for 16-bit tensors with
// dropout and without flash attention. Of the 34·s·b·h, 14·s·b·h are the inputs of the four weight
// GEMMs (QKV, attention projection, MLP up, MLP down: 2·(h + h + h + 4h) bytes per token), the ones
// an FP8 recipe saves in FP8; the rest (layer-norm inputs, Q, K, V, the GeLU input, dropout masks)
// and the s² terms (softmax output, its dropout mask and output) stay in 16 bits. Flash attention
// keeps no s² tensor; without dropout there are no masks. Gated MLPs (SwiGLU) save the gate and
// up projections (2·f values per token) where GeLU saves f; grouped-query attention saves K and V
// of kv_heads heads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// A decoder-only transformer's shape.
struct TransformerShape {
  std::string name;            ///< preset name, e.g. "gpt2_small"
  int64_t layers = 12;         ///< L
  int64_t hidden = 768;        ///< h
  int64_t heads = 12;          ///< a (query heads; head dim = h / a)
  int64_t kv_heads = 12;       ///< key/value heads (grouped-query attention when < heads)
  int64_t ffn = 3072;          ///< f, the MLP's inner width
  int64_t vocab = 50257;       ///< V
  bool gated_mlp = false;      ///< SwiGLU (three h×f matrices) instead of two
  bool biases = true;          ///< biases on every Linear and LayerNorm (GPT-2); none with RMSNorm (Llama)
  bool tied_embeddings = true; ///< the LM head shares the token embedding
  int64_t positions = 1024;    ///< learned position embeddings (0: rotary, none stored)
};

/// The presets: gpt2_small (124,439,808 parameters), llama2_7b (6,738,415,616), llama3_70b
/// (70,553,706,496) — the published parameter counts, which parameterCount reproduces.
const std::vector<TransformerShape>& transformerShapes();
std::optional<TransformerShape> transformerShape(std::string_view name);

/// Parameters of the shape: per layer the attention (q, k, v, o with biases when `biases`), the
/// MLP (2 or 3 matrices), two norms (weight, and bias when `biases`); the token embedding, an
/// untied LM head, the position embedding and the final norm. Throws std::invalid_argument for a
/// shape with a non-positive size or heads not dividing hidden.
int64_t parameterCount(const TransformerShape& shape);
/// The parameters of the weight GEMMs' matrices (q, k, v, o and the MLP, without biases): the
/// ones a low-precision recipe casts.
int64_t gemmWeightCount(const TransformerShape& shape);

/// A training recipe's storage: the GEMM operands' element format and the scaling of weights and
/// activations (preset names of core/scaling, or an NVFP4 preset).
struct MemoryRecipe {
  std::string name;  ///< "fp32", "bf16", "fp8_delayed", "fp8_current", "fp8_rowwise", "fp8_block", "mxfp8", "nvfp4"
  std::string label; ///< one line for menus
  double element_bytes = 2;       ///< bytes of one GEMM operand element (4, 2, 1, 0.5)
  std::string weight_scaling;     ///< scaling preset of weights ("" = none: float32 / BF16)
  std::string activation_scaling; ///< scaling preset of saved GEMM inputs
  int64_t history_len = 0;        ///< delayed scaling: amax history length kept per scaled tensor
  std::string source;             ///< the system the recipe follows
};
/// fp32, bf16, fp8_delayed (TE DelayedScaling, history 1024), fp8_current (TE
/// Float8CurrentScaling), fp8_rowwise (torchao rowwise), fp8_block (DeepSeek-V3: 1x128
/// activations, 128x128 weights), mxfp8 (TE MXFP8BlockScaling), nvfp4 (TE NVFP4BlockScaling).
const std::vector<MemoryRecipe>& memoryRecipes();
std::optional<MemoryRecipe> memoryRecipe(std::string_view name);

struct MemoryBudgetConfig {
  TransformerShape model;
  int64_t batch = 8;       ///< b, sequences per step (one device, no sharding)
  int64_t sequence = 1024; ///< s, tokens per sequence
  std::string recipe = "bf16";
  bool flash_attention = true; ///< no s² activation is saved
  bool dropout = false;        ///< dropout masks are saved (1 byte per element)
};

/// One tensor class of the budget.
struct MemoryLine {
  std::string tensor_class; ///< "weights (GEMM copy)", "master weights", ...
  double elements = 0;      ///< values stored
  double element_bytes = 0; ///< bytes per value (before scales)
  double scale_bytes = 0;   ///< bytes of the scales (and scaling state) of this class
  double bytes = 0;         ///< elements · element_bytes + scale_bytes
  std::string note;         ///< what is in it, and in which format
};

struct MemoryBudget {
  int64_t parameters = 0, gemm_parameters = 0;
  MemoryRecipe recipe;
  std::vector<MemoryLine> lines; ///< weights, other parameters, master weights, gradients, Adam
                                 ///< moments, GEMM inputs, other activations, logits, scaling state
  double total_bytes = 0;
  double scale_bytes = 0;      ///< all scales and scaling state together
  double activation_bytes = 0; ///< the activation lines together
};

/// The budget of one training step. Throws std::invalid_argument for an unknown recipe, a bad
/// shape (parameterCount) or batch / sequence < 1.
MemoryBudget memoryBudget(const MemoryBudgetConfig& cfg);

} // namespace fp8lab

// FP8 Lab — the memory arithmetic of a training step (memory_budget.h).
#include "teaching/memory_budget.h"

#include "common/names.h"

#include "scaling/nvfp4.h"
#include "scaling/scale_overhead.h"
#include "scaling/scaling.h"

#include <stdexcept>

namespace fp8lab {

namespace {

void checkShape(const TransformerShape& m) {
  if (m.layers < 1 || m.hidden < 1 || m.heads < 1 || m.kv_heads < 1 || m.ffn < 1 || m.vocab < 1 || m.positions < 0)
    throw std::invalid_argument("transformer shape '" + m.name + "': every size must be >= 1 (positions >= 0)");
  if (m.hidden % m.heads != 0)
    throw std::invalid_argument("transformer shape '" + m.name + "': " + std::to_string(m.heads) +
                                " heads do not divide hidden size " + std::to_string(m.hidden));
  if (m.heads % m.kv_heads != 0)
    throw std::invalid_argument("transformer shape '" + m.name + "': " + std::to_string(m.kv_heads) +
                                " key/value heads do not divide " + std::to_string(m.heads) + " heads");
}

/// One weight matrix W [out, in] of a layer (y = x · Wᵀ, contraction along `in`).
struct Matrix {
  int64_t out, in;
};

std::vector<Matrix> layerMatrices(const TransformerShape& m) {
  const int64_t h = m.hidden, kv = m.kv_heads * (m.hidden / m.heads), f = m.ffn;
  std::vector<Matrix> w = {{h, h}, {kv, h}, {kv, h}, {h, h}};
  if (m.gated_mlp) w.push_back({f, h});
  w.push_back({f, h});
  w.push_back({h, f});
  return w;
}

/// The scale storage of a tensor [rows, cols] under a preset name (current scaling or NVFP4);
/// 0 bytes for "" (no scales).
double scaleBytes(const std::string& preset, int64_t rows, int64_t cols) {
  if (preset.empty()) return 0.0;
  if (const auto nv = nvfp4Preset(preset)) return scaleStorage(*nv, rows, cols, Axis::Cols).bytes;
  const auto sc = scalingPreset(preset);
  if (!sc) throw std::logic_error("memory recipe names an unknown scaling preset '" + preset + "'");
  return scaleStorage(*sc, rows, cols, Axis::Cols).bytes;
}

} // namespace

const std::vector<TransformerShape>& transformerShapes() {
  static const std::vector<TransformerShape> shapes = {
      // GPT-2 small (Radford et al. 2019; Hugging Face gpt2 config): 12 layers, h 768, 12 heads,
      // learned positions 1024, tied embeddings, biases, GeLU MLP 4h.
      {"gpt2_small", 12, 768, 12, 12, 3072, 50257, false, true, true, 1024},
      // Llama 2 7B (Touvron et al. 2023; meta-llama/Llama-2-7b-hf config): 32 layers, h 4096,
      // 32 heads, SwiGLU 11008, vocab 32000, untied head, RMSNorm, no biases, rotary positions.
      {"llama2_7b", 32, 4096, 32, 32, 11008, 32000, true, false, false, 0},
      // Llama 3 70B (meta-llama/Meta-Llama-3-70B config): 80 layers, h 8192, 64 heads, 8 KV heads,
      // SwiGLU 28672, vocab 128256.
      {"llama3_70b", 80, 8192, 64, 8, 28672, 128256, true, false, false, 0},
  };
  return shapes;
}

std::optional<TransformerShape> transformerShape(std::string_view name) {
  const std::string n = normalizedName(name);
  for (const auto& s : transformerShapes())
    if (s.name == n) return s;
  return std::nullopt;
}

int64_t gemmWeightCount(const TransformerShape& m) {
  checkShape(m);
  int64_t per_layer = 0;
  for (const Matrix& w : layerMatrices(m)) per_layer += w.out * w.in;
  return m.layers * per_layer;
}

int64_t parameterCount(const TransformerShape& m) {
  checkShape(m);
  const int64_t h = m.hidden, kv = m.kv_heads * (m.hidden / m.heads), f = m.ffn;
  int64_t biases = 0;
  if (m.biases) biases = h + 2 * kv + h + f + h;    // q, k, v, o, MLP up, MLP down (non-gated models)
  if (m.biases && m.gated_mlp) biases += f;         // the gate's bias
  const int64_t norms = (m.biases ? 2 : 1) * h * 2; // two per layer: weight (and bias)
  const int64_t final_norm = (m.biases ? 2 : 1) * h;
  const int64_t embeddings = m.vocab * h * (m.tied_embeddings ? 1 : 2) + m.positions * h;
  return gemmWeightCount(m) + m.layers * (biases + norms) + final_norm + embeddings;
}

const std::vector<MemoryRecipe>& memoryRecipes() {
  static const std::vector<MemoryRecipe> recipes = {
      {"fp32", "float32 everywhere", 4, "", "", 0, "plain float32 training"},
      {"bf16", "BF16 GEMMs, float32 master weights", 2, "", "", 0,
       "mixed precision (Micikevicius et al. 2018) with BF16"},
      {"fp8_delayed", "FP8 E4M3, per-tensor delayed scaling (history 1024)", 1, "te_current", "te_current", 1024,
       "Transformer Engine DelayedScaling: one float32 scale and an amax history of 1024 per scaled tensor"},
      {"fp8_current", "FP8 E4M3, per-tensor current scaling", 1, "te_current", "te_current", 0,
       "Transformer Engine Float8CurrentScaling"},
      {"fp8_rowwise", "FP8 E4M3, one scale per row (torchao rowwise)", 1, "torchao_rowwise", "torchao_rowwise", 0,
       "torchao Float8Linear, rowwise recipe"},
      {"fp8_block", "FP8 E4M3, 1x128 activations, 128x128 weights (DeepSeek-V3)", 1, "deepgemm_128x128",
       "deepgemm_1x128", 0, "DeepSeek-V3 §3.3 / DeepGEMM: float32 scales per 1x128 block and 128x128 tile"},
      {"mxfp8", "MXFP8 E4M3, one E8M0 scale per 32 elements", 1, "mx_rceil", "mx_rceil", 0,
       "Transformer Engine MXFP8BlockScaling (OCP MX v1.0)"},
      {"nvfp4", "NVFP4 E2M1, one E4M3 scale per 16 elements + float32 per tensor", 0.5, "nvfp4_te_2d", "nvfp4_te", 0,
       "Transformer Engine NVFP4BlockScaling"},
  };
  return recipes;
}

std::optional<MemoryRecipe> memoryRecipe(std::string_view name) {
  const std::string n = normalizedName(name);
  for (const auto& r : memoryRecipes())
    if (r.name == n) return r;
  return std::nullopt;
}

MemoryBudget memoryBudget(const MemoryBudgetConfig& cfg) {
  const auto recipe = memoryRecipe(cfg.recipe);
  if (!recipe) throw std::invalid_argument("memory budget: unknown recipe '" + cfg.recipe + "'");
  if (cfg.batch < 1 || cfg.sequence < 1) throw std::invalid_argument("memory budget: batch and sequence must be >= 1");
  const TransformerShape& m = cfg.model;
  MemoryBudget b;
  b.recipe = *recipe;
  b.parameters = parameterCount(m);
  b.gemm_parameters = gemmWeightCount(m);
  const bool fp32 = recipe->name == "fp32";
  const double e = recipe->element_bytes;
  const double other_bytes = fp32 ? 4.0 : 2.0; // everything the recipe does not cast
  const auto layer = layerMatrices(m);
  const double L = double(m.layers);
  auto add = [&](std::string what, double elements, double element_bytes, double scales, std::string note) {
    MemoryLine l{std::move(what), elements, element_bytes, scales, elements * element_bytes + scales, std::move(note)};
    b.total_bytes += l.bytes;
    b.scale_bytes += scales;
    b.lines.push_back(std::move(l));
    return b.lines.size() - 1;
  };

  // Weights as the GEMMs read them: each matrix in the recipe's format with its scales.
  double weight_scales = 0;
  for (const Matrix& w : layer) weight_scales += scaleBytes(recipe->weight_scaling, w.out, w.in);
  weight_scales *= L;
  add("weights (GEMM copy)", double(b.gemm_parameters), e, weight_scales,
      recipe->weight_scaling.empty() ? std::string(fp32 ? "float32" : "BF16")
                                     : "the weight matrices in the recipe's format, scales: " + recipe->weight_scaling);
  add("other parameters", double(b.parameters - b.gemm_parameters), other_bytes, 0,
      "embeddings, norms and biases (never cast), in " + std::string(fp32 ? "float32" : "BF16"));
  if (!fp32) add("master weights", double(b.parameters), 4, 0, "float32 copy the optimizer updates");
  add("gradients", double(b.parameters), 4, 0, "float32 weight gradients");
  add("Adam moments", double(b.parameters), 8, 0, "two float32 moments per parameter");

  // Saved activations, per layer, for T = b·s tokens.
  const double T = double(cfg.batch) * double(cfg.sequence);
  const double h = double(m.hidden), f = double(m.ffn), a = double(m.heads), s = double(cfg.sequence);
  const double kv = double(m.kv_heads) * (h / a);
  // The four GEMM inputs: QKV (h), attention projection (h), MLP up / gate (h), MLP down (f).
  const int64_t tokens = cfg.batch * cfg.sequence;
  double act_scales = 0;
  for (int64_t cols : {m.hidden, m.hidden, m.hidden, m.ffn})
    act_scales += scaleBytes(recipe->activation_scaling, tokens, cols);
  act_scales *= L;
  const size_t gemm_in = add("activations: GEMM inputs", L * T * (3 * h + f), e, act_scales,
                             "inputs of the QKV, projection, MLP up and MLP down GEMMs, saved for backward");
  // The rest in 16 bits (float32 for the float32 recipe), per token: two norm inputs, Q, K, V,
  // the activation's input(s); the s² tensors without flash attention; 1-byte dropout masks.
  double other = other_bytes * (2 * h + (h + 2 * kv) + (m.gated_mlp ? 2 * f : f));
  if (!cfg.flash_attention) other += other_bytes * a * s; // softmax output
  if (cfg.dropout) {
    other += 2 * h;                                                 // two dropout masks
    if (!cfg.flash_attention) other += a * s + other_bytes * a * s; // attention dropout mask and output
  }
  const size_t rest = add("activations: other", L * T, other, 0,
                          std::string("norm inputs, Q, K, V, the MLP activation's input") +
                              (cfg.flash_attention ? "" : ", softmax output") + (cfg.dropout ? ", dropout masks" : "") +
                              ", in " + (fp32 ? "float32" : "BF16"));
  const size_t logits = add("logits", T * double(m.vocab), 4, 0, "float32 logits of the loss");
  b.activation_bytes = b.lines[gemm_in].bytes + b.lines[rest].bytes + b.lines[logits].bytes;
  if (recipe->history_len > 0) {
    // Three scaled tensors per GEMM group (input, weight, output gradient) of the four GEMM
    // groups per layer: an amax history, the scale and its inverse, float32.
    const double tensors = 12 * L;
    add("scaling state", 0, 0, tensors * (4.0 * double(recipe->history_len) + 8.0),
        "amax history of " + std::to_string(recipe->history_len) +
            " + scale + scale_inv per scaled tensor (input, weight, gradient of 4 GEMMs per layer)");
  }
  return b;
}

} // namespace fp8lab

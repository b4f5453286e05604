// FP8 Lab — operand sites and the precision policy of the training engine.
//
// A site is one GEMM of a model that low precision can reach: a Linear layer y = x·W (named by
// its PyTorch-style module path: "fc2", "blocks.1.attn.qkv", "blocks.1.ffn.down", "lm_head") or
// one of the attention's batched matmuls ("blocks.1.attn.scores" = Q·Kᵀ, "blocks.1.attn.context"
// = P·V). Each site has three GEMMs (Transformer Engine's debug-API vocabulary: fprop, dgrad,
// wgrad) and records three operands, in this order:
//   input       the activation entering the GEMM (x; Q for scores, P for context)
//   kernel      the weight (W; K for scores, V for context) — Flax's name for it
//   output_grad ∂loss/∂y (g)
// A run's SiteTable is the one description of its sites: the session's history/<path>/<operand>,
// block_stats/…, what_if/…, the non-finite tracer's "layer" and checkpoint export all take their
// names from it; nothing else builds a site name.
//
// The precision policy maps sites to the run's recipe (per-tensor or block scaling, recipe.h) or to
// high precision (FP32, or BF16: operands rounded to bfloat16, products summed in float32), by
// pattern, GEMM and step range — "attention in BF16, FFN in FP8", "first and last block in BF16",
// "FP8 after 200 warm-up steps", "wgrad in BF16". Rules are read in order; the last rule that
// matches a site, GEMM and step decides. Without a matching rule a Linear site follows the run
// (its recipe in FP8 runs, FP32 in FP32 runs) and an attention matmul stays in FP32, as TE keeps
// the attention batched matmuls and softmax in high precision unless FP8 attention is asked for.
#pragma once

#include "common/site_names.h"
#include "training/recipe.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// The recorded operands of a site, in storage order (operand index = 3·site + operand).
enum class SiteOperand { Input = 0, Kernel = 1, OutputGrad = 2 };
constexpr int kSiteOperands = 3;
/// "input", "kernel", "output_grad" (the session's group names).
const char* toString(SiteOperand o);
/// The block recipe's role a recorded operand stands for: input records fprop.input, kernel
/// fprop.weight, output_grad wgrad.grad_output (the one gradient copy every Linear site has).
/// The training engine (site_run.h) and observed runs (observed_run.h) record these three.
OperandRole recordedRole(SiteOperand o);

/// What a site multiplies.
enum class SiteKind {
  Linear,           ///< y [N, out] = x [N, in] · W [in, out]
  AttentionScores,  ///< S = Q·Kᵀ per batch and head (input Q, kernel K)
  AttentionContext, ///< O = P·V per batch and head (input P, kernel V)
};
const char* toString(SiteKind k); ///< "linear", "attention_scores", "attention_context"

/// One site.
struct Site {
  std::string path; ///< "fc1", "blocks.0.attn.qkv", "lm_head", "blocks.0.attn.scores"
  SiteKind kind = SiteKind::Linear;
  int64_t in = 0, out = 0; ///< Linear: W [in, out]; attention: head size and context length
  int block = -1;          ///< transformer block index (−1: not in a block)
  std::string group;       ///< "mlp", "attn", "ffn", "head": what the views group by
};

/// The sites of a run, in the order the run records them.
class SiteTable {
public:
  SiteTable() = default;
  explicit SiteTable(std::vector<Site> sites) : sites_(std::move(sites)) {}

  size_t size() const { return sites_.size(); }
  const Site& operator[](size_t i) const { return sites_.at(i); }
  const std::vector<Site>& sites() const { return sites_; }
  /// Index of the site with this path, or −1.
  int find(const std::string& path) const;

  /// The index of a site's operand in the run's operand list (OperandHistory order).
  static size_t operandIndex(size_t site, SiteOperand o) { return kSiteOperands * site + size_t(o); }
  static size_t siteOf(size_t operand) { return operand / kSiteOperands; }
  static SiteOperand operandOf(size_t operand) { return SiteOperand(operand % kSiteOperands); }
  /// "fc1/input", "blocks.0.attn.qkv/output_grad".
  std::string operandName(size_t operand) const;

  /// The MLP's sites: Linear layers "fc1" … "fc<n>" with W [sizes[l], sizes[l+1]], group "mlp".
  static SiteTable mlp(const std::vector<int>& layer_sizes);

private:
  std::vector<Site> sites_;
};

/// How a site's GEMM runs at a step.
enum class SitePrecision {
  Recipe, ///< the run's low-precision recipe (per-tensor scaling or the block recipe)
  FP32,   ///< float32 operands, float32 sums
  BF16,   ///< operands rounded to bfloat16 (round to nearest even), float32 sums
};
const char* toString(SitePrecision p); ///< "recipe", "fp32", "bf16"
/// Parses "recipe" (also "fp8", "low"), "fp32", "bf16"; nullopt when unknown.
std::optional<SitePrecision> parseSitePrecision(const std::string& s);

/// One rule of a precision policy.
struct PolicyRule {
  /// Glob over site paths: '*' matches any run of characters (dots included), '?' one character;
  /// "blocks.*.attn.*", "lm_head", "blocks.0.*", "*" .
  std::string sites = "*";
  /// The GEMMs it applies to (all three when empty).
  std::vector<LinearGemm> gemms;
  SitePrecision precision = SitePrecision::FP32;
  int64_t from_step = 0;   ///< first step it applies to (0-based)
  int64_t until_step = -1; ///< first step it no longer applies to; −1: to the end
  /// One line: "blocks.*.attn.* fprop,dgrad,wgrad → bf16 (steps 0..199)".
  std::string describe() const;
};

/// Whether `path` matches the glob `pattern` (see PolicyRule::sites).
bool globMatch(const std::string& pattern, const std::string& path);

/// The precision policy of a run (config "policy": [...], docs/training.md).
struct PrecisionPolicy {
  std::vector<PolicyRule> rules;
  /// The precision of site `s`'s GEMM `g` at `step`: the last matching rule, else the default —
  /// `run_default` for Linear sites (Recipe in FP8 runs, FP32 in FP32 runs), FP32 for attention.
  SitePrecision resolve(const Site& s, LinearGemm g, int64_t step, SitePrecision run_default) const;
  /// Whether any rule can make a site's GEMM use the recipe (so its operands must be quantized).
  bool mayUseRecipe(const Site& s, SitePrecision run_default) const;
  /// Empty when usable, else why not (a pattern that matches no site of `table` is refused, so a
  /// typo does not silently keep everything in FP8).
  std::string validate(const SiteTable& table) const;
};

/// A named precision policy: what the explainer and Transformer Engine's recipes advise, as the
/// Training form offers it and docs/training.md tests it.
struct PolicyPreset {
  std::string id;          ///< "none", "attn_bf16", "ffn_first", "warmup", "wgrad_bf16", "ends_bf16", "fp8_attention"
  std::string name;        ///< as a list shows it
  std::string explanation; ///< the claim it tests
  bool transformer = true; ///< names transformer sites (attention, blocks): not for the MLP
  bool uses_steps = false; ///< its rules end at a step N (warm-up steps)
};
/// Every preset, in the order a list shows them.
const std::vector<PolicyPreset>& policyPresets();
/// The rules of preset `id` for a model with `blocks` transformer blocks (0: the MLP, which takes
/// only the presets that name no transformer site), ending at step `steps` where the preset uses
/// one (≤ 0: no end). Empty for "none", an unknown id or a transformer preset asked for the MLP.
std::vector<PolicyRule> policyPresetRules(const std::string& id, int64_t blocks, int64_t steps);

/// How block recipes multiply (linear_site.h): FakeQuant — a float32 GEMM of the dequantized
/// operands (k ascending, one float32 accumulator; faster, no accumulation model); Core —
/// core/gemm with the block-scaled operands and the run's accumulation model.
enum class BlockGemmPath { FakeQuant, Core };
const char* toString(BlockGemmPath p); ///< "fake_quant", "core"
/// Parses "fake_quant" | "core"; nullopt when unknown.
std::optional<BlockGemmPath> parseBlockGemmPath(const std::string& s);

/// Rounds x to bfloat16 (round to nearest, ties to even; NaN stays NaN) and back to float32.
float roundToBf16(float x);

} // namespace fp8lab

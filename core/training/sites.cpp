// FP8 Lab — operand sites and the precision policy (see sites.h).
#include "training/sites.h"

#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>

namespace fp8lab {

const char* toString(SiteOperand o) {
  switch (o) {
  case SiteOperand::Input:
    return "input";
  case SiteOperand::Kernel:
    return "kernel";
  case SiteOperand::OutputGrad:
    return "output_grad";
  }
  return "?";
}

OperandRole recordedRole(SiteOperand o) {
  return o == SiteOperand::Input    ? OperandRole::FpropInput
         : o == SiteOperand::Kernel ? OperandRole::FpropWeight
                                    : OperandRole::WgradGradOutput;
}

const char* toString(SiteKind k) {
  switch (k) {
  case SiteKind::Linear:
    return "linear";
  case SiteKind::AttentionScores:
    return "attention_scores";
  case SiteKind::AttentionContext:
    return "attention_context";
  }
  return "?";
}

int SiteTable::find(const std::string& path) const {
  for (size_t i = 0; i < sites_.size(); ++i)
    if (sites_[i].path == path) return int(i);
  return -1;
}

std::string SiteTable::operandName(size_t operand) const {
  return sites_.at(siteOf(operand)).path + "/" + toString(operandOf(operand));
}

SiteTable SiteTable::mlp(const std::vector<int>& layer_sizes) {
  std::vector<Site> s;
  for (size_t l = 0; l + 1 < layer_sizes.size(); ++l) {
    Site x;
    x.path = mlpLayerName(int64_t(l));
    x.kind = SiteKind::Linear;
    x.in = layer_sizes[l];
    x.out = layer_sizes[l + 1];
    x.group = "mlp";
    s.push_back(std::move(x));
  }
  return SiteTable(std::move(s));
}

const char* toString(SitePrecision p) {
  switch (p) {
  case SitePrecision::Recipe:
    return "recipe";
  case SitePrecision::FP32:
    return "fp32";
  case SitePrecision::BF16:
    return "bf16";
  }
  return "?";
}

std::optional<SitePrecision> parseSitePrecision(const std::string& s) {
  if (s == "recipe" || s == "fp8" || s == "low") return SitePrecision::Recipe;
  if (s == "fp32") return SitePrecision::FP32;
  if (s == "bf16") return SitePrecision::BF16;
  return std::nullopt;
}

bool globMatch(const std::string& pattern, const std::string& path) {
  // Iterative wildcard match with one backtrack point (the last '*').
  size_t p = 0, s = 0, star = std::string::npos, mark = 0;
  while (s < path.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == path[s])) {
      ++p;
      ++s;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = s;
    } else if (star != std::string::npos) {
      p = star + 1;
      s = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {
const char* gemmName(LinearGemm g) {
  return g == LinearGemm::Fprop ? "fprop" : g == LinearGemm::Dgrad ? "dgrad" : "wgrad";
}
} // namespace

std::string PolicyRule::describe() const {
  std::string g;
  if (gemms.empty())
    g = "fprop,dgrad,wgrad";
  else
    for (LinearGemm x : gemms) g += (g.empty() ? "" : ",") + std::string(gemmName(x));
  std::string s = sites + " " + g + " -> " + toString(precision);
  if (from_step > 0 || until_step >= 0)
    s += " (steps " + std::to_string(from_step) + ".." + (until_step >= 0 ? std::to_string(until_step - 1) : "end") +
         ")";
  return s;
}

SitePrecision PrecisionPolicy::resolve(const Site& s, LinearGemm g, int64_t step, SitePrecision run_default) const {
  SitePrecision p = s.kind == SiteKind::Linear ? run_default : SitePrecision::FP32;
  for (const PolicyRule& r : rules) {
    if (step < r.from_step || (r.until_step >= 0 && step >= r.until_step)) continue;
    if (!r.gemms.empty()) {
      bool hit = false;
      for (LinearGemm x : r.gemms) hit = hit || x == g;
      if (!hit) continue;
    }
    if (globMatch(r.sites, s.path)) p = r.precision;
  }
  return p;
}

bool PrecisionPolicy::mayUseRecipe(const Site& s, SitePrecision run_default) const {
  if (s.kind == SiteKind::Linear && run_default == SitePrecision::Recipe) return true;
  for (const PolicyRule& r : rules)
    if (r.precision == SitePrecision::Recipe && globMatch(r.sites, s.path)) return true;
  return false;
}

std::string PrecisionPolicy::validate(const SiteTable& table) const {
  for (size_t i = 0; i < rules.size(); ++i) {
    const PolicyRule& r = rules[i];
    if (r.sites.empty()) return "rule " + std::to_string(i) + ": \"sites\" is empty";
    if (r.from_step < 0) return "rule " + std::to_string(i) + ": from_step must be ≥ 0";
    if (r.until_step >= 0 && r.until_step <= r.from_step)
      return "rule " + std::to_string(i) + ": until_step must be greater than from_step";
    bool any = false;
    for (const Site& s : table.sites()) any = any || globMatch(r.sites, s.path);
    if (!any) {
      std::string names;
      for (size_t k = 0; k < table.size() && k < 12; ++k) names += (k ? ", " : "") + table[k].path;
      if (table.size() > 12) names += ", ...";
      return "rule " + std::to_string(i) + ": sites '" + r.sites + "' match no site of this model (" + names + ")";
    }
  }
  return {};
}

const char* toString(BlockGemmPath p) {
  return p == BlockGemmPath::Core ? "core" : "fake_quant";
}

std::optional<BlockGemmPath> parseBlockGemmPath(const std::string& s) {
  if (s == "core") return BlockGemmPath::Core;
  if (s == "fake_quant") return BlockGemmPath::FakeQuant;
  return std::nullopt;
}

float roundToBf16(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu)) return std::bit_cast<float>(u | 0x00400000u); // quiet NaN
  const uint32_t lsb = (u >> 16) & 1u;
  u += 0x7FFFu + lsb; // round to nearest even on the upper 16 bits (overflow to Inf is correct)
  return std::bit_cast<float>(u & 0xFFFF0000u);
}

} // namespace fp8lab

namespace fp8lab {

const std::vector<PolicyPreset>& policyPresets() {
  static const std::vector<PolicyPreset> all{
      {"none", "none (every Linear in the recipe)",
       "Every Linear GEMM in low precision under the recipe; attention's Q\u00b7K\u1d40 and P\u00b7V in FP32 "
       "(Transformer Engine's default)",
       false, false},
      {"attn_bf16", "attention in BF16",
       "blocks.*.attn.* \u2192 bf16: the attention's Linear layers (qkv, out) and its batched matmuls in BF16, the "
       "FFN and the head in FP8 (the explainer: keep attention in high precision)",
       true, false},
      {"ffn_first", "FFN first (attention FP32 N steps)",
       "blocks.*.attn.* \u2192 fp32 until step N, the FFN in FP8 from step 0 (the explainer: introduce FP8 into the "
       "FFN first, attention later)",
       true, true},
      {"warmup", "FP32 warm-up (N steps)",
       "* \u2192 fp32 until step N (the explainer: warm up in high precision; with delayed scaling the amax history "
       "fills meanwhile)",
       false, true},
      {"wgrad_bf16", "wgrad in BF16",
       "* wgrad \u2192 bf16: the weight-gradient GEMM of every site in BF16, fprop and dgrad in FP8", false, false},
      {"ends_bf16", "first + last block in BF16",
       "blocks.0.*, the last block and lm_head \u2192 bf16, the blocks between in FP8 (a common FP8 recipe for deep "
       "models)",
       true, false},
      {"fp8_attention", "FP8 attention (Q\u00b7K\u1d40, P\u00b7V)",
       "blocks.*.attn.scores and blocks.*.attn.context \u2192 recipe: Q, K, V per-tensor E4M3FN and the softmax "
       "probabilities cast to E4M3FN with softmax_scale",
       true, false},
  };
  return all;
}

std::vector<PolicyRule> policyPresetRules(const std::string& id, int64_t blocks, int64_t steps) {
  const bool transformer = blocks > 0;
  auto rule = [&](std::string sites, SitePrecision p, bool until = false, std::vector<LinearGemm> gemms = {}) {
    PolicyRule r;
    r.sites = std::move(sites);
    r.precision = p;
    r.gemms = std::move(gemms);
    r.until_step = until && steps > 0 ? steps : -1;
    return r;
  };
  const std::string any_block = std::string(kBlocksPrefix) + "*.";
  using P = SitePrecision;
  if (id == "attn_bf16" && transformer) return {rule(any_block + "attn.*", P::BF16)};
  if (id == "ffn_first" && transformer) return {rule(any_block + "attn.*", P::FP32, true)};
  if (id == "warmup") return {rule("*", P::FP32, true)};
  if (id == "wgrad_bf16") return {rule("*", P::BF16, false, {LinearGemm::Wgrad})};
  if (id == "ends_bf16" && transformer) {
    std::vector<PolicyRule> r{rule(blockName(0) + ".*", P::BF16)};
    if (blocks > 1) r.push_back(rule(blockName(blocks - 1) + ".*", P::BF16));
    r.push_back(rule(kLmHeadName, P::BF16));
    return r;
  }
  if (id == "fp8_attention" && transformer)
    return {rule(any_block + "attn.scores", P::Recipe), rule(any_block + "attn.context", P::Recipe)};
  return {};
}

} // namespace fp8lab

// FP8 Lab — the names of model sites and places, spelled once: PyTorch module paths ("fc2",
// "blocks.1.attn.qkv", "lm_head"). A run's SiteTable (training/sites.h) builds its site names
// from these; the session layout, the probes, the views and checkpoint export read a place back
// with sitePlace. Below every other part of core (session/ and training/ both use it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fp8lab {

/// the MLP's Linear layer `layer`
/// (0-based) is "fc<layer+1>"; transformer block b is "blocks.<b>" and its modules
/// "blocks.<b>.<module>" ("blocks.0.attn.qkv"); the language model's head is "lm_head".
std::string mlpLayerName(int64_t layer);
std::string blockName(int64_t block);
std::string blockSitePath(int64_t block, const std::string& module);
inline constexpr const char* kLmHeadName = "lm_head";
/// The prefix of every block name ("blocks."): a glob over all blocks is kBlocksPrefix + "*".
inline constexpr const char* kBlocksPrefix = "blocks.";

/// Where a tensor named by a module path sits, read from the name alone (for the names of runs
/// written elsewhere, such as the PyTorch bridge, and the probes' block outputs "blocks.<b>"):
/// the block index and the group the views gather it in.
struct SitePlace {
  int block = -1;   ///< "blocks.<b>…": b; −1 outside a block
  std::string key;  ///< "blocks.1.attn", "blocks.1.ffn" ("…mlp" as named), "blocks.1" (the block's
                    ///< output), "blocks.1.<part>", "head", "embedding"; empty: no group
  std::string role; ///< "attn", "ffn", "output", "<part>", "head", "embedding"; empty: none
};
SitePlace sitePlace(const std::string& path);

/// The 0-based layer of an MLP Linear name "fc<N>" (N ≥ 1, at most 6 digits); nullopt otherwise.
std::optional<int64_t> mlpLayerIndex(const std::string& name);

} // namespace fp8lab

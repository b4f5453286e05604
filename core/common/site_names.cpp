// FP8 Lab — site and place names (site_names.h).
#include "common/site_names.h"

#include <cctype>

namespace fp8lab {

std::string mlpLayerName(int64_t layer) {
  return "fc" + std::to_string(layer + 1);
}

std::string blockName(int64_t block) {
  return kBlocksPrefix + std::to_string(block);
}

std::string blockSitePath(int64_t block, const std::string& module) {
  return blockName(block) + "." + module;
}

SitePlace sitePlace(const std::string& path) {
  SitePlace p;
  static const std::string kBlocks = kBlocksPrefix;
  if (path.starts_with(kBlocks)) {
    size_t i = kBlocks.size(), j = i;
    while (j < path.size() && std::isdigit(static_cast<unsigned char>(path[j]))) ++j;
    if (j > i && j - i < 10 && (j == path.size() || path[j] == '.')) {
      p.block = std::stoi(path.substr(i, j - i));
      const std::string b = blockName(p.block);
      const size_t e = j < path.size() ? path.find('.', j + 1) : std::string::npos;
      const std::string part = j < path.size() ? path.substr(j + 1, e == std::string::npos ? e : e - j - 1) : "";
      if (part.empty()) {
        p.key = b;
        p.role = "output";
      } else {
        p.key = b + "." + part;
        p.role = part == "attn" ? "attn" : part == "ffn" || part == "mlp" ? "ffn" : part;
      }
      return p;
    }
  }
  if (path == kLmHeadName || path.starts_with(std::string(kLmHeadName) + ".")) {
    p.key = p.role = "head";
  } else if (path == "embedding" || path.starts_with("wte") || path.starts_with("wpe")) {
    p.key = p.role = "embedding";
  }
  return p;
}

std::optional<int64_t> mlpLayerIndex(const std::string& name) {
  if (name.size() < 3 || name.size() > 8 || name.compare(0, 2, "fc") != 0) return std::nullopt;
  for (size_t i = 2; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
  const int64_t n = std::stoll(name.substr(2));
  if (n < 1) return std::nullopt;
  return n - 1;
}

} // namespace fp8lab

// What a run holds, from its dataset paths (run_index.h).
#include "session/run_index.h"
#include "common/site_names.h"

#include "session/session_layout.h"

#include <algorithm>
#include <cstdlib>
#include <set>

namespace fp8lab::layout {

namespace {

bool bindFrom(std::string_view pat, std::string_view path, std::vector<std::string>* out) {
  if (pat.empty()) return path.empty();
  if (pat.front() == '<') {
    const size_t close = pat.find('>');
    if (close == std::string_view::npos) return false;
    const std::string_view rest = pat.substr(close + 1);
    for (size_t n = 1; n <= path.size(); ++n) {
      out->emplace_back(path.substr(0, n));
      if (bindFrom(rest, path.substr(n), out)) return true;
      out->pop_back();
    }
    return false;
  }
  if (path.empty() || pat.front() != path.front()) return false;
  return bindFrom(pat.substr(1), path.substr(1), out);
}

bool oneSegmentEach(const std::vector<std::string>& values) {
  return std::none_of(values.begin(), values.end(), [](const std::string& v) { return v.find('/') != v.npos; });
}

/// The (layer, operand) pairs of the paths matching `pattern`, whose placeholders from
/// `layer_at` on are layer, operand, stat, each one segment.
std::vector<LayerOperand> layerOperands(const std::vector<std::string>& datasets, const std::string& pattern,
                                        size_t layer_at) {
  std::set<LayerOperand> found;
  for (const std::string& d : datasets)
    if (const auto v = bind(pattern, d); v && oneSegmentEach(*v)) found.insert({(*v)[layer_at], (*v)[layer_at + 1]});
  return {found.begin(), found.end()};
}

} // namespace

std::optional<std::vector<std::string>> bind(std::string_view pattern, std::string_view path) {
  std::vector<std::string> values;
  if (!bindFrom(pattern, path, &values)) return std::nullopt;
  return values;
}

std::vector<std::string> historyOperands(const std::vector<std::string>& datasets) {
  std::vector<std::string> out;
  const std::string pattern = historyAmax("<operand>");
  for (const std::string& d : datasets)
    if (const auto v = bind(pattern, d)) out.push_back((*v)[0]);
  return out;
}

bool hasAmaxWindows(const std::vector<std::string>& datasets) {
  const std::string pattern = historyAmaxHistory("<operand>");
  return std::any_of(datasets.begin(), datasets.end(), [&](const std::string& d) { return bind(pattern, d); });
}

std::vector<LayerOperand> blockStatOperands(const std::vector<std::string>& datasets) {
  return layerOperands(datasets, blockStats("<layer>/<operand>", "<stat>"), 0);
}

std::vector<LayerOperand> whatIfOperands(const std::vector<std::string>& datasets) {
  return layerOperands(datasets, whatIf("<recipe>", "<layer>/<operand>", "<stat>"), 1);
}

std::vector<std::string> operandLayers(const std::vector<std::string>& datasets) {
  std::set<std::string> layers;
  auto add = [&](const std::vector<LayerOperand>& found) {
    for (const auto& [layer, operand] : found)
      if (operand == "input" || operand == "kernel" || operand == "output_grad") layers.insert(layer);
  };
  add(layerOperands(datasets, history("<layer>/<operand>/<stat>"), 0));
  add(blockStatOperands(datasets));
  add(whatIfOperands(datasets));
  return {layers.begin(), layers.end()};
}

std::vector<std::string> whatIfRecipes(const std::vector<std::string>& datasets) {
  std::vector<std::string> out;
  const std::string pattern = whatIf("<recipe>", "<layer>/<operand>", "<stat>");
  for (const std::string& d : datasets)
    if (const auto v = bind(pattern, d);
        v && oneSegmentEach(*v) && std::find(out.begin(), out.end(), (*v)[0]) == out.end())
      out.push_back((*v)[0]);
  return out;
}

std::vector<std::string> attentionBlocks(const std::vector<std::string>& datasets) {
  std::vector<std::pair<long, std::string>> found;
  const std::string pattern = attentionProbs("<block>");
  for (const std::string& d : datasets)
    if (const auto v = bind(pattern, d)) {
      const std::string& name = (*v)[0];
      if (const SitePlace p = sitePlace(name); p.role == "output" && name == blockName(p.block))
        found.push_back({p.block, name});
    }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::vector<WeightTensor> weightTensors(const std::vector<std::string>& datasets) {
  std::vector<WeightTensor> out;
  for (const std::string& d : datasets) {
    if (const auto v = bind(weights("<module>/kernel"), d))
      out.push_back({d, (*v)[0]});
    else if (const auto w = bind(weights("<module>.weight"), d))
      out.push_back({d, (*w)[0]});
  }
  std::sort(out.begin(), out.end(), [](const WeightTensor& a, const WeightTensor& b) { return a.path < b.path; });
  return out;
}

std::vector<std::string> dequantizedTensors(const std::vector<std::string>& datasets) {
  std::vector<std::string> out;
  for (const std::string& d : datasets)
    if (bind(quantizedDequantized("<tensor>"), d)) out.push_back(d);
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace fp8lab::layout

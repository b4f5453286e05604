// libFuzzer target: experiment-config reading of `fp8lab-cli run` — JSON text → JsonDocument
// (positions, duplicate keys) → for each experiment object, also inside {"experiments": [...]},
// parseGemmConfig and, for training configs, parseTrainingExperiment. Bad configs must give an
// error message naming the key; a duplicate key must be reported at its opening quote; nothing
// may crash or hang. No experiment is run.
#include "experiment/gemm/gemm_config.h"
#include "experiment/training/training_config.h"
#include "json/json_document.h"

#include <string>

using namespace fp8lab;

namespace {
void parseOne(const Json& o, const JsonDocument& doc, const ConfigPath& at) {
  GemmExperimentConfig g;
  ConfigReader r(&doc);
  if (!parseGemmConfig(o, &g, r, at) && r.error().empty()) __builtin_trap();
  if (isTrainingConfig(o)) {
    std::string terr;
    const auto spec = parseTrainingExperiment(o, &terr, &doc, at);
    if (!spec && terr.empty()) __builtin_trap();
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  JsonDocument doc;
  try {
    doc = JsonDocument::parse(text);
  } catch (const JsonTextError& e) {
    if (e.kind == JsonTextError::Kind::DuplicateKey) {
      // The reported place must be the opening quote of a key.
      size_t at = 0;
      for (int line = 1; line < e.pos.line && at < text.size(); ++at)
        if (text[at] == '\n') ++line;
      at += static_cast<size_t>(e.pos.column - 1);
      if (e.pos.line < 1 || e.pos.column < 1 || at >= text.size() || text[at] != '"') __builtin_trap();
    }
    return 0;
  }
  const Json& root = doc.root();
  if (!root.is_object()) return 0;
  if (root.contains("experiments") && root["experiments"].is_array()) {
    int n = 0;
    for (size_t i = 0; i < root["experiments"].size(); ++i)
      if (root["experiments"][i].is_object() && ++n <= 8)
        parseOne(root["experiments"][i], doc, ConfigPath{std::string(), "/experiments/" + std::to_string(i)});
  } else {
    parseOne(root, doc, {});
  }
  return 0;
}

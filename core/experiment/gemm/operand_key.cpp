// FP8 Lab — the operand key of a GEMM run (see operand_key.h).
#include "experiment/gemm/operand_key.h"

namespace fp8lab {

namespace {

/// A config value as text: strings as they are, whole numbers without a fraction.
std::string valueText(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == double(int64_t(d))) return std::to_string(int64_t(d));
    return v.dump();
  }
  return {};
}

} // namespace

std::string gemmOperandKey(const GemmOperandFacts& r) {
  if (r.type.rfind("gemm", 0) != 0) return {};
  const Json c = r.config.is_object() ? r.config : Json::object();
  auto tensorIn = [&](const char* key) { return c.contains(key) && c[key].is_object() && c[key].contains("tensor"); };
  const bool known = !r.a_origin.empty() || !r.b_origin.empty() || c.contains("seed") || tensorIn("a") ||
                     tensorIn("b") || c.contains("import_path");
  if (!known) return {};
  Json k = Json::object();
  for (const char* key : {"a", "b", "sigma", "distribution", "input", "import_path", "import_path_b", "session_file",
                          "training_run", "alpha", "beta", "c", "bias"})
    if (c.contains(key)) k[key] = c[key];
  if (r.a_origin.empty() && r.b_origin.empty() && c.contains("seed")) k["seed"] = c["seed"];
  auto dim = [&](const std::string& attr, const char* key, int64_t stored) {
    if (!attr.empty()) return attr;
    if (stored > 0) return std::to_string(stored);
    return c.contains(key) ? valueText(c[key]) : std::string();
  };
  k["shape"] =
      dim(r.m, "m", r.a_dims.first) + "x" + dim(r.k, "k", r.a_dims.second) + "x" + dim(r.n, "n", r.b_dims.second);
  k["a_origin"] = r.a_origin;
  k["b_origin"] = r.b_origin;
  return k.dump();
}

} // namespace fp8lab

// Sample values of the parameter schema's entries (core/experiment/param_schema.h) for the tests
// that drive every entry through a front end: tests/core/experiment/test_param_schema.cpp (the gemm
// flags, the config parser) and tests/ui/test_param_schema_panel.cpp (the experiment panel).
#pragma once

#include "experiment/param_schema.h"
#include "json/json_document.h"

#include <QStringList>

#include <sstream>
#include <string>
#include <vector>

namespace fp8lab::testsupport {

/// Whether an entry is a key of the GEMM config (not a command-only option).
inline bool inConfig(const ParamSpec& p) {
  return p.scope != ParamScope::None && !p.key.empty();
}

/// The config object an entry's key sits in: "" (top), "a", "b", "c", "bias".
inline std::vector<std::string> objectsOf(const ParamSpec& p) {
  switch (p.scope) {
  case ParamScope::Operands:
    return {"a", "b"};
  case ParamScope::OperandA:
    return {"a"};
  case ParamScope::OperandB:
    return {"b"};
  case ParamScope::C:
    return {"c"};
  case ParamScope::Bias:
    return {"bias"};
  default:
    return {""};
  }
}

/// The choice an entry needs to be read: its first "read by" name, as a value of the choice
/// entry that offers it (fast_accum_bits: accumulation fast; outlier_channels: distribution
/// channel_outliers; stochastic_bits: rounding stochastic). nullptr when every model reads it.
inline const ParamSpec* companionOf(const ParamSpec& p, std::string* value) {
  if (p.presets.empty()) return nullptr;
  *value = p.presets.substr(0, p.presets.find(' '));
  for (const ParamSpec& q : paramSchema())
    if (q.type == ParamType::Choice && !q.flag.empty() && &q != &p)
      for (const auto& c : q.choices)
        if (c == *value) return &q;
  return nullptr;
}

/// The flags (and config keys) that make `p` meaningful: its companion choice, and the epilogue
/// inputs its key needs (beta ≠ 0 and C go together; a C or bias scale needs its seed).
inline void addCompanions(const ParamSpec& p, QStringList* flags, Json* cfg) {
  std::string v;
  if (const ParamSpec* q = companionOf(p, &v)) {
    *flags << QStringLiteral("--") + QString::fromStdString(q->flag) << QString::fromStdString(v);
    if (q->scope == ParamScope::Operands)
      (*cfg)["a"][q->key] = (*cfg)["b"][q->key] = v;
    else
      (*cfg)[q->key] = v;
  }
  if (p.scope == ParamScope::C || p.key == "beta") {
    if (p.key != "beta") *flags << QStringLiteral("--beta") << QStringLiteral("0.5");
    if (p.flag != "c-seed") *flags << QStringLiteral("--c-seed") << QStringLiteral("3");
    (*cfg)["beta"] = 0.5;
    (*cfg)["c"]["seed"] = 3;
  }
  if (p.scope == ParamScope::Bias && p.flag != "bias-seed") {
    *flags << QStringLiteral("--bias-seed") << QStringLiteral("3");
    (*cfg)["bias"]["seed"] = 3;
  }
  // Block scales inside the MMA (the sample "inside") need block-scale codes: an MX preset.
  if (p.key == "mma_block_scales") {
    *flags << QStringLiteral("--scaling") << QStringLiteral("mx_rceil");
    (*cfg)["scaling"] = "mx_rceil";
  }
}

/// A value of `p` other than its default that the small test GEMM can run with, as flag text.
inline std::string sampleOf(const ParamSpec& p) {
  switch (p.type) {
  case ParamType::Integer:
    return std::to_string(int64_t(p.min) + 1 <= int64_t(p.max) ? int64_t(p.min) + 1 : int64_t(p.min));
  case ParamType::Number:
    return "0.5";
  case ParamType::Seed:
    return "7";
  case ParamType::Choice:
    return p.choices.size() > 1 ? p.choices[1] : p.choices[0];
  default:
    return {};
  }
}

/// max + 1 of a numeric entry as flag text ("1048577", a number just past a float max).
inline std::string pastMax(const ParamSpec& p) {
  if (p.type == ParamType::Integer) return std::to_string(int64_t(p.max) + 1);
  std::ostringstream s;
  s.precision(17);
  s << (p.max * 2 + 1);
  return s.str();
}

} // namespace fp8lab::testsupport

// FP8 Lab — the stored one-run config of a training run (see config_json.h).
#include "training/config_json.h"

#include "json/json_document.h"
#include "scaling/delayed_scaling.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace fp8lab {

namespace {

using OJson = nlohmann::ordered_json;

/// A setting's number: a float32 as the double its shortest round-trip text reads as (so that
/// render() writes that text again: "learning_rate": 0.001 reads back as the float32 it was), a
/// double as it is.
OJson number(float v) {
  char b[40];
  const auto r = std::to_chars(b, b + sizeof b, v);
  return OJson(std::strtod(std::string(b, r.ptr).c_str(), nullptr));
}
OJson number(double v) {
  return OJson(v);
}

/// A number's text: integers as the library writes them, floating-point values as their shortest
/// round-trip text (std::to_chars: 256, 3e-04, 0.001, -0).
std::string numberText(const OJson& v) {
  if (!v.is_number_float()) return v.dump();
  char b[40];
  const auto r = std::to_chars(b, b + sizeof b, v.get<double>());
  return std::string(b, r.ptr);
}

/// Nested values on one line: {"a": 1, "b": [2, 3]} (keys and scalars as the library writes them).
std::string render(const OJson& v) {
  if (v.is_object()) {
    std::string o = "{";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it, first = false)
      o += (first ? "" : ", ") + OJson(it.key()).dump() + ": " + render(it.value());
    return o + "}";
  }
  if (v.is_array()) {
    std::string o = "[";
    for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + render(v[i]);
    return o + "]";
  }
  return numberText(v);
}

/// The top level: one key per line.
std::string renderTop(const OJson& top) {
  std::string o = "{\n";
  bool first = true;
  for (auto it = top.begin(); it != top.end(); ++it, first = false)
    o += (first ? "" : ",\n") + std::string("  ") + OJson(it.key()).dump() + ": " + render(it.value());
  return o + "\n}";
}

// ---- the shared run settings (TrainingRunConfig), one writer each ------------------------------

OJson gemmJ(const GemmOptions& g) {
  OJson o = {{"accumulation", toString(g.accumulation)},
             {"promotion_interval", g.promotion_interval},
             {"fast_accum_bits", g.fast_accum_bits}};
  if (g.output != OutputType::FP32) o["output"] = toString(g.output);
  return o;
}

/// The knobs of the per-tensor strategy only: a delayed preset's window and margin, a current
/// one's power-of-two choice; saturate when off.
OJson scalingJ(const TrainingScalingConfig& s) {
  OJson o = {{"strategy", toString(s.kind)}};
  if (isDelayed(s.kind)) {
    o["history_len"] = s.history_len;
    o["amax_compute_algo"] = s.most_recent ? "most_recent" : "max";
    o["margin"] = s.margin;
  } else {
    o["power_of_two"] = s.power_of_two;
  }
  if (!s.saturate) o["saturate"] = false;
  return o;
}

OJson diagnosticsJ(const TrainingDiagnostics& dg) {
  OJson o = {{"block_stats", dg.block_stats}, {"map_every", dg.map_every}};
  if (!dg.what_if.empty()) {
    OJson r = OJson::array();
    for (const WhatIfRecipe& w : dg.what_if) r.push_back(w.id);
    o["what_if"] = OJson{{"every", dg.what_if_every}, {"recipes", r}};
  }
  return o;
}

OJson recipeJ(const TrainingRecipeConfig& r) {
  OJson o = {{"name", toString(r.recipe)}};
  if (r.recipe != TrainingRecipe::TeNvfp4) o["fp8_format"] = r.hybrid ? "HYBRID" : "E4M3";
  o["weight_2d"] = r.weight2d();
  if (r.recipe == TrainingRecipe::TeFloat8Block || r.recipe == TrainingRecipe::DeepSeekV3)
    o["power_of_two"] = r.powerOfTwo();
  if (r.recipe == TrainingRecipe::TeMxfp8 && r.mx_rule != ScaleRule::MxRceil)
    o["scale_calculation_mode"] = mxScaleModeName(r.mx_rule);
  if (r.recipe == TrainingRecipe::TeNvfp4) {
    o["hadamard"] = r.nvfp4_rht;
    o["stochastic_rounding"] = r.nvfp4_stochastic_rounding;
  }
  OJson ov = OJson::object();
  for (int i = 0; i < kOperandRoles; ++i) {
    const RoleOverride& x = r.overrides[static_cast<size_t>(i)];
    if (!x.kind && !x.format) continue;
    OJson e = OJson::object();
    if (x.kind) e["recipe"] = toString(*x.kind);
    if (x.format) e["format"] = x.format->name();
    ov[toString(static_cast<OperandRole>(i))] = e;
  }
  if (!ov.empty()) o["overrides"] = ov;
  return o;
}

OJson policyJ(const PrecisionPolicy& p) {
  OJson a = OJson::array();
  for (const PolicyRule& r : p.rules) {
    OJson e = {{"sites", r.sites}};
    if (!r.gemms.empty()) {
      OJson g = OJson::array();
      for (LinearGemm x : r.gemms)
        g.push_back(x == LinearGemm::Fprop ? "fprop" : x == LinearGemm::Dgrad ? "dgrad" : "wgrad");
      e["gemms"] = g;
    }
    e["precision"] = toString(r.precision);
    if (r.from_step > 0) e["from_step"] = r.from_step;
    if (r.until_step >= 0) e["until_step"] = r.until_step;
    a.push_back(e);
  }
  return a;
}

/// "precision", then the block recipe or the per-tensor scaling with its formats; a block
/// recipe's block_gemm where the model writes it beside the recipe.
void putPrecisionAndRecipe(OJson& j, const TrainingRunConfig& c, bool block_gemm_with_recipe) {
  j["precision"] = toString(c.precision);
  if (c.recipe.recipe != TrainingRecipe::PerTensor) {
    j["recipe"] = recipeJ(c.recipe);
    if (block_gemm_with_recipe) j["block_gemm"] = toString(c.block_gemm);
  } else {
    j["scaling"] = scalingJ(c.scaling);
    j["forward_format"] = c.forward_format->name();
    j["backward_format"] = c.backward_format->name();
  }
}

void putSeedAndGemms(OJson& j, const TrainingRunConfig& c) {
  j["seed"] = c.seed;
  j["forward_gemm"] = gemmJ(c.forward_gemm);
  j["backward_gemm"] = gemmJ(c.backward_gemm);
}

void putOnNonfinite(OJson& j, const TrainingRunConfig& c) {
  if (c.on_nonfinite != NonFinitePolicy::Stop) j["on_nonfinite"] = toString(c.on_nonfinite);
}

void putPolicy(OJson& j, const TrainingRunConfig& c) {
  if (!c.policy.rules.empty()) j["policy"] = policyJ(c.policy);
}

} // namespace

std::string recipeJson(const TrainingRecipeConfig& r) {
  return render(recipeJ(r));
}

std::string policyJson(const PrecisionPolicy& p) {
  return render(policyJ(p));
}

std::string trainingConfigJson(const TrainingConfig& c, const std::string& run_id, int64_t train_limit,
                               int64_t test_limit, const std::string& data_dir) {
  OJson j = {{"type", "training"}, {"id", run_id}, {"dataset", "fashion-mnist"}};
  if (!data_dir.empty()) j["data_dir"] = data_dir;
  j["train_limit"] = train_limit;
  j["test_limit"] = test_limit;
  putPrecisionAndRecipe(j, c, false);
  j["layers"] = c.layer_sizes;
  j["batch_size"] = c.batch_size;
  j["epochs"] = c.epochs;
  j["optimizer"] = OJson{{"name", "adam"},
                         {"learning_rate", number(c.learning_rate)},
                         {"beta1", number(c.beta1)},
                         {"beta2", number(c.beta2)},
                         {"epsilon", number(c.adam_epsilon)}};
  putSeedAndGemms(j, c);
  if (c.spike.enabled) {
    OJson s = {{"step", c.spike.step}, {"factor", number(c.spike.factor)}, {"layer", c.spike.layer}};
    if (c.spike.row >= 0) s["row"] = c.spike.row;
    if (c.spike.col >= 0) s["col"] = c.spike.col;
    j["spike"] = s;
  }
  putOnNonfinite(j, c);
  // the MLP writes diagnostics that differ from its defaults (block statistics every step, maps
  // every 250, no what-if recipes)
  if (const TrainingDiagnostics& dg = c.diagnostics; !dg.block_stats || dg.map_every != 250 || !dg.what_if.empty())
    j["diagnostics"] = diagnosticsJ(dg);
  putPolicy(j, c);
  if (c.block_gemm != BlockGemmPath::FakeQuant) j["block_gemm"] = toString(c.block_gemm);
  j["eval_batch_size"] = c.eval_batch_size;
  j["record_history"] = c.record_history;
  return renderTop(j);
}

std::string lmConfigJson(const LmTrainingConfig& c, const std::string& run_id) {
  const TransformerConfig& m = c.model;
  OJson j = {{"type", "training"}, {"id", run_id}};
  j["model"] = OJson{{"kind", "transformer"},
                     {"d_model", m.d_model},
                     {"layers", m.layers},
                     {"heads", m.heads},
                     {"context", m.context},
                     {"ffn_hidden", m.ffn_hidden},
                     {"ffn", toString(m.ffn)},
                     {"norm", toString(m.norm)},
                     {"norm_position", m.pre_norm ? "pre" : "post"},
                     {"tied_embeddings", m.tied_embeddings},
                     {"position_embedding", m.position_embedding}};
  if (!m.linear_bias) j["model"]["bias"] = false;
  OJson d = OJson::object();
  if (!c.data.path.empty())
    d["text"] = c.data.path;
  else
    d["corpus"] = c.data.corpus;
  d["val_fraction"] = number(c.data.val_fraction);
  if (c.data.documents) d["documents"] = true;
  if (!c.data.task.empty()) {
    d["task"] = c.data.task;
    d["triggers"] = c.data.triggers;
    d["sequences"] = c.data.sequences;
    d["seed"] = c.data.task_seed;
  }
  j["data"] = d;
  putPrecisionAndRecipe(j, c, true);
  putPolicy(j, c);
  j["softmax_scale"] = number(c.softmax_scale);
  j["batch_size"] = c.batch_size;
  j["steps"] = c.steps;
  const OptimizerConfig& op = c.optimizer;
  OJson o = {{"name", toString(op.kind)}, {"learning_rate", number(op.learning_rate)}};
  if (op.kind == OptimizerKind::Adam) {
    o["beta1"] = number(op.beta1);
    o["beta2"] = number(op.beta2);
    o["epsilon"] = number(op.epsilon);
  } else {
    o["momentum"] = number(op.momentum);
  }
  o["weight_decay"] = number(op.weight_decay);
  o["warmup_steps"] = c.warmup_steps;
  o["min_lr_ratio"] = number(c.min_lr_ratio);
  o["clip_norm"] = number(c.clip_norm);
  j["optimizer"] = o;
  putSeedAndGemms(j, c);
  j["eval"] = OJson{{"every", c.eval_every}, {"batches", c.eval_batches}};
  j["probes"] = OJson{{"every", c.probes.every},
                      {"massive_threshold", number(c.probes.massive_threshold)},
                      {"massive_ratio", number(c.probes.massive_ratio)},
                      {"attention_every", c.probes.attention_every}};
  putOnNonfinite(j, c);
  j["diagnostics"] = diagnosticsJ(c.diagnostics); // always: the language model's map_every is 200
  j["sample_bytes"] = c.sample_bytes;
  j["sample_temperature"] = number(c.sample_temperature);
  j["record_history"] = c.record_history;
  return renderTop(j);
}

} // namespace fp8lab

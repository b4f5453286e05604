#include "experiment/training/training_config.h"
#include "experiment/training/training_keys.h"
#include "experiment/training/training_schema.h"
#include "training/sites.h"
#include "experiment/gemm/sweep.h"

#include "experiment/param_schema.h"

#include "formats/format.h"
#include "scaling/scaling.h"
#include "session/session.h"
#include "training/training_session.h"

#include <algorithm>
#include <functional>
#include <cctype>
#include <set>
#include <tuple>

namespace fp8lab {

namespace {

/// The keys a run object may have: the shared settings' and every model kind's own (built once).
const std::vector<std::string>& runKeys() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> keys = {"type",
                                     "id",
                                     "label",
                                     "description",
                                     "precision",
                                     "scaling",
                                     "recipe",
                                     "forward_format",
                                     "backward_format",
                                     "forward_gemm",
                                     "backward_gemm",
                                     "batch_size",
                                     "optimizer",
                                     "seed",
                                     "threads",
                                     "record_history",
                                     "on_nonfinite",
                                     "diagnostics",
                                     "policy",
                                     "block_gemm",
                                     "model"};
    for (const TrainingModelKind* k : trainingModelKinds())
      for (const std::string& key : k->own_keys)
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    return keys;
  }();
  return all;
}

/// "policy": [{"sites": GLOB, "gemms": ["fprop", ...], "precision": "fp32" | "bf16" | "recipe",
/// "from_step": N, "until_step": M}, ...].
PrecisionPolicy readPolicy(ConfigReader& r, const Json& o, const ConfigPath& where) {
  PrecisionPolicy p;
  if (!ConfigReader::has(o, "policy")) return p;
  const ConfigPath w = where.member("policy");
  const Json& pv = o["policy"];
  if (!pv.is_array()) {
    r.fail(w, "must be a list of rules, e.g. [{\"sites\": \"blocks.*.attn.*\", \"precision\": \"bf16\"}]");
    return p;
  }
  for (size_t i = 0; i < pv.size(); ++i) {
    const ConfigPath e = w.element(i);
    if (!pv[i].is_object()) {
      r.fail(e, "must be an object with \"sites\" and \"precision\"");
      continue;
    }
    const Json& ro = pv[i];
    r.checkKeys(ro, e, {"sites", "gemms", "precision", "from_step", "until_step"});
    PolicyRule rule;
    rule.sites = r.string(ro, "sites", e, "*");
    const std::string prec = lowerName(r.string(ro, "precision", e, {}));
    if (const auto sp = parseSitePrecision(prec))
      rule.precision = *sp;
    else if (r.ok())
      r.fail(e.member("precision"), "unknown precision '" + prec + "' (recipe, fp32, bf16)");
    if (ConfigReader::has(ro, "gemms")) {
      const Json& g = ro["gemms"];
      if (!g.is_array() || g.empty()) r.fail(e.member("gemms"), "must be a non-empty list of fprop, dgrad, wgrad");
      for (size_t k = 0; g.is_array() && k < g.size(); ++k) {
        const std::string n = g[k].is_string() ? g[k].get<std::string>() : std::string();
        if (n == "fprop")
          rule.gemms.push_back(LinearGemm::Fprop);
        else if (n == "dgrad")
          rule.gemms.push_back(LinearGemm::Dgrad);
        else if (n == "wgrad")
          rule.gemms.push_back(LinearGemm::Wgrad);
        else
          r.fail(e.member("gemms").element(k), "unknown GEMM '" + n + "' (fprop, dgrad, wgrad)");
      }
    }
    rule.from_step = r.integer(ro, "from_step", e, 0, 0, int64_t{1} << 40);
    rule.until_step = r.integer(ro, "until_step", e, -1, 1, int64_t{1} << 40);
    p.rules.push_back(std::move(rule));
  }
  return p;
}

const char* kRoleNames = "fprop.input, fprop.weight, dgrad.grad_output, dgrad.weight, wgrad.input, "
                         "wgrad.grad_output, or fprop / dgrad / wgrad for both operands of that GEMM";

std::optional<RoleKind> parseRoleKind(const std::string& s) {
  for (auto k :
       {RoleKind::HighPrecision, RoleKind::Float8Block, RoleKind::Mxfp8, RoleKind::Nvfp4, RoleKind::DeepSeekBlock})
    if (s == toString(k)) return k;
  return std::nullopt;
}

/// The training recipe that a GEMM scaling preset's name stands for in a training config, for the
/// refusal of an unknown recipe ("deepgemm_1x128" → "deepseek_v3"); "" when none.
std::string trainingRecipeForPreset(const std::string& name) {
  if (name.rfind("deepgemm", 0) == 0 || name.rfind("dsv3", 0) == 0 || name.rfind("deepseek", 0) == 0)
    return "deepseek_v3";
  if (name.rfind("te_block", 0) == 0) return "te_float8_block";
  if (name.rfind("mx_", 0) == 0 || name == "mxfp8") return "te_mxfp8";
  if (name.rfind("nvfp4", 0) == 0) return "te_nvfp4";
  return {};
}

/// The "recipe" member of a run: a name, or {"name", "fp8_format", "weight_2d", "power_of_two",
/// "scale_calculation_mode", "hadamard", "stochastic_rounding", "overrides": {role: {"recipe",
/// "format"}}}.
void readRecipe(ConfigReader& r, const Json& o, const ConfigPath& where, TrainingRunConfig& c) {
  const ConfigPath w = where.member("recipe");
  const Json& rv = o["recipe"];
  if (!rv.is_string() && !rv.is_object()) {
    r.fail(w, "must be a recipe name (" + trainingRecipeNames() + ") or an object with \"name\"");
    return;
  }
  Json ro = rv.is_string() ? Json::object({{"name", rv}}) : rv;
  const ConfigPath nw = rv.is_string() ? w : w.member("name");
  if (rv.is_object())
    r.checkKeys(ro, w,
                {"name", "fp8_format", "weight_2d", "power_of_two", "scale_calculation_mode", "hadamard",
                 "stochastic_rounding", "overrides"});
  if (!ro.contains("name")) {
    r.fail(w, "needs \"name\" (" + trainingRecipeNames() + ")");
    return;
  }
  const std::string name = ro["name"].is_string() ? ro["name"].get<std::string>() : std::string();
  const auto rec = parseTrainingRecipe(lowerName(name));
  if (!rec || *rec == TrainingRecipe::PerTensor) {
    const std::string hint = trainingRecipeForPreset(lowerName(name));
    r.fail(nw,
           "unknown recipe '" + name + "' (" + trainingRecipeNames() +
               "; per-tensor scaling is \"scaling\" without a recipe)" +
               (hint.empty() ? std::string()
                             : "; '" + name + "' is a GEMM scaling preset, the training recipe with its scales is '" +
                                   hint + "'"));
    return;
  }
  TrainingRecipeConfig& rc = c.recipe;
  rc.recipe = *rec;
  const std::string f8 = r.string(ro, "fp8_format", w, "E4M3");
  // te_nvfp4 has E2M1 elements in every role: "E4M3" (the default, in configs stored by earlier
  // versions) changes nothing, "HYBRID" would be silently ignored, so it is refused.
  if (rc.recipe == TrainingRecipe::TeNvfp4 && (f8 == "HYBRID" || f8 == "hybrid")) {
    r.fail(w.member("fp8_format"), "te_nvfp4 has E2M1 elements in every role; HYBRID applies to the FP8 recipes");
    return;
  }
  if (f8 == "HYBRID" || f8 == "hybrid")
    rc.hybrid = true;
  else if (f8 != "E4M3" && f8 != "e4m3")
    r.fail(w.member("fp8_format"), "must be \"E4M3\" or \"HYBRID\" (TE recipe fp8_format)");
  if (ConfigReader::has(ro, "weight_2d")) rc.weight_2d = r.boolean(ro, "weight_2d", w, true);
  if (ConfigReader::has(ro, "power_of_two")) {
    if (rc.recipe != TrainingRecipe::TeFloat8Block && rc.recipe != TrainingRecipe::DeepSeekV3)
      r.fail(w.member("power_of_two"), "only te_float8_block and deepseek_v3 have this option");
    else
      rc.power_of_two = r.boolean(ro, "power_of_two", w, rc.powerOfTwo());
  }
  if (ConfigReader::has(ro, "scale_calculation_mode")) {
    const std::string m = r.string(ro, "scale_calculation_mode", w, "rceil");
    const auto rule = parseMxScaleMode(lowerName(m));
    if (rc.recipe != TrainingRecipe::TeMxfp8)
      r.fail(w.member("scale_calculation_mode"), "only te_mxfp8 has this option");
    else if (!rule)
      r.fail(w.member("scale_calculation_mode"),
             "unknown MX scale mode '" + m + "' (rceil, floor, ceil, even: torchao ScaleCalculationMode)");
    else
      rc.mx_rule = *rule;
  }
  for (const char* k : {"hadamard", "stochastic_rounding"})
    if (ConfigReader::has(ro, k) && rc.recipe != TrainingRecipe::TeNvfp4)
      r.fail(w.member(k), "only te_nvfp4 has this option");
  rc.nvfp4_rht = r.boolean(ro, "hadamard", w, true);
  rc.nvfp4_stochastic_rounding = r.boolean(ro, "stochastic_rounding", w, true);
  if (const Json* ov = r.object(ro, "overrides", w)) {
    const ConfigPath owp = w.member("overrides");
    for (auto it = ov->begin(); it != ov->end(); ++it) {
      const ConfigPath rp = owp.member(it.key());
      std::vector<OperandRole> roles;
      if (it.key() == "fprop")
        roles = {OperandRole::FpropInput, OperandRole::FpropWeight};
      else if (it.key() == "dgrad")
        roles = {OperandRole::DgradGradOutput, OperandRole::DgradWeight};
      else if (it.key() == "wgrad")
        roles = {OperandRole::WgradInput, OperandRole::WgradGradOutput};
      else if (const auto one = parseOperandRole(it.key()))
        roles = {*one};
      else {
        r.fail(rp, "unknown role '" + it.key() + "' (" + kRoleNames + ")");
        continue;
      }
      if (!it.value().is_object()) {
        r.fail(rp, "must be an object with \"recipe\" and/or \"format\"");
        continue;
      }
      r.checkKeys(it.value(), rp, {"recipe", "format"});
      RoleOverride x;
      if (ConfigReader::has(it.value(), "recipe")) {
        const std::string k = r.string(it.value(), "recipe", rp, {});
        x.kind = parseRoleKind(lowerName(k));
        if (!x.kind)
          r.fail(rp.member("recipe"), "unknown recipe '" + k + "' (high_precision, " + trainingRecipeNames() + ")");
      }
      x.format = r.format(it.value(), "format", rp, nullptr);
      for (OperandRole role : roles) {
        RoleOverride& dst = rc.overrides[static_cast<size_t>(role)];
        if (x.kind) dst.kind = x.kind;
        if (x.format) dst.format = x.format;
      }
    }
    if (r.ok())
      if (const std::string why = rc.validate(); !why.empty()) r.fail(owp, why);
  }
  if (c.precision != TrainingPrecision::FP8) r.fail(w, "a recipe needs precision \"fp8\"");
  for (const char* k : {"scaling", "forward_format", "backward_format"})
    if (ConfigReader::has(o, k))
      r.fail(where.member(k), std::string("a block recipe sets its own scaling and formats (recipe.fp8_format, "
                                          "recipe.overrides.<role>.format); remove \"") +
                                  k + "\"");
}

Accumulation readAccumulation(ConfigReader& r, const Json& o, const ConfigPath& at, Accumulation def) {
  if (!ConfigReader::has(o, "accumulation")) return def;
  const std::string s = r.string(o, "accumulation", at, {});
  if (!r.ok()) return def;
  const auto a = parseAccumulation(s);
  if (!a) {
    r.fail(at.member("accumulation"), "unknown accumulation '" + s + "' (" + accumulationNames() + ")");
    return def;
  }
  return *a;
}

/// A GEMM integer key of `o` in the range of its parameter schema entry (param_schema.h).
int64_t schemaInteger(ConfigReader& r, const Json& o, const char* key, const ConfigPath& at, int64_t def) {
  const ParamSpec& p = param(key);
  return r.integer(o, key, at, def, int64_t(p.min), int64_t(p.max));
}

GemmOptions readGemm(ConfigReader& r, const Json& o, std::string_view key, const ConfigPath& at, GemmOptions g) {
  const Json* go = r.object(o, key, at);
  if (!go) return g;
  const ConfigPath w = at.member(key);
  r.checkKeys(*go, w, {"accumulation", "promotion_interval", "fast_accum_bits", "output"});
  g.accumulation = readAccumulation(r, *go, w, g.accumulation);
  g.promotion_interval = static_cast<int>(schemaInteger(r, *go, "promotion_interval", w, g.promotion_interval));
  g.fast_accum_bits = static_cast<int>(schemaInteger(r, *go, "fast_accum_bits", w, g.fast_accum_bits));
  if (ConfigReader::has(*go, "output")) {
    const std::string s = r.string(*go, "output", w, "fp32");
    const auto t = parseOutputType(s);
    if (r.ok() && (!t || (*t != OutputType::FP32 && *t != OutputType::BF16 && *t != OutputType::FP16)))
      r.fail(w.member("output"), "unknown output type '" + s + "' (fp32, bf16, fp16)");
    else if (t)
      g.output = *t;
  }
  return g;
}

/// Members of `over` replace those of `base` (one level; nested objects are merged one more level).
Json merged(const Json& base, const Json& over) {
  Json r = base.is_object() ? base : Json::object();
  for (auto it = over.begin(); it != over.end(); ++it) {
    if (it.value().is_object() && r.contains(it.key()) && r[it.key()].is_object()) {
      for (auto j = it.value().begin(); j != it.value().end(); ++j) r[it.key()][j.key()] = j.value();
    } else {
      r[it.key()] = it.value();
    }
  }
  return r;
}

std::string defaultRunId(const Json& o, int index) {
  const std::string prec =
      o.contains("precision") && o["precision"].is_string() ? o["precision"].get<std::string>() : std::string("fp8");
  if (prec == "fp32") return "fp32-baseline";
  std::string strat = "delayed-flax";
  if (o.contains("scaling") && o["scaling"].is_object() && o["scaling"].contains("strategy") &&
      o["scaling"]["strategy"].is_string())
    strat = o["scaling"]["strategy"].get<std::string>();
  // A block recipe names the run ("te_mxfp8" → "te-mxfp8"): it has no per-tensor strategy.
  if (o.contains("recipe")) {
    const Json& rc = o["recipe"];
    if (rc.is_string())
      strat = rc.get<std::string>();
    else if (rc.is_object() && rc.contains("name") && rc["name"].is_string())
      strat = rc["name"].get<std::string>();
    for (char& ch : strat)
      if (ch == '_') ch = '-';
  }
  std::string id = prec == "fp8" ? "fp8-" : prec + "-";
  id += strat;
  if (index > 0) {
    id += '-';
    id += std::to_string(index + 1);
  }
  return id;
}

/// The model kind of run object `o`: the kind its "model" object names (transformerModelKind()'s
/// when it names none), the MLP's for a run without "model"; null after a failure.
const TrainingModelKind* readModelKind(ConfigReader& r, const Json& o, const ConfigPath& where) {
  if (!ConfigReader::has(o, "model")) return &mlpModelKind();
  const Json* mo = r.object(o, "model", where);
  if (!mo) return nullptr;
  const ConfigPath mw = where.member("model");
  const std::string name = lowerName(r.string(*mo, "kind", mw, transformerModelKind().kind));
  const TrainingModelKind* kind = findTrainingModelKind(name);
  if (r.ok() && (!kind || kind == &mlpModelKind())) {
    std::string kinds;
    for (const TrainingModelKind* k : trainingModelKinds())
      if (k != &mlpModelKind()) kinds += (kinds.empty() ? "" : ", ") + k->kind;
    r.fail(mw.member("kind"),
           "unknown model kind '" + name + "' (" + kinds + "; the MLP is the run without \"model\")");
    return nullptr;
  }
  return kind;
}

/// One run object: the settings every run shares (TrainingRunConfig), then its model's own
/// members, read by its kind (TrainingModelKind::parse). A key another kind owns is refused,
/// naming that kind.
TrainingRunSpec parseRun(ConfigReader& r, const Json& o, const ConfigPath& where, const std::string& default_id) {
  TrainingRunSpec s;
  TrainingRunConfig c;
  r.checkKeys(o, where, runKeys());
  if (ConfigReader::has(o, "type") && r.string(o, "type", where, {}) != "training")
    r.fail(where.member("type"), "must be \"training\"");
  s.id = r.string(o, "id", where, default_id);
  std::string why;
  if (!isValidRunId(s.id, &why)) r.fail(where.member("id"), why);
  c.label = r.string(o, "label", where, s.id);
  c.precision = trainingChoice(r, o, "precision", "", where, "precision",
                               [](const std::string& v) { return v == "fp8" || v == "fp32"; }) == "fp32"
                    ? TrainingPrecision::FP32
                    : TrainingPrecision::FP8;
  if (const Json* so = r.object(o, "scaling", where)) {
    const ConfigPath w = where.member("scaling");
    r.checkKeys(*so, w, {"strategy", "history_len", "amax_compute_algo", "margin", "power_of_two", "saturate"});
    const std::string strat = trainingChoice(r, *so, "scaling.strategy", "", w, "strategy", [&](const std::string& v) {
      return parseTrainingScalingKind(v, &c.scaling.kind);
    });
    const ParamSpec& hl = param("history_len", ParamScope::None);
    c.scaling.history_len = static_cast<int>(r.integer(*so, "history_len", w, 1024, int64_t(hl.min), int64_t(hl.max)));
    const std::string algo = r.string(*so, "amax_compute_algo", w, "max");
    if (algo == "most_recent")
      c.scaling.most_recent = true;
    else if (algo != "max")
      r.fail(w.member("amax_compute_algo"), "must be \"max\" or \"most_recent\"");
    const ParamSpec& mg = param("margin", ParamScope::None);
    c.scaling.margin = static_cast<int>(r.integer(*so, "margin", w, 0, int64_t(mg.min), int64_t(mg.max)));
    c.scaling.power_of_two = r.boolean(*so, "power_of_two", w, false);
    c.scaling.saturate = r.boolean(*so, "saturate", w, true);
    if (c.scaling.kind == TrainingScalingKind::DelayedFlax && (c.scaling.margin != 0 || c.scaling.most_recent))
      r.fail(w, "the Flax preset has no margin and only amax_compute_algo \"max\" (use delayed-te)");
    // A knob the strategy does not have is refused when it asks for something: kept in the
    // stored config, it would say the run used what it did not. (Sessions store every knob at its
    // default, so a default value is accepted.)
    const bool delayed =
        c.scaling.kind == TrainingScalingKind::DelayedFlax || c.scaling.kind == TrainingScalingKind::DelayedTE;
    const char* foreign = nullptr;
    if (!delayed && ConfigReader::has(*so, "margin") && c.scaling.margin != 0) foreign = "margin";
    if (!delayed && c.scaling.most_recent) foreign = "amax_compute_algo";
    if (!delayed && ConfigReader::has(*so, "history_len") && c.scaling.history_len != 1024) foreign = "history_len";
    if (r.ok() && foreign)
      r.fail(w.member(foreign), "'" + strat +
                                    "' scales each tensor from its own amax: it keeps no amax history, so it has no "
                                    "history_len, amax_compute_algo or margin (those are delayed-te's)");
    if (r.ok() && delayed && c.scaling.power_of_two)
      r.fail(w.member("power_of_two"), "'" + strat +
                                           "' computes float32 scales with no power-of-two option; power_of_two "
                                           "applies to current-te and current-torchao");
  }
  if (ConfigReader::has(o, "recipe")) readRecipe(r, o, where, c);
  c.forward_format = r.format(o, "forward_format", where, c.forward_format);
  c.backward_format = r.format(o, "backward_format", where, c.backward_format);
  c.threads = static_cast<int>(trainingInteger(r, o, "threads", "mlp", where));
  c.seed = r.seed(o, "seed", where, c.seed);
  c.record_history = r.boolean(o, "record_history", where, true);
  c.forward_gemm = readGemm(r, o, "forward_gemm", where, c.forward_gemm);
  c.backward_gemm = readGemm(r, o, "backward_gemm", where, c.backward_gemm);
  c.setThreads(c.threads);
  if (ConfigReader::has(o, "on_nonfinite")) {
    (void)trainingChoice(r, o, "on_nonfinite", "", where, "value",
                         [&](const std::string& v) { return parseNonFinitePolicy(v, &c.on_nonfinite); });
  }
  if (const Json* dg = r.object(o, "diagnostics", where)) {
    const ConfigPath w = where.member("diagnostics");
    r.checkKeys(*dg, w, {"block_stats", "map_every", "what_if"});
    c.diagnostics.block_stats = r.boolean(*dg, "block_stats", w, true);
    c.diagnostics.map_every = static_cast<int>(r.integer(*dg, "map_every", w, 250, 0, 1 << 30));
    if (const Json* wi = r.object(*dg, "what_if", w)) {
      const ConfigPath ww = w.member("what_if");
      r.checkKeys(*wi, ww, {"every", "recipes"});
      c.diagnostics.what_if_every = static_cast<int>(r.integer(*wi, "every", ww, 50, 1, 1 << 30));
      const Json& rl = (*wi)["recipes"];
      if (!wi->contains("recipes") || !rl.is_array() || rl.empty()) {
        r.fail(ww.member("recipes"), "must be a non-empty list of recipe ids, e.g. [\"te_current\", \"mx_rceil\"]");
      } else {
        for (size_t i = 0; i < rl.size(); ++i) {
          std::string why;
          const auto rec = rl[i].is_string() ? parseWhatIfRecipe(rl[i].get<std::string>(), &why) : std::nullopt;
          if (!rl[i].is_string()) why = "must be a recipe id (a string)";
          if (!rec) {
            r.fail(ww.member("recipes").element(i), why);
          } else if (std::any_of(c.diagnostics.what_if.begin(), c.diagnostics.what_if.end(),
                                 [&](const WhatIfRecipe& w) { return w.id == rec->id; })) {
            r.fail(ww.member("recipes").element(i), "'" + rec->id + "' is listed twice");
          } else {
            c.diagnostics.what_if.push_back(*rec);
          }
        }
      }
    }
  }
  c.policy = readPolicy(r, o, where);
  if (ConfigReader::has(o, "block_gemm"))
    (void)trainingChoice(r, o, "block_gemm", "mlp", where, "value", [&](const std::string& v) {
      const auto p = parseBlockGemmPath(v);
      if (p) c.block_gemm = *p;
      return p.has_value();
    });
  const TrainingModelKind* kind = readModelKind(r, o, where);
  if (!kind) return s;
  s.model_kind = kind->kind;
  for (const TrainingModelKind* other : trainingModelKinds())
    for (const std::string& k : other->own_keys)
      if (other != kind && ConfigReader::has(o, k) && r.ok() &&
          std::find(kind->own_keys.begin(), kind->own_keys.end(), k) == kind->own_keys.end())
        r.fail(where.member(k), "applies to " + other->subject);
  kind->parse(r, o, where, c, s);
  return s;
}

void readWeightGemmOptions(ConfigReader& r, const Json& go, const ConfigPath& w, WeightGemmConfig* g) {
  g->rows = r.integer(go, "rows", w, 1000, 1, 10000);
  g->scaling = r.string(go, "scaling", w, "te_current");
  if (r.ok() && !scalingPreset(g->scaling))
    r.fail(w.member("scaling"),
           "'" + g->scaling + "' is not a current-scaling preset (see fp8lab-cli quantize --help)");
  // format_a / format_b as in a "gemm" config; a_format / b_format are the names configs and
  // stored runs used before, still read.
  for (const auto& [key, old, f] :
       {std::tuple{"format_a", "a_format", &g->format_a}, std::tuple{"format_b", "b_format", &g->format_b}}) {
    if (ConfigReader::has(go, key) && ConfigReader::has(go, old) && r.ok())
      r.fail(w.member(old), std::string("give \"") + key + "\" only (\"" + old + "\" is its older name)");
    *f = r.format(go, ConfigReader::has(go, old) ? old : key, w, *f);
  }
  g->gemm.accumulation = readAccumulation(r, go, w, g->gemm.accumulation);
  g->gemm.promotion_interval = static_cast<int>(schemaInteger(r, go, "promotion_interval", w, 128));
  g->gemm.fast_accum_bits = static_cast<int>(schemaInteger(r, go, "fast_accum_bits", w, 14));
}

/// The experiment's "seeds": a list of integers in [0, 2^53] or a string parseSeedList reads
/// ("1-3,5"), non-empty, each seed once. False with *why otherwise.
bool readSeeds(const Json& v, std::vector<uint64_t>* seeds, std::string* why) {
  seeds->clear();
  if (v.is_string()) {
    const auto list = parseSeedList(v.get<std::string>(), why);
    if (!list) return false;
    *seeds = *list;
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].is_number_unsigned() && v[i].get<uint64_t>() <= (uint64_t(1) << 53)) {
        seeds->push_back(v[i].get<uint64_t>());
      } else {
        *why = "entry " + std::to_string(i) + " is not an integer seed in [0, 2^53]";
        return false;
      }
    }
  } else {
    *why = "expected a list of seeds or a string such as \"1-3\"";
    return false;
  }
  if (seeds->empty()) {
    *why = "an empty list (leave it out to run each run once with its own seed)";
    return false;
  }
  for (size_t i = 0; i < seeds->size(); ++i)
    if (std::count(seeds->begin(), seeds->end(), (*seeds)[i]) > 1) {
      *why = "seed " + std::to_string((*seeds)[i]) + " is listed twice";
      return false;
    }
  return true;
}

} // namespace

std::string TrainingRunSpec::configJson() const {
  return kind().config_json(*this);
}

const TrainingModelKind& TrainingRunSpec::kind() const {
  const TrainingModelKind* k = findTrainingModelKind(model_kind);
  if (!k) throw std::logic_error("training run '" + id + "': unknown model kind '" + model_kind + "'");
  return *k;
}

TrainingRunConfig& TrainingRunSpec::run() {
  return kind().run(*this);
}

const TrainingRunConfig& TrainingRunSpec::run() const {
  return kind().run(const_cast<TrainingRunSpec&>(*this));
}

SiteTable TrainingRunSpec::sites() const {
  return kind().sites(*this);
}

int64_t TrainingRunSpec::steps() const {
  return kind().steps(*this);
}

std::string WeightGemmSpec::runId(int layer) const {
  return "gemm-" + from_run + "-fc" + std::to_string(layer + 1);
}

std::string WeightGemmSpec::configJson(int layer) const {
  Json j = Json::object();
  j["type"] = "gemm-trained-weights";
  j["from_run"] = from_run;
  j["layer"] = mlpLayerName(layer);
  j["rows"] = gemm.rows;
  j["scaling"] = gemm.scaling;
  j["format_a"] = gemm.format_a->name();
  j["format_b"] = gemm.format_b->name();
  j["accumulation"] = toString(gemm.gemm.accumulation);
  j["promotion_interval"] = gemm.gemm.promotion_interval;
  j["fast_accum_bits"] = gemm.gemm.fast_accum_bits;
  return j.dump(2);
}

bool isTrainingConfig(const Json& config) {
  if (!config.is_object()) return false;
  if (config.contains("type") && config["type"] == "training") return true;
  return config.contains("runs") && config["runs"].is_array() && !config["runs"].empty() &&
         config["runs"][0].is_object() && config["runs"][0].contains("type") && config["runs"][0]["type"] == "training";
}

std::optional<TrainingExperimentSpec> parseTrainingExperiment(const Json& config, std::string* error,
                                                              const JsonDocument* doc, const ConfigPath& at) {
  ConfigReader r(doc);
  TrainingExperimentSpec spec;
  if (!config.is_object()) {
    r.fail(at, "expected an object");
  } else if (!config.contains("runs")) {
    // "seeds" belongs to the experiment, not to the run: the run is parsed without it.
    Json run = config;
    run.erase("seeds");
    spec.runs.push_back(parseRun(r, run, at, defaultRunId(config, 0)));
  } else {
    r.checkKeys(config, at,
                {"type", "name", "description", "dataset", "data_dir", "train_limit", "test_limit", "defaults", "runs",
                 "gemm_on_trained_weights", "notes", "seeds"});
    spec.name = r.string(config, "name", at, "training");
    Json defaults = Json::object();
    if (const Json* d = r.object(config, "defaults", at)) defaults = *d;
    for (const char* k : {"dataset", "data_dir", "train_limit", "test_limit"})
      if (config.contains(k)) defaults[k] = config[k];
    const Json& rv = config["runs"];
    if (!rv.is_array() || rv.empty()) r.fail(at.member("runs"), "must be a non-empty array");
    std::set<std::string> ids;
    for (size_t i = 0; rv.is_array() && i < rv.size(); ++i) {
      const ConfigPath where = at.member("runs").element(i);
      if (!rv[i].is_object()) {
        r.fail(where, "must be an object");
        continue;
      }
      const Json ro = merged(defaults, rv[i]);
      r.setSources(where, {at.member("defaults"), at});
      TrainingRunSpec s = parseRun(r, ro, where, defaultRunId(ro, static_cast<int>(i)));
      r.setSources({}, {});
      if (!ids.insert(s.id).second) r.fail(where.member("id"), "duplicate run id '" + s.id + "'");
      spec.runs.push_back(std::move(s));
    }
    if (const Json* go = r.object(config, "gemm_on_trained_weights", at)) {
      const ConfigPath w = at.member("gemm_on_trained_weights");
      r.checkKeys(*go, w,
                  {"from_run", "layers", "rows", "scaling", "format_a", "format_b", "a_format", "b_format",
                   "accumulation", "promotion_interval", "fast_accum_bits"});
      WeightGemmSpec g;
      g.from_run = r.string(*go, "from_run", w, spec.runs.empty() ? std::string() : spec.runs.front().id);
      if (!ids.count(g.from_run))
        r.fail(w.member("from_run"), "no run with id '" + g.from_run + "' in this experiment");
      int nlayers = 3;
      for (const auto& run : spec.runs) {
        if (run.id != g.from_run) continue;
        if (!run.kind().weight_gemm) {
          if (r.ok())
            r.fail(w.member("from_run"), "run '" + g.from_run + "' has model kind '" + run.model_kind +
                                             "': the GEMM on trained weights multiplies the Linear layers of an MLP "
                                             "run (a run without \"model\")");
          continue;
        }
        nlayers = static_cast<int>(mlpRun(run).config.layer_sizes.size()) - 1;
      }
      const Json la = go->contains("layers") && (*go)["layers"].is_array() ? (*go)["layers"] : Json::array();
      if (la.empty())
        for (int l = 0; l < nlayers; ++l) g.layers.push_back(l);
      for (const Json& v : la) {
        const std::string name = v.is_string() ? v.get<std::string>() : std::string();
        const int l = int(mlpLayerIndex(name).value_or(-1));
        if (l < 0 || l >= nlayers)
          r.fail(w.member("layers"),
                 "'" + name + "' is not a layer (" + mlpLayerName(0) + " … " + mlpLayerName(nlayers - 1) + ")");
        else
          g.layers.push_back(l);
      }
      readWeightGemmOptions(r, *go, w, &g.gemm);
      spec.weight_gemm = g;
    }
  }
  if (config.is_object() && config.contains("seeds") && r.ok()) {
    std::string why;
    if (!readSeeds(config["seeds"], &spec.seeds, &why)) r.fail(at.member("seeds"), why);
  }
  if (!r.ok()) {
    if (error) *error = r.error();
    return std::nullopt;
  }
  return spec;
}

std::optional<WeightGemmConfig> parseWeightGemmRunConfig(const Json& o, std::string* error) {
  ConfigReader r;
  WeightGemmConfig wc;
  if (!o.is_object())
    r.fail({}, "expected an object");
  else
    readWeightGemmOptions(r, o, {}, &wc);
  if (!r.ok()) {
    if (error) *error = r.error();
    return std::nullopt;
  }
  return wc;
}

} // namespace fp8lab

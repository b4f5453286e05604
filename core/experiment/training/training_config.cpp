#include "experiment/training/training_config.h"
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

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const std::vector<std::string> kRunKeys = {"type",
                                           "id",
                                           "label",
                                           "dataset",
                                           "data_dir",
                                           "train_limit",
                                           "test_limit",
                                           "precision",
                                           "scaling",
                                           "forward_format",
                                           "backward_format",
                                           "layers",
                                           "batch_size",
                                           "epochs",
                                           "optimizer",
                                           "seed",
                                           "forward_gemm",
                                           "backward_gemm",
                                           "spike",
                                           "eval_batch_size",
                                           "record_history",
                                           "threads",
                                           "description",
                                           "recipe",
                                           "on_nonfinite",
                                           "diagnostics",
                                           "policy",
                                           "block_gemm",
                                           "model",
                                           "data",
                                           "steps",
                                           "eval",
                                           "probes",
                                           "softmax_scale",
                                           "sample_bytes",
                                           "sample_temperature"};

/// Keys of the MLP (Fashion-MNIST) runs only, and of the language model only.
const std::vector<std::string> kMlpOnlyKeys = {"dataset", "data_dir", "train_limit",     "test_limit",
                                               "layers",  "epochs",   "eval_batch_size", "spike"};
const std::vector<std::string> kLmOnlyKeys = {
    "data", "steps", "eval", "probes", "softmax_scale", "sample_bytes", "sample_temperature"};

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
    const std::string prec = lower(r.string(ro, "precision", e, {}));
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
void readRecipe(ConfigReader& r, const Json& o, const ConfigPath& where, TrainingConfig& c) {
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
  const auto rec = parseTrainingRecipe(lower(name));
  if (!rec || *rec == TrainingRecipe::PerTensor) {
    const std::string hint = trainingRecipeForPreset(lower(name));
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
    const auto rule = parseMxScaleMode(lower(m));
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
        x.kind = parseRoleKind(lower(k));
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

/// The key inside its object of a training schema path: "model.d_model" → "d_model".
std::string schemaLeaf(std::string_view key) {
  const size_t dot = key.rfind('.');
  return std::string(dot == std::string_view::npos ? key : key.substr(dot + 1));
}

/// A training integer key of `o` (the last part of `key`, a training schema path) in the range of
/// its schema entry, with the entry's default unless `def` is given (training_schema.h).
int64_t trainingInteger(ConfigReader& r, const Json& o, std::string_view key, TrainingModel model, const ConfigPath& at,
                        std::optional<int64_t> def = std::nullopt) {
  const ParamSpec& p = trainingParam(key, model);
  return r.integer(o, schemaLeaf(key), at, def ? *def : std::stoll(p.def), int64_t(p.min), int64_t(p.max));
}
/// A training number key of `o` with its schema entry's default.
double trainingNumber(ConfigReader& r, const Json& o, std::string_view key, TrainingModel model, const ConfigPath& at) {
  const ParamSpec& p = trainingParam(key, model);
  return r.number(o, schemaLeaf(key), at, std::stod(p.def));
}

/// A training choice key of `o` (lowercased), its schema entry's default when absent; a value
/// `accepts` refuses (the core parser of the key, which also takes its aliases) fails naming the
/// schema's choices: "unknown <noun> 'v' (a, b)".
std::string trainingChoice(ConfigReader& r, const Json& o, std::string_view key, TrainingModel model,
                           const ConfigPath& at, const char* noun,
                           const std::function<bool(const std::string&)>& accepts) {
  const ParamSpec& p = trainingParam(key, model);
  const std::string leaf = schemaLeaf(key);
  const std::string v = lower(r.string(o, leaf, at, p.def));
  if (r.ok() && !accepts(v))
    r.fail(at.member(leaf), std::string("unknown ") + noun + " '" + v + "' (" + joinNames(p.choices) + ")");
  return v;
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

/// The language model's members of a run whose shared members (precision, scaling, recipe,
/// formats, GEMMs, seed, threads, batch_size, on_nonfinite, diagnostics, policy, block_gemm)
/// parseRun has read into s.config.
void parseLanguageModel(ConfigReader& r, const Json& o, const ConfigPath& where, TrainingRunSpec& s) {
  const TrainingConfig& c = s.config;
  LmTrainingConfig lm;
  for (const std::string& k : kMlpOnlyKeys)
    if (ConfigReader::has(o, k) && r.ok())
      r.fail(where.member(k), "applies to the Fashion-MNIST MLP, not to the language model (\"model\")");
  const ConfigPath mw = where.member("model");
  const Json* mo = r.object(o, "model", where);
  if (!mo) return;
  r.checkKeys(*mo, mw,
              {"kind", "d_model", "layers", "heads", "context", "ffn_hidden", "ffn", "norm", "norm_position",
               "tied_embeddings", "position_embedding"});
  if (lower(r.string(*mo, "kind", mw, "transformer")) != transformerModelKind().kind)
    r.fail(mw.member("kind"), "only \"transformer\" (the MLP is the run without \"model\")");
  TransformerConfig& m = lm.model;
  m.d_model = trainingInteger(r, *mo, "model.d_model", TrainingModel::Lm, mw);
  m.layers = trainingInteger(r, *mo, "model.layers", TrainingModel::Lm, mw);
  m.heads = trainingInteger(r, *mo, "model.heads", TrainingModel::Lm, mw);
  m.context = trainingInteger(r, *mo, "model.context", TrainingModel::Lm, mw);
  m.ffn_hidden = trainingInteger(r, *mo, "model.ffn_hidden", TrainingModel::Lm, mw, 4 * m.d_model);
  const auto is = [](std::initializer_list<const char*> names) {
    return [names](const std::string& v) {
      return std::any_of(names.begin(), names.end(), [&](const char* n) { return v == n; });
    };
  };
  m.ffn = trainingChoice(r, *mo, "model.ffn", TrainingModel::Lm, mw, "FFN", is({"gelu", "swiglu"})) == "swiglu"
              ? FfnKind::Swiglu
              : FfnKind::Gelu;
  m.norm =
      trainingChoice(r, *mo, "model.norm", TrainingModel::Lm, mw, "norm", is({"layernorm", "rmsnorm"})) == "rmsnorm"
          ? NormKind::RmsNorm
          : NormKind::LayerNorm;
  m.pre_norm = trainingChoice(r, *mo, "model.norm_position", TrainingModel::Lm, mw, "norm position",
                              is({"pre", "post"})) != "post";
  m.tied_embeddings = r.boolean(*mo, "tied_embeddings", mw, true);
  m.position_embedding = r.boolean(*mo, "position_embedding", mw, true);
  if (r.ok() && m.d_model % m.heads != 0)
    r.fail(mw.member("heads"),
           "d_model (" + std::to_string(m.d_model) + ") must be a multiple of heads (" + std::to_string(m.heads) + ")");
  if (const Json* dv = r.object(o, "data", where)) {
    const ConfigPath dw = where.member("data");
    r.checkKeys(*dv, dw, {"corpus", "text", "val_fraction", "documents", "task", "triggers", "sequences", "seed"});
    if (ConfigReader::has(*dv, "text") && ConfigReader::has(*dv, "corpus"))
      r.fail(dw, "give \"corpus\" or \"text\", not both");
    lm.data.path = r.string(*dv, "text", dw, {});
    lm.data.corpus = lm.data.path.empty() ? lower(r.string(*dv, "corpus", dw, "fortunes")) : std::string();
    if (r.ok() && lm.data.path.empty() && lm.data.corpus != "fortunes")
      r.fail(dw.member("corpus"), "unknown corpus '" + lm.data.corpus +
                                      "' (fortunes: the Debian package; or \"text\": PATH for any UTF-8 file)");
    lm.data.val_fraction = r.number(*dv, "val_fraction", dw, 0.1);
    if (r.ok() && !(lm.data.val_fraction > 0 && lm.data.val_fraction < 0.9))
      r.fail(dw.member("val_fraction"), "must be in (0, 0.9)");
    lm.data.documents = r.boolean(*dv, "documents", dw, false);
    lm.data.task = lower(r.string(*dv, "task", dw, {}));
    if (r.ok() && !lm.data.task.empty() && lm.data.task != "bigram_backcopy")
      r.fail(dw.member("task"), "unknown task '" + lm.data.task +
                                    "' (bigram_backcopy: Guo et al. 2024's synthetic sequences, built from the "
                                    "text's byte bigrams)");
    if (lm.data.task.empty()) {
      for (const char* k : {"triggers", "sequences", "seed"})
        if (r.ok() && ConfigReader::has(*dv, k)) r.fail(dw.member(k), "belongs to \"task\": \"bigram_backcopy\"");
    } else {
      if (r.ok() && ConfigReader::has(*dv, "documents"))
        r.fail(dw.member("documents"), "a task's sequences are documents already (each starts with the BOS token)");
      lm.data.triggers = int(r.integer(*dv, "triggers", dw, 3, 1, 64));
      lm.data.sequences = r.integer(*dv, "sequences", dw, 20000, 16, 1000000);
      lm.data.task_seed = uint64_t(r.integer(*dv, "seed", dw, 1, 0, int64_t(1) << 53));
    }
  }
  // the shared run settings parseRun read; block_gemm keeps the language model's default (core)
  // unless the run gives it
  static_cast<TrainingRunConfig&>(lm) = c;
  if (!ConfigReader::has(o, "block_gemm")) lm.block_gemm = BlockGemmPath::Core;
  if (!ConfigReader::has(o, "diagnostics")) lm.diagnostics.map_every = 200;
  lm.batch_size = int(trainingInteger(r, o, "batch_size", TrainingModel::Lm, where));
  lm.steps = trainingInteger(r, o, "steps", TrainingModel::Lm, where);
  lm.softmax_scale = float(r.number(o, "softmax_scale", where, 256.0));
  lm.sample_bytes = int(trainingInteger(r, o, "sample_bytes", TrainingModel::Lm, where));
  lm.sample_temperature = r.number(o, "sample_temperature", where, 0.8);
  if (r.ok() && !(lm.sample_temperature >= 0 && lm.sample_temperature <= 10))
    r.fail(where.member("sample_temperature"), "must be in [0, 10] (0: greedy)");
  if (const Json* oo = r.object(o, "optimizer", where)) {
    const ConfigPath w = where.member("optimizer");
    OptimizerConfig& op = lm.optimizer;
    const std::string name =
        trainingChoice(r, *oo, "optimizer.name", TrainingModel::Lm, w, "optimizer",
                       [](const std::string& v) { return v == "adam" || v == "adamw" || v == "sgd"; });
    op.kind = name == "sgd" ? OptimizerKind::Sgd : OptimizerKind::Adam;
    op.learning_rate = float(r.number(*oo, "learning_rate", w, op.kind == OptimizerKind::Sgd ? 0.1 : 3e-3));
    op.beta1 = float(trainingNumber(r, *oo, "optimizer.beta1", TrainingModel::Lm, w));
    op.beta2 = float(trainingNumber(r, *oo, "optimizer.beta2", TrainingModel::Lm, w));
    op.epsilon = float(trainingNumber(r, *oo, "optimizer.epsilon", TrainingModel::Lm, w));
    op.momentum = float(trainingNumber(r, *oo, "optimizer.momentum", TrainingModel::Lm, w));
    op.weight_decay = float(trainingNumber(r, *oo, "optimizer.weight_decay", TrainingModel::Lm, w));
    lm.warmup_steps = trainingInteger(r, *oo, "optimizer.warmup_steps", TrainingModel::Lm, w);
    lm.min_lr_ratio = trainingNumber(r, *oo, "optimizer.min_lr_ratio", TrainingModel::Lm, w);
    lm.clip_norm = trainingNumber(r, *oo, "optimizer.clip_norm", TrainingModel::Lm, w);
    if (r.ok() && !(op.learning_rate > 0)) r.fail(w.member("learning_rate"), "must be a positive number");
    if (r.ok() && !(op.beta1 >= 0 && op.beta1 < 1)) r.fail(w.member("beta1"), "must be in [0, 1)");
    if (r.ok() && !(op.beta2 >= 0 && op.beta2 < 1)) r.fail(w.member("beta2"), "must be in [0, 1)");
    if (r.ok() && !(op.epsilon > 0)) r.fail(w.member("epsilon"), "must be a positive number");
    if (r.ok() && !(op.momentum >= 0 && op.momentum < 1)) r.fail(w.member("momentum"), "must be in [0, 1)");
    if (r.ok() && !(op.weight_decay >= 0)) r.fail(w.member("weight_decay"), "must be ≥ 0");
    if (r.ok() && !(lm.min_lr_ratio >= 0 && lm.min_lr_ratio <= 1))
      r.fail(w.member("min_lr_ratio"), "must be in [0, 1]");
    if (r.ok() && !(lm.clip_norm >= 0)) r.fail(w.member("clip_norm"), "must be ≥ 0 (0: no clipping)");
  } else {
    lm.optimizer.learning_rate = 3e-3f;
    lm.optimizer.beta2 = 0.99f;
  }
  if (const Json* ev = r.object(o, "eval", where)) {
    const ConfigPath w = where.member("eval");
    r.checkKeys(*ev, w, {"every", "batches"});
    lm.eval_every = int(trainingInteger(r, *ev, "eval.every", TrainingModel::Lm, w));
    lm.eval_batches = int(trainingInteger(r, *ev, "eval.batches", TrainingModel::Lm, w));
  }
  if (const Json* pv = r.object(o, "probes", where)) {
    const ConfigPath w = where.member("probes");
    r.checkKeys(*pv, w, {"every", "massive_threshold", "massive_ratio", "attention_every"});
    lm.probes.every = int(trainingInteger(r, *pv, "probes.every", TrainingModel::Lm, w));
    lm.probes.massive_threshold = r.number(*pv, "massive_threshold", w, 20.0);
    lm.probes.massive_ratio = r.number(*pv, "massive_ratio", w, 1000.0);
    lm.probes.attention_every = int(trainingInteger(r, *pv, "probes.attention_every", TrainingModel::Lm, w));
  }
  if (r.ok())
    if (const std::string v = lm.validate(); !v.empty()) r.fail(where, v);
  s.lm = std::move(lm);
  s.model_kind = transformerModelKind().kind;
}

TrainingRunSpec parseRun(ConfigReader& r, const Json& o, const ConfigPath& where, const std::string& default_id) {
  TrainingRunSpec s;
  TrainingConfig& c = s.config;
  r.checkKeys(o, where, kRunKeys);
  if (ConfigReader::has(o, "type") && r.string(o, "type", where, {}) != "training")
    r.fail(where.member("type"), "must be \"training\"");
  if (ConfigReader::has(o, "dataset") && lower(r.string(o, "dataset", where, {})) != "fashion-mnist")
    r.fail(where.member("dataset"), "only \"fashion-mnist\" is supported");
  s.id = r.string(o, "id", where, default_id);
  std::string why;
  if (!isValidRunId(s.id, &why)) r.fail(where.member("id"), why);
  c.label = r.string(o, "label", where, s.id);
  s.data_dir = r.string(o, "data_dir", where, {});
  s.train_limit = trainingInteger(r, o, "train_limit", TrainingModel::Mlp, where);
  s.test_limit = trainingInteger(r, o, "test_limit", TrainingModel::Mlp, where);
  c.precision = trainingChoice(r, o, "precision", TrainingModel::Any, where, "precision",
                               [](const std::string& v) { return v == "fp8" || v == "fp32"; }) == "fp32"
                    ? TrainingPrecision::FP32
                    : TrainingPrecision::FP8;
  if (const Json* so = r.object(o, "scaling", where)) {
    const ConfigPath w = where.member("scaling");
    r.checkKeys(*so, w, {"strategy", "history_len", "amax_compute_algo", "margin", "power_of_two", "saturate"});
    const std::string strat =
        trainingChoice(r, *so, "scaling.strategy", TrainingModel::Any, w, "strategy",
                       [&](const std::string& v) { return parseTrainingScalingKind(v, &c.scaling.kind); });
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
  if (ConfigReader::has(o, "layers")) {
    const Json& lv = o["layers"];
    const ConfigPath w = where.member("layers");
    c.layer_sizes.clear();
    if (!lv.is_array()) r.fail(w, "must be an array of sizes");
    for (const Json& v : lv.is_array() ? lv : Json::array()) {
      const bool integral =
          v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
      const double d = v.is_number() ? v.get<double>() : -1;
      if (!integral || d < 1 || d > 65536) {
        r.fail(w, "sizes must be integers in 1..65536");
        continue;
      }
      c.layer_sizes.push_back(static_cast<int>(d));
    }
    if (!c.layer_sizes.empty() && c.layer_sizes.front() != 784) r.fail(w, "the first size must be 784 (28×28 pixels)");
    if (!c.layer_sizes.empty() && c.layer_sizes.back() != 10) r.fail(w, "the last size must be 10 (classes)");
    if (c.layer_sizes.size() < 2) r.fail(w, "needs at least input and output sizes");
  }
  c.batch_size = static_cast<int>(trainingInteger(r, o, "batch_size", TrainingModel::Mlp, where));
  c.epochs = static_cast<int>(trainingInteger(r, o, "epochs", TrainingModel::Mlp, where));
  c.eval_batch_size = static_cast<int>(trainingInteger(r, o, "eval_batch_size", TrainingModel::Mlp, where));
  c.threads = static_cast<int>(trainingInteger(r, o, "threads", TrainingModel::Mlp, where));
  c.seed = r.seed(o, "seed", where, c.seed);
  c.record_history = r.boolean(o, "record_history", where, true);
  const bool language_model = ConfigReader::has(o, "model");
  if (const Json* oo = language_model ? nullptr : r.object(o, "optimizer", where)) {
    const ConfigPath w = where.member("optimizer");
    r.checkKeys(*oo, w, {"name", "learning_rate", "beta1", "beta2", "epsilon"});
    if (lower(r.string(*oo, "name", w, "adam")) != "adam") r.fail(w.member("name"), "only \"adam\" is supported");
    c.learning_rate = static_cast<float>(trainingNumber(r, *oo, "optimizer.learning_rate", TrainingModel::Mlp, w));
    c.beta1 = static_cast<float>(trainingNumber(r, *oo, "optimizer.beta1", TrainingModel::Mlp, w));
    c.beta2 = static_cast<float>(trainingNumber(r, *oo, "optimizer.beta2", TrainingModel::Mlp, w));
    c.adam_epsilon = static_cast<float>(trainingNumber(r, *oo, "optimizer.epsilon", TrainingModel::Mlp, w));
    // Checked here, at the key, as well as by TrainingConfig::validate.
    auto num = [](float v) { return Json(v).dump(); };
    if (r.ok() && !(c.learning_rate > 0))
      r.fail(w.member("learning_rate"),
             "must be a positive number (Adam's step size; got " + num(c.learning_rate) + ")");
    for (const auto& [key, v] : {std::pair{"beta1", c.beta1}, std::pair{"beta2", c.beta2}})
      if (r.ok() && !(v >= 0 && v < 1)) r.fail(w.member(key), "must be in [0, 1) (got " + num(v) + ")");
    if (r.ok() && !(c.adam_epsilon > 0))
      r.fail(w.member("epsilon"), "must be a positive number (got " + num(c.adam_epsilon) + ")");
  }
  c.forward_gemm = readGemm(r, o, "forward_gemm", where, c.forward_gemm);
  c.backward_gemm = readGemm(r, o, "backward_gemm", where, c.backward_gemm);
  c.forward_gemm.threads = c.backward_gemm.threads = c.threads;
  if (const Json* so = r.object(o, "spike", where)) {
    const ConfigPath w = where.member("spike");
    r.checkKeys(*so, w, {"step", "factor", "layer", "row", "col"});
    c.spike.enabled = true;
    c.spike.step = r.integer(*so, "step", w, 0, 0, int64_t{1} << 40);
    c.spike.factor = static_cast<float>(r.number(*so, "factor", w, 1.0));
    c.spike.layer = static_cast<int>(r.integer(*so, "layer", w, 0, 0, 64));
    c.spike.row = r.integer(*so, "row", w, -1, 0, 65535);
    c.spike.col = r.integer(*so, "col", w, -1, 0, 65535);
    const int linears = static_cast<int>(c.layer_sizes.size()) - 1;
    if (r.ok() && linears > 0 && c.spike.layer >= linears)
      r.fail(w.member("layer"), "must name a Linear layer: 0 … " + std::to_string(linears - 1) +
                                    " (0-based: 0 is fc1; got " + std::to_string(c.spike.layer) + ")");
    if (r.ok() && linears > 0 && c.spike.col >= c.layer_sizes[static_cast<size_t>(c.spike.layer)])
      r.fail(w.member("col"), "must be below the input size of layer " + std::to_string(c.spike.layer) + " (fc" +
                                  std::to_string(c.spike.layer + 1) + " takes " +
                                  std::to_string(c.layer_sizes[static_cast<size_t>(c.spike.layer)]) +
                                  " inputs: col 0 … " +
                                  std::to_string(c.layer_sizes[static_cast<size_t>(c.spike.layer)] - 1) + ")");
  }
  if (ConfigReader::has(o, "on_nonfinite")) {
    (void)trainingChoice(r, o, "on_nonfinite", TrainingModel::Any, where, "value",
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
    (void)trainingChoice(r, o, "block_gemm", TrainingModel::Mlp, where, "value", [&](const std::string& v) {
      const auto p = parseBlockGemmPath(v);
      if (p) c.block_gemm = *p;
      return p.has_value();
    });
  if (ConfigReader::has(o, "model")) {
    parseLanguageModel(r, o, where, s);
    return s;
  }
  for (const std::string& k : kLmOnlyKeys)
    if (ConfigReader::has(o, k) && r.ok())
      r.fail(where.member(k), "applies to the language model (a run with \"model\": {\"kind\": \"transformer\"})");
  if (r.ok())
    if (const std::string v = c.validate(); !v.empty()) r.fail(where, v);
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
      for (const auto& run : spec.runs)
        if (run.id == g.from_run) nlayers = static_cast<int>(run.config.layer_sizes.size()) - 1;
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

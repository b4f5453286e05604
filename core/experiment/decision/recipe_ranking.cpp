// FP8 Lab — ranking recipes with uncertainty (recipe_ranking.h).
#include "experiment/decision/recipe_ranking.h"
#include "experiment/training/training_models.h"

#include "experiment/gemm/gemm_config.h"
#include "experiment/training/training_config.h"
#include "json/json_document.h"

#include <algorithm>
#include <map>

namespace fp8lab {

const std::vector<RankingMetric>& rankingMetrics() {
  static const std::vector<RankingMetric> m = {
      {"sqnr_db", "SQNR of D", "dB", true, false,
       "10 log10(sum ref^2 / sum err^2) of D against the float64 product: energy-weighted, so outlier channels "
       "dominate it"},
      {"bulk_sqnr_db", "SQNR of D without outlier rows/columns", "dB", true, false,
       "the SQNR of D over the rows and columns that A's and B's outlier channels do not touch"},
      {"rel_err_median", "median relative error of D", "1", false, false,
       "the typical element's |err|/|ref| over |ref| > 0.1 x median |ref|"},
      {"rel_err_p99", "99th-percentile relative error of D", "1", false, false,
       "the worst 1 % of the elements' |err|/|ref| over |ref| > 0.1 x median |ref|"},
      {"cosine", "cosine similarity of D", "1", true, false, "direction of D against the reference"},
      {"quant_sqnr_db", "SQNR of D from quantization alone", "dB", true, false,
       "dequant(A)·dequant(B) in float64 against the float64 product"},
      {"a_sqnr_db", "SQNR of A", "dB", true, false, "A's own quantization error"},
      {"b_sqnr_db", "SQNR of B", "dB", true, false, "B's own quantization error"},
      {"a_bulk_sqnr_db", "SQNR of A without outlier channels", "dB", true, false,
       "A's quantization error over the rows and columns that are not outlier channels"},
      {"b_bulk_sqnr_db", "SQNR of B without outlier channels", "dB", true, false,
       "B's quantization error over the rows and columns that are not outlier channels"},
      {"d_sqnr_a_only_db", "SQNR of D, A alone quantized", "dB", true, false,
       "D's error from A's quantization alone: the lower of the two says which operand dominates"},
      {"d_sqnr_b_only_db", "SQNR of D, B alone quantized", "dB", true, false, "D's error from B's quantization alone"},
      {"final_test_accuracy", "final test accuracy", "1", true, true,
       "test accuracy after the last epoch (the MLP on Fashion-MNIST)"},
      {"final_val_loss", "final validation loss", "nats/byte", false, true,
       "validation loss after the last step (the transformer language model)"},
      {"final_test_loss", "final test loss", "nats", false, true, "test loss after the last epoch (the MLP)"},
  };
  return m;
}

const RankingMetric* rankingMetric(const std::string& key) {
  for (const RankingMetric& m : rankingMetrics())
    if (m.key == key) return &m;
  return nullptr;
}

std::string rankingMetricKeys() {
  std::string keys;
  for (const RankingMetric& m : rankingMetrics()) keys += (keys.empty() ? "" : ", ") + m.key;
  return keys;
}

double studentT975(int df) {
  // NIST/SEMATECH e-Handbook of Statistical Methods, §1.3.6.7.2, column 0.975.
  static const double table[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                   2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                   2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return NAN;
  if (df <= 30) return table[df - 1];
  // Beyond 30: linear in 1/df between the listed points (30, 40, 60, 120, ∞).
  static const double dfs[4] = {30, 40, 60, 120}, ts[5] = {2.042, 2.021, 2.000, 1.980, 1.960};
  const double x = 1.0 / df;
  for (int i = 0; i < 4; ++i) {
    const double x0 = 1.0 / dfs[i], x1 = i + 1 < 4 ? 1.0 / dfs[i + 1] : 0.0;
    if (x <= x0 && x >= x1) return ts[i] + (ts[i + 1] - ts[i]) * (x0 - x) / (x0 - x1);
  }
  return 1.960;
}

MeanInterval meanInterval(const std::vector<double>& values) {
  MeanInterval m;
  double sum = 0;
  for (double v : values)
    if (std::isfinite(v)) sum += v, ++m.n;
  if (m.n == 0) return m;
  m.mean = sum / m.n;
  if (m.n > 1) {
    double ss = 0;
    for (double v : values)
      if (std::isfinite(v)) ss += (v - m.mean) * (v - m.mean);
    m.sd = std::sqrt(ss / (m.n - 1));
    m.half = studentT975(m.n - 1) * m.sd / std::sqrt(double(m.n));
  } else {
    m.half = 0;
  }
  m.lo = m.mean - m.half;
  m.hi = m.mean + m.half;
  return m;
}

int seedsToResolve(double mean, double sd) {
  if (!std::isfinite(mean) || mean == 0 || !std::isfinite(sd)) return 0;
  for (int n = 2; n <= 10000; ++n)
    if (studentT975(n - 1) * sd / std::sqrt(double(n)) < std::fabs(mean)) return n;
  return 0;
}

std::string comparisonName(Comparison c) {
  switch (c) {
  case Comparison::Baseline:
    return "baseline";
  case Comparison::Paired:
    return "paired";
  case Comparison::Unpaired:
    return "unpaired";
  case Comparison::OneSeed:
    return "one seed";
  case Comparison::None:
    break;
  }
  return "none";
}

std::string verdictText(Verdict v) {
  switch (v) {
  case Verdict::OneSeed:
    return "one seed: no interval";
  case Verdict::NotDistinguishable:
    return "not distinguishable from the baseline";
  case Verdict::Better:
    return "better than the baseline";
  case Verdict::Worse:
    return "worse than the baseline";
  case Verdict::None:
    break;
  }
  return "";
}

PairedDifference pairedDifference(const RecipeInterval& r, const RecipeInterval& base) {
  // Per seed: the mean of the finite values of each side and the first run.
  struct Side {
    double sum = 0;
    int n = 0;
    std::string run;
  };
  auto bySeed = [](const RecipeInterval& x) {
    std::map<uint64_t, Side> m;
    for (size_t i = 0; i < x.values.size() && i < x.seeds.size(); ++i) {
      if (!std::isfinite(x.values[i])) continue;
      Side& s = m[x.seeds[i]];
      if (s.n == 0 && i < x.runs.size()) s.run = x.runs[i];
      s.sum += x.values[i];
      ++s.n;
    }
    return m;
  };
  const auto mine = bySeed(r), theirs = bySeed(base);
  PairedDifference p;
  p.baseline = base.label;
  for (const auto& [seed, a] : mine) {
    const auto it = theirs.find(seed);
    if (it == theirs.end()) {
      p.unpaired += a.n;
      continue;
    }
    p.seeds.push_back(seed);
    p.runs.push_back(a.run);
    p.baseline_runs.push_back(it->second.run);
    p.diffs.push_back(a.sum / a.n - it->second.sum / it->second.n);
  }
  const MeanInterval m = meanInterval(p.diffs);
  p.n_pairs = m.n;
  p.mean_diff = m.mean;
  p.sd = m.sd;
  p.half = m.n > 1 ? m.half : NAN;
  p.ci_low = m.n > 1 ? m.lo : NAN;
  p.ci_high = m.n > 1 ? m.hi : NAN;
  return p;
}

std::vector<RecipeInterval> rankWithIntervals(const std::vector<RankSample>& samples, bool higher_better) {
  std::vector<std::string> settings;
  std::map<std::string, std::vector<RecipeInterval>> by_setting;
  for (const RankSample& s : samples) {
    if (!by_setting.count(s.setting)) settings.push_back(s.setting);
    auto& list = by_setting[s.setting];
    auto it = std::find_if(list.begin(), list.end(), [&](const RecipeInterval& r) { return r.recipe == s.recipe; });
    if (it == list.end()) {
      RecipeInterval r;
      r.setting = s.setting;
      r.setting_label = s.setting_label;
      r.recipe = s.recipe;
      r.label = s.recipe_label;
      r.detail = s.recipe_detail;
      r.scaling_a = s.scaling_a;
      r.scaling_b = s.scaling_b;
      r.format_a = s.format_a;
      r.format_b = s.format_b;
      r.m = s.m;
      r.k = s.k;
      r.n = s.n;
      r.baseline = s.baseline;
      list.push_back(std::move(r));
      it = list.end() - 1;
    }
    it->runs.push_back(s.run_id);
    it->seeds.push_back(s.seed);
    it->values.push_back(s.value);
  }
  auto better = [&](double a, double b) { return higher_better ? a > b : a < b; };
  std::vector<RecipeInterval> out;
  for (const std::string& key : settings) {
    std::vector<RecipeInterval>& list = by_setting[key];
    for (RecipeInterval& r : list) {
      const MeanInterval m = meanInterval(r.values);
      r.n_values = m.n;
      r.mean = m.mean;
      r.sd = m.sd;
      r.half = m.half;
      r.lo = m.lo;
      r.hi = m.hi;
    }
    // Labels alike within the setting get their detail.
    for (RecipeInterval& r : list) {
      const auto same =
          std::count_if(list.begin(), list.end(), [&](const RecipeInterval& o) { return o.label == r.label; });
      if (same > 1 && !r.detail.empty()) r.label += " (" + r.detail + ")";
    }
    std::stable_sort(list.begin(), list.end(), [&](const RecipeInterval& a, const RecipeInterval& b) {
      if (a.n_values == 0 || b.n_values == 0) return a.n_values > 0 && b.n_values == 0;
      return better(a.mean, b.mean);
    });
    for (size_t i = 0; i < list.size(); ++i) {
      RecipeInterval& r = list[i];
      r.place = int(i) + 1;
      if (r.n_values == 0) continue;
      int beaten_by = 0;
      for (const RecipeInterval& o : list) {
        if (&o == &r || o.n_values == 0) continue;
        const bool overlap = o.lo <= r.hi && r.lo <= o.hi;
        if (overlap)
          r.ties.push_back(o.label);
        else if (better(o.mean, r.mean))
          ++beaten_by;
      }
      r.rank = beaten_by + 1;
    }
    for (RecipeInterval& r : list) out.push_back(std::move(r));
  }
  return out;
}

void pairRecipes(std::vector<RecipeInterval>* all, bool higher_better) {
  auto better = [&](double a, double b) { return higher_better ? a > b : a < b; };
  std::vector<std::string> settings;
  for (const RecipeInterval& r : *all)
    if (std::find(settings.begin(), settings.end(), r.setting) == settings.end()) settings.push_back(r.setting);
  for (const std::string& key : settings) {
    std::vector<RecipeInterval*> list;
    for (RecipeInterval& r : *all)
      if (r.setting == key) list.push_back(&r);
    const RecipeInterval* base = nullptr;
    for (const RecipeInterval* r : list)
      if (r->baseline && !base) base = r;
    const bool one_seed =
        std::none_of(list.begin(), list.end(), [](const RecipeInterval* r) { return r->n_values > 1; });
    for (RecipeInterval* r : list) {
      r->paired.reset();
      r->verdict = Verdict::None;
      r->comparison = r == base ? Comparison::Baseline : Comparison::None;
      if (r == base || !base || r->n_values == 0 || base->n_values == 0) continue;
      r->paired = pairedDifference(*r, *base);
      if (r->paired->n_pairs >= 2) {
        r->comparison = Comparison::Paired;
        const double lo = r->paired->ci_low, hi = r->paired->ci_high;
        const bool above = lo > 0, below = hi < 0;
        r->verdict = !above && !below           ? Verdict::NotDistinguishable
                     : (above == higher_better) ? Verdict::Better
                                                : Verdict::Worse;
      } else if (r->n_values >= 2 && base->n_values >= 2) {
        r->comparison = Comparison::Unpaired;
        const bool overlap = r->lo <= base->hi && base->lo <= r->hi;
        r->verdict = overlap                       ? Verdict::NotDistinguishable
                     : better(r->mean, base->mean) ? Verdict::Better
                                                   : Verdict::Worse;
      } else {
        r->comparison = Comparison::OneSeed;
        r->verdict = Verdict::OneSeed;
      }
    }
    if (one_seed) {
      for (RecipeInterval* r : list) {
        r->rank = 0;
        r->ties.clear();
        if (r->n_values > 0 && r != base && base) r->comparison = Comparison::OneSeed;
      }
      continue;
    }
    for (RecipeInterval* r : list) {
      if (r->n_values == 0) continue;
      r->ties.clear();
      int beaten_by = 0;
      for (const RecipeInterval* o : list) {
        if (o == r || o->n_values == 0) continue;
        const PairedDifference d = pairedDifference(*o, *r); // o − r at the shared seeds
        bool tie = false, beats = false;
        if (d.n_pairs >= 2) {
          tie = d.ci_low <= 0 && d.ci_high >= 0;
          beats = !tie && (higher_better ? d.ci_low > 0 : d.ci_high < 0);
        } else {
          tie = o->lo <= r->hi && r->lo <= o->hi;
          beats = !tie && better(o->mean, r->mean);
        }
        if (tie) r->ties.push_back(o->label);
        if (beats) ++beaten_by;
      }
      r->rank = beaten_by + 1;
    }
  }
}

namespace {

/// The recipe keys of a canonical GEMM config (gemmConfigJson): what is chosen, not what is given.
constexpr const char* kRecipeKeys[] = {"format_a",
                                       "format_b",
                                       "scaling",
                                       "scaling_b",
                                       "accumulation",
                                       "promotion_interval",
                                       "fast_accum_bits",
                                       "fast_accum_group",
                                       "accumulation_preset",
                                       "fast_accum_promotes",
                                       "output",
                                       "output_quant_scale",
                                       "rounding",
                                       "stochastic_bits"};
/// Keys that change neither the recipe nor the operands.
constexpr const char* kDropKeys[] = {"seed", "name", "tile", "store_inputs", "store_quantized", "store_error_maps"};

std::string operandText(const Json& o) {
  if (!o.is_object()) return "?";
  if (o.contains("tensor") && o["tensor"].is_string()) return o["tensor"].get<std::string>();
  if (o.contains("codes") && o["codes"].is_string()) return "codes " + o["codes"].get<std::string>();
  if (o.contains("checkpoint") && o["checkpoint"].is_string())
    return "checkpoint " + o["checkpoint"].get<std::string>();
  std::string t = o.value("distribution", std::string("normal"));
  char buf[96];
  const double scale = o.value("scale", 1.0);
  if (scale != 1.0) {
    std::snprintf(buf, sizeof buf, " σ=%g", scale);
    t += buf;
  }
  if (t.rfind("channel_outliers", 0) == 0) {
    std::snprintf(buf, sizeof buf, " (%lld %s ×%g)", static_cast<long long>(o.value("outlier_channels", int64_t(4))),
                  o.value("outlier_axis", std::string("columns")).c_str(), o.value("outlier_factor", 100.0));
    t += buf;
  } else if (t.rfind("outliers", 0) == 0) {
    std::snprintf(buf, sizeof buf, " (%g of elements ×%g)", o.value("outlier_fraction", 1e-3),
                  o.value("outlier_factor", 100.0));
    t += buf;
  }
  return t;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

void gemmSample(const RunInfo& ri, const RankingMetric& metric, std::vector<RankSample>* out) {
  Json canon;
  try {
    const JsonDocument d = JsonDocument::parse(ri.config_json);
    GemmExperimentConfig c;
    if (!parseGemmConfig(d.root(), &c).empty()) return;
    canon = gemmConfigJson(c, "");
  } catch (const JsonTextError&) {
    return;
  }
  RankSample s;
  s.run_id = ri.id;
  s.seed = ri.seed;
  Json recipe = Json::object(), setting = canon;
  for (const char* k : kRecipeKeys)
    if (canon.contains(k)) {
      recipe[k] = canon[k];
      setting.erase(k);
    }
  for (const char* k : kDropKeys) setting.erase(k);
  s.recipe = recipe.dump();
  s.setting = setting.dump();
  s.scaling_a = canon.value("scaling", std::string());
  s.scaling_b = canon.value("scaling_b", s.scaling_a);
  s.format_a = canon.value("format_a", std::string());
  s.format_b = canon.value("format_b", std::string());
  s.m = attrInt(ri.attrs, "m").value_or(canon.value("m", int64_t(0)));
  s.k = attrInt(ri.attrs, "k").value_or(canon.value("k", int64_t(0)));
  s.n = attrInt(ri.attrs, "n").value_or(canon.value("n", int64_t(0)));
  s.recipe_label = s.scaling_a + (s.scaling_b != s.scaling_a ? ":" + s.scaling_b : "") + " · " + s.format_a +
                   (s.format_b != s.format_a ? ":" + s.format_b : "");
  s.recipe_detail = canon.value("accumulation", std::string()) + " → " + upper(canon.value("output", std::string()));
  if (canon.contains("rounding")) s.recipe_detail += ", stochastic rounding";
  s.setting_label = std::to_string(s.m) + "×" + std::to_string(s.k) + "×" + std::to_string(s.n) + ", A " +
                    operandText(canon.value("a", Json::object())) + ", B " +
                    operandText(canon.value("b", Json::object())) + ", " + s.recipe_detail;
  if (canon.contains("bias") || canon.contains("c") || canon.value("alpha", 1.0) != 1.0)
    s.setting_label += ", epilogue";
  const auto it = ri.metrics.find(metric.key);
  s.value = it == ri.metrics.end() ? NAN : it->second.value;
  out->push_back(std::move(s));
}

/// Training config keys that make the recipe (what is chosen), and keys that change neither the
/// recipe nor what the runs are compared on.
constexpr const char* kTrainingRecipeKeys[] = {"precision",       "recipe",       "scaling",       "forward_format",
                                               "backward_format", "forward_gemm", "backward_gemm", "policy",
                                               "block_gemm",      "softmax_scale"};
constexpr const char* kTrainingDropKeys[] = {"type",
                                             "id",
                                             "name",
                                             "label",
                                             "seed",
                                             "description",
                                             "notes",
                                             "diagnostics",
                                             "record_history",
                                             "threads",
                                             "eval_batch_size",
                                             "sample_bytes",
                                             "sample_temperature",
                                             "probes",
                                             "data_dir",
                                             "on_nonfinite"};

void trainingSample(const RunInfo& ri, const RankingMetric& metric, std::vector<RankSample>* out) {
  // A cancelled run stopped early: its final metric is not the setting's.
  if (attrString(ri.attrs, "status").value_or("") == "cancelled") return;
  Json cfg;
  try {
    cfg = JsonDocument::parse(ri.config_json).root();
  } catch (const JsonTextError&) {
    cfg = Json::object();
  }
  if (!cfg.is_object()) cfg = Json::object();
  Json recipe = Json::object(), setting = cfg;
  for (const char* k : kTrainingRecipeKeys)
    if (cfg.contains(k)) {
      recipe[k] = cfg[k];
      setting.erase(k);
    }
  for (const char* k : kTrainingDropKeys) setting.erase(k);
  RankSample s;
  s.run_id = ri.id;
  s.seed = ri.seed;
  s.recipe = recipe.dump();
  const std::string model = attrString(ri.attrs, "model").value_or("mlp");
  // A language model's architecture is the config's "model" object: runs of different shapes (pre-
  // or post-norm, depth) are different settings.
  if (!setting.contains("model") || !setting["model"].is_object()) setting["model"] = model;
  s.setting = setting.dump();
  if (model == "pytorch") {
    // A model observed by fp8lab.torch.attach: the recipe was measured on its tensors, not applied,
    // so its losses are the model's own whatever the recipe.
    s.setting_label = "PyTorch model";
    if (cfg.contains("model") && cfg["model"].is_object()) {
      const Json& mo = cfg["model"];
      if (mo.contains("class") && mo["class"].is_string()) s.setting_label += " " + mo["class"].get<std::string>();
      if (mo.contains("parameters") && mo["parameters"].is_number())
        s.setting_label += " (" + mo["parameters"].dump() + " parameters)";
    }
    s.setting_label += ", observed: recipes measured on its tensors, not applied (the losses are the model's own)";
  } else if (const TrainingModelKind* k = findTrainingModelKind(model)) {
    s.setting_label = k->setting_label(cfg, ri.attrs);
  } else {
    s.setting_label = model;
  }
  const std::string precision = attrString(ri.attrs, "precision").value_or("");
  s.baseline = precision == "fp32";
  if (s.baseline) {
    s.recipe_label = "FP32 baseline";
  } else if (const auto r = attrString(ri.attrs, "recipe")) {
    // The recipe with the options that differ from its defaults ("te_float8_block fp32 scales"), so
    // that variants of one recipe are told apart; the bare name when the config does not parse.
    s.recipe_label = *r;
    try {
      const JsonDocument doc = JsonDocument::parse(ri.config_json);
      std::string err;
      if (const auto spec = parseTrainingExperiment(doc.root(), &err, &doc);
          spec && spec->runs.size() == 1 && spec->runs.front().run().recipe.recipe != TrainingRecipe::PerTensor)
        s.recipe_label = spec->runs.front().run().recipe.label();
    } catch (const std::exception&) {
    }
  } else {
    s.recipe_label = attrString(ri.attrs, "scaling").value_or(precision);
    const std::string f = cfg.value("forward_format", std::string()), b = cfg.value("backward_format", std::string());
    if (!f.empty()) s.recipe_label += " · " + f + (b.empty() || b == f ? "" : "/" + b);
  }
  // A precision policy in words: "fc2 → bf16; fc1,fc3 → bf16".
  if (cfg.contains("policy") && cfg["policy"].is_array()) {
    std::string p;
    for (const Json& rule : cfg["policy"]) {
      if (!rule.is_object()) continue;
      std::string sites = rule.contains("sites")
                              ? (rule["sites"].is_string() ? rule["sites"].get<std::string>() : rule["sites"].dump())
                              : "*";
      if (rule.contains("gemms") && rule["gemms"].is_array()) {
        std::string g;
        for (const Json& x : rule["gemms"])
          if (x.is_string()) g += (g.empty() ? "" : ",") + x.get<std::string>();
        sites += " " + g;
      }
      std::string prec = rule.value("precision", std::string());
      if (prec.empty() && rule.contains("recipe")) prec = "recipe";
      if (rule.contains("from_step") && rule["from_step"].is_number_integer() && rule["from_step"].get<int64_t>() > 0)
        prec += " from step " + rule["from_step"].dump();
      if (rule.contains("until_step") && rule["until_step"].is_number_integer() &&
          rule["until_step"].get<int64_t>() >= 0)
        prec += " until step " + rule["until_step"].dump();
      p += (p.empty() ? "" : "; ") + sites + " → " + prec;
    }
    s.recipe_label += " + policy " + (p.empty() ? std::string("(empty)") : p);
  }
  s.recipe_detail = "run " + ri.id;
  const auto it = ri.metrics.find(metric.key);
  s.value = it == ri.metrics.end() ? NAN : it->second.value;
  out->push_back(std::move(s));
}

} // namespace

std::vector<RankSample> rankSamples(const std::vector<RunInfo>& runs, const RankingMetric& metric) {
  std::vector<RankSample> out;
  for (const RunInfo& ri : runs) {
    if (!metric.training && ri.type == "gemm") gemmSample(ri, metric, &out);
    if (metric.training && ri.type == "training") trainingSample(ri, metric, &out);
  }
  return out;
}

bool metricPresent(const std::vector<RunInfo>& runs, const std::string& key) {
  for (const RunInfo& ri : runs) {
    const auto it = ri.metrics.find(key);
    if (it != ri.metrics.end() && std::isfinite(it->second.value)) return true;
  }
  return false;
}

std::string defaultRankingMetric(const std::vector<RunInfo>& runs) {
  if (const RankingMetric* m = rankingMetric("sqnr_db")) {
    const auto ranked = rankWithIntervals(rankSamples(runs, *m), true);
    std::map<std::string, int> recipes;
    for (const RecipeInterval& r : ranked)
      if (r.n_values > 0 && ++recipes[r.setting] >= 2) return "sqnr_db";
  }
  if (metricPresent(runs, "final_test_accuracy")) return "final_test_accuracy";
  if (metricPresent(runs, "final_val_loss")) return "final_val_loss";
  return {};
}

} // namespace fp8lab

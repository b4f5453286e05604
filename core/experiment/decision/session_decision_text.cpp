// The decision of a session as text and JSON (session_decision_text.h).
#include "experiment/decision/session_decision_text.h"
#include "json/json_number.h"

#include "common/number_text.h"
#include "scaling/recipe_cost.h"

#include <algorithm>
#include <cmath>

namespace fp8lab {

namespace {

/// `s` left-aligned in `w` characters, or followed by one space when it fills them.
std::string pad(const std::string& s, int w) {
  return padded(s, -w) == s ? s + ' ' : padded(s, -w);
}
/// `s` right-aligned in `w` characters, or followed by one space when it fills them.
std::string rpad(const std::string& s, int w) {
  return padded(s, w) == s ? s + ' ' : padded(s, w);
}

/// `v` with a sign ("+" for zero and above) in style 'g' or 'f'.
std::string signedText(double v, char style, int precision) {
  return (std::signbit(v) ? "" : "+") + decimalText(v, style, precision);
}

/// Whether every recipe of `setting` has at most one value: no intervals, so the order is no ranking.
bool oneSeedEach(const std::vector<RecipeInterval>& all, const std::string& setting) {
  for (const RecipeInterval& r : all)
    if (r.setting == setting && r.n_values > 1) return false;
  return true;
}

Json intervalJson(const RecipeInterval& r) {
  Json values = Json::array(), seeds = Json::array();
  for (double v : r.values) values.push_back(numberJson(v));
  for (uint64_t s : r.seeds) seeds.push_back(int64_t(s));
  return {{"recipe", r.label},
          {"setting", r.setting_label},
          {"rank", r.rank},
          {"place", r.place},
          {"n", r.n_values},
          {"mean", numberJson(r.mean)},
          {"sd", numberJson(r.sd)},
          {"half_width_95", numberJson(r.half)},
          {"lo", numberJson(r.lo)},
          {"hi", numberJson(r.hi)},
          {"not_distinguishable_from", r.ties},
          {"runs", r.runs},
          {"seeds", seeds},
          {"values", values}};
}

Json pairedJson(const PairedDifference& p) {
  Json per_seed = Json::array();
  for (size_t i = 0; i < p.diffs.size(); ++i)
    per_seed.push_back({{"seed", int64_t(p.seeds[i])},
                        {"diff", numberJson(p.diffs[i])},
                        {"run", p.runs[i]},
                        {"baseline_run", p.baseline_runs[i]}});
  return {{"baseline", p.baseline},
          {"mean_diff", numberJson(p.mean_diff)},
          {"sd", numberJson(p.sd)},
          {"half_width_95", numberJson(p.half)},
          {"ci_low", numberJson(p.ci_low)},
          {"ci_high", numberJson(p.ci_high)},
          {"n_pairs", p.n_pairs},
          {"unpaired_runs", p.unpaired},
          {"per_seed", per_seed}};
}

/// The Δ column of a training recipe: the paired difference with its interval, or the difference
/// of the means for an unpaired comparison, "baseline" for the baseline, "—" without one.
std::string deltaText(const RecipeInterval& r, const RecipeInterval* base) {
  if (r.baseline) return "baseline";
  if (!base || r.n_values == 0) return "—";
  if (r.comparison == Comparison::Paired) return pairedText(*r.paired);
  if (r.comparison == Comparison::Unpaired) return signedText(r.mean - base->mean, 'g', 4) + " (means)";
  if (r.paired && r.paired->n_pairs == 1) return signedText(r.paired->mean_diff, 'g', 4);
  return signedText(r.mean - base->mean, 'g', 4);
}

std::string unitText(const RankingMetric& m) {
  return m.unit == "1" ? std::string() : " (" + m.unit + ")";
}

/// A recipe's cost as JSON (decide --json "cost"; training rows add "shape", the GEMM it is given for).
Json costJson(const RecipeCost& c) {
  return {{"bytes_per_element", numberJson(c.bytesPerElement())},
          {"bytes", int64_t(c.bytes())},
          {"a_bytes", int64_t(c.a.bytes())},
          {"b_bytes", int64_t(c.b.bytes())},
          {"a_scales", c.a.block + " " + c.a.kind->scale_format},
          {"b_scales", c.b.block + " " + c.b.kind->scale_format},
          {"a_preset", c.a.preset},
          {"b_preset", c.b.preset},
          {"shape", {c.a.rows, c.a.cols, c.b.cols}},
          {"native", c.native},
          {"hardware", c.hardware},
          {"source", c.source}};
}

/// A training recipe's B/elem and native columns: the cost's, "4.0000" / "FP32" for the baseline.
std::string trainingCostText(const RecipeInterval& r, const std::optional<RecipeCost>& c) {
  if (c) return rpad(bytesPerElementText(c->bytesPerElement()), 9) + "  " + pad(c->hardware, 22);
  return rpad(r.baseline ? bytesPerElementText(4.0) : "—", 9) + "  " + pad(r.baseline ? "FP32" : "—", 22);
}

} // namespace

Json sessionDecisionJson(const SessionDecision& d) {
  Json gemm = Json::array(), training = Json::array(), advice = Json::array(), whatif = Json::array();
  for (size_t i = 0; i < d.gemm.size(); ++i) {
    Json o = intervalJson(d.gemm[i]);
    if (const auto& c = d.gemm_cost[i]) o["cost"] = costJson(*c);
    gemm.push_back(o);
  }
  for (size_t i = 0; i < d.training.size(); ++i) {
    Json o = intervalJson(d.training[i]);
    o["baseline"] = d.training[i].baseline;
    const int b = d.baselineOf(i);
    o["delta_vs_fp32"] = numberJson(b >= 0 ? d.training[i].mean - d.training[size_t(b)].mean : NAN);
    o["comparison"] = comparisonName(d.training[i].comparison);
    o["verdict"] = verdictText(d.training[i].verdict);
    if (d.training[i].paired) o["paired"] = pairedJson(*d.training[i].paired);
    if (i < d.training_cost.size() && d.training_cost[i]) o["cost"] = costJson(*d.training_cost[i]);
    training.push_back(o);
  }
  for (const AdviceTable& a : d.advice) {
    Json groups = Json::array();
    for (const AdviceGroupRow& g : a.groups)
      groups.push_back({{"group", g.group},
                        {"delta", numberJson(g.delta)},
                        {"spread", numberJson(g.spread)},
                        {"ci_low", numberJson(g.ci_low)},
                        {"ci_high", numberJson(g.ci_high)},
                        {"share", numberJson(g.share)},
                        {"sqnr_db", numberJson(g.sqnr_db)},
                        {"keep_high", g.keep_high}});
    advice.push_back({{"run", a.run_id},
                      {"advised_run", a.advised_run},
                      {"policy", a.policy},
                      {"full_delta", numberJson(a.full_delta)},
                      {"full_ci_low", numberJson(a.full_ci_low)},
                      {"full_ci_high", numberJson(a.full_ci_high)},
                      {"groups", groups}});
  }
  for (const WhatIfTable& t : d.what_if) {
    Json rows = Json::array();
    for (const CheckpointSqnr& r : t.rows) {
      Json w = Json::object();
      for (const auto& [id, v] : r.what_if_db) w[id] = numberJson(v);
      rows.push_back({{"tensor", r.tensor}, {"stored_db", numberJson(r.stored_db)}, {"what_if_db", w}});
    }
    whatif.push_back({{"run", t.run_id}, {"tensors", rows}});
  }
  return {{"gemm_metric", d.gemm_metric->key},
          {"gemm_higher_is_better", d.gemm_metric->higher_better},
          {"gemm", gemm},
          {"training_metric", d.training_metric->key},
          {"training", training},
          {"advice", advice},
          {"what_if", whatif}};
}

std::string sessionDecisionText(const SessionDecision& d, const std::string& session_path) {
  std::string t;
  const RankingMetric& gm = *d.gemm_metric;
  t += "GEMM recipes ranked by " + gm.label + unitText(gm) + ", " + (gm.higher_better ? "higher" : "lower") +
       " is better: mean ± 95 % interval over seeds\n";
  if (d.gemm.empty()) t += "  " + hintGemmRanking() + "\n";
  std::string setting;
  for (size_t i = 0; i < d.gemm.size(); ++i) {
    const RecipeInterval& r = d.gemm[i];
    if (r.setting != setting) {
      setting = r.setting;
      t += "\n  " + r.setting_label + " (" + std::to_string(r.m) + "×" + std::to_string(r.k) + " · " +
           std::to_string(r.k) + "×" + std::to_string(r.n) + ")\n";
      if (oneSeedEach(d.gemm, r.setting))
        t += "  one seed per recipe: no intervals, the order is not a ranking (sweep with \"seeds\": "
             "[1, 2, 3, 4, 5] or --seeds 1-5)\n";
      t += "  " + pad("rank", 6) + pad("recipe", 42) + rpad("mean ± 95 %", 18) + rpad("sd", 9) + rpad("n", 4) +
           rpad("B/elem", 9) + rpad("A+B", 12) + "  native\n";
    }
    const auto& c = d.gemm_cost[i];
    t += "  " + pad(rankText(r, d.gemm), 6) + pad(r.label, 42) + rpad(intervalText(r), 18) +
         rpad(std::isfinite(r.sd) ? decimalText(r.sd, 'g', 3) : "—", 9) + rpad(std::to_string(r.n_values), 4) +
         rpad(c ? bytesPerElementText(c->bytesPerElement()) : "—", 9) +
         rpad(c ? bytesText(double(c->bytes())) : "—", 12) + "  " + (c ? c->hardware : "—") + '\n';
  }
  if (!d.gemm.empty())
    t += "\n  rank = 1 + the recipes whose whole 95 % interval is better; '=' marks a rank shared by "
         "recipes whose intervals overlap (not distinguishable). B/elem: bytes per element of A and B "
         "with their scales in the native layout; `--json` gives each recipe's layout and hardware in "
         "full.\n";
  const RankingMetric& tm = *d.training_metric;
  t += "\nTraining runs: " + tm.label + unitText(tm) + " against the FP32 baseline, " +
       (tm.higher_better ? "higher" : "lower") + " is better\n";
  if (d.training.empty()) t += "  " + hintTraining() + "\n";
  std::string tsetting;
  int label_width = 0; // the widest recipe label of the setting, so the columns line up
  for (size_t i = 0; i < d.training.size(); ++i) {
    const RecipeInterval& r = d.training[i];
    if (r.setting != tsetting) {
      tsetting = r.setting;
      label_width = 6;
      for (const RecipeInterval& o : d.training)
        if (o.setting == r.setting) label_width = std::max(label_width, textWidth(o.label) + 2);
      t += "\n  " + r.setting_label + (d.baselineOf(i) < 0 ? " (no FP32 run: no baseline)" : "") + "\n";
      if (oneSeedEach(d.training, r.setting))
        t += "  one seed per recipe: no interval, not ranked (differences this small may be seed noise: "
             "repeat the runs with other seeds, e.g. `fp8lab-cli sweep CONFIG --seeds 1-3`)\n";
      t += "  " + pad("rank", 6) + pad("recipe", label_width) + rpad("mean ± 95 %", 18) + rpad("Δ vs FP32 ± 95 %", 20) +
           rpad("n", 4) + rpad("B/elem", 9) + "  " + pad("native", 22) + "comparison\n";
    }
    const int b = d.baselineOf(i);
    const RecipeInterval* base = b >= 0 ? &d.training[size_t(b)] : nullptr;
    t += "  " + pad(rankText(r, d.training), 6) + pad(r.label, label_width) + rpad(intervalText(r), 18) +
         rpad(deltaText(r, base), 20) + rpad(std::to_string(r.n_values), 4) +
         trainingCostText(r, i < d.training_cost.size() ? d.training_cost[i] : std::nullopt) + comparisonText(r) + "\n";
    if (r.comparison == Comparison::Paired)
      t += "  " + std::string(6, ' ') + "  per seed: " + perSeedText(*r.paired) + "\n";
    const bool last = i + 1 == d.training.size() || d.training[i + 1].setting != r.setting;
    if (last && base && !oneSeedEach(d.training, r.setting))
      t += "  Δ: the mean of the same-seed differences to the baseline (runs that differ only in the recipe) with "
           "its 95 % t-interval (n − 1 degrees of freedom); rank = 1 + the recipes whose paired interval against "
           "it is wholly better; without two seeds in common, the intervals over seeds (unpaired).\n";
  }
  if (!d.training.empty())
    t += "  B/elem: bytes per element of the fprop GEMM's activation and weight with their scales (at "
         "4096×4096·4096×4096); native: where that pair runs without emulation (`--json` gives the scales).\n";
  t += "\nPer-layer advice\n";
  if (d.advice.empty()) t += "  " + hintAdvice(d, session_path) + "\n";
  for (const AdviceTable& a : d.advice) {
    t += "  run " + a.advised_run + " (" + std::to_string(a.seeds) + " seed(s), " + std::to_string(a.steps) +
         " steps): " + a.loss_name + " all high " + decimalText(a.high_loss, 'g', 5) + ", all in the recipe " +
         decimalText(a.full_loss, 'g', 5) + ", Δ " + adviceDeltaText(a.full_delta, a.full_ci_low, a.full_ci_high) +
         "\n";
    for (const AdviceGroupRow& g : a.groups)
      t += "    " + pad(g.group, 18) + " Δ " + adviceDeltaText(g.delta, g.ci_low, g.ci_high) + "  " +
           adviceVerdictText(g) + "\n";
    t += "    policy: " + (a.policy.empty() ? std::string("(none)") : a.policy) + "\n";
  }
  t += "\nCheckpoint what-if\n";
  if (d.what_if.empty()) t += "  " + hintWhatIf() + "\n";
  for (const WhatIfTable& w : d.what_if) {
    t += "  " + w.run_id + ": SQNR (dB) stored";
    for (const auto& id : w.recipes) t += " | " + id;
    t += '\n';
    for (const CheckpointSqnr& r : w.rows) {
      t += "    " + pad(r.tensor, 40) + " " + decimalText(r.stored_db, 'f', 2);
      for (const auto& [id, v] : r.what_if_db) t += " | " + decimalText(v, 'f', 2);
      t += '\n';
    }
  }
  return t;
}

} // namespace fp8lab

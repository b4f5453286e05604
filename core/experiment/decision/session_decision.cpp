// FP8 Lab — what a session says about the choice of a recipe (session_decision.h).
#include "experiment/decision/session_decision.h"
#include "experiment/training/training_config.h"
#include "session/session_layout.h"

#include "json/json_document.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

namespace fp8lab {

std::optional<RecipeCost> trainingRunCost(const std::string& config_json) {
  std::optional<TrainingExperimentSpec> spec;
  try {
    const JsonDocument doc = JsonDocument::parse(config_json);
    std::string err;
    spec = parseTrainingExperiment(doc.root(), &err, &doc);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!spec || spec->runs.size() != 1) return std::nullopt;
  const TrainingRunConfig& c = spec->runs.front().run();
  if (c.precision != TrainingPrecision::FP8 || !c.policy.rules.empty()) return std::nullopt;
  std::string pa = "te_current", pb = "te_current";
  std::string fa = c.forward_format->name(), fb = fa;
  if (c.recipe.recipe != TrainingRecipe::PerTensor) {
    const RoleQuantization a = c.recipe.role(OperandRole::FpropInput), b = c.recipe.role(OperandRole::FpropWeight);
    if (a.kind == RoleKind::HighPrecision || b.kind == RoleKind::HighPrecision) return std::nullopt;
    pa = a.costPreset();
    pb = b.costPreset();
    fa = a.format->name();
    fb = b.format->name();
  }
  const int64_t s = kTrainingCostShape;
  return recipeCost(pa, pb, fa, fb, s, s, s);
}

namespace {

/// A run's training loss averaged over bins of `bin` steps (the last bin may be shorter).
std::vector<double> binnedLoss(const std::string& run, const DatasetSource& read, int64_t bin) {
  const auto ds = read(run, layout::kTrainingLoss);
  std::vector<double> out;
  if (!ds || ds->f32.empty() || bin < 1) return out;
  const auto& v = ds->f32;
  for (size_t b = 0; b < v.size(); b += size_t(bin)) {
    double sum = 0;
    size_t n = 0;
    for (size_t i = b; i < std::min(v.size(), b + size_t(bin)); ++i)
      if (std::isfinite(v[i])) sum += v[i], ++n;
    out.push_back(n ? sum / double(n) : NAN);
  }
  return out;
}

/// The mean and min–max over the rows of `per_seed` at each point (finite values only).
CurveSeries seriesOf(const std::vector<std::vector<double>>& per_seed, int64_t bin, int64_t steps) {
  CurveSeries c;
  size_t n = 0;
  for (const auto& r : per_seed) n = std::max(n, r.size());
  c.seeds = int(per_seed.size());
  for (size_t i = 0; i < n; ++i) {
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    int k = 0;
    for (const auto& r : per_seed)
      if (i < r.size() && std::isfinite(r[i])) sum += r[i], lo = std::min(lo, r[i]), hi = std::max(hi, r[i]), ++k;
    if (k == 0) continue;
    const double first = double(i) * double(bin) + 1, last = std::min<double>(double(steps), first + double(bin) - 1);
    c.x.push_back((first + last) / 2);
    c.mean.push_back(sum / k);
    c.lo.push_back(lo);
    c.hi.push_back(hi);
  }
  return c;
}

} // namespace

TrainingCurves trainingCurves(const SessionDecision& d, const std::vector<size_t>& group, const DatasetSource& read,
                              int max_points) {
  TrainingCurves t;
  if (group.empty() || !read) return t;
  for (size_t i : group)
    for (const std::string& run : d.training[i].runs)
      if (const auto ds = read(run, layout::kTrainingLoss))
        t.steps = std::max<int64_t>(t.steps, int64_t(ds->f32.size()));
  if (t.steps == 0) return t;
  t.bin = std::max<int64_t>(1, (t.steps + std::max(1, max_points) - 1) / std::max(1, max_points));
  const int bi = d.baselineOf(group.front());
  // The baseline's binned loss per seed, for the same-seed differences.
  std::map<uint64_t, std::vector<double>> base;
  if (bi >= 0) {
    const RecipeInterval& b = d.training[size_t(bi)];
    for (size_t k = 0; k < b.runs.size(); ++k)
      if (!base.count(b.seeds[k])) base[b.seeds[k]] = binnedLoss(b.runs[k], read, t.bin);
  }
  for (size_t i : group) {
    const RecipeInterval& r = d.training[i];
    std::vector<std::vector<double>> losses, diffs;
    for (size_t k = 0; k < r.runs.size(); ++k) {
      std::vector<double> l = binnedLoss(r.runs[k], read, t.bin);
      if (l.empty()) continue;
      if (!r.baseline && bi >= 0)
        if (auto it = base.find(r.seeds[k]); it != base.end() && !it->second.empty()) {
          std::vector<double> dd(std::min(l.size(), it->second.size()));
          for (size_t j = 0; j < dd.size(); ++j) dd[j] = l[j] - it->second[j];
          diffs.push_back(std::move(dd));
        }
      losses.push_back(std::move(l));
    }
    if (losses.empty()) continue;
    CurveSeries c = seriesOf(losses, t.bin, t.steps);
    c.label = r.label;
    c.baseline = r.baseline;
    t.loss.push_back(std::move(c));
    if (!diffs.empty()) {
      CurveSeries dc = seriesOf(diffs, t.bin, t.steps);
      dc.label = r.label;
      t.delta.push_back(std::move(dc));
    }
  }
  return t;
}

int SessionDecision::baselineOf(size_t i) const {
  if (i >= training.size()) return -1;
  for (size_t j = 0; j < training.size(); ++j)
    if (training[j].setting == training[i].setting && training[j].baseline) return int(j);
  return -1;
}

int SessionDecision::rankedSettings() const {
  std::map<std::string, int> n;
  for (const RecipeInterval& r : gemm)
    if (r.n_values > 0) ++n[r.setting];
  int s = 0;
  for (const auto& [k, v] : n) s += v >= 2;
  return s;
}

std::string hintGemmRanking() {
  return "No GEMM recipes to rank: sweep recipes over several seeds on the same operands, e.g. "
         "`fp8lab-cli sweep resources/experiments/outlier-decision.json --out decision.h5` (FP8, MX and NVFP4 "
         "recipes and two A:B pairs x 5 seeds), then open decision.h5.";
}
std::string hintTraining() {
  return "No training runs: `fp8lab-cli run resources/experiments/default.json --out default-session.h5` trains "
         "the MLP with FP8, MXFP8 and NVFP4 recipes beside an FP32 baseline (about 2 minutes on 2 cores).";
}
std::string hintAdvice() {
  return "No per-layer advice: `fp8lab-cli advise resources/experiments/default.json --run nvfp4 --steps 150 "
         "--seeds 3 --out advice.h5 --write-config advised.json` measures which layers to keep in high precision "
         "and writes the policy as a config (docs/training.md \"Per-layer advice\").";
}
std::string hintAdvice(const SessionDecision& d, const std::string& session_path) {
  const RecipeInterval* pick = nullptr;
  for (const RecipeInterval& r : d.training) {
    if (r.baseline || r.runs.empty() || r.n_values == 0) continue;
    if (r.setting_label.rfind("PyTorch model", 0) == 0) continue; // observed runs have no config to advise on
    const double diff = r.paired && r.paired->n_pairs > 0 ? r.paired->mean_diff : NAN;
    const double pick_diff = pick && pick->paired && pick->paired->n_pairs > 0 ? pick->paired->mean_diff : NAN;
    // The worst recipe against its baseline: the largest loss increase (lower is better) or the
    // largest accuracy drop.
    const bool worse =
        std::isfinite(diff) &&
        (!std::isfinite(pick_diff) || (d.training_metric->higher_better ? diff < pick_diff : diff > pick_diff));
    if (!pick || worse) pick = &r;
  }
  if (!pick) return hintAdvice();
  const std::string& run = pick->runs.front();
  const std::string dir = "run-" + run;
  const std::string session = session_path.empty() ? std::string("SESSION.h5") : session_path;
  return "No per-layer advice: `fp8lab-cli export " + session + " --run " + run + " --csv " + dir +
         "` writes that run's config (" + dir + "/config.json), then `fp8lab-cli advise " + dir +
         "/config.json --seeds 3 --out advice.h5 --write-config advised.json` measures which layers of " + run + " (" +
         pick->label +
         ") to keep in high precision and writes the policy as a config (docs/training.md \"Per-layer advice\").";
}

std::string hintWhatIf() {
  return "No checkpoint what-if: `fp8lab-cli checkpoint import model.safetensors --out s.h5 --what-if "
         "te_current,te_block_1x128,mx_rceil,nvfp4_te` re-quantizes each FP8 weight with other recipes "
         "(docs/checkpoints.md).";
}

std::string intervalText(const RecipeInterval& r, int digits) {
  if (r.n_values == 0) return "—";
  char t[64];
  if (r.n_values == 1 || !std::isfinite(r.half)) {
    std::snprintf(t, sizeof t, "%.*g", digits, r.mean);
  } else if (r.half == 0) {
    std::snprintf(t, sizeof t, "%.*g ± 0", digits, r.mean);
  } else {
    // The half-width to two significant digits and the mean to the same decimal place.
    const int decimals = std::clamp(1 - int(std::floor(std::log10(r.half))), 0, 12);
    std::snprintf(t, sizeof t, "%.*f ± %.*f", decimals, r.mean, decimals, r.half);
  }
  return t;
}

std::string adviceDeltaText(double delta, double lo, double hi) {
  char t[96];
  if (std::isfinite(lo) && std::isfinite(hi))
    std::snprintf(t, sizeof t, "%+.4f [%+.4f, %+.4f]", delta, lo, hi);
  else
    std::snprintf(t, sizeof t, "%+.4f (one seed: no interval)", delta);
  return t;
}

std::string adviceVerdictText(const AdviceGroupRow& g) {
  if (g.keep_high) return "keep in high precision";
  const bool noise = std::isfinite(g.ci_low) ? g.ci_low <= 0 && g.ci_high >= 0 : g.delta <= g.spread;
  return g.delta > 0 && noise ? "low precision (interval holds 0: within seed noise)" : "low precision";
}

std::string pairedText(const PairedDifference& p) {
  if (p.n_pairs == 0) return "—";
  char t[96];
  if (p.n_pairs == 1 || !std::isfinite(p.half)) {
    std::snprintf(t, sizeof t, "%+.4g (one seed: no interval)", p.mean_diff);
  } else if (p.half == 0) {
    std::snprintf(t, sizeof t, "%+.4g ± 0", p.mean_diff);
  } else {
    const int decimals = std::clamp(1 - int(std::floor(std::log10(p.half))), 0, 12);
    std::snprintf(t, sizeof t, "%+.*f ± %.*f", decimals, p.mean_diff, decimals, p.half);
  }
  return t;
}

std::string perSeedText(const PairedDifference& p) {
  std::string s;
  char t[64];
  for (size_t i = 0; i < p.diffs.size(); ++i) {
    std::snprintf(t, sizeof t, "seed %llu %+.4g", static_cast<unsigned long long>(p.seeds[i]), p.diffs[i]);
    s += (s.empty() ? "" : ", ") + std::string(t);
  }
  return s;
}

std::string comparisonText(const RecipeInterval& r) {
  switch (r.comparison) {
  case Comparison::Baseline:
    return "baseline";
  case Comparison::OneSeed:
    return verdictText(Verdict::OneSeed);
  case Comparison::Paired:
    return verdictText(r.verdict) + " (paired, " + std::to_string(r.paired ? r.paired->n_pairs : 0) + " seeds)";
  case Comparison::Unpaired:
    return verdictText(r.verdict) + " (unpaired: no two seeds in common; " +
           (r.verdict == Verdict::NotDistinguishable ? "intervals over seeds overlap)" : "intervals over seeds apart)");
  case Comparison::None:
    break;
  }
  return "";
}

std::string rankText(const RecipeInterval& r, const std::vector<RecipeInterval>& all) {
  if (r.rank == 0) return "—";
  int same = 0;
  for (const RecipeInterval& o : all)
    if (o.setting == r.setting && o.rank == r.rank) ++same;
  return std::to_string(r.rank) + (same > 1 ? " =" : "");
}

namespace {

std::optional<float> firstValue(const DatasetSource& read, const std::string& run, const std::string& path) {
  if (!read) return std::nullopt;
  const auto d = read(run, path);
  if (!d || d->elementCount() < 1) return std::nullopt;
  return float(d->valueAt(0));
}

AdviceTable adviceTable(const RunInfo& ri, const DatasetSource& read) {
  AdviceTable t;
  t.run_id = ri.id;
  t.advised_run = attrString(ri.attrs, "advised_run").value_or("");
  t.loss_name = attrString(ri.attrs, "loss_name").value_or("loss");
  t.policy = attrString(ri.attrs, "policy").value_or("");
  t.config = ri.config_json;
  t.steps = attrInt(ri.attrs, "steps").value_or(0);
  t.seeds = attrInt(ri.attrs, "seeds").value_or(1);
  if (const auto it = ri.metrics.find("high_loss"); it != ri.metrics.end()) t.high_loss = it->second.value;
  if (const auto it = ri.metrics.find("full_loss"); it != ri.metrics.end()) t.full_loss = it->second.value;
  t.full_delta = t.full_loss - t.high_loss;
  if (const auto it = ri.metrics.find("full_delta"); it != ri.metrics.end()) t.full_delta = it->second.value;
  if (const auto it = ri.metrics.find("full_ci_low"); it != ri.metrics.end()) t.full_ci_low = it->second.value;
  if (const auto it = ri.metrics.find("full_ci_high"); it != ri.metrics.end()) t.full_ci_high = it->second.value;
  std::vector<std::string> names;
  std::stringstream ss(attrString(ri.attrs, "groups").value_or(""));
  for (std::string g; std::getline(ss, g, ',');)
    if (!g.empty()) names.push_back(g);
  std::map<std::string, std::optional<Dataset>> ds;
  for (const char* series : {"delta", "spread", "share", "sqnr_db", "keep_high"}) {
    const std::string p = layout::advice(series);
    ds[p] = read ? read(ri.id, p) : std::nullopt;
  }
  // The intervals (sessions before them have none: not a problem, NaN).
  std::map<std::string, std::optional<Dataset>> ci;
  for (const char* series : {"ci_low", "ci_high"}) {
    const std::string p = layout::advice(series);
    ci[p] = read ? read(ri.id, p) : std::nullopt;
  }
  for (size_t i = 0; i < names.size(); ++i) {
    AdviceGroupRow row;
    row.group = names[i];
    auto at = [&](const std::string& p) {
      const auto& d = ds[p];
      return d && int64_t(i) < d->elementCount() ? d->valueAt(int64_t(i)) : NAN;
    };
    row.delta = at(layout::advice("delta"));
    row.spread = at(layout::advice("spread"));
    row.share = at(layout::advice("share"));
    row.sqnr_db = at(layout::advice("sqnr_db"));
    row.keep_high = at(layout::advice("keep_high")) == 1.0;
    for (auto [series, to] : {std::pair{"ci_low", &row.ci_low}, std::pair{"ci_high", &row.ci_high}}) {
      const auto& d = ci[layout::advice(series)];
      *to = d && int64_t(i) < d->elementCount() ? d->valueAt(int64_t(i)) : NAN;
    }
    t.groups.push_back(row);
  }
  for (const auto& [p, d] : ds)
    if (!d) t.problem += (t.problem.empty() ? "missing " : ", ") + p;
  return t;
}

std::optional<WhatIfTable> whatIfTable(const RunInfo& ri, const DatasetSource& read) {
  Json cfg;
  try {
    cfg = JsonDocument::parse(ri.config_json).root();
  } catch (const JsonTextError&) {
    return std::nullopt;
  }
  if (!cfg.is_object() || !cfg.contains("what_if") || !cfg["what_if"].is_array() || cfg["what_if"].empty())
    return std::nullopt;
  // checkpointRunSqnr reads the first value of each series from a Run: build one from the datasets.
  Run run;
  run.id = ri.id;
  run.config_json = ri.config_json;
  std::vector<std::string> ids;
  for (const Json& id : cfg["what_if"])
    if (id.is_string()) ids.push_back(id.get<std::string>());
  if (cfg.contains("tensors") && cfg["tensors"].is_array())
    for (const Json& tn : cfg["tensors"]) {
      if (!tn.is_string()) continue;
      std::vector<std::string> paths{layout::blockStats(tn.get<std::string>(), "sqnr_db")};
      for (const std::string& id : ids) paths.push_back(layout::whatIf(id, tn.get<std::string>(), "sqnr_db"));
      for (const std::string& p : paths)
        if (const auto v = firstValue(read, ri.id, p)) run.datasets[p] = Dataset::float32({1}, {*v}, "dB", "");
    }
  WhatIfTable t;
  t.run_id = ri.id;
  t.source = attrString(ri.attrs, "source").value_or(cfg.value("file", std::string()));
  t.recipes = ids;
  t.rows = checkpointRunSqnr(run);
  return t;
}

} // namespace

DatasetSource readerDatasetSource(SessionReader& rd) {
  return [&rd](const std::string& run, const std::string& path) -> std::optional<Dataset> {
    auto r = rd.read(run, path);
    if (!r.ok()) return std::nullopt;
    return std::move(r.value);
  };
}

SessionDecision decideSession(const std::vector<RunInfo>& runs, const std::string& metric, const DatasetSource& read) {
  SessionDecision d;
  const RankingMetric* chosen = nullptr;
  if (!metric.empty()) {
    chosen = rankingMetric(metric);
    if (!chosen) throw std::invalid_argument("unknown metric '" + metric + "' (one of: " + rankingMetricKeys() + ")");
  }
  d.gemm_metric = chosen && !chosen->training ? chosen : rankingMetric("sqnr_db");
  d.training_metric = chosen && chosen->training ? chosen
                      : metricPresent(runs, "final_test_accuracy") || !metricPresent(runs, "final_val_loss")
                          ? rankingMetric("final_test_accuracy")
                          : rankingMetric("final_val_loss");
  d.gemm = rankWithIntervals(rankSamples(runs, *d.gemm_metric), d.gemm_metric->higher_better);
  for (const RecipeInterval& r : d.gemm)
    d.gemm_cost.push_back(recipeCost(r.scaling_a, r.scaling_b, r.format_a, r.format_b, r.m, r.k, r.n));
  d.training = rankWithIntervals(rankSamples(runs, *d.training_metric), d.training_metric->higher_better);
  pairRecipes(&d.training, d.training_metric->higher_better);
  for (const RecipeInterval& r : d.training) {
    std::optional<RecipeCost> c;
    if (!r.baseline && !r.runs.empty())
      for (const RunInfo& ri : runs)
        if (ri.id == r.runs.front()) {
          c = trainingRunCost(ri.config_json);
          break;
        }
    d.training_cost.push_back(std::move(c));
  }
  for (const RunInfo& ri : runs) {
    if (ri.type == "advice") d.advice.push_back(adviceTable(ri, read));
    if (ri.type == "checkpoint")
      if (auto t = whatIfTable(ri, read)) d.what_if.push_back(std::move(*t));
  }
  return d;
}

} // namespace fp8lab

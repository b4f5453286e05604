// FP8 Lab — per-layer advice for training (see site_advice.h).
#include "experiment/decision/site_advice.h"
#include "training/sites.h"
#include "experiment/decision/recipe_ranking.h"
#include "json/json_number.h"
#include "session/session_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <stdexcept>

namespace fp8lab {

std::vector<SiteGroup> siteGroups(const SiteTable& t) {
  std::vector<SiteGroup> groups;
  auto groupOf = [&](const std::string& name) -> SiteGroup& {
    for (SiteGroup& g : groups)
      if (g.name == name) return g;
    groups.push_back(SiteGroup{name, {}});
    return groups.back();
  };
  for (const Site& s : t.sites()) {
    if (s.kind != SiteKind::Linear) continue;
    if (s.block >= 0)
      groupOf(blockSitePath(s.block, s.group)).sites.push_back(s.path);
    else
      groupOf(s.path).sites.push_back(s.path);
  }
  return groups;
}

namespace {

/// The run of the sweep: `spec` cut to `steps` steps, with the given policy rules added after its
/// own.
TrainingRunSpec probeRun(const TrainingRunSpec& spec, const std::string& id, int64_t steps,
                         const std::vector<PolicyRule>& extra) {
  TrainingRunSpec r = spec;
  r.id = id;
  r.run().label = id;
  r.kind().shorten(r, steps);
  PrecisionPolicy& p = r.run().policy;
  p.rules.insert(p.rules.end(), extra.begin(), extra.end());
  return r;
}

double finalLoss(const Run& run, const TrainingModelKind& kind) {
  const auto it = run.metrics.find(kind.loss_metric);
  return it == run.metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second.value;
}

/// Mean of the finite per-step SQNRs of the group's operands in `run` (block_stats).
double groupSqnr(const Run& run, const SiteGroup& g) {
  double s = 0;
  int64_t n = 0;
  for (const std::string& site : g.sites)
    for (const char* op : {"input", "kernel", "output_grad"}) {
      const Dataset* d = run.find(layout::blockStats(site + "/" + op, "sqnr_db"));
      if (!d) continue;
      for (float v : d->f32)
        if (std::isfinite(v)) {
          s += v;
          ++n;
        }
    }
  return n ? s / double(n) : std::numeric_limits<double>::quiet_NaN();
}

} // namespace

SiteAdvice adviseSitePrecision(const TrainingRunSpec& spec, const AdviceConfig& cfg, const ProgressFn& progress) {
  if (!spec.run().fp8())
    throw std::invalid_argument("run '" + spec.id +
                                "' trains in FP32: there is nothing to keep in high precision (advise a run with "
                                "\"precision\": \"fp8\")");
  const TrainingModelKind& kind = spec.kind();
  // The advised run's own length by default, as long as a probe run can be (an MLP's probe runs
  // are one epoch at most: TrainingModelKind::shorten).
  int64_t steps = cfg.steps;
  if (steps == 0) steps = std::min(spec.steps(), kind.max_short_steps(spec));
  if (steps < 1) throw std::invalid_argument("the advice needs at least one step per run");
  const SiteTable table = spec.sites();
  const std::vector<SiteGroup> groups = siteGroups(table);
  SiteAdvice a;
  a.run_id = spec.id;
  a.loss_name = kind.loss_name;

  const int seeds = std::max(1, cfg.seeds);
  a.seeds = seeds;
  a.steps = steps;
  // losses[seed][run]: run 0 all high, 1 all recipe, 2 + g only group g
  std::vector<std::vector<double>> losses;
  for (int k = 0; k < seeds; ++k) {
    TrainingRunSpec base = spec;
    const std::string suffix = seeds > 1 ? "-seed" + std::to_string(k + 1) : std::string();
    base.run().seed += uint64_t(k);
    TrainingExperimentSpec sweep;
    sweep.name = spec.id + "-advice";
    sweep.runs.push_back(probeRun(base, spec.id + "-all-high" + suffix, steps, {PolicyRule{"*", {}, cfg.keep, 0, -1}}));
    sweep.runs.push_back(probeRun(base, spec.id + "-all-recipe" + suffix, steps, {}));
    for (const SiteGroup& g : groups) {
      std::vector<PolicyRule> rules = {PolicyRule{"*", {}, cfg.keep, 0, -1}};
      for (const std::string& s : g.sites) rules.push_back(PolicyRule{s, {}, SitePrecision::Recipe, 0, -1});
      sweep.runs.push_back(probeRun(base, spec.id + "-only-" + g.name + suffix, steps, rules));
    }
    const size_t first = a.runs.size();
    TrainingHooks hooks;
    hooks.progress = [&](double, double overall, const std::string& stage) {
      return !progress || progress((double(k) + overall) / double(seeds), stage);
    };
    hooks.save = [&](const Run& run, std::string* stored, std::string*) {
      a.runs.push_back(run);
      *stored = run.id;
      return true;
    };
    TrainingRunnerOptions ro;
    ro.backend = cfg.backend;
    ro.threads = cfg.threads;
    const TrainingExperimentOutcome out = runTrainingExperiment(sweep, ro, hooks);
    if (out.status == TrainingExperimentOutcome::Status::Cancelled) throw Cancelled();
    if (out.status == TrainingExperimentOutcome::Status::Failed) throw std::runtime_error(out.error);
    if (a.runs.size() - first != sweep.runs.size())
      throw std::runtime_error("the advice sweep did not finish every run");
    std::vector<double> l;
    for (size_t i = first; i < a.runs.size(); ++i) l.push_back(finalLoss(a.runs[i], kind));
    losses.push_back(std::move(l));
  }
  // Per seed k: losses[k][0] all high, [1] all in the recipe, [2 + g] only group g in the recipe.
  auto column = [&](size_t run) {
    std::vector<double> v;
    for (int k = 0; k < seeds; ++k) v.push_back(losses[size_t(k)][run]);
    return v;
  };
  auto diffs = [&](size_t run) {
    std::vector<double> v;
    for (int k = 0; k < seeds; ++k) v.push_back(losses[size_t(k)][run] - losses[size_t(k)][0]);
    return v;
  };
  a.high_loss = meanInterval(column(0)).mean;
  a.full_loss = meanInterval(column(1)).mean;
  a.full_per_seed = diffs(1);
  const MeanInterval full = meanInterval(a.full_per_seed);
  a.full_delta = full.mean;
  a.full_spread = seeds > 1 ? full.sd : 0.0;
  a.full_ci_low = seeds > 1 ? full.lo : std::numeric_limits<double>::quiet_NaN();
  a.full_ci_high = seeds > 1 ? full.hi : std::numeric_limits<double>::quiet_NaN();
  a.seeds_to_resolve = full.n > 1 && !(full.lo > 0 || full.hi < 0) ? seedsToResolve(full.mean, full.sd) : 0;
  const double full_delta = a.full_delta;
  std::vector<PolicyRule> keep_rules;
  for (size_t i = 0; i < groups.size(); ++i) {
    GroupSensitivity g;
    g.group = groups[i];
    g.loss = meanInterval(column(2 + i)).mean;
    g.per_seed = diffs(2 + i);
    const MeanInterval m = meanInterval(g.per_seed);
    g.delta = m.mean;
    g.spread = seeds > 1 ? m.sd : 0.0;
    g.ci_low = seeds > 1 ? m.lo : std::numeric_limits<double>::quiet_NaN();
    g.ci_high = seeds > 1 ? m.hi : std::numeric_limits<double>::quiet_NaN();
    g.share = full_delta > 0 ? g.delta / full_delta : std::numeric_limits<double>::quiet_NaN();
    g.sqnr_db = groupSqnr(a.runs[1], g.group);
    g.keep_high = seeds > 1 && g.ci_low > 0 && full_delta > 0 && g.delta >= cfg.keep_share * full_delta;
    if (g.keep_high)
      for (const std::string& s : g.group.sites) keep_rules.push_back(PolicyRule{s, {}, cfg.keep, 0, -1});
    a.groups.push_back(std::move(g));
  }
  TrainingRunSpec advised = spec;
  PrecisionPolicy& p = advised.run().policy;
  p.rules.insert(p.rules.end(), keep_rules.begin(), keep_rules.end());
  a.policy = p;
  a.config_json = advised.configJson();
  return a;
}

std::string SiteAdvice::summary() const {
  std::string s;
  char line[400];
  // "+0.0271 ± 0.0119 [+0.0152, +0.0390]" with one seed: "+0.0271 (one seed: no interval)".
  auto interval = [](double mean, double lo, double hi) {
    char t[96];
    if (std::isfinite(lo) && std::isfinite(hi))
      std::snprintf(t, sizeof t, "%+.4f ± %.4f [%+.4f, %+.4f]", mean, (hi - lo) / 2, lo, hi);
    else
      std::snprintf(t, sizeof t, "%+.4f (one seed: no interval)", mean);
    return std::string(t);
  };
  std::snprintf(line, sizeof line,
                "%s, %d seed%s, %lld steps per run: every site in high precision %.4f, every site in the recipe %.4f\n",
                loss_name.c_str(), seeds, seeds == 1 ? "" : "s", static_cast<long long>(steps), high_loss, full_loss);
  s += line;
  s += "full recipe Δ " + interval(full_delta, full_ci_low, full_ci_high) +
       " (mean of the same-seed differences, 95 % t-interval)";
  std::string per;
  for (double d : full_per_seed) {
    std::snprintf(line, sizeof line, "%+.4f", d);
    per += (per.empty() ? "" : ", ") + std::string(line);
  }
  s += "; per seed: " + per + "\n";
  bool any_resolved = false;
  for (const GroupSensitivity& g : groups)
    any_resolved = any_resolved || (std::isfinite(g.ci_low) && (g.ci_low > 0 || g.ci_high < 0));
  const bool full_resolved = std::isfinite(full_ci_low) && (full_ci_low > 0 || full_ci_high < 0);
  if (!full_resolved && !any_resolved) {
    if (seeds < 2)
      s += "one seed: no interval, so nothing is resolved and no group is kept; run with --seeds 3 or more\n";
    else if (seeds_to_resolve > 0) {
      std::snprintf(line, sizeof line,
                    "nothing is resolved: every interval holds 0. At this spread (sd %.4f of the per-seed "
                    "differences) %d seeds would resolve the full recipe's Δ of %+.4f (--seeds %d)\n",
                    full_spread, seeds_to_resolve, full_delta, seeds_to_resolve);
      s += line;
    } else
      s += "nothing is resolved: every interval holds 0\n";
  }
  s += "group                 Δ loss ± 95 % [interval]                 share   SQNR (dB)  advice\n";
  for (const GroupSensitivity& g : groups) {
    char share[16] = "      —";
    if (std::isfinite(g.share)) std::snprintf(share, sizeof share, "%6.1f%%", 100.0 * g.share);
    const bool holds0 = !(g.ci_low > 0) && !(g.ci_high < 0);
    std::snprintf(line, sizeof line, "%-20s %-40s %8s %10.2f  %s\n", g.group.name.c_str(),
                  interval(g.delta, g.ci_low, g.ci_high).c_str(), share, g.sqnr_db,
                  g.keep_high             ? "keep in high precision"
                  : g.delta > 0 && holds0 ? "low precision (interval holds 0: within seed noise)"
                                          : "low precision");
    s += line;
  }
  return s;
}

Run adviceToSession(const SiteAdvice& a, const std::string& id, int64_t steps) {
  Run run;
  run.id = id;
  run.type = "advice";
  run.config_json = a.config_json;
  run.backend = "cpu";
  run.device = "CPU";
  run.attrs["label"] = id;
  run.attrs["advised_run"] = a.run_id;
  run.attrs["loss_name"] = a.loss_name;
  run.attrs["steps"] = steps;
  run.attrs["seeds"] = int64_t(a.seeds);
  std::string full_per_seed;
  for (double d : a.full_per_seed) {
    char t[32];
    std::snprintf(t, sizeof t, "%.17g", d);
    full_per_seed += (full_per_seed.empty() ? "" : ",") + std::string(t);
  }
  run.attrs["full_per_seed"] = full_per_seed;
  std::string names, kept;
  const int64_t n = int64_t(a.groups.size());
  std::vector<float> delta, share, sqnr, spread, lo, hi, per_seed;
  std::vector<uint8_t> keep;
  for (const GroupSensitivity& g : a.groups) {
    lo.push_back(float(g.ci_low));
    hi.push_back(float(g.ci_high));
    for (int k = 0; k < a.seeds; ++k)
      per_seed.push_back(size_t(k) < g.per_seed.size() ? float(g.per_seed[size_t(k)]) : NAN);
    names += (names.empty() ? "" : ",") + g.group.name;
    if (g.keep_high) kept += (kept.empty() ? "" : ",") + g.group.name;
    delta.push_back(float(g.delta));
    spread.push_back(float(g.spread));
    share.push_back(float(g.share));
    sqnr.push_back(float(g.sqnr_db));
    keep.push_back(g.keep_high ? 1 : 0);
  }
  run.attrs["groups"] = names;
  run.attrs["keep_high"] = kept;
  std::string rules;
  for (const PolicyRule& r : a.policy.rules) rules += (rules.empty() ? "" : "; ") + r.describe();
  run.attrs["policy"] = rules;
  run.putFloat32(layout::advice("delta"), delta, n, -1, "nats",
                 "final loss with only this group in the recipe minus the all-high-precision run's (order of the "
                 "'groups' attribute)");
  run.putFloat32(layout::advice("spread"), spread, n, -1, "nats", "sample standard deviation of delta over the seeds");
  run.putFloat32(layout::advice("ci_low"), lo, n, -1, "nats",
                 "lower end of delta's 95 % t-interval over the same-seed differences (NaN for one seed)");
  run.putFloat32(layout::advice("ci_high"), hi, n, -1, "nats", "upper end of delta's 95 % t-interval");
  run.datasets[layout::advice("per_seed")] = Dataset::float32({n, int64_t(a.seeds)}, per_seed, "nats",
                                                              "per group and seed: the group-only run's final loss "
                                                              "minus the all-high-precision run's of the same seed");
  run.putFloat32(layout::advice("share"), share, n, -1, "1", "delta / the all-recipe run's delta");
  run.putFloat32(layout::advice("sqnr_db"), sqnr, n, -1, "dB",
                 "mean per-block SQNR of the group's operands in the all-recipe run (lower: more quantization error)");
  run.datasets[layout::advice("keep_high")] = Dataset::uint8({n}, keep, "1", "1: keep the group in high precision");
  run.setMetric("high_loss", a.high_loss, "nats", "final loss with every site in high precision");
  run.setMetric("full_loss", a.full_loss, "nats", "final loss with every site in the recipe");
  run.setMetric("full_delta", a.full_delta, "nats", "mean of the same-seed differences all-recipe − all-high");
  run.setMetric("full_ci_low", a.full_ci_low, "nats", "lower end of full_delta's 95 % t-interval");
  run.setMetric("full_ci_high", a.full_ci_high, "nats", "upper end of full_delta's 95 % t-interval");
  return run;
}

const TrainingRunSpec* runToAdvise(const TrainingExperimentSpec& spec, const std::optional<std::string>& id) {
  for (const TrainingRunSpec& r : spec.runs)
    if (id ? r.id == *id : r.run().fp8()) return &r;
  return nullptr;
}

Json siteAdviceJson(const SiteAdvice& a) {
  auto numbers = [](const std::vector<double>& v) {
    Json j = Json::array();
    for (double x : v) j.push_back(numberJson(x));
    return j;
  };
  Json groups = Json::array();
  for (const GroupSensitivity& g : a.groups)
    groups.push_back({{"group", g.group.name},
                      {"sites", g.group.sites},
                      {"delta", numberJson(g.delta)},
                      {"spread", numberJson(g.spread)},
                      {"ci_low", numberJson(g.ci_low)},
                      {"ci_high", numberJson(g.ci_high)},
                      {"per_seed", numbers(g.per_seed)},
                      {"share", numberJson(g.share)},
                      {"sqnr_db", numberJson(g.sqnr_db)},
                      {"keep_high", g.keep_high}});
  return {{"run", a.run_id},
          {"loss", a.loss_name},
          {"seeds", a.seeds},
          {"steps", a.steps},
          {"high_loss", numberJson(a.high_loss)},
          {"full_loss", numberJson(a.full_loss)},
          {"full",
           {{"delta", numberJson(a.full_delta)},
            {"spread", numberJson(a.full_spread)},
            {"ci_low", numberJson(a.full_ci_low)},
            {"ci_high", numberJson(a.full_ci_high)},
            {"per_seed", numbers(a.full_per_seed)},
            {"seeds_to_resolve", a.seeds_to_resolve}}},
          {"groups", groups},
          {"config", a.config_json}};
}

} // namespace fp8lab

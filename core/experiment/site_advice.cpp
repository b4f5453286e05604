// FP8 Lab — per-layer advice for training (see site_advice.h).
#include "experiment/site_advice.h"
#include "io/json_number.h"
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
      groupOf("blocks." + std::to_string(s.block) + "." + s.group).sites.push_back(s.path);
    else
      groupOf(s.path).sites.push_back(s.path);
  }
  return groups;
}

namespace {

bool lowPrecision(const TrainingRunSpec& s) {
  return (s.lm ? s.lm->precision : s.config.precision) == TrainingPrecision::FP8;
}

SiteTable sitesOf(const TrainingRunSpec& s) {
  return s.lm ? s.lm->model.sites() : SiteTable::mlp(s.config.layer_sizes);
}

PrecisionPolicy& policyOf(TrainingRunSpec& s) {
  return s.lm ? s.lm->policy : s.config.policy;
}

/// The run of the sweep: `spec` cut to `steps` steps, with the given policy rules added after its
/// own.
TrainingRunSpec probeRun(const TrainingRunSpec& spec, const std::string& id, int64_t steps,
                         const std::vector<PolicyRule>& extra) {
  TrainingRunSpec r = spec;
  r.id = id;
  if (r.lm) {
    r.lm->label = id;
    r.lm->steps = steps;
    r.lm->eval_every = int(std::max<int64_t>(steps, 1));
    r.lm->sample_bytes = 0;
    r.lm->probes.attention_every = 0;
  } else {
    r.config.label = id;
    r.config.epochs = 1;
    r.train_limit = std::min<int64_t>(60000, steps * r.config.batch_size);
    if (r.test_limit == 0) r.test_limit = 2000;
  }
  PrecisionPolicy& p = policyOf(r);
  p.rules.insert(p.rules.end(), extra.begin(), extra.end());
  return r;
}

double finalLoss(const Run& run, bool lm) {
  const auto it = run.metrics.find(lm ? "final_val_loss" : "final_test_loss");
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
  if (!lowPrecision(spec))
    throw std::invalid_argument("run '" + spec.id +
                                "' trains in FP32: there is nothing to keep in high precision (advise a run with "
                                "\"precision\": \"fp8\")");
  if (cfg.steps < 1) throw std::invalid_argument("the advice needs at least one step per run");
  const bool lm = spec.lm.has_value();
  const SiteTable table = sitesOf(spec);
  const std::vector<SiteGroup> groups = siteGroups(table);
  SiteAdvice a;
  a.run_id = spec.id;
  a.loss_name = lm ? "validation loss (nats per byte)" : "test loss (nats)";

  const int seeds = std::max(1, cfg.seeds);
  a.seeds = seeds;
  // losses[seed][run]: run 0 all high, 1 all recipe, 2 + g only group g
  std::vector<std::vector<double>> losses;
  for (int k = 0; k < seeds; ++k) {
    TrainingRunSpec base = spec;
    const std::string suffix = seeds > 1 ? "-seed" + std::to_string(k + 1) : std::string();
    if (base.lm)
      base.lm->seed += uint64_t(k);
    else
      base.config.seed += uint64_t(k);
    TrainingExperimentSpec sweep;
    sweep.name = spec.id + "-advice";
    sweep.runs.push_back(
        probeRun(base, spec.id + "-all-high" + suffix, cfg.steps, {PolicyRule{"*", {}, cfg.keep, 0, -1}}));
    sweep.runs.push_back(probeRun(base, spec.id + "-all-recipe" + suffix, cfg.steps, {}));
    for (const SiteGroup& g : groups) {
      std::vector<PolicyRule> rules = {PolicyRule{"*", {}, cfg.keep, 0, -1}};
      for (const std::string& s : g.sites) rules.push_back(PolicyRule{s, {}, SitePrecision::Recipe, 0, -1});
      sweep.runs.push_back(probeRun(base, spec.id + "-only-" + g.name + suffix, cfg.steps, rules));
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
    for (size_t i = first; i < a.runs.size(); ++i) l.push_back(finalLoss(a.runs[i], lm));
    losses.push_back(std::move(l));
  }
  auto meanSpread = [&](auto value, double* spread) {
    double m = 0;
    for (int k = 0; k < seeds; ++k) m += value(k);
    m /= seeds;
    double v = 0;
    for (int k = 0; k < seeds; ++k) v += (value(k) - m) * (value(k) - m);
    *spread = seeds > 1 ? std::sqrt(v / (seeds - 1)) : 0.0;
    return m;
  };
  double ignored = 0;
  a.high_loss = meanSpread([&](int k) { return losses[size_t(k)][0]; }, &ignored);
  a.full_loss = meanSpread([&](int k) { return losses[size_t(k)][1]; }, &ignored);
  const double full_delta =
      meanSpread([&](int k) { return losses[size_t(k)][1] - losses[size_t(k)][0]; }, &a.full_spread);
  std::vector<PolicyRule> keep_rules;
  for (size_t i = 0; i < groups.size(); ++i) {
    GroupSensitivity g;
    g.group = groups[i];
    g.loss = meanSpread([&](int k) { return losses[size_t(k)][2 + i]; }, &ignored);
    g.delta = meanSpread([&](int k) { return losses[size_t(k)][2 + i] - losses[size_t(k)][0]; }, &g.spread);
    g.share = full_delta > 0 ? g.delta / full_delta : std::numeric_limits<double>::quiet_NaN();
    g.sqnr_db = groupSqnr(a.runs[1], g.group);
    g.keep_high = full_delta > 0 && g.delta > 0 && g.delta > g.spread && g.delta >= cfg.keep_share * full_delta;
    if (g.keep_high)
      for (const std::string& s : g.group.sites) keep_rules.push_back(PolicyRule{s, {}, cfg.keep, 0, -1});
    a.groups.push_back(std::move(g));
  }
  TrainingRunSpec advised = spec;
  PrecisionPolicy& p = policyOf(advised);
  p.rules.insert(p.rules.end(), keep_rules.begin(), keep_rules.end());
  a.policy = p;
  a.config_json = advised.configJson();
  return a;
}

std::string SiteAdvice::summary() const {
  std::string s;
  char line[320];
  std::snprintf(line, sizeof line,
                "%s, %d seed%s: every site in high precision %.4f, every site in the recipe %.4f (Δ %+.4f ± %.4f)\n",
                loss_name.c_str(), seeds, seeds == 1 ? "" : "s", high_loss, full_loss, full_loss - high_loss,
                full_spread);
  s += line;
  const double full_delta = full_loss - high_loss;
  if (!(full_delta > full_spread))
    s += "the full recipe's loss is within seed noise of (or below) high precision's: no group needs to stay in "
         "high precision at this length\n";
  s += "group                 Δ loss ± spread      share   SQNR (dB)  advice\n";
  for (const GroupSensitivity& g : groups) {
    char share[16] = "      —";
    if (std::isfinite(g.share)) std::snprintf(share, sizeof share, "%6.1f%%", 100.0 * g.share);
    std::snprintf(line, sizeof line, "%-20s %+9.4f ± %.4f %8s %10.2f  %s\n", g.group.name.c_str(), g.delta, g.spread,
                  share, g.sqnr_db,
                  g.keep_high                          ? "keep in high precision"
                  : g.delta > 0 && g.delta <= g.spread ? "low precision (within seed noise)"
                                                       : "low precision");
    s += line;
  }
  if (seeds == 1) s += "(one seed: no spread; run with --seeds 3 or more to tell a real difference from seed noise)\n";
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
  std::string names, kept;
  const int64_t n = int64_t(a.groups.size());
  std::vector<float> delta, share, sqnr, spread;
  std::vector<uint8_t> keep;
  for (const GroupSensitivity& g : a.groups) {
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
  run.putFloat32(layout::advice("share"), share, n, -1, "1", "delta / the all-recipe run's delta");
  run.putFloat32(layout::advice("sqnr_db"), sqnr, n, -1, "dB",
                 "mean per-block SQNR of the group's operands in the all-recipe run (lower: more quantization error)");
  run.datasets[layout::advice("keep_high")] = Dataset::uint8({n}, keep, "1", "1: keep the group in high precision");
  run.setMetric("high_loss", a.high_loss, "nats", "final loss with every site in high precision");
  run.setMetric("full_loss", a.full_loss, "nats", "final loss with every site in the recipe");
  return run;
}

const TrainingRunSpec* runToAdvise(const TrainingExperimentSpec& spec, const std::optional<std::string>& id) {
  for (const TrainingRunSpec& r : spec.runs)
    if (id ? r.id == *id : (r.lm ? r.lm->precision : r.config.precision) == TrainingPrecision::FP8) return &r;
  return nullptr;
}

Json siteAdviceJson(const SiteAdvice& a) {
  Json groups = Json::array();
  for (const GroupSensitivity& g : a.groups)
    groups.push_back({{"group", g.group.name},
                      {"sites", g.group.sites},
                      {"delta", numberJson(g.delta)},
                      {"spread", numberJson(g.spread)},
                      {"share", numberJson(g.share)},
                      {"sqnr_db", numberJson(g.sqnr_db)},
                      {"keep_high", g.keep_high}});
  return {{"run", a.run_id},
          {"loss", a.loss_name},
          {"high_loss", numberJson(a.high_loss)},
          {"full_loss", numberJson(a.full_loss)},
          {"groups", groups},
          {"config", a.config_json}};
}

} // namespace fp8lab

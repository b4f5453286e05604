// FP8 Lab — per-layer advice for training: which sites to keep in high precision.
//
// NVIDIA's NVFP4 pretraining report (arXiv 2509.25149) keeps the last few blocks in BF16 and
// suggests the quantization error as the signal for which; DeepSeek-V3 and Transformer Engine keep
// the LM head, embeddings and attention's matmuls in high precision. This module measures it on
// the user's own model, in two ways:
//  - a sensitivity sweep: for each group of Linear sites (the MLP: each layer; the transformer:
//    each block's attention projections, each block's FFN, the LM head), a short run with that
//    group alone in the run's recipe and every other site in high precision, beside a run with
//    every site in high precision and one with every site in the recipe, all from the same seed,
//    weights and data order; a group's sensitivity is its final loss minus the high-precision
//    run's (Δ), and its share of the full recipe's Δ;
//  - the quantization error of the group's operands in the full-recipe run: the mean per-block
//    SQNR of its sites' operands over the run (block_stats, dB; lower = more error).
// Every Δ is a paired statistic (recipe_ranking.h, meanInterval): at each seed the runs share their
// initial weights and data order, so the per-seed differences are the sample, and Δ is their mean
// with a 95 % t-interval (n − 1 degrees of freedom). The advice keeps in high precision every group
// whose interval lies wholly above 0 and whose mean Δ is at least `keep_share` of the full recipe's
// (itself above 0), and writes that as a precision policy ("policy" rules naming the group's sites)
// in a config `fp8lab-cli run` accepts. With one seed there is no interval and nothing is kept.
#pragma once

#include "experiment/training/training_config.h"
#include "experiment/training/training_experiment.h"
#include "json/json_document.h"
#include "session/session.h"
#include "training/sites.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// A group of Linear sites that is kept in high precision or not, together.
struct SiteGroup {
  std::string name;               ///< "fc2", "blocks.1.attn", "blocks.1.ffn", "lm_head"
  std::vector<std::string> sites; ///< the site paths
};

/// The groups of a model's Linear sites (attention matmuls are not grouped: they are high
/// precision unless a policy says otherwise). MLP: one group per layer; transformer: per block
/// "blocks.<l>.attn" (qkv, out) and "blocks.<l>.ffn" (up, gate, down), then "lm_head".
std::vector<SiteGroup> siteGroups(const SiteTable& t);

struct AdviceConfig {
  int64_t steps = 0;        ///< steps of every run of the sweep; 0: the advised run's (an MLP: at most one epoch)
  double keep_share = 0.25; ///< keep a group whose Δ ≥ keep_share × the full recipe's Δ
  SitePrecision keep = SitePrecision::BF16; ///< the high precision of kept groups (and of the reference run)
  /// The sweep is repeated with seeds seed, seed + 1, … (weights and data order): every Δ is the mean
  /// of the per-seed differences with its 95 % interval; a group is kept only when the interval
  /// excludes 0 (so a difference within seed noise is not advice).
  int seeds = 3;
  int threads = 0;
  GemmBackend* backend = nullptr;
};

/// One group's measurements.
struct GroupSensitivity {
  SiteGroup group;
  double loss = 0;                    ///< final loss of the run with only this group in the recipe
  double delta = 0;                   ///< loss − the high-precision run's loss (mean of the per-seed differences)
  double spread = 0;                  ///< sample standard deviation of the per-seed differences (0 for one seed)
  double ci_low = NAN, ci_high = NAN; ///< delta's 95 % t-interval (NaN for one seed)
  std::vector<double> per_seed;       ///< the differences, seed by seed
  double share = 0;                   ///< delta / the full recipe's delta (NaN when that is ≤ 0)
  double sqnr_db = 0;     ///< mean per-block SQNR of the group's operands in the full-recipe run (NaN: none)
  bool keep_high = false; ///< the advice: keep this group in high precision
};

struct SiteAdvice {
  std::string run_id;                           ///< the run of the config advised
  std::string loss_name;                        ///< "validation loss (nats/byte)" or "test loss (nats)"
  double high_loss = 0, full_loss = 0;          ///< every site in high precision / in the recipe (means over seeds)
  double full_spread = 0;                       ///< sample standard deviation of the full recipe's per-seed Δ
  double full_delta = 0;                        ///< the full recipe's Δ: mean of its per-seed differences
  double full_ci_low = NAN, full_ci_high = NAN; ///< its 95 % t-interval (NaN for one seed)
  std::vector<double> full_per_seed;            ///< its differences, seed by seed
  /// Seeds that would give the full recipe's Δ an interval excluding 0 at its spread
  /// (seedsToResolve); 0 when it is resolved already or cannot be (Δ 0, or one seed: no spread).
  int seeds_to_resolve = 0;
  int seeds = 1;
  int64_t steps = 0; ///< steps of every run of the sweep
  std::vector<GroupSensitivity> groups;
  PrecisionPolicy policy;  ///< the advice as rules
  std::string config_json; ///< the advised run's config with that policy
  std::vector<Run> runs;   ///< every run of the sweep (ids "<run>-all-high", "<run>-all-recipe", "<run>-only-<group>")
  std::string summary() const; ///< a few lines for a terminal
};

/// Runs the sensitivity sweep for run `spec` (a low-precision run: FP32 runs have nothing to
/// advise — std::invalid_argument). MLP runs train `steps` steps (train_limit = steps × batch, one
/// epoch) and are judged on the test loss of that epoch; language-model runs on their final
/// validation loss. `progress` is asked between and within runs (false cancels: Cancelled).
/// Throws std::runtime_error when a run fails (missing data).
SiteAdvice adviseSitePrecision(const TrainingRunSpec& spec, const AdviceConfig& cfg, const ProgressFn& progress = {});

/// The advice as a session run of type "advice": datasets advice/delta, advice/spread,
/// advice/ci_low, advice/ci_high, advice/share, advice/sqnr_db, advice/keep_high [groups] and
/// advice/per_seed [groups, seeds]; attributes groups (the names, comma-separated), config (the
/// advised config), loss_name, steps, seeds, full_per_seed (the full recipe's differences,
/// comma-separated); metrics high_loss, full_loss, full_delta, full_ci_low, full_ci_high. `steps`:
/// the steps attribute (SiteAdvice::steps).
Run adviceToSession(const SiteAdvice& a, const std::string& id, int64_t steps);

/// The run of `spec` to advise: the run with id `id` when given, else the first FP8 run (the
/// precision of its MLP or language-model config); nullptr when there is none.
const TrainingRunSpec* runToAdvise(const TrainingExperimentSpec& spec, const std::optional<std::string>& id);

/// The advice as the JSON object of `fp8lab-cli advise --json`: run (the run advised), loss (the
/// loss's name), seeds, steps, high_loss, full_loss, full {delta, spread, ci_low, ci_high, per_seed,
/// seeds_to_resolve}, groups [{group, sites, delta, spread, ci_low, ci_high, per_seed, share,
/// sqnr_db, keep_high}] and config (the advised run's config as text). Non-finite numbers (a share or SQNR
/// without a value) are the strings "nan", "inf", "-inf".
Json siteAdviceJson(const SiteAdvice& a);

} // namespace fp8lab

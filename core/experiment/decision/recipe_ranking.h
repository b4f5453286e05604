// FP8 Lab — ranking recipes with uncertainty: the runs of a session grouped by recipe (what is
// being chosen) and setting (what must be the same to compare: operands, shape, epilogue; for
// training, the model), a metric's mean over seeds with a 95 % confidence interval, and a rank that
// refuses to separate recipes whose intervals overlap. The CLI (`fp8lab-cli decide`), the desktop
// app's Decide view and the session report read this one model.
//
// The tie rule (docs/gemm.md "Ranking with uncertainty"): a recipe's rank is 1 + the number of
// recipes of its setting whose whole interval lies on the better side of its own interval. Two
// recipes whose intervals overlap can therefore never be ranked apart by each other, the recipes
// that no interval beats share rank 1, and the order by mean among them is shown but not claimed.
#pragma once

#include "session/session.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// A metric recipes can be ranked by.
struct RankingMetric {
  std::string key;   ///< the run metric's name ("sqnr_db", "final_test_accuracy", ...)
  std::string label; ///< for tables and axes ("SQNR of D")
  std::string unit;  ///< "dB", "1", "nats"
  bool higher_better = true;
  bool training = false; ///< a training-run metric (else a GEMM-run metric)
  std::string meaning;   ///< one line: what it measures and why it is offered
};

/// Every metric offered, GEMM ones first: sqnr_db (the default), bulk_sqnr_db, rel_err_median,
/// rel_err_p99, cosine, quant_sqnr_db, a_sqnr_db, b_sqnr_db, a_bulk_sqnr_db, b_bulk_sqnr_db,
/// d_sqnr_a_only_db, d_sqnr_b_only_db; then final_test_accuracy, final_val_loss, final_test_loss.
const std::vector<RankingMetric>& rankingMetrics();
/// The metric named `key`, or null.
const RankingMetric* rankingMetric(const std::string& key);
/// The keys of rankingMetrics() in order, joined by ", " (for help texts and refusals).
std::string rankingMetricKeys();

/// Two-sided 95 % quantile of Student's t with `df` degrees of freedom, t_{0.975, df}: the table of
/// NIST/SEMATECH e-Handbook of Statistical Methods §1.3.6.7.2 for df 1…30, 40, 60, 120 and ∞, with
/// linear interpolation in 1/df between the listed values (e.g. df 4 → 2.776, df 50 → 2.0084).
/// NaN for df < 1.
double studentT975(int df);

/// The mean of a sample with its 95 % confidence interval (Student's t with n − 1 degrees of freedom).
struct MeanInterval {
  int n = 0;                 ///< finite values (NaN and ±Inf are left out)
  double mean = NAN;         ///< arithmetic mean; NaN for no value
  double sd = NAN;           ///< sample standard deviation (n − 1); NaN for fewer than two values
  double half = NAN;         ///< studentT975(n − 1) · sd / √n; 0 for one value (a point), NaN for none
  double lo = NAN, hi = NAN; ///< mean ∓ half
};

/// The mean and 95 % interval of the finite entries of `values`. The one author of this statistic:
/// the ranking's intervals over seeds, the paired differences to a baseline and the per-layer advice
/// use it.
MeanInterval meanInterval(const std::vector<double>& values);

/// The number of seeds that would give a 95 % interval excluding 0 for a mean difference `mean`
/// at sample standard deviation `sd`: the smallest n ≥ 2 with studentT975(n − 1) · sd / √n < |mean|
/// (searched up to 10000). 0 when mean is 0 or not finite, or sd is not finite; 2 when sd is 0.
int seedsToResolve(double mean, double sd);

/// One run's value for the ranking.
struct RankSample {
  std::string run_id;
  std::string setting;       ///< key of what must be the same to compare (canonical JSON)
  std::string setting_label; ///< the setting in words ("256×1024×256, A channel_outliers, …")
  std::string recipe;        ///< key of the recipe (canonical JSON)
  std::string recipe_label;  ///< "deepgemm_1x128:deepgemm_128x128 · E4M3FN"
  std::string recipe_detail; ///< what else the recipe fixes ("split → BF16"), to tell apart equal labels
  /// The scaling presets and element formats (GEMM runs; for the cost table), empty for training.
  std::string scaling_a, scaling_b, format_a, format_b;
  int64_t m = 0, k = 0, n = 0;
  bool baseline = false; ///< a training run in FP32 (the reference of its setting)
  uint64_t seed = 0;
  double value = NAN;
};

/// A recipe against a baseline run by run: the runs of the two recipes with the same seed are a pair
/// (in one setting they differ only in the recipe: same initial weights, data order or operands),
/// and the statistic is the mean of the per-seed differences with its 95 % t-interval (n_pairs − 1
/// degrees of freedom). Pairs remove the seed-to-seed spread both recipes share, which an interval
/// over each recipe's seeds alone keeps.
struct PairedDifference {
  std::string baseline;                         ///< the label of the recipe compared against
  std::vector<uint64_t> seeds;                  ///< the seeds with a finite value of both, ascending
  std::vector<std::string> runs, baseline_runs; ///< the first run of each side at each seed
  std::vector<double>
      diffs; ///< this recipe's value − the baseline's, per seed (a side with several runs of a seed: their mean)
  int n_pairs = 0;
  double mean_diff = NAN, sd = NAN, half = NAN; ///< meanInterval of diffs
  double ci_low = NAN, ci_high = NAN;           ///< mean_diff ∓ half (NaN for fewer than two pairs)
  int unpaired = 0;                             ///< this recipe's finite values at seeds where the baseline has none
};

/// How a training recipe is compared with its baseline (and the other recipes of its setting).
enum class Comparison {
  None,     ///< no value, or no baseline
  Baseline, ///< the recipe is the baseline
  Paired,   ///< at least two seeds with a run of both: the paired difference's interval
  Unpaired, ///< fewer than two shared seeds but several of each: today's overlap of the intervals over seeds
  OneSeed,  ///< one seed (on either side): no interval, no verdict and no rank
};
/// "paired", "unpaired", "one seed", "baseline", "none".
std::string comparisonName(Comparison c);

/// What a comparison with the baseline says.
enum class Verdict { None, OneSeed, NotDistinguishable, Better, Worse };
/// "", "one seed: no interval", "not distinguishable from the baseline", "better than the baseline",
/// "worse than the baseline".
std::string verdictText(Verdict v);

/// One recipe of one setting, over its seeds.
struct RecipeInterval {
  std::string setting, setting_label, recipe, label, detail;
  std::string scaling_a, scaling_b, format_a, format_b;
  int64_t m = 0, k = 0, n = 0;
  bool baseline = false;
  std::vector<std::string> runs; ///< in the order given
  std::vector<uint64_t> seeds;
  std::vector<double> values;
  int n_values = 0;          ///< finite values (the statistics' base; NaN values are left out)
  double mean = NAN;         ///< arithmetic mean
  double sd = NAN;           ///< sample standard deviation (n − 1); NaN for one value
  double half = NAN;         ///< studentT975(n − 1) · sd / √n; 0 for one value (no interval: a point)
  double lo = NAN, hi = NAN; ///< mean ∓ half
  int place = 0;             ///< 1-based position by mean, best first, within the setting
  int rank = 0; ///< 1 + recipes of the setting whose interval is entirely better (0: no value, or not ranked)
  /// Labels of the recipes of the setting whose intervals overlap this one's (not distinguishable).
  std::vector<std::string> ties;
  /// Training recipes after pairRecipes: the comparison with the setting's baseline, the paired
  /// difference to it (with a baseline and not the baseline itself) and the verdict.
  Comparison comparison = Comparison::None;
  std::optional<PairedDifference> paired;
  Verdict verdict = Verdict::None;
};

/// Groups `samples` by setting (in order of first appearance) and recipe, and ranks the recipes of
/// each setting by the mean of their finite values (best first by `higher_better`; equal means keep
/// the order of first appearance). Intervals: mean ± studentT975(n − 1)·sd/√n. Ties: intervals
/// [lo, hi] that share a point (a ≤ d and c ≤ b for [a, b], [c, d]). Rank: see the file comment.
/// Recipes without a finite value come last with rank 0. Labels equal within a setting get their
/// detail appended ("label (detail)").
std::vector<RecipeInterval> rankWithIntervals(const std::vector<RankSample>& samples, bool higher_better);

/// The pairs of `r` and `base` (two recipes of one setting) and their paired statistic.
PairedDifference pairedDifference(const RecipeInterval& r, const RecipeInterval& base);

/// Compares the recipes of each setting of `all` (rankWithIntervals' output) by same-seed pairs,
/// in place. The baseline of a setting is its first recipe with `baseline` set; without one the
/// recipes are still ranked against each other. For each recipe r other than the baseline:
/// r.paired = pairedDifference(r, baseline); r.comparison Paired when n_pairs ≥ 2, else Unpaired
/// when both have at least two values, else OneSeed; r.verdict: Paired — Worse / Better when the
/// interval [ci_low, ci_high] lies wholly on that side of 0, else NotDistinguishable; Unpaired — the
/// overlap rule of rankWithIntervals on the intervals over seeds; OneSeed — OneSeed.
/// Ranks and ties: recipe o beats r when they share at least two seeds and the paired interval of
/// o − r lies wholly on the better side of 0 (not distinguishable when it holds 0); recipes sharing
/// fewer seeds fall back to the overlap rule. rank = 1 + the recipes that beat r. A setting where
/// no recipe has two values is not ranked: every rank 0, no ties, comparison OneSeed.
void pairRecipes(std::vector<RecipeInterval>* all, bool higher_better);

/// The samples of `metric` from a session's runs: GEMM runs (type "gemm") whose config parses,
/// grouped by their canonical config (gemmConfigJson) split into the recipe keys (formats,
/// scalings, accumulation and its parameters, output, rounding) and the setting (the rest, without
/// seed, name, tile and storage switches); training runs (type "training") grouped by recipe = the
/// config's precision, recipe, scaling, formats, GEMM accumulation and policy keys, and setting =
/// the model (a language model's "model" object: size, depth, norm and its position; "mlp" for the
/// MLP) with the rest of the config (layers, data, epochs or steps, optimizer, ...) less seed, ids,
/// labels, diagnostics and output switches, so runs of another length, shape or optimizer are never
/// compared; training runs stored as cancelled (stopped early) are left out. Runs without the
/// metric give a NaN value (so they are counted);
/// runs of another kind (a GEMM metric on a training run) are left out.
std::vector<RankSample> rankSamples(const std::vector<RunInfo>& runs, const RankingMetric& metric);

/// Whether a metric has a finite value in some run of the list.
bool metricPresent(const std::vector<RunInfo>& runs, const std::string& key);

/// The metric a session is best ranked by: "sqnr_db" when a GEMM setting has two recipes, else
/// final_test_accuracy / final_val_loss for training sessions, else "" (nothing to rank).
std::string defaultRankingMetric(const std::vector<RunInfo>& runs);

} // namespace fp8lab

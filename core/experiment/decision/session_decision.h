// FP8 Lab — what a session says about the user's question "which recipe, for which tensors and which
// layers?": the GEMM recipes ranked with intervals over seeds and their cost (recipe_ranking.h,
// scaling/recipe_cost.h), the training runs against their FP32 baseline, the per-layer advice of
// `fp8lab-cli advise` and the what-if tables of imported checkpoints. One model for the three front
// ends that show it: `fp8lab-cli decide`, the desktop app's Decide view and the session report
// (`fp8lab-cli report`), so they show the same numbers; the empty-state texts that say what to run
// are here too.
#pragma once

#include "experiment/training/checkpoint_run.h"
#include "experiment/decision/recipe_ranking.h"
#include "scaling/recipe_cost.h"
#include "session/session.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// Reads one dataset of one run: a session file's reader, or a run still in memory. nullopt when the
/// run has no such dataset (or it cannot be read).
using DatasetSource = std::function<std::optional<Dataset>(const std::string& run_id, const std::string& path)>;

/// The DatasetSource of an open session: SessionReader::read, nullopt for a dataset it cannot
/// read. `rd` must outlive the source.
DatasetSource readerDatasetSource(SessionReader& rd);

/// One group of sites of an advice run (site_advice.h, docs/training.md "Per-layer advice").
struct AdviceGroupRow {
  std::string group;
  double delta = NAN, spread = NAN, share = NAN, sqnr_db = NAN;
  double ci_low = NAN,
         ci_high = NAN; ///< Δ's 95 % t-interval over the same-seed differences (NaN: one seed, or an older session)
  bool keep_high = false;
};

/// An advice run (type "advice") as a table.
struct AdviceTable {
  std::string run_id, advised_run, loss_name, policy, config;
  int64_t steps = 0, seeds = 0;
  double high_loss = NAN, full_loss = NAN;
  /// The full recipe's Δ with its 95 % t-interval (older sessions: full_loss − high_loss, no interval).
  double full_delta = NAN, full_ci_low = NAN, full_ci_high = NAN;
  std::vector<AdviceGroupRow> groups;
  std::string problem; ///< why the table is incomplete ("" when complete)
};

/// A checkpoint run's what-if table: per tensor, the stored quantization's SQNR and each what-if
/// recipe's (checkpointRunSqnr).
struct WhatIfTable {
  std::string run_id, source;
  std::vector<std::string> recipes; ///< what-if recipe ids, columns in order
  std::vector<CheckpointSqnr> rows;
};

/// Everything a session has to decide with.
struct SessionDecision {
  const RankingMetric* gemm_metric = nullptr;       ///< the GEMM ranking's metric
  std::vector<RecipeInterval> gemm;                 ///< ranked GEMM recipes, setting by setting
  std::vector<std::optional<RecipeCost>> gemm_cost; ///< parallel to `gemm` (nullopt: unknown preset)
  const RankingMetric* training_metric = nullptr;   ///< final_test_accuracy / final_val_loss / ...
  /// Training recipes, setting by setting, FP32 baseline included, compared with the baseline by
  /// same-seed pairs (pairRecipes: each recipe's paired difference, comparison and verdict).
  std::vector<RecipeInterval> training;
  /// Parallel to `training`: each recipe's cost (trainingRunCost of its first run; nullopt for the
  /// FP32 baseline, BF16 runs and configs that do not parse).
  std::vector<std::optional<RecipeCost>> training_cost;
  std::vector<AdviceTable> advice;
  std::vector<WhatIfTable> what_if;
  /// The baseline of `training[i]`'s setting (an index into `training`), or −1 without one.
  int baselineOf(size_t i) const;
  /// Settings of the GEMM ranking with at least two recipes that have values.
  int rankedSettings() const;
};

/// Builds the decision of a session from its runs' metadata; advice and checkpoint datasets are read
/// through `read`. `metric`: the key of a GEMM ranking metric (rankingMetrics()) for the GEMM
/// ranking, or of a training metric for the training comparison; "" = the defaults (sqnr_db;
/// final_test_accuracy when some run has it, else final_val_loss). Throws std::invalid_argument for
/// a key that is not a ranking metric, naming the choices.
SessionDecision decideSession(const std::vector<RunInfo>& runs, const std::string& metric, const DatasetSource& read);

/// One curve of a chart over training steps: per point, the mean over seeds and the band of the
/// seeds (their minimum and maximum).
struct CurveSeries {
  std::string label;
  bool baseline = false;
  int seeds = 0;         ///< runs (seeds) that make the curve
  std::vector<double> x; ///< the step at the middle of each bin (1-based steps)
  std::vector<double> mean, lo, hi;
};

/// The loss curves of one setting of the training comparison.
struct TrainingCurves {
  std::string loss_name = "training loss"; ///< what `loss` shows
  int64_t steps = 0;                       ///< the longest run's steps
  int64_t bin = 1;                         ///< steps averaged into one point
  /// Per recipe (the setting's order): the training loss of each step averaged over bins of `bin`
  /// steps (each run's own values), then the mean and min–max over the recipe's seeds.
  std::vector<CurveSeries> loss;
  /// Per recipe but the baseline: the same-seed difference to the baseline's binned loss (recipe −
  /// FP32, a positive value is worse), its mean and min–max over the seeds both have. Empty
  /// without a baseline.
  std::vector<CurveSeries> delta;
};

/// The training loss curves ("training/loss", one value per step) of the recipes `group` (indices
/// into d.training, one setting, as bySetting groups them) read through `read`, averaged over bins
/// so that a curve has at most `max_points` points (bin = ceil(steps / max_points)); runs without a
/// loss dataset are left out. Steps past a shorter run's end have no value from it.
TrainingCurves trainingCurves(const SessionDecision& d, const std::vector<size_t>& group, const DatasetSource& read,
                              int max_points = 120);

/// The side of the GEMM shape at which a training recipe's cost is given (trainingRunCost).
constexpr int64_t kTrainingCostShape = 4096;

/// What a training run's recipe costs per GEMM: the recipe's fprop pair (the activation's role and
/// the weight's, core/training/recipe.h RoleQuantization::costPreset; a per-tensor FP8 run:
/// te_current in its forward format, delayed scaling storing the same one float32 per tensor) on a
/// [kTrainingCostShape]² · [kTrainingCostShape]² GEMM, so that a block's scale bytes are not
/// inflated by a small layer's padding: the recipe's bytes per element and where the pair runs
/// natively (scaling/recipe_cost.h). nullopt for FP32 and BF16 runs, for a run with a precision
/// policy (its layers run in different precisions: no one cost) and for a config that does not parse. `config_json`:
/// the run's stored one-run config.
std::optional<RecipeCost> trainingRunCost(const std::string& config_json);

/// What to run when a part is empty (the texts the CLI, the Decide view and the report show).
std::string hintGemmRanking();
std::string hintTraining();
std::string hintAdvice();
/// The advice hint for this session: with a low-precision training run in `d`, the commands that
/// advise that run from its own stored config (`fp8lab-cli export SESSION --run ID --csv DIR`, then
/// `fp8lab-cli advise DIR/config.json`), the run chosen as the recipe worst against its baseline
/// (else the first); without one, hintAdvice(). `session_path` names the session in the commands.
std::string hintAdvice(const SessionDecision& d, const std::string& session_path);
std::string hintWhatIf();

/// "31.57 ± 0.42": the 95 % half-width to two significant digits and the mean to the same decimal
/// place ("30.4 ± 2.0", "0.02508 ± 0.00086"); one value (or a zero half-width, "31.57 ± 0") with
/// `digits` significant digits; "—" without a value.
std::string intervalText(const RecipeInterval& r, int digits = 4);
/// An advice Δ with its interval: "+0.0252 [+0.0011, +0.0493]", or "+0.0252 (one seed: no interval)"
/// without one; 4 decimals.
std::string adviceDeltaText(double delta, double lo, double hi);
/// The advice of one group in words: "keep in high precision", "low precision (interval holds 0: within
/// seed noise)" for a positive Δ whose interval holds 0 (or, without an interval, is within its
/// spread), else "low precision".
std::string adviceVerdictText(const AdviceGroupRow& g);
/// A paired difference to the baseline: "+0.026 ± 0.095" (the half-width to two significant digits
/// and the mean to the same decimal place, with a sign), "+0.0331 (one seed: no interval)" for one
/// pair, "—" for none.
std::string pairedText(const PairedDifference& p);
/// The per-seed differences: "seed 1 +0.0331, seed 2 +0.0182" (4 significant digits).
std::string perSeedText(const PairedDifference& p);
/// A training recipe's comparison with its baseline in words, for a table's last column:
/// the verdict, with "(paired, 3 seeds)", "(unpaired: the seeds differ; intervals over seeds overlap)"
/// or "one seed: no interval"; "baseline"; "" for none.
std::string comparisonText(const RecipeInterval& r);

/// "1", "1 =" (rank shared with another recipe whose interval overlaps), "—" without a value.
std::string rankText(const RecipeInterval& r, const std::vector<RecipeInterval>& all);

} // namespace fp8lab

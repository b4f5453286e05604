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
// The advice keeps in high precision every group whose Δ is at least `keep_share` of the full
// recipe's Δ (and positive), and writes that as a precision policy ("policy" rules naming the
// group's sites) in a config `fp8lab-cli run` accepts.
#pragma once

#include "experiment/training_config.h"
#include "experiment/training_experiment.h"
#include "io/json_document.h"
#include "session/session.h"
#include "training/sites.h"

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
  int64_t steps = 200;                      ///< steps of every run of the sweep
  double keep_share = 0.25;                 ///< keep a group whose Δ ≥ keep_share × the full recipe's Δ
  SitePrecision keep = SitePrecision::BF16; ///< the high precision of kept groups (and of the reference run)
  /// The sweep is repeated with seeds seed, seed + 1, … (weights and data order): every Δ is the mean
  /// over seeds, with its spread; a group is kept only when its mean Δ exceeds its spread (so a
  /// difference within seed noise is not advice).
  int seeds = 1;
  int threads = 0;
  GemmBackend* backend = nullptr;
};

/// One group's measurements.
struct GroupSensitivity {
  SiteGroup group;
  double loss = 0;        ///< final loss of the run with only this group in the recipe
  double delta = 0;       ///< loss − the high-precision run's loss (mean over seeds)
  double spread = 0;      ///< sample standard deviation of that Δ over seeds (0 for one seed)
  double share = 0;       ///< delta / the full recipe's delta (NaN when that is ≤ 0)
  double sqnr_db = 0;     ///< mean per-block SQNR of the group's operands in the full-recipe run (NaN: none)
  bool keep_high = false; ///< the advice: keep this group in high precision
};

struct SiteAdvice {
  std::string run_id;                  ///< the run of the config advised
  std::string loss_name;               ///< "validation loss (nats/byte)" or "test loss (nats)"
  double high_loss = 0, full_loss = 0; ///< every site in high precision / in the recipe (means over seeds)
  double full_spread = 0;              ///< spread over seeds of the full recipe's Δ
  int seeds = 1;
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

/// The advice as a session run of type "advice": datasets advice/group (the group names, as an
/// attribute list), advice/delta, advice/share, advice/sqnr_db, advice/keep_high [groups]; attributes
/// config (the advised config), loss_name, high_loss, full_loss, steps.
Run adviceToSession(const SiteAdvice& a, const std::string& id, int64_t steps);

/// The run of `spec` to advise: the run with id `id` when given, else the first FP8 run (the
/// precision of its MLP or language-model config); nullptr when there is none.
const TrainingRunSpec* runToAdvise(const TrainingExperimentSpec& spec, const std::optional<std::string>& id);

/// The advice as the JSON object of `fp8lab-cli advise --json`: run (the run advised), loss (the
/// loss's name), high_loss, full_loss, groups [{group, sites, delta, spread, share, sqnr_db,
/// keep_high}] and config (the advised run's config as text). Non-finite numbers (a share or SQNR
/// without a value) are the strings "nan", "inf", "-inf".
Json siteAdviceJson(const SiteAdvice& a);

} // namespace fp8lab

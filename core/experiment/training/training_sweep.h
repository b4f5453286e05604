// FP8 Lab — training sweeps over seeds: every run of a training experiment repeated with each seed
// of a list (the config's "seeds" key or `fp8lab-cli sweep --seeds`), so the runs of two recipes
// with the same seed are pairs (recipe_ranking.h, pairRecipes), split into shards for separate
// machines and resumed from a session that already holds some of them — as GEMM sweeps are
// (sweep.h). `fp8lab-cli sweep` and `run` use it.
#pragma once

#include "experiment/training/training_config.h"
#include "session/session.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fp8lab {

/// Repeats every run of `spec` with each of `seeds`, in run-major order (run 1 seed 1, run 1 seed 2,
/// …, run 2 seed 1, …): the copy's id is "<id>-s<seed>", its seed (the MLP's or the language
/// model's) the seed, a label equal to the old id becomes the new id. The GEMM on trained weights
/// follows the first seed's copy of its run. Nothing changes for an empty list.
void expandTrainingSeeds(TrainingExperimentSpec* spec, const std::vector<uint64_t>& seeds);

/// The runs of shard `shard` of `shards`: run i when i mod shards == shard (0-based, in the order
/// of spec.runs), so the shards together run every run once. The GEMM on trained weights stays with
/// the shard that trains its run. Throws std::invalid_argument unless 0 <= shard < shards.
TrainingExperimentSpec trainingShard(const TrainingExperimentSpec& spec, int shard, int shards);

/// Resume: removes from spec->runs every run that `stored` (a session's runs) already holds: a
/// run of type "training" with the same id, status "completed" and the same config (the stored
/// config and the run's configJson() parsed and compared without "threads", which does not
/// change the results). A cancelled run, or the same id with another config, is run again (and
/// stored under a new id). The GEMM on trained weights is dropped when its run is removed.
/// Returns the removed ids in order.
std::vector<std::string> removeStoredTrainingRuns(TrainingExperimentSpec* spec, const std::vector<RunInfo>& stored);

} // namespace fp8lab

// FP8 Lab — GEMM sweeps: one GEMM experiment config with a "sweep" object becomes a grid of GEMM
// runs, formats × scalings (recipes) × distributions × seeds. This file holds the whole model: the typed sweep
// (parseSweepSpec), the grid with its point ids (expandSweep), the shards a grid is split into for
// separate machines (sweepShard), the points a session already holds (removeStoredPoints, so a
// sweep started again resumes), and the runner that runs the points on one backend and hands the
// finished runs back in batches to save (runSweep). `fp8lab-cli sweep` is a command over it; the
// keys are in docs/session-format.md ("GEMM experiment config").
//
// The config:
//   {"type": "gemm", "m": 256, ..., "sweep": {"formats": ["E4M3FN", "E5M2", "E4M3FN:E5M2"],
//                                              "scalings": ["te_current", "mx_rceil"],
//                                              "distributions": ["normal", "lognormal"],
//                                              "seeds": [1, 2, 3]}}
// Every key outside "sweep" is the base GEMM config of every point ("name" is dropped: each point
// has its own id). Each list may also be a single string (seeds: a single integer); a list left out
// is the base config's own value (its scaling, distribution of A, seed). "A:B" in formats runs A and
// B in different formats; "A:B" in scalings is a recipe pair: A's preset for A, B's for B (e.g.
// deepgemm_1x128:deepgemm_128x128, DeepSeek-V3's activations and weights).
//
// Element formats: without a "formats" list each recipe brings its own — NVFP4 presets E2M1, every
// other preset the base config's format (E4M3FN when it names none) — so FP8, MX and NVFP4 recipes
// share one grid. With a "formats" list the FP8 and MX recipes run in each format named, and an
// NVFP4 recipe (whose elements are always E2M1) runs once, with E2M1, at the first format's place.
#pragma once

#include "experiment/gemm/gemm_run.h"
#include "json/json_document.h"
#include "session/session.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// Lists that replace the sweep object's (the command line's --formats, --scalings,
/// --distributions, --seeds). An axis without a value keeps the config's list. Messages about an
/// override name it as the command-line flag ("--formats: ...").
struct SweepAxisOverrides {
  std::optional<std::vector<std::string>> formats, scalings, distributions;
  std::optional<std::vector<uint64_t>> seeds;
};

/// A parsed sweep: the base config and the four axes, each non-empty, entries trimmed of ASCII
/// white space.
struct SweepSpec {
  Json base;                        ///< the config object without "sweep" and "name"
  GemmExperimentConfig base_config; ///< `base` parsed
  /// "E4M3FN" (A and B) or "E4M3FN:E5M2" (A:B). Without a formats axis: one entry, the base
  /// config's format, and `formats_given` false (each recipe brings its own format).
  std::vector<std::string> formats;
  bool formats_given = false;
  std::vector<std::string> scalings; ///< "te_current" (A and B) or "deepgemm_1x128:deepgemm_128x128" (A:B)
  std::vector<std::string> distributions;
  std::vector<uint64_t> seeds; ///< without a seeds axis: the base config's seed, `seeds_given` false
  bool seeds_given = false;
  std::vector<std::string> notes; ///< remarks on the base config for its author (ConfigReader::notes)
};

/// Parses a GEMM experiment object with an optional "sweep" object into `spec`. `doc` (may be
/// null) gives the base config's errors a line and column. Returns "" when valid, else the message:
///   not a GEMM config ("type" "gemm", or no "type" and "m" or the desktop panel's older keys):
///       sweep: the config must be a GEMM experiment ("type": "gemm")
///   a key in "sweep" other than formats, scalings, distributions, seeds (the first in key order):
///       sweep.<key>: unknown key (formats, scalings, distributions, seeds)
///   the base config invalid (parseGemmConfig's message):  config: <key path>: <what> (line L, column C)
///   an axis given but empty after trimming (checked formats, scalings, distributions in turn):
///       --formats: an empty list (leave it out to use the config's own value)   (an override)
///       sweep.formats: an empty list (leave it out to use the config's own value)
///   a format entry with more than one ':' or an empty side:
///       formats: 'A:B:C' is not FORMAT or FORMAT_A:FORMAT_B
///   a scaling entry with more than one ':' or an empty side:
///       scalings: 'A:B:C' is not PRESET or PRESET_A:PRESET_B
///   a seeds entry that is not an integer in [0, 2^53]:
///       sweep.seeds: entry <i> is not an integer seed in [0, 2^53]
///   the same seed twice:   sweep.seeds: seed <s> is listed twice   (--seeds: for an override)
/// A "sweep" value that is not an object counts as an empty object; non-string list entries are
/// skipped (seeds: every entry must be an integer). Unknown format, preset or distribution names are found by
/// expandSweep. `spec` is set only when valid, except spec->notes, which also receives the base config's notes when the
/// message is about an axis.
std::string parseSweepSpec(const Json& config, const SweepAxisOverrides& overrides, SweepSpec* spec,
                           const JsonDocument* doc = nullptr);

/// One grid point.
struct SweepPoint {
  int64_t index = 0; ///< position in the full grid (before sharding and resume)
  /// "sweep-<format>-<scaling>-<distribution>[-s<seed>]": the format as "A" when A and B are the
  /// same, else "AxB"; the scaling as "A" or, for a recipe pair, "A+B"; the seed only when the
  /// sweep has a seeds axis (e.g. sweep-E4M3FNxE5M2-te_current-normal,
  /// sweep-E4M3FN-deepgemm_1x128+deepgemm_128x128-normal-s3, sweep-E2M1-nvfp4_te-normal-s3).
  std::string id;
  GemmExperimentConfig config;
  /// The point's formats: the formats entry as given ("E4M3FN", "E4M3FN:E5M2"), or the formats the
  /// recipe brought ("E2M1" for NVFP4).
  std::string format;
  std::string scaling; ///< the scalings entry as given ("te_current", "deepgemm_1x128:deepgemm_128x128")
  std::string distribution;
  uint64_t seed = 0;
};

/// The grid of `spec` in order: formats outermost, then scalings, distributions, seeds innermost,
/// so without NVFP4 recipes point (f, s, d, e) has index ((f·S + s)·D + d)·E + e for S scalings,
/// D distributions and E seeds. An NVFP4 recipe under a formats axis appears only in the first
/// format's pass (with E2M1); the indices count the points that are in the grid. Each point is the
/// base config with format_a / format_b (the "format" key removed), scaling (and scaling_b for a
/// pair), distribution and seed set; the point's distribution replaces a per-operand "a" / "b"
/// distribution. Returns "" or, for the first point that is not a valid config (a pair that mixes
/// NVFP4 with FP8, an unknown preset, ...) or whose id is not a valid run id (isValidRunId),
///   grid point <index> (<id>): <parseGemmConfig's message>   or isValidRunId's reason.
std::string expandSweep(const SweepSpec& spec, std::vector<SweepPoint>* grid);

/// The points of shard `shard` of `shards`: those with index mod shards == shard (0-based), in
/// grid order, so shards 0..n-1 together run every point once. Throws std::invalid_argument
/// unless 0 <= shard < shards.
std::vector<SweepPoint> sweepShard(const std::vector<SweepPoint>& grid, int shard, int shards);

/// Resume: removes from `points` every point whose run `stored` (the runs of a session) already
/// holds — a run of type "gemm" whose config, parsed and written back canonically with its "name"
/// (gemmConfigJson), equals the point's canonical config with the point's id as name. The same id
/// with another configuration (another seed, shape, ...) is not a finished point. Stored configs
/// that are not valid JSON or not valid GEMM configs never match. Returns the removed ids in grid
/// order.
std::vector<std::string> removeStoredPoints(std::vector<SweepPoint>* points, const std::vector<RunInfo>& stored);

/// What runSweep reports and asks. Every hook may be empty; all are called on the caller's thread.
struct SweepHooks {
  /// Progress of the sweep: `fraction` ∈ [0, 1] of the points given (point i of N at its own
  /// fraction f is (i + f) / N), `stage` "<i+1>/<N> <point id>". Also called between two points
  /// with fraction (i + 1) / N. Return false to cancel: a point in progress stops at its next
  /// check, and nothing after it runs.
  std::function<bool(double fraction, const std::string& stage)> progress;
  /// A warning (severity below Error) of a point's run, as soon as the run ends, failed or not.
  std::function<void(const SweepPoint& point, const Issue& warning)> warning;
  /// A point finished: add attributes to its run (where the GEMMs ran: recordBackend), report it.
  /// The run is then held for the next save.
  std::function<void(const SweepPoint& point, Run& run)> point_done;
  /// Saves a batch of finished runs, in grid order; returns false with *error to stop the sweep.
  std::function<bool(const std::vector<Run>& runs, std::string* error)> save;
};

/// Options of a runSweep call.
struct SweepRunOptions {
  int threads = 0; ///< GEMM threads of every point (0 = all cores; the results do not depend on it)
  /// The finished runs are saved once their datasets hold more than this many bytes (each save
  /// rewrites the session file, so saving every point would cost O(N²) bytes), and at the end.
  int64_t save_batch_bytes = int64_t(256) << 20;
};

struct SweepOutcome {
  enum class Status { Completed, Cancelled, Failed };
  Status status = Status::Completed;
  /// Points that finished, in order (points[0 .. finished-1]); their runs were handed to save
  /// unless a save failed.
  size_t finished = 0;
  /// Cancelled or Failed inside points[finished] (its run was not kept); false: between two points
  /// or in a save.
  bool in_point = false;
  std::string error;      ///< Failed in a point: why (the run's errors, or what the backend threw)
  std::string save_error; ///< a save that failed: save's *error (the sweep stopped there)
  bool saved() const { return save_error.empty(); }
};

/// Runs `points` in order on `backend` (not owned), each stored with its canonical config
/// (gemmConfigJson with the point's id as "name") as the run's config and the point's id as run
/// id. A finished point's run goes to hooks.point_done, then waits in the batch that hooks.save
/// gets (see SweepRunOptions). On a cancel or a failed point the finished runs not yet saved are
/// saved first, so nothing finished is lost; a failed save stops the sweep (Failed, unless it was
/// the save of a cancel: then Cancelled with save_error). A point whose run throws (a GPU backend
/// refusing a GEMM under --backend gpu, out of memory) ends the sweep as Failed with the
/// exception's message, after the same save.
SweepOutcome runSweep(const std::vector<SweepPoint>& points, GemmBackend& backend, const SweepHooks& hooks,
                      const SweepRunOptions& opt = {});

/// The seeds of a seed list: comma-separated items, each a seed or a range FIRST-LAST (both
/// included, at most 10000 seeds), integers in [0, 2^53] in ASCII digits, spaces around an item
/// ignored, empty items skipped: "1,3-5" gives 1, 3, 4, 5. nullopt with *error "'ITEM' is not a
/// seed or a range FIRST-LAST of at most 10000 seeds (integers in [0, 2^53])" for the first item
/// that is not.
std::optional<std::vector<uint64_t>> parseSeedList(const std::string& text, std::string* error);

/// One finished grid point as the sweep's result table shows it.
struct SweepTableRow {
  std::string id, format, scaling, distribution;
  double sqnr_db = 0, rel_fro = 0, saturated = 0; ///< metrics sqnr_db, rel_fro, a_saturated + b_saturated
};

/// The sweep's result table: a header and one line per row (run id, format, scaling, distribution
/// left-aligned in 40, 14, 22, 12 columns; SQNR dB, rel_fro, saturated right-aligned in 9, 11, 9
/// with 6 significant digits), two spaces between columns; then "backend B" for each entry of
/// `backends` ("cpu (device)", the backends the runs used).
std::string sweepTableText(const std::vector<SweepTableRow>& rows, const std::vector<std::string>& backends);

} // namespace fp8lab

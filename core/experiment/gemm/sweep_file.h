// FP8 Lab — a sweep's grid points run into a session file (`fp8lab-cli sweep`): runSweep
// (sweep.h) with the saves (appendRuns, taken ids renamed -2, -3, ...), the JSON rows and the result table, and the
// texts the front end prints when it was interrupted. The front end supplies the terminal: progress, lines, signal
// state.
#pragma once

#include "experiment/gemm/sweep.h"
#include "gemm/backend_policy.h"
#include "json/json_document.h"
#include "session/session.h"

#include <functional>
#include <string>
#include <vector>

namespace fp8lab {

/// The grid points of a sweep config for one shard (sweep.h: parseSweepSpec, expandSweep,
/// sweepShard).
struct SweepPlan {
  std::vector<std::string> notes;   ///< remarks on the config (SweepSpec::notes), also with an error
  std::vector<SweepPoint> grid;     ///< the shard's points
  int64_t grid_size = 0;            ///< points of the whole grid
  std::vector<std::string> skipped; ///< resumeSweep: ids of points already in the file
};

/// Plans the sweep of the config `doc` with the command-line `overrides`, shard `shard` of
/// `shards`; "" or the error of parseSweepSpec or expandSweep.
std::string planSweep(const JsonDocument& doc, const SweepAxisOverrides& overrides, int shard, int shards,
                      SweepPlan* plan);

/// Resume: when the session file `out` exists, the points of plan->grid it already holds with the
/// same configuration (removeStoredPoints) move to plan->skipped. "" or the session reader's
/// error.
std::string resumeSweep(SweepPlan* plan, const std::string& out);

/// "sweep: nothing to run: every grid point of this shard is already in OUT (file unchanged)".
std::string sweepNothingToRunText(const std::string& out);

/// "sweep: N of G grid points (shard I/S) -> OUT": N = the points to run (plan.grid), G = the
/// whole grid's size.
std::string sweepStartText(const SweepPlan& plan, int shard, int shards, const std::string& out);

/// The sweep object of a GEMM config, for help texts: an example and how its lists combine
/// (parseSweepSpec, expandSweep), several lines each ending with a newline.
std::string sweepObjectHelp();

/// What runSweepIntoFile reports and asks. Every hook may be empty.
struct SweepFileHooks {
  /// As SweepHooks::progress: return false to cancel (a point in progress stops at its next check).
  std::function<bool(double fraction, const std::string& stage)> progress;
  /// A point's run finished: records where its GEMMs ran before anything reads the run:
  /// recordBackend (backend/backend_record.h) with the backend, the point's GEMM options and
  /// `note` (the backend's note() after the run).
  std::function<void(Run& run, const GemmOptions& gemm, const std::string& note)> record_backend;
  /// A line for stderr. Always shown: a run's warnings (Issue::toString) and "note: run ID stored
  /// as ID-2 (id taken)". `detail` (a quiet front end drops them): "note: ID: --backend <why the
  /// CPU ran it>", once per reason, for a point the CPU ran although a GPU is present; and with
  /// `point_lines`, "sweep: I/N ID done (SQNR s dB)" per finished point (I counts the finished
  /// points, N = the grid's size; sixDigitText), for a log without a progress bar.
  std::function<void(const std::string& line, bool detail)> line;
  bool point_lines = false;
  /// What a forced stop would lose now (sweepLossNote, or the save in progress), whenever it changes.
  std::function<void(const std::string& note)> loss_note;
};

/// The result of runSweepIntoFile.
struct SweepFileResult {
  SweepOutcome outcome;
  /// One object per finished point, in grid order: run, grid_index, format, scaling,
  /// distribution, backend, device, backend_note (attribute; "" when absent), metrics.
  Json rows = Json::array();
  std::vector<SweepTableRow> table;  ///< the finished points (sweepTableText)
  std::vector<std::string> backends; ///< "backend (device)" of the finished points, sorted, each once
};

/// Runs `grid` on `backend` (not owned; `threads` as SweepRunOptions) and appends the runs to
/// `out` with `write` (its on_conflict is set to Rename) in runSweep's batches.
SweepFileResult runSweepIntoFile(const std::vector<SweepPoint>& grid, FallbackGemmBackend& backend,
                                 const std::string& out, WriteOptions write, int threads, const SweepFileHooks& hooks);

/// "N finished grid point(s) not yet saved and the point in progress; OUT keeps what it held".
std::string sweepLossNote(size_t pending, const std::string& out);

/// "sweep: N grid point(s) already in OUT with the same configuration, skipped (--recompute runs
/// them again): ID, ID, ..." naming the first 12 `skipped` points (then ", ...").
std::string sweepSkippedText(const std::vector<std::string>& skipped, const std::string& out);

/// The JSON summary of `sweep --json`: file, shard, shards, backend_request (when not empty),
/// grid_size, skipped (ids), runs (`rows`).
Json sweepSummaryJson(const std::string& file, int shard, int shards, const std::string& backend_request,
                      int64_t grid_size, const std::vector<std::string>& skipped, const Json& rows);

/// What the front end says when `signal` (e.g. "Ctrl-C (SIGINT)") stopped the sweep of `grid`
/// into `out`, one line without a newline: inside a point "interrupted by S at grid point I of N
/// (ID); saved|could not save the F finished point(s) in OUT"; completed (the signal came after
/// the last point) "interrupted by S after the last grid point; all N points are saved in OUT";
/// else "interrupted by S after grid point F of N; saved|could not save the finished points in
/// OUT".
std::string sweepInterruptText(const SweepOutcome& res, const std::vector<SweepPoint>& grid, const std::string& signal,
                               const std::string& out);

} // namespace fp8lab

#include "experiment/gemm/sweep_file.h"

#include "experiment/config_reader.h"
#include "experiment/run_results.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

namespace fp8lab {

std::string planSweep(const JsonDocument& doc, const SweepAxisOverrides& overrides, int shard, int shards,
                      SweepPlan* plan) {
  SweepSpec spec;
  std::string e = parseSweepSpec(doc.root(), overrides, &spec, &doc);
  plan->notes = spec.notes;
  std::vector<SweepPoint> all;
  if (e.empty()) e = expandSweep(spec, &all);
  plan->grid_size = static_cast<int64_t>(all.size());
  plan->grid = sweepShard(all, shard, shards);
  return e;
}

std::string resumeSweep(SweepPlan* plan, const std::string& out) {
  if (std::error_code ec; !std::filesystem::exists(out, ec)) return {};
  auto rd = SessionReader::open(out);
  if (!rd.ok()) return rd.errors();
  plan->skipped = removeStoredPoints(&plan->grid, rd.value->info().runs);
  return {};
}

std::string sweepNothingToRunText(const std::string& out) {
  return "sweep: nothing to run: every grid point of this shard is already in " + out + " (file unchanged)";
}

std::string sweepStartText(const SweepPlan& plan, int shard, int shards, const std::string& out) {
  return "sweep: " + std::to_string(plan.grid.size()) + " of " + std::to_string(plan.grid_size) +
         " grid points (shard " + std::to_string(shard) + "/" + std::to_string(shards) + ") -> " + out;
}

std::string sweepObjectHelp() {
  return "  {\"type\": \"gemm\", \"m\": 256, \"k\": 256, \"n\": 256, \"seed\": 1,\n"
         "   \"sweep\": {\"formats\": [\"E4M3FN\", \"E5M2\", \"E4M3FN:E5M2\"], \"scalings\": [\"te_current\", "
         "\"mx_rceil\"],\n"
         "             \"distributions\": [\"normal\", \"lognormal\"], \"seeds\": [1, 2, 3]}}\n"
         "(\"A:B\" gives A and B different formats; in scalings, a recipe pair such as\n"
         "deepgemm_1x128:deepgemm_128x128 scales A with the first preset and B with the second).\n"
         "Without \"formats\" each recipe brings its own element format (NVFP4 presets E2M1, the\n"
         "others the config's, E4M3FN by default), so FP8, MX and NVFP4 recipes share one grid.\n";
}

std::string sweepLossNote(size_t pending, const std::string& out) {
  return std::to_string(pending) + " finished grid point(s) not yet saved and the point in progress; " + out +
         " keeps what it held";
}

SweepFileResult runSweepIntoFile(const std::vector<SweepPoint>& grid, FallbackGemmBackend& backend,
                                 const std::string& out, WriteOptions write, int threads, const SweepFileHooks& hooks) {
  SweepFileResult res;
  size_t pending = 0;           // finished points not yet saved
  std::set<std::string> noted;  // each fallback reason once
  std::set<std::string> ran_on; // "backend (device)" of the runs
  const auto say = [](const auto& hook, const std::string& s) {
    if (hook) hook(s);
  };
  say(hooks.loss_note, sweepLossNote(pending, out));
  write.on_conflict = WriteOptions::OnConflict::Rename;
  SweepHooks h;
  h.progress = hooks.progress;
  const auto line = [&](const std::string& text, bool detail) {
    if (hooks.line) hooks.line(text, detail);
  };
  h.warning = [&](const SweepPoint&, const Issue& w) { line(w.toString(), false); };
  h.point_done = [&](const SweepPoint& pt, Run& run) {
    if (hooks.record_backend) hooks.record_backend(run, pt.config.gemm, backend.note());
    const auto note = attrString(run.attrs, "backend_note");
    if (note && run.backend == "cpu" && backend.hasGpu() && noted.insert(*note).second)
      line("note: " + pt.id + ": --backend " + *note, true);
    const auto met = [&](const char* k) { return run.metrics.count(k) ? run.metrics.at(k).value : std::nan(""); };
    ran_on.insert(run.backend + " (" + run.device + ")");
    res.table.push_back({pt.id, pt.format, pt.scaling, pt.distribution, met("sqnr_db"), met("rel_fro"),
                         met("a_saturated") + met("b_saturated")});
    res.rows.push_back({{"run", pt.id},
                        {"grid_index", pt.index},
                        {"format", pt.format},
                        {"scaling", pt.scaling},
                        {"distribution", pt.distribution},
                        {"backend", run.backend},
                        {"device", run.device},
                        {"backend_note", note.value_or("")},
                        {"metrics", runMetricsJson(run)}});
    if (hooks.point_lines)
      line("sweep: " + std::to_string(res.table.size()) + "/" + std::to_string(grid.size()) + " " + pt.id +
               " done (SQNR " + sixDigitText(met("sqnr_db")) + " dB)",
           true);
    say(hooks.loss_note, sweepLossNote(++pending, out));
  };
  h.save = [&](const std::vector<Run>& runs, std::string* error) {
    say(hooks.loss_note, "the save of " + std::to_string(runs.size()) + " finished grid point(s) in progress (" + out +
                             " keeps what it held before; saves are atomic)");
    std::vector<std::string> ids;
    const Status st = appendRuns(out, runs, write, &ids);
    if (!st.ok()) {
      *error = st.errors();
      return false;
    }
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] != runs[i].id) line(renamedRunNote(runs[i].id, ids[i]), false);
    pending = 0;
    say(hooks.loss_note, sweepLossNote(pending, out));
    return true;
  };
  SweepRunOptions ro;
  ro.threads = threads;
  res.outcome = runSweep(grid, backend, h, ro);
  res.backends.assign(ran_on.begin(), ran_on.end());
  return res;
}

std::string sweepSkippedText(const std::vector<std::string>& skipped, const std::string& out) {
  const size_t n = std::min<size_t>(skipped.size(), 12);
  return "sweep: " + std::to_string(skipped.size()) + " grid point(s) already in " + out +
         " with the same configuration, skipped (--recompute runs them again): " +
         joinNames(std::vector<std::string>(skipped.begin(), skipped.begin() + static_cast<std::ptrdiff_t>(n))) +
         (skipped.size() > 12 ? ", ..." : "");
}

Json sweepSummaryJson(const std::string& file, int shard, int shards, const std::string& backend_request,
                      int64_t grid_size, const std::vector<std::string>& skipped, const Json& rows) {
  Json j = {{"file", file},           {"shard", shard},     {"shards", shards},
            {"grid_size", grid_size}, {"skipped", skipped}, {"runs", rows}};
  if (!backend_request.empty()) j["backend_request"] = backend_request;
  return j;
}

std::string sweepInterruptText(const SweepOutcome& res, const std::vector<SweepPoint>& grid, const std::string& signal,
                               const std::string& out) {
  const std::string n = std::to_string(grid.size()), f = std::to_string(res.finished);
  const std::string saved = res.saved() ? "saved" : "could not save";
  if (res.status == SweepOutcome::Status::Completed)
    return "interrupted by " + signal + " after the last grid point; all " + n + " points are saved in " + out;
  if (res.in_point)
    return "interrupted by " + signal + " at grid point " + std::to_string(res.finished + 1) + " of " + n + " (" +
           grid[res.finished].id + "); " + saved + " the " + f + " finished point" + (res.finished == 1 ? "" : "s") +
           " in " + out;
  return "interrupted by " + signal + " after grid point " + f + " of " + n + "; " + saved +
         " the finished points in " + out;
}

} // namespace fp8lab

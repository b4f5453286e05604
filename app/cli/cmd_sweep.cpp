// fp8lab-cli sweep — a grid of GEMM runs into a session file, by shard (the work is core/experiment's; run_common.h
// holds what the experiment commands share on the terminal).
#include "run_common.h"

#include "command.h"

#include "experiment/gemm/sweep_file.h"
#include "experiment/training/training_report.h"
#include "experiment/training/training_sweep.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>

#include <unistd.h>

namespace fp8lab::cli {
namespace {

int runSweep(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(
      QStringLiteral("Runs a grid of GEMM experiments: formats x scalings x distributions x seeds, one run each;\n"
                     "or every run of a training config (MLP or language model) x seeds: --seeds 1-3 or the\n"
                     "config's \"seeds\" key, run ids <id>-s<seed>; runs of two recipes with the same seed are\n"
                     "pairs for `fp8lab-cli decide` (--shard, resume and merge as for GEMM sweeps).\n"
                     "A GEMM CONFIG.json has a \"sweep\" object, e.g.\n") +
      qs(sweepObjectHelp()) +
      QStringLiteral("Options override the sweep lists. With several seeds, rank the recipes with\n"
                     "`fp8lab-cli decide FILE.h5` (mean and 95 % interval over seeds, cost per recipe).\n"
                     "--shard i/n runs the grid points g with g mod n == i (0-based), so shards can run on\n"
                     "separate machines (e.g. a Slurm array: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT);\n"
                     "join their files with `fp8lab-cli merge`."));
  p.addPositionalArgument(QStringLiteral("CONFIG.json"), QStringLiteral("GEMM config with a sweep object."));
  const auto& [o, nc, be, th, js, q] = SharedOptions{};
  const auto shardOpt = cliOption("shard", "Run slice i of n (0 <= i < n).", "i/n"),
             fOpt = cliOption("formats", "Comma-separated formats (A or A:B).", "LIST"),
             sOpt = cliOption("scalings", "Comma-separated scaling presets.", "LIST"),
             dOpt = cliOption("distributions", "Comma-separated distributions.", "LIST"),
             seedOpt = cliOption("seeds", "Seeds: a comma-separated list and/or ranges FIRST-LAST (1-5).", "LIST"),
             dryOpt = cliOption("dry-run", "List the grid points of this shard and exit."),
             recomputeOpt = cliOption("recompute", "Also run grid points already in --out with the same configuration "
                                                   "(by default they are skipped, so a sweep run again after an "
                                                   "interruption resumes); new copies get -2 ids.");
  p.addOptions({o, shardOpt, fOpt, sOpt, dOpt, seedOpt, nc, th, be, js, q, dryOpt, recomputeOpt});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() != 1) return fail(QStringLiteral("sweep needs exactly one CONFIG.json"));
  const QString outPath = p.value(o);
  if (outPath.isEmpty() && !p.isSet(dryOpt)) return fail(QStringLiteral("--out FILE.h5 is required"));
  if (!p.isSet(dryOpt) && !outputWritableOrFail(outPath)) return 2;
  const int threads = parseThreads(p.value(th));
  if (threads < 0) return 2;
  const auto m = QRegularExpression(QStringLiteral("^(\\d+)/(\\d+)$")).match(p.value(shardOpt));
  const bool sharded = p.isSet(shardOpt);
  const int shard = sharded ? m.captured(1).toInt() : 0, shards = sharded ? m.captured(2).toInt() : 1;
  if (sharded && (!m.hasMatch() || shards < 1 || shard >= shards))
    return fail(QStringLiteral("--shard: expected i/n with 0 <= i < n, got '%1'").arg(p.value(shardOpt)));
  if (!outPath.isEmpty() && (QFileInfo(outPath).isDir() || !QFileInfo(outPath).absoluteDir().exists()))
    return fail(QStringLiteral("write failed: --out %1 is a directory or its directory does not exist").arg(outPath));
  LoadedConfig c;
  if (!loadConfig(p.positionalArguments()[0], &c)) return 2;
  if (isTrainingConfig(c.doc.root())) {
    // A training config: its runs × seeds (training_sweep.h).
    for (const QCommandLineOption* opt : {&fOpt, &sOpt, &dOpt})
      if (p.isSet(*opt))
        return fail(QStringLiteral("--%1 applies to GEMM sweeps; a training sweep repeats the config's runs over "
                                   "--seeds")
                        .arg(opt->names().front()));
    TrainingOverrides over;
    over.threads = threads;
    std::string e;
    if (p.isSet(seedOpt) && !(over.seeds = parseSeedList(p.value(seedOpt).toStdString(), &e)))
      return fail(QStringLiteral("--seeds: %1").arg(qs(e)));
    auto spec = trainingExperimentToRun(c.doc.root(), {}, &c.doc, over, &e);
    if (!spec) return fail(qs(e));
    if (!over.seeds && spec->seeds.empty())
      err("fp8lab-cli: note: no seeds: give --seeds 1-3 or a \"seeds\" key to repeat every run over seeds "
          "(same-seed runs of two recipes are pairs for `fp8lab-cli decide`)");
    const size_t total = spec->runs.size();
    TrainingExperimentSpec part = trainingShard(*spec, shard, shards);
    if (p.isSet(dryOpt)) {
      for (size_t i = 0; i < spec->runs.size(); ++i)
        if (int(i % size_t(shards)) == shard) out(QStringLiteral("%1 %2\n").arg(i).arg(qs(spec->runs[i].id)));
      return 0;
    }
    const std::string outStr = outPath.toStdString();
    std::vector<std::string> skipped;
    if (!p.isSet(recomputeOpt) && QFileInfo::exists(outPath)) {
      auto rd = SessionReader::open(outStr);
      if (!rd.ok()) return fail(qs(rd.errors()));
      skipped = removeStoredTrainingRuns(&part, rd.value->info().runs);
    }
    if (!skipped.empty() && !p.isSet(q)) err(sweepSkippedText(skipped, outStr));
    if (part.runs.empty()) {
      if (!p.isSet(js)) err(sweepNothingToRunText(outStr));
      return 0;
    }
    if (!p.isSet(q))
      err(QStringLiteral("sweep: %1 of %2 training runs (shard %3/%4) -> %5")
              .arg(part.runs.size())
              .arg(total)
              .arg(shard)
              .arg(shards)
              .arg(outPath)
              .toStdString());
    if (!parseBackendRequest(p.value(be)))
      return fail(QStringLiteral("--backend must be auto, cpu or gpu (got '%1')").arg(p.value(be)));
    const auto backend = makeChosenBackend(p.value(be), p.isSet(q));
    if (!backend) return 2;
    TrainingCliOptions opt;
    opt.over = over;
    opt.json = p.isSet(js);
    opt.quiet = p.isSet(q);
    opt.compress = !p.isSet(nc);
    opt.backend = backend.get();
    return runTrainingSpec(part, outPath, opt);
  }
  SweepAxisOverrides over;
  for (auto [opt, to] : {std::pair{&fOpt, &over.formats}, {&sOpt, &over.scalings}, {&dOpt, &over.distributions}}) {
    if (!p.isSet(*opt)) continue;
    to->emplace();
    for (const QString& x : p.value(*opt).split(QLatin1Char(','), Qt::SkipEmptyParts))
      (*to)->push_back(x.trimmed().toStdString());
  }
  std::string e;
  if (p.isSet(seedOpt) && !(over.seeds = parseSeedList(p.value(seedOpt).toStdString(), &e)))
    return fail(QStringLiteral("--seeds: %1").arg(qs(e)));
  SweepPlan plan;
  e = planSweep(c.doc, over, shard, shards, &plan);
  for (const auto& n : plan.notes) err("fp8lab-cli: note: " + n);
  if (!e.empty()) return fail(qs(e));
  const std::vector<SweepPoint>& grid = plan.grid;
  const bool json = p.isSet(js), quiet = p.isSet(q);
  const std::string outStr = outPath.toStdString();
  if (!parseBackendRequest(p.value(be)))
    return fail(QStringLiteral("--backend must be auto, cpu or gpu (got '%1')").arg(p.value(be)));
  if (p.isSet(dryOpt)) {
    for (const auto& pt : grid) out(QStringLiteral("%1 %2\n").arg(pt.index).arg(qs(pt.id)));
    return 0;
  }
  // Resume: the grid points already in the file with the same configuration are skipped.
  if (!p.isSet(recomputeOpt) && !(e = resumeSweep(&plan, outStr)).empty()) return fail(qs(e));
  if (!plan.skipped.empty() && !quiet) err(sweepSkippedText(plan.skipped, outStr));
  if (grid.empty() && !plan.skipped.empty()) {
    json ? printJson(sweepSummaryJson(outStr, shard, shards, "", plan.grid_size, plan.skipped, Json::array()))
         : err(sweepNothingToRunText(outStr));
    return 0;
  }
  const auto backend = makeChosenBackend(p.value(be), quiet);
  if (!backend) return 2;
  if (!quiet) err(sweepStartText(plan, shard, shards, outStr));
  InterruptGuard interrupt_guard; // Ctrl-C / SIGTERM / SIGHUP: save the finished points, then stop
  Bar bar{quiet, quiet};
  bar.start("sweep");
  SweepFileHooks hooks;
  hooks.progress = [&](double f, const std::string& stage) { return bar.update(f, stage); };
  hooks.record_backend = recorder(*backend);
  hooks.line = [&](const std::string& line, bool detail) {
    if (!detail || !quiet) err(line);
  };
  // Without a terminal (a log file, CI, Slurm) there is no progress bar: one line per point.
  hooks.point_lines = ::isatty(2) != 1;
  hooks.loss_note = [](const std::string& note) { setInterruptLossNote(qs(note)); };
  const SweepFileResult res = runSweepIntoFile(grid, *backend, outStr, writeOptions(!p.isSet(nc)), threads, hooks);
  const SweepOutcome& so = res.outcome;
  bar.bar.reset();
  if (!so.error.empty()) fail(qs(so.error));
  if (!so.saved()) fail(qs(so.save_error));
  // Stopped without a signal, or by a failed batch save between two points (even with one): 2.
  using St = SweepOutcome::Status;
  if (so.status != St::Completed && (!interrupted() || (!so.in_point && so.status == St::Failed))) return 2;
  if (interrupted()) { // stopped by it, or it arrived after the last point's last check
    err("fp8lab-cli: " + sweepInterruptText(so, grid, interruptName().toStdString(), outStr));
    return interruptedExitCode();
  }
  if (json) {
    printJson(
        sweepSummaryJson(outStr, shard, shards, toString(backend->request()), plan.grid_size, plan.skipped, res.rows));
    return 0;
  }
  out(sweepTableText(res.table, res.backends));
  err("session written: " + QFileInfo(outPath).absoluteFilePath().toStdString());
  return 0;
}

const CommandRegistrar reg({QStringLiteral("sweep"),
                            QStringLiteral("Grid of GEMM runs (formats x scalings x distributions x seeds) or training "
                                           "runs x seeds (--shard i/n)"),
                            runSweep, 61});

} // namespace
} // namespace fp8lab::cli

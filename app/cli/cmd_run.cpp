// fp8lab-cli run | sweep | rerun — experiments from JSON configs into session files (cmd_run.h).
#include "cmd_run.h"

#include "cli_util.h"
#include "command.h"

#include "experiment/experiment_batch.h"
#include "experiment/experiment_registry.h"
#include "experiment/gemm_experiment_object.h"
#include "experiment/run_results.h"
#include "experiment/sweep_file.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include <cstdio>
#include <unistd.h>

namespace fp8lab::cli {
namespace {

void err(const std::string& s) {
  std::fprintf(stderr, "%s\n", s.c_str());
}
QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

} // namespace

bool appendRunsToFile(const QString& out, const std::vector<Run>& runs, bool compress, std::vector<std::string>* ids) {
  WriteOptions wo;
  wo.compress = compress;
  wo.on_conflict = WriteOptions::OnConflict::Rename;
  wo.lock = sessionLockWait();
  TerminalProgress bar(QStringLiteral("saving"));
  wo.progress = [&](double f, const std::string& s) {
    bar.update(f, qs(s));
    return true;
  };
  Status st = appendRuns(out.toStdString(), runs, wo, ids);
  bar.finish();
  for (const auto& i : st.issues)
    if (i.severity != Severity::Error) err(i.toString());
  return st.ok() || fail(qs(st.errors())) == 0;
}

bool loadConfig(const QString& path, LoadedConfig* c) {
  QString e;
  std::optional<QByteArray> bytes;
  c->origin = path;
  if (path.isEmpty()) { // the embedded default (a Qt resource)
    QFile f(QStringLiteral(":/fp8lab/experiments/default.json"));
    if (!f.exists()) f.setFileName(QStringLiteral(":/experiments/default.json"));
    c->origin = f.fileName();
    if (!f.exists())
      e = QStringLiteral("no CONFIG.json given and this build has no embedded default experiment");
    else if (!f.open(QIODevice::ReadOnly))
      e = QStringLiteral("cannot read config '%1': %2").arg(c->origin, f.errorString());
    else
      bytes = f.readAll();
  } else { // a regular file of at most 64 MiB: never a FIFO (blocks) or /dev/zero (endless)
    bytes = readInputFile(path, InputKind::Config, QStringLiteral("config"), kMaxConfigBytes, &e);
  }
  std::string why;
  if (bytes) c->text = bytes->toStdString();
  if (auto doc = bytes ? parseConfigText(c->text, c->origin.toStdString(), &why) : std::nullopt) {
    c->doc = std::move(*doc);
    return true;
  }
  fail(bytes ? qs(why) : e);
  return false;
}

namespace {

QCommandLineOption outOption() {
  return {{QStringLiteral("o"), QStringLiteral("out")},
          QStringLiteral("Session file to write (created or appended to)."),
          QStringLiteral("FILE.h5")};
}
QCommandLineOption noCompressOption() {
  return {QStringLiteral("no-compress"), QStringLiteral("Store datasets uncompressed (faster, larger).")};
}
QCommandLineOption threadsOption() {
  return {QStringLiteral("threads"), QStringLiteral("Worker threads (0 = all cores; results do not depend on it)."),
          QStringLiteral("N"), QStringLiteral("0")};
}
QCommandLineOption jsonOption() {
  return {QStringLiteral("json"), QStringLiteral("Machine-readable JSON output.")};
}
QCommandLineOption quietOption() {
  return {{QStringLiteral("q"), QStringLiteral("quiet")}, QStringLiteral("No progress output.")};
}

// ---- run ------------------------------------------------------------------------------------

int runRun(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Runs the experiment(s) of CONFIG.json and appends the runs to a session file.\n"
      "CONFIG holds one experiment object ({\"type\": \"gemm\" | \"training\", ...}) or {\"experiments\": [...]};\n"
      "without CONFIG the embedded default experiment runs. Schema: docs/session-format.md."));
  p.addPositionalArgument(QStringLiteral("CONFIG.json"), QStringLiteral("Experiment config (optional)."));
  const auto o = outOption(), nc = noCompressOption(), th = threadsOption(), js = jsonOption(), q = quietOption();
  const QCommandLineOption idOpt(QStringLiteral("id"), QStringLiteral("Run id (single-run configs)."),
                                 QStringLiteral("ID"));
  const QCommandLineOption dataOpt(QStringLiteral("data-dir"), QStringLiteral("Fashion-MNIST directory (training)."),
                                   QStringLiteral("DIR"));
  const QCommandLineOption be = backendOption();
  p.addOptions({o, idOpt, nc, th, dataOpt, be, js, q});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() > 1) return fail(QStringLiteral("run takes at most one CONFIG.json"));
  const QString outFile = p.value(o), runId = p.value(idOpt);
  if (outFile.isEmpty()) return fail(QStringLiteral("--out FILE.h5 is required"));
  const bool json = p.isSet(js), quiet = p.isSet(q), compress = !p.isSet(nc);
  const int threads = parseThreads(p.value(th));
  if (threads < 0) return 2;
  // Refuse an output that cannot be written before computing anything.
  if (!outputWritableOrFail(outFile)) return 2;
  if (!parseBackendRequest(p.value(be)))
    return fail(QStringLiteral("--backend must be auto, cpu or gpu (got '%1')").arg(p.value(be)));
  LoadedConfig c;
  if (!loadConfig(p.positionalArguments().value(0), &c)) return 2;
  std::string e;
  const auto exps = experimentObjects(c.doc, c.text, &e);
  if (exps.empty()) return fail(QStringLiteral("config: %1").arg(qs(e)));
  if (exps.size() > 1 && !runId.isEmpty()) return fail(QStringLiteral("--id needs a config with a single experiment"));
  // Check every experiment first, so a typo in the last experiment does not waste the first ones.
  if (e = checkExperimentObjects(exps, &c.doc); !e.empty()) return fail(qs(e));
  const auto backend = makeChosenBackend(p.value(be), quiet);
  if (!backend) return 2;
  // --json with several experiments: one JSON document (an array, one object per experiment in
  // config order), printed however the command ends.
  QJsonArray json_docs;
  QJsonArray* json_out = json && exps.size() > 1 ? &json_docs : nullptr;
  auto finish = [&](int code) {
    if (json_out) out(toJsonText(json_docs) + "\n");
    return code;
  };
  InterruptGuard interrupt_guard; // Ctrl-C / SIGTERM / SIGHUP: finish the save in progress, then stop
  auto runGemm = [&](const ExperimentObject& ex, RunBatch* batch) -> int {
    std::optional<TerminalProgress> bar;
    GemmObjectHooks h;
    h.started = [&](const std::string& id) { bar.emplace(QStringLiteral("gemm %1").arg(qs(id))); };
    h.config_note = [](const std::string& n) { err("fp8lab-cli: note: " + n); };
    h.remark = err;
    h.progress = [&](double f, const std::string& s) {
      if (!quiet) bar->update(f, qs(s));
      return !interrupted(); // InterruptGuard: stop at the next check point
    };
    GemmObjectResult g = runGemmExperimentObject(ex, &c.doc, runId.toStdString(), threads, *backend, h);
    if (bar) bar->finish();
    for (const auto& w : g.warnings) err(w.toString());
    if (g.status != GemmObjectResult::Status::Done && g.status != GemmObjectResult::Status::Cancelled)
      fail(qs(g.error));
    if (g.status == GemmObjectResult::Status::ConfigError) return 2;
    if (g.status != GemmObjectResult::Status::Done && interrupted()) {
      std::fprintf(stderr,
                   "fp8lab-cli: interrupted by %s: GEMM run '%s' stopped before it finished and was not saved "
                   "(%s keeps what it held, with any runs finished before)\n",
                   interruptName().toUtf8().constData(), g.id.c_str(), outFile.toUtf8().constData());
      return interruptedExitCode();
    }
    if (g.status != GemmObjectResult::Status::Done) return 2;
    const std::string fallback = backend->lastFallback();
    if (!fallback.empty() && !quiet) err("note: run " + g.id + ": --backend " + fallback);
    recordBackend(g.run, *backend, g.cfg.gemm, !fallback.empty() ? fallback : backend->noGpuReason());
    auto report = [&, cfg = g.cfg](const Run& run, const std::string& stored) {
      if (!json) return out(gemmRunReportText(run, stored, cfg, outFile.toStdString()));
      QJsonObject j = toQJson(gemmRunResultJson(run, outFile.toStdString(), stored)).toObject();
      addBackendJson(j, *backend, run.backend, cfg.gemm, attrString(run.attrs, "backend_note").value_or(""));
      emitJson(json_out, j);
    };
    if (batch) {
      batch->add({std::move(g.run), report});
      return 0;
    }
    std::vector<std::string> ids;
    // A signal during the save does not stop it (the run is finished; saving takes seconds): the
    // command ends after it. Only a third signal ends the process at once (InterruptGuard).
    setInterruptLossNote(qs("the save of run '" + g.id + "' in progress (" + outFile.toStdString() +
                            " keeps what it held before; saves are atomic)"));
    if (!appendRunsToFile(outFile, {g.run}, compress, &ids)) return 2;
    report(g.run, ids.empty() ? g.run.id : ids[0]);
    return 0;
  };
  // Several experiments: GEMM runs are saved in batches (experiment_batch.h), one rewrite each.
  RunBatch batch([&](const std::vector<Run>& runs,
                     std::vector<std::string>* ids) { return appendRunsToFile(outFile, runs, compress, ids); },
                 [](const std::string& note) { setInterruptLossNote(qs(note)); }, outFile.toStdString());
  ExperimentListHooks hooks;
  hooks.saves_itself = [&](size_t i) { return experimentTypeOf(*exps[i].obj) != "gemm"; };
  hooks.interrupted = [] { return interrupted(); };
  hooks.experiment_done = [&](size_t i, size_t n, bool pending) {
    // GEMM results are printed when their batch is saved; this line says the work goes on.
    if (n > 1 && !quiet && !json)
      err("run: experiment " + std::to_string(i + 1) + "/" + std::to_string(n) + " done" +
          (pending ? " (its run is saved with the next batch)" : ""));
  };
  hooks.run = [&](size_t i, RunBatch& b) {
    const std::string type = experimentTypeOf(*exps[i].obj);
    if (type == "gemm") return runGemm(exps[i], exps.size() > 1 ? &b : nullptr);
    if (type != "training")
      return fail(QStringLiteral("\"gemm-trained-weights\" runs are made by a training experiment's "
                                 "\"gemm_on_trained_weights\" (see docs/training.md); they can be re-run with "
                                 "`fp8lab-cli rerun`"));
    TrainingCliOptions t;
    t.json = json;
    t.quiet = quiet;
    t.data_dir = p.value(dataOpt);
    t.run_id = runId;
    t.threads = threads;
    t.compress = compress;
    t.print_session_line = false;
    t.backend = backend.get();
    t.json_out = json_out;
    return runTrainingCli(*exps[i].obj, exps[i].at, &c.doc, outFile, t);
  };
  const ExperimentListOutcome res = runExperimentList(exps.size(), batch, hooks);
  using S = ExperimentListOutcome::Status;
  if (res.status == S::SaveFailed || res.status == S::Failed)
    return finish(res.status == S::Failed ? res.exit_code : 2);
  if (res.status == S::Interrupted) {
    std::fprintf(stderr, "fp8lab-cli: interrupted by %s; the finished runs are saved in %s\n",
                 interruptName().toUtf8().constData(), outFile.toUtf8().constData());
    return finish(interruptedExitCode());
  }
  if (!json && !quiet) err("session written: " + QFileInfo(outFile).absoluteFilePath().toStdString());
  return finish(0);
}

// ---- sweep ----------------------------------------------------------------------------------

int runSweep(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(
      QStringLiteral("Runs a grid of GEMM experiments: formats x scalings x distributions x seeds, one run each.\n"
                     "CONFIG.json is a GEMM config with a \"sweep\" object, e.g.\n"
                     "  {\"type\": \"gemm\", \"m\": 256, \"k\": 256, \"n\": 256, \"seed\": 1,\n"
                     "   \"sweep\": {\"formats\": [\"E4M3FN\", \"E5M2\", \"E4M3FN:E5M2\"], \"scalings\": "
                     "[\"te_current\", \"mx_rceil\"],\n"
                     "             \"distributions\": [\"normal\", \"lognormal\"], \"seeds\": [1, 2, 3]}}\n"
                     "(\"A:B\" gives A and B different formats; in scalings, a recipe pair such as\n"
                     "deepgemm_1x128:deepgemm_128x128 scales A with the first preset and B with the second).\n"
                     "Without \"formats\" each recipe brings its own element format (NVFP4 presets E2M1, the\n"
                     "others the config's, E4M3FN by default), so FP8, MX and NVFP4 recipes share one grid.\n"
                     "Options override the sweep lists. With several seeds, rank the recipes with\n"
                     "`fp8lab-cli decide FILE.h5` (mean and 95 % interval over seeds, cost per recipe).\n"
                     "--shard i/n runs the grid points g with g mod n == i (0-based), so shards can run on\n"
                     "separate machines (e.g. a Slurm array: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT);\n"
                     "join their files with `fp8lab-cli merge`."));
  p.addPositionalArgument(QStringLiteral("CONFIG.json"), QStringLiteral("GEMM config with a sweep object."));
  const auto o = outOption(), nc = noCompressOption(), th = threadsOption(), js = jsonOption(), q = quietOption();
  const QCommandLineOption shardOpt(QStringLiteral("shard"), QStringLiteral("Run slice i of n (0 <= i < n)."),
                                    QStringLiteral("i/n"));
  const QCommandLineOption fOpt(QStringLiteral("formats"), QStringLiteral("Comma-separated formats (A or A:B)."),
                                QStringLiteral("LIST"));
  const QCommandLineOption sOpt(QStringLiteral("scalings"), QStringLiteral("Comma-separated scaling presets."),
                                QStringLiteral("LIST"));
  const QCommandLineOption dOpt(QStringLiteral("distributions"), QStringLiteral("Comma-separated distributions."),
                                QStringLiteral("LIST"));
  const QCommandLineOption seedOpt(QStringLiteral("seeds"),
                                   QStringLiteral("Seeds: a comma-separated list and/or ranges FIRST-LAST (1-5)."),
                                   QStringLiteral("LIST"));
  const QCommandLineOption dryOpt(QStringLiteral("dry-run"),
                                  QStringLiteral("List the grid points of this shard and exit."));
  const QCommandLineOption recomputeOpt(
      QStringLiteral("recompute"),
      QStringLiteral("Also run grid points already in --out with the same configuration (by default they are "
                     "skipped, so a sweep run again after an interruption resumes); new copies get -2 ids."));
  const QCommandLineOption be = backendOption();
  p.addOptions({o, shardOpt, fOpt, sOpt, dOpt, seedOpt, nc, th, be, js, q, dryOpt, recomputeOpt});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() != 1) return fail(QStringLiteral("sweep needs exactly one CONFIG.json"));
  const QString outPath = p.value(o);
  if (outPath.isEmpty() && !p.isSet(dryOpt)) return fail(QStringLiteral("--out FILE.h5 is required"));
  if (!p.isSet(dryOpt) && !outputWritableOrFail(outPath)) return 2;
  const int threads = parseThreads(p.value(th));
  if (threads < 0) return 2;
  int shard = 0, shards = 1;
  if (p.isSet(shardOpt)) {
    static const QRegularExpression re(QStringLiteral("^(\\d+)/(\\d+)$"));
    const auto m = re.match(p.value(shardOpt));
    shard = m.captured(1).toInt();
    shards = m.captured(2).toInt();
    if (!m.hasMatch() || shards < 1 || shard >= shards)
      return fail(QStringLiteral("--shard: expected i/n with 0 <= i < n, got '%1'").arg(p.value(shardOpt)));
  }
  if (!outPath.isEmpty() && (QFileInfo(outPath).isDir() || !QFileInfo(outPath).absoluteDir().exists()))
    return fail(QStringLiteral("write failed: --out %1 is a directory or its directory does not exist").arg(outPath));
  LoadedConfig c;
  if (!loadConfig(p.positionalArguments()[0], &c)) return 2;
  SweepAxisOverrides over;
  auto flagList = [&](const QCommandLineOption& opt, std::optional<std::vector<std::string>>* to) {
    if (!p.isSet(opt)) return;
    std::vector<std::string> l;
    for (const QString& x : p.value(opt).split(QLatin1Char(','), Qt::SkipEmptyParts))
      l.push_back(x.trimmed().toStdString());
    *to = std::move(l);
  };
  flagList(fOpt, &over.formats);
  flagList(sOpt, &over.scalings);
  flagList(dOpt, &over.distributions);
  std::string e;
  if (p.isSet(seedOpt) && !(over.seeds = parseSeedList(p.value(seedOpt).toStdString(), &e)))
    return fail(QStringLiteral("--seeds: %1").arg(qs(e)));
  SweepSpec spec;
  const std::string spec_error = parseSweepSpec(c.doc.root(), over, &spec, &c.doc);
  for (const auto& n : spec.notes) err("fp8lab-cli: note: " + n);
  if (!spec_error.empty()) return fail(qs(spec_error));
  std::vector<SweepPoint> all;
  if (e = expandSweep(spec, &all); !e.empty()) return fail(qs(e));
  const int g = static_cast<int>(all.size());
  std::vector<SweepPoint> grid = sweepShard(all, shard, shards);
  const bool json = p.isSet(js), quiet = p.isSet(q);
  const std::string outStr = outPath.toStdString();
  if (!parseBackendRequest(p.value(be)))
    return fail(QStringLiteral("--backend must be auto, cpu or gpu (got '%1')").arg(p.value(be)));
  if (p.isSet(dryOpt)) {
    for (const auto& pt : grid) out(QStringLiteral("%1 %2\n").arg(pt.index).arg(qs(pt.id)));
    return 0;
  }
  // Resume: the grid points already in the file with the same configuration are skipped and
  // reported (removeStoredPoints).
  std::vector<std::string> skipped;
  if (!p.isSet(recomputeOpt) && QFileInfo::exists(outPath)) {
    auto rd = SessionReader::open(outStr);
    if (!rd.ok()) return fail(qs(rd.errors()));
    skipped = removeStoredPoints(&grid, rd.value->info().runs);
    if (!skipped.empty() && !quiet)
      err("sweep: " + std::to_string(skipped.size()) + " grid point(s) already in " + outStr +
          " with the same configuration, skipped (--recompute runs them again): " +
          (skipped.size() <= 12
               ? joinNames(skipped)
               : joinNames(std::vector<std::string>(skipped.begin(), skipped.begin() + 12)) + ", ..."));
  }
  if (grid.empty() && !skipped.empty()) {
    if (json)
      out(toJsonText(toQJson(sweepSummaryJson(outStr, shard, shards, "", g, skipped, Json::array()))) + "\n");
    else
      err("sweep: nothing to run: every grid point of this shard is already in " + outStr + " (file unchanged)");
    return 0;
  }
  const auto backend = makeChosenBackend(p.value(be), quiet);
  if (!backend) return 2;
  if (!quiet)
    err("sweep: " + std::to_string(grid.size()) + " of " + std::to_string(g) + " grid points (shard " +
        std::to_string(shard) + "/" + std::to_string(shards) + ") -> " + outStr);
  InterruptGuard interrupt_guard; // Ctrl-C / SIGTERM / SIGHUP: save the finished points, then stop
  TerminalProgress bar(QStringLiteral("sweep"));
  SweepFileHooks hooks;
  hooks.progress = [&](double f, const std::string& stage) {
    if (!quiet) bar.update(f, qs(stage));
    return !interrupted(); // InterruptGuard: stop at the next check point
  };
  hooks.finish_run = [&](const SweepPoint& pt, Run& run) {
    recordBackend(run, *backend, pt.config.gemm, backend->note());
  };
  hooks.warning = err;
  if (!quiet) hooks.note = err;
  // Without a terminal (a log file, CI, Slurm) there is no progress bar: one line per point.
  if (!quiet && ::isatty(2) != 1) hooks.point_line = err;
  hooks.loss_note = [](const std::string& note) { setInterruptLossNote(qs(note)); };
  WriteOptions wo;
  wo.compress = !p.isSet(nc);
  wo.lock = sessionLockWait();
  const SweepFileResult res = runSweepIntoFile(grid, *backend, outStr, wo, threads, hooks);
  const SweepOutcome& so = res.outcome;
  bar.finish();
  if (so.status != SweepOutcome::Status::Completed) {
    if (!so.error.empty()) fail(qs(so.error));
    if (!so.saved()) fail(qs(so.save_error));
    // A failed batch save between two points ends with 2 even when a signal came too.
    if (!interrupted() || (!so.in_point && so.status == SweepOutcome::Status::Failed)) return 2;
  }
  if (interrupted()) { // a completed sweep: the signal arrived after the last point's last check
    err("fp8lab-cli: " + sweepInterruptText(so, grid, interruptName().toStdString(), outStr));
    return interruptedExitCode();
  }
  if (json) {
    out(toJsonText(
            toQJson(sweepSummaryJson(outStr, shard, shards, toString(backend->request()), g, skipped, res.rows))) +
        "\n");
    return 0;
  }
  out(sweepTableText(res.table, res.backends));
  err("session written: " + QFileInfo(outPath).absoluteFilePath().toStdString());
  return 0;
}

// ---- rerun ----------------------------------------------------------------------------------

int runRerun(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Re-runs a stored run from its configuration and seed on the CPU backend and compares every\n"
      "dataset and metric bit for bit with the stored one. Exit 0: identical; 1: differences (listed).\n"
      "Always the CPU reference backend: the bit-for-bit promise is for the CPU; a run stored from the GPU\n"
      "(backend \"cuda\") is compared with the CPU model, and the differences are listed."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  p.addPositionalArgument(QStringLiteral("RUN_ID"), QStringLiteral("Run to reproduce."));
  const auto th = threadsOption(), js = jsonOption(), q = quietOption();
  const QCommandLineOption saveOpt(QStringLiteral("out"),
                                   QStringLiteral("Also save the new run into this session file."),
                                   QStringLiteral("FILE.h5"));
  const QCommandLineOption be(QStringLiteral("backend"),
                              QStringLiteral("Only cpu: rerun reproduces on the CPU reference backend."),
                              QStringLiteral("cpu"), QStringLiteral("cpu"));
  p.addOptions({saveOpt, th, be, js, q});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (parseBackendRequest(p.value(be)) != BackendRequest::Cpu)
    return fail(
        QStringLiteral("rerun reproduces on the CPU reference backend only (its bit-for-bit promise is for the CPU); "
                       "to repeat a run on the GPU, run its config again: fp8lab-cli run CONFIG.json --backend gpu"));
  if (p.positionalArguments().size() != 2) return fail(QStringLiteral("rerun needs FILE.h5 and RUN_ID"));
  const QString file = p.positionalArguments()[0], id = p.positionalArguments()[1];
  const int threads = parseThreads(p.value(th));
  if (threads < 0) return 2;
  auto rd = SessionReader::open(file.toStdString());
  if (!rd.ok()) return fail(QString::fromStdString(rd.errors()));
  auto stored = rd.value->readRun(id.toStdString());
  if (!stored.ok()) return fail(QString::fromStdString(stored.errors()));
  rd.value.reset();
  const Run& s = stored.value;
  TerminalProgress bar(QStringLiteral("rerun %1").arg(id));
  const bool quiet = p.isSet(q);
  std::string e;
  auto res = rerunStoredRun(
      s, threads,
      [&](double f, const std::string& st) {
        if (!quiet) bar.update(f, QString::fromStdString(st));
        return true;
      },
      &e);
  bar.finish();
  if (!res) return fail(QString::fromStdString(e));
  if (p.isSet(saveOpt)) {
    std::vector<std::string> ids;
    if (!appendRunsToFile(p.value(saveOpt), {res->fresh}, true, &ids)) return 2;
  }
  const bool same = res->differences.empty();
  if (p.isSet(js))
    out(toJsonText(toQJson(rerunResultJson(file.toStdString(), id.toStdString(), s, *res))) + "\n");
  else
    out(rerunReportText(s, *res));
  return same ? 0 : 1;
}

const CommandRegistrar regRun({QStringLiteral("run"),
                               QStringLiteral("Run an experiment config (GEMM or training) into a session file"),
                               runRun, 60});
const CommandRegistrar regSweep({QStringLiteral("sweep"),
                                 QStringLiteral("Grid of GEMM runs: formats x scalings x distributions (--shard i/n)"),
                                 runSweep, 61});
const CommandRegistrar regRerun({QStringLiteral("rerun"),
                                 QStringLiteral("Re-run a stored run and check it reproduces bit for bit"), runRerun,
                                 62});

} // namespace
} // namespace fp8lab::cli

// fp8lab-cli run | sweep | rerun | train — experiments from JSON configs into session files
// (cmd_run.h). The experiments, their checks, the saving and the results are core/experiment's;
// here are the options, the terminal (progress bars, stderr lines), signals and exit codes.
#include "cmd_run.h"

#include "backend_choice.h"
#include "cli_util.h"
#include "command.h"

#include "experiment/gemm_experiment_object.h"
#include "experiment/run_results.h"
#include "experiment/sweep_file.h"
#include "experiment/training_file.h"
#include "experiment/training_report.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include <cstdio>
#include <memory>
#include <unistd.h>

namespace fp8lab::cli {
namespace {

void err(const std::string& s) {
  std::fprintf(stderr, "%s\n", s.c_str());
}
QString qs(const std::string& s) {
  return QString::fromStdString(s);
}
void printJson(const Json& j) {
  out(toJsonText(toQJson(j)) + "\n");
}

/// recordBackend (backend/backend_record.h) with `b`, as core's record_backend hooks take it.
auto recorder(FallbackGemmBackend& b) {
  return [&b](Run& run, const GemmOptions& gemm, const std::string& note) { recordBackend(run, b, gemm, note); };
}

/// The progress bar of the piece of work in progress, ended before any line on stderr (lines with
/// `detail` are dropped when `hide_detail`). Progress without a bar starts one labelled `idle`.
struct Bar {
  Bar(bool hide_progress, bool hide_detail, std::string idle = {})
      : hide_progress(hide_progress), hide_detail(hide_detail), idle(std::move(idle)) {}
  bool hide_progress, hide_detail;
  std::string idle;
  std::unique_ptr<TerminalProgress> bar;
  void start(const std::string& label) { bar = std::make_unique<TerminalProgress>(qs(label)); }
  bool update(double f, const std::string& stage) {
    if (!bar) start(idle);
    if (!hide_progress) bar->update(f, qs(stage));
    return !interrupted(); // InterruptGuard: stop at the next check point
  }
  void line(const std::string& s, bool detail) {
    if (bar) bar->finish();
    if (!detail || !hide_detail) err(s);
  }
};

/// How the commands here save: `compress`, a taken run id renamed (-2, -3, ...), the session
/// lock policy of the process.
WriteOptions writeOptions(bool compress) {
  WriteOptions wo;
  wo.compress = compress;
  wo.on_conflict = WriteOptions::OnConflict::Rename;
  wo.lock = sessionLockWait();
  return wo;
}

} // namespace

bool appendRunsToFile(const QString& out, const std::vector<Run>& runs, bool compress, std::vector<std::string>* ids) {
  WriteOptions wo = writeOptions(compress);
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
  QFile f(QStringLiteral(":/fp8lab/experiments/default.json")); // the embedded default (a Qt resource)
  if (path.isEmpty() && !f.exists()) f.setFileName(QStringLiteral(":/experiments/default.json"));
  c->origin = path.isEmpty() ? f.fileName() : path;
  if (!path.isEmpty()) // a regular file of at most 64 MiB: never a FIFO (blocks) or /dev/zero (endless)
    bytes = readInputFile(path, InputKind::Config, QStringLiteral("config"), kMaxConfigBytes, &e);
  else if (!f.exists())
    e = QStringLiteral("no CONFIG.json given and this build has no embedded default experiment");
  else if (!f.open(QIODevice::ReadOnly))
    e = QStringLiteral("cannot read config '%1': %2").arg(c->origin, f.errorString());
  else
    bytes = f.readAll();
  std::string why;
  if (bytes) c->text = bytes->toStdString();
  auto doc = bytes ? parseConfigText(c->text, c->origin.toStdString(), &why) : std::nullopt;
  if (doc) c->doc = std::move(*doc);
  return doc || fail(bytes ? qs(why) : e) == 0;
}

namespace {

/// A command-line option: `names` comma-separated ("o,out"), `value` the value's name ("" for a
/// flag), `def` its default ("" for none).
QCommandLineOption cliOption(const char* names, const char* help, const char* value = "", const char* def = "") {
  return QCommandLineOption(QString::fromUtf8(names).split(QLatin1Char(',')), QString::fromUtf8(help),
                            QString::fromUtf8(value), QString::fromUtf8(def));
}

/// Options `run` and `sweep` share (`rerun` the last three), in this order.
struct SharedOptions {
  QCommandLineOption o = cliOption("o,out", "Session file to write (created or appended to).", "FILE.h5"),
                     nc = cliOption("no-compress", "Store datasets uncompressed (faster, larger)."),
                     be = backendOption(),
                     th =
                         cliOption("threads", "Worker threads (0 = all cores; results do not depend on it).", "N", "0"),
                     js = cliOption("json", "Machine-readable JSON output."),
                     q = cliOption("q,quiet", "No progress output.");
};

/// A training experiment of `run` or `train`.
struct TrainingCliOptions {
  TrainingOverrides over;
  bool json = false, quiet = false, compress = true;
  bool print_session_line = true;         ///< end with "session written: FILE" (run prints its own)
  FallbackGemmBackend* backend = nullptr; ///< null = the CPU reference
  QJsonArray* json_out = nullptr;         ///< several experiments: the JSON summary goes here
};

/// Runs the training experiment `config` (at `at` in `doc`) into `out_file` (training_file.h);
/// the exit code: 0, 2 (bad config, missing data, unwritable output), 128+signal.
int runTraining(const Json& config, const ConfigPath& at, const JsonDocument* doc, const QString& out_file,
                const TrainingCliOptions& opt) {
  std::string e;
  auto spec = trainingExperimentToRun(config, at, doc, opt.over, &e);
  if (!spec) return fail(qs(e));
  // Fail early on an output that cannot be saved, before minutes of training.
  if (!outputWritableOrFail(out_file)) return 2;
  InterruptGuard interrupt_guard; // SIGINT / SIGTERM / SIGHUP: stop after the step, save, exit 128+sig
  const std::string path = out_file.toStdString();
  Bar bar{false, opt.quiet || opt.json, "GEMM on trained weights"};
  TrainingFileHooks h;
  h.line = [&](const std::string& s, bool detail) { bar.line(s, detail); };
  h.started = [&](const std::string& label) { bar.start(label); };
  h.progress = [&](double f, const std::string& stage) { return bar.update(f, stage); };
  h.ended = [&] { bar.bar.reset(); };
  h.loss_note = [](const std::string& n) { setInterruptLossNote(QString::fromStdString(n)); };
  if (opt.backend) h.record_backend = recorder(*opt.backend);
  const TrainingFileResult res =
      runTrainingIntoFile(*spec, path, writeOptions(opt.compress), opt.backend, opt.over.threads, h);
  bar.bar.reset();
  using S = TrainingExperimentOutcome::Status;
  if (res.outcome.status == S::Failed) return fail(qs(res.outcome.error));
  // Cancelled, or a signal that arrived after the last piece of work: everything is saved.
  const bool stopped = res.outcome.status == S::Cancelled || interrupted();
  if (opt.json) emitJson(opt.json_out, toQJson(trainingSummaryJson(path, stopped, res.runs)).toObject());
  if (stopped) {
    err("fp8lab-cli: " + trainingInterruptText(res.outcome, path));
    return interruptedExitCode();
  }
  if (!opt.json && !opt.quiet && opt.print_session_line)
    err("session written: " + QFileInfo(out_file).absoluteFilePath().toStdString());
  return 0;
}

int runRun(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Runs the experiment(s) of CONFIG.json and appends the runs to a session file.\n"
      "CONFIG holds one experiment object ({\"type\": \"gemm\" | \"training\", ...}) or {\"experiments\": [...]};\n"
      "without CONFIG the embedded default experiment runs. Schema: docs/session-format.md."));
  p.addPositionalArgument(QStringLiteral("CONFIG.json"), QStringLiteral("Experiment config (optional)."));
  const auto& [o, nc, be, th, js, q] = SharedOptions{};
  const auto idOpt = cliOption("id", "Run id (single-run configs).", "ID"),
             dataOpt = cliOption("data-dir", "Fashion-MNIST directory (training).", "DIR");
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
  // Every experiment is checked first, so a typo in the last one does not waste the first ones.
  const auto exps = experimentsToRun(c.doc, c.text, !runId.isEmpty(), &e);
  if (exps.empty()) return fail(qs(e));
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
  // Several experiments: GEMM runs are saved in batches (experiment_batch.h), one rewrite each.
  RunBatch batch([&](const std::vector<Run>& runs,
                     std::vector<std::string>* ids) { return appendRunsToFile(outFile, runs, compress, ids); },
                 [](const std::string& note) { setInterruptLossNote(qs(note)); }, outFile.toStdString(),
                 exps.size() == 1);
  auto runGemm = [&](const ExperimentObject& ex) -> int {
    Bar bar{quiet, quiet};
    GemmObjectHooks h;
    h.config_note = [](const std::string& n) { err("fp8lab-cli: note: " + n); };
    h.line = [&](const std::string& s, bool detail) { bar.line(s, detail); };
    h.started = [&](const std::string& id) { bar.start("gemm " + id); };
    h.progress = [&](double f, const std::string& s) { return bar.update(f, s); };
    h.record_backend = recorder(*backend);
    h.report = [&](const Run& run, const std::string& stored, const GemmExperimentConfig& cfg) {
      if (!json) return out(gemmRunReportText(run, stored, cfg, outFile.toStdString()));
      QJsonObject j = toQJson(gemmRunResultJson(run, outFile.toStdString(), stored)).toObject();
      addBackendJson(j, *backend, run.backend, cfg.gemm, attrString(run.attrs, "backend_note").value_or(""));
      emitJson(json_out, j);
    };
    const GemmObjectResult g = runGemmExperimentObject(ex, &c.doc, runId.toStdString(), threads, *backend, batch, h);
    bar.bar.reset();
    using G = GemmObjectResult::Status;
    if (g.status == G::ConfigError || g.status == G::Failed) fail(qs(g.error));
    if ((g.status == G::Failed || g.status == G::Cancelled) && interrupted()) {
      err("fp8lab-cli: " + gemmInterruptText(interruptName().toStdString(), g.id, outFile.toStdString()));
      return interruptedExitCode();
    }
    return g.status == G::Done ? 0 : 2;
  };
  ExperimentListHooks hooks;
  hooks.saves_itself = [&](size_t i) { return experimentTypeOf(*exps[i].obj) != "gemm"; };
  hooks.interrupted = [] { return interrupted(); };
  hooks.experiment_done = [&](size_t i, size_t n, bool pending) {
    // GEMM results are printed when their batch is saved; this line says the work goes on.
    if (n > 1 && !quiet && !json) err(experimentDoneLine(i, n, pending));
  };
  hooks.run = [&](size_t i, RunBatch&) {
    const std::string type = experimentTypeOf(*exps[i].obj);
    if (type == "gemm") return runGemm(exps[i]);
    if (type != "training") return fail(qs(notRunnableText(type)));
    const TrainingOverrides over{p.value(dataOpt).toStdString(), threads, runId.toStdString(), ""};
    return runTraining(*exps[i].obj, exps[i].at, &c.doc, outFile,
                       {over, json, quiet, compress, false, backend.get(), json_out});
  };
  const ExperimentListOutcome res = runExperimentList(exps.size(), batch, hooks);
  using S = ExperimentListOutcome::Status;
  if (res.status == S::SaveFailed || res.status == S::Failed)
    return finish(res.status == S::Failed ? res.exit_code : 2);
  if (res.status == S::Interrupted) {
    err("fp8lab-cli: " + experimentListInterruptText(interruptName().toStdString(), outFile.toStdString()));
    return finish(interruptedExitCode());
  }
  if (!json && !quiet) err("session written: " + QFileInfo(outFile).absoluteFilePath().toStdString());
  return finish(0);
}

int runSweep(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(
      QStringLiteral("Runs a grid of GEMM experiments: formats x scalings x distributions x seeds, one run each.\n"
                     "CONFIG.json is a GEMM config with a \"sweep\" object, e.g.\n") +
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

int runRerun(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Re-runs a stored run from its configuration and seed on the CPU backend and compares every\n"
      "dataset and metric bit for bit with the stored one. Exit 0: identical; 1: differences (listed).\n"
      "Always the CPU reference backend: the bit-for-bit promise is for the CPU; a run stored from the GPU\n"
      "(backend \"cuda\") is compared with the CPU model, and the differences are listed."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  p.addPositionalArgument(QStringLiteral("RUN_ID"), QStringLiteral("Run to reproduce."));
  [[maybe_unused]] const auto& [o_, nc_, be_, th, js, q] = SharedOptions{};
  const auto saveOpt = cliOption("out", "Also save the new run into this session file.", "FILE.h5"),
             be = cliOption("backend", "Only cpu: rerun reproduces on the CPU reference backend.", "cpu", "cpu");
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
  Bar bar(p.isSet(q), p.isSet(q));
  bar.start("rerun " + id.toStdString());
  std::string e;
  const auto res = rerunStoredRun(
      s, threads, [&](double f, const std::string& st) { return bar.update(f, st); }, &e);
  bar.bar.reset();
  if (!res) return fail(QString::fromStdString(e));
  std::vector<std::string> ids;
  if (p.isSet(saveOpt) && !appendRunsToFile(p.value(saveOpt), {res->fresh}, true, &ids)) return 2;
  if (p.isSet(js))
    printJson(rerunResultJson(file.toStdString(), id.toStdString(), s, *res));
  else
    out(rerunReportText(s, *res));
  return res->differences.empty() ? 0 : 1;
}

int runTrain(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Trains the FP8 MLP on Fashion-MNIST as described by CONFIG.json (a training run or an experiment with "
      "\"runs\", e.g. resources/experiments/default.json) and writes every run into the session FILE.h5 "
      "(appended to when it exists). Ctrl-C stops after the current step, saves the session so far and exits 130."));
  p.addPositionalArgument(QStringLiteral("CONFIG.json"), QStringLiteral("Training experiment configuration."));
  const auto outOpt = cliOption("o,out", "Session file to write.", "FILE.h5"),
             dataOpt = cliOption("data-dir",
                                 "Fashion-MNIST directory (default: $FP8LAB_FASHION_MNIST_DIR, then "
                                 "/usr/share/datasets/fashion-mnist from the dataset-fashion-mnist package).",
                                 "DIR"),
             runOpt = cliOption("run", "Run only the run with this id.", "ID"),
             jsonOpt = cliOption("json", "Print a JSON summary on stdout."),
             quietOpt = cliOption("q,quiet", "No per-epoch lines."), be = backendOption();
  p.addOptions({outOpt, dataOpt, runOpt, be, jsonOpt, quietOpt});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() != 1)
    return fail(QStringLiteral("train needs exactly one CONFIG.json (see --help)"));
  if (!p.isSet(outOpt)) return fail(QStringLiteral("--out FILE.h5 is required"));
  LoadedConfig c; // the same reading as `run`: size limit, line and column, duplicate keys refused
  if (!loadConfig(p.positionalArguments().first(), &c)) return 2;
  if (!isTrainingConfig(c.doc.root()))
    return fail(QStringLiteral("%1 is not a training config (\"type\": \"training\")").arg(c.origin));
  TrainingCliOptions o{
      {p.value(dataOpt).toStdString(), 0, "", p.value(runOpt).toStdString()}, p.isSet(jsonOpt), p.isSet(quietOpt)};
  const auto backend = makeChosenBackend(p.value(be), o.quiet);
  if (!backend) return 2;
  o.backend = backend.get();
  return runTraining(c.doc.root(), {}, &c.doc, p.value(outOpt), o);
}

const CommandRegistrar regs[] = {
    CommandRegistrar({QStringLiteral("run"),
                      QStringLiteral("Run an experiment config (GEMM or training) into a session file"), runRun, 60}),
    CommandRegistrar({QStringLiteral("sweep"),
                      QStringLiteral("Grid of GEMM runs: formats x scalings x distributions (--shard i/n)"), runSweep,
                      61}),
    CommandRegistrar({QStringLiteral("rerun"),
                      QStringLiteral("Re-run a stored run and check it reproduces bit for bit"), runRerun, 62}),
    CommandRegistrar({QStringLiteral("train"), QStringLiteral("Train the FP8 MLP on Fashion-MNIST (a training config)"),
                      runTrain, 40})};

} // namespace
} // namespace fp8lab::cli

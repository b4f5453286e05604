// fp8lab-cli run | sweep | rerun — experiments from JSON configs into session files (cmd_run.h).
#include "cmd_run.h"

#include "cli_util.h"
#include "command.h"

#include "experiment/experiment_registry.h"
#include "experiment/gemm_config.h"
#include "experiment/gemm_run.h"
#include "experiment/sweep.h"
#include "formats/format.h"
#include "gemm/gemm.h"
#include "scaling/scaling.h"

#include <QCommandLineParser>
#include <QFile>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <unistd.h>

namespace fp8lab::cli {

std::vector<ExperimentType>& experimentTypes() {
  static std::vector<ExperimentType> t;
  return t;
}

ExperimentTypeRegistrar::ExperimentTypeRegistrar(ExperimentType t) {
  experimentTypes().push_back(std::move(t));
}

namespace {

void err(const QString& s) {
  std::fprintf(stderr, "%s\n", s.toUtf8().constData());
}

QString num(double v) {
  if (std::isnan(v)) return QStringLiteral("nan");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  return QString::fromLatin1(buf, static_cast<qsizetype>(r.ptr - buf));
}

const ExperimentType* findType(const QString& type) {
  for (const auto& t : experimentTypes())
    if (t.type == type) return &t;
  return nullptr;
}

} // namespace

bool appendRunsToFile(const QString& out, const std::vector<Run>& runs, bool compress, std::vector<std::string>* ids) {
  WriteOptions wo;
  wo.compress = compress;
  wo.on_conflict = WriteOptions::OnConflict::Rename;
  wo.lock = sessionLockWait();
  TerminalProgress bar(QStringLiteral("saving"));
  wo.progress = [&](double f, const std::string& s) {
    bar.update(f, QString::fromStdString(s));
    return true;
  };
  Status st = appendRuns(out.toStdString(), runs, wo, ids);
  bar.finish();
  for (const auto& i : st.issues)
    if (i.severity != Severity::Error) err(QString::fromStdString(i.toString()));
  if (!st.ok()) {
    fail(QString::fromStdString(st.errors()));
    return false;
  }
  return true;
}

namespace {

// ---- the "gemm" experiment type -------------------------------------------------------------

/// Runs one GEMM config into a Run (progress on the terminal); nullopt after printing the error.
/// `backend` null = the CPU reference backend. A fallback of --backend auto to the CPU is noted
/// on stderr (unless quiet) and recorded in the run (recordBackend).
/// `text` (the object as given) is stored as the run's config.
std::optional<Run> gemmRun(const GemmExperimentConfig& cfg, const std::string& text, const QString& id, int threads,
                           bool quiet, FallbackGemmBackend* chosen = nullptr) {
  GemmExperimentConfig c = cfg;
  c.gemm.threads = threads;
  std::unique_ptr<FallbackGemmBackend> own;
  if (!chosen) {
    own = makeGemmBackend(BackendRequest::Cpu);
    chosen = own.get();
  }
  FallbackGemmBackend* backend = chosen;
  TerminalProgress bar(QStringLiteral("gemm %1").arg(id));
  ProgressFn p = [&](double f, const std::string& s) {
    if (!quiet) bar.update(f, QString::fromStdString(s));
    return !interrupted(); // InterruptGuard: stop at the next check point
  };
  Result<Run> r;
  try {
    r = runGemmExperimentRun(c, text, id.toStdString(), *backend, p);
  } catch (const Cancelled&) {
    bar.finish();
    return std::nullopt; // the caller reports the interrupt (interrupted() is set)
  }
  bar.finish();
  for (const auto& i : r.issues)
    if (i.severity != Severity::Error) err(QString::fromStdString(i.toString()));
  if (!r.ok()) {
    fail(QString::fromStdString(r.errors()));
    return std::nullopt;
  }
  const std::string fallback = backend->lastFallback();
  if (!fallback.empty() && !quiet)
    err(QStringLiteral("note: run %1: --backend %2").arg(id, QString::fromStdString(fallback)));
  recordBackend(r.value, *backend, c.gemm, !fallback.empty() ? fallback : backend->noGpuReason());
  return std::move(r.value);
}

QJsonObject metricsJson(const Run& r) {
  QJsonObject m;
  for (const auto& [k, v] : r.metrics) m.insert(QString::fromStdString(k), jsonNumber(v.value));
  return m;
}

void reportGemmRun(const Run& r, const QString& stored, const GemmExperimentConfig& cfg, const RunCliOptions& opt);

void printNotes(const ConfigReader& r) {
  for (const auto& n : r.notes()) err(QStringLiteral("fp8lab-cli: note: %1").arg(QString::fromStdString(n)));
}

int runGemmType(const Json& o, const std::string& text, const ConfigPath& at, const RunCliOptions& opt) {
  GemmExperimentConfig cfg;
  ConfigReader r(opt.doc);
  if (!parseGemmConfig(o, &cfg, r, at))
    return fail(QStringLiteral("config: %1").arg(QString::fromStdString(r.error())));
  printNotes(r);
  if (o.contains("sweep"))
    err(QStringLiteral(
        "note: the config has a \"sweep\" object; `run` does one GEMM, `fp8lab-cli sweep` runs the grid"));
  QString id = !opt.run_id.isEmpty()
                   ? opt.run_id
                   : QString::fromStdString(o.contains("name") && o["name"].is_string() ? o["name"].get<std::string>()
                                                                                        : std::string());
  if (id.isEmpty()) id = QString::fromStdString(defaultGemmRunId(cfg));
  std::string why;
  if (!isValidRunId(id.toStdString(), &why)) return fail(QString::fromStdString(why));
  auto run = gemmRun(cfg, text, id, opt.threads, opt.quiet, opt.backend);
  if (!run && interrupted()) {
    std::fprintf(stderr,
                 "fp8lab-cli: interrupted by %s: GEMM run '%s' stopped before it finished and was not saved "
                 "(%s keeps what it held, with any runs finished before)\n",
                 interruptName().toUtf8().constData(), id.toUtf8().constData(), opt.out.toUtf8().constData());
    return interruptedExitCode();
  }
  if (!run) return 2;
  auto report = [cfg, opt](const Run& r, const QString& stored) { reportGemmRun(r, stored, cfg, opt); };
  if (opt.batch) {
    opt.batch->push_back({std::move(*run), report});
    return 0;
  }
  std::vector<std::string> ids;
  // A signal during the save does not stop it (the run is finished; saving takes seconds): the
  // command ends after it. Only a third signal ends the process at once (InterruptGuard).
  setInterruptLossNote(QStringLiteral("the save of run '%1' in progress (%2 keeps what it held before; saves are "
                                      "atomic)")
                           .arg(id, opt.out));
  if (!appendRunsToFile(opt.out, {*run}, opt.compress, &ids)) return 2;
  report(*run, QString::fromStdString(ids.empty() ? run->id : ids[0]));
  return 0;
}

/// Prints what `run` reports for a saved GEMM run (JSON object or two text lines).
void reportGemmRun(const Run& r, const QString& stored, const GemmExperimentConfig& cfg, const RunCliOptions& opt) {
  const Run* run = &r;
  if (opt.json) {
    QJsonObject j{
        {QStringLiteral("file"), opt.out},
        {QStringLiteral("run"), stored},
        {QStringLiteral("type"), QStringLiteral("gemm")},
        {QStringLiteral("backend"), QString::fromStdString(run->backend)},
        {QStringLiteral("device"), QString::fromStdString(run->device)},
        {QStringLiteral("algorithm"), QString::fromStdString(attrString(run->attrs, "algorithm").value_or(""))},
        {QStringLiteral("metrics"), metricsJson(*run)}};
    if (opt.backend)
      addBackendJson(j, *opt.backend, run->backend, cfg.gemm, attrString(run->attrs, "backend_note").value_or(""));
    // The run's warnings as stored with it (run attribute "warnings", a JSON array).
    const QJsonDocument wd =
        QJsonDocument::fromJson(QByteArray::fromStdString(attrString(run->attrs, "warnings").value_or("[]")));
    j[QStringLiteral("warnings")] = wd.isArray() ? wd.array() : QJsonArray();
    if (const auto v =
            attrString(run->group_attrs.count("check") ? run->group_attrs.at("check") : Attributes{}, "verdict"))
      j[QStringLiteral("check")] = QString::fromStdString(*v);
    emitJson(opt.json_out, j);
  } else {
    auto met = [&](const char* k) {
      return run->metrics.count(k) ? num(run->metrics.at(k).value) : QStringLiteral("-");
    };
    out(QStringLiteral("run %1 (gemm %2x%3x%4, %5 x %6, %7, %8 backend: %15) -> %9\n"
                       "  SQNR %10 dB  rel_fro %11  max_abs %12  (quantization %13 dB, accumulation %14 dB)\n")
            .arg(stored)
            // the shape that ran (tensor operands bring their own; the config's m/k/n are defaults)
            .arg(attrInt(run->attrs, "m").value_or(cfg.m))
            .arg(attrInt(run->attrs, "k").value_or(cfg.k))
            .arg(attrInt(run->attrs, "n").value_or(cfg.n))
            .arg(QString::fromStdString(attrString(run->attrs, "format_a").value_or(cfg.format_a)),
                 QString::fromStdString(attrString(run->attrs, "format_b").value_or(cfg.format_b)),
                 QString::fromStdString(attrString(run->attrs, "scaling").value_or(cfg.scaling)),
                 QString::fromStdString(run->backend), opt.out)
            .arg(met("sqnr_db"), met("rel_fro"), met("max_abs"), met("quant_sqnr_db"), met("accum_sqnr_db"))
            .arg(QString::fromStdString(run->device)));
  }
}

const ExperimentTypeRegistrar gemmType({QStringLiteral("gemm"), runGemmType});

// ---- config files ---------------------------------------------------------------------------

} // namespace

bool loadConfig(const QString& path, LoadedConfig* c) {
  QFile f(path);
  if (path.isEmpty()) {
    for (const QString& res :
         {QStringLiteral(":/fp8lab/experiments/default.json"), QStringLiteral(":/experiments/default.json")}) {
      f.setFileName(res);
      if (f.exists()) break;
    }
    if (!f.exists()) {
      fail(QStringLiteral("no CONFIG.json given and this build has no embedded default experiment"));
      return false;
    }
  }
  QByteArray bytes;
  if (path.isEmpty()) { // the embedded default (a Qt resource)
    if (!f.open(QIODevice::ReadOnly)) {
      fail(QStringLiteral("cannot read config '%1': %2").arg(f.fileName(), f.errorString()));
      return false;
    }
    bytes = f.readAll();
  } else { // a regular file of at most 64 MiB: never a FIFO (blocks) or /dev/zero (endless)
    QString e;
    const auto b = readInputFile(path, InputKind::Config, QStringLiteral("config"), kMaxConfigBytes, &e);
    if (!b) {
      fail(e);
      return false;
    }
    bytes = *b;
  }
  c->text = bytes.toStdString();
  try {
    c->doc = JsonDocument::parse(c->text);
  } catch (const JsonTextError& e) {
    if (e.kind == JsonTextError::Kind::DuplicateKey)
      fail(QStringLiteral("config '%1': %2; JSON readers disagree on which one counts, so remove one")
               .arg(f.fileName(), QString::fromStdString(e.what())));
    else
      fail(QStringLiteral("config '%1' is not valid JSON: %2 at line %3, column %4")
               .arg(f.fileName(), QString::fromStdString(e.what()))
               .arg(e.pos.line)
               .arg(e.pos.column));
    return false;
  }
  if (!c->doc.root().is_object()) {
    fail(QStringLiteral("config '%1': expected a JSON object at the top").arg(f.fileName()));
    return false;
  }
  c->origin = f.fileName();
  return true;
}

namespace {

// ---- run ------------------------------------------------------------------------------------

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
  RunCliOptions opt;
  opt.out = p.value(o);
  if (opt.out.isEmpty()) return fail(QStringLiteral("--out FILE.h5 is required"));
  opt.run_id = p.value(idOpt);
  opt.json = p.isSet(js);
  opt.quiet = p.isSet(q);
  opt.compress = !p.isSet(nc);
  opt.data_dir = p.value(dataOpt);
  opt.threads = parseThreads(p.value(th));
  if (opt.threads < 0) return 2;
  // Refuse an output that cannot be written before computing anything.
  if (!outputWritableOrFail(opt.out)) return 2;
  if (!parseBackendRequest(p.value(be)))
    return fail(QStringLiteral("--backend must be auto, cpu or gpu (got '%1')").arg(p.value(be)));
  LoadedConfig c;
  if (!loadConfig(p.positionalArguments().value(0), &c)) return 2;
  std::string e;
  auto exps = experimentObjects(c.doc, c.text, &e);
  if (exps.empty()) return fail(QStringLiteral("config: %1").arg(QString::fromStdString(e)));
  if (exps.size() > 1 && !opt.run_id.isEmpty())
    return fail(QStringLiteral("--id needs a config with a single experiment"));
  // Check every experiment first (type, then its schema), so a typo in the last experiment does
  // not waste the first ones; errors name the experiment ("experiments[1]: k: ...").
  for (size_t i = 0; i < exps.size(); ++i) {
    const Json& obj = *exps[i].obj;
    const QString where = exps.size() > 1 ? QStringLiteral("experiments[%1]").arg(i) : QStringLiteral("config");
    const QString t = QString::fromStdString(experimentTypeOf(obj)),
                  names = QString::fromStdString(experimentKindNames());
    const ExperimentKind* kind = findExperimentKind(t.toStdString());
    if (!kind || !findType(t))
      return fail(t.isEmpty()
                      ? QStringLiteral("%1: missing \"type\" (one of: %2)").arg(where, names)
                      : QStringLiteral("%1: unknown experiment type '%2' (this build knows: %3)").arg(where, t, names));
    std::string why;
    if (kind->validate && !kind->validate(obj, exps[i].at, &c.doc, &why))
      return fail(QStringLiteral("%1: %2").arg(where, QString::fromStdString(why)));
  }
  const auto backend = makeChosenBackend(p.value(be), opt.quiet);
  if (!backend) return 2;
  opt.backend = backend.get();
  opt.doc = &c.doc;
  // --json with several experiments: one JSON document (an array, one object per experiment in
  // config order), printed however the command ends.
  QJsonArray json_docs;
  if (opt.json && exps.size() > 1) opt.json_out = &json_docs;
  auto finish = [&](int code) {
    if (opt.json_out) out(toJsonText(json_docs) + "\n");
    return code;
  };
  InterruptGuard interrupt_guard; // Ctrl-C / SIGTERM / SIGHUP: finish the save in progress, then stop
  // Several experiments: GEMM runs are saved in batches (RunCliOptions::batch), one rewrite each.
  std::vector<RunCliOptions::PendingRun> batch;
  if (exps.size() > 1) opt.batch = &batch;
  auto noteLoss = [&]() {
    setInterruptLossNote(
        batch.empty()
            ? QStringLiteral("the experiment in progress; %1 holds the runs finished before it").arg(opt.out)
            : QStringLiteral("%1 finished run(s) not yet saved and the experiment in progress; %2 keeps what it "
                             "held")
                  .arg(batch.size())
                  .arg(opt.out));
  };
  noteLoss();
  auto flush = [&]() {
    if (batch.empty()) return true;
    std::vector<Run> runs;
    for (auto& b : batch) runs.push_back(std::move(b.run));
    std::vector<std::string> ids;
    setInterruptLossNote(QStringLiteral("the save of %1 finished run(s) in progress (%2 keeps what it held before; "
                                        "saves are atomic)")
                             .arg(runs.size())
                             .arg(opt.out));
    const bool saved = appendRunsToFile(opt.out, runs, opt.compress, &ids);
    if (saved)
      for (size_t i = 0; i < runs.size(); ++i)
        batch[i].report(runs[i], QString::fromStdString(i < ids.size() ? ids[i] : runs[i].id));
    batch.clear();
    noteLoss();
    return saved;
  };
  auto batch_since = std::chrono::steady_clock::now();
  auto batchBytes = [&]() {
    int64_t n = 0;
    for (const auto& b : batch)
      for (const auto& [k, d] : b.run.datasets) n += d.storedCount() * int64_t(d.elementBytes());
    return n;
  };
  for (size_t i = 0; i < exps.size(); ++i) {
    const ExperimentObject& ex = exps[i];
    const ExperimentType* type = findType(QString::fromStdString(experimentTypeOf(*ex.obj)));
    // A training experiment saves into the file itself: save what is pending first.
    if (type->type != QStringLiteral("gemm") && !flush()) return finish(2);
    const int r = type->run(*ex.obj, ex.text, ex.at, opt);
    noteLoss();
    if (r != 0) {
      // Keep the finished runs: save the batch, then report the failure's exit status.
      if (!flush()) return finish(2);
      return finish(r);
    }
    // GEMM results are printed when their batch is saved; this line says the work goes on.
    if (exps.size() > 1 && !opt.quiet && !opt.json)
      err(QStringLiteral("run: experiment %1/%2 done%3")
              .arg(i + 1)
              .arg(exps.size())
              .arg(batch.empty() ? QString() : QStringLiteral(" (its run is saved with the next batch)")));
    // A batch is saved at least every 30 s, so a kill -9 or a crash loses at most that much work
    // (an append costs a file copy plus the new runs).
    if (batch.empty())
      batch_since = std::chrono::steady_clock::now();
    else if (std::chrono::steady_clock::now() - batch_since > std::chrono::seconds(30) && !flush())
      return finish(2);
    if (batchBytes() > (int64_t(256) << 20) && !flush()) return finish(2);
    if (interrupted()) {
      if (!flush()) return finish(2);
      std::fprintf(stderr, "fp8lab-cli: interrupted by %s; the finished runs are saved in %s\n",
                   interruptName().toUtf8().constData(), opt.out.toUtf8().constData());
      return finish(interruptedExitCode());
    }
  }
  if (!flush()) return finish(2);
  if (interrupted()) { // arrived during the last experiment's end or the final save: all is saved
    std::fprintf(stderr, "fp8lab-cli: interrupted by %s; the finished runs are saved in %s\n",
                 interruptName().toUtf8().constData(), opt.out.toUtf8().constData());
    return finish(interruptedExitCode());
  }
  if (!opt.json && !opt.quiet) err(QStringLiteral("session written: %1").arg(QFileInfo(opt.out).absoluteFilePath()));
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
  if (p.isSet(seedOpt)) {
    std::string e;
    over.seeds = parseSeedList(p.value(seedOpt).toStdString(), &e);
    if (!over.seeds) return fail(QStringLiteral("--seeds: %1").arg(QString::fromStdString(e)));
  }
  SweepSpec spec;
  const std::string spec_error = parseSweepSpec(c.doc.root(), over, &spec, &c.doc);
  for (const auto& n : spec.notes) err(QStringLiteral("fp8lab-cli: note: %1").arg(QString::fromStdString(n)));
  if (!spec_error.empty()) return fail(QString::fromStdString(spec_error));
  std::vector<SweepPoint> all;
  if (const std::string e = expandSweep(spec, &all); !e.empty()) return fail(QString::fromStdString(e));
  const int g = static_cast<int>(all.size());
  std::vector<SweepPoint> grid = sweepShard(all, shard, shards);
  const bool json = p.isSet(js), quiet = p.isSet(q);
  if (!parseBackendRequest(p.value(be)))
    return fail(QStringLiteral("--backend must be auto, cpu or gpu (got '%1')").arg(p.value(be)));
  if (p.isSet(dryOpt)) {
    for (const auto& pt : grid) out(QStringLiteral("%1 %2\n").arg(pt.index).arg(QString::fromStdString(pt.id)));
    return 0;
  }
  // Resume: the grid points already in the file with the same configuration are skipped and
  // reported (removeStoredPoints).
  QStringList skipped;
  if (!p.isSet(recomputeOpt) && QFileInfo::exists(outPath)) {
    auto rd = SessionReader::open(outPath.toStdString());
    if (!rd.ok()) return fail(QString::fromStdString(rd.errors()));
    for (const std::string& id : removeStoredPoints(&grid, rd.value->info().runs))
      skipped << QString::fromStdString(id);
    if (!skipped.isEmpty() && !quiet)
      err(QStringLiteral("sweep: %1 grid point(s) already in %2 with the same configuration, skipped (--recompute "
                         "runs them again): %3")
              .arg(skipped.size())
              .arg(outPath, skipped.size() <= 12
                                ? skipped.join(QStringLiteral(", "))
                                : skipped.mid(0, 12).join(QStringLiteral(", ")) + QStringLiteral(", ...")));
  }
  if (grid.empty() && !skipped.isEmpty()) {
    if (json)
      out(toJsonText(QJsonObject{{QStringLiteral("file"), outPath},
                                 {QStringLiteral("shard"), shard},
                                 {QStringLiteral("shards"), shards},
                                 {QStringLiteral("grid_size"), g},
                                 {QStringLiteral("skipped"), QJsonArray::fromStringList(skipped)},
                                 {QStringLiteral("runs"), QJsonArray()}}) +
          "\n");
    else
      err(QStringLiteral("sweep: nothing to run: every grid point of this shard is already in %1 (file unchanged)")
              .arg(outPath));
    return 0;
  }
  const auto backend = makeChosenBackend(p.value(be), quiet);
  if (!backend) return 2;
  std::set<std::string> noted;  // each fallback reason once on stderr
  std::set<std::string> ran_on; // "backend (device)" of the runs
  if (!quiet)
    err(QStringLiteral("sweep: %1 of %2 grid points (shard %3/%4) -> %5")
            .arg(grid.size())
            .arg(g)
            .arg(shard)
            .arg(shards)
            .arg(outPath));

  InterruptGuard interrupt_guard; // Ctrl-C / SIGTERM / SIGHUP: save the finished points, then stop
  const bool stderr_tty = ::isatty(2) == 1;
  TerminalProgress bar(QStringLiteral("sweep"));
  size_t pending = 0; // finished points not yet saved
  QJsonArray rows;
  std::vector<SweepTableRow> table;
  auto noteLoss = [&]() {
    setInterruptLossNote(QStringLiteral("%1 finished grid point(s) not yet saved and the point in progress; %2 keeps "
                                        "what it held")
                             .arg(pending)
                             .arg(outPath));
  };
  noteLoss();
  SweepHooks hooks;
  hooks.progress = [&](double f, const std::string& stage) {
    if (!quiet) bar.update(f, QString::fromStdString(stage));
    return !interrupted(); // InterruptGuard: stop at the next check point
  };
  hooks.warning = [](const SweepPoint&, const Issue& w) { err(QString::fromStdString(w.toString())); };
  hooks.point_done = [&](const SweepPoint& pt, Run& run) {
    recordBackend(run, *backend, pt.config.gemm, backend->note());
    const QString id = QString::fromStdString(pt.id);
    if (!quiet) {
      const auto note = attrString(run.attrs, "backend_note");
      if (note && run.backend == "cpu" && backend->hasGpu() && noted.insert(*note).second)
        err(QStringLiteral("note: %1: --backend %2").arg(id, QString::fromStdString(*note)));
    }
    auto met = [&](const char* k) { return run.metrics.count(k) ? run.metrics.at(k).value : std::nan(""); };
    ran_on.insert(run.backend + " (" + run.device + ")");
    const QString fmt = QString::fromStdString(pt.format), scaling = QString::fromStdString(pt.scaling),
                  dist = QString::fromStdString(pt.distribution);
    table.push_back({pt.id, pt.format, pt.scaling, pt.distribution, met("sqnr_db"), met("rel_fro"),
                     met("a_saturated") + met("b_saturated")});
    rows.append(QJsonObject{
        {QStringLiteral("run"), id},
        {QStringLiteral("grid_index"), qint64(pt.index)},
        {QStringLiteral("format"), fmt},
        {QStringLiteral("scaling"), scaling},
        {QStringLiteral("distribution"), dist},
        {QStringLiteral("backend"), QString::fromStdString(run.backend)},
        {QStringLiteral("device"), QString::fromStdString(run.device)},
        {QStringLiteral("backend_note"), QString::fromStdString(attrString(run.attrs, "backend_note").value_or(""))},
        {QStringLiteral("metrics"), metricsJson(run)}});
    // Without a terminal (a log file, CI, Slurm) there is no progress bar: one line per point.
    if (!quiet && !stderr_tty)
      err(QStringLiteral("sweep: %1/%2 %3 done (SQNR %4 dB)")
              .arg(table.size())
              .arg(grid.size())
              .arg(id, num(met("sqnr_db"))));
    ++pending;
    noteLoss();
  };
  hooks.save = [&](const std::vector<Run>& runs, std::string* error) {
    std::vector<std::string> ids;
    setInterruptLossNote(QStringLiteral("the save of %1 finished grid point(s) in progress (%2 keeps what it held "
                                        "before; saves are atomic)")
                             .arg(runs.size())
                             .arg(outPath));
    WriteOptions wo;
    wo.compress = !p.isSet(nc);
    wo.on_conflict = WriteOptions::OnConflict::Rename;
    wo.lock = sessionLockWait();
    Status st = appendRuns(outPath.toStdString(), runs, wo, &ids);
    if (!st.ok()) {
      *error = st.errors();
      return false;
    }
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] != runs[i].id)
        err(QStringLiteral("note: run %1 stored as %2 (id taken)")
                .arg(QString::fromStdString(runs[i].id), QString::fromStdString(ids[i])));
    pending = 0;
    noteLoss();
    return true;
  };
  SweepRunOptions run_opt;
  run_opt.threads = threads;
  const SweepOutcome res = runSweep(grid, *backend, hooks, run_opt);
  const size_t n = grid.size();
  if (res.status != SweepOutcome::Status::Completed) {
    bar.finish();
    if (!res.error.empty()) fail(QString::fromStdString(res.error));
    if (!res.saved()) fail(QString::fromStdString(res.save_error));
    if (!interrupted()) return 2;
    const char* saved = res.saved() ? "saved" : "could not save";
    if (res.in_point) {
      std::fprintf(stderr,
                   "fp8lab-cli: interrupted by %s at grid point %zu of %zu (%s); %s the %zu finished point%s in %s\n",
                   interruptName().toUtf8().constData(), res.finished + 1, n, grid[res.finished].id.c_str(), saved,
                   res.finished, res.finished == 1 ? "" : "s", outPath.toUtf8().constData());
      return interruptedExitCode();
    }
    if (res.status == SweepOutcome::Status::Failed) return 2; // a batch save failed
    std::fprintf(stderr, "fp8lab-cli: interrupted by %s after grid point %zu of %zu; %s the finished points in %s\n",
                 interruptName().toUtf8().constData(), res.finished, n, saved, outPath.toUtf8().constData());
    return interruptedExitCode();
  }
  bar.finish();
  if (interrupted()) { // arrived after the last point's last check: everything is saved
    std::fprintf(stderr, "fp8lab-cli: interrupted by %s after the last grid point; all %zu points are saved in %s\n",
                 interruptName().toUtf8().constData(), n, outPath.toUtf8().constData());
    return interruptedExitCode();
  }
  if (json) {
    out(toJsonText(QJsonObject{{QStringLiteral("file"), outPath},
                               {QStringLiteral("shard"), shard},
                               {QStringLiteral("shards"), shards},
                               {QStringLiteral("backend_request"), QString::fromLatin1(toString(backend->request()))},
                               {QStringLiteral("grid_size"), g},
                               {QStringLiteral("skipped"), QJsonArray::fromStringList(skipped)},
                               {QStringLiteral("runs"), rows}}) +
        "\n");
    return 0;
  }
  out(sweepTableText(table, std::vector<std::string>(ran_on.begin(), ran_on.end())));
  err(QStringLiteral("session written: %1").arg(QFileInfo(outPath).absoluteFilePath()));
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
  if (p.isSet(js)) {
    QJsonArray d;
    for (const auto& x : res->differences) d.append(QString::fromStdString(x));
    out(toJsonText(QJsonObject{{QStringLiteral("file"), file},
                               {QStringLiteral("run"), id},
                               {QStringLiteral("type"), QString::fromStdString(s.type)},
                               {QStringLiteral("identical"), same},
                               {QStringLiteral("datasets_compared"), res->datasets},
                               {QStringLiteral("metrics_compared"), res->metrics},
                               {QStringLiteral("backend"), QStringLiteral("cpu")},
                               {QStringLiteral("differences"), d}}) +
        "\n");
  } else {
    out(rerunReportText(s, *res));
  }
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

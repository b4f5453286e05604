// fp8lab-cli run — experiment configs (JSON) into session runs (the work is core/experiment's; run_common.h
// holds what the experiment commands share on the terminal).
#include "run_common.h"

#include "command.h"

#include "experiment/gemm/gemm_experiment_object.h"
#include "experiment/run_results.h"
#include "experiment/training/training_report.h"

#include <QCommandLineParser>
#include <QFileInfo>

namespace fp8lab::cli {
namespace {

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
    const TrainingOverrides over{p.value(dataOpt).toStdString(), threads, runId.toStdString(), "", std::nullopt};
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

const CommandRegistrar reg({QStringLiteral("run"),
                            QStringLiteral("Run an experiment config (GEMM or training) into a session file"), runRun,
                            60});

} // namespace
} // namespace fp8lab::cli

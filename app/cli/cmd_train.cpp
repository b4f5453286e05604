// fp8lab-cli train CONFIG.json --out FILE.h5, and the training path of `run` (cmd_run.h): core's
// training runner (core/experiment/training_experiment.h, training_report.h) with a progress bar,
// per-epoch lines and each finished run appended to the session file as it ends.
#include "cli_util.h"
#include "cmd_run.h"
#include "command.h"
#include "experiment/training_file.h"
#include "experiment/training_report.h"

#include <QCommandLineParser>
#include <QFileInfo>

#include <cstdio>
#include <memory>

namespace fp8lab::cli {

int runTrainingCli(const Json& config, const ConfigPath& at, const JsonDocument* doc, const QString& out_file,
                   const TrainingCliOptions& opt) {
  std::string e;
  auto spec = parseTrainingExperiment(config, &e, doc, at);
  if (!spec) return fail(QStringLiteral("invalid training config: %1").arg(QString::fromStdString(e)));
  e = applyTrainingOverrides(
      *spec, {opt.data_dir.toStdString(), opt.threads, opt.run_id.toStdString(), opt.only_run.toStdString()});
  if (!e.empty()) return fail(QString::fromStdString(e));
  // Fail early on an output that cannot be saved, before minutes of training.
  if (!outputWritableOrFail(out_file)) return 2;
  InterruptGuard interrupt_guard; // SIGINT / SIGTERM / SIGHUP: stop after the step, save, exit 128+sig
  const std::string path = out_file.toStdString();
  std::unique_ptr<TerminalProgress> bar;
  TrainingFileHooks h;
  h.line = [&](const std::string& s, bool detail) {
    if (detail && (opt.quiet || opt.json)) return;
    if (bar) bar->finish();
    std::fprintf(stderr, "%s\n", s.c_str());
  };
  h.started = [&](const std::string& label) {
    bar = std::make_unique<TerminalProgress>(QString::fromStdString(label));
  };
  h.progress = [&](double f, const std::string& stage) {
    if (!bar) bar = std::make_unique<TerminalProgress>(QStringLiteral("GEMM on trained weights"));
    bar->update(f, QString::fromStdString(stage));
    return !interrupted();
  };
  h.ended = [&] { bar.reset(); };
  h.loss_note = [](const std::string& n) { setInterruptLossNote(QString::fromStdString(n)); };
  h.record_backend = [&](Run& run, const GemmOptions& gemm, const std::string& note) {
    recordBackend(run, *opt.backend, gemm, note);
  };
  WriteOptions wo;
  wo.compress = opt.compress;
  wo.lock = sessionLockWait();
  const TrainingFileResult res = runTrainingIntoFile(*spec, path, wo, opt.backend, opt.threads, h);
  bar.reset();
  const auto status = res.outcome.status;
  if (status == TrainingExperimentOutcome::Status::Failed) return fail(QString::fromStdString(res.outcome.error));
  // Cancelled, or a signal that arrived after the last piece of work: everything is saved.
  const bool stopped = status == TrainingExperimentOutcome::Status::Cancelled || interrupted();
  if (opt.json) emitJson(opt.json_out, toQJson(trainingSummaryJson(path, stopped, res.runs)).toObject());
  if (stopped) {
    std::fprintf(stderr, "fp8lab-cli: %s\n", trainingInterruptText(res.outcome, path).c_str());
    return interruptedExitCode();
  }
  if (!opt.json && !opt.quiet && opt.print_session_line)
    std::fprintf(stderr, "session written: %s\n", QFileInfo(out_file).absoluteFilePath().toUtf8().constData());
  return 0;
}

namespace {

int runTrain(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Trains the FP8 MLP on Fashion-MNIST as described by CONFIG.json (a training run or an experiment with "
      "\"runs\", e.g. resources/experiments/default.json) and writes every run into the session FILE.h5 "
      "(appended to when it exists). Ctrl-C stops after the current step, saves the session so far and exits 130."));
  p.addPositionalArgument(QStringLiteral("CONFIG.json"), QStringLiteral("Training experiment configuration."));
  const QCommandLineOption outOpt({QStringLiteral("o"), QStringLiteral("out")},
                                  QStringLiteral("Session file to write."), QStringLiteral("FILE.h5"));
  const QCommandLineOption dataOpt(
      QStringLiteral("data-dir"),
      QStringLiteral("Fashion-MNIST directory (default: $FP8LAB_FASHION_MNIST_DIR, then "
                     "/usr/share/datasets/fashion-mnist from the dataset-fashion-mnist package)."),
      QStringLiteral("DIR"));
  const QCommandLineOption runOpt(QStringLiteral("run"), QStringLiteral("Run only the run with this id."),
                                  QStringLiteral("ID"));
  const QCommandLineOption jsonOpt(QStringLiteral("json"), QStringLiteral("Print a JSON summary on stdout."));
  const QCommandLineOption quietOpt({QStringLiteral("q"), QStringLiteral("quiet")},
                                    QStringLiteral("No per-epoch lines."));
  const QCommandLineOption be = backendOption();
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
  TrainingCliOptions o;
  o.json = p.isSet(jsonOpt);
  o.quiet = p.isSet(quietOpt);
  o.data_dir = p.value(dataOpt);
  o.only_run = p.value(runOpt);
  const auto backend = makeChosenBackend(p.value(be), o.quiet);
  if (!backend) return 2;
  o.backend = backend.get();
  return runTrainingCli(c.doc.root(), {}, &c.doc, p.value(outOpt), o);
}

const CommandRegistrar reg({QStringLiteral("train"),
                            QStringLiteral("Train the FP8 MLP on Fashion-MNIST (a training config)"), runTrain, 40});

} // namespace
} // namespace fp8lab::cli

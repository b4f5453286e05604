// fp8lab-cli train — a training config into a session file (the work is core/experiment's; run_common.h
// holds what the experiment commands share on the terminal).
#include "run_common.h"

#include "command.h"

#include "experiment/training/training_report.h"

#include <QCommandLineParser>

namespace fp8lab::cli {
namespace {

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
  if (!outputWritableOrFail(p.value(outOpt))) return 2;
  LoadedConfig c; // the same reading as `run`: size limit, line and column, duplicate keys refused
  if (!loadConfig(p.positionalArguments().first(), &c)) return 2;
  if (!isTrainingConfig(c.doc.root()))
    return fail(QStringLiteral("%1 is not a training config (\"type\": \"training\")").arg(c.origin));
  TrainingCliOptions o{{p.value(dataOpt).toStdString(), 0, "", p.value(runOpt).toStdString(), std::nullopt},
                       p.isSet(jsonOpt),
                       p.isSet(quietOpt)};
  const auto backend = makeChosenBackend(p.value(be), o.quiet);
  if (!backend) return 2;
  o.backend = backend.get();
  return runTraining(c.doc.root(), {}, &c.doc, p.value(outOpt), o);
}

const CommandRegistrar reg({QStringLiteral("train"),
                            QStringLiteral("Train the FP8 MLP on Fashion-MNIST (a training config)"), runTrain, 40});

} // namespace
} // namespace fp8lab::cli

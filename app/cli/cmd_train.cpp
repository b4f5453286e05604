// fp8lab-cli train CONFIG.json --out FILE.h5 — runs a training experiment (the training path of
// `fp8lab-cli run`, reachable directly). See run_training.h and docs/training.md.
#include "cli_util.h"
#include "cmd_run.h"
#include "command.h"
#include "experiment/training_config.h"
#include "run_training.h"

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
  return runTrainingExperiment(c.doc.root(), {}, &c.doc, p.value(outOpt), o);
}

const CommandRegistrar reg({QStringLiteral("train"),
                            QStringLiteral("Train the FP8 MLP on Fashion-MNIST (a training config)"), runTrain, 40});

} // namespace
} // namespace fp8lab::cli

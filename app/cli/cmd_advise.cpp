// fp8lab-cli advise CONFIG.json --out FILE.h5 — which sites of a training run to keep in high
// precision (core/experiment/decision/site_advice.h): a sensitivity sweep of short runs, the advice as a
// table, and the advised run's config with its precision policy.
#include "cli_util.h"
#include "cmd_run.h"
#include "command.h"
#include "experiment/decision/site_advice.h"
#include "experiment/training/training_config.h"

#include <QCommandLineParser>
#include <QFile>

#include <cstdio>

#include <unistd.h>

namespace fp8lab::cli {
namespace {

int runAdvise(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Advises which sites of a low-precision training run to keep in high precision (docs/training.md "
      "'Per-layer advice'): short runs from the same seed with every site in high precision, every site in the "
      "recipe, and each group of sites (an MLP layer; a transformer block's attention or FFN; the LM head) alone in "
      "the recipe, each on --seeds seeds. Every loss increase is the mean of the same-seed differences with its 95 % "
      "t-interval; a group is kept in high precision when its interval lies above 0 and its increase is at least "
      "--keep-share of the full recipe's. The advised run's config, with that policy, is written with "
      "--write-config."));
  p.addPositionalArgument(QStringLiteral("CONFIG.json"), QStringLiteral("A training config."));
  const QCommandLineOption outOpt({QStringLiteral("o"), QStringLiteral("out")},
                                  QStringLiteral("Session file for the sweep's runs and the advice."),
                                  QStringLiteral("FILE.h5"));
  const QCommandLineOption runOpt(QStringLiteral("run"),
                                  QStringLiteral("The run of the config to advise (default: its first FP8 run)."),
                                  QStringLiteral("ID"));
  const QCommandLineOption stepsOpt(QStringLiteral("steps"),
                                    QStringLiteral("Steps of every run of the sweep (default: the advised run's; an "
                                                   "MLP's at most one epoch)."),
                                    QStringLiteral("N"), QStringLiteral("0"));
  const QCommandLineOption shareOpt(QStringLiteral("keep-share"),
                                    QStringLiteral("Keep a group whose loss increase is at least this share of the "
                                                   "full recipe's (0..1)."),
                                    QStringLiteral("S"), QStringLiteral("0.25"));
  const QCommandLineOption keepOpt(QStringLiteral("keep"),
                                   QStringLiteral("High precision of kept groups: bf16 or fp32."), QStringLiteral("P"),
                                   QStringLiteral("bf16"));
  const QCommandLineOption cfgOpt(QStringLiteral("write-config"),
                                  QStringLiteral("Write the advised run's config (with its policy) to this file."),
                                  QStringLiteral("FILE.json"));
  const QCommandLineOption seedsOpt(QStringLiteral("seeds"),
                                    QStringLiteral("Repeat the sweep with this many seeds; a group is kept only when "
                                                   "the 95 % interval of its same-seed loss increases excludes 0 (one "
                                                   "seed: no interval, nothing kept)."),
                                    QStringLiteral("N"), QStringLiteral("3"));
  const QCommandLineOption thrOpt(QStringLiteral("threads"), QStringLiteral("Threads (0 = one per core)."),
                                  QStringLiteral("N"), QStringLiteral("0"));
  const QCommandLineOption jsonOpt(QStringLiteral("json"), QStringLiteral("Print the advice as JSON on stdout."));
  p.addOptions({outOpt, runOpt, stepsOpt, shareOpt, keepOpt, seedsOpt, cfgOpt, thrOpt, jsonOpt});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() != 1)
    return fail(QStringLiteral("advise needs exactly one CONFIG.json (see --help)"));
  if (!p.isSet(outOpt)) return fail(QStringLiteral("--out FILE.h5 is required"));
  bool ok = false;
  const qint64 steps = p.value(stepsOpt).toLongLong(&ok);
  if (!ok || steps < 0 || steps > 1000000)
    return fail(QStringLiteral("--steps: expected an integer 1..1000000 (0: the advised run's)"));
  const double share = p.value(shareOpt).toDouble(&ok);
  if (!ok || !(share >= 0 && share <= 1)) return fail(QStringLiteral("--keep-share: expected a number in [0, 1]"));
  const auto keep = parseSitePrecision(p.value(keepOpt).toStdString());
  if (!keep || *keep == SitePrecision::Recipe) return fail(QStringLiteral("--keep: expected bf16 or fp32"));
  const int seeds = p.value(seedsOpt).toInt(&ok);
  if (!ok || seeds < 1 || seeds > 100) return fail(QStringLiteral("--seeds: expected an integer 1..100"));
  const int threads = parseThreads(p.value(thrOpt));
  if (threads < 0) return 2;
  LoadedConfig c;
  if (!loadConfig(p.positionalArguments().first(), &c)) return 2;
  if (!isTrainingConfig(c.doc.root()))
    return fail(QStringLiteral("%1 is not a training config (\"type\": \"training\")").arg(c.origin));
  std::string err;
  const auto spec = parseTrainingExperiment(c.doc.root(), &err, &c.doc);
  if (!spec) return fail(QStringLiteral("invalid training config: %1").arg(QString::fromStdString(err)));
  const TrainingRunSpec* run =
      runToAdvise(*spec, p.isSet(runOpt) ? std::optional(p.value(runOpt).toStdString()) : std::nullopt);
  if (!run)
    return fail(p.isSet(runOpt) ? QStringLiteral("no run '%1' in the config").arg(p.value(runOpt))
                                : QStringLiteral("the config has no FP8 run to advise"));
  const QString out_file = p.value(outOpt);
  if (!outputWritableOrFail(out_file)) return 2;
  AdviceConfig ac;
  ac.steps = steps;
  ac.keep_share = share;
  ac.keep = *keep;
  ac.threads = threads;
  ac.seeds = seeds;
  InterruptGuard guard;
  TerminalProgress bar(QStringLiteral("advise %1").arg(QString::fromStdString(run->id)));
  SiteAdvice a;
  try {
    // Without a terminal (a log, CI) there is no bar: one line as each run of the sweep starts.
    const bool lines = ::isatty(2) != 1;
    std::string last_run;
    a = adviseSitePrecision(*run, ac, [&](double f, const std::string& stage) {
      bar.update(f, QString::fromStdString(stage));
      const std::string bare = stage.rfind("starting ", 0) == 0 ? stage.substr(9) : stage;
      const std::string run_name = bare.substr(0, bare.find_first_of(" :"));
      if (lines && !run_name.empty() && run_name != "done" && run_name != last_run) {
        last_run = run_name;
        std::fprintf(stderr, "advise: %3.0f%% %s\n", 100.0 * f, run_name.c_str());
      }
      return !interrupted();
    });
  } catch (const Cancelled&) {
    bar.finish();
    std::fprintf(stderr, "fp8lab-cli: interrupted; nothing was saved\n");
    return interruptedExitCode();
  } catch (const std::exception& e) {
    bar.finish();
    return fail(QString::fromUtf8(e.what()));
  }
  bar.finish();
  std::vector<Run> runs = a.runs;
  runs.push_back(adviceToSession(a, run->id + "-advice", a.steps));
  std::vector<std::string> ids;
  if (!appendRunsToFile(out_file, runs, true, &ids)) return 2;
  if (p.isSet(cfgOpt)) {
    QFile f(p.value(cfgOpt));
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
        f.write(QByteArray::fromStdString(a.config_json + "\n")) < 0)
      return fail(QStringLiteral("cannot write %1: %2").arg(p.value(cfgOpt), f.errorString()));
  }
  if (p.isSet(jsonOpt)) {
    QJsonObject j = toQJson(siteAdviceJson(a)).toObject();
    j.insert(QStringLiteral("session"), out_file);
    out(toJsonText(j) + "\n");
  } else {
    out(a.summary());
    out(QStringLiteral("advised config%1:\n%2\n")
            .arg(p.isSet(cfgOpt) ? QStringLiteral(" (written to %1)").arg(p.value(cfgOpt)) : QString(),
                 QString::fromStdString(a.config_json)));
  }
  return 0;
}

const CommandRegistrar reg({QStringLiteral("advise"),
                            QStringLiteral("Which sites of a training run to keep in high precision"), runAdvise, 41});

} // namespace
} // namespace fp8lab::cli

// fp8lab-cli scaling simulate | presets — replay an amax sequence through Flax / TE delayed
// scaling (core/scaling/delayed_scaling.h) and list the scaling presets; the reports are core's
// (core/experiment/scaling_report.h).
#include "cli_util.h"
#include "command.h"
#include "schema_flags.h"

#include "experiment/scaling_report.h"
#include "formats/format.h"

#include <QCommandLineParser>

namespace fp8lab::cli {
namespace {

int usage() {
  out(QStringLiteral("Usage: fp8lab-cli scaling <subcommand> [options]\n\n"
                     "Subcommands:\n"
                     "  simulate  Replay an amax sequence through Flax or Transformer Engine delayed scaling\n"
                     "  presets   List the scaling presets and the system each follows\n\n"
                     "Run `fp8lab-cli scaling <subcommand> --help` for options.\n"));
  return 0;
}

int runPresets(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "List the scaling presets (quantize --scaling NAME, gemm --scaling NAME): the FP8 / MX presets, then the NVFP4\n"
      "presets (E2M1 elements with E4M3FN scales of 16-element blocks and a float32 tensor scale)."));
  p.addOption({QStringLiteral("json"), QStringLiteral("Machine-readable JSON output.")});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  out(p.isSet(QStringLiteral("json")) ? toJsonText(toQJson(scalingPresetsJson())) : scalingPresetsText());
  return 0;
}

int runSimulate(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(
      QStringLiteral("Replay an amax sequence through per-tensor delayed scaling and print, per step: the amax, the\n"
                     "stored scale after the step in the preset's own convention (Flax: dequant ≈ amax/max, the scale\n"
                     "this step's tensor was quantized with; TE: quant ≈ max/amax, the scale for the next step), both\n"
                     "conventions, the scale this step used, the amax history after the step (oldest first; TE's last\n"
                     "entry is the cleared staging slot) and whether an edge rule (amax 0 / inf / NaN) kept the old\n"
                     "scale. Steps count from 0."));
  p.addOption({QStringLiteral("preset"), QStringLiteral("flax | te | te_jax (required)."), QStringLiteral("P")});
  p.addOption({{QStringLiteral("f"), QStringLiteral("format")},
               QStringLiteral("Format giving fp8_max (default E4M3FN)."),
               QStringLiteral("F"),
               QStringLiteral("E4M3FN")});
  p.addOption(schemaOption(param("history_len", ParamScope::None)));
  p.addOption({QStringLiteral("algo"), QStringLiteral("max (default) | most_recent (TE only)."), QStringLiteral("A"),
               QStringLiteral("max")});
  p.addOption(schemaOption(param("margin", ParamScope::None)));
  p.addOption({QStringLiteral("amax"), QStringLiteral("Comma-separated amax per step (inf, nan allowed)."),
               QStringLiteral("LIST")});
  p.addOption({QStringLiteral("input"), QStringLiteral("Read the amaxes (whitespace/comma separated) from FILE."),
               QStringLiteral("FILE")});
  p.addOption(
      {QStringLiteral("json"), QStringLiteral("Machine-readable JSON output (an array, one object per step).")});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (!p.positionalArguments().isEmpty())
    return fail(QStringLiteral("unexpected argument '%1'").arg(p.positionalArguments().first()));
  if (!p.isSet(QStringLiteral("preset"))) return fail(QStringLiteral("--preset flax|te|te_jax is required"));
  const auto preset = parseDelayedPreset(p.value(QStringLiteral("preset")).toStdString());
  if (!preset)
    return fail(QStringLiteral("unknown --preset '%1' (flax, te, te_jax)").arg(p.value(QStringLiteral("preset"))));
  const Format* fmt = Format::byName(p.value(QStringLiteral("format")).toStdString());
  if (!fmt)
    return fail(
        QStringLiteral("unknown format '%1' (known: %2)").arg(p.value(QStringLiteral("format")), formatHelpList()));
  noteFormatChoice(*fmt);
  if (fmt->bits() > 8)
    return fail(QStringLiteral("%1 is not an FP8 (or narrower) format").arg(p.value(QStringLiteral("format"))));
  DelayedScalingConfig cfg;
  cfg.preset = *preset;
  bool ok = false;
  if (const QString why = schemaFlagProblem(p, param("history_len", ParamScope::None)); !why.isEmpty())
    return fail(why);
  cfg.history_len = p.value(QStringLiteral("history-len")).toInt(&ok);
  const auto algo = parseAmaxAlgo(p.value(QStringLiteral("algo")).toStdString());
  if (!algo) return fail(QStringLiteral("--algo must be max or most_recent"));
  cfg.algo = *algo;
  if (cfg.preset == DelayedPreset::Flax && cfg.algo != AmaxAlgo::Max)
    return fail(QStringLiteral("Flax fp8_ops supports only --algo max"));
  if (const QString why = schemaFlagProblem(p, param("margin", ParamScope::None)); !why.isEmpty()) return fail(why);
  cfg.margin = p.value(QStringLiteral("margin")).toInt(&ok);

  std::vector<double> amax;
  const bool has_a = p.isSet(QStringLiteral("amax")), has_f = p.isSet(QStringLiteral("input"));
  if (has_a == has_f) return fail(QStringLiteral("give exactly one of --amax a1,a2,... or --input FILE"));
  if (has_a) {
    QString problem;
    const auto l = parseNumberList(p.value(QStringLiteral("amax")), &problem);
    if (!l) return fail(QStringLiteral("--amax: %1").arg(problem));
    amax = *l;
  } else {
    QString err;
    auto l = readNumberFile(p.value(QStringLiteral("input")), &err);
    if (!l) return fail(err);
    amax = std::move(*l);
  }
  if (amax.empty()) return fail(QStringLiteral("no amax values given"));
  // An amax is max |x|: never negative. NaN and Inf stay allowed (the presets' edge rules).
  for (size_t i = 0; i < amax.size(); ++i)
    if (amax[i] < 0)
      return fail(QStringLiteral("amax %1 (item %2) is negative; an amax is max |x| >= 0")
                      .arg(shortestNumber(amax[i]))
                      .arg(i + 1));

  // One step at a time (DelayedScaling::simulate's loop): memory stays O(history length) for any
  // number of steps — keeping every step's history would take steps × L floats (4.6 GB for 10^6
  // steps at L = 1024). The JSON array is written as it is produced.
  if (!p.isSet(QStringLiteral("json"))) {
    out(delayedSimulationText(*fmt, cfg, amax));
    return 0;
  }
  DelayedScaling state(*fmt, cfg);
  out(std::string("[\n"));
  for (size_t i = 0; i < amax.size(); ++i) {
    const DelayedUpdate u = state.update(static_cast<float>(amax[i]));
    out(toJsonText(toQJson(delayedStepJson(int64_t(i), amax[i], u, state.historyChronological())), false) +
        (i + 1 < amax.size() ? ",\n" : "\n"));
  }
  out(std::string("]\n"));
  return 0;
}

int runScaling(const QStringList& args) {
  if (args.size() < 2 || args[1] == QStringLiteral("--help") || args[1] == QStringLiteral("-h") ||
      args[1] == QStringLiteral("help"))
    return args.size() < 2 ? (usage(), 2) : usage();
  const QString sub = args[1];
  QStringList rest = args.mid(2);
  rest.prepend(args[0] + QLatin1Char(' ') + sub);
  if (sub == QStringLiteral("simulate")) return runSimulate(rest);
  if (sub == QStringLiteral("presets")) return runPresets(rest);
  return fail(QStringLiteral("unknown subcommand 'scaling %1' (simulate, presets)").arg(sub));
}

const CommandRegistrar reg({QStringLiteral("scaling"),
                            QStringLiteral("Delayed-scaling what-if (simulate) and the preset list"), runScaling, 31});

} // namespace
} // namespace fp8lab::cli

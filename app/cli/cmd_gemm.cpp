// fp8lab-cli gemm — one FP8 GEMM experiment on seeded random matrices: quantize A and B with a
// scaling preset (core/scaling), run the GEMM with an accumulation model on the CPU reference
// backend (core/gemm) or the GPU (gpu/, --backend; backend_choice.h) and print quantization vs
// accumulation vs total error (core/metrics).
#include "backend_choice.h"
#include "cli_util.h"
#include "cmd_run.h"
#include "command.h"
#include "kernel_check_cli.h"
#include "schema_flags.h"

#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/gemm_flags.h"
#include "experiment/gemm/gemm_report.h"
#include "experiment/param_schema.h"
#include "formats/format.h"

#include <QCommandLineParser>
#include <QJsonObject>

#include <chrono>
#include <cstdio>
#include <map>

namespace fp8lab::cli {
namespace {

int runGemm(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Run one FP8 GEMM D[M,N] = A[M,K]·B[K,N] on seeded random matrices and split the error into\n"
      "quantization (quantized-exact vs ideal), accumulation (chosen output vs quantized-exact) and total.\n"
      "The 'fast' accumulation is a MODEL of undocumented hardware (Hopper fast accumulation, DeepSeek-V3 §3.3).\n"
      "The parameters, their ranges and defaults are core's parameter schema (docs/gemm.md, \"Parameters\").\n"
      "Example: fp8lab-cli gemm --m 1024 --n 1024 --k 4096 --accumulation fast --distribution outliers"));
  // One option per schema entry the command reads (core/experiment/param_schema.h), its help the
  // entry's with the default, the range or the choices.
  for (const ParamSpec& s : paramSchema())
    if (s.usedBy("gemm") && !s.flag.empty() && s.flag != "backend") p.addOption(schemaOption(s));
  p.addOption({QStringLiteral("a-scaling"), QStringLiteral("Preset of A (overrides --scaling)."), QStringLiteral("S")});
  p.addOption({QStringLiteral("out"),
               QStringLiteral("Also save the run (datasets, metrics, the config that reproduces it) into this "
                              "session file."),
               QStringLiteral("FILE.h5")});
  p.addOption({QStringLiteral("id"),
               QStringLiteral("Run id with --out (default gemm-<formats>-<scaling>-<distribution>)."),
               QStringLiteral("ID")});
  p.addOption(backendOption());
  addKernelCheckOptions(p);
  p.addOption({QStringLiteral("json"), QStringLiteral("Machine-readable JSON output: the canonical config, the "
                                                      "errors, the operands' scales.")});
  p.addOption({{QStringLiteral("q"), QStringLiteral("quiet")},
               QStringLiteral("No progress output (no progress bar, no note on the backend chosen).")});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (!p.positionalArguments().isEmpty())
    return fail(QStringLiteral("unexpected argument '%1'").arg(p.positionalArguments().first()));
  // Every number a flag takes against its schema range; the rest by core (gemm_flags.h).
  std::map<std::string, std::string> given;
  for (const ParamSpec& s : paramSchema()) {
    if (!s.usedBy("gemm") || s.flag.empty() || s.flag == "backend") continue;
    const QString flag = QString::fromStdString(s.flag);
    if (!p.isSet(flag)) continue;
    given[s.flag] = p.value(flag).toStdString();
    if (s.type == ParamType::Boolean || (s.key == "output_quant_scale" && p.value(flag) == QStringLiteral("auto")))
      continue;
    if (const QString why = schemaFlagProblem(p, s); !why.isEmpty()) return fail(why);
  }
  if (p.isSet(QStringLiteral("a-scaling"))) given["a-scaling"] = p.value(QStringLiteral("a-scaling")).toStdString();
  // --reference decides whether the fast model's flags pin the check's reference (gemm_flags.h).
  if (p.isSet(QStringLiteral("reference"))) given["reference"] = p.value(QStringLiteral("reference")).toStdString();
  const QString outFile = p.value(QStringLiteral("out"));
  const bool json = p.isSet(QStringLiteral("json")), quiet = p.isSet(QStringLiteral("quiet"));
  GemmFlagConfig flags;
  if (const std::string e = gemmConfigFromFlags(given, !outFile.isEmpty(), &flags); !e.empty())
    return fail(QString::fromStdString(e));
  GemmExperimentConfig& cfg = flags.config;
  noteFormatChoice(*Format::byName(cfg.format_a));
  noteFormatChoice(*Format::byName(cfg.format_b));
  cfg.gemm.threads = parseThreads(p.value(QStringLiteral("threads")));
  if (cfg.gemm.threads < 0) return 2;
  if (!outFile.isEmpty() && !outputWritableOrFail(outFile)) return 2;
  // --json reports the operands' scales, read from the run's quantized datasets.
  if (json) cfg.store_quantized = true;
  const int64_t M = cfg.m, K = cfg.k, N = cfg.n;
  // Operands as codes and scales, and the kernel check: through the config parser.
  if (const QString e = applyKernelCheckFlags(p, &cfg); !e.isEmpty()) return fail(e);
  if (const std::string e = gemmFlagConfigProblem(cfg, M, K, N); !e.empty()) return fail(QString::fromStdString(e));
  const bool imported = cfg.a.fromFile() || cfg.b.fromFile();
  const QString id = p.value(QStringLiteral("id")).isEmpty() ? QString::fromStdString(defaultGemmRunId(cfg))
                                                             : p.value(QStringLiteral("id"));
  if (std::string why; !isValidRunId(id.toStdString(), &why)) return fail(QString::fromStdString(why));
  auto backend = makeChosenBackend(p.value(QStringLiteral("backend")), quiet);
  if (!backend) return 2;
  InterruptGuard interrupt_guard;
  TerminalProgress bar(QStringLiteral("gemm"));
  try {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    GemmRunDetails det;
    Result<Run> res = runGemmExperimentRun(
        cfg, gemmConfigJson(cfg, id.toStdString()).dump(2), id.toStdString(), *backend,
        [&](double f, const std::string& st) {
          if (!quiet) bar.update(f, QString::fromStdString(st));
          return !interrupted();
        },
        &det);
    bar.finish();
    // Random operands that overflow float32 (--scale 1e45) are refused by the run itself, as for
    // `run`; NaN / Inf in an imported tensor give its warning below.
    if (!res.ok()) return fail(QString::fromStdString(res.errors()));
    for (const auto& i : res.issues)
      if (i.severity != Severity::Error) std::fprintf(stderr, "%s\n", i.toString().c_str());
    const std::string& fallback = backend->lastFallback();
    if (!fallback.empty()) std::fprintf(stderr, "note: --backend %s\n", fallback.c_str());
    recordBackend(res.value, *backend, cfg.gemm, !fallback.empty() ? fallback : backend->noGpuReason());
    QString stored;
    if (!outFile.isEmpty()) {
      std::vector<std::string> ids;
      setInterruptLossNote(QStringLiteral("the save of run '%1' in progress (%2 keeps what it held before; saves are "
                                          "atomic)")
                               .arg(id, outFile));
      if (!appendRunsToFile(outFile, {res.value}, true, &ids)) return 2;
      stored = QString::fromStdString(ids.empty() ? res.value.id : ids.front());
    }
    GemmOptions o = cfg.gemm; // as run: scale_D resolved
    o.output_quant_scale = det.output_quant_scale;
    const double total_s = std::chrono::duration<double>(clock::now() - t0).count();
    // The exit status a CI reads: 1 when the kernel check failed, or when D holds NaN outputs from
    // NaN codes of pre-quantized operands (--allow-nonfinite accepts them). NaN or Inf in a float
    // tensor is the user's data: the run goes on with its warning and exits 0, as `run` does.
    const bool codes_in = cfg.a.pre.enabled() || cfg.b.pre.enabled();
    const bool nan_out = codes_in && det.total.nan_test > 0 && !p.isSet(QStringLiteral("allow-nonfinite"));
    const int exitCode = (det.check && !det.check->verdict.passed) || nan_out ? 1 : 0;

    if (json) {
      GemmResultJsonInput ji{
          &cfg, id.toStdString(), &det, &res.value, res.issues, total_s, outFile.toStdString(), stored.toStdString()};
      QJsonObject j = toQJson(gemmResultJson(ji)).toObject();
      addBackendJson(j, *backend, det.output.backend, o, !fallback.empty() ? fallback : backend->noGpuReason());
      out(toJsonText(j));
      return exitCode;
    }
    GemmReportInput report;
    report.config = &cfg;
    report.details = &det;
    report.options = o;
    report.scaling_a = flags.scaling_a;
    report.scaling_b = flags.scaling_b;
    report.accumulation_preset = flags.accumulation_preset;
    report.backend_request = toString(backend->request());
    report.imported = imported;
    report.allow_nonfinite = p.isSet(QStringLiteral("allow-nonfinite"));
    out(gemmReportText(report));
    if (!stored.isEmpty())
      std::fprintf(stderr, "saved as run %s in %s\n", stored.toUtf8().constData(), outFile.toUtf8().constData());
    return exitCode;
  } catch (const Cancelled&) {
    bar.finish();
    if (interrupted()) {
      std::fprintf(stderr, "fp8lab-cli: interrupted by %s: the GEMM stopped before it finished; nothing was saved\n",
                   interruptName().toUtf8().constData());
      return interruptedExitCode();
    }
    return fail(QStringLiteral("cancelled"));
  } catch (const std::exception& e) {
    bar.finish();
    return fail(QString::fromStdString(e.what()));
  }
}

const CommandRegistrar reg({QStringLiteral("gemm"),
                            QStringLiteral("FP8 GEMM experiment: quantization vs accumulation vs total error"), runGemm,
                            50});

} // namespace
} // namespace fp8lab::cli

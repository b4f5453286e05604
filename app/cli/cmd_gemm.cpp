// fp8lab-cli gemm — one FP8 GEMM experiment on seeded random matrices: quantize A and B with a
// scaling preset (core/scaling), run the GEMM with an accumulation model on the CPU reference
// backend (core/gemm) or the GPU (gpu/, --backend; backend_choice.h) and print quantization vs
// accumulation vs total error (core/metrics).
#include "backend_choice.h"
#include "session/session_layout.h"
#include "cli_util.h"
#include "cmd_run.h"
#include "command.h"
#include "kernel_check_cli.h"
#include "schema_flags.h"

#include "experiment/gemm_config.h"
#include "experiment/gemm_report.h"
#include "experiment/kernel_check_report.h"
#include "experiment/param_schema.h"

#include "formats/format.h"
#include "gemm/accumulation_preset.h"
#include "gemm/error_split.h"
#include "gemm/gemm.h"
#include "gemm/random_matrix.h"
#include "metrics/error_metrics.h"
#include "scaling/nvfp4.h"
#include "scaling/quantized_tensor.h"
#include "scaling/scaling.h"

#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <tuple>

namespace fp8lab::cli {
namespace {

/// The flag of a schema entry, "--" included.
QString flagOf(const ParamSpec& s) {
  return QStringLiteral("--") + QString::fromStdString(s.flag);
}

/// A refusal of the config parser or of the accumulation rule, under the flag of its key.
QString flagProblem(const std::string& key, const std::string& why) {
  const ParamSpec* s = findParam(key);
  const QString flag = s && !s->flag.empty() ? flagOf(*s) : QString::fromStdString(key);
  const bool sentence = why.rfind("applies", 0) == 0;
  return flag + (sentence ? QStringLiteral(" ") : QStringLiteral(": ")) + QString::fromStdString(why);
}

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
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (!p.positionalArguments().isEmpty())
    return fail(QStringLiteral("unexpected argument '%1'").arg(p.positionalArguments().first()));
  const auto value = [&](const char* key, ParamScope scope = ParamScope::Top) {
    return p.value(QString::fromStdString(param(key, scope).flag));
  };
  const auto isSet = [&](const char* key, ParamScope scope = ParamScope::Top) {
    return p.isSet(QString::fromStdString(param(key, scope).flag));
  };
  // Every number a flag takes against its schema range; the choices by their parsers below.
  for (const ParamSpec& s : paramSchema()) {
    if (!s.usedBy("gemm") || s.flag.empty() || s.flag == "backend" || s.type == ParamType::Boolean) continue;
    if (s.key == "output_quant_scale" && p.value(QStringLiteral("output-scale")) == QStringLiteral("auto")) continue;
    if (const QString why = schemaFlagProblem(p, s); !why.isEmpty()) return fail(why);
  }
  const auto integer = [&](const char* key, ParamScope scope = ParamScope::Top) {
    return value(key, scope).toLongLong();
  };
  const auto number = [&](const char* key, ParamScope scope = ParamScope::Top) { return value(key, scope).toDouble(); };

  const int64_t M = integer("m"), N = integer("n"), K = integer("k"), tile = integer("tile");
  const Format* fa = Format::byName(value("format_a").toStdString());
  const Format* fb = Format::byName(value("format_b").toStdString());
  // (an NVFP4 --scaling below makes an unset format E2M1)
  for (const auto& [f, key] : {std::pair{fa, "format_a"}, {fb, "format_b"}})
    if (!f || f->bits() > 8)
      return fail(QStringLiteral("%1: unknown or wider than 8 bits: '%2' (known: %3)")
                      .arg(flagOf(param(key)), value(key), formatHelpList()));
  noteFormatChoice(*fa);
  noteFormatChoice(*fb);
  const QString sa =
      p.value(QStringLiteral("a-scaling")).isEmpty() ? value("scaling") : p.value(QStringLiteral("a-scaling"));
  const QString sb = value("scaling_b").isEmpty() ? value("scaling") : value("scaling_b");
  // NVFP4 presets (nvfp4_*) quantize an operand to E2M1 with E4M3 block scales of 16 along K.
  const auto nva = nvfp4Preset(sa.toStdString()), nvb = nvfp4Preset(sb.toStdString());
  const auto ca = nva ? std::optional<ScalingConfig>() : scalingPreset(sa.toStdString());
  const auto cb = nvb ? std::optional<ScalingConfig>() : scalingPreset(sb.toStdString());
  for (const auto& [name, ok] : {std::pair{sa, ca || nva}, {sb, cb || nvb}})
    if (!ok)
      return fail(QStringLiteral("unknown or delayed scaling preset '%1' (current-scaling presets: %2)")
                      .arg(name, QString::fromStdString(joinNames(param("scaling").choices))));
  if (ca)
    if (const std::string why = gemmScalingProblem(*ca, Axis::Cols); !why.empty())
      return fail(QStringLiteral("scaling of A: %1").arg(QString::fromStdString(why)));
  if (cb)
    if (const std::string why = gemmScalingProblem(*cb, Axis::Rows); !why.empty())
      return fail(QStringLiteral("scaling of B: %1").arg(QString::fromStdString(why)));
  if (nva && !isSet("format_a")) fa = &Format::E2M1();
  if (nvb && !isSet("format_b")) fb = &Format::E2M1();
  const std::string name_a = nva ? nva->name : ca->name, name_b = nvb ? nvb->name : cb->name;

  GemmOptions o;
  const std::string acc_name = value("accumulation").toStdString();
  const auto acc = parseAccumulation(acc_name);
  const auto acc_preset = accumulationPreset(acc_name);
  if (!acc && !acc_preset)
    return fail(
        QStringLiteral("--accumulation must be one of %1 or a preset (%2)")
            .arg(QString::fromStdString(accumulationNames()), QString::fromStdString(accumulationPresetNames())));
  o.accumulation = acc ? *acc : acc_preset->accumulation;
  const auto out_type = parseOutputType(value("output").toStdString());
  if (!out_type)
    return fail(
        QStringLiteral("--output must be one of %1").arg(QString::fromStdString(joinNames(param("output").choices))));
  o.output = *out_type;
  o.promotion_interval = static_cast<int>(integer("promotion_interval"));
  o.fast_accum_bits = static_cast<int>(integer("fast_accum_bits"));
  o.fast_accum_group = static_cast<int>(integer("fast_accum_group"));
  o.fast_accum_promotes = !isSet("fast_accum_promotes");
  // A parameter the chosen model does not read is refused, naming the models that read it; a
  // preset's parameters given beside it must agree (core's rule, as for configs and the panel).
  {
    std::set<std::string> given;
    for (const char* k : {"promotion_interval", "fast_accum_bits", "fast_accum_group", "fast_accum_promotes"})
      if (isSet(k)) given.insert(k);
    if (const auto pr = accumulationProblem(o, given, acc_preset ? &*acc_preset : nullptr, true, &o))
      return fail(pr->key == "accumulation_preset"
                      ? QStringLiteral("--accumulation %1: %2")
                            .arg(QString::fromStdString(acc_preset->name), QString::fromStdString(pr->why))
                      : flagProblem(pr->key, pr->why));
  }
  o.alpha = static_cast<float>(number("alpha"));
  o.beta = static_cast<float>(number("beta"));
  if (!std::isfinite(o.alpha) || !std::isfinite(o.beta))
    return fail(QStringLiteral("--alpha and --beta must be finite float32 numbers"));
  EpilogueSource c_src, bias_src;
  for (const auto& [scope, src] : {std::pair{ParamScope::C, &c_src}, {ParamScope::Bias, &bias_src}}) {
    if (!isSet("seed", scope)) {
      if (isSet("scale", scope))
        return fail(QStringLiteral("%1 needs %2 (the values are seeded)")
                        .arg(flagOf(param("scale", scope)), flagOf(param("seed", scope))));
      continue;
    }
    src->seed = value("seed", scope).toULongLong();
    src->scale = number("scale", scope);
    src->enabled = true;
  }
  if (o.beta != 0.0f && !c_src.enabled) return fail(QStringLiteral("--beta other than 0 needs a C matrix: --c-seed N"));
  if (o.beta == 0.0f && c_src.enabled)
    return fail(QStringLiteral("--c-seed: C is read only when --beta is not 0 (cuBLASLt ignores C at beta = 0)"));
  o.threads = parseThreads(value("threads", ParamScope::None));
  if (o.threads < 0) return 2;
  const QString kern = value("kernel", ParamScope::None).toLower();
  if (kern == QStringLiteral("portable"))
    o.cpu_kernel = CpuKernel::Portable;
  else if (kern == QStringLiteral("avx512bf16") || kern == QStringLiteral("avx512-bf16"))
    o.cpu_kernel = CpuKernel::Avx512Bf16;
  else if (kern != QStringLiteral("auto"))
    return fail(QStringLiteral("--kernel must be one of %1")
                    .arg(QString::fromStdString(joinNames(param("kernel", ParamScope::None).choices))));
  const bool fp8_out = o.output == OutputType::E4M3FN || o.output == OutputType::E5M2;
  std::optional<float> out_scale;
  if (value("output_quant_scale") != QStringLiteral("auto")) {
    out_scale = static_cast<float>(number("output_quant_scale"));
    if (!fp8_out)
      return fail(QStringLiteral("--output-scale applies only to FP8 outputs (--output e4m3fn or e5m2): cuBLASLt "
                                 "multiplies D by scale_D only when D is FP8, and the output here is %1")
                      .arg(QString::fromLatin1(toString(o.output))));
  }
  const uint64_t seed = value("seed").toULongLong();
  RandomMatrixOptions ro;
  const auto dist = parseDistribution(value("distribution", ParamScope::Operands).toStdString());
  if (!dist)
    return fail(QStringLiteral("--distribution must be one of %1")
                    .arg(QString::fromStdString(joinNames(param("distribution", ParamScope::Operands).choices))));
  ro.distribution = *dist;
  ro.scale = number("scale", ParamScope::Operands);
  ro.sigma = number("sigma", ParamScope::Operands);
  ro.outlier_fraction = number("outlier_fraction", ParamScope::Operands);
  ro.outlier_factor = number("outlier_factor", ParamScope::Operands);
  ro.outlier_channels = integer("outlier_channels", ParamScope::Operands);
  const QString axis = value("outlier_axis", ParamScope::Operands);
  if (axis != QStringLiteral("rows") && axis != QStringLiteral("columns"))
    return fail(QStringLiteral("--outlier-axis must be columns or rows"));
  ro.outlier_rows = axis == QStringLiteral("rows");
  const bool json = p.isSet(QStringLiteral("json"));

  const QString outFile = p.value(QStringLiteral("out"));
  if (!outFile.isEmpty() && !outputWritableOrFail(outFile)) return 2;
  // The one GEMM error experiment (core/experiment): the same operands, streams and datasets as
  // `fp8lab-cli run` of the equivalent config, which is what --out stores.
  GemmExperimentConfig cfg;
  cfg.m = M;
  cfg.k = K;
  cfg.n = N;
  cfg.seed = seed;
  cfg.format_a = fa->name();
  cfg.format_b = fb->name();
  cfg.scaling = name_a;
  cfg.scaling_b = name_b == name_a ? std::string() : name_b;
  cfg.a.random = cfg.b.random = ro;
  cfg.a.tensor = value("tensor", ParamScope::OperandA).toStdString();
  cfg.b.tensor = value("tensor", ParamScope::OperandB).toStdString();
  cfg.gemm = o;
  cfg.accumulation_preset = acc_preset ? acc_preset->name : std::string();
  cfg.c_source = c_src;
  cfg.bias_source = bias_src;
  cfg.tile = tile;
  cfg.output_scale_auto = fp8_out && !out_scale;
  if (out_scale) cfg.gemm.output_quant_scale = *out_scale;
  const QString rounding = value("rounding");
  if (rounding != QStringLiteral("rne") && rounding != QStringLiteral("stochastic"))
    return fail(QStringLiteral("--rounding must be rne or stochastic"));
  cfg.stochastic_rounding = rounding == QStringLiteral("stochastic");
  if (isSet("stochastic_bits") && !cfg.stochastic_rounding)
    return fail(QStringLiteral("--stochastic-bits applies to --rounding stochastic only"));
  cfg.stochastic_bits = static_cast<int>(integer("stochastic_bits"));
  cfg.store_inputs = cfg.store_quantized = cfg.store_error_maps = !outFile.isEmpty();
  // --json reports the operands' scales, read from the run's quantized datasets.
  if (json) cfg.store_quantized = true;
  // Operands as codes and scales, and the kernel check: through the config parser.
  if (const QString e = applyKernelCheckFlags(p, &cfg); !e.isEmpty()) return fail(e);
  fa = Format::byName(cfg.format_a);
  fb = Format::byName(cfg.format_b);
  // Imported operands fix the shape: the run checks them once they are loaded.
  const bool imported = cfg.a.fromFile() || cfg.b.fromFile();
  if (const auto pr = imported ? std::nullopt : gemmOperandProblem(cfg, M, K, N)) {
    const std::string& k = pr->key;
    const QString flag = k == "format_a"    ? QStringLiteral("--a-format")
                         : k == "format_b"  ? QStringLiteral("--b-format")
                         : k == "scaling_b" ? QStringLiteral("--b-scaling")
                         : k == "scaling"   ? QStringLiteral("--scaling")
                                            : QStringLiteral("--") + QString::fromStdString(k);
    return fail(QStringLiteral("%1: %2").arg(flag, QString::fromStdString(pr->why)));
  }
  // The config parser checks the whole combination as it checks a config file.
  if (GemmExperimentConfig back; true)
    if (const std::string e = parseGemmConfig(gemmConfigJson(cfg), &back); !e.empty())
      return fail(QString::fromStdString(e));
  const QString id = p.value(QStringLiteral("id")).isEmpty() ? QString::fromStdString(defaultGemmRunId(cfg))
                                                             : p.value(QStringLiteral("id"));
  if (std::string why; !isValidRunId(id.toStdString(), &why)) return fail(QString::fromStdString(why));
  auto backend = makeChosenBackend(p.value(QStringLiteral("backend")), false);
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
          bar.update(f, QString::fromStdString(st));
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
    const GemmExperimentResult r{det.m,
                                 det.n,
                                 det.k,
                                 {},
                                 {},
                                 det.output,
                                 det.quantization,
                                 det.accumulation,
                                 det.total,
                                 det.a_stats,
                                 det.b_stats,
                                 det.d_saturated,
                                 det.ideal_seconds,
                                 det.exact_seconds};
    o.output_quant_scale = det.output_quant_scale;
    const double quantize_s = det.quantize_seconds;
    const TileMap& tiles = det.tiles;
    const double total_s = std::chrono::duration<double>(clock::now() - t0).count();
    // The exit status a CI reads: 1 when the kernel check failed, or when D holds NaN outputs from
    // NaN codes of pre-quantized operands (--allow-nonfinite accepts them). NaN or Inf in a float
    // tensor is the user's data: the run goes on with its warning and exits 0, as `run` does.
    const bool codes_in = cfg.a.pre.enabled() || cfg.b.pre.enabled();
    const bool nan_out = codes_in && r.total.nan_test > 0 && !p.isSet(QStringLiteral("allow-nonfinite"));
    const int exitCode = (det.check && !det.check->verdict.passed) || nan_out ? 1 : 0;
    const KernelCheckConfig check_cfg = cfg.check;

    if (json) {
      QJsonObject j;
      // The canonical config (gemm_config.h: what `run` reads and --out stores), the shape the
      // run had (a tensor operand fixes dimensions the config then leaves out) and the preset.
      j[QStringLiteral("config")] =
          QJsonDocument::fromJson(QByteArray::fromStdString(gemmConfigJson(cfg, id.toStdString()).dump())).object();
      j[QStringLiteral("shape")] = QJsonObject{{QStringLiteral("m"), static_cast<double>(r.m)},
                                               {QStringLiteral("n"), static_cast<double>(r.n)},
                                               {QStringLiteral("k"), static_cast<double>(r.k)}};
      if (acc_preset)
        j[QStringLiteral("accumulation_preset")] =
            QJsonObject{{QStringLiteral("name"), QString::fromStdString(acc_preset->name)},
                        {QStringLiteral("summary"), QString::fromStdString(acc_preset->summary)},
                        {QStringLiteral("source"), QString::fromStdString(acc_preset->source)},
                        {QStringLiteral("unsure"), acc_preset->unsure}};
      j[QStringLiteral("backend")] = QString::fromStdString(r.output.backend);
      j[QStringLiteral("device")] = QString::fromStdString(r.output.device);
      j[QStringLiteral("algorithm")] = QString::fromStdString(r.output.algorithm);
      addBackendJson(j, *backend, r.output.backend, o, !fallback.empty() ? fallback : backend->noGpuReason());
      j[QStringLiteral("model_of_undocumented_hardware")] = r.output.model_of_undocumented_hardware;
      QJsonObject t;
      t[QStringLiteral("quantize_s")] = quantize_s;
      t[QStringLiteral("gemm_s")] = r.output.seconds;
      t[QStringLiteral("ideal_s")] = r.ideal_seconds;
      t[QStringLiteral("quantized_exact_s")] = r.exact_seconds;
      t[QStringLiteral("total_s")] = total_s;
      j[QStringLiteral("seconds")] = t;
      QJsonObject e;
      e[QStringLiteral("quantization")] = toQJson(errorMetricsJson(r.quantization));
      e[QStringLiteral("accumulation")] = toQJson(errorMetricsJson(r.accumulation));
      e[QStringLiteral("total")] = toQJson(errorMetricsJson(r.total));
      j[QStringLiteral("errors")] = e;
      QJsonObject ops;
      for (const auto& [name, st] : {std::pair{"A", &r.a_stats}, std::pair{"B", &r.b_stats}}) {
        Json op = operandStatsJson(*st);
        if (auto q = res.value.getQuantized(layout::quantized(name)); q.ok()) addScalesJson(op, q.value);
        ops[QString::fromLatin1(name)] = toQJson(op);
      }
      j[QStringLiteral("operands")] = ops;
      j[QStringLiteral("amax_d")] = jsonNumber(r.output.amax_d);
      if (r.d_saturated >= 0) j[QStringLiteral("d_saturated")] = static_cast<double>(r.d_saturated);
      QJsonObject tm;
      tm[QStringLiteral("what")] = QStringLiteral("absolute total error |D - ideal|");
      tm[QStringLiteral("tile")] = static_cast<double>(tile);
      tm[QStringLiteral("grid_rows")] = static_cast<double>(tiles.grid_rows);
      tm[QStringLiteral("grid_cols")] = static_cast<double>(tiles.grid_cols);
      QJsonArray mean, max;
      for (size_t i = 0; i < tiles.mean.size(); ++i) {
        mean.append(jsonNumber(tiles.mean[i]));
        max.append(jsonNumber(tiles.max[i]));
      }
      tm[QStringLiteral("mean")] = mean;
      tm[QStringLiteral("max")] = max;
      j[QStringLiteral("tile_map")] = tm;
      QJsonArray w;
      for (const Issue& x2 : r.output.warnings) {
        QJsonObject wo;
        wo[QStringLiteral("what")] = QString::fromStdString(x2.what);
        wo[QStringLiteral("where")] = QString::fromStdString(x2.where);
        wo[QStringLiteral("detail")] = QString::fromStdString(x2.detail);
        w.append(wo);
      }
      j[QStringLiteral("warnings")] = w;
      QJsonArray issues;
      for (const auto& i : res.issues)
        if (i.severity != Severity::Error)
          issues.append(QJsonObject{{QStringLiteral("severity"), QString::fromLatin1(severityName(i.severity))},
                                    {QStringLiteral("where"), QString::fromStdString(i.where)},
                                    {QStringLiteral("detail"), QString::fromStdString(i.detail)}});
      j[QStringLiteral("issues")] = issues;
      if (det.nan_outputs_from_codes > 0 || r.total.nan_test > 0)
        j[QStringLiteral("nan_outputs")] = static_cast<double>(r.total.nan_test);
      if (det.check) j[QStringLiteral("check")] = toQJson(kernelCheckJson(*det.check, check_cfg));
      if (!stored.isEmpty()) {
        j[QStringLiteral("file")] = outFile;
        j[QStringLiteral("run")] = stored;
      }
      out(toJsonText(j));
      return exitCode;
    }
    GemmReportInput report;
    report.config = &cfg;
    report.details = &det;
    report.options = o;
    report.scaling_a = sa.toStdString();
    report.scaling_b = sb.toStdString();
    report.accumulation_preset = acc_preset;
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

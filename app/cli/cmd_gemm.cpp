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

#include "experiment/gemm_config.h"

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
#include <QJsonObject>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <tuple>

namespace fp8lab::cli {
namespace {

QString presetNames() {
  QStringList n;
  for (const auto& p : scalingPresets())
    if (!p.delayed) n << QString::fromStdString(p.name);
  for (const auto& p : nvfp4Presets()) n << QString::fromStdString(p.name);
  return n.join(QStringLiteral(", "));
}

QString num(double v, int prec = 4) {
  if (std::isnan(v)) return QStringLiteral("nan");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  return QString::number(v, 'g', prec);
}

QJsonObject metricsJson(const ErrorMetrics& m) {
  QJsonObject o;
  o[QStringLiteral("max_abs")] = jsonNumber(m.max_abs);
  o[QStringLiteral("max_abs_index")] = static_cast<double>(m.max_abs_index);
  o[QStringLiteral("max_rel")] = jsonNumber(m.max_rel);
  o[QStringLiteral("max_rel_index")] = static_cast<double>(m.max_rel_index);
  o[QStringLiteral("rmse")] = jsonNumber(m.rmse);
  o[QStringLiteral("rel_fro")] = jsonNumber(m.rel_fro);
  o[QStringLiteral("sqnr_db")] = jsonNumber(m.sqnr_db);
  o[QStringLiteral("ref_rms")] = jsonNumber(m.ref_rms);
  o[QStringLiteral("finite_pairs")] = static_cast<double>(m.finite_pairs);
  o[QStringLiteral("nan_ref")] = static_cast<double>(m.nan_ref);
  o[QStringLiteral("inf_ref")] = static_cast<double>(m.inf_ref);
  o[QStringLiteral("nan_test")] = static_cast<double>(m.nan_test);
  o[QStringLiteral("inf_test")] = static_cast<double>(m.inf_test);
  return o;
}

QJsonObject statsJson(const OperandStats& s) {
  QJsonObject o;
  o[QStringLiteral("elements")] = static_cast<double>(s.elements);
  o[QStringLiteral("saturated")] = static_cast<double>(s.saturated);
  o[QStringLiteral("saturated_percent")] = s.saturatedPercent();
  o[QStringLiteral("flushed_to_zero")] = static_cast<double>(s.flushed);
  o[QStringLiteral("flushed_percent")] = s.flushedPercent();
  o[QStringLiteral("subnormal")] = static_cast<double>(s.subnormal);
  o[QStringLiteral("subnormal_percent")] = s.subnormalPercent();
  o[QStringLiteral("nan")] = static_cast<double>(s.nan);
  o[QStringLiteral("inf")] = static_cast<double>(s.inf);
  return o;
}

/// The scales of one quantized operand (quantized/<X>_* of the run): the scale format, the
/// tensor scale of a two-level format (NVFP4) and, for block scale codes (MX: E8M0FNU, NVFP4:
/// E4M3FN), the smallest and largest code and the counts of codes that mean trouble: a zero
/// scale, a subnormal scale, NaN (E4M3FN 0x7F / 0xFF, E8M0FNU 0xFF).
void addScalesJson(QJsonObject* o, const QuantizedTensor& q) {
  (*o)[QStringLiteral("scale_format")] =
      q.scale_codes.empty() ? QStringLiteral("float32") : QString::fromStdString(q.scaleCodeFormat().name());
  if (q.tensor_scale.kind != TensorScale::Kind::None) {
    const TensorScale& t = q.tensor_scale;
    QJsonObject ts;
    ts[QStringLiteral("kind")] =
        t.kind == TensorScale::Kind::TeAmax ? QStringLiteral("te_amax") : QStringLiteral("torchao_per_tensor_scale");
    ts[QStringLiteral("amax")] = jsonNumber(t.amax);
    ts[QStringLiteral("value")] = jsonNumber(t.value);
    ts[QStringLiteral("fp4_fp8_max")] = jsonNumber(t.fp4_fp8_max);
    (*o)[QStringLiteral("tensor_scale")] = ts;
  }
  if (q.scale_codes.empty()) return;
  const Format& f = q.scaleCodeFormat();
  int lo = 255, hi = 0;
  int64_t zero = 0, subnormal = 0, nan = 0;
  for (const uint8_t c : q.scale_codes) {
    lo = std::min(lo, int(c));
    hi = std::max(hi, int(c));
    switch (f.classify(c)) {
    case CodeClass::Zero:
      ++zero;
      break;
    case CodeClass::Subnormal:
      ++subnormal;
      break;
    case CodeClass::NaN:
      ++nan;
      break;
    default:
      break;
    }
  }
  QJsonObject b;
  b[QStringLiteral("format")] = QString::fromStdString(f.name());
  b[QStringLiteral("blocks")] = static_cast<double>(q.scale_codes.size());
  b[QStringLiteral("block_rows")] = static_cast<double>(q.block.rows);
  b[QStringLiteral("block_cols")] = static_cast<double>(q.block.cols);
  b[QStringLiteral("min_code")] = lo;
  b[QStringLiteral("max_code")] = hi;
  b[QStringLiteral("zero")] = static_cast<double>(zero);
  b[QStringLiteral("subnormal")] = static_cast<double>(subnormal);
  b[QStringLiteral("nan")] = static_cast<double>(nan);
  (*o)[QStringLiteral("block_scale_codes")] = b;
}

bool parsePositive(const QCommandLineParser& p, const QString& name, int64_t* v, int64_t max = (int64_t(1) << 40)) {
  bool ok = false;
  const qlonglong x = p.value(name).toLongLong(&ok);
  if (!ok || x < 1 || x > max) return false;
  *v = x;
  return true;
}

int runGemm(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Run one FP8 GEMM D[M,N] = A[M,K]·B[K,N] on seeded random matrices and split the error into\n"
      "quantization (quantized-exact vs ideal), accumulation (chosen output vs quantized-exact) and total.\n"
      "The 'fast' accumulation is a MODEL of undocumented hardware (Hopper fast accumulation, DeepSeek-V3 §3.3).\n"
      "Example: fp8lab-cli gemm --m 1024 --n 1024 --k 4096 --accumulation fast --distribution outliers"));
  const auto opt = [&](const char* name, const char* help, const char* value, const char* def) {
    p.addOption(
        {QString::fromLatin1(name), QString::fromUtf8(help), QString::fromLatin1(value), QString::fromLatin1(def)});
  };
  opt("m", "Rows of A and D (default 512).", "M", "512");
  opt("n", "Columns of B and D (default 512).", "N", "512");
  opt("k", "Contraction length (default 512).", "K", "512");
  opt("a-format", "Element format of A (default E4M3FN).", "F", "E4M3FN");
  opt("b-format", "Element format of B (default E4M3FN).", "F", "E4M3FN");
  opt("scaling",
      "Current-scaling or NVFP4 preset of both operands (default te_current); see `fp8lab-cli quantize --help`. "
      "NVFP4 presets (nvfp4_*) give E2M1 operands (an unset format becomes E2M1), need K a multiple of 16, and "
      "go on both operands or neither; the Hadamard ones (nvfp4_te_rht*) too.",
      "S", "te_current");
  opt("a-scaling", "Preset of A (overrides --scaling).", "S", "");
  opt("b-scaling", "Preset of B (overrides --scaling).", "S", "");
  opt("accumulation",
      "exact | fp32 | split (default) | fast (model of undocumented hardware), or an accumulation preset: "
      "hopper_fp8 | blackwell_fp8 | block_scaled_mma (unsure) — a fast model's parameters per architecture.",
      "MODE", "split");
  opt("promotion-interval", "N_C: elements of K per promotion window (split/fast; default 128).", "N", "128");
  opt("fast-bits", "Significant bits of the fast-accumulation model (default 14).", "B", "14");
  opt("fast-group", "Products aligned together by the fast model (default 32).", "G", "32");
  p.addOption({QStringLiteral("no-promotion"),
               QStringLiteral("Fast model: one window over all of K (cuBLASLt FAST_ACCUM=1).")});
  opt("output", "Output type: fp32 (default) | bf16 | fp16 | e4m3fn | e5m2.", "T", "fp32");
  opt("alpha", "Epilogue: D = scale_D·(alpha·(A·B) + beta·C + bias); alpha (default 1).", "X", "1");
  opt("beta", "Epilogue beta (default 0; needs --c-seed).", "X", "0");
  opt("c-seed", "Epilogue C [M,N]: seeded normal values rounded to BF16 (stream 3; default none).", "N", "");
  opt("c-scale", "Standard deviation of C (default 1).", "X", "1");
  opt("bias-seed",
      "Epilogue bias [N], added to every row after alpha: seeded normal values rounded to BF16 "
      "(stream 4; default none).",
      "N", "");
  opt("bias-scale", "Standard deviation of the bias (default 1).", "X", "1");
  opt("output-scale", "FP8 outputs: scale_D, the quant multiplier (default auto = max/amax of the quantized-exact D).",
      "S", "auto");
  opt("seed", "Seed of the random matrices (A: stream 1, B: stream 2, as in `run`; default 1).", "N", "1");
  opt("distribution", "normal (default) | uniform | lognormal | outliers.", "D", "normal");
  opt("scale", "Standard deviation / half-width / median of the distribution (default 1).", "X", "1");
  opt("threads", "Threads (default 0 = all).", "T", "0");
  opt("kernel", "CPU kernel: auto (default) | portable | avx512bf16.", "K", "auto");
  opt("tile", "Tile edge of the per-tile error map (default 128).", "T", "128");
  opt("out", "Also save the run (datasets, metrics, the config that reproduces it) into this session file.", "FILE.h5",
      "");
  opt("a-tensor",
      "Import A [M,K] instead of random data: an import spec as in a config's \"a\": {\"tensor\": ...} "
      "(w.npy, m.safetensors:NAME, f.h5:/path); fixes M and K.",
      "SPEC", "");
  opt("b-tensor", "Import B [K,N] the same way; fixes K and N.", "SPEC", "");
  opt("id", "Run id with --out (default gemm-<formats>-<scaling>-<distribution>).", "ID", "");
  p.addOption(backendOption());
  addKernelCheckOptions(p);
  p.addOption({QStringLiteral("json"), QStringLiteral("Machine-readable JSON output.")});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (!p.positionalArguments().isEmpty())
    return fail(QStringLiteral("unexpected argument '%1'").arg(p.positionalArguments().first()));

  int64_t M = 0, N = 0, K = 0, tile = 0;
  if (!parsePositive(p, QStringLiteral("m"), &M)) return fail(QStringLiteral("--m must be a positive integer"));
  if (!parsePositive(p, QStringLiteral("n"), &N)) return fail(QStringLiteral("--n must be a positive integer"));
  if (!parsePositive(p, QStringLiteral("k"), &K))
    return fail(QStringLiteral("--k must be a positive integer (K = 0 has nothing to accumulate)"));
  if (!parsePositive(p, QStringLiteral("tile"), &tile))
    return fail(QStringLiteral("--tile must be a positive integer"));
  const Format* fa = Format::byName(p.value(QStringLiteral("a-format")).toStdString());
  const Format* fb = Format::byName(p.value(QStringLiteral("b-format")).toStdString());
  // (an NVFP4 --scaling below makes an unset format E2M1)
  if (!fa || fa->bits() > 8)
    return fail(QStringLiteral("--a-format: unknown or wider than 8 bits: '%1' (known: %2)")
                    .arg(p.value(QStringLiteral("a-format")), formatHelpList()));
  if (!fb || fb->bits() > 8)
    return fail(QStringLiteral("--b-format: unknown or wider than 8 bits: '%1' (known: %2)")
                    .arg(p.value(QStringLiteral("b-format")), formatHelpList()));
  noteFormatChoice(*fa);
  noteFormatChoice(*fb);
  const QString sa = p.value(QStringLiteral("a-scaling")).isEmpty() ? p.value(QStringLiteral("scaling"))
                                                                    : p.value(QStringLiteral("a-scaling"));
  const QString sb = p.value(QStringLiteral("b-scaling")).isEmpty() ? p.value(QStringLiteral("scaling"))
                                                                    : p.value(QStringLiteral("b-scaling"));
  // NVFP4 presets (nvfp4_*) quantize an operand to E2M1 with E4M3 block scales of 16 along K.
  const auto nva = nvfp4Preset(sa.toStdString()), nvb = nvfp4Preset(sb.toStdString());
  const auto ca = nva ? std::optional<ScalingConfig>() : scalingPreset(sa.toStdString());
  const auto cb = nvb ? std::optional<ScalingConfig>() : scalingPreset(sb.toStdString());
  if (!ca && !nva)
    return fail(
        QStringLiteral("unknown or delayed scaling preset '%1' (current-scaling presets: %2)").arg(sa, presetNames()));
  if (!cb && !nvb)
    return fail(
        QStringLiteral("unknown or delayed scaling preset '%1' (current-scaling presets: %2)").arg(sb, presetNames()));
  if (ca)
    if (const std::string why = gemmScalingProblem(*ca, Axis::Cols); !why.empty())
      return fail(QStringLiteral("scaling of A: %1").arg(QString::fromStdString(why)));
  if (cb)
    if (const std::string why = gemmScalingProblem(*cb, Axis::Rows); !why.empty())
      return fail(QStringLiteral("scaling of B: %1").arg(QString::fromStdString(why)));
  if (nva && !p.isSet(QStringLiteral("a-format"))) fa = &Format::E2M1();
  if (nvb && !p.isSet(QStringLiteral("b-format"))) fb = &Format::E2M1();
  const std::string name_a = nva ? nva->name : ca->name, name_b = nvb ? nvb->name : cb->name;

  GemmOptions o;
  const std::string acc_name = p.value(QStringLiteral("accumulation")).toStdString();
  const auto acc = parseAccumulation(acc_name);
  const auto acc_preset = accumulationPreset(acc_name);
  if (!acc && !acc_preset)
    return fail(QStringLiteral("--accumulation must be exact, fp32, split, fast or a preset (%1)")
                    .arg(QString::fromStdString(accumulationPresetNames())));
  o.accumulation = acc ? *acc : acc_preset->accumulation;
  const auto out_type = parseOutputType(p.value(QStringLiteral("output")).toStdString());
  if (!out_type) return fail(QStringLiteral("--output must be fp32, bf16, fp16, e4m3fn or e5m2"));
  o.output = *out_type;
  bool ok = false;
  o.promotion_interval = p.value(QStringLiteral("promotion-interval")).toInt(&ok);
  if (!ok || o.promotion_interval < 1) return fail(QStringLiteral("--promotion-interval must be a positive integer"));
  o.fast_accum_bits = p.value(QStringLiteral("fast-bits")).toInt(&ok);
  if (!ok || o.fast_accum_bits < 2 || o.fast_accum_bits > 24) return fail(QStringLiteral("--fast-bits must be 2..24"));
  o.fast_accum_group = p.value(QStringLiteral("fast-group")).toInt(&ok);
  if (!ok || o.fast_accum_group < 1) return fail(QStringLiteral("--fast-group must be a positive integer"));
  o.fast_accum_promotes = !p.isSet(QStringLiteral("no-promotion"));
  // A flag the chosen model does not read is refused, naming the models that read it.
  if (!acc_preset) {
    const bool fast = o.accumulation == Accumulation::FastAccum;
    for (const char* f : {"fast-bits", "fast-group", "no-promotion"})
      if (p.isSet(QString::fromLatin1(f)) && !fast)
        return fail(QStringLiteral("--%1 applies to the fast-accumulation model (--accumulation fast or a preset); "
                                   "'%2' does not read it")
                        .arg(QString::fromLatin1(f), QString::fromStdString(acc_name)));
    if (p.isSet(QStringLiteral("promotion-interval")) && !fast && o.accumulation != Accumulation::SplitFP32)
      return fail(QStringLiteral("--promotion-interval applies to split and fast accumulation; '%1' has no "
                                 "promotion windows")
                      .arg(QString::fromStdString(acc_name)));
  }
  if (acc_preset) {
    // The preset sets the fast model's parameters; a flag given beside it must agree.
    GemmOptions given = withAccumulationPreset(o, *acc_preset);
    if (p.isSet(QStringLiteral("promotion-interval"))) given.promotion_interval = o.promotion_interval;
    if (p.isSet(QStringLiteral("fast-bits"))) given.fast_accum_bits = o.fast_accum_bits;
    if (p.isSet(QStringLiteral("fast-group"))) given.fast_accum_group = o.fast_accum_group;
    if (p.isSet(QStringLiteral("no-promotion"))) given.fast_accum_promotes = false;
    if (const std::string why = accumulationPresetMismatch(given, *acc_preset); !why.empty())
      return fail(QStringLiteral("--accumulation %1: %2")
                      .arg(QString::fromStdString(acc_preset->name), QString::fromStdString(why)));
    o = given;
  }
  try {
    checkFastAccum(o);
  } catch (const std::invalid_argument& e) {
    return fail(QStringLiteral("--fast-bits / --fast-group: %1").arg(QString::fromStdString(e.what())));
  }
  const auto alpha = parseNumber(p.value(QStringLiteral("alpha")));
  const auto beta = parseNumber(p.value(QStringLiteral("beta")));
  if (!alpha || !std::isfinite(static_cast<float>(*alpha)))
    return fail(QStringLiteral("--alpha must be a finite number"));
  if (!beta || !std::isfinite(static_cast<float>(*beta))) return fail(QStringLiteral("--beta must be a finite number"));
  o.alpha = static_cast<float>(*alpha);
  o.beta = static_cast<float>(*beta);
  EpilogueSource c_src, bias_src;
  for (const auto& [flag, scale_flag, src] :
       {std::tuple{"c-seed", "c-scale", &c_src}, std::tuple{"bias-seed", "bias-scale", &bias_src}}) {
    const QString v = p.value(QString::fromLatin1(flag));
    if (v.isEmpty()) {
      if (p.isSet(QString::fromLatin1(scale_flag)))
        return fail(QStringLiteral("--%1 needs --%2 (the values are seeded)")
                        .arg(QString::fromLatin1(scale_flag), QString::fromLatin1(flag)));
      continue;
    }
    bool sok = false;
    src->seed = v.toULongLong(&sok);
    if (!sok) return fail(QStringLiteral("--%1 must be a non-negative integer").arg(QString::fromLatin1(flag)));
    const auto sc = parseNumber(p.value(QString::fromLatin1(scale_flag)));
    if (!sc || !(std::isfinite(*sc) && *sc > 0))
      return fail(QStringLiteral("--%1 must be a finite number > 0").arg(QString::fromLatin1(scale_flag)));
    src->scale = *sc;
    src->enabled = true;
  }
  if (o.beta != 0.0f && !c_src.enabled) return fail(QStringLiteral("--beta other than 0 needs a C matrix: --c-seed N"));
  if (o.beta == 0.0f && c_src.enabled)
    return fail(QStringLiteral("--c-seed: C is read only when --beta is not 0 (cuBLASLt ignores C at beta = 0)"));
  o.threads = parseThreads(p.value(QStringLiteral("threads")));
  if (o.threads < 0) return 2;
  const QString kern = p.value(QStringLiteral("kernel")).toLower();
  if (kern == QStringLiteral("portable"))
    o.cpu_kernel = CpuKernel::Portable;
  else if (kern == QStringLiteral("avx512bf16") || kern == QStringLiteral("avx512-bf16"))
    o.cpu_kernel = CpuKernel::Avx512Bf16;
  else if (kern != QStringLiteral("auto"))
    return fail(QStringLiteral("--kernel must be auto, portable or avx512bf16"));
  const bool fp8_out = o.output == OutputType::E4M3FN || o.output == OutputType::E5M2;
  const QString os = p.value(QStringLiteral("output-scale"));
  std::optional<float> out_scale;
  if (os != QStringLiteral("auto")) {
    const auto v = parseNumber(os);
    if (!v || !(std::isfinite(*v) && *v > 0))
      return fail(QStringLiteral("--output-scale must be a finite number > 0 or 'auto'"));
    out_scale = static_cast<float>(*v);
    if (!fp8_out)
      return fail(QStringLiteral("--output-scale applies only to FP8 outputs (--output e4m3fn or e5m2): cuBLASLt "
                                 "multiplies D by scale_D only when D is FP8, and the output here is %1")
                      .arg(QString::fromLatin1(toString(o.output))));
  }
  const qulonglong seed = p.value(QStringLiteral("seed")).toULongLong(&ok);
  if (!ok) return fail(QStringLiteral("--seed must be a non-negative integer"));
  RandomMatrixOptions ro;
  const auto dist = parseDistribution(p.value(QStringLiteral("distribution")).toStdString());
  if (!dist) return fail(QStringLiteral("--distribution must be normal, uniform, lognormal or outliers"));
  ro.distribution = *dist;
  const auto sc = parseNumber(p.value(QStringLiteral("scale")));
  if (!sc || !(std::isfinite(*sc) && *sc > 0)) return fail(QStringLiteral("--scale must be a finite number > 0"));
  ro.scale = *sc;
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
  cfg.a.tensor = p.value(QStringLiteral("a-tensor")).toStdString();
  cfg.b.tensor = p.value(QStringLiteral("b-tensor")).toStdString();
  cfg.gemm = o;
  cfg.accumulation_preset = acc_preset ? acc_preset->name : std::string();
  cfg.c_source = c_src;
  cfg.bias_source = bias_src;
  cfg.tile = tile;
  cfg.output_scale_auto = fp8_out && !out_scale;
  if (out_scale) cfg.gemm.output_quant_scale = *out_scale;
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
    int64_t worst = -1;
    for (size_t i = 0; i < tiles.mean.size(); ++i)
      if (!std::isnan(tiles.mean[i]) && (worst < 0 || tiles.mean[i] > tiles.mean[static_cast<size_t>(worst)]))
        worst = static_cast<int64_t>(i);
    const double total_s = std::chrono::duration<double>(clock::now() - t0).count();
    // The exit status a CI reads: 1 when the kernel check failed, or when D holds NaN outputs from
    // NaN codes of pre-quantized operands (--allow-nonfinite accepts them). NaN or Inf in a float
    // tensor is the user's data: the run goes on with its warning and exits 0, as `run` does.
    const bool codes_in = cfg.a.pre.enabled() || cfg.b.pre.enabled();
    const bool nan_out = codes_in && r.total.nan_test > 0 && !p.isSet(QStringLiteral("allow-nonfinite"));
    const int exitCode = (det.check && !det.check->verdict.passed) || nan_out ? 1 : 0;
    const KernelCheckConfig check_cfg = cfg.check;

    if (json) {
      const QString cfg_a_tensor = QString::fromStdString(cfg.a.tensor),
                    cfg_b_tensor = QString::fromStdString(cfg.b.tensor);
      QJsonObject j;
      QJsonObject cfg;
      cfg[QStringLiteral("m")] = static_cast<double>(r.m);
      cfg[QStringLiteral("n")] = static_cast<double>(r.n);
      cfg[QStringLiteral("k")] = static_cast<double>(r.k);
      if (!cfg_a_tensor.isEmpty()) cfg[QStringLiteral("a_tensor")] = cfg_a_tensor;
      if (!cfg_b_tensor.isEmpty()) cfg[QStringLiteral("b_tensor")] = cfg_b_tensor;
      cfg[QStringLiteral("a_format")] = QString::fromStdString(fa->name());
      cfg[QStringLiteral("b_format")] = QString::fromStdString(fb->name());
      cfg[QStringLiteral("a_scaling")] = sa;
      cfg[QStringLiteral("b_scaling")] = sb;
      cfg[QStringLiteral("accumulation")] = QString::fromLatin1(toString(o.accumulation));
      if (acc_preset) {
        QJsonObject ap;
        ap[QStringLiteral("name")] = QString::fromStdString(acc_preset->name);
        ap[QStringLiteral("summary")] = QString::fromStdString(acc_preset->summary);
        ap[QStringLiteral("source")] = QString::fromStdString(acc_preset->source);
        ap[QStringLiteral("unsure")] = acc_preset->unsure;
        cfg[QStringLiteral("accumulation_preset")] = ap;
      }
      cfg[QStringLiteral("alpha")] = jsonNumber(o.alpha);
      cfg[QStringLiteral("beta")] = jsonNumber(o.beta);
      if (c_src.enabled) cfg[QStringLiteral("c_seed")] = static_cast<double>(c_src.seed);
      if (bias_src.enabled) cfg[QStringLiteral("bias_seed")] = static_cast<double>(bias_src.seed);
      cfg[QStringLiteral("promotion_interval")] = o.promotion_interval;
      cfg[QStringLiteral("fast_accum_bits")] = o.fast_accum_bits;
      cfg[QStringLiteral("fast_accum_group")] = o.fast_accum_group;
      cfg[QStringLiteral("fast_accum_promotes")] = o.fast_accum_promotes;
      cfg[QStringLiteral("output")] = QString::fromLatin1(toString(o.output));
      cfg[QStringLiteral("output_quant_scale")] = jsonNumber(o.output_quant_scale);
      cfg[QStringLiteral("seed")] = static_cast<double>(seed);
      cfg[QStringLiteral("distribution")] = QString::fromLatin1(toString(ro.distribution));
      cfg[QStringLiteral("scale")] = ro.scale;
      cfg[QStringLiteral("threads")] = o.threads;
      j[QStringLiteral("config")] = cfg;
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
      e[QStringLiteral("quantization")] = metricsJson(r.quantization);
      e[QStringLiteral("accumulation")] = metricsJson(r.accumulation);
      e[QStringLiteral("total")] = metricsJson(r.total);
      j[QStringLiteral("errors")] = e;
      QJsonObject ops;
      for (const auto& [name, st] : {std::pair{"A", &r.a_stats}, std::pair{"B", &r.b_stats}}) {
        QJsonObject op = statsJson(*st);
        if (auto q = res.value.getQuantized(layout::quantized(name)); q.ok()) addScalesJson(&op, q.value);
        ops[QString::fromLatin1(name)] = op;
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
      if (det.check) j[QStringLiteral("check")] = kernelCheckJson(*det.check, check_cfg);
      if (!stored.isEmpty()) {
        j[QStringLiteral("file")] = outFile;
        j[QStringLiteral("run")] = stored;
      }
      out(toJsonText(j));
      return exitCode;
    }
    QString s;
    s += QStringLiteral("GEMM %1 x %2 x %3 (M x N x K), %4 data, seed %5\n")
             .arg(r.m)
             .arg(r.n)
             .arg(r.k)
             .arg(imported ? QStringLiteral("imported") : QString::fromLatin1(toString(ro.distribution)))
             .arg(seed);
    s += QStringLiteral("A %1 (%2), B %3 (%4)\n")
             .arg(QString::fromStdString(fa->name()), sa, QString::fromStdString(fb->name()), sb);
    QString accs = QString::fromLatin1(toString(o.accumulation));
    if (o.accumulation == Accumulation::SplitFP32) accs += QStringLiteral(" (N_C = %1)").arg(o.promotion_interval);
    if (o.accumulation == Accumulation::FastAccum)
      accs += QStringLiteral(" — MODEL of undocumented hardware: %1 bits, groups of %2, %3")
                  .arg(o.fast_accum_bits)
                  .arg(o.fast_accum_group)
                  .arg(o.fast_accum_promotes ? QStringLiteral("promotion every %1").arg(o.promotion_interval)
                                             : QStringLiteral("no promotion"));
    s += QStringLiteral("accumulation %1, output %2%3\n")
             .arg(accs, QString::fromLatin1(toString(o.output)),
                  fp8_out ? QStringLiteral(" (scale_D %1)").arg(num(o.output_quant_scale, 6)) : QString());
    if (acc_preset)
      s += QStringLiteral("accumulation preset %1%2: %3\n  source: %4\n")
               .arg(QString::fromStdString(acc_preset->name),
                    acc_preset->unsure ? QStringLiteral(" (UNSURE)") : QString(),
                    QString::fromStdString(acc_preset->summary), QString::fromStdString(acc_preset->source));
    if (hasEpilogue(o))
      s += QStringLiteral("epilogue D = scale_D·(alpha·(A·B) + beta·C + bias): alpha %1, beta %2%3, bias %4\n")
               .arg(num(o.alpha, 9), num(o.beta, 9),
                    c_src.enabled ? QStringLiteral(" (C seed %1, scale %2)").arg(c_src.seed).arg(num(c_src.scale))
                                  : QString(),
                    bias_src.enabled ? QStringLiteral("seed %1, scale %2").arg(bias_src.seed).arg(num(bias_src.scale))
                                     : QStringLiteral("none"));
    s += QStringLiteral("backend %1 (--backend %2): %3\n  %4\n")
             .arg(QString::fromStdString(r.output.backend), QString::fromLatin1(toString(backend->request())),
                  QString::fromStdString(r.output.device), QString::fromStdString(r.output.algorithm));
    if (r.output.backend == "cuda")
      s += QStringLiteral("  FAST_ACCUM %1\n").arg(o.accumulation == Accumulation::FastAccum ? 1 : 0);
    s += QStringLiteral("time: quantize %1 s, gemm %2 s, ideal %3 s, quantized-exact %4 s\n\n")
             .arg(num(quantize_s, 3), num(r.output.seconds, 3), num(r.ideal_seconds, 3), num(r.exact_seconds, 3));
    s += QStringLiteral("%1 %2 %3 %4 %5 %6\n")
             .arg(QStringLiteral("error"), -28)
             .arg(QStringLiteral("max abs"), 11)
             .arg(QStringLiteral("max rel"), 11)
             .arg(QStringLiteral("RMSE"), 11)
             .arg(QStringLiteral("rel Frob"), 11)
             .arg(QStringLiteral("SQNR dB"), 9);
    const auto row = [&](const QString& name, const ErrorMetrics& m) {
      s += QStringLiteral("%1 %2 %3 %4 %5 %6\n")
               .arg(name, -28)
               .arg(num(m.max_abs), 11)
               .arg(num(m.max_rel), 11)
               .arg(num(m.rmse), 11)
               .arg(num(m.rel_fro), 11)
               .arg(num(m.sqnr_db, 4), 9);
    };
    if (r.total.nan_test > 0)
      s += QStringLiteral("D: %1 of %2 outputs are NaN%3; the error statistics below leave them out%4\n")
               .arg(r.total.nan_test)
               .arg(r.m * r.n)
               .arg(det.nan_outputs_from_codes > 0 ? QStringLiteral(" (%1 from NaN codes: %2 in A, %3 in B)")
                                                         .arg(det.nan_outputs_from_codes)
                                                         .arg(det.a_nan_codes)
                                                         .arg(det.b_nan_codes)
                                                   : QString())
               .arg(p.isSet(QStringLiteral("allow-nonfinite")) ? QString() : QStringLiteral(" (exit status 1)"));
    row(QStringLiteral("quantization (exact vs ideal)"), r.quantization);
    row(QStringLiteral("accumulation (D vs exact)"), r.accumulation);
    row(QStringLiteral("total (D vs ideal)"), r.total);
    if (r.total.nan_test + r.total.inf_test > 0)
      s += QStringLiteral("non-finite outputs: %1 NaN, %2 Inf (left out of the statistics)\n")
               .arg(r.total.nan_test)
               .arg(r.total.inf_test);
    s += QStringLiteral("\n%1 %2 %3 %4\n")
             .arg(QStringLiteral("operand"), -8)
             .arg(QStringLiteral("saturated"), 20)
             .arg(QStringLiteral("flushed to zero"), 20)
             .arg(QStringLiteral("subnormal"), 20);
    const auto srow = [&](const QString& name, const OperandStats& st) {
      auto cell = [&](int64_t c) { return QStringLiteral("%1 (%2%)").arg(c).arg(st.percent(c), 0, 'f', 3); };
      s += QStringLiteral("%1 %2 %3 %4\n")
               .arg(name, -8)
               .arg(cell(st.saturated), 20)
               .arg(cell(st.flushed), 20)
               .arg(cell(st.subnormal), 20);
    };
    srow(QStringLiteral("A"), r.a_stats);
    srow(QStringLiteral("B"), r.b_stats);
    if (r.d_saturated >= 0) {
      OperandStats d;
      d.elements = r.m * r.n;
      d.saturated = r.d_saturated;
      s += QStringLiteral("%1 %2  (the %3 output cast at scale_D %4, counted on the quantized-exact D)\n")
               .arg(QStringLiteral("D"), -8)
               .arg(QStringLiteral("%1 (%2%)").arg(d.saturated).arg(d.saturatedPercent(), 0, 'f', 3), 20)
               .arg(QString::fromLatin1(toString(o.output)), num(o.output_quant_scale, 6));
    }
    s += QStringLiteral("\namax_D %1\n").arg(num(r.output.amax_d, 8));
    if (worst >= 0)
      s += QStringLiteral("worst %1x%1 tile of |D - ideal|: tile (%2, %3), mean %4, max %5\n")
               .arg(tile)
               .arg(worst / tiles.grid_cols)
               .arg(worst % tiles.grid_cols)
               .arg(num(tiles.mean[static_cast<size_t>(worst)]), num(tiles.max[static_cast<size_t>(worst)]));
    for (const Issue& w : r.output.warnings)
      s += QStringLiteral("%1: %2 (%3)\n")
               .arg(w.severity == Severity::Info ? QStringLiteral("note") : QStringLiteral("warning"),
                    QString::fromStdString(w.what), QString::fromStdString(w.detail));
    if (det.check) s += kernelCheckText(*det.check, check_cfg);
    out(s);
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

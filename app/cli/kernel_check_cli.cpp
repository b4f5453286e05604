// fp8lab-cli gemm — codes operands and the kernel check from flags, and the check's report
// (kernel_check_cli.h).
#include "kernel_check_cli.h"

#include "cli_util.h"

#include "experiment/gemm_config.h"
#include "scaling/kernel_layout.h"

#include <QJsonArray>

#include <array>
#include <cmath>

namespace fp8lab::cli {

namespace {

QString S(const std::string& s) {
  return QString::fromStdString(s);
}

/// The per-operand codes flags: name suffix, help, value name.
struct OperandFlag {
  const char* suffix;
  const char* help;
  const char* value;
};
constexpr OperandFlag kOperandFlags[] = {
    {"codes", "%1 as codes: uint8 .npy / .safetensors:NAME (U8, F8_E4M3, F8_E5M2) [%2] (its format: --%3-format).",
     "SPEC"},
    {"scales", "%1's scales: a file (.npy / .safetensors:NAME) or one number (a per-tensor dequant scale).", "S"},
    {"block", "Codes one scale of %1 covers, ROWSxCOLS of the stored codes (1x128, 128x128, 1x32, ...).", "RxC"},
    {"scale-format", "%1's scale file: float32 (default) | E8M0 (UE8M0, float8_e8m0fnu) | E4M3FN (UE4M3).", "F"},
    {"scale-layout",
     "How %1's scale file is laid out: row_major (default) | cublaslt_vec32_ue8m0 | cublaslt_vec16_ue4m3 | "
     "cublaslt_vec128 | cublaslt_blk128x128 | deepgemm_mn_major | deepgemm_packed_ue8m0 (docs/gemm.md).",
     "L"},
    {"packed", "%1's codes are FP4 packed two a byte: low_first (PyTorch float4_e2m1fn_x2) | high_first.", "ORDER"},
    {"tensor-amax", "NVFP4 %1: Transformer Engine's tensor amax (the second scale level).", "X"},
    {"tensor-scale", "NVFP4 %1: torchao's per_tensor_scale (the second scale level).", "X"},
};

QString flag(char op, const char* suffix) {
  return QString(QLatin1Char(op)) + QLatin1Char('-') + QString::fromLatin1(suffix);
}

/// "a.block: ..." → "--a-block: ...", "check.max_ulp" → "--max-ulp", and the like.
QString flagNames(QString msg) {
  static const std::pair<const char*, const char*> map[] = {
      {"a.codes", "--a-codes"},
      {"a.scales", "--a-scales"},
      {"a.block", "--a-block"},
      {"a.scale_format", "--a-scale-format"},
      {"a.scale_layout", "--a-scale-layout"},
      {"a.packed", "--a-packed"},
      {"a.transpose", "--a-transpose"},
      {"a.tensor_amax", "--a-tensor-amax"},
      {"a.tensor_scale", "--a-tensor-scale"},
      {"a.format", "--a-format"},
      {"b.codes", "--b-codes"},
      {"b.scales", "--b-scales"},
      {"b.block", "--b-block"},
      {"b.scale_format", "--b-scale-format"},
      {"b.scale_layout", "--b-scale-layout"},
      {"b.packed", "--b-packed"},
      {"b.transpose", "--b-transpose"},
      {"b.tensor_amax", "--b-tensor-amax"},
      {"b.tensor_scale", "--b-tensor-scale"},
      {"b.format", "--b-format"},
      {"check.reference", "--reference"},
      {"check.max_ulp", "--max-ulp"},
      {"check.atol", "--atol"},
      {"check.rtol", "--rtol"},
      {"check.min_sqnr_db", "--min-sqnr"},
      {"check.fit_bits", "--fit-bits"},
      {"check.fit_groups", "--fit-groups"},
      {"check.fit_intervals", "--fit-intervals"},
      {"output_quant_scale", "--output-scale"},
      {"observed", "--observed"},
      {"format_a", "--a-format"},
      {"format_b", "--b-format"},
      {"scaling_b", "--b-scaling"},
      {"scaling", "--scaling"},
  };
  for (const auto& [key, f] : map) {
    const QString k = QString::fromLatin1(key) + QLatin1Char(':');
    if (msg.startsWith(k)) return QString::fromLatin1(f) + msg.mid(k.size() - 1);
  }
  return msg;
}

} // namespace

void addKernelCheckOptions(QCommandLineParser& p) {
  for (char op : {'a', 'b'}) {
    const QString name = op == 'a' ? QStringLiteral("A") : QStringLiteral("B");
    const QString shape = op == 'a' ? QStringLiteral("M, K") : QStringLiteral("K, N; [N, K] with --b-transpose");
    for (const auto& f : kOperandFlags) {
      QString help = QString::fromUtf8(f.help);
      help.replace(QStringLiteral("%1"), name).replace(QStringLiteral("%2"), shape);
      help.replace(QStringLiteral("%3"), QString(QLatin1Char(op)));
      p.addOption({flag(op, f.suffix), help, QString::fromLatin1(f.value)});
    }
    p.addOption({flag(op, "transpose"),
                 QStringLiteral("%1's codes file holds the transpose (B stored [N, K] K-major, as kernels hold it); "
                                "--%2-block and a row-major scale grid are the stored tensor's.")
                     .arg(name, QString(QLatin1Char(op)))});
  }
  const auto opt = [&](const char* name, const char* help, const char* value) {
    p.addOption({QString::fromLatin1(name), QString::fromUtf8(help), QString::fromLatin1(value)});
  };
  opt("observed",
      "Check a kernel's output D [M,N] against the CPU reference: float32 / float16 / bfloat16 (.npy, "
      ".safetensors:NAME, .h5:/PATH), or the uint8 / F8 codes of an FP8 --output with --output-scale = the kernel's "
      "scale_D. Exit status 0 when it passes, 1 when it fails.",
      "FILE");
  opt("reference", "The model the verdict compares with: exact (default) | fp32 | split | fast | a preset.", "MODEL");
  opt("max-ulp", "Pass when every element is within this many ULPs of the output type.", "N");
  opt("atol", "Pass when |observed - reference| <= atol + rtol·|reference| everywhere (numpy.isclose).", "X");
  opt("rtol", "See --atol.", "X");
  opt("min-sqnr", "Pass when the SQNR of observed vs reference is at least this (dB).", "DB");
  p.addOption({QStringLiteral("allow-nonfinite"),
               QStringLiteral("Exit 0 although D holds NaN outputs; with --observed: accept NaN / Inf outputs where "
                              "the reference has the same (they fail by default).")});
  p.addOption({QStringLiteral("no-fit"), QStringLiteral("Skip the fit of the accumulation models.")});
  opt("fit-bits", "Significant bits the fit tries (default 10..28).", "LIST");
  opt("fit-groups", "Groups the fit tries (default 1,2,4,8,16,32,64).", "LIST");
  opt("fit-intervals", "Promotion intervals N_C the fit tries (default 32,64,128,256,512).", "LIST");
}

bool codesOperand(const QCommandLineParser& p, char operand) {
  return p.isSet(flag(operand, "codes"));
}

QString applyKernelCheckFlags(const QCommandLineParser& p, GemmExperimentConfig* cfg) {
  Json j = gemmConfigJson(*cfg);
  for (char op : {'a', 'b'}) {
    if (!codesOperand(p, op)) {
      for (const auto& f : kOperandFlags)
        if (p.isSet(flag(op, f.suffix)))
          return QStringLiteral("--%1 describes %2 given as codes: add --%3")
              .arg(flag(op, f.suffix), QString(QLatin1Char(op)).toUpper(), flag(op, "codes"));
      if (p.isSet(flag(op, "transpose")))
        return QStringLiteral("--%1 applies to codes operands (--%2); an imported tensor: --%3-tensor FILE with "
                              "\"transpose\" in a config")
            .arg(flag(op, "transpose"), flag(op, "codes"), QString(QLatin1Char(op)));
      continue;
    }
    // The dimensions the codes file fixes: A [M, K], B [K, N].
    const std::array<const char*, 2> dims =
        op == 'a' ? std::array<const char*, 2>{"m", "k"} : std::array<const char*, 2>{"k", "n"};
    for (const char* dim : dims)
      if (p.isSet(QString::fromLatin1(dim)))
        return QStringLiteral("--%1 comes from the shape of --%2 '%3'; leave it out")
            .arg(QString::fromLatin1(dim), flag(op, "codes"), p.value(flag(op, "codes")));
    const std::string a = op == 'a' ? "a" : "b";
    Json o = Json::object();
    o["codes"] = p.value(flag(op, "codes")).toStdString();
    o["format"] = op == 'a' ? cfg->format_a : cfg->format_b;
    if (!p.isSet(flag(op, "scales")))
      return QStringLiteral("--%1 needs --%2: a scale file or one number (a per-tensor dequant scale)")
          .arg(flag(op, "codes"), flag(op, "scales"));
    const QString sv = p.value(flag(op, "scales"));
    if (const auto x = parseNumber(sv))
      o["scales"] = *x;
    else
      o["scales"] = sv.toStdString();
    if (p.isSet(flag(op, "block"))) {
      QString b = p.value(flag(op, "block"));
      b.replace(QLatin1Char(','), QLatin1Char('x')).replace(QLatin1Char('X'), QLatin1Char('x'));
      const QStringList parts = b.split(QLatin1Char('x'));
      bool ok1 = false, ok2 = false;
      const qlonglong r = parts.size() == 2 ? parts[0].trimmed().toLongLong(&ok1) : 0;
      const qlonglong c = parts.size() == 2 ? parts[1].trimmed().toLongLong(&ok2) : 0;
      if (!ok1 || !ok2 || r < 1 || c < 1)
        return QStringLiteral("--%1 must be ROWSxCOLS with both >= 1 (1x128, 128x128, 1x32), got '%2'")
            .arg(flag(op, "block"), p.value(flag(op, "block")));
      o["block"] = Json::array({int64_t(r), int64_t(c)});
    }
    if (p.isSet(flag(op, "scale-format"))) o["scale_format"] = p.value(flag(op, "scale-format")).toStdString();
    if (p.isSet(flag(op, "scale-layout"))) o["scale_layout"] = p.value(flag(op, "scale-layout")).toStdString();
    if (p.isSet(flag(op, "packed"))) o["packed"] = p.value(flag(op, "packed")).toStdString();
    if (p.isSet(flag(op, "transpose"))) o["transpose"] = true;
    for (const char* k : {"tensor-amax", "tensor-scale"})
      if (p.isSet(flag(op, k))) {
        const auto x = parseNumber(p.value(flag(op, k)));
        if (!x) return QStringLiteral("--%1: %2").arg(flag(op, k), numberProblem(p.value(flag(op, k))));
        o[std::string(k) == "tensor-amax" ? "tensor_amax" : "tensor_scale"] = *x;
      }
    j[a] = o;
    j.erase(op == 'a' ? "format_a" : "format_b");
    for (const char* dim : dims) j.erase(dim);
  }
  // (--allow-nonfinite also lets a run without --observed exit 0 with NaN outputs.)
  if (!codesOperand(p, 'a') && !codesOperand(p, 'b') && !p.isSet(QStringLiteral("observed"))) {
    // Nothing for the config parser: only the refusals of flags given without their subject.
    for (const char* f :
         {"reference", "max-ulp", "atol", "rtol", "min-sqnr", "no-fit", "fit-bits", "fit-groups", "fit-intervals"})
      if (p.isSet(QString::fromLatin1(f)))
        return QStringLiteral("--%1 checks a kernel's output: add --observed FILE").arg(QString::fromLatin1(f));
    return {};
  }
  static const char* check_flags[] = {"reference", "max-ulp",  "atol",       "rtol",         "min-sqnr",
                                      "no-fit",    "fit-bits", "fit-groups", "fit-intervals"};
  if (!p.isSet(QStringLiteral("observed"))) {
    for (const char* f : check_flags)
      if (p.isSet(QString::fromLatin1(f)))
        return QStringLiteral("--%1 checks a kernel's output: add --observed FILE").arg(QString::fromLatin1(f));
  } else {
    j["observed"] = p.value(QStringLiteral("observed")).toStdString();
    Json c = Json::object();
    if (p.isSet(QStringLiteral("reference"))) c["reference"] = p.value(QStringLiteral("reference")).toStdString();
    for (const auto& [f, key] :
         {std::pair{"max-ulp", "max_ulp"}, {"atol", "atol"}, {"rtol", "rtol"}, {"min-sqnr", "min_sqnr_db"}}) {
      if (!p.isSet(QString::fromLatin1(f))) continue;
      const auto x = parseNumber(p.value(QString::fromLatin1(f)));
      if (!x)
        return QStringLiteral("--%1: %2").arg(QString::fromLatin1(f), numberProblem(p.value(QString::fromLatin1(f))));
      c[key] = *x;
    }
    if (p.isSet(QStringLiteral("allow-nonfinite"))) c["allow_nonfinite"] = true;
    if (p.isSet(QStringLiteral("no-fit"))) c["fit"] = false;
    for (const auto& [f, key] :
         {std::pair{"fit-bits", "fit_bits"}, {"fit-groups", "fit_groups"}, {"fit-intervals", "fit_intervals"}})
      if (p.isSet(QString::fromLatin1(f))) c[key] = p.value(QString::fromLatin1(f)).toStdString();
    j["check"] = c;
  }
  GemmExperimentConfig out;
  const std::string err = parseGemmConfig(j, &out);
  if (!err.empty()) return flagNames(S(err));
  // What the config does not carry: the CPU kernel, threads and the memory limit.
  out.gemm.threads = cfg->gemm.threads;
  out.gemm.cpu_kernel = cfg->gemm.cpu_kernel;
  out.gemm.memory_limit_bytes = cfg->gemm.memory_limit_bytes;
  out.store_inputs = cfg->store_inputs;
  out.store_quantized = cfg->store_quantized;
  out.store_error_maps = cfg->store_error_maps;
  *cfg = std::move(out);
  return {};
}

} // namespace fp8lab::cli

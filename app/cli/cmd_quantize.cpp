// fp8lab-cli quantize — quantize a small tensor with a scaling strategy (core/scaling) and show
// codes, both scale conventions, E8M0 scale codes (MX) and saturation / underflow counts.
#include "cli_util.h"
#include "command.h"
#include "schema_flags.h"

#include "experiment/quantize_report.h"
#include "formats/format.h"

#include <QCommandLineParser>

namespace fp8lab::cli {
namespace {

int runQuantize(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(
      QStringLiteral(
          "Quantize a tensor with a scaling strategy and print its codes, scales in both conventions\n"
          "(dequant: x ≈ decode(code)·dequant_scale, what GEMMs take; quant: x_q = cast(x·quant_scale)),\n"
          "E8M0 scale codes for MX, and saturated / underflow counts. Values are float32 (like a float32\n"
          "tensor) unless --float64. Delayed presets (flax_delayed, te_delayed) first replay --amax-history.\n"
          "NVFP4 presets (nvfp4_*) give E2M1 codes, E4M3 block scale codes and the fp32 tensor scale.\n"
          "Presets: %1")
          .arg(QString::fromStdString(quantizePresetList())));
  p.addOption({{QStringLiteral("f"), QStringLiteral("format")},
               QStringLiteral("Element format (E4M3FN, E5M2, E2M1, ...)."),
               QStringLiteral("F")});
  p.addOption({{QStringLiteral("s"), QStringLiteral("scaling")},
               QStringLiteral("Scaling preset (default te_current)."),
               QStringLiteral("S"),
               QStringLiteral("te_current")});
  p.addOption(
      {QStringLiteral("values"), QStringLiteral("Comma-separated values (row-major)."), QStringLiteral("LIST")});
  p.addOption({QStringLiteral("input"),
               QStringLiteral("Read values (whitespace/comma separated) from FILE; '-' is stdin."),
               QStringLiteral("FILE")});
  p.addOption({QStringLiteral("shape"), QStringLiteral("Tensor shape RxC (default 1xN)."), QStringLiteral("RxC")});
  p.addOption({QStringLiteral("axis"), QStringLiteral("Contraction axis: cols (A[M,K], default) or rows (B[K,N])."),
               QStringLiteral("AXIS"), QStringLiteral("cols")});
  p.addOption({QStringLiteral("block"),
               QStringLiteral("Block edge for 1-D / 2-D block presets (default: preset's, 128 or 32)."),
               QStringLiteral("B")});
  p.addOption(
      {QStringLiteral("pow2"), QStringLiteral("Power-of-two scales (TE mask / torchao log2 / DeepGEMM UE8M0).")});
  p.addOption({QStringLiteral("no-pow2"), QStringLiteral("No power-of-two rounding of the scale.")});
  p.addOption({QStringLiteral("amax-epsilon"), QStringLiteral("TE rules: raise amax below EPS to EPS."),
               QStringLiteral("EPS")});
  p.addOption({QStringLiteral("rounding"),
               QStringLiteral("Element rounding: rne (default) | rtz | ru | rd | stochastic."), QStringLiteral("MODE"),
               QStringLiteral("rne")});
  p.addOption({QStringLiteral("seed"), QStringLiteral("Seed for stochastic rounding."), QStringLiteral("N"),
               QStringLiteral("0")});
  p.addOption({QStringLiteral("no-saturate"), QStringLiteral("Overflow to Inf/NaN instead of ±max.")});
  p.addOption(
      {QStringLiteral("float64"), QStringLiteral("Quantize the values as float64 (one rounding from double).")});
  // The scaling parameters quantize shares with train and the desktop app: the schema's.
  for (const ParamSpec& s : paramSchema())
    if (s.usedBy("quantize") && !s.flag.empty()) p.addOption(schemaOption(s));
  p.addOption({QStringLiteral("amax-history"),
               QStringLiteral("Delayed presets: amaxes of earlier steps, oldest first."), QStringLiteral("LIST")});
  p.addOption({QStringLiteral("json"), QStringLiteral("Machine-readable JSON output.")});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (!p.positionalArguments().isEmpty())
    return fail(QStringLiteral("unexpected argument '%1' (values go in --values or --input)")
                    .arg(p.positionalArguments().first()));

  const QString sname = p.value(QStringLiteral("scaling"));
  const QuantizeFormatChoice choice =
      quantizeFormat(sname.toStdString(), p.value(QStringLiteral("format")).toStdString());
  if (choice.format) noteFormatChoice(*choice.format);
  if (!choice.error.empty()) return fail(QString::fromStdString(choice.error));
  const Format* fmt = choice.format;

  // Values.
  std::vector<double> v;
  const bool has_values = p.isSet(QStringLiteral("values")), has_input = p.isSet(QStringLiteral("input"));
  if (has_values == has_input) return fail(QStringLiteral("give exactly one of --values v1,v2,... or --input FILE"));
  if (has_values) {
    QString problem;
    const auto l = parseNumberList(p.value(QStringLiteral("values")), &problem);
    if (!l) return fail(QStringLiteral("--values: %1").arg(problem));
    v = *l;
  } else {
    QString err;
    const auto l = readNumberFile(p.value(QStringLiteral("input")), &err);
    if (!l) return fail(err);
    v = *l;
  }
  if (v.empty()) return fail(QStringLiteral("no values given"));
  int64_t rows = 1, cols = static_cast<int64_t>(v.size());
  if (p.isSet(QStringLiteral("shape"))) {
    if (!parseShapeText(p.value(QStringLiteral("shape")).toStdString(), &rows, &cols))
      return fail(
          QStringLiteral("--shape must look like RxC, e.g. 2x64; got '%1'").arg(p.value(QStringLiteral("shape"))));
    if (rows < 1 || cols < 1)
      return fail(QStringLiteral("--shape %1x%2: rows and columns must each be at least 1").arg(rows).arg(cols));
    if (rows * cols != static_cast<int64_t>(v.size()))
      return fail(
          QStringLiteral("--shape %1x%2 needs %3 values, got %4").arg(rows).arg(cols).arg(rows * cols).arg(v.size()));
  }
  const QString ax = p.value(QStringLiteral("axis")).toLower();
  const std::optional<Axis> axis = parseAxisName(ax.toStdString());
  if (!axis) return fail(QStringLiteral("--axis must be rows or cols, got '%1'").arg(ax));

  EncodeOptions enc;
  const auto rnd = parseRounding(p.value(QStringLiteral("rounding")).toStdString());
  if (!rnd)
    return fail(QStringLiteral("unknown --rounding '%1' (rne, rtz, ru, rd, stochastic)")
                    .arg(p.value(QStringLiteral("rounding"))));
  enc.rounding = *rnd;
  enc.saturate = !p.isSet(QStringLiteral("no-saturate"));
  bool ok = false;
  const qulonglong seed = p.value(QStringLiteral("seed")).toULongLong(&ok);
  if (!ok) return fail(QStringLiteral("--seed must be a non-negative integer"));

  const QuantizeFlags flags{[&](const char* o) { return p.isSet(QString::fromLatin1(o)); },
                            [&](const char* o) { return p.value(QString::fromLatin1(o)).toStdString(); }};
  std::string err;
  const bool f64 = p.isSet(QStringLiteral("float64"));
  const auto r = quantizeWithPreset(sname.toStdString(), *fmt, v, rows, cols, *axis, enc, seed, f64, flags, &err);
  if (!r) return fail(QString::fromStdString(err));
  if (p.isSet(QStringLiteral("json")))
    out(toJsonText(toQJson(quantizeReportJson(*fmt, sname.toStdString(), *r))));
  else
    out(quantizeReportText(*fmt, *r, v, f64));
  return 0;
}

const CommandRegistrar reg({QStringLiteral("quantize"),
                            QStringLiteral("Quantize values with a scaling strategy (codes, scales, counts)"),
                            runQuantize, 30});

} // namespace
} // namespace fp8lab::cli

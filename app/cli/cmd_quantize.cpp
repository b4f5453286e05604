// fp8lab-cli quantize — quantize a small tensor with a scaling strategy (core/scaling) and show
// codes, both scale conventions, E8M0 scale codes (MX) and saturation / underflow counts.
#include "cli_util.h"
#include "command.h"
#include "schema_flags.h"

#include "common/names.h"
#include "formats/format.h"
#include "scaling/delayed_scaling.h"
#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <QCommandLineParser>
#include <QFile>
#include <QRegularExpression>

#include <bit>
#include <charconv>
#include <cmath>

namespace fp8lab::cli {
namespace {

bool parseShape(const QString& s, int64_t* r, int64_t* c) {
  static const QRegularExpression re(QStringLiteral("^\\s*(\\d+)\\s*[xX,*]\\s*(\\d+)\\s*$"));
  const auto m = re.match(s);
  if (!m.hasMatch()) return false;
  bool ok1 = false, ok2 = false;
  *r = m.captured(1).toLongLong(&ok1);
  *c = m.captured(2).toLongLong(&ok2);
  return ok1 && ok2;
}

QString presetList() {
  QStringList n;
  for (const auto& p : scalingPresets()) n << QString::fromStdString(p.name);
  for (const auto& p : nvfp4Presets()) n << QString::fromStdString(p.name);
  return n.join(QStringLiteral(", "));
}

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
          .arg(presetList()));
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
  const std::optional<Nvfp4Config> nv = nvfp4Preset(sname.toStdString());
  QString fname = p.value(QStringLiteral("format"));
  if (nv && fname.isEmpty()) fname = QStringLiteral("E2M1");
  if (fname.isEmpty()) return fail(QStringLiteral("--format is required (one of: %1)").arg(formatHelpList()));
  const Format* fmt = Format::byName(fname.toStdString());
  if (!fmt) return fail(QStringLiteral("unknown format '%1' (known: %2)").arg(fname, formatHelpList()));
  noteFormatChoice(*fmt);
  if (nv && fmt != &Format::E2M1())
    return fail(QStringLiteral("'%1' is NVFP4, whose elements are E2M1; --format %2 does not apply (leave it out or "
                               "give E2M1)")
                    .arg(sname, fname));
  if (fmt->bits() > 8)
    return fail(
        QStringLiteral("%1 has %2 bits; quantize needs a format of at most 8 bits").arg(fname).arg(fmt->bits()));

  // Values.
  std::vector<double> v;
  const bool has_values = p.isSet(QStringLiteral("values")), has_input = p.isSet(QStringLiteral("input"));
  if (has_values == has_input) return fail(QStringLiteral("give exactly one of --values v1,v2,... or --input FILE"));
  if (has_values) {
    QString bad;
    const auto l = parseNumberList(p.value(QStringLiteral("values")), &bad);
    if (!l) return fail(QStringLiteral("--values: %1").arg(numberProblem(bad)));
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
    if (!parseShape(p.value(QStringLiteral("shape")), &rows, &cols))
      return fail(
          QStringLiteral("--shape must look like RxC, e.g. 2x64; got '%1'").arg(p.value(QStringLiteral("shape"))));
    if (rows * cols != static_cast<int64_t>(v.size()))
      return fail(
          QStringLiteral("--shape %1x%2 needs %3 values, got %4").arg(rows).arg(cols).arg(rows * cols).arg(v.size()));
  }
  Axis axis = Axis::Cols;
  const QString ax = p.value(QStringLiteral("axis")).toLower();
  if (ax == QStringLiteral("rows") || ax == QStringLiteral("row") || ax == QStringLiteral("0"))
    axis = Axis::Rows;
  else if (ax != QStringLiteral("cols") && ax != QStringLiteral("col") && ax != QStringLiteral("columns") &&
           ax != QStringLiteral("1"))
    return fail(QStringLiteral("--axis must be rows or cols, got '%1'").arg(ax));

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

  const bool json = p.isSet(QStringLiteral("json"));
  const bool f64 = p.isSet(QStringLiteral("float64"));
  std::vector<float> vf(v.begin(), v.end());
  QuantizedTensor q;
  QString strategy_note;
  // The Hadamard presets quantize the input rotated along the block axis: the codes and the
  // dequantized values are those of the rotated tensor, listed beside the input.
  std::vector<float> rotated;
  const std::string sl = normalizedName(sname.toStdString());
  // A delayed preset (flax_delayed, te_delayed, ...): `delayed` says whether sl names one.
  const std::optional<DelayedPreset> parsed_delayed = sl.ends_with("_delayed") ? parseDelayedPreset(sl) : std::nullopt;
  const bool delayed = parsed_delayed.has_value();
  const DelayedPreset delayed_preset = parsed_delayed.value_or(DelayedPreset::TE);
  // Every option a preset does not use is refused, naming why: an option that silently does
  // nothing would report a result the user did not ask for.
  auto isSet = [&](const char* o) { return p.isSet(QString::fromLatin1(o)); };
  if (isSet("seed") && enc.rounding != Rounding::Stochastic && !(nv && nv->stochastic_rounding))
    return fail(
        QStringLiteral("--seed applies only to --rounding stochastic (the other roundings draw no random bits)"));
  if (nv) {
    for (const char* o : {"block", "pow2", "no-pow2", "amax-epsilon", "margin", "history-len", "algo", "amax-history",
                          "rounding", "no-saturate", "float64"})
      if (isSet(o))
        return fail(QStringLiteral("--%1 does not apply to '%2': NVFP4 fixes 1x16 blocks, E4M3 block scales, the "
                                   "system's rounding (RNE, or stochastic for *_sr presets) and float32 input")
                        .arg(QString::fromLatin1(o), sname));
    if (isSet("seed") && !nv->stochastic_rounding)
      return fail(QStringLiteral("--seed applies to the stochastic-rounding NVFP4 presets (nvfp4_te_sr, "
                                 "nvfp4_te_rht_sr); '%1' rounds to nearest")
                      .arg(sname));
    Nvfp4Config c = *nv;
    c.seed = seed;
    try {
      const Nvfp4Tensor t = quantizeNvfp4(vf.data(), rows, cols, c, axis);
      q = toQuantizedTensor(t, c, vf.data());
      if (c.rht) {
        rotated = rhtOperand(vf.data(), rows, cols, c.rht_sign_mask, axis);
        strategy_note = QStringLiteral("rotated: the input rounded to BF16 and rotated along the block axis by R = "
                                       "diag(s)·H16/4 (sign mask 0x%1), what the codes encode; dequantized is in "
                                       "that basis (R is orthogonal: the GEMM's second rotated operand undoes it)")
                            .arg(c.rht_sign_mask, 4, 16, QLatin1Char('0'));
      }
    } catch (const std::invalid_argument& e) {
      return fail(QStringLiteral("%1: %2").arg(sname, QString::fromStdString(e.what())));
    }
  } else if (delayed) {
    const QString delayed_reason = QStringLiteral("%1 follows %2, whose per-tensor delayed scaling %3")
                                       .arg(QString::fromStdString(sl), delayed_preset == DelayedPreset::Flax
                                                                            ? QStringLiteral("Flax fp8_ops")
                                                                            : QStringLiteral("TE DelayedScaling"));
    if (isSet("pow2") || isSet("no-pow2"))
      return fail(QStringLiteral("--pow2 / --no-pow2: ") +
                  delayed_reason.arg(QStringLiteral("computes float32 scales with no power-of-two option; for TE's "
                                                    "power-of-two scales with a margin use --scaling te_current "
                                                    "--pow2 --margin M")));
    if (isSet("block"))
      return fail(QStringLiteral("--block: ") + delayed_reason.arg(QStringLiteral("has one scale per tensor")));
    if (isSet("axis"))
      return fail(
          QStringLiteral("--axis: ") +
          delayed_reason.arg(QStringLiteral("has one scale per tensor, so the contraction axis changes nothing")));
    if (isSet("amax-epsilon"))
      return fail(QStringLiteral("--amax-epsilon: ") +
                  delayed_reason.arg(QStringLiteral("keeps the previous scale for amax 0 instead of an epsilon")));
    if (isSet("rounding") || isSet("no-saturate") || isSet("seed"))
      return fail(
          QStringLiteral("--rounding / --no-saturate / --seed: ") +
          delayed_reason.arg(QStringLiteral("casts with round-to-nearest-even, saturating, as the system does")));
    DelayedScalingConfig dc;
    dc.preset = delayed_preset;
    for (const char* k : {"history_len", "margin"})
      if (const QString why = schemaFlagProblem(p, param(k, ParamScope::None)); !why.isEmpty()) return fail(why);
    dc.history_len = p.value(QStringLiteral("history-len")).toInt(&ok);
    const auto al = parseAmaxAlgo(p.value(QStringLiteral("algo")).toStdString());
    if (!al) return fail(QStringLiteral("--algo must be max or most_recent"));
    dc.algo = *al;
    dc.margin = p.value(QStringLiteral("margin")).toInt(&ok);
    if (f64) return fail(QStringLiteral("--float64 is not available for delayed presets (their state is float32)"));
    DelayedScaling st(*fmt, dc); // throws invalid_argument with a message (e.g. Flax + most_recent)
    if (p.isSet(QStringLiteral("amax-history"))) {
      QString bad;
      const auto h = parseNumberList(p.value(QStringLiteral("amax-history")), &bad);
      if (!h) return fail(QStringLiteral("--amax-history: %1").arg(numberProblem(bad)));
      for (double a : *h) st.update(static_cast<float>(a));
    }
    DelayedUpdate u;
    q = st.quantizeStep(vf.data(), rows, cols, &u);
    strategy_note = QStringLiteral("after %1 earlier step(s); this step's amax updated the state: stored scale now %2")
                        .arg(st.steps() - 1)
                        .arg(shortestFloat(st.scale()));
  } else {
    auto cfg = scalingPreset(sname.toStdString());
    if (!cfg) return fail(QStringLiteral("unknown --scaling '%1' (presets: %2)").arg(sname, presetList()));
    for (const char* o : {"history-len", "algo", "amax-history"})
      if (isSet(o))
        return fail(QStringLiteral("--%1 applies to delayed presets (flax_delayed, te_delayed, te_jax_delayed); '%2' "
                                   "is current scaling, computed from this tensor's own amax")
                        .arg(QString::fromLatin1(o), sname));
    if (isSet("margin")) {
      if (cfg->rule != ScaleRule::TransformerEngine)
        return fail(QStringLiteral("--margin applies to the TE rule (te_current, te_current_pow2, te_block_*) and the "
                                   "delayed presets; '%1' follows %2, which has no margin")
                        .arg(sname, QString::fromLatin1(toString(cfg->rule))));
      if (const QString why = schemaFlagProblem(p, param("margin", ParamScope::None)); !why.isEmpty()) return fail(why);
      cfg->margin = p.value(QStringLiteral("margin")).toInt(&ok);
    }
    const bool mx_rule = isMxRule(cfg->rule);
    if (mx_rule && (isSet("pow2") || isSet("no-pow2")))
      return fail(QStringLiteral("--pow2 / --no-pow2: '%1' has E8M0 scales, powers of two by construction").arg(sname));
    if (isSet("axis") && cfg->granularity == Granularity::PerTensor)
      return fail(
          QStringLiteral("--axis: '%1' has one scale per tensor, so the contraction axis changes nothing").arg(sname));
    if (p.isSet(QStringLiteral("block"))) {
      if (cfg->granularity != Granularity::Block1D && cfg->granularity != Granularity::Block2D)
        return fail(QStringLiteral("--block applies to block presets only; '%1' is %2")
                        .arg(sname, QLatin1String(toString(cfg->granularity))));
      cfg->block = p.value(QStringLiteral("block")).toLongLong(&ok);
      if (!ok || cfg->block < 1) return fail(QStringLiteral("--block must be a positive integer"));
    }
    if (p.isSet(QStringLiteral("pow2")) && p.isSet(QStringLiteral("no-pow2")))
      return fail(QStringLiteral("--pow2 and --no-pow2 exclude each other"));
    if (p.isSet(QStringLiteral("pow2"))) cfg->pow2 = true;
    if (p.isSet(QStringLiteral("no-pow2"))) cfg->pow2 = false;
    if (p.isSet(QStringLiteral("amax-epsilon"))) {
      if (cfg->rule != ScaleRule::TransformerEngine)
        return fail(QStringLiteral("--amax-epsilon applies to TE rules only (torchao uses 1e-12, DeepGEMM 1e-4)"));
      const auto e = parseNumber(p.value(QStringLiteral("amax-epsilon")));
      if (!e || !(*e >= 0)) return fail(QStringLiteral("--amax-epsilon must be a non-negative number"));
      cfg->amax_epsilon = static_cast<float>(*e);
    }
    cfg->encode = enc;
    cfg->seed = seed;
    q = f64 ? quantize(v.data(), rows, cols, *fmt, *cfg, axis) : quantize(vf.data(), rows, cols, *fmt, *cfg, axis);
  }

  const QuantizeStats& s = q.stats;
  if (json) {
    QJsonObject o;
    o[QStringLiteral("format")] = QString::fromStdString(fmt->name());
    o[QStringLiteral("scaling")] = sname;
    o[QStringLiteral("strategy")] = QString::fromStdString(q.strategy);
    o[QStringLiteral("shape")] = QJsonArray{static_cast<qint64>(rows), static_cast<qint64>(cols)};
    o[QStringLiteral("block")] = QJsonArray{static_cast<qint64>(q.block.rows), static_cast<qint64>(q.block.cols)};
    o[QStringLiteral("scale_grid")] =
        QJsonArray{static_cast<qint64>(q.blockRows()), static_cast<qint64>(q.blockCols())};
    o[QStringLiteral("scale_op")] =
        q.scale_op == Format::ScaleOp::Divide ? QStringLiteral("divide") : QStringLiteral("multiply");
    QJsonArray codes, deq;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        codes.append(QString::fromStdString(fmt->hexString(q.codes[static_cast<size_t>(i * cols + j)])));
        deq.append(jsonNumber(q.dequantizedAt(i, j)));
      }
    o[QStringLiteral("codes")] = codes;
    o[QStringLiteral("dequantized")] = deq;
    if (!rotated.empty()) {
      QJsonArray rot;
      for (float x : rotated) rot.append(jsonNumber(x));
      o[QStringLiteral("rotated")] = rot;
    }
    // dequant_scales are the factors x ≈ decode(code) · dequant_scale uses: for two-level formats
    // (NVFP4) each block's E4M3 scale times the tensor level (block_scales lists the E4M3 values).
    QJsonArray dq, qs;
    const bool two_level = q.tensor_scale.kind != TensorScale::Kind::None;
    for (float x : q.dequant_scales) dq.append(jsonNumber(two_level ? q.tensor_scale.blockFactor(x) : x));
    if (two_level) {
      QJsonArray bs;
      for (float x : q.dequant_scales) bs.append(jsonNumber(x));
      o[QStringLiteral("block_scales")] = bs;
    }
    for (float x : q.quant_scales) qs.append(jsonNumber(x));
    o[QStringLiteral("dequant_scales")] = dq;
    o[QStringLiteral("quant_scales")] = qs;
    if (!q.scale_codes.empty()) {
      QJsonArray sc;
      for (uint8_t c : q.scale_codes) sc.append(QString::fromStdString(q.scaleCodeFormat().hexString(c)));
      o[QStringLiteral("scale_codes")] = sc;
      o[QStringLiteral("scale_format")] = QString::fromStdString(q.scaleCodeFormat().name());
    }
    if (q.tensor_scale.kind != TensorScale::Kind::None) {
      // The second level as the system keeps it: TE the amax (S_enc = fp4_fp8_max / amax is the
      // quant multiplier), torchao per_tensor_scale (a dequant factor).
      const bool te = q.tensor_scale.kind == TensorScale::Kind::TeAmax;
      QJsonObject ts;
      ts[QStringLiteral("kind")] = te ? QStringLiteral("te_amax") : QStringLiteral("torchao_per_tensor_scale");
      ts[QStringLiteral("amax")] = jsonNumber(q.tensor_scale.amax);
      ts[QStringLiteral("value")] = jsonNumber(q.tensor_scale.value);
      ts[QStringLiteral("value_f32_hex")] = QString::asprintf("0x%08X", std::bit_cast<uint32_t>(q.tensor_scale.value));
      ts[QStringLiteral("convention")] = te ? QStringLiteral("quant multiplier S_enc = fp4_fp8_max / amax")
                                            : QStringLiteral("dequant factor amax / 2688");
      if (te) ts[QStringLiteral("fp4_fp8_max")] = jsonNumber(q.tensor_scale.fp4_fp8_max);
      o[QStringLiteral("tensor_scale")] = ts;
    }
    o[QStringLiteral("saturated")] = static_cast<qint64>(s.saturated);
    o[QStringLiteral("underflow")] = static_cast<qint64>(s.underflow);
    o[QStringLiteral("subnormal")] = static_cast<qint64>(s.subnormal);
    o[QStringLiteral("nan_inputs")] = static_cast<qint64>(s.nan_inputs);
    o[QStringLiteral("inf_inputs")] = static_cast<qint64>(s.inf_inputs);
    o[QStringLiteral("zero_inputs")] = static_cast<qint64>(s.zero_inputs);
    out(toJsonText(o));
    return 0;
  }
  QString t;
  t += QStringLiteral("format %1, %2\n").arg(QString::fromStdString(fmt->name()), QString::fromStdString(q.strategy));
  if (!strategy_note.isEmpty()) t += strategy_note + QLatin1Char('\n');
  t += QStringLiteral("shape %1x%2, scale block %3x%4, scale grid %5x%6, %7\n")
           .arg(rows)
           .arg(cols)
           .arg(q.block.rows)
           .arg(q.block.cols)
           .arg(q.blockRows())
           .arg(q.blockCols())
           .arg(q.scale_op == Format::ScaleOp::Divide ? QStringLiteral("x_q = cast(x / dequant_scale)")
                                                      : QStringLiteral("x_q = cast(x * quant_scale)"));
  if (q.tensor_scale.kind == TensorScale::Kind::TeAmax)
    t += QStringLiteral("tensor scale (TE): amax %1, S_enc = %2/amax = %3 (quant multiplier); block factor = "
                        "E4M3 scale * amax * (1/%2)\n")
             .arg(shortestFloat(q.tensor_scale.amax), shortestFloat(q.tensor_scale.fp4_fp8_max),
                  shortestFloat(q.tensor_scale.value));
  else if (q.tensor_scale.kind == TensorScale::Kind::TorchaoPts)
    t += QStringLiteral("tensor scale (torchao): per_tensor_scale = amax/2688 = %1 (dequant factor, amax %2); block "
                        "factor = per_tensor_scale * E4M3 scale\n")
             .arg(shortestFloat(q.tensor_scale.value), shortestFloat(q.tensor_scale.amax));
  t += QStringLiteral("scales (block grid, row-major):\n");
  for (size_t k = 0; k < q.dequant_scales.size(); ++k) {
    const bool two_level = q.tensor_scale.kind != TensorScale::Kind::None;
    t += QStringLiteral("  [%1,%2] dequant %3  quant %4")
             .arg(static_cast<qint64>(k) / q.blockCols())
             .arg(static_cast<qint64>(k) % q.blockCols())
             .arg(shortestFloat(two_level ? q.tensor_scale.blockFactor(q.dequant_scales[k]) : q.dequant_scales[k]), -14)
             .arg(k < q.quant_scales.size() ? shortestFloat(q.quant_scales[k]) : QStringLiteral("(per rule)"));
    if (!q.scale_codes.empty())
      t += QStringLiteral("  %1 %2").arg(QString::fromStdString(q.scaleCodeFormat().name()),
                                         QString::fromStdString(q.scaleCodeFormat().hexString(q.scale_codes[k])));
    t += QLatin1Char('\n');
  }
  const bool rot = !rotated.empty();
  t += QStringLiteral("%1 %2 %3%4 %5\n")
           .arg(QStringLiteral("index"), -10)
           .arg(QStringLiteral("input"), -14)
           .arg(rot ? QStringLiteral("%1 ").arg(QStringLiteral("rotated"), -14) : QString())
           .arg(QStringLiteral("code"), -6)
           .arg(QStringLiteral("dequantized"));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const size_t k = static_cast<size_t>(i * cols + j);
      t += QStringLiteral("%1 %2 %3%4 %5\n")
               .arg(QStringLiteral("[%1,%2]").arg(i).arg(j), -10)
               .arg(f64 ? shortestDouble(v[k]) : shortestFloat(vf[k]), -14)
               .arg(rot ? QStringLiteral("%1 ").arg(shortestFloat(rotated[k]), -14) : QString())
               .arg(QString::fromStdString(fmt->hexString(q.codes[k])), -6)
               .arg(shortestDouble(q.dequantizedAt(i, j)));
    }
  t +=
      QStringLiteral("saturated %1, underflow %2, subnormal %3, NaN inputs %4, Inf inputs %5, zero inputs %6 (of %7)\n")
          .arg(s.saturated)
          .arg(s.underflow)
          .arg(s.subnormal)
          .arg(s.nan_inputs)
          .arg(s.inf_inputs)
          .arg(s.zero_inputs)
          .arg(s.elements);
  out(t);
  return 0;
}

const CommandRegistrar reg({QStringLiteral("quantize"),
                            QStringLiteral("Quantize values with a scaling strategy (codes, scales, counts)"),
                            runQuantize, 30});

} // namespace
} // namespace fp8lab::cli

// fp8lab-cli formats | encode | decode | table — the number-format commands.
#include "cli_util.h"
#include "command.h"

#include "formats/format.h"
#include "formats/format_table.h"

#include <QCommandLineParser>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include <charconv>
#include <cmath>
#include <cstdio>

namespace fp8lab::cli {
namespace {

const QChar kNumMarker(0x1F);

/// Negative numbers look like options to QCommandLineParser: mark them so they stay
/// positional ("encode --format E5M2 -1.5" works as well as "... -- -1.5").
QStringList protectNegativeNumbers(const QStringList& args) {
  QStringList r;
  bool after_dashdash = false;
  for (int i = 0; i < args.size(); ++i) {
    const QString& a = args[i];
    if (a == QStringLiteral("--")) after_dashdash = true;
    if (i > 0 && !after_dashdash && a.startsWith(QLatin1Char('-')) && a.size() > 1 &&
        (a[1].isDigit() || a[1] == QLatin1Char('.') || parseNumber(a)))
      r << (kNumMarker + a);
    else
      r << a;
  }
  return r;
}

/// Words of a text file or stdin ("-"), split on whitespace and commas; nullopt and *error when
/// the file cannot be one (readInputFile: devices, directories, over 64 MiB).
std::optional<QStringList> readValueWords(const QString& path, QString* error) {
  const auto bytes = readInputFile(path, InputKind::Values, QStringLiteral("--input"), kMaxValuesBytes, error);
  if (!bytes) return std::nullopt;
  static const QRegularExpression sep(QStringLiteral("[\\s,]+"));
  return QString::fromUtf8(*bytes).split(sep, Qt::SkipEmptyParts);
}

QString unprotect(QString s) {
  return s.startsWith(kNumMarker) ? s.mid(1) : s;
}

const Format* requireFormat(const QString& name, int* rc) {
  if (name.isEmpty()) {
    *rc = fail(QStringLiteral("--format is required (one of: %1)").arg(formatHelpList()));
    return nullptr;
  }
  const Format* f = Format::byName(name.toStdString());
  if (!f)
    *rc = fail(QStringLiteral("unknown format '%1' (known: %2; ml_dtypes names such as float8_e4m3fn also work)")
                   .arg(name, formatHelpList()));
  else
    noteFormatChoice(*f);
  return f;
}

QCommandLineOption jsonOption() {
  return {QStringLiteral("json"), QStringLiteral("Machine-readable JSON output.")};
}
QCommandLineOption formatOption() {
  return {{QStringLiteral("f"), QStringLiteral("format")},
          QStringLiteral("Number format (see `fp8lab-cli formats`)."),
          QStringLiteral("F")};
}

// ---- formats ----------------------------------------------------------------------------------

int runFormats(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral("List every number format and its properties."));
  p.addOption(jsonOption());
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (!p.positionalArguments().isEmpty())
    return fail(QStringLiteral("formats takes no arguments (got '%1'); `table --format NAME` lists one format's codes")
                    .arg(p.positionalArguments().join(QLatin1Char(' '))));
  if (p.isSet(QStringLiteral("json"))) {
    QJsonArray arr;
    for (const Format* f : Format::all()) {
      QJsonObject o;
      o[QStringLiteral("name")] = QString::fromStdString(f->name());
      o[QStringLiteral("ml_dtypes_name")] = QString::fromStdString(f->spec().ml_dtypes_name);
      o[QStringLiteral("bits")] = f->bits();
      o[QStringLiteral("exponent_bits")] = f->spec().exponent_bits;
      o[QStringLiteral("mantissa_bits")] = f->spec().mantissa_bits;
      o[QStringLiteral("bias")] = f->bias();
      o[QStringLiteral("max_finite")] = jsonNumber(f->maxFinite());
      o[QStringLiteral("min_normal")] = jsonNumber(f->minNormal());
      // null where the format has no subnormals (E8M0: powers of two only).
      o[QStringLiteral("min_subnormal")] = f->hasSubnormals() ? jsonNumber(f->minSubnormal()) : QJsonValue();
      o[QStringLiteral("machine_epsilon")] = jsonNumber(f->machineEpsilon());
      o[QStringLiteral("finite_codes")] = f->finiteCount();
      o[QStringLiteral("nan_codes")] = f->nanCount();
      o[QStringLiteral("inf_codes")] = f->infCount();
      o[QStringLiteral("dynamic_range_binades")] = f->dynamicRangeBinades();
      o[QStringLiteral("has_negative_zero")] = f->hasNegativeZero();
      o[QStringLiteral("nan_code")] =
          f->hasNaN() ? QJsonValue(QString::fromStdString(f->hexString(f->canonicalNaN()))) : QJsonValue();
      o[QStringLiteral("description")] = QString::fromStdString(f->spec().description);
      arr.append(o);
    }
    out(toJsonText(arr));
    return 0;
  }
  out(formatTableText());
  return 0;
}

// ---- encode -----------------------------------------------------------------------------------

int runEncode(const QStringList& raw) {
  QCommandLineParser p;
  p.setApplicationDescription(
      QStringLiteral("Encode values (parsed as double: 1e-3, 0x1.8p3, inf, nan, -0) into a format, with the rounding "
                     "decision: neighbours, midpoint, tie, error. Negative values may also follow `--`."));
  p.addOption(formatOption());
  p.addOption({QStringLiteral("rounding"),
               QStringLiteral("rne | rtz | ru | rd | stochastic (default rne; for E8M0, which has no mantissa, rne is "
                              "nearest with ties up, as ml_dtypes)."),
               QStringLiteral("MODE"), QStringLiteral("rne")});
  p.addOption({QStringLiteral("seed"), QStringLiteral("Seed for stochastic rounding (value i uses counter i)."),
               QStringLiteral("N"), QStringLiteral("0")});
  p.addOption({QStringLiteral("random-bits"),
               QStringLiteral("Random bits for stochastic rounding (1..32, default 16)."), QStringLiteral("R"),
               QStringLiteral("16")});
  p.addOption({QStringLiteral("saturate"), QStringLiteral("Values past max become ±max (OCP SAT; default).")});
  p.addOption({QStringLiteral("no-saturate"), QStringLiteral("Values past max become Inf or NaN (OCP non-SAT).")});
  p.addOption({QStringLiteral("specials"), QStringLiteral("NaN/Inf/zero policy: cuda (default) | ml_dtypes."),
               QStringLiteral("P"), QStringLiteral("cuda")});
  p.addOption(jsonOption());
  p.addOption({QStringLiteral("input"),
               QStringLiteral("Read values (whitespace or comma separated) from FILE; '-' is stdin."),
               QStringLiteral("FILE")});
  p.addPositionalArgument(QStringLiteral("VALUE"), QStringLiteral("Values to encode ('-' reads them from stdin)."),
                          QStringLiteral("VALUE..."));
  int rc = 0;
  if (!parseArgs(p, protectNegativeNumbers(raw), &rc)) return rc;
  const Format* f = requireFormat(p.value(QStringLiteral("format")), &rc);
  if (!f) return rc;
  EncodeOptions o;
  const auto r = parseRounding(p.value(QStringLiteral("rounding")).toStdString());
  if (!r)
    return fail(QStringLiteral("unknown rounding '%1' (rne, rtz, ru, rd, stochastic)")
                    .arg(p.value(QStringLiteral("rounding"))));
  o.rounding = *r;
  if (p.isSet(QStringLiteral("saturate")) && p.isSet(QStringLiteral("no-saturate")))
    return fail(QStringLiteral("--saturate and --no-saturate exclude each other"));
  o.saturate = !p.isSet(QStringLiteral("no-saturate"));
  const QString sp = p.value(QStringLiteral("specials")).toLower();
  if (sp == QStringLiteral("cuda"))
    o.specials = SpecialsPolicy::Cuda;
  else if (sp == QStringLiteral("ml_dtypes") || sp == QStringLiteral("mldtypes"))
    o.specials = SpecialsPolicy::MlDtypes;
  else
    return fail(QStringLiteral("unknown --specials '%1' (cuda, ml_dtypes)").arg(sp));
  bool ok = false;
  const qulonglong seed = p.value(QStringLiteral("seed")).toULongLong(&ok);
  if (!ok) return fail(QStringLiteral("--seed must be a non-negative integer"));
  const int rbits = p.value(QStringLiteral("random-bits")).toInt(&ok);
  if (!ok || rbits < 1 || rbits > 32) return fail(QStringLiteral("--random-bits must be 1..32"));
  o.stochastic_bits = rbits;

  QStringList values;
  for (const QString& v : p.positionalArguments()) {
    if (v == QStringLiteral("-")) {
      QString err;
      const auto w = readValueWords(QStringLiteral("-"), &err);
      if (!w) return fail(err);
      values << *w;
    } else
      values << v;
  }
  if (p.isSet(QStringLiteral("input"))) {
    QString err;
    const auto w = readValueWords(p.value(QStringLiteral("input")), &err);
    if (!w) return fail(err);
    values << *w;
  }
  if (values.isEmpty())
    return fail(QStringLiteral("no values given (example: fp8lab-cli encode --format E4M3FN 1.1 464 -- -3)"));
  std::vector<double> xs;
  xs.reserve(static_cast<size_t>(values.size()));
  for (const QString& v : values) {
    const auto x = parseNumber(unprotect(v));
    if (!x) return fail(numberProblem(unprotect(v)));
    xs.push_back(*x);
  }
  const bool json = p.isSet(QStringLiteral("json"));
  JsonStreamWriter jw; // QJsonObject is ~30x slower for 10^5 values
  jw.beginArray();
  std::string text;
  if (!json) {
    text += "format " + f->name() + ", rounding " + f->roundingName(o.rounding) +
            (o.saturate ? ", saturating" : ", non-saturating") +
            (o.specials == SpecialsPolicy::Cuda ? ", CUDA specials" : ", ml_dtypes specials") + "\n";
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    EncodeOptions oi = o;
    if (o.rounding == Rounding::Stochastic) oi.random_word = Format::counterRandom(seed, i);
    const RoundingDecision d = f->explain(xs[i], oi);
    const QString input = unprotect(values[static_cast<qsizetype>(i)]);
    if (json) {
      jw.beginObject();
      jw.key("input");
      jw.value(input.toStdString());
      jw.key("code");
      jw.value(f->hexString(d.code));
      jw.key("binary");
      jw.value(f->binaryString(d.code));
      jw.key("value");
      jw.value(d.value);
      jw.key("class");
      jw.value(toString(f->classify(d.code)));
      jw.key("exact");
      jw.value(d.exact);
      if (d.has_neighbours) {
        jw.key("lower");
        jw.beginObject();
        jw.key("code");
        jw.value(f->hexString(d.lower_code));
        jw.key("value");
        jw.value(d.lower_value);
        jw.endObject();
        jw.key("upper");
        jw.beginObject();
        jw.key("code");
        jw.value(f->hexString(d.upper_code));
        jw.key("value");
        jw.value(d.upper_value);
        jw.endObject();
        jw.key("midpoint");
        jw.value(d.midpoint);
        jw.key("tie");
        jw.value(d.tie);
      }
      jw.key("abs_error");
      jw.value(d.abs_error);
      jw.key("rel_error");
      jw.value(d.rel_error);
      jw.key("overflow");
      jw.value(d.overflow);
      jw.key("saturated");
      jw.value(d.saturated);
      jw.key("underflow");
      jw.value(d.underflow);
      if (d.sign_dropped) {
        jw.key("encoded_magnitude"); // E8M0, CUDA: the code is that of |x|
        jw.value(true);
      }
      jw.endObject();
    } else {
      QString line = QStringLiteral("%1 -> %2  [%3]  = %4  (%5)")
                         .arg(input, -12)
                         .arg(QString::fromStdString(f->hexString(d.code)))
                         .arg(QString::fromStdString(f->binaryString(d.code)))
                         .arg(shortestDouble(d.value))
                         .arg(QString::fromLatin1(toString(f->classify(d.code))));
      const bool e8m0 = f->spec().specials == SpecialCodes::E8M0;
      if (d.sign_dropped)
        line += QStringLiteral("\n    negative input: E8M0 is unsigned and CUDA encodes |x| = %1%2")
                    .arg(shortestDouble(std::fabs(d.input)),
                         d.has_neighbours && d.lower_value == d.upper_value
                             ? QStringLiteral(" (exact); error %1 (rel %2)")
                                   .arg(shortestDouble(d.abs_error), shortestDouble(d.rel_error))
                             : QString());
      // Neighbours are printed when the (magnitude) input lies strictly between two of them.
      // A neighbour past max finite exists only with an unbounded exponent: it has no code of its own
      // (the code shown would be Inf or NaN), so it is labelled as such.
      const bool upper_past_max = std::fabs(d.upper_value) > f->maxFinite();
      if (d.has_neighbours && !d.exact && d.lower_value != d.upper_value)
        line +=
            QStringLiteral("\n    neighbours %1 (%2) .. %3 (%4), midpoint %5%6; error %7 (rel %8)")
                .arg(shortestDouble(d.lower_value), QString::fromStdString(f->hexString(d.lower_code)))
                .arg(shortestDouble(d.upper_value), upper_past_max ? QStringLiteral("beyond max, unbounded exponent")
                                                                   : QString::fromStdString(f->hexString(d.upper_code)))
                .arg(shortestDouble(d.midpoint), d.tie ? QStringLiteral(" (tie)") : QString())
                .arg(shortestDouble(d.abs_error), shortestDouble(d.rel_error));
      if (d.overflow) {
        if (d.saturated)
          line += QStringLiteral("\n    overflow: saturated to max");
        else if (std::isfinite(d.value))
          line += QStringLiteral("\n    overflow: rounded toward zero to max finite (%1; not saturated)")
                      .arg(QString::fromLatin1(toString(o.rounding)));
        else
          line += QStringLiteral("\n    overflow");
      }
      if (d.underflow) {
        if (e8m0 && !std::isnan(d.input) && std::fabs(d.input) < f->minNormal() && d.code == 0 &&
            !(o.specials == SpecialsPolicy::MlDtypes && std::signbit(d.input)))
          line += QStringLiteral("\n    underflow: below the smallest E8M0 value 2^-127 (0x00), which it gives "
                                 "(E8M0 has no zero)");
        else if (e8m0)
          line += QStringLiteral("\n    underflow: out of range (E8M0 has no zero and no negative values)");
        else
          line += QStringLiteral("\n    underflow");
      }
      text += line.toStdString() + "\n";
    }
  }
  jw.endArray();
  out(json ? jw.text() + "\n" : text);
  return 0;
}

// ---- decode / table ---------------------------------------------------------------------------

std::optional<uint32_t> parseCode(const QString& s) {
  bool ok = false;
  uint32_t v = 0;
  const QString t = s.trimmed().toLower();
  if (t.startsWith(QStringLiteral("0x")))
    v = t.mid(2).toUInt(&ok, 16);
  else if (t.startsWith(QStringLiteral("0b")))
    v = t.mid(2).remove(QLatin1Char('_')).toUInt(&ok, 2);
  else
    v = t.toUInt(&ok, 10);
  if (!ok) return std::nullopt;
  return v;
}

QJsonObject codeJson(const Format& f, uint32_t c) {
  QJsonObject o;
  o[QStringLiteral("code")] = QString::fromStdString(f.hexString(c));
  o[QStringLiteral("binary")] = QString::fromStdString(f.binaryString(c));
  o[QStringLiteral("value")] = jsonNumber(f.decode(c));
  o[QStringLiteral("class")] = QString::fromLatin1(toString(f.classify(c)));
  return o;
}

int runDecode(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral("Decode codes (0x7e, 0b01111110, 126) of a format to exact values."));
  p.addOption(formatOption());
  p.addOption(jsonOption());
  p.addPositionalArgument(QStringLiteral("CODE"), QStringLiteral("Codes to decode."), QStringLiteral("CODE..."));
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  const Format* f = requireFormat(p.value(QStringLiteral("format")), &rc);
  if (!f) return rc;
  if (p.positionalArguments().isEmpty())
    return fail(QStringLiteral("no codes given (example: fp8lab-cli decode --format E4M3FN 0x7e)"));
  QJsonArray arr;
  std::string text;
  for (const QString& s : p.positionalArguments()) {
    const auto c = parseCode(s);
    if (!c) return fail(QStringLiteral("not a code: '%1' (use hex 0x.., binary 0b.. or decimal)").arg(s));
    if (*c >= f->codeCount())
      return fail(QStringLiteral("code %1 is too wide for %2 (%3 bits: 0..%4)")
                      .arg(s, QString::fromStdString(f->name()))
                      .arg(f->bits())
                      .arg(QString::fromStdString(f->hexString(f->codeMask()))));
    if (p.isSet(QStringLiteral("json")))
      arr.append(codeJson(*f, *c));
    else
      text += QStringLiteral("%1 [%2] = %3 (%4)\n")
                  .arg(QString::fromStdString(f->hexString(*c)), QString::fromStdString(f->binaryString(*c)),
                       shortestDouble(f->decode(*c)), QString::fromLatin1(toString(f->classify(*c))))
                  .toStdString();
  }
  out(p.isSet(QStringLiteral("json")) ? toJsonText(arr, false) + "\n" : text);
  return 0;
}

int runTable(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral("Every code of a format as CSV: code,binary,value,class."));
  p.addOption(formatOption());
  p.addOption(jsonOption());
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (!p.positionalArguments().isEmpty())
    return fail(QStringLiteral("table takes no arguments (got '%1'); name the format with --format %1")
                    .arg(p.positionalArguments().join(QLatin1Char(' '))));
  const Format* f = requireFormat(p.value(QStringLiteral("format")), &rc);
  if (!f) return rc;
  if (p.isSet(QStringLiteral("json"))) {
    QJsonArray arr;
    for (uint32_t c = 0; c < f->codeCount(); ++c) arr.append(codeJson(*f, c));
    out(toJsonText(arr, false) + "\n");
    return 0;
  }
  std::string text = "code,binary,value,class\n";
  for (uint32_t c = 0; c < f->codeCount(); ++c)
    text += f->hexString(c) + "," + f->binaryString(c) + "," + shortestDouble(f->decode(c)).toStdString() + "," +
            toString(f->classify(c)) + "\n";
  out(text);
  return 0;
}

const CommandRegistrar regFormats({QStringLiteral("formats"),
                                   QStringLiteral("Table of all formats and their properties."), runFormats, 10});
const CommandRegistrar regEncode({QStringLiteral("encode"),
                                  QStringLiteral("Encode values into a format, showing the rounding decision."),
                                  runEncode, 11});
const CommandRegistrar regDecode({QStringLiteral("decode"), QStringLiteral("Decode codes of a format."), runDecode,
                                  12});
const CommandRegistrar regTable({QStringLiteral("table"), QStringLiteral("Every code of a format as CSV."), runTable,
                                 13});

} // namespace
} // namespace fp8lab::cli

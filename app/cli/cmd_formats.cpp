// fp8lab-cli formats | encode | decode | table — the number-format commands.
#include "cli_util.h"
#include "command.h"

#include "experiment/format_report.h"
#include "formats/format.h"
#include "formats/format_table.h"

#include <QCommandLineParser>
#include <QFile>

#include <deque>

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
    out(toJsonText(toQJson(formatsJson())));
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
  const auto specials = parseSpecialsPolicy(sp.toStdString());
  if (!specials) return fail(QStringLiteral("unknown --specials '%1' (cuda, ml_dtypes)").arg(sp));
  o.specials = *specials;
  bool ok = false;
  const qulonglong seed = p.value(QStringLiteral("seed")).toULongLong(&ok);
  if (!ok) return fail(QStringLiteral("--seed must be a non-negative integer"));
  const int rbits = p.value(QStringLiteral("random-bits")).toInt(&ok);
  if (!ok || rbits < 1 || rbits > 32) return fail(QStringLiteral("--random-bits must be 1..32"));
  o.stochastic_bits = rbits;

  // The words of the values, as written: positional ones ("-": stdin's words) in order, then
  // --input's. std::deque keeps the views into its strings valid as it grows.
  std::deque<std::string> storage;
  std::vector<std::string_view> words;
  const auto readWords = [&](const QString& path) {
    std::string err;
    const auto w = readValueWords(QFile::encodeName(path).toStdString(), &storage.emplace_back(), &err);
    if (w) words.insert(words.end(), w->begin(), w->end());
    return w ? 0 : fail(QString::fromStdString(err));
  };
  for (const QString& v : p.positionalArguments()) {
    if (v != QStringLiteral("-"))
      words.push_back(storage.emplace_back(unprotect(v).toStdString()));
    else if ((rc = readWords(v)) != 0)
      return rc;
  }
  if (p.isSet(QStringLiteral("input")) && (rc = readWords(p.value(QStringLiteral("input")))) != 0) return rc;
  if (words.empty())
    return fail(QStringLiteral("no values given (example: fp8lab-cli encode --format E4M3FN 1.1 464 -- -3)"));
  std::vector<double> xs;
  xs.reserve(words.size());
  for (const std::string_view w : words) {
    const auto x = fp8lab::parseNumber(w);
    if (!x) return fail(QString::fromStdString(fp8lab::numberProblem(w)));
    xs.push_back(*x);
  }
  out(encodeReport(*f, o, seed, words, xs, p.isSet(QStringLiteral("json"))));
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
  std::vector<uint32_t> codes;
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
      codes.push_back(*c);
    else
      text += codeLine(*f, *c);
  }
  out(p.isSet(QStringLiteral("json")) ? codesJsonText(*f, codes) : text);
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
  if (!p.isSet(QStringLiteral("json"))) {
    out(codeTableCsv(*f));
    return 0;
  }
  out(codeTableJsonText(*f));
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

// Shared helpers of fp8lab-cli and fp8lab-render (cli_util.h).
#include "cli_util.h"

#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>

#include <atomic>
#include <cmath>
#include <cstdio>

namespace fp8lab::cli {

namespace {
const char* kNegZero = "__fp8lab_negative_zero__";
const char* g_program_name = "fp8lab-cli";
bool g_lock_wait = true;
double g_lock_timeout_s = -1;
} // namespace

std::optional<std::vector<double>> parseNumberList(const QString& text, QString* problem) {
  const std::string t = text.toUtf8().toStdString();
  std::string b;
  size_t at = 0;
  auto v = fp8lab::parseNumberList(t, &b, &at);
  if (!v && problem) *problem = QString::fromStdString(numberListProblem(t, b, at));
  return v;
}

QJsonValue jsonNumber(double v) {
  if (std::isnan(v)) return QStringLiteral("nan");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  if (v == 0 && std::signbit(v)) return QString::fromLatin1(kNegZero);
  return v;
}

QJsonValue toQJson(const Json& j) {
  switch (j.type()) {
  case Json::value_t::object: {
    QJsonObject o;
    for (const auto& [k, v] : j.items()) o.insert(QString::fromStdString(k), toQJson(v));
    return o;
  }
  case Json::value_t::array: {
    QJsonArray a;
    for (const auto& v : j) a.append(toQJson(v));
    return a;
  }
  case Json::value_t::string:
    return QString::fromStdString(j.get<std::string>());
  case Json::value_t::boolean:
    return j.get<bool>();
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
    return QJsonValue(j.get<qint64>());
  case Json::value_t::number_float: {
    const double v = j.get<double>();
    return v == 0 && std::signbit(v) ? jsonNumber(v) : QJsonValue(v);
  }
  default:
    return QJsonValue();
  }
}

std::string toJsonText(const QJsonValue& v, bool indented) {
  QJsonDocument doc;
  if (v.isArray())
    doc = QJsonDocument(v.toArray());
  else
    doc = QJsonDocument(v.toObject());
  QByteArray t = doc.toJson(indented ? QJsonDocument::Indented : QJsonDocument::Compact);
  t.replace(QByteArray("\"") + kNegZero + "\"", "-0.0");
  return t.toStdString();
}

std::optional<QByteArray> readInputFile(const QString& path, InputKind kind, const QString& what, qint64 max_bytes,
                                        QString* error) {
  std::string e;
  const auto b = fp8lab::readInputFile(QFile::encodeName(path).toStdString(), kind, what.toStdString(), max_bytes, &e);
  if (!b) *error = QString::fromStdString(e);
  return b ? std::optional<QByteArray>(QByteArray::fromStdString(*b)) : std::nullopt;
}

std::optional<std::vector<double>> readNumberFile(const QString& path, QString* error) {
  std::string e;
  auto v = fp8lab::readNumberFile(QFile::encodeName(path).toStdString(), &e);
  if (!v) *error = QString::fromStdString(e);
  return v;
}

void setProgramName(const char* name) {
  g_program_name = name;
}

void setSessionLockPolicy(bool wait, double timeout_s) {
  g_lock_wait = wait;
  g_lock_timeout_s = timeout_s;
}

fp8lab::LockWait sessionLockWait() {
  fp8lab::LockWait w;
  w.wait = g_lock_wait;
  w.timeout_s = g_lock_timeout_s;
  w.on_wait = [](const std::string& message) {
    std::fprintf(stderr, "%s: %s (--no-wait: fail instead)\n", g_program_name, message.c_str());
    std::fflush(stderr);
  };
  return w;
}

int fail(const QString& message) {
  std::fprintf(stderr, "%s: error: %s\n", g_program_name, message.toUtf8().constData());
  return 2;
}

int parseThreads(const QString& text) {
  bool ok = false;
  const int n = text.trimmed().toInt(&ok);
  if (!ok || n < 0 || n > kMaxThreads) {
    fail(
        QStringLiteral("--threads: expected an integer 0..%1 (0 = one per core), got '%2'").arg(kMaxThreads).arg(text));
    return -1;
  }
  return n;
}

bool outputWritableOrFail(const QString& out) {
  const std::string problem = sessionOutputProblem(QFile::encodeName(out).toStdString());
  if (problem.empty()) return true;
  fail(QStringLiteral("write failed: ") + QString::fromStdString(problem));
  return false;
}

void out(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}
void emitJson(QJsonArray* collect, const QJsonObject& o) {
  if (collect)
    collect->append(o);
  else
    out(toJsonText(o) + "\n");
}

QString commandHelpText(const QString& help, const QString& command, const QStringList& positional) {
  const QString argv0 = QCoreApplication::arguments().value(0);
  const QString qtUsage = QStringLiteral("Usage: ") + argv0;
  const qsizetype eol = help.indexOf(QLatin1Char('\n'));
  const QString first = eol < 0 ? help : help.left(eol);
  if (argv0.isEmpty() || !first.startsWith(qtUsage)) return help;
  QString rest = first.mid(qtUsage.size()); // " [options] FILE.h5"
  // `command` is argv[0] followed by the command's words ("/x/fp8lab-cli runs").
  QString path = QFileInfo(argv0).fileName();
  if (command.startsWith(argv0)) path += command.mid(argv0.size());
  const QString action = QStringLiteral(" [options] action");
  if (rest.startsWith(action) && (rest.size() == action.size() || rest[action.size()] == QLatin1Char(' ')) &&
      !positional.isEmpty() && !positional[0].isEmpty() && !positional[0].startsWith(QLatin1Char('-'))) {
    path += QLatin1Char(' ') + positional[0];
    rest = QStringLiteral(" [options]") + rest.mid(action.size());
  }
  return QStringLiteral("Usage: ") + path + rest + (eol < 0 ? QString() : help.mid(eol));
}

bool parseArgs(QCommandLineParser& p, const QStringList& args, int* exit_code) {
  p.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
  const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help."));
  p.addOption(help);
  if (!p.parse(args)) {
    *exit_code = fail(p.errorText());
    return false;
  }
  if (p.isSet(help)) {
    out(commandHelpText(p.helpText(), args.value(0), p.positionalArguments()));
    *exit_code = 0;
    return false;
  }
  return true;
}

void noteFormatChoice(const Format& f) {
  static std::atomic<bool> noted{false};
  if (&f != &Format::E4M3() || noted.exchange(true)) return;
  std::fprintf(stderr,
               "%s: note: E4M3 is the IEEE-style E4M3 (ml_dtypes float8_e4m3: max 240, with "
               "±Inf), not OCP E4M3FN (max 448, no Inf, as in CUDA and FP8 training); use E4M3FN for that\n",
               g_program_name);
  std::fflush(stderr);
}

} // namespace fp8lab::cli

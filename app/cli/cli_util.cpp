// Shared helpers of fp8lab-cli and fp8lab-render (cli_util.h).
#include "cli_util.h"

#include "formats/format.h"
#include "session/session.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QMutex>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fp8lab::cli {

namespace {
const char* kNegZero = "__fp8lab_negative_zero__";
} // namespace

std::optional<std::vector<double>> parseNumberList(const QString& text, QString* bad) {
  std::string b;
  auto v = fp8lab::parseNumberList(text.toUtf8().toStdString(), &b);
  if (!v && bad) *bad = QString::fromStdString(b);
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

namespace {
const char* g_program_name = "fp8lab-cli";
} // namespace

void setProgramName(const char* name) {
  g_program_name = name;
}

namespace {
bool g_lock_wait = true;
double g_lock_timeout_s = -1;
} // namespace

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
  const QFileInfo fi(out);
  const QFileInfo dir(fi.absolutePath());
  const QByteArray path = QFile::encodeName(out);
  QString problem;
  struct stat st {};
  const bool exists = ::stat(path.constData(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    problem = QStringLiteral("--out %1 is a directory").arg(out);
  else if (!dir.isDir())
    problem = QStringLiteral("the directory of --out %1 does not exist").arg(out);
  else if (exists && !S_ISREG(st.st_mode))
    problem = QStringLiteral("--out %1 is not a regular file (a device, FIFO or socket); a session is a regular file")
                  .arg(out);
  else if (exists && ((st.st_mode & 0222) == 0 || ::access(path.constData(), W_OK) != 0))
    problem = QStringLiteral("%1 is read-only (the session is kept as it is; choose another --out)").arg(out);
  else if (exists && st.st_size > 0 && ::access(path.constData(), R_OK) == 0 &&
           !fp8lab::hasHdf5Signature(path.toStdString()))
    problem = QStringLiteral("%1 exists and is not an HDF5 session (runs are appended to a session; choose another "
                             "--out)")
                  .arg(out);
  if (problem.isEmpty()) {
    // The save creates a temporary file beside the target: try it (permission bits alone say
    // nothing for root, nor for /proc, /sys or a read-only mount).
    QByteArray probe = QFile::encodeName(dir.absoluteFilePath() + QStringLiteral("/.fp8lab-probe-XXXXXX"));
    const int fd = ::mkstemp(probe.data());
    if (fd < 0) {
      problem = QStringLiteral("cannot create files in %1 (%2; a save writes a temporary file there, then renames it)")
                    .arg(dir.absoluteFilePath(), QString::fromLocal8Bit(std::strerror(errno)));
    } else {
      ::close(fd);
      ::unlink(probe.constData());
    }
  }
  if (problem.isEmpty()) return true;
  fail(QStringLiteral("write failed: ") + problem);
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

bool parseArgs(QCommandLineParser& p, const QStringList& args, int* exit_code) {
  p.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
  const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help."));
  p.addOption(help);
  if (!p.parse(args)) {
    *exit_code = fail(p.errorText());
    return false;
  }
  if (p.isSet(help)) {
    out(p.helpText());
    *exit_code = 0;
    return false;
  }
  return true;
}

struct TerminalProgress::Impl {
  QString label;
  bool tty = false;
  bool drawn = false;
  QMutex mutex;
  std::chrono::steady_clock::time_point last{};
};

TerminalProgress::TerminalProgress(QString label) : d(new Impl) {
  d->label = std::move(label);
  d->tty = isatty(fileno(stderr)) != 0;
}

TerminalProgress::~TerminalProgress() {
  finish();
  delete d;
}

void TerminalProgress::update(double fraction, const QString& detail) {
  if (!d->tty) return;
  QMutexLocker lock(&d->mutex);
  const auto now = std::chrono::steady_clock::now();
  if (d->drawn && fraction < 1.0 && now - d->last < std::chrono::milliseconds(100)) return;
  d->last = now;
  // The line must fit the terminal: a wrapped line cannot be redrawn with \r (it scrolls).
  int columns = 80;
  struct winsize ws {};
  if (::ioctl(fileno(stderr), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) columns = ws.ws_col;
  const QString pct = QString::asprintf(" %5.1f%% ", 100.0 * std::clamp(fraction, 0.0, 1.0));
  const int fixed = int(d->label.size()) + 3 + int(pct.size());  // "label [" + "]" + pct
  const int width = std::clamp(columns - 1 - fixed - 10, 5, 30); // keep ~10 columns for the detail
  const int filled = static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * width));
  QString line = d->label + QStringLiteral(" [") + QString(filled, QLatin1Char('#')) +
                 QString(width - filled, QLatin1Char('.')) + QStringLiteral("]") + pct + detail;
  if (line.size() > columns - 1) line.truncate(std::max(0, columns - 1));
  std::fprintf(stderr, "\r%s\x1b[K", line.toUtf8().constData());
  std::fflush(stderr);
  d->drawn = true;
}

void TerminalProgress::finish() {
  if (!d->tty || !d->drawn) return;
  QMutexLocker lock(&d->mutex);
  std::fprintf(stderr, "\n");
  d->drawn = false;
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

QString formatHelpList() {
  QStringList names;
  for (const Format* f : Format::all()) names << QString::fromStdString(f->name());
  return names.join(QStringLiteral(", "));
}

} // namespace fp8lab::cli

#include "cli_util.h"

#include <QFileInfo>

#include "common/number_text.h"
#include "formats/format.h"
#include "session/session.h"

#include <QFile>
#include <QJsonDocument>
#include <QMutex>
#include <QRegularExpression>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <locale.h>
#include <stdlib.h>
#include <unistd.h>

namespace fp8lab::cli {

namespace {
const char* kNegZero = "__fp8lab_negative_zero__";

/// The "C" locale for strtod_l: QCoreApplication calls setlocale(LC_ALL, "") on Unix, and under a
/// decimal-comma locale (de_DE, fr_FR, ...) plain strtod rejects "0.5" (docs/reliability.md).
locale_t cLocale() {
  static const locale_t c = newlocale(LC_ALL_MASK, "C", locale_t(nullptr));
  return c;
}
} // namespace

std::optional<double> parseNumber(const QString& text) {
  const QByteArray b = text.trimmed().toUtf8();
  if (b.isEmpty()) return std::nullopt;
  const QByteArray l = b.toLower();
  if (l == "inf" || l == "+inf" || l == "infinity" || l == "+infinity") return INFINITY;
  if (l == "-inf" || l == "-infinity") return -INFINITY;
  if (l == "nan" || l == "+nan") return std::nan("");
  if (l == "-nan") return -std::nan("");
  char* end = nullptr;
  const double v = strtod_l(b.constData(), &end, cLocale());
  if (end != b.constData() + b.size()) return std::nullopt;
  // Out of float64's range: a finite literal that became ±inf, or a nonzero one that became 0
  // (strtod's ERANGE cases that lose the value; subnormal results are kept).
  if (std::isinf(v)) return std::nullopt;
  if (v == 0) {
    for (const char c : b) {
      if (c == 'e' || c == 'E' || c == 'p' || c == 'P') break; // the exponent does not count
      if (c >= '1' && c <= '9') return std::nullopt;
      if (c == 'x' || c == 'X') continue;
    }
    // hex digits a-f in the mantissa of a hex float
    if (b.toLower().contains("0x")) {
      const QByteArray m = b.toLower().mid(b.toLower().indexOf("0x") + 2);
      for (const char c : m) {
        if (c == 'p') break;
        if ((c >= '1' && c <= '9') || (c >= 'a' && c <= 'f')) return std::nullopt;
      }
    }
  }
  return v;
}

QString numberProblem(const QString& text) {
  const QByteArray b = text.trimmed().toUtf8();
  char* end = nullptr;
  const double v = b.isEmpty() ? 0.0 : strtod_l(b.constData(), &end, cLocale());
  if (!b.isEmpty() && end == b.constData() + b.size()) {
    if (std::isinf(v))
      return QStringLiteral("'%1' is beyond the float64 range (largest finite 1.7976931348623157e+308; write inf for "
                            "infinity)")
          .arg(text.trimmed());
    if (v == 0)
      return QStringLiteral("'%1' underflows to 0 in float64 (smallest nonzero 4.9406564584124654e-324; write 0 for "
                            "zero)")
          .arg(text.trimmed());
  }
  return QStringLiteral("not a number: '%1'").arg(text.trimmed());
}

std::optional<std::vector<double>> parseNumberList(const QString& text, QString* bad) {
  std::vector<double> v;
  for (const QString& item : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    const auto x = parseNumber(item);
    if (!x) {
      if (bad) *bad = item;
      return std::nullopt;
    }
    v.push_back(*x);
  }
  return v;
}

QString shortestNumber(double v) {
  return QString::fromStdString(shortestText(v));
}
QString shortestNumber(float v) {
  return QString::fromStdString(shortestText(v));
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

void JsonStreamWriter::key(const char* k) {
  sep();
  buf_ += '"';
  buf_ += k;
  buf_ += "\":";
  after_key_ = true;
}

void JsonStreamWriter::value(double v) {
  sep();
  if (std::isnan(v))
    buf_ += "\"nan\"";
  else if (std::isinf(v))
    buf_ += v > 0 ? "\"inf\"" : "\"-inf\"";
  else if (v == 0)
    buf_ += std::signbit(v) ? "-0.0" : "0";
  else {
    char tmp[40];
    const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
  }
}

void JsonStreamWriter::value(const std::string& s) {
  sep();
  buf_ += '"';
  for (const unsigned char c : s) {
    switch (c) {
    case '"':
      buf_ += "\\\"";
      break;
    case '\\':
      buf_ += "\\\\";
      break;
    case '\n':
      buf_ += "\\n";
      break;
    case '\t':
      buf_ += "\\t";
      break;
    case '\r':
      buf_ += "\\r";
      break;
    default:
      if (c < 0x20) {
        char u[8];
        std::snprintf(u, sizeof u, "\\u%04x", c);
        buf_ += u;
      } else
        buf_ += static_cast<char>(c);
    }
  }
  buf_ += '"';
}

namespace {
QString sizeText(qint64 bytes) {
  if (bytes >= (qint64(1) << 30))
    return QString::number(double(bytes) / double(qint64(1) << 30), 'f', 1) + QStringLiteral(" GiB");
  if (bytes >= (qint64(1) << 20))
    return QString::number(double(bytes) / double(qint64(1) << 20), 'f', 1) + QStringLiteral(" MiB");
  return QString::number(bytes) + QStringLiteral(" bytes");
}
} // namespace

std::optional<QByteArray> readInputFile(const QString& path, InputKind kind, const QString& what, qint64 max_bytes,
                                        QString* error) {
  const QString limit = sizeText(max_bytes);
  auto readCapped = [&](QFile& f, const QString& name) -> std::optional<QByteArray> {
    QByteArray all;
    char buf[1 << 16];
    for (;;) {
      const qint64 n = f.read(buf, sizeof buf);
      if (n < 0) {
        *error = QStringLiteral("cannot read %1 %2: %3").arg(what, name, f.errorString());
        return std::nullopt;
      }
      if (n == 0) break;
      if (all.size() + n > max_bytes) {
        *error = QStringLiteral("%1 %2 holds more than %3, the limit; split it").arg(what, name, limit);
        return std::nullopt;
      }
      all.append(buf, n);
    }
    return all;
  };
  if (path == QStringLiteral("-")) {
    if (kind == InputKind::Config) {
      *error = QStringLiteral("%1 must be a file, not stdin").arg(what);
      return std::nullopt;
    }
    QFile f;
    if (!f.open(stdin, QIODevice::ReadOnly)) {
      *error = QStringLiteral("cannot read stdin for %1").arg(what);
      return std::nullopt;
    }
    return readCapped(f, QStringLiteral("(stdin)"));
  }
  const QString quoted = QLatin1Char('\'') + path + QLatin1Char('\'');
  const QByteArray native = QFile::encodeName(path);
  struct stat st {};
  if (::stat(native.constData(), &st) != 0) {
    const int e = errno;
    *error = e == ENOENT ? QStringLiteral("%1 %2: no such file").arg(what, quoted)
                         : QStringLiteral("%1 %2: %3").arg(what, quoted, QString::fromLocal8Bit(std::strerror(e)));
    return std::nullopt;
  }
  if (S_ISDIR(st.st_mode)) {
    *error = QStringLiteral("%1 %2 is a directory").arg(what, quoted);
    return std::nullopt;
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    *error = QStringLiteral("%1 %2 is a device, not a file (a device such as /dev/zero never ends)").arg(what, quoted);
    return std::nullopt;
  }
  const bool pipe = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
  if (pipe && kind == InputKind::Config) {
    *error = QStringLiteral("%1 %2 is a FIFO or socket, not a regular file").arg(what, quoted);
    return std::nullopt;
  }
  if (!pipe && !S_ISREG(st.st_mode)) {
    *error = QStringLiteral("%1 %2 is not a regular file").arg(what, quoted);
    return std::nullopt;
  }
  if (!pipe && st.st_size > max_bytes) {
    *error = QStringLiteral("%1 %2 is %3; the limit is %4").arg(what, quoted, sizeText(st.st_size), limit);
    return std::nullopt;
  }
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    *error = QStringLiteral("cannot read %1 %2: %3").arg(what, quoted, f.errorString());
    return std::nullopt;
  }
  return readCapped(f, quoted);
}

namespace {
std::atomic<int> g_signal{0};       // the first guarded signal that arrived, 0 when none
std::atomic<int> g_signal_count{0}; // how many arrived
constexpr int kGuarded[3] = {SIGINT, SIGTERM, SIGHUP};
// The loss note, double-buffered: the main thread writes the buffer the handler is not pointed at,
// then publishes it; the handler reads only a published, NUL-terminated buffer.
constexpr size_t kNoteBytes = 401;
char g_note[2][kNoteBytes] = {{0}, {0}};
std::atomic<int> g_note_index{-1};

void writeAll(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

extern "C" void onInterrupt(int sig) {
  const int saved_errno = errno;
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);
  const int count = g_signal_count.fetch_add(1) + 1;
  if (count == 2) {
    writeAll("\nfp8lab-cli: another signal: still stopping and saving what is finished; a third one stops at "
             "once and loses it\n");
  } else if (count >= 3) {
    writeAll("\nfp8lab-cli: third signal: stopped at once; lost: ");
    const int i = g_note_index.load();
    writeAll(i >= 0 ? g_note[i] : "whatever was not saved yet");
    writeAll("\n");
    ::_exit(128 + g_signal.load());
  }
  errno = saved_errno;
}
} // namespace

int g_guard_depth = 0; // guards nest (run → its training experiments); the outermost installs

InterruptGuard::InterruptGuard() {
  if (g_guard_depth++ > 0) return;
  g_signal.store(0);
  g_signal_count.store(0);
  g_note_index.store(-1);
  struct sigaction sa {};
  sa.sa_handler = onInterrupt;
  sigemptyset(&sa.sa_mask);
  for (int s : kGuarded) sigaddset(&sa.sa_mask, s); // one handler at a time
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < 3; ++i) ::sigaction(kGuarded[i], &sa, &old_[i]);
}

InterruptGuard::~InterruptGuard() {
  if (--g_guard_depth > 0) return;
  for (int i = 0; i < 3; ++i) ::sigaction(kGuarded[i], &old_[i], nullptr);
}

void setInterruptLossNote(const QString& note) {
  const int next = g_note_index.load() == 0 ? 1 : 0;
  const QByteArray b = note.toUtf8().left(int(kNoteBytes) - 1);
  std::memcpy(g_note[next], b.constData(), static_cast<size_t>(b.size()));
  g_note[next][b.size()] = 0;
  g_note_index.store(next);
}

bool interrupted() {
  return g_signal.load() != 0;
}

int interruptSignal() {
  return g_signal.load();
}

QString interruptName() {
  switch (g_signal.load()) {
  case SIGINT:
    return QStringLiteral("Ctrl-C (SIGINT)");
  case SIGTERM:
    return QStringLiteral("SIGTERM");
  case SIGHUP:
    return QStringLiteral("SIGHUP");
  default:
    return QStringLiteral("a signal");
  }
}

int interruptedExitCode() {
  const int s = g_signal.load();
  return s ? 128 + s : 130;
}

std::optional<std::vector<double>> readNumberFile(const QString& path, QString* error) {
  const auto bytes = readInputFile(path, InputKind::Values, QStringLiteral("--input"), kMaxValuesBytes, error);
  if (!bytes) return std::nullopt;
  static const QRegularExpression sep(QStringLiteral("[\\s,]+"));
  const QStringList words = QString::fromUtf8(*bytes).split(sep, Qt::SkipEmptyParts);
  std::vector<double> v;
  v.reserve(static_cast<size_t>(words.size()));
  for (qsizetype i = 0; i < words.size(); ++i) {
    const auto x = parseNumber(words[i]);
    if (!x) {
      *error = QStringLiteral("--input '%1': item %2: %3").arg(path).arg(i + 1).arg(numberProblem(words[i]));
      return std::nullopt;
    }
    v.push_back(*x);
  }
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
void out(const QString& text) {
  out(text.toStdString());
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

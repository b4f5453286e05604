// Shared helpers of the fp8lab-cli commands and of fp8lab-render: number parsing, JSON output,
// errors, progress.
#pragma once

#include <csignal>

#include <QByteArray>

#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>

#include <optional>
#include <string>
#include <vector>

#include "io/json_document.h"
#include "session/session_lock.h"

namespace fp8lab {
class Format;
}

namespace fp8lab::cli {

/// Parses a number as double: decimal ("1e-3"), C99 hex-float ("0x1.8p3"), "inf", "-inf",
/// "nan", "-0". The whole text must be consumed; nullopt otherwise.
/// Literals outside float64's range are refused, not rounded to ±inf or 0 ("1e400", "1e-400";
/// subnormal results such as "1e-310" are kept).
std::optional<double> parseNumber(const QString& text);

/// Why parseNumber refused `text`, for messages: "not a number: 'x'", "'1e400' is beyond the
/// float64 range (…)", "'1e-400' underflows to 0 in float64 (…)".
QString numberProblem(const QString& text);

/// Parses a comma-separated list of numbers ("1,2.5,-3"); on error sets *bad to the
/// offending item and returns nullopt.
std::optional<std::vector<double>> parseNumberList(const QString& text, QString* bad);

/// Shortest text that reads back as the same double / float32 (std::to_chars), with "nan",
/// "inf", "-inf" for non-finite values. Used by every command's text output.
/// Overloaded on the argument's type; shortestDouble / shortestFloat fix the type explicitly.
QString shortestNumber(double v);
QString shortestNumber(float v);
inline QString shortestDouble(double v) {
  return shortestNumber(v);
}
inline QString shortestFloat(float v) {
  return shortestNumber(v);
}

/// A JSON value for a double: numbers as numbers, NaN/±Inf as the strings "nan", "inf",
/// "-inf", and −0 as the number -0.0 (written by toJsonText()).
QJsonValue jsonNumber(double v);

/// A JSON value of core (nlohmann) as Qt JSON, for printing with toJsonText: integers become
/// qint64, floating-point numbers doubles (a −0 through jsonNumber, so it prints as -0.0); core
/// writes the non-finite numbers of its reports as the strings "nan", "inf", "-inf" itself.
QJsonValue toQJson(const Json& j);

/// Serialises compactly or indented; replaces the −0 placeholder of jsonNumber() by -0.0,
/// which QJsonDocument cannot write itself.
std::string toJsonText(const QJsonValue& v, bool indented = true);

/// A minimal streaming JSON writer for the hot CLI paths (encode/decode of 10^5+ values):
/// QJsonObject costs ~10 µs per small object, this ~0.3 µs. Output is compact JSON; numbers
/// use the shortest round-trip form, NaN/±Inf become strings and −0 becomes -0.0 as in
/// jsonNumber(). Callers are responsible for well-formed nesting (begin/end pairs).
class JsonStreamWriter {
public:
  void beginArray() {
    sep();
    buf_ += '[';
    first_ = true;
  }
  void endArray() {
    buf_ += ']';
    first_ = false;
  }
  void beginObject() {
    sep();
    buf_ += '{';
    first_ = true;
  }
  void endObject() {
    buf_ += '}';
    first_ = false;
  }
  void key(const char* k); ///< k must be plain ASCII without quotes
  void value(double v);
  void value(bool b) {
    sep();
    buf_ += b ? "true" : "false";
  }
  void value(const std::string& s); ///< escaped
  void value(const char* s) { value(std::string(s)); }
  const std::string& text() const { return buf_; }

private:
  void sep() {
    if (!first_ && !after_key_) buf_ += ',';
    first_ = false;
    after_key_ = false;
  }
  std::string buf_;
  bool first_ = true;
  bool after_key_ = false;
};

/// What an input file given on the command line may be (readInputFile).
enum class InputKind {
  Config, ///< a JSON config: a regular file only (a FIFO without a writer would block forever)
  Values, ///< a list of numbers: a regular file, "-" (stdin) or a pipe / FIFO (`--input <(seq 1 9)`)
};

/// Reads a whole input file named on the command line, refusing what cannot be one before
/// reading: a missing path, a directory, a device (/dev/zero, /dev/urandom: endless), a FIFO or
/// socket for configs, and more than `max_bytes` (checked from the size up front for regular
/// files, while reading for stdin and pipes — never more than max_bytes + 1 bytes are held).
/// `what` names the input in messages ("config", "--input"). On failure returns nullopt and sets
/// *error to one line naming the file and the reason ("--input '/dev/zero' is a device, not a
/// file of values"; "config 'big.json' is 3.0 GiB; the limit is 64 MiB").
std::optional<QByteArray> readInputFile(const QString& path, InputKind kind, const QString& what, qint64 max_bytes,
                                        QString* error);

/// Numbers of a value-list input (readInputFile, InputKind::Values: a file, "-" or a pipe),
/// separated by whitespace and/or commas; nullopt with *error naming the file and the item.
std::optional<std::vector<double>> readNumberFile(const QString& path, QString* error);

/// The size limits of readInputFile's callers: configs 64 MiB, value lists 64 MiB (about six
/// million numbers; split larger lists).
inline constexpr qint64 kMaxConfigBytes = qint64(64) << 20;
inline constexpr qint64 kMaxValuesBytes = qint64(64) << 20;

/// While alive, SIGINT (Ctrl-C), SIGTERM (timeout, Slurm, systemd, docker stop) and SIGHUP (a
/// closed terminal) only set a flag, so a long command can stop at its next check point, save
/// what is finished and say so. A second signal — `timeout`, Slurm and `docker stop` often send
/// one to the process and one to its group, milliseconds apart — changes nothing: the save goes
/// on (stderr says so). A third ends the process at once with 128 + the first signal, after
/// writing to stderr what is lost (setInterruptLossNote); an atomic save in progress then leaves
/// only its hidden temporary, the previous file intact. Handlers are installed with SA_RESTART,
/// so a save's system calls are not interrupted by them. The old handlers are restored on
/// destruction. Guards nest: only the outermost installs and restores.
class InterruptGuard {
public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

private:
  struct sigaction old_[3];
};

/// Says what a forced stop (the third signal) would lose now, e.g. "2 finished runs not yet
/// saved; out.h5 keeps what it held". Called from the main thread whenever that changes; the
/// signal handler prints the latest note. Notes longer than 400 bytes are cut.
void setInterruptLossNote(const QString& note);

/// True once one of the guarded signals arrived (cleared when an InterruptGuard is created).
bool interrupted();
/// The signal that arrived (SIGINT, SIGTERM, SIGHUP), 0 when none.
int interruptSignal();
/// "Ctrl-C (SIGINT)", "SIGTERM", "SIGHUP" — for messages.
QString interruptName();
/// The exit status of an interrupted command: 128 + the signal (130 for Ctrl-C, 143 for SIGTERM),
/// what a shell reports for a process killed by it.
int interruptedExitCode();

/// Names the program in fail()'s and noteFormatChoice()'s stderr lines ("fp8lab-render: error: …");
/// "fp8lab-cli" unless set. `name` must outlive every later call (a string literal). Set it in
/// main, before anything can fail.
void setProgramName(const char* name);

/// Prints a message to stderr prefixed "<program>: error: " ("fp8lab-cli: error: " unless
/// setProgramName chose another name) and returns exit code 2.
int fail(const QString& message);

/// Largest --threads value accepted: far above any machine's core count, low enough that a typo
/// (100000) is an error rather than 100000 worker threads.
inline constexpr int kMaxThreads = 1024;

/// Parses a --threads value: 0 (one per core) .. kMaxThreads. Returns the count, or -1 after
/// printing "--threads: expected an integer 0..1024 (0 = one per core), got 'x'" (exit 2).
int parseThreads(const QString& text);

/// Refuses, before any computation, an output session the command could not save: a directory,
/// a missing parent directory, an existing path that is not a regular file (a device, FIFO or
/// socket), an existing file this user may not write or that has no write permission bit at all
/// (also for root, who could write it), an existing non-empty file that is not HDF5, or a parent
/// directory where the save's temporary file cannot be created (saves write beside, then rename:
/// probed by creating and removing a file, so /proc, /sys and read-only mounts are refused for
/// root too). Prints "write failed: ..." and returns false (exit 2).
bool outputWritableOrFail(const QString& out);

/// The session writers' lock policy of this process (core/session/session_lock.h), from main's
/// global options: wait for another writer of the same session (saying on stderr, after a
/// second, which process holds it), or with --no-wait fail at once naming it; --lock-timeout S
/// gives up after S seconds.
void setSessionLockPolicy(bool wait, double timeout_s);
/// The LockWait every command puts in its WriteOptions.
fp8lab::LockWait sessionLockWait();

/// Prints text to stdout (UTF-8) without a trailing newline added.
void out(const std::string& text);
void out(const QString& text);
/// A command's JSON result: appended to `collect` when a caller gathers several into one document
/// (`run --json` of a multi-experiment config prints one array), else printed at once (one line
/// of indented JSON plus a newline).
void emitJson(QJsonArray* collect, const QJsonObject& o);

/// Sets up the standard options every command accepts (--help, --json) and parses.
/// Returns false after printing the error (exit 2) or help (exit 0: *exit_code set).
bool parseArgs(QCommandLineParser& p, const QStringList& args, int* exit_code);

/// Progress on a terminal: a one-line bar on stderr, redrawn at most 10 times a second;
/// silent when stderr is not a terminal. Thread-safe.
class TerminalProgress {
public:
  explicit TerminalProgress(QString label);
  ~TerminalProgress();
  /// fraction in [0, 1]; message replaces the label's detail.
  void update(double fraction, const QString& detail = {});
  void finish();

private:
  struct Impl;
  Impl* d;
};

/// The strings of a format list ("E4M3FN,E5M2") resolved to canonical names; sets *bad.
QString formatHelpList();

/// Call with every format a command resolved from the user's words (options or config). For
/// E4M3 — the IEEE-style ml_dtypes float8_e4m3 (max 240, with ±Inf), which many users take for
/// OCP E4M3FN (max 448, no Inf) — prints one note line to stderr naming the variant and pointing
/// to E4M3FN; at most once per process (one command), however many values or formats follow.
void noteFormatChoice(const Format& f);

} // namespace fp8lab::cli

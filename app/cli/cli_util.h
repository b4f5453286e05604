// Shared helpers of the fp8lab-cli commands and of fp8lab-render: the QString / Qt JSON side of
// core's number text, input files, interrupt guard and progress bar; errors on stderr.
#pragma once

#include <QByteArray>
#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>

#include <optional>
#include <string>
#include <vector>

#include "common/interrupt.h"
#include "common/number_text.h"
#include "common/terminal_progress.h"
#include "formats/format.h"
#include "formats/format_table.h"
#include "io/input_file.h"
#include "json/json_document.h"
#include "json/json_stream_writer.h"
#include "session/output_check.h"
#include "session/session_lock.h"

namespace fp8lab::cli {

using fp8lab::InputKind;
using fp8lab::interrupted;
using fp8lab::interruptedExitCode;
using fp8lab::InterruptGuard;
using fp8lab::interruptSignal;
using fp8lab::JsonStreamWriter;
using fp8lab::kMaxConfigBytes;
using fp8lab::kMaxValuesBytes;

/// fp8lab::parseNumber of the UTF-8 text (trimmed as QString::trimmed does).
inline std::optional<double> parseNumber(const QString& text) {
  return fp8lab::parseNumber(text.toUtf8().toStdString());
}
/// fp8lab::numberProblem: why parseNumber refused `text` ("not a number: 'x'", ...).
inline QString numberProblem(const QString& text) {
  return QString::fromStdString(fp8lab::numberProblem(text.toUtf8().toStdString()));
}
/// fp8lab::parseNumberList of "1,2.5,-3"; on error sets *problem to fp8lab::numberListProblem
/// ("not a number: 'x'", "item 2 of '1,,2' is empty (...)").
std::optional<std::vector<double>> parseNumberList(const QString& text, QString* problem);

/// Shortest round-trip text of a double / float32 (fp8lab::shortestText): "nan", "inf", "-inf"
/// for non-finite values. shortestDouble / shortestFloat fix the argument's type.
inline QString shortestNumber(double v) {
  return QString::fromStdString(shortestText(v));
}
inline QString shortestNumber(float v) {
  return QString::fromStdString(shortestText(v));
}
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

/// Serialises compactly or indented, keys sorted (QJsonDocument); replaces the −0 placeholder
/// of jsonNumber() by -0.0, which QJsonDocument cannot write itself.
std::string toJsonText(const QJsonValue& v, bool indented = true);

/// fp8lab::readInputFile of a path named on the command line (QFile::encodeName).
std::optional<QByteArray> readInputFile(const QString& path, InputKind kind, const QString& what, qint64 max_bytes,
                                        QString* error);
/// fp8lab::readNumberFile: the numbers of a value list (a file, "-" or a pipe).
std::optional<std::vector<double>> readNumberFile(const QString& path, QString* error);

/// fp8lab::setInterruptLossNote of the UTF-8 text.
inline void setInterruptLossNote(const QString& note) {
  fp8lab::setInterruptLossNote(note.toUtf8().toStdString());
}
/// fp8lab::interruptName: "Ctrl-C (SIGINT)", "SIGTERM", "SIGHUP".
inline QString interruptName() {
  return QString::fromStdString(fp8lab::interruptName());
}

/// Names the program in fail()'s and noteFormatChoice()'s stderr lines ("fp8lab-render: error: …");
/// "fp8lab-cli" unless set. `name` must outlive every later call (a string literal). Set it in
/// main, before anything can fail.
void setProgramName(const char* name);

/// Prints a message to stderr prefixed "<program>: error: " (up to a NUL) and returns exit code 2.
int fail(const QString& message);

/// Largest --threads value accepted: far above any machine's core count, low enough that a typo
/// (100000) is an error rather than 100000 worker threads.
inline constexpr int kMaxThreads = 1024;

/// Parses a --threads value: 0 (one per core) .. kMaxThreads. Returns the count, or -1 after
/// printing "--threads: expected an integer 0..1024 (0 = one per core), got 'x'" (exit 2).
int parseThreads(const QString& text);

/// Refuses, before any computation, an output session the command could not save
/// (fp8lab::sessionOutputProblem): prints "write failed: ..." and returns false (exit 2).
bool outputWritableOrFail(const QString& out);

/// The session writers' lock policy of this process (session/session_lock.h), from main's global
/// options: wait for another writer (saying who after a second), or --no-wait, or --lock-timeout S.
void setSessionLockPolicy(bool wait, double timeout_s);
/// The LockWait every command puts in its WriteOptions.
fp8lab::LockWait sessionLockWait();

/// Prints text to stdout (UTF-8) without a trailing newline added.
void out(const std::string& text);
inline void out(const QString& text) {
  out(text.toStdString());
}
/// A command's JSON result: appended to `collect` when a caller gathers several into one document
/// (`run --json` of a multi-experiment config prints one array), else printed at once (one line
/// of indented JSON plus a newline).
void emitJson(QJsonArray* collect, const QJsonObject& o);

/// QCommandLineParser's `help` with its usage line naming the command as typed: "Usage: <argv[0]>
/// [options] FILE.h5" (Qt writes the program's argv[0], path included) becomes "Usage: fp8lab-cli
/// export [options] FILE.h5": the program's file name, then the words of `command` after argv[0]
/// (`command` is a command's args[0], "<argv[0]> <command words>"). A parser whose first
/// positional argument is "action" (runs, checkpoint) names the action given in `positional`
/// instead ("Usage: fp8lab-cli runs delete [options] FILE.h5"). Other text is returned unchanged.
QString commandHelpText(const QString& help, const QString& command, const QStringList& positional);

/// Sets up the standard options every command accepts (--help) and parses. Returns false after
/// printing the error (exit 2) or the help (exit 0: *exit_code set; usage line as commandHelpText).
bool parseArgs(QCommandLineParser& p, const QStringList& args, int* exit_code);

/// fp8lab::TerminalProgress (a one-line bar on stderr when it is a terminal) with QString text.
class TerminalProgress : public fp8lab::TerminalProgress {
public:
  explicit TerminalProgress(const QString& label) : fp8lab::TerminalProgress(label.toStdString()) {}
  /// fraction in [0, 1]; detail follows the percentage.
  void update(double fraction, const QString& detail = {}) {
    fp8lab::TerminalProgress::update(fraction, detail.toStdString());
  }
};

/// The canonical names of every format, ", "-separated (fp8lab::formatNameList).
inline QString formatHelpList() {
  return QString::fromStdString(formatNameList());
}

/// Call with every format a command resolved from the user's words. For E4M3 (ml_dtypes float8_e4m3:
/// max 240, with ±Inf), often taken for OCP E4M3FN (max 448, no Inf), prints one note line to
/// stderr pointing to E4M3FN; at most once per process.
void noteFormatChoice(const Format& f);

} // namespace fp8lab::cli

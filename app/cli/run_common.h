// What fp8lab-cli's experiment commands (run, sweep, rerun, train: cmd_run.cpp, cmd_sweep.cpp,
// cmd_rerun.cpp, cmd_train.cpp) share on the terminal: stderr lines, the progress bar, how they
// save, their common options and a training experiment into a file. The experiments themselves
// are core/experiment's.
#pragma once

#include "backend_choice.h"
#include "cli_util.h"
#include "cmd_run.h"

#include "experiment/config_reader.h"
#include "experiment/training/training_file.h"
#include "experiment/training/training_report.h"

#include <QCommandLineOption>
#include <QJsonArray>

#include <cstdio>
#include <memory>
#include <string>

namespace fp8lab::cli {

inline void err(const std::string& s) {
  std::fprintf(stderr, "%s\n", s.c_str());
}
inline QString qs(const std::string& s) {
  return QString::fromStdString(s);
}
inline void printJson(const Json& j) {
  out(toJsonText(toQJson(j)) + "\n");
}

/// recordBackend (backend/backend_record.h) with `b`, as core's record_backend hooks take it.
inline auto recorder(FallbackGemmBackend& b) {
  return [&b](Run& run, const GemmOptions& gemm, const std::string& note) { recordBackend(run, b, gemm, note); };
}

/// The progress bar of the piece of work in progress, ended before any line on stderr (lines with
/// `detail` are dropped when `hide_detail`). Progress without a bar starts one labelled `idle`.
struct Bar {
  Bar(bool hide_progress, bool hide_detail, std::string idle = {})
      : hide_progress(hide_progress), hide_detail(hide_detail), idle(std::move(idle)) {}
  bool hide_progress, hide_detail;
  std::string idle;
  std::unique_ptr<TerminalProgress> bar;
  void start(const std::string& label) { bar = std::make_unique<TerminalProgress>(qs(label)); }
  bool update(double f, const std::string& stage) {
    if (!bar) start(idle);
    if (!hide_progress) bar->update(f, qs(stage));
    return !interrupted(); // InterruptGuard: stop at the next check point
  }
  void line(const std::string& s, bool detail) {
    if (bar) bar->finish();
    if (!detail || !hide_detail) err(s);
  }
};

/// How the commands here save: `compress`, a taken run id renamed (-2, -3, ...), the session
/// lock policy of the process.
WriteOptions writeOptions(bool compress);

/// A command-line option: `names` comma-separated ("o,out"), `value` the value's name ("" for a
/// flag), `def` its default ("" for none).
QCommandLineOption cliOption(const char* names, const char* help, const char* value = "", const char* def = "");

/// Options `run` and `sweep` share (`rerun` the last three), in this order.
struct SharedOptions {
  QCommandLineOption o = cliOption("o,out", "Session file to write (created or appended to).", "FILE.h5"),
                     nc = cliOption("no-compress", "Store datasets uncompressed (faster, larger)."),
                     be = backendOption(),
                     th =
                         cliOption("threads", "Worker threads (0 = all cores; results do not depend on it).", "N", "0"),
                     js = cliOption("json", "Machine-readable JSON output."),
                     q = cliOption("q,quiet", "No progress output.");
};

/// A training experiment of `run` or `train`.
struct TrainingCliOptions {
  TrainingOverrides over;
  bool json = false, quiet = false, compress = true;
  bool print_session_line = true;         ///< end with "session written: FILE" (run prints its own)
  FallbackGemmBackend* backend = nullptr; ///< null = the CPU reference
  QJsonArray* json_out = nullptr;         ///< several experiments: the JSON summary goes here
};

/// Runs the training experiment `config` (at `at` in `doc`) into `out_file` (training_file.h);
/// the exit code: 0, 2 (bad config, missing data, unwritable output), 128+signal.
int runTraining(const Json& config, const ConfigPath& at, const JsonDocument* doc, const QString& out_file,
                const TrainingCliOptions& opt);
/// Runs a parsed training experiment into `out_file` (as runTraining, without the parsing).
int runTrainingSpec(const TrainingExperimentSpec& spec, const QString& out_file, const TrainingCliOptions& opt);

} // namespace fp8lab::cli

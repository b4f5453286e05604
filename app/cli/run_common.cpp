// The terminal side the experiment commands share (run_common.h): saving, the config reader,
// options, a training experiment into a file.
#include "run_common.h"

#include "experiment/run_results.h"
#include "experiment/training/training_report.h"

#include <QFile>
#include <QFileInfo>

namespace fp8lab::cli {

/// How the commands here save: `compress`, a taken run id renamed (-2, -3, ...), the session
/// lock policy of the process.
WriteOptions writeOptions(bool compress) {
  WriteOptions wo;
  wo.compress = compress;
  wo.on_conflict = WriteOptions::OnConflict::Rename;
  wo.lock = sessionLockWait();
  return wo;
}

bool appendRunsToFile(const QString& out, const std::vector<Run>& runs, bool compress, std::vector<std::string>* ids) {
  WriteOptions wo = writeOptions(compress);
  TerminalProgress bar(QStringLiteral("saving"));
  wo.progress = [&](double f, const std::string& s) {
    bar.update(f, qs(s));
    return true;
  };
  std::vector<std::string> assigned;
  if (!ids) ids = &assigned;
  Status st = appendRuns(out.toStdString(), runs, wo, ids);
  bar.finish();
  for (const auto& i : st.issues)
    if (i.severity != Severity::Error) err(i.toString());
  if (!st.ok()) return fail(qs(st.errors())) == 0;
  for (size_t i = 0; i < ids->size() && i < runs.size(); ++i)
    if ((*ids)[i] != runs[i].id) err(renamedRunNote(runs[i].id, (*ids)[i]));
  return true;
}

bool loadConfig(const QString& path, LoadedConfig* c) {
  QString e;
  std::optional<QByteArray> bytes;
  QFile f(QStringLiteral(":/fp8lab/experiments/default.json")); // the embedded default (a Qt resource)
  if (path.isEmpty() && !f.exists()) f.setFileName(QStringLiteral(":/experiments/default.json"));
  c->origin = path.isEmpty() ? f.fileName() : path;
  if (!path.isEmpty()) // a regular file of at most 64 MiB: never a FIFO (blocks) or /dev/zero (endless)
    bytes = readInputFile(path, InputKind::Config, QStringLiteral("config"), kMaxConfigBytes, &e);
  else if (!f.exists())
    e = QStringLiteral("no CONFIG.json given and this build has no embedded default experiment");
  else if (!f.open(QIODevice::ReadOnly))
    e = QStringLiteral("cannot read config '%1': %2").arg(c->origin, f.errorString());
  else
    bytes = f.readAll();
  std::string why;
  if (bytes) c->text = bytes->toStdString();
  auto doc = bytes ? parseConfigText(c->text, c->origin.toStdString(), &why) : std::nullopt;
  if (doc) c->doc = std::move(*doc);
  return doc || fail(bytes ? qs(why) : e) == 0;
}

/// A command-line option: `names` comma-separated ("o,out"), `value` the value's name ("" for a
/// flag), `def` its default ("" for none).
QCommandLineOption cliOption(const char* names, const char* help, const char* value, const char* def) {
  return QCommandLineOption(QString::fromUtf8(names).split(QLatin1Char(',')), QString::fromUtf8(help),
                            QString::fromUtf8(value), QString::fromUtf8(def));
}

/// Runs the training experiment `config` (at `at` in `doc`) into `out_file` (training_file.h);
/// the exit code: 0, 2 (bad config, missing data, unwritable output), 128+signal.
int runTraining(const Json& config, const ConfigPath& at, const JsonDocument* doc, const QString& out_file,
                const TrainingCliOptions& opt) {
  std::string e;
  auto spec = trainingExperimentToRun(config, at, doc, opt.over, &e);
  if (!spec) return fail(qs(e));
  return runTrainingSpec(*spec, out_file, opt);
}

int runTrainingSpec(const TrainingExperimentSpec& spec, const QString& out_file, const TrainingCliOptions& opt) {
  // Fail early on an output that cannot be saved, before minutes of training.
  if (!outputWritableOrFail(out_file)) return 2;
  InterruptGuard interrupt_guard; // SIGINT / SIGTERM / SIGHUP: stop after the step, save, exit 128+sig
  const std::string path = out_file.toStdString();
  Bar bar{false, opt.quiet || opt.json, "GEMM on trained weights"};
  TrainingFileHooks h;
  h.line = [&](const std::string& s, bool detail) { bar.line(s, detail); };
  // The runs' results go to stdout (a pipe or a file gets them); progress and notes to stderr.
  if (!opt.json && !opt.quiet)
    h.result = [&](const std::string& s) {
      if (bar.bar) bar.bar->finish();
      out(s + "\n");
    };
  h.started = [&](const std::string& label) { bar.start(label); };
  h.progress = [&](double f, const std::string& stage) { return bar.update(f, stage); };
  h.ended = [&] { bar.bar.reset(); };
  h.loss_note = [](const std::string& n) { setInterruptLossNote(QString::fromStdString(n)); };
  if (opt.backend) h.record_backend = recorder(*opt.backend);
  const TrainingFileResult res =
      runTrainingIntoFile(spec, path, writeOptions(opt.compress), opt.backend, opt.over.threads, h);
  bar.bar.reset();
  using S = TrainingExperimentOutcome::Status;
  if (res.outcome.status == S::Failed) return fail(qs(res.outcome.error));
  // Cancelled, or a signal that arrived after the last piece of work: everything is saved.
  const bool stopped = res.outcome.status == S::Cancelled || interrupted();
  if (opt.json) emitJson(opt.json_out, toQJson(trainingSummaryJson(path, stopped, res.runs)).toObject());
  if (stopped) {
    err("fp8lab-cli: " + trainingInterruptText(res.outcome, path));
    return interruptedExitCode();
  }
  if (!opt.json && !opt.quiet && opt.print_session_line)
    err("session written: " + QFileInfo(out_file).absoluteFilePath().toStdString());
  return 0;
}

} // namespace fp8lab::cli

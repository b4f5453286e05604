// fp8lab-cli inspect | export | merge | runs — session files: what is in them, CSV export,
// joining shards, deleting and renaming runs (core/session/session.h).
#include "cli_util.h"
#include "cmd_render.h"
#include "command.h"

#include "session/session.h"
#include "session/session_export.h"
#include "session/session_inspect.h"
#include "session/session_summary.h"

#include <QCommandLineParser>
#include <QDir>

#include <cstdio>

namespace fp8lab::cli {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

void printJson(const Json& j) {
  out(toJsonText(toQJson(j)) + "\n");
}

/// Opens a session or prints why not (exit code in *rc).
std::unique_ptr<SessionReader> openOrFail(const QString& file, bool json, int* rc, Status* issues = nullptr) {
  auto r = SessionReader::open(file.toStdString());
  if (issues) *issues = r;
  if (!r.ok()) {
    if (json) printJson(sessionOpenFailureJson(file.toStdString(), r));
    *rc = fail(qs(r.errors()));
    return nullptr;
  }
  return std::move(r.value);
}

// ---- inspect --------------------------------------------------------------------------------

int runInspect(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(
      QStringLiteral("Shows what a session file holds: its runs, their configurations, metrics and datasets.\n"
                     "Validates the file on the way and lists every problem found."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  const QCommandLineOption js(QStringLiteral("json"), QStringLiteral("Machine-readable JSON output."));
  const QCommandLineOption runOpt(
      QStringLiteral("run"), QStringLiteral("Only this run (with its config and datasets)."), QStringLiteral("ID"));
  const QCommandLineOption verbose({QStringLiteral("v"), QStringLiteral("verbose")},
                                   QStringLiteral("Show configs and datasets of every run."));
  p.addOptions({js, runOpt, verbose});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() != 1) return fail(QStringLiteral("inspect needs one FILE.h5"));
  const QString file = p.positionalArguments()[0];
  const bool json = p.isSet(js);
  Status issues;
  auto rd = openOrFail(file, json, &rc, &issues);
  if (!rd) return rc;
  const SessionInfo& info = rd->info();
  const QString only = p.value(runOpt);
  if (!only.isEmpty() && !info.find(only.toStdString()))
    return fail(QStringLiteral("no run '%1' in %2").arg(only, file));

  if (json) {
    printJson(sessionInspectJson(file.toStdString(), info, issues, only.toStdString()));
    return 0;
  }
  out(sessionSummaryText(file.toStdString(), info, issues, only.toStdString(), p.isSet(verbose)));
  return 0;
}

// ---- export ---------------------------------------------------------------------------------

int runExport(const QStringList& args) {
  for (const QString& a : args)
    if (a == QStringLiteral("--png") || a.startsWith(QStringLiteral("--png=")))
      return runRenderer(args.mid(1), QStringLiteral("export --png"));
  QCommandLineParser p;
  p.setApplicationDescription(
      QStringLiteral("Exports one run to CSV files: one file per dataset (path with '/' replaced by '__', rows of\n"
                     "comma-separated values, shortest round-trip decimals: float32 values read back exactly),\n"
                     "plus metrics.csv, attributes.csv and config.json.\n"
                     "With --png DIR instead of --csv: renders the run's views (see fp8lab-cli render --help)."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  const QCommandLineOption runOpt(QStringLiteral("run"), QStringLiteral("Run to export."), QStringLiteral("ID"));
  const QCommandLineOption csvOpt(QStringLiteral("csv"), QStringLiteral("Output directory (created)."),
                                  QStringLiteral("DIR"));
  const QCommandLineOption dsOpt(QStringLiteral("datasets"),
                                 QStringLiteral("Comma-separated dataset paths (default: all)."),
                                 QStringLiteral("LIST"));
  const QCommandLineOption js(QStringLiteral("json"), QStringLiteral("List the files written as JSON."));
  p.addOptions({runOpt, csvOpt, dsOpt, js});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() != 1) return fail(QStringLiteral("export needs one FILE.h5"));
  if (!p.isSet(csvOpt)) return fail(QStringLiteral("--csv DIR is required"));
  const QString file = p.positionalArguments()[0];
  auto rd = openOrFail(file, false, &rc);
  if (!rd) return rc;
  QString id = p.value(runOpt);
  if (id.isEmpty()) {
    if (rd->info().runs.size() != 1) {
      QStringList ids;
      for (const auto& r : rd->info().runs) ids << qs(r.id);
      return fail(QStringLiteral("--run ID is required (runs: %1)").arg(ids.join(QStringLiteral(", "))));
    }
    id = qs(rd->info().runs[0].id);
  }
  const RunInfo* ri = rd->info().find(id.toStdString());
  if (!ri) return fail(QStringLiteral("no run '%1' in %2").arg(id, file));
  const QString dir = p.value(csvOpt);
  if (!QDir().mkpath(dir)) return fail(QStringLiteral("cannot create directory %1").arg(dir));
  std::vector<std::string> wanted;
  for (const QString& w : p.value(dsOpt).split(QLatin1Char(','), Qt::SkipEmptyParts)) wanted.push_back(w.toStdString());
  TerminalProgress bar(QStringLiteral("export"));
  std::string e;
  const auto written = exportRunCsv(
      *rd, *ri, QDir(dir).filePath(QStringLiteral("x")).chopped(1).toStdString(), wanted,
      [&](double f, const std::string& d) {
        bar.update(f, qs(d));
        return true;
      },
      &e);
  if (!written) return fail(qs(e));
  bar.finish();
  if (p.isSet(js))
    printJson(csvExportJson(id.toStdString(), dir.toStdString(), *written));
  else
    out(csvExportText(id.toStdString(), dir.toStdString(), written->size()));
  return 0;
}

// ---- merge ----------------------------------------------------------------------------------

int runMerge(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(
      QStringLiteral("Joins the runs of several session files (e.g. the shards of a sweep) into OUT.h5, written\n"
                     "atomically. Every input is validated first; nothing is written if one is damaged. Run ids\n"
                     "that collide get -2, -3, ... unless --on-conflict says otherwise.\n"
                     "An existing OUT.h5 is never lost by accident: to merge into it, name it as an input too\n"
                     "(merge all.h5 all.h5 new.h5); to replace it, add --force. A file that is not an FP8 Lab\n"
                     "session (text, JSON, another program's HDF5) is never replaced, even with --force."));
  p.addPositionalArgument(QStringLiteral("OUT.h5"), QStringLiteral("Output session file."));
  p.addPositionalArgument(QStringLiteral("IN.h5"), QStringLiteral("Input session files."),
                          QStringLiteral("IN1.h5 IN2.h5 ..."));
  const QCommandLineOption conf(QStringLiteral("on-conflict"), QStringLiteral("rename (default), fail or replace."),
                                QStringLiteral("POLICY"), QStringLiteral("rename"));
  const QCommandLineOption nc(QStringLiteral("json"), QStringLiteral("Machine-readable JSON output."));
  const QCommandLineOption force(QStringLiteral("force"),
                                 QStringLiteral("Replace an existing OUT.h5 session that is not one of the inputs "
                                                "(its runs are lost)."));
  p.addOptions({conf, nc, force});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  const QStringList pos = p.positionalArguments();
  if (pos.size() < 2) return fail(QStringLiteral("merge needs OUT.h5 and at least one input"));
  WriteOptions wo;
  const QString c = p.value(conf);
  if (c == QStringLiteral("rename"))
    wo.on_conflict = WriteOptions::OnConflict::Rename;
  else if (c == QStringLiteral("fail"))
    wo.on_conflict = WriteOptions::OnConflict::Fail;
  else if (c == QStringLiteral("replace"))
    wo.on_conflict = WriteOptions::OnConflict::Replace;
  else
    return fail(QStringLiteral("--on-conflict: expected rename, fail or replace"));
  wo.replace_existing = p.isSet(force);
  wo.lock = sessionLockWait();
  std::vector<std::string> ins;
  for (int i = 1; i < pos.size(); ++i) ins.push_back(pos[i].toStdString());
  TerminalProgress bar(QStringLiteral("merge"));
  wo.progress = [&](double f, const std::string& s) {
    bar.update(f, qs(s));
    return true;
  };
  std::vector<std::string> notes;
  Status st = mergeSessions(pos[0].toStdString(), ins, wo, &notes);
  bar.finish();
  if (!st.ok()) {
    for (const auto& i : st.issues) // the warnings say which run of which input is damaged
      if (i.severity != Severity::Error) std::fprintf(stderr, "%s\n", i.toString().c_str());
    return fail(qs(st.errors()));
  }
  for (const auto& n : notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  auto rd = SessionReader::open(pos[0].toStdString());
  const size_t nruns = rd.ok() ? rd.value->info().runs.size() : 0;
  if (p.isSet(nc))
    printJson(mergeJson(pos[0].toStdString(), nruns, notes));
  else
    out(mergeText(pos[0].toStdString(), ins.size(), nruns));
  return 0;
}

// ---- runs (list / delete / rename) ----------------------------------------------------------

int runRuns(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Edits the runs of a session file (atomic rewrite; space of deleted runs is reclaimed):\n"
      "  runs list FILE.h5\n  runs delete FILE.h5 RUN_ID [RUN_ID...]\n  runs rename FILE.h5 OLD_ID NEW_ID"));
  p.addPositionalArgument(QStringLiteral("action"), QStringLiteral("list, delete or rename."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  const QCommandLineOption js(
      QStringLiteral("json"),
      QStringLiteral("list: a JSON array of {id, type, created_utc, datasets} instead of ids."));
  p.addOption(js);
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  const QStringList pos = p.positionalArguments();
  if (pos.size() < 2) return fail(QStringLiteral("usage: runs list|delete|rename FILE.h5 ..."));
  const QString action = pos[0], file = pos[1];
  if (action == QStringLiteral("list")) {
    if (pos.size() != 2) return fail(QStringLiteral("runs list takes only FILE.h5 (got %1 more)").arg(pos.size() - 2));
    auto rd = openOrFail(file, p.isSet(js), &rc);
    if (!rd) return rc;
    if (p.isSet(js))
      printJson(runListJson(rd->info()));
    else
      out(runListText(rd->info()));
    return 0;
  }
  if (p.isSet(js)) return fail(QStringLiteral("--json applies to runs list only"));
  if (action == QStringLiteral("delete")) {
    if (pos.size() < 3) return fail(QStringLiteral("runs delete needs FILE.h5 and at least one RUN_ID"));
    std::vector<std::string> ids;
    for (int i = 2; i < pos.size(); ++i) ids.push_back(pos[i].toStdString());
    // One atomic rewrite: every id is checked first, so a missing one changes nothing.
    WriteOptions wo;
    wo.lock = sessionLockWait();
    Status st = deleteRuns(file.toStdString(), ids, wo);
    if (!st.ok()) return fail(qs(st.errors()));
    for (int i = 2; i < pos.size(); ++i) out(QStringLiteral("deleted run %1 from %2\n").arg(pos[i], file));
    return 0;
  }
  if (action == QStringLiteral("rename")) {
    if (pos.size() != 4) return fail(QStringLiteral("runs rename needs FILE.h5 OLD_ID NEW_ID"));
    WriteOptions wo;
    wo.lock = sessionLockWait();
    Status st = renameRun(file.toStdString(), pos[2].toStdString(), pos[3].toStdString(), wo);
    if (!st.ok()) return fail(qs(st.errors()));
    out(QStringLiteral("renamed run %1 to %2 in %3\n").arg(pos[2], pos[3], file));
    return 0;
  }
  return fail(QStringLiteral("unknown action '%1' (list, delete, rename)").arg(action));
}

const CommandRegistrar regInspect({QStringLiteral("inspect"),
                                   QStringLiteral("Show the runs, configs and metrics of a session file"), runInspect,
                                   70});
const CommandRegistrar regExport({QStringLiteral("export"), QStringLiteral("Export a run of a session file to CSV"),
                                  runExport, 71});
const CommandRegistrar regMerge({QStringLiteral("merge"),
                                 QStringLiteral("Join session files (e.g. sweep shards) into one"), runMerge, 72});
const CommandRegistrar regRuns({QStringLiteral("runs"), QStringLiteral("List, delete or rename runs of a session file"),
                                runRuns, 73});

} // namespace
} // namespace fp8lab::cli

// fp8lab-cli inspect | export | merge | runs — session files: what is in them, CSV export,
// joining shards, deleting and renaming runs (core/session/session.h).
#include "cli_util.h"
#include "cmd_render.h"
#include "command.h"

#include "common/names.h"
#include "session/session.h"
#include "session/session_export.h"
#include "session/session_inspect.h"
#include "session/session_summary.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>

#include <cstdio>

namespace fp8lab::cli {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

/// Prints `j` (JSON) or else `text`; exit code 0.
int print(bool json, const Json& j, const std::string& text) {
  out(json ? toJsonText(toQJson(j)) + "\n" : text);
  return 0;
}

/// An option from UTF-8 text: `names` comma-separated ("v,verbose"); a flag without `value`, else
/// taking one (default `def`).
QCommandLineOption option(const char* names, const char* help, const char* value = "", const char* def = "") {
  return {QString::fromUtf8(names).split(QLatin1Char(',')), QString::fromUtf8(help), QString::fromUtf8(value),
          QString::fromUtf8(def)};
}

/// Opens a session or prints why not (exit code in *rc).
std::unique_ptr<SessionReader> openOrFail(const QString& file, bool json, int* rc, Status* issues = nullptr) {
  auto r = SessionReader::open(file.toStdString());
  if (issues) *issues = r;
  if (r.ok()) return std::move(r.value);
  if (json) print(true, sessionOpenFailureJson(file.toStdString(), r), {});
  *rc = fail(qs(r.errors()));
  return nullptr;
}

int runInspect(const QStringList& args) {
  QCommandLineParser p;
  const QCommandLineOption js = option("json", "Machine-readable JSON output."),
                           runOpt = option("run", "Only this run (with its config and datasets).", "ID"),
                           verbose = option("v,verbose", "Show configs and datasets of every run.");
  p.setApplicationDescription(
      QStringLiteral("Shows what a session file holds: its runs, their configurations, metrics and datasets.\n"
                     "Validates the file on the way and lists every problem found."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  p.addOptions({js, runOpt, verbose});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() != 1) return fail(QStringLiteral("inspect needs one FILE.h5"));
  const QString file = p.positionalArguments()[0], only = p.value(runOpt);
  Status issues;
  auto rd = openOrFail(file, p.isSet(js), &rc, &issues);
  if (!rd) return rc;
  const SessionInfo& info = rd->info();
  const std::string f = file.toStdString(), o = only.toStdString();
  if (!o.empty() && !info.find(o)) return fail(QStringLiteral("no run '%1' in %2").arg(only, file));
  return print(p.isSet(js), sessionInspectJson(f, info, issues, o),
               sessionSummaryText(f, info, issues, o, p.isSet(verbose)));
}

int runExport(const QStringList& args) {
  for (const QString& a : args)
    if (a == QStringLiteral("--png") || a.startsWith(QStringLiteral("--png=")))
      return runRenderer(args.mid(1), QStringLiteral("export --png"));
  QCommandLineParser p;
  const QCommandLineOption runOpt = option("run", "Run to export.", "ID"),
                           csvOpt = option("csv", "Output directory (created).", "DIR"),
                           dsOpt = option("datasets", "Comma-separated dataset paths (default: all).", "LIST"),
                           js = option("json", "List the files written as JSON.");
  p.setApplicationDescription(
      QStringLiteral("Exports one run to CSV files: one file per dataset (path with '/' replaced by '__', rows of\n"
                     "comma-separated values, shortest round-trip decimals: float32 values read back exactly),\n"
                     "plus metrics.csv, attributes.csv and config.json.\n"
                     "With --png DIR instead of --csv: renders the run's views (see fp8lab-cli render --help)."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  p.addOptions({runOpt, csvOpt, dsOpt, js});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() != 1) return fail(QStringLiteral("export needs one FILE.h5"));
  if (!p.isSet(csvOpt)) return fail(QStringLiteral("--csv DIR is required"));
  const QString file = p.positionalArguments()[0], dir = p.value(csvOpt);
  auto rd = openOrFail(file, false, &rc);
  if (!rd) return rc;
  QStringList ids;
  for (const auto& r : rd->info().runs) ids << qs(r.id);
  const QString id = !p.value(runOpt).isEmpty() ? p.value(runOpt) : ids.size() == 1 ? ids[0] : QString();
  if (id.isEmpty()) return fail(QStringLiteral("--run ID is required (runs: %1)").arg(ids.join(QStringLiteral(", "))));
  const RunInfo* ri = rd->info().find(id.toStdString());
  if (!ri) return fail(QStringLiteral("no run '%1' in %2").arg(id, file));
  if (!QDir().mkpath(dir)) return fail(QStringLiteral("cannot create directory %1").arg(dir));
  const std::vector<std::string> wanted = commaItems(p.value(dsOpt).toStdString());
  TerminalProgress bar(QStringLiteral("export"));
  auto progress = [&](double f, const std::string& d) { return bar.update(f, qs(d)), true; };
  std::string e; // the files go to QDir(dir).filePath(name): the directory as QDir spells it, then '/'
  const auto files =
      exportRunCsv(*rd, *ri, QDir(dir).filePath(QStringLiteral("x")).chopped(1).toStdString(), wanted, progress, &e);
  if (!files) return fail(qs(e));
  bar.finish();
  return print(p.isSet(js), csvExportJson(id.toStdString(), dir.toStdString(), *files),
               csvExportText(id.toStdString(), dir.toStdString(), files->size()));
}

int runMerge(const QStringList& args) {
  QCommandLineParser p;
  const QCommandLineOption conf = option("on-conflict", "rename (default), fail or replace.", "POLICY", "rename"),
                           js = option("json", "Machine-readable JSON output."),
                           force = option("force", "Replace an existing OUT.h5 session that is not one of the inputs "
                                                   "(its runs are lost).");
  p.setApplicationDescription(
      QStringLiteral("Joins the runs of several session files (e.g. the shards of a sweep) into OUT.h5, written\n"
                     "atomically. Every input is validated first; nothing is written if one is damaged. Run ids\n"
                     "that collide get -2, -3, ... unless --on-conflict says otherwise.\n"
                     "An existing OUT.h5 is never lost by accident: to merge into it, name it as an input too\n"
                     "(merge all.h5 all.h5 new.h5; while all.h5 does not exist yet, that input is skipped with a\n"
                     "note); to replace it, add --force. A file that is not an FP8 Lab session (text, JSON, another\n"
                     "program's HDF5) is never replaced, even with --force."));
  p.addPositionalArgument(QStringLiteral("OUT.h5"), QStringLiteral("Output session file."));
  p.addPositionalArgument(QStringLiteral("IN.h5"), QStringLiteral("Input session files."),
                          QStringLiteral("IN1.h5 IN2.h5 ..."));
  p.addOptions({conf, js, force});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  const QStringList pos = p.positionalArguments();
  if (pos.size() < 2) return fail(QStringLiteral("merge needs OUT.h5 and at least one input"));
  using C = WriteOptions::OnConflict;
  const std::string c = p.value(conf).toStdString();
  if (c != "rename" && c != "fail" && c != "replace")
    return fail(QStringLiteral("--on-conflict: expected rename, fail or replace"));
  WriteOptions wo;
  wo.on_conflict = c == "rename" ? C::Rename : c == "fail" ? C::Fail : C::Replace;
  wo.replace_existing = p.isSet(force);
  wo.lock = sessionLockWait();
  std::vector<std::string> ins, notes;
  for (int i = 1; i < pos.size(); ++i) ins.push_back(pos[i].toStdString());
  // The inputs merged: mergeSessions skips the output named as an input while nothing exists there
  // (paths compared absolute and cleaned), unless it is every input.
  size_t merged = ins.size();
  if (const QFileInfo o(pos[0]); !o.exists() && !o.isSymLink()) {
    const auto clean = [](const QString& f) { return QDir::cleanPath(QFileInfo(f).absoluteFilePath()); };
    size_t same = 0;
    for (int i = 1; i < pos.size(); ++i) same += clean(pos[i]) == clean(pos[0]) ? 1 : 0;
    if (same < merged) merged -= same;
  }
  TerminalProgress bar(QStringLiteral("merge"));
  wo.progress = [&](double f, const std::string& s) { return bar.update(f, qs(s)), true; };
  Status st = mergeSessions(pos[0].toStdString(), ins, wo, &notes);
  bar.finish();
  for (const auto& i : st.issues) // the warnings say which run of which input is damaged
    if (!st.ok() && i.severity != Severity::Error) std::fprintf(stderr, "%s\n", i.toString().c_str());
  if (!st.ok()) return fail(qs(st.errors()));
  for (const auto& n : notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  auto rd = SessionReader::open(pos[0].toStdString());
  const size_t nruns = rd.ok() ? rd.value->info().runs.size() : 0;
  return print(p.isSet(js), mergeJson(pos[0].toStdString(), nruns, notes),
               mergeText(pos[0].toStdString(), merged, nruns));
}

int runRuns(const QStringList& args) {
  QCommandLineParser p;
  const QCommandLineOption js =
      option("json", "list: a JSON array of {id, type, created_utc, datasets} instead of ids.");
  p.setApplicationDescription(QStringLiteral(
      "Edits the runs of a session file (atomic rewrite; space of deleted runs is reclaimed):\n"
      "  runs list FILE.h5\n  runs delete FILE.h5 RUN_ID [RUN_ID...]\n  runs rename FILE.h5 OLD_ID NEW_ID"));
  p.addPositionalArgument(QStringLiteral("action"), QStringLiteral("list, delete or rename."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  p.addOption(js);
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  const QStringList pos = p.positionalArguments();
  if (pos.size() < 2) return fail(QStringLiteral("usage: runs list|delete|rename FILE.h5 ..."));
  const QString action = pos[0], file = pos[1];
  if (action == QStringLiteral("list")) {
    if (pos.size() != 2) return fail(QStringLiteral("runs list takes only FILE.h5 (got %1 more)").arg(pos.size() - 2));
    auto rd = openOrFail(file, p.isSet(js), &rc);
    return rd ? print(p.isSet(js), runListJson(rd->info()), runListText(rd->info())) : rc;
  }
  if (p.isSet(js)) return fail(QStringLiteral("--json applies to runs list only"));
  WriteOptions wo;
  wo.lock = sessionLockWait();
  if (action == QStringLiteral("delete")) {
    if (pos.size() < 3) return fail(QStringLiteral("runs delete needs FILE.h5 and at least one RUN_ID"));
    std::vector<std::string> ids;
    for (int i = 2; i < pos.size(); ++i) {
      // A repeated id is a slip in the list (a paste, an overlapping glob): refused, nothing deleted.
      if (const int first = int(pos.indexOf(pos[i], 2)); first < i)
        return fail(QStringLiteral("runs delete: run id '%1' is given twice (RUN_ID %2 and %3); nothing deleted, %4 "
                                   "unchanged")
                        .arg(pos[i])
                        .arg(first - 1)
                        .arg(i - 1)
                        .arg(file));
      ids.push_back(pos[i].toStdString());
    }
    // One atomic rewrite: every id is checked first, so a missing one changes nothing.
    if (Status st = deleteRuns(file.toStdString(), ids, wo); !st.ok()) return fail(qs(st.errors()));
    for (int i = 2; i < pos.size(); ++i) out(QStringLiteral("deleted run %1 from %2\n").arg(pos[i], file));
    return 0;
  }
  if (action != QStringLiteral("rename"))
    return fail(QStringLiteral("unknown action '%1' (list, delete, rename)").arg(action));
  if (pos.size() != 4) return fail(QStringLiteral("runs rename needs FILE.h5 OLD_ID NEW_ID"));
  if (Status st = renameRun(file.toStdString(), pos[2].toStdString(), pos[3].toStdString(), wo); !st.ok())
    return fail(qs(st.errors()));
  out(QStringLiteral("renamed run %1 to %2 in %3\n").arg(pos[2], pos[3], file));
  return 0;
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

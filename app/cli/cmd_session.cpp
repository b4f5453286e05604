// fp8lab-cli inspect | export | merge | runs — session files: what is in them, CSV export,
// joining shards, deleting and renaming runs (core/session/session.h).
#include "cli_util.h"
#include "cmd_render.h"
#include "command.h"

#include "session/session.h"
#include "session/session_summary.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace fp8lab::cli {
namespace {

void err(const QString& s) {
  std::fprintf(stderr, "%s\n", s.toUtf8().constData());
}

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

/// Shortest round-trip text of a value (float32 values as float32, so CSV is exact).
void appendNumber(std::string& s, double v, bool is_float32) {
  if (std::isnan(v)) {
    s += "nan";
    return;
  }
  if (std::isinf(v)) {
    s += v > 0 ? "inf" : "-inf";
    return;
  }
  char buf[64];
  const auto r = is_float32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                            : std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}

QJsonValue attrJson(const AttrValue& v) {
  if (auto s = std::get_if<std::string>(&v)) return qs(*s);
  if (auto d = std::get_if<double>(&v)) return jsonNumber(*d);
  return QJsonValue(static_cast<qint64>(std::get<int64_t>(v)));
}

QJsonObject attrsJson(const Attributes& a) {
  QJsonObject o;
  for (const auto& [k, v] : a) o.insert(qs(k), attrJson(v));
  return o;
}

QString attrText(const AttrValue& v) {
  if (auto s = std::get_if<std::string>(&v)) return qs(*s);
  std::string t;
  if (auto d = std::get_if<double>(&v))
    appendNumber(t, *d, false);
  else
    t = std::to_string(std::get<int64_t>(v));
  return qs(t);
}

QString shapeText(const std::vector<int64_t>& s) {
  QStringList p;
  for (auto x : s) p << QString::number(x);
  return QLatin1Char('[') + p.join(QStringLiteral(", ")) + QLatin1Char(']');
}

QJsonArray issuesJson(const Status& st) {
  QJsonArray a;
  for (const auto& i : st.issues)
    a.append(QJsonObject{{QStringLiteral("severity"), i.severity == Severity::Error     ? QStringLiteral("error")
                                                      : i.severity == Severity::Warning ? QStringLiteral("warning")
                                                                                        : QStringLiteral("info")},
                         {QStringLiteral("what"), QString::fromLatin1(codeName(i.code))},
                         {QStringLiteral("where"), qs(i.where)},
                         {QStringLiteral("detail"), qs(i.detail)}});
  return a;
}

/// Opens a session or prints why not (exit code in *rc).
std::unique_ptr<SessionReader> openOrFail(const QString& file, bool json, int* rc, Status* issues = nullptr) {
  auto r = SessionReader::open(file.toStdString());
  if (issues) *issues = r;
  if (!r.ok()) {
    if (json)
      out(toJsonText(QJsonObject{{QStringLiteral("file"), file},
                                 {QStringLiteral("ok"), false},
                                 {QStringLiteral("issues"), issuesJson(r)}}) +
          "\n");
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
    QJsonArray runs;
    for (const auto& r : info.runs) {
      if (!only.isEmpty() && qs(r.id) != only) continue;
      QJsonObject metrics;
      for (const auto& [k, m] : r.metrics)
        metrics.insert(qs(k), QJsonObject{{QStringLiteral("value"), jsonNumber(m.value)},
                                          {QStringLiteral("units"), qs(m.units)},
                                          {QStringLiteral("meaning"), qs(m.meaning)}});
      QJsonArray ds;
      for (const auto& d : r.datasets) {
        QJsonArray shape;
        for (auto x : d.shape) shape.append(static_cast<qint64>(x));
        ds.append(QJsonObject{{QStringLiteral("path"), qs(d.path)},
                              {QStringLiteral("dtype"), QString::fromLatin1(toString(d.dtype))},
                              {QStringLiteral("shape"), shape},
                              {QStringLiteral("chunked"), d.chunked},
                              {QStringLiteral("compressed"), d.compressed},
                              {QStringLiteral("attrs"), attrsJson(d.attrs)}});
      }
      QJsonObject groups;
      for (const auto& [g, a] : r.group_attrs) groups.insert(qs(g), attrsJson(a));
      QJsonParseError pe;
      const QJsonDocument cfg = QJsonDocument::fromJson(QByteArray::fromStdString(r.config_json), &pe);
      runs.append(QJsonObject{
          {QStringLiteral("id"), qs(r.id)},
          {QStringLiteral("type"), qs(r.type)},
          {QStringLiteral("seed"), qs(std::to_string(r.seed))}, // string: uint64 does not fit a JSON double
          {QStringLiteral("backend"), qs(r.backend)},
          {QStringLiteral("device"), qs(r.device)},
          {QStringLiteral("created_utc"), qs(r.created_utc)},
          {QStringLiteral("app_version"), qs(r.app_version)},
          {QStringLiteral("config"), cfg.isObject() ? QJsonValue(cfg.object()) : QJsonValue(qs(r.config_json))},
          {QStringLiteral("config_text"), qs(r.config_json)},
          {QStringLiteral("attrs"), attrsJson(r.attrs)},
          {QStringLiteral("metrics"), metrics},
          {QStringLiteral("datasets"), ds},
          {QStringLiteral("groups"), groups}});
    }
    QJsonObject root{{QStringLiteral("file"), file},
                     {QStringLiteral("ok"), true},
                     {QStringLiteral("format_version"), info.format_version},
                     {QStringLiteral("app_version"), qs(info.app_version)},
                     {QStringLiteral("created_utc"), qs(info.created_utc)},
                     {QStringLiteral("modified_utc"), qs(info.modified_utc)},
                     {QStringLiteral("attrs"), attrsJson(info.attrs)},
                     {QStringLiteral("runs"), runs},
                     {QStringLiteral("issues"), issuesJson(issues)}};
    out(toJsonText(root) + "\n");
    return 0;
  }

  out(sessionSummaryText(file.toStdString(), info, issues, only.toStdString(), p.isSet(verbose)));
  return 0;
}

// ---- export ---------------------------------------------------------------------------------

/// Writes one dataset as CSV, reading 2-D datasets band by band (never the whole map at once).
bool exportDataset(SessionReader& rd, const std::string& run, const DatasetInfo& d, const QString& path,
                   QString* error) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    *error = QStringLiteral("cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  const bool f32 = d.dtype == DType::Float32;
  std::string line;
  auto writeRows = [&](const Dataset& ds, int64_t rows, int64_t cols) {
    for (int64_t i = 0; i < rows; ++i) {
      line.clear();
      for (int64_t j = 0; j < cols; ++j) {
        if (j) line += ',';
        const double v = ds.valueAt(i * cols + j);
        if (d.dtype == DType::UInt8 || d.dtype == DType::Int64)
          line += std::to_string(static_cast<int64_t>(v));
        else if (d.dtype == DType::Int64)
          line += std::to_string(ds.i64[size_t(i * cols + j)]);
        else
          appendNumber(line, v, f32);
      }
      line += '\n';
      if (f.write(line.data(), qint64(line.size())) != qint64(line.size())) return false;
    }
    return true;
  };
  if (d.shape.size() == 2) {
    const int64_t band = std::max<int64_t>(1, (int64_t(8) << 20) / std::max<int64_t>(1, d.shape[1] * 8));
    for (int64_t r0 = 0; r0 < d.shape[0]; r0 += band) {
      Region g;
      g.row0 = r0;
      g.rows = std::min(band, d.shape[0] - r0);
      auto part = rd.readRegion(run, d.path, g);
      if (!part.ok()) {
        *error = qs(part.errors());
        return false;
      }
      if (!writeRows(part.value, g.rows, d.shape[1])) {
        *error = QStringLiteral("write error on %1").arg(path);
        return false;
      }
    }
  } else {
    auto all = rd.read(run, d.path);
    if (!all.ok()) {
      *error = qs(all.errors());
      return false;
    }
    const int64_t cols = d.shape.size() > 1 ? all.value.elementCount() / d.shape[0] : 1;
    if (!writeRows(all.value, d.shape.empty() ? 1 : d.shape[0], cols)) {
      *error = QStringLiteral("write error on %1").arg(path);
      return false;
    }
  }
  return f.flush();
}

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
  QStringList wanted = p.value(dsOpt).split(QLatin1Char(','), Qt::SkipEmptyParts);
  for (const auto& w : wanted) {
    bool found = false;
    for (const auto& d : ri->datasets) found = found || qs(d.path) == w;
    if (!found) return fail(QStringLiteral("run %1 has no dataset '%2'").arg(id, w));
  }
  QJsonArray written;
  TerminalProgress bar(QStringLiteral("export"));
  size_t k = 0;
  for (const auto& d : ri->datasets) {
    ++k;
    if (!wanted.isEmpty() && !wanted.contains(qs(d.path))) continue;
    const QString name = qs(d.path).replace(QLatin1Char('/'), QStringLiteral("__")) + QStringLiteral(".csv");
    const QString path = QDir(dir).filePath(name);
    bar.update(double(k) / double(ri->datasets.size()), qs(d.path));
    QString e;
    if (!exportDataset(*rd, ri->id, d, path, &e)) return fail(e);
    written.append(QJsonObject{{QStringLiteral("dataset"), qs(d.path)},
                               {QStringLiteral("file"), path},
                               {QStringLiteral("shape"), shapeText(d.shape)}});
  }
  bar.finish();
  // metrics, attributes, config
  {
    QFile f(QDir(dir).filePath(QStringLiteral("metrics.csv")));
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
      return fail(QStringLiteral("cannot write %1").arg(f.fileName()));
    std::string s = "metric,value,units,meaning\n";
    for (const auto& [k2, m] : ri->metrics) {
      s += k2 + ",";
      appendNumber(s, m.value, false);
      s += "," + m.units + ",\"" + m.meaning + "\"\n";
    }
    f.write(s.data(), qint64(s.size()));
  }
  {
    QFile f(QDir(dir).filePath(QStringLiteral("attributes.csv")));
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
      return fail(QStringLiteral("cannot write %1").arg(f.fileName()));
    QString s =
        QStringLiteral(
            "attribute,value\nid,%1\ntype,%2\nseed,%3\nbackend,%4\ndevice,\"%5\"\ncreated_utc,%6\napp_version,%7\n")
            .arg(qs(ri->id), qs(ri->type), qs(std::to_string(ri->seed)), qs(ri->backend), qs(ri->device),
                 qs(ri->created_utc), qs(ri->app_version));
    for (const auto& [k2, v] : ri->attrs)
      s += QStringLiteral("%1,\"%2\"\n").arg(qs(k2), attrText(v).replace(QLatin1Char('"'), QStringLiteral("\"\"")));
    f.write(s.toUtf8());
  }
  {
    QFile f(QDir(dir).filePath(QStringLiteral("config.json")));
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
      return fail(QStringLiteral("cannot write %1").arg(f.fileName()));
    f.write(QByteArray::fromStdString(ri->config_json));
  }
  if (p.isSet(js))
    out(toJsonText(QJsonObject{
            {QStringLiteral("run"), id}, {QStringLiteral("dir"), dir}, {QStringLiteral("files"), written}}) +
        "\n");
  else
    out(QStringLiteral("exported run %1: %2 dataset(s) + metrics.csv, attributes.csv, config.json -> %3\n")
            .arg(id)
            .arg(written.size())
            .arg(dir));
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
      if (i.severity != Severity::Error) err(qs(i.toString()));
    return fail(qs(st.errors()));
  }
  for (const auto& n : notes) err(QStringLiteral("note: ") + qs(n));
  auto rd = SessionReader::open(pos[0].toStdString());
  const size_t nruns = rd.ok() ? rd.value->info().runs.size() : 0;
  if (p.isSet(nc)) {
    QJsonArray na;
    for (const auto& n : notes) na.append(qs(n));
    out(toJsonText(QJsonObject{
            {QStringLiteral("file"), pos[0]}, {QStringLiteral("runs"), qint64(nruns)}, {QStringLiteral("notes"), na}}) +
        "\n");
  } else {
    out(QStringLiteral("merged %1 file(s) -> %2 (%3 runs)\n").arg(ins.size()).arg(pos[0]).arg(nruns));
  }
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
    if (p.isSet(js)) {
      QJsonArray a;
      for (const auto& r : rd->info().runs)
        a.append(QJsonObject{{QStringLiteral("id"), qs(r.id)},
                             {QStringLiteral("type"), qs(r.type)},
                             {QStringLiteral("created_utc"), qs(r.created_utc)},
                             {QStringLiteral("datasets"), int(r.datasets.size())}});
      out(toJsonText(a) + "\n");
      return 0;
    }
    QString t;
    for (const auto& r : rd->info().runs) t += qs(r.id) + QLatin1Char('\n');
    out(t);
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

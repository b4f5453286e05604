// Session file adapter: RunRecord <-> core/session (HDF5, docs/session-format.md). Reads and
// writes whole sessions through loadSession / writeSession (atomic write-beside + rename).
#include "session/session_document.h"

#include <QFile>
#include <QJsonDocument>
#include <QObject>

namespace fp8lab::ui::session_io {

bool looksLikeHdf5(const QString& fileName, QString* error) {
  QFile f(fileName);
  if (!f.exists()) {
    if (error) *error = QObject::tr("the file does not exist");
    return false;
  }
  if (!f.open(QIODevice::ReadOnly)) {
    if (error) *error = f.errorString();
    return false;
  }
#ifdef FP8LAB_HAVE_HDF5
  if (fp8lab::hasHdf5Signature(QFile::encodeName(fileName).toStdString())) return true;
#else
  return true; // read() then says that this build cannot read sessions
#endif
  if (error)
    *error = f.size() == 0 ? QObject::tr("the file is empty")
                           : QObject::tr("not an HDF5 file (no HDF5 signature), so not an FP8 Lab session");
  return false;
}

#ifdef FP8LAB_HAVE_HDF5

bool available() {
  return true;
}

namespace {
/// The record's header — id, label, kind, backend, device, time, config, metrics — from a core
/// Run or a RunInfo (which hold these fields under the same names).
template <class R> RunRecord recordHeader(const R& run) {
  RunRecord r;
  r.id = QString::fromStdString(run.id);
  const auto label = fp8lab::attrString(run.attrs, "label");
  r.label = label && !label->empty() ? QString::fromStdString(*label) : r.id;
  r.kind = QString::fromStdString(run.type);
  r.backend = QString::fromStdString(run.backend);
  r.device = QString::fromStdString(run.device);
  r.created = QDateTime::fromString(QString::fromStdString(run.created_utc), Qt::ISODate);
  r.config = QJsonDocument::fromJson(QByteArray::fromStdString(run.config_json)).object();
  for (const auto& [name, m] : run.metrics) r.metrics.append({QString::fromStdString(name), m.value});
  return r;
}
} // namespace

RunRecord fromCoreRun(const fp8lab::Run& run) {
  RunRecord r = recordHeader(run);
  for (const auto& [path, d] : run.datasets) {
    if (d.dtype != fp8lab::DType::Float32 || d.shape.empty() || d.shape.size() > 2) continue;
    auto t = std::make_shared<RunTensor>();
    t->rows = d.shape.size() == 2 ? d.shape[0] : 1;
    t->cols = d.shape.size() == 2 ? d.shape[1] : d.shape[0];
    t->data = d.f32;
    if (auto u = fp8lab::attrString(d.attrs, "units")) t->unit = QString::fromStdString(*u);
    if (auto m = fp8lab::attrString(d.attrs, "meaning")) t->meaning = QString::fromStdString(*m);
    r.tensors.append({QString::fromStdString(path), std::move(t)});
  }
  r.core = std::make_shared<const fp8lab::Run>(run);
  return r;
}

static fp8lab::Run toCoreRun(const RunRecord& r) {
  fp8lab::Run run;
  if (r.core) run = *r.core;
  run.id = r.id.toStdString();
  run.attrs["label"] = r.label.toStdString();
  if (!r.core) {
    run.type = r.kind.toStdString();
    run.config_json = QJsonDocument(r.config).toJson(QJsonDocument::Compact).toStdString();
    run.backend = r.backend.toStdString();
    run.device = r.device.toStdString();
    run.created_utc = r.created.toUTC().toString(Qt::ISODate).toStdString();
    for (const auto& m : r.metrics) run.setMetric(m.first.toStdString(), m.second, "", "");
    for (const auto& t : r.tensors)
      run.putFloat32(t.first.toStdString(), t.second->data, t.second->rows, t.second->cols,
                     t.second->unit.toStdString(), t.second->meaning.toStdString());
  }
  return run;
}

/// A record for run `ri` of a session file, without its data (RunRecord::source names the file).
RunRecord fromRunInfo(const fp8lab::RunInfo& ri, const QString& fileName) {
  RunRecord r = recordHeader(ri);
  r.source = fileName;
  r.source_run = r.id;
  return r;
}

QString errorText(const fp8lab::Status& status) {
  const std::string all = status.errors();
  return QString::fromStdString(all.substr(0, all.find('\n')));
}

namespace {
/// A core read's outcome in the GUI's terms: false with *error on failure, findings as warnings.
template <class R> bool outcome(const R& res, QString* error, QStringList* warnings) {
  if (!res.ok()) {
    if (error) *error = errorText(res);
    return false;
  }
  if (warnings)
    for (const auto& i : res.issues) *warnings << QString::fromStdString(i.toString());
  return true;
}
} // namespace

bool read(const QString& fileName, QList<RunRecord>* runs, QString* error, QStringList* warnings, bool lazy,
          QString* modified_utc) {
  if (!lazy) {
    auto res = fp8lab::loadSession(fileName.toStdString());
    if (!outcome(res, error, warnings)) return false;
    runs->clear();
    for (const auto& run : res.value.runs) runs->append(fromCoreRun(run));
    if (modified_utc) modified_utc->clear();
    return true;
  }
  auto res = fp8lab::SessionReader::open(fileName.toStdString());
  if (!outcome(res, error, warnings)) return false;
  runs->clear();
  for (const auto& ri : res.value->info().runs) runs->append(fromRunInfo(ri, fileName));
  if (modified_utc) *modified_utc = QString::fromStdString(res.value->info().modified_utc);
  return true;
}

bool write(const QString& fileName, const QList<RunRecord>& runs, QString* error, const fp8lab::ProgressFn& progress,
           const QStringList* known, Merge* merged, std::function<void(const QString&)> on_lock_wait) {
  std::vector<fp8lab::Run> held; // runs in memory, converted for the writer
  held.reserve(size_t(runs.size()));
  std::vector<fp8lab::SaveItem> items;
  for (const auto& r : runs) {
    fp8lab::SaveItem it;
    if (!r.core && !r.source.isEmpty()) {
      it.file = r.source.toStdString();
      it.run_id = r.source_run.toStdString();
      it.id = r.id.toStdString();
      it.label = r.label.toStdString();
    } else {
      held.push_back(toCoreRun(r));
      it.run = &held.back();
    }
    items.push_back(std::move(it));
  }
  fp8lab::WriteOptions opt;
  opt.progress = progress;
  if (on_lock_wait)
    opt.lock.on_wait = [on_lock_wait](const std::string& message) { on_lock_wait(QString::fromStdString(message)); };
  fp8lab::Status st;
  if (known) {
    std::vector<std::string> ids;
    for (const QString& id : *known) ids.push_back(id.toStdString());
    fp8lab::SaveMerge m;
    st = fp8lab::saveSessionMerging(fileName.toStdString(), items, ids, opt, &m);
    if (merged && st.ok()) {
      for (const auto& [from, as] : m.kept)
        merged->kept.append({QString::fromStdString(from), QString::fromStdString(as)});
      for (const auto& v : m.vanished) merged->vanished << QString::fromStdString(v);
    }
  } else {
    st = fp8lab::writeSessionItems(fileName.toStdString(), items, opt);
  }
  if (!st.ok()) {
    if (error) *error = QString::fromStdString(st.firstError());
    return false;
  }
  return true;
}

#else

bool available() {
  return false;
}

bool read(const QString&, QList<RunRecord>*, QString* error, QStringList*, bool, QString*) {
  if (error) *error = QObject::tr("this build has no HDF5 support (FP8LAB_WITH_HDF5=OFF), so it cannot read sessions");
  return false;
}

bool write(const QString&, const QList<RunRecord>&, QString* error, const fp8lab::ProgressFn&, const QStringList*,
           Merge*, std::function<void(const QString&)>) {
  if (error) *error = QObject::tr("this build has no HDF5 support (FP8LAB_WITH_HDF5=OFF), so it cannot write sessions");
  return false;
}

#endif

} // namespace fp8lab::ui::session_io

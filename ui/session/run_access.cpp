#include "session/run_access.h"

#include "session/session_document.h"

#include <QDateTime>
#include <QFileInfo>
#include <QJsonDocument>
#include <QObject>

#include <mutex>
#include <vector>

namespace fp8lab::ui {

bool RunAccess::readAll(const QString& path, Block* out, QString* error) const {
  const auto [r, c] = dims(path);
  if (r == 0 && c == 0) {
    if (error) *error = QObject::tr("the run has no dataset '%1'").arg(path);
    return false;
  }
  return read(path, 0, 0, r, c, out, error);
}

bool RunAccess::readPlane(const QString& path, int64_t, Block*, QString* error) const {
  if (error) *error = QObject::tr("the run has no 3-D dataset '%1'").arg(path);
  return false;
}

std::pair<int64_t, int64_t> RunAccess::dims(const QString& path) const {
  const auto s = shape(path);
  if (s.size() == 1) return {1, s[0]};
  if (s.size() == 2) return {s[0], s[1]};
  return {0, 0};
}

static bool checkRange(const QString& path, int64_t rows, int64_t cols, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                       QString* error) {
  if (r0 < 0 || c0 < 0 || nr < 0 || nc < 0 || r0 + nr > rows || c0 + nc > cols) {
    if (error)
      *error = QObject::tr("window [%1+%2, %3+%4] outside '%5' [%6 x %7]")
                   .arg(r0)
                   .arg(nr)
                   .arg(c0)
                   .arg(nc)
                   .arg(path)
                   .arg(rows)
                   .arg(cols);
    return false;
  }
  return true;
}

namespace {

/// A run built in the GUI without a core run: its float32 tensors only.
class RecordAccess final : public RunAccess {
public:
  explicit RecordAccess(const RunRecord& r) : r_(r) {}
  QString id() const override { return r_.id; }
  QString type() const override { return r_.kind; }
  QJsonObject config() const override { return r_.config; }
  QString attr(const QString& key) const override {
    if (key == QStringLiteral("label")) return r_.label;
    if (key == QStringLiteral("backend")) return r_.backend;
    const auto v = r_.config.value(key);
    return v.isString() ? v.toString() : v.isDouble() ? QString::number(v.toDouble()) : QString();
  }
  std::optional<double> metric(const QString& name) const override {
    for (const auto& m : r_.metrics)
      if (m.first == name) return m.second;
    return std::nullopt;
  }
  QStringList metricNames() const override {
    QStringList l;
    for (const auto& m : r_.metrics) l << m.first;
    return l;
  }
  QStringList datasets() const override {
    QStringList l;
    for (const auto& t : r_.tensors) l << t.first;
    l.sort();
    return l;
  }
  std::vector<int64_t> shape(const QString& path) const override {
    auto t = r_.tensor(path);
    if (!t) return {};
    if (t->rows == 1) return {t->cols};
    return {t->rows, t->cols};
  }
  QString datasetAttr(const QString& path, const QString& key) const override {
    auto t = r_.tensor(path);
    if (!t) return {};
    if (key == QStringLiteral("units")) return t->unit;
    if (key == QStringLiteral("meaning")) return t->meaning;
    return {};
  }
  QString groupAttr(const QString&, const QString&) const override { return {}; }
  bool read(const QString& path, int64_t r0, int64_t c0, int64_t nr, int64_t nc, Block* out,
            QString* error) const override {
    auto t = r_.tensor(path);
    if (!t) {
      if (error) *error = QObject::tr("the run has no dataset '%1'").arg(path);
      return false;
    }
    if (!checkRange(path, t->rows, t->cols, r0, c0, nr, nc, error)) return false;
    out->rows = nr;
    out->cols = nc;
    out->v.resize(size_t(nr * nc));
    for (int64_t i = 0; i < nr; ++i)
      for (int64_t j = 0; j < nc; ++j) out->v[size_t(i * nc + j)] = t->data[size_t((r0 + i) * t->cols + c0 + j)];
    return true;
  }

private:
  RunRecord r_;
};

#ifdef FP8LAB_HAVE_HDF5

QString attrText(const fp8lab::Attributes& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end()) return {};
  if (auto s = std::get_if<std::string>(&it->second)) return QString::fromStdString(*s);
  if (auto d = std::get_if<double>(&it->second)) return QString::number(*d, 'g', 17);
  return QString::number(std::get<int64_t>(it->second));
}

void copyWindow(const fp8lab::Dataset& d, int64_t cols, int64_t r0, int64_t c0, int64_t nr, int64_t nc, Block* out) {
  out->rows = nr;
  out->cols = nc;
  out->v.resize(size_t(nr * nc));
  for (int64_t i = 0; i < nr; ++i) {
    const int64_t base = (r0 + i) * cols + c0;
    double* o = out->v.data() + i * nc;
    switch (d.dtype) {
    case fp8lab::DType::Float32:
      for (int64_t j = 0; j < nc; ++j) o[j] = d.f32[size_t(base + j)];
      break;
    case fp8lab::DType::Float64:
      for (int64_t j = 0; j < nc; ++j) o[j] = d.f64[size_t(base + j)];
      break;
    default:
      for (int64_t j = 0; j < nc; ++j) o[j] = d.valueAt(base + j);
    }
  }
}

/// The rows and columns of one plane of a dataset of rank ≥ 3 [n, a, …, b]: (a·…, b).
std::pair<int64_t, int64_t> planeDims(const std::vector<int64_t>& s) {
  int64_t rows = 1;
  for (size_t i = 1; i + 1 < s.size(); ++i) rows *= s[i];
  return {rows, s.back()};
}

/// Copies plane `index` of the dataset `d` of rank ≥ 3 into `out`.
bool copyPlane(const fp8lab::Dataset& d, const QString& path, int64_t index, Block* out, QString* error) {
  if (d.shape.size() < 3 || index < 0 || index >= d.shape[0] || d.storedCount() != d.elementCount()) {
    if (error)
      *error = d.shape.size() < 3
                   ? QObject::tr("dataset '%1' is not 3-D").arg(path)
                   : QObject::tr("plane %1 outside '%2' [%3 planes]").arg(index).arg(path).arg(d.shape[0]);
    return false;
  }
  const auto [rows, cols] = planeDims(d.shape);
  copyWindow(d, cols, index * rows, 0, rows, cols, out);
  return true;
}

std::pair<int64_t, int64_t> dimsOf(const std::vector<int64_t>& s) {
  if (s.size() == 1) return {1, s[0]};
  if (s.size() == 2) return {s[0], s[1]};
  return {0, 0};
}

class MemoryAccess final : public RunAccess {
public:
  explicit MemoryAccess(std::shared_ptr<const fp8lab::Run> run) : run_(std::move(run)) {}
  std::optional<fp8lab::RunInfo> runInfo() const override {
    fp8lab::RunInfo i;
    i.id = run_->id;
    i.type = run_->type;
    i.config_json = run_->config_json;
    i.backend = run_->backend;
    i.device = run_->device;
    i.created_utc = run_->created_utc;
    i.app_version = run_->app_version;
    i.seed = run_->seed;
    i.attrs = run_->attrs;
    i.metrics = run_->metrics;
    i.group_attrs = run_->group_attrs;
    return i;
  }
  QString id() const override { return QString::fromStdString(run_->id); }
  QString type() const override { return QString::fromStdString(run_->type); }
  QJsonObject config() const override {
    return QJsonDocument::fromJson(QByteArray::fromStdString(run_->config_json)).object();
  }
  QString attr(const QString& key) const override {
    if (key == QStringLiteral("backend")) return QString::fromStdString(run_->backend);
    if (key == QStringLiteral("device")) return QString::fromStdString(run_->device);
    return attrText(run_->attrs, key.toStdString());
  }
  std::optional<double> metric(const QString& name) const override {
    auto it = run_->metrics.find(name.toStdString());
    if (it == run_->metrics.end()) return std::nullopt;
    return it->second.value;
  }
  QStringList metricNames() const override {
    QStringList l;
    for (const auto& m : run_->metrics) l << QString::fromStdString(m.first);
    return l;
  }
  QStringList datasets() const override {
    QStringList l;
    for (const auto& d : run_->datasets) l << QString::fromStdString(d.first);
    return l;
  }
  std::vector<int64_t> shape(const QString& path) const override {
    const auto* d = run_->find(path.toStdString());
    return d ? d->shape : std::vector<int64_t>{};
  }
  QString datasetAttr(const QString& path, const QString& key) const override {
    const auto* d = run_->find(path.toStdString());
    return d ? attrText(d->attrs, key.toStdString()) : QString();
  }
  QString groupAttr(const QString& group, const QString& key) const override {
    auto it = run_->group_attrs.find(group.toStdString());
    return it == run_->group_attrs.end() ? QString() : attrText(it->second, key.toStdString());
  }
  bool read(const QString& path, int64_t r0, int64_t c0, int64_t nr, int64_t nc, Block* out,
            QString* error) const override {
    const auto* d = run_->find(path.toStdString());
    if (!d) {
      if (error) *error = QObject::tr("the run has no dataset '%1'").arg(path);
      return false;
    }
    const auto [rows, cols] = dimsOf(d->shape);
    if (!checkRange(path, rows, cols, r0, c0, nr, nc, error)) return false;
    if (d->storedCount() != rows * cols) {
      if (error) *error = QObject::tr("dataset '%1' holds fewer values than its shape says").arg(path);
      return false;
    }
    copyWindow(*d, cols, r0, c0, nr, nc, out);
    return true;
  }

  bool readPlane(const QString& path, int64_t index, Block* out, QString* error) const override {
    const auto* d = run_->find(path.toStdString());
    if (!d) return RunAccess::readPlane(path, index, out, error);
    return copyPlane(*d, path, index, out, error);
  }

private:
  std::shared_ptr<const fp8lab::Run> run_;
};

/// HDF5 is built without thread safety: every reader call in the process goes through this lock.
std::mutex& hdf5Mutex() {
  static std::mutex m;
  return m;
}

class FileAccess final : public RunAccess {
public:
  FileAccess(std::shared_ptr<fp8lab::SessionReader> reader, const fp8lab::RunInfo* info)
      : reader_(std::move(reader)), info_(info) {}
  std::optional<fp8lab::RunInfo> runInfo() const override { return *info_; }
  QString id() const override { return QString::fromStdString(info_->id); }
  QString type() const override { return QString::fromStdString(info_->type); }
  QJsonObject config() const override {
    return QJsonDocument::fromJson(QByteArray::fromStdString(info_->config_json)).object();
  }
  QString attr(const QString& key) const override {
    if (key == QStringLiteral("backend")) return QString::fromStdString(info_->backend);
    if (key == QStringLiteral("device")) return QString::fromStdString(info_->device);
    return attrText(info_->attrs, key.toStdString());
  }
  std::optional<double> metric(const QString& name) const override {
    auto it = info_->metrics.find(name.toStdString());
    if (it == info_->metrics.end()) return std::nullopt;
    return it->second.value;
  }
  QStringList metricNames() const override {
    QStringList l;
    for (const auto& m : info_->metrics) l << QString::fromStdString(m.first);
    return l;
  }
  QStringList datasets() const override {
    QStringList l;
    for (const auto& d : info_->datasets) l << QString::fromStdString(d.path);
    return l;
  }
  const fp8lab::DatasetInfo* find(const QString& path) const {
    const std::string p = path.toStdString();
    for (const auto& d : info_->datasets)
      if (d.path == p) return &d;
    return nullptr;
  }
  std::vector<int64_t> shape(const QString& path) const override {
    const auto* d = find(path);
    return d ? d->shape : std::vector<int64_t>{};
  }
  QString datasetAttr(const QString& path, const QString& key) const override {
    const auto* d = find(path);
    return d ? attrText(d->attrs, key.toStdString()) : QString();
  }
  QString groupAttr(const QString& group, const QString& key) const override {
    auto it = info_->group_attrs.find(group.toStdString());
    return it == info_->group_attrs.end() ? QString() : attrText(it->second, key.toStdString());
  }
  bool read(const QString& path, int64_t r0, int64_t c0, int64_t nr, int64_t nc, Block* out,
            QString* error) const override {
    const auto* info = find(path);
    if (!info) {
      if (error) *error = QObject::tr("the run has no dataset '%1'").arg(path);
      return false;
    }
    const auto [rows, cols] = dimsOf(info->shape);
    if (!checkRange(path, rows, cols, r0, c0, nr, nc, error)) return false;
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    if (info->shape.size() == 2) {
      fp8lab::Region reg;
      reg.row0 = r0;
      reg.col0 = c0;
      reg.rows = nr;
      reg.cols = nc;
      auto res = reader_->readRegion(info_->id, info->path, reg);
      if (!res.ok()) {
        if (error) *error = QString::fromStdString(res.errors());
        return false;
      }
      copyWindow(res.value, nc, 0, 0, nr, nc, out);
      return true;
    }
    auto res = reader_->read(info_->id, info->path);
    if (!res.ok()) {
      if (error) *error = QString::fromStdString(res.errors());
      return false;
    }
    copyWindow(res.value, cols, r0, c0, nr, nc, out);
    return true;
  }

  bool readPlane(const QString& path, int64_t index, Block* out, QString* error) const override {
    const auto* info = find(path);
    if (!info || info->shape.size() < 3) return RunAccess::readPlane(path, index, out, error);
    if (index < 0 || index >= info->shape[0]) {
      if (error) *error = QObject::tr("plane %1 outside '%2' [%3 planes]").arg(index).arg(path).arg(info->shape[0]);
      return false;
    }
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    auto res = reader_->readPlane(info_->id, info->path, index);
    if (!res.ok()) {
      if (error) *error = QString::fromStdString(res.errors());
      return false;
    }
    const auto [rows, cols] = planeDims(info->shape);
    copyWindow(res.value, cols, 0, 0, rows, cols, out);
    return true;
  }

private:
  std::shared_ptr<fp8lab::SessionReader> reader_;
  const fp8lab::RunInfo* info_;
};

#endif

} // namespace

#ifdef FP8LAB_HAVE_HDF5
std::shared_ptr<RunAccess> RunAccess::fromRun(std::shared_ptr<const fp8lab::Run> run) {
  return std::make_shared<MemoryAccess>(std::move(run));
}

std::shared_ptr<RunAccess> RunAccess::fromFile(const QString& fileName, const QString& runId, QString* error) {
  std::lock_guard<std::mutex> lock(hdf5Mutex());
  // One open reader per file version, shared by the views' accessors (an open validates every run
  // of the file; the views ask for accessors often). At most 8 files are kept open.
  struct Cached {
    QString path;
    QDateTime mtime;
    qint64 size = -1;
    std::shared_ptr<fp8lab::SessionReader> reader;
  };
  static std::vector<Cached> cache;
  const QFileInfo fi(fileName);
  std::shared_ptr<fp8lab::SessionReader> reader;
  for (auto it = cache.begin(); it != cache.end(); ++it)
    if (it->path == fi.absoluteFilePath()) {
      if (it->mtime == fi.lastModified() && it->size == fi.size())
        reader = it->reader;
      else
        cache.erase(it);
      break;
    }
  if (!reader) {
    auto res = fp8lab::SessionReader::open(fileName.toStdString());
    if (!res.ok()) {
      if (error) *error = QString::fromStdString(res.errors());
      return nullptr;
    }
    reader = std::shared_ptr<fp8lab::SessionReader>(std::move(res.value));
    if (cache.size() >= 8) cache.erase(cache.begin());
    cache.push_back({fi.absoluteFilePath(), fi.lastModified(), fi.size(), reader});
  }
  const auto& info = reader->info();
  const fp8lab::RunInfo* ri = nullptr;
  if (runId.isEmpty()) {
    if (!info.runs.empty()) ri = &info.runs.front();
  } else {
    ri = info.find(runId.toStdString());
  }
  if (!ri) {
    if (error) {
      QStringList ids;
      for (const auto& r : info.runs) ids << QString::fromStdString(r.id);
      *error = info.runs.empty()
                   ? QObject::tr("%1 holds no runs").arg(fileName)
                   : QObject::tr("%1 has no run '%2' (runs: %3)").arg(fileName, runId, ids.join(QStringLiteral(", ")));
    }
    return nullptr;
  }
  return std::make_shared<FileAccess>(std::move(reader), ri);
}
#endif

std::shared_ptr<RunAccess> RunAccess::forRecord(const RunRecord& r, const QString& fileName) {
#ifdef FP8LAB_HAVE_HDF5
  if (r.core) return fromRun(r.core);
  if (!r.source.isEmpty()) {
    QString err;
    if (auto a = fromFile(r.source, r.source_run, &err)) return a;
  }
  if (!fileName.isEmpty() && QFileInfo::exists(fileName)) {
    QString err;
    if (auto a = fromFile(fileName, r.id, &err)) return a;
  }
#else
  Q_UNUSED(fileName);
#endif
  return std::make_shared<RecordAccess>(r);
}

QString stepsDoneText(const RunAccess& run, int64_t stored) {
  bool ok = false;
  const qlonglong done_attr = run.attr(QStringLiteral("steps_completed")).toLongLong(&ok);
  const int64_t done = ok ? int64_t(done_attr) : stored;
  const int64_t planned = run.attr(QStringLiteral("epochs_planned")).toLongLong() *
                          run.attr(QStringLiteral("steps_per_epoch")).toLongLong();
  const QString status = run.attr(QStringLiteral("status"));
  const bool stopped = !status.isEmpty() && status != QStringLiteral("completed");
  const QString count = done == 1 ? QObject::tr("1 step") : QObject::tr("%1 steps").arg(done);
  if (planned > done || stopped) {
    const QString of = planned > 0 ? QObject::tr("%1 of %2 steps").arg(done).arg(planned) : count;
    return stopped ? QObject::tr("%1 (%2)").arg(of, status) : of;
  }
  return count;
}

} // namespace fp8lab::ui

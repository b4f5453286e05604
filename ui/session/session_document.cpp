#include "session/session_document.h"

#include "session/run_model.h"

#include <QFile>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QTimer>
#include <QUndoCommand>
#include <QUndoStack>

#include <sys/stat.h>

namespace fp8lab::ui {

std::shared_ptr<const RunTensor> RunRecord::tensor(const QString& path) const {
  for (const auto& t : tensors)
    if (t.first == path) return t.second;
  return {};
}

double RunRecord::metric(const QString& name, double fallback) const {
  for (const auto& m : metrics)
    if (m.first == name) return m.second;
  return fallback;
}

class AddRunCommand : public QUndoCommand {
public:
  AddRunCommand(SessionDocument* s, RunRecord r)
      : QUndoCommand(QObject::tr("Add run %1").arg(r.label)), s_(s), r_(std::move(r)) {}
  void redo() override {
    before_ = s_->currentRunId();
    s_->insertRunAt(s_->runCount(), r_);
  }
  // Undoing the add returns to the run that was current before it.
  void undo() override { r_ = s_->takeRunAt(s_->indexOf(r_.id), before_); }

private:
  SessionDocument* s_;
  RunRecord r_;
  QString before_;
};

class RemoveRunCommand : public QUndoCommand {
public:
  RemoveRunCommand(SessionDocument* s, int index)
      : QUndoCommand(QObject::tr("Remove run %1").arg(s->run(index).label)), s_(s), id_(s->run(index).id) {}
  void redo() override {
    before_ = s_->currentRunId();
    index_ = s_->indexOf(id_);
    r_ = s_->takeRunAt(index_);
  }
  // Undoing the removal puts the run back at its place; the run current before comes back too.
  void undo() override {
    s_->insertRunAt(std::min<int>(index_, s_->runCount()), r_);
    if (before_ != id_ && s_->indexOf(before_) >= 0) s_->setCurrentRunId(before_);
  }

private:
  SessionDocument* s_;
  QString id_, before_;
  int index_ = 0;
  RunRecord r_;
};

class RenameRunCommand : public QUndoCommand {
public:
  RenameRunCommand(SessionDocument* s, int index, QString label)
      : QUndoCommand(QObject::tr("Rename run")), s_(s), id_(s->run(index).id), new_(std::move(label)),
        old_(s->run(index).label) {}
  void redo() override { s_->setLabelAt(s_->indexOf(id_), new_); }
  void undo() override { s_->setLabelAt(s_->indexOf(id_), old_); }

private:
  SessionDocument* s_;
  QString id_, new_, old_;
};

SessionDocument::SessionDocument(QObject* parent)
    : QObject(parent), undo_(new QUndoStack(this)), watcher_(new QFileSystemWatcher(this)),
      watch_delay_(new QTimer(this)) {
  connect(undo_, &QUndoStack::cleanChanged, this, [this](bool clean) { Q_EMIT modifiedChanged(!clean); });
  // The run model and its selection listen first, so every other listener finds them up to date.
  runSelection(this);
  // A writer replaces the file by rename: the watcher then reports the old path once and stops
  // watching it. Notifications come in bursts (temporary file, rename); one check 150 ms after
  // the last is enough.
  watch_delay_->setSingleShot(true);
  watch_delay_->setInterval(150);
  connect(watcher_, &QFileSystemWatcher::fileChanged, watch_delay_, qOverload<>(&QTimer::start));
  connect(watcher_, &QFileSystemWatcher::directoryChanged, watch_delay_, qOverload<>(&QTimer::start));
  connect(watch_delay_, &QTimer::timeout, this, &SessionDocument::onFileEvent);
}

SessionDocument::~SessionDocument() = default;

QString SessionDocument::displayName() const {
  return file_name_.isEmpty() ? tr("Untitled") : QFileInfo(file_name_).fileName();
}

bool SessionDocument::isModified() const {
  return !undo_->isClean();
}

int SessionDocument::indexOf(const QString& id) const {
  if (id.isEmpty()) return -1;
  for (int i = 0; i < runs_.size(); ++i)
    if (runs_[i].id == id) return i;
  return -1;
}

QString SessionDocument::nextRunId() const {
  for (int n = int(runs_.size()) + 1;; ++n) {
    QString id = QStringLiteral("run-%1").arg(n, 4, 10, QLatin1Char('0'));
    if (indexOf(id) < 0 && !known_on_disk_.contains(id)) return id;
  }
}

void SessionDocument::addRun(RunRecord r) {
  if (r.id.isEmpty() || indexOf(r.id) >= 0) r.id = nextRunId();
  if (r.label.isEmpty()) r.label = r.id;
  if (!r.created.isValid()) r.created = QDateTime::currentDateTimeUtc();
  undo_->push(new AddRunCommand(this, std::move(r)));
}

void SessionDocument::removeRun(int index) {
  if (index < 0 || index >= runs_.size()) return;
  undo_->push(new RemoveRunCommand(this, index));
}

void SessionDocument::renameRun(int index, const QString& label) {
  if (index < 0 || index >= runs_.size() || runs_[index].label == label || label.trimmed().isEmpty()) return;
  undo_->push(new RenameRunCommand(this, index, label.trimmed()));
}

void SessionDocument::setCurrentRun(int index) {
  setCurrentRunId(index >= 0 && index < runs_.size() ? runs_[index].id : QString());
}

void SessionDocument::setCurrentRunId(const QString& id) {
  setCurrent(indexOf(id) >= 0 ? id : QString(), true);
}

void SessionDocument::setDefaultRunId(const QString& id) {
  if (current_chosen_ || indexOf(id) < 0) return;
  setCurrent(id, false);
}

void SessionDocument::setCurrent(const QString& id, bool chosen) {
  const bool changed = id != current_id_;
  current_id_ = id;
  current_chosen_ = chosen && !id.isEmpty();
  if (changed) Q_EMIT currentRunChanged(currentRun());
}

void SessionDocument::insertRunAt(int index, RunRecord r) {
  const QString id = r.id;
  runs_.insert(index, std::move(r));
  Q_EMIT runAdded(index);
  setCurrent(id, true);
}

RunRecord SessionDocument::takeRunAt(int index, const QString& next_current) {
  RunRecord r = runs_.takeAt(index);
  const bool was_current = r.id == current_id_;
  if (was_current) {
    // The next current run is decided before anyone hears of the removal, so no listener ever
    // sees a current run that is not in the list.
    QString next = indexOf(next_current) >= 0 ? next_current : QString();
    if (next.isEmpty() && !runs_.isEmpty()) next = runs_.at(std::min<int>(index, int(runs_.size()) - 1)).id;
    current_id_ = next;
  }
  Q_EMIT runRemoved(index);
  if (was_current) Q_EMIT currentRunChanged(currentRun());
  return r;
}

void SessionDocument::setLabelAt(int index, const QString& label) {
  if (index < 0) return;
  runs_[index].label = label;
  Q_EMIT runChanged(index);
}

void SessionDocument::reset() {
  runs_.clear();
  undo_->clear();
  current_id_.clear();
  current_chosen_ = false;
  file_name_.clear();
  rememberDisk({});
  Q_EMIT reset_();
  Q_EMIT fileNameChanged(file_name_);
  Q_EMIT currentRunChanged(-1);
  Q_EMIT modifiedChanged(false);
}

bool SessionDocument::fileSupport() {
  return session_io::available();
}

bool SessionDocument::load(const QString& fileName, QString* error, QStringList* warnings) {
  QString why;
  // Only regular files: opening a FIFO blocks until a writer appears (the window would freeze),
  // and a directory or device is never a session (docs/reliability.md).
  if (const QFileInfo fi(fileName); fi.exists() && !fi.isFile()) {
    if (error) *error = tr("not a regular file (a directory, FIFO or device cannot be a session)");
    return false;
  }
  if (!session_io::looksLikeHdf5(fileName, &why)) {
    if (error) *error = why;
    return false;
  }
  const Stamp stamp = stampOf(fileName);
  QList<RunRecord> runs;
  QString modified;
  if (!session_io::read(fileName, &runs, error, warnings, true, &modified)) return false;
  runs_ = std::move(runs);
  undo_->clear();
  file_name_ = fileName;
  current_id_.clear();
  current_chosen_ = false;
  QStringList ids;
  for (const RunRecord& r : runs_) ids << r.id;
  rememberDisk(ids);
  disk_stamp_ = stamp;
  disk_modified_utc_ = modified;
  Q_EMIT reset_();
  Q_EMIT fileNameChanged(file_name_);
  Q_EMIT modifiedChanged(false);
  // The first run is current by default, not by choice (currentRunChosen()).
  setCurrent(runs_.isEmpty() ? QString() : runs_.first().id, false);
  return true;
}

bool SessionDocument::save(const QString& fileName, QString* error, const fp8lab::ProgressFn& progress) {
  const bool over_open = !file_name_.isEmpty() && QFileInfo(fileName) == QFileInfo(file_name_);
  session_io::Merge merged;
  saving_ = true;
  const bool ok = session_io::write(fileName, runs_, error, progress, over_open ? &known_on_disk_ : nullptr, &merged);
  saving_ = false;
  if (!ok) return false;
  markSaved(fileName, &merged);
  return true;
}

void SessionDocument::markSaved(const QString& fileName, const session_io::Merge* merged) {
  // Runs read lazily now live in the saved file too: read them from there from now on (the file
  // they came from may be replaced or removed).
  for (RunRecord& r : runs_)
    if (!r.core && !r.source.isEmpty()) {
      r.source = fileName;
      r.source_run = r.id;
    }
  // One metadata read of the saved file: the runs a merge kept, and its modified_utc (the
  // content stamp that tells a later change by another program from a `touch`).
  QList<RunRecord> on_disk;
  QString modified, why;
  const bool read_back = session_io::read(fileName, &on_disk, &why, nullptr, true, &modified);
  if (merged) {
    for (const QString& gone : merged->vanished) {
      const int i = indexOf(gone);
      if (i >= 0) takeRunAt(i);
    }
    for (const auto& k : merged->kept)
      for (const RunRecord& r : on_disk)
        if (r.id == k.second) {
          runs_.append(r);
          Q_EMIT runAdded(int(runs_.size()) - 1);
        }
  }
  undo_->setClean();
  if (file_name_ != fileName) {
    file_name_ = fileName;
    Q_EMIT fileNameChanged(file_name_);
  }
  QStringList ids;
  for (const RunRecord& r : runs_) ids << r.id;
  rememberDisk(ids);
  disk_stamp_ = stampOf(fileName);
  disk_modified_utc_ = read_back ? modified : QString();
}

SessionDocument::Stamp SessionDocument::stampOf(const QString& fileName) {
  Stamp s;
  struct stat st {};
  if (fileName.isEmpty() || ::stat(QFile::encodeName(fileName).constData(), &st) != 0) return s;
  s.dev = quint64(st.st_dev);
  s.ino = quint64(st.st_ino);
  s.size = qint64(st.st_size);
  s.mtime_ns = qint64(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return s;
}

void SessionDocument::rememberDisk(const QStringList& ids) {
  known_on_disk_ = ids;
  if (!watcher_->files().isEmpty()) watcher_->removePaths(watcher_->files());
  if (!watcher_->directories().isEmpty()) watcher_->removePaths(watcher_->directories());
  if (file_name_.isEmpty()) {
    disk_stamp_ = {};
    disk_modified_utc_.clear();
    return;
  }
  // The file, and its directory: a rename over the file is seen as a change of the directory
  // (the file's own watch ends with the inode it named).
  if (QFileInfo::exists(file_name_)) watcher_->addPath(file_name_);
  watcher_->addPath(QFileInfo(file_name_).absolutePath());
}

bool SessionDocument::changedOnDisk(QStringList* added, QStringList* removed) const {
  if (file_name_.isEmpty()) return false;
  const Stamp now = stampOf(file_name_);
  if (now.size < 0 || now == disk_stamp_) return false;
  QList<RunRecord> there;
  QString why, modified;
  if (!session_io::read(file_name_, &there, &why, nullptr, true, &modified)) return false;
  QStringList add, rem;
  QStringList ids;
  for (const RunRecord& r : there) ids << r.id;
  for (const QString& id : ids)
    if (!known_on_disk_.contains(id)) add << id;
  for (const QString& id : known_on_disk_)
    if (!ids.contains(id)) rem << id;
  if (add.isEmpty() && rem.isEmpty() && modified == disk_modified_utc_) return false;
  if (added) *added = add;
  if (removed) *removed = rem;
  return true;
}

void SessionDocument::onFileEvent() {
  if (saving_ || file_name_.isEmpty()) return;
  // Watch the file again when a rename replaced it.
  if (QFileInfo::exists(file_name_) && !watcher_->files().contains(file_name_)) watcher_->addPath(file_name_);
  QStringList added, removed;
  if (!changedOnDisk(&added, &removed)) return;
  disk_stamp_ = stampOf(file_name_); // said once per change
  Q_EMIT fileChangedOnDisk(added, removed);
}

} // namespace fp8lab::ui

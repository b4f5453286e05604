#include "session_document.h"

#include <QFileInfo>
#include <QUndoCommand>
#include <QUndoStack>

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
  void redo() override { s_->insertRunAt(s_->runCount(), r_); }
  void undo() override { r_ = s_->takeRunAt(s_->indexOf(r_.id)); }

private:
  SessionDocument* s_;
  RunRecord r_;
};

class RemoveRunCommand : public QUndoCommand {
public:
  RemoveRunCommand(SessionDocument* s, int index)
      : QUndoCommand(QObject::tr("Remove run %1").arg(s->run(index).label)), s_(s), index_(index) {}
  void redo() override { r_ = s_->takeRunAt(index_); }
  void undo() override { s_->insertRunAt(index_, r_); }

private:
  SessionDocument* s_;
  int index_;
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

SessionDocument::SessionDocument(QObject* parent) : QObject(parent), undo_(new QUndoStack(this)) {
  connect(undo_, &QUndoStack::cleanChanged, this, [this](bool clean) { Q_EMIT modifiedChanged(!clean); });
}

SessionDocument::~SessionDocument() = default;

QString SessionDocument::displayName() const {
  return file_name_.isEmpty() ? tr("Untitled") : QFileInfo(file_name_).fileName();
}

bool SessionDocument::isModified() const {
  return !undo_->isClean();
}

int SessionDocument::indexOf(const QString& id) const {
  for (int i = 0; i < runs_.size(); ++i)
    if (runs_[i].id == id) return i;
  return -1;
}

QString SessionDocument::nextRunId() const {
  for (int n = int(runs_.size()) + 1;; ++n) {
    QString id = QStringLiteral("run-%1").arg(n, 4, 10, QLatin1Char('0'));
    if (indexOf(id) < 0) return id;
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
  if (index < -1 || index >= runs_.size()) index = -1;
  if (index == current_) return;
  current_ = index;
  Q_EMIT currentRunChanged(index);
}

void SessionDocument::insertRunAt(int index, RunRecord r) {
  runs_.insert(index, std::move(r));
  Q_EMIT runAdded(index);
  if (current_ >= index) ++current_;
  setCurrentRun(index);
}

RunRecord SessionDocument::takeRunAt(int index) {
  RunRecord r = runs_.takeAt(index);
  Q_EMIT runRemoved(index);
  if (current_ == index) {
    current_ = -2; // force a signal
    setCurrentRun(runs_.isEmpty() ? -1 : std::min<int>(index, int(runs_.size()) - 1));
  } else if (current_ > index) {
    --current_;
  }
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
  current_ = -1;
  file_name_.clear();
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
  QList<RunRecord> runs;
  if (!session_io::read(fileName, &runs, error, warnings)) return false;
  runs_ = std::move(runs);
  undo_->clear();
  file_name_ = fileName;
  current_ = -1;
  Q_EMIT reset_();
  Q_EMIT fileNameChanged(file_name_);
  Q_EMIT modifiedChanged(false);
  setCurrentRun(runs_.isEmpty() ? -1 : 0);
  return true;
}

bool SessionDocument::save(const QString& fileName, QString* error, const fp8lab::ProgressFn& progress) {
  if (!session_io::write(fileName, runs_, error, progress)) return false;
  markSaved(fileName);
  return true;
}

void SessionDocument::markSaved(const QString& fileName) {
  // Runs read lazily now live in the saved file too: read them from there from now on (the file
  // they came from may be replaced or removed).
  for (RunRecord& r : runs_)
    if (!r.core && !r.source.isEmpty()) {
      r.source = fileName;
      r.source_run = r.id;
    }
  undo_->setClean();
  if (file_name_ != fileName) {
    file_name_ = fileName;
    Q_EMIT fileNameChanged(file_name_);
  }
}

} // namespace fp8lab::ui

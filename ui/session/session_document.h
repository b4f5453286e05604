// The GUI's open session (SessionDocument): owns the runs shown by every view, the file name, the modified flag and an
// undo stack; emits typed change signals. Views listen and never own results.
// Reading and writing go through core/session (HDF5, docs/session-format.md) in session_io.cpp;
// this class only adapts it to Qt.
#pragma once

#include "common/progress.h"

#include <QDateTime>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QPair>
#include <QStringList>

#include <functional>
#include <memory>
#include <vector>

#ifdef FP8LAB_HAVE_HDF5
#include "session/session.h"
#endif

class QFileSystemWatcher;
class QTimer;
class QUndoStack;

namespace fp8lab::ui {

namespace session_io {
/// What a merging save found in the file (see write()).
struct Merge {
  QList<QPair<QString, QString>> kept; ///< runs another program added: {id in the file, id stored}
  QStringList vanished;                ///< runs of this session another program removed from the file
  bool empty() const { return kept.isEmpty() && vanished.isEmpty(); }
};
} // namespace session_io

/// A 2-D float32 array of a run (inputs, outputs, error maps, histories), row-major.
struct RunTensor {
  qint64 rows = 0, cols = 0;
  std::vector<float> data;
  QString unit;    ///< e.g. "1" (dimensionless), "ULP", "dB"
  QString meaning; ///< one line, as the session file's attribute says
};

/// One run of a session: its configuration and everything it produced.
struct RunRecord {
  QString id;              ///< unique within the session, e.g. "run-0003"
  QString label;           ///< user-visible name (editable, undoable)
  QJsonObject config;      ///< the experiment configuration (ExperimentPanel::config())
  QString kind;            ///< "gemm", "training", ...
  QString backend, device; ///< "cpu"/"cuda" and the device name
  QDateTime created;
  QList<QPair<QString, double>> metrics;                           ///< ordered, e.g. ("sqnr_db", 31.2)
  QList<QPair<QString, std::shared_ptr<const RunTensor>>> tensors; ///< ordered by path, e.g. "output/D"
  QStringList warnings; ///< what the run reported (also sent to the Issues panel)
  /// The session file and run id (`source_run`, which `id` may no longer equal after a merge)
  /// holding this record's datasets, read lazily by the views (RunAccess::forRecord) and copied
  /// as they are when the session is saved. Empty for runs held in memory (`core`, or `tensors`
  /// built in the GUI).
  QString source, source_run;
#ifdef FP8LAB_HAVE_HDF5
  /// The core run this record was made from (read from a file or produced by core/experiment);
  /// saving writes it back unchanged except for the label. Null for runs built in the GUI.
  std::shared_ptr<const fp8lab::Run> core;
#endif

  std::shared_ptr<const RunTensor> tensor(const QString& path) const;
  double metric(const QString& name, double fallback = 0) const;
};

class SessionDocument : public QObject {
  Q_OBJECT
public:
  explicit SessionDocument(QObject* parent = nullptr);
  ~SessionDocument() override;

  QString fileName() const { return file_name_; }
  /// Display name: file name without directory, or "Untitled".
  QString displayName() const;
  bool isModified() const;
  QUndoStack* undoStack() const { return undo_; }

  int runCount() const { return int(runs_.size()); }
  const RunRecord& run(int i) const { return runs_.at(i); }
  const QList<RunRecord>& runs() const { return runs_; }
  int indexOf(const QString& id) const;
  /// A fresh run id ("run-0001", ...), unique in this session.
  QString nextRunId() const;

  /// Undoable edits.
  void addRun(RunRecord r);
  void removeRun(int index);
  void renameRun(int index, const QString& label);

  /// The session's current run: the one the session tree highlights and every view shows when
  /// it can. The document is its one owner and keeps it by id, so adding, removing, undoing or
  /// renaming other runs never moves it; currentRunChanged is emitted only after every index is
  /// consistent again. −1 / "" when there is none.
  int currentRun() const { return indexOf(current_id_); }
  QString currentRunId() const { return current_id_; }
  /// Makes run `index` current, as the user's choice (the tree, a view's run box, --run).
  void setCurrentRun(int index);
  void setCurrentRunId(const QString& id);
  /// Whether the current run was chosen — by the user, or as a run just added — rather than
  /// being the first run a load or reset defaulted to. Views that cannot show a chosen run say
  /// so; views that cannot show the default one open on the first run they can show.
  bool currentRunChosen() const { return current_chosen_; }
  /// Makes run `id` current as a default (not chosen) when the current run is itself a default
  /// one: the view on screen opened on `id` because it cannot show the default run, and the
  /// session tree then highlights the run that view shows. A chosen current run, or an id the
  /// session lacks, leaves it as it is.
  void setDefaultRunId(const QString& id);

  /// Clears runs, file name and undo history (File → New).
  void reset();
  /// Reads a session file. On failure the session is unchanged, false is returned and *error
  /// holds the reason (not an HDF5 file, not an FP8 Lab session, unsupported version, ...).
  bool load(const QString& fileName, QString* error, QStringList* warnings = nullptr);
  /// Writes the session (write beside, then rename). Marks it clean on success. `progress`
  /// (called on the calling thread, per dataset or copied run) may cancel: the file is unchanged.
  /// Saving over the open file merges (session_io::write with knownOnDisk()): runs another
  /// program added to it meanwhile are kept and become runs of this session.
  bool save(const QString& fileName, QString* error, const fp8lab::ProgressFn& progress = {});
  /// After the runs were written to `fileName` by other means (MainWindow saves on a worker
  /// thread): the session is clean, named `fileName`, and runs read lazily are read from there.
  /// `merged` (may be null) is what a merging save kept from or lost on disk: the kept runs are
  /// added (read lazily from the file, not undoable: they are in the file already), the vanished
  /// ones removed.
  void markSaved(const QString& fileName, const session_io::Merge* merged = nullptr);

  /// The run ids the open file held when it was last loaded or saved by this session: a save
  /// over the file keeps every other run found there (another program's). Empty for a new
  /// session.
  const QStringList& knownOnDisk() const { return known_on_disk_; }
  /// Whether the open file was replaced or changed on disk by another program since this session
  /// last loaded or saved it (compared by its content stamp: device, inode, size and mtime — every
  /// FP8 Lab writer replaces the file by rename — then by its run ids and modified_utc, so a mere
  /// `touch` does not count). False for an untitled session or a missing file.
  bool changedOnDisk(QStringList* added = nullptr, QStringList* removed = nullptr) const;

  /// While true (set around the window's own save), file-system notifications are ignored.
  void setSaving(bool saving) { saving_ = saving; }
  /// Whether this build can read and write session files (needs core/session).
  static bool fileSupport();

Q_SIGNALS:
  void runAdded(int index);
  void runRemoved(int index);
  void runChanged(int index);
  /// Everything changed (load, reset).
  void reset_();
  void currentRunChanged(int index);
  void fileNameChanged(const QString& fileName);
  void modifiedChanged(bool modified);
  /// The open file was changed on disk by another program (a QFileSystemWatcher notification
  /// confirmed by changedOnDisk()): `added` / `removed` are the run ids it gained and lost.
  void fileChangedOnDisk(const QStringList& added, const QStringList& removed);

private:
  friend class AddRunCommand;
  friend class RemoveRunCommand;
  friend class RenameRunCommand;
  /// Inserts `r` at `index` and makes it the current run (chosen).
  void insertRunAt(int index, RunRecord r);
  /// Removes run `index`; when it was current, `next_current` (an id, "" = the run now at its
  /// place, else the one before) becomes current before any signal is emitted.
  RunRecord takeRunAt(int index, const QString& next_current = {});
  void setLabelAt(int index, const QString& label);
  /// Sets the current run without checks; emits currentRunChanged when it changed.
  void setCurrent(const QString& id, bool chosen);
  /// Records what the file holds now (ids and stamp) and watches it.
  void rememberDisk(const QStringList& ids);
  void onFileEvent();

  QList<RunRecord> runs_;
  QString file_name_;
  QString current_id_;
  bool current_chosen_ = false;
  QUndoStack* undo_;
  QStringList known_on_disk_;
  struct Stamp {
    quint64 dev = 0, ino = 0;
    qint64 size = -1, mtime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  static Stamp stampOf(const QString& fileName);
  Stamp disk_stamp_;
  QString disk_modified_utc_;
  QFileSystemWatcher* watcher_ = nullptr;
  QTimer* watch_delay_ = nullptr;
  bool saving_ = false;
};

namespace session_io {
/// Implemented in session_io.cpp over core/session; see SessionDocument::load / save.
/// Lazy (the default): metadata only — each record names the file as its `source` and the views
/// read datasets on demand. Not lazy: every run in memory (`core`), for a file that goes away
/// after reading (a recovery file).
/// `modified_utc` (may be null) receives the file's root attribute of that name.
bool read(const QString& fileName, QList<RunRecord>* runs, QString* error, QStringList* warnings, bool lazy = true,
          QString* modified_utc = nullptr);
/// Writes the records: runs in memory are written, runs read lazily are copied from their source
/// file as they are (their label updated); atomic (core writeSessionItems).
/// With `known` (the ids the file held at the caller's last load or save) the write merges
/// (core saveSessionMerging): runs another program added to the file since are kept, and
/// *merged (may be null) says which, and which copied runs vanished. `on_lock_wait` (may be
/// empty) is told, from the writing thread, when another writer holds the file.
bool write(const QString& fileName, const QList<RunRecord>& runs, QString* error,
           const fp8lab::ProgressFn& progress = {}, const QStringList* known = nullptr, Merge* merged = nullptr,
           std::function<void(const QString&)> on_lock_wait = {});
bool available();
#ifdef FP8LAB_HAVE_HDF5
/// A core run as the GUI shows it: float32 datasets of rank 1 or 2 become tensors, metrics keep
/// their file order (by name), attrs["label"] becomes the label.
RunRecord fromCoreRun(const fp8lab::Run& run);
/// The first Error issue of `status` without its "error: " severity prefix ("not an FP8 Lab
/// session at FILE: …"), for GUI messages that add their own lead ("Cannot open session: …"
/// in the Issues panel); "" when it holds no error.
QString errorText(const fp8lab::Status& status);
#endif
/// First bytes check: true when the file starts with the HDF5 signature.
bool looksLikeHdf5(const QString& fileName, QString* error);
} // namespace session_io

} // namespace fp8lab::ui

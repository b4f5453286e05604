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

#include <memory>
#include <vector>

#ifdef FP8LAB_HAVE_HDF5
#include "session/session.h"
#endif

class QUndoStack;

namespace fp8lab::ui {

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

  /// The run the views show (−1: none).
  int currentRun() const { return current_; }
  void setCurrentRun(int index);

  /// Clears runs, file name and undo history (File → New).
  void reset();
  /// Reads a session file. On failure the session is unchanged, false is returned and *error
  /// holds the reason (not an HDF5 file, not an FP8 Lab session, unsupported version, ...).
  bool load(const QString& fileName, QString* error, QStringList* warnings = nullptr);
  /// Writes the session (write beside, then rename). Marks it clean on success. `progress`
  /// (called on the calling thread, per dataset or copied run) may cancel: the file is unchanged.
  bool save(const QString& fileName, QString* error, const fp8lab::ProgressFn& progress = {});
  /// After the runs were written to `fileName` by other means (MainWindow saves on a worker
  /// thread): the session is clean, named `fileName`, and runs read lazily are read from there.
  void markSaved(const QString& fileName);
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

private:
  friend class AddRunCommand;
  friend class RemoveRunCommand;
  friend class RenameRunCommand;
  void insertRunAt(int index, RunRecord r);
  RunRecord takeRunAt(int index);
  void setLabelAt(int index, const QString& label);

  QList<RunRecord> runs_;
  QString file_name_;
  int current_ = -1;
  QUndoStack* undo_;
};

namespace session_io {
/// Implemented in session_io.cpp over core/session; see SessionDocument::load / save.
/// Lazy (the default): metadata only — each record names the file as its `source` and the views
/// read datasets on demand. Not lazy: every run in memory (`core`), for a file that goes away
/// after reading (a recovery file).
bool read(const QString& fileName, QList<RunRecord>* runs, QString* error, QStringList* warnings, bool lazy = true);
/// Writes the records: runs in memory are written, runs read lazily are copied from their source
/// file as they are (their label updated); atomic (core writeSessionItems).
bool write(const QString& fileName, const QList<RunRecord>& runs, QString* error,
           const fp8lab::ProgressFn& progress = {});
bool available();
#ifdef FP8LAB_HAVE_HDF5
/// A core run as the GUI shows it: float32 datasets of rank 1 or 2 become tensors, metrics keep
/// their file order (by name), attrs["label"] becomes the label.
RunRecord fromCoreRun(const fp8lab::Run& run);
#endif
/// First bytes check: true when the file starts with the HDF5 signature.
bool looksLikeHdf5(const QString& fileName, QString* error);
} // namespace session_io

} // namespace fp8lab::ui

// FP8 Lab — GUI autosave and crash recovery, so a crash or a kill loses no unsaved work.
//
// While the session has unsaved changes, Autosave writes its runs every `interval` to a recovery
// file (default: <AppDataLocation>/recovery/session-recovery-<pid>.h5, one per running window
// process, so two instances never remove each other's file) through the same atomic writer as
// File → Save (core/session: temporary file, fsync, rename), without touching the session's file
// name or modified flag. A clean exit removes the file; after a crash or kill it is still there,
// and the next start offers it back: restoreAsNewSession() replaces the open session (the bundled
// default session, or a file named on the command line, neither of them modified yet) with a new
// untitled one holding the recovered runs, one undoable edit each, so Save asks where to put them
// and never writes them into the file that happened to be open.
//
// A sidecar "<recovery>.json" records the original file name, the time of the autosave and the
// number of runs (shown in the recovery question). A recovery file that cannot be read is moved
// aside to "<recovery>.bad" (kept for inspection, never offered again).
#pragma once

#include <QDateTime>
#include <QObject>
#include <QString>
#include <QTimer>

#include <functional>
#include <memory>

class QWidget;

namespace fp8lab::ui {

class SessionDocument;

class Autosave : public QObject {
  Q_OBJECT
public:
  /// What a recovery file holds (read from the sidecar; runs = -1 when the sidecar is missing).
  struct Info {
    QString path;          ///< the recovery .h5
    QString original_file; ///< the session's file name when it was autosaved ("" = untitled)
    QDateTime saved;       ///< UTC time of the autosave
    int runs = -1;
  };

  /// Starts the timer at once. interval_ms ≤ 0 disables the timer (saveNow() still works).
  Autosave(SessionDocument* session, QString recovery_path, int interval_ms = kDefaultIntervalMs,
           QObject* parent = nullptr);
  ~Autosave() override;

  static constexpr int kDefaultIntervalMs = 3 * 60 * 1000; ///< every 3 minutes

  /// <AppDataLocation>/recovery/session-recovery-<this pid>.h5 (directory created when missing).
  static QString defaultRecoveryPath();
  /// A recovery file in the directory of defaultRecoveryPath() left by a process that is no
  /// longer running (crashed or killed), or "" when there is none.
  static QString findOrphan();
  /// The recovery file left by an earlier process, if any (a file at `path` plus its sidecar).
  static bool pending(const QString& path, Info* info = nullptr);

  QString recoveryPath() const { return path_; }
  /// Writes the recovery file now when the session is modified and has runs; when it is not
  /// modified (saved, or nothing to lose) removes a stale recovery file instead. Returns false
  /// with *error on a write failure (the previous recovery file is then kept intact).
  bool saveNow(QString* error = nullptr);
  /// Removes the recovery file and its sidecar (clean exit, or the user declined recovery).
  void discard();
  /// Reads the recovery file at `path`; on success resets `session` to a new untitled session
  /// and adds its runs (unsaved, each one undoable), returning the number added. -1 with *error
  /// when it cannot be read: then `session` is left as it was and the file is moved aside to .bad.
  static int restoreAsNewSession(SessionDocument* session, const QString& path, QString* error = nullptr);

  /// The app's start-up hook: when findOrphan() finds a recovery file, asks (`ask`; default a
  /// QMessageBox over `window`) whether to recover it; yes → restoreAsNewSession(), then the
  /// orphan is removed either way (a failed restore is moved aside and reported). Returns the
  /// Autosave of this process (default path and interval), or null when the build cannot write
  /// sessions.
  static std::unique_ptr<Autosave> start(QWidget* window, SessionDocument* session,
                                         std::function<bool(const Info&)> ask = {});

Q_SIGNALS:
  void saved(const QString& path);
  void failed(const QString& error);

private:
  void tick();
  SessionDocument* session_;
  QString path_;
  QTimer timer_;
};

} // namespace fp8lab::ui

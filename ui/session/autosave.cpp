#include "session/autosave.h"

#include "session/session_document.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocale>
#include <QMessageBox>
#include <QSaveFile>
#include <QStandardPaths>

#include <cerrno>
#include <csignal>
#include <unistd.h>

namespace fp8lab::ui {

namespace {
QString sidecar(const QString& path) {
  return path + QStringLiteral(".json");
}
} // namespace

Autosave::Autosave(SessionDocument* session, QString recovery_path, int interval_ms, QObject* parent)
    : QObject(parent), session_(session), path_(std::move(recovery_path)) {
  connect(&timer_, &QTimer::timeout, this, &Autosave::tick);
  if (interval_ms > 0) timer_.start(interval_ms);
}

Autosave::~Autosave() = default;

QString Autosave::defaultRecoveryPath() {
  QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  if (dir.isEmpty()) dir = QDir::homePath() + QStringLiteral("/.local/share/fp8lab");
  dir += QStringLiteral("/recovery");
  QDir().mkpath(dir);
  return dir + QStringLiteral("/session-recovery-%1.h5").arg(::getpid());
}

QString Autosave::findOrphan() {
  const QDir dir = QFileInfo(defaultRecoveryPath()).absoluteDir();
  for (const QString& name : dir.entryList({QStringLiteral("session-recovery-*.h5")}, QDir::Files, QDir::Time)) {
    bool ok = false;
    const qint64 pid = name.mid(17, name.size() - 17 - 3).toLongLong(&ok); // "session-recovery-" = 17
    if (!ok || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid_t(pid), 0) == 0 || errno == EPERM) continue; // still running: its own file
    if (pending(dir.filePath(name))) return dir.filePath(name);
  }
  return {};
}

bool Autosave::pending(const QString& path, Info* info) {
  const QFileInfo fi(path);
  if (!fi.isFile() || fi.size() == 0) return false;
  if (info) {
    *info = Info{};
    info->path = path;
    info->saved = fi.lastModified().toUTC();
    QFile f(sidecar(path));
    if (f.open(QIODevice::ReadOnly)) {
      const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
      info->original_file = o.value(QStringLiteral("original_file")).toString();
      const QDateTime t = QDateTime::fromString(o.value(QStringLiteral("saved_utc")).toString(), Qt::ISODate);
      if (t.isValid()) info->saved = t;
      info->runs = o.value(QStringLiteral("runs")).toInt(-1);
    }
  }
  return true;
}

bool Autosave::saveNow(QString* error) {
  if (!session_ || !session_->isModified() || session_->runCount() == 0) {
    discard(); // nothing unsaved: an old recovery file would only confuse the next start
    return true;
  }
  QDir().mkpath(QFileInfo(path_).absolutePath());
  QString why;
  // session_io::write goes through core writeSession: temporary file + fsync + rename, so a crash
  // during the autosave leaves the previous recovery file intact.
  if (!session_io::write(path_, session_->runs(), &why)) {
    if (error) *error = why;
    Q_EMIT failed(why);
    return false;
  }
  QJsonObject o;
  o.insert(QStringLiteral("original_file"), session_->fileName());
  o.insert(QStringLiteral("saved_utc"), QDateTime::currentDateTimeUtc().toString(Qt::ISODate));
  o.insert(QStringLiteral("runs"), session_->runCount());
  QSaveFile f(sidecar(path_));
  if (f.open(QIODevice::WriteOnly)) {
    f.write(QJsonDocument(o).toJson(QJsonDocument::Compact));
    f.commit();
  }
  Q_EMIT saved(path_);
  return true;
}

void Autosave::discard() {
  QFile::remove(path_);
  QFile::remove(sidecar(path_));
}

int Autosave::restoreAsNewSession(SessionDocument* session, const QString& path, QString* error) {
  QList<RunRecord> runs;
  QString why;
  QStringList warnings;
  // Every run into memory: the recovery file is removed once its runs are back.
  if (!session_io::read(path, &runs, &why, &warnings, /*lazy=*/false)) {
    if (error) *error = why;
    const QString bad = path + QStringLiteral(".bad");
    QFile::remove(bad);
    QFile::rename(path, bad);
    QFile::remove(sidecar(path));
    return -1;
  }
  session->reset();
  int added = 0;
  for (RunRecord& r : runs) {
    if (session->indexOf(r.id) >= 0) r.id = session->nextRunId();
    session->addRun(std::move(r));
    ++added;
  }
  return added;
}

std::unique_ptr<Autosave> Autosave::start(QWidget* window, SessionDocument* session,
                                          std::function<bool(const Info&)> ask) {
  if (!SessionDocument::fileSupport()) return nullptr;
  const QString orphan = findOrphan();
  if (!orphan.isEmpty()) {
    Info info;
    pending(orphan, &info);
    if (!ask)
      ask = [window](const Info& i) {
        const QString what = i.original_file.isEmpty() ? tr("an untitled session") : i.original_file;
        const QString runs = i.runs >= 0 ? tr("%n run(s)", nullptr, i.runs) : tr("its runs");
        return QMessageBox::question(
                   window, tr("Recover unsaved work?"),
                   tr("FP8 Lab did not exit normally. Unsaved work from %1 (%2) was autosaved at %3.\n\n"
                      "Recover it? (Recovered runs open as a new, unsaved session.)")
                       .arg(what, runs, QLocale().toString(i.saved.toLocalTime(), QLocale::ShortFormat)),
                   QMessageBox::Yes | QMessageBox::No, QMessageBox::Yes) == QMessageBox::Yes;
      };
    if (ask(info)) {
      QString error;
      if (restoreAsNewSession(session, orphan, &error) < 0 && window)
        QMessageBox::warning(window, tr("Recovery failed"),
                             tr("The recovery file could not be read (%1). It was kept as %2.")
                                 .arg(error, orphan + QStringLiteral(".bad")));
    }
    QFile::remove(orphan);
    QFile::remove(sidecar(orphan));
  }
  return std::make_unique<Autosave>(session, defaultRecoveryPath());
}

void Autosave::tick() {
  QString error;
  saveNow(&error);
}

} // namespace fp8lab::ui

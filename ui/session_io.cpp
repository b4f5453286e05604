// Session file adapter: RunRecord <-> core/session (HDF5). Until core/session lands this build
// reports that it cannot read or write sessions (with the reason), and still checks the file
// signature so a foreign file gets a precise message.
#include "session.h"

#include <QFile>
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
  // The HDF5 superblock signature sits at offset 0, 512, 1024, ... (HDF5 file format spec §II.A).
  static const QByteArray sig("\x89HDF\r\n\x1a\n", 8);
  for (qint64 off = 0; off < f.size(); off = off ? off * 2 : 512) {
    if (!f.seek(off)) break;
    if (f.read(8) == sig) return true;
    if (off > (1 << 20)) break;
  }
  if (error)
    *error = f.size() == 0 ? QObject::tr("the file is empty")
                           : QObject::tr("not an HDF5 file (no HDF5 signature): not an FP8 Lab session");
  return false;
}

bool available() { return false; }

bool read(const QString&, QList<RunRecord>*, QString* error, QStringList*) {
  if (error) *error = QObject::tr("this build cannot read session files yet (core/session is not available)");
  return false;
}

bool write(const QString&, const QList<RunRecord>&, QString* error) {
  if (error) *error = QObject::tr("this build cannot write session files yet (core/session is not available)");
  return false;
}

} // namespace fp8lab::ui::session_io

#include "forms/backend.h"

#include <QFile>
#include <QThread>

#ifdef FP8LAB_HAVE_CUDA
#include "device_probe.h"
#endif

namespace fp8lab::ui {

static QString cpuModel() {
  QFile f(QStringLiteral("/proc/cpuinfo"));
  if (f.open(QIODevice::ReadOnly)) {
    while (!f.atEnd()) {
      const QByteArray line = f.readLine();
      if (line.startsWith("model name")) {
        const int i = line.indexOf(':');
        if (i > 0) return QString::fromUtf8(line.mid(i + 1).trimmed());
      }
    }
  }
  return QStringLiteral("unknown CPU");
}

BackendInfo probeBackend() {
  BackendInfo b;
  b.name = QStringLiteral("CPU");
  b.detail = QStringLiteral("%1, %2 threads").arg(cpuModel()).arg(QThread::idealThreadCount());
#ifdef FP8LAB_HAVE_CUDA
  const auto r = fp8lab::gpu::probeDevices();
  if (r.hasDevice()) {
    const auto& d = r.devices.front();
    b.gpu = true;
    b.name = QString::fromStdString(d.name);
    b.detail = QStringLiteral("compute capability %1.%2, %3 SMs, %4 GiB")
                   .arg(d.cc_major)
                   .arg(d.cc_minor)
                   .arg(d.sm_count)
                   .arg(double(d.total_memory_bytes) / (1024.0 * 1024 * 1024), 0, 'f', 1);
  } else {
    b.detail += QStringLiteral(" — no GPU: ") + QString::fromStdString(r.summary());
  }
#else
  b.detail += QStringLiteral(" — this build has no CUDA backend");
#endif
  return b;
}

} // namespace fp8lab::ui

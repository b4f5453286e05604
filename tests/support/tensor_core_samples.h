// FP8 Lab tests — the published tensor-core samples of tests/data/tensor_core (README there: from
// MATLAB-tensor-core's model_validation, BSD-2): one K = 32 inner product D = A·B + C per line,
// 32 FP8 codes of A and of B, C and D as binary32 bits, measured on H100, Ada and B200.
#pragma once

#include <QFile>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <string>
#include <vector>

namespace fp8lab::test {

struct TensorCoreSample {
  uint8_t a[32], b[32];
  uint32_t c = 0, d = 0;
};

/// The samples of `stem` ("h100_e4m3"), read from FP8LAB_SOURCE_DIR/tests/data/tensor_core/STEM.txt;
/// empty with *error set when the file is missing or a line is malformed.
inline std::vector<TensorCoreSample> readTensorCoreSamples(const QString& stem, QString* error) {
  std::vector<TensorCoreSample> v;
  const QString path = QStringLiteral(FP8LAB_SOURCE_DIR "/tests/data/tensor_core/") + stem + QStringLiteral(".txt");
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    *error = QStringLiteral("cannot read %1").arg(path);
    return {};
  }
  int line = 0;
  while (!f.atEnd()) {
    const QByteArray l = f.readLine().trimmed();
    ++line;
    if (l.isEmpty()) continue;
    const QList<QByteArray> w = l.split(' ');
    if (w.size() != 4 || w[0].size() != 64 || w[1].size() != 64 || w[2].size() != 8 || w[3].size() != 8) {
      *error = QStringLiteral("%1:%2: expected 64 + 64 + 8 + 8 hex digits").arg(path).arg(line);
      return {};
    }
    TensorCoreSample s;
    bool ok = true, k = true;
    for (int i = 0; i < 32; ++i) {
      s.a[i] = static_cast<uint8_t>(w[0].mid(2 * i, 2).toUInt(&k, 16));
      ok = ok && k;
      s.b[i] = static_cast<uint8_t>(w[1].mid(2 * i, 2).toUInt(&k, 16));
      ok = ok && k;
    }
    s.c = w[2].toUInt(&k, 16);
    ok = ok && k;
    s.d = w[3].toUInt(&k, 16);
    ok = ok && k;
    if (!ok) {
      *error = QStringLiteral("%1:%2: not hexadecimal").arg(path).arg(line);
      return {};
    }
    v.push_back(s);
  }
  return v;
}

} // namespace fp8lab::test

// libFuzzer target: experiment-config parsing of `fp8lab-cli run` — JSON text → (for each
// experiment object, also inside {"experiments": [...]}) parseGemmConfig and, for training
// configs, parseTrainingExperiment — and firstDuplicateKey on the text. Bad configs must give an
// error message naming the key;
// nothing may crash or hang. No experiment is run.
#include "cmd_run.h"
#include "run_training.h"

#include <QJsonArray>
#include <QJsonDocument>

using namespace fp8lab;
using namespace fp8lab::cli;

namespace {
void parseOne(const QJsonObject& o) {
  GemmExperimentConfig g;
  QString err;
  if (!parseGemmConfig(o, &g, &err) && err.isEmpty()) __builtin_trap();
  if (isTrainingConfig(o)) {
    QString terr;
    const auto spec = parseTrainingExperiment(o, &terr);
    if (!spec && terr.isEmpty()) __builtin_trap();
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  QJsonParseError pe;
  const QJsonDocument doc =
      QJsonDocument::fromJson(QByteArray(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size)), &pe);
  if (pe.error != QJsonParseError::NoError || !doc.isObject()) return 0;
  // The duplicate-key scan `run` applies to valid JSON: a reported key must start at the line and
  // column it names (a '"' there).
  const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
  if (const auto dup = firstDuplicateKey(bytes)) {
    qsizetype at = 0;
    for (int line = 1; line < dup->line && at < bytes.size(); ++at)
      if (bytes[at] == '\n') ++line;
    at += dup->column - 1;
    if (dup->line < 1 || dup->column < 1 || at >= bytes.size() || bytes[at] != '"') __builtin_trap();
  }
  const QJsonObject root = doc.object();
  const QJsonValue ex = root.value(QStringLiteral("experiments"));
  if (ex.isArray()) {
    int n = 0;
    for (const QJsonValue& e : ex.toArray())
      if (e.isObject() && ++n <= 8) parseOne(e.toObject());
  } else {
    parseOne(root);
  }
  return 0;
}

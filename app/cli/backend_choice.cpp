#include "backend_choice.h"

#include "cli_util.h"

#include "experiment/backend_report.h"

#include <cstdio>

namespace fp8lab::cli {

std::optional<BackendRequest> parseBackendRequest(const QString& s) {
  return fp8lab::parseBackendRequest(s.toStdString());
}

QCommandLineOption backendOption() {
  return QCommandLineOption(
      QStringLiteral("backend"),
      QStringLiteral("Where the FP8 GEMMs run: auto (default: the GPU when present and able to run the "
                     "GEMM, else the CPU, with a note why) | cpu | gpu (refuse what the GPU cannot run)."),
      QStringLiteral("auto|cpu|gpu"), QStringLiteral("auto"));
}

std::unique_ptr<FallbackGemmBackend> makeChosenBackend(const QString& value, bool quiet) {
  const auto req = parseBackendRequest(value);
  if (!req) {
    fail(QStringLiteral("--backend must be auto, cpu or gpu (got '%1')").arg(value));
    return nullptr;
  }
  std::string error;
  std::unique_ptr<FallbackGemmBackend> b = makeGemmBackend(*req, &error);
  if (!b) {
    fail(QStringLiteral("--backend gpu: %1").arg(QString::fromStdString(error)));
    return nullptr;
  }
  if (!quiet && buildHasCuda() && !b->noGpuReason().empty())
    std::fprintf(stderr, "note: --backend auto: %s; running on the CPU reference backend\n", b->noGpuReason().c_str());
  return b;
}

void addBackendJson(QJsonObject& j, const FallbackGemmBackend& b, const std::string& backend_that_ran,
                    const GemmOptions& opt, const std::string& note) {
  const QJsonObject o = toQJson(backendJson(b, backend_that_ran, opt, note)).toObject();
  for (auto it = o.begin(); it != o.end(); ++it) j.insert(it.key(), it.value());
}

} // namespace fp8lab::cli

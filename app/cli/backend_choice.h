// fp8lab-cli --backend auto|cpu|gpu — where the GEMMs of `gemm`, `run`, `sweep` and `train` run,
// chosen once per command. The rule is core's (gemm/backend_policy.h: per GEMM the GPU when it
// can run it; auto falls back to the CPU reference backend with the reason kept, gpu refuses, cpu
// never asks the GPU), the backend core's factory's (backend/backend_factory.h), the run
// attributes and --json fields core's (backend/backend_record.h, experiment/backend_report.h).
// Here: the option and the messages on stderr. `rerun` does not take --backend: its bit-for-bit
// promise is for the CPU backend.
#pragma once

#include "backend/backend_factory.h"
#include "backend/backend_record.h"
#include "gemm/backend_policy.h"

#include <QCommandLineOption>
#include <QJsonObject>
#include <QString>

#include <memory>
#include <optional>
#include <string>

namespace fp8lab::cli {

/// fp8lab::parseBackendRequest of a command-line value: "auto", "cpu", "gpu" (also "cuda"),
/// case-insensitive; nullopt otherwise.
std::optional<BackendRequest> parseBackendRequest(const QString& s);
/// The `--backend auto|cpu|gpu` option (default auto).
QCommandLineOption backendOption();

/// Makes the backend of `value` (the --backend text) with makeGemmBackend. Returns nullptr after
/// printing the error (the caller exits 2): unknown value; gpu without CUDA support or without a
/// usable device. auto without a usable GPU in a build with CUDA prints "note: ..." on stderr
/// (unless quiet) and runs on the CPU (without a note in a build without CUDA).
std::unique_ptr<FallbackGemmBackend> makeChosenBackend(const QString& value, bool quiet);

/// Adds the fields of fp8lab::backendJson to `j`.
void addBackendJson(QJsonObject& j, const FallbackGemmBackend& b, const std::string& backend_that_ran,
                    const GemmOptions& opt, const std::string& note);

} // namespace fp8lab::cli

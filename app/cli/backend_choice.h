// fp8lab-cli --backend auto|cpu|gpu — where the GEMMs of `gemm`, `run`, `sweep` and `train` run.
// The rule is core's (gemm/backend_policy.h: per GEMM the GPU when it can run it; auto falls back
// to the CPU reference backend with the reason kept, gpu refuses, cpu never asks the GPU), the
// backend core's factory (backend/backend_factory.h) and the run attributes core's
// (backend/backend_record.h). This file is the command-line side: the option, the messages on
// stderr, and the --json fields. The choice is made once per command.
// Without a usable GPU: auto runs on the CPU with a one-line note naming the reason (none in a
// build without CUDA, where the CPU is what the build intends); gpu is an error (exit 2).
// `rerun` does not take --backend: its bit-for-bit promise is for the CPU backend.
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
/// (unless quiet) and runs on the CPU.
std::unique_ptr<FallbackGemmBackend> makeChosenBackend(const QString& value, bool quiet);

/// The backend facts of recordBackend for --json output: backend_request, backend_note, and when
/// `backend_that_ran` is "cuda" fast_accum (bool) and versions {cuda_runtime, cuda_driver,
/// cublaslt}.
void addBackendJson(QJsonObject& j, const FallbackGemmBackend& b, const std::string& backend_that_ran,
                    const GemmOptions& opt, const std::string& note);

} // namespace fp8lab::cli

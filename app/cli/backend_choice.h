// fp8lab-cli --backend auto|cpu|gpu — where the GEMMs of `gemm`, `run`, `sweep` and `train` run
// (issue 7 §2). The choice is made once per command; each GEMM then goes to the GPU when the
// CUDA backend can run it (gpu/cuda_gemm_backend.h: formats, scale modes, accumulation model) and
// otherwise:
//   auto  the CPU reference backend runs it, and the reason is kept (printed as a note on stderr,
//         stored in the session run as "backend_note");
//   gpu   the GEMM is refused with the reason (exit 2);
//   cpu   the CPU reference backend always.
// Without a usable GPU (a build without CUDA, no device, a device without FP8 tensor cores):
// auto runs on the CPU with a one-line note naming the reason; gpu is an error (exit 2).
// `rerun` does not take --backend: its bit-for-bit promise is for the CPU backend.
#pragma once

#include "gemm/gemm.h"
#include "session/session.h"

#include <QCommandLineOption>
#include <QJsonObject>
#include <QString>

#include <memory>
#include <optional>
#include <set>
#include <string>

namespace fp8lab::cli {

enum class BackendRequest { Auto, Cpu, Gpu };

/// "auto", "cpu", "gpu" (also "cuda"), case-insensitive; nullopt otherwise.
std::optional<BackendRequest> parseBackendRequest(const QString& s);
const char* toString(BackendRequest r);
/// True when this binary was built with the CUDA backend (FP8LAB_HAVE_CUDA).
bool buildHasCuda();
/// The `--backend auto|cpu|gpu` option (default auto).
QCommandLineOption backendOption();

/// A GemmBackend that dispatches each GEMM to the GPU when it can run it and the request allows,
/// else to the CPU reference backend (auto) or refuses it (gpu). name()/device() name the GPU
/// when one was chosen. GemmOutput::backend / device of each result name the one that ran.
class ChosenGemmBackend final : public GemmBackend {
public:
  ChosenGemmBackend(BackendRequest request, std::unique_ptr<GemmBackend> gpu, std::string no_gpu_reason);
  std::string name() const override;
  std::string device() const override;
  /// gpu: the GPU's reason; auto: empty when the GPU can run it, else the CPU's reason.
  std::string unsupportedReason(const QuantizedTensor& a, const QuantizedTensor& b,
                                const GemmOptions& opt) const override;
  /// Runs on the GPU or the CPU as described above. Throws std::runtime_error with the GPU's
  /// reason when the request is gpu and the GPU cannot run the GEMM.
  GemmOutput run(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt,
                 const ProgressFn& progress = {}) override;

  BackendRequest request() const { return request_; }
  bool hasGpu() const { return gpu_ != nullptr; }
  /// Why no GPU backend exists (empty when one does): "this build has no CUDA support",
  /// "no CUDA device (cudaErrorInsufficientDriver ...)", ...
  const std::string& noGpuReason() const { return no_gpu_reason_; }
  /// Why the last run() went to the CPU although a GPU was present (auto), in
  /// selectGemmBackend's words; empty when it did not fall back.
  const std::string& lastFallback() const { return last_fallback_; }
  /// GEMMs run on each side since the last resetCounts(), and the distinct reasons the GPU gave
  /// for those that went to the CPU (auto) — for commands with many GEMMs per run (training).
  int64_t gpu_runs = 0, cpu_runs = 0;
  std::set<std::string> fallback_reasons;
  void resetCounts() {
    gpu_runs = cpu_runs = 0;
    fallback_reasons.clear();
  }
  /// "" when no GEMM fell back; else "auto: N of M GEMMs ran on the CPU reference backend (<reasons>)".
  std::string fallbackSummary() const;
  /// CUDA runtime / driver / cuBLASLt versions (cudaRuntimeGetVersion etc.; 0 when unknown).
  int runtime_version = 0, driver_version = 0;
  int64_t cublaslt_version = 0;

private:
  BackendRequest request_;
  std::unique_ptr<GemmBackend> gpu_, cpu_;
  std::string no_gpu_reason_;
  std::string last_fallback_;
};

/// Makes the backend of `value` (the --backend text). Returns nullptr after printing the error
/// (the caller exits 2): unknown value; gpu without CUDA support or without a usable device.
/// auto without a usable GPU prints "note: ..." on stderr (unless quiet) and runs on the CPU.
std::unique_ptr<ChosenGemmBackend> makeChosenBackend(const QString& value, bool quiet);

/// Records the backend in a run: run.backend / run.device are set by the experiment; this adds
/// attributes backend_request (auto|cpu|gpu), backend_note (auto fallback or no-GPU reason, when
/// any), and for runs on the GPU fast_accum (0/1, cuBLASLt CUBLASLT_MATMUL_DESC_FAST_ACCUM),
/// cuda_runtime_version, cuda_driver_version, cublaslt_version (integers as the CUDA API gives
/// them, e.g. 13000, 13000, 130100). docs/session-format.md lists them.
void recordBackend(Run& run, const ChosenGemmBackend& b, const GemmOptions& opt, const std::string& note);

/// The same facts for --json output: backend_request, backend_note, and (GPU) fast_accum and
/// versions {cuda_runtime, cuda_driver, cublaslt}.
void addBackendJson(QJsonObject& j, const ChosenGemmBackend& b, const std::string& backend_that_ran,
                    const GemmOptions& opt, const std::string& note);

} // namespace fp8lab::cli

// FP8 Lab — where GEMMs run: the backend a user asks for (auto | cpu | gpu) and the one rule that
// sends each GEMM to the GPU backend or the CPU reference backend. fp8lab-cli `--backend`, the
// desktop app's experiment panel and the GPU checks all use this rule; docs/session-format.md
// lists what a run records about it (core/backend/backend_record.h writes it).
//
// Per GEMM, with a GPU backend present (its unsupportedReason() empty = it can run this GEMM):
//   auto  GPU when it can; otherwise the CPU reference backend runs it and the GPU's reason is
//         kept (lastFallback(), a Warning in the GemmOutput, the distinct reasons in
//         fallback_reasons). A GPU run that throws (out of device memory, every cuBLASLt
//         algorithm refused, a driver error) is run again on the CPU the same way. Cancelled is
//         never turned into a CPU run.
//   gpu   GPU when it can; otherwise the GEMM is refused (std::runtime_error with the reason); a
//         GPU run that throws is rethrown.
//   cpu   the CPU reference backend always.
// Without a GPU backend (a build without CUDA, no device, a device without FP8 tensor cores):
// auto runs every GEMM on the CPU (noGpuReason() says why); gpu refuses every GEMM.
#pragma once

#include "gemm/gemm.h"

#include <cstdint>
#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace fp8lab {

/// The backend a user asked for.
enum class BackendRequest {
  Auto, ///< the GPU for each GEMM it can run, else the CPU reference backend (with a note why)
  Cpu,  ///< the CPU reference backend always
  Gpu,  ///< the GPU; GEMMs it cannot run are refused
};

/// "auto", "cpu", "gpu", and "cuda" as another name of gpu; case-insensitive, surrounding spaces
/// ignored. nullopt for anything else.
std::optional<BackendRequest> parseBackendRequest(std::string_view s);
/// "auto", "cpu" or "gpu".
const char* toString(BackendRequest r);

/// CUDA runtime, driver and cuBLASLt versions as the CUDA API returns them
/// (cudaRuntimeGetVersion, cudaDriverGetVersion, cublasLtGetVersion: e.g. 13000, 13000, 130100);
/// 0 when unknown or when there is no GPU backend.
struct CudaVersions {
  int runtime = 0;
  int driver = 0;
  int64_t cublaslt = 0;
};

/// A GemmBackend that applies the policy above to each GEMM: `primary` (the GPU backend; may be
/// null when there is none) when it can run the GEMM and the request allows, else `fallback` (the
/// CPU reference backend) or a refusal. Counts what ran where. Not thread-safe: one caller at a
/// time (the counts and lastFallback() are per object).
class FallbackGemmBackend final : public GemmBackend {
public:
  /// `fallback` must not be null (std::invalid_argument). With request Cpu, `primary` is dropped.
  /// `no_gpu_reason`: why `primary` is null (noGpuReason()), e.g. "no CUDA device (...)".
  FallbackGemmBackend(std::unique_ptr<GemmBackend> primary, std::unique_ptr<GemmBackend> fallback,
                      BackendRequest request, std::string no_gpu_reason = {});

  /// The GPU's name when there is a GPU backend, else the CPU's ("cuda" / "cpu"). Each GemmOutput
  /// names the backend that ran it (GemmOutput::backend / device).
  std::string name() const override;
  std::string device() const override;
  /// gpu: the GPU's reason (or the no-GPU reason); auto: empty when the GPU can run it, else the
  /// CPU's reason; cpu: the CPU's reason.
  std::string unsupportedReason(const QuantizedTensor& a, const QuantizedTensor& b,
                                const GemmOptions& opt) const override;
  /// Runs D = A·B where the policy says. Throws what the backend that ran throws (Cancelled passes
  /// through), and std::runtime_error "<GPU> cannot run this GEMM: <reason>" when the request is
  /// gpu and the GPU cannot run it (or "<no-GPU reason>" without a GPU backend).
  GemmOutput run(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt,
                 const ProgressFn& progress = {}) override;

  BackendRequest request() const { return request_; }
  /// True when a GPU backend is present (request auto or gpu and one could be made).
  bool hasGpu() const { return primary_ != nullptr; }
  /// Why there is no GPU backend (empty when there is one, and for request cpu):
  /// "this build has no CUDA support ...", "no CUDA device (cudaErrorInsufficientDriver ...)", ...
  const std::string& noGpuReason() const { return no_gpu_reason_; }
  /// Why the last run() went to the CPU although a GPU was present (auto), one line:
  /// "auto: <GPU> cannot run this GEMM: <reason>; running on the CPU reference backend" or
  /// "auto: the GEMM failed on <GPU> (<error>); running on the CPU reference backend".
  /// Empty when the last run() did not fall back.
  const std::string& lastFallback() const { return last_fallback_; }
  /// What a run of one GEMM records as its note (backend_note): lastFallback() when the last
  /// run() fell back, else noGpuReason() (empty when neither).
  const std::string& note() const { return last_fallback_.empty() ? no_gpu_reason_ : last_fallback_; }

  /// GEMMs run on each side since construction or the last resetCounts(), and the distinct reasons
  /// the GPU gave for those that went to the CPU under auto (a failed GPU run as
  /// "run failed: <error>") — for commands with many GEMMs per run (training).
  /// (Atomic: training runs that train side by side share one backend.)
  std::atomic<int64_t> gpu_runs{0}, cpu_runs{0};
  std::set<std::string> fallback_reasons;
  void resetCounts() {
    gpu_runs = 0;
    cpu_runs = 0;
    fallback_reasons.clear();
  }
  /// "" when no GEMM fell back since resetCounts(); else
  /// "auto: N of M GEMMs ran on the CPU reference backend (<GPU> cannot run: <reason>; <reason>)".
  std::string fallbackSummary() const;

  /// The CUDA versions of the GPU backend (set by makeGemmBackend; zeros without a GPU).
  CudaVersions cuda_versions;

private:
  BackendRequest request_;
  std::unique_ptr<GemmBackend> primary_, fallback_;
  std::string no_gpu_reason_;
  std::string last_fallback_;
};

} // namespace fp8lab

// FP8 Lab GPU core — turning CUDA runtime and cuBLASLt statuses into exceptions.
//
// Every CUDA / cuBLASLt call in gpu/ goes through FP8LAB_CUDA_CHECK or FP8LAB_LT_CHECK, so a
// failure becomes a GpuError whose message names the call, the status name and its text, e.g.
//   "cublasLtMatmulAlgoGetHeuristic failed: CUBLAS_STATUS_NOT_SUPPORTED (15)".
// Status names come from cudaGetErrorName / cublasLtGetStatusName (cublasGetStatusName lives
// in libcublas, not libcublasLt).
#pragma once

#include <stdexcept>
#include <string>

namespace fp8lab::gpu {

/// A failed CUDA runtime or cuBLASLt call. `code` is the cudaError_t or cublasStatus_t value,
/// `call` the source text of the call, `api` "cuda" or "cublasLt".
class GpuError : public std::runtime_error {
public:
  GpuError(std::string api, std::string call, int code, const std::string& message)
      : std::runtime_error(message), api_(std::move(api)), call_(std::move(call)), code_(code) {}
  const std::string& api() const { return api_; }
  const std::string& call() const { return call_; }
  int code() const { return code_; }
  /// true for cudaErrorMemoryAllocation (2) and CUBLAS_STATUS_ALLOC_FAILED (3).
  bool outOfMemory() const;

private:
  std::string api_, call_;
  int code_ = 0;
};

/// Throws GpuError when `status` (a cudaError_t) is not cudaSuccess. Clears the runtime's
/// last-error state first so a later call does not see a stale error.
void checkCuda(int status, const char* call);
/// Throws GpuError when `status` (a cublasStatus_t) is not CUBLAS_STATUS_SUCCESS.
void checkLt(int status, const char* call);
/// "CUBLAS_STATUS_NOT_SUPPORTED (15)" (works without a GPU).
std::string ltStatusName(int status);
/// "cudaErrorInsufficientDriver (35): CUDA driver version is insufficient ..."
std::string cudaStatusName(int status);

} // namespace fp8lab::gpu

#define FP8LAB_CUDA_CHECK(expr) ::fp8lab::gpu::checkCuda(static_cast<int>(expr), #expr)
#define FP8LAB_LT_CHECK(expr) ::fp8lab::gpu::checkLt(static_cast<int>(expr), #expr)

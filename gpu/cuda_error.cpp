#include "cuda_error.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>

namespace fp8lab::gpu {

bool GpuError::outOfMemory() const {
  return (api_ == "cuda" && code_ == static_cast<int>(cudaErrorMemoryAllocation)) ||
         (api_ == "cublasLt" && code_ == static_cast<int>(CUBLAS_STATUS_ALLOC_FAILED));
}

std::string ltStatusName(int status) {
  const char* n = cublasLtGetStatusName(static_cast<cublasStatus_t>(status));
  return std::string(n ? n : "unknown cublasStatus_t") + " (" + std::to_string(status) + ")";
}

std::string cudaStatusName(int status) {
  const auto e = static_cast<cudaError_t>(status);
  return std::string(cudaGetErrorName(e)) + " (" + std::to_string(status) + "): " + cudaGetErrorString(e);
}

void checkCuda(int status, const char* call) {
  if (status == static_cast<int>(cudaSuccess)) return;
  cudaGetLastError(); // clear the non-sticky error state
  throw GpuError("cuda", call, status, std::string(call) + " failed: " + cudaStatusName(status));
}

void checkLt(int status, const char* call) {
  if (status == static_cast<int>(CUBLAS_STATUS_SUCCESS)) return;
  throw GpuError("cublasLt", call, status, std::string(call) + " failed: " + ltStatusName(status));
}

} // namespace fp8lab::gpu

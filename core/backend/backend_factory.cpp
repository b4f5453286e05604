#include "backend/backend_factory.h"

#ifdef FP8LAB_HAVE_CUDA
#include "cuda_gemm_backend.h"
#include "device_probe.h"
#endif

namespace fp8lab {

bool buildHasCuda() {
#ifdef FP8LAB_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::unique_ptr<FallbackGemmBackend> makeGemmBackend(BackendRequest request, std::string* error) {
  if (request == BackendRequest::Cpu)
    return std::make_unique<FallbackGemmBackend>(nullptr, makeCpuGemmBackend(), request);
#ifdef FP8LAB_HAVE_CUDA
  std::string why;
  std::unique_ptr<GemmBackend> gpu = gpu::makeCudaGemmBackend(&why);
  if (gpu) {
    auto b = std::make_unique<FallbackGemmBackend>(std::move(gpu), makeCpuGemmBackend(), request);
    const gpu::ProbeResult pr = gpu::probeDevices();
    b->cuda_versions = {pr.runtime_version, pr.driver_version, static_cast<int64_t>(pr.cublaslt_version)};
    return b;
  }
#else
  const std::string why = "this build has no CUDA support (configure with CUDA to use the GPU backend)";
#endif
  if (request == BackendRequest::Gpu) {
    if (error) *error = why;
    return nullptr;
  }
  return std::make_unique<FallbackGemmBackend>(nullptr, makeCpuGemmBackend(), request, why);
}

} // namespace fp8lab

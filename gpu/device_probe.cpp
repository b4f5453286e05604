#include "device_probe.h"

#include "cublaslt_lazy.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace fp8lab::gpu {

std::string ProbeResult::summary() const {
  if (hasDevice()) {
    const auto& d = devices.front();
    return d.name + " (sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + ", " +
           std::to_string(d.sm_count) + " SMs, " + std::to_string(d.total_memory_bytes >> 20) + " MiB)";
  }
  return "no CUDA device (" + reason + ")";
}

ProbeResult probeDevices() {
  ProbeResult r;
  cudaRuntimeGetVersion(&r.runtime_version);
  cudaDriverGetVersion(&r.driver_version);
  int count = 0; // the runtime leaves it unwritten on error
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    r.error_code = static_cast<int>(err);
    r.reason = std::string("error ") + std::to_string(static_cast<int>(err)) + " " + cudaGetErrorName(err) + ": " +
               cudaGetErrorString(err);
    cudaGetLastError(); // clear the sticky error state
    return r;
  }
  if (count == 0) {
    r.reason = "the runtime found 0 devices";
    return r;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    const cudaError_t e = cudaGetDeviceProperties(&p, i);
    if (e != cudaSuccess) {
      r.error_code = static_cast<int>(e);
      r.reason = std::string("cudaGetDeviceProperties: ") + cudaGetErrorName(e);
      continue;
    }
    DeviceInfo d;
    d.index = i;
    d.name = p.name;
    d.sm_count = p.multiProcessorCount;
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.total_memory_bytes = p.totalGlobalMem;
    if (cudaSetDevice(i) == cudaSuccess) cudaMemGetInfo(&d.free_memory_bytes, &d.total_memory_bytes);
    r.devices.push_back(d);
  }
  // cuBLASLt is loaded only now that there is a device to run it on (cublaslt_lazy.h).
  if (!r.devices.empty()) {
    if (std::string why; !cublasLtAvailable(&why)) {
      r.devices.clear();
      r.reason = why;
      return r;
    }
    r.cublaslt_version = cublasLtGetVersion();
  }
  return r;
}

} // namespace fp8lab::gpu

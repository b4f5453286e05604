// fp8lab-gpu-probe: prints the CUDA devices, or "no CUDA device" with the runtime's reason.
// Exit status 0 either way (absence of a GPU is a normal state); 1 only on bad arguments.
#include "cublaslt_lazy.h"
#include "device_probe.h"

#include <cublasLt.h>

#include <string>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf("Usage: fp8lab-gpu-probe\nPrints the CUDA devices and the runtime, driver and cuBLASLt versions.\n");
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("fp8lab-gpu-probe " FP8LAB_VERSION "\n");
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "fp8lab-gpu-probe: unknown argument '%s'\n", argv[1]);
    return 1;
  }
  const auto r = fp8lab::gpu::probeDevices();
  std::string lt_why;
  const bool lt = fp8lab::gpu::cublasLtAvailable(&lt_why);
  std::printf("CUDA runtime %d, driver %d, cuBLASLt %zu\n", r.runtime_version, r.driver_version,
              lt ? cublasLtGetVersion() : size_t(0));
  if (!lt) std::printf("%s\n", lt_why.c_str());
  if (!r.hasDevice()) {
    std::printf("no CUDA device: %s\n", r.reason.c_str());
    return 0;
  }
  for (const auto& d : r.devices)
    std::printf("device %d: %s, compute capability %d.%d, %d SMs, %zu MiB (%zu MiB free)\n", d.index, d.name.c_str(),
                d.cc_major, d.cc_minor, d.sm_count, d.total_memory_bytes >> 20, d.free_memory_bytes >> 20);
  return 0;
}

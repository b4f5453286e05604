// fp8lab-gpu-enumerate: asks this GPU's cuBLASLt heuristic (no kernels) which FP8 GEMM
// combinations of input type × output type × scale-mode pairing × FAST_ACCUM it supports.
// Usage: fp8lab-gpu-enumerate [--csv FILE] [--size N]
// Exit status: 0 (printed), 77 when no GPU is present (the message says why), 1 on errors.
#include "device_probe.h"
#include "cuda_gemm_backend.h"
#include "lt_support.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  std::string csv;
  long size = 1024;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
      csv = argv[++i];
    } else if (std::strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
      size = std::strtol(argv[++i], nullptr, 10);
      if (size < 128 || size % 128) {
        std::fprintf(stderr, "fp8lab-gpu-enumerate: --size must be a positive multiple of 128\n");
        return 1;
      }
    } else {
      std::fprintf(stderr, "Usage: fp8lab-gpu-enumerate [--csv FILE] [--size N]\n");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 1;
    }
  }
  const auto probe = fp8lab::gpu::probeDevices();
  std::printf("%s\n%s\n", probe.summary().c_str(), fp8lab::gpu::versionsSummary(probe).c_str());
  if (!probe.hasDevice()) {
    std::printf("SKIP: no CUDA device, nothing to enumerate\n");
    return 77;
  }
  try {
    fp8lab::gpu::LtRunner runner;
    const auto rows = fp8lab::gpu::enumerateLtSupport(runner, size, size, size);
    std::fputs(fp8lab::gpu::formatSupportTable(rows).c_str(), stdout);
    if (!csv.empty()) {
      FILE* f = std::fopen(csv.c_str(), "w");
      if (!f) {
        std::fprintf(stderr, "fp8lab-gpu-enumerate: cannot write %s\n", csv.c_str());
        return 1;
      }
      const std::string text = fp8lab::gpu::supportCsv(rows);
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fp8lab-gpu-enumerate: %s\n", e.what());
    return 1;
  }
  return 0;
}

// FP8 Lab tests — a kernel-equality suite run at a CPU level the machine lacks (FP8LAB_CPU above
// what cpuid reports) says so and exits with CTest's skip code 77 (SKIP_RETURN_CODE in
// tests/CMakeLists.txt) instead of failing or executing instructions the CPU does not have.
#pragma once

#include "common/cpu_level.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace fp8lab::test {

/// Call first in initTestCase(): exits 77 with "SKIP: …" on stdout when FP8LAB_CPU names a level
/// above this CPU's; a value that is no level at all is an error (exit 2), not a skip.
inline void skipWhenCpuLevelRefused() {
  const std::string why = cpuLevelEnvironmentError();
  if (why.empty()) return;
  const char* env = std::getenv("FP8LAB_CPU");
  if (!env || !parseCpuLevel(env)) {
    std::printf("FAIL: %s\n", why.c_str());
    std::fflush(stdout);
    std::exit(2);
  }
  std::printf("SKIP: %s (this machine's CPU level: %s)\n", why.c_str(), toString(cpuLevelDetected()));
  std::fflush(stdout);
  std::exit(77);
}

} // namespace fp8lab::test

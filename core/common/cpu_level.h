// FP8 Lab — the instruction-set level the hand-written CPU kernels may use, detected once per
// process and optionally forced down with the environment variable FP8LAB_CPU.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fp8lab {

/// The levels of the CPU kernels, each a superset of the one before. Every kernel gives the same
/// bits at every level (the kernel-equality suites run at each level the machine has).
enum class CpuLevel {
  Baseline, ///< x86-64 SSE2 or any other architecture: the portable (auto-vectorised) kernels
  Avx2,     ///< AVX2 + FMA (Haswell and later, Zen): the 256-bit kernels
  Avx512,   ///< AVX-512 F + BW + VL (+ AVX2, FMA): the 512-bit kernels; AVX512-BF16 where present
};

/// "baseline", "avx2", "avx512".
const char* toString(CpuLevel level);

/// "baseline" / "avx2" / "avx512" (case-insensitive), else nullopt.
std::optional<CpuLevel> parseCpuLevel(std::string_view s);

/// The highest level this CPU executes (cpuid through __builtin_cpu_supports; Baseline off x86-64).
CpuLevel cpuLevelDetected();

/// True when this CPU also executes AVX512-BF16 (detected; independent of FP8LAB_CPU).
bool cpuDetectedAvx512Bf16();

/// The level the kernels use: cpuLevelDetected(), or the level FP8LAB_CPU names when it is set and
/// not empty. Read once per process. Throws std::runtime_error, with a message naming the value,
/// the levels and what this CPU has, when FP8LAB_CPU is not a level or names one above the CPU's
/// (running AVX-512 code on a CPU without it would end the process with SIGILL); the front ends
/// call checkCpuLevelEnvironment() first so that this is said once, before any work.
CpuLevel cpuLevel();

/// "" when FP8LAB_CPU is unset or valid for this CPU, else the message cpuLevel() throws.
std::string cpuLevelEnvironmentError();

/// Human-readable: "avx2 (forced by FP8LAB_CPU; this CPU has avx512)" or "avx512".
std::string cpuLevelDescription();

} // namespace fp8lab

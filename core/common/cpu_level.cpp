// FP8 Lab — CPU instruction-set level: detection and the FP8LAB_CPU override (cpu_level.h).
#include "common/cpu_level.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace fp8lab {

const char* toString(CpuLevel level) {
  switch (level) {
  case CpuLevel::Baseline:
    return "baseline";
  case CpuLevel::Avx2:
    return "avx2";
  case CpuLevel::Avx512:
    return "avx512";
  }
  return "baseline";
}

std::optional<CpuLevel> parseCpuLevel(std::string_view s) {
  std::string t(s);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (CpuLevel l : {CpuLevel::Baseline, CpuLevel::Avx2, CpuLevel::Avx512})
    if (t == toString(l)) return l;
  return std::nullopt;
}

CpuLevel cpuLevelDetected() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const CpuLevel level = [] {
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
      return CpuLevel::Avx512;
    return avx2 ? CpuLevel::Avx2 : CpuLevel::Baseline;
  }();
  return level;
#else
  return CpuLevel::Baseline;
#endif
}

bool cpuDetectedAvx512Bf16() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = [] {
    __builtin_cpu_init();
    return cpuLevelDetected() == CpuLevel::Avx512 && __builtin_cpu_supports("avx512bf16");
  }();
  return has;
#else
  return false;
#endif
}

namespace {

struct Resolved {
  CpuLevel level = CpuLevel::Baseline;
  bool forced = false;
  std::string error;
};

const Resolved& resolved() {
  static const Resolved r = [] {
    Resolved out;
    out.level = cpuLevelDetected();
    const char* env = std::getenv("FP8LAB_CPU");
    if (!env || !*env) return out;
    const std::optional<CpuLevel> want = parseCpuLevel(env);
    if (!want) {
      out.error = std::string("FP8LAB_CPU='") + env + "' is not a CPU level: use baseline, avx2 or avx512";
      return out;
    }
    if (*want > out.level) {
      out.error = std::string("FP8LAB_CPU=") + toString(*want) + " asks for more than this CPU executes (" +
                  toString(out.level) + "): use " +
                  (out.level == CpuLevel::Baseline ? "baseline"
                   : out.level == CpuLevel::Avx2   ? "baseline or avx2"
                                                   : "baseline, avx2 or avx512");
      return out;
    }
    out.forced = *want != out.level;
    out.level = *want;
    return out;
  }();
  return r;
}

} // namespace

CpuLevel cpuLevel() {
  const Resolved& r = resolved();
  if (!r.error.empty()) throw std::runtime_error(r.error);
  return r.level;
}

std::string cpuLevelEnvironmentError() {
  return resolved().error;
}

std::string cpuLevelDescription() {
  const Resolved& r = resolved();
  if (!r.error.empty()) return std::string(toString(cpuLevelDetected())) + " (FP8LAB_CPU refused: " + r.error + ")";
  if (!r.forced) return toString(r.level);
  return std::string(toString(r.level)) + " (forced by FP8LAB_CPU; this CPU has " + toString(cpuLevelDetected()) + ")";
}

} // namespace fp8lab

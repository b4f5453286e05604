// FP8 Lab GPU checks — a minimal harness for plain C++ check programs (the GPU machines have
// no Qt, so these are not Qt Test suites). Exit codes: 0 passed, 1 failed, 77 skipped (CTest
// SKIP_RETURN_CODE; printed with the reason).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace fp8lab::checks {

inline constexpr int kSkip = 77;

struct Checker {
  int checks = 0;
  int failures = 0;
  const char* program = "";
  explicit Checker(const char* prog) : program(prog) {}
  /// Records one check; prints a FAIL line with `what` when !ok. Returns ok.
  bool expect(bool ok, const std::string& what) {
    ++checks;
    if (!ok) {
      ++failures;
      if (failures <= 50)
        std::printf("FAIL %s: %s\n", program, what.c_str());
      else if (failures == 51)
        std::printf("FAIL %s: (further failures not printed)\n", program);
    }
    return ok;
  }
  int finish() const {
    std::printf("%s: %d checks, %d failed -> %s\n", program, checks, failures, failures ? "FAILED" : "PASSED");
    return failures ? 1 : 0;
  }
};

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
/// Bit equality, except that any two NaNs are equal.
inline bool sameFloat(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || bitsOf(a) == bitsOf(b);
}
inline std::string hexf(float f) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g (0x%08x)", static_cast<double>(f), bitsOf(f));
  return b;
}
/// Directory for result and dump files: $OUT if set, else the current directory.
inline std::string outDir() {
  const char* o = std::getenv("OUT");
  return (o && *o) ? std::string(o) : std::string(".");
}

} // namespace fp8lab::checks

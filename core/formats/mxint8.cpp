#include "formats/mxint8.h"

#include <bit>
#include <cmath>
#include <cstdint>

namespace fp8lab::mxint8 {

namespace {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define FP8LAB_MXINT8_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FP8LAB_MXINT8_CLONES
#endif

/// 1.5 · 2^23: for |t| ≤ 2^22, (t + kRound) − kRound is t rounded to an integer by the FPU's
/// round-to-nearest-even (no fast-math in this project, so the two operations stay as written).
constexpr float kRound = 12582912.0f;
} // namespace

uint8_t encode(double x) {
  double t = x * 64.0; // exact: a power-of-two scaling (overflow to ±inf saturates below)
  if (std::isnan(t)) return static_cast<uint8_t>(kMaxCode);
  if (t > kMaxCode) t = kMaxCode;
  if (t < -kMaxCode) t = -kMaxCode;
  const double r = std::nearbyint(t); // default rounding: to nearest, ties to even
  return static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(r)));
}

double decode(uint8_t code) {
  return std::ldexp(static_cast<double>(static_cast<int8_t>(code)), kImplicitExponent);
}

FP8LAB_MXINT8_CLONES void encodeBulk(const float* __restrict in, uint8_t* __restrict out, std::size_t n, float s) {
  // Integer selects on the bit pattern (no float compares, so the loop has no control flow and
  // vectorises): magnitudes above 127 (inf and NaN too, whose bits are larger) become 127; the
  // sign is applied afterwards, and NaN is treated as positive.
  constexpr uint32_t kLimBits = 0x42FE0000u; // 127.0f
  for (std::size_t i = 0; i < n; ++i) {
    const float y = in[i] * s;                             // one float32 rounding, as Format::encodeBulk
    const uint32_t u = std::bit_cast<uint32_t>(y * 64.0f); // exact scaling (or ±inf)
    const uint32_t a = u & 0x7FFFFFFFu;
    const uint32_t neg = (u >> 31) & static_cast<uint32_t>(a <= 0x7F800000u);
    const float m = std::bit_cast<float>(a < kLimBits ? a : kLimBits);
    const uint32_t k = static_cast<uint32_t>(static_cast<int32_t>((m + kRound) - kRound)); // RNE, 0..127
    out[i] = static_cast<uint8_t>((k ^ (0u - neg)) + neg); // two's complement negation when neg
  }
}

void decodeBulk(const uint8_t* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<int8_t>(in[i])) * 0.015625f;
}

} // namespace fp8lab::mxint8

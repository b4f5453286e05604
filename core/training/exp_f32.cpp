// FP8 Lab — e^x in float32 (see exp_f32.h).
#include "training/exp_f32.h"

#include "common/cpu_level.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fp8lab {

namespace {

constexpr int kTableBits = 5;
constexpr int kTableSize = 1 << kTableBits;

// kPow2Table[i] = bits(2^(i/32) rounded to the nearest float64) − (i << 47): adding k << 47 for
// k ≡ i (mod 32) gives 2^(i/32) with ⌊k/32⌋ added to the exponent field, i.e. 2^(k/32). The values
// are those of optimized-routines' exp2f_data; test_exp_f32 recomputes each 2^(i/32) in long
// double.
constexpr uint64_t kPow2Table[kTableSize] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

// 32/ln 2, the rounding shift 1.5·2^52, and the cubic's coefficients for r in units of 1/32
// (optimized-routines' poly_scaled: the coefficients of 2^r's minimax cubic divided by 32^3, 32^2,
// 32 — exact, powers of two).
constexpr double kInvLn2N = 0x1.71547652b82fep+0 * kTableSize;
constexpr double kShift = 0x1.8p+52;
constexpr double kC0 = 0x1.c6af84b912394p-5 / kTableSize / kTableSize / kTableSize;
constexpr double kC1 = 0x1.ebfce50fac4f3p-3 / kTableSize / kTableSize;
constexpr double kC2 = 0x1.62e42ff0c52d6p-1 / kTableSize;

// Bits of 88.0f: |x| at or above it (or NaN) takes the special-case path.
constexpr uint32_t kAbsLimit = 0x42b00000u;

/// The main path for |x| < 88 (and the parts of the special range that use it).
inline float expCore(float x) {
  const double xd = x;
  const double z = kInvLn2N * xd;
  double kd = z + kShift;
  const uint64_t ki = std::bit_cast<uint64_t>(kd);
  kd -= kShift;
  const double r = std::fma(kInvLn2N, xd, -kd);
  const double s = std::bit_cast<double>(kPow2Table[ki % kTableSize] + (ki << (52 - kTableBits)));
  const double p = std::fma(kC0, r, kC1);
  const double r2 = r * r;
  double y = std::fma(kC2, r, 1.0);
  y = std::fma(p, r2, y);
  return static_cast<float>(y * s);
}

float expSpecial(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if (bits == 0xff800000u) return 0.0f;                  // −∞
  if ((bits & 0x7fffffffu) >= 0x7f800000u) return x + x; // +∞, NaN (quieted)
  if (x > 0x1.62e42ep6f) return std::numeric_limits<float>::infinity();
  if (x < -0x1.9fe368p6f) return 0.0f;
  if (x < -0x1.9d1d9ep6f) return 0x1p-149f;
  return expCore(x);
}

#if defined(__GNUC__) && defined(__x86_64__)
/// Four lanes of expCore: the same float64 operations, the three fused multiply-adds as FMA
/// instructions, the table read by a gather.
__attribute__((target("avx2,fma"))) inline __m128 expCore4(__m128 x) {
  const __m256d xd = _mm256_cvtps_pd(x);
  const __m256d shift = _mm256_set1_pd(kShift);
  const __m256d z = _mm256_mul_pd(_mm256_set1_pd(kInvLn2N), xd);
  __m256d kd = _mm256_add_pd(z, shift);
  const __m256i ki = _mm256_castpd_si256(kd);
  kd = _mm256_sub_pd(kd, shift);
  const __m256d r = _mm256_fmsub_pd(_mm256_set1_pd(kInvLn2N), xd, kd);
  const __m256i tab = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kPow2Table),
                                             _mm256_and_si256(ki, _mm256_set1_epi64x(kTableSize - 1)), 8);
  const __m256d s = _mm256_castsi256_pd(_mm256_add_epi64(tab, _mm256_slli_epi64(ki, 52 - kTableBits)));
  const __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(kC0), r, _mm256_set1_pd(kC1));
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d y = _mm256_fmadd_pd(_mm256_set1_pd(kC2), r, _mm256_set1_pd(1.0));
  y = _mm256_fmadd_pd(p, r2, y);
  return _mm256_cvtpd_ps(_mm256_mul_pd(y, s));
}

__attribute__((target("avx2,fma"))) void expBulkAvx2(const float* x, float* y, int64_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i limit = _mm256_set1_epi32(static_cast<int>(kAbsLimit - 1));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256i special =
        _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_castps_si256(v), abs_mask), limit); // |x| ≥ 88 or NaN
    const __m128 lo = expCore4(_mm256_castps256_ps128(v)), hi = expCore4(_mm256_extractf128_ps(v, 1));
    const int mask = _mm256_movemask_ps(_mm256_castsi256_ps(special));
    if (mask == 0) {
      _mm256_storeu_ps(y + i, _mm256_set_m128(hi, lo));
      continue;
    }
    alignas(32) float in[8], out[8];
    _mm256_store_ps(in, v);
    _mm256_store_ps(out, _mm256_set_m128(hi, lo));
    for (int l = 0; l < 8; ++l)
      if (mask >> l & 1) out[l] = expSpecial(in[l]);
    std::memcpy(y + i, out, sizeof(out));
  }
  for (; i < n; ++i) y[i] = expF32(x[i]);
}
#endif

} // namespace

float expF32(float x) {
  if ((std::bit_cast<uint32_t>(x) & 0x7fffffffu) >= kAbsLimit) return expSpecial(x);
  return expCore(x);
}

void expF32(const float* x, float* y, int64_t n) {
#if defined(__GNUC__) && defined(__x86_64__)
  static const CpuLevel level = cpuLevel();
  if (level != CpuLevel::Baseline) return expBulkAvx2(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = expF32(x[i]);
}

} // namespace fp8lab

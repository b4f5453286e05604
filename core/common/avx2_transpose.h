// FP8 Lab — an 8 × 8 float32 transpose in AVX registers, shared by the vector kernels that pack or
// transpose float32 data (training/dense.cpp, gemm/gemm_avx2.cpp).
#pragma once

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

namespace fp8lab {

/// r[i] lane j ↔ r[j] lane i for i, j < 8: unpack pairs of rows, shuffle pairs of pairs, then swap
/// 128-bit halves. Pure data movement (bits, NaN payloads and −0 kept). For callers built for AVX
/// or above.
__attribute__((target("avx"), always_inline)) inline void transpose8x8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  __m256 u[8];
  for (int h = 0; h < 2; ++h)
    for (int q = 0; q < 2; ++q) {
      const __m256 lo = t[4 * h + q], hi = t[4 * h + 2 + q];
      u[4 * h + 2 * q] = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
      u[4 * h + 2 * q + 1] = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
    }
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
    r[c + 4] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
  }
}

} // namespace fp8lab
#endif

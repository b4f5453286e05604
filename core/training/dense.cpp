// FP8 Lab — float32 dense kernels (see dense.h).
#include "training/dense.h"

#include "common/avx2_transpose.h"
#include "common/cpu_level.h"
#include "common/worker_pool.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fp8lab {

namespace {

// Rows [r0, r1) of C. Four rows at a time share each loaded row of B; the inner loop over N is
// a contiguous axpy the compiler vectorises. Each C element is summed k = 0, 1, ... in float32,
// one rounded multiply and one rounded add per term (FMA contraction switched off), so the
// AVX-512 / AVX2 / baseline clones give identical bits on every x86-64 machine.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#endif
void matmulRows(const float* a, const float* b, float* c, int64_t r0, int64_t r1, int64_t k, int64_t n,
                bool accumulate, int64_t ar, int64_t ak) {
  if (!accumulate) std::memset(c + r0 * n, 0, static_cast<size_t>((r1 - r0) * n) * sizeof(float));
  int64_t i = r0;
  for (; i + 4 <= r1; i += 4) {
    float* __restrict c0 = c + i * n;
    float* __restrict c1 = c0 + n;
    float* __restrict c2 = c1 + n;
    float* __restrict c3 = c2 + n;
    const float* a0 = a + i * ar;
    for (int64_t p = 0; p < k; ++p) {
      const float* __restrict bp = b + p * n;
      const float x0 = a0[p * ak], x1 = a0[ar + p * ak], x2 = a0[2 * ar + p * ak], x3 = a0[3 * ar + p * ak];
      for (int64_t j = 0; j < n; ++j) {
        const float bv = bp[j];
        c0[j] += x0 * bv;
        c1[j] += x1 * bv;
        c2[j] += x2 * bv;
        c3[j] += x3 * bv;
      }
    }
  }
  for (; i < r1; ++i) {
    float* __restrict ci = c + i * n;
    for (int64_t p = 0; p < k; ++p) {
      const float* __restrict bp = b + p * n;
      const float x = a[i * ar + p * ak];
      for (int64_t j = 0; j < n; ++j) ci[j] += x * bp[j];
    }
  }
}

#if defined(__GNUC__) && defined(__x86_64__)
// Register-blocked kernels: a tile of up to 8 rows × 32 columns (AVX-512) or 6 × 16 (AVX2) of C
// stays in registers over a chunk of K, instead of matmulRows' load and store of C at every k.
// Each element is still summed k = 0, 1, ... from +0 (or from C's value when accumulating) with
// one rounded multiply and one rounded add per term — the file is built with -ffp-contract=off,
// so the mul and add intrinsics are never fused — which gives matmulRows' bits. A chunk of K
// (kDenseKc) ends with the partial sums stored to C and the next chunk starts from them: a float32
// store and load are exact, so chunking does not change a bit. Loop order per chunk: a 16- or
// 32-column panel of B (kDenseKc × 64 or 128 bytes, in L1) against every row tile of the band.
constexpr int64_t kDenseKc = 256;

template <int Rows>
__attribute__((target("avx512f"))) void tileAvx512(const float* a, const float* b, float* c, int64_t i, int64_t j,
                                                   int64_t p0, int64_t p1, int64_t n, bool from_c, __mmask16 m0,
                                                   __mmask16 m1, int64_t ar, int64_t ak) {
  __m512 acc[Rows][2];
  for (int r = 0; r < Rows; ++r) {
    float* cr = c + (i + r) * n + j;
    acc[r][0] = from_c ? _mm512_maskz_loadu_ps(m0, cr) : _mm512_setzero_ps();
    acc[r][1] = from_c ? _mm512_maskz_loadu_ps(m1, cr + 16) : _mm512_setzero_ps();
  }
  const float* ai = a + i * ar;
  for (int64_t p = p0; p < p1; ++p) {
    const float* bp = b + p * n + j;
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, bp), b1 = _mm512_maskz_loadu_ps(m1, bp + 16);
    for (int r = 0; r < Rows; ++r) {
      const __m512 x = _mm512_set1_ps(ai[r * ar + p * ak]);
      acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_mul_ps(x, b0));
      acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_mul_ps(x, b1));
    }
  }
  for (int r = 0; r < Rows; ++r) {
    float* cr = c + (i + r) * n + j;
    _mm512_mask_storeu_ps(cr, m0, acc[r][0]);
    _mm512_mask_storeu_ps(cr + 16, m1, acc[r][1]);
  }
}

__attribute__((target("avx512f"))) void matmulRowsAvx512(const float* a, const float* b, float* c, int64_t r0,
                                                         int64_t r1, int64_t k, int64_t n, bool accumulate, int64_t ar,
                                                         int64_t ak) {
  constexpr int64_t kRows = 8;
  for (int64_t p0 = 0; p0 < std::max<int64_t>(k, 1); p0 += kDenseKc) {
    const int64_t p1 = std::min(k, p0 + kDenseKc);
    const bool from_c = accumulate || p0 > 0;
    for (int64_t j = 0; j < n; j += 32) {
      const int64_t left = n - j;
      const __mmask16 m0 = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
      const __mmask16 m1 = left >= 32 ? __mmask16(0xFFFF) : left > 16 ? __mmask16((1u << (left - 16)) - 1u) : 0;
      for (int64_t i = r0; i < r1; i += kRows) {
        switch (std::min(kRows, r1 - i)) {
#define FP8LAB_DENSE_TILE(R)                                                                                           \
  case R:                                                                                                              \
    tileAvx512<R>(a, b, c, i, j, p0, p1, n, from_c, m0, m1, ar, ak);                                                   \
    break;
          FP8LAB_DENSE_TILE(8)
          FP8LAB_DENSE_TILE(7)
          FP8LAB_DENSE_TILE(6)
          FP8LAB_DENSE_TILE(5)
          FP8LAB_DENSE_TILE(4)
          FP8LAB_DENSE_TILE(3)
          FP8LAB_DENSE_TILE(2)
          FP8LAB_DENSE_TILE(1)
#undef FP8LAB_DENSE_TILE
        }
      }
    }
  }
}

__attribute__((target("avx2"))) __m256i laneMaskAvx2(int64_t left) {
  alignas(32) int32_t m[8];
  for (int t = 0; t < 8; ++t) m[t] = t < left ? -1 : 0;
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(m));
}

template <bool Full> __attribute__((target("avx2"))) inline __m256 loadAvx2(const float* q, __m256i m) {
  if constexpr (Full)
    return _mm256_loadu_ps(q);
  else
    return _mm256_maskload_ps(q, m);
}

/// Full: all 16 columns of the tile exist (plain loads and stores); else the masks m0, m1 select
/// the columns left of n.
template <int Rows, bool Full>
__attribute__((target("avx2"))) void tileAvx2(const float* a, const float* b, float* c, int64_t i, int64_t j,
                                              int64_t p0, int64_t p1, int64_t n, bool from_c, __m256i m0, __m256i m1,
                                              int64_t ar, int64_t ak) {
  __m256 acc[Rows][2];
  for (int r = 0; r < Rows; ++r) {
    float* cr = c + (i + r) * n + j;
    acc[r][0] = from_c ? loadAvx2<Full>(cr, m0) : _mm256_setzero_ps();
    acc[r][1] = from_c ? loadAvx2<Full>(cr + 8, m1) : _mm256_setzero_ps();
  }
  const float* ai = a + i * ar;
  for (int64_t p = p0; p < p1; ++p) {
    const float* bp = b + p * n + j;
    const __m256 b0 = loadAvx2<Full>(bp, m0), b1 = loadAvx2<Full>(bp + 8, m1);
    for (int r = 0; r < Rows; ++r) {
      const __m256 x = _mm256_broadcast_ss(ai + r * ar + p * ak);
      acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_mul_ps(x, b0));
      acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_mul_ps(x, b1));
    }
  }
  for (int r = 0; r < Rows; ++r) {
    float* cr = c + (i + r) * n + j;
    if constexpr (Full) {
      _mm256_storeu_ps(cr, acc[r][0]);
      _mm256_storeu_ps(cr + 8, acc[r][1]);
    } else {
      _mm256_maskstore_ps(cr, m0, acc[r][0]);
      _mm256_maskstore_ps(cr + 8, m1, acc[r][1]);
    }
  }
}

__attribute__((target("avx2"))) void matmulRowsAvx2(const float* a, const float* b, float* c, int64_t r0, int64_t r1,
                                                    int64_t k, int64_t n, bool accumulate, int64_t ar, int64_t ak) {
  constexpr int64_t kRows = 6;
  for (int64_t p0 = 0; p0 < std::max<int64_t>(k, 1); p0 += kDenseKc) {
    const int64_t p1 = std::min(k, p0 + kDenseKc);
    const bool from_c = accumulate || p0 > 0;
    for (int64_t j = 0; j < n; j += 16) {
      const bool full = n - j >= 16;
      const __m256i m0 = laneMaskAvx2(n - j), m1 = laneMaskAvx2(n - j - 8);
      for (int64_t i = r0; i < r1; i += kRows) {
#define FP8LAB_DENSE_TILE(R)                                                                                           \
  case R:                                                                                                              \
    if (full)                                                                                                          \
      tileAvx2<R, true>(a, b, c, i, j, p0, p1, n, from_c, m0, m1, ar, ak);                                             \
    else                                                                                                               \
      tileAvx2<R, false>(a, b, c, i, j, p0, p1, n, from_c, m0, m1, ar, ak);                                            \
    break;
        switch (std::min(kRows, r1 - i)) {
          FP8LAB_DENSE_TILE(6)
          FP8LAB_DENSE_TILE(5)
          FP8LAB_DENSE_TILE(4)
          FP8LAB_DENSE_TILE(3)
          FP8LAB_DENSE_TILE(2)
          FP8LAB_DENSE_TILE(1)
        }
#undef FP8LAB_DENSE_TILE
      }
    }
  }
}
#endif

/// matmulRows at the CPU level the kernels use (cpu_level.h; FP8LAB_CPU forces it down).
/// Element (i, p) of A is a[i·ar + p·ak]: ar = K, ak = 1 for A [M, K]; ar = 1, ak = M for Aᵀ
/// stored [K, M].
void matmulRowsDispatch(const float* a, const float* b, float* c, int64_t r0, int64_t r1, int64_t k, int64_t n,
                        bool accumulate, int64_t ar, int64_t ak) {
#if defined(__GNUC__) && defined(__x86_64__)
  static const CpuLevel level = cpuLevel();
  if (level == CpuLevel::Avx512) return matmulRowsAvx512(a, b, c, r0, r1, k, n, accumulate, ar, ak);
  if (level == CpuLevel::Avx2) return matmulRowsAvx2(a, b, c, r0, r1, k, n, accumulate, ar, ak);
#endif
  matmulRows(a, b, c, r0, r1, k, n, accumulate, ar, ak);
}

void matmulStrided(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int threads,
                   bool accumulate, int64_t ar, int64_t ak) {
  const int t = std::min<int64_t>(resolveThreads(threads), std::max<int64_t>(1, m / 4));
  if (t <= 1 || m * k * n < 64 * 64 * 64) {
    matmulRowsDispatch(a, b, c, 0, m, k, n, accumulate, ar, ak);
    return;
  }
  // Row bands in multiples of 4 so every band but the last uses the 4-row kernel, taken by the
  // workers of the process-wide pool (common/worker_pool.h) as they come free.
  const int64_t band = ((m + t - 1) / t + 3) / 4 * 4;
  std::atomic<int64_t> next{0};
  runOnWorkers(t, [&](int) {
    for (int64_t r0; (r0 = next.fetch_add(band)) < m;)
      matmulRowsDispatch(a, b, c, r0, std::min(m, r0 + band), k, n, accumulate, ar, ak);
  });
}

} // namespace

void matmulF32(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int threads,
               bool accumulate) {
  matmulStrided(a, b, c, m, k, n, threads, accumulate, k, 1);
}

void matmulF32At(const float* at, const float* b, float* c, int64_t m, int64_t k, int64_t n, int threads,
                 bool accumulate) {
  matmulStrided(at, b, c, m, k, n, threads, accumulate, 1, m);
}

namespace {

#if defined(__GNUC__) && defined(__x86_64__)
/// out[8 columns × 8 rows] = in[8 × 8]ᵀ through registers.
__attribute__((target("avx2"))) inline void transpose8x8Avx2(const float* in, int64_t ld_in, float* out,
                                                             int64_t ld_out) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + i * ld_in);
  transpose8x8(r);
  for (int c = 0; c < 8; ++c) _mm256_storeu_ps(out + c * ld_out, r[c]);
}

__attribute__((target("avx2"))) void transposeAvx2(const float* in, float* out, int64_t m, int64_t n) {
  constexpr int64_t T = 32;
  for (int64_t i0 = 0; i0 < m; i0 += T)
    for (int64_t j0 = 0; j0 < n; j0 += T) {
      const int64_t i1 = std::min(m, i0 + T), j1 = std::min(n, j0 + T);
      int64_t i = i0;
      for (; i + 8 <= i1; i += 8) {
        int64_t j = j0;
        for (; j + 8 <= j1; j += 8) transpose8x8Avx2(in + i * n + j, n, out + j * m + i, m);
        for (int64_t ii = i; ii < i + 8; ++ii)
          for (int64_t jj = j; jj < j1; ++jj) out[jj * m + ii] = in[ii * n + jj];
      }
      for (; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) out[j * m + i] = in[i * n + j];
    }
}
#endif

} // namespace

void transposeF32(const float* in, float* out, int64_t m, int64_t n) {
#if defined(__GNUC__) && defined(__x86_64__)
  static const CpuLevel level = cpuLevel();
  if (level != CpuLevel::Baseline) return transposeAvx2(in, out, m, n);
#endif
  constexpr int64_t T = 32;
  for (int64_t i0 = 0; i0 < m; i0 += T)
    for (int64_t j0 = 0; j0 < n; j0 += T)
      for (int64_t i = i0; i < std::min(m, i0 + T); ++i)
        for (int64_t j = j0; j < std::min(n, j0 + T); ++j) out[j * m + i] = in[i * n + j];
}

} // namespace fp8lab

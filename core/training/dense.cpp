// FP8 Lab — float32 dense kernels (see dense.h).
#include "training/dense.h"

#include "common/worker_pool.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

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
                bool accumulate) {
  if (!accumulate) std::memset(c + r0 * n, 0, static_cast<size_t>((r1 - r0) * n) * sizeof(float));
  int64_t i = r0;
  for (; i + 4 <= r1; i += 4) {
    float* __restrict c0 = c + i * n;
    float* __restrict c1 = c0 + n;
    float* __restrict c2 = c1 + n;
    float* __restrict c3 = c2 + n;
    const float* a0 = a + i * k;
    for (int64_t p = 0; p < k; ++p) {
      const float* __restrict bp = b + p * n;
      const float x0 = a0[p], x1 = a0[k + p], x2 = a0[2 * k + p], x3 = a0[3 * k + p];
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
      const float x = a[i * k + p];
      for (int64_t j = 0; j < n; ++j) ci[j] += x * bp[j];
    }
  }
}

} // namespace

void matmulF32(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int threads,
               bool accumulate) {
  const int t = std::min<int64_t>(resolveThreads(threads), std::max<int64_t>(1, m / 4));
  if (t <= 1 || m * k * n < 64 * 64 * 64) {
    matmulRows(a, b, c, 0, m, k, n, accumulate);
    return;
  }
  // Row bands in multiples of 4 so every band but the last uses the 4-row kernel, taken by the
  // workers of the process-wide pool (common/worker_pool.h) as they come free.
  const int64_t band = ((m + t - 1) / t + 3) / 4 * 4;
  std::atomic<int64_t> next{0};
  runOnWorkers(t, [&](int) {
    for (int64_t r0; (r0 = next.fetch_add(band)) < m;)
      matmulRows(a, b, c, r0, std::min(m, r0 + band), k, n, accumulate);
  });
}

void transposeF32(const float* in, float* out, int64_t m, int64_t n) {
  constexpr int64_t T = 32;
  for (int64_t i0 = 0; i0 < m; i0 += T)
    for (int64_t j0 = 0; j0 < n; j0 += T)
      for (int64_t i = i0; i < std::min(m, i0 + T); ++i)
        for (int64_t j = j0; j < std::min(n, j0 + T); ++j) out[j * m + i] = in[i * n + j];
}

} // namespace fp8lab

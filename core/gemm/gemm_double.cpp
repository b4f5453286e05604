// FP8 Lab — the float64 GEMM behind the Exact model, the ideal reference and the quantized-exact
// reference, blocked for AVX-512.
//
// The same arithmetic as gemmDoublePortable (gemm_kernels.cpp), in the same order: per output
// element and window, the products a[m,k]·b[k,n] of float32 inputs, each exact in double (24 + 24
// significant bits ≤ 53), are added in ascending k, one double rounding per addition — here as
// fma(a, b, acc), which rounds a·b + acc once and therefore gives the bits of acc + a·b; a window's
// sum starts at +0 and is promoted as acc = fma(float64(sa)·float64(sb), partial, acc) (or
// acc + partial without scales). Only the blocking differs, so every result is bit-identical to the
// portable kernel (tests/core/gemm: test_gemm_double).
//
// Blocking (BLIS order): a job is a block of 128 rows × 256 columns; K is walked in chunks of ≤ 256
// elements that never cross a window; per chunk the job packs its B block as float64 panels
// [16 columns][chunk] (two cache lines per k) and its A block as float64 strips [8 rows][chunk];
// the 8 × 16 micro-tile keeps 16 zmm accumulators across the chunk (measured on Zen 4, one
// thread, 2048³: 38.6 GFLOP/s, against 36.1 with 128-element chunks and 32.9 with 128 × 128 jobs
// or 12-row tiles).
// Packing removes the 4·N-byte stride down B's columns (for N a multiple of 1024 every k of a
// column maps to the same L1 set and a new page) that kept the unpacked kernel waiting on memory.
#include "gemm/gemm_internal.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <stdexcept>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FP8LAB_X86 1
#include <immintrin.h>
// GCC 12 reports the undefined upper half _mm512_cvtps_pd starts from as "may be used
// uninitialized"; the instruction writes every lane.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace fp8lab::gemm_detail {

#if FP8LAB_X86

namespace {

constexpr int kMR = 8;       // rows per micro-tile
constexpr int kNR = 16;      // columns per micro-tile (two zmm of doubles)
constexpr int64_t kMC = 128; // rows per job
constexpr int64_t kNC = 256; // columns per job
constexpr int64_t kKC = 256; // elements of K per chunk

template <class T> struct Aligned {
  explicit Aligned(size_t n)
      : p(static_cast<T*>(::operator new(std::max<size_t>(n, 1) * sizeof(T), std::align_val_t(64)))) {}
  ~Aligned() { ::operator delete(p, std::align_val_t(64)); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  T* p;
};

struct Chunk {
  int64_t k0, k1, w;
  bool fresh, ends;
};

/// dst[0:MR, 0:16] (row stride ldd, columns masked by m0/m1) += A strip · B panel over kc
/// elements: ap = [kc][8] doubles, bp = [kc][16] floats.
template <int MR>
__attribute__((target("avx512f"))) void microKernel(double* dst, int64_t ldd, __mmask8 m0, __mmask8 m1,
                                                    const double* ap, const double* bp, int64_t kc) {
  __m512d acc[MR][2];
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = _mm512_maskz_loadu_pd(m0, dst + r * ldd);
    acc[r][1] = _mm512_maskz_loadu_pd(m1, dst + r * ldd + 8);
  }
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const __m512d b0 = _mm512_load_pd(bp);
    const __m512d b1 = _mm512_load_pd(bp + 8);
    for (int r = 0; r < MR; ++r) {
      const __m512d av = _mm512_set1_pd(ap[r]);
      acc[r][0] = _mm512_fmadd_pd(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_pd(av, b1, acc[r][1]);
    }
    ap += kMR;
    bp += kNR;
  }
  for (int r = 0; r < MR; ++r) {
    _mm512_mask_storeu_pd(dst + r * ldd, m0, acc[r][0]);
    _mm512_mask_storeu_pd(dst + r * ldd + 8, m1, acc[r][1]);
  }
}

using KernelFn = void (*)(double*, int64_t, __mmask8, __mmask8, const double*, const double*, int64_t);
const KernelFn kKernels[kMR + 1] = {nullptr,        microKernel<1>, microKernel<2>, microKernel<3>, microKernel<4>,
                                    microKernel<5>, microKernel<6>, microKernel<7>, microKernel<8>};

} // namespace

bool cpuHasAvx512F() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return has;
}

void gemmDoubleAvx512(const Plan& plan, const float* a, const float* b, double* c, int threads,
                      const ProgressFn& progress) {
  const int64_t M = plan.m, N = plan.n, K = plan.k;
  const bool direct = plan.windows.size() == 1 && !plan.scaled_promotion();
  std::vector<Chunk> chunks;
  for (size_t w = 0; w < plan.windows.size(); ++w) {
    const Window& win = plan.windows[w];
    for (int64_t k0 = win.k0; k0 < win.k1; k0 += kKC) {
      const int64_t k1 = std::min(win.k1, k0 + kKC);
      chunks.push_back({k0, k1, static_cast<int64_t>(w), k0 == win.k0, k1 == win.k1});
    }
  }
  const int64_t W = static_cast<int64_t>(plan.windows.size());
  const int64_t tm = (M + kMC - 1) / kMC, tn = (N + kNC - 1) / kNC;
  parallelJobs(tm * tn, threads, progress, "gemm", 0.0, 0.95, [&](int64_t job) {
    const int64_t i0 = (job / tn) * kMC, i1 = std::min(M, i0 + kMC);
    const int64_t n0 = (job % tn) * kNC, n1 = std::min(N, n0 + kNC);
    const int64_t rows = i1 - i0, cols = n1 - n0;
    const int64_t strips = (rows + kMR - 1) / kMR, panels = (cols + kNR - 1) / kNR;
    Aligned<double> ap(static_cast<size_t>(strips * kKC * kMR));
    Aligned<double> bp(static_cast<size_t>(panels * kKC * kNR));
    std::vector<double> part(direct ? 0 : static_cast<size_t>(rows * cols));
    for (const Chunk& ch : chunks) {
      const int64_t kc = ch.k1 - ch.k0;
      // A strips [strip][k][8] as double (rows past the block are 0).
      for (int64_t s = 0; s < strips; ++s) {
        double* d = ap.p + s * kKC * kMR;
        for (int r = 0; r < kMR; ++r) {
          const int64_t i = i0 + s * kMR + r;
          if (i >= i1) {
            for (int64_t k = 0; k < kc; ++k) d[k * kMR + r] = 0.0;
            continue;
          }
          const float* src = a + i * K + ch.k0;
          for (int64_t k = 0; k < kc; ++k) d[k * kMR + r] = static_cast<double>(src[k]);
        }
      }
      // B panels [panel][k][16] as float (columns past the block are 0).
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = b + (ch.k0 + k) * N + n0;
        for (int64_t p = 0; p < panels; ++p) {
          double* d = bp.p + (p * kKC + k) * kNR;
          const int64_t c0 = p * kNR, nc = std::min<int64_t>(kNR, cols - c0);
          for (int64_t cc = 0; cc < nc; ++cc) d[cc] = static_cast<double>(src[c0 + cc]);
          for (int64_t cc = nc; cc < kNR; ++cc) d[cc] = 0.0;
        }
      }
      if (!direct && ch.fresh) std::fill(part.begin(), part.end(), 0.0);
      double* base = direct ? c + i0 * N + n0 : part.data();
      const int64_t ldd = direct ? N : cols;
      for (int64_t p = 0; p < panels; ++p) {
        const int64_t c0 = p * kNR, nc = std::min<int64_t>(kNR, cols - c0);
        const __mmask8 m0 = static_cast<__mmask8>(nc >= 8 ? 0xFF : (1u << nc) - 1);
        const __mmask8 m1 = static_cast<__mmask8>(nc >= 16 ? 0xFF : nc <= 8 ? 0 : (1u << (nc - 8)) - 1);
        for (int64_t s = 0; s < strips; ++s) {
          const int mr = static_cast<int>(std::min<int64_t>(kMR, rows - s * kMR));
          kKernels[mr](base + s * kMR * ldd + c0, ldd, m0, m1, ap.p + s * kKC * kMR, bp.p + p * kKC * kNR, kc);
        }
      }
      if (!direct && ch.ends) {
        // Promote the window's partial sums: acc = fma(float64(sa)·float64(sb), partial, acc), or
        // acc + partial without scales (gemmDoublePortable's promoteRow).
        for (int64_t i = i0; i < i1; ++i) {
          double* crow = c + i * N + n0;
          const double* prow = part.data() + (i - i0) * cols;
          if (!plan.scaled_promotion()) {
            for (int64_t j = 0; j < cols; ++j) crow[j] = crow[j] + prow[j];
            continue;
          }
          const float sa = plan.a_varies ? plan.sa_w[static_cast<size_t>(i * W + ch.w)] : 1.0f;
          const float* sb = plan.b_varies ? plan.sb_w.data() + ch.w * N + n0 : nullptr;
          for (int64_t j = 0; j < cols; ++j)
            crow[j] = std::fma(sb ? static_cast<double>(sa) * static_cast<double>(sb[j]) : static_cast<double>(sa),
                               prow[j], crow[j]);
        }
      }
    }
  });
}

#else

bool cpuHasAvx512F() {
  return false;
}

void gemmDoubleAvx512(const Plan&, const float*, const float*, double*, int, const ProgressFn&) {
  throw std::logic_error("AVX-512 float64 kernel not compiled on this platform");
}

#endif

void gemmDouble(const Plan& plan, const float* a, const float* b, double* c, int threads, const ProgressFn& progress) {
  if (cpuHasAvx512F())
    gemmDoubleAvx512(plan, a, b, c, threads, progress);
  else
    gemmDoublePortable(plan, a, b, c, threads, progress);
}

} // namespace fp8lab::gemm_detail

// FP8 Lab — the float64 GEMM behind the Exact model, the ideal reference and the quantized-exact
// reference, blocked for AVX-512 and for AVX2 + FMA.
//
// The same arithmetic as gemmDoublePortable (gemm_kernels.cpp), in the same order: per output
// element and window, the products a[m,k]·b[k,n] of float32 inputs, each exact in double (24 + 24
// significant bits ≤ 53), are added in ascending k, one double rounding per addition — here as
// fma(a, b, acc), which rounds a·b + acc once and therefore gives the bits of acc + a·b; a window's
// sum starts at +0 and is promoted as acc = fma(float64(sa)·float64(sb), partial, acc) (or
// acc + partial without scales). Only the blocking differs, so every result is bit-identical to the
// portable kernel (tests/core/gemm: test_gemm_double).
//
// Blocking (BLIS order), the same driver for both instruction sets: columns in blocks of ≤ 1024;
// K in chunks of ≤ 256 elements that never cross a window. Per (column block, chunk) the B block
// is packed once, in parallel, as float64 panels [NR columns][chunk] shared by every row block;
// then row blocks of 128 run in parallel, each packing its A block as float64 strips [MR rows]
// [chunk] (an MR × MR transpose per step) and running an MR × NR micro-tile over each panel:
//   AVX-512: 8 × 16, 16 zmm accumulators;
//   AVX2:    4 × 12, 12 ymm accumulators + 3 B vectors + 1 broadcast (16 ymm registers).
// Operands come as float32 (the ideal reference) or as codes decoded through the format's table
// while packing (the quantized-exact reference and the Exact model: no decoded copy of A and B).
// Packing removes the 4·N-byte stride down B's columns (for N a multiple of 1024 every k of a
// column maps to the same L1 set and a new page) that kept the unpacked kernel waiting on memory.
// Measured on Zen 4, one thread, 2048³ (AVX-512): 38.6 GFLOP/s against 17.8 for the unpacked
// kernel; 128-element chunks, 12-row tiles or 128-row × 128-column blocks were each slower.
#include "common/cpu_level.h"
#include "gemm/gemm_internal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

constexpr int64_t kMC = 128;  // rows per job (a multiple of every MR)
constexpr int64_t kNC = 1024; // columns per packed B block
constexpr int64_t kKC = 256;  // elements of K per chunk

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

/// Where an operand's values come from: float32 values, or codes and the format's decode table.
struct Source {
  const float* values = nullptr; // row-major
  const uint8_t* codes = nullptr;
  const float* table = nullptr; // 256 entries when codes are given
  int64_t ld = 0;               // row stride
  float at(int64_t row, int64_t col) const { return values ? values[row * ld + col] : table[codes[row * ld + col]]; }
};

// ---- AVX-512: 8 × 16 micro-tiles --------------------------------------------------------------

struct Avx512 {
  static constexpr int MR = 8;  // rows per micro-tile
  static constexpr int NR = 16; // columns per micro-tile (two zmm of doubles)
  static void packA(const Source& a, int64_t i0, int64_t rows, int64_t k0, int64_t kc, double* dst);
  static void packB(const Source& b, int64_t n0, int64_t cols, int64_t k0, int64_t kbegin, int64_t kend, double* dst);
  static void tile(double* dst, int64_t ldd, int mr, int64_t nc, const double* ap, const double* bp, int64_t kc);
};

/// 8 values of row `row` from column `col` on (n ≤ 8 of them; the rest 0) as float32.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2"))) inline __m256 load8(const Source& s, int64_t row, int64_t col,
                                                                              int n) {
  const __mmask8 m = static_cast<__mmask8>(n >= 8 ? 0xFF : (1u << n) - 1);
  if (s.values) return _mm256_maskz_loadu_ps(m, s.values + row * s.ld + col);
  const __m128i c8 = _mm_maskz_loadu_epi8(m, s.codes + row * s.ld + col);
  const __m256i idx = _mm256_cvtepu8_epi32(c8);
  return _mm256_mmask_i32gather_ps(_mm256_setzero_ps(), m, idx, s.table, 4);
}

/// A block rows [i0, i0+rows) × K [k0, k0+kc) into strips [strip][k][8] of double (rows past
/// `rows` are 0): per strip and 8 k, eight rows of 8 values transposed into eight k of 8 rows.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2"))) void Avx512::packA(const Source& a, int64_t i0, int64_t rows,
                                                                             int64_t k0, int64_t kc, double* dst) {
  const int64_t strips = (rows + MR - 1) / MR;
  for (int64_t s = 0; s < strips; ++s) {
    double* d = dst + s * kKC * MR;
    for (int64_t k = 0; k < kc; k += 8) {
      const int n = static_cast<int>(std::min<int64_t>(8, kc - k));
      __m512d r[8];
      for (int i = 0; i < 8; ++i) {
        const int64_t row = s * MR + i;
        r[i] = row < rows ? _mm512_cvtps_pd(load8(a, i0 + row, k0 + k, n)) : _mm512_setzero_pd();
      }
      const __m512d t0 = _mm512_unpacklo_pd(r[0], r[1]), t1 = _mm512_unpackhi_pd(r[0], r[1]);
      const __m512d t2 = _mm512_unpacklo_pd(r[2], r[3]), t3 = _mm512_unpackhi_pd(r[2], r[3]);
      const __m512d t4 = _mm512_unpacklo_pd(r[4], r[5]), t5 = _mm512_unpackhi_pd(r[4], r[5]);
      const __m512d t6 = _mm512_unpacklo_pd(r[6], r[7]), t7 = _mm512_unpackhi_pd(r[6], r[7]);
      const __m512d u0 = _mm512_shuffle_f64x2(t0, t2, 0x88), u2 = _mm512_shuffle_f64x2(t0, t2, 0xdd);
      const __m512d u1 = _mm512_shuffle_f64x2(t1, t3, 0x88), u3 = _mm512_shuffle_f64x2(t1, t3, 0xdd);
      const __m512d u4 = _mm512_shuffle_f64x2(t4, t6, 0x88), u6 = _mm512_shuffle_f64x2(t4, t6, 0xdd);
      const __m512d u5 = _mm512_shuffle_f64x2(t5, t7, 0x88), u7 = _mm512_shuffle_f64x2(t5, t7, 0xdd);
      const __m512d v[8] = {_mm512_shuffle_f64x2(u0, u4, 0x88), _mm512_shuffle_f64x2(u1, u5, 0x88),
                            _mm512_shuffle_f64x2(u2, u6, 0x88), _mm512_shuffle_f64x2(u3, u7, 0x88),
                            _mm512_shuffle_f64x2(u0, u4, 0xdd), _mm512_shuffle_f64x2(u1, u5, 0xdd),
                            _mm512_shuffle_f64x2(u2, u6, 0xdd), _mm512_shuffle_f64x2(u3, u7, 0xdd)};
      for (int j = 0; j < n; ++j) _mm512_store_pd(d + (k + j) * MR, v[j]);
    }
  }
}

/// B rows [k0+k, …) of the columns [n0, n0+cols) into panels [panel][k][16] of double (columns
/// past `cols` are 0), for k in [kbegin, kend) of the chunk.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2"))) void
Avx512::packB(const Source& b, int64_t n0, int64_t cols, int64_t k0, int64_t kbegin, int64_t kend, double* dst) {
  const int64_t panels = (cols + NR - 1) / NR;
  for (int64_t k = kbegin; k < kend; ++k)
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t c0 = p * NR;
      const int nc = static_cast<int>(std::min<int64_t>(NR, cols - c0));
      double* d = dst + (p * kKC + k) * NR;
      _mm512_store_pd(d, _mm512_cvtps_pd(load8(b, k0 + k, n0 + c0, std::min(nc, 8))));
      _mm512_store_pd(d + 8, nc > 8 ? _mm512_cvtps_pd(load8(b, k0 + k, n0 + c0 + 8, nc - 8)) : _mm512_setzero_pd());
    }
}

/// dst[0:MR, 0:16] (row stride ldd, columns masked by m0/m1) += A strip · B panel over kc
/// elements: ap = [kc][8] doubles, bp = [kc][16] doubles.
template <int MR>
__attribute__((target("avx512f"))) void microKernel512(double* dst, int64_t ldd, __mmask8 m0, __mmask8 m1,
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
    ap += Avx512::MR;
    bp += Avx512::NR;
  }
  for (int r = 0; r < MR; ++r) {
    _mm512_mask_storeu_pd(dst + r * ldd, m0, acc[r][0]);
    _mm512_mask_storeu_pd(dst + r * ldd + 8, m1, acc[r][1]);
  }
}

using Kernel512 = void (*)(double*, int64_t, __mmask8, __mmask8, const double*, const double*, int64_t);
const Kernel512 kKernels512[Avx512::MR + 1] = {nullptr,           microKernel512<1>, microKernel512<2>,
                                               microKernel512<3>, microKernel512<4>, microKernel512<5>,
                                               microKernel512<6>, microKernel512<7>, microKernel512<8>};

/// dst[0:mr, 0:nc] (row stride ldd) += A strip · B panel over kc elements (the masks keep the
/// columns past nc untouched).
void Avx512::tile(double* dst, int64_t ldd, int mr, int64_t nc, const double* ap, const double* bp, int64_t kc) {
  const __mmask8 m0 = static_cast<__mmask8>(nc >= 8 ? 0xFF : (1u << nc) - 1);
  const __mmask8 m1 = static_cast<__mmask8>(nc >= 16 ? 0xFF : nc <= 8 ? 0 : (1u << (nc - 8)) - 1);
  kKernels512[mr](dst, ldd, m0, m1, ap, bp, kc);
}

// ---- AVX2 + FMA: 4 × 12 micro-tiles -----------------------------------------------------------

struct Avx2 {
  static constexpr int MR = 4;  // rows per micro-tile
  static constexpr int NR = 12; // columns per micro-tile (three ymm of doubles)
  static void packA(const Source& a, int64_t i0, int64_t rows, int64_t k0, int64_t kc, double* dst);
  static void packB(const Source& b, int64_t n0, int64_t cols, int64_t k0, int64_t kbegin, int64_t kend, double* dst);
  static void tile(double* dst, int64_t ldd, int mr, int64_t nc, const double* ap, const double* bp, int64_t kc);
};

/// 4 values of row `row` from column `col` on, as float32 (the table gathered for codes).
__attribute__((target("avx2,fma"))) inline __m128 load4(const Source& s, int64_t row, int64_t col) {
  if (s.values) return _mm_loadu_ps(s.values + row * s.ld + col);
  int32_t four;
  std::memcpy(&four, s.codes + row * s.ld + col, 4);
  return _mm_i32gather_ps(s.table, _mm_cvtepu8_epi32(_mm_cvtsi32_si128(four)), 4);
}

/// A block rows [i0, i0+rows) × K [k0, k0+kc) into strips [strip][k][4] of double (rows past
/// `rows` are 0): per strip and 4 k, four rows of 4 values transposed into four k of 4 rows.
__attribute__((target("avx2,fma"))) void Avx2::packA(const Source& a, int64_t i0, int64_t rows, int64_t k0, int64_t kc,
                                                     double* dst) {
  const int64_t strips = (rows + MR - 1) / MR;
  for (int64_t s = 0; s < strips; ++s) {
    double* d = dst + s * kKC * MR;
    const int live = static_cast<int>(std::min<int64_t>(MR, rows - s * MR));
    int64_t k = 0;
    for (; k + 4 <= kc; k += 4) {
      __m256d r[4];
      for (int i = 0; i < 4; ++i)
        r[i] = i < live ? _mm256_cvtps_pd(load4(a, i0 + s * MR + i, k0 + k)) : _mm256_setzero_pd();
      const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
      const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
      _mm256_store_pd(d + (k + 0) * MR, _mm256_permute2f128_pd(t0, t2, 0x20));
      _mm256_store_pd(d + (k + 1) * MR, _mm256_permute2f128_pd(t1, t3, 0x20));
      _mm256_store_pd(d + (k + 2) * MR, _mm256_permute2f128_pd(t0, t2, 0x31));
      _mm256_store_pd(d + (k + 3) * MR, _mm256_permute2f128_pd(t1, t3, 0x31));
    }
    for (; k < kc; ++k)
      for (int i = 0; i < MR; ++i) d[k * MR + i] = i < live ? static_cast<double>(a.at(i0 + s * MR + i, k0 + k)) : 0.0;
  }
}

/// B rows [k0+k, …) of the columns [n0, n0+cols) into panels [panel][k][12] of double (columns
/// past `cols` are 0), for k in [kbegin, kend) of the chunk.
__attribute__((target("avx2,fma"))) void Avx2::packB(const Source& b, int64_t n0, int64_t cols, int64_t k0,
                                                     int64_t kbegin, int64_t kend, double* dst) {
  const int64_t panels = (cols + NR - 1) / NR;
  for (int64_t k = kbegin; k < kend; ++k)
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t c0 = p * NR;
      const int64_t nc = std::min<int64_t>(NR, cols - c0);
      double* d = dst + (p * kKC + k) * NR;
      if (nc == NR) {
        for (int v = 0; v < NR / 4; ++v) _mm256_store_pd(d + 4 * v, _mm256_cvtps_pd(load4(b, k0 + k, n0 + c0 + 4 * v)));
      } else {
        for (int64_t j = 0; j < NR; ++j) d[j] = j < nc ? static_cast<double>(b.at(k0 + k, n0 + c0 + j)) : 0.0;
      }
    }
}

/// dst[0:MR, 0:12] (row stride ldd) += A strip · B panel over kc elements: ap = [kc][4] doubles,
/// bp = [kc][12] doubles.
template <int MR>
__attribute__((target("avx2,fma"))) void microKernel256(double* dst, int64_t ldd, const double* ap, const double* bp,
                                                        int64_t kc) {
  // The row loops are unrolled by pragma so that the accumulators become registers (without it
  // GCC 12 keeps a stack copy of each and stores it after every FMA).
  __m256d acc[MR][3];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
    for (int v = 0; v < 3; ++v) acc[r][v] = _mm256_loadu_pd(dst + r * ldd + 4 * v);
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const __m256d b0 = _mm256_load_pd(bp), b1 = _mm256_load_pd(bp + 4), b2 = _mm256_load_pd(bp + 8);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const __m256d av = _mm256_broadcast_sd(ap + r);
      acc[r][0] = _mm256_fmadd_pd(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_pd(av, b1, acc[r][1]);
      acc[r][2] = _mm256_fmadd_pd(av, b2, acc[r][2]);
    }
    ap += Avx2::MR;
    bp += Avx2::NR;
  }
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
    for (int v = 0; v < 3; ++v) _mm256_storeu_pd(dst + r * ldd + 4 * v, acc[r][v]);
}

using Kernel256 = void (*)(double*, int64_t, const double*, const double*, int64_t);
const Kernel256 kKernels256[Avx2::MR + 1] = {nullptr, microKernel256<1>, microKernel256<2>, microKernel256<3>,
                                             microKernel256<4>};

/// dst[0:mr, 0:nc] (row stride ldd) += A strip · B panel over kc elements; a tile narrower than 12
/// columns runs on a copy (the kernel reads and writes whole rows of 12).
void Avx2::tile(double* dst, int64_t ldd, int mr, int64_t nc, const double* ap, const double* bp, int64_t kc) {
  if (nc == NR) {
    kKernels256[mr](dst, ldd, ap, bp, kc);
    return;
  }
  double t[MR * NR] = {};
  for (int r = 0; r < mr; ++r) std::copy(dst + r * ldd, dst + r * ldd + nc, t + r * NR);
  kKernels256[mr](t, NR, ap, bp, kc);
  for (int r = 0; r < mr; ++r) std::copy(t + r * NR, t + r * NR + nc, dst + r * ldd);
}

// ---- the driver -------------------------------------------------------------------------------

template <class Isa>
void run(const Plan& plan, const Source& a, const Source& b, double* c, int threads, const ProgressFn& progress) {
  constexpr int kMR = Isa::MR, kNR = Isa::NR;
  static_assert(kMC % kMR == 0);
  const int64_t M = plan.m, N = plan.n;
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
  const int64_t nc_max = std::min(N, kNC);
  Aligned<double> bp(static_cast<size_t>((nc_max + kNR - 1) / kNR * kKC * kNR));
  // A window's partial sums when windows are promoted: [M][column block] (a window may span
  // several chunks, and the chunks of one row block may run on different threads).
  std::vector<double> part(direct ? 0 : static_cast<size_t>(M * nc_max));
  const double steps = static_cast<double>(tn) * static_cast<double>(chunks.size());
  double step = 0;
  for (int64_t jc = 0; jc < tn; ++jc) {
    const int64_t n0 = jc * kNC, cols = std::min(N, n0 + kNC) - n0;
    const int64_t panels = (cols + kNR - 1) / kNR;
    for (const Chunk& ch : chunks) {
      const int64_t kc = ch.k1 - ch.k0;
      const int64_t krows = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, cols));
      parallelJobs((kc + krows - 1) / krows, threads, {}, "", 0, 0,
                   [&](int64_t j) { Isa::packB(b, n0, cols, ch.k0, j * krows, std::min(kc, (j + 1) * krows), bp.p); });
      const double from = 0.95 * step / steps, to = 0.95 * (step + 1) / steps;
      parallelJobs(tm, threads, progress, "gemm", from, to, [&](int64_t job) {
        const int64_t i0 = job * kMC, rows = std::min(M, i0 + kMC) - i0;
        const int64_t strips = (rows + kMR - 1) / kMR;
        thread_local std::vector<double> ap_store;
        ap_store.resize(static_cast<size_t>(kMC / kMR * kKC * kMR + 8));
        double* ap = reinterpret_cast<double*>((reinterpret_cast<uintptr_t>(ap_store.data()) + 63) & ~uintptr_t(63));
        Isa::packA(a, i0, rows, ch.k0, kc, ap);
        double* base = direct ? c + i0 * N + n0 : part.data() + i0 * nc_max;
        const int64_t ldd = direct ? N : nc_max;
        if (!direct && ch.fresh)
          for (int64_t r = 0; r < rows; ++r) std::fill(base + r * ldd, base + r * ldd + cols, 0.0);
        for (int64_t p = 0; p < panels; ++p) {
          const int64_t c0 = p * kNR, nc = std::min<int64_t>(kNR, cols - c0);
          for (int64_t s = 0; s < strips; ++s) {
            const int mr = static_cast<int>(std::min<int64_t>(kMR, rows - s * kMR));
            Isa::tile(base + s * kMR * ldd + c0, ldd, mr, nc, ap + s * kKC * kMR, bp.p + p * kKC * kNR, kc);
          }
        }
        if (!direct && ch.ends) {
          // Promote the window's partial sums: acc = fma(float64(sa)·float64(sb), partial, acc),
          // or acc + partial without scales (gemmDoublePortable's promoteRow).
          for (int64_t i = i0; i < i0 + rows; ++i) {
            double* crow = c + i * N + n0;
            const double* prow = part.data() + i * nc_max;
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
      });
      ++step;
    }
  }
}

/// The decoded values exactly as decodeBulk gives them (NaN codes included), for every byte.
std::vector<float> decodeTable(const Format& f) {
  std::vector<uint8_t> codes(256);
  for (int i = 0; i < 256; ++i) codes[size_t(i)] = static_cast<uint8_t>(i & int(f.codeMask()));
  std::vector<float> t(256);
  f.decodeBulk(codes.data(), t.data(), t.size());
  return t;
}

template <class Isa>
void runValues(const Plan& plan, const float* a, const float* b, double* c, int threads, const ProgressFn& progress) {
  Source sa, sb;
  sa.values = a;
  sa.ld = plan.k;
  sb.values = b;
  sb.ld = plan.n;
  run<Isa>(plan, sa, sb, c, threads, progress);
}

template <class Isa>
void runCodes(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, double* c, int threads,
              const ProgressFn& progress) {
  Source sa, sb;
  const std::vector<float> ta = decodeTable(*a.format), tb = decodeTable(*b.format);
  sa.codes = a.codes.data();
  sa.table = ta.data();
  sa.ld = plan.k;
  sb.codes = b.codes.data();
  sb.table = tb.data();
  sb.ld = plan.n;
  run<Isa>(plan, sa, sb, c, threads, progress);
}

} // namespace

bool cpuHasAvx512F() {
  return cpuLevel() >= CpuLevel::Avx512;
}

bool cpuHasAvx2Fma() {
  return cpuLevel() >= CpuLevel::Avx2;
}

void gemmDoubleAvx512(const Plan& plan, const float* a, const float* b, double* c, int threads,
                      const ProgressFn& progress) {
  runValues<Avx512>(plan, a, b, c, threads, progress);
}

void gemmDoubleCodesAvx512(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, double* c, int threads,
                           const ProgressFn& progress) {
  runCodes<Avx512>(plan, a, b, c, threads, progress);
}

void gemmDoubleAvx2(const Plan& plan, const float* a, const float* b, double* c, int threads,
                    const ProgressFn& progress) {
  runValues<Avx2>(plan, a, b, c, threads, progress);
}

void gemmDoubleCodesAvx2(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, double* c, int threads,
                         const ProgressFn& progress) {
  runCodes<Avx2>(plan, a, b, c, threads, progress);
}

#else

bool cpuHasAvx512F() {
  return false;
}

bool cpuHasAvx2Fma() {
  return false;
}

void gemmDoubleAvx512(const Plan&, const float*, const float*, double*, int, const ProgressFn&) {
  throw std::logic_error("AVX-512 float64 kernel not compiled on this platform");
}

void gemmDoubleCodesAvx512(const Plan&, const QuantizedTensor&, const QuantizedTensor&, double*, int,
                           const ProgressFn&) {
  throw std::logic_error("AVX-512 float64 kernel not compiled on this platform");
}

void gemmDoubleAvx2(const Plan&, const float*, const float*, double*, int, const ProgressFn&) {
  throw std::logic_error("AVX2 float64 kernel not compiled on this platform");
}

void gemmDoubleCodesAvx2(const Plan&, const QuantizedTensor&, const QuantizedTensor&, double*, int, const ProgressFn&) {
  throw std::logic_error("AVX2 float64 kernel not compiled on this platform");
}

#endif

void gemmDouble(const Plan& plan, const float* a, const float* b, double* c, int threads, const ProgressFn& progress) {
  if (cpuHasAvx512F())
    gemmDoubleAvx512(plan, a, b, c, threads, progress);
  else if (cpuHasAvx2Fma())
    gemmDoubleAvx2(plan, a, b, c, threads, progress);
  else
    gemmDoublePortable(plan, a, b, c, threads, progress);
}

void gemmDoubleCodes(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, double* c, int threads,
                     const ProgressFn& progress) {
  if (cpuHasAvx512F()) {
    gemmDoubleCodesAvx512(plan, a, b, c, threads, progress);
    return;
  }
  if (cpuHasAvx2Fma()) {
    gemmDoubleCodesAvx2(plan, a, b, c, threads, progress);
    return;
  }
  std::vector<float> af(a.codes.size()), bf(b.codes.size());
  a.format->decodeBulk(a.codes.data(), af.data(), af.size());
  b.format->decodeBulk(b.codes.data(), bf.data(), bf.size());
  gemmDoublePortable(plan, af.data(), bf.data(), c, threads, progress);
}

} // namespace fp8lab::gemm_detail

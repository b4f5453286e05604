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
// Blocking (BLIS order): columns in blocks of ≤ 1024; K in chunks of ≤ 256 elements that never
// cross a window. Per (column block, chunk) the B block is packed once, in parallel, as float64
// panels [16 columns][chunk] shared by every row block; then row blocks of 128 run in parallel,
// each packing its A block as float64 strips [8 rows][chunk] (an 8 × 8 transpose per step) and
// running an 8 × 16 micro-tile of 16 zmm accumulators over each panel. Operands come as float32
// (the ideal reference) or as codes decoded through the format's table while packing (the
// quantized-exact reference and the Exact model: no decoded copy of A and B). Packing removes the
// 4·N-byte stride down B's columns (for N a multiple of 1024 every k of a column maps to the same
// L1 set and a new page) that kept the unpacked kernel waiting on memory. Measured on Zen 4, one
// thread, 2048³: 38.6 GFLOP/s against 17.8 for the unpacked kernel; 128-element chunks, 12-row
// tiles or 128-row × 128-column blocks were each slower.
#include "common/cpu_level.h"
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

constexpr int kMR = 8;        // rows per micro-tile
constexpr int kNR = 16;       // columns per micro-tile (two zmm of doubles)
constexpr int64_t kMC = 128;  // rows per job
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
__attribute__((target("avx512f,avx512bw,avx512vl,avx2"))) void packA(const Source& a, int64_t i0, int64_t rows,
                                                                     int64_t k0, int64_t kc, double* dst) {
  const int64_t strips = (rows + kMR - 1) / kMR;
  for (int64_t s = 0; s < strips; ++s) {
    double* d = dst + s * kKC * kMR;
    for (int64_t k = 0; k < kc; k += 8) {
      const int n = static_cast<int>(std::min<int64_t>(8, kc - k));
      __m512d r[8];
      for (int i = 0; i < 8; ++i) {
        const int64_t row = s * kMR + i;
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
      for (int j = 0; j < n; ++j) _mm512_store_pd(d + (k + j) * kMR, v[j]);
    }
  }
}

/// B rows [k0+k, …) of the columns [n0, n0+cols) into panels [panel][k][16] of double (columns
/// past `cols` are 0), for k in [kbegin, kend) of the chunk.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2"))) void
packB(const Source& b, int64_t n0, int64_t cols, int64_t k0, int64_t kbegin, int64_t kend, double* dst) {
  const int64_t panels = (cols + kNR - 1) / kNR;
  for (int64_t k = kbegin; k < kend; ++k)
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t c0 = p * kNR;
      const int nc = static_cast<int>(std::min<int64_t>(kNR, cols - c0));
      double* d = dst + (p * kKC + k) * kNR;
      _mm512_store_pd(d, _mm512_cvtps_pd(load8(b, k0 + k, n0 + c0, std::min(nc, 8))));
      _mm512_store_pd(d + 8, nc > 8 ? _mm512_cvtps_pd(load8(b, k0 + k, n0 + c0 + 8, nc - 8)) : _mm512_setzero_pd());
    }
}

/// dst[0:MR, 0:16] (row stride ldd, columns masked by m0/m1) += A strip · B panel over kc
/// elements: ap = [kc][8] doubles, bp = [kc][16] doubles.
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

void run(const Plan& plan, const Source& a, const Source& b, double* c, int threads, const ProgressFn& progress) {
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
                   [&](int64_t j) { packB(b, n0, cols, ch.k0, j * krows, std::min(kc, (j + 1) * krows), bp.p); });
      const double from = 0.95 * step / steps, to = 0.95 * (step + 1) / steps;
      parallelJobs(tm, threads, progress, "gemm", from, to, [&](int64_t job) {
        const int64_t i0 = job * kMC, rows = std::min(M, i0 + kMC) - i0;
        const int64_t strips = (rows + kMR - 1) / kMR;
        thread_local std::vector<double> ap_store;
        ap_store.resize(static_cast<size_t>(kMC / kMR * kKC * kMR + 8));
        double* ap = reinterpret_cast<double*>((reinterpret_cast<uintptr_t>(ap_store.data()) + 63) & ~uintptr_t(63));
        packA(a, i0, rows, ch.k0, kc, ap);
        double* base = direct ? c + i0 * N + n0 : part.data() + i0 * nc_max;
        const int64_t ldd = direct ? N : nc_max;
        if (!direct && ch.fresh)
          for (int64_t r = 0; r < rows; ++r) std::fill(base + r * ldd, base + r * ldd + cols, 0.0);
        for (int64_t p = 0; p < panels; ++p) {
          const int64_t c0 = p * kNR, nc = std::min<int64_t>(kNR, cols - c0);
          const __mmask8 m0 = static_cast<__mmask8>(nc >= 8 ? 0xFF : (1u << nc) - 1);
          const __mmask8 m1 = static_cast<__mmask8>(nc >= 16 ? 0xFF : nc <= 8 ? 0 : (1u << (nc - 8)) - 1);
          for (int64_t s = 0; s < strips; ++s) {
            const int mr = static_cast<int>(std::min<int64_t>(kMR, rows - s * kMR));
            kKernels[mr](base + s * kMR * ldd + c0, ldd, m0, m1, ap + s * kKC * kMR, bp.p + p * kKC * kNR, kc);
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

} // namespace

bool cpuHasAvx512F() {
  return cpuLevel() >= CpuLevel::Avx512;
}

void gemmDoubleAvx512(const Plan& plan, const float* a, const float* b, double* c, int threads,
                      const ProgressFn& progress) {
  Source sa, sb;
  sa.values = a;
  sa.ld = plan.k;
  sb.values = b;
  sb.ld = plan.n;
  run(plan, sa, sb, c, threads, progress);
}

void gemmDoubleCodesAvx512(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, double* c, int threads,
                           const ProgressFn& progress) {
  // The decoded values exactly as decodeBulk gives them (NaN codes included), for every byte.
  auto table = [](const Format& f) {
    std::vector<uint8_t> codes(256);
    for (int i = 0; i < 256; ++i) codes[size_t(i)] = static_cast<uint8_t>(i & int(f.codeMask()));
    std::vector<float> t(256);
    f.decodeBulk(codes.data(), t.data(), t.size());
    return t;
  };
  Source sa, sb;
  const std::vector<float> ta = table(*a.format), tb = table(*b.format);
  sa.codes = a.codes.data();
  sa.table = ta.data();
  sa.ld = plan.k;
  sb.codes = b.codes.data();
  sb.table = tb.data();
  sb.ld = plan.n;
  run(plan, sa, sb, c, threads, progress);
}

#else

bool cpuHasAvx512F() {
  return false;
}

void gemmDoubleAvx512(const Plan&, const float*, const float*, double*, int, const ProgressFn&) {
  throw std::logic_error("AVX-512 float64 kernel not compiled on this platform");
}

void gemmDoubleCodesAvx512(const Plan&, const QuantizedTensor&, const QuantizedTensor&, double*, int,
                           const ProgressFn&) {
  throw std::logic_error("AVX-512 float64 kernel not compiled on this platform");
}

#endif

void gemmDouble(const Plan& plan, const float* a, const float* b, double* c, int threads, const ProgressFn& progress) {
  if (cpuHasAvx512F())
    gemmDoubleAvx512(plan, a, b, c, threads, progress);
  else
    gemmDoublePortable(plan, a, b, c, threads, progress);
}

void gemmDoubleCodes(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, double* c, int threads,
                     const ProgressFn& progress) {
  if (cpuHasAvx512F()) {
    gemmDoubleCodesAvx512(plan, a, b, c, threads, progress);
    return;
  }
  std::vector<float> af(a.codes.size()), bf(b.codes.size());
  a.format->decodeBulk(a.codes.data(), af.data(), af.size());
  b.format->decodeBulk(b.codes.data(), bf.data(), bf.size());
  gemmDoublePortable(plan, af.data(), bf.data(), c, threads, progress);
}

} // namespace fp8lab::gemm_detail

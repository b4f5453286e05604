// FP8 Lab — the AVX512-BF16 kernel of the FP32 and SplitFP32 models.
//
// Every value of a ≤ 8-bit format with ≤ 7 mantissa bits is exact in BF16, and the product of
// two BF16 values is exact in float32, so VDPBF16PS adds exact products. Intel's SDM defines
// the instruction per float32 lane j as two sequential RNE additions,
//     acc_j += a.bf16[2j+1] · b.bf16[2j+1];   acc_j += a.bf16[2j] · b.bf16[2j]
// (high half first; checked on this machine's Sapphire Rapids class CPU for 200k random cases:
// tests/core/gemm checks the whole kernel against the portable one bit for bit). We pack
// element k into the high half and k+1 into the low half, so each lane adds a[k]·b[k] then
// a[k+1]·b[k+1]: exactly the portable model's ascending k order. The instruction flushes
// denormals (DAZ/FTZ); decoded codes and their products (≥ 2^-40 in magnitude) and every sum
// of them (multiples of the smallest product) are normal float32 numbers or zero, so this never
// changes a result. An odd K is padded with a zero product, which leaves a sum unchanged (a
// sum that starts at +0 is never −0).
//
// Blocking: A and B are packed once into BF16 pairs (A: [M][K/2] dwords; B: panels of 32
// columns, [N/32][K/2][32] dwords). A tile of 8 rows × 32 columns keeps 16 float32 vector
// accumulators; K is processed in chunks of whole windows (≤ 512 elements unless a window is
// longer), each window's partial promoted with FMA at its end (SplitFP32) or, with a single
// window, carried in C across chunks (FP32 model).
#include "common/cpu_level.h"
#include "gemm/gemm_internal.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FP8LAB_X86 1
#include <immintrin.h>
#endif

namespace fp8lab::gemm_detail {

bool cpuHasAvx512Bf16() {
  return cpuLevel() >= CpuLevel::Avx512 && cpuDetectedAvx512Bf16();
}

namespace {

/// A 64-byte aligned array (zmm loads of a packed panel then never split a cache line).
template <class T> class AlignedArray {
public:
  explicit AlignedArray(size_t n)
      : p_(static_cast<T*>(::operator new(std::max<size_t>(n, 1) * sizeof(T), std::align_val_t(64)))) {}
  ~AlignedArray() { ::operator delete(p_, std::align_val_t(64)); }
  AlignedArray(const AlignedArray&) = delete;
  AlignedArray& operator=(const AlignedArray&) = delete;
  T* data() { return p_; }
  const T* data() const { return p_; }
  T& operator[](size_t i) { return p_[i]; }

private:
  T* p_;
};

/// bf16 bits of every decoded code, or empty when some finite value is not exact in BF16.
std::vector<uint16_t> bf16Table(const Format& f) {
  const std::vector<float>& t = f.decodeTable();
  std::vector<uint16_t> r(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &t[i], 4);
    if ((u & 0xFFFFu) != 0 && t[i] == t[i]) return {};
    r[i] = static_cast<uint16_t>(u >> 16);
  }
  return r;
}

} // namespace

std::string avx512Bf16Unsuitable(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b) {
  if (bf16Table(*a.format).empty()) return "A's format " + a.format->name() + " has values not exact in BF16";
  if (bf16Table(*b.format).empty()) return "B's format " + b.format->name() + " has values not exact in BF16";
  for (const Window& w : plan.windows)
    if (w.k0 % 2 != 0)
      return "a window starts at the odd k = " + std::to_string(w.k0) + " (BF16 pairs need even boundaries)";
  return {};
}

std::string fmaKernelUnsuitable(const QuantizedTensor& a, const QuantizedTensor& b) {
  const Format& fa = *a.format;
  const Format& fb = *b.format;
  if (fa.spec().mantissa_bits + fb.spec().mantissa_bits + 2 > 24)
    return "products of these formats are not exact in float32";
  if (fa.minSubnormal() * fb.minSubnormal() < 0x1.0p-126) return "the smallest products are float32 subnormals";
  if (fa.maxFinite() * fb.maxFinite() > 0x1.0p100) return "the largest products are too close to float32 overflow";
  return {};
}

#if FP8LAB_X86

namespace {

constexpr int kMR = 8;       // rows per micro-tile
constexpr int kNR = 32;      // columns per micro-tile (two zmm)
constexpr int64_t kMC = 128; // rows per job tile
constexpr int64_t kNC = 256; // columns per job tile
constexpr int64_t kKC = 512; // target elements of K per chunk

using Seg = WindowSegment; // BF16 kernel: in pairs; FMA kernel: in elements

struct KernelArgs {
  const uint32_t* a; // packed A at row i0, pair 0
  int64_t lda;       // dwords per A row
  const uint32_t* b; // packed B panel (pairs × 32 dwords), pair 0
  float* c;          // C at (i0, n0)
  int64_t ldc;
  __mmask16 m0, m1; // valid columns of the two vectors
  const Seg* segs;
  int nsegs;
  bool direct;     // single window, no scale: acc lives in C
  bool scaled;     // promotion multiplies by s_w
  const float* sa; // sa_w at row i0 (stride W), or null
  int64_t W;
  const float* sb; // sb_w at column n0 (stride N per window), or null
  int64_t ldsb;
};

// The end of a K scale group (both kernels): C[r, j] += sa[r, w] · sb[w, j] · acc[r, j] — or
// C += acc when the run has no per-group scales — for the MR rows and 32 columns of the tile
// (masked to the tile's width). float32 multiply then fused multiply-add, the CPU reference's
// order (gemm.cpp), so the result is bit-identical to it. Args: KernelArgs or FmaArgs.
template <int MR, class Args>
__attribute__((target("avx512f"), always_inline)) inline void addScaleGroup(const Args& x, const Seg& sg,
                                                                            __m512 (&acc)[MR][2]) {
  __m512 sb0 = _mm512_set1_ps(1.0f), sb1 = sb0;
  if (x.scaled && x.sb) {
    sb0 = _mm512_maskz_loadu_ps(x.m0, x.sb + sg.w * x.ldsb);
    sb1 = _mm512_maskz_loadu_ps(x.m1, x.sb + sg.w * x.ldsb + 16);
  }
  for (int r = 0; r < MR; ++r) {
    float* cr = x.c + r * x.ldc;
    __m512 c0 = _mm512_maskz_loadu_ps(x.m0, cr), c1 = _mm512_maskz_loadu_ps(x.m1, cr + 16);
    if (x.scaled) {
      __m512 s0 = sb0, s1 = sb1;
      if (x.sa) {
        const __m512 sa = _mm512_set1_ps(x.sa[r * x.W + sg.w]);
        s0 = x.sb ? _mm512_mul_ps(sa, sb0) : sa;
        s1 = x.sb ? _mm512_mul_ps(sa, sb1) : sa;
      }
      c0 = _mm512_fmadd_ps(s0, acc[r][0], c0);
      c1 = _mm512_fmadd_ps(s1, acc[r][1], c1);
    } else {
      c0 = _mm512_add_ps(c0, acc[r][0]);
      c1 = _mm512_add_ps(c1, acc[r][1]);
    }
    _mm512_mask_storeu_ps(cr, x.m0, c0);
    _mm512_mask_storeu_ps(cr + 16, x.m1, c1);
  }
}

template <int MR> __attribute__((target("avx512f,avx512bf16"))) void microKernel(const KernelArgs& x) {
  __m512 acc[MR][2];
  for (int s = 0; s < x.nsegs; ++s) {
    const Seg& sg = x.segs[s];
    for (int r = 0; r < MR; ++r) {
      if (x.direct && !sg.fresh) {
        acc[r][0] = _mm512_maskz_loadu_ps(x.m0, x.c + r * x.ldc);
        acc[r][1] = _mm512_maskz_loadu_ps(x.m1, x.c + r * x.ldc + 16);
      } else {
        acc[r][0] = _mm512_setzero_ps();
        acc[r][1] = _mm512_setzero_ps();
      }
    }
    const uint32_t* bp = x.b + sg.p0 * kNR;
    const uint32_t* ap = x.a + sg.p0;
    for (int64_t p = sg.p0; p < sg.p1; ++p) {
      const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp);
      const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + 16);
      for (int r = 0; r < MR; ++r) {
        const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(ap[r * x.lda]));
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
      }
      bp += kNR;
      ++ap;
    }
    if (x.direct) {
      for (int r = 0; r < MR; ++r) {
        _mm512_mask_storeu_ps(x.c + r * x.ldc, x.m0, acc[r][0]);
        _mm512_mask_storeu_ps(x.c + r * x.ldc + 16, x.m1, acc[r][1]);
      }
    } else if (sg.ends) {
      addScaleGroup<MR>(x, sg, acc);
    }
  }
}

using KernelFn = void (*)(const KernelArgs&);
const KernelFn kKernels[kMR + 1] = {nullptr,        microKernel<1>, microKernel<2>, microKernel<3>, microKernel<4>,
                                    microKernel<5>, microKernel<6>, microKernel<7>, microKernel<8>};

} // namespace

void gemmFloatAvx512Bf16(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, float* c, int threads,
                         const ProgressFn& progress) {
  const int64_t M = plan.m, N = plan.n, K = plan.k;
  const int64_t KP = (K + 1) / 2;         // pairs
  const int64_t NP = (N + kNR - 1) / kNR; // 32-column panels
  const std::vector<uint16_t> ta = bf16Table(*a.format), tb = bf16Table(*b.format);

  // ---- pack A: ap[i][p] = bf16(a[i][2p]) << 16 | bf16(a[i][2p+1]) ----
  AlignedArray<uint32_t> ap(static_cast<size_t>(M * KP));
  const int64_t rows_per_job = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, K));
  parallelJobs((M + rows_per_job - 1) / rows_per_job, threads, progress, "pack A", 0.0, 0.02, [&](int64_t j) {
    const int64_t i1 = std::min(M, (j + 1) * rows_per_job);
    for (int64_t i = j * rows_per_job; i < i1; ++i) {
      const uint8_t* src = a.codes.data() + i * K;
      uint32_t* dst = ap.data() + i * KP;
      for (int64_t p = 0; p < K / 2; ++p) dst[p] = static_cast<uint32_t>(ta[src[2 * p]]) << 16 | ta[src[2 * p + 1]];
      if (K % 2) dst[KP - 1] = static_cast<uint32_t>(ta[src[K - 1]]) << 16;
    }
  });
  // ---- pack B: bp[panel][p][c] = bf16(b[2p][32·panel+c]) << 16 | bf16(b[2p+1][...]) ----
  AlignedArray<uint32_t> bp(static_cast<size_t>(NP * KP * kNR));
  const int64_t pairs_per_job = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, N));
  parallelJobs((KP + pairs_per_job - 1) / pairs_per_job, threads, progress, "pack B", 0.02, 0.05, [&](int64_t j) {
    const int64_t p1 = std::min(KP, (j + 1) * pairs_per_job);
    for (int64_t p = j * pairs_per_job; p < p1; ++p) {
      const uint8_t* r0 = b.codes.data() + (2 * p) * N;
      const uint8_t* r1 = 2 * p + 1 < K ? b.codes.data() + (2 * p + 1) * N : nullptr;
      for (int64_t panel = 0; panel < NP; ++panel) {
        uint32_t* dst = bp.data() + (panel * KP + p) * kNR;
        const int64_t n0 = panel * kNR, nc = std::min<int64_t>(kNR, N - n0);
        for (int64_t cc = 0; cc < nc; ++cc)
          dst[cc] = static_cast<uint32_t>(tb[r0[n0 + cc]]) << 16 | (r1 ? tb[r1[n0 + cc]] : 0u);
        for (int64_t cc = nc; cc < kNR; ++cc) dst[cc] = 0;
      }
    }
  });

  // ---- chunks of whole windows (a single window is cut every kKC elements), in pairs ----
  const bool direct = plan.windows.size() == 1 && !plan.scaled_promotion();
  const std::vector<std::vector<Seg>> chunks = windowChunks(plan, kKC, 2);

  const int64_t W = static_cast<int64_t>(plan.windows.size());
  const int64_t tm = (M + kMC - 1) / kMC, tn = (N + kNC - 1) / kNC;
  parallelJobs(tm * tn, threads, progress, "gemm", 0.05, 0.95, [&](int64_t job) {
    const int64_t i0 = (job / tn) * kMC, i1 = std::min(M, i0 + kMC);
    const int64_t n0 = (job % tn) * kNC, n1 = std::min(N, n0 + kNC);
    for (const auto& segs : chunks) {
      for (int64_t nn = n0; nn < n1; nn += kNR) {
        const int64_t ncols = std::min<int64_t>(kNR, n1 - nn);
        KernelArgs x{};
        x.lda = KP;
        x.b = bp.data() + (nn / kNR) * KP * kNR;
        x.ldc = N;
        x.m0 = static_cast<__mmask16>(ncols >= 16 ? 0xFFFF : (1u << ncols) - 1);
        x.m1 = static_cast<__mmask16>(ncols >= 32 ? 0xFFFF : ncols <= 16 ? 0 : (1u << (ncols - 16)) - 1);
        x.segs = segs.data();
        x.nsegs = static_cast<int>(segs.size());
        x.direct = direct;
        x.scaled = plan.scaled_promotion();
        x.W = W;
        x.sb = plan.b_varies ? plan.sb_w.data() + nn : nullptr;
        x.ldsb = N;
        for (int64_t i = i0; i < i1; i += kMR) {
          const int mr = static_cast<int>(std::min<int64_t>(kMR, i1 - i));
          x.a = ap.data() + i * KP;
          x.c = c + i * N + nn;
          x.sa = plan.a_varies ? plan.sa_w.data() + i * W : nullptr;
          kKernels[mr](x);
        }
      }
    }
  });
}

// ---- AVX512F FMA kernel on decoded float32 operands ---------------------------------------------
// fma(a, b, acc) rounds a·b + acc once; a·b of two decoded codes is exact in float32, so this is
// exactly acc + a·b of the portable model, in the same ascending k order per output.

namespace {

constexpr int kFmaMR = 12;      // rows per micro-tile (24 accumulators + 2 B vectors + 1 broadcast)
constexpr int64_t kFmaMC = 120; // rows per job tile (multiple of kFmaMR)
constexpr int64_t kFmaNC = 256; // columns per job tile
constexpr int64_t kFmaKC = 256; // elements of K per chunk: B micro-panel 256·32·4 = 32 KiB (L1)

struct FmaArgs {
  const float* a; // packed A panel of this micro-tile: [k][kFmaMR] floats (rows interleaved)
  int64_t lda;    // unused (kept for symmetry)
  const float* b; // packed B panel: [k][32] floats
  float* c;       // C at (i0, n0)
  int64_t ldc;
  __mmask16 m0, m1;
  const Seg* segs; // element units here
  int nsegs;
  bool direct, scaled;
  const float* sa;
  int64_t W;
  const float* sb;
  int64_t ldsb;
  bool final_scale; // direct mode, last chunk: store float32(ca·cb)·acc (the constant scales)
  const float* ca;  // at row i0
  const float* cb;  // at column n0
};

template <int MR> __attribute__((target("avx512f,fma"))) void fmaKernel(const FmaArgs& x) {
  __m512 acc[MR][2];
  for (int s = 0; s < x.nsegs; ++s) {
    const Seg& sg = x.segs[s];
    for (int r = 0; r < MR; ++r) {
      if (x.direct && !sg.fresh) {
        acc[r][0] = _mm512_maskz_loadu_ps(x.m0, x.c + r * x.ldc);
        acc[r][1] = _mm512_maskz_loadu_ps(x.m1, x.c + r * x.ldc + 16);
      } else {
        acc[r][0] = _mm512_setzero_ps();
        acc[r][1] = _mm512_setzero_ps();
      }
    }
    const float* bp = x.b + sg.p0 * kNR;
    const float* ap = x.a + sg.p0 * kFmaMR;
#pragma GCC unroll 4
    for (int64_t k = sg.p0; k < sg.p1; ++k) {
      const __m512 b0 = _mm512_loadu_ps(bp);
      const __m512 b1 = _mm512_loadu_ps(bp + 16);
      for (int r = 0; r < MR; ++r) {
        const __m512 av = _mm512_set1_ps(ap[r]);
        acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
      }
      bp += kNR;
      ap += kFmaMR;
    }
    if (x.direct) {
      if (x.final_scale) {
        const __m512 cb0 = _mm512_maskz_loadu_ps(x.m0, x.cb), cb1 = _mm512_maskz_loadu_ps(x.m1, x.cb + 16);
        for (int r = 0; r < MR; ++r) {
          const __m512 ca = _mm512_set1_ps(x.ca[r]);
          acc[r][0] = _mm512_mul_ps(_mm512_mul_ps(ca, cb0), acc[r][0]); // float32(ca·cb) · acc
          acc[r][1] = _mm512_mul_ps(_mm512_mul_ps(ca, cb1), acc[r][1]);
        }
      }
      for (int r = 0; r < MR; ++r) {
        _mm512_mask_storeu_ps(x.c + r * x.ldc, x.m0, acc[r][0]);
        _mm512_mask_storeu_ps(x.c + r * x.ldc + 16, x.m1, acc[r][1]);
      }
    } else if (sg.ends) {
      addScaleGroup<MR>(x, sg, acc);
    }
  }
}

using FmaKernelFn = void (*)(const FmaArgs&);
const FmaKernelFn kFmaKernels[kFmaMR + 1] = {nullptr,       fmaKernel<1>,  fmaKernel<2>, fmaKernel<3>, fmaKernel<4>,
                                             fmaKernel<5>,  fmaKernel<6>,  fmaKernel<7>, fmaKernel<8>, fmaKernel<9>,
                                             fmaKernel<10>, fmaKernel<11>, fmaKernel<12>};

} // namespace

void gemmFloatAvx512Fma(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, float* c, int threads,
                        const ProgressFn& progress) {
  const int64_t M = plan.m, N = plan.n, K = plan.k;
  const int64_t NP = (N + kNR - 1) / kNR;
  const std::vector<float>& ta = a.format->decodeTable();
  const std::vector<float>& tb = b.format->decodeTable();
  // decoded A in panels of kFmaMR rows, [panel][k][kFmaMR] (rows past M are zero): the
  // micro-kernel's broadcasts then read one contiguous line per k instead of kFmaMR rows 4·K
  // bytes apart (which alias in the L1 sets when K is a multiple of 1024)
  const int64_t MP = (M + kFmaMR - 1) / kFmaMR;
  AlignedArray<float> ad(static_cast<size_t>(MP * K * kFmaMR));
  parallelJobs(MP, threads, progress, "decode A", 0.0, 0.02, [&](int64_t panel) {
    float* dst = ad.data() + panel * K * kFmaMR;
    for (int r = 0; r < kFmaMR; ++r) {
      const int64_t i = panel * kFmaMR + r;
      if (i >= M) {
        for (int64_t k = 0; k < K; ++k) dst[k * kFmaMR + r] = 0.0f;
        continue;
      }
      const uint8_t* src = a.codes.data() + i * K;
      for (int64_t k = 0; k < K; ++k) dst[k * kFmaMR + r] = ta[src[k]];
    }
  });
  // B panels [panel][k][32]
  AlignedArray<float> bp(static_cast<size_t>(NP * K * kNR));
  const int64_t krows_per_job = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, N));
  parallelJobs((K + krows_per_job - 1) / krows_per_job, threads, progress, "pack B", 0.02, 0.05, [&](int64_t j) {
    const int64_t k1 = std::min(K, (j + 1) * krows_per_job);
    for (int64_t k = j * krows_per_job; k < k1; ++k) {
      const uint8_t* row = b.codes.data() + k * N;
      for (int64_t panel = 0; panel < NP; ++panel) {
        float* dst = bp.data() + (panel * K + k) * kNR;
        const int64_t n0 = panel * kNR, nc = std::min<int64_t>(kNR, N - n0);
        for (int64_t cc = 0; cc < nc; ++cc) dst[cc] = tb[row[n0 + cc]];
        for (int64_t cc = nc; cc < kNR; ++cc) dst[cc] = 0.0f;
      }
    }
  });
  // chunks (element units)
  const bool direct = plan.windows.size() == 1 && !plan.scaled_promotion();
  const std::vector<std::vector<Seg>> chunks = windowChunks(plan, kFmaKC);
  const int64_t W = static_cast<int64_t>(plan.windows.size());
  // Jobs: a column block of kFmaNC × a row range (as tall as the thread count allows, so a
  // chunk of B — 256 of K × 256 columns, 256 KiB, in L2 — serves many row blocks), then BLIS
  // order inside: chunk of K → row block of kFmaMC (A block in L2) → 32-column panel (B in L1)
  // → 12-row micro-tile.
  const int64_t tn = (N + kFmaNC - 1) / kFmaNC;
  const int64_t want = std::max<int64_t>(1, (4 * resolveThreads(threads) + tn - 1) / tn);
  const int64_t rows_per_job = ((M + want - 1) / want + kFmaMR - 1) / kFmaMR * kFmaMR;
  const int64_t tm = (M + rows_per_job - 1) / rows_per_job;
  const bool fuse_scale = direct && plan.has_const_scale;
  parallelJobs(tm * tn, threads, progress, "gemm", 0.05, 0.95, [&](int64_t job) {
    const int64_t j0 = (job / tn) * rows_per_job, j1 = std::min(M, j0 + rows_per_job);
    const int64_t n0 = (job % tn) * kFmaNC, n1 = std::min(N, n0 + kFmaNC);
    for (size_t ch = 0; ch < chunks.size(); ++ch) {
      const auto& segs = chunks[ch];
      for (int64_t i0 = j0; i0 < j1; i0 += kFmaMC) {
        const int64_t i1 = std::min(j1, i0 + kFmaMC);
        for (int64_t nn = n0; nn < n1; nn += kNR) {
          const int64_t ncols = std::min<int64_t>(kNR, n1 - nn);
          FmaArgs x{};
          x.final_scale = fuse_scale && ch + 1 == chunks.size();
          x.cb = plan.cb.data() + nn;
          x.lda = K;
          x.b = bp.data() + (nn / kNR) * K * kNR;
          x.ldc = N;
          x.m0 = static_cast<__mmask16>(ncols >= 16 ? 0xFFFF : (1u << ncols) - 1);
          x.m1 = static_cast<__mmask16>(ncols >= 32 ? 0xFFFF : ncols <= 16 ? 0 : (1u << (ncols - 16)) - 1);
          x.segs = segs.data();
          x.nsegs = static_cast<int>(segs.size());
          x.direct = direct;
          x.scaled = plan.scaled_promotion();
          x.W = W;
          x.sb = plan.b_varies ? plan.sb_w.data() + nn : nullptr;
          x.ldsb = N;
          for (int64_t i = i0; i < i1; i += kFmaMR) {
            const int mr = static_cast<int>(std::min<int64_t>(kFmaMR, i1 - i));
            x.a = ad.data() + (i / kFmaMR) * K * kFmaMR;
            x.ca = plan.ca.data() + i;
            x.c = c + i * N + nn;
            x.sa = plan.a_varies ? plan.sa_w.data() + i * W : nullptr;
            kFmaKernels[mr](x);
          }
        }
      }
    }
  });
  if (!fuse_scale) applyConstScales(plan, c, threads);
}

bool cpuHasAvx512Fma() {
  return cpuLevel() >= CpuLevel::Avx512;
}

#else

bool cpuHasAvx512Fma() {
  return false;
}

void gemmFloatAvx512Fma(const Plan&, const QuantizedTensor&, const QuantizedTensor&, float*, int, const ProgressFn&) {
  throw std::logic_error("AVX512 kernel not compiled on this platform");
}

void gemmFloatAvx512Bf16(const Plan&, const QuantizedTensor&, const QuantizedTensor&, float*, int, const ProgressFn&) {
  throw std::logic_error("AVX512-BF16 kernel not compiled on this platform");
}

#endif

} // namespace fp8lab::gemm_detail

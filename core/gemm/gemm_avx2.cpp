// FP8 Lab — the AVX2 + FMA kernel of the FP32 and SplitFP32 models, for CPUs without AVX-512.
//
// fma(a, b, acc) rounds a·b + acc once; the product of two decoded codes is exact in float32
// (fmaKernelUnsuitable refuses the formats where it is not), so the fused step gives exactly the
// bits of acc + a·b, the portable model's addition, in the same ascending k order per output.
// A window's partial is promoted as C = fma(sa·sb, partial, C) (float32 multiply, then one fused
// multiply-add) or C + partial without scales, as gemmFloatPortable does, so every result is
// bit-identical to it (tests/core/gemm: test_gemm).
//
// Blocking (BLIS order): A decoded once into panels of 6 rows [k][6] floats, B into panels of 16
// columns [k][16], both chunk by chunk of K. A job is a column block of 256 × a range of rows;
// inside it, chunk of K (≤ 256 elements, whole windows) → row block of 120 (A block in L2) →
// 16-column panel (B micro-panel, 256 · 16 · 4 = 16 KiB, in L1) → 6 × 16 micro-tile: 12 ymm
// accumulators, 2 B vectors and one broadcast, 15 of the 16 ymm registers.
#include "common/avx2_transpose.h"
#include "common/cpu_level.h"
#include "gemm/gemm_internal.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <new>
#include <stdexcept>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FP8LAB_X86 1
#include <immintrin.h>
#endif

namespace fp8lab::gemm_detail {

#if FP8LAB_X86

namespace {

constexpr int kMR = 6;       // rows per micro-tile
constexpr int kNR = 16;      // columns per micro-tile (two ymm)
constexpr int64_t kMC = 120; // rows per row block (a multiple of kMR)
constexpr int64_t kNC = 256; // columns per job
constexpr int64_t kKC = 256; // elements of K per chunk
// Rows per job at most (two row blocks): the job's C tile, re-read at every chunk of K, then
// stays in L2 (240 × 256 floats = 240 KiB), at the price of reading B once per 240 rows.
constexpr int64_t kMaxRowsPerJob = 2 * kMC;

/// A 64-byte aligned array.
template <class T> class AlignedArray {
public:
  explicit AlignedArray(size_t n)
      : p_(static_cast<T*>(::operator new(std::max<size_t>(n, 1) * sizeof(T), std::align_val_t(64)))) {}
  ~AlignedArray() { ::operator delete(p_, std::align_val_t(64)); }
  AlignedArray(const AlignedArray&) = delete;
  AlignedArray& operator=(const AlignedArray&) = delete;
  T* data() { return p_; }

private:
  T* p_;
};

/// Elements [p0, p1) of K that belong to window w (fresh: the window starts here; ends: it ends).
using Seg = WindowSegment;

struct Args {
  const float* a; // packed A panel of this micro-tile in this chunk: [k - k0][kMR]
  const float* b; // packed B panel in this chunk: [k - k0][kNR]
  int64_t k0;     // where the chunk starts in K
  float* c;       // C at (i, nn)
  int64_t ldc;
  int64_t ncols; // columns of the tile inside C (≤ kNR; masked loads and stores when fewer)
  bool full;     // ncols == kNR
  const Seg* segs;
  int nsegs;
  bool direct;     // a single window and no scale varying along K: the sum lives in C
  bool scaled;     // promotion multiplies by sa·sb
  const float* sa; // sa_w at row i (stride W), or null
  int64_t W;
  const float* sb; // sb_w at column nn (stride ldsb per window), or null
  int64_t ldsb;
  bool final_scale; // direct, last chunk: store float32(ca·cb)·acc (the constant scales)
  const float* ca;  // at row i
  const float* cb;  // at column nn
};

/// Vector decoding of 8-bit codes without the table, for the formats whose finite codes are a
/// bit pattern of an IEEE binary16 (F16C converts it exactly): E5M2 is binary16's top byte (mode
/// Shift8); an E4M3 code's magnitude bits shifted left by 7 are binary16 bits of the value · 2^−8
/// (its 4 exponent bits land in the low 4 of binary16's 5, its subnormals on binary16's; mode
/// E4M3, then · 2^8, exact). Codes whose magnitude bits are ≥ nan_from (the table's NaNs) are
/// left to the table. codeDecodeFor checks all 256 codes against the table and returns mode None
/// where any differs, so the table stays the definition.
struct CodeDecode {
  enum Mode { None, Shift8, E4M3 } mode = None;
  int nan_from = 0x80; // smallest magnitude code (0x00–0x7F) the table decodes to NaN
};

template <CodeDecode::Mode M>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline __m256 decode8(__m128i c16) {
  __m128i h;
  if constexpr (M == CodeDecode::Shift8)
    h = _mm_slli_epi16(c16, 8);
  else
    h = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(c16, _mm_set1_epi16(0x7F)), 7),
                     _mm_slli_epi16(_mm_and_si128(c16, _mm_set1_epi16(0x80)), 8));
  const __m256 v = _mm256_cvtph_ps(h);
  if constexpr (M == CodeDecode::E4M3)
    return _mm256_mul_ps(v, _mm256_set1_ps(256.0f));
  else
    return v;
}

/// 8 codes at p widened to 16 bits; *nan |= whether one of them is a NaN code.
__attribute__((target("avx2,fma"), always_inline)) inline __m128i codes8(const uint8_t* p, int nan_from, bool* nan) {
  const __m128i c16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m128i mag = _mm_and_si128(c16, _mm_set1_epi16(0x7F));
  *nan |= _mm_movemask_epi8(_mm_cmpgt_epi16(mag, _mm_set1_epi16(static_cast<short>(nan_from - 1)))) != 0;
  return c16;
}

__attribute__((target("avx2,fma,f16c"))) bool decodeMatches(const std::vector<float>& table, CodeDecode d) {
  alignas(16) uint8_t codes[256];
  for (int c = 0; c < 256; ++c) codes[c] = static_cast<uint8_t>(c);
  for (int c0 = 0; c0 < 256; c0 += 8) {
    bool nan = false;
    const __m128i c16 = codes8(codes + c0, 0x80, &nan);
    alignas(32) float v[8];
    _mm256_store_ps(v,
                    d.mode == CodeDecode::Shift8 ? decode8<CodeDecode::Shift8>(c16) : decode8<CodeDecode::E4M3>(c16));
    for (int l = 0; l < 8; ++l) {
      const int c = c0 + l;
      const bool nan_code = (c & 0x7F) >= d.nan_from;
      if (nan_code ? !std::isnan(table[size_t(c)])
                   : std::bit_cast<uint32_t>(v[l]) != std::bit_cast<uint32_t>(table[size_t(c)]))
        return false;
    }
  }
  return true;
}

CodeDecode codeDecodeFor(const std::vector<float>& table) {
  if (table.size() != 256 || !__builtin_cpu_supports("f16c")) return {};
  int nan_from = 0x80;
  for (int c = 0x7F; c >= 0 && std::isnan(table[size_t(c)]); --c) nan_from = c;
  for (CodeDecode::Mode m : {CodeDecode::Shift8, CodeDecode::E4M3}) {
    const CodeDecode d{m, nan_from};
    if (decodeMatches(table, d)) return d;
  }
  return {};
}

/// A's rows [i0, i0 + kMR) (zeros past M), elements [k0, k0 + len) of K, decoded into the panel
/// dst [len][kMR]: eight k at a time, the rows decoded as vectors and transposed; a group holding
/// a NaN code, and the last k < 8, through the table.
template <CodeDecode::Mode Mode>
__attribute__((target("avx2,fma,f16c"))) void decodeAPanel(const uint8_t* codes, int64_t K, int64_t M, int64_t i0,
                                                           int64_t k0, int64_t len, const float* table, int nan_from,
                                                           float* dst) {
  const int rows = static_cast<int>(std::min<int64_t>(kMR, M - i0));
  auto scalar = [&](int64_t k) {
    for (int r = 0; r < kMR; ++r) dst[k * kMR + r] = r < rows ? table[codes[(i0 + r) * K + k0 + k]] : 0.0f;
  };
  int64_t k = 0;
  for (; k + 8 <= len; k += 8) {
    __m256 v[8];
    bool nan = false;
    for (int r = 0; r < 8; ++r)
      v[r] = r < rows ? decode8<Mode>(codes8(codes + (i0 + r) * K + k0 + k, nan_from, &nan)) : _mm256_setzero_ps();
    if (nan) {
      for (int64_t kk = k; kk < k + 8; ++kk) scalar(kk);
      continue;
    }
    transpose8x8(v);
    // v[kk] holds rows 0…7 of element k + kk; its first kMR lanes are the panel's. Each 8-lane
    // store spills two lanes into the next element's slot, which the next store (or the tail)
    // writes over; the chunk's last slot is stored without the spill.
    for (int kk = 0; kk < 8; ++kk) {
      float* out = dst + (k + kk) * kMR;
      if (k + kk + 1 < len) {
        _mm256_storeu_ps(out, v[kk]);
      } else {
        _mm_storeu_ps(out, _mm256_castps256_ps128(v[kk]));
        _mm_storel_pi(reinterpret_cast<__m64*>(out + 4), _mm256_extractf128_ps(v[kk], 1));
      }
    }
  }
  for (; k < len; ++k) scalar(k);
}

/// One row of B's codes (n0 … n0 + 15, all inside N) decoded into a panel row dst[16], or false
/// (nothing written) when one of them is a NaN code.
template <CodeDecode::Mode Mode>
__attribute__((target("avx2,fma,f16c"))) inline bool decodeB16(const uint8_t* codes, int nan_from, float* dst) {
  bool nan = false;
  const __m128i lo = codes8(codes, nan_from, &nan), hi = codes8(codes + 8, nan_from, &nan);
  if (nan) return false;
  _mm256_storeu_ps(dst, decode8<Mode>(lo));
  _mm256_storeu_ps(dst + 8, decode8<Mode>(hi));
  return true;
}

/// Lanes [0, n) of a ymm of floats set (n clamped to [0, 8]).
__attribute__((target("avx2,fma"), always_inline)) inline __m256i laneMask(int64_t n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(n, 0, 8))), idx);
}

/// Vector `half` (0: columns 0–7, 1: columns 8–15) of a tile row at p, masked to the tile's
/// columns inside C. The mask is made here, not kept in a register across the k loop, which
/// needs 15 of the 16 ymm registers.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 load(const Args& x, const float* p, int half) {
  return x.full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, laneMask(x.ncols - 8 * half));
}

__attribute__((target("avx2,fma"), always_inline)) inline void store(const Args& x, float* p, int half, __m256 v) {
  if (x.full)
    _mm256_storeu_ps(p, v);
  else
    _mm256_maskstore_ps(p, laneMask(x.ncols - 8 * half), v);
}

/// The direct case's sums t[0:mr][0:16] (a single window, no scale varying along K) into C at the
/// end of a chunk: C = t, or C = float32(ca[r]·cb[j])·t after the last chunk (the constant scales).
/// Out of line: one copy serves every tile height.
__attribute__((target("avx2,fma"), noinline)) void finishDirect(const Args& x, const float (*t)[kNR], int mr) {
  __m256 sb0 = _mm256_set1_ps(1.0f), sb1 = sb0;
  if (x.final_scale) {
    sb0 = load(x, x.cb, 0);
    sb1 = load(x, x.cb + 8, 1);
  }
  for (int r = 0; r < mr; ++r) {
    float* cr = x.c + r * x.ldc;
    __m256 c0 = _mm256_load_ps(t[r]), c1 = _mm256_load_ps(t[r] + 8);
    if (x.final_scale) {
      const __m256 ca = _mm256_set1_ps(x.ca[r]);
      c0 = _mm256_mul_ps(_mm256_mul_ps(ca, sb0), c0); // float32(ca·cb) · acc
      c1 = _mm256_mul_ps(_mm256_mul_ps(ca, sb1), c1);
    }
    store(x, cr, 0, c0);
    store(x, cr + 8, 1, c1);
  }
}

// The loops over the tile's rows carry `#pragma GCC unroll`: unrolled that early, the
// accumulator array becomes 12 registers (without it GCC 12 keeps a stack copy of every
// accumulator and stores it after each FMA, at about half the speed).
template <int MR> __attribute__((target("avx2,fma"))) void fmaKernel(const Args& x) {
  alignas(32) float t[MR][kNR];
  for (int s = 0; s < x.nsegs; ++s) {
    const Seg& sg = x.segs[s];
    __m256 acc[MR][2];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      if (x.direct && !sg.fresh) {
        acc[r][0] = load(x, x.c + r * x.ldc, 0);
        acc[r][1] = load(x, x.c + r * x.ldc + 8, 1);
      } else {
        acc[r][0] = _mm256_setzero_ps();
        acc[r][1] = _mm256_setzero_ps();
      }
    }
    const float* bp = x.b + (sg.p0 - x.k0) * kNR;
    const float* ap = x.a + (sg.p0 - x.k0) * kMR;
    const int64_t kc = sg.p1 - sg.p0;
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
      const __m256 b0 = _mm256_load_ps(bp);
      const __m256 b1 = _mm256_load_ps(bp + 8);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const __m256 av = _mm256_broadcast_ss(ap + r);
        acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
      }
      bp += kNR;
      ap += kMR;
    }
    if (!x.direct) {
      if (!sg.ends) continue; // a window's partial never crosses a chunk
      // The window's partial into C from the registers: C[r, j] = fma(sa[r, w]·sb[w, j], acc, C[r, j]),
      // or C + acc when no scale varies along K. Inline, so that short windows (MX's 32) pay no
      // store of the tile and no call per window.
      __m256 sb0 = _mm256_set1_ps(1.0f), sb1 = sb0;
      if (x.scaled && x.sb) {
        sb0 = load(x, x.sb + sg.w * x.ldsb, 0);
        sb1 = load(x, x.sb + sg.w * x.ldsb + 8, 1);
      }
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        float* cr = x.c + r * x.ldc;
        __m256 c0 = load(x, cr, 0), c1 = load(x, cr + 8, 1);
        if (x.scaled) {
          __m256 s0 = sb0, s1 = sb1;
          if (x.sa) {
            const __m256 sa = _mm256_set1_ps(x.sa[r * x.W + sg.w]);
            s0 = x.sb ? _mm256_mul_ps(sa, sb0) : sa;
            s1 = x.sb ? _mm256_mul_ps(sa, sb1) : sa;
          }
          c0 = _mm256_fmadd_ps(s0, acc[r][0], c0);
          c1 = _mm256_fmadd_ps(s1, acc[r][1], c1);
        } else {
          c0 = _mm256_add_ps(c0, acc[r][0]);
          c1 = _mm256_add_ps(c1, acc[r][1]);
        }
        store(x, cr, 0, c0);
        store(x, cr + 8, 1, c1);
      }
      continue;
    }
    if (x.full && !x.final_scale) { // the sum lives in C: store it back
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        _mm256_storeu_ps(x.c + r * x.ldc, acc[r][0]);
        _mm256_storeu_ps(x.c + r * x.ldc + 8, acc[r][1]);
      }
      continue;
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      _mm256_store_ps(t[r], acc[r][0]);
      _mm256_store_ps(t[r] + 8, acc[r][1]);
    }
    finishDirect(x, t, MR);
  }
}

using KernelFn = void (*)(const Args&);
const KernelFn kKernels[kMR + 1] = {nullptr,      fmaKernel<1>, fmaKernel<2>, fmaKernel<3>,
                                    fmaKernel<4>, fmaKernel<5>, fmaKernel<6>};

} // namespace

void gemmFloatAvx2Fma(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, float* c, int threads,
                      const ProgressFn& progress) {
  const int64_t M = plan.m, N = plan.n, K = plan.k;
  const std::vector<float>& ta = a.format->decodeTable();
  const std::vector<float>& tb = b.format->decodeTable();
  // chunks of K: a single window cut every kKC elements, else whole windows up to kKC together
  const bool direct = plan.windows.size() == 1 && !plan.scaled_promotion();
  const std::vector<std::vector<Seg>> chunks = windowChunks(plan, kKC);
  // Where each chunk of K starts and how long it is (the chunks cover [0, K) in order), and the
  // chunk of every k.
  std::vector<int64_t> c0s, lens;
  std::vector<int32_t> chunkOf(static_cast<size_t>(K));
  for (const auto& segs : chunks) {
    c0s.push_back(segs.front().p0);
    lens.push_back(segs.back().p1 - segs.front().p0);
    for (int64_t k = c0s.back(); k < segs.back().p1; ++k) chunkOf[static_cast<size_t>(k)] = int32_t(c0s.size() - 1);
  }
  // Decoded A and B, chunk-major: per chunk of K, A's panels of kMR rows [panel][k][kMR] (rows past
  // M are zero) and B's panels of kNR columns [panel][k][kNR] (columns past N are zero), each panel
  // contiguous. The micro-kernel's broadcasts read one line per k instead of kMR rows 4·K bytes
  // apart, and the micro-panels one chunk uses lie side by side (whole-K panels would put a column
  // block's 16 B micro-panels 64·K bytes apart: the same L2 sets when K is a multiple of 2048).
  const int64_t MP = (M + kMR - 1) / kMR;
  AlignedArray<float> ad(static_cast<size_t>(MP * K * kMR));
  const CodeDecode da = codeDecodeFor(ta), db = codeDecodeFor(tb);
  parallelJobs(MP, threads, progress, "decode A", 0.0, 0.02, [&](int64_t panel) {
    for (size_t ch = 0; ch < c0s.size(); ++ch) {
      const int64_t k0 = c0s[ch], len = lens[ch];
      float* dst = ad.data() + k0 * MP * kMR + panel * len * kMR;
      if (da.mode == CodeDecode::Shift8) {
        decodeAPanel<CodeDecode::Shift8>(a.codes.data(), K, M, panel * kMR, k0, len, ta.data(), da.nan_from, dst);
        continue;
      }
      if (da.mode == CodeDecode::E4M3) {
        decodeAPanel<CodeDecode::E4M3>(a.codes.data(), K, M, panel * kMR, k0, len, ta.data(), da.nan_from, dst);
        continue;
      }
      for (int r = 0; r < kMR; ++r) {
        const int64_t i = panel * kMR + r;
        if (i >= M) {
          for (int64_t k = 0; k < len; ++k) dst[k * kMR + r] = 0.0f;
          continue;
        }
        const uint8_t* src = a.codes.data() + i * K + k0;
        for (int64_t k = 0; k < len; ++k) dst[k * kMR + r] = ta[src[k]];
      }
    }
  });
  const int64_t NP = (N + kNR - 1) / kNR;
  AlignedArray<float> bp(static_cast<size_t>(NP * K * kNR));
  const int64_t krows_per_job = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, N));
  parallelJobs((K + krows_per_job - 1) / krows_per_job, threads, progress, "pack B", 0.02, 0.05, [&](int64_t j) {
    const int64_t k1 = std::min(K, (j + 1) * krows_per_job);
    for (int64_t k = j * krows_per_job; k < k1; ++k) {
      const size_t ch = static_cast<size_t>(chunkOf[static_cast<size_t>(k)]);
      const int64_t k0 = c0s[ch], len = lens[ch];
      const uint8_t* row = b.codes.data() + k * N;
      for (int64_t panel = 0; panel < NP; ++panel) {
        float* dst = bp.data() + k0 * NP * kNR + (panel * len + (k - k0)) * kNR;
        const int64_t n0 = panel * kNR, nc = std::min<int64_t>(kNR, N - n0);
        if (nc == kNR &&
            ((db.mode == CodeDecode::Shift8 && decodeB16<CodeDecode::Shift8>(row + n0, db.nan_from, dst)) ||
             (db.mode == CodeDecode::E4M3 && decodeB16<CodeDecode::E4M3>(row + n0, db.nan_from, dst))))
          continue;
        for (int64_t cc = 0; cc < nc; ++cc) dst[cc] = tb[row[n0 + cc]];
        for (int64_t cc = nc; cc < kNR; ++cc) dst[cc] = 0.0f;
      }
    }
  });
  const int64_t W = static_cast<int64_t>(plan.windows.size());
  // Jobs: a column block of kNC × a row range, as tall as the thread count allows up to
  // kMaxRowsPerJob, so that a chunk of B serves a few row blocks while C stays in L2.
  const int64_t tn = (N + kNC - 1) / kNC;
  const int64_t want = std::max<int64_t>(1, (4 * resolveThreads(threads) + tn - 1) / tn);
  const int64_t rows_per_job = std::min(kMaxRowsPerJob, ((M + want - 1) / want + kMR - 1) / kMR * kMR);
  const int64_t tm = (M + rows_per_job - 1) / rows_per_job;
  const bool fuse_scale = direct && plan.has_const_scale;
  parallelJobs(tm * tn, threads, progress, "gemm", 0.05, 0.95, [&](int64_t job) {
    const int64_t j0 = (job / tn) * rows_per_job, j1 = std::min(M, j0 + rows_per_job);
    const int64_t n0 = (job % tn) * kNC, n1 = std::min(N, n0 + kNC);
    for (size_t ch = 0; ch < chunks.size(); ++ch) {
      const auto& segs = chunks[ch];
      for (int64_t i0 = j0; i0 < j1; i0 += kMC) {
        const int64_t i1 = std::min(j1, i0 + kMC);
        for (int64_t nn = n0; nn < n1; nn += kNR) {
          const int64_t ncols = std::min<int64_t>(kNR, n1 - nn);
          Args x{};
          x.k0 = c0s[ch];
          x.b = bp.data() + c0s[ch] * NP * kNR + (nn / kNR) * lens[ch] * kNR;
          x.ldc = N;
          x.ncols = ncols;
          x.full = ncols == kNR;
          x.segs = segs.data();
          x.nsegs = static_cast<int>(segs.size());
          x.direct = direct;
          x.scaled = plan.scaled_promotion();
          x.W = W;
          x.sb = plan.b_varies ? plan.sb_w.data() + nn : nullptr;
          x.ldsb = N;
          x.final_scale = fuse_scale && ch + 1 == chunks.size();
          x.cb = plan.cb.data() + nn;
          for (int64_t i = i0; i < i1; i += kMR) {
            const int mr = static_cast<int>(std::min<int64_t>(kMR, i1 - i));
            x.a = ad.data() + c0s[ch] * MP * kMR + (i / kMR) * lens[ch] * kMR;
            x.c = c + i * N + nn;
            x.sa = plan.a_varies ? plan.sa_w.data() + i * W : nullptr;
            x.ca = plan.ca.data() + i;
            kKernels[mr](x);
          }
        }
      }
    }
  });
  if (!fuse_scale) applyConstScales(plan, c, threads);
}

#else

void gemmFloatAvx2Fma(const Plan&, const QuantizedTensor&, const QuantizedTensor&, float*, int, const ProgressFn&) {
  throw std::logic_error("AVX2 FMA kernel not compiled on this platform");
}

#endif

} // namespace fp8lab::gemm_detail

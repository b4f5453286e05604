// FP8 Lab — portable CPU kernels of the FP8 GEMM models (standard C++; the compiler
// vectorises the inner loops across n, which keeps each output's k order unchanged).
//
// Summation order (what "bit-identical" refers to; docs/gemm.md):
//   for each output (m, n), for each window w (gemm.h) in k order:
//     partial = +0;  for k = k0 .. k1-1 ascending:  partial = partial + a[m,k]·b[k,n]
//     acc = fma(s_w, partial, acc)          (acc = acc + partial when no scale varies along K;
//                                            one window and no such scale: acc = partial)
//   then D = float32(ca[m]·cb[n]) · acc.
// Every product a·b of two decoded ≤ 8-bit codes is exact, so a fused multiply-add the
// compiler may form in the inner loop rounds exactly like the separate add.
#include "gemm/gemm_internal.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
#define FP8LAB_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FP8LAB_CLONES
#endif

namespace fp8lab::gemm_detail {

namespace {

/// A piece of one window: [k0, k1) ⊂ window w; fresh = starts the window, ends = closes it.
struct Chunk {
  int64_t k0, k1, w;
  bool fresh, ends;
};

/// Windows cut into chunks of at most kc elements counted from each window's start.
std::vector<Chunk> makeChunks(const Plan& plan, int64_t kc) {
  std::vector<Chunk> c;
  for (size_t w = 0; w < plan.windows.size(); ++w) {
    const Window& win = plan.windows[w];
    for (int64_t k0 = win.k0; k0 < win.k1; k0 += kc) {
      const int64_t k1 = std::min(win.k1, k0 + kc);
      c.push_back({k0, k1, static_cast<int64_t>(w), k0 == win.k0, k1 == win.k1});
    }
  }
  return c;
}

constexpr int64_t kRowsPerTile = 16;
constexpr int64_t kColsPerTile = 256;

template <class Acc>
FP8LAB_CLONES void accumulateRow(Acc* __restrict acc, const float* __restrict arow, const float* __restrict b,
                                 int64_t ldb, int64_t k0, int64_t k1, int64_t nb) {
  for (int64_t k = k0; k < k1; ++k) {
    const Acc a = static_cast<Acc>(arow[k]);
    const float* __restrict brow = b + k * ldb;
    for (int64_t n = 0; n < nb; ++n) acc[n] += a * static_cast<Acc>(brow[n]);
  }
}

/// C[0:4, 0:16] += A[0:4, k0:k1] · B[k0:k1, 0:16] in double (c, a, b point at the tile's corner;
/// ldc, lda, ldb are row strides), the 64 sums held in registers across k. Each element's products
/// are added in ascending k, one rounding each — the order accumulateRow uses, so the result is
/// bit-identical to it; a product of two float32 values is exact in double, so a fused
/// multiply-add rounds as the separate add does.
FP8LAB_CLONES void tile4x16Double(double* __restrict c, int64_t ldc, const float* __restrict a, int64_t lda,
                                  const float* __restrict b, int64_t ldb, int64_t k0, int64_t k1) {
  double acc[4][16];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < 16; ++n) acc[r][n] = c[r * ldc + n];
  for (int64_t k = k0; k < k1; ++k) {
    const float* __restrict brow = b + k * ldb;
    double bv[16];
#pragma GCC unroll 16
    for (int n = 0; n < 16; ++n) bv[n] = static_cast<double>(brow[n]);
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      const double av = static_cast<double>(a[r * lda + k]);
#pragma GCC unroll 16
      for (int n = 0; n < 16; ++n) acc[r][n] += av * bv[n];
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < 16; ++n) c[r * ldc + n] = acc[r][n];
}

template <class Acc>
void promoteRow(const Plan& plan, Acc* __restrict c, const Acc* __restrict acc, int64_t i, int64_t n0, int64_t nb,
                int64_t w) {
  const int64_t W = static_cast<int64_t>(plan.windows.size());
  if (!plan.scaled_promotion()) {
    for (int64_t n = 0; n < nb; ++n) c[n] = c[n] + acc[n];
    return;
  }
  const float sa = plan.a_varies ? plan.sa_w[static_cast<size_t>(i * W + w)] : 1.0f;
  const float* sb = plan.b_varies ? plan.sb_w.data() + w * plan.n + n0 : nullptr;
  for (int64_t n = 0; n < nb; ++n) {
    const float s = sb ? sa * sb[n] : sa; // float32(sa·sb)
    if constexpr (std::is_same_v<Acc, float>)
      c[n] = std::fma(s, acc[n], c[n]);
    else
      c[n] = std::fma(
          static_cast<double>(sb ? static_cast<double>(sa) * static_cast<double>(sb[n]) : static_cast<double>(sa)),
          acc[n], c[n]);
    (void)s;
  }
}

template <class Acc>
void gemmPortable(const Plan& plan, const float* a, const float* b, Acc* c, int threads, const ProgressFn& progress) {
  const bool direct = plan.windows.size() == 1 && !plan.scaled_promotion();
  const std::vector<Chunk> chunks = makeChunks(plan, 256);
  const int64_t tm = (plan.m + kRowsPerTile - 1) / kRowsPerTile, tn = (plan.n + kColsPerTile - 1) / kColsPerTile;
  parallelJobs(tm * tn, threads, progress, "gemm", 0.0, 0.95, [&](int64_t job) {
    const int64_t i0 = (job / tn) * kRowsPerTile, i1 = std::min(plan.m, i0 + kRowsPerTile);
    const int64_t n0 = (job % tn) * kColsPerTile, nb = std::min(plan.n, n0 + kColsPerTile) - n0;
    std::vector<Acc> part(direct ? 0 : static_cast<size_t>((i1 - i0) * nb));
    if constexpr (std::is_same_v<Acc, double>) {
      if (direct) { // C accumulates directly: 4×16 register tiles, the same per-element k order
        const int64_t i4 = i0 + (i1 - i0) / 4 * 4, n16 = nb / 16 * 16;
        for (const Chunk& ch : chunks) {
          for (int64_t i = i0; i < i4; i += 4)
            for (int64_t n = 0; n < n16; n += 16)
              tile4x16Double(c + i * plan.n + n0 + n, plan.n, a + i * plan.k, plan.k, b + n0 + n, plan.n, ch.k0, ch.k1);
          for (int64_t i = i0; i < i1; ++i) {
            if (i < i4 && n16 < nb) // the columns right of the last full tile
              accumulateRow(c + i * plan.n + n0 + n16, a + i * plan.k, b + n0 + n16, plan.n, ch.k0, ch.k1, nb - n16);
            if (i >= i4) // the rows below the last full tile
              accumulateRow(c + i * plan.n + n0, a + i * plan.k, b + n0, plan.n, ch.k0, ch.k1, nb);
          }
        }
        return;
      }
    }
    for (const Chunk& ch : chunks) {
      for (int64_t i = i0; i < i1; ++i) {
        Acc* acc = direct ? c + i * plan.n + n0 : part.data() + (i - i0) * nb;
        if (!direct && ch.fresh) std::fill(acc, acc + nb, Acc(0));
        accumulateRow(acc, a + i * plan.k, b + n0, plan.n, ch.k0, ch.k1, nb);
        if (!direct && ch.ends) promoteRow(plan, c + i * plan.n + n0, acc, i, n0, nb, ch.w);
      }
    }
  });
}

/// The same for a float32 (products of two decoded codes are exact normal float32 numbers);
/// written with 32-bit lanes only so that the loop below vectorises.
inline float truncToQuantumF(float x, int32_t q) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const int32_t ex = static_cast<int32_t>((u >> 23) & 0xFF) - 127;
  int32_t clear = 23 - (ex - q);
  clear = clear < 0 ? 0 : clear;
  const uint32_t mask = clear > 23 ? 0x80000000u : ~0u << (clear & 31);
  return std::bit_cast<float>(u & mask);
}

/// One group of the FastAccum model for one row segment: acc[n] and the products a_k·b[k][n]
/// (k in [k0,k1)) are aligned to E = the largest exponent among them, truncated toward zero to
/// multiples of 2^(E−bits+1), and added exactly (≤ 33 terms on one grid: exact in double).
FP8LAB_CLONES void fastGroup(double* __restrict acc, float* __restrict mx, int32_t* __restrict qexp,
                             const float* __restrict arow, const float* __restrict b, int64_t ldb, int64_t k0,
                             int64_t k1, int64_t nb, int bits) {
  for (int64_t n = 0; n < nb; ++n) mx[n] = 0.0f;
  for (int64_t k = k0; k < k1; ++k) {
    const float a = arow[k];
    const float* __restrict brow = b + k * ldb;
    for (int64_t n = 0; n < nb; ++n) {
      const float p = std::fabs(a * brow[n]); // exact
      mx[n] = mx[n] < p ? p : mx[n];          // NaN products are left out of E; they propagate via the sum
    }
  }
  for (int64_t n = 0; n < nb; ++n) {
    const int32_t ep = static_cast<int32_t>((std::bit_cast<uint32_t>(mx[n]) >> 23) & 0xFF) - 127;    // zero: −127
    const int64_t ea = static_cast<int64_t>((std::bit_cast<uint64_t>(acc[n]) >> 52) & 0x7FF) - 1023; // zero: −1023
    const int32_t e = static_cast<int32_t>(std::max<int64_t>(ep, std::min<int64_t>(ea, 128)));
    qexp[n] = e - bits + 1;
    acc[n] = truncToQuantum(acc[n], qexp[n]);
  }
  for (int64_t k = k0; k < k1; ++k) {
    const float a = arow[k];
    const float* __restrict brow = b + k * ldb;
    for (int64_t n = 0; n < nb; ++n) acc[n] += static_cast<double>(truncToQuantumF(a * brow[n], qexp[n]));
  }
}

/// A binary32 value's alignment exponent as the MMA sees it: floor(log2 |x|), −126 for subnormals
/// (x is a double holding a binary32 value; x ≠ 0, finite or not).
inline int32_t binary32Exponent(double x) {
  const int64_t e = static_cast<int64_t>((std::bit_cast<uint64_t>(x) >> 52) & 0x7FF) - 1023;
  return static_cast<int32_t>(std::clamp<int64_t>(e, -126, 128));
}

/// One group of the measured MMA rules (MmaRules other than the prose defaults) for one row
/// segment: the alignment exponent E = the largest of the running sum's (binary32 exponent) and
/// the non-zero products' (e(a) + e(b) with `ea`/`eb` the operands' clamped exponents, or floor(log2
/// |a·b|)); every term cut toward zero to a multiple of 2^(E − fbits) and added exactly in double
/// (≤ 33 terms below 2^(fbits + 3) quanta each); then the sum normalised to the accumulator
/// (MmaSum::Fp32) or kept (Exact).
FP8LAB_CLONES void mmaGroup(double* __restrict acc, int32_t* __restrict emax, const float* __restrict arow,
                            const int8_t* __restrict earow, const float* __restrict b, const int8_t* __restrict eb,
                            int64_t ldb, int64_t k0, int64_t k1, int64_t nb, int fbits, bool operands) {
  constexpr int32_t kNone = -100000;
  for (int64_t n = 0; n < nb; ++n) emax[n] = acc[n] != 0 ? binary32Exponent(acc[n]) : kNone;
  for (int64_t k = k0; k < k1; ++k) {
    const float a = arow[k];
    const float* __restrict brow = b + k * ldb;
    if (operands) {
      const int32_t ea = earow[k];
      const int8_t* __restrict erow = eb + k * ldb;
      for (int64_t n = 0; n < nb; ++n) {
        const float p = a * brow[n]; // exact
        const int32_t e = ea + int32_t(erow[n]);
        emax[n] = p != 0 && e > emax[n] ? e : emax[n];
      }
    } else {
      for (int64_t n = 0; n < nb; ++n) {
        const float p = a * brow[n];
        const int32_t e = static_cast<int32_t>((std::bit_cast<uint32_t>(p) >> 23) & 0xFF) - 127;
        emax[n] = p != 0 && e > emax[n] ? e : emax[n];
      }
    }
  }
  for (int64_t n = 0; n < nb; ++n) {
    emax[n] = emax[n] == kNone ? 0 : emax[n] - fbits; // the quantum's exponent (no term: nothing to cut)
    acc[n] = truncToQuantum(acc[n], emax[n]);
  }
  for (int64_t k = k0; k < k1; ++k) {
    const float a = arow[k];
    const float* __restrict brow = b + k * ldb;
    for (int64_t n = 0; n < nb; ++n) acc[n] += static_cast<double>(truncToQuantumF(a * brow[n], emax[n]));
  }
}

/// floor(log2 |v|) clamped at `emin` for every decoded value (0 where v = 0 or not finite): the
/// operand exponents of MmaAlignment::Operands.
std::vector<int8_t> operandExponents(const float* v, size_t count, int emin) {
  std::vector<int8_t> e(count, 0);
  for (size_t i = 0; i < count; ++i)
    if (v[i] != 0 && std::isfinite(v[i]))
      e[i] = static_cast<int8_t>(std::clamp(std::max(std::ilogb(v[i]), emin), -127, 127));
  return e;
}

} // namespace

void gemmFloatPortable(const Plan& plan, const float* a, const float* b, float* c, int threads,
                       const ProgressFn& progress) {
  gemmPortable<float>(plan, a, b, c, threads, progress);
}

void gemmDoublePortable(const Plan& plan, const float* a, const float* b, double* c, int threads,
                        const ProgressFn& progress) {
  gemmPortable<double>(plan, a, b, c, threads, progress);
}

void gemmFastAccumPortable(const Plan& plan, const float* a, const float* b, float* c, const FastAccumParams& fp,
                           int threads, const ProgressFn& progress) {
  const int64_t g = fp.group;
  const int bits = fp.bits;
  const MmaRules& rules = fp.rules;
  // The prose model (product alignment, exact sums) keeps its own group function; every other rule
  // set runs mmaGroup.
  const bool prose = rules.alignment == MmaAlignment::Product && rules.sum == MmaSum::Exact;
  const bool operands = rules.alignment == MmaAlignment::Operands;
  const bool fp32_sum = rules.sum == MmaSum::Fp32;
  const bool rne = rules.sum_rounding == MmaRounding::NearestEven;
  std::vector<int8_t> ea, eb;
  if (operands) {
    ea = operandExponents(a, static_cast<size_t>(plan.m * plan.k), fp.emin_a);
    eb = operandExponents(b, static_cast<size_t>(plan.k * plan.n), fp.emin_b);
  }
  const std::vector<Chunk> chunks = makeChunks(plan, g * std::max<int64_t>(1, 256 / g));
  const int64_t tm = (plan.m + kRowsPerTile - 1) / kRowsPerTile, tn = (plan.n + kColsPerTile - 1) / kColsPerTile;
  const int64_t W = static_cast<int64_t>(plan.windows.size());
  parallelJobs(tm * tn, threads, progress, "gemm (tensor-core MMA model)", 0.0, 0.95, [&](int64_t job) {
    const int64_t i0 = (job / tn) * kRowsPerTile, i1 = std::min(plan.m, i0 + kRowsPerTile);
    const int64_t n0 = (job % tn) * kColsPerTile, nb = std::min(plan.n, n0 + kColsPerTile) - n0;
    std::vector<double> part(static_cast<size_t>((i1 - i0) * nb));
    std::vector<float> mx(static_cast<size_t>(nb));
    std::vector<int32_t> qexp(static_cast<size_t>(nb));
    for (const Chunk& ch : chunks) {
      const int64_t ws = plan.windows[static_cast<size_t>(ch.w)].k0;
      for (int64_t i = i0; i < i1; ++i) {
        double* acc = part.data() + (i - i0) * nb;
        if (ch.fresh) {
          // The first window starts from C where C enters the accumulator (the MMA's C operand).
          if (ch.w == 0 && fp.c_init)
            for (int64_t n = 0; n < nb; ++n) acc[n] = static_cast<double>(fp.c_init[i * plan.n + n0 + n]);
          else
            std::fill(acc, acc + nb, 0.0);
        }
        // groups of g products counted from the window start
        for (int64_t k0 = ch.k0; k0 < ch.k1;) {
          const int64_t k1 = std::min(ch.k1, ws + ((k0 - ws) / g + 1) * g);
          if (prose) {
            fastGroup(acc, mx.data(), qexp.data(), a + i * plan.k, b + n0, plan.n, k0, k1, nb, bits);
          } else {
            mmaGroup(acc, qexp.data(), a + i * plan.k, operands ? ea.data() + i * plan.k : nullptr, b + n0,
                     operands ? eb.data() + n0 : nullptr, plan.n, k0, k1, nb, bits - 1, operands);
            if (fp32_sum)
              for (int64_t n = 0; n < nb; ++n) acc[n] = toAccumulator(acc[n], rules.sum_bits, rne);
          }
          k0 = k1;
        }
        if (ch.ends) {
          float* crow = c + i * plan.n + n0;
          const float sa = plan.a_varies ? plan.sa_w[static_cast<size_t>(i * W + ch.w)] : 1.0f;
          const float* sb = plan.b_varies ? plan.sb_w.data() + ch.w * plan.n + n0 : nullptr;
          for (int64_t n = 0; n < nb; ++n) {
            const float partial = static_cast<float>(acc[n]); // the window's sum as an FP32 register
            if (plan.scaled_promotion())
              crow[n] = std::fma(sb ? sa * sb[n] : sa, partial, crow[n]);
            else
              crow[n] = crow[n] + partial;
          }
        }
      }
    }
  });
}

} // namespace fp8lab::gemm_detail

// FP8 Lab — internals of the CPU FP8 GEMM (core/gemm): the plan (windows along K, expanded
// scales), the kernels and the thread pool. Not a public API: include gemm.h instead.
#pragma once

#include "common/worker_pool.h"
#include "gemm/gemm.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace fp8lab::gemm_detail {

/// One accumulation window [k0, k1) of K, with the index along K of each operand's scale block.
struct Window {
  int64_t k0 = 0, k1 = 0;
  int64_t kb_a = 0; ///< A's scale block column (k / block.cols) when A's scales vary along K
  int64_t kb_b = 0; ///< B's scale block row (k / block.rows) when B's scales vary along K
};

/// Everything the kernels need besides the operands (see gemm.h for the model definitions).
struct Plan {
  int64_t m = 0, n = 0, k = 0;
  std::vector<Window> windows;
  bool a_varies = false; ///< A's scales vary along K (block.cols < K)
  bool b_varies = false; ///< B's scales vary along K (block.rows < K)
  /// Scales that vary along K, expanded: sa_w[m·W + w] (A), sb_w[w·N + n] (B); empty if not varying.
  std::vector<float> sa_w, sb_w;
  /// Scales constant along K, expanded: ca[m], cb[n] (1 where the operand's scales vary along K).
  std::vector<float> ca, cb;
  bool scaled_promotion() const { return a_varies || b_varies; }
  bool has_const_scale = false; ///< some ca/cb differs from 1
};

/// Validates the operands (shapes, codes and scale sizes, formats) and builds the plan.
/// Throws std::invalid_argument with a message naming the problem.
Plan makePlan(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt);

/// Windows cut at the scale-block boundaries along K of the plan, plus every multiple of
/// `interval` (≤ 0: none).
std::vector<Window> makeWindows(const QuantizedTensor& a, const QuantizedTensor& b, bool a_varies, bool b_varies,
                                int64_t k, int64_t interval);

/// A piece of one window inside a chunk of K for the blocked kernels: [p0, p1) of window w in the
/// kernel's units along K (elements, or BF16 pairs); fresh = starts the window, ends = closes it.
struct WindowSegment {
  int64_t p0, p1;
  int64_t w;
  bool fresh, ends;
};

/// The chunks of K the blocked kernels run, in units of `unit` elements (1, or 2 for BF16 pairs;
/// a window [k0, k1) covers units [k0 / unit, ceil(k1 / unit))): with one window and no K-varying
/// scale, that window cut every `kc` elements; else whole windows, gathered while a chunk stays
/// within `kc` elements (a longer window is a chunk of its own).
std::vector<std::vector<WindowSegment>> windowChunks(const Plan& plan, int64_t kc, int64_t unit = 1);

/// x truncated toward zero to a multiple of 2^q, by clearing mantissa bits (exact; NaN and
/// ±Inf pass unchanged, magnitudes below 2^q become ±0).
inline double truncToQuantum(double x, int64_t q) {
  const uint64_t u = std::bit_cast<uint64_t>(x);
  const int64_t ex = static_cast<int64_t>((u >> 52) & 0x7FF) - 1023; // exponent of x (normal x)
  int64_t clear = 52 - (ex - q);                                     // mantissa bits below 2^q
  clear = clear < 0 ? 0 : clear;
  const uint64_t mask = clear > 52 ? 0x8000000000000000ull : ~0ull << (clear & 63);
  return std::bit_cast<double>(u & mask);
}

/// x (exact in double) normalised to a binary32 number with `p` fraction bits (1..23): the quantum
/// is 2^(max(floor(log2|x|), −126) − p), the cut toward zero or to nearest-even; ±Inf when the result
/// reaches 2^128; +0 for 0 (an exact cancellation gives +0, as the hardware does). NaN and ±Inf pass.
inline double toAccumulator(double x, int p, bool nearest_even) {
  if (x == 0) return 0.0;
  if (!std::isfinite(x)) return x;
  const int e = std::max(std::ilogb(x), -126);
  const int q = e - p;
  const double scaled = std::ldexp(x, -q); // exact: a power-of-two scaling of a double in range
  const double r = std::ldexp(nearest_even ? std::nearbyint(scaled) : std::trunc(scaled), q);
  if (std::fabs(r) >= 0x1p128) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r == 0 ? 0.0 : r;
}

/// The thread helpers of common/worker_pool.h, by their short names inside the kernels.
using fp8lab::availableMemoryBytes;
using fp8lab::parallelJobs;
using fp8lab::resolveThreads;

// ---- kernels (all write C[M,N] row-major, before the constant-scale pass) ----

/// Portable float32 models (FP32, SplitFP32): A [M,K], B [K,N] decoded codes as float.
void gemmFloatPortable(const Plan& plan, const float* a, const float* b, float* c, int threads,
                       const ProgressFn& progress);
/// Portable double model (Exact) or plain double GEMM when plan has one window and no scales.
void gemmDoublePortable(const Plan& plan, const float* a, const float* b, double* c, int threads,
                        const ProgressFn& progress);
/// The same computation, bit for bit, blocked for AVX-512 (gemm_double.cpp); needs cpuHasAvx512F().
void gemmDoubleAvx512(const Plan& plan, const float* a, const float* b, double* c, int threads,
                      const ProgressFn& progress);
/// The same computation, bit for bit, blocked for AVX2 + FMA (gemm_double.cpp); needs cpuHasAvx2Fma().
void gemmDoubleAvx2(const Plan& plan, const float* a, const float* b, double* c, int threads,
                    const ProgressFn& progress);
/// gemmDoubleAvx512 at CPU level avx512, gemmDoubleAvx2 at avx2, else gemmDoublePortable (the same
/// bits either way).
void gemmDouble(const Plan& plan, const float* a, const float* b, double* c, int threads, const ProgressFn& progress);
/// The same GEMM on the operands' decoded codes (decode(code) as float32, no scales: the Exact
/// model's and the quantized-exact reference's input), decoded while packing on AVX-512 and AVX2
/// (no decoded copy of A and B), else decoded first and run on gemmDoublePortable.
void gemmDoubleCodes(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, double* c, int threads,
                     const ProgressFn& progress);
void gemmDoubleCodesAvx512(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, double* c, int threads,
                           const ProgressFn& progress);
void gemmDoubleCodesAvx2(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, double* c, int threads,
                         const ProgressFn& progress);
/// True when this CPU executes AVX-512F, BW, VL and AVX2 (runtime check), what the blocked float64
/// kernel uses.
bool cpuHasAvx512F();
/// True when the kernels may use AVX2 and FMA (cpuLevel() ≥ avx2), what the AVX2 kernels use.
bool cpuHasAvx2Fma();
/// The FastAccum family's parameters as the kernel reads them.
struct FastAccumParams {
  int bits = 14, group = 32; ///< GemmOptions::fast_accum_bits / fast_accum_group
  MmaRules rules;
  int emin_a = -126, emin_b = -126; ///< the operand formats' minimum normal exponents (Operands alignment)
  /// The first window's starting sum, float32 [M,N] (beta·C where C enters the accumulator), or null.
  const float* c_init = nullptr;
};
/// FastAccum family (portable only): A [M,K], B [K,N] decoded codes as float.
void gemmFastAccumPortable(const Plan& plan, const float* a, const float* b, float* c, const FastAccumParams& params,
                           int threads, const ProgressFn& progress);

/// Why the block-scaled MMA model (MmaBlockScales::Inside) cannot run these operands ("" when it
/// can): both need E8M0 / UE4M3 block scales, one per row of A and column of B, in blocks along K
/// that divide the MMA step and hold whole chunks; kind::mxf4nvf4 (chunks > 1) takes E2M1.
std::string blockScaledMmaUnsuitable(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt);
/// The block-scaled MMA model: per output, groups of fast_accum_group along K, each term (a product,
/// or an exact chunk sum) times its block scales, aligned to the largest of e(a) + e(b) + e(sa) +
/// e(sb) (chunks: e(sa) + e(sb)) and the running sum's exponent, cut toward zero to
/// fast_accum_bits − 1 fraction bits below it, added exactly and truncated to a binary32 with
/// mma.sum_bits fraction bits; the NVFP4 tensor factor multiplies the result. c_init: the
/// starting sums [M,N] or null. Writes C[M,N]; no scale is applied afterwards.
void gemmMmaBlockScaled(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt, const float* c_init,
                        float* c, int threads, const ProgressFn& progress);
/// AMD CDNA3's FP8 MFMA model (MmaDatapath::Cdna3, gemm.h) on the decoded codes, unit scales
/// (the caller applies the scales after): C[M,N] from c_init (or 0) through groups of 16 along K.
void gemmMmaCdna3(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt, const float* c_init,
                  float* c, int threads, const ProgressFn& progress);

/// True when this CPU executes AVX512-BF16 (runtime check).
bool cpuHasAvx512Bf16();
/// Why the AVX512-BF16 kernel cannot run this plan ("" when it can).
std::string avx512Bf16Unsuitable(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b);
/// The AVX512-BF16 kernel for FP32 / SplitFP32 (bit-identical to gemmFloatPortable).
void gemmFloatAvx512Bf16(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, float* c, int threads,
                         const ProgressFn& progress);

/// Why the FMA kernels (AVX512F and AVX2) cannot run these operands exactly ("" when they can):
/// products of two decoded values must be exact float32 numbers (≤ 24 significant bits, no
/// under/overflow).
std::string fmaKernelUnsuitable(const QuantizedTensor& a, const QuantizedTensor& b);
/// True when this CPU executes AVX512F and FMA (runtime check).
bool cpuHasAvx512Fma();
/// The AVX512F FMA kernel for FP32 / SplitFP32 on decoded float32 operands (bit-identical to
/// gemmFloatPortable: every product of two decoded codes is exact, so fma = add of the product).
/// Unlike the other kernels it also applies the constant-along-K scales (fused into its last
/// store when there is a single window); do not call applyConstScales after it.
void gemmFloatAvx512Fma(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, float* c, int threads,
                        const ProgressFn& progress);
/// The same FMA kernel on 256-bit vectors, needs cpuHasAvx2Fma() (gemm_avx2.cpp): bit-identical to
/// gemmFloatPortable, and it also applies the constant-along-K scales itself.
void gemmFloatAvx2Fma(const Plan& plan, const QuantizedTensor& a, const QuantizedTensor& b, float* c, int threads,
                      const ProgressFn& progress);

/// Applies the constant-along-K scales: c[m,n] = float32(ca[m]·cb[n]) · c[m,n].
void applyConstScales(const Plan& plan, float* c, int threads);
void applyConstScales(const Plan& plan, double* c, int threads);

} // namespace fp8lab::gemm_detail

// FP8 Lab — e^x in float32 and float64 for the training layers: one algorithm each, the same bits
// at every CPU level and with every C library.
#pragma once

#include <cstdint>

namespace fp8lab {

/// e^x rounded to float32, by the algorithm of ARM's optimized-routines `expf` (Szabolcs Nagy,
/// 2017), which glibc ≥ 2.27 ships as its `expf`. In float64: z = x·32/ln 2; k = z rounded to the
/// nearest integer (ties to even, by adding and subtracting 1.5·2^52); r = x·32/ln 2 − k as one
/// fused multiply-subtract (|r| ≤ 1/2); 2^(k/32) from a 32-entry table of 2^(i/32) with ⌊k/32⌋
/// added to its exponent field; 2^(r/32) ≈ fma(fma(C0, r, C1), r², fma(C2, r, 1)); the product of
/// the two, rounded once to float32 (at most 0.502 ulp from e^x). The four fused operations are
/// where GCC contracts glibc's C source in its FMA build (`__expf_fma`, what x86-64 CPUs with FMA
/// run). Outside |x| < 88: NaN → the quieted NaN, −∞ → +0, +∞ → +∞, x > 88.7228 (ln 2^128) → +∞,
/// x < −103.972 (ln 2^−150) → +0, x < −103.279 (ln 2^−149) → 2^−149, the rest through the same
/// formula (glibc's special cases). All 2^32 float32 inputs give glibc 2.36's `expf` result on an
/// FMA CPU (checked exhaustively once; test_exp compares a sweep of 2^24 of them), but the
/// result no longer depends on which C library, glibc version or glibc code path the machine has.
/// errno is never set.
float expF32(float x);

/// y[i] = expF32(x[i]) for i < n; y may be x (in place). AVX2 + FMA (four float64 lanes per
/// instruction) at CPU level avx2 and above (common/cpu_level.h; FP8LAB_CPU forces it down), the
/// scalar expF32 at baseline: the same bits either way.
void expF32(const float* x, float* y, int64_t n);

/// e^x in float64, by optimized-routines' `exp` (glibc ≥ 2.29's `exp`): x = k·ln 2/128 + r with k
/// the nearest integer to x·128/ln 2 (the product and the rounding shift fused) and r from ln 2/128
/// in two parts (two fused multiply-adds); 2^(k/128) = H_k·(1 + T_k) from a 128-entry table with
/// ⌊k/128⌋ added to H_k's exponent field; e^r − 1 ≈ r + C2·r² + … + C5·r⁵; the result
/// fma(H, T_k + (e^r − 1), H) (at most 0.509 ulp from e^x). The fused operations are those GCC
/// contracts in glibc's FMA build (`__exp_fma`). Outside 2^−54 ≤ |x| < 512: tiny x → 1 + x, −∞ → +0,
/// +∞ and NaN → 1 + x, |x| ≥ 1024 → +∞ or +0, 512 ≤ |x| < 1024 the same formula rescaled by 2^1009
/// (fused) or 2^−1022 (unfused, with one rounding to the subnormal precision), as glibc. All 2^32
/// float32 inputs and 10^9 random float64 inputs give glibc 2.36's `exp` on an FMA CPU (checked
/// once; test_exp compares a sample). errno is never set.
double expF64(double x);

/// y[i] = expF64(x[i]) for i < n; y may be x. AVX2 + FMA at CPU level avx2 and above, else the
/// scalar expF64: the same bits either way.
void expF64(const double* x, double* y, int64_t n);

} // namespace fp8lab

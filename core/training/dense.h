// FP8 Lab — float32 dense kernels of the training experiment: the FP32 baseline's GEMMs and
// the small element-wise pieces (transpose, bias, ReLU). Plain C++, vectorised by the compiler,
// split over threads by rows of the output.
#pragma once

#include <cstdint>

namespace fp8lab {

/// C[M,N] = A[M,K] · B[K,N] (accumulate = false) or C += A·B, all row-major float32.
/// Summation order per element: k ascending, one float32 accumulator (deterministic for a
/// given thread count, and independent of it: rows are split, never K). threads ≤ 0: all cores.
void matmulF32(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int threads = 0,
               bool accumulate = false);

/// out[N,M] = in[M,N]ᵀ (row-major float32).
void transposeF32(const float* in, float* out, int64_t m, int64_t n);

/// Hardware threads to use for `threads` ≤ 0 (std::thread::hardware_concurrency, at least 1).
int resolveThreads(int threads);

} // namespace fp8lab

// FP8 Lab — float32 dense kernels of the training experiment: the FP32 baseline's GEMMs and
// the small element-wise pieces (transpose, bias, ReLU). Plain C++, vectorised by the compiler,
// split over threads by rows of the output.
#pragma once

#include "common/worker_pool.h" // resolveThreads, for the callers of these kernels

#include <cstdint>

namespace fp8lab {

/// C[M,N] = A[M,K] · B[K,N] (accumulate = false) or C += A·B, all row-major float32.
/// Summation order per element: k ascending, one float32 accumulator (deterministic for a
/// given thread count, and independent of it: rows are split, never K). threads ≤ 0: all cores.
void matmulF32(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int threads = 0,
               bool accumulate = false);

/// C[M,N] = Aᵀ · B (or C += Aᵀ·B) with Aᵀ given as `at` [K, M] row-major — the weight gradient
/// xᵀ·g of a Linear without a transposed copy of x. Same summation order and bits as matmulF32 on
/// the transposed copy: k ascending, one float32 accumulator, separate multiplies and adds.
void matmulF32At(const float* at, const float* b, float* c, int64_t m, int64_t k, int64_t n, int threads = 0,
                 bool accumulate = false);

/// out[N,M] = in[M,N]ᵀ (row-major float32; 8 × 8 register blocks at CPU level avx2 and above).
void transposeF32(const float* in, float* out, int64_t m, int64_t n);

} // namespace fp8lab

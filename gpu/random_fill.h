// FP8 Lab GPU core — device-side random data for benchmarks (no host round trip, never zero:
// zeros run about 13 % faster on tensor cores). Element i depends only on
// (seed, i) through splitmix64, so results do not depend on the launch configuration.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fp8lab::gpu {

/// FP8 codes of random sign with magnitude in [0.5, 4): E4M3FN (e5m2 = false) or E5M2. Never
/// zero, NaN or Inf.
void fillRandomFp8(uint8_t* codes, size_t n, uint64_t seed, bool e5m2, cudaStream_t stream);
/// BF16 bit patterns of random sign with magnitude in [0.5, 2). Never zero.
void fillRandomBf16(uint16_t* out, size_t n, uint64_t seed, cudaStream_t stream);
/// float32 uniform in [lo, hi) (pass lo > 0 for strictly positive values, e.g. scales).
void fillRandomFloat(float* out, size_t n, uint64_t seed, float lo, float hi, cudaStream_t stream);

} // namespace fp8lab::gpu

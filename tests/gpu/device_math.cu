// FP8 Lab — device-side checks of core/scaling/scale_rules.h's CUDA emulations. Contract: device_math.h.
#include "device_math.h"

#include "cuda_error.h"
#include "cuda_raii.h"
#include "scaling/scale_rules.h"

#include <cuda_runtime.h>

namespace fp8lab::checks {
namespace {

// out[0] log2 mismatches, out[1] pow2 mismatches, out[2] / out[3] the lowest mismatching patterns.
__global__ void sweepKernel(uint32_t first, uint32_t last, unsigned long long* counts, unsigned int* lowest) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  unsigned long long bad_log2 = 0, bad_pow2 = 0;
  for (uint64_t u = first + blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; u < last; u += stride) {
    const float s = __uint_as_float(static_cast<uint32_t>(u));
    // What torch.log2 / torch.floor / torch.exp2 run on a float32 CUDA tensor.
    const float dev_log2 = log2f(s);
    const float dev_pow2 = exp2f(floorf(dev_log2));
    const float emu_log2 = cudaLog2f(s);
    const float emu_pow2 = torchaoPow2(s);
    const bool log2_same =
        __float_as_uint(dev_log2) == __float_as_uint(emu_log2) || (isnan(dev_log2) && isnan(emu_log2));
    const bool pow2_same =
        __float_as_uint(dev_pow2) == __float_as_uint(emu_pow2) || (isnan(dev_pow2) && isnan(emu_pow2));
    if (!log2_same) {
      ++bad_log2;
      atomicMin(lowest, static_cast<unsigned int>(u));
    }
    if (!pow2_same) {
      ++bad_pow2;
      atomicMin(lowest + 1, static_cast<unsigned int>(u));
    }
  }
  if (bad_log2) atomicAdd(counts, bad_log2);
  if (bad_pow2) atomicAdd(counts + 1, bad_pow2);
}

} // namespace

MathSweep sweepLog2f(uint32_t first, uint32_t last) {
  MathSweep r;
  if (last <= first) return r;
  gpu::DeviceBuffer<unsigned long long> counts(2);
  gpu::DeviceBuffer<unsigned int> lowest(2);
  FP8LAB_CUDA_CHECK(cudaMemset(counts.get(), 0, 2 * sizeof(unsigned long long)));
  FP8LAB_CUDA_CHECK(cudaMemset(lowest.get(), 0xff, 2 * sizeof(unsigned int)));
  sweepKernel<<<132 * 16, 256>>>(first, last, counts.get(), lowest.get());
  FP8LAB_CUDA_CHECK(cudaGetLastError());
  unsigned long long c[2] = {0, 0};
  unsigned int l[2] = {0, 0};
  FP8LAB_CUDA_CHECK(cudaMemcpy(c, counts.get(), sizeof c, cudaMemcpyDeviceToHost));
  FP8LAB_CUDA_CHECK(cudaMemcpy(l, lowest.get(), sizeof l, cudaMemcpyDeviceToHost));
  r.compared = last - first;
  r.log2_mismatches = c[0];
  r.pow2_mismatches = c[1];
  r.first_log2_mismatch = l[0];
  r.first_pow2_mismatch = l[1];
  return r;
}

} // namespace fp8lab::checks

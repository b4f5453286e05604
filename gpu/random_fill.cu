#include "random_fill.h"

#include "cuda_error.h"

namespace fp8lab::gpu {
namespace {

__device__ __forceinline__ uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__global__ void fp8Kernel(uint8_t* c, size_t n, uint64_t seed, bool e5m2) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint64_t r = mix(seed ^ (i * 0xD1B54A32D192ED03ull));
    const uint32_t sign = static_cast<uint32_t>(r & 1u) << 7;
    uint32_t code;
    if (e5m2)
      code = sign | ((14u + static_cast<uint32_t>((r >> 1) % 3u)) << 2) | static_cast<uint32_t>((r >> 8) & 3u);
    else
      code = sign | ((6u + static_cast<uint32_t>((r >> 1) % 3u)) << 3) | static_cast<uint32_t>((r >> 8) & 7u);
    c[i] = static_cast<uint8_t>(code);
  }
}

__global__ void bf16Kernel(uint16_t* o, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint64_t r = mix(seed ^ (i * 0xD1B54A32D192ED03ull));
    const uint32_t sign = static_cast<uint32_t>(r & 1u) << 15;
    const uint32_t exp = 126u + static_cast<uint32_t>((r >> 1) & 1u);
    o[i] = static_cast<uint16_t>(sign | (exp << 7) | static_cast<uint32_t>((r >> 8) & 0x7fu));
  }
}

__global__ void floatKernel(float* o, size_t n, uint64_t seed, float lo, float hi) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint64_t r = mix(seed ^ (i * 0xD1B54A32D192ED03ull));
    const float u = static_cast<float>(r >> 40) * 0x1.0p-24f;
    o[i] = lo + (hi - lo) * u;
  }
}

int grid(size_t n) {
  const size_t b = (n + 255) / 256;
  return static_cast<int>(b < 1 ? 1 : (b > 8192 ? 8192 : b));
}

} // namespace

void fillRandomFp8(uint8_t* codes, size_t n, uint64_t seed, bool e5m2, cudaStream_t stream) {
  if (n == 0) return;
  fp8Kernel<<<grid(n), 256, 0, stream>>>(codes, n, seed, e5m2);
  FP8LAB_CUDA_CHECK(cudaGetLastError());
}

void fillRandomBf16(uint16_t* out, size_t n, uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  bf16Kernel<<<grid(n), 256, 0, stream>>>(out, n, seed);
  FP8LAB_CUDA_CHECK(cudaGetLastError());
}

void fillRandomFloat(float* out, size_t n, uint64_t seed, float lo, float hi, cudaStream_t stream) {
  if (n == 0) return;
  floatKernel<<<grid(n), 256, 0, stream>>>(out, n, seed, lo, hi);
  FP8LAB_CUDA_CHECK(cudaGetLastError());
}

} // namespace fp8lab::gpu

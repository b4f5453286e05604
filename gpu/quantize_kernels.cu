// FP8 Lab GPU core — amax, quantize and delayed-scaling kernels. Contract: quantize_kernels.h.
#include "quantize_kernels.h"

#include "cuda_error.h"

#include <cuda_runtime.h>

#include <cfloat>
#include <stdexcept>
#include <string>

namespace fp8lab::gpu {
namespace {

constexpr int kThreads = 256;

/// |v| as float32 bits, for a max over non-negative values by unsigned comparison (the order of
/// non-negative floats, +Inf and NaN bit patterns: finite < Inf < NaN). prop = false: NaN → 0
/// (maxNum / fmaxf: NaN never wins); prop = true: NaN wins (torch.max / jnp.max).
__device__ __forceinline__ uint32_t absBits(float v, bool prop) {
  const uint32_t a = __float_as_uint(v) & 0x7fffffffu;
  return (!prop && a > 0x7f800000u) ? 0u : a;
}

__device__ __forceinline__ uint32_t warpMax(uint32_t v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__global__ void amaxTensorKernel(const float* __restrict__ x, size_t n, float* out, bool prop) {
  uint32_t m = 0;
  const size_t tid = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t n4 = (reinterpret_cast<uintptr_t>(x) % 16 == 0) ? n / 4 : 0;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  for (size_t i = tid; i < n4; i += stride) {
    const float4 v = x4[i];
    m = max(m, max(max(absBits(v.x, prop), absBits(v.y, prop)), max(absBits(v.z, prop), absBits(v.w, prop))));
  }
  for (size_t i = n4 * 4 + tid; i < n; i += stride) m = max(m, absBits(x[i], prop));
  m = warpMax(m);
  __shared__ uint32_t warp_max[kThreads / 32];
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
  __syncthreads();
  if (threadIdx.x < 32) {
    m = threadIdx.x < blockDim.x / 32 ? warp_max[threadIdx.x] : 0u;
    m = warpMax(m);
    if (threadIdx.x == 0) atomicMax(reinterpret_cast<unsigned int*>(out), m);
  }
}

/// Blocks at least 32 wide: one warp per (row, column-block) segment, lanes stride along the row.
__global__ void amaxRowSegmentsKernel(const float* __restrict__ x, int64_t rows, int64_t cols, int64_t br, int64_t bc,
                                      int64_t bcols, float* out, bool prop) {
  const int64_t warp = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  const int64_t segments = rows * bcols;
  if (warp >= segments) return; // whole warps leave together (blockDim is a multiple of 32)
  const int64_t i = warp / bcols;
  const int64_t jb = warp % bcols;
  const int64_t j0 = jb * bc;
  const int64_t j1 = j0 + bc < cols ? j0 + bc : cols;
  uint32_t m = 0;
  const float* row = x + i * cols;
  for (int64_t j = j0 + lane; j < j1; j += 32) m = max(m, absBits(row[j], prop));
  m = warpMax(m);
  if (lane == 0) atomicMax(reinterpret_cast<unsigned int*>(out + (i / br) * bcols + jb), m);
}

/// Narrow blocks (< 32 wide): one thread per (column, chunk of up to 64 rows inside a block row);
/// neighbouring threads read neighbouring columns (coalesced).
__global__ void amaxColumnChunksKernel(const float* __restrict__ x, int64_t rows, int64_t cols, int64_t br, int64_t bc,
                                       int64_t bcols, int64_t chunks_per_block_row, float* out, bool prop) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t brows = (rows + br - 1) / br;
  if (t >= cols * brows * chunks_per_block_row) return;
  const int64_t j = t % cols;
  const int64_t rest = t / cols;
  const int64_t c = rest % chunks_per_block_row;
  const int64_t ib = rest / chunks_per_block_row;
  const int64_t chunk = (br + chunks_per_block_row - 1) / chunks_per_block_row;
  const int64_t i0 = ib * br + c * chunk;
  int64_t i1 = i0 + chunk;
  if (i1 > (ib + 1) * br) i1 = (ib + 1) * br;
  if (i1 > rows) i1 = rows;
  if (i0 >= i1) return;
  uint32_t m = 0;
  for (int64_t i = i0; i < i1; ++i) m = max(m, absBits(x[i * cols + j], prop));
  atomicMax(reinterpret_cast<unsigned int*>(out + ib * bcols + j / bc), m);
}

/// 4 elements per thread and iteration: one float4 load, one 4-byte store (both fully coalesced
/// across a warp: 512 contiguous bytes in, 128 out).
__global__ void quantizeTensorKernel(const float* __restrict__ x, uint8_t* __restrict__ codes, size_t n,
                                     const float* __restrict__ scale, bool divide, RneEncodeConstants k) {
  const float s = *scale;
  const size_t tid = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(codes) % 4 == 0;
  const size_t n4 = aligned ? n / 4 : 0;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  uint32_t* c4 = reinterpret_cast<uint32_t*>(codes);
  for (size_t g = tid; g < n4; g += stride) {
    const float4 v = x4[g];
    c4[g] = static_cast<uint32_t>(rneEncode(v.x, s, divide, k)) |
            (static_cast<uint32_t>(rneEncode(v.y, s, divide, k)) << 8) |
            (static_cast<uint32_t>(rneEncode(v.z, s, divide, k)) << 16) |
            (static_cast<uint32_t>(rneEncode(v.w, s, divide, k)) << 24);
  }
  for (size_t i = n4 * 4 + tid; i < n; i += stride) codes[i] = rneEncode(x[i], s, divide, k);
}

/// One thread per 4 consecutive elements of a row (any cols; the vector path needs cols % 4 == 0
/// and aligned pointers). Index arithmetic in Index (32-bit when the tensor allows it).
template <typename Index>
__global__ void quantizeBlocksKernel(const float* __restrict__ x, uint8_t* __restrict__ codes, Index rows, Index cols,
                                     Index br, Index bc, Index bcols, const float* __restrict__ scales, bool divide,
                                     RneEncodeConstants k, bool vec) {
  const Index groups_per_row = (cols + 3) / 4;
  const Index total = rows * groups_per_row;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index g = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; g < total; g += stride) {
    const Index i = g / groups_per_row;
    const Index j0 = (g - i * groups_per_row) * 4;
    const Index srow = (i / br) * bcols;
    if (vec) {
      const float4 v = *reinterpret_cast<const float4*>(x + i * cols + j0);
      const float in[4] = {v.x, v.y, v.z, v.w};
      uint32_t w = 0;
      if (bc % 4 == 0) { // the 4 elements share one block (every granularity but per-column / MX 32x1)
        const float sc = scales[srow + j0 / bc];
#pragma unroll
        for (int q = 0; q < 4; ++q) w |= static_cast<uint32_t>(rneEncode(in[q], sc, divide, k)) << (8 * q);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q)
          w |= static_cast<uint32_t>(rneEncode(in[q], scales[srow + (j0 + q) / bc], divide, k)) << (8 * q);
      }
      *reinterpret_cast<uint32_t*>(codes + i * cols + j0) = w;
    } else {
      for (Index j = j0; j < j0 + 4 && j < cols; ++j)
        codes[i * cols + j] = rneEncode(x[i * cols + j], scales[srow + j / bc], divide, k);
    }
  }
}

__global__ void currentScaleKernel(const float* amax, float fp8_max, bool pow2, float* quant, float* dequant) {
  const float s = teScaleFromAmax(*amax, fp8_max, pow2);
  *quant = s;
  *dequant = __fdiv_rn(1.0f, s);
}

__global__ void blockScaleKernel(const float* amax, size_t n, ScaleRuleParams p, float* quant, float* dequant,
                                 uint8_t* codes) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const BlockScale b = blockScaleFromAmax(static_cast<double>(amax[i]), p);
    quant[i] = b.quant;
    dequant[i] = b.dequant;
    if (codes) codes[i] = static_cast<uint8_t>(b.scale_code < 0 ? 0 : b.scale_code);
  }
}

__global__ void delayedUpdateKernel(float* hist, int n, int L, float* scale, float* scale_inv, const float* amax_now,
                                    DelayedUpdateParams p) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  (void)delayedScalingUpdate(hist + t, L, n, scale + t, amax_now[t], p);
  if (scale_inv) scale_inv[t] = __fdiv_rn(1.0f, scale[t]);
}

int gridFor(size_t work, int per_block = kThreads) {
  const size_t blocks = (work + per_block - 1) / per_block;
  const size_t cap = 132 * 32; // enough to fill any current GPU; grid-stride loops do the rest
  return static_cast<int>(blocks < 1 ? 1 : (blocks > cap ? cap : blocks));
}

void checkShape(int64_t rows, int64_t cols, ScaleBlock b, const char* what) {
  if (rows < 1 || cols < 1 || b.rows < 1 || b.cols < 1)
    throw std::invalid_argument(std::string(what) + ": empty tensor or block (" + std::to_string(rows) + "x" +
                                std::to_string(cols) + ", block " + std::to_string(b.rows) + "x" +
                                std::to_string(b.cols) + ")");
}

} // namespace

void amaxTensor(const float* x, size_t n, float* out, cudaStream_t stream, bool nan_propagates) {
  FP8LAB_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), stream));
  if (n == 0) return;
  amaxTensorKernel<<<gridFor((n + 3) / 4), kThreads, 0, stream>>>(x, n, out, nan_propagates);
  FP8LAB_CUDA_CHECK(cudaGetLastError());
}

void amaxBlocks(const float* x, int64_t rows, int64_t cols, ScaleBlock b, float* out, cudaStream_t stream,
                bool nan_propagates) {
  checkShape(rows, cols, b, "amaxBlocks");
  const int64_t brows = (rows + b.rows - 1) / b.rows, bcols = (cols + b.cols - 1) / b.cols;
  FP8LAB_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<size_t>(brows * bcols) * sizeof(float), stream));
  if (brows == 1 && bcols == 1) {
    amaxTensorKernel<<<gridFor(static_cast<size_t>(rows * cols + 3) / 4), kThreads, 0, stream>>>(
        x, static_cast<size_t>(rows * cols), out, nan_propagates);
  } else if (b.cols >= 32 || b.cols >= cols) {
    const int64_t threads = rows * bcols * 32;
    const int64_t blocks = (threads + kThreads - 1) / kThreads;
    amaxRowSegmentsKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, rows, cols, b.rows, b.cols, bcols,
                                                                                  out, nan_propagates);
  } else {
    const int64_t br = b.rows < rows ? b.rows : rows;
    const int64_t chunks = (br + 63) / 64;
    const int64_t threads = cols * brows * chunks;
    const int64_t blocks = (threads + kThreads - 1) / kThreads;
    amaxColumnChunksKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, rows, cols, br, b.cols, bcols,
                                                                                   chunks, out, nan_propagates);
  }
  FP8LAB_CUDA_CHECK(cudaGetLastError());
}

void quantizeTensor(const float* x, uint8_t* codes, size_t n, const float* scale, bool divide,
                    const RneEncodeConstants& k, cudaStream_t stream) {
  if (n == 0) return;
  quantizeTensorKernel<<<gridFor((n + 3) / 4), kThreads, 0, stream>>>(x, codes, n, scale, divide, k);
  FP8LAB_CUDA_CHECK(cudaGetLastError());
}

void quantizeBlocks(const float* x, uint8_t* codes, int64_t rows, int64_t cols, ScaleBlock b, const float* scales,
                    bool divide, const RneEncodeConstants& k, cudaStream_t stream) {
  checkShape(rows, cols, b, "quantizeBlocks");
  const int64_t bcols = (cols + b.cols - 1) / b.cols;
  const bool vec =
      cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(codes) % 4 == 0;
  const int64_t groups = rows * ((cols + 3) / 4);
  const int grid = gridFor(static_cast<size_t>(groups));
  if (rows * (cols + 3) < (int64_t(1) << 31)) {
    quantizeBlocksKernel<uint32_t><<<grid, kThreads, 0, stream>>>(
        x, codes, static_cast<uint32_t>(rows), static_cast<uint32_t>(cols),
        static_cast<uint32_t>(b.rows < rows ? b.rows : rows), static_cast<uint32_t>(b.cols < cols ? b.cols : cols),
        static_cast<uint32_t>(bcols), scales, divide, k, vec);
  } else {
    quantizeBlocksKernel<uint64_t><<<grid, kThreads, 0, stream>>>(
        x, codes, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), static_cast<uint64_t>(b.rows),
        static_cast<uint64_t>(b.cols), static_cast<uint64_t>(bcols), scales, divide, k, vec);
  }
  FP8LAB_CUDA_CHECK(cudaGetLastError());
}

void currentScaleFromAmax(const float* amax, float fp8_max, bool pow2, float* quant, float* dequant,
                          cudaStream_t stream) {
  currentScaleKernel<<<1, 1, 0, stream>>>(amax, fp8_max, pow2, quant, dequant);
  FP8LAB_CUDA_CHECK(cudaGetLastError());
}

void blockScalesFromAmax(const float* amax, size_t n, const ScaleRuleParams& p, float* quant, float* dequant,
                         uint8_t* codes, cudaStream_t stream) {
  if (n == 0) return;
  blockScaleKernel<<<gridFor(n), kThreads, 0, stream>>>(amax, n, p, quant, dequant, codes);
  FP8LAB_CUDA_CHECK(cudaGetLastError());
}

void delayedScalingUpdateBatch(float* hist, int n, int L, float* scale, float* scale_inv, const float* amax_now,
                               const DelayedUpdateParams& params, cudaStream_t stream) {
  if (n < 1 || L < 1) throw std::invalid_argument("delayedScalingUpdateBatch: n and L must be ≥ 1");
  delayedUpdateKernel<<<(n + 127) / 128, 128, 0, stream>>>(hist, n, L, scale, scale_inv, amax_now, params);
  FP8LAB_CUDA_CHECK(cudaGetLastError());
}

} // namespace fp8lab::gpu

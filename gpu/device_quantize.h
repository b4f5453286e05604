// FP8 Lab GPU core — a whole current-scaling strategy on the device: block amax → scale rule →
// quantize, with the result left in device memory (for the GEMM) or copied back as a
// QuantizedTensor. Bit-identical to core/scaling quantize() (scaling.h) for every current
// preset with RNE rounding: amax per block (NaN ignored or propagated per the rule,
// ruleAmaxPropagatesNaN), blockScaleFromAmax (core/scaling/scale_rules.h), rneEncode
// (core/formats/rne_encode.h): the functions quantize() runs on the host.
// Stochastic and other non-RNE roundings are CPU-only (std::invalid_argument says so).
#pragma once

#include "cuda_raii.h"
#include "scaling/scaling.h"

#include <string>

namespace fp8lab::gpu {

/// A quantized tensor in device memory (row-major codes; scales over the block grid, row-major).
struct DeviceQuantized {
  int64_t rows = 0, cols = 0;
  const Format* format = nullptr;
  ScaleBlock block;
  Format::ScaleOp op = Format::ScaleOp::Multiply;
  DeviceBuffer<uint8_t> codes;
  DeviceBuffer<float> amax, quant_scales, dequant_scales;
  DeviceBuffer<uint8_t> scale_codes; ///< MX rules only (else empty)
  std::string strategy;
};

/// Why the device cannot run `cfg` for `fmt` (non-RNE rounding, formats the kernel cannot
/// encode, block < 1); empty when it can.
std::string deviceQuantizeUnsupportedReason(const ScalingConfig& cfg, const Format& fmt);

/// Quantizes the device tensor x [rows, cols] (row-major float32) with a current-scaling
/// strategy, asynchronously on `stream`. Throws std::invalid_argument when unsupported (reason
/// above) or for empty shapes, GpuError on CUDA failures (e.g. out of memory).
DeviceQuantized quantizeOnDevice(const float* x, int64_t rows, int64_t cols, const Format& fmt,
                                 const ScalingConfig& cfg, Axis contraction, cudaStream_t stream);

/// Copies a device result back (synchronises `stream`). stats are not computed on the device
/// and stay zero.
QuantizedTensor toHost(const DeviceQuantized& q, cudaStream_t stream);

} // namespace fp8lab::gpu

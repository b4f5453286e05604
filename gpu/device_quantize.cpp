#include "device_quantize.h"

#include "quantize_kernels.h"

#include <stdexcept>

namespace fp8lab::gpu {

std::string deviceQuantizeUnsupportedReason(const ScalingConfig& cfg, const Format& fmt) {
  // Every ScaleRule runs on the device: the block-scale kernel calls the same blockScaleFromAmax.
  if (cfg.encode.rounding != Rounding::NearestEven)
    return std::string("the GPU quantize kernel rounds to nearest even only; ") + toString(cfg.encode.rounding) +
           " rounding runs on the CPU";
  if (cfg.encode.specials != SpecialsPolicy::Cuda) return "the GPU quantize kernel follows CUDA's specials policy only";
  if (cfg.block < 1) return "scale block must be at least 1";
  try {
    (void)fmt.rneConstants(cfg.encode.saturate);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

DeviceQuantized quantizeOnDevice(const float* x, int64_t rows, int64_t cols, const Format& fmt,
                                 const ScalingConfig& cfg, Axis contraction, cudaStream_t stream) {
  const std::string why = deviceQuantizeUnsupportedReason(cfg, fmt);
  if (!why.empty()) throw std::invalid_argument("quantizeOnDevice: " + why);
  if (rows < 1 || cols < 1) throw std::invalid_argument("quantizeOnDevice: empty tensor");
  DeviceQuantized q;
  q.rows = rows;
  q.cols = cols;
  q.format = &fmt;
  q.block = scaleBlockFor(cfg, rows, cols, contraction);
  q.op = cfg.op;
  q.strategy = cfg.name + " (GPU)";
  const size_t nblocks =
      static_cast<size_t>(((rows + q.block.rows - 1) / q.block.rows) * ((cols + q.block.cols - 1) / q.block.cols));
  const bool mx = isMxRule(cfg.rule);
  q.codes = DeviceBuffer<uint8_t>(static_cast<size_t>(rows * cols));
  q.amax = DeviceBuffer<float>(nblocks);
  q.quant_scales = DeviceBuffer<float>(nblocks);
  q.dequant_scales = DeviceBuffer<float>(nblocks);
  if (mx) q.scale_codes = DeviceBuffer<uint8_t>(nblocks);
  amaxBlocks(x, rows, cols, q.block, q.amax.get(), stream, ruleAmaxPropagatesNaN(cfg.rule));
  blockScalesFromAmax(q.amax.get(), nblocks, scaleRuleParams(cfg, fmt), q.quant_scales.get(), q.dequant_scales.get(),
                      mx ? q.scale_codes.get() : nullptr, stream);
  const bool divide = cfg.op == Format::ScaleOp::Divide;
  quantizeBlocks(x, q.codes.get(), rows, cols, q.block, divide ? q.dequant_scales.get() : q.quant_scales.get(), divide,
                 fmt.rneConstants(cfg.encode.saturate), stream);
  return q;
}

QuantizedTensor toHost(const DeviceQuantized& q, cudaStream_t stream) {
  QuantizedTensor t;
  t.rows = q.rows;
  t.cols = q.cols;
  t.format = q.format;
  t.block = q.block;
  t.scale_op = q.op;
  t.strategy = q.strategy;
  t.codes.resize(q.codes.size());
  t.dequant_scales.resize(q.dequant_scales.size());
  t.quant_scales.resize(q.quant_scales.size());
  t.scale_codes.resize(q.scale_codes.size());
  q.codes.download(t.codes.data(), t.codes.size(), stream);
  q.dequant_scales.download(t.dequant_scales.data(), t.dequant_scales.size(), stream);
  q.quant_scales.download(t.quant_scales.data(), t.quant_scales.size(), stream);
  q.scale_codes.download(t.scale_codes.data(), t.scale_codes.size(), stream);
  FP8LAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  t.stats.elements = q.rows * q.cols;
  return t;
}

} // namespace fp8lab::gpu

// FP8 Lab GPU core — amax, quantize and delayed-scaling kernels (launchers; host-callable).
//
// All tensors are row-major float32 [rows, cols] in device memory. Scale granularity is a
// ScaleBlock (core/scaling/quantized_tensor.h): per tensor = [rows, cols], per row = [1, cols],
// per column = [rows, 1], 1x128 = [1, 128], 128x128 = [128, 128], MX block-32 = [1, 32] or
// [32, 1]; partial edge blocks allowed. Block-grid arrays (amax, scales) are row-major over
// [ceil(rows/block.rows), ceil(cols/block.cols)], exactly as QuantizedTensor::dequant_scales.
//
// amax = max |x| over a block. By default NaN elements are ignored (fmaxf / IEEE maxNum, as TE's
// cast and amax kernels; an all-NaN block has amax 0); with nan_propagates a NaN element makes
// the block's amax NaN (torch.max / jnp.max: torchao, DeepGEMM, MX FLOOR/CEIL presets).
// ±Inf gives +Inf, −0 counts as 0.
// Quantize: code = rneEncode(x, s) (core/formats/rne_encode.h: the float32 IEEE product /
// quotient, RNE, saturating or not), the element function Format::encodeBulk runs on the host.
// Block scales: blockScaleFromAmax (core/scaling/scale_rules.h); the delayed-scaling update:
// delayedScalingUpdate (core/scaling/delayed_update.h). One source for host and device.
// Every launcher checks the launch (cudaGetLastError) and throws GpuError; all are
// asynchronous on `stream` (nullptr = the legacy default stream).
#pragma once

#include "formats/rne_encode.h"
#include "scaling/delayed_update.h"
#include "scaling/quantized_tensor.h"
#include "scaling/scale_rules.h"

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace fp8lab::gpu {

/// out[block grid] = amax of each block (device pointers; out is overwritten, not accumulated).
/// Throws std::invalid_argument for empty shapes or blocks < 1.
void amaxBlocks(const float* x, int64_t rows, int64_t cols, ScaleBlock block, float* out, cudaStream_t stream,
                bool nan_propagates = false);

/// *out = max |x[i]| for i < n (device pointers). NaN ignored unless nan_propagates.
void amaxTensor(const float* x, size_t n, float* out, cudaStream_t stream, bool nan_propagates = false);

/// For i < n: blockScaleFromAmax(amax[i], p) (core/scaling/scale_rules.h) → quant[i], dequant[i],
/// and for MX rules the E8M0 byte codes[i] (codes may be null). Device pointers; build p with
/// scaleRuleParams (core/scaling/scaling.h).
void blockScalesFromAmax(const float* amax, size_t n, const ScaleRuleParams& p, float* quant, float* dequant,
                         uint8_t* codes, cudaStream_t stream);

/// codes[i] = encode(x[i] op scale[0]) for i < n; `scale` is a device pointer (so a scale
/// computed on the device needs no round trip). divide = false: x·s (TE, torchao); true: x/s
/// (Flax, DeepSeek-V3 act_quant).
void quantizeTensor(const float* x, uint8_t* codes, size_t n, const float* scale, bool divide,
                    const RneEncodeConstants& k, cudaStream_t stream);

/// codes[i,j] = encode(x[i,j] op scales[block of (i,j)]) with the block grid layout above.
void quantizeBlocks(const float* x, uint8_t* codes, int64_t rows, int64_t cols, ScaleBlock block, const float* scales,
                    bool divide, const RneEncodeConstants& k, cudaStream_t stream);

/// Per-tensor current scaling on the device (TE compute_scale_from_amax, recipe_common.cuh,
/// eps = 0): from *amax writes quant = fp8_max / amax (IEEE division; 1.0 when amax is 0, Inf or
/// NaN; FLT_MAX when the quotient is Inf; power-of-two rounded down when pow2) and
/// dequant = 1 / quant.
void currentScaleFromAmax(const float* amax, float fp8_max, bool pow2, float* quant, float* dequant,
                          cudaStream_t stream);

/// Delayed-scaling update for n tensors at once: delayedScalingUpdate (core/scaling/
/// delayed_update.h, the function DelayedScaling::update runs on the host) per tensor.
/// hist: [L, n] row-major (tensor t's history at hist[i·n + t], TE's layout); scale: [n] in the
/// preset's convention, updated in place; scale_inv: [n] (may be null) receives 1/scale;
/// amax_now: [n] the amax of the step just taken. Device pointers.
void delayedScalingUpdateBatch(float* hist, int n, int L, float* scale, float* scale_inv, const float* amax_now,
                               const DelayedUpdateParams& params, cudaStream_t stream);

} // namespace fp8lab::gpu

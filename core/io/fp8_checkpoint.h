// FP8 Lab — FP8 checkpoints in safetensors: reading a weight stored as FP8 codes with its scales,
// writing trained weights in the same layouts, and re-quantizing a stored weight under another
// recipe. docs/checkpoints.md has the conventions with their sources.
//
// A weight `<X>.weight` of dtype F8_E4M3 (→ Format E4M3FN) or F8_E5M2 (→ E5M2), shape
// [rows, cols] = [out_features, in_features] (PyTorch nn.Linear, y = x · Wᵀ), has its scale
// beside it, always a **dequant** factor, x ≈ decode(code) · scale:
//   - `<X>.weight_scale`, float32 [] or [1]: one scale per tensor (vLLM
//     model_executor/layers/quantization/fp8.py, Fp8LinearMethod: PerTensorScaleParameter;
//     compressed-tensors "tensor" strategy);
//   - `<X>.weight_scale`, float32 [rows, 1] or [rows]: one scale per output channel
//     (compressed-tensors "channel" strategy, vLLM compressed_tensors_w8a8_fp8.py:
//     ChannelQuantScaleParameter of shape (sum(output_partition_sizes), 1));
//   - `<X>.weight_scale_inv` (or `weight_scale` in compressed-tensors' block strategy), float32
//     [ceil(rows/128), ceil(cols/128)]: one scale per 128×128 block, partial blocks at the bottom and
//     right edges (DeepSeek-V3 inference/kernel.py weight_dequant: y = x · s[i/128][j/128];
//     fp8_cast_bf16.py finds it as f"{weight_name}_scale_inv"; vLLM fp8.py registers
//     BlockQuantScaleParameter under that name "intentional for deepseekv3"). Despite "_inv" it
//     multiplies the codes. A weight that fits in one block has a [1, 1] grid.
// Scale dtypes F32, BF16 and F16 are read (the latter two widened exactly to float32).
#pragma once

#include "io/tensor_import.h"
#include "scaling/quantized_tensor.h"
#include "scaling/scaling.h"

#include <map>
#include <string>
#include <vector>

namespace fp8lab {

/// How a checkpoint weight's scales cover it.
enum class Fp8ScaleLayout {
  PerTensor,  ///< one scale: [] or [1] (also a [1, 1] `weight_scale`)
  PerChannel, ///< one scale per row (output channel): [rows, 1] or [rows]
  Block,      ///< one scale per block×block tile: [ceil(rows/block), ceil(cols/block)]; a
              ///< `weight_scale_inv` [1, 1] is the grid of a weight that fits in one block
};
/// "per_tensor", "per_channel", "block128x128" (the block edge in the name).
std::string toString(Fp8ScaleLayout l, int64_t block = 128);

/// Options of importFp8Checkpoint.
struct Fp8ImportOptions {
  /// The scale tensor's name; "" = by the naming convention: "<tensor>_scale_inv" when present,
  /// else "<tensor>_scale" (`X.weight` → `X.weight_scale_inv` / `X.weight_scale`).
  std::string scale_name;
  int64_t block = 128; ///< edge of the square scale blocks of the Block layout (DeepSeek-V3: 128)
};

/// One FP8 tensor of a checkpoint as listed by listFp8Checkpoint (header only).
struct Fp8CheckpointEntry {
  std::string name;                 ///< e.g. "model.layers.0.mlp.down_proj.weight"
  std::string dtype;                ///< "F8_E4M3" or "F8_E5M2"
  std::vector<int64_t> shape;       ///< as stored
  std::string scale_name;           ///< the scale found by the convention; "" = none
  std::string scale_dtype;          ///< its dtype
  std::vector<int64_t> scale_shape; ///< its shape
  std::string layout;               ///< toString(Fp8ScaleLayout), or "" when no layout fits
  std::string problem;              ///< why the tensor cannot be imported; "" = importable
};

/// The FP8 tensors (F8_E4M3, F8_E5M2) of a checkpoint with the scale each would be read with, in
/// name order, and the tensors of another 8-bit float dtype (F8_E4M3FNUZ, ...) that are not a
/// weight's scale, listed with the dtype as their problem. `path` is a safetensors file or a
/// Hugging Face shard index ({"weight_map": {tensor: shard file}}, shards beside it), taken as an
/// index when it is named `*.index.json` or, whatever its name, when it is JSON text (its first
/// non-space byte '{', no NUL in its first 8 bytes) with a top-level "weight_map" object.
/// Errors: the header errors of listSafetensors (for a shard, its `where` is "SHARD (named by
/// INDEX for N tensors, first 'T')"); an index that is not JSON or has no "weight_map" object (for
/// a JSON file of another name: "a JSON file, not a safetensors file; …"); a shard path outside the
/// index's directory. Per-tensor problems go into `problem`, in importFp8Checkpoint's words where it
/// refuses the same thing: a dtype that is not read ("dtype F8_E4M3FNUZ is not read (F8_E4M3,
/// F8_E5M2 are)"), a shape that is not a non-empty 2-D, data_offsets whose span does not fit the
/// shape and dtype (of the weight, or "scale NAME: …" of its scale), no scale, a scale dtype other
/// than F32 / BF16 / F16, a scale whose shape fits no layout. Only headers are read: the scale
/// values (importFp8Checkpoint checks them) are not.
/// A tensor the index puts in a shard that lacks it ("misplaced") is no error: each gives a
/// Warning (MalformedInput) at "<path>:<tensor>" saying which shard the index names and which
/// shard of the index, if any, holds the name; the other tensors are listed as usual. A misplaced
/// FP8 tensor that another shard holds is listed with that shard's dtype and shape and the
/// misplacement as its `problem`, as is an FP8 weight whose scale is misplaced.
Result<std::vector<Fp8CheckpointEntry>> listFp8Checkpoint(const std::string& path, int64_t block = 128);

/// Reads FP8 weight `tensor_name` of a safetensors file with its scales into a QuantizedTensor:
/// codes exactly as stored (row-major [rows, cols]), format E4M3FN (F8_E4M3) or E5M2 (F8_E5M2),
/// `dequant_scales` the stored float32 scales (x ≈ decode(code) · scale), `block` from the layout
/// (PerTensor: [rows, cols]; PerChannel: [1, cols]; Block: [block, block]), `strategy` naming the
/// file, tensor, scale and layout. `quant_scales` is left empty (a checkpoint stores no quant
/// multiplier).
/// `path` is a safetensors file or a shard index, as for listFp8Checkpoint.
/// Errors (nothing is read past the first): listFp8Checkpoint's file errors; NotFound (tensor, or
/// no scale by either conventional name: the message names both), MalformedInput (the weight's
/// dtype is not F8_E4M3 / F8_E5M2, data_offsets that do not fit the shape, the scale's dtype not
/// F32 / BF16 / F16; a scale that is not finite or is ≤ 0, named by index and block: "scale index
/// 4 (block (2, 0)) is 0: a dequant scale is > 0 (…)" — no FP8 recipe stores one;
/// the weight or its scale misplaced by the index: the message names the tensor, the shard the
/// index names and the shard that holds it, which is not read instead), WrongShape (weight not
/// 2-D; a scale whose shape fits no layout — the message names both shapes and the shapes the rule
/// allows).
/// Warning (MalformedInput) at "<path>:<tensor>": codes that decode to NaN (E4M3FN 0x7F / 0xFF,
/// E5M2 0x7D-0x7F / 0xFD-0xFF), with their count and the first index; they are legal codes and
/// are read as NaN.
Result<QuantizedTensor> importFp8Checkpoint(const std::string& path, const std::string& tensor_name,
                                            const Fp8ImportOptions& opt = {});

/// The element format of FP8 tensor `tensor_name` (header only): E4M3FN or E5M2; errors as
/// importFp8Checkpoint for a missing or misplaced tensor or a non-FP8 dtype.
Result<const Format*> fp8CheckpointFormat(const std::string& path, const std::string& tensor_name);

/// `q` transposed: codes [cols, rows], block [block.cols, block.rows], scale grid transposed
/// (dequant scales, quant scales and scale codes alike). A Linear weight W [out, in] gives the GEMM
/// operand B = Wᵀ [in, out] of y = x · Wᵀ.
QuantizedTensor transposeQuantized(const QuantizedTensor& q);

// ---- writing --------------------------------------------------------------------------------

/// One tensor to write: dtype ("F8_E4M3", "F8_E5M2", "F32", "U8", ...), shape and little-endian raw
/// bytes (product(shape) · element size).
struct SafetensorsTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;
};

/// Writes a safetensors file (Hugging Face safetensors format: 8-byte little-endian header length
/// N, N bytes of JSON header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__":
/// {string: string}}, padded with spaces to a multiple of 8; then the data, tensors in name order,
/// offsets relative to the end of the header). Atomic: written to a temporary file beside `path`,
/// fsync'ed, renamed over `path`, directory fsync'ed; on any failure the previous file is kept.
/// Errors: InvalidArgument (duplicate or empty name, a byte count that does not match dtype and
/// shape, "__metadata__" as a tensor name), WriteFailed.
Status writeSafetensors(const std::string& path, std::vector<SafetensorsTensor> tensors,
                        const std::map<std::string, std::string>& metadata = {});

/// The tensors that store `q` as FP8 weight `<prefix>.weight` [rows, cols] with its scale in
/// `layout`: PerTensor "<prefix>.weight_scale" F32 [1]; PerChannel "<prefix>.weight_scale" F32
/// [rows, 1] (compressed-tensors); Block "<prefix>.weight_scale_inv" F32 [blockRows, blockCols]
/// (DeepSeek-V3 naming), also for a weight within one block ([1, 1]), since the block readers look
/// up `<X>.weight_scale_inv` on every layer — all dequant factors, q.dequant_scales as stored.
/// Throws std::invalid_argument for a format other than E4M3FN / E5M2 or a `q` whose scale blocks
/// do not fit `layout` (PerTensor: one block covering the tensor; PerChannel: [1, ≥ cols]; Block:
/// square).
std::vector<SafetensorsTensor> fp8WeightTensors(const std::string& prefix, const QuantizedTensor& q,
                                                Fp8ScaleLayout layout);

/// A float32 tensor [rows, cols] (rows 0: a vector [cols]) as an F32 SafetensorsTensor.
SafetensorsTensor float32Tensor(const std::string& name, const std::vector<float>& v, int64_t rows, int64_t cols);

/// Quantizes a float32 weight [rows, cols] for a checkpoint layout, in E4M3FN (default) or E5M2:
/// PerTensor with Transformer Engine current scaling (preset te_current: quant multiplier s =
/// max/amax in float32, stored dequant scale = TE's scale_inv = f32(1/s)); PerChannel one scale per
/// row = output channel (preset per_row: torchao's rule s = f32(max / max(amax, 1e-12)) computed in
/// float64, stored as `weight_scale` [rows, 1] = f32(1/s), the compressed-tensors "channel"
/// layout); Block with DeepSeek-V3's 128×128 rule (preset deepgemm_128x128: sf = max(amax,
/// 1e-4)/max per block, the stored weight_scale_inv). Throws std::invalid_argument for another
/// format or a bad shape.
QuantizedTensor quantizeForCheckpoint(const std::vector<float>& w, int64_t rows, int64_t cols, Fp8ScaleLayout layout,
                                      const Format& format = Format::E4M3FN());

// ---- re-quantizing --------------------------------------------------------------------------

/// A stored FP8 weight re-quantized under another recipe.
struct Fp8Requantized {
  std::vector<double> original; ///< decode(code) · scale of the stored tensor, exact in float64
  QuantizedTensor requantized;  ///< quantize(original) with the preset (from float64)
  double sqnr_db = 0;           ///< 10·log10(Σ original² / Σ (requantized − original)²); +Inf when equal
  int64_t codes_changed = 0;    ///< elements whose code differs from the stored one (same format only)
  bool same_format = false;     ///< the preset's format is the stored one (codes comparable)
};

/// Dequantizes `stored` exactly (float64) and quantizes it with `preset` in `format` along
/// `contraction` (Cols: the tensor is an A [M, K]; Rows: a B [K, N]). Throws std::invalid_argument
/// for a format wider than 8 bits (as quantize()).
Fp8Requantized requantizeCheckpointTensor(const QuantizedTensor& stored, const Format& format,
                                          const ScalingConfig& preset, Axis contraction = Axis::Cols);

} // namespace fp8lab

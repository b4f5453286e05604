// FP8 Lab — `fp8lab-cli quantize`: one small tensor quantized with a scaling preset (current,
// delayed or NVFP4, with the options each one takes), and the report of its codes, scales in
// both conventions, scale codes and counts, as JSON and text.
#pragma once

#include "formats/format.h"
#include "json/json_document.h"
#include "scaling/quantized_tensor.h"
#include "scaling/scaling.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// Every preset quantizeWithPreset takes: the current-scaling presets (scalingPresets()), then the
/// NVFP4 ones (nvfp4Presets()), ", "-separated.
std::string quantizePresetList();

/// The element format of a quantize request: `name` (Format::byName), E2M1 when empty for an
/// NVFP4 preset. `format` is set whenever the name resolved, also when `error` then refuses it
/// (an NVFP4 preset with another format, a format wider than 8 bits); `error` is "" when usable.
struct QuantizeFormatChoice {
  const Format* format = nullptr;
  std::string error;
};
QuantizeFormatChoice quantizeFormat(const std::string& scaling, const std::string& name);

/// A tensor shape "RxC" (also "R,C", "R*C", "RXC"; ASCII white space around the parts allowed;
/// decimal digits within int64): true with *rows and *cols set, false otherwise.
bool parseShapeText(std::string_view text, int64_t* rows, int64_t* cols);

/// The contraction axis named `name` (lower case): "rows", "row", "0" or "cols", "col",
/// "columns", "1".
std::optional<Axis> parseAxisName(std::string_view name);

/// The options of a quantize request, by flag name without "--" ("block", "pow2", "margin", ...).
struct QuantizeFlags {
  std::function<bool(const char* flag)> is_set;       ///< whether the user gave the option
  std::function<std::string(const char* flag)> value; ///< its value, or its default when not given
};

/// A tensor quantized for the report: the tensor, the rotated input of the Hadamard (RHT)
/// presets (what the codes encode, row-major), and a line saying how the preset got its scale.
struct QuantizeOutcome {
  int64_t rows = 0, cols = 0; ///< the tensor's shape
  QuantizedTensor q;
  std::vector<float> rotated;
  std::string note;
};

/// Quantizes the row-major [rows, cols] `values` into `fmt` with the preset `scaling` — an NVFP4
/// preset (nvfp4Preset; `fmt` E2M1), a delayed one ("*_delayed": its state first replays the
/// flag amax-history, oldest first, then this tensor is its step) or a current-scaling one
/// (scalingPreset) — along `axis` (the contraction axis), with the element rounding `enc` and
/// `seed` for stochastic rounding. The values are quantized as float32 unless `float64`.
/// `flags` adjusts the preset: block, pow2 / no-pow2, amax-epsilon, margin, history-len, algo,
/// amax-history; axis, rounding, no-saturate, seed, float64 are checked for applicability only.
/// Every flag the preset does not use is refused, naming why (an option that did nothing would
/// report a result the user did not ask for). Returns nullopt with *error set (one line naming
/// the flag) on a refusal; DelayedScaling's std::invalid_argument passes through.
std::optional<QuantizeOutcome> quantizeWithPreset(const std::string& scaling, const Format& fmt,
                                                  const std::vector<double>& values, int64_t rows, int64_t cols,
                                                  Axis axis, const EncodeOptions& enc, uint64_t seed, bool float64,
                                                  const QuantizeFlags& flags, std::string* error);

/// The report's JSON: format, scaling (`scaling` as given), strategy, shape [rows, cols], block,
/// scale_grid, scale_op ("divide" | "multiply"), codes (hex), dequantized (decode(code) times the
/// element's factor), rotated (RHT presets), dequant_scales (each block's factor: for two-level
/// formats the E4M3 block scale times the tensor level, block_scales listing the E4M3 values),
/// quant_scales, scale_codes and scale_format (MX, NVFP4), tensor_scale (NVFP4: kind, amax,
/// value, value_f32_hex, convention, fp4_fp8_max for TE), and the counts saturated, underflow,
/// subnormal, nan_inputs, inf_inputs, zero_inputs. Non-finite numbers are "nan", "inf", "-inf".
Json quantizeReportJson(const Format& fmt, const std::string& scaling, const QuantizeOutcome& r);

/// The report as text: format and strategy, the note, shape, block and grid with the scale
/// convention, the tensor level of NVFP4, one line per block scale, one line per element (index,
/// input — shortest float64 text with `float64`, else float32 —, rotated, code, dequantized) and
/// the counts. `values` are the inputs quantizeWithPreset took.
std::string quantizeReportText(const Format& fmt, const QuantizeOutcome& r, const std::vector<double>& values,
                               bool float64);

} // namespace fp8lab

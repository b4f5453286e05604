// FP8 Lab — what `fp8lab-cli checkpoint list | show | requantize` print about an FP8 checkpoint
// (fp8_checkpoint.h): the JSON objects of --json and the text lines. Numbers in JSON: codes and
// counts as integers, scales and values as numbers or "nan", "inf", "-inf" (json/json_number.h);
// in text, the shortest round-trip decimal (core/common/number_text.h).
#pragma once

#include "io/fp8_checkpoint.h"
#include "json/json_document.h"

#include <string>
#include <vector>

namespace fp8lab {

/// The checkpoint's FP8 tensors as JSON: an array of {"name", "dtype", "shape", "scale",
/// "scale_dtype", "scale_shape", "layout", "problem"} in listFp8Checkpoint's order.
Json fp8CheckpointListJson(const std::vector<Fp8CheckpointEntry>& entries);

/// The same as text, a line per tensor: "NAME  DTYPE [r, c]  LAYOUT: SCALE SCALE_DTYPE [sr, sc]",
/// or "NAME  DTYPE [r, c]  not importable: PROBLEM"; "no FP8 tensors (F8_E4M3, F8_E5M2) in PATH"
/// when there is none.
std::string fp8CheckpointListText(const std::string& path, const std::vector<Fp8CheckpointEntry>& entries);

/// How many elements `checkpoint show` lists at most (the first ones, row-major).
inline constexpr int64_t kFp8ShownElements = 4096;

/// Weight `tensor` as read (importFp8Checkpoint) as JSON: {"tensor", "format", "shape": [rows,
/// cols], "block": [rows, cols], "strategy", "dequant_scales", "codes" and "values" (decode(code) ·
/// scale) of the first kFp8ShownElements elements, "shown": their count}.
Json fp8TensorJson(const std::string& tensor, const QuantizedTensor& t);

/// The same as text: "STRATEGY: FORMAT [rows, cols], scale blocks [br, bc], x = decode(code) *
/// scale", the first 64 scales ("scales: s0 s1 ... "), then a line "(i, j) 0xCC = value" per shown
/// element and, when not all are shown, "... (first N elements shown)".
std::string fp8TensorText(const QuantizedTensor& t);

/// A re-quantized weight (requantizeCheckpointTensor) as JSON: {"tensor", "stored" (the stored
/// tensor's strategy), "scaling" (the preset), "format", "block", "dequant_scales", "sqnr_db",
/// "saturated", "underflow", "codes"}, with "scale_codes" when the recipe has scale codes and
/// "codes_changed" when the format is the stored one.
Json fp8RequantizedJson(const std::string& tensor, const std::string& stored, const std::string& scaling,
                        const Fp8Requantized& rq);

/// The same as text: the stored strategy, the recipe with its scale blocks and count, the SQNR in
/// dB, the codes changed (same format only), the saturated and underflow counts.
std::string fp8RequantizedText(const std::string& stored, const std::string& scaling, const Fp8Requantized& rq);

} // namespace fp8lab

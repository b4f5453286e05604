// FP8 Lab — checks of an operand given as codes and scales (a kernel's own buffers): the mistakes
// a kernel developer makes with scale files, found per block, and what the operand holds once
// dequantized. Used by the GEMM run for pre-quantized operands (gemm_run.h, PreQuantizedSource).
#pragma once

#include "gemm/kernel_check.h"
#include "scaling/quantized_tensor.h"
#include "session/session.h"

#include <string>
#include <vector>

namespace fp8lab {

/// What the checks found beyond their issues.
struct PreQuantizedFindings {
  int64_t nan_codes = 0;  ///< element codes that decode to NaN (E4M3FN 0x7F / 0xFF, E5M2 0x7D..0x7F, ...)
  int64_t inf_codes = 0;  ///< element codes that decode to ±Inf (E5M2 0x7C / 0xFC)
  ElementIndex first_nan; ///< the first NaN code, row-major (operand coordinates)
  /// The lines of D a NaN code makes NaN: rows of A (A) or columns of B (B) that hold one.
  std::vector<int64_t> nan_lines;
};

/// Checks the scales and codes of pre-quantized operand `q` ("a" or "b" = `key`; its scale grid
/// row-major over q's blocks; `scales` names the scale file for messages, `scale_dtype` the file's
/// dtype as the importer read it: "<f2", "F16", "BF16", ... or "" for code files).
/// Refused (Error issues at "<key>.scales", naming up to five blocks (row, col) of the scale grid
/// and the count): NaN or infinite scales (E8M0 0xFF, E4M3 0x7F / 0xFF), negative float scales, E4M3
/// scale codes with the sign bit set (NVFP4 block scales are unsigned UE4M3: cuBLASLt
/// VEC16_UE4M3). Warned: a zero scale over a block that holds non-zero codes (they all dequantize
/// to 0), float16 scales below 2^-14 and bfloat16 scales below 2^-126 (subnormal: fewer significant
/// bits than the kernel may assume). NaN codes among the elements are warned with what they do:
/// every output of D in a row of A (column of B) that holds one is NaN. Returns false after an
/// Error issue.
bool checkPreQuantizedOperand(const QuantizedTensor& q, const std::string& key, const std::string& scales,
                              const std::string& scale_dtype, Status* st, PreQuantizedFindings* findings);

/// An Info issue with the dequantized operand's range ("A dequantized: [-3.5, 4.25], amax 4.25,
/// median |x| 0.61 over 65536 elements"), and a Warning when the scales look like quant multipliers
/// (x_q = cast(x · s)) given where FP8 Lab takes dequant factors (x ≈ decode(code) · s): the median
/// effective scale is > 1 and the dequantized amax is at least max_finite² / 4 of the element
/// format — what inverted scales give for data of magnitude ≤ 4 (amax_deq = max_finite² / amax).
/// `deq` holds q's dequantized values, row-major.
void describeDequantizedOperand(const QuantizedTensor& q, const std::vector<double>& deq, const std::string& key,
                                Status* st);

} // namespace fp8lab

// FP8 Lab — what quantization did to an operand (saturated / flushed-to-zero / subnormal
// counts) and histograms of magnitudes in log2 binades aligned with a format's exponent grid.
#pragma once

#include "formats/format.h"
#include "scaling/quantized_tensor.h"

#include <cstdint>
#include <vector>

namespace fp8lab {

/// Counts over one quantized operand. Percentages are of `elements`.
struct OperandStats {
  int64_t elements = 0;
  int64_t saturated = 0; ///< finite inputs whose scaled magnitude overflows (OCP rule, Format::rneFiniteLimit)
  int64_t flushed = 0;   ///< non-zero finite inputs that became zero (flushed to zero)
  int64_t subnormal = 0; ///< results that are subnormal codes
  int64_t nan = 0;       ///< NaN inputs
  int64_t inf = 0;       ///< ±Inf inputs
  int64_t zero = 0;      ///< exactly zero inputs
  double saturatedPercent() const { return percent(saturated); }
  double flushedPercent() const { return percent(flushed); }
  double subnormalPercent() const { return percent(subnormal); }
  double percent(int64_t c) const {
    return elements > 0 ? 100.0 * static_cast<double>(c) / static_cast<double>(elements) : 0.0;
  }
};

/// The counts the quantizer gathered (QuantizedTensor::stats), as OperandStats.
OperandStats operandStats(const QuantizeStats& s);

/// Recounts from the original float32 values x [rows·cols, row-major] and their quantized
/// form: scaled value y as the cast saw it, in float32: x · quant_scale (scale_op Multiply with
/// quant_scales present) or x / dequant_scale of the element's block; saturated = finite x ≠ 0
/// with |y| > rneFiniteLimitF32(), i.e. whose round-to-nearest result with an unbounded exponent is
/// beyond max finite (OCP OFP8 v1.0 §3; the definition core/scaling's QuantizeStats uses); flushed = finite x ≠ 0 whose
/// code decodes to 0; subnormal = codes of class Subnormal. Throws std::invalid_argument when sizes disagree.
OperandStats operandStats(const float* x, const QuantizedTensor& q);

/// Histogram of |x|·scale by binade: bin b counts values with 2^(min_exponent+b) ≤ |v| <
/// 2^(min_exponent+b+1). Every binade of a format (normal and subnormal) is exactly one bin,
/// so bars line up with the format's exponent grid; the format's landmarks are given for the
/// plot (min subnormal, min normal, max finite exponents).
struct BinadeHistogram {
  int min_exponent = 0;        ///< exponent of the first bin
  std::vector<int64_t> counts; ///< one per binade, min_exponent upward
  int64_t zeros = 0;           ///< exact zeros
  int64_t nonfinite = 0;       ///< NaN / ±Inf
  int64_t below = 0;           ///< non-zero values under 2^min_exponent
  int64_t above = 0;           ///< values at or over 2^(min_exponent + counts.size())
  // the format's grid (unbiased exponents), for reference lines
  int format_min_subnormal_exponent = 0; ///< floor(log2 minSubnormal)
  int format_min_normal_exponent = 0;    ///< floor(log2 minNormal)
  int format_max_exponent = 0;           ///< floor(log2 maxFinite)
  int maxExponent() const { return min_exponent + static_cast<int>(counts.size()) - 1; }
};

/// Histogram of n values v = x·scale (scale: e.g. the quant multiplier, so the bins show where
/// values land in the format). Bins span the format's binades widened by `margin` binades on
/// both sides. Throws std::invalid_argument for a non-finite or non-positive scale or margin < 0.
BinadeHistogram binadeHistogram(const float* x, int64_t n, const Format& format, double scale = 1.0, int margin = 4);

/// Histogram of the decoded codes of q (unscaled, i.e. in the format's own units).
BinadeHistogram binadeHistogram(const QuantizedTensor& q, int margin = 4);

} // namespace fp8lab

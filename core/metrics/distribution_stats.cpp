#include "metrics/distribution_stats.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp8lab {

OperandStats operandStats(const QuantizeStats& s) {
  OperandStats o;
  o.elements = s.elements;
  o.saturated = s.saturated;
  o.flushed = s.underflow;
  o.subnormal = s.subnormal;
  o.nan = s.nan_inputs;
  o.inf = s.inf_inputs;
  o.zero = s.zero_inputs;
  return o;
}

OperandStats operandStats(const float* x, const QuantizedTensor& q) {
  if (!q.format) throw std::invalid_argument("operand stats: the quantized tensor has no format");
  const int64_t n = q.rows * q.cols;
  if (static_cast<int64_t>(q.codes.size()) != n || (n > 0 && !x))
    throw std::invalid_argument("operand stats: " + std::to_string(q.codes.size()) + " codes for a " +
                                std::to_string(q.rows) + "x" + std::to_string(q.cols) + " tensor");
  if (n > 0 && static_cast<int64_t>(q.dequant_scales.size()) != q.blockRows() * q.blockCols())
    throw std::invalid_argument("operand stats: scale count does not match the block grid");
  OperandStats o;
  o.elements = n;
  const Format& f = *q.format;
  const std::vector<float>& table = f.decodeTable();
  const float limit = f.rneFiniteLimitF32(); // OCP overflow rule (Format::rneFiniteLimit)
  std::vector<uint8_t> subnormal(f.codeCount(), 0);
  for (uint32_t c = 0; c < f.codeCount(); ++c) subnormal[c] = f.classify(c) == CodeClass::Subnormal;
  const bool multiply = q.scale_op == Format::ScaleOp::Multiply && q.quant_scales.size() == q.dequant_scales.size();
  for (int64_t i = 0; i < q.rows; ++i) {
    const size_t row_blocks = static_cast<size_t>((i / q.block.rows) * q.blockCols());
    for (int64_t j = 0; j < q.cols; ++j) {
      const size_t k = static_cast<size_t>(i * q.cols + j);
      const float v = x[k];
      const uint8_t code = q.codes[k];
      o.subnormal += subnormal[code];
      if (std::isnan(v)) {
        ++o.nan;
        continue;
      }
      if (std::isinf(v)) {
        ++o.inf;
        continue;
      }
      if (v == 0) {
        ++o.zero;
        continue;
      }
      // the scaled value as the cast saw it (float32 arithmetic, the quantizer's own op)
      const size_t blk = row_blocks + static_cast<size_t>(j / q.block.cols);
      const float y = multiply ? v * q.quant_scales[blk] : v / q.dequant_scales[blk];
      if (std::fabs(y) > limit) ++o.saturated;
      if (table[code] == 0.0f) ++o.flushed;
    }
  }
  return o;
}

namespace {
int floorLog2(double v) {
  int e = 0;
  (void)std::frexp(v, &e);
  return e - 1;
}

BinadeHistogram emptyFor(const Format& f, int margin) {
  if (margin < 0) throw std::invalid_argument("histogram margin must be ≥ 0");
  BinadeHistogram h;
  h.format_min_subnormal_exponent = floorLog2(f.minSubnormal());
  h.format_min_normal_exponent = floorLog2(f.minNormal());
  h.format_max_exponent = floorLog2(f.maxFinite());
  h.min_exponent = h.format_min_subnormal_exponent - margin;
  h.counts.assign(static_cast<size_t>(h.format_max_exponent + margin - h.min_exponent + 1), 0);
  return h;
}

void add(BinadeHistogram& h, double v) {
  if (!std::isfinite(v)) {
    ++h.nonfinite;
    return;
  }
  if (v == 0) {
    ++h.zeros;
    return;
  }
  const int e = floorLog2(std::fabs(v));
  if (e < h.min_exponent)
    ++h.below;
  else if (e > h.maxExponent())
    ++h.above;
  else
    ++h.counts[static_cast<size_t>(e - h.min_exponent)];
}
} // namespace

BinadeHistogram binadeHistogram(const float* x, int64_t n, const Format& format, double scale, int margin) {
  if (!(std::isfinite(scale) && scale > 0)) throw std::invalid_argument("histogram scale must be finite and > 0");
  if (n < 0 || (n > 0 && !x)) throw std::invalid_argument("histogram: bad value array");
  BinadeHistogram h = emptyFor(format, margin);
  for (int64_t i = 0; i < n; ++i) add(h, static_cast<double>(x[i]) * scale);
  return h;
}

BinadeHistogram binadeHistogram(const QuantizedTensor& q, int margin) {
  if (!q.format) throw std::invalid_argument("histogram: the quantized tensor has no format");
  BinadeHistogram h = emptyFor(*q.format, margin);
  for (uint8_t c : q.codes) add(h, q.format->decode(c));
  return h;
}

} // namespace fp8lab

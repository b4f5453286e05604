// FP8 Lab — the memory of a recipe's scales (scale_overhead.h).
#include "scaling/scale_overhead.h"

#include <stdexcept>

namespace fp8lab {

namespace {
int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
void checkShape(int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0)
    throw std::invalid_argument("scaleStorage: negative shape " + std::to_string(rows) + "x" + std::to_string(cols));
}
} // namespace

ScaleStorage scaleStorage(const ScalingConfig& cfg, int64_t rows, int64_t cols, Axis contraction) {
  checkShape(rows, cols);
  if (cfg.block < 1) throw std::invalid_argument("scaleStorage: block must be >= 1");
  ScaleStorage s;
  if (rows == 0 || cols == 0) return s;
  s.block = scaleBlockFor(cfg, rows, cols, contraction);
  s.scales = ceilDiv(rows, s.block.rows) * ceilDiv(cols, s.block.cols);
  const bool mx = isMxRule(cfg.rule);
  s.scale_bits = mx ? 8 : 32;
  s.scale_format = mx ? "E8M0" : "float32";
  s.bytes = double(s.scales) * s.scale_bits / 8.0;
  return s;
}

ScaleStorage scaleStorage(const Nvfp4Config& cfg, int64_t rows, int64_t cols, Axis contraction) {
  checkShape(rows, cols);
  ScaleStorage s;
  if (rows == 0 || cols == 0) return s;
  s.block = contraction == Axis::Cols ? ScaleBlock{1, 16} : ScaleBlock{16, 1};
  s.scales = ceilDiv(rows, s.block.rows) * ceilDiv(cols, s.block.cols);
  s.scale_bits = 8;
  s.scale_format = "E4M3FN";
  const bool two_level =
      cfg.rule == Nvfp4Rule::TransformerEngine ||
      (cfg.rule == Nvfp4Rule::TorchaoMxFormats && cfg.tensor_scale_source != Nvfp4TensorScaleSource::None);
  s.tensor_scales = two_level ? 1 : 0;
  s.bytes = double(s.scales) + 4.0 * double(s.tensor_scales);
  return s;
}

} // namespace fp8lab

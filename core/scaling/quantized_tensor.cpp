#include "scaling/quantized_tensor.h"

#include <algorithm>

namespace fp8lab {

float TensorScale::blockFactor(float s) const {
  switch (kind) {
  case Kind::None:
    return s;
  case Kind::TeAmax:
    return (s * amax) * (1.0f / fp4_fp8_max);
  case Kind::TorchaoPts:
    return value * s;
  }
  return s;
}

float TensorScale::tensorFactor() const {
  switch (kind) {
  case Kind::None:
    return 1.0f;
  case Kind::TeAmax:
    return amax * (1.0f / fp4_fp8_max);
  case Kind::TorchaoPts:
    return value;
  }
  return 1.0f;
}

float gemmTensorFactor(const TensorScale& a, const TensorScale& b) {
  using K = TensorScale::Kind;
  if (a.kind == K::None && b.kind == K::None) return 1.0f;
  if (a.kind == K::TeAmax && b.kind == K::TeAmax) return (a.amax * b.amax) * (1.0f / (a.fp4_fp8_max * b.fp4_fp8_max));
  return a.tensorFactor() * b.tensorFactor();
}

std::vector<float> QuantizedTensor::dequantize() const {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  if (out.empty()) return out;
  const float* table = format->decodeTable().data();
  // Block by block along each row: the effective factor (dequantScaleAt) once per block, then
  // decode(code) · factor in double, rounded once to float32, for the block's elements.
  const int64_t bc = blockCols();
  for (int64_t i = 0; i < rows; ++i) {
    const float* srow = dequant_scales.data() + (i / block.rows) * bc;
    const uint8_t* crow = codes.data() + i * cols;
    float* orow = out.data() + i * cols;
    for (int64_t b = 0; b < bc; ++b) {
      const float s = srow[b];
      const double f =
          static_cast<double>(tensor_scale.kind == TensorScale::Kind::None ? s : tensor_scale.blockFactor(s));
      const int64_t j1 = std::min(cols, (b + 1) * block.cols);
      for (int64_t j = b * block.cols; j < j1; ++j)
        orow[j] = static_cast<float>(static_cast<double>(table[crow[j]]) * f);
    }
  }
  return out;
}

} // namespace fp8lab

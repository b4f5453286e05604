#include "scaling/quantized_tensor.h"

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
  const std::vector<float>& table = format->decodeTable();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const size_t k = static_cast<size_t>(i * cols + j);
      out[k] = static_cast<float>(static_cast<double>(table[codes[k]]) * static_cast<double>(dequantScaleAt(i, j)));
    }
  return out;
}

} // namespace fp8lab

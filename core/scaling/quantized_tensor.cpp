#include "scaling/quantized_tensor.h"

namespace fp8lab {

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

// FP8 Lab GPU checks — operands of the exact-by-construction GEMMs (shared by the device check
// check_gpu_gemm and the host test that proves the construction exact on the CPU models).
#pragma once

#include "scaling/quantized_tensor.h"

#include <cmath>
#include <random>
#include <string>

namespace fp8lab::checks {

enum class Gran { Tensor, Outer, Block1D, Block2D };
inline const char* granName(Gran g) {
  switch (g) {
  case Gran::Tensor: return "tensor";
  case Gran::Outer: return "outer";
  case Gran::Block1D: return "1x128";
  case Gran::Block2D: return "128x128";
  }
  return "?";
}

/// Small-integer codes with power-of-two scales. role A: [rows=M, cols=K]; role B: [rows=K, cols=N].
inline QuantizedTensor intTensor(int64_t rows, int64_t cols, const Format& f, Gran g, bool is_a, uint32_t seed) {
  QuantizedTensor t;
  t.rows = rows;
  t.cols = cols;
  t.format = &f;
  switch (g) {
  case Gran::Tensor: t.block = {rows, cols}; break;
  case Gran::Outer: t.block = is_a ? ScaleBlock{1, cols} : ScaleBlock{rows, 1}; break;
  case Gran::Block1D: t.block = is_a ? ScaleBlock{1, 128} : ScaleBlock{128, 1}; break;
  case Gran::Block2D: t.block = {128, 128}; break;
  }
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> val(-4, 4), ex(-3, 1);
  t.codes.resize(static_cast<size_t>(rows * cols));
  for (auto& c : t.codes) c = static_cast<uint8_t>(f.encode(val(rng)));
  t.dequant_scales.resize(static_cast<size_t>(t.blockRows() * t.blockCols()));
  t.quant_scales.resize(t.dequant_scales.size());
  for (size_t i = 0; i < t.dequant_scales.size(); ++i) {
    t.dequant_scales[i] = std::ldexp(1.0f, ex(rng));
    t.quant_scales[i] = 1.0f / t.dequant_scales[i];
  }
  t.strategy = std::string("integers, ") + granName(g) + " power-of-two scales";
  return t;
}


} // namespace fp8lab::checks

// FP8 Lab GPU checks — operands of the exact-by-construction GEMMs (shared by the device check
// check_gpu_gemm and the host test that proves the construction exact on the CPU models).
#pragma once

#include "scaling/quantized_tensor.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace fp8lab::checks {

enum class Gran { Tensor, Outer, Block1D, Block2D };
inline const char* granName(Gran g) {
  switch (g) {
  case Gran::Tensor:
    return "tensor";
  case Gran::Outer:
    return "outer";
  case Gran::Block1D:
    return "1x128";
  case Gran::Block2D:
    return "128x128";
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
  case Gran::Tensor:
    t.block = {rows, cols};
    break;
  case Gran::Outer:
    t.block = is_a ? ScaleBlock{1, cols} : ScaleBlock{rows, 1};
    break;
  case Gran::Block1D:
    t.block = is_a ? ScaleBlock{1, 128} : ScaleBlock{128, 1};
    break;
  case Gran::Block2D:
    t.block = {128, 128};
    break;
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

/// Per output (i, j) of A[M,K]·B[K,N]: absprod = S = Σ_k |a_ik·b_kj| (dequantized, scales
/// included), the scale of the FP32 split model's bound 2·γ_n·S; hw = Σ over 32-product groups
/// of 32·2^-13·(Σ|p| of the 128-window up to that group's end): a bound on what a tensor core
/// keeping ~14 significant bits per group (DeepSeek-V3 §3.3.2), promoted every 128, can lose.
inline void splitBoundTerms(const QuantizedTensor& a, const QuantizedTensor& b, std::vector<double>& absprod,
                            std::vector<double>& hw) {
  const int64_t M = a.rows, K = a.cols, N = b.cols;
  absprod.assign(static_cast<size_t>(M * N), 0.0);
  hw.assign(static_cast<size_t>(M * N), 0.0);
  std::vector<double> da(static_cast<size_t>(M * K)), dbt(static_cast<size_t>(N * K));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) da[static_cast<size_t>(i * K + k)] = std::fabs(a.dequantizedAt(i, k));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) dbt[static_cast<size_t>(j * K + k)] = std::fabs(b.dequantizedAt(k, j));
  const double g = 32.0 * std::ldexp(1.0, -13);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const double* ar = da.data() + i * K;
      const double* bc = dbt.data() + j * K;
      double total = 0, window = 0, h = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = ar[k] * bc[k];
        total += p;
        window += p;
        if (k % 32 == 31 || k == K - 1) h += g * window;
        if (k % 128 == 127) window = 0;
      }
      absprod[static_cast<size_t>(i * N + j)] = total;
      hw[static_cast<size_t>(i * N + j)] = h;
    }
}

/// γ_n = n·u/(1 − n·u) with n = 128 + K/128 + 4 and u = 2^-24 (the FP32 split model's constant).
inline double splitGamma(int64_t K) {
  const double u = std::ldexp(1.0, -24), n = 128.0 + static_cast<double>(K) / 128.0 + 4.0;
  return n * u / (1 - n * u);
}

} // namespace fp8lab::checks

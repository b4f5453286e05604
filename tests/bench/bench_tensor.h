// FP8 Lab benchmarks — the 4096×4096 float32 tensor the quantization benchmarks share: N(0, 1)
// from std::mt19937 seeded 42 (16.8 M elements, 64 MiB), built once per process.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace fp8lab::bench {

constexpr int64_t kTensorN = 4096;

inline const std::vector<float>& normalTensor() {
  static const std::vector<float> x = [] {
    std::vector<float> v(static_cast<size_t>(kTensorN * kTensorN));
    std::mt19937 g(42);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (auto& e : v) e = d(g);
    return v;
  }();
  return x;
}

} // namespace fp8lab::bench

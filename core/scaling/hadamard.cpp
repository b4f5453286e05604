// FP8 Lab — the 16-point random Hadamard transform (see hadamard.h for the source of semantics).
// Built with -ffp-contract=off (core/CMakeLists.txt): every sum is a separate float32 add.
#include "scaling/hadamard.h"

#include <bit>
#include <cmath>

namespace fp8lab {

int hadamard16Entry(int i, int j) {
  return (std::popcount(static_cast<unsigned>(i & j & 15)) & 1) ? -1 : 1;
}

std::array<float, 256> rhtMatrix16(uint16_t sign_mask) {
  std::array<float, 256> r{};
  for (int i = 0; i < 16; ++i) {
    const float s = ((sign_mask >> i) & 1u) ? -1.0f : 1.0f;
    for (int j = 0; j < 16; ++j)
      r[static_cast<std::size_t>(16 * i + j)] = s * static_cast<float>(hadamard16Entry(i, j)) * 0.25f;
  }
  return r;
}

namespace {
/// rhtMatrix16(sign_mask), built once per thread and mask: a transform of one 16-vector is 256
/// multiply-adds, building the matrix again for each cost more than the transform.
const std::array<float, 256>& cachedRht(uint16_t sign_mask) {
  thread_local uint16_t mask = 0;
  thread_local bool valid = false;
  thread_local std::array<float, 256> r{};
  if (!valid || mask != sign_mask) {
    r = rhtMatrix16(sign_mask);
    mask = sign_mask;
    valid = true;
  }
  return r;
}
} // namespace

void hadamardTransform16(const float* x, float* y, uint16_t sign_mask, std::ptrdiff_t x_stride, std::ptrdiff_t y_stride,
                         bool bf16_output) {
  const std::array<float, 256>& r = cachedRht(sign_mask);
  float in[16];
  for (int i = 0; i < 16; ++i) in[i] = x[i * x_stride];
  for (int j = 0; j < 16; ++j) {
    float acc = 0.0f;
    for (int i = 0; i < 16; ++i) acc += r[static_cast<std::size_t>(16 * i + j)] * in[i];
    y[j * y_stride] = bf16_output ? bf16RoundNearestEven(acc) : acc;
  }
}

// The loops over c are element-wise (each y[j][c] sums its 16 products in i order), so the vector
// clones give the same bits as the scalar code; -ffp-contract=off keeps every multiply and add apart.
__attribute__((target_clones("avx512f", "avx2", "default"))) void
hadamardTransform16Columns(const float* x, float* y, std::size_t cols, std::size_t ld, uint16_t sign_mask,
                           bool bf16_output) {
  const std::array<float, 256>& r = cachedRht(sign_mask);
  for (int j = 0; j < 16; ++j) {
    float* yj = y + static_cast<std::size_t>(j) * ld;
    for (std::size_t c = 0; c < cols; ++c) yj[c] = 0.0f;
    for (int i = 0; i < 16; ++i) {
      const float rij = r[static_cast<std::size_t>(16 * i + j)];
      const float* xi = x + static_cast<std::size_t>(i) * ld;
      for (std::size_t c = 0; c < cols; ++c) yj[c] += rij * xi[c];
    }
    if (bf16_output)
      for (std::size_t c = 0; c < cols; ++c) yj[c] = bf16RoundNearestEven(yj[c]);
  }
}

} // namespace fp8lab

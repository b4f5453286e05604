// FP8 Lab tests — files of a kernel check: operands as codes and scales, as a kernel holds them,
// whose product is exact by construction, and the outputs of one correct kernel and of bad ones.
//
// A [64, 256] E4M3FN codes of the integers −4..4, with 1x128 float32 scales 2^((i + kb) mod 5 − 3);
// B [256, 48] the same integers with 128x128 scales {0.5, 2}. Every product is an integer ≤ 16,
// every 128-term partial sum an integer ≤ 2048, each scaled by a power of two ≥ 2^−4: D's values
// are multiples of 2^−4 below 2^15, exact in float32 whatever the summation order. So the correct
// kernel's D (computed here in double and rounded once) is the exact model's, bit for bit, and
// the float32 models' too. The bad kernels: one A block scale doubled (row 5, K block 1), every
// partial rounded to float16, one element one float32 ULP up, and D transposed.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace fp8lab::test {

struct KernelCheckFiles {
  static constexpr int64_t M = 64, K = 256, N = 48;
  std::string a, sa, b, sb;       ///< codes and row-major scale grids
  std::string bt;                 ///< B stored [N, K] (K-major), for "transpose"
  std::string sa_vec128, sbt_blk; ///< A's scales as cuBLASLt VEC128_32F, B's as BLK128x128_32F
  std::string good, wrong_scale, f16, one_ulp, transposed, with_nan;
  std::vector<float> d; ///< the correct D, row-major
};

/// A .npy v1.0 file: magic, version, header length, the dict padded to 64 bytes, raw data.
inline void writeTestNpy(const std::string& path, const std::string& descr, const std::string& shape,
                         const std::string& data) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::ofstream(path, std::ios::binary) << std::string("\x93NUMPY\x01\x00", 8) + char(h.size() & 0xFF) +
                                               char(h.size() >> 8) + h + data;
}

inline std::string floatBytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size()); // little-endian host
  return s;
}

/// float16 round to nearest even of a value that is a multiple of 2^−4 below 2^16 (the sums here):
/// keep the 11 most significant bits.
inline double roundToHalf(double x) {
  if (x == 0) return 0;
  const int e = std::ilogb(x);              // x in [2^e, 2^(e+1))
  const double q = std::ldexp(1.0, e - 10); // fp16 spacing there (normal range)
  return std::nearbyint(x / q) * q;         // FE_TONEAREST: ties to even
}

inline KernelCheckFiles writeKernelCheckFiles(const std::string& dir) {
  KernelCheckFiles f;
  const int64_t M = KernelCheckFiles::M, K = KernelCheckFiles::K, N = KernelCheckFiles::N;
  // E4M3FN codes of 0..4 (OCP OFP8: 1.0 = 0x38, 2.0 = 0x40, 3.0 = 0x44, 4.0 = 0x48), sign 0x80.
  auto code = [](int v) {
    static const uint8_t mag[5] = {0x00, 0x38, 0x40, 0x44, 0x48};
    return static_cast<uint8_t>(mag[v < 0 ? -v : v] | (v < 0 ? 0x80 : 0));
  };
  auto va = [](int64_t i, int64_t k) { return int((i * 7 + k * 3) % 9) - 4; };
  auto vb = [](int64_t k, int64_t j) { return int((k * 5 + j * 11) % 9) - 4; };
  auto sA = [](int64_t i, int64_t kb) { return std::ldexp(1.0f, int((i + kb) % 5) - 3); };
  const float sB[2] = {0.5f, 2.0f};
  std::string ac, bc, btc;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) ac += char(code(va(i, k)));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) bc += char(code(vb(k, j)));
  for (int64_t j = 0; j < N; ++j)
    for (int64_t k = 0; k < K; ++k) btc += char(code(vb(k, j)));
  std::vector<float> sa, sa_vec(2 * M);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t kb = 0; kb < 2; ++kb) {
      sa.push_back(sA(i, kb));
      sa_vec[size_t(kb * M + i)] = sA(i, kb); // VEC128: outer (M) fastest
    }
  f.a = dir + "/a.npy";
  f.sa = dir + "/sa.npy";
  f.b = dir + "/b.npy";
  f.sb = dir + "/sb.npy";
  f.bt = dir + "/bt.npy";
  f.sa_vec128 = dir + "/sa_vec128.npy";
  f.sbt_blk = dir + "/sbt_blk.npy";
  writeTestNpy(f.a, "|u1", "(64, 256)", ac);
  writeTestNpy(f.sa, "<f4", "(64, 2)", floatBytes(sa));
  writeTestNpy(f.b, "|u1", "(256, 48)", bc);
  writeTestNpy(f.sb, "<f4", "(2, 1)", floatBytes({sB[0], sB[1]}));
  writeTestNpy(f.bt, "|u1", "(48, 256)", btc);
  writeTestNpy(f.sa_vec128, "<f4", "(2, 64)", floatBytes(sa_vec));
  // BLK128x128 of B: one block row of N (ceil(48/128) = 1) × KB = 2, pitch roundup(2, 4) = 4.
  writeTestNpy(f.sbt_blk, "<f4", "(1, 4)", floatBytes({sB[0], sB[1], 0.0f, 0.0f}));
  // The kernels' outputs.
  auto product = [&](bool wrong_scale, bool half) {
    std::vector<float> d(size_t(M * N));
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t kb = 0; kb < 2; ++kb) {
          double part = 0;
          for (int64_t k = kb * 128; k < kb * 128 + 128; ++k) {
            part += double(va(i, k)) * double(vb(k, j));
            if (half) part = roundToHalf(part);
          }
          double s = double(sA(i, kb)) * double(sB[kb]);
          if (wrong_scale && i == 5 && kb == 1) s *= 2;
          acc += s * part;
          if (half) acc = roundToHalf(acc);
        }
        d[size_t(i * N + j)] = static_cast<float>(acc);
      }
    return d;
  };
  f.d = product(false, false);
  auto put = [&](const std::string& name, const std::vector<float>& d, const char* shape) {
    const std::string p = dir + "/" + name;
    writeTestNpy(p, "<f4", shape, floatBytes(d));
    return p;
  };
  f.good = put("d_good.npy", f.d, "(64, 48)");
  f.wrong_scale = put("d_wrong_scale.npy", product(true, false), "(64, 48)");
  f.f16 = put("d_f16.npy", product(false, true), "(64, 48)");
  std::vector<float> one = f.d;
  one[size_t(3 * N + 17)] = std::nextafter(one[size_t(3 * N + 17)], INFINITY);
  f.one_ulp = put("d_one_ulp.npy", one, "(64, 48)");
  std::vector<float> tr(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) tr[size_t(j * M + i)] = f.d[size_t(i * N + j)];
  f.transposed = put("d_transposed.npy", tr, "(48, 64)");
  std::vector<float> nan = f.d;
  nan[10] = std::nanf("");
  f.with_nan = put("d_nan.npy", nan, "(64, 48)");
  return f;
}

} // namespace fp8lab::test

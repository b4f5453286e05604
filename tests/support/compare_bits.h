// FP8 Lab tests — bit-exact comparison of float and double values for Qt Test.
//
// QCOMPARE(float, float) and QCOMPARE(double, double) are fuzzy (qFuzzyCompare: equal when the
// difference is within about 1e-5 (float) or 1e-12 (double) of the smaller magnitude), so they
// cannot tell 448 − 2^-15 from 448 − 2^-14 or 6.9999995f from 7. Where a test claims an exact
// value, use QCOMPARE_BITS: it passes only when the two bit patterns are identical and on
// failure prints both values as decimal, as C99 hex floats (%a) and as raw hex bits.
#pragma once

#include <QtTest>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

namespace fp8lab::test {

/// The IEEE-754 bit pattern of a float (uint32_t) or double (uint64_t).
template <typename T> auto bitsOf(T v) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "bitsOf: float or double only");
  if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<uint32_t>(v);
  else
    return std::bit_cast<uint64_t>(v);
}

/// "value (hex float, bits)", e.g. "447.99997 (0x1.bfffffp+8, 0x43dfffff)".
template <typename T> std::string describeBits(T v) {
  char buf[96];
  if constexpr (std::is_same_v<T, float>)
    std::snprintf(buf, sizeof buf, "%.9g (%a, 0x%08x)", static_cast<double>(v), static_cast<double>(v),
                  static_cast<unsigned>(bitsOf(v)));
  else
    std::snprintf(buf, sizeof buf, "%.17g (%a, 0x%016llx)", v, v, static_cast<unsigned long long>(bitsOf(v)));
  return buf;
}

/// Implementation of QCOMPARE_BITS for one value: true when the bit patterns are identical
/// (so −0 ≠ +0, and a NaN matches only the same NaN pattern); otherwise reports a Qt Test
/// failure at file:line and returns false.
template <typename T>
bool compareBits(T actual, T expected, const char* actual_expr, const char* expected_expr, const char* file, int line) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "QCOMPARE_BITS: float or double only");
  if (bitsOf(actual) == bitsOf(expected)) return true;
  const std::string msg = std::string("Bit patterns differ.\n   Actual   (") + actual_expr +
                          "): " + describeBits(actual) + "\n   Expected (" + expected_expr +
                          "): " + describeBits(expected);
  QTest::qFail(msg.c_str(), file, line);
  return false;
}

/// The same for two vectors: equal sizes and identical bits element by element; a failure
/// names the first differing index.
template <typename T>
bool compareBits(const std::vector<T>& actual, const std::vector<T>& expected, const char* actual_expr,
                 const char* expected_expr, const char* file, int line) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "QCOMPARE_BITS: float or double only");
  std::string msg;
  if (actual.size() != expected.size()) {
    msg = "Sizes differ: " + std::to_string(actual.size()) + " vs " + std::to_string(expected.size());
  } else {
    for (std::size_t i = 0; i < actual.size(); ++i)
      if (bitsOf(actual[i]) != bitsOf(expected[i])) {
        msg = "Bit patterns differ at index " + std::to_string(i) + ".\n   Actual   (" + actual_expr +
              "): " + describeBits(actual[i]) + "\n   Expected (" + expected_expr + "): " + describeBits(expected[i]);
        break;
      }
    if (msg.empty()) return true;
  }
  QTest::qFail(msg.c_str(), file, line);
  return false;
}

} // namespace fp8lab::test

/// QCOMPARE_BITS(actual, expected): like QCOMPARE, but for float, double, std::vector<float> or
/// std::vector<double> it passes only on identical bit patterns. Both arguments must have the
/// same type (no silent float/double conversion: write 448.0f, not 448.0, for a float). Like
/// QCOMPARE it returns from the calling test function on failure.
#define QCOMPARE_BITS(actual, expected)                                                                                \
  do {                                                                                                                 \
    if (!::fp8lab::test::compareBits((actual), (expected), #actual, #expected, __FILE__, __LINE__)) return;            \
  } while (false)

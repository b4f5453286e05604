// FP8 Lab tests — readers for the independent oracle tables in FP8LAB_ORACLE_DIR (CUDA 13 host
// conversions and ml_dtypes). Tests never regenerate these from the project's own code.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp8lab::test {

/// Directory of the oracle tables (CMake cache FP8LAB_ORACLE_DIR, or env FP8LAB_ORACLE_DIR).
inline std::string oracleDir() {
  if (const char* e = std::getenv("FP8LAB_ORACLE_DIR")) return e;
  return FP8LAB_ORACLE_DIR;
}

/// Reads a CSV table (header line first, no quoting). Throws std::runtime_error naming the
/// path when the file is missing, so a test fails loudly instead of skipping.
inline std::vector<std::vector<std::string>> readCsv(const std::string& file,
                                                     std::vector<std::string>* header = nullptr) {
  const std::string path = oracleDir() + "/" + file;
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("oracle table missing: " + path +
                             " (set FP8LAB_ORACLE_DIR or -DFP8LAB_ORACLE_DIR to the tests/data/oracle folder)");
  std::vector<std::vector<std::string>> rows;
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) cols.push_back(c);
    if (first) {
      if (header) *header = cols;
      first = false;
      continue;
    }
    if (!cols.empty()) rows.push_back(std::move(cols));
  }
  return rows;
}

/// Parses "nan", "inf", "-inf", "-0" and decimal numbers exactly as double.
inline double parseValue(const std::string& s) {
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  return std::strtod(s.c_str(), nullptr);
}

inline uint32_t parseHex(const std::string& s) {
  return static_cast<uint32_t>(std::strtoul(s.c_str(), nullptr, 16));
}

/// True when a and b are the same double, bit for bit except that any two NaNs match and
/// −0 differs from +0.
inline bool sameValue(double a, double b) {
  if (a != a) return b != b;
  if (a == 0 && b == 0) return std::signbit(a) == std::signbit(b);
  return a == b;
}

/// Distance in units in the last place between two finite floats of the same sign class.
inline int64_t ulpDistance(float a, float b) {
  auto key = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? int64_t(INT32_MIN) - int64_t(i) : int64_t(i);
  };
  const int64_t d = key(a) - key(b);
  return d < 0 ? -d : d;
}

/// |a − b| ≤ atol + rtol·|b|.
inline bool closeTo(double a, double b, double rtol, double atol = 0) {
  return std::fabs(a - b) <= atol + rtol * std::fabs(b);
}

} // namespace fp8lab::test

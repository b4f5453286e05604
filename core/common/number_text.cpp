// Numbers and table cells as text (number_text.h).
#include "common/number_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fp8lab {

std::string decimalText(double v, char style, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) v = 0.0; // −0 is written "0"
  if (v != 0) {
    // The exact decimal expansion of v (a double has at most 767 significant digits): a tie is a
    // '5' at the first dropped digit followed by zeros only. Rounding the next double away from
    // zero instead gives the away-from-zero result.
    static thread_local char exact[1100];
    std::snprintf(exact, sizeof exact, "%.*e", 800, v);
    const char* s = exact + (exact[0] == '-');
    std::string digits(1, s[0]);
    for (const char* c = s + 2; *c && *c != 'e'; ++c) digits += *c;
    const int exponent = std::atoi(std::strchr(exact, 'e') + 1);
    const int keep = style == 'g' ? std::max(precision, 1) : exponent + 1 + precision;
    if (keep >= 0 && keep < int(digits.size()) && digits[size_t(keep)] == '5' &&
        std::all_of(digits.begin() + keep + 1, digits.end(), [](char c) { return c == '0'; }))
      v = std::nextafter(v, std::copysign(INFINITY, v));
  }
  char buf[512];
  std::snprintf(buf, sizeof buf, style == 'f' ? "%.*f" : "%.*g", precision, v);
  return buf;
}

std::string generalText(double v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return decimalText(v, 'g', precision);
}

namespace {
template <typename T> std::string shortest(T v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v); // shortest round trip in T
  return std::string(buf, r.ptr);
}
} // namespace

std::string shortestText(double v) {
  return shortest(v);
}
std::string shortestText(float v) {
  return shortest(v);
}

int textWidth(const std::string& s) {
  return int(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string padded(const std::string& s, int width) {
  const int n = std::abs(width) - textWidth(s);
  if (n <= 0) return s;
  return width > 0 ? std::string(size_t(n), ' ') + s : s + std::string(size_t(n), ' ');
}

std::string tableLine(const std::vector<std::string>& cells, const std::vector<int>& widths,
                      const std::string& separator) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += separator;
    line += padded(cells[i], i < widths.size() ? widths[i] : 0);
  }
  return line + '\n';
}

} // namespace fp8lab

// Numbers and table cells as text (number_text.h).
#include "common/number_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <locale.h>
#include <stdlib.h>

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

namespace fp8lab {

namespace {
/// The "C" locale for strtod_l: a Qt front end calls setlocale(LC_ALL, "") on Unix, and under a
/// decimal-comma locale (de_DE, fr_FR, ...) plain strtod rejects "0.5" (docs/reliability.md).
locale_t cLocale() {
  static const locale_t c = newlocale(LC_ALL_MASK, "C", locale_t(nullptr));
  return c;
}

/// The length in bytes of the White_Space character that starts `s` (0 when none).
size_t spaceAtStart(std::string_view s) {
  const auto u = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  if (s.empty()) return 0;
  if (u(0) == 0x20 || (u(0) >= 0x09 && u(0) <= 0x0d)) return 1;
  if (s.size() >= 2 && u(0) == 0xc2 && (u(1) == 0x85 || u(1) == 0xa0)) return 2;
  if (s.size() < 3) return 0;
  const bool e2_80 = u(0) == 0xe2 && u(1) == 0x80;
  if (e2_80 && ((u(2) >= 0x80 && u(2) <= 0x8a) || u(2) == 0xa8 || u(2) == 0xa9 || u(2) == 0xaf))
    return 3;                                                 // U+2000..U+200A, U+2028, U+2029, U+202F
  if (u(0) == 0xe1 && u(1) == 0x9a && u(2) == 0x80) return 3; // U+1680
  if (u(0) == 0xe2 && u(1) == 0x81 && u(2) == 0x9f) return 3; // U+205F
  if (u(0) == 0xe3 && u(1) == 0x80 && u(2) == 0x80) return 3; // U+3000
  return 0;
}

/// The length in bytes of the White_Space character that ends `s` (0 when none).
size_t spaceAtEnd(std::string_view s) {
  for (size_t n = 1; n <= 3 && n <= s.size(); ++n)
    if (spaceAtStart(s.substr(s.size() - n)) == n) return n;
  return 0;
}

std::string lower(std::string_view s) {
  std::string l(s);
  for (char& c : l)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return l;
}
} // namespace

std::string_view trimmedText(std::string_view s) {
  while (const size_t n = spaceAtStart(s)) s.remove_prefix(n);
  while (const size_t n = spaceAtEnd(s)) s.remove_suffix(n);
  return s;
}

std::optional<double> parseNumber(std::string_view text) {
  const std::string b(trimmedText(text));
  if (b.empty()) return std::nullopt;
  const std::string l = lower(b);
  if (l == "inf" || l == "+inf" || l == "infinity" || l == "+infinity") return INFINITY;
  if (l == "-inf" || l == "-infinity") return -INFINITY;
  if (l == "nan" || l == "+nan") return std::nan("");
  if (l == "-nan") return -std::nan("");
  char* end = nullptr;
  const double v = strtod_l(b.c_str(), &end, cLocale());
  if (end != b.c_str() + b.size()) return std::nullopt;
  // Out of float64's range: a finite literal that became ±inf, or a nonzero one that became 0
  // (strtod's ERANGE cases that lose the value; subnormal results are kept).
  if (std::isinf(v)) return std::nullopt;
  if (v == 0) {
    for (const char c : b) {
      if (c == 'e' || c == 'E' || c == 'p' || c == 'P') break; // the exponent does not count
      if (c >= '1' && c <= '9') return std::nullopt;
    }
    // hex digits a-f in the mantissa of a hex float
    if (const size_t x = l.find("0x"); x != std::string::npos) {
      for (const char c : std::string_view(l).substr(x + 2)) {
        if (c == 'p') break;
        if ((c >= '1' && c <= '9') || (c >= 'a' && c <= 'f')) return std::nullopt;
      }
    }
  }
  return v;
}

std::optional<int64_t> parseInteger(std::string_view text) {
  std::string_view t = trimmedText(text);
  const bool plus = t.starts_with('+');
  if (plus) t.remove_prefix(1);
  if (t.empty() || (plus && t.starts_with('-'))) return std::nullopt;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

std::string numberProblem(std::string_view text) {
  const std::string b(trimmedText(text));
  char* end = nullptr;
  const double v = b.empty() ? 0.0 : strtod_l(b.c_str(), &end, cLocale());
  if (!b.empty() && end == b.c_str() + b.size()) {
    if (std::isinf(v))
      return "'" + b + "' is beyond the float64 range (largest finite 1.7976931348623157e+308; write inf for infinity)";
    if (v == 0)
      return "'" + b + "' underflows to 0 in float64 (smallest nonzero 4.9406564584124654e-324; write 0 for zero)";
  }
  return "not a number: '" + b + "'";
}

std::optional<std::vector<double>> parseNumberList(std::string_view text, std::string* bad, size_t* position) {
  std::vector<double> v;
  if (text.empty()) return v;
  for (size_t n = 1;; ++n) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const auto x = trimmedText(item).empty() ? std::nullopt : parseNumber(item);
    if (!x) {
      if (bad) *bad = std::string(item);
      if (position) *position = n;
      return std::nullopt;
    }
    v.push_back(*x);
    if (comma == std::string_view::npos) return v;
    text = text.substr(comma + 1);
  }
}

std::string numberListProblem(std::string_view text, std::string_view bad, size_t position) {
  if (!trimmedText(bad).empty()) return numberProblem(bad);
  return "item " + std::to_string(position) + " of '" + std::string(text) +
         "' is empty (one comma between values, none at either end)";
}

std::vector<std::string_view> valueWords(std::string_view text) {
  std::vector<std::string_view> words;
  const auto separator = [](char c) { return c == ',' || c == ' ' || (c >= '\t' && c <= '\r'); };
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && separator(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !separator(text[i])) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

} // namespace fp8lab

// FP8 Lab — how names typed by users are compared with the names of presets, recipes, layouts and
// accumulation models.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// The form every registry compares names in: ASCII letters in lower case and '-' read as '_', so
/// "TE-Current", "te-current" and "te_current" name one preset. Other characters are kept.
inline std::string normalizedName(std::string_view s) {
  std::string n(s);
  for (char& c : n) c = c == '-' ? '_' : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return n;
}

/// The items of a comma-separated list as typed, empty ones skipped: "a, b,,c," gives "a", " b",
/// "c" (QString::split with Qt::SkipEmptyParts). Items keep their white space (number_text.h trimmedText removes it).
inline std::vector<std::string> commaItems(std::string_view s) {
  std::vector<std::string> items;
  for (size_t b = 0; b <= s.size();) {
    const size_t e = std::min(s.find(',', b), s.size());
    if (e > b) items.emplace_back(s.substr(b, e - b));
    b = e + 1;
  }
  return items;
}

} // namespace fp8lab

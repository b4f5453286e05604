// FP8 Lab — how names typed by users are compared with the names of presets, recipes, layouts and
// accumulation models.
#pragma once

#include <string>
#include <string_view>

namespace fp8lab {

/// The form every registry compares names in: ASCII letters in lower case and '-' read as '_', so
/// "TE-Current", "te-current" and "te_current" name one preset. Other characters are kept.
inline std::string normalizedName(std::string_view s) {
  std::string n(s);
  for (char& c : n) c = c == '-' ? '_' : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return n;
}

} // namespace fp8lab

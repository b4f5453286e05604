// The table of every number format (format_table.h).
#include "formats/format_table.h"

#include "common/number_text.h"
#include "formats/format.h"

#include <cstdlib>
#include <vector>

namespace fp8lab {

std::string formatTableText() {
  // Minimum widths (negative: left-aligned); a column widens to its longest cell, so BF16's
  // 3.3895313892515355e+38 does not push the later columns out of line.
  std::vector<int> w{-12, -7, 5, 14, 14, 14, 10, 13, 8};
  std::vector<std::vector<std::string>> rows{
      {"format", "s/e/m", "bias", "max", "min normal", "min subnorm", "eps", "fin/nan/inf", "binades"}};
  const auto slash = [](int a, int b, int c) {
    return std::to_string(a) + "/" + std::to_string(b) + "/" + std::to_string(c);
  };
  for (const Format* f : Format::all()) {
    const auto& s = f->spec();
    rows.push_back({f->name(), slash(s.has_sign ? 1 : 0, s.exponent_bits, s.mantissa_bits), std::to_string(f->bias()),
                    shortestText(f->maxFinite()), shortestText(f->minNormal()),
                    f->hasSubnormals() ? shortestText(f->minSubnormal()) : "-", shortestText(f->machineEpsilon()),
                    slash(f->finiteCount(), f->nanCount(), f->infCount()),
                    decimalText(f->dynamicRangeBinades(), 'f', 1)});
  }
  for (const auto& r : rows)
    for (size_t i = 0; i < w.size(); ++i) {
      const int len = static_cast<int>(r[i].size());
      if (len > std::abs(w[i])) w[i] = w[i] < 0 ? -len : len;
    }
  std::string t;
  for (const auto& r : rows) t += tableLine(r, w);
  return t;
}

std::string formatNameList() {
  std::string names;
  for (const Format* f : Format::all()) names += (names.empty() ? "" : ", ") + f->name();
  return names;
}

} // namespace fp8lab

// The table of every number format (format_table.h).
#include "formats/format_table.h"

#include "common/number_text.h"
#include "formats/format.h"

namespace fp8lab {

std::string formatTableText() {
  const std::vector<int> w{-12, -7, 5, 14, 14, 14, 10, 13, 8};
  std::string t =
      tableLine({"format", "s/e/m", "bias", "max", "min normal", "min subnorm", "eps", "fin/nan/inf", "binades"}, w);
  const auto slash = [](int a, int b, int c) {
    return std::to_string(a) + "/" + std::to_string(b) + "/" + std::to_string(c);
  };
  for (const Format* f : Format::all()) {
    const auto& s = f->spec();
    t += tableLine({f->name(), slash(s.has_sign ? 1 : 0, s.exponent_bits, s.mantissa_bits), std::to_string(f->bias()),
                    shortestText(f->maxFinite()), shortestText(f->minNormal()),
                    f->hasSubnormals() ? shortestText(f->minSubnormal()) : "-", shortestText(f->machineEpsilon()),
                    slash(f->finiteCount(), f->nanCount(), f->infCount()),
                    decimalText(f->dynamicRangeBinades(), 'f', 1)},
                   w);
  }
  return t;
}

std::string formatNameList() {
  std::string names;
  for (const Format* f : Format::all()) names += (names.empty() ? "" : ", ") + f->name();
  return names;
}

} // namespace fp8lab

// A number as report JSON (json_number.h).
#include "json/json_number.h"

#include <cmath>

namespace fp8lab {

Json numberJson(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

} // namespace fp8lab

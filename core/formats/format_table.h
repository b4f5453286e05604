// FP8 Lab — the table of every number format (Format::all()) and its properties, as
// `fp8lab-cli formats` prints it.
#pragma once

#include <string>

namespace fp8lab {

/// One line per format after a header: name, sign/exponent/mantissa bits, bias, largest finite
/// value, smallest normal and subnormal ("-" without subnormals), machine epsilon (shortest
/// round-trip text), finite / NaN / Inf code counts and the dynamic range in binades (1 decimal).
/// Columns are as wide as their longest cell, so every line has the same length.
std::string formatTableText();

/// The canonical names of every format (Format::all()), ", "-separated: "E4M3FN, E5M2, ...".
std::string formatNameList();

} // namespace fp8lab

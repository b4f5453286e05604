// FP8 Lab — a number as the JSON of the reports that commands print: JSON has no NaN or infinity,
// so those are the strings "nan", "inf" and "-inf" (what Python's float() and NumPy read back).
#pragma once

#include "json/json_document.h"

namespace fp8lab {

/// `v` as a JSON number, or the string "nan", "inf" or "-inf" when it is not finite. −0 stays −0.
Json numberJson(double v);

} // namespace fp8lab

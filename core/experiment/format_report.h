// FP8 Lab — the number-format reports of `fp8lab-cli formats`, `encode`, `decode` and `table`:
// format properties, codes and values, and the rounding decision of each encoded value, as JSON
// and text.
#pragma once

#include "formats/format.h"
#include "json/json_document.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// The specials policy named `name` (lower case): "cuda", "ml_dtypes" or "mldtypes".
std::optional<SpecialsPolicy> parseSpecialsPolicy(std::string_view name);

/// Every format of Format::all() as one JSON object each: name, ml_dtypes_name, bits,
/// exponent_bits, mantissa_bits, bias, max_finite, min_normal, min_subnormal (null without
/// subnormals: E8M0), machine_epsilon, finite_codes, nan_codes, inf_codes,
/// dynamic_range_binades, has_negative_zero, nan_code (hex, null without NaN), description.
Json formatsJson();

/// `codes` of `f` as one array of compact JSON text with a final '\n', one object per code with
/// the keys (sorted) "binary": sign/exponent/mantissa groups, "class": CodeClass name, "code":
/// hex, "value": the exact decoded value (NaN, ±Inf as "nan", "inf", "-inf"; −0 as -0.0): what
/// `fp8lab-cli decode --json` prints. Written as a stream with the shortest round-trip number
/// text (std::to_chars), so an integer-valued code prints as its exact integer (E8M0 0xb6 = 2^55
/// = 36028797018963968), which readers that parse such a number as an integer (Python's json)
/// get right. Each code < f.codeCount().
std::string codesJsonText(const Format& f, const std::vector<uint32_t>& codes);

/// Every code of `f`, ascending, as codesJsonText: what `fp8lab-cli table --json` prints (BF16's
/// 65,536 codes without building a JSON tree first).
std::string codeTableJsonText(const Format& f);

/// One code of `f` as a line: "0x7e [0 1111 110] = 448 (normal)\n" (value in shortest
/// round-trip text).
std::string codeLine(const Format& f, uint32_t code);

/// Every code of `f` as CSV: the header "code,binary,value,class", then one line per code
/// (hex, binary, shortest round-trip value, class), codes ascending.
std::string codeTableCsv(const Format& f);

/// The report of encoding `values` (parsed from `inputs`, the texts as the user wrote them; same
/// length) into `f` with `o`; with stochastic rounding value i draws Format::counterRandom(seed, i).
/// JSON (`json`): one compact array (JsonStreamWriter) of one object per value — input, code,
/// binary, value, class, exact, lower/upper {code, value}, midpoint and tie when the value lies
/// between two neighbours, abs_error, rel_error, overflow, saturated, underflow, and
/// encoded_magnitude (true) where E8M0 under CUDA specials encodes |x| — and a newline. Text: a
/// header line (format, rounding, saturation, specials policy), then per value
/// "<input> -> <code>  [<binary>]  = <value>  (<class>)" and indented lines for the
/// neighbours, midpoint and error of an inexact value, overflow and underflow.
std::string encodeReport(const Format& f, const EncodeOptions& o, uint64_t seed,
                         const std::vector<std::string_view>& inputs, const std::vector<double>& values, bool json);

} // namespace fp8lab

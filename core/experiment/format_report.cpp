// The number-format reports: formats, codes, encode decisions (format_report.h).
#include "experiment/format_report.h"
#include "json/json_number.h"

#include "common/number_text.h"
#include "json/json_stream_writer.h"

#include <cmath>
#include <numeric>
#include <tuple>

namespace fp8lab {

namespace {

void encodeJson(JsonStreamWriter& jw, const Format& f, std::string_view input, const RoundingDecision& d) {
  jw.beginObject();
  jw.key("input");
  jw.value(std::string(input));
  jw.key("code");
  jw.value(f.hexString(d.code));
  jw.key("binary");
  jw.value(f.binaryString(d.code));
  jw.key("value");
  jw.value(d.value);
  jw.key("class");
  jw.value(toString(f.classify(d.code)));
  jw.key("exact");
  jw.value(d.exact);
  if (d.has_neighbours) {
    for (const auto& [name, code, value] :
         {std::tuple{"lower", d.lower_code, d.lower_value}, std::tuple{"upper", d.upper_code, d.upper_value}}) {
      jw.key(name);
      jw.beginObject();
      // A neighbour beyond max finite exists only with an unbounded exponent (OCP OFP8 §3): it has
      // no code of its own (the text says "beyond max, unbounded exponent").
      const bool beyond = std::fabs(value) > f.maxFinite();
      jw.key("code");
      if (beyond)
        jw.null();
      else
        jw.value(f.hexString(code));
      jw.key("value");
      jw.value(value);
      if (beyond) {
        jw.key("beyond_max");
        jw.value(true);
      }
      jw.endObject();
    }
    jw.key("midpoint");
    jw.value(d.midpoint);
    jw.key("tie");
    jw.value(d.tie);
  }
  jw.key("abs_error");
  jw.value(d.abs_error);
  jw.key("rel_error");
  jw.value(d.rel_error);
  jw.key("overflow");
  jw.value(d.overflow);
  jw.key("saturated");
  jw.value(d.saturated);
  jw.key("underflow");
  jw.value(d.underflow);
  if (d.sign_dropped) {
    jw.key("encoded_magnitude"); // E8M0, CUDA: the code is that of |x|
    jw.value(true);
  }
  jw.endObject();
}

void encodeText(std::string& t, const Format& f, const EncodeOptions& o, std::string_view input,
                const RoundingDecision& d) {
  const auto s = [](double v) { return shortestText(v); };
  t += padded(std::string(input), -12) + " -> " + f.hexString(d.code) + "  [" + f.binaryString(d.code) +
       "]  = " + s(d.value) + "  (" + toString(f.classify(d.code)) + ")";
  const bool e8m0 = f.spec().specials == SpecialCodes::E8M0;
  if (d.sign_dropped)
    t += "\n    negative input: E8M0 is unsigned and CUDA encodes |x| = " + s(std::fabs(d.input)) +
         (d.has_neighbours && d.lower_value == d.upper_value
              ? " (exact); error " + s(d.abs_error) + " (rel " + s(d.rel_error) + ")"
              : std::string());
  // Neighbours are printed when the (magnitude) input lies strictly between two of them. A
  // neighbour past max finite exists only with an unbounded exponent: it has no code of its own
  // (the code shown would be Inf or NaN), so it is labelled as such.
  const bool upper_past_max = std::fabs(d.upper_value) > f.maxFinite();
  if (d.has_neighbours && !d.exact && d.lower_value != d.upper_value)
    t += "\n    neighbours " + s(d.lower_value) + " (" + f.hexString(d.lower_code) + ") .. " + s(d.upper_value) + " (" +
         (upper_past_max ? std::string("beyond max, unbounded exponent") : f.hexString(d.upper_code)) + "), midpoint " +
         s(d.midpoint) + (d.tie ? " (tie)" : "") + "; error " + s(d.abs_error) + " (rel " + s(d.rel_error) + ")";
  if (d.overflow) {
    if (d.saturated)
      t += "\n    overflow: saturated to max";
    else if (std::isfinite(d.value))
      t += std::string("\n    overflow: rounded toward zero to max finite (") + toString(o.rounding) +
           "; not saturated)";
    else
      t += "\n    overflow";
  }
  if (d.underflow) {
    if (e8m0 && !std::isnan(d.input) && std::fabs(d.input) < f.minNormal() && d.code == 0 &&
        !(o.specials == SpecialsPolicy::MlDtypes && std::signbit(d.input)))
      t += "\n    underflow: below the smallest E8M0 value 2^-127 (0x00), which it gives (E8M0 has no zero)";
    else if (e8m0)
      t += "\n    underflow: out of range (E8M0 has no zero and no negative values)";
    else
      t += "\n    underflow";
  }
  t += "\n";
}

} // namespace

std::optional<SpecialsPolicy> parseSpecialsPolicy(std::string_view name) {
  if (name == "cuda") return SpecialsPolicy::Cuda;
  if (name == "ml_dtypes" || name == "mldtypes") return SpecialsPolicy::MlDtypes;
  return std::nullopt;
}

Json formatsJson() {
  Json arr = Json::array();
  for (const Format* f : Format::all()) {
    Json o = Json::object();
    o["name"] = f->name();
    o["ml_dtypes_name"] = f->spec().ml_dtypes_name;
    o["bits"] = f->bits();
    o["exponent_bits"] = f->spec().exponent_bits;
    o["mantissa_bits"] = f->spec().mantissa_bits;
    o["bias"] = f->bias();
    o["max_finite"] = numberJson(f->maxFinite());
    o["min_normal"] = numberJson(f->minNormal());
    // null where the format has no subnormals (E8M0: powers of two only).
    o["min_subnormal"] = f->hasSubnormals() ? numberJson(f->minSubnormal()) : Json();
    o["machine_epsilon"] = numberJson(f->machineEpsilon());
    o["finite_codes"] = f->finiteCount();
    o["nan_codes"] = f->nanCount();
    o["inf_codes"] = f->infCount();
    o["dynamic_range_binades"] = f->dynamicRangeBinades();
    o["has_negative_zero"] = f->hasNegativeZero();
    o["nan_code"] = f->hasNaN() ? Json(f->hexString(f->canonicalNaN())) : Json();
    o["description"] = f->spec().description;
    arr.push_back(std::move(o));
  }
  return arr;
}

namespace {
void writeCodeJson(JsonStreamWriter& jw, const Format& f, uint32_t c) {
  jw.beginObject();
  jw.key("binary");
  jw.value(f.binaryString(c));
  jw.key("class");
  jw.value(toString(f.classify(c)));
  jw.key("code");
  jw.value(f.hexString(c));
  jw.key("value");
  jw.value(f.decode(c));
  jw.endObject();
}
} // namespace

std::string codesJsonText(const Format& f, const std::vector<uint32_t>& codes) {
  JsonStreamWriter jw;
  jw.beginArray();
  for (const uint32_t c : codes) writeCodeJson(jw, f, c);
  jw.endArray();
  return jw.text() + "\n";
}

std::string codeTableJsonText(const Format& f) {
  std::vector<uint32_t> all(f.codeCount());
  std::iota(all.begin(), all.end(), 0u);
  return codesJsonText(f, all);
}

std::string codeLine(const Format& f, uint32_t code) {
  return f.hexString(code) + " [" + f.binaryString(code) + "] = " + shortestText(f.decode(code)) + " (" +
         toString(f.classify(code)) + ")\n";
}

std::string codeTableCsv(const Format& f) {
  std::string text = "code,binary,value,class\n";
  for (uint32_t c = 0; c < f.codeCount(); ++c)
    text += f.hexString(c) + "," + f.binaryString(c) + "," + shortestText(f.decode(c)) + "," + toString(f.classify(c)) +
            "\n";
  return text;
}

std::string encodeReport(const Format& f, const EncodeOptions& o, uint64_t seed,
                         const std::vector<std::string_view>& inputs, const std::vector<double>& values, bool json) {
  JsonStreamWriter jw; // a JSON tree is ~30x slower for 10^5 values
  std::string text;
  if (json)
    jw.beginArray();
  else
    text += "format " + f.name() + ", rounding " + f.roundingName(o.rounding) +
            (o.saturate ? ", saturating" : ", non-saturating") +
            (o.specials == SpecialsPolicy::Cuda ? ", CUDA specials" : ", ml_dtypes specials") + "\n";
  for (size_t i = 0; i < values.size(); ++i) {
    EncodeOptions oi = o;
    if (o.rounding == Rounding::Stochastic) oi.random_word = Format::counterRandom(seed, i);
    const RoundingDecision d = f.explain(values[i], oi);
    if (json)
      encodeJson(jw, f, inputs[i], d);
    else
      encodeText(text, f, o, inputs[i], d);
  }
  if (!json) return text;
  jw.endArray();
  return jw.text() + "\n";
}

} // namespace fp8lab

// FP8 Lab — scalar reference conversions for every format. See format.h for the semantics.
//
// Encoding strategy (single rounding from double): the magnitude a is divided by the quantum of
// its binade — 2^(max(e, emin) − m), computed with an *unbounded* exponent — giving q = n + f
// with n an integer and 0 ≤ f < 1, both exact in double. The rounding mode picks n or n + 1; the
// result (n or n+1)·quantum is exact. Only then is it compared with max finite (OCP OFP8 v1.0:
// round first, then check overflow).
#include "formats/format.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace fp8lab {

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

FormatSpec makeSpec(std::string name, int e, int m, int bias, bool sign, SpecialCodes sp, std::string ml,
                    std::string desc) {
  FormatSpec s;
  s.name = std::move(name);
  s.exponent_bits = e;
  s.mantissa_bits = m;
  s.bias = bias;
  s.has_sign = sign;
  s.specials = sp;
  s.ml_dtypes_name = std::move(ml);
  s.description = std::move(desc);
  return s;
}

/// Formats whose specials follow the EncodeOptions::specials choice (CUDA 13 covers them).
/// The ml_dtypes-only formats always follow ml_dtypes (docs/formats.md).
bool cudaCovered(const FormatSpec& s) {
  static const char* names[] = {"E4M3FN", "E5M2", "E8M0FNU", "E2M3", "E3M2", "E2M1"};
  for (const char* n : names)
    if (s.name == n) return true;
  // Custom formats: the caller's choice applies.
  for (const char* n : {"E4M3FNUZ", "E5M2FNUZ", "E4M3B11FNUZ", "E4M3", "E3M4", "BF16", "FP16"})
    if (s.name == n) return false;
  return true;
}

} // namespace

const char* toString(CodeClass c) {
  switch (c) {
  case CodeClass::Zero:
    return "zero";
  case CodeClass::Subnormal:
    return "subnormal";
  case CodeClass::Normal:
    return "normal";
  case CodeClass::MaxFinite:
    return "max";
  case CodeClass::Infinity:
    return "infinity";
  case CodeClass::NaN:
    return "nan";
  }
  return "?";
}

const char* toString(Rounding r) {
  switch (r) {
  case Rounding::NearestEven:
    return "rne";
  case Rounding::TowardZero:
    return "rtz";
  case Rounding::TowardPosInf:
    return "ru";
  case Rounding::TowardNegInf:
    return "rd";
  case Rounding::Stochastic:
    return "stochastic";
  }
  return "?";
}

std::optional<Rounding> parseRounding(std::string_view s) {
  const std::string l = lower(s);
  if (l == "rne" || l == "nearest" || l == "nearest-even" || l == "rn") return Rounding::NearestEven;
  if (l == "rtz" || l == "rz" || l == "toward-zero" || l == "trunc") return Rounding::TowardZero;
  if (l == "ru" || l == "rp" || l == "up" || l == "toward-pos-inf") return Rounding::TowardPosInf;
  if (l == "rd" || l == "rm" || l == "down" || l == "toward-neg-inf") return Rounding::TowardNegInf;
  if (l == "stochastic" || l == "sr") return Rounding::Stochastic;
  return std::nullopt;
}

Format::Format(FormatSpec spec) : spec_(std::move(spec)) {
  init();
}

void Format::init() {
  const auto& s = spec_;
  if (s.exponent_bits < 1 || s.exponent_bits > 8)
    throw std::invalid_argument("format " + s.name + ": exponent bits must be 1..8");
  if (s.mantissa_bits < 0 || s.mantissa_bits > 10)
    throw std::invalid_argument("format " + s.name + ": mantissa bits must be 0..10");
  bits_ = (s.has_sign ? 1 : 0) + s.exponent_bits + s.mantissa_bits;
  if (bits_ > 16) throw std::invalid_argument("format " + s.name + ": more than 16 bits");
  if (s.specials == SpecialCodes::E8M0) {
    if (s.has_sign || s.mantissa_bits != 0)
      throw std::invalid_argument("format " + s.name + ": E8M0-style formats are unsigned with no mantissa");
  } else {
    if (!s.has_sign) throw std::invalid_argument("format " + s.name + ": only E8M0-style formats may be unsigned");
    if (s.mantissa_bits < 1) throw std::invalid_argument("format " + s.name + ": needs at least one mantissa bit");
  }
  if (s.specials == SpecialCodes::IEEE && s.exponent_bits < 2)
    throw std::invalid_argument("format " + s.name + ": IEEE specials need at least 2 exponent bits");

  const uint32_t n = 1u << bits_;
  table_.assign(n, 0.0);
  finite_count_ = nan_count_ = inf_count_ = 0;
  max_finite_ = 0;
  min_normal_ = std::numeric_limits<double>::infinity();
  min_subnormal_ = std::numeric_limits<double>::infinity();
  const uint32_t sign_bit = s.has_sign ? (1u << (bits_ - 1)) : 0u;
  for (uint32_t c = 0; c < n; ++c) {
    const double v = decode(c);
    table_[c] = v;
    if (std::isnan(v))
      ++nan_count_;
    else if (std::isinf(v))
      ++inf_count_;
    else {
      ++finite_count_;
      if (!(c & sign_bit) && v > max_finite_) {
        max_finite_ = v;
        max_code_ = c;
      }
      if (v > 0) {
        if (s.specials != SpecialCodes::E8M0 && fields(c).exponent == 0)
          min_subnormal_ = std::min(min_subnormal_, v);
        else
          min_normal_ = std::min(min_normal_, v);
      }
    }
  }
  table_ready_ = true;
  if (std::isinf(min_subnormal_)) min_subnormal_ = min_normal_;
  if (s.specials == SpecialCodes::E8M0)
    epsilon_ = 1.0; // next value after 1 is 2
  else
    epsilon_ = std::ldexp(1.0, -s.mantissa_bits);
  if (bits_ <= 8) {
    table_f32_.resize(n);
    for (uint32_t c = 0; c < n; ++c) table_f32_[c] = static_cast<float>(table_[c]);
  } else {
    table_f32_.clear();
  }
  // Largest magnitude whose RNE result is finite: binary search on the double's bit pattern (the
  // overflow predicate is monotone in |x|; DBL_MAX overflows every format of ≤ 16 bits).
  EncodeOptions nosat;
  nosat.saturate = false;
  uint64_t lo = 0, hi = std::bit_cast<uint64_t>(std::numeric_limits<double>::max());
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (explain(std::bit_cast<double>(mid), nosat).overflow)
      hi = mid;
    else
      lo = mid;
  }
  rne_finite_limit_ = std::bit_cast<double>(lo);
  float f = static_cast<float>(rne_finite_limit_);
  if (static_cast<double>(f) > rne_finite_limit_) f = std::nextafter(f, 0.0f);
  rne_finite_limit_f32_ = f;
  fast_path_ok_ = bits_ <= 8 && s.specials != SpecialCodes::E8M0;
  if (fast_path_ok_) initFast(); // uses rne_finite_limit_f32_
}

// ---- named formats --------------------------------------------------------------------------

#define FP8LAB_NAMED(fn, ...)                                                                                          \
  const Format& Format::fn() {                                                                                         \
    static const Format f(makeSpec(__VA_ARGS__));                                                                      \
    return f;                                                                                                          \
  }
FP8LAB_NAMED(E4M3FN, "E4M3FN", 4, 3, 7, true, SpecialCodes::FN, "float8_e4m3fn",
             "OCP OFP8 E4M3: forward tensors in FP8 training (NVIDIA Hopper/Blackwell, Flax, TE)")
FP8LAB_NAMED(E5M2, "E5M2", 5, 2, 15, true, SpecialCodes::IEEE, "float8_e5m2",
             "OCP OFP8 E5M2: gradients in HYBRID recipes (IEEE-style Inf/NaN)")
FP8LAB_NAMED(E4M3FNUZ, "E4M3FNUZ", 4, 3, 8, true, SpecialCodes::FNUZ, "float8_e4m3fnuz",
             "AMD MI300 / Graphcore E4M3 (bias 8, no -0, NaN = 0x80)")
FP8LAB_NAMED(E5M2FNUZ, "E5M2FNUZ", 5, 2, 16, true, SpecialCodes::FNUZ, "float8_e5m2fnuz",
             "AMD MI300 / Graphcore E5M2 (bias 16, no Inf, no -0, NaN = 0x80)")
FP8LAB_NAMED(E4M3B11FNUZ, "E4M3B11FNUZ", 4, 3, 11, true, SpecialCodes::FNUZ, "float8_e4m3b11fnuz",
             "Graphcore/TPU E4M3 with bias 11 (no Inf, no -0, NaN = 0x80)")
FP8LAB_NAMED(E4M3, "E4M3", 4, 3, 7, true, SpecialCodes::IEEE, "float8_e4m3",
             "IEEE-style E4M3 with infinities (ml_dtypes float8_e4m3, max 240)")
FP8LAB_NAMED(E3M4, "E3M4", 3, 4, 3, true, SpecialCodes::IEEE, "float8_e3m4",
             "IEEE-style E3M4 with infinities (ml_dtypes float8_e3m4, max 15.5)")
FP8LAB_NAMED(E8M0FNU, "E8M0FNU", 8, 0, 127, false, SpecialCodes::E8M0, "float8_e8m0fnu",
             "OCP MX v1.0 shared block scale: unsigned powers of two 2^-127..2^127, 0xFF = NaN")
FP8LAB_NAMED(E2M3, "E2M3", 2, 3, 1, true, SpecialCodes::FiniteOnly, "float6_e2m3fn",
             "OCP MX v1.0 FP6 E2M3 element (max 7.5, no Inf/NaN)")
FP8LAB_NAMED(E3M2, "E3M2", 3, 2, 3, true, SpecialCodes::FiniteOnly, "float6_e3m2fn",
             "OCP MX v1.0 FP6 E3M2 element (max 28, no Inf/NaN)")
FP8LAB_NAMED(E2M1, "E2M1", 2, 1, 1, true, SpecialCodes::FiniteOnly, "float4_e2m1fn",
             "OCP MX v1.0 FP4 E2M1 element (values 0, 0.5, 1, 1.5, 2, 3, 4, 6)")
FP8LAB_NAMED(BF16, "BF16", 8, 7, 127, true, SpecialCodes::IEEE, "bfloat16",
             "bfloat16 (comparison; exact for every FP8 product)")
FP8LAB_NAMED(FP16, "FP16", 5, 10, 15, true, SpecialCodes::IEEE, "float16", "IEEE 754 binary16 (comparison)")
#undef FP8LAB_NAMED

const std::vector<const Format*>& Format::all() {
  static const std::vector<const Format*> v = {&E4M3FN(), &E5M2(), &E4M3FNUZ(), &E5M2FNUZ(), &E4M3B11FNUZ(),
                                               &E4M3(),   &E3M4(), &E8M0FNU(),  &E2M3(),     &E3M2(),
                                               &E2M1(),   &BF16(), &FP16()};
  return v;
}

const Format* Format::byName(std::string_view name) {
  const std::string l = lower(name);
  for (const Format* f : all()) {
    if (lower(f->name()) == l || (!f->spec().ml_dtypes_name.empty() && f->spec().ml_dtypes_name == l)) return f;
  }
  struct Alias {
    const char* alias;
    const char* name;
  };
  static const Alias aliases[] = {
      {"fp8_e4m3", "E4M3FN"}, {"fp8_e4m3fn", "E4M3FN"}, {"e4m3fn_ocp", "E4M3FN"}, {"fp8_e5m2", "E5M2"},
      {"mxfp6_e2m3", "E2M3"}, {"mxfp6_e3m2", "E3M2"},   {"fp6_e2m3", "E2M3"},     {"fp6_e3m2", "E3M2"},
      {"e2m3fn", "E2M3"},     {"e3m2fn", "E3M2"},       {"e2m1fn", "E2M1"},       {"fp4", "E2M1"},
      {"mxfp4", "E2M1"},      {"fp4_e2m1", "E2M1"},     {"e8m0", "E8M0FNU"},      {"ue8m0", "E8M0FNU"},
      {"e8m0fnu", "E8M0FNU"}, {"bfloat16", "BF16"},     {"float16", "FP16"},      {"half", "FP16"},
      {"e5m10", "FP16"},      {"e8m7", "BF16"},
  };
  for (const auto& a : aliases)
    if (l == a.alias) return byName(a.name);
  return nullptr;
}

Format Format::custom(int e, int m, int bias, SpecialCodes specials, std::string name) {
  FormatSpec s;
  s.exponent_bits = e;
  s.mantissa_bits = m;
  s.bias = bias;
  s.has_sign = specials != SpecialCodes::E8M0;
  s.specials = specials;
  if (name.empty()) {
    name = "E";
    name += std::to_string(e);
    name += "M";
    name += std::to_string(m);
    name += "_b";
    name += std::to_string(bias);
  }
  s.name = std::move(name);
  s.description = "custom format";
  return Format(std::move(s));
}

// ---- properties -----------------------------------------------------------------------------

bool Format::hasNegativeZero() const {
  return spec_.has_sign && spec_.specials != SpecialCodes::FNUZ;
}

double Format::dynamicRangeBinades() const {
  return std::log2(max_finite_ / min_subnormal_);
}

int Format::minExponent() const {
  return std::ilogb(min_normal_);
}
int Format::maxExponent() const {
  return std::ilogb(max_finite_);
}

std::string Format::roundingName(Rounding r) const {
  if (spec_.specials == SpecialCodes::E8M0 && r == Rounding::NearestEven) return "nearest, ties up (ml_dtypes)";
  return toString(r);
}

uint32_t Format::canonicalNaN() const {
  if (!hasNaN()) throw std::logic_error("format " + spec_.name + " has no NaN");
  return nanCode(false, EncodeOptions{});
}

// ---- decode / classify ----------------------------------------------------------------------

Format::Fields Format::fields(uint32_t code) const {
  const int m = spec_.mantissa_bits, e = spec_.exponent_bits;
  Fields f;
  f.sign = spec_.has_sign ? (code >> (e + m)) & 1u : 0u;
  f.exponent = (code >> m) & ((1u << e) - 1u);
  f.mantissa = code & ((1u << m) - 1u);
  return f;
}

double Format::decode(uint32_t code) const {
  if (code >= (1u << bits_))
    throw std::out_of_range("code 0x" + hexString(code).substr(2) + " is too wide for " + spec_.name + " (" +
                            std::to_string(bits_) + " bits)");
  if (table_ready_) return table_[code];
  return decodeRaw(code);
}

double Format::decodeRaw(uint32_t code) const {
  const int m = spec_.mantissa_bits;
  const uint32_t emax_field = (1u << spec_.exponent_bits) - 1u;
  const Fields f = fields(code);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double sgn = f.sign ? -1.0 : 1.0;
  switch (spec_.specials) {
  case SpecialCodes::E8M0:
    if (code == emax_field) return nan;
    return std::ldexp(1.0, static_cast<int>(code) - spec_.bias);
  case SpecialCodes::IEEE:
    if (f.exponent == emax_field)
      return f.mantissa == 0 ? sgn * std::numeric_limits<double>::infinity() : std::copysign(nan, sgn);
    break;
  case SpecialCodes::FN:
    if (f.exponent == emax_field && f.mantissa == (1u << m) - 1u) return std::copysign(nan, sgn);
    break;
  case SpecialCodes::FNUZ:
    if (f.sign && f.exponent == 0 && f.mantissa == 0) return nan;
    break;
  case SpecialCodes::FiniteOnly:
    break;
  }
  double mag;
  if (f.exponent == 0)
    mag = std::ldexp(static_cast<double>(f.mantissa), 1 - spec_.bias - m);
  else
    mag = std::ldexp(static_cast<double>((1u << m) + f.mantissa), static_cast<int>(f.exponent) - spec_.bias - m);
  return sgn * mag;
}

CodeClass Format::classify(uint32_t code) const {
  const double v = decode(code);
  if (std::isnan(v)) return CodeClass::NaN;
  if (std::isinf(v)) return CodeClass::Infinity;
  if (v == 0) return CodeClass::Zero;
  if (std::fabs(v) == max_finite_ && max_finite_ > 0) return CodeClass::MaxFinite;
  if (spec_.specials != SpecialCodes::E8M0 && fields(code).exponent == 0) return CodeClass::Subnormal;
  return CodeClass::Normal;
}

std::string Format::hexString(uint32_t code) const {
  static const char* digits = "0123456789abcdef";
  const int width = std::max(1, (bits_ + 3) / 4);
  std::string s = "0x";
  for (int i = width - 1; i >= 0; --i) s += digits[(code >> (4 * i)) & 0xF];
  return s;
}

std::string Format::binaryString(uint32_t code) const {
  std::string s;
  const int m = spec_.mantissa_bits, e = spec_.exponent_bits;
  auto bitsOf = [&](uint32_t v, int width) {
    for (int i = width - 1; i >= 0; --i) s += ((v >> i) & 1u) ? '1' : '0';
  };
  const Fields f = fields(code);
  if (spec_.has_sign) {
    bitsOf(f.sign, 1);
    s += ' ';
  }
  bitsOf(f.exponent, e);
  if (m > 0) {
    s += ' ';
    bitsOf(f.mantissa, m);
  }
  return s;
}

// ---- encode -----------------------------------------------------------------------------------

uint32_t Format::zeroCode(bool negative) const {
  if (!spec_.has_sign || spec_.specials == SpecialCodes::FNUZ) return 0;
  return negative ? (1u << (bits_ - 1)) : 0u;
}

uint32_t Format::nanCode(bool negative, const EncodeOptions& opt) const {
  const bool ml = opt.specials == SpecialsPolicy::MlDtypes || !cudaCovered(spec_);
  const int m = spec_.mantissa_bits;
  const uint32_t sign_bit = spec_.has_sign ? (1u << (bits_ - 1)) : 0u;
  const uint32_t exp_all = ((1u << spec_.exponent_bits) - 1u) << m;
  switch (spec_.specials) {
  case SpecialCodes::E8M0:
    return 0xFFu & codeMask();
  case SpecialCodes::FNUZ:
    return sign_bit;
  case SpecialCodes::FN: {
    const uint32_t c = exp_all | ((1u << m) - 1u);
    return (ml && negative) ? (c | sign_bit) : c; // CUDA canonicalises NaN to positive
  }
  case SpecialCodes::IEEE:
    if (ml) return exp_all | (1u << (m - 1)) | (negative ? sign_bit : 0u); // quiet NaN, sign kept
    return exp_all | ((1u << m) - 1u);                                     // CUDA: always 0x7F
  case SpecialCodes::FiniteOnly:
    // No NaN code: CUDA documents NaN → +MAXNORM; ml_dtypes' quiet_NaN() is the −0 code.
    if (ml) return negative ? 0u : sign_bit;
    return max_code_;
  }
  return 0;
}

uint32_t Format::infOrOverflowCode(bool negative, bool is_inf_input, const EncodeOptions& opt) const {
  const bool ml = opt.specials == SpecialsPolicy::MlDtypes || !cudaCovered(spec_);
  const uint32_t sign_bit = spec_.has_sign ? (1u << (bits_ - 1)) : 0u;
  const uint32_t maxc = max_code_ | (negative ? sign_bit : 0u);
  const int m = spec_.mantissa_bits;
  const uint32_t exp_all = ((1u << spec_.exponent_bits) - 1u) << m;
  auto nonFinite = [&]() -> uint32_t {
    switch (spec_.specials) {
    case SpecialCodes::IEEE:
      return exp_all | (negative ? sign_bit : 0u);
    case SpecialCodes::FN:
      return exp_all | ((1u << m) - 1u) | (negative ? sign_bit : 0u);
    case SpecialCodes::FNUZ:
      return sign_bit;
    case SpecialCodes::FiniteOnly:
      return maxc; // nothing else to give (both oracles)
    case SpecialCodes::E8M0:
      return 0xFFu;
    }
    return maxc;
  };
  if (spec_.specials == SpecialCodes::FiniteOnly) return maxc;
  if (is_inf_input) {
    // FNUZ: ONNX Cast (opset 24 on) saturates ±Inf to ±max like CUDA's E4M3FN; ml_dtypes gives
    // 0x80 (NaN) and is kept under SpecialsPolicy::MlDtypes. Other ml_dtypes-only formats keep Inf.
    const bool inf_first = spec_.specials == SpecialCodes::FNUZ ? opt.specials == SpecialsPolicy::MlDtypes : ml;
    if (inf_first) return nonFinite(); // ml_dtypes checks Inf before saturating
    return opt.saturate ? maxc : nonFinite();
  }
  if (opt.saturate) return maxc;
  // IEEE 754 directed roundings never overflow away from the rounding direction.
  const bool toward_max = opt.rounding == Rounding::TowardZero ||
                          (opt.rounding == Rounding::TowardPosInf && negative) ||
                          (opt.rounding == Rounding::TowardNegInf && !negative);
  return toward_max ? maxc : nonFinite();
}

uint32_t Format::codeFromMagnitude(double v, bool negative) const {
  const int m = spec_.mantissa_bits;
  const uint32_t sign_bit = (spec_.has_sign && negative) ? (1u << (bits_ - 1)) : 0u;
  if (v == 0) return zeroCode(negative);
  if (spec_.specials == SpecialCodes::E8M0) return static_cast<uint32_t>(std::ilogb(v) + spec_.bias);
  if (v < min_normal_) {
    const double mant = v / min_subnormal_; // exact integer
    return sign_bit | static_cast<uint32_t>(mant);
  }
  const int e = std::ilogb(v);
  const double frac = std::ldexp(v, -e) - 1.0;
  const uint32_t mant = static_cast<uint32_t>(std::ldexp(frac, m));
  return sign_bit | (static_cast<uint32_t>(e + spec_.bias) << m) | mant;
}

uint32_t Format::encode(double x, const EncodeOptions& opt) const {
  return explain(x, opt).code;
}

RoundingDecision Format::explain(double x, const EncodeOptions& opt) const {
  RoundingDecision d;
  d.input = x;
  const bool negative = std::signbit(x);
  if (std::isnan(x)) {
    d.input_is_nan = true;
    d.code = nanCode(negative, opt);
  } else if (spec_.specials == SpecialCodes::E8M0) {
    d.code = encodeMagnitude(x, negative, opt, &d); // E8M0 handles sign itself
  } else if (std::isinf(x)) {
    d.code = infOrOverflowCode(negative, true, opt);
    d.overflow = !hasInfinity() || opt.saturate;
    d.saturated = std::fabs(decode(d.code)) == max_finite_;
  } else {
    d.code = encodeMagnitude(std::fabs(x), negative, opt, &d);
  }
  d.value = decode(d.code);
  d.exact = !d.input_is_nan && d.value == x;
  if (std::isfinite(x) && !std::isnan(d.value)) {
    d.abs_error = std::fabs(d.value - x);
    d.rel_error = x != 0 ? d.abs_error / std::fabs(x) : 0.0;
  } else if (std::isnan(d.value) || std::isnan(x)) {
    d.abs_error = d.rel_error = std::numeric_limits<double>::quiet_NaN();
  } else {
    d.abs_error = d.rel_error = std::numeric_limits<double>::infinity();
    if (std::isinf(x) && std::isinf(d.value) && std::signbit(x) == std::signbit(d.value)) d.abs_error = d.rel_error = 0;
  }
  d.subnormal = classify(d.code) == CodeClass::Subnormal;
  return d;
}

namespace {
/// Decides whether to round a magnitude up, given the integer part parity, the fraction
/// f in [0,1) and the options. `tie_up` makes ties round away (E8M0, ml_dtypes).
bool roundUp(double n, double f, bool negative, const EncodeOptions& opt, bool tie_up = false) {
  if (f == 0) return false;
  switch (opt.rounding) {
  case Rounding::NearestEven:
    if (f > 0.5) return true;
    if (f < 0.5) return false;
    return tie_up || std::fmod(n, 2.0) != 0.0;
  case Rounding::TowardZero:
    return false;
  case Rounding::TowardPosInf:
    return !negative;
  case Rounding::TowardNegInf:
    return negative;
  case Rounding::Stochastic: {
    const int r = std::clamp(opt.stochastic_bits, 1, 32);
    const double scale = std::ldexp(1.0, r);
    const double kept = std::floor(f * scale); // discarded bits truncated to r bits
    const double rnd = static_cast<double>(r == 32 ? opt.random_word : (opt.random_word & ((1u << r) - 1u)));
    return kept + rnd >= scale;
  }
  }
  return false;
}
} // namespace

uint32_t Format::encodeMagnitude(double a, bool negative, const EncodeOptions& opt, RoundingDecision* why) const {
  if (spec_.specials == SpecialCodes::E8M0) {
    // a is the signed input here. Scale format: powers of two 2^-127 .. 2^127 only.
    const bool ml = opt.specials == SpecialsPolicy::MlDtypes;
    const double x = a;
    const int emin = -spec_.bias, emax = 254 - spec_.bias; // exponents of 0x00 and 0xFE
    const uint32_t max_code = static_cast<uint32_t>(emax + spec_.bias);
    if (std::isinf(x)) {
      if (why) why->overflow = true;
      if (ml) return 0xFF;
      if (why) why->saturated = opt.saturate;
      return opt.saturate ? max_code : 0xFF;
    }
    if (ml && (x == 0 || negative)) {
      // ml_dtypes: zero and negative inputs are out of range (E8M0 has neither).
      if (why) why->underflow = true;
      return opt.saturate ? 0x00 : 0xFF;
    }
    const double mag = std::fabs(x); // CUDA takes |x|
    if (why) why->sign_dropped = negative;
    if (mag < std::ldexp(1.0, emin)) {
      // Below the smallest value 2^-127 (0 included): nothing lies below it, so every rounding
      // mode gives 0x00 (CUDA clips there; ml_dtypes likewise for positive inputs).
      if (why) why->underflow = true;
      return 0x00;
    }
    const int e = std::ilogb(mag);
    const double f = std::ldexp(mag, -e) - 1.0; // linear position inside [2^e, 2^(e+1))
    // The only candidates are 2^e and 2^(e+1); nearest compares f with 1/2 (a tie, f = 1/2,
    // rounds up as in ml_dtypes), the same rule in every binade, float32 subnormals included.
    const bool up = roundUp(0.0, f, false, opt, /*tie_up=*/true);
    const int re = e + (up ? 1 : 0);
    if (why) {
      why->has_neighbours = true;
      why->rounded_up = up;
      why->tie = f == 0.5;
      if (e > emax) {
        // Past 2^128 (a double input): the neighbours are max (2^127) and the missing 2^128.
        why->lower_value = std::ldexp(1.0, emax);
        why->upper_value = std::ldexp(1.0, emax + 1);
        why->tie = false;
      } else {
        why->lower_value = std::ldexp(1.0, e);
        why->upper_value = f == 0 ? why->lower_value : std::ldexp(1.0, e + 1);
      }
      why->midpoint = (why->lower_value + why->upper_value) / 2;
      why->lower_code = static_cast<uint32_t>(std::min(e, emax) + spec_.bias);
      const int ue = f == 0 ? e : std::min(e, emax) + 1;
      why->upper_code = ue > emax ? 0xFFu : static_cast<uint32_t>(ue + spec_.bias);
    }
    if (re > emax) {
      // Overflow: ±max when saturating; without saturation NaN, except that a rounding toward
      // zero (rtz, or rd: E8M0 rounds |x|) never rounds past max (IEEE 754 7.4), as elsewhere.
      const bool toward_max = opt.rounding == Rounding::TowardZero || opt.rounding == Rounding::TowardNegInf;
      const uint32_t c = (opt.saturate || toward_max) ? max_code : 0xFFu;
      if (why) {
        why->overflow = true;
        why->saturated = opt.saturate;
      }
      return c;
    }
    return static_cast<uint32_t>(re + spec_.bias);
  }

  // Signed formats; a = |x| finite.
  if (a == 0) return zeroCode(negative);
  const int m = spec_.mantissa_bits;
  const int emin = 1 - spec_.bias;
  const int e = std::ilogb(a);
  const int qexp = std::max(e, emin) - m; // quantum exponent, unbounded above
  const double q = std::ldexp(a, -qexp);
  const double n = std::floor(q);
  const double f = q - n;
  const bool up = roundUp(n, f, negative, opt);
  const double mag = std::ldexp(n + (up ? 1.0 : 0.0), qexp);
  if (why) {
    why->has_neighbours = true;
    const double lo = std::ldexp(n, qexp), hi = std::ldexp(n + (f == 0 ? 0.0 : 1.0), qexp);
    const double sgn = negative ? -1.0 : 1.0;
    why->lower_value = sgn * lo;
    why->upper_value = sgn * hi;
    why->midpoint = sgn * (lo + hi) / 2;
    why->tie = f == 0.5;
    why->rounded_up = up;
    EncodeOptions nosat;
    nosat.saturate = false;
    if (lo > max_finite_) {
      // Far past max: the neighbours are max finite and the first grid point beyond it.
      const double past = max_finite_ + ulp(max_finite_);
      why->lower_value = sgn * max_finite_;
      why->upper_value = sgn * past;
      why->midpoint = sgn * (max_finite_ + past) / 2;
      why->tie = false;
      why->lower_code = codeFromMagnitude(max_finite_, negative);
      why->upper_code = infOrOverflowCode(negative, false, nosat);
    } else {
      why->lower_code = codeFromMagnitude(lo, negative);
      why->upper_code = hi <= max_finite_ ? codeFromMagnitude(hi, negative) : infOrOverflowCode(negative, false, nosat);
    }
  }
  if (mag > max_finite_) {
    const uint32_t c = infOrOverflowCode(negative, false, opt);
    if (why) {
      why->overflow = true;
      // Without saturation a finite ±max result is the directed rounding's own (toward zero),
      // not saturation; FP6/FP4 have no other overflow result.
      const bool can_saturate = opt.saturate || spec_.specials == SpecialCodes::FiniteOnly;
      why->saturated = can_saturate && std::fabs(decode(c)) == max_finite_;
    }
    return c;
  }
  if (mag == 0) {
    if (why) why->underflow = true;
    return zeroCode(negative);
  }
  return codeFromMagnitude(mag, negative);
}

// ---- neighbours and ulp ---------------------------------------------------------------------

uint32_t Format::nextUp(uint32_t code) const {
  // IEEE 754 nextUp: ±0 → min subnormal; −min subnormal → −0. Zeros compare equal.
  const double v = decode(code);
  if (std::isnan(v) || v == std::numeric_limits<double>::infinity()) return code;
  bool found = false;
  double best = 0;
  uint32_t best_code = code;
  for (uint32_t c = 0; c < codeCount(); ++c) {
    const double w = table_[c];
    if (std::isnan(w) || !(w > v)) continue;
    const bool prefer_this_zero = w == 0 && std::signbit(w); // coming from below: −0
    if (!found || w < best || (w == best && prefer_this_zero)) {
      best = w;
      best_code = c;
      found = true;
    }
  }
  return best_code;
}

uint32_t Format::nextDown(uint32_t code) const {
  const double v = decode(code);
  if (std::isnan(v) || v == -std::numeric_limits<double>::infinity()) return code;
  bool found = false;
  double best = 0;
  uint32_t best_code = code;
  for (uint32_t c = 0; c < codeCount(); ++c) {
    const double w = table_[c];
    if (std::isnan(w) || !(w < v)) continue;
    const bool prefer_this_zero = w == 0 && !std::signbit(w); // coming from above: +0
    if (!found || w > best || (w == best && prefer_this_zero)) {
      best = w;
      best_code = c;
      found = true;
    }
  }
  return best_code;
}

double Format::ulp(double x) const {
  if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
  const double a = std::fabs(x);
  if (spec_.specials == SpecialCodes::E8M0) {
    if (a == 0) return std::ldexp(1.0, -spec_.bias);
    return std::ldexp(1.0, std::max(std::ilogb(a), -spec_.bias));
  }
  const int emin = 1 - spec_.bias;
  const int e = a == 0 ? emin : std::max(std::ilogb(a), emin);
  return std::ldexp(1.0, e - spec_.mantissa_bits);
}

uint32_t Format::counterRandom(uint64_t seed, uint64_t index) {
  // splitmix64 finaliser over a Weyl sequence position: independent, reproducible words.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<uint32_t>(z >> 32);
}

} // namespace fp8lab

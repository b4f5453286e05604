// FP8 Lab — parametric low-precision number formats (E4M3FN, E5M2, FNUZ, MX, BF16, ...).
//
// Semantics: OCP 8-bit Floating Point (OFP8) rev 1.0, OCP Microscaling (MX) v1.0, NVIDIA CUDA 13
// host conversions (cuda_fp8.h / cuda_fp6.h / cuda_fp4.h) and jax-ml/ml_dtypes (float8.h,
// mxfloat.h). Where CUDA and ml_dtypes differ (NaN/Inf/zero specials only), the default follows
// CUDA 13; SpecialsPolicy::MlDtypes gives ml_dtypes' behaviour. See docs/formats.md.
#pragma once

#include "formats/rne_encode.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// How a format spends its special codes.
enum class SpecialCodes {
  IEEE,       ///< all-ones exponent: mantissa 0 = ±Inf, else NaN (E5M2, E4M3, E3M4, FP16, BF16)
  FN,         ///< "finite": no Inf; only all-ones exponent+mantissa is NaN (E4M3FN)
  FNUZ,       ///< "finite, unsigned zero": no Inf, no −0; code 0x80 (sign only) is the single NaN
  FiniteOnly, ///< every code is a finite number; no Inf, no NaN (MX FP6 E2M3/E3M2, FP4 E2M1)
  E8M0,       ///< unsigned power of two 2^(code−bias), no zero, all-ones code is NaN (E8M0FNU)
};

/// Rounding applied when a value falls between two representable numbers.
enum class Rounding {
  NearestEven,  ///< round to nearest, ties to even ("rne"); E8M0: nearest power of two on the
                ///< linear scale, ties (1.5·2^e) round up, as ml_dtypes (Format::roundingName)
  TowardZero,   ///< truncate magnitude ("rtz", CUDA cudaRoundZero, ml_dtypes kTruncate)
  TowardPosInf, ///< round up ("ru", CUDA cudaRoundPosInf — used for E8M0 scales)
  TowardNegInf, ///< round down ("rd")
  Stochastic,   ///< round up with probability ≈ fractional distance (see EncodeOptions)
};

/// Which reference implementation to follow for NaN / Inf / zero specials, the only inputs on
/// which CUDA 13 and ml_dtypes disagree (docs/formats.md, "Where the references disagree").
enum class SpecialsPolicy {
  Cuda,     ///< default: ±Inf saturates under SATFINITE, NaN sign dropped, NaN→+max for FP6/FP4,
            ///< E8M0 takes |x| and clips below 2^-127 to 0x00. FNUZ formats (no CUDA type):
            ///< saturating ±Inf → ±max 0x7F/0xFF, as ONNX Cast from opset 24; otherwise ml_dtypes
  MlDtypes, ///< ml_dtypes: Inf checked before saturation (FNUZ: ±Inf → 0x80 even when saturating),
            ///< NaN keeps sign, FP6/FP4 NaN → −0 code, E8M0 zero/negative inputs out of range
};

/// Options for encode(). Defaults: RNE, saturating (SATFINITE), CUDA specials.
struct EncodeOptions {
  Rounding rounding = Rounding::NearestEven;
  /// true: values beyond max finite (and ±Inf under SpecialsPolicy::Cuda, FNUZ included) become ±max finite
  /// (OCP "SAT"). false: they become Inf where the format has one, else NaN. Either way the
  /// value is first rounded with an unbounded exponent, then checked (OCP OFP8 v1.0 §3), so
  /// 464 → 448 in E4M3FN even without saturation.
  bool saturate = true;
  SpecialsPolicy specials = SpecialsPolicy::Cuda;
  /// Stochastic rounding only: number of random bits r (1..32). The discarded part of the
  /// significand is truncated to r bits and rounded up when it plus an r-bit random integer
  /// carries, so P(up) = floor(frac·2^r)/2^r.
  int stochastic_bits = 16;
  /// Stochastic rounding only: the random word for this conversion (low r bits used).
  /// Bulk functions derive one word per element from a seed (counterRandom()).
  uint32_t random_word = 0;
};

/// A format's fixed description: sign/exponent/mantissa bits, bias and special-code policy.
/// Every named format is an instance; custom ExMy formats are built with the same fields.
struct FormatSpec {
  std::string name;      ///< canonical name, e.g. "E4M3FN"
  int exponent_bits = 0; ///< 1..8
  int mantissa_bits = 0; ///< 0..10 (0 only for E8M0)
  int bias = 0;          ///< exponent bias
  bool has_sign = true;  ///< false only for E8M0FNU
  SpecialCodes specials = SpecialCodes::IEEE;
  std::string ml_dtypes_name; ///< e.g. "float8_e4m3fn"; empty if ml_dtypes has none
  std::string description;    ///< one line: who uses it, which spec
};

/// The rounding decision for one value, as data (for the GUI's rounding demo and the CLI).
struct RoundingDecision {
  double input = 0; ///< the value given (after any scaling)
  bool input_is_nan = false;
  uint32_t code = 0;           ///< the chosen code
  double value = 0;            ///< its decoded value (may be NaN / ±Inf)
  bool exact = false;          ///< input representable exactly
  bool has_neighbours = false; ///< false for NaN/Inf inputs
  uint32_t lower_code = 0;     ///< nearest representable ≤ |input| (same sign as input)
  double lower_value = 0;
  uint32_t upper_code = 0; ///< nearest representable ≥ |input| (may be past max: see overflow)
  double upper_value = 0;  ///< with an unbounded exponent, so it may exceed max finite
  double midpoint = 0;     ///< (lower + upper) / 2
  bool tie = false;        ///< input exactly at the midpoint
  bool rounded_up = false; ///< magnitude rounded away from zero
  bool overflow = false;   ///< rounded magnitude exceeded max finite
  /// Overflow resolved to ±max finite by saturation (or, for FP6/FP4, by the format having no
  /// other code). False when a non-saturating rounding toward zero gave ±max: that result is
  /// the rounding's own (IEEE 754 §7.4), shown as overflow && !saturated && finite value.
  bool saturated = false;
  bool underflow = false; ///< non-zero input became zero (or E8M0 minimum)
  bool subnormal = false; ///< result is subnormal
  /// E8M0 under SpecialsPolicy::Cuda: the input was negative and |x| was encoded (CUDA's
  /// __nv_cvt_float_to_e8m0 ignores the sign); the neighbours are those of |x|.
  bool sign_dropped = false;
  double abs_error = 0; ///< |value − input| (Inf/NaN when the result is not finite)
  double rel_error = 0; ///< abs_error / |input| (0 for input 0)
};

/// Classification of a code.
enum class CodeClass { Zero, Subnormal, Normal, MaxFinite, Infinity, NaN };

const char* toString(CodeClass c);
const char* toString(Rounding r);
/// Parses "rne", "rtz", "ru", "rd", "stochastic" (and long names); nullopt if unknown.
std::optional<Rounding> parseRounding(std::string_view s);

/// A number format: decode / encode / properties. Cheap to copy (holds a 2^bits decode table
/// for formats of ≤ 16 bits). Thread-safe for concurrent const use.
class Format {
public:
  /// Builds a format from a spec. Throws std::invalid_argument if the spec is inconsistent
  /// (more than 16 bits, FN with no mantissa, E8M0 with a sign, ...).
  explicit Format(FormatSpec spec);

  // ---- named formats (shared instances) ----
  static const Format& E4M3FN();
  static const Format& E5M2();
  static const Format& E4M3FNUZ();
  static const Format& E5M2FNUZ();
  static const Format& E4M3B11FNUZ();
  static const Format& E4M3();
  static const Format& E3M4();
  static const Format& E8M0FNU();
  static const Format& E2M3();
  static const Format& E3M2();
  static const Format& E2M1();
  static const Format& BF16();
  static const Format& FP16();
  /// Every named format, in display order.
  static const std::vector<const Format*>& all();
  /// Looks a format up by name, case-insensitively; accepts canonical names ("E4M3FN"),
  /// ml_dtypes names ("float8_e4m3fn", "float6_e2m3fn", "float4_e2m1fn", "float8_e8m0fnu",
  /// "bfloat16", "float16"), and common aliases ("fp8_e4m3", "mxfp4", "fp16", "bf16").
  static const Format* byName(std::string_view name);
  /// A custom "ExMy" format, e.g. custom(3, 2, 3, SpecialCodes::FiniteOnly).
  static Format custom(int exponent_bits, int mantissa_bits, int bias, SpecialCodes specials, std::string name = {});

  const FormatSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  int bits() const { return bits_; } ///< total width in bits (4, 6, 8 or 16)
  uint32_t codeCount() const { return 1u << bits_; }
  uint32_t codeMask() const { return (1u << bits_) - 1u; }

  // ---- properties (all exact doubles) ----
  int bias() const { return spec_.bias; }
  double maxFinite() const { return max_finite_; }
  double minNormal() const { return min_normal_; }
  double minSubnormal() const { return min_subnormal_; } ///< == minNormal() if no subnormals
  double machineEpsilon() const { return epsilon_; }     ///< distance from 1 to the next value
  int finiteCount() const { return finite_count_; }      ///< codes decoding to finite values
  int nanCount() const { return nan_count_; }
  int infCount() const { return inf_count_; }
  bool hasInfinity() const { return inf_count_ > 0; }
  bool hasNaN() const { return nan_count_ > 0; }
  bool hasNegativeZero() const;
  bool hasSubnormals() const { return spec_.specials != SpecialCodes::E8M0 && spec_.mantissa_bits > 0; }
  /// log2(maxFinite / minSubnormal): the dynamic range in binades.
  double dynamicRangeBinades() const;
  int minExponent() const;                             ///< unbiased exponent of minNormal
  int maxExponent() const;                             ///< unbiased exponent of maxFinite
  uint32_t maxFiniteCode() const { return max_code_; } ///< positive max finite code
  /// The overflow rule of OCP OFP8 v1.0 §3 as a bound: a finite magnitude a overflows — its
  /// round-to-nearest-even result with an unbounded exponent lies beyond maxFinite() — iff
  /// a > rneFiniteLimit(). Examples: E4M3FN 464 (the midpoint 448 + 32/2 is a tie and rounds to
  /// the even 448), E5M2 the largest double below 61440 (the tie 61440 rounds up, to 2^16),
  /// E8M0FNU the largest double below 1.5·2^127 (nearest, ties up). A value above maxFinite() but
  /// not above this bound rounds to ±max and is not an overflow. Saturation counters use it.
  double rneFiniteLimit() const { return rne_finite_limit_; }
  /// rneFiniteLimit() for float32 magnitudes: the largest float32 whose RNE result is finite.
  float rneFiniteLimitF32() const { return rne_finite_limit_f32_; }
  /// The code this library produces for NaN (positive sign): 0x7F E4M3FN, 0x7F E5M2 (CUDA),
  /// 0x80 FNUZ, 0xFF E8M0. Throws std::logic_error for formats without NaN.
  uint32_t canonicalNaN() const;

  /// How this format applies rounding mode r, for labels: toString(r) ("rne", "rtz", ...),
  /// except E8M0 with NearestEven, which has no even/odd choice (no mantissa) and rounds ties
  /// up: "nearest, ties up (ml_dtypes)".
  std::string roundingName(Rounding r) const;

  // ---- scalar conversion ----
  /// Exact value of `code` (low bits() bits used; higher bits must be zero, else
  /// std::out_of_range). NaN codes give a quiet NaN with the code's sign.
  double decode(uint32_t code) const;
  CodeClass classify(uint32_t code) const;
  /// Encodes a double in a single rounding (never through float first).
  uint32_t encode(double x, const EncodeOptions& opt = {}) const;
  /// Encodes and explains the rounding (neighbours, midpoint, tie, error).
  RoundingDecision explain(double x, const EncodeOptions& opt = {}) const;
  /// Next representable value toward +Inf / −Inf (codes). NaN stays NaN; max stays max
  /// (or becomes Inf where the format has one).
  uint32_t nextUp(uint32_t code) const;
  uint32_t nextDown(uint32_t code) const;
  /// Spacing of representable values at |x| (the quantum of x's binade; subnormal quantum
  /// below minNormal). NaN for NaN/Inf x.
  double ulp(double x) const;
  /// Field split of a code: sign, biased exponent field, mantissa field.
  struct Fields {
    uint32_t sign, exponent, mantissa;
  };
  Fields fields(uint32_t code) const;
  /// Binary with fields separated, e.g. "0 1111 110".
  std::string binaryString(uint32_t code) const;
  /// "0x7e" (lower-case, width bits()/4 rounded up).
  std::string hexString(uint32_t code) const;

  // ---- bulk conversion (hot path; vectorised) ----
  /// How a scale factor s is applied before the cast: x·s (TE, torchao, cuBLASLt quant
  /// multiplier) or x/s (Flax fp8_ops, DeepSeek-V3 act_quant), in float32 arithmetic.
  enum class ScaleOp { Multiply, Divide };
  /// out[i] = encode(float32(in[i] op s)) for i < n. Requires bits() ≤ 8. RNE saturating and
  /// non-saturating run a branch-free vector kernel; other roundings use the scalar path.
  /// Stochastic rounding draws element i's random word as counterRandom(seed, first_index + i),
  /// so results do not depend on how the work is split across threads.
  void encodeBulk(const float* in, uint8_t* out, std::size_t n, const EncodeOptions& opt = {}, float s = 1.0f,
                  ScaleOp op = ScaleOp::Multiply, uint64_t seed = 0, uint64_t first_index = 0) const;
  /// out[i] = decode(in[i]) as float32 (every value of a ≤ 8-bit format is exact in float32).
  void decodeBulk(const uint8_t* in, float* out, std::size_t n) const;
  /// Fake quantization for any width (BF16/FP16 too): out[i] = decode(encode(in[i])).
  void roundTripBulk(const float* in, float* out, std::size_t n, const EncodeOptions& opt = {}) const;
  /// Encodes doubles (float64 tensors are quantized from float64, one rounding).
  void encodeBulk(const double* in, uint8_t* out, std::size_t n, const EncodeOptions& opt = {}, double s = 1.0,
                  ScaleOp op = ScaleOp::Multiply, uint64_t seed = 0, uint64_t first_index = 0) const;
  /// The constants of the round-to-nearest-even element encode (rne_encode.h) for this format,
  /// saturating (OCP SAT, __NV_SATFINITE) or not, with SpecialsPolicy::Cuda: what encodeBulk's
  /// vector kernel and the GPU quantize kernel run. Taken from the scalar reference encode().
  /// Throws std::invalid_argument for formats the kernel cannot do (more than 8 bits, E8M0).
  const RneEncodeConstants& rneConstants(bool saturate) const;
  /// The float32 decode table (size codeCount(), ≤ 8-bit formats only; empty otherwise).
  const std::vector<float>& decodeTable() const { return table_f32_; }

  /// A reproducible 32-bit random word for element `index` of a stream seeded with `seed`
  /// (splitmix64 of seed and index): stochastic rounding without shared state.
  static uint32_t counterRandom(uint64_t seed, uint64_t index);

private:
  uint32_t encodeMagnitude(double a, bool negative, const EncodeOptions& opt, RoundingDecision* why) const;
  uint32_t codeFromMagnitude(double v, bool negative) const; // v exactly representable, ≤ max
  uint32_t nanCode(bool negative, const EncodeOptions& opt) const;
  uint32_t infOrOverflowCode(bool negative, bool is_inf_input, const EncodeOptions& opt) const;
  uint32_t zeroCode(bool negative) const;
  void init();
  void encodeBulkFast(const float* in, uint8_t* out, std::size_t n, bool saturate, float s, ScaleOp op) const;

  FormatSpec spec_;
  int bits_ = 0;
  double max_finite_ = 0, min_normal_ = 0, min_subnormal_ = 0, epsilon_ = 0;
  int finite_count_ = 0, nan_count_ = 0, inf_count_ = 0;
  uint32_t max_code_ = 0;
  double rne_finite_limit_ = 0;
  float rne_finite_limit_f32_ = 0;
  std::vector<double> table_;    ///< decode table, 2^bits entries
  std::vector<float> table_f32_; ///< float32 copy for ≤ 8-bit formats
  bool fast_path_ok_ = false;    ///< the vector kernel covers this format
  bool table_ready_ = false;
  /// Constants of the RNE element encode (rne_encode.h): [0] non-saturating, [1] saturating.
  RneEncodeConstants rne_[2]{};
  void initFast();
  double decodeRaw(uint32_t code) const;
};

} // namespace fp8lab

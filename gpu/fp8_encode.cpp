#include "fp8_encode.cuh"

#include "formats/format.h"

#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace fp8lab::gpu {

EncodeConstants makeEncodeConstants(const Format& f, bool saturate) {
  const FormatSpec& spec = f.spec();
  if (f.bits() > 8 || spec.specials == SpecialCodes::E8M0 || spec.mantissa_bits < 1 || spec.exponent_bits < 1)
    throw std::invalid_argument("the GPU quantize kernel covers float formats of at most 8 bits with a mantissa; " +
                                f.name() + " is not one");
  EncodeConstants k;
  const int m = spec.mantissa_bits;
  k.min_normal_bits = std::bit_cast<uint32_t>(static_cast<float>(f.minNormal()));
  k.magic = static_cast<float>(std::ldexp(f.minSubnormal(), 23));
  k.magic_bits = std::bit_cast<uint32_t>(k.magic);
  k.rebias = static_cast<uint32_t>(127 - spec.bias) << m;
  k.shift = 23 - m;
  k.sign_bit = 1u << (f.bits() - 1);
  EncodeOptions opt;
  opt.saturate = saturate;
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Overflow codes: what the scalar reference gives for a finite value far beyond max finite.
  const double huge = f.maxFinite() * 8.0;
  k.over_pos = f.encode(huge, opt);
  k.over_neg = f.encode(-huge, opt);
  k.inf_pos = f.encode(inf, opt);
  k.inf_neg = f.encode(-inf, opt);
  k.nan_pos = f.encode(nan, opt);
  k.nan_neg = f.encode(std::copysign(nan, -1.0), opt);
  k.negative_zero = f.hasNegativeZero() ? 1u : 0u;
  // Largest float32 magnitude whose RNE result is finite (the format's overflow bound).
  k.sat_threshold_bits = std::bit_cast<uint32_t>(f.rneFiniteLimitF32());
  return k;
}

} // namespace fp8lab::gpu

// FP8 Lab — bulk float32 → FP8 conversion: the hot path of every experiment.
//
// The round-to-nearest-even element encode is rneEncodeScaled (rne_encode.h, the same function
// the GPU quantize kernel runs): branch-free integer arithmetic on the float32 bit pattern, so the
// loop below vectorises (AVX2/AVX-512 clones are selected at run time). Its per-format constants
// come from the scalar reference (Format::encode), so the two paths agree by construction; tests
// check it on every oracle input and on millions of random bit patterns.
#include "formats/format.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace fp8lab {

void Format::initFast() {
  const int m = spec_.mantissa_bits;
  RneEncodeConstants k;
  k.min_normal_bits = std::bit_cast<uint32_t>(static_cast<float>(min_normal_));
  k.magic = static_cast<float>(std::ldexp(min_subnormal_, 23));
  k.magic_bits = std::bit_cast<uint32_t>(k.magic);
  k.rebias = static_cast<uint32_t>(127 - spec_.bias) << m;
  k.shift = static_cast<uint32_t>(23 - m);
  k.sign_bit = 1u << (bits_ - 1);
  // Largest float32 magnitude whose RNE result is still finite (found by init()).
  k.sat_threshold_bits = std::bit_cast<uint32_t>(rne_finite_limit_f32_);
  k.negative_zero_mask = hasNegativeZero() ? ~0u : 0u;
  const double inf = std::numeric_limits<double>::infinity();
  for (int saturate = 0; saturate < 2; ++saturate) {
    EncodeOptions opt;
    opt.saturate = saturate != 0;
    RneEncodeConstants& r = rne_[saturate];
    r = k;
    r.over_pos = saturate ? max_code_ : infOrOverflowCode(false, false, opt);
    r.over_neg = saturate ? (max_code_ | k.sign_bit) : infOrOverflowCode(true, false, opt);
    r.inf_pos = encode(inf, opt);
    r.inf_neg = encode(-inf, opt);
    r.nan_pos = nanCode(false, opt);
    r.nan_neg = nanCode(true, opt);
  }
}

const RneEncodeConstants& Format::rneConstants(bool saturate) const {
  if (!fast_path_ok_)
    throw std::invalid_argument("the RNE encode kernel covers float formats of at most 8 bits with a mantissa; " +
                                name() + " is not one");
  return rne_[saturate ? 1 : 0];
}

namespace {

template <bool Divide>
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void rneKernel(const float* __restrict in, uint8_t* __restrict out, std::size_t n, float s,
               const RneEncodeConstants k) {
  for (std::size_t i = 0; i < n; ++i) out[i] = rneEncodeScaled(Divide ? in[i] / s : in[i] * s, k);
}

} // namespace

void Format::encodeBulkFast(const float* in, uint8_t* out, std::size_t n, bool saturate, float s, ScaleOp op) const {
  const RneEncodeConstants& k = rne_[saturate ? 1 : 0];
  if (op == ScaleOp::Divide)
    rneKernel<true>(in, out, n, s, k);
  else
    rneKernel<false>(in, out, n, s, k);
}

void Format::encodeBulk(const float* in, uint8_t* out, std::size_t n, const EncodeOptions& opt, float s, ScaleOp op,
                        uint64_t seed, uint64_t first_index) const {
  if (bits_ > 8)
    throw std::invalid_argument("encodeBulk to uint8 needs a format of at most 8 bits; " + name() + " has " +
                                std::to_string(bits_));
  if (fast_path_ok_ && opt.rounding == Rounding::NearestEven && opt.specials == SpecialsPolicy::Cuda) {
    encodeBulkFast(in, out, n, opt.saturate, s, op);
    return;
  }
  EncodeOptions o = opt;
  for (std::size_t i = 0; i < n; ++i) {
    const float xf = op == ScaleOp::Divide ? in[i] / s : in[i] * s;
    if (o.rounding == Rounding::Stochastic) o.random_word = counterRandom(seed, first_index + i);
    out[i] = static_cast<uint8_t>(encode(static_cast<double>(xf), o));
  }
}

void Format::encodeBulk(const double* in, uint8_t* out, std::size_t n, const EncodeOptions& opt, double s, ScaleOp op,
                        uint64_t seed, uint64_t first_index) const {
  if (bits_ > 8)
    throw std::invalid_argument("encodeBulk to uint8 needs a format of at most 8 bits; " + name() + " has " +
                                std::to_string(bits_));
  EncodeOptions o = opt;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = op == ScaleOp::Divide ? in[i] / s : in[i] * s;
    if (o.rounding == Rounding::Stochastic) o.random_word = counterRandom(seed, first_index + i);
    out[i] = static_cast<uint8_t>(encode(x, o));
  }
}

void Format::decodeBulk(const uint8_t* in, float* out, std::size_t n) const {
  if (bits_ > 8)
    throw std::invalid_argument("decodeBulk from uint8 needs a format of at most 8 bits; " + name() + " has " +
                                std::to_string(bits_));
  const float* t = table_f32_.data();
  const uint32_t mask = codeMask();
  for (std::size_t i = 0; i < n; ++i) out[i] = t[in[i] & mask];
}

void Format::roundTripBulk(const float* in, float* out, std::size_t n, const EncodeOptions& opt) const {
  if (bits_ <= 8) {
    constexpr std::size_t chunk = 4096;
    uint8_t buf[chunk];
    for (std::size_t i = 0; i < n; i += chunk) {
      const std::size_t len = std::min(chunk, n - i);
      encodeBulk(in + i, buf, len, opt, 1.0f, ScaleOp::Multiply, 0, i);
      decodeBulk(buf, out + i, len);
    }
    return;
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(decode(encode(static_cast<double>(in[i]), opt)));
}

} // namespace fp8lab

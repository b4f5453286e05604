// FP8 Lab — bulk float32 → FP8 conversion: the hot path of every experiment.
//
// The round-to-nearest-even kernel is branch-free integer arithmetic on the float32 bit
// pattern, so the compiler vectorises it (AVX2/AVX-512 clones are selected at run time):
//  * normal results: add the RNE bias (half-quantum − 1 + the kept LSB) to the bit pattern and
//    shift the discarded mantissa bits out; a mantissa carry moves into the exponent by itself;
//    then re-bias the exponent field (127 → format bias).
//  * subnormal results: |x| + magic, with magic = quantum·2^23, is rounded by the FPU (RNE) to a
//    multiple of the subnormal quantum; its low bits are the code.
//  * overflow, Inf and NaN: selects on per-format constants computed from the scalar reference
//    (Format::explain), so the two paths agree by construction; tests check it on every oracle
//    input and on millions of random bit patterns.
#include "formats/format.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace fp8lab {

void Format::initFast() {
  FastConstants& k = fast_;
  const int m = spec_.mantissa_bits;
  k.min_normal_bits = std::bit_cast<uint32_t>(static_cast<float>(min_normal_));
  k.subnormal_magic = static_cast<float>(std::ldexp(min_subnormal_, 23));
  k.magic_bits = std::bit_cast<uint32_t>(k.subnormal_magic);
  k.rebias = static_cast<uint32_t>(127 - spec_.bias) << m;
  k.shift = 23 - m;
  k.sign_bit = 1u << (bits_ - 1);
  k.max_code = max_code_;
  EncodeOptions nosat;
  nosat.saturate = false;
  EncodeOptions sat;
  const double inf = std::numeric_limits<double>::infinity();
  for (int neg = 0; neg < 2; ++neg) {
    k.overflow_nosat[neg] = infOrOverflowCode(neg != 0, false, nosat);
    k.inf_sat[neg] = encode(neg ? -inf : inf, sat);
    k.inf_nosat[neg] = encode(neg ? -inf : inf, nosat);
    k.nan_code[neg] = nanCode(neg != 0, sat);
  }
  k.negative_zero = hasNegativeZero();
  // Largest float32 magnitude whose RNE result is still finite (found by init()).
  k.sat_threshold_bits = std::bit_cast<uint32_t>(rne_finite_limit_f32_);
}

namespace {

struct KernelArgs {
  uint32_t min_normal_bits, sat_threshold_bits, magic_bits, rebias, sign_bit;
  float magic;
  int shift;
  uint32_t over_pos, over_neg, inf_pos, inf_neg, nan_pos, nan_neg;
  bool negative_zero;
};

template <bool Divide>
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void rneKernel(const float* __restrict in, uint8_t* __restrict out, std::size_t n, float s,
               const KernelArgs k) {
  const uint32_t half_minus_one = (1u << (k.shift - 1)) - 1u;
  const uint32_t nz_mask = k.negative_zero ? ~0u : 0u; // keep the sign of a zero result?
  const uint32_t shift = static_cast<uint32_t>(k.shift);
  // Selects are written as mask arithmetic so the loop has no control flow and vectorises.
  auto mask = [](bool c) { return 0u - static_cast<uint32_t>(c); };
  auto sel = [](uint32_t m, uint32_t a, uint32_t b) { return (a & m) | (b & ~m); };
  for (std::size_t i = 0; i < n; ++i) {
    const float xf = Divide ? in[i] / s : in[i] * s;
    const uint32_t u = std::bit_cast<uint32_t>(xf);
    const uint32_t negm = 0u - (u >> 31);
    const uint32_t a = u & 0x7fffffffu;
    const uint32_t rn = (a + half_minus_one + ((a >> shift) & 1u)) >> shift;
    const uint32_t cn = rn - k.rebias;
    const float sf = std::bit_cast<float>(a) + k.magic;
    const uint32_t cs = std::bit_cast<uint32_t>(sf) - k.magic_bits;
    const uint32_t mag = sel(mask(a < k.min_normal_bits), cs, cn);
    const uint32_t signed_zero_ok = mask(mag != 0u) | nz_mask;
    uint32_t code = mag | (negm & k.sign_bit & signed_zero_ok);
    code = sel(mask(a > k.sat_threshold_bits), sel(negm, k.over_neg, k.over_pos), code);
    code = sel(mask(a == 0x7f800000u), sel(negm, k.inf_neg, k.inf_pos), code);
    code = sel(mask(a > 0x7f800000u), sel(negm, k.nan_neg, k.nan_pos), code);
    out[i] = static_cast<uint8_t>(code);
  }
}

} // namespace

void Format::encodeBulkFast(const float* in, uint8_t* out, std::size_t n, bool saturate, float s, ScaleOp op) const {
  const FastConstants& f = fast_;
  KernelArgs k{};
  k.min_normal_bits = f.min_normal_bits;
  k.sat_threshold_bits = f.sat_threshold_bits;
  k.magic_bits = f.magic_bits;
  k.magic = f.subnormal_magic;
  k.rebias = f.rebias;
  k.sign_bit = f.sign_bit;
  k.shift = f.shift;
  if (saturate) {
    k.over_pos = f.max_code;
    k.over_neg = f.max_code | f.sign_bit;
    k.inf_pos = f.inf_sat[0];
    k.inf_neg = f.inf_sat[1];
  } else {
    k.over_pos = f.overflow_nosat[0];
    k.over_neg = f.overflow_nosat[1];
    k.inf_pos = f.inf_nosat[0];
    k.inf_neg = f.inf_nosat[1];
  }
  k.nan_pos = f.nan_code[0];
  k.nan_neg = f.nan_code[1];
  k.negative_zero = f.negative_zero;
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

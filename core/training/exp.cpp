// FP8 Lab — e^x in float32 and float64 (see exp.h).
#include "training/exp.h"

#include "common/cpu_level.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fp8lab {

namespace {

constexpr int kTableBits = 5;
constexpr int kTableSize = 1 << kTableBits;

// kPow2Table[i] = bits(2^(i/32) rounded to the nearest float64) − (i << 47): adding k << 47 for
// k ≡ i (mod 32) gives 2^(i/32) with ⌊k/32⌋ added to the exponent field, i.e. 2^(k/32) (the values
// of optimized-routines' exp2f_data).
constexpr uint64_t kPow2Table[kTableSize] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

// 32/ln 2, the rounding shift 1.5·2^52, and the cubic's coefficients for r in units of 1/32
// (optimized-routines' poly_scaled: the coefficients of 2^r's minimax cubic divided by 32^3, 32^2,
// 32 — exact, powers of two).
constexpr double kInvLn2N = 0x1.71547652b82fep+0 * kTableSize;
constexpr double kShift = 0x1.8p+52;
constexpr double kC0 = 0x1.c6af84b912394p-5 / kTableSize / kTableSize / kTableSize;
constexpr double kC1 = 0x1.ebfce50fac4f3p-3 / kTableSize / kTableSize;
constexpr double kC2 = 0x1.62e42ff0c52d6p-1 / kTableSize;

// Bits of 88.0f: |x| at or above it (or NaN) takes the special-case path.
constexpr uint32_t kAbsLimit = 0x42b00000u;

/// The main path for |x| < 88 (and the parts of the special range that use it).
inline float expCore(float x) {
  const double xd = x;
  const double z = kInvLn2N * xd;
  double kd = z + kShift;
  const uint64_t ki = std::bit_cast<uint64_t>(kd);
  kd -= kShift;
  const double r = std::fma(kInvLn2N, xd, -kd);
  const double s = std::bit_cast<double>(kPow2Table[ki % kTableSize] + (ki << (52 - kTableBits)));
  const double p = std::fma(kC0, r, kC1);
  const double r2 = r * r;
  double y = std::fma(kC2, r, 1.0);
  y = std::fma(p, r2, y);
  return static_cast<float>(y * s);
}

float expSpecial(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if (bits == 0xff800000u) return 0.0f;                  // −∞
  if ((bits & 0x7fffffffu) >= 0x7f800000u) return x + x; // +∞, NaN (quieted)
  if (x > 0x1.62e42ep6f) return std::numeric_limits<float>::infinity();
  if (x < -0x1.9fe368p6f) return 0.0f;
  if (x < -0x1.9d1d9ep6f) return 0x1p-149f;
  return expCore(x);
}

#if defined(__GNUC__) && defined(__x86_64__)
/// Four lanes of expCore: the same float64 operations, the three fused multiply-adds as FMA
/// instructions, the table read by a gather.
__attribute__((target("avx2,fma"))) inline __m128 expCore4(__m128 x) {
  const __m256d xd = _mm256_cvtps_pd(x);
  const __m256d shift = _mm256_set1_pd(kShift);
  const __m256d z = _mm256_mul_pd(_mm256_set1_pd(kInvLn2N), xd);
  __m256d kd = _mm256_add_pd(z, shift);
  const __m256i ki = _mm256_castpd_si256(kd);
  kd = _mm256_sub_pd(kd, shift);
  const __m256d r = _mm256_fmsub_pd(_mm256_set1_pd(kInvLn2N), xd, kd);
  const __m256i tab = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kPow2Table),
                                             _mm256_and_si256(ki, _mm256_set1_epi64x(kTableSize - 1)), 8);
  const __m256d s = _mm256_castsi256_pd(_mm256_add_epi64(tab, _mm256_slli_epi64(ki, 52 - kTableBits)));
  const __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(kC0), r, _mm256_set1_pd(kC1));
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d y = _mm256_fmadd_pd(_mm256_set1_pd(kC2), r, _mm256_set1_pd(1.0));
  y = _mm256_fmadd_pd(p, r2, y);
  return _mm256_cvtpd_ps(_mm256_mul_pd(y, s));
}

__attribute__((target("avx2,fma"))) void expBulkAvx2(const float* x, float* y, int64_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i limit = _mm256_set1_epi32(static_cast<int>(kAbsLimit - 1));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256i special =
        _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_castps_si256(v), abs_mask), limit); // |x| ≥ 88 or NaN
    const __m128 lo = expCore4(_mm256_castps256_ps128(v)), hi = expCore4(_mm256_extractf128_ps(v, 1));
    const int mask = _mm256_movemask_ps(_mm256_castsi256_ps(special));
    if (mask == 0) {
      _mm256_storeu_ps(y + i, _mm256_set_m128(hi, lo));
      continue;
    }
    alignas(32) float in[8], out[8];
    _mm256_store_ps(in, v);
    _mm256_store_ps(out, _mm256_set_m128(hi, lo));
    for (int l = 0; l < 8; ++l)
      if (mask >> l & 1) out[l] = expSpecial(in[l]);
    std::memcpy(y + i, out, sizeof(out));
  }
  for (; i < n; ++i) y[i] = expF32(x[i]);
}
#endif

// ---- float64: optimized-routines' exp (glibc ≥ 2.29's exp), table of 128.

constexpr int kTableBits64 = 7;
constexpr int kTableSize64 = 1 << kTableBits64;

// Pairs for k = 0 … 127: [2k] = bits of T_k, [2k + 1] = bits of H_k − (k << 45), where
// 2^(k/128) ≈ H_k · (1 + T_k) with H_k a float64 and T_k its relative correction (optimized-routines'
// exp_data.tab).
constexpr uint64_t kPow2Table64[2 * kTableSize64] = {
    0x0000000000000000, 0x3ff0000000000000, 0x3c9b3b4f1a88bf6e, 0x3feff63da9fb3335, 0xbc7160139cd8dc5d,
    0x3fefec9a3e778061, 0xbc905e7a108766d1, 0x3fefe315e86e7f85, 0x3c8cd2523567f613, 0x3fefd9b0d3158574,
    0xbc8bce8023f98efa, 0x3fefd06b29ddf6de, 0x3c60f74e61e6c861, 0x3fefc74518759bc8, 0x3c90a3e45b33d399,
    0x3fefbe3ecac6f383, 0x3c979aa65d837b6d, 0x3fefb5586cf9890f, 0x3c8eb51a92fdeffc, 0x3fefac922b7247f7,
    0x3c3ebe3d702f9cd1, 0x3fefa3ec32d3d1a2, 0xbc6a033489906e0b, 0x3fef9b66affed31b, 0xbc9556522a2fbd0e,
    0x3fef9301d0125b51, 0xbc5080ef8c4eea55, 0x3fef8abdc06c31cc, 0xbc91c923b9d5f416, 0x3fef829aaea92de0,
    0x3c80d3e3e95c55af, 0x3fef7a98c8a58e51, 0xbc801b15eaa59348, 0x3fef72b83c7d517b, 0xbc8f1ff055de323d,
    0x3fef6af9388c8dea, 0x3c8b898c3f1353bf, 0x3fef635beb6fcb75, 0xbc96d99c7611eb26, 0x3fef5be084045cd4,
    0x3c9aecf73e3a2f60, 0x3fef54873168b9aa, 0xbc8fe782cb86389d, 0x3fef4d5022fcd91d, 0x3c8a6f4144a6c38d,
    0x3fef463b88628cd6, 0x3c807a05b0e4047d, 0x3fef3f49917ddc96, 0x3c968efde3a8a894, 0x3fef387a6e756238,
    0x3c875e18f274487d, 0x3fef31ce4fb2a63f, 0x3c80472b981fe7f2, 0x3fef2b4565e27cdd, 0xbc96b87b3f71085e,
    0x3fef24dfe1f56381, 0x3c82f7e16d09ab31, 0x3fef1e9df51fdee1, 0xbc3d219b1a6fbffa, 0x3fef187fd0dad990,
    0x3c8b3782720c0ab4, 0x3fef1285a6e4030b, 0x3c6e149289cecb8f, 0x3fef0cafa93e2f56, 0x3c834d754db0abb6,
    0x3fef06fe0a31b715, 0x3c864201e2ac744c, 0x3fef0170fc4cd831, 0x3c8fdd395dd3f84a, 0x3feefc08b26416ff,
    0xbc86a3803b8e5b04, 0x3feef6c55f929ff1, 0xbc924aedcc4b5068, 0x3feef1a7373aa9cb, 0xbc9907f81b512d8e,
    0x3feeecae6d05d866, 0xbc71d1e83e9436d2, 0x3feee7db34e59ff7, 0xbc991919b3ce1b15, 0x3feee32dc313a8e5,
    0x3c859f48a72a4c6d, 0x3feedea64c123422, 0xbc9312607a28698a, 0x3feeda4504ac801c, 0xbc58a78f4817895b,
    0x3feed60a21f72e2a, 0xbc7c2c9b67499a1b, 0x3feed1f5d950a897, 0x3c4363ed60c2ac11, 0x3feece086061892d,
    0x3c9666093b0664ef, 0x3feeca41ed1d0057, 0x3c6ecce1daa10379, 0x3feec6a2b5c13cd0, 0x3c93ff8e3f0f1230,
    0x3feec32af0d7d3de, 0x3c7690cebb7aafb0, 0x3feebfdad5362a27, 0x3c931dbdeb54e077, 0x3feebcb299fddd0d,
    0xbc8f94340071a38e, 0x3feeb9b2769d2ca7, 0xbc87deccdc93a349, 0x3feeb6daa2cf6642, 0xbc78dec6bd0f385f,
    0x3feeb42b569d4f82, 0xbc861246ec7b5cf6, 0x3feeb1a4ca5d920f, 0x3c93350518fdd78e, 0x3feeaf4736b527da,
    0x3c7b98b72f8a9b05, 0x3feead12d497c7fd, 0x3c9063e1e21c5409, 0x3feeab07dd485429, 0x3c34c7855019c6ea,
    0x3feea9268a5946b7, 0x3c9432e62b64c035, 0x3feea76f15ad2148, 0xbc8ce44a6199769f, 0x3feea5e1b976dc09,
    0xbc8c33c53bef4da8, 0x3feea47eb03a5585, 0xbc845378892be9ae, 0x3feea34634ccc320, 0xbc93cedd78565858,
    0x3feea23882552225, 0x3c5710aa807e1964, 0x3feea155d44ca973, 0xbc93b3efbf5e2228, 0x3feea09e667f3bcd,
    0xbc6a12ad8734b982, 0x3feea012750bdabf, 0xbc6367efb86da9ee, 0x3fee9fb23c651a2f, 0xbc80dc3d54e08851,
    0x3fee9f7df9519484, 0xbc781f647e5a3ecf, 0x3fee9f75e8ec5f74, 0xbc86ee4ac08b7db0, 0x3fee9f9a48a58174,
    0xbc8619321e55e68a, 0x3fee9feb564267c9, 0x3c909ccb5e09d4d3, 0x3feea0694fde5d3f, 0xbc7b32dcb94da51d,
    0x3feea11473eb0187, 0x3c94ecfd5467c06b, 0x3feea1ed0130c132, 0x3c65ebe1abd66c55, 0x3feea2f336cf4e62,
    0xbc88a1c52fb3cf42, 0x3feea427543e1a12, 0xbc9369b6f13b3734, 0x3feea589994cce13, 0xbc805e843a19ff1e,
    0x3feea71a4623c7ad, 0xbc94d450d872576e, 0x3feea8d99b4492ed, 0x3c90ad675b0e8a00, 0x3feeaac7d98a6699,
    0x3c8db72fc1f0eab4, 0x3feeace5422aa0db, 0xbc65b6609cc5e7ff, 0x3feeaf3216b5448c, 0x3c7bf68359f35f44,
    0x3feeb1ae99157736, 0xbc93091fa71e3d83, 0x3feeb45b0b91ffc6, 0xbc5da9b88b6c1e29, 0x3feeb737b0cdc5e5,
    0xbc6c23f97c90b959, 0x3feeba44cbc8520f, 0xbc92434322f4f9aa, 0x3feebd829fde4e50, 0xbc85ca6cd7668e4b,
    0x3feec0f170ca07ba, 0x3c71affc2b91ce27, 0x3feec49182a3f090, 0x3c6dd235e10a73bb, 0x3feec86319e32323,
    0xbc87c50422622263, 0x3feecc667b5de565, 0x3c8b1c86e3e231d5, 0x3feed09bec4a2d33, 0xbc91bbd1d3bcbb15,
    0x3feed503b23e255d, 0x3c90cc319cee31d2, 0x3feed99e1330b358, 0x3c8469846e735ab3, 0x3feede6b5579fdbf,
    0xbc82dfcd978e9db4, 0x3feee36bbfd3f37a, 0x3c8c1a7792cb3387, 0x3feee89f995ad3ad, 0xbc907b8f4ad1d9fa,
    0x3feeee07298db666, 0xbc55c3d956dcaeba, 0x3feef3a2b84f15fb, 0xbc90a40e3da6f640, 0x3feef9728de5593a,
    0xbc68d6f438ad9334, 0x3feeff76f2fb5e47, 0xbc91eee26b588a35, 0x3fef05b030a1064a, 0x3c74ffd70a5fddcd,
    0x3fef0c1e904bc1d2, 0xbc91bdfbfa9298ac, 0x3fef12c25bd71e09, 0x3c736eae30af0cb3, 0x3fef199bdd85529c,
    0x3c8ee3325c9ffd94, 0x3fef20ab5fffd07a, 0x3c84e08fd10959ac, 0x3fef27f12e57d14b, 0x3c63cdaf384e1a67,
    0x3fef2f6d9406e7b5, 0x3c676b2c6c921968, 0x3fef3720dcef9069, 0xbc808a1883ccb5d2, 0x3fef3f0b555dc3fa,
    0xbc8fad5d3ffffa6f, 0x3fef472d4a07897c, 0xbc900dae3875a949, 0x3fef4f87080d89f2, 0x3c74a385a63d07a7,
    0x3fef5818dcfba487, 0xbc82919e2040220f, 0x3fef60e316c98398, 0x3c8e5a50d5c192ac, 0x3fef69e603db3285,
    0x3c843a59ac016b4b, 0x3fef7321f301b460, 0xbc82d52107b43e1f, 0x3fef7c97337b9b5f, 0xbc892ab93b470dc9,
    0x3fef864614f5a129, 0x3c74b604603a88d3, 0x3fef902ee78b3ff6, 0x3c83c5ec519d7271, 0x3fef9a51fbc74c83,
    0xbc8ff7128fd391f0, 0x3fefa4afa2a490da, 0xbc8dae98e223747d, 0x3fefaf482d8e67f1, 0x3c8ec3bc41aa2008,
    0x3fefba1bee615a27, 0x3c842b94c3a9eb32, 0x3fefc52b376bba97, 0x3c8a64a931d185ee, 0x3fefd0765b6e4540,
    0xbc8e37bae43be3ed, 0x3fefdbfdad9cbe14, 0x3c77893b4d91cd9d, 0x3fefe7c1819e90d8, 0x3c5305c14160cc89,
    0x3feff3c22b8f71f1,
};

constexpr double kInvLn2N64 = 0x1.71547652b82fep0 * kTableSize64;
constexpr double kNegLn2HiN64 = -0x1.62e42fefa0000p-8; // −ln 2 / 128 in two parts
constexpr double kNegLn2LoN64 = -0x1.cf79abc9e3b3ap-47;
constexpr double kC2d = 0x1.ffffffffffdbdp-2; // e^r − 1 − r ≈ C2·r² + C3·r³ + C4·r⁴ + C5·r⁵
constexpr double kC3d = 0x1.555555555543cp-3;
constexpr double kC4d = 0x1.55555cf172b91p-5;
constexpr double kC5d = 0x1.1111167a4d017p-7;

inline uint32_t top12(double x) {
  return static_cast<uint32_t>(std::bit_cast<uint64_t>(x) >> 52);
}

/// |x| in [2^−54, 512): the main path. Large |x| (512 ≤ |x| < 1024) takes the same reduction and
/// a rescaled reconstruction (large = true).
inline double exp64Core(double x, bool large) {
  double kd = std::fma(kInvLn2N64, x, kShift);
  const uint64_t ki = std::bit_cast<uint64_t>(kd);
  kd -= kShift;
  const double r = std::fma(kd, kNegLn2LoN64, std::fma(kd, kNegLn2HiN64, x));
  const uint64_t idx = 2 * (ki % kTableSize64);
  const uint64_t top = ki << (52 - kTableBits64);
  const double tail = std::bit_cast<double>(kPow2Table64[idx]);
  uint64_t sbits = kPow2Table64[idx + 1] + top;
  const double r2 = r * r;
  const double tmp = std::fma(r2 * r2, std::fma(r, kC5d, kC4d), std::fma(r2, std::fma(r, kC3d, kC2d), tail + r));
  if (!large) {
    const double scale = std::bit_cast<double>(sbits);
    return std::fma(scale, tmp, scale);
  }
  // The exponent of 2^(k/128) may be out of range: scale by 2^1009 or 2^−1022 separately.
  if ((ki & 0x80000000u) == 0) {
    sbits -= 1009ull << 52;
    const double scale = std::bit_cast<double>(sbits);
    return 0x1p1009 * std::fma(scale, tmp, scale);
  }
  // Here glibc's FMA build keeps scale·tmp one rounded product, shared by y and lo (not fused).
  sbits += 1022ull << 52;
  const double scale = std::bit_cast<double>(sbits);
  const double st = scale * tmp;
  double y = scale + st;
  if (y < 1.0) {
    // Round to the subnormal precision once (no double rounding) before scaling down.
    double lo = scale - y + st;
    const double hi = 1.0 + y;
    lo = 1.0 - hi + y + lo;
    y = (hi + lo) - 1.0;
    if (y == 0.0) y = 0.0;
  }
  return 0x1p-1022 * y;
}

/// Every x outside the main range [2^−54, 512) in magnitude.
double exp64Special(double x) {
  const uint32_t abstop = top12(x) & 0x7ff;
  if (abstop < top12(0x1p-54)) return 1.0 + x; // tiny, 0 included
  if (abstop >= top12(1024.0)) {
    if (std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(-std::numeric_limits<double>::infinity())) return 0.0;
    if (abstop >= top12(std::numeric_limits<double>::infinity())) return 1.0 + x; // +∞, NaN
    return std::signbit(x) ? 0.0 : std::numeric_limits<double>::infinity();
  }
  return exp64Core(x, true);
}

inline bool exp64Main(double x) {
  return (top12(x) & 0x7ff) - top12(0x1p-54) < top12(512.0) - top12(0x1p-54);
}

#if defined(__GNUC__) && defined(__x86_64__)
/// Four lanes of exp64Core's main path: the same float64 operations, the fused ones as FMA
/// instructions, the table read by two gathers.
__attribute__((target("avx2,fma"))) inline __m256d exp64Core4(__m256d x) {
  const __m256d shift = _mm256_set1_pd(kShift);
  __m256d kd = _mm256_fmadd_pd(_mm256_set1_pd(kInvLn2N64), x, shift);
  const __m256i ki = _mm256_castpd_si256(kd);
  kd = _mm256_sub_pd(kd, shift);
  const __m256d r =
      _mm256_fmadd_pd(kd, _mm256_set1_pd(kNegLn2LoN64), _mm256_fmadd_pd(kd, _mm256_set1_pd(kNegLn2HiN64), x));
  const __m256i idx = _mm256_slli_epi64(_mm256_and_si256(ki, _mm256_set1_epi64x(kTableSize64 - 1)), 1);
  const long long* tab = reinterpret_cast<const long long*>(kPow2Table64);
  const __m256d tail = _mm256_castsi256_pd(_mm256_i64gather_epi64(tab, idx, 8));
  const __m256i sbits =
      _mm256_add_epi64(_mm256_i64gather_epi64(tab + 1, idx, 8), _mm256_slli_epi64(ki, 52 - kTableBits64));
  const __m256d r2 = _mm256_mul_pd(r, r);
  const __m256d p23 = _mm256_fmadd_pd(r, _mm256_set1_pd(kC3d), _mm256_set1_pd(kC2d));
  const __m256d p45 = _mm256_fmadd_pd(r, _mm256_set1_pd(kC5d), _mm256_set1_pd(kC4d));
  const __m256d tmp = _mm256_fmadd_pd(_mm256_mul_pd(r2, r2), p45, _mm256_fmadd_pd(r2, p23, _mm256_add_pd(tail, r)));
  const __m256d scale = _mm256_castsi256_pd(sbits);
  return _mm256_fmadd_pd(scale, tmp, scale);
}

__attribute__((target("avx2,fma"))) void exp64BulkAvx2(const double* x, double* y, int64_t n) {
  // Main range: (top12(|x|) − top12(2^−54)) unsigned < top12(512) − top12(2^−54).
  const __m256i lo = _mm256_set1_epi64x(static_cast<long long>(std::bit_cast<uint64_t>(0x1p-54)));
  const __m256i span =
      _mm256_set1_epi64x(static_cast<long long>(std::bit_cast<uint64_t>(512.0) - std::bit_cast<uint64_t>(0x1p-54)));
  const __m256i abs_mask = _mm256_set1_epi64x(0x7fffffffffffffffll);
  const __m256i sign = _mm256_set1_epi64x(static_cast<long long>(0x8000000000000000ull));
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d v = _mm256_loadu_pd(x + i);
    // |x| − 2^−54 (as bits) unsigned ≥ 512 − 2^−54: outside [2^−54, 512). Unsigned compare as a
    // signed compare of both sides with the sign bit flipped.
    const __m256i off = _mm256_sub_epi64(_mm256_and_si256(_mm256_castpd_si256(v), abs_mask), lo);
    const __m256i special = _mm256_cmpgt_epi64(_mm256_xor_si256(off, sign),
                                               _mm256_xor_si256(_mm256_sub_epi64(span, _mm256_set1_epi64x(1)), sign));
    const __m256d out = exp64Core4(v);
    const int mask = _mm256_movemask_pd(_mm256_castsi256_pd(special));
    if (mask == 0) {
      _mm256_storeu_pd(y + i, out);
      continue;
    }
    alignas(32) double in[4], res[4];
    _mm256_store_pd(in, v);
    _mm256_store_pd(res, out);
    for (int l = 0; l < 4; ++l)
      if (mask >> l & 1) res[l] = exp64Special(in[l]);
    std::memcpy(y + i, res, sizeof(res));
  }
  for (; i < n; ++i) y[i] = expF64(x[i]);
}
#endif
} // namespace

// The scalar functions are built twice: with FMA instructions for the fused operations where the
// CPU has them, and for the baseline ISA, where std::fma is the C library's exactly rounded
// (software) fma: the same bits, at very different speeds.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define FP8LAB_EXP_CLONES __attribute__((target_clones("fma", "default")))
#else
#define FP8LAB_EXP_CLONES
#endif

FP8LAB_EXP_CLONES float expF32(float x) {
  if ((std::bit_cast<uint32_t>(x) & 0x7fffffffu) >= kAbsLimit) return expSpecial(x);
  return expCore(x);
}

void expF32(const float* x, float* y, int64_t n) {
#if defined(__GNUC__) && defined(__x86_64__)
  static const CpuLevel level = cpuLevel();
  if (level != CpuLevel::Baseline) return expBulkAvx2(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = expF32(x[i]);
}

FP8LAB_EXP_CLONES double expF64(double x) {
  return exp64Main(x) ? exp64Core(x, false) : exp64Special(x);
}

void expF64(const double* x, double* y, int64_t n) {
#if defined(__GNUC__) && defined(__x86_64__)
  static const CpuLevel level = cpuLevel();
  if (level != CpuLevel::Baseline) return exp64BulkAvx2(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = expF64(x[i]);
}

} // namespace fp8lab

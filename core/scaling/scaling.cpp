#include "scaling/scaling.h"

#include "common/cpu_level.h"
#include "common/worker_pool.h"

#include "formats/mxint8.h"
#include "scaling/scale_rules.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

// The quantize engine: amax, the scaled cast into codes with its counts (saturated, underflow,
// NaN), row/column/block scale grids computed in parallel, and MXINT8. The presets and the scale
// rules it applies are scaling_presets.cpp and scale_rules.h.

namespace fp8lab {

// ---- amax --------------------------------------------------------------------------------------

namespace {

template <typename T> struct Bits;
template <> struct Bits<float> {
  using U = uint32_t;
  static constexpr U abs_mask = 0x7FFFFFFFu, inf = 0x7F800000u;
};
template <> struct Bits<double> {
  using U = uint64_t;
  static constexpr U abs_mask = 0x7FFFFFFFFFFFFFFFull, inf = 0x7FF0000000000000ull;
};

/// Max of |x| over non-NaN elements as bits (positive IEEE values order like integers), and
/// whether a NaN was seen. Branch-free so the compiler vectorises it.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define FP8LAB_SCALING_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FP8LAB_SCALING_CLONES
#endif

template <typename T>
inline __attribute__((always_inline)) typename Bits<T>::U maxAbsBitsBody(const T* x, std::size_t n, bool* saw_nan) {
  using U = typename Bits<T>::U;
  U m = 0, nan = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const U b = std::bit_cast<U>(x[i]) & Bits<T>::abs_mask;
    const U is_nan = b > Bits<T>::inf ? U(1) : U(0);
    nan |= is_nan;
    const U v = is_nan ? U(0) : b;
    m = v > m ? v : m;
  }
  *saw_nan = nan != 0;
  return m;
}

template <typename T> typename Bits<T>::U maxAbsBits(const T* x, std::size_t n, bool* saw_nan) {
  return maxAbsBitsBody(x, n, saw_nan);
}
#if defined(__GNUC__) && defined(__x86_64__)
// The float32 amax at CPU levels avx512 and avx2: the same max of the magnitude bits over non-NaN
// elements, 32 elements a step in two accumulators (GCC keeps maxAbsBitsBody's loop scalar: the
// NaN select defeats its vectoriser). An integer max is exact, so every level gives the same bits.
__attribute__((target("avx512f"))) uint32_t maxAbsBitsAvx512(const float* x, std::size_t n, bool* saw_nan) {
  const __m512i abs = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
  __m512i m0 = _mm512_setzero_si512(), m1 = _mm512_setzero_si512();
  __mmask16 nan = 0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i a = _mm512_and_si512(_mm512_loadu_si512(x + i), abs);
    const __m512i b = _mm512_and_si512(_mm512_loadu_si512(x + i + 16), abs);
    const __mmask16 na = _mm512_cmpgt_epu32_mask(a, inf), nb = _mm512_cmpgt_epu32_mask(b, inf);
    nan = __mmask16(nan | na | nb);
    m0 = _mm512_mask_max_epu32(m0, __mmask16(~na), m0, a);
    m1 = _mm512_mask_max_epu32(m1, __mmask16(~nb), m1, b);
  }
  for (; i < n; i += 16) {
    const std::size_t left = n - i;
    const __mmask16 k = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
    const __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi32(k, x + i), abs);
    const __mmask16 na = _mm512_cmpgt_epu32_mask(a, inf);
    nan = __mmask16(nan | na);
    m0 = _mm512_mask_max_epu32(m0, __mmask16(~na), m0, a);
  }
  *saw_nan = nan != 0;
  alignas(64) uint32_t lanes[16];
  _mm512_store_si512(lanes, _mm512_mask_max_epu32(m0, __mmask16(0xFFFF), m0, m1));
  uint32_t m = 0;
  for (uint32_t v : lanes) m = std::max(m, v);
  return m;
}

__attribute__((target("avx2"))) uint32_t maxAbsBitsAvx2(const float* x, std::size_t n, bool* saw_nan) {
  const __m256i abs = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
  __m256i m0 = _mm256_setzero_si256(), m1 = _mm256_setzero_si256(), nan = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    // magnitudes are below 2^31, so the signed compare orders them as unsigned
    const __m256i a = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), abs);
    const __m256i b = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8)), abs);
    const __m256i na = _mm256_cmpgt_epi32(a, inf), nb = _mm256_cmpgt_epi32(b, inf);
    nan = _mm256_or_si256(nan, _mm256_or_si256(na, nb));
    m0 = _mm256_max_epu32(m0, _mm256_andnot_si256(na, a));
    m1 = _mm256_max_epu32(m1, _mm256_andnot_si256(nb, b));
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_max_epu32(m0, m1));
  uint32_t m = 0;
  for (uint32_t v : lanes) m = std::max(m, v);
  bool tail_nan = false;
  m = std::max(m, maxAbsBitsBody(x + i, n - i, &tail_nan));
  *saw_nan = tail_nan || !_mm256_testz_si256(nan, nan);
  return m;
}
#endif

/// float32 overload: the kernel of the CPU level (cpu_level.h; FP8LAB_CPU forces it down).
uint32_t maxAbsBits(const float* x, std::size_t n, bool* saw_nan) {
#if defined(__GNUC__) && defined(__x86_64__)
  static const CpuLevel level = cpuLevel();
  if (level == CpuLevel::Avx512) return maxAbsBitsAvx512(x, n, saw_nan);
  if (level == CpuLevel::Avx2) return maxAbsBitsAvx2(x, n, saw_nan);
#endif
  return maxAbsBitsBody(x, n, saw_nan);
}

/// Column maxima of one row into mb / mn (per-column blocks).
template <typename T>
inline __attribute__((always_inline)) void colMaxBody(const T* row, std::size_t n, typename Bits<T>::U* mb,
                                                      typename Bits<T>::U* mn) {
  using U = typename Bits<T>::U;
  for (std::size_t j = 0; j < n; ++j) {
    const U b = std::bit_cast<U>(row[j]) & Bits<T>::abs_mask;
    const U is_nan = b > Bits<T>::inf ? U(1) : U(0);
    mn[j] |= is_nan;
    const U v = is_nan ? U(0) : b;
    mb[j] = v > mb[j] ? v : mb[j];
  }
}
template <typename T> void colMax(const T* row, std::size_t n, typename Bits<T>::U* mb, typename Bits<T>::U* mn) {
  colMaxBody(row, n, mb, mn);
}
FP8LAB_SCALING_CLONES void colMax(const float* row, std::size_t n, uint32_t* mb, uint32_t* mn) {
  colMaxBody(row, n, mb, mn);
}

/// Block maxima of one row cut into blocks of bc (last one partial), max-combined into mb / mn.
template <typename T>
inline __attribute__((always_inline)) void rowBlockMaxBody(const T* row, int64_t C, int64_t bc, typename Bits<T>::U* mb,
                                                           typename Bits<T>::U* mn) {
  using U = typename Bits<T>::U;
  for (int64_t c0 = 0, gj = 0; c0 < C; c0 += bc, ++gj) {
    const int64_t n = std::min(C - c0, bc);
    bool nan = false;
    const U m = maxAbsBitsBody(row + c0, static_cast<std::size_t>(n), &nan);
    mb[gj] = std::max(mb[gj], m);
    mn[gj] |= nan ? U(1) : U(0);
  }
}
template <typename T>
void rowBlockMax(const T* row, int64_t C, int64_t bc, typename Bits<T>::U* mb, typename Bits<T>::U* mn) {
  rowBlockMaxBody(row, C, bc, mb, mn);
}
/// x·f (divide: x/f), a NaN x kept as it is (a NaN factor does not replace it), so that the sign a
/// NaN code keeps (SpecialsPolicy::MlDtypes) is the input's whichever operand order the compiler
/// picks for the multiply; x86 would return the first operand's NaN. scaleRow's rule.
template <typename T> inline __attribute__((always_inline)) T scaleOne(T x, T f, bool divide) {
  return x != x ? x : divide ? x / f : x * f;
}

#if defined(__GNUC__) && defined(__x86_64__)
/// True when the AVX2 kernels of this file may run (CPU level avx2 or avx512; FP8LAB_CPU).
bool avx2Kernels() {
  static const bool on = cpuLevel() != CpuLevel::Baseline;
  return on;
}

/// Horizontal max of eight unsigned lanes.
__attribute__((target("avx2"), always_inline)) inline uint32_t hmaxEpu32(__m256i v) {
  __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4E));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0xB1));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(m));
}

/// rowBlockMax for blocks whose width is a multiple of 8 (MX's 32, NVFP4's 16): each block's
/// maximum magnitude bits over non-NaN elements, eight lanes a step, in one call per row.
__attribute__((target("avx2"))) void rowBlockMaxAvx2(const float* row, int64_t C, int64_t bc, uint32_t* mb,
                                                     uint32_t* mn) {
  const __m256i abs = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
  for (int64_t c0 = 0, gj = 0; c0 < C; c0 += bc, ++gj) {
    const int64_t c1 = std::min(C, c0 + bc);
    __m256i m = _mm256_setzero_si256(), nan = _mm256_setzero_si256();
    int64_t j = c0;
    for (; j + 8 <= c1; j += 8) {
      // magnitudes are below 2^31, so the signed compare orders them as unsigned
      const __m256i a = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + j)), abs);
      const __m256i na = _mm256_cmpgt_epi32(a, inf);
      nan = _mm256_or_si256(nan, na);
      m = _mm256_max_epu32(m, _mm256_andnot_si256(na, a));
    }
    bool tail_nan = false;
    const uint32_t v = std::max(hmaxEpu32(m), maxAbsBitsBody(row + j, static_cast<std::size_t>(c1 - j), &tail_nan));
    mb[gj] = std::max(mb[gj], v);
    mn[gj] |= (tail_nan || !_mm256_testz_si256(nan, nan)) ? 1u : 0u;
  }
}

/// One vector of x scaled by f (divide: x / f), a NaN lane of x kept as it is (scaleOne's rule).
__attribute__((target("avx2"), always_inline)) inline __m256 scaleLanes(__m256 x, __m256 f, bool divide) {
  const __m256 y = divide ? _mm256_div_ps(x, f) : _mm256_mul_ps(x, f);
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/// scaleRow for float32 at the avx2 and avx512 levels: eight lanes a step, the block's factor
/// broadcast, or per-column factors read as a vector (a vector multiply or divide rounds each lane
/// as the scalar operation does; a NaN input stays itself, scaleOne's rule).
__attribute__((target("avx2"))) void scaleRowAvx2(const float* x, const float* g, float* y, int64_t C, int64_t bc,
                                                  bool divide) {
  if (bc == 1) { // per-column factors (blocks B×1 of an operand contracted along its rows)
    int64_t j = 0;
    for (; j + 8 <= C; j += 8)
      _mm256_storeu_ps(y + j, scaleLanes(_mm256_loadu_ps(x + j), _mm256_loadu_ps(g + j), divide));
    for (; j < C; ++j) y[j] = scaleOne(x[j], g[j], divide);
    return;
  }
  for (int64_t c0 = 0, gj = 0; c0 < C; c0 += bc, ++gj) {
    const int64_t c1 = std::min(C, c0 + bc);
    const float s = g[gj];
    const __m256 sv = _mm256_set1_ps(s);
    int64_t j = c0;
    for (; j + 8 <= c1; j += 8) _mm256_storeu_ps(y + j, scaleLanes(_mm256_loadu_ps(x + j), sv, divide));
    for (; j < c1; ++j) y[j] = scaleOne(x[j], s, divide);
  }
}
#endif

/// float32 overload: the AVX2 kernel at levels avx2 and avx512 for narrow blocks (a multiple of 8
/// and under 64 wide: one call per row instead of one per block), else each block through
/// maxAbsBits's kernel of the CPU level.
void rowBlockMax(const float* row, int64_t C, int64_t bc, uint32_t* mb, uint32_t* mn) {
#if defined(__GNUC__) && defined(__x86_64__)
  if (avx2Kernels() && bc % 8 == 0 && bc < 64) {
    rowBlockMaxAvx2(row, C, bc, mb, mn);
    return;
  }
#endif
  for (int64_t c0 = 0, gj = 0; c0 < C; c0 += bc, ++gj) {
    bool nan = false;
    const uint32_t m = maxAbsBits(row + c0, static_cast<std::size_t>(std::min(C - c0, bc)), &nan);
    mb[gj] = std::max(mb[gj], m);
    mn[gj] |= nan ? 1u : 0u;
  }
}

template <typename T> double amaxImpl(const T* x, std::size_t n, bool ignore_nan) {
  bool nan = false;
  const auto m = maxAbsBits(x, n, &nan);
  if (nan && !ignore_nan) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(std::bit_cast<T>(m));
}

// ---- stats -------------------------------------------------------------------------------------

/// What the stats pass needs to know about the element format's codes.
struct CodeInfo {
  uint32_t mag_mask;  ///< code without its sign bit
  uint32_t sub_limit; ///< magnitudes 1 .. sub_limit−1 are subnormal codes (2^mantissa_bits)
  explicit CodeInfo(const Format& f)
      : mag_mask(f.spec().has_sign ? (f.codeMask() >> 1) : f.codeMask()),
        sub_limit(f.spec().specials == SpecialCodes::E8M0 ? 1u : (1u << f.spec().mantissa_bits)) {}
};

/// Counts over n elements: x the inputs, scaled(i) the value the cast saw, c the codes, lim the
/// format's rneFiniteLimit in T. Branch-free (bit tests) so it vectorises. Saturated: finite
/// non-zero input whose scaled magnitude overflows by the OCP rule — its round-to-nearest result
/// with an unbounded exponent lies beyond max finite, i.e. |scaled| > lim (an amax element scaled
/// to one float32 ulp above max still rounds to max and is not counted); underflow: finite
/// non-zero input whose code is ±0; subnormal: subnormal result codes.
template <typename T, typename ScaledFn>
inline __attribute__((always_inline)) void addStats(const T* x, const uint8_t* c, std::size_t n, ScaledFn scaled, T lim,
                                                    const CodeInfo& ci, QuantizeStats& st) {
  using U = typename Bits<T>::U;
  const U inf = Bits<T>::inf, am = Bits<T>::abs_mask, limb = std::bit_cast<U>(lim);
  U nan = 0, infs = 0, zero = 0, under = 0, sat = 0, sub = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const U b = std::bit_cast<U>(x[i]) & am;
    const U yb = std::bit_cast<U>(scaled(i)) & am;
    const U mag = c[i] & ci.mag_mask;
    const U fin_nz = U(b != 0) & U(b < inf);
    nan += U(b > inf);
    infs += U(b == inf);
    zero += U(b == 0);
    under += fin_nz & U(mag == 0);
    sub += U(mag != 0) & U(mag < ci.sub_limit);
    sat += fin_nz & U(yb > limb) & U(yb <= inf);
  }
  st.nan_inputs += static_cast<int64_t>(nan);
  st.inf_inputs += static_cast<int64_t>(infs);
  st.zero_inputs += static_cast<int64_t>(zero);
  st.underflow += static_cast<int64_t>(under);
  st.saturated += static_cast<int64_t>(sat);
  st.subnormal += static_cast<int64_t>(sub);
  st.elements += static_cast<int64_t>(n);
}

/// The format's rneFiniteLimit in T (float32 or float64 inputs).
template <typename T> T overflowLimit(const Format& f);
template <> inline float overflowLimit<float>(const Format& f) {
  return f.rneFiniteLimitF32();
}
template <> inline double overflowLimit<double>(const Format& f) {
  return f.rneFiniteLimit();
}

/// Stats of x·s (divide: x/s) — the scaled value recomputed exactly as the bulk kernel does.
template <typename T>
void statsScaled(const T* x, const uint8_t* c, std::size_t n, T s, bool divide, T maxf, const CodeInfo& ci,
                 QuantizeStats& st) {
  if (divide)
    addStats<T>(
        x, c, n, [&](std::size_t i) { return x[i] / s; }, maxf, ci, st);
  else
    addStats<T>(
        x, c, n, [&](std::size_t i) { return x[i] * s; }, maxf, ci, st);
}
FP8LAB_SCALING_CLONES void statsScaled(const float* x, const uint8_t* c, std::size_t n, float s, bool divide,
                                       float maxf, const CodeInfo& ci, QuantizeStats& st) {
  if (divide)
    addStats<float>(
        x, c, n, [&](std::size_t i) { return x[i] / s; }, maxf, ci, st);
  else
    addStats<float>(
        x, c, n, [&](std::size_t i) { return x[i] * s; }, maxf, ci, st);
}
/// Stats with the scaled values given (per-column scales).
template <typename T>
void statsGiven(const T* x, const uint8_t* c, const T* y, std::size_t n, T maxf, const CodeInfo& ci,
                QuantizeStats& st) {
  addStats<T>(
      x, c, n, [&](std::size_t i) { return y[i]; }, maxf, ci, st);
}
FP8LAB_SCALING_CLONES void statsGiven(const float* x, const uint8_t* c, const float* y, std::size_t n, float maxf,
                                      const CodeInfo& ci, QuantizeStats& st) {
  addStats<float>(
      x, c, n, [&](std::size_t i) { return y[i]; }, maxf, ci, st);
}

/// y[j] = x[j] · g[j / bc] (divide: x[j] / g[j / bc]) over one row of C elements: the scaled value
/// the bulk kernel would form with the block's factor, as one float32 (float64) operation, a NaN
/// input kept as it is (scaleOne).
template <typename T>
inline __attribute__((always_inline)) void scaleRowBody(const T* x, const T* g, T* y, int64_t C, int64_t bc,
                                                        bool divide) {
  for (int64_t c0 = 0, gj = 0; c0 < C; c0 += bc, ++gj) {
    const int64_t c1 = std::min(C, c0 + bc);
    const T s = g[gj];
    for (int64_t j = c0; j < c1; ++j) y[j] = scaleOne(x[j], s, divide);
  }
}
template <typename T> void scaleRow(const T* x, const T* g, T* y, int64_t C, int64_t bc, bool divide) {
  scaleRowBody(x, g, y, C, bc, divide);
}
void scaleRow(const float* x, const float* g, float* y, int64_t C, int64_t bc, bool divide) {
#if defined(__GNUC__) && defined(__x86_64__)
  if (avx2Kernels()) {
    scaleRowAvx2(x, g, y, C, bc, divide);
    return;
  }
#endif
  scaleRowBody(x, g, y, C, bc, divide);
}

void checkArgs(const void* x, int64_t rows, int64_t cols, const Format& fmt) {
  if (rows < 0 || cols < 0)
    throw std::invalid_argument("quantize: negative shape [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "]");
  if (rows > 0 && cols > std::numeric_limits<int64_t>::max() / rows)
    throw std::invalid_argument("quantize: shape [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "] overflows");
  if (rows * cols > 0 && !x)
    throw std::invalid_argument("quantize: null input with " + std::to_string(rows * cols) + " elements");
  if (fmt.bits() > 8)
    throw std::invalid_argument("quantize: " + fmt.name() + " has " + std::to_string(fmt.bits()) +
                                " bits; scaling quantizes to formats of at most 8 bits");
}

/// Encodes one contiguous run sharing one scale: codes = encodeBulk(x op s), then stats.
template <typename T>
void encodeSegment(const Format& fmt, const T* x, uint8_t* c, std::size_t n, float quant, float dequant,
                   Format::ScaleOp op, const EncodeOptions& enc, uint64_t seed, uint64_t first, const CodeInfo& ci,
                   QuantizeStats& st) {
  const T s = static_cast<T>(op == Format::ScaleOp::Divide ? dequant : quant);
  fmt.encodeBulk(x, c, n, enc, s, op, seed, first);
  statsScaled(x, c, n, s, op == Format::ScaleOp::Divide, overflowLimit<T>(fmt), ci, st);
}

/// Runs fn(r0, r1, worker) over rows [0, R) in chunks of `chunk` rows, on nt threads (the caller
/// is worker 0 and the only one calling `progress`, mapped to [p0, p1]). Cancelling stops every
/// worker at its next chunk and throws Cancelled; a worker's exception is rethrown here.
template <typename Fn>
void runRows(int64_t R, int64_t chunk, int nt, const Fn& fn, const ProgressFn& progress, double p0, double p1) {
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  bool cancelled = false;
  std::exception_ptr err;
  std::mutex err_mutex;
  auto work = [&](int w) {
    try {
      while (!stop.load(std::memory_order_relaxed)) {
        const int64_t r0 = next.fetch_add(chunk);
        if (r0 >= R) break;
        const int64_t r1 = std::min(R, r0 + chunk);
        fn(r0, r1, w);
        const int64_t d = done.fetch_add(r1 - r0) + (r1 - r0);
        if (w == 0 && progress &&
            !progress(p0 + (p1 - p0) * static_cast<double>(d) / static_cast<double>(R), "quantize")) {
          cancelled = true;
          stop = true;
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(err_mutex);
      if (!err) err = std::current_exception();
      stop = true;
    }
  };
  runOnWorkers(nt, work); // the process-wide pool (common/worker_pool.h)
  if (err) std::rethrow_exception(err);
  if (cancelled) throw Cancelled();
}

/// Quantizes x [R, C] (row-major) with blocks [br, bc] laid row-major; fills codes, scales, stats.
/// Pass 1 (parallel over rows): per-worker partial block maxima (bit patterns + NaN flags),
/// merged, then one scale per block. Pass 2 (parallel over rows): encode.
/// Wide blocks (bc ≥ 64, or one block per row) encode each row segment with its own scale.
/// Narrow blocks (bc < 64: per-column, 128×1, MX 1×32) first form y = x op s in a buffer of whole
/// rows (the same float32 / float64 operation the bulk kernel performs, a NaN input kept as it is)
/// and encode y with scale 1, which gives the same codes and keeps the access row-major.
template <typename T>
void quantizeRowMajor(const T* x, int64_t R, int64_t C, int64_t br, int64_t bc, const Format& fmt,
                      const ScalingConfig& cfg, QuantizedTensor& q, const ProgressFn& progress) {
  const int64_t GR = (R + br - 1) / br, GC = (C + bc - 1) / bc;
  const std::size_t nblocks = static_cast<std::size_t>(GR * GC);
  q.codes.resize(static_cast<std::size_t>(R * C));
  q.dequant_scales.assign(nblocks, 1.0f);
  q.quant_scales.assign(nblocks, 1.0f);
  const bool mx = isMxRule(cfg.rule);
  if (mx) q.scale_codes.assign(nblocks, 0);
  const bool ignore_nan = !ruleAmaxPropagatesNaN(cfg.rule);
  const bool divide = cfg.op == Format::ScaleOp::Divide;
  // Blocks narrower than 64 (MX 1×32, NVFP4-like 1×16, per-column): one pass writes the row's scaled
  // values and encodes them with factor 1 (x·1 = x exactly), instead of two calls per block.
  const bool narrow = bc < 64 && GC > 1;
  const CodeInfo ci(fmt);
  const T maxf = overflowLimit<T>(fmt); // saturation bound of the stats pass
  using U = typename Bits<T>::U;
  const int nt = threadsForWork(cfg.threads, R * C, R);
  const int64_t chunk = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(C, 1));

  // Pass 1: block maxima.
  std::vector<std::vector<U>> pmax(static_cast<std::size_t>(nt)), pnan(static_cast<std::size_t>(nt));
  runRows(
      R, chunk, nt,
      [&](int64_t r0, int64_t r1, int w) {
        auto& mb = pmax[static_cast<std::size_t>(w)];
        auto& mn = pnan[static_cast<std::size_t>(w)];
        if (mb.empty()) {
          mb.assign(nblocks, U(0));
          mn.assign(nblocks, U(0));
        }
        for (int64_t i = r0; i < r1; ++i) {
          const std::size_t base = static_cast<std::size_t>((i / br) * GC);
          if (bc == 1) {
            colMax(x + i * C, static_cast<std::size_t>(C), mb.data() + base, mn.data() + base);
            continue;
          }
          rowBlockMax(x + i * C, C, bc, mb.data() + base, mn.data() + base);
        }
      },
      progress, 0.0, 0.4);
  std::vector<U> mbits(nblocks, U(0)), mnan(nblocks, U(0));
  for (int w = 0; w < nt; ++w) {
    const auto& mb = pmax[static_cast<std::size_t>(w)];
    const auto& mn = pnan[static_cast<std::size_t>(w)];
    if (mb.empty()) continue;
    for (std::size_t k = 0; k < nblocks; ++k) {
      mbits[k] = std::max(mbits[k], mb[k]);
      mnan[k] |= mn[k];
    }
  }
  pmax.clear();
  pnan.clear();
  std::vector<T> grid(nblocks); // the factor each block's elements are multiplied / divided by
  const ScaleRuleParams rule = scaleRuleParams(cfg, fmt);
  for (std::size_t k = 0; k < nblocks; ++k) {
    const double amax = (mnan[k] && !ignore_nan) ? std::numeric_limits<double>::quiet_NaN()
                                                 : static_cast<double>(std::bit_cast<T>(mbits[k]));
    const BlockScale b = blockScaleFromAmax(amax, rule);
    q.dequant_scales[k] = b.dequant;
    q.quant_scales[k] = b.quant;
    if (mx) q.scale_codes[k] = static_cast<uint8_t>(b.scale_code);
    grid[k] = static_cast<T>(divide ? b.dequant : b.quant);
  }

  // Pass 2: encode.
  std::vector<QuantizeStats> pstats(static_cast<std::size_t>(nt));
  runRows(
      R, chunk, nt,
      [&](int64_t r0, int64_t r1, int w) {
        QuantizeStats& st = pstats[static_cast<std::size_t>(w)];
        if (narrow) {
          // Rows scaled into a buffer of up to 8192 elements (one row when rows are longer), then one
          // encode and one stats pass over it (the codes of consecutive rows are contiguous;
          // stochastic rounding draws by element index, so the codes do not depend on how the rows
          // are grouped).
          const int64_t step = std::max<int64_t>(1, 8192 / std::max<int64_t>(C, 1));
          std::vector<T> y(static_cast<std::size_t>(std::min(r1 - r0, step) * C));
          for (int64_t i0 = r0; i0 < r1; i0 += step) {
            const int64_t i1 = std::min(r1, i0 + step);
            for (int64_t i = i0; i < i1; ++i)
              scaleRow(x + i * C, grid.data() + (i / br) * GC, y.data() + (i - i0) * C, C, bc, divide);
            const std::size_t off = static_cast<std::size_t>(i0 * C), n = static_cast<std::size_t>((i1 - i0) * C);
            fmt.encodeBulk(y.data(), q.codes.data() + off, n, cfg.encode, T(1), Format::ScaleOp::Multiply, cfg.seed,
                           off);
            if (cfg.count_stats) statsGiven(x + off, q.codes.data() + off, y.data(), n, maxf, ci, st);
          }
          return;
        }
        for (int64_t i = r0; i < r1; ++i) {
          const T* row = x + i * C;
          const T* g = grid.data() + (i / br) * GC;
          const std::size_t off = static_cast<std::size_t>(i * C);
          uint8_t* c = q.codes.data() + off;
          for (int64_t gj = 0; gj < GC; ++gj) {
            const int64_t c0 = gj * bc, c1 = std::min(C, c0 + bc);
            const std::size_t n = static_cast<std::size_t>(c1 - c0);
            fmt.encodeBulk(row + c0, c + c0, n, cfg.encode, g[gj], cfg.op, cfg.seed,
                           off + static_cast<std::size_t>(c0));
            if (cfg.count_stats) statsScaled(row + c0, c + c0, n, g[gj], divide, maxf, ci, st);
          }
        }
      },
      progress, 0.4, 1.0);
  for (const auto& st : pstats) {
    q.stats.elements += st.elements;
    q.stats.saturated += st.saturated;
    q.stats.underflow += st.underflow;
    q.stats.subnormal += st.subnormal;
    q.stats.nan_inputs += st.nan_inputs;
    q.stats.inf_inputs += st.inf_inputs;
    q.stats.zero_inputs += st.zero_inputs;
  }
}

std::string strategyName(const ScalingConfig& cfg, const ScaleBlock& b) {
  std::string s = cfg.name + " (" + toString(cfg.granularity) + " " + std::to_string(b.rows) + "x" +
                  std::to_string(b.cols) + ", rule " + toString(cfg.rule);
  if (cfg.pow2) s += ", pow2";
  if (cfg.margin != 0) s += ", margin " + std::to_string(cfg.margin);
  s += cfg.op == Format::ScaleOp::Divide ? ", x/dequant)" : ", x*quant)";
  return s;
}

template <typename T>
QuantizedTensor quantizeImpl(const T* x, int64_t rows, int64_t cols, const Format& fmt, const ScalingConfig& cfg,
                             Axis contraction, const ProgressFn& progress) {
  checkArgs(x, rows, cols, fmt);
  if (cfg.block < 1)
    throw std::invalid_argument("quantize: block size must be at least 1, got " + std::to_string(cfg.block));
  if (cfg.margin != 0 && cfg.rule != ScaleRule::TransformerEngine)
    throw std::invalid_argument(std::string("quantize: a margin applies to the TE rule only; ") + cfg.name +
                                " follows " + toString(cfg.rule) + ", which has none");
  if (cfg.margin < -126 || cfg.margin > 126)
    throw std::invalid_argument("quantize: margin must be within [-126, 126], got " + std::to_string(cfg.margin));
  QuantizedTensor q;
  q.rows = rows;
  q.cols = cols;
  q.format = &fmt;
  q.block = scaleBlockFor(cfg, rows, cols, contraction);
  q.scale_op = cfg.op;
  q.strategy = strategyName(cfg, q.block);
  if (rows == 0 || cols == 0) return q;
  quantizeRowMajor(x, rows, cols, q.block.rows, q.block.cols, fmt, cfg, q, progress);
  return q;
}

template <typename T>
QuantizedTensor quantizeWithScaleImpl(const T* x, int64_t rows, int64_t cols, const Format& fmt, const BlockScale& s,
                                      Format::ScaleOp op, const EncodeOptions& enc, const ProgressFn& progress) {
  checkArgs(x, rows, cols, fmt);
  QuantizedTensor q;
  q.rows = rows;
  q.cols = cols;
  q.format = &fmt;
  q.block = {std::max<int64_t>(rows, 1), std::max<int64_t>(cols, 1)};
  q.scale_op = op;
  q.strategy =
      op == Format::ScaleOp::Divide ? "per-tensor given scale (x/dequant)" : "per-tensor given scale (x*quant)";
  if (rows == 0 || cols == 0) return q;
  q.dequant_scales = {s.dequant};
  q.quant_scales = {s.quant};
  if (s.scale_code >= 0) q.scale_codes = {static_cast<uint8_t>(s.scale_code)};
  q.codes.assign(static_cast<std::size_t>(rows * cols), 0);
  const CodeInfo ci(fmt);
  const std::size_t n = q.codes.size();
  constexpr std::size_t chunk = std::size_t(1) << 20;
  for (std::size_t off = 0; off < n; off += chunk) {
    const std::size_t len = std::min(chunk, n - off);
    encodeSegment<T>(fmt, x + off, q.codes.data() + off, len, s.quant, s.dequant, op, enc, 0, off, ci, q.stats);
    if (progress) reportProgress(progress, static_cast<double>(off + len) / static_cast<double>(n), "quantize");
  }
  return q;
}

} // namespace

namespace {

#if defined(__x86_64__)
/// A 16 × 16 block of bytes transposed in SSE2 registers: bytes, then 16-, 32- and 64-bit units
/// of neighbouring rows interleaved, each round doubling the rows a unit holds.
void transpose16x16Bytes(const uint8_t* in, int64_t ld_in, uint8_t* out, int64_t ld_out) {
  __m128i x[16], p[16], q[16], r[16];
  for (int i = 0; i < 16; ++i) x[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i * ld_in));
  for (int k = 0; k < 8; ++k) { // rows 2k, 2k+1: byte pairs of columns 0..7 / 8..15
    p[2 * k] = _mm_unpacklo_epi8(x[2 * k], x[2 * k + 1]);
    p[2 * k + 1] = _mm_unpackhi_epi8(x[2 * k], x[2 * k + 1]);
  }
  for (int quad = 0; quad < 4; ++quad) { // rows 4·quad .. +3: columns 0-3, 4-7, 8-11, 12-15
    q[4 * quad] = _mm_unpacklo_epi16(p[4 * quad], p[4 * quad + 2]);
    q[4 * quad + 1] = _mm_unpackhi_epi16(p[4 * quad], p[4 * quad + 2]);
    q[4 * quad + 2] = _mm_unpacklo_epi16(p[4 * quad + 1], p[4 * quad + 3]);
    q[4 * quad + 3] = _mm_unpackhi_epi16(p[4 * quad + 1], p[4 * quad + 3]);
  }
  for (int half = 0; half < 2; ++half) // rows 8·half .. +7: column pairs (4g, 4g+1), (4g+2, 4g+3)
    for (int g = 0; g < 4; ++g) {
      r[8 * half + 2 * g] = _mm_unpacklo_epi32(q[8 * half + g], q[8 * half + 4 + g]);
      r[8 * half + 2 * g + 1] = _mm_unpackhi_epi32(q[8 * half + g], q[8 * half + 4 + g]);
    }
  for (int j = 0; j < 8; ++j) { // columns 2j, 2j+1: rows 0-7 from r[j], rows 8-15 from r[8 + j]
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (2 * j) * ld_out), _mm_unpacklo_epi64(r[j], r[8 + j]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (2 * j + 1) * ld_out), _mm_unpackhi_epi64(r[j], r[8 + j]));
  }
}
#endif

} // namespace

void transposeCodes(const uint8_t* in, uint8_t* out, int64_t rows, int64_t cols) {
  constexpr int64_t T = 64; // cache tiles
  for (int64_t i0 = 0; i0 < rows; i0 += T)
    for (int64_t j0 = 0; j0 < cols; j0 += T) {
      const int64_t i1 = std::min(rows, i0 + T), j1 = std::min(cols, j0 + T);
      int64_t i = i0;
#if defined(__x86_64__)
      for (; i + 16 <= i1; i += 16) {
        int64_t j = j0;
        for (; j + 16 <= j1; j += 16) transpose16x16Bytes(in + i * cols + j, cols, out + j * rows + i, rows);
        for (int64_t ii = i; ii < i + 16; ++ii)
          for (int64_t jj = j; jj < j1; ++jj) out[jj * rows + ii] = in[ii * cols + jj];
      }
#endif
      for (; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) out[j * rows + i] = in[i * cols + j];
    }
}

double amaxOf(const float* x, std::size_t n, bool ignore_nan) {
  return amaxImpl(x, n, ignore_nan);
}
double amaxOf(const double* x, std::size_t n, bool ignore_nan) {
  return amaxImpl(x, n, ignore_nan);
}

std::vector<float> MxInt8Tensor::dequantize() const {
  std::vector<float> out(codes.size());
  mxint8::decodeBulk(codes.data(), out.data(), codes.size());
  const int64_t gc = block.cols > 0 ? (cols + block.cols - 1) / block.cols : 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out[static_cast<size_t>(i * cols + j)] *=
          e8m0ToFloat(scale_codes[static_cast<size_t>((i / block.rows) * gc + j / block.cols)]);
  return out;
}

MxInt8Tensor quantizeMxInt8(const float* x, int64_t rows, int64_t cols, Axis contraction, int64_t block) {
  checkArgs(x, rows, cols, Format::E4M3FN()); // shape and pointer checks (the format is only for the width test)
  if (block < 1)
    throw std::invalid_argument("quantizeMxInt8: block size must be at least 1, got " + std::to_string(block));
  MxInt8Tensor q;
  q.rows = rows;
  q.cols = cols;
  q.block = contraction == Axis::Cols ? ScaleBlock{1, block} : ScaleBlock{block, 1};
  if (rows == 0 || cols == 0) return q;
  const int64_t gr = (rows + q.block.rows - 1) / q.block.rows, gc = (cols + q.block.cols - 1) / q.block.cols;
  q.codes.resize(static_cast<size_t>(rows * cols));
  q.scale_codes.resize(static_cast<size_t>(gr * gc));
  // |y| ≥ 127.5/64 rounds (ties to even) to 128 or more with an unbounded range: saturated to 127.
  const float sat = 127.5f / 64.0f;
  auto count = [&](const float* xs, const float* ys, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const uint32_t b = std::bit_cast<uint32_t>(xs[i]) & 0x7FFFFFFFu;
      q.stats.nan_inputs += b > 0x7F800000u;
      q.stats.inf_inputs += b == 0x7F800000u;
      q.stats.zero_inputs += b == 0;
      q.stats.saturated += (b != 0 && b < 0x7F800000u && std::fabs(ys[i]) >= sat) ? 1 : 0;
    }
    q.stats.elements += static_cast<int64_t>(n);
  };
  std::vector<float> y(static_cast<size_t>(cols));
  if (contraction == Axis::Cols) {
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = x + i * cols;
      for (int64_t gj = 0; gj < gc; ++gj) {
        const int64_t c0 = gj * block, n = std::min(cols - c0, block);
        const uint8_t e =
            mxScaleFloor(static_cast<float>(amaxOf(row + c0, static_cast<size_t>(n), false)), mxint8::kEmaxElem);
        q.scale_codes[static_cast<size_t>(i * gc + gj)] = e;
        const float s = e8m0ReciprocalToFloat(e);
        for (int64_t j = c0; j < c0 + n; ++j) y[static_cast<size_t>(j)] = row[j] * s;
      }
      mxint8::encodeBulk(y.data(), q.codes.data() + i * cols, static_cast<size_t>(cols));
      count(row, y.data(), static_cast<size_t>(cols));
    }
    return q;
  }
  // Axis::Rows: block×1 column slices; amax per (block row, column) with NaN propagating.
  std::vector<uint32_t> mb(static_cast<size_t>(cols)), mn(static_cast<size_t>(cols));
  std::vector<float> s(static_cast<size_t>(cols));
  for (int64_t gi = 0; gi < gr; ++gi) {
    const int64_t r0 = gi * block, r1 = std::min(rows, r0 + block);
    std::fill(mb.begin(), mb.end(), 0u);
    std::fill(mn.begin(), mn.end(), 0u);
    for (int64_t i = r0; i < r1; ++i) colMax(x + i * cols, static_cast<size_t>(cols), mb.data(), mn.data());
    for (int64_t j = 0; j < cols; ++j) {
      const float amax = mn[static_cast<size_t>(j)] ? std::numeric_limits<float>::quiet_NaN()
                                                    : std::bit_cast<float>(mb[static_cast<size_t>(j)]);
      const uint8_t e = mxScaleFloor(amax, mxint8::kEmaxElem);
      q.scale_codes[static_cast<size_t>(gi * gc + j)] = e;
      s[static_cast<size_t>(j)] = e8m0ReciprocalToFloat(e);
    }
    for (int64_t i = r0; i < r1; ++i) {
      const float* row = x + i * cols;
      for (int64_t j = 0; j < cols; ++j) y[static_cast<size_t>(j)] = row[j] * s[static_cast<size_t>(j)];
      mxint8::encodeBulk(y.data(), q.codes.data() + i * cols, static_cast<size_t>(cols));
      count(row, y.data(), static_cast<size_t>(cols));
    }
  }
  return q;
}

QuantizedTensor quantize(const float* x, int64_t rows, int64_t cols, const Format& fmt, const ScalingConfig& cfg,
                         Axis contraction, const ProgressFn& progress) {
  return quantizeImpl(x, rows, cols, fmt, cfg, contraction, progress);
}

QuantizedTensor quantize(const double* x, int64_t rows, int64_t cols, const Format& fmt, const ScalingConfig& cfg,
                         Axis contraction, const ProgressFn& progress) {
  return quantizeImpl(x, rows, cols, fmt, cfg, contraction, progress);
}

QuantizedTensor quantizeWithScale(const float* x, int64_t rows, int64_t cols, const Format& fmt,
                                  const BlockScale& scale, Format::ScaleOp op, const EncodeOptions& encode,
                                  const ProgressFn& progress) {
  return quantizeWithScaleImpl(x, rows, cols, fmt, scale, op, encode, progress);
}

QuantizedTensor quantizeWithScale(const double* x, int64_t rows, int64_t cols, const Format& fmt,
                                  const BlockScale& scale, Format::ScaleOp op, const EncodeOptions& encode,
                                  const ProgressFn& progress) {
  return quantizeWithScaleImpl(x, rows, cols, fmt, scale, op, encode, progress);
}

} // namespace fp8lab

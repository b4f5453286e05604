// FP8 Lab — NVFP4 quantization (see nvfp4.h; docs/nvfp4.md has the rules step by step).
//
// Every fp32 operation below is one IEEE binary32 operation in the order the systems write them.
// This file is built with -ffp-contract=off (core/CMakeLists.txt), so no multiply-add is fused;
// TE's fmaf in its stochastic rounding model is an exact product plus one rounded add here.
#include "scaling/nvfp4.h"

#include "common/names.h"

#include "common/worker_pool.h"
#include "formats/format.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace fp8lab {

namespace {

constexpr float kFltMax = std::numeric_limits<float>::max();
constexpr float kE4M3Max = 448.0f;
constexpr float kE4M3Eps = 0.015625f; // torch.finfo(torch.float8_e4m3fn).tiny = 2^-6
constexpr float kE2M1Value[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                  -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// E2M1 encoders on the float32 bits: for non-negative floats the bit patterns order like the
// values, so every threshold test is an integer compare of |v|'s bits (a NaN's bits exceed
// 0x7F800000), which vectorises without SSE4.1 and has no NaN branches.
constexpr int32_t fbits(float v) {
  return std::bit_cast<int32_t>(v);
}
constexpr int32_t kInfBits = 0x7F800000;

/// RNE E2M1 magnitude code of |v| with bits m (not NaN), saturating: the count of rounding
/// thresholds below |v|. A tie goes to the even code: 0.25 → 0, 0.75 → 1.0, 1.25 → 1.0, 1.75 → 2,
/// 2.5 → 2, 3.5 → 4, 5 → 4 (strict > at ties whose lower neighbour is even, ≥ where the upper is).
inline int32_t e2m1MagnitudeBits(int32_t m) {
  return (m > fbits(0.25f)) + (m >= fbits(0.75f)) + (m > fbits(1.25f)) + (m >= fbits(1.75f)) + (m > fbits(2.5f)) +
         (m >= fbits(3.5f)) + (m > fbits(5.0f));
}

inline uint8_t e2m1Sign(float v) {
  return static_cast<uint8_t>((std::bit_cast<uint32_t>(v) >> 31) << 3);
}

/// cvt.rn.satfinite.e2m1: RNE saturating, sign kept, NaN → +6 (0x7).
inline int32_t e2m1Rne(float v) {
  const int32_t b = fbits(v);
  const int32_t m = b & 0x7FFFFFFF;
  const int32_t code = e2m1MagnitudeBits(m) | ((b >> 28) & 8);
  return m > kInfBits ? 0x7 : code;
}

/// TE stochastic_round_fp4_e2m1 (see stochasticRoundE2M1Te) for the random byte rbits & 0xFF.
inline int32_t srE2M1(float x, uint32_t rbits) {
  const int32_t b = fbits(x);
  const int32_t m = b & 0x7FFFFFFF;
  const float a = std::bit_cast<float>(m);
  const float u = static_cast<float>(static_cast<int32_t>(rbits & 0xFFu)) * (1.0f / 256.0f); // exact
  // step(a) = 0.5 (a < 2), 1 (2 ≤ a < 4), 2 (a ≥ 4).
  // Built on the exponent field: 0.5 = 0x3F000000, each comparison that holds adds one binade.
  const float st = std::bit_cast<float>(0x3F000000 + (static_cast<int32_t>(m >= fbits(2.0f)) << 23) +
                                        (static_cast<int32_t>(m >= fbits(4.0f)) << 23));
  // t = fmaf(u, step(a), a): u·step(a) is exact (an 8-bit fraction times a power of two), so the
  // plain sum, rounded once, is the fused result (and avoids a libm fmaf on CPUs without FMA).
  const int32_t t = fbits(a + u * st);
  // min(floor(t/step(t))·step(t), 6) is the largest E2M1 value ≤ t (step(t) is the grid spacing at
  // t, and 6 the top), so its magnitude code is the number of positive grid values ≤ t.
  const int32_t mag = (t >= fbits(0.5f)) + (t >= fbits(1.0f)) + (t >= fbits(1.5f)) + (t >= fbits(2.0f)) +
                      (t >= fbits(3.0f)) + (t >= fbits(4.0f)) + (t >= fbits(6.0f));
  const int32_t code = mag | ((b >> 28) & 8);
  // NaN → +6, as a mask: GCC 12 does not vectorise the loop over this function with a select here.
  const int32_t nan = -static_cast<int32_t>(m > kInfBits);
  return (nan & 0x7) | (~nan & code);
}

/// q[i] = code(i) for the 16 elements of a block: the codes are formed in int32 lanes (one vector
/// loop), then narrowed.
template <typename F> inline void encode16(uint8_t* q, const F& code) {
  int32_t c[16];
  for (int i = 0; i < 16; ++i) c[i] = code(i);
  for (int i = 0; i < 16; ++i) q[i] = static_cast<uint8_t>(c[i]);
}

/// torchao f32_to_f4_unpacked after clamp(±6): RNE saturating, sign of −0 kept; NaN falls
/// through the bit trick to code 0x3 (custom_fp_utils.py _f32_to_floatx_unpacked).
inline int32_t e2m1Torchao(float v) {
  const int32_t b = fbits(v);
  const int32_t m = b & 0x7FFFFFFF;
  const int32_t code = e2m1MagnitudeBits(m) | ((b >> 28) & 8);
  return m > kInfBits ? 0x3 : code;
}

/// max |x_i| over 16 values. ignore_nan: CUDA fmaxf / max.abs (NaN operands dropped); otherwise
/// torch.amax (any NaN gives NaN).
inline float blockAmax(const float* x, bool ignore_nan) {
  float m = 0.0f;
  bool nan = false;
  for (int i = 0; i < 16; ++i) {
    const float a = std::fabs(x[i]);
    m = a > m ? a : m;
    nan |= std::isnan(a);
  }
  return (nan && !ignore_nan) ? std::numeric_limits<float>::quiet_NaN() : m;
}

/// torch.clamp(v, lo, hi): NaN stays NaN.
inline float clampKeepNaN(float v, float lo, float hi) {
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return v;
}

/// Tensor-level constants of one quantization.
struct Plan {
  Nvfp4Rule rule = Nvfp4Rule::TransformerEngine;
  FourOverSix fos = FourOverSix::Off;
  bool tile_2d = false, sr = false;
  uint64_t seed = 0;
  float amax = 0.0f;
  // TE
  float s_enc = 1.0f, s_dec = 1.0f, mult = 1.0f; // S_enc, fl(1/S_enc), fl(S_enc·fl(1/6))
  float err_denom = 2688.0f;                     // 4over6: f32(6·E4M3_MAX)
  // torchao
  bool two_level = true;
  float pts = 0.0f, inv_pts = 0.0f; // per_tensor_scale, fl(1/pts)
};

/// Per-worker scratch for one band of blocks.
struct Scratch {
  std::vector<float> vals;  // [nblk][16] gathered values (Axis::Rows)
  std::vector<uint8_t> out; // [nblk][16] codes before the scatter (Axis::Rows)
  std::vector<float> bam, pre, pre4;
  std::vector<uint8_t> sc, sc4;
  std::vector<uint8_t> q4, q6; // 4over6 candidate codes [nblk][16]
  std::vector<float> err4, err6;
  void size(std::size_t nblk, bool rows_axis, bool fos) {
    if (rows_axis) {
      vals.resize(nblk * 16);
      out.resize(nblk * 16);
    }
    bam.resize(nblk);
    pre.resize(nblk);
    sc.resize(nblk);
    if (fos) {
      pre4.resize(nblk);
      sc4.resize(nblk);
      q4.resize(nblk * 16);
      q6.resize(nblk * 16);
      err4.resize(nblk);
      err6.resize(nblk);
    }
  }
};

/// The 4over6 error of one candidate over a block, elements 0..15 in order
/// (quantize_4over6_nvfp4.cuh accumulate_dequant_error).
inline float fosError(const float* x, const uint8_t* q, float s, const Plan& p) {
  float err = 0.0f;
  for (int i = 0; i < 16; ++i) {
    const float val = ((kE2M1Value[q[i]] * s) * p.amax) / p.err_denom;
    const float d = val - x[i];
    err = p.fos == FourOverSix::MSE ? err + d * d : err + std::fabs(d);
  }
  return err;
}

/// The 2-D tile error: 16 per-block errors summed by the warp shuffle tree (offsets 8, 4, 2, 1),
/// as quantize_4over6_nvfp4.cuh and reference_nvfp4.py _sum_4over6_2d_error do.
inline float treeSum16(const float* e) {
  float v[16];
  for (int i = 0; i < 16; ++i) v[i] = e[i];
  for (int off = 8; off >= 1; off /= 2)
    for (int i = 0; i < off; ++i) v[i] = v[i] + v[i + off];
  return v[0];
}

/// Quantizes the blocks of one band. Blocks are numbered k = 0 .. nblk−1 in scale-grid order
/// within the band; block k's 16 values are x[16k .. 16k+15] and its 16 code bytes out[16k ..];
/// element i of block k has the row-major index idx0 + k·idx_k + i·idx_i (for the random bytes).
/// With 2-D tiles the band is 16 rows: Axis::Cols blocks of one tile are nblk/16 apart, Axis::Rows
/// blocks of one tile are 16 adjacent columns. scale_out and map4_out (4over6 only) receive one
/// byte per block. Built for the CPU's vector width (target clones): every operation is the same
/// IEEE float32 operation or integer compare at every width.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void quantizeBand(std::size_t nblk, const float* xs, uint8_t* out, uint64_t idx0, uint64_t idx_k, uint64_t idx_i,
                  bool rows_axis, const Plan& p, Scratch& s, uint8_t* scale_out, uint8_t* map4_out) {
  const auto blk = [xs](std::size_t k) { return xs + 16 * k; };
  const auto dst = [out](std::size_t k) { return out + 16 * k; };
  const auto index = [=](std::size_t k, int i) {
    return idx0 + static_cast<uint64_t>(k) * idx_k + static_cast<uint64_t>(i) * idx_i;
  };
  const bool fos = p.fos != FourOverSix::Off;
  s.size(nblk, rows_axis, fos);
  const bool ignore_nan = p.rule != Nvfp4Rule::TorchaoMxFormats;
  for (std::size_t k = 0; k < nblk; ++k) s.bam[k] = blockAmax(blk(k), ignore_nan);
  if (p.tile_2d) {
    // Axis::Cols: the band's 16 rows × (nblk/16) block columns, block k = row·(nblk/16) + t;
    // Axis::Rows: nblk columns, block k = column, tile = k/16. Max of the 16 members (NaN-free:
    // TE's fmaxf reductions).
    const std::size_t ntiles = nblk / 16;
    for (std::size_t t = 0; t < ntiles; ++t) {
      float m = 0.0f;
      for (std::size_t j = 0; j < 16; ++j) {
        const std::size_t k = rows_axis ? 16 * t + j : j * ntiles + t;
        m = s.bam[k] > m ? s.bam[k] : m;
      }
      for (std::size_t j = 0; j < 16; ++j) s.bam[rows_axis ? 16 * t + j : j * ntiles + t] = m;
    }
  }

  // Pre-round block scales, then one vectorised E4M3 cast (RNE satfinite; cuDNN: round up).
  const Format& e4m3 = Format::E4M3FN();
  switch (p.rule) {
  case Nvfp4Rule::TransformerEngine:
    if (fos) {
      for (std::size_t k = 0; k < nblk; ++k) {
        const float base = (s.bam[k] / 6.0f) * p.s_enc;
        s.pre4[k] = std::fmin(base * 1.5f, kE4M3Max);
        s.pre[k] = std::fmin(base, kE4M3Max);
      }
    } else {
      for (std::size_t k = 0; k < nblk; ++k) s.pre[k] = std::fmin(s.bam[k] * p.mult, kFltMax);
    }
    break;
  case Nvfp4Rule::TorchaoMxFormats:
    for (std::size_t k = 0; k < nblk; ++k) {
      const float bs = s.bam[k] / 6.0f;
      s.pre[k] = clampKeepNaN(p.two_level ? bs / p.pts : bs, kE4M3Eps, kE4M3Max);
    }
    break;
  case Nvfp4Rule::CudnnDocSingleLevel:
    for (std::size_t k = 0; k < nblk; ++k) s.pre[k] = s.bam[k] / 6.0f;
    break;
  }
  EncodeOptions scale_opt;
  if (p.rule == Nvfp4Rule::CudnnDocSingleLevel) scale_opt.rounding = Rounding::TowardPosInf;
  e4m3.encodeBulk(s.pre.data(), s.sc.data(), nblk, scale_opt);
  if (fos) e4m3.encodeBulk(s.pre4.data(), s.sc4.data(), nblk, scale_opt);
  const std::vector<float>& sv = e4m3.decodeTable();

  if (!fos) {
    for (std::size_t k = 0; k < nblk; ++k) {
      const float* x = blk(k);
      uint8_t* q = dst(k);
      const float sf = sv[s.sc[k]];
      scale_out[k] = s.sc[k];
      switch (p.rule) {
      case Nvfp4Rule::TransformerEngine: {
        const float enc_b = std::fmin(1.0f / (sf * p.s_dec), kFltMax);
        if (p.sr) {
          // Element e takes byte e mod 4 of counterRandom(seed, e / 4): one word per 4 elements.
          // A 1×16 block starts at a multiple of 16, so its 16 bytes are 4 whole words.
          uint32_t rb[16];
          if (!rows_axis) {
            const uint64_t g0 = index(k, 0) >> 2;
            for (int w = 0; w < 4; ++w) {
              const uint32_t word = Format::counterRandom(p.seed, g0 + static_cast<uint64_t>(w));
              for (int j = 0; j < 4; ++j) rb[4 * w + j] = word >> (8 * j);
            }
          } else {
            for (int i = 0; i < 16; ++i) {
              const uint64_t e = index(k, i);
              rb[i] = Format::counterRandom(p.seed, e >> 2) >> (8 * (e & 3));
            }
          }
          encode16(q, [&](int i) { return srE2M1(x[i] * enc_b, rb[i]); });
        } else {
          encode16(q, [&](int i) { return e2m1Rne(x[i] * enc_b); });
        }
        break;
      }
      case Nvfp4Rule::TorchaoMxFormats: {
        const float rs = p.two_level ? p.inv_pts / sf : 1.0f / sf;
        encode16(q, [&](int i) { return e2m1Torchao(x[i] * rs); });
        break;
      }
      case Nvfp4Rule::CudnnDocSingleLevel:
        encode16(q, [&](int i) { return e2m1Rne(x[i] / sf); });
        break;
      }
    }
    return;
  }

  // 4over6: both candidates per block, then the choice per block (1-D) or per tile (2-D).
  for (std::size_t k = 0; k < nblk; ++k) {
    const float* x = blk(k);
    const float sf4 = sv[s.sc4[k]], sf6 = sv[s.sc[k]];
    const float inv4 = std::fmin(1.0f / (sf4 * p.s_dec), kFltMax);
    const float inv6 = std::fmin(1.0f / (sf6 * p.s_dec), kFltMax);
    uint8_t* q4 = &s.q4[16 * k];
    uint8_t* q6 = &s.q6[16 * k];
    encode16(q4, [&](int i) { return e2m1Rne(x[i] * inv4); });
    encode16(q6, [&](int i) { return e2m1Rne(x[i] * inv6); });
    s.err4[k] = fosError(x, q4, sf4, p);
    s.err6[k] = fosError(x, q6, sf6, p);
  }
  auto take = [&](std::size_t k, bool map4) {
    const uint8_t* src = map4 ? &s.q4[16 * k] : &s.q6[16 * k];
    std::copy(src, src + 16, dst(k));
    scale_out[k] = map4 ? s.sc4[k] : s.sc[k];
    map4_out[k] = map4 ? 1 : 0;
  };
  if (!p.tile_2d) {
    for (std::size_t k = 0; k < nblk; ++k) take(k, s.err4[k] < s.err6[k]); // ties → map-6
    return;
  }
  const std::size_t ntiles = nblk / 16;
  for (std::size_t t = 0; t < ntiles; ++t) {
    float e4[16], e6[16];
    for (std::size_t j = 0; j < 16; ++j) {
      const std::size_t k = rows_axis ? 16 * t + j : j * ntiles + t;
      e4[j] = s.err4[k];
      e6[j] = s.err6[k];
    }
    const bool map4 = treeSum16(e4) < treeSum16(e6);
    for (std::size_t j = 0; j < 16; ++j) take(rows_axis ? 16 * t + j : j * ntiles + t, map4);
  }
}

/// Runs fn(job, worker) for job = 0 .. jobs−1 on nt workers (dynamic split; each job writes its own
/// outputs, so the split never changes a result). The first exception is rethrown.
template <typename Fn> void parallelJobs(int64_t jobs, int nt, const Fn& fn) {
  std::atomic<int64_t> next{0};
  std::atomic<bool> stop{false};
  std::exception_ptr err;
  std::mutex m;
  runOnWorkers(nt, [&](int w) {
    try {
      while (!stop.load(std::memory_order_relaxed)) {
        const int64_t j = next.fetch_add(1);
        if (j >= jobs) break;
        fn(j, w);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(m);
      if (!err) err = std::current_exception();
      stop = true;
    }
  });
  if (err) std::rethrow_exception(err);
}

void validate(const float* x, int64_t rows, int64_t cols, const Nvfp4Config& c, Axis axis) {
  if (rows < 0 || cols < 0)
    throw std::invalid_argument("quantizeNvfp4: negative shape [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "]");
  if (!x && rows > 0 && cols > 0) throw std::invalid_argument("quantizeNvfp4: null input with elements");
  const bool te = c.rule == Nvfp4Rule::TransformerEngine;
  const std::string rule = toString(c.rule);
  if (!te && c.tile_2d) throw std::invalid_argument("quantizeNvfp4: 2-D 16x16 tiles are TE only, not " + rule);
  if (!te && c.four_over_six != FourOverSix::Off)
    throw std::invalid_argument("quantizeNvfp4: 4over6 is TE only, not " + rule);
  if (!te && c.stochastic_rounding)
    throw std::invalid_argument("quantizeNvfp4: stochastic rounding is TE only, not " + rule);
  if (!te && c.rht) throw std::invalid_argument("quantizeNvfp4: the random Hadamard transform is TE only, not " + rule);
  if (c.four_over_six != FourOverSix::Off && (c.stochastic_rounding || c.rht))
    throw std::invalid_argument("quantizeNvfp4: 4over6 cannot be combined with stochastic rounding or RHT "
                                "(TE NVFP4BlockScalingRecipeState.make_quantizers raises)");
  if (c.four_over_six != FourOverSix::Off && c.e4m3_bound != 256 && c.e4m3_bound != 448)
    throw std::invalid_argument("quantizeNvfp4: 4over6 e4m3_bound must be 256 or 448, got " +
                                std::to_string(c.e4m3_bound));
  if (c.tile_2d && (c.rht || c.stochastic_rounding))
    throw std::invalid_argument("quantizeNvfp4: 2-D tiles are for weights, which TE quantizes without RHT or "
                                "stochastic rounding");
  if (c.rule != Nvfp4Rule::TorchaoMxFormats && c.tensor_scale_source != Nvfp4TensorScaleSource::Dynamic)
    throw std::invalid_argument("quantizeNvfp4: static or absent tensor scales are torchao only, not " + rule);
  const int64_t along = axis == Axis::Cols ? cols : rows;
  if (along % 16 != 0)
    throw std::invalid_argument("quantizeNvfp4: the block axis (" + std::string(toString(axis)) + ") has " +
                                std::to_string(along) + " elements, not a multiple of 16 (partial blocks refused)");
  if (c.tile_2d && (rows % 16 != 0 || cols % 16 != 0))
    throw std::invalid_argument("quantizeNvfp4: 2-D 16x16 tiles need both dimensions multiples of 16, got [" +
                                std::to_string(rows) + ", " + std::to_string(cols) + "]");
}

/// max|x| over the tensor, in parallel (per-worker maxima merged; max is order-free).
float tensorAmax(const float* x, int64_t n, bool ignore_nan, int nt) {
  const int64_t chunk = int64_t(1) << 16;
  const int64_t jobs = (n + chunk - 1) / chunk;
  std::vector<float> m(static_cast<std::size_t>(std::max(nt, 1)), 0.0f);
  std::vector<uint8_t> nan(m.size(), 0);
  parallelJobs(jobs, nt, [&](int64_t j, int w) {
    const int64_t i0 = j * chunk, i1 = std::min(n, i0 + chunk);
    // The vectorised max |x| of scaling.h: NaN when the chunk holds one (then the max without it).
    const std::size_t len = static_cast<std::size_t>(i1 - i0);
    double v = amaxOf(x + i0, len, /*ignore_nan=*/false);
    const bool nw = std::isnan(v);
    if (nw) v = amaxOf(x + i0, len, /*ignore_nan=*/true);
    const float a = static_cast<float>(v);
    float& mw = m[static_cast<std::size_t>(w)];
    mw = a > mw ? a : mw;
    nan[static_cast<std::size_t>(w)] |= static_cast<uint8_t>(nw);
  });
  float r = 0.0f;
  bool any_nan = false;
  for (std::size_t w = 0; w < m.size(); ++w) {
    r = m[w] > r ? m[w] : r;
    any_nan |= nan[w] != 0;
  }
  return (any_nan && !ignore_nan) ? std::numeric_limits<float>::quiet_NaN() : r;
}

} // namespace

float teNvfp4GlobalEncodeScale(float amax, float e4m3_max) {
  const float fp8_fp4_max = e4m3_max * 6.0f; // 2688 or 1536, exact
  float s = fp8_fp4_max / amax;
  s = std::fmin(s, kFltMax);
  if (amax == 0.0f || s == 0.0f) s = 1.0f;
  return s;
}

float torchaoNvfp4PerTensorScale(float amax) {
  return amax / 2688.0f;
}

uint8_t e2m1RneSatfinite(float v) {
  return e2m1Rne(v);
}

uint8_t stochasticRoundE2M1Te(float x, uint8_t rbits) {
  return srE2M1(x, rbits);
}

uint8_t Nvfp4Tensor::scaleCodeAt(int64_t i, int64_t j) const {
  const int64_t bi = axis == Axis::Rows ? i / 16 : i;
  const int64_t bj = axis == Axis::Cols ? j / 16 : j;
  return scale_codes[static_cast<std::size_t>(bi * blockCols() + bj)];
}

std::vector<float> Nvfp4Tensor::dequantize() const {
  std::vector<float> y(codes.size());
  const std::vector<float>& sv = Format::E4M3FN().decodeTable();
  const float rcp = 1.0f / fp4_fp8_max; // TE: f32(1/2688) or f32(1/1536)
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const float s = sv[scaleCodeAt(i, j)];
      float f = s;
      if (rule == Nvfp4Rule::TransformerEngine)
        f = (s * amax) * rcp;
      else if (rule == Nvfp4Rule::TorchaoMxFormats && has_tensor_scale)
        f = tensor_scale * s;
      const std::size_t e = static_cast<std::size_t>(i * cols + j);
      y[e] = kE2M1Value[codes[e] & 0xF] * f;
    }
  return y;
}

std::vector<float> rhtOperand(const float* x, int64_t rows, int64_t cols, uint16_t sign_mask, Axis axis, int threads) {
  if (rows < 0 || cols < 0) throw std::invalid_argument("rhtOperand: negative shape");
  const int64_t along = axis == Axis::Rows ? rows : cols;
  if (along % 16 != 0)
    throw std::invalid_argument("rhtOperand: the rotated axis has " + std::to_string(along) +
                                " elements, not a multiple of 16");
  const int64_t n = rows * cols;
  std::vector<float> rotated(static_cast<std::size_t>(n));
  if (n == 0) return rotated;
  if (!x) throw std::invalid_argument("rhtOperand: null input");
  const int64_t nbands = (rows + 15) / 16;
  const int nt = threadsForWork(threads, n, std::max<int64_t>(nbands, 1));
  const std::size_t C = static_cast<std::size_t>(cols);
  parallelJobs(nbands, nt, [&](int64_t b, int) {
    const int64_t r0 = 16 * b, r1 = std::min(rows, r0 + 16);
    std::vector<float> in(static_cast<std::size_t>((r1 - r0) * cols));
    for (std::size_t e = 0; e < in.size(); ++e) in[e] = bf16RoundNearestEven(x[static_cast<std::size_t>(r0) * C + e]);
    float* out = rotated.data() + static_cast<std::size_t>(r0) * C;
    if (axis == Axis::Rows) {
      hadamardTransform16Columns(in.data(), out, C, C, sign_mask);
    } else {
      for (std::size_t e = 0; e < in.size(); e += 16) hadamardTransform16(&in[e], out + e, sign_mask);
    }
  });
  return rotated;
}

Nvfp4Tensor quantizeNvfp4(const float* x, int64_t rows, int64_t cols, const Nvfp4Config& cfg, Axis axis) {
  validate(x, rows, cols, cfg, axis);
  Nvfp4Tensor q;
  q.rows = rows;
  q.cols = cols;
  q.axis = axis;
  q.rule = cfg.rule;
  const int64_t n = rows * cols;
  const bool rows_axis = axis == Axis::Rows;
  const int64_t nbands = (rows + 15) / 16;
  const int nt = threadsForWork(cfg.threads, n, std::max<int64_t>(nbands, 1));

  // RHT: the BF16-rounded input, transformed along the block axis, in a buffer of its own.
  std::vector<float> rotated;
  const float* src = x;
  if (cfg.rht && n > 0) {
    rotated = rhtOperand(x, rows, cols, cfg.rht_sign_mask, axis, cfg.threads);
    src = rotated.data();
  }

  Plan p;
  p.rule = cfg.rule;
  p.fos = cfg.four_over_six;
  p.tile_2d = cfg.tile_2d;
  p.sr = cfg.stochastic_rounding;
  p.seed = cfg.seed;
  p.amax = tensorAmax(src, n, cfg.rule != Nvfp4Rule::TorchaoMxFormats, nt);
  q.amax = p.amax;
  switch (cfg.rule) {
  case Nvfp4Rule::TransformerEngine: {
    const float bound = cfg.four_over_six != FourOverSix::Off ? static_cast<float>(cfg.e4m3_bound) : kE4M3Max;
    p.s_enc = teNvfp4GlobalEncodeScale(p.amax, bound);
    p.s_dec = 1.0f / p.s_enc;
    p.mult = p.s_enc * (1.0f / 6.0f);
    p.err_denom = 6.0f * bound;
    q.tensor_scale = p.s_enc;
    q.fp4_fp8_max = 6.0f * bound;
    break;
  }
  case Nvfp4Rule::TorchaoMxFormats:
    switch (cfg.tensor_scale_source) {
    case Nvfp4TensorScaleSource::Dynamic:
      p.pts = torchaoNvfp4PerTensorScale(p.amax);
      break;
    case Nvfp4TensorScaleSource::StaticAmax:
      p.pts = torchaoNvfp4PerTensorScale(cfg.static_amax);
      break;
    case Nvfp4TensorScaleSource::StaticScale:
      p.pts = cfg.static_tensor_scale;
      break;
    case Nvfp4TensorScaleSource::None:
      p.two_level = false;
      break;
    }
    p.inv_pts = 1.0f / p.pts;
    q.tensor_scale = p.two_level ? p.pts : 1.0f;
    q.has_tensor_scale = p.two_level;
    break;
  case Nvfp4Rule::CudnnDocSingleLevel:
    q.tensor_scale = 1.0f;
    q.has_tensor_scale = false;
    break;
  }

  q.codes.resize(static_cast<std::size_t>(n));
  q.scale_codes.resize(static_cast<std::size_t>(q.blockRows() * q.blockCols()));
  const bool fos = cfg.four_over_six != FourOverSix::Off;
  if (fos) q.map4.resize(q.scale_codes.size());
  if (n == 0) return q;
  std::vector<Scratch> scratch(static_cast<std::size_t>(nt));
  const std::size_t C = static_cast<std::size_t>(cols);
  parallelJobs(nbands, nt, [&](int64_t b, int w) {
    Scratch& s = scratch[static_cast<std::size_t>(w)];
    const std::size_t r0 = static_cast<std::size_t>(16 * b);
    const std::size_t r1 = std::min(static_cast<std::size_t>(rows), r0 + 16);
    if (rows_axis) {
      // 16 rows × cols: block k = column k; gather each column's 16 values, scatter the codes.
      const std::size_t nblk = C;
      s.size(nblk, true, p.fos != FourOverSix::Off);
      // Transposed in 16×16 squares, so both sides stay within a few cache lines.
      for (std::size_t c0 = 0; c0 < C; c0 += 16)
        for (std::size_t i = 0; i < 16; ++i)
          for (std::size_t c = c0; c < std::min(C, c0 + 16); ++c) s.vals[16 * c + i] = src[(r0 + i) * C + c];
      quantizeBand(nblk, s.vals.data(), s.out.data(), static_cast<uint64_t>(r0 * C), 1, static_cast<uint64_t>(C), true,
                   p, s, q.scale_codes.data() + static_cast<std::size_t>(b) * C,
                   fos ? q.map4.data() + static_cast<std::size_t>(b) * C : nullptr);
      for (std::size_t c0 = 0; c0 < C; c0 += 16)
        for (std::size_t i = 0; i < 16; ++i)
          for (std::size_t c = c0; c < std::min(C, c0 + 16); ++c) q.codes[(r0 + i) * C + c] = s.out[16 * c + i];
    } else {
      // (r1 − r0) rows × cols/16 blocks, row-major: block k = (row − r0)·(cols/16) + column block.
      const std::size_t per_row = C / 16, nblk = (r1 - r0) * per_row;
      quantizeBand(nblk, src + r0 * C, q.codes.data() + r0 * C, static_cast<uint64_t>(r0 * C), 16, 1, false, p, s,
                   q.scale_codes.data() + r0 * per_row, fos ? q.map4.data() + r0 * per_row : nullptr);
    }
  });
  return q;
}

QuantizedTensor toQuantizedTensor(const Nvfp4Tensor& t, const Nvfp4Config& cfg, const float* x) {
  QuantizedTensor q;
  q.rows = t.rows;
  q.cols = t.cols;
  q.format = &Format::E2M1();
  q.codes = t.codes;
  q.block = t.axis == Axis::Cols ? ScaleBlock{1, 16} : ScaleBlock{16, 1};
  q.scale_codes = t.scale_codes;
  q.scale_format = &Format::E4M3FN();
  const std::vector<float>& e4m3 = Format::E4M3FN().decodeTable();
  q.dequant_scales.resize(t.scale_codes.size());
  for (std::size_t b = 0; b < t.scale_codes.size(); ++b) q.dequant_scales[b] = e4m3[t.scale_codes[b]];
  if (t.rule == Nvfp4Rule::TransformerEngine) {
    q.tensor_scale.kind = TensorScale::Kind::TeAmax;
    q.tensor_scale.amax = t.amax;
    q.tensor_scale.value = t.tensor_scale;
    q.tensor_scale.fp4_fp8_max = t.fp4_fp8_max;
  } else if (t.rule == Nvfp4Rule::TorchaoMxFormats && t.has_tensor_scale) {
    q.tensor_scale.kind = TensorScale::Kind::TorchaoPts;
    q.tensor_scale.amax = t.amax;
    q.tensor_scale.value = t.tensor_scale;
  }
  q.strategy = cfg.name + " (NVFP4, " + toString(t.rule) + (cfg.tile_2d ? ", 16x16 tiles" : "") +
               (cfg.rht ? ", Hadamard-rotated" : "") + (cfg.stochastic_rounding ? ", stochastic rounding" : "") +
               (cfg.four_over_six != FourOverSix::Off ? std::string(", 4over6 ") + toString(cfg.four_over_six) : "") +
               ")";
  QuantizeStats& s = q.stats;
  s.elements = t.rows * t.cols;
  if (!x) return q;
  // With RHT the codes are those of the rotated tensor: count against what was quantized.
  std::vector<float> rotated;
  if (cfg.rht) {
    rotated = rhtOperand(x, t.rows, t.cols, cfg.rht_sign_mask, t.axis, cfg.threads);
    x = rotated.data();
  }
  const double limit = Format::E2M1().rneFiniteLimit();
  // The effective factor of each block once (dequantScaleAt's value), then the elements block by
  // block.
  std::vector<double> eff(q.dequant_scales.size());
  const int64_t nbc = q.blockCols(), br = q.block.rows, bc = q.block.cols;
  for (int64_t bi = 0; bi < q.blockRows(); ++bi)
    for (int64_t bj = 0; bj < nbc; ++bj)
      eff[static_cast<std::size_t>(bi * nbc + bj)] = q.dequantScaleAt(bi * br, bj * bc);
  for (int64_t i = 0; i < t.rows; ++i) {
    const double* ef = eff.data() + (i / br) * nbc;
    for (int64_t bj = 0; bj < nbc; ++bj) {
      const double f = ef[bj];
      // |v| / f > limit, decided by a multiplication unless |v| is within 1e-12 of the boundary
      // (then by the division itself, so the count is exactly the division's).
      const double thr = limit * f;
      for (int64_t j = bj * bc; j < std::min(t.cols, (bj + 1) * bc); ++j) {
        const std::size_t e = static_cast<std::size_t>(i * t.cols + j);
        const float v = x[e];
        if (std::isnan(v)) {
          ++s.nan_inputs;
          continue;
        }
        if (std::isinf(v)) {
          ++s.inf_inputs;
          continue;
        }
        if (v == 0.0f) {
          ++s.zero_inputs;
          continue;
        }
        if ((t.codes[e] & 0x7) == 0) ++s.underflow;
        const double a = std::fabs(static_cast<double>(v));
        if (f > 0 && a > thr * (1 - 1e-12) && (a > thr * (1 + 1e-12) || a / f > limit)) ++s.saturated;
      }
    }
  }
  return q;
}

const std::vector<Nvfp4PresetInfo>& nvfp4Presets() {
  static const std::string te_1d =
      "Transformer Engine common/cast/nvfp4/core_nvfp4.cuh compute_global_encode_scaling_factor_FP4, "
      "quantization_and_transposition_SF::compute_decoding_scaling_factor; quantize_transpose_nvfp4.cuh "
      "quantize_transpose_nvfp4_kernel; specialized/quantize_transpose_nvfp4_tuned_1D.cuh "
      "compute_nvfp4_scaling_coefficient";
  static const std::string te_4o6 =
      "Transformer Engine common/cast/nvfp4/quantize_4over6_nvfp4.cuh compute_scale_pair, "
      "accumulate_dequant_error, quantize_stage_rowwise (pick_map4); pytorch/custom_recipes/reference_nvfp4.py "
      "_quantize_blockwise_4over6_reference";
  static const std::string te_rht =
      "Transformer Engine pytorch/tensor/nvfp4_tensor.py get_wgrad_sign_vector, get_rht_matrix; "
      "common/hadamard_transform/hadamard_transform_utils.cuh; pytorch/csrc/quantizer.cpp "
      "NVFP4Quantizer::quantize_impl (post-RHT amax); then core_nvfp4.cuh as nvfp4_te";
  static const std::string te_sr = "Transformer Engine common/util/ptx.cuh stochastic_round_fp4_e2m1 (software "
                                   "model of cvt.rs.satfinite.e2m1x4.f32); block scales as nvfp4_te";
  static const std::string ao = "torchao torchao/prototype/mx_formats/nvfp4_tensor.py per_tensor_amax_to_scale, "
                                "nvfp4_quantize; custom_fp_utils.py _f32_to_floatx_unpacked";
  static const std::vector<Nvfp4PresetInfo> presets = {
      {"nvfp4_te", "TE NVFP4 1x16: S_enc = 2688/amax, E4M3 block scales RNE with no lower clamp", te_1d, Axis::Cols},
      {"nvfp4_te_2d", "TE NVFP4 weights: one E4M3 scale per 16x16 tile (fp4_2d_quantization)",
       "Transformer Engine common/cast/nvfp4/quantize_transpose_nvfp4.cuh quantize_transpose_nvfp4_2D_kernel; "
       "pytorch/custom_recipes/reference_nvfp4.py _quantize_blockwise_reference (16x16 branch)",
       Axis::Cols},
      {"nvfp4_te_4over6", "TE 4over6, MAE, E4M3 bound 256 (S_enc = 1536/amax): map-4 vs map-6 per block", te_4o6,
       Axis::Cols},
      {"nvfp4_te_4over6_mse", "TE 4over6, MSE error, E4M3 bound 256", te_4o6, Axis::Cols},
      {"nvfp4_te_4over6_448", "TE 4over6, MAE, E4M3 bound 448 (nvfp4_4over6_e4m3_use_256 = none)", te_4o6, Axis::Cols},
      {"nvfp4_te_rht", "TE wgrad operand: 16-point RHT (sign mask 0xD7E8) down the columns, post-RHT amax", te_rht,
       Axis::Rows},
      {"nvfp4_te_sr", "TE gradient (dgrad copy): stochastic rounding of the E2M1 elements", te_sr, Axis::Cols},
      {"nvfp4_te_rht_sr", "TE gradient wgrad copy: RHT down the columns and stochastic rounding", te_rht + "; " + te_sr,
       Axis::Rows},
      {"nvfp4_torchao", "torchao NVFP4Tensor: pts = amax/2688, block scale clamped to [2^-6, 448]", ao, Axis::Cols},
      {"nvfp4_torchao_single_level", "torchao NVFP4Tensor with per_tensor_scale=None: E4M3 scale = bamax/6", ao,
       Axis::Cols},
      {"nvfp4_cudnn_doc", "cuDNN doc block scale quantize: E4M3 scale rounded up, single level",
       "cuDNN frontend docs, operations/BlockScaling: scale = quantize_round_up(amax/vmax_otype), output = "
       "quantize_round_to_even(vals/scale)",
       Axis::Cols},
  };
  return presets;
}

Nvfp4Config requireNvfp4Preset(std::string_view name) {
  if (auto c = nvfp4Preset(name)) return *c;
  std::string known;
  for (const auto& p : nvfp4Presets()) known += (known.empty() ? "" : ", ") + p.name;
  throw std::invalid_argument("'" + std::string(name) + "' is not an NVFP4 preset (" + known + ")");
}

std::optional<Nvfp4Config> nvfp4Preset(std::string_view name) {
  const std::string n = normalizedName(name);
  Nvfp4Config c;
  c.name = n;
  if (n == "nvfp4_te") return c;
  if (n == "nvfp4_te_2d") {
    c.tile_2d = true;
    return c;
  }
  if (n == "nvfp4_te_4over6" || n == "nvfp4_te_4over6_mse" || n == "nvfp4_te_4over6_448") {
    c.four_over_six = n == "nvfp4_te_4over6_mse" ? FourOverSix::MSE : FourOverSix::MAE;
    c.e4m3_bound = n == "nvfp4_te_4over6_448" ? 448 : 256;
    return c;
  }
  if (n == "nvfp4_te_rht" || n == "nvfp4_te_rht_sr") {
    c.rht = true;
    c.stochastic_rounding = n == "nvfp4_te_rht_sr";
    return c;
  }
  if (n == "nvfp4_te_sr") {
    c.stochastic_rounding = true;
    return c;
  }
  if (n == "nvfp4_torchao" || n == "nvfp4_torchao_single_level") {
    c.rule = Nvfp4Rule::TorchaoMxFormats;
    if (n == "nvfp4_torchao_single_level") c.tensor_scale_source = Nvfp4TensorScaleSource::None;
    return c;
  }
  if (n == "nvfp4_cudnn_doc") {
    c.rule = Nvfp4Rule::CudnnDocSingleLevel;
    return c;
  }
  return std::nullopt;
}

const char* toString(Nvfp4Rule r) {
  switch (r) {
  case Nvfp4Rule::TransformerEngine:
    return "TransformerEngine";
  case Nvfp4Rule::TorchaoMxFormats:
    return "TorchaoMxFormats";
  case Nvfp4Rule::CudnnDocSingleLevel:
    return "CudnnDocSingleLevel";
  }
  return "?";
}

const char* toString(FourOverSix m) {
  switch (m) {
  case FourOverSix::Off:
    return "off";
  case FourOverSix::MAE:
    return "MAE";
  case FourOverSix::MSE:
    return "MSE";
  }
  return "?";
}

} // namespace fp8lab

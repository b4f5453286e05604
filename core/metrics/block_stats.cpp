// FP8 Lab — per-block statistics (see block_stats.h).
#include "metrics/block_stats.h"

#include "common/cpu_level.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fp8lab {

int64_t BlockStatsMap::blockElements(int64_t bi, int64_t bj) const {
  const int64_t r = std::min(block.rows, rows - bi * block.rows), c = std::min(block.cols, cols - bj * block.cols);
  return std::max<int64_t>(r, 0) * std::max<int64_t>(c, 0);
}

namespace {

float sqnrDb(double signal, double noise) {
  if (signal == 0) return std::numeric_limits<float>::quiet_NaN();
  if (noise == 0) return std::numeric_limits<float>::infinity();
  return static_cast<float>(10.0 * std::log10(signal / noise));
}

/// sqnrDb in float32 arithmetic for the per-block maps (float32 results either way).
float sqnrDbF(double signal, double noise) {
  if (signal == 0) return std::numeric_limits<float>::quiet_NaN();
  if (noise == 0) return std::numeric_limits<float>::infinity();
  return 10.0f * std::log10(static_cast<float>(signal / noise));
}

} // namespace

QuantizedTensor mergeScaleBlocks(const QuantizedTensor& q, ScaleBlock tile) {
  if (tile.rows < 1 || tile.cols < 1 || q.block.rows < 1 || q.block.cols < 1 || tile.rows % q.block.rows != 0 ||
      tile.cols % q.block.cols != 0)
    throw std::invalid_argument("mergeScaleBlocks: a " + std::to_string(tile.rows) + "x" + std::to_string(tile.cols) +
                                " tile is not a whole number of " + std::to_string(q.block.rows) + "x" +
                                std::to_string(q.block.cols) + " blocks");
  QuantizedTensor t = q;
  t.block = tile;
  const int64_t gr = t.blockRows(), gc = t.blockCols(), qc = q.blockCols();
  const int64_t fr = tile.rows / q.block.rows, fc = tile.cols / q.block.cols;
  const bool quant = q.quant_scales.size() == q.dequant_scales.size() && !q.quant_scales.empty();
  const bool codes = q.scale_codes.size() == q.dequant_scales.size() && !q.scale_codes.empty();
  t.dequant_scales.assign(static_cast<size_t>(gr * gc), 0.0f);
  if (quant) t.quant_scales.assign(t.dequant_scales.size(), 0.0f);
  if (codes) t.scale_codes.assign(t.dequant_scales.size(), 0);
  for (int64_t i = 0; i < gr; ++i)
    for (int64_t j = 0; j < gc; ++j) {
      const size_t first = static_cast<size_t>(i * fr * qc + j * fc), to = static_cast<size_t>(i * gc + j);
      for (int64_t a = i * fr; a < std::min(q.blockRows(), (i + 1) * fr); ++a)
        for (int64_t b = j * fc; b < std::min(qc, (j + 1) * fc); ++b) {
          const size_t k = static_cast<size_t>(a * qc + b);
          const bool same = std::memcmp(&q.dequant_scales[k], &q.dequant_scales[first], sizeof(float)) == 0 &&
                            (!codes || q.scale_codes[k] == q.scale_codes[first]);
          if (!same)
            throw std::invalid_argument("mergeScaleBlocks: the blocks of tile (" + std::to_string(i) + ", " +
                                        std::to_string(j) + ") carry different scales");
        }
      t.dequant_scales[to] = q.dequant_scales[first];
      if (quant) t.quant_scales[to] = q.quant_scales[first];
      if (codes) t.scale_codes[to] = q.scale_codes[first];
    }
  return t;
}

QuantizedTensor cropQuantized(const QuantizedTensor& q, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0 || rows > q.rows || cols > q.cols)
    throw std::invalid_argument("cropQuantized: [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "] is not inside the quantized [" + std::to_string(q.rows) + ", " +
                                std::to_string(q.cols) + "]");
  if (rows == q.rows && cols == q.cols) return q;
  QuantizedTensor t = q;
  t.rows = rows;
  t.cols = cols;
  t.codes.resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i) std::copy_n(q.codes.begin() + i * q.cols, cols, t.codes.begin() + i * cols);
  const int64_t gr = t.blockRows(), gc = t.blockCols(), qc = q.blockCols();
  auto cropGrid = [&](const auto& from, auto& to) {
    if (from.size() != static_cast<size_t>(q.blockRows() * qc)) return;
    to.resize(static_cast<size_t>(gr * gc));
    for (int64_t i = 0; i < gr; ++i) std::copy_n(from.begin() + i * qc, gc, to.begin() + i * gc);
  };
  cropGrid(q.dequant_scales, t.dequant_scales);
  cropGrid(q.quant_scales, t.quant_scales);
  cropGrid(q.scale_codes, t.scale_codes);
  return t;
}

std::vector<float> cropMatrix(const float* x, int64_t x_rows, int64_t x_cols, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0 || rows > x_rows || cols > x_cols)
    throw std::invalid_argument("cropMatrix: [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "] is not inside [" + std::to_string(x_rows) + ", " + std::to_string(x_cols) + "]");
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i) std::copy_n(x + i * x_cols, cols, out.begin() + i * cols);
  return out;
}

namespace {

/// What one block's elements add up to.
struct BlockAcc {
  float amax = 0;                                    // max |x| (NaN ignored, Inf included)
  float fmax = 0;                                    // max finite |x|
  float mn = std::numeric_limits<float>::infinity(); // min non-zero finite |x|
  int64_t und = 0, sat = 0, nz = 0;
  double sig = 0, err = 0;
};

/// The smallest float T ≥ 0 with pred(T) true, for a predicate that is monotone in |x| (false
/// below T, true from T on), searched from the guess t; +Inf when no finite value satisfies it.
template <class Pred> float threshold(float t, Pred pred) {
  const float inf = std::numeric_limits<float>::infinity();
  if (!(t >= 0) || !std::isfinite(t)) t = std::numeric_limits<float>::max();
  if (!pred(std::numeric_limits<float>::max())) return inf;
  while (t > 0 && pred(std::nextafter(t, 0.0f))) t = std::nextafter(t, 0.0f);
  while (!pred(t)) t = std::nextafter(t, inf);
  return t;
}

/// One row's part of a block, summed on its own (the fast path's partials).
struct RowPart {
  float amax = 0;                                    // max |x| over the part
  float mn = std::numeric_limits<float>::infinity(); // min non-zero |x|
  int64_t und = 0, sat = 0, nz = 0;
  double sig = 0, err = 0; // Σ x², Σ (x̂ − x)², j ascending from +0
  bool nonfinite = false;  // an Inf or NaN: the row's part takes the general rule instead
};

constexpr int64_t kStatsRows = 4;

/// The element-wise part of a row's fast-path partials over w ≤ kStatsChunk elements: the
/// float64 squares and squared errors the row's sums add, into sq / er, and the order-free
/// maxima, minima and counts into P (accumulated across chunks).
constexpr int64_t kStatsChunk = 256;

void rowElements(const float* x, const uint8_t* codes, int64_t w, const float* table, double fac, float t_sat,
                 double* sq, double* er, RowPart& P) {
  for (int64_t j = 0; j < w; ++j) {
    const float v = x[j];
    const float a = std::fabs(v);
    P.nonfinite |= !(a <= std::numeric_limits<float>::max());
    P.amax = a > P.amax ? a : P.amax;
    const float t = table[codes[j]];
    const double e = static_cast<double>(t) * fac - static_cast<double>(v);
    sq[j] = static_cast<double>(v) * static_cast<double>(v);
    er[j] = e * e;
    const bool nzb = v != 0;
    P.nz += nzb;
    P.mn = nzb && a < P.mn ? a : P.mn;
    P.und += nzb & (t == 0.0f);
    P.sat += a >= t_sat;
  }
}

#if defined(__GNUC__) && defined(__x86_64__)
/// rowElements eight elements at a time (AVX2, no FMA: every float64 operation rounds on its
/// own, as in the scalar loop). The maxima and minima are only used when the row is finite, where
/// max / min are exact whatever the order.
__attribute__((target("avx2,popcnt"))) void rowElementsAvx2(const float* x, const uint8_t* codes, int64_t w,
                                                            const float* table, double fac, float t_sat, double* sq,
                                                            double* er, RowPart& P) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 fmax = _mm256_set1_ps(std::numeric_limits<float>::max());
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 zero = _mm256_setzero_ps(), sat_from = _mm256_set1_ps(t_sat);
  const __m256d facd = _mm256_set1_pd(fac);
  __m256 amax = _mm256_set1_ps(P.amax), mn = _mm256_set1_ps(P.mn);
  int nonfinite = 0;
  int64_t nz = 0, und = 0, sat = 0;
  int64_t j = 0;
  for (; j + 8 <= w; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    const __m256 a = _mm256_and_ps(v, abs_mask);
    nonfinite |= _mm256_movemask_ps(_mm256_cmp_ps(a, fmax, _CMP_NLE_UQ)); // !(a ≤ max): Inf, NaN
    amax = _mm256_max_ps(a, amax);
    const uint8_t* c = codes + j;
    const __m256 t = _mm256_setr_ps(table[c[0]], table[c[1]], table[c[2]], table[c[3]], table[c[4]], table[c[5]],
                                    table[c[6]], table[c[7]]);
    for (int h = 0; h < 2; ++h) {
      const __m256d vd = _mm256_cvtps_pd(h ? _mm256_extractf128_ps(v, 1) : _mm256_castps256_ps128(v));
      const __m256d td = _mm256_cvtps_pd(h ? _mm256_extractf128_ps(t, 1) : _mm256_castps256_ps128(t));
      const __m256d e = _mm256_sub_pd(_mm256_mul_pd(td, facd), vd);
      _mm256_storeu_pd(sq + j + 4 * h, _mm256_mul_pd(vd, vd));
      _mm256_storeu_pd(er + j + 4 * h, _mm256_mul_pd(e, e));
    }
    const __m256 nzm = _mm256_cmp_ps(v, zero, _CMP_NEQ_UQ);
    const int nzb = _mm256_movemask_ps(nzm);
    nz += __builtin_popcount(static_cast<unsigned>(nzb));
    mn = _mm256_min_ps(_mm256_blendv_ps(inf, a, nzm), mn);
    und += __builtin_popcount(static_cast<unsigned>(nzb & _mm256_movemask_ps(_mm256_cmp_ps(t, zero, _CMP_EQ_OQ))));
    sat += __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(a, sat_from, _CMP_GE_OQ))));
  }
  alignas(32) float am[8], mm[8];
  _mm256_store_ps(am, amax);
  _mm256_store_ps(mm, mn);
  for (int l = 0; l < 8; ++l) {
    P.amax = am[l] > P.amax ? am[l] : P.amax;
    P.mn = mm[l] < P.mn ? mm[l] : P.mn;
  }
  P.nonfinite = P.nonfinite || nonfinite != 0;
  P.nz += nz;
  P.und += und;
  P.sat += sat;
  if (j < w) rowElements(x + j, codes + j, w - j, table, fac, t_sat, sq + j, er + j, P);
}
#endif

/// The fast-path partials of R rows at once: x and codes point at the first row's first element
/// of the block, ld apart; w elements per row. Chunk by chunk, each row's elements are formed
/// (rowElements, vectorised at CPU level avx2 and above), then the R rows' two sums go on, j
/// ascending, their additions interleaved: every row's sums keep their own order; the rows only
/// share the loop.
template <int R>
void sumRowPartsN(const float* x, const uint8_t* codes, int64_t ld, int64_t w, const float* table, double fac,
                  float t_sat, RowPart* out) {
#if defined(__GNUC__) && defined(__x86_64__)
  static const bool avx2 = cpuLevel() != CpuLevel::Baseline;
#else
  constexpr bool avx2 = false;
#endif
  double sq[R][kStatsChunk], er[R][kStatsChunk];
  double sig[R], err[R];
  for (int r = 0; r < R; ++r) {
    out[r] = RowPart{};
    sig[r] = err[r] = 0;
  }
  for (int64_t j0 = 0; j0 < w; j0 += kStatsChunk) {
    const int64_t n = std::min(kStatsChunk, w - j0);
    for (int r = 0; r < R; ++r) {
#if defined(__GNUC__) && defined(__x86_64__)
      if (avx2) {
        rowElementsAvx2(x + r * ld + j0, codes + r * ld + j0, n, table, fac, t_sat, sq[r], er[r], out[r]);
        continue;
      }
#endif
      rowElements(x + r * ld + j0, codes + r * ld + j0, n, table, fac, t_sat, sq[r], er[r], out[r]);
    }
    for (int64_t j = 0; j < n; ++j)
      for (int r = 0; r < R; ++r) {
        sig[r] += sq[r][j];
        err[r] += er[r][j];
      }
  }
  for (int r = 0; r < R; ++r) {
    out[r].sig = sig[r];
    out[r].err = err[r];
  }
}

void sumRowParts(const float* x, const uint8_t* codes, int64_t ld, int64_t rows, int64_t w, const float* table,
                 double fac, float t_sat, RowPart* out) {
  switch (rows) {
  case 4:
    return sumRowPartsN<4>(x, codes, ld, w, table, fac, t_sat, out);
  case 3:
    return sumRowPartsN<3>(x, codes, ld, w, table, fac, t_sat, out);
  case 2:
    return sumRowPartsN<2>(x, codes, ld, w, table, fac, t_sat, out);
  default:
    return sumRowPartsN<1>(x, codes, ld, w, table, fac, t_sat, out);
  }
}

} // namespace

BlockStatsSummary computeBlockStats(const float* x, const QuantizedTensor& q, BlockStatsMap& m,
                                    BlockStatsDetail detail) {
  if (!q.format) throw std::invalid_argument("block stats: the quantized tensor has no format");
  const int64_t n = q.rows * q.cols;
  if (q.rows < 0 || q.cols < 0 || static_cast<int64_t>(q.codes.size()) != n || (n > 0 && !x))
    throw std::invalid_argument("block stats: " + std::to_string(q.codes.size()) + " codes for a " +
                                std::to_string(q.rows) + "x" + std::to_string(q.cols) + " tensor");
  if (n > 0 && (q.block.rows < 1 || q.block.cols < 1 ||
                static_cast<int64_t>(q.dequant_scales.size()) != q.blockRows() * q.blockCols()))
    throw std::invalid_argument("block stats: the scale count does not match the block grid");
  const bool has_codes = !q.scale_codes.empty();
  if (has_codes && q.scale_codes.size() != q.dequant_scales.size())
    throw std::invalid_argument("block stats: the scale code count does not match the block grid");
  const bool full = detail == BlockStatsDetail::Full;

  m.rows = q.rows;
  m.cols = q.cols;
  m.block = q.block;
  m.grid_rows = n > 0 ? q.blockRows() : 0;
  m.grid_cols = n > 0 ? q.blockCols() : 0;
  const size_t nb = static_cast<size_t>(m.grid_rows * m.grid_cols);
  if (has_codes)
    m.scale_code.assign(q.scale_codes.begin(), q.scale_codes.end());
  else
    m.scale_code.clear();

  const Format& f = *q.format;
  const float* table = f.decodeTable().data();
  const bool two_level = q.tensor_scale.kind != TensorScale::Kind::None;
  const bool multiply = !two_level && q.scale_op == Format::ScaleOp::Multiply &&
                        q.quant_scales.size() == q.dequant_scales.size() && !q.quant_scales.empty();
  const float limit_f = f.rneFiniteLimitF32();
  const double limit_d = f.rneFiniteLimit();
  // Per block: the effective factor, and the magnitude from which a finite element saturates —
  // the saturation rule (x·quant, x/dequant in float32, or double(x)/factor against the double
  // limit) is monotone in |x|, so it is one threshold per block.
  m.scale.resize(nb);
  std::vector<float> sat_from(nb);
  std::vector<uint8_t> fast(nb);
  for (size_t b = 0; b < nb; ++b) {
    const float sd = q.dequant_scales[b];
    m.scale[b] = two_level ? q.tensor_scale.blockFactor(sd) : sd;
    const float fac = m.scale[b];
    fast[b] =
        fac > 0 && std::isfinite(fac) && (!multiply || (q.quant_scales[b] > 0 && std::isfinite(q.quant_scales[b])));
    if (!fast[b]) continue;
    if (two_level)
      sat_from[b] = threshold(static_cast<float>(limit_d * fac),
                              [&](float a) { return static_cast<double>(a) / static_cast<double>(fac) > limit_d; });
    else if (multiply)
      sat_from[b] = threshold(limit_f / q.quant_scales[b], [&](float a) { return a * q.quant_scales[b] > limit_f; });
    else
      sat_from[b] = threshold(limit_f * sd, [&](float a) { return a / sd > limit_f; });
  }

  std::vector<BlockAcc> acc(nb);
  // The general rule, element by element (non-finite inputs, zero / NaN / Inf scales), for row i's
  // part of block b.
  auto generalRow = [&](int64_t i, int64_t j0, int64_t j1, size_t b) {
    const float* xr = x + i * q.cols;
    const uint8_t* cr = q.codes.data() + i * q.cols;
    const double fac = static_cast<double>(m.scale[b]);
    BlockAcc& A = acc[b];
    const float qs = multiply ? q.quant_scales[b] : 0.0f, dq = q.dequant_scales[b];
    for (int64_t j = j0; j < j1; ++j) {
      const float v = xr[j];
      const float a = std::fabs(v);
      A.amax = a > A.amax ? a : A.amax; // NaN ignored
      if (!std::isfinite(v)) continue;
      A.fmax = a > A.fmax ? a : A.fmax;
      const double xh = static_cast<double>(table[cr[j]]) * fac;
      const double e = xh - static_cast<double>(v);
      A.sig += static_cast<double>(v) * static_cast<double>(v);
      A.err += e * e;
      if (v == 0) continue;
      ++A.nz;
      A.mn = a < A.mn ? a : A.mn;
      if (table[cr[j]] == 0.0f) ++A.und;
      if (two_level) {
        if (std::fabs(static_cast<double>(v) / fac) > limit_d) ++A.sat;
      } else {
        const float y = multiply ? v * qs : v / dq;
        if (std::fabs(y) > limit_f) ++A.sat;
      }
    }
  };
  // Rows go in groups of up to kStatsRows inside one block row. In a block with a usable scale
  // (every element finite being the common case: no branch per element), each row's part is summed
  // on its own — its signal and error sums from 0, j ascending — and the rows' sums are then added
  // to the block's in row order. The groups only interleave the rows' independent sums (the
  // sequential float64 additions are latency-bound one row at a time); no sum changes order.
  RowPart parts[kStatsRows];
  for (int64_t i0 = 0; i0 < q.rows;) {
    const int64_t bi = i0 / q.block.rows;
    const int64_t rows = std::min({kStatsRows, q.rows - i0, (bi + 1) * q.block.rows - i0});
    for (int64_t bj = 0; bj < m.grid_cols; ++bj) {
      const size_t b = static_cast<size_t>(bi * m.grid_cols + bj);
      const int64_t j0 = bj * q.block.cols, j1 = std::min(q.cols, j0 + q.block.cols);
      if (!fast[b]) {
        for (int64_t r = 0; r < rows; ++r) generalRow(i0 + r, j0, j1, b);
        continue;
      }
      sumRowParts(x + i0 * q.cols + j0, q.codes.data() + i0 * q.cols + j0, q.cols, rows, j1 - j0, table,
                  static_cast<double>(m.scale[b]), sat_from[b], parts);
      BlockAcc& A = acc[b];
      for (int64_t r = 0; r < rows; ++r) {
        const RowPart& P = parts[size_t(r)];
        if (P.nonfinite) {
          generalRow(i0 + r, j0, j1, b);
          continue;
        }
        A.amax = P.amax > A.amax ? P.amax : A.amax;
        A.fmax = P.amax > A.fmax ? P.amax : A.fmax; // the row is finite: its max is a finite max
        A.mn = P.mn < A.mn ? P.mn : A.mn;
        A.und += P.und;
        A.sat += P.sat;
        A.nz += P.nz;
        A.sig += P.sig;
        A.err += P.err;
      }
    }
    i0 += rows;
  }

  m.amax.resize(nb);
  m.min_nonzero.resize(nb);
  m.underflow.resize(nb);
  m.saturated.resize(nb);
  if (full) {
    m.dynamic_range.resize(nb);
    m.sqnr_db.resize(nb);
  } else {
    m.dynamic_range.clear();
    m.sqnr_db.clear();
  }
  BlockStatsSummary s;
  s.blocks = static_cast<int64_t>(nb);
  s.elements = n;
  double sum = 0, sum2 = 0, tsig = 0, tnoise = 0;
  int64_t scaled = 0, und_blocks = 0, sat_blocks = 0;
  float lmin = std::numeric_limits<float>::infinity(), lmax = -lmin;
  double ratio_max = 1; // max over blocks of max / min non-zero
  float last_scale = std::numeric_limits<float>::quiet_NaN();
  double last_log = 0;
  for (size_t b = 0; b < nb; ++b) {
    const BlockAcc& A = acc[b];
    m.amax[b] = A.amax;
    m.min_nonzero[b] = A.nz > 0 ? A.mn : 0.0f;
    m.underflow[b] = A.und;
    m.saturated[b] = A.sat;
    const double ratio = A.nz > 0 ? static_cast<double>(A.fmax) / static_cast<double>(A.mn) : 1.0;
    ratio_max = std::max(ratio_max, ratio);
    if (full) {
      m.dynamic_range[b] = A.nz > 0 ? std::log2(static_cast<float>(ratio)) : 0.0f;
      m.sqnr_db[b] = sqnrDbF(A.sig, A.err);
    }
    s.nonzero += A.nz;
    tsig += A.sig;
    tnoise += A.err;
    s.underflow += A.und;
    s.saturated += A.sat;
    und_blocks += A.und > 0;
    sat_blocks += A.sat > 0;
    const float sc = m.scale[b];
    if (A.nz > 0 && sc > 0 && std::isfinite(sc)) { // an all-zero block's scale scales nothing
      if (!(sc == last_scale)) {                   // neighbouring blocks often share a scale
        last_scale = sc;
        last_log = std::log2(static_cast<double>(sc));
      }
      sum += last_log;
      sum2 += last_log * last_log;
      lmin = std::min(lmin, static_cast<float>(last_log));
      lmax = std::max(lmax, static_cast<float>(last_log));
      ++scaled;
    }
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (scaled > 0) {
    const double mean = sum / static_cast<double>(scaled);
    s.log2_scale_min = lmin;
    s.log2_scale_max = lmax;
    s.log2_scale_mean = static_cast<float>(mean);
    s.log2_scale_std = static_cast<float>(std::sqrt(std::max(0.0, sum2 / static_cast<double>(scaled) - mean * mean)));
  } else {
    s.log2_scale_min = s.log2_scale_max = s.log2_scale_mean = s.log2_scale_std = nan;
  }
  s.max_dynamic_range = static_cast<float>(std::log2(ratio_max));
  s.underflow_block_share = nb ? static_cast<float>(double(und_blocks) / double(nb)) : 0.0f;
  s.saturation_block_share = nb ? static_cast<float>(double(sat_blocks) / double(nb)) : 0.0f;
  s.underflow_fraction = s.nonzero ? static_cast<float>(double(s.underflow) / double(s.nonzero)) : 0.0f;
  s.saturation_fraction = n ? static_cast<float>(double(s.saturated) / double(n)) : 0.0f;
  s.sqnr_db = sqnrDb(tsig, tnoise);
  return s;
}

BlockErrorAccumulator::BlockErrorAccumulator(int64_t rows, int64_t cols, ScaleBlock block)
    : rows_(rows), cols_(cols), block_(block) {
  if (block.rows < 1 || block.cols < 1 || rows < 0 || cols < 0)
    throw std::invalid_argument("block error: a " + std::to_string(block.rows) + "x" + std::to_string(block.cols) +
                                " block over a " + std::to_string(rows) + "x" + std::to_string(cols) + " tensor");
  grid_rows_ = (rows + block.rows - 1) / block.rows;
  grid_cols_ = (cols + block.cols - 1) / block.cols;
  const size_t n = static_cast<size_t>(grid_rows_ * grid_cols_);
  sig_.assign(n, 0.0);
  err_.assign(n, 0.0);
  max_rel_.assign(n, 0.0);
  nonfinite_.assign(n, 0);
}

void BlockErrorAccumulator::addRows(int64_t r0, int64_t nr, const double* x, const double* xq) {
  if (r0 < 0 || nr < 0 || r0 + nr > rows_)
    throw std::invalid_argument("block error: rows " + std::to_string(r0) + " + " + std::to_string(nr) +
                                " outside a tensor of " + std::to_string(rows_));
  for (int64_t i = 0; i < nr; ++i) {
    const int64_t g0 = ((r0 + i) / block_.rows) * grid_cols_;
    const double* xr = x + i * cols_;
    const double* qr = xq + i * cols_;
    for (int64_t j = 0; j < cols_; ++j) {
      const size_t g = static_cast<size_t>(g0 + j / block_.cols);
      const double v = xr[j], h = qr[j];
      if (!std::isfinite(v) || !std::isfinite(h)) {
        ++nonfinite_[g];
        continue;
      }
      const double d = h - v;
      sig_[g] += v * v;
      err_[g] += d * d;
      if (v != 0) max_rel_[g] = std::max(max_rel_[g], std::fabs(d) / std::fabs(v));
    }
  }
}

double BlockErrorAccumulator::sqnrDb(size_t g) const {
  if (sig_[g] == 0) return std::numeric_limits<double>::quiet_NaN();
  if (err_[g] == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(sig_[g] / err_[g]);
}

} // namespace fp8lab

// FP8 Lab — per-block statistics (see block_stats.h).
#include "metrics/block_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

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

} // namespace

BlockStatsSummary computeBlockStats(const float* x, const QuantizedTensor& q, BlockStatsMap& m) {
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

  m.rows = q.rows;
  m.cols = q.cols;
  m.block = q.block;
  m.grid_rows = n > 0 ? q.blockRows() : 0;
  m.grid_cols = n > 0 ? q.blockCols() : 0;
  const size_t nb = static_cast<size_t>(m.grid_rows * m.grid_cols);
  m.scale.resize(nb);
  if (has_codes)
    m.scale_code.assign(q.scale_codes.begin(), q.scale_codes.end());
  else
    m.scale_code.clear();
  m.amax.assign(nb, 0.0f);
  m.min_nonzero.assign(nb, std::numeric_limits<float>::infinity());
  m.underflow.assign(nb, 0);
  m.saturated.assign(nb, 0);
  m.dynamic_range.resize(nb);
  m.sqnr_db.resize(nb);
  std::vector<double> signal(nb, 0.0), noise(nb, 0.0);

  const Format& f = *q.format;
  const std::vector<float>& table = f.decodeTable();
  const bool two_level = q.tensor_scale.kind != TensorScale::Kind::None;
  const bool multiply = !two_level && q.scale_op == Format::ScaleOp::Multiply &&
                        q.quant_scales.size() == q.dequant_scales.size() && !q.quant_scales.empty();
  const float limit_f = f.rneFiniteLimitF32();
  const double limit_d = f.rneFiniteLimit();
  std::vector<double> factor(nb);
  for (size_t b = 0; b < nb; ++b) {
    const float s = q.dequant_scales[b];
    m.scale[b] = two_level ? q.tensor_scale.blockFactor(s) : s;
    factor[b] = static_cast<double>(m.scale[b]);
  }
  int64_t nonzero = 0;
  for (int64_t i = 0; i < q.rows; ++i) {
    const int64_t bi = i / q.block.rows;
    const float* xr = x + i * q.cols;
    const uint8_t* cr = q.codes.data() + i * q.cols;
    for (int64_t bj = 0; bj < m.grid_cols; ++bj) {
      const size_t b = static_cast<size_t>(bi * m.grid_cols + bj);
      const int64_t j0 = bj * q.block.cols, j1 = std::min(q.cols, j0 + q.block.cols);
      const double fac = factor[b];
      const float qs = multiply ? q.quant_scales[b] : 0.0f, dq = q.dequant_scales[b];
      float amax = m.amax[b], mn = m.min_nonzero[b];
      int64_t und = 0, sat = 0, nz = 0;
      double sig = 0, err = 0;
      for (int64_t j = j0; j < j1; ++j) {
        const float v = xr[j];
        const float a = std::fabs(v);
        amax = a > amax ? a : amax; // NaN ignored
        if (!std::isfinite(v)) continue;
        const double xh = static_cast<double>(table[cr[j]]) * fac;
        const double e = xh - static_cast<double>(v);
        sig += static_cast<double>(v) * static_cast<double>(v);
        err += e * e;
        if (v == 0) continue;
        ++nz;
        mn = a < mn ? a : mn;
        if (table[cr[j]] == 0.0f) ++und;
        if (two_level) {
          if (std::fabs(static_cast<double>(v) / fac) > limit_d) ++sat;
        } else {
          const float y = multiply ? v * qs : v / dq;
          if (std::fabs(y) > limit_f) ++sat;
        }
      }
      m.amax[b] = amax;
      m.min_nonzero[b] = mn;
      m.underflow[b] += und;
      m.saturated[b] += sat;
      signal[b] += sig;
      noise[b] += err;
      nonzero += nz;
    }
  }

  BlockStatsSummary s;
  s.blocks = static_cast<int64_t>(nb);
  s.elements = n;
  s.nonzero = nonzero;
  double sum = 0, sum2 = 0, tsig = 0, tnoise = 0;
  int64_t scaled = 0, und_blocks = 0, sat_blocks = 0;
  float lmin = std::numeric_limits<float>::infinity(), lmax = -lmin, dr_max = 0;
  for (size_t b = 0; b < nb; ++b) {
    if (!std::isfinite(m.min_nonzero[b])) m.min_nonzero[b] = 0;
    // the block's largest finite magnitude bounds the range (amax may be Inf)
    m.dynamic_range[b] = 0;
    if (m.min_nonzero[b] > 0) {
      float fmax = m.amax[b];
      if (!std::isfinite(fmax)) { // recompute the largest finite |x| of this block
        fmax = 0;
        const int64_t bi = static_cast<int64_t>(b) / m.grid_cols, bj = static_cast<int64_t>(b) % m.grid_cols;
        for (int64_t i = bi * q.block.rows; i < std::min(q.rows, (bi + 1) * q.block.rows); ++i)
          for (int64_t j = bj * q.block.cols; j < std::min(q.cols, (bj + 1) * q.block.cols); ++j) {
            const float a = std::fabs(x[i * q.cols + j]);
            if (std::isfinite(a)) fmax = std::max(fmax, a);
          }
      }
      m.dynamic_range[b] = static_cast<float>(std::log2(static_cast<double>(fmax) / m.min_nonzero[b]));
    }
    dr_max = std::max(dr_max, m.dynamic_range[b]);
    m.sqnr_db[b] = sqnrDb(signal[b], noise[b]);
    tsig += signal[b];
    tnoise += noise[b];
    s.underflow += m.underflow[b];
    s.saturated += m.saturated[b];
    und_blocks += m.underflow[b] > 0;
    sat_blocks += m.saturated[b] > 0;
    const float sc = m.scale[b];
    if (sc > 0 && std::isfinite(sc)) {
      const double l = std::log2(static_cast<double>(sc));
      sum += l;
      sum2 += l * l;
      lmin = std::min(lmin, static_cast<float>(l));
      lmax = std::max(lmax, static_cast<float>(l));
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
  s.max_dynamic_range = dr_max;
  s.underflow_block_share = nb ? static_cast<float>(double(und_blocks) / double(nb)) : 0.0f;
  s.saturation_block_share = nb ? static_cast<float>(double(sat_blocks) / double(nb)) : 0.0f;
  s.underflow_fraction = nonzero ? static_cast<float>(double(s.underflow) / double(nonzero)) : 0.0f;
  s.saturation_fraction = n ? static_cast<float>(double(s.saturated) / double(n)) : 0.0f;
  s.sqnr_db = sqnrDb(tsig, tnoise);
  return s;
}

} // namespace fp8lab

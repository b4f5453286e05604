#include "metrics/error_metrics.h"
#include "common/worker_pool.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace fp8lab {

namespace {

struct Partial {
  int64_t count = 0, finite = 0, nan_ref = 0, inf_ref = 0, nan_test = 0, inf_test = 0, zero_ref = 0;
  double max_abs = 0, max_rel = 0, sum_e2 = 0, sum_r2 = 0;
  int64_t max_abs_index = -1, max_rel_index = -1;
};

/// Adds the pairs (ref[i], test[i]), i < n, of flat indices first + i to p, in index order.
template <class R, class T> void accumulatePairs(Partial& p, const R* ref, const T* test, int64_t n, int64_t first) {
  for (int64_t i = 0; i < n; ++i) {
    const double r = static_cast<double>(ref[i]), t = static_cast<double>(test[i]);
    ++p.count;
    const bool rf = std::isfinite(r), tf = std::isfinite(t);
    if (!rf) (std::isnan(r) ? p.nan_ref : p.inf_ref)++;
    if (!tf) (std::isnan(t) ? p.nan_test : p.inf_test)++;
    if (!rf || !tf) continue;
    ++p.finite;
    const double e = std::fabs(t - r);
    p.sum_e2 += e * e;
    p.sum_r2 += r * r;
    if (p.max_abs_index < 0 || e > p.max_abs) {
      p.max_abs = e;
      p.max_abs_index = first + i;
    }
    if (r == 0) {
      ++p.zero_ref;
    } else {
      const double rel = e / std::fabs(r);
      if (p.max_rel_index < 0 || rel > p.max_rel) {
        p.max_rel = rel;
        p.max_rel_index = first + i;
      }
    }
  }
}

constexpr int64_t kCompareChunk = 1 << 16;

ErrorMetrics combine(const std::vector<Partial>& parts);

/// The chunked comparison: fixed chunks of 65536 elements, each summed in index order by
/// `chunk(p, i0, i1)`, the partial sums combined in chunk order — the same result for any
/// thread count.
template <class Fn> ErrorMetrics compareChunked(int64_t n, int threads, Fn chunk) {
  const int64_t jobs = (n + kCompareChunk - 1) / kCompareChunk;
  std::vector<Partial> parts(static_cast<size_t>(std::max<int64_t>(jobs, 0)));
  parallelJobs(jobs, threads, {}, "", 0, 0, [&](int64_t j) {
    Partial p;
    chunk(p, j * kCompareChunk, std::min(n, (j + 1) * kCompareChunk));
    parts[static_cast<size_t>(j)] = p;
  });
  return combine(parts);
}

template <class R, class T> ErrorMetrics compareImpl(const R* ref, const T* test, int64_t n, int threads) {
  return compareChunked(
      n, threads, [&](Partial& p, int64_t i0, int64_t i1) { accumulatePairs(p, ref + i0, test + i0, i1 - i0, i0); });
}

ErrorMetrics combine(const std::vector<Partial>& parts) {
  Partial s;
  for (const Partial& p : parts) {
    s.count += p.count;
    s.finite += p.finite;
    s.nan_ref += p.nan_ref;
    s.inf_ref += p.inf_ref;
    s.nan_test += p.nan_test;
    s.inf_test += p.inf_test;
    s.zero_ref += p.zero_ref;
    s.sum_e2 += p.sum_e2;
    s.sum_r2 += p.sum_r2;
    if (p.max_abs_index >= 0 && (s.max_abs_index < 0 || p.max_abs > s.max_abs)) {
      s.max_abs = p.max_abs;
      s.max_abs_index = p.max_abs_index;
    }
    if (p.max_rel_index >= 0 && (s.max_rel_index < 0 || p.max_rel > s.max_rel)) {
      s.max_rel = p.max_rel;
      s.max_rel_index = p.max_rel_index;
    }
  }
  ErrorMetrics m;
  m.count = s.count;
  m.finite_pairs = s.finite;
  m.nan_ref = s.nan_ref;
  m.inf_ref = s.inf_ref;
  m.nan_test = s.nan_test;
  m.inf_test = s.inf_test;
  m.zero_ref = s.zero_ref;
  m.max_abs = s.max_abs;
  m.max_abs_index = s.max_abs_index;
  m.max_rel = s.max_rel;
  m.max_rel_index = s.max_rel_index;
  if (s.finite > 0) {
    m.rmse = std::sqrt(s.sum_e2 / static_cast<double>(s.finite));
    m.ref_rms = std::sqrt(s.sum_r2 / static_cast<double>(s.finite));
  }
  const double inf = std::numeric_limits<double>::infinity();
  m.rel_fro = s.sum_r2 > 0 ? std::sqrt(s.sum_e2 / s.sum_r2) : (s.sum_e2 > 0 ? inf : 0.0);
  m.sqnr_db = s.sum_e2 > 0 ? (s.sum_r2 > 0 ? 10.0 * std::log10(s.sum_r2 / s.sum_e2) : -inf) : inf;
  return m;
}

template <class T>
std::vector<float> mapImpl(const double* ref, const T* test, int64_t n, ErrorMapKind kind, const Format* f,
                           double scale, int threads) {
  if (!(std::isfinite(scale) && scale > 0)) throw std::invalid_argument("error map scale must be finite and > 0");
  std::vector<float> out(static_cast<size_t>(n));
  const int64_t chunk = 1 << 16;
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  parallelJobs((n + chunk - 1) / chunk, threads, {}, "", 0, 0, [&](int64_t j) {
    const int64_t e1 = std::min(n, (j + 1) * chunk);
    for (int64_t i = j * chunk; i < e1; ++i) {
      const double r = ref[i], t = static_cast<double>(test[i]);
      if (!std::isfinite(r) || !std::isfinite(t)) {
        out[static_cast<size_t>(i)] = qnan;
        continue;
      }
      const double e = std::fabs(t - r);
      double v = e;
      if (kind == ErrorMapKind::Rel)
        v = r != 0 ? e / std::fabs(r) : (e == 0 ? 0.0 : std::nan(""));
      else if (kind == ErrorMapKind::Ulp) {
        const double u = f ? f->ulp(r * scale) / scale : ulpFloat32(r);
        v = e / u;
      }
      out[static_cast<size_t>(i)] = static_cast<float>(v);
    }
  });
  return out;
}

} // namespace

ErrorMetrics compareErrors(const double* ref, const double* test, int64_t n, int threads) {
  return compareImpl(ref, test, n, threads);
}
ErrorMetrics compareErrors(const double* ref, const float* test, int64_t n, int threads) {
  return compareImpl(ref, test, n, threads);
}
ErrorMetrics compareErrors(const float* ref, const float* test, int64_t n, int threads) {
  return compareImpl(ref, test, n, threads);
}

namespace {
template <class R> ErrorMetrics compareQuantizedImpl(const R* ref, const QuantizedTensor& q, int threads) {
  const int64_t n = q.rows * q.cols;
  if (!q.format || static_cast<int64_t>(q.codes.size()) != n || (n > 0 && (q.block.rows < 1 || q.block.cols < 1)) ||
      (n > 0 && static_cast<int64_t>(q.dequant_scales.size()) != q.blockRows() * q.blockCols()))
    throw std::invalid_argument("compareQuantized: the quantized tensor's codes or scales do not match its shape");
  const std::vector<float>& table = q.format->decodeTable();
  return compareChunked(n, threads, [&](Partial& p, int64_t i0, int64_t i1) {
    // The chunk dequantized as QuantizedTensor::dequantize does, into a buffer of the chunk.
    thread_local std::vector<float> buf;
    buf.resize(static_cast<size_t>(i1 - i0));
    int64_t i = i0 / q.cols, j = i0 % q.cols;
    for (int64_t e = i0; e < i1;) {
      const int64_t run = std::min(i1 - e, q.cols - j);
      const float* scales = q.dequant_scales.data() + (i / q.block.rows) * q.blockCols();
      for (int64_t c = 0; c < run;) {
        const int64_t bc = (j + c) / q.block.cols, bend = std::min(run, (bc + 1) * q.block.cols - j);
        const float s = scales[bc];
        const double f =
            static_cast<double>(q.tensor_scale.kind == TensorScale::Kind::None ? s : q.tensor_scale.blockFactor(s));
        for (; c < bend; ++c)
          buf[static_cast<size_t>(e - i0 + c)] =
              static_cast<float>(static_cast<double>(table[q.codes[static_cast<size_t>(e + c)]]) * f);
      }
      e += run;
      j = 0;
      ++i;
    }
    accumulatePairs(p, ref + i0, buf.data(), i1 - i0, i0);
  });
}
} // namespace

ErrorMetrics compareQuantized(const float* ref, const QuantizedTensor& q, int threads) {
  return compareQuantizedImpl(ref, q, threads);
}
ErrorMetrics compareQuantized(const double* ref, const QuantizedTensor& q, int threads) {
  return compareQuantizedImpl(ref, q, threads);
}

double ulpFloat32(double x) {
  if (!std::isfinite(x)) return std::nan("");
  const uint64_t u = std::bit_cast<uint64_t>(x);
  const int64_t e = static_cast<int64_t>((u >> 52) & 0x7FF) - 1023; // floor(log2 |x|) for normal x
  if (e < -126) return 0x1.0p-149;                                  // float32 subnormal range (and 0)
  return std::bit_cast<double>(static_cast<uint64_t>(e - 23 + 1023) << 52);
}

std::vector<float> errorMap(const double* ref, const float* test, int64_t n, ErrorMapKind kind, const Format* f,
                            double scale, int threads) {
  return mapImpl(ref, test, n, kind, f, scale, threads);
}
std::vector<float> errorMap(const double* ref, const double* test, int64_t n, ErrorMapKind kind, const Format* f,
                            double scale, int threads) {
  return mapImpl(ref, test, n, kind, f, scale, threads);
}

TileMap tileMap(const std::vector<float>& map, int64_t rows, int64_t cols, int64_t tr, int64_t tc) {
  if (rows < 0 || cols < 0 || tr < 1 || tc < 1)
    throw std::invalid_argument("tile map: shape must be non-negative and tile sides ≥ 1");
  if (static_cast<int64_t>(map.size()) < rows * cols)
    throw std::invalid_argument("tile map: the map holds " + std::to_string(map.size()) + " values, the shape needs " +
                                std::to_string(rows * cols));
  TileMap t;
  t.rows = rows;
  t.cols = cols;
  t.tile_rows = tr;
  t.tile_cols = tc;
  t.grid_rows = (rows + tr - 1) / tr;
  t.grid_cols = (cols + tc - 1) / tc;
  const size_t g = static_cast<size_t>(t.grid_rows * t.grid_cols);
  std::vector<double> sum(g, 0.0);
  std::vector<int64_t> cnt(g, 0);
  t.max.assign(g, -std::numeric_limits<float>::infinity());
  t.nan_count.assign(g, 0);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t gr = i / tr;
    const float* row = map.data() + i * cols;
    for (int64_t gc = 0; gc < t.grid_cols; ++gc) {
      const size_t k = static_cast<size_t>(gr * t.grid_cols + gc);
      const int64_t j1 = std::min(cols, (gc + 1) * tc);
      double s = 0;
      int64_t c = 0, nans = 0;
      float mx = t.max[k];
      for (int64_t j = gc * tc; j < j1; ++j) {
        const float v = row[j];
        const bool nan = v != v;
        nans += nan;
        s += nan ? 0.0 : static_cast<double>(v);
        c += !nan;
        mx = (!nan && v > mx) ? v : mx;
      }
      sum[k] += s;
      cnt[k] += c;
      t.nan_count[k] += nans;
      t.max[k] = mx;
    }
  }
  t.mean.resize(g);
  for (size_t k = 0; k < g; ++k) {
    if (cnt[k] == 0) {
      t.mean[k] = t.max[k] = std::numeric_limits<float>::quiet_NaN();
    } else {
      t.mean[k] = static_cast<float>(sum[k] / static_cast<double>(cnt[k]));
    }
  }
  return t;
}

} // namespace fp8lab

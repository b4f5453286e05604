// FP8 Lab — the tensor-core MMA paths that are not one fused sum over decoded codes with the scales
// outside (gemm_kernels.cpp's FastAccum kernel): the hardware block-scaled MMA (scales inside the
// fused sum: tcgen05.mma kind::mxf8f6f4 and kind::mxf4nvf4) and AMD CDNA3's FP8 MFMA. Both follow
// MMA-Sim's instruction models (microsoft/MMA-Sim mmasim/simulator/arithmetic.py
// nv_fused_dot_add / nv_fused_dot_add_with_block_scale / amd_fused_dot_rd_add, simulator/amd.py
// mfma); no measured data exist here for them (docs/gemm.md). One output element at a time, in
// exact integer or double arithmetic: every shift, cut and rounding is the model's.
#include "gemm/gemm_internal.h"

#include "formats/format.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace fp8lab::gemm_detail {

namespace {

/// floor(log2 |x|) clamped at emin (x ≠ 0, finite).
int clampedExponent(double x, int emin) {
  return std::max(std::ilogb(x), emin);
}

/// The block scale of operand t at (row, col) without a two-level format's tensor factor.
float blockScaleAt(const QuantizedTensor& t, int64_t row, int64_t col) {
  return t.dequant_scales[static_cast<size_t>((row / t.block.rows) * t.blockCols() + col / t.block.cols)];
}

} // namespace

std::string blockScaledMmaUnsuitable(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt) {
  const MmaRules& r = opt.mma;
  const std::string kind = r.chunk > 1 ? "kind::mxf4nvf4" : "kind::mxf8f6f4";
  for (const auto& [t, name, along_k, other] :
       {std::tuple{&a, "A", a.block.cols, a.block.rows}, std::tuple{&b, "B", b.block.rows, b.block.cols}}) {
    if (t->scale_codes.empty())
      return std::string("the block-scaled MMA (") + kind + ") takes E8M0 or UE4M3 block scales; " + name +
             " has float32 scales (" + t->strategy + "): use an MX or NVFP4 scaling preset";
    if (other != 1)
      return std::string("the block-scaled MMA (") + kind + ") has one scale per row of A and column of B; " + name +
             "'s scale blocks are " + std::to_string(t->block.rows) + "x" + std::to_string(t->block.cols);
    if (along_k < 1 || opt.fast_accum_group % along_k != 0 || along_k % r.chunk != 0)
      return std::string("the block-scaled MMA (") + kind + ", " + std::to_string(opt.fast_accum_group) +
             " elements of K per step, chunks of " + std::to_string(r.chunk) + ") needs scale blocks along K that " +
             "divide the step and are whole chunks; " + name + "'s are " + std::to_string(along_k);
  }
  if (r.chunk > 1 && (a.format->name() != "E2M1" || b.format->name() != "E2M1"))
    return "kind::mxf4nvf4 multiplies E2M1 (FP4) elements; the operands are " + a.format->name() + " and " +
           b.format->name();
  return {};
}

void gemmMmaBlockScaled(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt, const float* c_init,
                        float* c, int threads, const ProgressFn& progress) {
  const std::string why = blockScaledMmaUnsuitable(a, b, opt);
  if (!why.empty()) throw std::invalid_argument(why);
  const int64_t M = a.rows, N = b.cols, K = a.cols;
  const int64_t G = opt.fast_accum_group, chunk = opt.mma.chunk;
  const int fbits = opt.fast_accum_bits - 1, pbits = opt.mma.sum_bits;
  const int emin_a = a.format->minExponent(), emin_b = b.format->minExponent();
  const int emin_sa = a.scaleCodeFormat().minExponent(), emin_sb = b.scaleCodeFormat().minExponent();
  std::vector<float> av(a.codes.size()), bv(b.codes.size());
  a.format->decodeBulk(a.codes.data(), av.data(), av.size());
  b.format->decodeBulk(b.codes.data(), bv.data(), bv.size());
  // The second scale level (NVFP4's tensor factor) multiplies the sum afterwards, as cuBLASLt's alpha.
  const float tensor_factor = gemmTensorFactor(a.tensor_scale, b.tensor_scale);
  struct Term {
    double v;
    int e;
    bool counts;
  };
  parallelJobs(M, threads, progress, "gemm (block-scaled MMA model)", 0.0, 0.95, [&](int64_t i) {
    std::vector<Term> terms;
    for (int64_t j = 0; j < N; ++j) {
      double acc = c_init ? static_cast<double>(c_init[i * N + j]) : 0.0;
      for (int64_t g0 = 0; g0 < K; g0 += G) {
        const int64_t g1 = std::min(K, g0 + G);
        terms.clear();
        for (int64_t k0 = g0; k0 < g1; k0 += chunk) {
          const int64_t k1 = std::min(g1, k0 + chunk);
          const double sa = blockScaleAt(a, i, k0), sb = blockScaleAt(b, k0, j);
          const int es = (std::isfinite(sa) && sa > 0 ? clampedExponent(sa, emin_sa) : 0) +
                         (std::isfinite(sb) && sb > 0 ? clampedExponent(sb, emin_sb) : 0);
          if (chunk == 1) {
            const float x = av[size_t(i * K + k0)], y = bv[size_t(k0 * N + j)];
            const double p = double(x * y); // exact
            const int e = (x != 0 && std::isfinite(x) ? clampedExponent(x, emin_a) : 0) +
                          (y != 0 && std::isfinite(y) ? clampedExponent(y, emin_b) : 0) + es;
            terms.push_back({p * sa * sb, e, p != 0});
          } else {
            double sum = 0; // a chunk of E2M1 products is an exact multiple of 2^-2 below 2^10
            for (int64_t k = k0; k < k1; ++k) sum += double(av[size_t(i * K + k)]) * double(bv[size_t(k * N + j)]);
            terms.push_back({sum * sa * sb, es, true}); // a zero chunk takes part in the maximum
          }
        }
        int emax = std::numeric_limits<int>::min();
        for (const Term& t : terms)
          if (t.counts) emax = std::max(emax, t.e);
        if (acc != 0 && std::isfinite(acc)) emax = std::max(emax, std::max(std::ilogb(acc), -126));
        if (emax == std::numeric_limits<int>::min()) {
          acc = std::isnan(acc) ? acc : 0.0 + acc; // nothing to add
          continue;
        }
        const int q = emax - fbits;
        double s = truncToQuantum(acc, q);
        for (const Term& t : terms) s += truncToQuantum(t.v, q);
        acc = toAccumulator(s, pbits, false);
      }
      const float d = static_cast<float>(acc);
      c[i * N + j] = tensor_factor == 1.0f ? d : tensor_factor * d;
    }
  });
}

namespace {

/// An operand of the CDNA3 model: (−1)^s · m · 2^(e − mb), e = the exponent clamped at emin, m not
/// renormalised; `e_align` is e, or −126 for a zero operand (MMA-Sim's rule).
struct Cdna3Value {
  bool sign = false;
  int64_t m = 0;
  int e = 0, e_align = 0, mb = 0;
  bool nan = false, inf = false;
};

Cdna3Value cdna3Decode(float v, const Format& f) {
  Cdna3Value r;
  r.mb = f.spec().mantissa_bits;
  if (std::isnan(v)) {
    r.nan = true;
    return r;
  }
  if (std::isinf(v)) {
    r.inf = true;
    r.sign = v < 0;
    return r;
  }
  r.sign = std::signbit(v);
  const int emin = f.minExponent();
  if (v == 0) {
    r.e = emin;
    r.e_align = -126;
    return r;
  }
  r.e = std::max(std::ilogb(v), emin);
  r.e_align = r.e;
  r.m = static_cast<int64_t>(std::ldexp(std::fabs(double(v)), r.mb - r.e)); // exact
  return r;
}

/// x >> s with floor for negatives, for any s ≥ 0 (an arithmetic shift; ≥ 63 gives 0 or −1).
int64_t floorShift(int64_t x, int s) {
  if (s <= 0) return x;
  if (s >= 63) return x < 0 ? -1 : 0;
  return x >> s;
}

} // namespace

void gemmMmaCdna3(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt, const float* c_init,
                  float* c, int threads, const ProgressFn& progress) {
  const int64_t M = a.rows, N = b.cols, K = a.cols;
  constexpr int64_t kGroup = 16;
  std::vector<float> av(a.codes.size()), bv(b.codes.size());
  a.format->decodeBulk(a.codes.data(), av.data(), av.size());
  b.format->decodeBulk(b.codes.data(), bv.data(), bv.size());
  std::vector<Cdna3Value> da(av.size()), db(bv.size());
  for (size_t i = 0; i < av.size(); ++i) da[i] = cdna3Decode(av[i], *a.format);
  for (size_t i = 0; i < bv.size(); ++i) db[i] = cdna3Decode(bv[i], *b.format);
  (void)opt;
  parallelJobs(M, threads, progress, "gemm (CDNA3 MFMA model)", 0.0, 0.95, [&](int64_t i) {
    for (int64_t j = 0; j < N; ++j) {
      float acc = c_init ? c_init[i * N + j] : 0.0f;
      for (int64_t g0 = 0; g0 < K; g0 += kGroup) {
        const int64_t g1 = std::min(K, g0 + kGroup);
        // NaN / Inf screening: any NaN, Inf · 0 or +Inf with −Inf gives NaN, else an Inf wins.
        bool nan = std::isnan(acc), pinf = std::isinf(acc) && acc > 0, ninf = std::isinf(acc) && acc < 0;
        for (int64_t k = g0; k < g1; ++k) {
          const Cdna3Value &x = da[size_t(i * K + k)], &y = db[size_t(k * N + j)];
          if (x.nan || y.nan)
            nan = true;
          else if (x.inf || y.inf) {
            if ((!x.inf && x.m == 0) || (!y.inf && y.m == 0))
              nan = true;
            else
              (x.sign != y.sign ? ninf : pinf) = true;
          }
        }
        if (nan || (pinf && ninf)) {
          acc = std::numeric_limits<float>::quiet_NaN();
          continue;
        }
        if (pinf || ninf) {
          acc = pinf ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
          continue;
        }
        // The two halves (even and odd k of the group), each 24 bits below its own largest exponent.
        int64_t half_sum[2] = {0, 0};
        int half_e[2] = {std::numeric_limits<int>::min(), std::numeric_limits<int>::min()};
        for (int h = 0; h < 2; ++h) {
          for (int64_t k = g0 + h; k < g1; k += 2) {
            const Cdna3Value &x = da[size_t(i * K + k)], &y = db[size_t(k * N + j)];
            half_e[h] = std::max(half_e[h], x.e_align + y.e_align);
          }
          if (half_e[h] == std::numeric_limits<int>::min()) continue;
          for (int64_t k = g0 + h; k < g1; k += 2) {
            const Cdna3Value &x = da[size_t(i * K + k)], &y = db[size_t(k * N + j)];
            const int64_t m = x.m * y.m;
            const int sh = (x.e - x.mb + y.e - y.mb) + 24 - half_e[h];
            const int64_t v = sh >= 0 ? (m << std::min(sh, 62)) : (-sh >= 63 ? 0 : m >> -sh); // toward zero
            half_sum[h] += x.sign != y.sign ? -v : v;
          }
        }
        if (half_e[1] == std::numeric_limits<int>::min()) half_e[1] = half_e[0];
        const int me = std::max(half_e[0], half_e[1]);
        int64_t s = floorShift(half_sum[0], me - half_e[0]) + floorShift(half_sum[1], me - half_e[1]);
        const bool c_nonzero = acc != 0;
        const int ec = c_nonzero ? std::max(std::ilogb(acc), -126) : -126;
        const int me2 = std::max(me, ec);
        s = floorShift(s * 128, me2 - me); // 31 fraction bits below me2
        int64_t cs = 0;
        if (c_nonzero && ec >= me2 - 25) {
          // C's significand in units of 2^(ec − 24), floored to units of 2^(me2 − 24)
          const int64_t csig = static_cast<int64_t>(std::ldexp(std::fabs(double(acc)), 24 - ec));
          cs = floorShift(acc < 0 ? -csig : csig, me2 - ec);
        }
        const int64_t t = s + cs * 128; // units of 2^(me2 − 31)
        acc = t == 0 ? 0.0f : static_cast<float>(std::ldexp(static_cast<double>(t), me2 - 31)); // RNE
      }
      c[i * N + j] = acc;
    }
  });
}

} // namespace fp8lab::gemm_detail

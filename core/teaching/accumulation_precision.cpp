// FP8 Lab — accumulation error against K (accumulation_precision.h).
#include "teaching/accumulation_precision.h"

#include "gemm/error_split.h"
#include "scaling/scaling.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fp8lab {

std::vector<SweepAccumulationModel> accumulationModels(int bits, int promotion_interval) {
  if (bits < 2 || bits > kFastAccumMaxBits)
    throw std::invalid_argument("accumulation models: bits must be in 2.." + std::to_string(kFastAccumMaxBits) +
                                ", got " + std::to_string(bits));
  if (promotion_interval < 1) throw std::invalid_argument("accumulation models: promotion interval must be >= 1");
  // The measured Hopper wgmma rules (accumulation_preset.h hopper_fp8) at `bits` − 1 fraction bits.
  GemmOptions fast;
  fast.accumulation = Accumulation::FastAccum;
  fast.fast_accum_bits = bits;
  fast.fast_accum_group = 32;
  fast.promotion_interval = promotion_interval;
  fast.output = OutputType::FP32;
  fast.mma.alignment = MmaAlignment::Operands;
  fast.mma.sum = MmaSum::Fp32;
  fast.mma.sum_bits = std::min(bits - 1, 23);
  fast.mma.sum_rounding = MmaRounding::TowardZero;
  fast.mma.c_entry = MmaCEntry::Accumulator;
  GemmOptions unpromoted = fast;
  unpromoted.fast_accum_promotes = false;
  GemmOptions split = fast;
  split.accumulation = Accumulation::SplitFP32;
  GemmOptions fp32 = fast;
  fp32.accumulation = Accumulation::FP32;
  const std::string b = std::to_string(bits), nc = std::to_string(promotion_interval);
  return {
      {"fast, " + b + " bits, no promotion",
       "Hopper wgmma as measured (hopper_fp8's rules), one accumulator over all of K (cuBLASLt FAST_ACCUM = 1)",
       unpromoted},
      {"fast, " + b + " bits, promoted every " + nc,
       "the same rules, partial sums moved to float32 CUDA cores every N_C (DeepSeek-V3 §3.3.2, DeepGEMM, cuBLAS)",
       fast},
      {"float32 partials, promoted every " + nc, "cuBLAS default split accumulation (SplitFP32)", split},
      {"one float32 sum", "float32 accumulation over all of K, k ascending (FP32)", fp32},
  };
}

AccumulationSweep sweepAccumulationError(const AccumulationSweepConfig& cfg, const ProgressFn& progress) {
  const Format* f = Format::byName(cfg.format);
  if (!f || f->bits() > 8) throw std::invalid_argument("accumulation sweep: unknown format '" + cfg.format + "'");
  auto sc = scalingPreset(cfg.scaling);
  if (!sc) throw std::invalid_argument("accumulation sweep: unknown scaling preset '" + cfg.scaling + "'");
  if (cfg.m < 1 || cfg.n < 1 || cfg.ks.empty())
    throw std::invalid_argument("accumulation sweep: m, n must be >= 1 and ks not empty");
  for (int64_t k : cfg.ks)
    if (k < 1) throw std::invalid_argument("accumulation sweep: every K must be >= 1");
  AccumulationSweep r;
  r.ks = cfg.ks;
  r.models = accumulationModels(cfg.bits, cfg.promotion_interval);
  r.error.assign(r.models.size(), {});
  sc->threads = cfg.threads;
  auto backend = makeCpuGemmBackend();
  double work = 0, done = 0;
  for (int64_t k : cfg.ks) work += double(k);
  for (int64_t k : cfg.ks) {
    reportProgress(progress, done / work, "K = " + std::to_string(k));
    std::vector<float> a = randomMatrix(cfg.m, k, cfg.seed, cfg.operands, 1, cfg.threads);
    std::vector<float> b = randomMatrix(k, cfg.n, cfg.seed, cfg.operands, 2, cfg.threads);
    if (cfg.positive) {
      for (float& v : a) v = std::fabs(v);
      for (float& v : b) v = std::fabs(v);
    }
    const QuantizedTensor qa = quantize(a.data(), cfg.m, k, *f, *sc, Axis::Cols);
    const QuantizedTensor qb = quantize(b.data(), k, cfg.n, *f, *sc, Axis::Rows);
    const std::vector<double> exact = quantizedExactGemm(qa, qb, cfg.threads);
    for (size_t i = 0; i < r.models.size(); ++i) {
      GemmOptions o = r.models[i].options;
      o.threads = cfg.threads;
      const GemmOutput out = backend->run(qa, qb, o);
      r.error[i].push_back(compareErrors(exact.data(), out.d.data(), cfg.m * cfg.n, cfg.threads));
    }
    done += double(k);
  }
  reportProgress(progress, 1.0, "done");
  return r;
}

} // namespace fp8lab

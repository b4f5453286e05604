// FP8 Lab — accumulation precision against K: the error the accumulation alone adds to an FP8
// GEMM (D against the quantized-exact product, so quantization error is left out) for fast
// accumulation without promotion, fast accumulation promoted into float32 every N_C elements of
// K, float32 partial sums promoted every N_C, and one float32 running sum — core/gemm's
// accumulation models on the CPU reference backend.
//
// Source of the setting: DeepSeek-V3 Technical Report (arXiv:2412.19437) §3.3.2: the FP8 GEMM
// accumulation of NVIDIA H800 retains about 14 bits, "in a GEMM with K = 4096 ... the limited
// accumulation precision in Tensor Cores results in a maximum relative error of nearly 2%", fixed
// by promoting partial results to float32 CUDA cores every N_C = 128 elements. The fast models use
// the rules measured on H100 (accumulation_preset.h hopper_fp8: alignment on e(a) + e(b), bits − 1
// fraction bits, group sums truncated to binary32 with as many fraction bits).
#pragma once

#include "common/progress.h"
#include "gemm/gemm.h"
#include "gemm/random_matrix.h"
#include "metrics/error_metrics.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fp8lab {

/// One accumulation model of the sweep.
struct SweepAccumulationModel {
  std::string label;   ///< e.g. "fast, 14 bits, no promotion"
  std::string source;  ///< who accumulates this way
  GemmOptions options; ///< accumulation parameters (FP32 output)
};

/// The four models of the demo for `bits` significant bits of the fast accumulator (2..48) and
/// promotion every `promotion_interval` elements of K (≥ 1): fast without promotion (cuBLASLt
/// CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1 as modelled), fast promoted (DeepGEMM, DeepSeek-V3),
/// SplitFP32 (float32 partials promoted every N_C), FP32 (one float32 sum over K). Aligned groups
/// of 32 products (one Hopper WGMMA, K = 32). Throws std::invalid_argument outside the ranges.
std::vector<SweepAccumulationModel> accumulationModels(int bits, int promotion_interval);

struct AccumulationSweepConfig {
  std::vector<int64_t> ks = {128, 256, 512, 1024, 2048, 4096, 8192, 16384}; ///< each ≥ 1
  int64_t m = 64, n = 64;                                                   ///< output shape, ≥ 1
  std::string format = "E4M3FN";                                            ///< both operands
  std::string scaling = "te_current";                                       ///< current-scaling preset
  /// Operand distribution; Uniform with scale 1 gives signed values, `positive` folds them to
  /// |x| (sums without cancellation, as after a ReLU).
  RandomMatrixOptions operands;
  bool positive = false;
  uint64_t seed = 1; ///< A: stream 1, B: stream 2 of randomMatrix(seed)
  int bits = 14;
  int promotion_interval = 128;
  int threads = 0;
};

/// Per model, per K: D against dequant(A)·dequant(B) in float64 (ErrorMetrics: rel_fro,
/// max_rel, ...).
struct AccumulationSweep {
  std::vector<int64_t> ks;
  std::vector<SweepAccumulationModel> models;
  std::vector<std::vector<ErrorMetrics>> error; ///< [model][k index]
};

/// Runs the sweep on the CPU reference backend. Throws std::invalid_argument for a bad config
/// (unknown format or preset, sizes < 1), Cancelled when progress returns false.
AccumulationSweep sweepAccumulationError(const AccumulationSweepConfig& cfg, const ProgressFn& progress = {});

} // namespace fp8lab

// FP8 Lab — probe inputs that tell accumulation models apart in one run of a kernel.
//
// A kernel developer runs their GEMM once on these operands (FP8 codes, unit scales) and this C
// (D = A·B + C: alpha = 1, beta = 1), saves D, and `fp8lab-cli gemm --observed` fits the models to
// it. The operands are random codes spread over the format's whole exponent range (as the published
// tensor-core validations use), so products of very different sizes meet in every group: the
// alignment rule, the bits kept, the group size, the rounding of the group sums and where C enters
// each change some outputs. K covers several promotion windows of every interval the fit tries.
// The design is checked, not assumed: every candidate model of the fit runs on the probes, and the
// models that still give identical outputs are reported (accumulation presets with the same rules,
// such as hopper_mma_sync's assumed copy of hopper_fp8, cannot be told apart by any input).
#pragma once

#include "gemm/kernel_check.h"
#include "scaling/quantized_tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fp8lab {

struct ProbeOptions {
  std::string format = "E4M3FN"; ///< element format of A and B (E4M3FN or E5M2: the MMA inputs)
  int64_t m = 64, n = 64;        ///< D's shape
  int64_t k = 1024;              ///< ≥ 2 × the largest promotion interval of the fit's grid (512)
  uint64_t seed = 1;
  double zero_share = 0.05; ///< share of zero codes (exact cancellations and empty groups)
  bool check = true;        ///< run every candidate model on the probes and group equal outputs
  int threads = 0;
};

/// The probes and, when checked, how well they separate the fit's candidate models.
struct ProbeVectors {
  QuantizedTensor a, b;   ///< [M,K] and [K,N] codes, per-tensor dequant scale 1
  std::vector<float> c;   ///< [M,N] float32, the C of D = A·B + C
  int64_t candidates = 0; ///< candidate models run (FitGrid defaults with C read)
  int64_t distinct = 0;   ///< distinct outputs among them
  /// Groups of reference models (referenceModels: exact, FP32, split, the presets, the prose model)
  /// whose outputs are identical on the probes, each as "hopper_fp8 = hopper_mma_sync".
  std::vector<std::string> reference_ties;
  std::string summary; ///< "64 x 64 x 1024 E4M3FN probes: 1490 candidate models, 1372 distinct outputs; …"
};

/// Random codes of `opt.format` (uniform over its finite codes, `zero_share` zeros) for A and B,
/// and C of float32 values spread likewise (codes of the format times powers of two), from
/// `opt.seed`. Throws std::invalid_argument for another format, sizes < 1 or k < 32.
ProbeVectors makeProbeVectors(const ProbeOptions& opt, const ProgressFn& progress = {});

/// The GEMM options a kernel's run on the probes must match: alpha = 1, beta = 1, C = probes.c,
/// FP32 output, on top of `base`'s threads.
GemmOptions probeGemmOptions(const ProbeVectors& p, const GemmOptions& base = {});

} // namespace fp8lab

// FP8 Lab — the operands of a GEMM experiment: where A and B come from (random, imported, given
// values, pre-quantized codes and scales as a kernel holds them) and their quantization along K.
// Used by the GEMM run (gemm_run.cpp); internal to core/experiment.
#pragma once

#include "experiment/gemm/gemm_run.h"
#include "experiment/gemm/operand_checks.h"
#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fp8lab {

/// One operand in the precision it came in: float32 (random, F16/BF16/F32 imports) or float64.
struct GemmOperand {
  int64_t rows = 0, cols = 0;
  bool is64 = false;
  std::vector<float> f32;
  std::vector<double> f64;
  std::string origin; ///< "random normal(scale=1)" or the import spec
  std::vector<double> asDouble() const {
    if (is64) return f64;
    return std::vector<double>(f32.begin(), f32.end());
  }
};

/// Refuses an experiment whose buffers (gemmExperimentBytes) cannot fit, before anything is
/// allocated: false with an InvalidArgument issue at `where` naming both sizes. `limit` > 0
/// replaces the memory available now (bytes).
bool fitsInMemory(int64_t m, int64_t k, int64_t n, int64_t limit, const std::string& where, Status* st);

/// Loads operand `name` ("A" [M, K] or "B" [K, N]) from `src`: given values, an imported tensor
/// (transposed when asked) or a seeded random matrix (randomMatrix with `seed` and `stream`, 1 for
/// A and 2 for B). False with an issue naming the config key when the shape or the file is wrong.
bool loadOperand(const OperandSource& src, int64_t rows, int64_t cols, uint64_t seed, uint64_t stream, int threads,
                 const char* name, GemmOperand* op, Status* st);

/// A pre-quantized operand (PreQuantizedSource): reads the codes and scales, checks them against
/// each other and builds the QuantizedTensor; `op` receives the dequantized values in float64
/// (decode(code) · the element's effective dequant factor, exact in double), the run's only
/// "input" for this operand. `key` ("a" / "b") names the config object in errors.
bool loadPreQuantized(const PreQuantizedSource& p, const char* key, QuantizedTensor* q, GemmOperand* op, Status* st,
                      PreQuantizedFindings* findings);

/// Quantizes an operand in the precision it came in with `cfg` along `axis` (A: Axis::Cols,
/// B: Axis::Rows): quantize() of core/scaling.
QuantizedTensor quantizeOperand(const GemmOperand& op, const Format& f, const ScalingConfig& cfg, Axis axis,
                                const ProgressFn& p);

/// NVFP4 quantization of one operand along K (A: Axis::Cols, B: Axis::Rows). quantizeNvfp4 reads
/// float32: float64 imports are rounded to float32 first (RNE), as the systems' NVFP4 kernels take
/// BF16 / FP32 tensors.
QuantizedTensor quantizeNvfp4Operand(const GemmOperand& op, const Nvfp4Config& c, Axis axis);

} // namespace fp8lab

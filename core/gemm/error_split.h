// FP8 Lab — one GEMM experiment with its three results, so the error splits into the part due
// to quantization and the part due to accumulation (and the output cast):
//   ideal            = A·B in double on the unquantized float32 inputs
//   quantized-exact  = dequant(A_q)·dequant(B_q) in double (the Exact model, before any cast)
//   (both followed by the options' epilogue — alpha, beta·C, bias — in double, gemm.h)
//   output           = the chosen backend / accumulation model / output type
//   quantization error = quantized-exact vs ideal; accumulation error = output vs
//   quantized-exact; total error = output vs ideal.
#pragma once

#include "gemm/gemm.h"
#include "metrics/distribution_stats.h"
#include "metrics/error_metrics.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fp8lab {

/// A·B in double for row-major float32 A [m,k], B [k,n]: each product exact in double, k
/// ascending per output, one double rounding per addition. Throws std::invalid_argument for
/// k = 0 or negative shapes, std::runtime_error when the buffers do not fit in memory.
std::vector<double> idealGemm(const float* a, const float* b, int64_t m, int64_t k, int64_t n, int threads = 0,
                              const ProgressFn& progress = {});

/// The same reference for float64 A [m,k], B [k,n] (imported float64 tensors): k ascending per
/// output, one double rounding per multiply and one per addition (no fused multiply-add), rows
/// split over threads with identical bits for any thread count. Same errors as the float32 form.
std::vector<double> idealGemm(const double* a, const double* b, int64_t m, int64_t k, int64_t n, int threads = 0,
                              const ProgressFn& progress = {});

/// dequant(A)·dequant(B) in double: the Exact accumulation model without the output cast
/// (gemm.h) and without an epilogue (applyEpilogue adds it). Validates like GemmBackend::run.
std::vector<double> quantizedExactGemm(const QuantizedTensor& a, const QuantizedTensor& b, int threads = 0,
                                       const ProgressFn& progress = {});

/// Bytes a full GEMM error experiment (core/experiment's run) on inputs of M×K and K×N needs at
/// its peak: 21 B per operand element (float32 input, codes, dequantized and decoded copies, the
/// float64 copy) and 36 B per output element (ideal and quantized-exact in double, D, the error
/// maps, the stored float32 copies). The one estimate the runner, the CLI and the desktop panel
/// use. gemmExperimentMemoryProblem: "" when that
/// fits in the memory available now, else a message naming both sizes. Callers that generate
/// or load the inputs check this first, so a huge request is refused before any allocation.
double gemmExperimentBytes(int64_t m, int64_t n, int64_t k);
std::string gemmExperimentMemoryProblem(int64_t m, int64_t n, int64_t k);

struct GemmExperimentResult {
  int64_t m = 0, n = 0, k = 0;
  std::vector<double> ideal;           ///< [m,n] after the epilogue; empty when no float inputs were given
  std::vector<double> quantized_exact; ///< [m,n] after the epilogue
  GemmOutput output;                   ///< the chosen model's output
  ErrorMetrics quantization;           ///< quantized_exact vs ideal (zeros when no ideal)
  ErrorMetrics accumulation;           ///< output vs quantized_exact (accumulation + output cast)
  ErrorMetrics total;                  ///< output vs ideal (zeros when no ideal)
  OperandStats a_stats, b_stats;       ///< recounted from the float inputs when given, else the quantizer's
  /// FP8 outputs (E4M3FN, E5M2): elements of D that the output cast clips, counted on the
  /// quantized-exact D — |D · scale_D| beyond the format's overflow bound (OCP rule,
  /// Format::rneFiniteLimit), finite D only. −1 for BF16 / FP16 / FP32 outputs (no scale_D).
  int64_t d_saturated = -1;
  double ideal_seconds = 0, exact_seconds = 0;
};

/// Runs the three GEMMs and their metrics. a_float / b_float are the unquantized inputs
/// ([M,K] and [K,N], row-major) or both nullptr (then no ideal and no quantization error).
/// backend nullptr = the CPU reference. Progress: ideal 0–30 %, exact 30–60 %, output 60–95 %.
GemmExperimentResult runGemmExperiment(const float* a_float, const float* b_float, const QuantizedTensor& a,
                                       const QuantizedTensor& b, const GemmOptions& options,
                                       GemmBackend* backend = nullptr, const ProgressFn& progress = {});

} // namespace fp8lab

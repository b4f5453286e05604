// FP8 Lab — the kernel check of a GEMM run: a kernel's output D read from a file (config key
// "observed", `fp8lab-cli gemm --observed`), checked against the CPU reference's models on the run's
// own operands (core/gemm/kernel_check.h), and stored in the run's session group (datasets under
// observed/ and check/, group attributes, metrics: docs/session-format.md, "Kernel check").
#pragma once

#include "gemm/kernel_check.h"
#include "session/session.h"

#include <memory>
#include <string>

namespace fp8lab {

/// What a GEMM config asks of a kernel's output: config key "observed" (the file) and the object
/// "check" (docs/gemm.md, "Check my kernel in CI").
struct KernelCheckConfig {
  /// Import spec of the kernel's D: "d.npy", "d.safetensors:NAME", "d.h5:/PATH"; "" = no check.
  std::string observed;
  std::string reference = "exact"; ///< namedModel() name the verdict compares with
  CheckCriteria criteria;
  bool fit = true;
  FitGrid grid;
  /// The kernel's D given in memory instead of a file (the Python module): float32 / float64 values
  /// [m, n], or uint8 codes of an FP8 output, read by observedOutputFromDataset; `observed` then
  /// names it for messages ("<numpy array>"). Null: read `observed` as a file.
  std::shared_ptr<const Dataset> observed_data;
  bool enabled() const { return !observed.empty() || observed_data != nullptr; }
};

/// Reads the kernel's output D for a GEMM of output type `output` (scale_D `scale_d`) and shape
/// [m, n]:
///   - float32, float16 and bfloat16 files (.npy <f4 / <f2, safetensors F32 / F16 / BF16, HDF5
///     floats) give the values (float64 files are rounded to float32, with a warning counting the
///     values that were not float32 numbers);
///   - one-byte code files (.npy |u1, safetensors U8 / F8_E4M3 / F8_E5M2) are the codes of an FP8
///     output (output e4m3fn / e5m2; an F8_* dtype must name that format): values decode(code) /
///     scale_d, as the CPU reference's output holds them.
/// Errors (InvalidArgument / the importers' codes): a missing or unreadable file, a shape other
/// than [m, n] (the message names both shapes), codes for a non-FP8 output, an F8 dtype of the
/// other format.
Result<ObservedOutput> loadObservedOutput(const std::string& spec, OutputType output, float scale_d, int64_t m,
                                          int64_t n);

/// The kernel's output D from a dataset already in memory, with loadObservedOutput's rules: Float32
/// values as they are, Float64 rounded to float32 (a warning counts the values that were not float32
/// numbers), UInt8 the codes of an FP8 output (attribute "source_dtype" F8_E4M3 / F8_E5M2 must name
/// the output's format); a rank-1 dataset is one row. `origin` names it in messages. Errors
/// (InvalidArgument): a shape other than [m, n], codes for a non-FP8 output, another dtype.
Result<ObservedOutput> observedOutputFromDataset(Dataset d, const std::string& origin, OutputType output, float scale_d,
                                                 int64_t m, int64_t n);

/// Runs the check (checkKernelOutput with cfg's reference, criteria and fit) and stores it into
/// `run`: observed/D (+ observed/D_codes), check/D_reference, check/diff, check/ulps,
/// check/ulp_histogram, check/models/*, the attributes of group "check" and the metrics check_*
/// and fit_*. `a`, `b`, `base` are the run's quantized operands and GEMM options (epilogue and
/// scale_D resolved). Throws what checkKernelOutput throws.
KernelCheckResult runKernelCheck(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& base,
                                 const ObservedOutput& observed, const KernelCheckConfig& cfg, Run& run, int64_t tile,
                                 const ProgressFn& progress = {});

} // namespace fp8lab

// FP8 Lab GPU core — which FP8 GEMM combinations this GPU's cuBLASLt accepts, asked of the
// heuristic only (no kernels run; a few hundred queries take about a second).
//
// Rows cover input types {E4M3, E5M2}², D types {BF16, FP16, FP32, E4M3, E5M2}, A×B scale-mode
// pairings (in cuBLASLt's own A/B order) SCALAR×SCALAR, OUTER_VEC×OUTER_VEC, SCALAR×OUTER_VEC,
// OUTER_VEC×SCALAR, VEC128×VEC128, VEC128×BLK128x128, BLK128x128×VEC128, BLK128x128×BLK128x128,
// SCALAR×VEC128, and FAST_ACCUM 0/1 — including combinations documented as unsupported, so one
// run on a GPU settles what cuBLASLt's documentation leaves to be checked on the device.
#pragma once

#include "lt_matmul.h"

#include <string>
#include <vector>

namespace fp8lab::gpu {

/// One combination and the heuristic's answer.
struct LtSupportRow {
  LtProblem problem;
  bool supported = false;     ///< the heuristic returned at least one algorithm
  int algorithms = 0;         ///< how many (up to the number requested)
  size_t workspace_bytes = 0; ///< of the first algorithm
  std::string status;         ///< "ok" or the heuristic's status / "no algorithm"
};

/// Every combination listed in the file header for a problem of m×n×k (multiples of 128).
/// Needs a GPU (LtRunner). Throws GpuError only for failures other than "not supported".
std::vector<LtSupportRow> enumerateLtSupport(const LtRunner& runner, int64_t m = 1024, int64_t n = 1024,
                                             int64_t k = 1024, int requested = 4);

/// The combinations as a text table (one row per line) and a count of supported rows.
std::string formatSupportTable(const std::vector<LtSupportRow>& rows);

/// The combinations as CSV: a_type,b_type,d_type,a_mode,b_mode,fast_accum,supported,algorithms,workspace,status
std::string supportCsv(const std::vector<LtSupportRow>& rows);

} // namespace fp8lab::gpu

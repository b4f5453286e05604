// FP8 Lab — where a command's GEMMs ran, as the JSON fields of `--json` outputs (`gemm`, `run`):
// the JSON twin of the run attributes of recordBackend (core/backend/backend_record.h).
#pragma once

#include "gemm/backend_policy.h"
#include "json/json_document.h"

#include <string>

namespace fp8lab {

/// The backend facts as an object: backend_request ("auto" | "cpu" | "gpu", b.request()),
/// backend_note (`note`, "" when none), and when `backend_that_ran` is "cuda" fast_accum (bool:
/// cuBLASLt's FAST_ACCUM, true exactly when opt.accumulation is FastAccum) and versions
/// {cuda_runtime, cuda_driver, cublaslt} (b.cuda_versions).
Json backendJson(const FallbackGemmBackend& b, const std::string& backend_that_ran, const GemmOptions& opt,
                 const std::string& note);

} // namespace fp8lab

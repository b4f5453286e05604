// FP8 Lab — what a run records about where its GEMMs ran and why (docs/session-format.md,
// "Backend attributes"). The experiment sets Run::backend / Run::device from the GemmOutput;
// this adds the request, the note and, for runs on the GPU, the FAST_ACCUM setting and the CUDA
// versions.
#pragma once

#include "gemm/backend_policy.h"
#include "session/session.h"

#include <string>

namespace fp8lab {

/// Adds to run.attrs:
///   backend_request       "auto" | "cpu" | "gpu" (b.request());
///   backend_note          `note` when not empty (FallbackGemmBackend::note() for one GEMM,
///                         fallbackSummary() or noGpuReason() for many);
/// and when run.backend is "cuda":
///   fast_accum            int64 0/1: cuBLASLt CUBLASLT_MATMUL_DESC_FAST_ACCUM, 1 exactly when
///                         opt.accumulation is FastAccum (the GPU runs FastAccum only unpromoted);
///   cuda_runtime_version, cuda_driver_version, cublaslt_version   int64, b.cuda_versions.
/// Existing attributes of the same names are replaced.
void recordBackend(Run& run, const FallbackGemmBackend& b, const GemmOptions& opt, const std::string& note);

} // namespace fp8lab

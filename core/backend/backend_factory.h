// FP8 Lab — the one place that builds the backend GEMMs run on: the GPU policy of
// gemm/backend_policy.h over the CUDA/cuBLASLt backend of gpu/ (when this build has it and a
// usable device answers) and the CPU reference backend. fp8lab-cli, the desktop app and the GPU
// checks call makeGemmBackend; nothing else constructs the CUDA backend for running experiments.
//
// Library fp8lab_backend: standard C++ here; its .cpp links fp8lab_gpu when that target exists
// (FP8LAB_HAVE_CUDA), so fp8lab_numerics and fp8lab_data never depend on gpu/.
#pragma once

#include "gemm/backend_policy.h"

#include <memory>
#include <string>

namespace fp8lab {

/// True when this build has the CUDA backend (gpu/, FP8LAB_HAVE_CUDA).
bool buildHasCuda();

/// The backend for `request`:
///   cpu   the CPU reference backend (no GPU probe; noGpuReason() empty);
///   auto  the CUDA backend with the CPU fallback when a usable GPU is present (cuda_versions
///         set), else the CPU alone with noGpuReason() saying why ("this build has no CUDA
///         support (configure with CUDA to use the GPU backend)", "no CUDA device (...)", a GPU
///         without FP8 tensor cores, cuBLASLt start-up failure);
///   gpu   the CUDA backend (GEMMs it cannot run are refused), or nullptr with the no-GPU reason
///         in *error.
/// Probing a GPU can take a few seconds (driver start-up). Never throws for a missing GPU.
std::unique_ptr<FallbackGemmBackend> makeGemmBackend(BackendRequest request, std::string* error = nullptr);

} // namespace fp8lab

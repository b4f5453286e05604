// FP8 Lab GPU core — cuBLASLt loaded when first used. libcublasLt is ~540 MB, and loading it at
// process start costs ~210 MB of resident memory and ~0.1 s (relocations), which every CPU-only
// run of fp8lab-cli and the desktop app would pay for a GPU it does not have. fp8lab_gpu therefore
// does not link it: cublaslt_lazy.cpp defines the cuBLASLt entry points FP8 Lab calls, and the
// first call opens the library with dlopen and forwards to it. Call sites use the cuBLASLt API
// unchanged.
#pragma once

#include <string>

namespace fp8lab::gpu {

/// Opens libcublasLt (once; thread-safe) and reports whether it and every entry point FP8 Lab
/// calls are there. Tries the soname of the toolkit the build used (libcublasLt.so.<major>, found
/// through LD_LIBRARY_PATH, the executable's run path and the loader cache), then the library's
/// path at build time. On failure `why` (when given) says what dlopen / dlsym reported; the
/// forwarded calls then return CUBLAS_STATUS_NOT_INITIALIZED (cublasLtGetVersion: 0,
/// cublasLtGetStatusName: a text naming the failure) instead of crashing.
bool cublasLtAvailable(std::string* why = nullptr);

/// Whether this process has opened libcublasLt already (a CPU-only run never does).
bool cublasLtLoaded();

} // namespace fp8lab::gpu

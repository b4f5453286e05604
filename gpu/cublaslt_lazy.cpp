// FP8 Lab GPU core — cuBLASLt entry points that load the library on first use (cublaslt_lazy.h).
#include "cublaslt_lazy.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <atomic>
#include <mutex>

#ifndef FP8LAB_CUBLASLT_SONAME
#error "FP8LAB_CUBLASLT_SONAME (e.g. libcublasLt.so.13) is set by gpu/CMakeLists.txt"
#endif
#ifndef FP8LAB_CUBLASLT_PATH
#error "FP8LAB_CUBLASLT_PATH (the library found at build time) is set by gpu/CMakeLists.txt"
#endif

namespace fp8lab::gpu {

namespace {

/// Every cuBLASLt function FP8 Lab calls, in one list: X(return type, name, parameters, arguments).
#define FP8LAB_CUBLASLT_FUNCTIONS(X)                                                                                   \
  X(cublasStatus_t, cublasLtCreate, (cublasLtHandle_t * h), (h))                                                       \
  X(cublasStatus_t, cublasLtDestroy, (cublasLtHandle_t h), (h))                                                        \
  X(cublasStatus_t, cublasLtMatmul,                                                                                    \
    (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,    \
     const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc,       \
     void* D, cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_size,  \
     cudaStream_t stream),                                                                                             \
    (h, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspace_size, stream))           \
  X(cublasStatus_t, cublasLtMatrixLayoutCreate,                                                                        \
    (cublasLtMatrixLayout_t * l, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),                         \
    (l, type, rows, cols, ld))                                                                                         \
  X(cublasStatus_t, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t l), (l))                                      \
  X(cublasStatus_t, cublasLtMatrixLayoutGetAttribute,                                                                  \
    (cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, void* buf, size_t size, size_t* written),         \
    (l, attr, buf, size, written))                                                                                     \
  X(cublasStatus_t, cublasLtMatmulDescCreate,                                                                          \
    (cublasLtMatmulDesc_t * d, cublasComputeType_t compute, cudaDataType_t scale), (d, compute, scale))                \
  X(cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t d), (d))                                          \
  X(cublasStatus_t, cublasLtMatmulDescSetAttribute,                                                                    \
    (cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t size), (d, attr, buf, size)) \
  X(cublasStatus_t, cublasLtMatmulDescGetAttribute,                                                                    \
    (cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, void* buf, size_t size, size_t* written),            \
    (d, attr, buf, size, written))                                                                                     \
  X(cublasStatus_t, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * p), (p))                             \
  X(cublasStatus_t, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t p), (p))                              \
  X(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,                                                              \
    (cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const void* buf, size_t size),           \
    (p, attr, buf, size))                                                                                              \
  X(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,                                                                    \
    (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,        \
     cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t pref, int requested,       \
     cublasLtMatmulHeuristicResult_t results[], int* returned),                                                        \
    (h, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requested, results, returned))                                         \
  X(cublasStatus_t, cublasLtMatmulAlgoConfigGetAttribute,                                                              \
    (const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf, size_t size,              \
     size_t* written),                                                                                                 \
    (algo, attr, buf, size, written))                                                                                  \
  X(size_t, cublasLtGetVersion, (void), ())                                                                            \
  X(const char*, cublasLtGetStatusName, (cublasStatus_t status), (status))

struct Library {
#define FP8LAB_LT_POINTER(ret, name, params, args) ret(*name) params = nullptr;
  FP8LAB_CUBLASLT_FUNCTIONS(FP8LAB_LT_POINTER)
#undef FP8LAB_LT_POINTER
  bool ok = false;
  std::string why;
};

std::atomic<bool> g_loaded{false};

const Library& library() {
  static const Library lib = [] {
    Library l;
    void* h = nullptr;
    std::string tried;
    for (const char* name : {FP8LAB_CUBLASLT_SONAME, FP8LAB_CUBLASLT_PATH}) {
      h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (h) break;
      const char* e = ::dlerror();
      tried += std::string(tried.empty() ? "" : "; ") + (e ? e : name);
    }
    if (!h) {
      l.why = "cannot load cuBLASLt: " + tried;
      return l;
    }
    g_loaded = true;
    std::string missing;
#define FP8LAB_LT_RESOLVE(ret, name, params, args)                                                                     \
  l.name = reinterpret_cast<ret(*) params>(::dlsym(h, #name));                                                         \
  if (!l.name) missing += std::string(missing.empty() ? "" : ", ") + #name;
    FP8LAB_CUBLASLT_FUNCTIONS(FP8LAB_LT_RESOLVE)
#undef FP8LAB_LT_RESOLVE
    if (!missing.empty()) {
      l.why = "the cuBLASLt library that was loaded lacks " + missing;
      return l;
    }
    l.ok = true;
    return l;
  }();
  return lib;
}

} // namespace

bool cublasLtAvailable(std::string* why) {
  const Library& l = library();
  if (why) *why = l.why;
  return l.ok;
}

bool cublasLtLoaded() {
  return g_loaded.load();
}

} // namespace fp8lab::gpu

// The entry points themselves, with cublasLt.h's declarations (extern "C").
using fp8lab::gpu::library;

namespace {
template <typename R> R unavailable();
template <> cublasStatus_t unavailable<cublasStatus_t>() {
  return CUBLAS_STATUS_NOT_INITIALIZED;
}
template <> size_t unavailable<size_t>() {
  return 0;
}
template <> const char* unavailable<const char*>() {
  return "CUBLAS_STATUS_NOT_INITIALIZED (cuBLASLt could not be loaded)";
}
} // namespace

#define FP8LAB_LT_FORWARD(ret, name, params, args)                                                                     \
  ret CUBLASWINAPI name params {                                                                                       \
    const auto& lt_ = library();                                                                                       \
    return lt_.ok ? lt_.name args : unavailable<ret>();                                                                \
  }
extern "C" {
FP8LAB_CUBLASLT_FUNCTIONS(FP8LAB_LT_FORWARD)
}
#undef FP8LAB_LT_FORWARD

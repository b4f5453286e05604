// FP8 Lab GPU core — RAII owners for CUDA and cuBLASLt objects.
//
// Each owner creates its object in the constructor (through FP8LAB_*_CHECK, so a failure throws
// GpuError naming the call) and destroys it in the destructor, which never throws (a failing
// destroy during unwinding is ignored). Owners are movable, not copyable. Unlike NVIDIA's
// samples, nothing leaks when a later check throws.
#pragma once

#include "cuda_error.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace fp8lab::gpu {

/// Unique owner of a raw handle with a destroy function.
template <typename H, typename Traits> class UniqueHandle {
public:
  UniqueHandle() = default;
  explicit UniqueHandle(H h) : h_(h) {}
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  UniqueHandle(UniqueHandle&& o) noexcept : h_(std::exchange(o.h_, H{})) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, H{});
    }
    return *this;
  }
  ~UniqueHandle() { reset(); }
  void reset() noexcept {
    if (h_) Traits::destroy(h_);
    h_ = H{};
  }
  H get() const { return h_; }
  explicit operator bool() const { return h_ != H{}; }

protected:
  H h_{};
};

struct LtHandleTraits {
  static void destroy(cublasLtHandle_t h) noexcept { cublasLtDestroy(h); }
};
struct LtDescTraits {
  static void destroy(cublasLtMatmulDesc_t h) noexcept { cublasLtMatmulDescDestroy(h); }
};
struct LtLayoutTraits {
  static void destroy(cublasLtMatrixLayout_t h) noexcept { cublasLtMatrixLayoutDestroy(h); }
};
struct LtPrefTraits {
  static void destroy(cublasLtMatmulPreference_t h) noexcept { cublasLtMatmulPreferenceDestroy(h); }
};
struct StreamTraits {
  static void destroy(cudaStream_t s) noexcept { cudaStreamDestroy(s); }
};
struct EventTraits {
  static void destroy(cudaEvent_t e) noexcept { cudaEventDestroy(e); }
};

/// cuBLASLt handle (needs a GPU: cublasLtCreate returns NOT_INITIALIZED without a driver).
class LtHandle : public UniqueHandle<cublasLtHandle_t, LtHandleTraits> {
public:
  LtHandle() {
    cublasLtHandle_t h = nullptr;
    FP8LAB_LT_CHECK(cublasLtCreate(&h));
    h_ = h;
  }
};

/// Matmul descriptor; created host-only (works without a GPU).
class LtMatmulDesc : public UniqueHandle<cublasLtMatmulDesc_t, LtDescTraits> {
public:
  LtMatmulDesc(cublasComputeType_t compute, cudaDataType_t scale_type) {
    cublasLtMatmulDesc_t d = nullptr;
    FP8LAB_LT_CHECK(cublasLtMatmulDescCreate(&d, compute, scale_type));
    h_ = d;
  }
  /// Sets an attribute whose C type is T (the size is what cuBLASLt checks: FAST_ACCUM is
  /// int8_t, TRANSA/B and scale modes int32_t, pointers void*). Throws GpuError.
  template <typename T> void set(cublasLtMatmulDescAttributes_t attr, const T& value) {
    checkLt(cublasLtMatmulDescSetAttribute(h_, attr, &value, sizeof(T)), attributeCall(attr));
  }
  /// Reads an attribute back (for tests).
  template <typename T> T attribute(cublasLtMatmulDescAttributes_t attr) const {
    T v{};
    size_t written = 0;
    checkLt(cublasLtMatmulDescGetAttribute(h_, attr, &v, sizeof(T), &written), "cublasLtMatmulDescGetAttribute");
    return v;
  }

private:
  static const char* attributeCall(cublasLtMatmulDescAttributes_t) { return "cublasLtMatmulDescSetAttribute"; }
};

/// Matrix layout (column-major in cuBLASLt's sense: rows × cols with leading dimension ld).
class LtMatrixLayout : public UniqueHandle<cublasLtMatrixLayout_t, LtLayoutTraits> {
public:
  LtMatrixLayout(cudaDataType_t type, uint64_t rows, uint64_t cols, int64_t ld) {
    cublasLtMatrixLayout_t l = nullptr;
    FP8LAB_LT_CHECK(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld));
    h_ = l;
  }
};

/// Matmul preference (workspace limit).
class LtPreference : public UniqueHandle<cublasLtMatmulPreference_t, LtPrefTraits> {
public:
  explicit LtPreference(uint64_t max_workspace_bytes) {
    cublasLtMatmulPreference_t p = nullptr;
    FP8LAB_LT_CHECK(cublasLtMatmulPreferenceCreate(&p));
    h_ = p;
    FP8LAB_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(h_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &max_workspace_bytes, sizeof(max_workspace_bytes)));
  }
};

/// A CUDA stream (non-blocking).
class Stream : public UniqueHandle<cudaStream_t, StreamTraits> {
public:
  Stream() {
    cudaStream_t s = nullptr;
    FP8LAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    h_ = s;
  }
  void synchronize() const { FP8LAB_CUDA_CHECK(cudaStreamSynchronize(h_)); }
};

/// A CUDA event for timing.
class Event : public UniqueHandle<cudaEvent_t, EventTraits> {
public:
  Event() {
    cudaEvent_t e = nullptr;
    FP8LAB_CUDA_CHECK(cudaEventCreate(&e));
    h_ = e;
  }
  void record(cudaStream_t s) const { FP8LAB_CUDA_CHECK(cudaEventRecord(h_, s)); }
  /// Milliseconds from `start` to this event (waits for this event).
  float elapsedSince(const Event& start) const {
    FP8LAB_CUDA_CHECK(cudaEventSynchronize(h_));
    float ms = 0;
    FP8LAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), h_));
    return ms;
  }
};

/// Device memory of `count` elements of T (cudaMalloc: 256-byte aligned). Zero-sized buffers
/// hold nullptr. Copies are synchronous unless a stream is given.
template <typename T> class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count == 0) return;
    void* p = nullptr;
    FP8LAB_CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
    p_ = static_cast<T*>(p);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  T* get() const { return p_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

  void upload(const T* host, size_t count, cudaStream_t s = nullptr) {
    if (count > count_) throw std::out_of_range("DeviceBuffer::upload: more elements than the buffer holds");
    if (count == 0) return;
    if (s)
      FP8LAB_CUDA_CHECK(cudaMemcpyAsync(p_, host, count * sizeof(T), cudaMemcpyHostToDevice, s));
    else
      FP8LAB_CUDA_CHECK(cudaMemcpy(p_, host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  void download(T* host, size_t count, cudaStream_t s = nullptr) const {
    if (count > count_) throw std::out_of_range("DeviceBuffer::download: more elements than the buffer holds");
    if (count == 0) return;
    if (s)
      FP8LAB_CUDA_CHECK(cudaMemcpyAsync(host, p_, count * sizeof(T), cudaMemcpyDeviceToHost, s));
    else
      FP8LAB_CUDA_CHECK(cudaMemcpy(host, p_, count * sizeof(T), cudaMemcpyDeviceToHost));
  }
  void zero(cudaStream_t s = nullptr) {
    if (count_ == 0) return;
    if (s)
      FP8LAB_CUDA_CHECK(cudaMemsetAsync(p_, 0, bytes(), s));
    else
      FP8LAB_CUDA_CHECK(cudaMemset(p_, 0, bytes()));
  }

private:
  void release() noexcept {
    if (p_) cudaFree(p_);
    p_ = nullptr;
    count_ = 0;
  }
  T* p_ = nullptr;
  size_t count_ = 0;
};

} // namespace fp8lab::gpu

// FP8 Lab GPU core — one cuBLASLt matmul (FP8 with A/B scale modes, or BF16 for baselines).
//
//     D = scale_D · ( alpha · a_scale ⊙ b_scale ⊙ (op(A) · op(B)) + beta · C + bias ) ,  then for
//     an FP8 D: amax_D = max |D| (AMAX_D_POINTER) and the cast to D's type (saturating).
// alpha, beta: host float32 scalars (LtProblem); C is read only when beta ≠ 0; bias (one value
// per row of Lt-D, broadcast over its columns) through CUBLASLT_EPILOGUE_BIAS with
// BIAS_POINTER / BIAS_DATA_TYPE, added after alpha. a_scale / b_scale are the DEQUANT multipliers
// (A_SCALE_POINTER / B_SCALE_POINTER), laid out per mode as in scale_layout.h; scale_D is the
// output's QUANT multiplier (D_SCALE_POINTER), used only for FP8 D.
//
// This file works in cuBLASLt's own (column-major, "Lt") terms; scale_layout.h explains how the
// caller's row-major A[M,K]·B[K,N] becomes Lt-A = caller B, Lt-B = caller A (TN, swapped).
// Call sequence: MatmulDescCreate(COMPUTE_32F, R_32F) → TRANSA = T,
// TRANSB = N, scale pointers + modes, FAST_ACCUM (int8_t), D scale / amax for FP8 D → four
// layouts (Lt-A K×m ld K, Lt-B K×n ld K, C/D m×n ld m) → preference with a 32 MiB workspace →
// AlgoGetHeuristic (several results) → Matmul, falling back to the next result on failure.
// Pointers: every pointer in LtPointers is DEVICE memory, 16-byte aligned (cudaMalloc gives 256).
#pragma once

#include "cuda_raii.h"
#include "scale_layout.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fp8lab::gpu {

constexpr size_t kWorkspaceBytes = 32u << 20; ///< 32 MiB, Hopper's workspace (NVIDIA's block-scaling sample)

/// A matmul in cuBLASLt's terms: D[m×n] = op(A)[m×k] · B[k×n], A stored k×m (ld k, TRANSA = T),
/// B stored k×n (ld k), D column-major m×n (ld m). Sizes must already be padded (16, K 128 for
/// block modes).
struct LtProblem {
  int64_t m = 0, n = 0, k = 0;
  cudaDataType_t a_type = CUDA_R_8F_E4M3; ///< CUDA_R_8F_E4M3 / CUDA_R_8F_E5M2 / CUDA_R_16BF
  cudaDataType_t b_type = CUDA_R_8F_E4M3;
  cudaDataType_t d_type = CUDA_R_16BF; ///< CUDA_R_16BF / 16F / 32F / 8F_E4M3 / 8F_E5M2
  LtScaleMode a_mode = LtScaleMode::Scalar, b_mode = LtScaleMode::Scalar; ///< FP8 inputs only
  bool fast_accum = false;                                                ///< CUBLASLT_MATMUL_DESC_FAST_ACCUM (int8_t)
  float alpha = 1.0f, beta = 0.0f; ///< host scalars of cublasLtMatmul (default pointer mode)
  bool bias = false;               ///< CUBLASLT_EPILOGUE_BIAS with a bias of m values of biasType()
  bool isFp8() const { return a_type != CUDA_R_16BF; }
  bool fp8Output() const { return d_type == CUDA_R_8F_E4M3 || d_type == CUDA_R_8F_E5M2; }
  /// C's type: D's, except BF16 for an FP8 D (cuBLASLt requires a 16-bit C then).
  cudaDataType_t cType() const { return fp8Output() ? CUDA_R_16BF : d_type; }
  /// The bias type: FP16 for an FP16 D, else BF16 (FP8 kernels take a 16-bit bias; for an FP8 D
  /// it matches C's BF16).
  cudaDataType_t biasType() const { return d_type == CUDA_R_16F ? CUDA_R_16F : CUDA_R_16BF; }
};

/// Device pointers of one matmul (see the file header). Unused ones may be null: scales for BF16
/// inputs, d_scale / amax_d for non-FP8 D. c must be non-null (D's buffer when C and D share a
/// type; a separate BF16 buffer of m×n for an FP8 D).
struct LtPointers {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* d = nullptr;
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;
  const float* d_scale = nullptr;
  float* amax_d = nullptr;
  const void* bias = nullptr; ///< m values of LtProblem::biasType(), when LtProblem::bias
};

/// Why a problem cannot be sent to cuBLASLt on Hopper (types, TN/alignment rules, E5M2×E5M2,
/// block modes with K % 128, 128x128×128x128); empty when it may be (the heuristic decides).
std::string checkLtProblem(const LtProblem& p);

/// Size in bytes of one element of a cudaDataType_t used here; 0 for others.
size_t elementBytes(cudaDataType_t t);
/// "E4M3", "E5M2", "BF16", "FP16", "FP32".
const char* typeName(cudaDataType_t t);

/// Descriptor + the four layouts of one matmul. Creating it needs no GPU (host-only cuBLASLt
/// calls), so it is unit-tested on machines without one. Throws std::invalid_argument when
/// checkLtProblem fails, GpuError when cuBLASLt rejects an attribute.
struct LtOperation {
  /// validate = false skips checkLtProblem (the enumerator asks cuBLASLt about combinations the
  /// project believes unsupported, to confirm it).
  LtOperation(const LtProblem& p, const LtPointers& ptr, bool validate = true);
  LtProblem problem;
  LtMatmulDesc desc;
  LtMatrixLayout a, b, c, d;
};

/// A chosen algorithm, recorded for the session / report.
struct LtAlgoInfo {
  int heuristic_index = -1; ///< position in the heuristic's list (0 = its first choice)
  int returned = 0;         ///< how many results the heuristic returned
  size_t workspace_bytes = 0;
  float waves = 0;
  int algo_id = -1, tile_id = -1, stages_id = -1, splitk = -1, swizzle = -1, cluster_id = -1;
  std::string describe() const; ///< "cuBLASLt algo 66 (heuristic #0 of 8), tile 21, stages 30, ..."
};

/// Reads the configuration of an algorithm (host-only).
LtAlgoInfo describeAlgo(const cublasLtMatmulAlgo_t& algo);

/// Runs matmuls: owns the handle and a 32 MiB workspace. Needs a GPU (constructor throws
/// GpuError otherwise).
class LtRunner {
public:
  explicit LtRunner(size_t workspace_bytes = kWorkspaceBytes);
  cublasLtHandle_t handle() const { return handle_.get(); }

  /// Up to `requested` heuristic results (state SUCCESS only). Empty = unsupported combination
  /// (also when the heuristic returns CUBLAS_STATUS_NOT_SUPPORTED). Throws GpuError otherwise.
  std::vector<cublasLtMatmulHeuristicResult_t> heuristics(const LtOperation& op, int requested = 8,
                                                          std::string* failure = nullptr) const;

  /// Runs with one algorithm (no fallback), asynchronously on `stream`. Throws GpuError.
  void run(const LtOperation& op, const LtPointers& ptr, const cublasLtMatmulAlgo_t& algo, cudaStream_t stream) const;

  /// Queries the heuristic and runs the first algorithm that launches, trying the others in order
  /// when one fails (fallback). Returns the algorithm used. Throws std::runtime_error naming the
  /// problem when the heuristic returns nothing or every candidate fails. `start` (optional): an
  /// event recorded on `stream` right before the matmul is enqueued (again before each fallback
  /// candidate), so that timing with it leaves out the host-side heuristic query, during which
  /// the GPU would sit idle after an event recorded earlier.
  LtAlgoInfo runWithFallback(const LtOperation& op, const LtPointers& ptr, cudaStream_t stream, int requested = 8,
                             cudaEvent_t start = nullptr) const;

  /// Times up to `candidates` heuristic results (`iters` runs each after one warm-up, CUDA
  /// events on `stream`) and returns the fastest, with its index in the heuristic list and its
  /// time in `*ms`; `algo` receives the algorithm to pass to run(). Candidates that fail to launch
  /// are skipped. Throws std::runtime_error when none runs.
  LtAlgoInfo autotune(const LtOperation& op, const LtPointers& ptr, cudaStream_t stream, cublasLtMatmulAlgo_t* algo,
                      float* ms = nullptr, int candidates = 4, int iters = 5) const;

  size_t workspaceBytes() const { return workspace_.bytes(); }

private:
  LtHandle handle_;
  DeviceBuffer<uint8_t> workspace_;
};

/// One line describing a problem: "E4M3 x E4M3 -> BF16, OUTER_VEC_32F x OUTER_VEC_32F, fast accum 0, m n k".
std::string describeProblem(const LtProblem& p);

} // namespace fp8lab::gpu

#include "lt_matmul.h"

#include <algorithm>
#include <stdexcept>

// cuBLASLt ≥ 12.9 has the outer-vector / 1x128 / 128x128 scale modes;
// older toolkits (a GPU machine's may be one) build with per-tensor scaling only.
#if defined(CUBLAS_VERSION) && CUBLAS_VERSION >= 120900
#define FP8LAB_LT_SCALE_MODES 1
#else
#define FP8LAB_LT_SCALE_MODES 0
#endif

namespace fp8lab::gpu {

size_t elementBytes(cudaDataType_t t) {
  switch (t) {
  case CUDA_R_8F_E4M3:
  case CUDA_R_8F_E5M2:
    return 1;
  case CUDA_R_16BF:
  case CUDA_R_16F:
    return 2;
  case CUDA_R_32F:
    return 4;
  default:
    return 0;
  }
}

const char* typeName(cudaDataType_t t) {
  switch (t) {
  case CUDA_R_8F_E4M3:
    return "E4M3";
  case CUDA_R_8F_E5M2:
    return "E5M2";
  case CUDA_R_16BF:
    return "BF16";
  case CUDA_R_16F:
    return "FP16";
  case CUDA_R_32F:
    return "FP32";
  default:
    return "?";
  }
}

std::string describeProblem(const LtProblem& p) {
  std::string s = std::string(typeName(p.a_type)) + " x " + typeName(p.b_type) + " -> " + typeName(p.d_type);
  if (p.isFp8())
    s += std::string(", ") + toString(p.a_mode) + " x " + toString(p.b_mode) + ", fast accum " +
         (p.fast_accum ? "1" : "0");
  if (p.alpha != 1.0f || p.beta != 0.0f) s += ", alpha " + std::to_string(p.alpha) + " beta " + std::to_string(p.beta);
  if (p.bias) s += std::string(", bias ") + typeName(p.biasType());
  s += ", m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k);
  return s;
}

std::string checkLtProblem(const LtProblem& p) {
  if (p.m < 1 || p.n < 1 || p.k < 1) return "empty GEMM (m, n, k must be positive)";
  if (p.m % 16 || p.n % 16 || p.k % 16)
    return "m, n and k must be multiples of 16 (16-byte alignment of FP8 operands; pad with zeros): m=" +
           std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k);
  if (elementBytes(p.d_type) == 0) return "unsupported output type";
  const bool fp8a = p.a_type == CUDA_R_8F_E4M3 || p.a_type == CUDA_R_8F_E5M2;
  const bool fp8b = p.b_type == CUDA_R_8F_E4M3 || p.b_type == CUDA_R_8F_E5M2;
  if (!p.isFp8()) {
    if (p.a_type != CUDA_R_16BF || p.b_type != CUDA_R_16BF) return "inputs must both be FP8 (E4M3/E5M2) or both BF16";
    if (p.fp8Output()) return "BF16 inputs cannot produce an FP8 output here";
    return {};
  }
  if (!fp8a || !fp8b) return "inputs must both be FP8 (E4M3/E5M2) or both BF16";
  if (p.a_type == CUDA_R_8F_E5M2 && p.b_type == CUDA_R_8F_E5M2)
    return "E5M2 x E5M2 is not supported by cuBLASLt (one operand must be E4M3)";
  const bool block = isBlockMode(p.a_mode) || isBlockMode(p.b_mode);
  if (block && p.k % 128) return "1x128 / 128x128 scale modes need K padded to a multiple of 128";
  if (p.a_mode == LtScaleMode::Blk128x128 && p.b_mode == LtScaleMode::Blk128x128)
    return "128x128 x 128x128 block scaling is not supported on sm_90 (only 1Dx1D, 1Dx2D, 2Dx1D)";
  if (block && (!isBlockMode(p.a_mode) || !isBlockMode(p.b_mode)))
    return "block scale modes pair only with block scale modes (1x128 or 128x128)";
#if !FP8LAB_LT_SCALE_MODES
  if (p.a_mode != LtScaleMode::Scalar || p.b_mode != LtScaleMode::Scalar)
    return "this build's cuBLASLt headers predate 12.9: only per-tensor (SCALAR_32F) scaling is available";
#endif
  return {};
}

namespace {
const LtProblem& validated(const LtProblem& p, bool validate) {
  const std::string why = validate ? checkLtProblem(p) : std::string();
  if (!why.empty()) throw std::invalid_argument("cuBLASLt matmul: " + why + " [" + describeProblem(p) + "]");
  return p;
}
} // namespace

LtOperation::LtOperation(const LtProblem& p, const LtPointers& ptr, bool validate)
    : problem(validated(p, validate)), desc(CUBLAS_COMPUTE_32F, CUDA_R_32F),
      a(p.a_type, static_cast<uint64_t>(p.k), static_cast<uint64_t>(p.m), p.k),
      b(p.b_type, static_cast<uint64_t>(p.k), static_cast<uint64_t>(p.n), p.k),
      c(p.cType(), static_cast<uint64_t>(p.m), static_cast<uint64_t>(p.n), p.m),
      d(p.d_type, static_cast<uint64_t>(p.m), static_cast<uint64_t>(p.n), p.m) {
  desc.set<int32_t>(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  desc.set<int32_t>(CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  if (p.bias) {
    desc.set<uint32_t>(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    desc.set<int32_t>(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(p.biasType()));
    if (ptr.bias) desc.set<const void*>(CUBLASLT_MATMUL_DESC_BIAS_POINTER, ptr.bias);
  }
  if (!p.isFp8()) return;
  if (ptr.a_scale) desc.set<const void*>(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, ptr.a_scale);
  if (ptr.b_scale) desc.set<const void*>(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, ptr.b_scale);
#if FP8LAB_LT_SCALE_MODES
  desc.set<int32_t>(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, static_cast<int32_t>(p.a_mode));
  desc.set<int32_t>(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, static_cast<int32_t>(p.b_mode));
#endif
  desc.set<int8_t>(CUBLASLT_MATMUL_DESC_FAST_ACCUM, static_cast<int8_t>(p.fast_accum ? 1 : 0));
  if (p.fp8Output()) {
    if (ptr.d_scale) desc.set<const void*>(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, ptr.d_scale);
    if (ptr.amax_d) desc.set<void*>(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, ptr.amax_d);
  }
}

std::string LtAlgoInfo::describe() const {
  std::string s = "cuBLASLt algo " + std::to_string(algo_id);
  if (heuristic_index >= 0)
    s += " (heuristic #" + std::to_string(heuristic_index) + " of " + std::to_string(returned) + ")";
  s += ", tile " + std::to_string(tile_id) + ", stages " + std::to_string(stages_id) + ", split-K " +
       std::to_string(splitk) + ", swizzle " + std::to_string(swizzle) + ", cluster " + std::to_string(cluster_id) +
       ", workspace " + std::to_string(workspace_bytes) + " B";
  return s;
}

LtAlgoInfo describeAlgo(const cublasLtMatmulAlgo_t& algo) {
  LtAlgoInfo info;
  size_t w = 0;
  int32_t i32 = 0;
  uint32_t u32 = 0;
  uint16_t u16 = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &i32, sizeof i32, &w) ==
      CUBLAS_STATUS_SUCCESS)
    info.algo_id = i32;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &u32, sizeof u32, &w) ==
      CUBLAS_STATUS_SUCCESS)
    info.tile_id = static_cast<int>(u32);
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &u32, sizeof u32, &w) ==
      CUBLAS_STATUS_SUCCESS)
    info.stages_id = static_cast<int>(u32);
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &i32, sizeof i32, &w) ==
      CUBLAS_STATUS_SUCCESS)
    info.splitk = i32;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &u32, sizeof u32, &w) ==
      CUBLAS_STATUS_SUCCESS)
    info.swizzle = static_cast<int>(u32);
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &u16, sizeof u16, &w) ==
      CUBLAS_STATUS_SUCCESS)
    info.cluster_id = u16;
  return info;
}

LtRunner::LtRunner(size_t workspace_bytes) : handle_(), workspace_(workspace_bytes) {}

std::vector<cublasLtMatmulHeuristicResult_t> LtRunner::heuristics(const LtOperation& op, int requested,
                                                                  std::string* failure) const {
  LtPreference pref(workspace_.bytes());
  std::vector<cublasLtMatmulHeuristicResult_t> res(static_cast<size_t>(requested < 1 ? 1 : requested));
  int returned = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle_.get(), op.desc.get(), op.a.get(), op.b.get(), op.c.get(), op.d.get(),
                                     pref.get(), static_cast<int>(res.size()), res.data(), &returned);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE) {
    if (failure) *failure = "cublasLtMatmulAlgoGetHeuristic: " + ltStatusName(st);
    return {};
  }
  checkLt(st, "cublasLtMatmulAlgoGetHeuristic");
  std::vector<cublasLtMatmulHeuristicResult_t> ok;
  for (int i = 0; i < returned; ++i)
    if (res[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS) ok.push_back(res[static_cast<size_t>(i)]);
  if (ok.empty() && failure) *failure = "cublasLtMatmulAlgoGetHeuristic returned no algorithm";
  return ok;
}

void LtRunner::run(const LtOperation& op, const LtPointers& ptr, const cublasLtMatmulAlgo_t& algo,
                   cudaStream_t stream) const {
  const float alpha = op.problem.alpha, beta = op.problem.beta;
  FP8LAB_LT_CHECK(cublasLtMatmul(handle_.get(), op.desc.get(), &alpha, ptr.a, op.a.get(), ptr.b, op.b.get(), &beta,
                                 ptr.c, op.c.get(), ptr.d, op.d.get(), &algo, workspace_.get(), workspace_.bytes(),
                                 stream));
}

LtAlgoInfo LtRunner::runWithFallback(const LtOperation& op, const LtPointers& ptr, cudaStream_t stream, int requested,
                                     cudaEvent_t start) const {
  std::string why;
  const auto cands = heuristics(op, requested, &why);
  if (cands.empty())
    throw std::runtime_error("cuBLASLt has no algorithm for " + describeProblem(op.problem) + " on this GPU (" + why +
                             ")");
  std::string errors;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (cands[i].workspaceSize > workspace_.bytes()) continue;
    try {
      if (start) FP8LAB_CUDA_CHECK(cudaEventRecord(start, stream));
      run(op, ptr, cands[i].algo, stream);
      LtAlgoInfo info = describeAlgo(cands[i].algo);
      info.heuristic_index = static_cast<int>(i);
      info.returned = static_cast<int>(cands.size());
      info.workspace_bytes = cands[i].workspaceSize;
      info.waves = cands[i].wavesCount;
      return info;
    } catch (const GpuError& e) {
      errors += std::string(errors.empty() ? "" : "; ") + "#" + std::to_string(i) + ": " + e.what();
    }
  }
  throw std::runtime_error("every cuBLASLt algorithm failed for " + describeProblem(op.problem) + ": " + errors);
}

LtAlgoInfo LtRunner::autotune(const LtOperation& op, const LtPointers& ptr, cudaStream_t stream,
                              cublasLtMatmulAlgo_t* algo, float* ms, int candidates, int iters) const {
  std::string why;
  const auto cands = heuristics(op, std::max(candidates, 1), &why);
  if (cands.empty())
    throw std::runtime_error("cuBLASLt has no algorithm for " + describeProblem(op.problem) + " on this GPU (" + why +
                             ")");
  float best = -1;
  LtAlgoInfo best_info;
  Event e0, e1;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (cands[i].workspaceSize > workspace_.bytes()) continue;
    try {
      run(op, ptr, cands[i].algo, stream); // warm-up (and launch check)
      e0.record(stream);
      for (int r = 0; r < std::max(iters, 1); ++r) run(op, ptr, cands[i].algo, stream);
      e1.record(stream);
      const float t = e1.elapsedSince(e0) / static_cast<float>(std::max(iters, 1));
      if (best < 0 || t < best) {
        best = t;
        best_info = describeAlgo(cands[i].algo);
        best_info.heuristic_index = static_cast<int>(i);
        best_info.returned = static_cast<int>(cands.size());
        best_info.workspace_bytes = cands[i].workspaceSize;
        best_info.waves = cands[i].wavesCount;
        if (algo) *algo = cands[i].algo;
      }
    } catch (const GpuError&) {
      // this candidate does not launch: try the next
    }
  }
  if (best < 0) throw std::runtime_error("no cuBLASLt algorithm launched for " + describeProblem(op.problem));
  if (ms) *ms = best;
  return best_info;
}

} // namespace fp8lab::gpu

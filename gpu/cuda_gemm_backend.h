// FP8 Lab GPU core — the CUDA / cuBLASLt implementation of GemmBackend (core/gemm/gemm.h). Which
// GEMMs run here and which on the CPU is core's rule (core/gemm/backend_policy.h), built by
// makeGemmBackend (core/backend/backend_factory.h).
//
//     D = scale_D · (alpha · (a_scale ⊙ b_scale ⊙ (A·B)) + beta · C + bias)
//                                                    A [M,K], B [K,N], C [M,N] row-major, bias [N]
// with a_scale / b_scale the operands' DEQUANT scales (QuantizedTensor) and scale_D the output's
// QUANT multiplier (GemmOptions::output_quant_scale, FP8 outputs only). The operands are padded,
// arranged TN and their scales laid out as scale_layout.h describes; the matmul is one cuBLASLt
// call (lt_matmul.h).
//
// What runs here (anything else: unsupportedReason() says why; under --backend auto the CPU
// reference backend runs it):
//   formats     E4M3FN × E4M3FN, E4M3FN × E5M2, E5M2 × E4M3FN (not E5M2 × E5M2; no FNUZ, MX,
//               FP6/FP4 types on Hopper)
//   scales      per tensor, A per-row / B per-column, A 1x128 / B 128x1, 128x128, and any
//               combination of those that promotes exactly (scale_layout.h); not MX E8M0, not
//               scales that vary along K other than per 128
//   accumulation SplitFP32  → cuBLASLt default (FAST_ACCUM = 0: periodic FP32 promotion)
//               FastAccum with fast_accum_promotes = false → FAST_ACCUM = 1 (the hardware the
//               CPU model imitates); Exact, FP32 and the promoting FastAccum model are
//               CPU-only models
//   output      FP32, BF16, FP16, E4M3FN (D scale + AMAX_D), E5M2 where the heuristic accepts it
//   epilogue    alpha and beta·C (C in D's type, BF16 for an FP8 D) and a bias (CUBLASLT_EPILOGUE_BIAS,
//               BF16, FP16 for an FP16 D) when every C / bias value is exactly a number of that
//               type; not a bias with an FP32 D (a 16-bit bias only; PyTorch refuses it too)
//   devices     sm_90 (H100/H200) for every mode; sm_89 and sm_100+ per-tensor only
#pragma once

#include "device_probe.h"
#include "gemm/gemm.h"

#include <memory>
#include <string>

namespace fp8lab::gpu {

/// Why the CUDA backend cannot run D = A·B with `opt` on a GPU of compute capability `cc`
/// (major·10 + minor, e.g. 90) with cuBLASLt version `cublaslt_version` (e.g. 130100); empty
/// when it can (the heuristic may still refuse a combination at run time). Pure function, no GPU
/// needed: this is CudaGemmBackend::unsupportedReason.
std::string cudaUnsupportedReason(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt, int cc,
                                  size_t cublaslt_version);

/// The CUDA backend, or nullptr with the reason in *why (no device, old driver, a GPU without
/// FP8 tensor cores, cuBLASLt handle creation failed). Never throws.
std::unique_ptr<GemmBackend> makeCudaGemmBackend(std::string* why = nullptr);

/// Runtime, driver and cuBLASLt versions of the probe as text, e.g.
/// "CUDA runtime 13.0, driver 13.0, cuBLASLt 13.1.0".
std::string versionsSummary(const ProbeResult& p);

} // namespace fp8lab::gpu

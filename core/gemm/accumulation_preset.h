// FP8 Lab — accumulation presets: named parameter sets of the tensor-core MMA family (gemm.h,
// Accumulation::FastAccum with MmaRules), one per GPU instruction, each with its source. NVIDIA
// documents neither the alignment, the bits kept nor the rounding of its FP8 / block-scaled MMA
// instructions; the rules here are those that reproduce published outputs of real GPUs bit for bit
// (MATLAB-tensor-core's model_validation data: tests/data/tensor_core), or, for instructions
// without published data, those of MMA-Sim's instruction-level models — and a preset says which.
#pragma once

#include "gemm/gemm.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// One row of the preset table. Applying it sets GemmOptions' accumulation, fast_accum_bits,
/// fast_accum_group, promotion_interval, fast_accum_promotes and mma (nothing else).
struct AccumulationPreset {
  std::string name;             ///< e.g. "hopper_fp8" (lower case, '_')
  Accumulation accumulation;    ///< the model it parameterises
  int bits = 14;                ///< fraction bits kept below the alignment exponent, plus one
  int group = 32;               ///< products aligned together (K of one MMA step)
  int promotion_interval = 128; ///< N_C, elements of K per promotion window
  bool promotes = true;         ///< promotion into float32 per window (false: scale blocks only)
  bool unsure = false;          ///< the source does not settle the figures
  std::string summary;          ///< one line, with "unsure" where `unsure`
  std::string source;           ///< where the figures come from
  MmaRules rules;               ///< alignment, group-sum normalisation, where C enters
  std::string instruction;      ///< the PTX / ISA instruction it models ("wgmma.mma_async … .e4m3")
  /// Measured evidence this preset reproduces bit for bit ("MATLAB-tensor-core model_validation
  /// H100 E4M3 and E5M2: 10000 of 10000 samples"), or "" when no measured data exist for it.
  std::string measured;
};

/// The table (docs/gemm.md, "Accumulation presets"): hopper_fp8, hopper_fp8_fast_accum,
/// hopper_mma_sync, ada_fp8, blackwell_fp8, blackwell_tcgen05, tcgen05_mxf8f6f4, tcgen05_mxf4nvf4,
/// cdna3_fp8.
const std::vector<AccumulationPreset>& accumulationPresets();

/// The preset of that name (case-insensitive, '-' and '_' the same), or nullopt.
std::optional<AccumulationPreset> accumulationPreset(std::string_view name);

/// "hopper_fp8, hopper_fp8_fast_accum, …" — for help and error messages.
std::string accumulationPresetNames();

/// `opt` with the preset's parameters set (the other fields unchanged).
GemmOptions withAccumulationPreset(GemmOptions opt, const AccumulationPreset& p);

/// "" when `opt` has exactly the preset's parameters, else a message naming the first field that
/// differs and both values (a config that names a preset and sets a parameter to another value).
std::string accumulationPresetMismatch(const GemmOptions& opt, const AccumulationPreset& p);

} // namespace fp8lab

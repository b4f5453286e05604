// FP8 Lab — accumulation presets: named parameter sets of the accumulation models (gemm.h) that
// stand for one architecture's tensor-core accumulation, each with its source. They are MODELS of
// undocumented hardware: NVIDIA documents neither the accumulator width of its FP8 / block-scaled
// MMA instructions nor cuBLAS's promotion interval; the figures come from measurements published
// by DeepSeek and by users in issue threads, and a preset whose source is itself unsure says so.
#pragma once

#include "gemm/gemm.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// One row of the preset table. Applying it sets GemmOptions' accumulation, fast_accum_bits,
/// fast_accum_group, promotion_interval and fast_accum_promotes (nothing else).
struct AccumulationPreset {
  std::string name;             ///< e.g. "hopper_fp8" (lower case, '_')
  Accumulation accumulation;    ///< the model it parameterises
  int bits = 14;                ///< significant bits per aligned group (FastAccum)
  int group = 32;               ///< products aligned together (K of one MMA instruction)
  int promotion_interval = 128; ///< N_C, elements of K per promotion window
  bool promotes = true;         ///< promotion into float32 per window (false: scale blocks only)
  bool unsure = false;          ///< the source does not settle the figure
  std::string summary;          ///< one line, with "unsure" where `unsure`
  std::string source;           ///< where the figures come from
};

/// The table: hopper_fp8, blackwell_fp8, block_scaled_mma (docs/gemm.md, "Accumulation presets").
const std::vector<AccumulationPreset>& accumulationPresets();

/// The preset of that name (case-insensitive, '-' and '_' the same), or nullopt.
std::optional<AccumulationPreset> accumulationPreset(std::string_view name);

/// "hopper_fp8, blackwell_fp8, block_scaled_mma" — for help and error messages.
std::string accumulationPresetNames();

/// `opt` with the preset's parameters set (the other fields unchanged).
GemmOptions withAccumulationPreset(GemmOptions opt, const AccumulationPreset& p);

/// "" when `opt` has exactly the preset's parameters, else a message naming the first field that
/// differs and both values (a config that names a preset and sets a parameter to another value).
std::string accumulationPresetMismatch(const GemmOptions& opt, const AccumulationPreset& p);

} // namespace fp8lab

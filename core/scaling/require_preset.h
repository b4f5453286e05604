// FP8 Lab — checked preset lookups for names the code itself spells: a missing preset is a
// programming error, reported with the known names instead of dereferencing an empty optional.
#pragma once

#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <string_view>

namespace fp8lab {

/// The current-scaling preset `name` (scalingPreset); throws std::invalid_argument naming the
/// known current-scaling presets when there is none.
ScalingConfig requireScalingPreset(std::string_view name);

/// The NVFP4 preset `name` (nvfp4Preset); throws std::invalid_argument naming the known NVFP4
/// presets when there is none.
Nvfp4Config requireNvfp4Preset(std::string_view name);

} // namespace fp8lab

// FP8 Lab — the reports of `fp8lab-cli scaling` and `scale-layout index`: the scaling presets as
// a table, a replay of an amax sequence through delayed scaling (core/scaling/delayed_scaling.h),
// and where the scales of a grid sit in a kernel's scale layout (core/scaling/kernel_layout.h);
// each as the text the command prints and as its JSON. Numbers in the text are the shortest
// round-trip form (shortestText); in the JSON, non-finite numbers are the strings "nan", "inf",
// "-inf".
#pragma once

#include "json/json_document.h"
#include "scaling/delayed_scaling.h"
#include "scaling/kernel_layout.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace fp8lab {

class Format;

/// The scaling presets (scalingPresets(), then nvfp4Presets()) as a JSON array of objects
/// {name, summary, source, delayed (bool), nvfp4 (bool)}, in display order.
Json scalingPresetsJson();

/// The same as text: per preset the name padded to 24 characters, a space, the summary, then a
/// line of 24 spaces, " source: " and the source; the NVFP4 presets after a blank line and a
/// heading line.
std::string scalingPresetsText();

/// One step of a delayed-scaling replay (step counted from 0) as an object: step, amax (the amax
/// given), scale (the stored scale after the step, preset convention), quant_scale,
/// dequant_scale, history (after the step, oldest first: DelayedScaling::historyChronological),
/// kept_previous, scale_used, window_amax, rolled, clamped.
Json delayedStepJson(int64_t step, double amax, const DelayedUpdate& u, const std::vector<float>& history);

/// A replay of `amax` (one per step) through a fresh DelayedScaling(fmt, cfg) as text: a line
/// naming the preset, format (with its max), history length, algorithm, margin and the scale
/// convention; a table with one row per step (step, amax, window amax, scale used, scale, quant,
/// dequant in columns of 5 and 14 characters, then notes: "kept previous", "clamped to FLT_MAX",
/// "no roll"); then the last (up to) 16 entries of the history after the last step.
/// Throws std::invalid_argument as DelayedScaling's constructor does.
std::string delayedSimulationText(const Format& fmt, const DelayedScalingConfig& cfg, const std::vector<double>& amax);

/// Where the scales `at` (pairs (outer, k_block) of the row-major grid g) sit in `layout`, as an
/// object {layout, storage_elements (scaleStorageSize), unit ("byte" for the layouts that hold
/// codes, else "element"), scales: [{outer, k_block, offset}]}; offsets as scaleOffset gives them.
Json scaleIndexJson(ScaleLayout layout, ScaleGridShape g, const std::vector<std::pair<int64_t, int64_t>>& at);

/// The same as text: "<layout> storage of a [O, KB] grid: <size> <unit>s", then one line
/// "  (o, k) -> <unit> <offset>" per scale.
std::string scaleIndexText(ScaleLayout layout, ScaleGridShape g, const std::vector<std::pair<int64_t, int64_t>>& at);

/// Every scale of the grid g in row-major order, written to `out` as it is computed (constant
/// memory, for grids of millions of scales): the text of scaleIndexText, or with `json` the object
/// of scaleIndexJson written compactly on one line (keys in the same order). Returns false when
/// the stream failed.
bool writeScaleIndexGrid(ScaleLayout layout, ScaleGridShape g, bool json, std::ostream& out);

} // namespace fp8lab

// FP8 Lab — the seam between long computations and their callers (CLI progress bar, GUI
// progress dialog): a progress callback that can cancel, and the findings it reports (issue.h).
#pragma once

#include "common/issue.h"

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp8lab {

/// Called from the computing thread with fraction ∈ [0, 1] and a short stage text. Return
/// false to cancel; the computation then throws Cancelled at its next check point, leaving its
/// inputs untouched. An empty function means "no progress wanted".
using ProgressFn = std::function<bool(double fraction, const std::string& stage)>;

/// Thrown when a ProgressFn asked to stop.
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("cancelled") {}
};

/// Calls fn if set; throws Cancelled when it returns false.
inline void reportProgress(const ProgressFn& fn, double fraction, const std::string& stage) {
  if (fn && !fn(fraction, stage)) throw Cancelled();
}

} // namespace fp8lab

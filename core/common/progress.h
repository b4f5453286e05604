// FP8 Lab — the seam between long computations and their callers (CLI progress bar, GUI
// progress dialog): a progress callback that can cancel, and typed warnings.
#pragma once

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

/// A non-fatal finding of a computation: what happened, where, and the detail
/// (for example {"saturated", "layer1/input", "1532 of 100352 elements (1.5%)"}).
struct Warning {
  enum class Severity { Info, Warning, Error };
  Severity severity = Severity::Warning;
  std::string what;
  std::string where;
  std::string detail;
};

/// Calls fn if set; throws Cancelled when it returns false.
inline void reportProgress(const ProgressFn& fn, double fraction, const std::string& stage) {
  if (fn && !fn(fraction, stage)) throw Cancelled();
}

} // namespace fp8lab

// FP8 Lab — device-side checks of the host emulations in core/scaling/scale_rules.h: CUDA's own
// log2f / floorf / exp2f against cudaLog2f / torchaoPow2 compiled for the device.
#pragma once

#include <cstdint>

namespace fp8lab::checks {

/// The result of comparing two float32 functions over every float32 bit pattern in [first, last).
struct MathSweep {
  uint64_t compared = 0;
  uint64_t log2_mismatches = 0;     ///< bits of log2f(s) (libdevice) ≠ bits of cudaLog2f(s)
  uint64_t pow2_mismatches = 0;     ///< exp2f(floorf(log2f(s))) ≠ torchaoPow2(s) (NaN = NaN)
  uint32_t first_log2_mismatch = 0; ///< the bit pattern s of the first (lowest) log2 mismatch
  uint32_t first_pow2_mismatch = 0; ///< the bit pattern s of the first pow2 mismatch
};

/// Runs the comparison on the current device (synchronous). Throws GpuError on CUDA failures.
MathSweep sweepLog2f(uint32_t first, uint32_t last);

} // namespace fp8lab::checks

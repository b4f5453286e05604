// FP8 Lab GPU core — device discovery. Works (and reports why) on machines without a GPU.
#pragma once

#include <string>
#include <vector>

namespace fp8lab::gpu {

/// What the CUDA runtime says about one device.
struct DeviceInfo {
  int index = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0; ///< compute capability (9.0 = Hopper)
  size_t total_memory_bytes = 0;
  size_t free_memory_bytes = 0;
};

/// Result of probing the CUDA runtime. `devices` is empty when no usable device exists; then
/// `reason` holds the runtime's error name and text (e.g. error 35,
/// cudaErrorInsufficientDriver, on build machines that have the toolkit but no driver), or why
/// cuBLASLt could not be loaded on a machine with a device (it is opened only then).
struct ProbeResult {
  std::vector<DeviceInfo> devices;
  int runtime_version = 0;     ///< cudaRuntimeGetVersion, e.g. 13000
  int driver_version = 0;      ///< cudaDriverGetVersion; 0 when no driver is installed
  size_t cublaslt_version = 0; ///< cublasLtGetVersion, e.g. 130100; asked only when a device exists
  int error_code = 0;          ///< cudaError_t of the failing call, 0 on success
  std::string reason;          ///< empty on success
  bool hasDevice() const { return !devices.empty(); }
  /// The device's name, or "no CUDA device (<reason>)".
  std::string summary() const;
};

/// Probes the runtime: device count (initialised to 0 because the runtime leaves it unwritten
/// on error), properties, versions. Never throws; never aborts.
ProbeResult probeDevices();

} // namespace fp8lab::gpu

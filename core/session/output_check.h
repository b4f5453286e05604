// FP8 Lab — refusing, before any computation, a session output path a save could not write.
#pragma once

#include <string>

namespace fp8lab {

/// Why a session could not be saved to `out` (a path as the user gave it, relative to the
/// working directory), or "" when it can: `out` is a directory, its directory does not exist,
/// it exists and is not a regular file (a device, FIFO or socket), it exists and this user may
/// not write it or it has no write permission bit at all (also for root, who could write it),
/// it exists and is empty or not HDF5, it is HDF5 but SessionReader::open refuses it (another
/// program's HDF5, a newer format_version, a damaged file: the check appendRuns makes before it
/// writes; it reads the root and the runs' metadata, never dataset values), or its directory
/// does not let the save create its temporary file (saves write beside, then rename: probed by
/// creating and removing a file, so /proc, /sys and read-only mounts are refused for root too).
/// The reason names `out` as given and the directory as an absolute, cleaned path ("the
/// directory of --out x/y.h5 does not exist", "cannot create files in /proc (Permission denied;
/// ...)", "f.h5 exists and cannot take runs: a valid HDF5 file, but not an FP8 Lab session
/// (...) (...)").
std::string sessionOutputProblem(const std::string& out);

} // namespace fp8lab

// FP8 Lab — replacing a file atomically (the files FP8 Lab writes outside HDF5 sessions:
// safetensors checkpoints, .npy scale-layout files).
#pragma once

#include "session/session.h"

#include <string>
#include <vector>

namespace fp8lab {

/// Writes `bytes` to `path` so that readers see the old file or the whole new one, never a part:
/// a hidden temporary beside the target (".<name>.tmp-XXXXXX", mode 0644), fsync, rename over the
/// target, fsync of the directory. On failure the temporary is removed, the target is untouched,
/// and the Status holds one WriteFailed issue at `path` naming the system error.
Status writeFileAtomically(const std::string& path, const std::vector<unsigned char>& bytes);

} // namespace fp8lab

// FP8 Lab — writing NumPy .npy files (format version 1.0, NEP 1 / numpy's "format.rst"): one
// array, C order, little-endian, so numpy.load and FP8 Lab's importers read it back.
#pragma once

#include "session/session.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fp8lab {

/// Writes `bytes` (the array's little-endian elements, C order) as a .npy file of dtype `descr`
/// ("<f4", "|u1", "<i4", ...) and `shape` (rank ≥ 1), atomically (writeFileAtomically: a hidden
/// temporary beside `path`, fsynced and renamed over it). Errors: InvalidArgument when the byte count does not match
/// shape × element size, WriteFailed when the file cannot be written (nothing is left behind).
Status writeNpy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape,
                const std::vector<unsigned char>& bytes);

/// The same for float32 values and for uint8 codes.
Status writeNpy(const std::string& path, const std::vector<int64_t>& shape, const std::vector<float>& values);
Status writeNpy(const std::string& path, const std::vector<int64_t>& shape, const std::vector<uint8_t>& codes);

} // namespace fp8lab

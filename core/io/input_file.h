// FP8 Lab — reading a whole input file named by a user (a config, a list of values): refusing,
// before reading, what cannot be one, and bounding what is held in memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// What an input file may be (readInputFile).
enum class InputKind {
  Config, ///< a JSON config: a regular file only (a FIFO without a writer would block forever)
  Values, ///< a list of numbers: a regular file, "-" (stdin) or a pipe / FIFO (`--input <(seq 1 9)`)
};

/// The size limits of readInputFile's callers: configs 64 MiB, value lists 64 MiB (about six
/// million numbers; split larger lists).
inline constexpr int64_t kMaxConfigBytes = int64_t(64) << 20;
inline constexpr int64_t kMaxValuesBytes = int64_t(64) << 20;

/// "3.0 GiB", "64.0 MiB" (one decimal, QString::number's 'f' rounding) or "812 bytes": a size in
/// readInputFile's messages.
std::string byteSizeText(int64_t bytes);

/// Reads the whole file `path` (a path in the file system's encoding; "-" is stdin), refusing
/// what cannot be one before reading: a missing path, a directory, a device (/dev/zero,
/// /dev/urandom: endless), stdin, a FIFO or socket for configs, and more than `max_bytes`
/// (checked from the size up front for regular files, while reading for stdin and pipes — never
/// more than max_bytes + 64 KiB bytes are held). `what` names the input in messages ("config",
/// "--input"). On failure returns nullopt and sets *error to one line naming the file and the
/// reason ("--input '/dev/zero' is a device, not a file (a device such as /dev/zero never ends)";
/// "config 'big.json' is 3.0 GiB; the limit is 64.0 MiB"; system errors as strerror words).
std::optional<std::string> readInputFile(const std::string& path, InputKind kind, const std::string& what,
                                         int64_t max_bytes, std::string* error);

/// The words of a value-list input (readInputFile with InputKind::Values, "--input" and
/// kMaxValuesBytes) after a leading UTF-8 byte order mark: split on ASCII white space and commas
/// (valueWords). The views point into *storage, which holds the file's bytes.
std::optional<std::vector<std::string_view>> readValueWords(const std::string& path, std::string* storage,
                                                            std::string* error);

/// The numbers of a value-list input (readValueWords, each word by parseNumber); nullopt with
/// *error naming the file and the 1-based item ("--input 'v.txt': item 3: not a number: 'x'").
std::optional<std::vector<double>> readNumberFile(const std::string& path, std::string* error);

} // namespace fp8lab

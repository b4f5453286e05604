// FP8 Lab — helpers shared by the libFuzzer targets in tests/fuzz (see README.md).
//
// The session loader and the importers take a path, so the file-format targets write each input
// to one scratch file per process (in /dev/shm when present: no disk traffic) and read it back
// through the public API, exactly as a user opening a file would.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace fp8lab::fuzz {

/// Writes data to a per-process scratch file ending in `suffix` and returns its path.
/// Aborts (a fuzzer finding, not an input problem) when the scratch file cannot be written.
inline std::string scratchFile(const uint8_t* data, size_t size, const char* suffix) {
  static std::string path;
  if (path.empty()) {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    path = std::string(dir) + "/fp8lab-fuzz-" + std::to_string(getpid()) + suffix;
  }
  // A new file (new inode) per input, as the app's atomic saves make: libhdf5 keys open files by
  // device and inode, so rewriting one in place could let it mistake the new input for the old.
  ::unlink(path.c_str());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
  return path;
}

} // namespace fp8lab::fuzz

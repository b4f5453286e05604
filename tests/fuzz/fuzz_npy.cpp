// libFuzzer target: NumPy .npy importer (core/io importNpy). Any byte string must give either a
// Dataset whose stored element count matches its shape, or typed errors — never a crash, a hang,
// an unbounded allocation or a leak.
#include "fuzz_util.h"
#include "io/tensor_import.h"

using namespace fp8lab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratchFile(data, size, ".npy");
  const Result<Dataset> r = importNpy(path);
  if (r.ok()) {
    // Invariants of a successful import (tensor_import.h): rank 1 or 2, data matches shape.
    if (r.value.shape.empty() || r.value.shape.size() > 2) __builtin_trap();
    if (r.value.storedCount() != r.value.elementCount()) __builtin_trap();
  } else if (r.issues.empty()) {
    __builtin_trap(); // an error must say what is wrong
  }
  return 0;
}

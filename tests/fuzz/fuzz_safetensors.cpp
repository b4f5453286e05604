// libFuzzer target: safetensors importer (core/io listSafetensors / importSafetensors). Lists the
// header, then imports every listed tensor (and one name that is not listed).
#include "fuzz_util.h"
#include "io/tensor_import.h"

using namespace fp8lab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratchFile(data, size, ".safetensors");
  const auto list = listSafetensors(path);
  if (!list.ok()) {
    if (list.issues.empty()) __builtin_trap();
    // The importer must refuse a file whose header does not parse, too.
    if (importSafetensors(path, "x").ok()) __builtin_trap();
    return 0;
  }
  int imported = 0;
  for (const TensorEntry& e : list.value) {
    if (++imported > 16) break; // enough: every entry goes through the same code
    const Result<Dataset> r = importSafetensors(path, e.name);
    if (r.ok()) {
      if (!e.importable) __builtin_trap(); // listed as not importable, yet imported
      if (r.value.storedCount() != r.value.elementCount()) __builtin_trap();
    }
  }
  (void)importSafetensors(path, "\x01no such tensor");
  (void)importTensor(path); // the spec dispatcher: a single-tensor file needs no name
  return 0;
}

// libFuzzer target: IDX reader (core/training idx_reader) — the gzip layer and the IDX parser.
// The first input byte picks the path: even → the bytes are an IDX file; odd → they are a gzip
// stream (decompressed with a 1 MiB cap, then parsed). parseIdx / gunzip throw IdxError on bad
// input (their documented contract); any other exception or a crash is a finding.
#include "training/idx_reader.h"

#include <cstdint>
#include <vector>

using namespace fp8lab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool gz = data[0] & 1;
  const int expect_dims = (data[0] >> 1) & 3; // 0 = any, 1..3
  std::vector<uint8_t> bytes(data + 1, data + size);
  try {
    if (gz) bytes = gunzip(bytes, "fuzz.gz", int64_t{1} << 20);
    const IdxArray a = parseIdx(bytes, "fuzz", expect_dims, int64_t{1} << 24);
    if (a.count() != static_cast<int64_t>(a.data.size())) __builtin_trap();
  } catch (const IdxError&) {
  }
  return 0;
}

// Bulk conversion throughput: FP8 Lab's float32 → E4M3FN / E5M2 encoders (RNE, saturating) and
// the LUT decoder, single thread, 16 Mi elements, next to the peers measured in the same run:
//   (a) a loop over CUDA 13's host conversion __nv_cvt_float_to_fp8 (what a C++ user reaches for),
//   (b) memcpy of the same float32 bytes (the memory-bandwidth limit).
// Targets: encode ≥ 10× the CUDA-host loop and ≥ 25% of memcpy's element rate;
// decode ≥ 50% of it. Run: build/tests/bench/bench_formats --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include "formats/format.h"

#include <cstring>
#include <random>
#include <vector>

#if defined(FP8LAB_HAVE_CUDA_FP8_HOST)
#include <cuda_fp8.h>
#endif

namespace {

constexpr std::size_t kN = std::size_t{1} << 24; // 16 Mi elements

const std::vector<float>& inputs() {
  // Values spread over the E4M3FN/E5M2 ranges with random signs (log-uniform magnitudes),
  // including some beyond max and some subnormal, like a scaled activation tensor.
  static const std::vector<float> v = [] {
    std::vector<float> x(kN);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> e(-12.0f, 17.0f);
    for (auto& f : x) f = (rng() & 1 ? -1.0f : 1.0f) * std::exp2(e(rng));
    return x;
  }();
  return v;
}

void setCounters(benchmark::State& st) {
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(kN));
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(kN * sizeof(float)));
}

void BM_Encode(benchmark::State& st, const fp8lab::Format& f) {
  const auto& in = inputs();
  std::vector<uint8_t> out(kN);
  for (auto _ : st) {
    f.encodeBulk(in.data(), out.data(), kN);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  setCounters(st);
}

void BM_Decode(benchmark::State& st, const fp8lab::Format& f) {
  std::vector<uint8_t> codes(kN);
  f.encodeBulk(inputs().data(), codes.data(), kN);
  std::vector<float> out(kN);
  for (auto _ : st) {
    f.decodeBulk(codes.data(), out.data(), kN);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  setCounters(st);
}

void BM_MemcpyFloat32(benchmark::State& st) {
  const auto& in = inputs();
  std::vector<float> out(kN);
  for (auto _ : st) {
    std::memcpy(out.data(), in.data(), kN * sizeof(float));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  setCounters(st);
}

#if defined(FP8LAB_HAVE_CUDA_FP8_HOST)
void BM_CudaHostEncode(benchmark::State& st, __nv_fp8_interpretation_t kind) {
  const auto& in = inputs();
  std::vector<uint8_t> out(kN);
  for (auto _ : st) {
    for (std::size_t i = 0; i < kN; ++i) out[i] = __nv_cvt_float_to_fp8(in[i], __NV_SATFINITE, kind);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  setCounters(st);
}
BENCHMARK_CAPTURE(BM_CudaHostEncode, E4M3FN_cuda_host, __NV_E4M3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CudaHostEncode, E5M2_cuda_host, __NV_E5M2)->Unit(benchmark::kMillisecond);
#endif

BENCHMARK(BM_MemcpyFloat32)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, E4M3FN, fp8lab::Format::E4M3FN())->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, E5M2, fp8lab::Format::E5M2())->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, E4M3FN, fp8lab::Format::E4M3FN())->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, E5M2, fp8lab::Format::E5M2())->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();

// NVFP4 quantization cost on a 4096×4096 float32 tensor (N(0,1), 16.8 M elements), next to the peer
// measured in the same run: core's quantize() with preset mx_rceil and Format::E2M1() (MXFP4: one
// E8M0 scale per 1×32 block, the other FP4 block format) on the same tensor. The ratio
// preset / peer at the same thread count is the cost of NVFP4's two-level scales (E4M3 block scale,
// fp32 tensor scale, an extra amax pass) and of each option: 16×16 tiles, the RHT (BF16 rounding,
// a 16-point transform per block and a second buffer), stochastic rounding (one random word per 4
// elements). /1 runs one thread, /2 two.
//   ./build/tests/bench/bench_nvfp4 --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include "bench_tensor.h"

#include "formats/format.h"
#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <random>
#include <vector>

using namespace fp8lab;

namespace {

constexpr int64_t kN = bench::kTensorN;

const std::vector<float>& data() {
  return bench::normalTensor();
}

void BM_PeerMxRceilE2M1(benchmark::State& st) {
  const auto& x = data();
  ScalingConfig c = *scalingPreset("mx_rceil");
  c.threads = static_cast<int>(st.range(0));
  for (auto _ : st) {
    QuantizedTensor q = quantize(x.data(), kN, kN, Format::E2M1(), c, Axis::Cols);
    benchmark::DoNotOptimize(q.codes.data());
  }
  st.SetItemsProcessed(st.iterations() * static_cast<int64_t>(x.size()));
}

void BM_Nvfp4(benchmark::State& st, const char* preset, Axis axis) {
  const auto& x = data();
  Nvfp4Config c = *nvfp4Preset(preset);
  c.threads = static_cast<int>(st.range(0));
  for (auto _ : st) {
    Nvfp4Tensor q = quantizeNvfp4(x.data(), kN, kN, c, axis);
    benchmark::DoNotOptimize(q.codes.data());
  }
  st.SetItemsProcessed(st.iterations() * static_cast<int64_t>(x.size()));
}

} // namespace

BENCHMARK(BM_PeerMxRceilE2M1)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Nvfp4, nvfp4_te, "nvfp4_te", Axis::Cols)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Nvfp4, nvfp4_te_rows, "nvfp4_te", Axis::Rows)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Nvfp4, nvfp4_te_2d, "nvfp4_te_2d", Axis::Cols)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Nvfp4, nvfp4_torchao, "nvfp4_torchao", Axis::Cols)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Nvfp4, nvfp4_te_rht_rows, "nvfp4_te_rht", Axis::Rows)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Nvfp4, nvfp4_te_sr, "nvfp4_te_sr", Axis::Cols)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();

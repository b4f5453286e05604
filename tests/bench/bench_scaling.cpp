// Quantization cost of the scaling strategies on a 4096×4096 float32 tensor, next to the peer
// measured in the same run: a plain float32 → E4M3FN encodeBulk of the same 16.8 M elements
// with one fixed scale (no amax pass, no stats), single-threaded. The ratio strategy / peer at
// 1 thread (/1) is the overhead of the amax pass, the per-block scale rule and the statistics;
// /2 runs quantize on two threads. BM_BlockStats is computeBlockStats (metrics/block_stats.h, full
// detail) of the quantized tensor against its input, single-threaded, next to its peer
// BM_Quantize of the same preset at /1: what the training diagnostics add per operand and step.
//   ./build/tests/bench/bench_scaling --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include "bench_tensor.h"

#include "formats/format.h"
#include "metrics/block_stats.h"
#include "scaling/scaling.h"

#include <random>
#include <vector>

using namespace fp8lab;

namespace {

constexpr int64_t kN = bench::kTensorN;

const std::vector<float>& data() {
  return bench::normalTensor();
}

void BM_PlainEncodeBulk(benchmark::State& st) {
  const auto& x = data();
  std::vector<uint8_t> out(x.size());
  for (auto _ : st) {
    Format::E4M3FN().encodeBulk(x.data(), out.data(), x.size(), {}, 100.0f);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations() * static_cast<int64_t>(x.size()));
}

void BM_Quantize(benchmark::State& st, const char* preset, Axis axis) {
  const auto& x = data();
  ScalingConfig c = *scalingPreset(preset);
  c.threads = static_cast<int>(st.range(0));
  for (auto _ : st) {
    QuantizedTensor q = quantize(x.data(), kN, kN, Format::E4M3FN(), c, axis);
    benchmark::DoNotOptimize(q.codes.data());
  }
  st.SetItemsProcessed(st.iterations() * static_cast<int64_t>(x.size()));
}

void BM_BlockStats(benchmark::State& st, const char* preset) {
  const auto& x = data();
  ScalingConfig c = *scalingPreset(preset);
  c.threads = 1;
  const QuantizedTensor q = quantize(x.data(), kN, kN, Format::E4M3FN(), c, Axis::Cols);
  BlockStatsMap m;
  for (auto _ : st) {
    const BlockStatsSummary s = computeBlockStats(x.data(), q, m, BlockStatsDetail::Full);
    benchmark::DoNotOptimize(s.sqnr_db);
  }
  st.SetItemsProcessed(st.iterations() * static_cast<int64_t>(x.size()));
}

/// An MX preset with its own element format (mx_even's rule reads the element's mantissa width).
void BM_QuantizeMx(benchmark::State& st, const char* preset, const Format* fmt) {
  const auto& x = data();
  ScalingConfig c = *scalingPreset(preset);
  c.threads = static_cast<int>(st.range(0));
  for (auto _ : st) {
    QuantizedTensor q = quantize(x.data(), kN, kN, *fmt, c, Axis::Cols);
    benchmark::DoNotOptimize(q.codes.data());
  }
  st.SetItemsProcessed(st.iterations() * static_cast<int64_t>(x.size()));
}

/// MXINT8 (quantizeMxInt8: FLOOR, emax 0, int8 elements), single-threaded by construction.
void BM_QuantizeMxInt8(benchmark::State& st) {
  const auto& x = data();
  for (auto _ : st) {
    MxInt8Tensor q = quantizeMxInt8(x.data(), kN, kN, Axis::Cols);
    benchmark::DoNotOptimize(q.codes.data());
  }
  st.SetItemsProcessed(st.iterations() * static_cast<int64_t>(x.size()));
}

} // namespace

BENCHMARK(BM_PlainEncodeBulk)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Quantize, te_current, "te_current", Axis::Cols)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Quantize, per_row, "per_row", Axis::Cols)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Quantize, per_column, "per_column", Axis::Cols)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Quantize, deepgemm_1x128, "deepgemm_1x128", Axis::Cols)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Quantize, deepgemm_1x128_rows, "deepgemm_1x128", Axis::Rows)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Quantize, deepgemm_128x128, "deepgemm_128x128", Axis::Cols)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Quantize, mx_rceil, "mx_rceil", Axis::Cols)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Quantize, mx_floor, "mx_floor", Axis::Cols)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Quantize, mx_even, "mx_even", Axis::Cols)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_QuantizeMx, mx_floor_e2m1, "mx_floor", &Format::E2M1())
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_QuantizeMx, mx_even_e2m1, "mx_even", &Format::E2M1())
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_BlockStats, te_current, "te_current")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_BlockStats, mx_rceil, "mx_rceil")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_BlockStats, deepgemm_1x128, "deepgemm_1x128")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_QuantizeMxInt8)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();

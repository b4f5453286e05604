// FP8 Lab — the kernel check's fit (core/gemm/kernel_check.h) at 1024×1024×1024, beside its peer,
// one exact reference GEMM of the same shape (the double-accumulating Exact model), in the same run.
//
//   exact_gemm_1024   — Accumulation::Exact on the same operands (the check's default reference)
//   fit_1024          — fitAccumulation with the default grid (bits 10..28 × groups 1..64 in powers
//                       of two × N_C 32..512 and no promotion, each with the measured MMA rules and
//                       DeepSeek-V3's prose rules, plus the reference models: 1605 candidates),
//                       observed D = the hopper_fp8 preset's output (the measured H100 rules)
//   check_1024        — checkKernelOutput: the reference, the comparison and the fit
// Target: the fit ≤ 60 s on 2 cores. The ratio fit / exact GEMM is printed as a counter.
// Operands: N(0,1) quantized per tensor to E4M3FN (te_current), seeded.
#include <benchmark/benchmark.h>

#include "formats/format.h"
#include "gemm/accumulation_preset.h"
#include "gemm/gemm.h"
#include "gemm/kernel_check.h"
#include "gemm/random_matrix.h"
#include "scaling/scaling.h"

#include <chrono>
#include <cstdio>
#include <memory>

using namespace fp8lab;

namespace {

struct Problem {
  QuantizedTensor a, b;
  ObservedOutput observed;
};

const Problem& problem(int64_t n) {
  static std::unique_ptr<Problem> p;
  if (!p) {
    p = std::make_unique<Problem>();
    const std::vector<float> xa = randomMatrix(n, n, 1, {}, 1), xb = randomMatrix(n, n, 1, {}, 2);
    const ScalingConfig sc = *scalingPreset("te_current");
    p->a = quantize(xa.data(), n, n, Format::E4M3FN(), sc, Axis::Cols);
    p->b = quantize(xb.data(), n, n, Format::E4M3FN(), sc, Axis::Rows);
    const GemmOptions hopper = withAccumulationPreset(GemmOptions{}, *accumulationPreset("hopper_fp8"));
    const GemmOutput d = makeCpuGemmBackend()->run(p->a, p->b, hopper);
    p->observed.rows = n;
    p->observed.cols = n;
    p->observed.values = d.d;
  }
  return *p;
}

double g_exact_seconds = 0;

void exactGemm(benchmark::State& st) {
  const Problem& p = problem(st.range(0));
  auto cpu = makeCpuGemmBackend();
  GemmOptions o;
  o.accumulation = Accumulation::Exact;
  o.threads = static_cast<int>(st.range(1));
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(cpu->run(p.a, p.b, o).d.data());
    g_exact_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
}

void fit(benchmark::State& st) {
  const Problem& p = problem(st.range(0));
  GemmOptions base;
  base.threads = static_cast<int>(st.range(1));
  FitResult r;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    r = fitAccumulation(p.a, p.b, base, p.observed);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    st.counters["fit_s"] = s;
    if (g_exact_seconds > 0) st.counters["fit_over_exact_gemm"] = s / g_exact_seconds;
  }
  st.counters["candidates"] = double(r.candidates);
  st.counters["best_identical_share"] = r.best.comparison.identicalShare();
  st.SetLabel(r.verdict.substr(0, 90));
}

void check(benchmark::State& st) {
  const Problem& p = problem(st.range(0));
  GemmOptions base;
  base.threads = static_cast<int>(st.range(1));
  for (auto _ : st) benchmark::DoNotOptimize(checkKernelOutput(p.a, p.b, base, p.observed).fit.candidates);
}

} // namespace

BENCHMARK(exactGemm)->Args({1024, 2})->Unit(benchmark::kSecond)->Iterations(1)->Repetitions(2)->UseRealTime();
BENCHMARK(fit)->Args({1024, 2})->Unit(benchmark::kSecond)->Iterations(1)->Repetitions(2)->UseRealTime();
BENCHMARK(check)->Args({1024, 2})->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

BENCHMARK_MAIN();

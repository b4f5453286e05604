// One epoch of the default FP8 MLP (784-256-128-10, batch 128, 469 steps on the 60 000
// Fashion-MNIST training images) on the CPU backend, next to the FP32 baseline epoch measured
// in the same run. Each FP8 step quantizes 8 operands and runs 8 FP8 GEMMs through core/gemm
// (3 forward, 3 wgrad, 2 dgrad — fc1's dgrad is not needed).
// Target: one FP8 epoch ≤ 60 s on 2 cores, with progress shown.
// Counters: epoch_s = wall time of the epoch's 469 training steps (test evaluation excluded),
// step_ms = per step, eval_s = the test-set evaluation after the epoch, ratio_vs_fp32 = this
// epoch / the FP32 baseline epoch of the same run (FP32 first), cpu_s = CPU seconds of all
// threads for epoch + evaluation (what the epoch costs when the machine is shared).
// The `_check_off` row is fp8_delayed_flax_2t with on_nonfinite "off": the rows differ by the
// cost of the first-non-finite check (docs/training.md), the other rows check (the default).
// Diagnostics (docs/training.md "Per-block statistics"): every row records per-block statistics
// (the default) except the `_diag_off` rows (block_stats false); `_what_if5` adds the default
// experiment's five what-if recipes every 50 steps. The te_mxfp8 pair is the same comparison for
// a block recipe (its per-step statistics cover ~14 000 blocks).
// Run: build/tests/bench/bench_training   (needs the dataset-fashion-mnist package)
#include <benchmark/benchmark.h>

#include "training/diagnostics.h"
#include "training/fashion_mnist.h"
#include "training/trainer.h"

#include <cstdio>
#include <ctime>

using namespace fp8lab;

namespace {

const FashionMnist* data() {
  static FashionMnist* fm = [] {
    try {
      return new FashionMnist(loadFashionMnist());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_training: %s\n", e.what());
      return static_cast<FashionMnist*>(nullptr);
    }
  }();
  return fm;
}

double g_fp32_epoch_s = 0;

double processCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

enum class Diag { On, Off, WhatIf5 };

void epoch(benchmark::State& st, TrainingPrecision prec, TrainingScalingKind kind, int threads,
           NonFinitePolicy on_nonfinite = NonFinitePolicy::Stop, Diag diag = Diag::On,
           TrainingRecipe recipe = TrainingRecipe::PerTensor) {
  const FashionMnist* fm = data();
  if (!fm) {
    st.SkipWithError("Fashion-MNIST missing: sudo apt-get install dataset-fashion-mnist");
    return;
  }
  double epoch_s = 0, eval_s = 0, cpu_s = 0;
  for (auto _ : st) {
    const double c0 = processCpuSeconds();
    TrainingConfig c;
    c.precision = prec;
    c.scaling.kind = kind;
    c.epochs = 1;
    c.on_nonfinite = on_nonfinite;
    c.recipe.recipe = recipe;
    c.diagnostics.block_stats = diag != Diag::Off;
    if (diag == Diag::WhatIf5)
      for (const char* id : {"te_current", "delayed_L16", "te_block_1x128", "mx_rceil", "nvfp4_te"})
        c.diagnostics.what_if.push_back(*parseWhatIfRecipe(id, nullptr));
    c.threads = threads;
    c.forward_gemm.threads = c.backward_gemm.threads = threads;
    TrainingRun run(c, fm->train, fm->test);
    run.run();
    epoch_s = run.result().epochs.at(0).seconds;
    eval_s = run.result().seconds - epoch_s;
    benchmark::DoNotOptimize(run.result().loss.back());
    cpu_s = processCpuSeconds() - c0;
  }
  if (prec == TrainingPrecision::FP32 && threads == 2) g_fp32_epoch_s = epoch_s;
  st.counters["epoch_s"] = epoch_s;
  st.counters["step_ms"] = 1000.0 * epoch_s / 469.0;
  st.counters["eval_s"] = eval_s;
  st.counters["cpu_s"] = cpu_s; // CPU time of all threads, epoch + evaluation: stable on a busy machine
  if (g_fp32_epoch_s > 0) st.counters["ratio_vs_fp32"] = epoch_s / g_fp32_epoch_s;
}

} // namespace

BENCHMARK_CAPTURE(epoch, fp32_baseline_2t, TrainingPrecision::FP32, TrainingScalingKind::DelayedFlax, 2)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(epoch, fp8_delayed_flax_2t, TrainingPrecision::FP8, TrainingScalingKind::DelayedFlax, 2)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(epoch, fp8_delayed_flax_2t_check_off, TrainingPrecision::FP8, TrainingScalingKind::DelayedFlax, 2,
                  NonFinitePolicy::Off)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(epoch, fp8_delayed_flax_2t_diag_off, TrainingPrecision::FP8, TrainingScalingKind::DelayedFlax, 2,
                  NonFinitePolicy::Stop, Diag::Off)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(epoch, fp8_delayed_flax_2t_what_if5, TrainingPrecision::FP8, TrainingScalingKind::DelayedFlax, 2,
                  NonFinitePolicy::Stop, Diag::WhatIf5)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(epoch, te_mxfp8_2t, TrainingPrecision::FP8, TrainingScalingKind::DelayedFlax, 2,
                  NonFinitePolicy::Stop, Diag::On, TrainingRecipe::TeMxfp8)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(epoch, te_mxfp8_2t_diag_off, TrainingPrecision::FP8, TrainingScalingKind::DelayedFlax, 2,
                  NonFinitePolicy::Stop, Diag::Off, TrainingRecipe::TeMxfp8)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(epoch, fp8_delayed_te_2t, TrainingPrecision::FP8, TrainingScalingKind::DelayedTE, 2)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(epoch, fp8_current_te_2t, TrainingPrecision::FP8, TrainingScalingKind::CurrentTE, 2)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(epoch, fp8_delayed_flax_1t, TrainingPrecision::FP8, TrainingScalingKind::DelayedFlax, 1)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

BENCHMARK_MAIN();

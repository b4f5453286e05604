// Training steps of the tiny transformer language model at the default size of
// resources/experiments/transformer-lm.json (d_model 64, 2 blocks, 4 heads, context 64, FFN 256,
// batch 16: 1024 tokens a step) on 2 threads, the FP32 step first and every low-precision recipe
// beside it in the same run (machines are noisy: compare rows of one run, not across runs).
// Targets (docs/training.md): per-tensor FP8 ≤ 1.3× the FP32 step, MXFP8 ≤ 1.6×, NVFP4 ≤ 2.5×;
// the probes and per-block statistics at their default cadence ≤ 20 % of a step.
// Counters: step_ms = mean wall time of a training step (forward, backward, clipping, optimizer;
// no evaluation and no probes), ratio_vs_fp32 = step_ms / the FP32 row's, run_ms_per_step = the
// whole run's wall time per step (evaluation, probes, snapshots and statistics included, at the
// row's cadence), overhead = run_ms_per_step / the same recipe's bare row − 1.
// Run: build/tests/bench/bench_transformer   (needs the Debian package fortunes)
#include <benchmark/benchmark.h>

#include "training/lm_trainer.h"
#include "training/text_corpus.h"

#include <cstdio>
#include <map>
#include <string>

using namespace fp8lab;

namespace {

const TextCorpus* corpus() {
  static TextCorpus* c = [] {
    std::string why;
    auto t = loadFortunes(&why);
    if (!t) {
      std::fprintf(stderr, "bench_transformer: %s\n", why.c_str());
      return static_cast<TextCorpus*>(nullptr);
    }
    return new TextCorpus(std::move(*t));
  }();
  return c;
}

std::map<std::string, double> g_step_ms, g_run_ms;

enum class Recipe { Fp32, PerTensor, Mxfp8, Nvfp4 };

void steps(benchmark::State& st, Recipe recipe, bool instruments, const char* key) {
  const TextCorpus* c = corpus();
  if (!c) {
    st.SkipWithError("the fortunes corpus is missing: apt-get install fortunes");
    return;
  }
  LmTrainingConfig cfg;
  cfg.steps = 100;
  cfg.threads = 2;
  cfg.forward_gemm.threads = cfg.backward_gemm.threads = 2;
  cfg.forward_gemm.accumulation = cfg.backward_gemm.accumulation = Accumulation::SplitFP32;
  cfg.forward_gemm.promotion_interval = cfg.backward_gemm.promotion_interval = 128;
  cfg.eval_every = 1000000; // one validation, at the end
  cfg.eval_batches = 1;
  cfg.sample_bytes = 0;
  cfg.precision = recipe == Recipe::Fp32 ? TrainingPrecision::FP32 : TrainingPrecision::FP8;
  cfg.scaling.kind = TrainingScalingKind::CurrentTE;
  if (recipe == Recipe::Mxfp8) cfg.recipe.recipe = TrainingRecipe::TeMxfp8;
  if (recipe == Recipe::Nvfp4) cfg.recipe.recipe = TrainingRecipe::TeNvfp4;
  cfg.block_gemm = BlockGemmPath::Core;
  if (!instruments) {
    cfg.probes.every = 0;
    cfg.probes.attention_every = 0;
    cfg.diagnostics.block_stats = false;
  }
  double step_s = 0, run_s = 0;
  for (auto _ : st) {
    LmTrainingRun run(cfg, *c);
    run.run();
    step_s = run.result().step_seconds;
    run_s = run.result().seconds / double(cfg.steps);
  }
  st.counters["step_ms"] = 1000 * step_s;
  st.counters["run_ms_per_step"] = 1000 * run_s;
  g_step_ms[key] = step_s;
  g_run_ms[key] = run_s;
  if (g_step_ms.count("fp32") && g_step_ms["fp32"] > 0) st.counters["ratio_vs_fp32"] = step_s / g_step_ms["fp32"];
  if (instruments) {
    const std::string bare = std::string(key).substr(0, std::string(key).find('+'));
    if (g_run_ms.count(bare) && g_run_ms[bare] > 0) st.counters["overhead"] = run_s / g_run_ms[bare] - 1.0;
  }
}

} // namespace

// A first FP32 run warms the caches, the worker pool and the page cache of the corpus, so the FP32
// row every ratio is taken against is not the cold one.
BENCHMARK_CAPTURE(steps, warmup_fp32, Recipe::Fp32, false, "warmup")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(steps, fp32, Recipe::Fp32, false, "fp32")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(steps, fp8_current_te, Recipe::PerTensor, false, "fp8")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(steps, te_mxfp8_core, Recipe::Mxfp8, false, "mxfp8")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(steps, te_nvfp4_core, Recipe::Nvfp4, false, "nvfp4")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(steps, fp32_probes_stats, Recipe::Fp32, true, "fp32+")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(steps, fp8_current_te_probes_stats, Recipe::PerTensor, true, "fp8+")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

BENCHMARK_MAIN();

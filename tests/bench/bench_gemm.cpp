// FP8 Lab — CPU FP8 GEMM benchmark.
//
// What a user does today to multiply FP8-quantized matrices on a CPU is dequantize and call
// sgemm. This program times, in the same run and on the same FP32 matrices:
//   fp8_quantize_gemm  — per-tensor E4M3FN quantization of A and B (te_current) + the CPU FP8
//                        GEMM with the FP32 accumulation model (AVX512-BF16 kernel when present)
//   fp8_gemm           — the GEMM alone (operands quantized once)
//   fp8_gemm_portable  — the GEMM alone on the portable kernel (bit-identical result)
//   sgemm              — OpenBLAS cblas_sgemm, openblas_set_num_threads = the same thread count
// for M = N = K = 1024 and 2048 with 1 and 2 threads, and prints the ratio of each to sgemm
// (target ≤ 1.5 for fp8_quantize_gemm; ≤ 1.0 for fp8Gemm at 1024³ on 2 threads). gemmExperiment
// times the whole GEMM experiment of core/experiment at 2048³ on 2 threads (target ≤ 12× sgemm),
// gemmExperimentPeakMemory its peak memory at 4096³ (target ≤ 1.5 GB). It also times the error
// metrics of a 4096×4096 output (target ≤ 0.5 s).
//
// OpenBLAS picks its kernels from the CPU it detects; under some hypervisors it falls back to
// a generic core ("Prescott") that is several times slower. The core name is printed; for a
// fair baseline set OPENBLAS_CORETYPE (e.g. SkylakeX or Cooperlake) in the environment.
#include <benchmark/benchmark.h>

#include "formats/format.h"
#include "gemm/gemm.h"
#include "gemm/error_split.h"
#include "gemm/random_matrix.h"
#include "metrics/error_metrics.h"
#if FP8LAB_BENCH_HAVE_DATA
#include "experiment/gemm/gemm_run.h"
#endif
#include "scaling/scaling.h"

#if FP8LAB_HAVE_CBLAS
#include <cblas.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <map>
#include <vector>

using namespace fp8lab;

namespace {

struct Inputs {
  std::vector<float> a, b;
};

const Inputs& inputs(int64_t n) {
  static std::map<int64_t, Inputs> cache;
  auto it = cache.find(n);
  if (it == cache.end())
    it = cache.emplace(n, Inputs{randomMatrix(n, n, 1, {}, 0), randomMatrix(n, n, 1, {}, 1)}).first;
  return it->second;
}

ScalingConfig perTensor() {
  return *scalingPreset("te_current");
}

GemmOptions fp32Options(int threads, CpuKernel kernel = CpuKernel::Auto) {
  GemmOptions o;
  o.accumulation = Accumulation::FP32;
  o.output = OutputType::FP32;
  o.threads = threads;
  o.cpu_kernel = kernel;
  return o;
}

void setFlops(benchmark::State& state, int64_t n) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(n) * n * n, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void fp8QuantizeGemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const Inputs& in = inputs(n);
  auto backend = makeCpuGemmBackend();
  const ScalingConfig cfg = perTensor();
  std::string algo;
  for (auto _ : state) {
    const QuantizedTensor qa = quantize(in.a.data(), n, n, Format::E4M3FN(), cfg, Axis::Cols);
    const QuantizedTensor qb = quantize(in.b.data(), n, n, Format::E4M3FN(), cfg, Axis::Rows);
    GemmOutput out = backend->run(qa, qb, fp32Options(threads));
    benchmark::DoNotOptimize(out.d.data());
    algo = out.algorithm;
  }
  state.SetLabel(algo);
  setFlops(state, n);
}

void fp8Gemm(benchmark::State& state, CpuKernel kernel) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const Inputs& in = inputs(n);
  auto backend = makeCpuGemmBackend();
  const QuantizedTensor qa = quantize(in.a.data(), n, n, Format::E4M3FN(), perTensor(), Axis::Cols);
  const QuantizedTensor qb = quantize(in.b.data(), n, n, Format::E4M3FN(), perTensor(), Axis::Rows);
  std::string algo;
  for (auto _ : state) {
    GemmOutput out = backend->run(qa, qb, fp32Options(threads, kernel));
    benchmark::DoNotOptimize(out.d.data());
    algo = out.algorithm;
  }
  state.SetLabel(algo);
  setFlops(state, n);
}

/// fp8Gemm (Auto kernel) with the full epilogue on the same shape: alpha = 0.75, beta = −1.5 with a
/// C [n,n] and a bias [n] (the epilogue's one extra pass over D).
void fp8GemmEpilogue(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const Inputs& in = inputs(n);
  auto backend = makeCpuGemmBackend();
  const QuantizedTensor qa = quantize(in.a.data(), n, n, Format::E4M3FN(), perTensor(), Axis::Cols);
  const QuantizedTensor qb = quantize(in.b.data(), n, n, Format::E4M3FN(), perTensor(), Axis::Rows);
  GemmOptions o = fp32Options(threads, CpuKernel::Auto);
  o.alpha = 0.75f;
  o.beta = -1.5f;
  o.c = std::make_shared<const std::vector<float>>(in.a.begin(), in.a.begin() + n * n);
  o.bias = std::make_shared<const std::vector<float>>(in.b.begin(), in.b.begin() + n);
  std::string algo;
  for (auto _ : state) {
    GemmOutput out = backend->run(qa, qb, o);
    benchmark::DoNotOptimize(out.d.data());
    algo = out.algorithm;
  }
  state.SetLabel(algo + ", epilogue alpha beta·C bias");
  setFlops(state, n);
}

/// The error split of core/gemm alone (quantize both operands, the float64 ideal and
/// quantized-exact references, the FP8 GEMM in the default split model, the three error
/// comparisons), beside sgemm of the same shape in the ratio table.
void gemmErrorSplit(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const Inputs& in = inputs(n);
  auto backend = makeCpuGemmBackend();
  GemmOptions o;
  o.threads = threads;
  std::string algo;
  for (auto _ : state) {
    ScalingConfig cfg = perTensor();
    cfg.threads = threads;
    const QuantizedTensor qa = quantize(in.a.data(), n, n, Format::E4M3FN(), cfg, Axis::Cols);
    const QuantizedTensor qb = quantize(in.b.data(), n, n, Format::E4M3FN(), cfg, Axis::Rows);
    const GemmExperimentResult r = runGemmExperiment(in.a.data(), in.b.data(), qa, qb, o, backend.get());
    benchmark::DoNotOptimize(r.total.sqnr_db);
    algo = r.output.algorithm;
  }
  state.SetLabel(algo);
}

#if FP8LAB_BENCH_HAVE_DATA
/// The whole GEMM experiment, as `fp8lab-cli gemm`, `fp8lab-cli run` and the desktop app's
/// Experiment panel run it: core/experiment's runGemmExperimentRun on the default config at
/// M = N = K = n (seeded normal operands, E4M3FN, te_current, split accumulation, FP32 output):
/// operands, quantize, the FP8 GEMM, the float64 ideal and quantized-exact references, the error
/// split, metrics, error maps, tile maps and per-block statistics, packed into a session Run.
/// Beside sgemm of the same shape in the ratio table. Target (2048³, 2 threads): ≤ 12× sgemm.
void gemmExperiment(benchmark::State& state) {
  GemmExperimentConfig cfg;
  cfg.m = cfg.n = cfg.k = state.range(0);
  cfg.gemm.threads = static_cast<int>(state.range(1));
  auto backend = makeCpuGemmBackend();
  for (auto _ : state) {
    Result<Run> r = runGemmExperimentRun(cfg, "{}", "bench", *backend);
    if (!r.ok()) {
      state.SkipWithError(r.errors().c_str());
      break;
    }
    benchmark::DoNotOptimize(r.value.datasets.size());
  }
  state.SetLabel("core/experiment runGemmExperimentRun, default config");
}

/// Resident memory of this process in bytes, from /proc/self/status (`key` = "VmRSS:" or "VmHWM:").
int64_t procStatusBytes(const char* key) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  int64_t kb = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, std::strlen(key)) == 0) kb = std::atoll(line + std::strlen(key));
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

/// Peak memory of one whole GEMM experiment (as gemmExperiment) at n³: the high-water mark of the
/// resident set (Linux VmHWM, reset through /proc/self/clear_refs before the run) minus the
/// resident set before it, in GB (10^9 bytes), as counter peak_GB. Target (4096³): ≤ 1.5 GB.
void gemmExperimentPeakMemory(benchmark::State& state) {
  GemmExperimentConfig cfg;
  cfg.m = cfg.n = cfg.k = state.range(0);
  cfg.gemm.threads = static_cast<int>(state.range(1));
  auto backend = makeCpuGemmBackend();
  double peak = 0;
  for (auto _ : state) {
    const int64_t before = procStatusBytes("VmRSS:");
    if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
      std::fputs("5", f); // reset the peak resident set size (Linux ≥ 4.0)
      std::fclose(f);
    }
    {
      Result<Run> r = runGemmExperimentRun(cfg, "{}", "bench", *backend);
      if (!r.ok()) {
        state.SkipWithError(r.errors().c_str());
        break;
      }
      benchmark::DoNotOptimize(r.value.datasets.size());
    }
    const int64_t hwm = procStatusBytes("VmHWM:");
    if (before < 0 || hwm < 0) {
      state.SkipWithError("/proc/self/status has no VmRSS / VmHWM");
      break;
    }
    peak = std::max(peak, static_cast<double>(hwm - before) / 1e9);
  }
  state.counters["peak_GB"] = peak;
}
#endif

#if FP8LAB_HAVE_CBLAS
void sgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const Inputs& in = inputs(n);
  std::vector<float> c(static_cast<size_t>(n * n));
  openblas_set_num_threads(threads);
  const int ni = static_cast<int>(n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, in.a.data(), ni, in.b.data(), ni, 0.0f,
                c.data(), ni);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetLabel(std::string("OpenBLAS ") + openblas_get_corename());
  setFlops(state, n);
}
#endif

struct MetricsInputs {
  std::vector<double> ideal, exact;
  std::vector<float> d;
};

const MetricsInputs& metricsInputs() {
  static const MetricsInputs m = [] {
    const int64_t count = 4096 * 4096;
    MetricsInputs x;
    x.ideal.resize(static_cast<size_t>(count));
    x.exact.resize(static_cast<size_t>(count));
    x.d.resize(static_cast<size_t>(count));
    const std::vector<float> r = randomMatrix(4096, 4096, 7);
    for (int64_t i = 0; i < count; ++i) {
      x.ideal[static_cast<size_t>(i)] = r[static_cast<size_t>(i)];
      x.exact[static_cast<size_t>(i)] = r[static_cast<size_t>(i)] * (1.0 + 1e-3);
      x.d[static_cast<size_t>(i)] = static_cast<float>(x.exact[static_cast<size_t>(i)]);
    }
    return x;
  }();
  return m;
}

/// Error metrics of a 4096×4096 output: the three summaries of an experiment (quantization,
/// accumulation, total: max abs/rel, RMSE, rel Frobenius, SQNR). Target ≤ 0.5 s.
void errorMetrics4096(benchmark::State& state) {
  const MetricsInputs& x = metricsInputs();
  const int64_t count = 4096 * 4096;
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const ErrorMetrics q = compareErrors(x.ideal.data(), x.exact.data(), count, threads);
    const ErrorMetrics a = compareErrors(x.exact.data(), x.d.data(), count, threads);
    const ErrorMetrics t = compareErrors(x.ideal.data(), x.d.data(), count, threads);
    benchmark::DoNotOptimize(q.rmse + a.rmse + t.rmse);
  }
}

/// The per-element ULP map of a 4096×4096 output and its 128×128 tile map (mean, max).
void errorMaps4096(benchmark::State& state) {
  const MetricsInputs& x = metricsInputs();
  const int64_t count = 4096 * 4096;
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const std::vector<float> map =
        errorMap(x.exact.data(), x.d.data(), count, ErrorMapKind::Ulp, nullptr, 1.0, threads);
    const TileMap tiles = tileMap(map, 4096, 4096);
    benchmark::DoNotOptimize(tiles.mean.data());
  }
}

/// The reporter --benchmark_format asks for (console, json or csv), plus a table of time ratios to
/// sgemm for the same size and threads, printed to stderr so that stdout stays exactly what the
/// chosen format writes (`--benchmark_format=json > out.json` is valid JSON).
class RatioReporter : public benchmark::BenchmarkReporter {
public:
  explicit RatioReporter(const std::string& format) {
    if (format == "json")
      inner_ = std::make_unique<benchmark::JSONReporter>();
    else if (format == "csv") {
      // Deprecated by Google Benchmark but still what --benchmark_format=csv selects there too.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      inner_ = std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
    } else
      inner_ = std::make_unique<benchmark::ConsoleReporter>();
  }
  bool ReportContext(const Context& context) override {
    inner_->SetOutputStream(&GetOutputStream());
    inner_->SetErrorStream(&GetErrorStream());
    return inner_->ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    inner_->ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      times_[r.benchmark_name()] = r.GetAdjustedRealTime();
    }
  }
  void Finalize() override {
    inner_->Finalize();
    std::fprintf(stderr, "\nratio of real time to sgemm (same size, same threads; < 1 = faster than sgemm)\n");
    // "name[/capture]/size/threads/..." → "/size/threads": the first two numeric components, the
    // key shared with sgemm's run of that shape whatever the capture name and iteration settings.
    auto shapeKey = [](const std::string& name) {
      std::string key;
      int found = 0;
      size_t i = name.find('/');
      while (i != std::string::npos && found < 2) {
        const size_t j = name.find('/', i + 1);
        const std::string part = name.substr(i + 1, j == std::string::npos ? std::string::npos : j - i - 1);
        if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos) {
          key += "/" + part;
          ++found;
        }
        i = j;
      }
      return found == 2 ? key : std::string();
    };
    std::map<std::string, double> sgemm;
    for (const auto& [name, t] : times_)
      if (name.rfind("sgemm", 0) == 0) sgemm[shapeKey(name)] = t;
    for (const auto& [name, t] : times_) {
      if (name.rfind("sgemm", 0) == 0) continue;
      const auto base = sgemm.find(shapeKey(name));
      if (base == sgemm.end()) continue;
      std::fprintf(stderr, "  %-56s %6.2f\n", name.c_str(), t / base->second);
    }
  }

private:
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  std::map<std::string, double> times_;
};

} // namespace

BENCHMARK(fp8QuantizeGemm)
    ->ArgsProduct({{1024, 2048}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(0.5);
BENCHMARK_CAPTURE(fp8Gemm, avx, CpuKernel::Auto)
    ->ArgsProduct({{1024, 2048}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(0.5);
BENCHMARK(fp8GemmEpilogue)
    ->ArgsProduct({{1024, 2048}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(0.5);
BENCHMARK(gemmErrorSplit)->Args({2048, 2})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
#if FP8LAB_BENCH_HAVE_DATA
BENCHMARK(gemmExperiment)->Args({2048, 2})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(gemmExperimentPeakMemory)->Args({4096, 2})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
#endif
BENCHMARK_CAPTURE(fp8Gemm, portable, CpuKernel::Portable)
    ->ArgsProduct({{1024}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(0.5);
#if FP8LAB_HAVE_CBLAS
BENCHMARK(sgemm)->ArgsProduct({{1024, 2048}, {1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
#endif
BENCHMARK(errorMetrics4096)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(errorMaps4096)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  std::string format = "console"; // read before Initialize, which consumes the benchmark flags
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--benchmark_format=", 19) == 0) format = argv[i] + 19;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter(format);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

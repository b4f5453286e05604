// FP8 Lab — the float32 GEMMs of a training step (core/training/dense.h), beside OpenBLAS sgemm.
//
// The transformer's FP32 step spends most of its arithmetic in matmulF32 / matmulF32At (the
// Linear layers' forward, data-gradient and weight-gradient GEMMs). This program times, in the
// same run and on the same matrices:
//   dense/<shape>/<threads>   — matmulF32 (or matmulF32At for the weight gradients)
//   sgemm/<shape>/<threads>   — OpenBLAS cblas_sgemm of the same product (CblasTrans on A for
//                               the weight gradients), openblas_set_num_threads = the same count
// for every GEMM shape of one step of resources/experiments/transformer-lm.json (d_model 64,
// FFN 256, 2 blocks, 1024 tokens a step, vocabulary 256), and `step` = all 27 GEMMs of one step in
// order. The ratio counter vs_sgemm is the time / sgemm's time for that row (< 1: faster), read
// from the sgemm row registered just before it. matmulF32 keeps separate multiplies and adds in
// k-ascending order (its bits are defined); sgemm fuses and reorders, so this is the price of the
// defined bits, not a like-for-like kernel race.
// Run: OPENBLAS_CORETYPE=Haswell FP8LAB_CPU=avx2 build/tests/bench/bench_dense
#include <benchmark/benchmark.h>

#include "gemm/random_matrix.h"
#include "common/worker_pool.h"
#include "training/dense.h"

#if FP8LAB_HAVE_CBLAS
#include <cblas.h>
#endif

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using namespace fp8lab;

namespace {

/// One GEMM: C[m, n] = A[m, k] · B[k, n]; at: A is given transposed, [k, m] (weight gradients).
struct Shape {
  int64_t m, k, n;
  bool at;
};

// The 27 GEMMs of one step: per block (×2) the qkv, attention output, FFN up and FFN down
// Linears' forward (x·W), data gradient (g·Wᵀ) and weight gradient (xᵀ·g); then the tied output
// layer's three.
std::vector<Shape> stepShapes() {
  const int64_t t = 1024, d = 64, f = 256, v = 256;
  const std::vector<std::pair<int64_t, int64_t>> linears = {{d, 3 * d}, {d, d}, {d, f}, {f, d}};
  std::vector<Shape> s;
  for (int block = 0; block < 2; ++block)
    for (auto [in, out] : linears) {
      s.push_back({t, in, out, false}); // forward
      s.push_back({t, out, in, false}); // data gradient
      s.push_back({in, t, out, true});  // weight gradient
    }
  s.push_back({t, d, v, false});
  s.push_back({t, v, d, false});
  s.push_back({d, t, v, true});
  return s;
}

struct Operands {
  std::vector<float> a, b, c;
};

Operands& operands(const Shape& s) {
  static std::map<std::tuple<int64_t, int64_t, int64_t>, Operands> cache;
  auto key = std::make_tuple(s.m, s.k, s.n);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache
             .emplace(key, Operands{randomMatrix(s.m, s.k, 1, {}, 0), randomMatrix(s.k, s.n, 1, {}, 1),
                                    std::vector<float>(static_cast<size_t>(s.m * s.n))})
             .first;
  return it->second;
}

void runDense(const Shape& s, int threads) {
  Operands& o = operands(s);
  if (s.at)
    matmulF32At(o.a.data(), o.b.data(), o.c.data(), s.m, s.k, s.n, threads);
  else
    matmulF32(o.a.data(), o.b.data(), o.c.data(), s.m, s.k, s.n, threads);
  benchmark::DoNotOptimize(o.c.data());
}

#if FP8LAB_HAVE_CBLAS
void runSgemm(const Shape& s) {
  Operands& o = operands(s);
  const int m = static_cast<int>(s.m), k = static_cast<int>(s.k), n = static_cast<int>(s.n);
  if (s.at)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, 1.0f, o.a.data(), m, o.b.data(), n, 0.0f, o.c.data(),
                n);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, o.a.data(), k, o.b.data(), n, 0.0f,
                o.c.data(), n);
  benchmark::DoNotOptimize(o.c.data());
}
#endif

std::map<std::string, double> g_sgemm_s;

double flops(const std::vector<Shape>& shapes) {
  double f = 0;
  for (const Shape& s : shapes) f += 2.0 * static_cast<double>(s.m * s.k * s.n);
  return f;
}

void timeRows(benchmark::State& st, const std::vector<Shape>& shapes, const std::string& key, bool sgemm, int threads) {
#if FP8LAB_HAVE_CBLAS
  if (sgemm) openblas_set_num_threads(threads);
#else
  if (sgemm) {
    st.SkipWithError("built without OpenBLAS (libopenblas-dev)");
    return;
  }
#endif
  for (const Shape& s : shapes) operands(s);
  // The language model's step holds a burst (workers poll between its parallel loops); so do the
  // dense rows here. OpenBLAS's own threads spin between calls as well.
  std::optional<WorkerPoolBurst> burst;
  if (!sgemm) burst.emplace();
  double seconds = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const Shape& s : shapes) {
#if FP8LAB_HAVE_CBLAS
      if (sgemm) {
        runSgemm(s);
        continue;
      }
#endif
      runDense(s, threads);
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const double per = seconds / static_cast<double>(st.iterations());
  st.counters["GFLOPs"] = benchmark::Counter(flops(shapes) / per * 1e-9);
  if (sgemm)
    g_sgemm_s[key] = per;
  else if (auto it = g_sgemm_s.find(key); it != g_sgemm_s.end())
    st.counters["vs_sgemm"] = per / it->second;
#if FP8LAB_HAVE_CBLAS
  if (sgemm) st.SetLabel(std::string("OpenBLAS ") + openblas_get_corename());
#endif
}

void registerAll() {
  const std::vector<Shape> step = stepShapes();
  std::vector<std::pair<std::string, std::vector<Shape>>> rows;
  rows.push_back({"step", step});
  // The distinct shapes, once each.
  std::map<std::tuple<int64_t, int64_t, int64_t, bool>, bool> seen;
  for (const Shape& s : step) {
    if (seen[std::make_tuple(s.m, s.k, s.n, s.at)]) continue;
    seen[std::make_tuple(s.m, s.k, s.n, s.at)] = true;
    rows.push_back(
        {(s.at ? "At" : "") + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n), {s}});
  }
  for (int threads : {1, 2})
    for (const auto& [name, shapes] : rows) {
      const std::string key = name + "/" + std::to_string(threads);
      benchmark::RegisterBenchmark(("sgemm/" + key).c_str(),
                                   [=](benchmark::State& st) { timeRows(st, shapes, key, true, threads); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("dense/" + key).c_str(),
                                   [=](benchmark::State& st) { timeRows(st, shapes, key, false, threads); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
}

} // namespace

int main(int argc, char** argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

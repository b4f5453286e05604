#include "gemm/error_split.h"
#include "gemm/gemm_internal.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace fp8lab {

namespace {
using namespace gemm_detail;

ProgressFn subRange(const ProgressFn& p, double from, double to) {
  if (!p) return {};
  return [p, from, to](double f, const std::string& stage) { return p(from + (to - from) * f, stage); };
}

void checkMemory(double bytes, const std::string& what) {
  const double have = static_cast<double>(availableMemoryBytes());
  if (bytes > have)
    throw std::runtime_error(what + " needs " + std::to_string(bytes / (1024.0 * 1024 * 1024)).substr(0, 6) +
                             " GiB of buffers, more than the " +
                             std::to_string(have / (1024.0 * 1024 * 1024)).substr(0, 6) + " GiB of memory available");
}
} // namespace

double gemmExperimentBytes(int64_t m, int64_t n, int64_t k) {
  // Per operand element: input float32 4 + codes 1 + dequantized 4 + decoded copy 4 + float64
  // copy 8 = 21 bytes; per output element: ideal 8 + quantized-exact 8 + D 4 + two error maps 8 +
  // the stored float32 copies 8 = 36 bytes.
  const double M = static_cast<double>(m), N = static_cast<double>(n), K = static_cast<double>(k);
  return 21.0 * (M * K + K * N) + 36.0 * M * N;
}

std::string gemmExperimentMemoryProblem(int64_t m, int64_t n, int64_t k) {
  const double need = gemmExperimentBytes(m, n, k);
  const double have = static_cast<double>(availableMemoryBytes());
  if (need <= have) return {};
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "a %lldx%lldx%lld GEMM experiment needs %.2f GiB of memory, more than the %.2f GiB available",
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                need / (1024.0 * 1024 * 1024), have / (1024.0 * 1024 * 1024));
  return buf;
}

namespace {
/// Checks the arguments of an ideal GEMM (shapes, K ≥ 1, inputs present, memory) and returns its
/// zeroed float64 output [m, n].
std::vector<double> idealOutput(bool has_a, bool has_b, int64_t m, int64_t k, int64_t n) {
  if (m < 0 || k < 0 || n < 0) throw std::invalid_argument("ideal GEMM: negative shape");
  if (k == 0) throw std::invalid_argument("GEMM with K = 0: there is nothing to accumulate");
  if ((m * k > 0 && !has_a) || (k * n > 0 && !has_b)) throw std::invalid_argument("ideal GEMM: null input");
  checkMemory(static_cast<double>(m) * static_cast<double>(n) * 8.0,
              "ideal GEMM " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
  return std::vector<double>(static_cast<size_t>(m * n), 0.0);
}
} // namespace

std::vector<double> idealGemm(const float* a, const float* b, int64_t m, int64_t k, int64_t n, int threads,
                              const ProgressFn& progress) {
  std::vector<double> c = idealOutput(a != nullptr, b != nullptr, m, k, n);
  Plan plan;
  plan.m = m;
  plan.n = n;
  plan.k = k;
  plan.windows = {Window{0, k, 0, 0}};
  plan.ca.assign(static_cast<size_t>(m), 1.0f);
  plan.cb.assign(static_cast<size_t>(n), 1.0f);
  gemmDouble(plan, a, b, c.data(), threads, progress);
  return c;
}

std::vector<double> idealGemm(const double* a, const double* b, int64_t m, int64_t k, int64_t n, int threads,
                              const ProgressFn& progress) {
  std::vector<double> c = idealOutput(a != nullptr, b != nullptr, m, k, n);
  constexpr int64_t kRows = 16;
  parallelJobs((m + kRows - 1) / kRows, threads, progress, "float64 reference", 0.0, 1.0, [&](int64_t job) {
    for (int64_t i = job * kRows; i < std::min(m, (job + 1) * kRows); ++i) {
      double* ci = c.data() + i * n;
      for (int64_t kk = 0; kk < k; ++kk) {
        const double aik = a[i * k + kk];
        const double* bk = b + kk * n;
        for (int64_t j = 0; j < n; ++j) ci[j] += aik * bk[j];
      }
    }
  });
  return c;
}

std::vector<double> quantizedExactGemm(const QuantizedTensor& a, const QuantizedTensor& b, int threads,
                                       const ProgressFn& progress) {
  GemmOptions opt;
  opt.accumulation = Accumulation::Exact;
  const Plan plan = makePlan(a, b, opt);
  checkMemory(static_cast<double>(plan.m) * static_cast<double>(plan.n) * 8.0,
              "quantized-exact GEMM " + std::to_string(plan.m) + "x" + std::to_string(plan.n) + "x" +
                  std::to_string(plan.k));
  std::vector<double> c(static_cast<size_t>(plan.m * plan.n), 0.0);
  gemmDoubleCodes(plan, a, b, c.data(), threads, progress);
  applyConstScales(plan, c.data(), threads);
  return c;
}

GemmExperimentResult runGemmExperiment(const float* a_float, const float* b_float, const QuantizedTensor& a,
                                       const QuantizedTensor& b, const GemmOptions& options, GemmBackend* backend,
                                       const ProgressFn& progress) {
  if ((a_float == nullptr) != (b_float == nullptr))
    throw std::invalid_argument("GEMM experiment: give both float inputs or neither");
  std::unique_ptr<GemmBackend> own;
  if (!backend) {
    own = makeCpuGemmBackend();
    backend = own.get();
  }
  GemmOptions opt = options;
  const Plan plan = makePlan(a, b, opt); // validates before any work
  checkEpilogue(opt, plan.m, plan.n);
  GemmExperimentResult r;
  r.m = plan.m;
  r.n = plan.n;
  r.k = plan.k;
  const int64_t mn = plan.m * plan.n;
  using clock = std::chrono::steady_clock;
  if (a_float) {
    const auto t0 = clock::now();
    r.ideal = idealGemm(a_float, b_float, plan.m, plan.k, plan.n, opt.threads, subRange(progress, 0.0, 0.3));
    r.ideal_seconds = std::chrono::duration<double>(clock::now() - t0).count();
    r.a_stats = operandStats(a_float, a);
    r.b_stats = operandStats(b_float, b);
  } else {
    r.a_stats = operandStats(a.stats);
    r.b_stats = operandStats(b.stats);
  }
  const auto t1 = clock::now();
  r.quantized_exact = quantizedExactGemm(a, b, opt.threads, subRange(progress, 0.3, 0.6));
  // The same epilogue on both references, in double (the output applies it in its own precision).
  if (!r.ideal.empty()) applyEpilogue(opt, r.ideal.data(), plan.m, plan.n, opt.threads);
  applyEpilogue(opt, r.quantized_exact.data(), plan.m, plan.n, opt.threads);
  r.exact_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  r.output = backend->run(a, b, opt, subRange(progress, 0.6, 0.95));
  if (opt.output == OutputType::E4M3FN || opt.output == OutputType::E5M2) {
    const double limit = (opt.output == OutputType::E4M3FN ? Format::E4M3FN() : Format::E5M2()).rneFiniteLimit();
    const double sd = static_cast<double>(opt.output_quant_scale);
    int64_t clipped = 0;
    for (double v : r.quantized_exact) clipped += std::isfinite(v) && std::fabs(v * sd) > limit;
    r.d_saturated = clipped;
    if (clipped > 0) {
      char detail[256];
      std::snprintf(detail, sizeof detail,
                    "%lld of %lld elements clip: D·scale_D exceeds max finite (scale_D %g, amax_D %g); a scale_D of at "
                    "most %g keeps them",
                    static_cast<long long>(clipped), static_cast<long long>(mn), sd, double(r.output.amax_d),
                    r.output.amax_d > 0 ? limit / double(r.output.amax_d) : sd);
      r.output.warnings.push_back(
          {Severity::Warning, std::string(toString(opt.output)) + " output clipped", "D", detail});
    }
  }
  r.accumulation = compareErrors(r.quantized_exact.data(), r.output.d.data(), mn, opt.threads);
  if (a_float) {
    r.quantization = compareErrors(r.ideal.data(), r.quantized_exact.data(), mn, opt.threads);
    r.total = compareErrors(r.ideal.data(), r.output.d.data(), mn, opt.threads);
  }
  reportProgress(progress, 1.0, "metrics");
  return r;
}

} // namespace fp8lab

// FP8 Lab — the CPU reference FP8 GEMM backend: validation, planning, memory check, model
// dispatch, output conversion and amax_D. The kernels are in gemm_kernels.cpp (portable),
// gemm_avx512.cpp (AVX512-BF16, AVX512 FMA), gemm_avx2.cpp (AVX2 FMA) and gemm_double.cpp (the
// float64 ones). Model definitions: gemm.h and docs/gemm.md.
#include "gemm/gemm.h"
#include "gemm/gemm_internal.h"

#include "common/cpu_level.h"
#include "common/names.h"
#include "common/worker_pool.h"
#include "formats/format.h"
#include "scaling/scaling.h"

#include <algorithm>
#include <bit>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace fp8lab {

const char* toString(Accumulation a) {
  switch (a) {
  case Accumulation::Exact:
    return "exact";
  case Accumulation::FP32:
    return "fp32";
  case Accumulation::SplitFP32:
    return "split";
  case Accumulation::FastAccum:
    return "fast";
  }
  return "?";
}

std::optional<Accumulation> parseAccumulation(std::string_view s) {
  const std::string n = normalizedName(s);
  if (n == "exact" || n == "double") return Accumulation::Exact;
  if (n == "fp32") return Accumulation::FP32;
  if (n == "split" || n == "split_fp32" || n == "splitfp32") return Accumulation::SplitFP32;
  if (n == "fast" || n == "fast_accum" || n == "fastaccum") return Accumulation::FastAccum;
  return std::nullopt;
}

const char* toString(MmaAlignment a) {
  return a == MmaAlignment::Operands ? "operands" : "product";
}
const char* toString(MmaSum v) {
  return v == MmaSum::Fp32 ? "fp32" : "exact";
}
const char* toString(MmaRounding r) {
  return r == MmaRounding::NearestEven ? "rne" : "rz";
}
const char* toString(MmaCEntry c) {
  return c == MmaCEntry::Accumulator ? "accumulator" : "epilogue";
}
std::optional<MmaAlignment> parseMmaAlignment(std::string_view s) {
  const std::string n = normalizedName(s);
  if (n == "product") return MmaAlignment::Product;
  if (n == "operands" || n == "operand") return MmaAlignment::Operands;
  return std::nullopt;
}
std::optional<MmaSum> parseMmaSum(std::string_view s) {
  const std::string n = normalizedName(s);
  if (n == "exact") return MmaSum::Exact;
  if (n == "fp32" || n == "float32" || n == "binary32") return MmaSum::Fp32;
  return std::nullopt;
}
std::optional<MmaRounding> parseMmaRounding(std::string_view s) {
  const std::string n = normalizedName(s);
  if (n == "rz" || n == "toward_zero" || n == "truncate") return MmaRounding::TowardZero;
  if (n == "rne" || n == "nearest_even") return MmaRounding::NearestEven;
  return std::nullopt;
}
std::optional<MmaCEntry> parseMmaCEntry(std::string_view s) {
  const std::string n = normalizedName(s);
  if (n == "epilogue") return MmaCEntry::Epilogue;
  if (n == "accumulator" || n == "inside") return MmaCEntry::Accumulator;
  return std::nullopt;
}

const char* toString(MmaBlockScales b) {
  return b == MmaBlockScales::Inside ? "inside" : "promoted";
}
const char* toString(MmaDatapath d) {
  return d == MmaDatapath::Cdna3 ? "cdna3" : "fused";
}
std::optional<MmaBlockScales> parseMmaBlockScales(std::string_view s) {
  const std::string n = normalizedName(s);
  if (n == "promoted") return MmaBlockScales::Promoted;
  if (n == "inside") return MmaBlockScales::Inside;
  return std::nullopt;
}
std::optional<MmaDatapath> parseMmaDatapath(std::string_view s) {
  const std::string n = normalizedName(s);
  if (n == "fused") return MmaDatapath::Fused;
  if (n == "cdna3") return MmaDatapath::Cdna3;
  return std::nullopt;
}

std::string accumulationNames() {
  return "exact, fp32, split (split_fp32), fast (fast_accum)";
}

std::optional<OutputType> parseOutputType(std::string_view s) {
  const std::string n = normalizedName(s);
  if (n == "fp32" || n == "float32") return OutputType::FP32;
  if (n == "bf16" || n == "bfloat16") return OutputType::BF16;
  if (n == "fp16" || n == "float16") return OutputType::FP16;
  if (n == "e4m3fn" || n == "e4m3") return OutputType::E4M3FN;
  if (n == "e5m2") return OutputType::E5M2;
  return std::nullopt;
}

const char* toString(OutputType t) {
  switch (t) {
  case OutputType::FP32:
    return "fp32";
  case OutputType::BF16:
    return "bf16";
  case OutputType::FP16:
    return "fp16";
  case OutputType::E4M3FN:
    return "e4m3fn";
  case OutputType::E5M2:
    return "e5m2";
  }
  return "?";
}

const char* toString(CpuKernel k) {
  switch (k) {
  case CpuKernel::Auto:
    return "auto";
  case CpuKernel::Portable:
    return "portable";
  case CpuKernel::Avx512Bf16:
    return "avx512-bf16";
  case CpuKernel::Avx512Fma:
    return "avx512-fma";
  case CpuKernel::Avx2Fma:
    return "avx2-fma";
  }
  return "?";
}

namespace gemm_detail {

namespace {
std::string shapeText(const QuantizedTensor& t) {
  return std::to_string(t.rows) + "x" + std::to_string(t.cols);
}

void checkOperand(const QuantizedTensor& t, const char* name) {
  const std::string n(name);
  if (t.rows < 0 || t.cols < 0)
    throw std::invalid_argument("GEMM operand " + n + " has a negative shape " + shapeText(t));
  if (!t.format) throw std::invalid_argument("GEMM operand " + n + " has no element format");
  if (t.format->bits() > 8)
    throw std::invalid_argument("GEMM operand " + n + " is in " + t.format->name() + ", a " +
                                std::to_string(t.format->bits()) +
                                "-bit format; the FP8 GEMM takes formats of at most 8 bits");
  if (t.format->spec().specials == SpecialCodes::E8M0)
    throw std::invalid_argument("GEMM operand " + n + " is in E8M0, a scale format, not an element format");
  const double elems = static_cast<double>(t.rows) * static_cast<double>(t.cols);
  if (elems > 9.0e18)
    throw std::invalid_argument("GEMM operand " + n + " shape " + shapeText(t) + " overflows 64-bit indexing");
  if (t.codes.size() != static_cast<size_t>(t.rows * t.cols))
    throw std::invalid_argument("GEMM operand " + n + " (" + shapeText(t) + ") holds " +
                                std::to_string(t.codes.size()) + " codes, expected " + std::to_string(t.rows * t.cols));
  if (t.block.rows < 1 || t.block.cols < 1)
    throw std::invalid_argument("GEMM operand " + n + " has an invalid scale block " + std::to_string(t.block.rows) +
                                "x" + std::to_string(t.block.cols) + " (both sides must be ≥ 1)");
  const int64_t ns = t.blockRows() * t.blockCols();
  if (t.rows > 0 && t.cols > 0 && t.dequant_scales.size() != static_cast<size_t>(ns))
    throw std::invalid_argument("GEMM operand " + n + " has " + std::to_string(t.dequant_scales.size()) +
                                " dequant scales, its " + std::to_string(t.block.rows) + "x" +
                                std::to_string(t.block.cols) + " blocks need " + std::to_string(ns));
}
} // namespace

std::vector<std::vector<WindowSegment>> windowChunks(const Plan& plan, int64_t kc, int64_t unit) {
  const int64_t total = (plan.k + unit - 1) / unit, step = kc / unit;
  std::vector<std::vector<WindowSegment>> chunks;
  if (plan.windows.size() == 1 && !plan.scaled_promotion()) {
    for (int64_t p0 = 0; p0 < total; p0 += step)
      chunks.push_back({WindowSegment{p0, std::min(total, p0 + step), 0, p0 == 0, p0 + step >= total}});
    return chunks;
  }
  std::vector<WindowSegment> cur;
  int64_t len = 0;
  for (size_t w = 0; w < plan.windows.size(); ++w) {
    const Window& win = plan.windows[w];
    const WindowSegment s{win.k0 / unit, (win.k1 + unit - 1) / unit, static_cast<int64_t>(w), true, true};
    if (!cur.empty() && len + (s.p1 - s.p0) > step) {
      chunks.push_back(std::move(cur));
      cur.clear();
      len = 0;
    }
    cur.push_back(s);
    len += s.p1 - s.p0;
  }
  if (!cur.empty()) chunks.push_back(std::move(cur));
  return chunks;
}

std::vector<Window> makeWindows(const QuantizedTensor& a, const QuantizedTensor& b, bool a_varies, bool b_varies,
                                int64_t k, int64_t interval) {
  std::vector<Window> w;
  int64_t k0 = 0;
  const int64_t ga = a_varies ? a.block.cols : 0, gb = b_varies ? b.block.rows : 0;
  while (k0 < k) {
    int64_t k1 = k;
    if (ga > 0) k1 = std::min(k1, (k0 / ga + 1) * ga);
    if (gb > 0) k1 = std::min(k1, (k0 / gb + 1) * gb);
    if (interval > 0) k1 = std::min(k1, (k0 / interval + 1) * interval);
    Window x;
    x.k0 = k0;
    x.k1 = k1;
    x.kb_a = ga > 0 ? k0 / ga : 0;
    x.kb_b = gb > 0 ? k0 / gb : 0;
    w.push_back(x);
    k0 = k1;
  }
  return w;
}

Plan makePlan(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt) {
  checkOperand(a, "A");
  checkOperand(b, "B");
  if (a.cols != b.rows)
    throw std::invalid_argument("GEMM shape mismatch: A is " + shapeText(a) + " (M x K), B is " + shapeText(b) +
                                " (K x N); A's columns must equal B's rows");
  if (a.cols == 0)
    throw std::invalid_argument("GEMM with K = 0 (A is " + shapeText(a) + ", B is " + shapeText(b) +
                                "): there is nothing to accumulate");
  if (opt.promotion_interval < 1)
    throw std::invalid_argument("promotion interval N_C must be ≥ 1, got " + std::to_string(opt.promotion_interval));
  checkFastAccum(opt);
  if (opt.fast_accum_group < 1)
    throw std::invalid_argument("fast-accumulation group must be ≥ 1, got " + std::to_string(opt.fast_accum_group));
  if (opt.threads < 0) throw std::invalid_argument("threads must be ≥ 0 (0 = all), got " + std::to_string(opt.threads));
  checkOutputScale(opt);

  Plan p;
  p.m = a.rows;
  p.n = b.cols;
  p.k = a.cols;
  // Block scales of two-level formats (NVFP4) always go with their K-block's partial sum, as the
  // block-scaled MMA applies them, even when one block spans K; only the tensor factor is constant.
  p.a_varies = a.block.cols < p.k || a.tensor_scale.kind != TensorScale::Kind::None;
  p.b_varies = b.block.rows < p.k || b.tensor_scale.kind != TensorScale::Kind::None;
  int64_t interval = 0;
  if (opt.accumulation == Accumulation::SplitFP32 ||
      (opt.accumulation == Accumulation::FastAccum && opt.fast_accum_promotes))
    interval = opt.promotion_interval;
  if (opt.accumulation == Accumulation::FastAccum) {
    // The MMA paths that carry their own scale rule refuse operands they cannot take.
    if (opt.mma.block_scales == MmaBlockScales::Inside)
      if (const std::string why = blockScaledMmaUnsuitable(a, b, opt); !why.empty()) throw std::invalid_argument(why);
    if (opt.mma.datapath == MmaDatapath::Cdna3 && (p.a_varies || p.b_varies))
      throw std::invalid_argument("the CDNA3 FP8 MFMA model takes scales constant along K (per tensor, per row of A, "
                                  "per column of B), applied after the sum; the operands' scales vary along K");
  }
  p.windows = makeWindows(a, b, p.a_varies, p.b_varies, p.k, interval);
  const int64_t W = static_cast<int64_t>(p.windows.size());
  if (p.a_varies) {
    p.sa_w.resize(static_cast<size_t>(p.m * W));
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t w = 0; w < W; ++w)
        p.sa_w[static_cast<size_t>(i * W + w)] = a.dequant_scales[static_cast<size_t>(
            (i / a.block.rows) * a.blockCols() + p.windows[static_cast<size_t>(w)].kb_a)];
  }
  if (p.b_varies) {
    p.sb_w.resize(static_cast<size_t>(W * p.n));
    for (int64_t w = 0; w < W; ++w)
      for (int64_t j = 0; j < p.n; ++j)
        p.sb_w[static_cast<size_t>(w * p.n + j)] = b.dequant_scales[static_cast<size_t>(
            p.windows[static_cast<size_t>(w)].kb_b * b.blockCols() + j / b.block.cols)];
  }
  p.ca.assign(static_cast<size_t>(p.m), 1.0f);
  p.cb.assign(static_cast<size_t>(p.n), 1.0f);
  if (!p.a_varies)
    for (int64_t i = 0; i < p.m; ++i)
      p.ca[static_cast<size_t>(i)] = a.dequant_scales[static_cast<size_t>(i / a.block.rows)];
  if (!p.b_varies)
    for (int64_t j = 0; j < p.n; ++j)
      p.cb[static_cast<size_t>(j)] = b.dequant_scales[static_cast<size_t>(j / b.block.cols)];
  // Two-level formats (NVFP4): the tensors' second level is one factor on the product, applied
  // with the constant scales after the sum (TE's GEMM alpha, torchao's pts_A · pts_B).
  if (a.tensor_scale.kind != TensorScale::Kind::None || b.tensor_scale.kind != TensorScale::Kind::None) {
    const float g = gemmTensorFactor(a.tensor_scale, b.tensor_scale);
    for (float& v : p.ca) v *= g;
  }
  for (float v : p.ca) p.has_const_scale |= (v != 1.0f);
  for (float v : p.cb) p.has_const_scale |= (v != 1.0f);
  return p;
}

namespace {
template <class T> void constScalesImpl(const Plan& plan, T* c, int threads) {
  if (!plan.has_const_scale) return;
  const int64_t rows_per_job = std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, plan.n));
  const int64_t jobs = (plan.m + rows_per_job - 1) / rows_per_job;
  parallelJobs(jobs, threads, {}, "", 0, 0, [&](int64_t j) {
    const int64_t i1 = std::min(plan.m, (j + 1) * rows_per_job);
    for (int64_t i = j * rows_per_job; i < i1; ++i) {
      const float ca = plan.ca[static_cast<size_t>(i)];
      T* row = c + i * plan.n;
      for (int64_t n = 0; n < plan.n; ++n) {
        if constexpr (std::is_same_v<T, float>) {
          const float s = ca * plan.cb[static_cast<size_t>(n)]; // float32(ca·cb)
          row[n] = s * row[n];
        } else {
          const double s = static_cast<double>(ca) * static_cast<double>(plan.cb[static_cast<size_t>(n)]); // exact
          row[n] = s * row[n];
        }
      }
    }
  });
}
} // namespace

void applyConstScales(const Plan& plan, float* c, int threads) {
  constScalesImpl(plan, c, threads);
}
void applyConstScales(const Plan& plan, double* c, int threads) {
  constScalesImpl(plan, c, threads);
}

} // namespace gemm_detail

namespace {
/// Whether Auto runs the AVX512-BF16 kernel before the AVX512 FMA one. Both are bit-identical to the
/// portable kernel, so only speed decides, and it depends on the CPU (VDPBF16PS runs at full rate on
/// some, at half the rate of two FMA ports on others): timed once per process on a 256×1024×256
/// E4M3FN GEMM, one thread, the two kernels alternated five times each and the best of each kept,
/// in the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) so that other processes taking the core
/// during the measurement cannot turn the choice (on a loaded machine, wall times once picked the
/// slower kernel: the FP8 GEMM then ran at 0.8× sgemm instead of 1.7×). A few milliseconds. False
/// where the CPU lacks either kernel.
bool preferBf16Kernel() {
  using namespace gemm_detail;
  static const bool prefer = [] {
    if (!cpuHasAvx512Bf16()) return false;
    if (!cpuHasAvx512Fma()) return true;
    const int64_t M = 256, K = 1024, N = 256;
    std::vector<float> x(static_cast<size_t>(M * K)), y(static_cast<size_t>(K * N));
    uint32_t st = 1;
    for (auto* v : {&x, &y})
      for (float& e : *v) {
        st = st * 1664525u + 1013904223u;
        e = static_cast<float>(static_cast<int32_t>(st >> 8) % 2001 - 1000) / 100.0f;
      }
    ScalingConfig sc;
    const QuantizedTensor a = quantize(x.data(), M, K, Format::E4M3FN(), sc, Axis::Cols);
    const QuantizedTensor b = quantize(y.data(), K, N, Format::E4M3FN(), sc, Axis::Rows);
    GemmOptions o;
    o.accumulation = Accumulation::FP32;
    const Plan plan = makePlan(a, b, o);
    if (!avx512Bf16Unsuitable(plan, a, b).empty() || !fmaKernelUnsuitable(a, b).empty()) return false;
    std::vector<float> c(static_cast<size_t>(M * N));
    auto cpuSeconds = [] {
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
    };
    auto time = [&](auto run) {
      std::fill(c.begin(), c.end(), 0.0f);
      const double t0 = cpuSeconds();
      run();
      return cpuSeconds() - t0;
    };
    double bf16 = 1e30, fma = 1e30;
    for (int i = 0; i < 5; ++i) {
      bf16 = std::min(bf16, time([&] { gemmFloatAvx512Bf16(plan, a, b, c.data(), 1, {}); }));
      fma = std::min(fma, time([&] { gemmFloatAvx512Fma(plan, a, b, c.data(), 1, {}); }));
    }
    return bf16 < fma;
  }();
  return prefer;
}
} // namespace

void checkFastAccum(const GemmOptions& opt) {
  if (opt.fast_accum_bits < 2 || opt.fast_accum_bits > kFastAccumMaxBits)
    throw std::invalid_argument("fast-accumulation bits must be in 2.." + std::to_string(kFastAccumMaxBits) + ", got " +
                                std::to_string(opt.fast_accum_bits));
  if (opt.fast_accum_group < 1)
    throw std::invalid_argument("fast-accumulation group must be ≥ 1, got " + std::to_string(opt.fast_accum_group));
  // Operand alignment leaves product significands in [0, 4): one bit more per term than the prose
  // model's renormalised products.
  const int gbits = static_cast<int>(std::bit_width(static_cast<unsigned>(opt.fast_accum_group))) +
                    (opt.mma.alignment == MmaAlignment::Operands ? 1 : 0);
  if (opt.fast_accum_bits + gbits > 53)
    throw std::invalid_argument(
        "fast-accumulation bits " + std::to_string(opt.fast_accum_bits) + " with groups of " +
        std::to_string(opt.fast_accum_group) + " products need " + std::to_string(opt.fast_accum_bits + gbits) +
        " bits to add a group exactly, more than double's 53: use fewer bits or a smaller group");
  if (opt.mma.chunk < 1 || opt.mma.chunk > opt.fast_accum_group)
    throw std::invalid_argument("MMA chunk (products summed exactly before alignment) must be in 1..group (" +
                                std::to_string(opt.fast_accum_group) + "), got " + std::to_string(opt.mma.chunk));
  if (opt.mma.sum_bits < 1 || opt.mma.sum_bits > 23)
    throw std::invalid_argument("MMA sum bits (fraction bits of the binary32 running sum) must be in 1..23, got " +
                                std::to_string(opt.mma.sum_bits));
}

std::string fastAccumText(const GemmOptions& o) {
  const MmaRules& r = o.mma;
  std::string s =
      "groups of " + std::to_string(o.fast_accum_group) + " products aligned to the largest " +
      (r.alignment == MmaAlignment::Operands ? std::string("e(a) + e(b)") : std::string("product exponent")) + ", " +
      std::to_string(o.fast_accum_bits - 1) + " fraction bits kept (truncated)";
  if (r.sum == MmaSum::Fp32)
    s += ", each group's sum a binary32 with " + std::to_string(r.sum_bits) + " fraction bits (" +
         (r.sum_rounding == MmaRounding::TowardZero ? "truncated" : "RNE") + ")";
  else
    s += ", group sums kept exactly";
  if (r.c_entry == MmaCEntry::Accumulator) s += ", C in the accumulator";
  if (r.block_scales == MmaBlockScales::Inside)
    s += std::string(", block scales inside the sum") +
         (r.chunk > 1 ? " (exact chunks of " + std::to_string(r.chunk) + " products)" : std::string());
  if (r.datapath == MmaDatapath::Cdna3) s = "AMD CDNA3 MFMA datapath: groups of 16, even and odd products apart";
  s += o.fast_accum_promotes ? ", promoted into float32 every " + std::to_string(o.promotion_interval) + " of K"
                             : ", no promotion window";
  return s;
}

bool hasEpilogue(const GemmOptions& opt) {
  return opt.alpha != 1.0f || opt.beta != 0.0f || opt.bias != nullptr;
}

void checkEpilogue(const GemmOptions& opt, int64_t m, int64_t n) {
  if (!std::isfinite(opt.alpha)) throw std::invalid_argument("the epilogue's alpha must be finite");
  if (!std::isfinite(opt.beta)) throw std::invalid_argument("the epilogue's beta must be finite");
  const std::string dims = std::to_string(m) + "x" + std::to_string(n);
  if (opt.beta != 0.0f && !opt.c)
    throw std::invalid_argument("the epilogue's beta is " + std::to_string(opt.beta) + " but no C [" + dims +
                                "] is given");
  if (opt.c && static_cast<int64_t>(opt.c->size()) != m * n)
    throw std::invalid_argument("the epilogue's C holds " + std::to_string(opt.c->size()) + " values, D [" + dims +
                                "] needs " + std::to_string(m * n));
  if (opt.bias && static_cast<int64_t>(opt.bias->size()) != n)
    throw std::invalid_argument("the epilogue's bias holds " + std::to_string(opt.bias->size()) + " values, D [" +
                                dims + "] needs one per column: " + std::to_string(n));
}

namespace {
template <class T> void epilogueImpl(const GemmOptions& opt, T* d, int64_t m, int64_t n, int threads) {
  checkEpilogue(opt, m, n);
  if (!hasEpilogue(opt)) return;
  const T alpha = static_cast<T>(opt.alpha), beta = static_cast<T>(opt.beta);
  const float* c = opt.beta != 0.0f ? opt.c->data() : nullptr;
  const float* bias = opt.bias ? opt.bias->data() : nullptr;
  const int64_t rows_per_job = std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, n));
  gemm_detail::parallelJobs((m + rows_per_job - 1) / rows_per_job, threads, {}, "", 0, 0, [&](int64_t j) {
    for (int64_t i = j * rows_per_job; i < std::min(m, (j + 1) * rows_per_job); ++i) {
      T* row = d + i * n;
      // One rounding per operation, in the documented order; `volatile` keeps each product
      // rounded on its own, so the compiler cannot contract it with the add that follows into a
      // fused multiply-add.
      for (int64_t k = 0; k < n; ++k) {
        T y = row[k];
        if (opt.alpha != 1.0f) {
          volatile T t = alpha * y;
          y = t;
        }
        if (c) {
          volatile T t = beta * static_cast<T>(c[i * n + k]);
          y = y + t;
        }
        if (bias) y = y + static_cast<T>(bias[k]);
        row[k] = y;
      }
    }
  });
}
} // namespace

void applyEpilogue(const GemmOptions& opt, float* d, int64_t m, int64_t n, int threads) {
  epilogueImpl(opt, d, m, n, threads);
}
void applyEpilogue(const GemmOptions& opt, double* d, int64_t m, int64_t n, int threads) {
  epilogueImpl(opt, d, m, n, threads);
}

void checkOutputScale(const GemmOptions& opt) {
  const bool fp8 = opt.output == OutputType::E4M3FN || opt.output == OutputType::E5M2;
  if (fp8 && !(std::isfinite(opt.output_quant_scale) && opt.output_quant_scale > 0))
    throw std::invalid_argument("the output scale (quant multiplier scale_D) must be finite and > 0");
  if (!fp8 && opt.output_quant_scale != 1.0f)
    throw std::invalid_argument(std::string("an output scale scale_D applies only to FP8 outputs (E4M3FN, E5M2); the "
                                            "output is ") +
                                toString(opt.output) + ", which cuBLASLt writes without D_SCALE: leave scale_D at 1");
}

namespace {

using namespace gemm_detail;

std::string humanBytes(double b) {
  char buf[64];
  if (b >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  else
    std::snprintf(buf, sizeof buf, "%.0f bytes", b);
  return buf;
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  return "CPU";
}

/// Bytes the CPU backend allocates for (M, N, K) with these options (inputs excluded).
double bytesNeeded(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt) {
  const double M = static_cast<double>(a.rows), K = static_cast<double>(a.cols), N = static_cast<double>(b.cols);
  double bytes = 0;
  bytes += (M * K + K * N) * 4.0; // decoded operands (float) or packed BF16 pairs (≤ this)
  bytes += M * N * 4.0;           // float accumulator C
  if (opt.accumulation == Accumulation::Exact) bytes += M * N * 8.0; // double accumulator
  if (opt.accumulation == Accumulation::FastAccum) bytes += M * N * 8.0;
  bytes += M * N * 5.0; // output values (float) + codes
  return bytes;
}

/// Converts the accumulated D (before the output cast) into the GemmOutput fields.
template <class T> void convertOutput(const T* dv, int64_t count, const GemmOptions& opt, GemmOutput& out) {
  const size_t n = static_cast<size_t>(count);
  // amax_D: max |D| before scale_D and the cast; NaN propagates (a NaN output is reported).
  double amax = 0;
  bool nan = false;
  for (size_t i = 0; i < n; ++i) {
    const double v = std::fabs(static_cast<double>(dv[i]));
    if (std::isnan(v))
      nan = true;
    else if (v > amax)
      amax = v;
  }
  out.amax_d = nan ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(amax);
  out.d.resize(n);
  switch (opt.output) {
  case OutputType::FP32:
    for (size_t i = 0; i < n; ++i) out.d[i] = static_cast<float>(dv[i]);
    break;
  case OutputType::BF16:
  case OutputType::FP16: {
    // IEEE conversion, RNE, overflow to ±Inf (not saturating), one rounding from T.
    const Format& f = opt.output == OutputType::BF16 ? Format::BF16() : Format::FP16();
    EncodeOptions eo;
    eo.saturate = false;
    if constexpr (std::is_same_v<T, float>) {
      f.roundTripBulk(dv, out.d.data(), n, eo);
    } else {
      for (size_t i = 0; i < n; ++i) out.d[i] = static_cast<float>(f.decode(f.encode(dv[i], eo)));
    }
    break;
  }
  case OutputType::E4M3FN:
  case OutputType::E5M2: {
    // cuBLASLt: D·scale_D then a saturating (satfinite) RNE cast; d = decode(code) / scale_D.
    const Format& f = opt.output == OutputType::E4M3FN ? Format::E4M3FN() : Format::E5M2();
    EncodeOptions eo;
    eo.saturate = true;
    out.d_codes.resize(n);
    if constexpr (std::is_same_v<T, float>) {
      f.encodeBulk(dv, out.d_codes.data(), n, eo, opt.output_quant_scale, Format::ScaleOp::Multiply);
    } else {
      f.encodeBulk(dv, out.d_codes.data(), n, eo, static_cast<double>(opt.output_quant_scale),
                   Format::ScaleOp::Multiply);
    }
    const std::vector<float>& table = f.decodeTable();
    const double inv = 1.0 / static_cast<double>(opt.output_quant_scale);
    for (size_t i = 0; i < n; ++i) out.d[i] = static_cast<float>(static_cast<double>(table[out.d_codes[i]]) * inv);
    break;
  }
  }
}

/// max |v| (NaN if any v is NaN), as cuBLASLt's AMAX_D: before scale_D and the output cast.
float amaxOf(const std::vector<float>& v) {
  // max |x|, NaN when any element is NaN: scaling.h's amax (integer max of the magnitude bits,
  // vectorised at the CPU level).
  return static_cast<float>(fp8lab::amaxOf(v.data(), v.size(), /*ignore_nan=*/false));
}

std::vector<float> decodeOperand(const QuantizedTensor& t, int threads) {
  std::vector<float> v(t.codes.size());
  const int64_t chunk = 1 << 18;
  const int64_t jobs = (static_cast<int64_t>(v.size()) + chunk - 1) / chunk;
  parallelJobs(jobs, threads, {}, "", 0, 0, [&](int64_t j) {
    const size_t b = static_cast<size_t>(j * chunk), e = std::min(v.size(), b + static_cast<size_t>(chunk));
    t.format->decodeBulk(t.codes.data() + b, v.data() + b, e - b);
  });
  return v;
}

class CpuGemmBackend final : public GemmBackend {
public:
  std::string name() const override { return "cpu"; }
  std::string device() const override {
    // The model name, then the kernels' level and the vector kernels usable at it.
    static const std::string d = [] {
      std::string s = cpuModel() + " (" + cpuLevelDescription();
      if (cpuHasAvx512Fma()) s += ", AVX512-FMA";
      if (cpuHasAvx512Bf16()) s += ", AVX512-BF16";
      if (cpuHasAvx2Fma()) s += ", AVX2-FMA";
      return s + ")";
    }();
    return d;
  }
  std::string unsupportedReason(const QuantizedTensor& a, const QuantizedTensor& b,
                                const GemmOptions& opt) const override {
    try {
      const Plan plan = makePlan(a, b, opt);
      checkEpilogue(opt, plan.m, plan.n);
    } catch (const std::exception& e) {
      return e.what();
    }
    return memoryReason(a, b, opt);
  }

  GemmOutput run(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt,
                 const ProgressFn& progress) override {
    const Plan plan = makePlan(a, b, opt);
    checkEpilogue(opt, plan.m, plan.n);
    const std::string mem = memoryReason(a, b, opt);
    if (!mem.empty()) throw std::runtime_error(mem);
    const int threads = resolveThreads(opt.threads);
    GemmOutput out;
    out.m = plan.m;
    out.n = plan.n;
    out.backend = name();
    out.device = device();
    out.model_of_undocumented_hardware = opt.accumulation == Accumulation::FastAccum;
    if (a.format->name() == "E5M2" && b.format->name() == "E5M2")
      out.warnings.push_back(
          {Severity::Warning, "unsupported on GPU", "A, B",
           "E5M2 x E5M2 is not supported by cuBLASLt (PyTorch refuses it too); the CPU reference computes it anyway"});
    if (opt.accumulation == Accumulation::FastAccum) {
      out.warnings.push_back(
          {Severity::Info, "model of undocumented hardware", "accumulation",
           "FastAccum models FP8 tensor-core accumulation, which NVIDIA does not document: " + fastAccumText(opt) +
               (opt.mma == MmaRules{} ? " (DeepSeek-V3 §3.3's prose model; the accumulation "
                                        "presets carry the rules measured on GPUs)"
                                      : std::string())});
      if (!opt.fast_accum_promotes && plan.scaled_promotion())
        out.warnings.push_back({Severity::Warning, "promotion forced by block scales", "accumulation",
                                "scales vary along K, so the sum is promoted at every scale-block boundary although "
                                "fast_accum_promotes is false (cuBLASLt refuses fast accumulation with block scales)"});
    }
    // C as the MMA's accumulator operand (MmaCEntry::Accumulator): only where the kernel computes
    // D = A·B + beta·C, i.e. alpha = 1 and every dequant scale 1; otherwise in the epilogue.
    bool c_in_accumulator = false;
    std::vector<float> c_init;
    if (opt.accumulation == Accumulation::FastAccum && opt.mma.c_entry == MmaCEntry::Accumulator && opt.beta != 0.0f &&
        opt.c) {
      std::string why;
      const bool inside = opt.mma.block_scales == MmaBlockScales::Inside;
      if (opt.alpha != 1.0f)
        why = "alpha is not 1";
      else if (inside ? gemmTensorFactor(a.tensor_scale, b.tensor_scale) != 1.0f
                      : plan.has_const_scale || plan.scaled_promotion())
        why = inside ? "the operands' tensor factor (NVFP4's second scale level) is not 1"
                     : "the operands have dequant scales other than 1";
      if (why.empty()) {
        c_in_accumulator = true;
        c_init.resize(opt.c->size());
        for (size_t i = 0; i < c_init.size(); ++i) c_init[i] = opt.beta * (*opt.c)[i]; // float32(beta·C)
      } else {
        out.warnings.push_back({Severity::Info, "C in the epilogue", "c",
                                "the model adds C inside the MMA (as the accumulator's first value), which a kernel "
                                "can do only for D = A·B + beta·C; here " +
                                    why + ", so beta·C is added in the epilogue"});
      }
    }
    GemmOptions epilogue = opt; // the epilogue's steps: without beta·C when it entered the MMA
    if (c_in_accumulator) epilogue.beta = 0.0f;
    const int64_t mn = plan.m * plan.n;
    if (mn == 0) {
      out.algorithm = "empty output";
      return out;
    }
    reportProgress(progress, 0.0, "gemm");
    const auto t0 = std::chrono::steady_clock::now();
    if (opt.accumulation == Accumulation::Exact) {
      std::vector<double> c(static_cast<size_t>(mn), 0.0);
      gemmDoubleCodes(plan, a, b, c.data(), threads, progress);
      applyConstScales(plan, c.data(), threads);
      applyEpilogue(opt, c.data(), plan.m, plan.n, threads);
      convertOutput(c.data(), mn, opt, out);
      out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      out.algorithm = std::string("exact (double), ") +
                      (cpuHasAvx512F()   ? "avx512"
                       : cpuHasAvx2Fma() ? "avx2"
                                         : "portable") +
                      " blocked, " + std::to_string(threads) + " threads";
    } else {
      std::vector<float> c(static_cast<size_t>(mn), 0.0f);
      bool done = false, fma_kernel_used = false, scales_applied = false;
      const bool vector_model = opt.accumulation != Accumulation::FastAccum;
      const std::string tail = " blocked, " + std::to_string(threads) + " threads";
      // Auto takes whichever of the two AVX-512 kernels is faster on this CPU (they give the same
      // bits): the BF16 one where VDPBF16PS runs at full rate, two exact products per lane and
      // instruction. Below CPU level avx512 it takes the AVX2 FMA kernel, then the portable one.
      if (vector_model &&
          ((opt.cpu_kernel == CpuKernel::Auto && preferBf16Kernel()) || opt.cpu_kernel == CpuKernel::Avx512Bf16)) {
        const std::string why =
            cpuHasAvx512Bf16() ? avx512Bf16Unsuitable(plan, a, b) : std::string("this CPU has no AVX512-BF16");
        if (why.empty()) {
          gemmFloatAvx512Bf16(plan, a, b, c.data(), threads, progress);
          out.algorithm = std::string(toString(opt.accumulation)) + ", avx512-bf16" + tail;
          done = true;
        } else if (opt.cpu_kernel == CpuKernel::Avx512Bf16) {
          out.warnings.push_back(
              {Severity::Info, "portable kernel used", "gemm", "AVX512-BF16 kernel not used: " + why});
        }
      }
      if (!done && vector_model && (opt.cpu_kernel == CpuKernel::Auto || opt.cpu_kernel == CpuKernel::Avx512Fma)) {
        const std::string why =
            cpuHasAvx512Fma() ? fmaKernelUnsuitable(a, b) : std::string("this CPU has no AVX512F/FMA");
        if (why.empty()) {
          gemmFloatAvx512Fma(plan, a, b, c.data(), threads, progress);
          fma_kernel_used = true;
          out.algorithm = std::string(toString(opt.accumulation)) + ", avx512-fma" + tail;
          done = true;
        } else if (opt.cpu_kernel == CpuKernel::Avx512Fma) {
          out.warnings.push_back(
              {Severity::Info, "portable kernel used", "gemm", "AVX512 FMA kernel not used: " + why});
        }
      }
      if (!done && vector_model && (opt.cpu_kernel == CpuKernel::Auto || opt.cpu_kernel == CpuKernel::Avx2Fma)) {
        const std::string why = cpuHasAvx2Fma() ? fmaKernelUnsuitable(a, b)
                                                : "CPU level " + std::string(toString(cpuLevel())) + " has no AVX2/FMA";
        if (why.empty()) {
          gemmFloatAvx2Fma(plan, a, b, c.data(), threads, progress);
          fma_kernel_used = true;
          out.algorithm = std::string(toString(opt.accumulation)) + ", avx2-fma" + tail;
          done = true;
        } else if (opt.cpu_kernel == CpuKernel::Avx2Fma) {
          out.warnings.push_back({Severity::Info, "portable kernel used", "gemm", "AVX2 FMA kernel not used: " + why});
        }
      }
      if (!done) {
        const std::vector<float> af = decodeOperand(a, threads), bf = decodeOperand(b, threads);
        if (opt.accumulation == Accumulation::FastAccum && opt.mma.block_scales == MmaBlockScales::Inside) {
          gemmMmaBlockScaled(a, b, opt, c_in_accumulator ? c_init.data() : nullptr, c.data(), threads, progress);
          scales_applied = true;
          out.algorithm = "block-scaled tensor-core MMA MODEL (" + fastAccumText(opt) + "), portable, " +
                          std::to_string(threads) + " threads";
        } else if (opt.accumulation == Accumulation::FastAccum && opt.mma.datapath == MmaDatapath::Cdna3) {
          gemmMmaCdna3(a, b, opt, c_in_accumulator ? c_init.data() : nullptr, c.data(), threads, progress);
          out.algorithm = "CDNA3 FP8 MFMA MODEL (groups of 16, even and odd products apart, RNE to float32), "
                          "portable, " +
                          std::to_string(threads) + " threads";
        } else if (opt.accumulation == Accumulation::FastAccum) {
          FastAccumParams fp;
          fp.bits = opt.fast_accum_bits;
          fp.group = opt.fast_accum_group;
          fp.rules = opt.mma;
          fp.emin_a = a.format->minExponent();
          fp.emin_b = b.format->minExponent();
          if (c_in_accumulator) fp.c_init = c_init.data();
          gemmFastAccumPortable(plan, af.data(), bf.data(), c.data(), fp, threads, progress);
          out.algorithm =
              "tensor-core MMA MODEL (" + fastAccumText(opt) + "), portable, " + std::to_string(threads) + " threads";
        } else {
          gemmFloatPortable(plan, af.data(), bf.data(), c.data(), threads, progress);
          out.algorithm =
              std::string(toString(opt.accumulation)) + ", portable blocked, " + std::to_string(threads) + " threads";
        }
      }
      // The FMA kernels and the block-scaled MMA apply the scales themselves.
      if (!fma_kernel_used && !scales_applied) applyConstScales(plan, c.data(), threads);
      applyEpilogue(epilogue, c.data(), plan.m, plan.n, threads);
      if (opt.output == OutputType::FP32) {
        convertOutput(c.data(), 0, opt, out); // nothing to convert: hand C over
        out.amax_d = amaxOf(c);
        out.d = std::move(c);
      } else {
        convertOutput(c.data(), mn, opt, out);
      }
      out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    reportProgress(progress, 1.0, "gemm");
    return out;
  }

private:
  static std::string memoryReason(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt) {
    const double need = bytesNeeded(a, b, opt);
    // Reading /proc/meminfo costs ~5 µs, as much as a small GEMM of a training step: buffers under
    // 64 MiB are not checked against the memory available (an explicit memory_limit_bytes still is).
    if (opt.memory_limit_bytes <= 0 && need < 64.0 * 1024 * 1024) return {};
    const double have =
        static_cast<double>(opt.memory_limit_bytes > 0 ? opt.memory_limit_bytes : availableMemoryBytes());
    if (need > have) {
      std::ostringstream s;
      s << "GEMM " << a.rows << "x" << b.cols << "x" << a.cols << " (M x N x K) needs " << humanBytes(need)
        << " of buffers, more than the " << humanBytes(have)
        << (opt.memory_limit_bytes > 0 ? " allowed" : " of memory available");
      return s.str();
    }
    return {};
  }
};

} // namespace

std::unique_ptr<GemmBackend> makeCpuGemmBackend() {
  return std::make_unique<CpuGemmBackend>();
}

} // namespace fp8lab

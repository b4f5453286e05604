// FP8 Lab — device checks of the cuBLASLt FP8 GEMM against the CPU reference backend.
// Exit 77 (skip) without a GPU.
//  1. Exact by construction (CUTLASS example 58 style): codes of small integers (|v| ≤ 4, exact in
//     E4M3 and E5M2), power-of-two block scales in [2^-3, 2^1]; every partial sum is an integer
//     < 2^13, every scaled sum a dyadic rational well inside float32 and FP16 range, so every
//     summation order — and the ~14-bit fast accumulator — gives the same exact result. GPU output
//     (FP32, BF16, FP16, E4M3 with D scale) must be bit-identical to the CPU reference, for
//     E4M3×E4M3, E4M3×E5M2, E5M2×E4M3, every scale pairing (native and promoted), FAST_ACCUM 0/1,
//     and shapes that need padding. AMAX_D is compared with the CPU's max |D| before and after
//     scale_D (which one cuBLASLt reports is recorded: unverified in the docs).
//  2. Realistic: random normal / outlier data quantized by presets (TE per-tensor, torchao
//     row-wise, DeepGEMM 1x128 × 128x128), K = 4096. GPU split accumulation (FAST_ACCUM = 0) vs
//     the CPU SplitFP32 model. The split model's worst-case bound is
//         |D_gpu − D_cpu| ≤ 2·γ_n · Σ_k |a_ik · b_kj| · (scales),  γ_n = n·u/(1 − n·u),
//         n = 128 + K/128 + 4 (one window, the promotions, the scale products), u = 2^-24;
//     its worst ratio is recorded. The hard check adds the tensor-core term (≈14 significant
//     bits inside a 32-product WGMMA, promoted every 128: Σ_groups 32·2^-13·Σ_window|p|), since
//     the hardware's in-window precision is undocumented (DeepSeek-V3 §3.3.2).
//  3. Fast accumulation vs split: errors of both GPU modes and of the CPU models against the
//     exact (double) result are recorded in $OUT/gemm_accuracy.csv; and the kernel check of
//     core/gemm/kernel_check.h on the GPU's outputs: FAST_ACCUM = 0 compared element by element
//     with the CPU SplitFP32 model, FAST_ACCUM = 1 fitted against every accumulation model (bits,
//     group, N_C) — how many accumulator bits the hardware keeps (DeepGEMM#176) — recorded in
//     $OUT/accumulation_fit.txt. These are findings about undocumented hardware, printed, not failed.
//  4. cuBLASLt's FP8 D against the measured presets over many shapes (FAST_ACCUM = 0: hopper_fp8,
//     = 1: hopper_fp8_fast_accum), bit for bit, and the probe vectors (with C) fitted: PRESET and
//     PROBE lines of $OUT/accumulation_fit.txt, findings rather than failures.
//  The exact-by-construction comparisons above use the same element-by-element comparison (first
//  and worst differing element in gemm_exact.csv).
// On a mismatch the operands, scales, both outputs and amax go to $OUT/gemm_mismatch_<case>.txt.
#include "check_util.h"
#include "gemm_cases.h"

#include "backend/backend_factory.h"
#include "cuda_gemm_backend.h"
#include "device_probe.h"
#include "gemm/error_split.h"
#include "gemm/accumulation_preset.h"
#include "gemm/kernel_check.h"
#include "gemm/probe_vectors.h"
#include "gemm/random_matrix.h"
#include "scaling/scaling.h"

#include <cublasLt.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace fp8lab;
using namespace fp8lab::gpu;
using fp8lab::checks::Checker;
using fp8lab::checks::Gran;
using fp8lab::checks::granName;
using fp8lab::checks::intTensor;

namespace {

ObservedOutput observedOf(const GemmOutput& g) {
  ObservedOutput o;
  o.rows = g.m;
  o.cols = g.n;
  o.values = g.d;
  o.codes = g.d_codes;
  o.origin = "GPU " + g.algorithm;
  return o;
}

void dump(const std::string& name, const QuantizedTensor& a, const QuantizedTensor& b, const GemmOutput& g,
          const GemmOutput& c) {
  const std::string path = checks::outDir() + "/gemm_mismatch_" + name + ".txt";
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  auto tensor = [&](const char* what, const QuantizedTensor& t) {
    std::fprintf(f, "# %s %lldx%lld %s block %lldx%lld\n# codes (row-major, hex)\n", what,
                 static_cast<long long>(t.rows), static_cast<long long>(t.cols), t.format->name().c_str(),
                 static_cast<long long>(t.block.rows), static_cast<long long>(t.block.cols));
    for (int64_t i = 0; i < t.rows; ++i) {
      for (int64_t j = 0; j < t.cols; ++j) std::fprintf(f, "%02x", t.codes[static_cast<size_t>(i * t.cols + j)]);
      std::fprintf(f, "\n");
    }
    std::fprintf(f, "# dequant scales (block grid, row-major)\n");
    for (float s : t.dequant_scales) std::fprintf(f, "%a ", static_cast<double>(s));
    std::fprintf(f, "\n");
  };
  tensor("A", a);
  tensor("B", b);
  std::fprintf(f, "# gpu: %s | amax_d %a\n# cpu: %s | amax_d %a\n# i j gpu cpu (mismatches only)\n",
               g.algorithm.c_str(), static_cast<double>(g.amax_d), c.algorithm.c_str(), static_cast<double>(c.amax_d));
  int n = 0;
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      const size_t e = static_cast<size_t>(i * g.n + j);
      if (!checks::sameFloat(g.d[e], c.d[e]) && n++ < 10000)
        std::fprintf(f, "%lld %lld %a %a\n", static_cast<long long>(i), static_cast<long long>(j),
                     static_cast<double>(g.d[e]), static_cast<double>(c.d[e]));
    }
  std::fclose(f);
  std::printf("  dumped %s\n", path.c_str());
}

/// `scale_modes`: the GPU is sm_90 and both the cuBLASLt headers this was built with and the
/// library it runs with are ≥ 12.9, i.e. the outer-vector and 1x128/128x128 modes must work. On an
/// older toolkit (which builds per-tensor only, by design) their refusal is reported, not failed.
void checkExact(Checker& c, GemmBackend& gpu, GemmBackend& cpu, FILE* log, bool scale_modes) {
  struct Types {
    const Format* a;
    const Format* b;
  };
  const Types types[] = {{&Format::E4M3FN(), &Format::E4M3FN()},
                         {&Format::E4M3FN(), &Format::E5M2()},
                         {&Format::E5M2(), &Format::E4M3FN()}};
  const std::pair<Gran, Gran> pairs[] = {{Gran::Tensor, Gran::Tensor},   {Gran::Outer, Gran::Outer},
                                         {Gran::Tensor, Gran::Outer},    {Gran::Block1D, Gran::Block1D},
                                         {Gran::Block1D, Gran::Block2D}, {Gran::Block2D, Gran::Block1D},
                                         {Gran::Block2D, Gran::Block2D}, {Gran::Outer, Gran::Block2D}};
  const OutputType outs[] = {OutputType::FP32, OutputType::BF16, OutputType::FP16, OutputType::E4M3FN};
  int ran = 0, unsupported = 0, amax_pre = 0, amax_post = 0;
  uint32_t seed = 100;
  for (const auto& ty : types)
    for (const auto& pr : pairs)
      for (OutputType out : outs)
        for (int fast = 0; fast < 2; ++fast)
          for (int shape = 0; shape < 2; ++shape) {
            // Shape 0 needs M/N padding (200 x 136), K = 384 = 3 blocks; shape 1: K = 300 (K padding,
            // a partial last K-block for block modes), M = 64, N = 48.
            const int64_t M = shape ? 64 : 200, N = shape ? 48 : 136, K = shape ? 300 : 384;
            const QuantizedTensor a = intTensor(M, K, *ty.a, pr.first, true, seed++);
            const QuantizedTensor b = intTensor(K, N, *ty.b, pr.second, false, seed++);
            GemmOptions opt;
            opt.output = out;
            opt.output_quant_scale = out == OutputType::E4M3FN ? 0.015625f : 1.0f; // |D·2^-6| ≤ 448
            if (fast) {
              opt.accumulation = Accumulation::FastAccum;
              opt.fast_accum_promotes = false;
            }
            const std::string name = ty.a->name() + "x" + ty.b->name() + "_" + granName(pr.first) + "x" +
                                     granName(pr.second) + "_" + toString(out) + "_fast" + std::to_string(fast) + "_" +
                                     std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
            const std::string why = gpu.unsupportedReason(a, b, opt);
            if (!why.empty()) {
              ++unsupported;
              std::fprintf(log, "%s,unsupported,%s\n", name.c_str(), why.c_str());
              // The combinations PyTorch and TE rely on must be supported on Hopper: per-tensor with
              // 16/32-bit output for all three type pairs, row-wise E4M3 x E4M3 -> BF16 (cuBLASLt >= 12.9).
              const bool per_tensor = pr.first == Gran::Tensor && pr.second == Gran::Tensor;
              const bool rowwise =
                  pr.first == Gran::Outer && pr.second == Gran::Outer && ty.a == ty.b && out == OutputType::BF16;
              const bool must = (per_tensor && out != OutputType::E4M3FN) || (rowwise && scale_modes);
              if (must) c.expect(false, name + ": unsupported on this GPU: " + why);
              continue;
            }
            GemmOptions ref = opt;
            ref.accumulation = Accumulation::SplitFP32;
            try {
              const GemmOutput g = gpu.run(a, b, opt);
              const GemmOutput r = cpu.run(a, b, ref);
              // The kernel check's comparison: same code of the output type (FP8: d_codes) or both NaN.
              CompareOptions co;
              co.output_quant_scale = opt.output_quant_scale;
              const OutputComparison cmp = compareOutputs(observedOf(g), r.d, r.d_codes, out, co);
              size_t bad = static_cast<size_t>(cmp.differing);
              std::string where;
              if (bad)
                where = "; first (" + std::to_string(cmp.first.row) + ", " + std::to_string(cmp.first.col) + "), max " +
                        std::to_string(cmp.max_ulps) + " ULP at (" + std::to_string(cmp.worst.row) + ", " +
                        std::to_string(cmp.worst.col) + ")";
              std::string amax_note = where;
              if (out == OutputType::E4M3FN) {
                if (g.amax_d == r.amax_d)
                  ++amax_pre, amax_note += "AMAX_D = max|D| before scale_D";
                else if (g.amax_d == r.amax_d * opt.output_quant_scale)
                  ++amax_post, amax_note += "AMAX_D = max|D| after scale_D";
                else {
                  amax_note += "AMAX_D " + checks::hexf(g.amax_d) + " matches neither " + checks::hexf(r.amax_d) +
                               " nor its scaled value";
                  ++bad;
                }
              }
              ++ran;
              std::fprintf(log, "%s,%s,%zu mismatches; %s; %s\n", name.c_str(), bad ? "FAIL" : "ok", bad,
                           g.algorithm.c_str(), amax_note.c_str());
              if (!c.expect(bad == 0,
                            name + ": " + std::to_string(bad) + " elements differ from the CPU reference " + amax_note))
                dump(name, a, b, g, r);
            } catch (const std::exception& e) {
              c.expect(false, name + ": " + e.what());
            }
          }
  std::printf("  exact-by-construction: %d GEMMs compared, %d combinations unsupported by this GPU/cuBLASLt (see "
              "gemm_exact.csv); AMAX_D pre-scale in %d, post-scale in %d FP8-output runs\n",
              ran, unsupported, amax_pre, amax_post);
  c.expect(ran >= 40, "at least 40 exact GEMMs ran (" + std::to_string(ran) + ")");
}

struct ErrStats {
  double max_abs = 0, max_rel_to_amax = 0, rms = 0;
};
ErrStats errorVs(const std::vector<float>& d, const std::vector<double>& exact) {
  ErrStats s;
  double amax = 0, sq = 0;
  for (double v : exact) amax = std::max(amax, std::fabs(v));
  for (size_t i = 0; i < d.size(); ++i) {
    const double e = std::fabs(static_cast<double>(d[i]) - exact[i]);
    s.max_abs = std::max(s.max_abs, e);
    sq += e * e;
  }
  s.rms = std::sqrt(sq / static_cast<double>(d.size()));
  s.max_rel_to_amax = amax > 0 ? s.max_abs / amax : 0;
  return s;
}

void checkRealistic(Checker& c, GemmBackend& gpu, GemmBackend& cpu, FILE* csv, FILE* fitlog, bool scale_modes) {
  const int64_t M = 256, N = 256, K = 4096;
  struct Case {
    const char* a_preset;
    const char* b_preset;
  };
  const Case cases[] = {
      {"te_current", "te_current"}, {"torchao_rowwise", "torchao_rowwise"}, {"deepgemm_1x128", "deepgemm_128x128"}};
  for (int dist = 0; dist < 2; ++dist) {
    RandomMatrixOptions o;
    if (dist) {
      o.distribution = Distribution::Outliers;
      o.outlier_fraction = 0.001;
      o.outlier_factor = 50;
    }
    const std::vector<float> xa = randomMatrix(M, K, 20 + dist, o), xb = randomMatrix(K, N, 30 + dist, o);
    for (const Case& cs : cases) {
      const auto ca = scalingPreset(cs.a_preset), cb = scalingPreset(cs.b_preset);
      if (!ca || !cb) {
        c.expect(false, std::string("preset missing: ") + cs.a_preset);
        continue;
      }
      const QuantizedTensor a = quantize(xa.data(), M, K, Format::E4M3FN(), *ca, Axis::Cols);
      const QuantizedTensor b = quantize(xb.data(), K, N, Format::E4M3FN(), *cb, Axis::Rows);
      const std::string name = std::string(cs.a_preset) + "_x_" + cs.b_preset + (dist ? "_outliers" : "_normal");
      GemmOptions split;
      if (const std::string why = gpu.unsupportedReason(a, b, split); !why.empty()) {
        // Each preset here runs on sm_90 with cuBLASLt >= 12.9; elsewhere only per-tensor must.
        const bool must = scale_modes || std::string(cs.a_preset) == "te_current";
        std::printf("    %-44s unsupported on this GPU/cuBLASLt: %s\n", name.c_str(), why.c_str());
        std::fprintf(csv, "%s,gpu FAST_ACCUM=0,,,,unsupported: %s\n", name.c_str(), why.c_str());
        if (must) c.expect(false, name + ": the CUDA backend refuses it: " + why);
        continue;
      }
      const std::vector<double> exact = quantizedExactGemm(a, b);
      std::vector<double> absprod, hw;
      checks::splitBoundTerms(a, b, absprod, hw);
      const double gamma = checks::splitGamma(K);
      GemmOptions fast;
      fast.accumulation = Accumulation::FastAccum;
      fast.fast_accum_promotes = false;
      try {
        const GemmOutput cs_split = cpu.run(a, b, split);
        const GemmOutput cs_fast = cpu.run(a, b, fast);
        const GemmOutput g_split = gpu.run(a, b, split);
        // Strict: the FP32 split model's own worst-case bound (both sides accumulate in FP32 windows).
        // Hard check: that bound plus the tensor-core term H (the hardware keeps ~14 bits inside
        // a WGMMA; undocumented, so the strict ratio is recorded as a finding, not a failure).
        double worst_fp32 = 0, worst_hw = 0;
        for (size_t i = 0; i < exact.size(); ++i) {
          const double err = std::fabs(static_cast<double>(g_split.d[i]) - cs_split.d[i]);
          const double b1 = 2 * gamma * absprod[i];
          const double b2 = b1 + hw[i];
          worst_fp32 = std::max(worst_fp32, b1 > 0 ? err / b1 : (err > 0 ? INFINITY : 0));
          worst_hw = std::max(worst_hw, b2 > 0 ? err / b2 : (err > 0 ? INFINITY : 0));
        }
        std::printf("    %-44s GPU split vs CPU SplitFP32: worst err / FP32-split bound %.3g (%s), "
                    "/ (bound + 14-bit tensor-core term) %.3g\n",
                    name.c_str(), worst_fp32,
                    worst_fp32 <= 1 ? "within" : "EXCEEDS: hardware keeps fewer bits than FP32", worst_hw);
        if (!c.expect(worst_hw <= 1.0, name +
                                           ": GPU split vs CPU SplitFP32 within the split bound + 14-bit tensor-core "
                                           "term (worst ratio " +
                                           std::to_string(worst_hw) + ")"))
          dump(name, a, b, g_split, cs_split);
        auto row = [&](const char* what, const GemmOutput& g) {
          const ErrStats e = errorVs(g.d, exact);
          std::fprintf(csv, "%s,%s,%.6e,%.6e,%.6e,%s\n", name.c_str(), what, e.max_abs, e.max_rel_to_amax, e.rms,
                       g.algorithm.c_str());
          std::printf("    %-44s %-22s max|err|/amax %.3e  rms %.3e\n", name.c_str(), what, e.max_rel_to_amax, e.rms);
        };
        row("gpu FAST_ACCUM=0", g_split);
        row("cpu SplitFP32", cs_split);
        row("cpu FastAccum model", cs_fast);
        {
          const OutputComparison cs = compareOutputs(observedOf(g_split), cs_split.d, {}, OutputType::FP32);
          char line[400];
          std::snprintf(line, sizeof line,
                        "FAST_ACCUM=0 vs split FP32 N_C=128 %s: %lld of %lld identical, max %g ULP, median %g",
                        name.c_str(), static_cast<long long>(cs.identical), static_cast<long long>(cs.elements),
                        cs.max_ulps, cs.median_ulps);
          std::printf("    %s\n", line);
          std::fprintf(fitlog, "%s\n", line);
        }
        std::fprintf(csv, "%s,worst err / FP32 split bound,%.6e,,,\n", name.c_str(), worst_fp32);
        std::fprintf(csv, "%s,worst err / (bound + 14-bit term),%.6e,,,\n", name.c_str(), worst_hw);
        const std::string why = gpu.unsupportedReason(a, b, fast);
        if (why.empty()) {
          const GemmOutput g_fast = gpu.run(a, b, fast);
          row("gpu FAST_ACCUM=1", g_fast);
          // Which accumulation model reproduces cuBLASLt's FAST_ACCUM output (the kernel check's fit).
          const auto t0 = std::chrono::steady_clock::now();
          const FitResult fit = fitAccumulation(a, b, fast, observedOf(g_fast));
          const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          std::printf("    FAST_ACCUM=1 fit %s: %s (%.1f s)\n", name.c_str(), fit.verdict.c_str(), sec);
          std::fprintf(fitlog, "FAST_ACCUM=1 fit %s: %s\n", name.c_str(), fit.verdict.c_str());
          if (!fit.warning.empty()) std::fprintf(fitlog, "  warning: %s\n", fit.warning.c_str());
          for (const auto& m : fit.models)
            std::fprintf(fitlog, "  %-52s %lld of %lld identical, max %g ULP\n", m.model.name().c_str(),
                         static_cast<long long>(m.comparison.identical), static_cast<long long>(m.comparison.elements),
                         m.comparison.max_ulps);
          c.expect(fit.best.comparison.elements == M * N, name + ": the fit compared all of D");
        } else {
          std::fprintf(csv, "%s,gpu FAST_ACCUM=1,,,,unsupported: %s\n", name.c_str(), why.c_str());
          std::printf("    %-44s gpu FAST_ACCUM=1 unsupported: %s\n", name.c_str(), why.c_str());
        }
      } catch (const std::exception& e) {
        c.expect(false, name + ": " + e.what());
      }
    }
  }
}

/// 4. cuBLASLt's FP8 D against the measured tensor-core presets (accumulation_preset.h), bit for
/// bit, over shapes from one WGMMA (K = 32) to several promotion windows: random codes over the
/// whole E4M3 exponent range (makeProbeVectors), per-tensor scale 1, FP32 D; FAST_ACCUM = 0 against
/// hopper_fp8 (promotion every 128) and FAST_ACCUM = 1 against hopper_fp8_fast_accum. Then the
/// probe vectors with C (beta = 1) through cuBLASLt, fitted over every candidate: which model, and
/// where C enters. Findings about the hardware, recorded as PRESET / PROBE lines in
/// accumulation_fit.txt, not failures.
void checkPresets(Checker& c, GemmBackend& gpu, GemmBackend& cpu, FILE* fitlog) {
  std::printf("  4. cuBLASLt FP8 D against the measured presets (bit for bit)\n");
  const int64_t shapes[][3] = {{64, 64, 32},     {128, 128, 64},   {128, 256, 128},  {256, 256, 512},
                               {512, 384, 1024}, {256, 512, 4096}, {1000, 1000, 32}, {384, 256, 8192}};
  uint64_t seed = 100;
  for (const auto& sh : shapes) {
    ProbeOptions po;
    po.m = sh[0];
    po.n = sh[1];
    po.k = sh[2];
    po.seed = seed++;
    po.check = false;
    const ProbeVectors pv = makeProbeVectors(po);
    for (const char* preset : {"hopper_fp8", "hopper_fp8_fast_accum"}) {
      const AccumulationPreset p = *accumulationPreset(preset);
      GemmOptions o = withAccumulationPreset(GemmOptions{}, p);
      try {
        if (const std::string why = gpu.unsupportedReason(pv.a, pv.b, o); !why.empty()) {
          std::fprintf(fitlog, "PRESET %s %lldx%lldx%lld: unsupported: %s\n", preset, (long long)sh[0],
                       (long long)sh[1], (long long)sh[2], why.c_str());
          continue;
        }
        const GemmOutput g = gpu.run(pv.a, pv.b, o);
        const GemmOutput m = cpu.run(pv.a, pv.b, o);
        const OutputComparison cmp = compareOutputs(observedOf(g), m.d, {}, OutputType::FP32);
        char line[400];
        std::snprintf(line, sizeof line,
                      "PRESET FAST_ACCUM=%d vs %s %lldx%lldx%lld: %lld of %lld identical, max %g ULP",
                      p.promotes ? 0 : 1, preset, (long long)sh[0], (long long)sh[1], (long long)sh[2],
                      (long long)cmp.identical, (long long)cmp.elements, cmp.max_ulps);
        std::printf("    %s\n", line);
        std::fprintf(fitlog, "%s\n", line);
        c.expect(cmp.elements == sh[0] * sh[1], std::string(preset) + ": compared all of D");
      } catch (const std::exception& e) {
        c.expect(false, std::string(preset) + ": " + e.what());
      }
    }
  }
  // The probe vectors with C through cuBLASLt (beta = 1, FAST_ACCUM = 0 and 1), fitted.
  ProbeOptions po;
  po.check = false;
  const ProbeVectors pv = makeProbeVectors(po);
  for (bool fast : {false, true}) {
    GemmOptions o = probeGemmOptions(pv);
    o.accumulation = fast ? Accumulation::FastAccum : Accumulation::SplitFP32;
    o.fast_accum_promotes = !fast;
    try {
      if (const std::string why = gpu.unsupportedReason(pv.a, pv.b, o); !why.empty()) {
        std::fprintf(fitlog, "PROBE FAST_ACCUM=%d: unsupported: %s\n", fast ? 1 : 0, why.c_str());
        continue;
      }
      const GemmOutput g = gpu.run(pv.a, pv.b, o);
      const FitResult fit = fitAccumulation(pv.a, pv.b, o, observedOf(g));
      std::printf("    PROBE FAST_ACCUM=%d fit: %s\n", fast ? 1 : 0, fit.verdict.c_str());
      std::fprintf(fitlog, "PROBE FAST_ACCUM=%d fit: %s\n", fast ? 1 : 0, fit.verdict.c_str());
      if (!fit.warning.empty()) std::fprintf(fitlog, "  warning: %s\n", fit.warning.c_str());
    } catch (const std::exception& e) {
      c.expect(false, std::string("probe vectors: ") + e.what());
    }
  }
}

void checkBadInput(Checker& c, GemmBackend& gpu) {
  const QuantizedTensor a = intTensor(32, 64, Format::E4M3FN(), Gran::Tensor, true, 1);
  const QuantizedTensor b = intTensor(48, 32, Format::E4M3FN(), Gran::Tensor, false, 2);
  bool threw = false;
  try {
    (void)gpu.run(a, b, {});
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  c.expect(threw, "shape mismatch throws std::invalid_argument");
  const QuantizedTensor bz = intTensor(64, 32, Format::E4M3FNUZ(), Gran::Tensor, false, 3);
  threw = false;
  try {
    (void)gpu.run(a, bz, {});
  } catch (const std::runtime_error& e) {
    threw = std::string(e.what()).find("FNUZ") != std::string::npos;
  }
  c.expect(threw, "FNUZ operand throws std::runtime_error naming FNUZ");
  // The backend policy with the GPU present (core/gemm/backend_policy.h): auto runs an E4M3FN GEMM
  // on the GPU and an FNUZ one on the CPU with the GPU's reason; gpu refuses the FNUZ one.
  const QuantizedTensor b_ok = intTensor(64, 32, Format::E4M3FN(), Gran::Tensor, false, 4);
  std::string error;
  const auto au = makeGemmBackend(BackendRequest::Auto, &error);
  c.expect(au && au->hasGpu() && au->name() == "cuda" && au->cuda_versions.cublaslt > 0,
           "auto with a GPU gets the CUDA backend: " + (au ? au->noGpuReason() : error));
  if (au && au->hasGpu()) {
    const GemmOutput on_gpu = au->run(a, b_ok, {});
    c.expect(on_gpu.backend == "cuda" && au->gpu_runs == 1 && au->lastFallback().empty(),
             "auto: E4M3FN runs on the GPU");
    const GemmOutput on_cpu = au->run(a, bz, {});
    c.expect(on_cpu.backend == "cpu" && au->cpu_runs == 1 && au->lastFallback().find("FNUZ") != std::string::npos &&
                 !on_cpu.warnings.empty(),
             "auto: FNUZ falls back to the CPU with the reason: " + au->lastFallback());
  }
  const auto gp = makeGemmBackend(BackendRequest::Gpu, &error);
  threw = false;
  try {
    if (gp) (void)gp->run(a, bz, {});
  } catch (const std::runtime_error& e) {
    threw = std::string(e.what()).find("FNUZ") != std::string::npos;
  }
  c.expect(gp && threw, "gpu: an FNUZ GEMM is refused naming FNUZ");
}

} // namespace

int main() {
  Checker c("check_gpu_gemm");
  const ProbeResult probe = probeDevices();
  if (!probe.hasDevice()) {
    std::printf("SKIP: check_gpu_gemm: %s\n", probe.summary().c_str());
    return checks::kSkip;
  }
  std::string why;
  auto gpu = makeCudaGemmBackend(&why);
  const DeviceInfo& dev = probe.devices.front();
  const int cc = dev.cc_major * 10 + dev.cc_minor;
  if (!gpu) {
    // A GPU without FP8 tensor cores is a skip; an FP8-capable GPU whose backend cannot start is
    // a failure (the run exists to exercise it).
    std::printf("%s: check_gpu_gemm: %s\n", cc < 89 ? "SKIP" : "FAIL", why.c_str());
    return cc < 89 ? checks::kSkip : 1;
  }
#if defined(CUBLAS_VERSION) && CUBLAS_VERSION >= 120900
  const bool scale_modes = cc == 90 && probe.cublaslt_version >= 120900;
#else
  const bool scale_modes = false; // headers predate 12.9: this build has per-tensor scaling only
#endif
  auto cpu = makeCpuGemmBackend();
  std::printf("check_gpu_gemm on %s; outer-vector and block scale modes %s\n", gpu->device().c_str(),
              scale_modes ? "required (sm_90, cuBLASLt >= 12.9)" : "not required (not sm_90 or cuBLASLt < 12.9)");
  const auto t0 = std::chrono::steady_clock::now();
  FILE* log = std::fopen((checks::outDir() + "/gemm_exact.csv").c_str(), "w");
  FILE* csv = std::fopen((checks::outDir() + "/gemm_accuracy.csv").c_str(), "w");
  FILE* fitlog = std::fopen((checks::outDir() + "/accumulation_fit.txt").c_str(), "w");
  if (!log || !csv || !fitlog) {
    std::printf("check_gpu_gemm: cannot write to %s\n", checks::outDir().c_str());
    return 1;
  }
  std::fprintf(log, "case,result,detail\n");
  std::fprintf(csv, "case,result,max_abs_err,max_abs_err_over_amax,rms_err,algorithm\n");
  try {
    checkBadInput(c, *gpu);
    checkExact(c, *gpu, *cpu, log, scale_modes);
    checkRealistic(c, *gpu, *cpu, csv, fitlog, scale_modes);
    checkPresets(c, *gpu, *cpu, fitlog);
  } catch (const std::exception& e) {
    c.expect(false, std::string("exception: ") + e.what());
  }
  std::fclose(log);
  std::fclose(csv);
  std::fclose(fitlog);
  std::printf("  %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return c.finish();
}

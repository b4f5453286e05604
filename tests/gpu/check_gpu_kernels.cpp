// FP8 Lab — device checks of the GPU quantize / amax / scale / delayed-scaling kernels against
// the CPU reference (core/formats, core/scaling), bit for bit. Exit 77 (skip) without a GPU.
//  * every current-scaling preset (TE, torchao, DeepGEMM, DSV3, MX FLOOR/CEIL/RCEIL) × E4M3FN /
//    E5M2 × contraction axis rows/cols, on random (normal, log-normal, outliers) and adversarial
//    inputs (ties, subnormals, beyond max, NaN, ±Inf, ±0), at shapes with partial blocks: codes
//    from quantizeBlocks with the preset's own scales must equal quantize()'s codes;
//  * block amax (NaN ignored, as the CUDA kernels of TE) equals the CPU amax of every block;
//  * the per-tensor path (amaxTensor → currentScaleFromAmax → quantizeTensor) equals TE's rule;
//  * the delayed-scaling update kernel equals DelayedScaling (Flax, TE, TE JAX) step by step;
//  * CUDA's own log2f and exp2f(floorf(log2f)) (what torch.log2 / torch.exp2 run for torchao's
//    power-of-two scales) equal cudaLog2f / torchaoPow2 (core/scaling/scale_rules.h) on every
//    positive finite float32, bit for bit.
// On a mismatch the inputs, scales, both codes and the amax go to $OUT/mismatch_<case>.txt.
#include "check_util.h"
#include "device_math.h"

#include "cuda_raii.h"
#include "device_probe.h"
#include "gemm/random_matrix.h"
#include "quantize_kernels.h"
#include "device_quantize.h"
#include "scaling/delayed_scaling.h"
#include "scaling/scale_rules.h"
#include "scaling/scaling.h"

#include <cfloat>
#include <chrono>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

using namespace fp8lab;
using namespace fp8lab::gpu;
using fp8lab::checks::Checker;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Inputs: name + data [rows, cols].
struct Input {
  std::string name;
  int64_t rows, cols;
  std::vector<float> x;
};

std::vector<Input> makeInputs() {
  std::vector<Input> v;
  const int64_t R = 300, C = 264; // partial 128-blocks and MX 32-blocks in both directions
  RandomMatrixOptions o;
  v.push_back({"normal", R, C, randomMatrix(R, C, 1, o)});
  o.distribution = Distribution::LogNormal;
  o.sigma = 4.0;
  v.push_back({"lognormal", R, C, randomMatrix(R, C, 2, o)});
  o.distribution = Distribution::Outliers;
  o.outlier_fraction = 0.01;
  o.outlier_factor = 1000;
  v.push_back({"outliers", R, C, randomMatrix(R, C, 3, o)});
  // Adversarial: E4M3/E5M2 ties and neighbours, subnormals, beyond max, specials, scattered
  // over a normal background (so block scales stay finite in most blocks).
  Input adv{"adversarial", R, C, randomMatrix(R, C, 4, {})};
  std::vector<float> special = {
      0.0f,        -0.0f,        kInf,         -kInf,   kNaN,    448.0f, 464.0f,           480.0f,
      57344.0f,    61440.0f,     1e30f,        -1e30f,  FLT_MAX, 1e-45f, -1e-40f,          1.0f / 512,
      3.0f / 1024, 1.0f / 65536, 1.5f / 65536, 1.0625f, 1.1875f, 1.125f, 0.5f + 1.0f / 32, 3.25f,
      3.75f,       100.0f,       104.0f,       112.0f,  120.0f};
  for (size_t i = 0; i < adv.x.size(); i += 7) adv.x[i] = special[(i / 7) % special.size()];
  v.push_back(std::move(adv));
  // A block of all zeros, a row of NaN (edge rules of every preset).
  Input edge{"zeros_nan", 256, 256, randomMatrix(256, 256, 5, {})};
  for (int64_t i = 0; i < 128; ++i)
    for (int64_t j = 0; j < 128; ++j) edge.x[static_cast<size_t>(i * 256 + j)] = 0.0f;
  for (int64_t j = 0; j < 256; ++j) edge.x[static_cast<size_t>(200 * 256 + j)] = kNaN;
  v.push_back(std::move(edge));
  return v;
}

void dumpMismatch(const std::string& name, const Input& in, const QuantizedTensor& q, const std::vector<uint8_t>& gpu,
                  const std::vector<float>& gpu_amax, const std::vector<float>& cpu_amax) {
  const std::string path = checks::outDir() + "/mismatch_" + name + ".txt";
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  std::fprintf(f, "# %s: %s, %lldx%lld, block %lldx%lld, format %s, op %s\n", name.c_str(), q.strategy.c_str(),
               static_cast<long long>(in.rows), static_cast<long long>(in.cols), static_cast<long long>(q.block.rows),
               static_cast<long long>(q.block.cols), q.format->name().c_str(),
               q.scale_op == Format::ScaleOp::Divide ? "x/dequant" : "x*quant");
  std::fprintf(f, "# block grid: index quant_scale dequant_scale cpu_amax gpu_amax\n");
  for (size_t b = 0; b < q.dequant_scales.size(); ++b)
    std::fprintf(f, "block %zu %a %a %a %a\n", b, static_cast<double>(q.quant_scales[b]),
                 static_cast<double>(q.dequant_scales[b]), b < cpu_amax.size() ? static_cast<double>(cpu_amax[b]) : 0.0,
                 b < gpu_amax.size() ? static_cast<double>(gpu_amax[b]) : 0.0);
  std::fprintf(f, "# mismatching elements: i j x cpu_code gpu_code\n");
  int n = 0;
  for (int64_t i = 0; i < in.rows; ++i)
    for (int64_t j = 0; j < in.cols; ++j) {
      const size_t e = static_cast<size_t>(i * in.cols + j);
      if (e < gpu.size() && gpu[e] != q.codes[e] && n++ < 10000)
        std::fprintf(f, "%lld %lld %a 0x%02x 0x%02x\n", static_cast<long long>(i), static_cast<long long>(j),
                     static_cast<double>(in.x[e]), q.codes[e], gpu[e]);
    }
  std::fclose(f);
  std::printf("  dumped %s\n", path.c_str());
}

void checkPresets(Checker& c, const std::vector<Input>& inputs) {
  Stream stream;
  int cases = 0;
  for (const ScalingPresetInfo& info : scalingPresets()) {
    if (info.delayed) continue;
    const auto cfg = scalingPreset(info.name);
    if (!cfg) continue;
    for (const Format* f : {&Format::E4M3FN(), &Format::E5M2()}) {
      const RneEncodeConstants& k = f->rneConstants(cfg->encode.saturate);
      for (Axis axis : {Axis::Cols, Axis::Rows})
        for (const Input& in : inputs) {
          const std::string name = info.name + "_" + f->name() + "_" + toString(axis) + "_" + in.name;
          const QuantizedTensor q = quantize(in.x.data(), in.rows, in.cols, *f, *cfg, axis);
          const bool divide = q.scale_op == Format::ScaleOp::Divide;
          const std::vector<float>& scales = divide ? q.dequant_scales : q.quant_scales;
          DeviceBuffer<float> dx(in.x.size()), ds(scales.size()), damax(scales.size());
          DeviceBuffer<uint8_t> dc(in.x.size());
          dx.upload(in.x.data(), in.x.size(), stream.get());
          ds.upload(scales.data(), scales.size(), stream.get());
          quantizeBlocks(dx.get(), dc.get(), in.rows, in.cols, q.block, ds.get(), divide, k, stream.get());
          amaxBlocks(dx.get(), in.rows, in.cols, q.block, damax.get(), stream.get());
          std::vector<uint8_t> codes(in.x.size());
          std::vector<float> gamax(scales.size());
          dc.download(codes.data(), codes.size(), stream.get());
          damax.download(gamax.data(), gamax.size(), stream.get());
          stream.synchronize();
          size_t bad = 0;
          for (size_t i = 0; i < codes.size(); ++i) bad += codes[i] != q.codes[i];
          // The whole strategy on the device (amax → scale rule → quantize) must equal quantize().
          {
            const DeviceQuantized dq = quantizeOnDevice(dx.get(), in.rows, in.cols, *f, *cfg, axis, stream.get());
            const QuantizedTensor h = toHost(dq, stream.get());
            size_t bad_full = 0;
            for (size_t i = 0; i < h.codes.size(); ++i) bad_full += h.codes[i] != q.codes[i];
            for (size_t b = 0; b < h.dequant_scales.size(); ++b)
              bad_full += !checks::sameFloat(h.dequant_scales[b], q.dequant_scales[b]) ||
                          !checks::sameFloat(h.quant_scales[b], q.quant_scales[b]);
            bad_full += h.scale_codes != q.scale_codes;
            bad_full += !(h.block == q.block);
            if (!c.expect(bad_full == 0, name + ": quantizeOnDevice differs from quantize() in " +
                                             std::to_string(bad_full) + " codes/scales"))
              dumpMismatch(name + "_device_strategy", in, q, h.codes, {}, {});
          }
          // CPU amax per block, NaN ignored (the GPU kernels' fmaxf rule).
          std::vector<float> camax(scales.size(), 0.0f);
          for (int64_t i = 0; i < in.rows; ++i)
            for (int64_t j = 0; j < in.cols; ++j) {
              const float v = std::fabs(in.x[static_cast<size_t>(i * in.cols + j)]);
              float& m = camax[static_cast<size_t>((i / q.block.rows) * q.blockCols() + j / q.block.cols)];
              if (!std::isnan(v) && v > m) m = v;
            }
          size_t bad_amax = 0;
          for (size_t b = 0; b < camax.size(); ++b) bad_amax += checks::bitsOf(camax[b]) != checks::bitsOf(gamax[b]);
          ++cases;
          if (!c.expect(bad == 0 && bad_amax == 0, name + ": " + std::to_string(bad) + " code mismatches, " +
                                                       std::to_string(bad_amax) + " block-amax mismatches"))
            dumpMismatch(name, in, q, codes, gamax, camax);
        }
    }
  }
  std::printf("  %d preset x format x axis x input cases compared\n", cases);
}

void checkPerTensorPipeline(Checker& c) {
  // 4096 x 4096 normal data with adversarial values: amaxTensor → TE scale → quantizeTensor.
  const int64_t R = 4096, C = 4096;
  std::vector<float> x = randomMatrix(R, C, 7, {});
  x[12345] = 400.0f;
  x[777] = kNaN; // ignored by the amax (fmaxf), encoded as NaN
  Stream s;
  DeviceBuffer<float> dx(x.size()), damax(1), dq(1), ddq(1);
  DeviceBuffer<uint8_t> dc(x.size());
  dx.upload(x.data(), x.size(), s.get());
  amaxTensor(dx.get(), x.size(), damax.get(), s.get());
  for (const Format* f : {&Format::E4M3FN(), &Format::E5M2()})
    for (bool pow2 : {false, true}) {
      const float fmax = static_cast<float>(f->maxFinite());
      currentScaleFromAmax(damax.get(), fmax, pow2, dq.get(), ddq.get(), s.get());
      quantizeTensor(dx.get(), dc.get(), x.size(), dq.get(), false, f->rneConstants(true), s.get());
      float amax = 0, q = 0, dqv = 0;
      std::vector<uint8_t> codes(x.size()), ref(x.size());
      damax.download(&amax, 1, s.get());
      dq.download(&q, 1, s.get());
      ddq.download(&dqv, 1, s.get());
      dc.download(codes.data(), codes.size(), s.get());
      s.synchronize();
      const float camax = static_cast<float>(amaxOf(x.data(), x.size(), true));
      const float cq = teScaleFromAmax(camax, fmax, pow2);
      f->encodeBulk(x.data(), ref.data(), x.size(), {}, cq, Format::ScaleOp::Multiply);
      size_t bad = 0;
      for (size_t i = 0; i < x.size(); ++i) bad += codes[i] != ref[i];
      c.expect(amax == camax, "amaxTensor 4096x4096 = CPU amax (NaN ignored): " + checks::hexf(amax));
      c.expect(q == cq && dqv == 1.0f / cq, f->name() + (pow2 ? " pow2" : "") + ": device TE scale = teScaleFromAmax");
      c.expect(bad == 0,
               f->name() + ": quantizeTensor 16M elements bit-identical (" + std::to_string(bad) + " differ)");
    }
  // TE edge rules on the device: amax 0 / Inf / NaN → 1; tiny → FLT_MAX; pow2 masks the mantissa.
  for (float a : {0.0f, kInf, kNaN, 1e-40f, 3.7f, 448.0f, 1e30f})
    for (bool pow2 : {false, true}) {
      DeviceBuffer<float> da(1);
      da.upload(&a, 1, s.get());
      currentScaleFromAmax(da.get(), 448.0f, pow2, dq.get(), ddq.get(), s.get());
      float q = 0;
      dq.download(&q, 1, s.get());
      s.synchronize();
      c.expect(checks::bitsOf(q) == checks::bitsOf(teScaleFromAmax(a, 448.0f, pow2)),
               "device TE scale for amax " + checks::hexf(a) + (pow2 ? " pow2" : "") + ": " + checks::hexf(q));
    }
}

void checkDelayedKernel(Checker& c) {
  // 4 tensors with different amax sequences, TE layout [L, n]; compared per step with the CPU state.
  const float seqs[4][12] = {{1, 2, 3, 0, 4, 5, 0, 0, 6, 7, 8, 9},
                             {448, kInf, 2, 3, 1e-40f, 5, 6, 0, 8, 9, 10, 11},
                             {kNaN, 1, 0, 2, 3, 1e30f, 4, 5, 6, 7, 8, 0.5f},
                             {0, 0, 0, 1e-45f, 1, 2, 3, 4, 5, 6, 7, 8}};
  const int n = 4;
  for (fp8lab::DelayedPreset preset :
       {fp8lab::DelayedPreset::Flax, fp8lab::DelayedPreset::TE, fp8lab::DelayedPreset::TEJax})
    for (int L : {1, 3, 16}) {
      DelayedScalingConfig cfg;
      cfg.preset = preset;
      cfg.history_len = L;
      std::vector<fp8lab::DelayedScaling> cpu;
      for (int t = 0; t < n; ++t) cpu.emplace_back(Format::E4M3FN(), cfg);
      DelayedUpdateParams p;
      p.preset = preset;
      p.fp8_max = 448.0f;
      Stream s;
      std::vector<float> hist(static_cast<size_t>(L * n), 0.0f), scale(n, 1.0f), inv(n), am(n);
      DeviceBuffer<float> dh(hist.size()), ds(n), di(n), da(n);
      dh.upload(hist.data(), hist.size(), s.get());
      ds.upload(scale.data(), n, s.get());
      bool ok = true;
      std::string where;
      for (int step = 0; step < 12 && ok; ++step) {
        for (int t = 0; t < n; ++t) {
          am[static_cast<size_t>(t)] = seqs[t][step];
          cpu[static_cast<size_t>(t)].update(seqs[t][step]);
        }
        da.upload(am.data(), n, s.get());
        delayedScalingUpdateBatch(dh.get(), n, L, ds.get(), di.get(), da.get(), p, s.get());
        dh.download(hist.data(), hist.size(), s.get());
        ds.download(scale.data(), n, s.get());
        s.synchronize();
        for (int t = 0; t < n && ok; ++t) {
          if (!checks::sameFloat(scale[static_cast<size_t>(t)], cpu[static_cast<size_t>(t)].scale())) {
            ok = false;
            where = "tensor " + std::to_string(t) + " step " + std::to_string(step) + " scale " +
                    checks::hexf(scale[static_cast<size_t>(t)]) + " vs " +
                    checks::hexf(cpu[static_cast<size_t>(t)].scale());
          }
          for (int i = 0; i < L && ok; ++i)
            if (!checks::sameFloat(hist[static_cast<size_t>(i * n + t)],
                                   cpu[static_cast<size_t>(t)].historyRaw()[static_cast<size_t>(i)])) {
              ok = false;
              where = "tensor " + std::to_string(t) + " step " + std::to_string(step) + " history[" +
                      std::to_string(i) + "]";
            }
        }
      }
      c.expect(ok, std::string("delayed update kernel ") + toString(preset) + " L=" + std::to_string(L) +
                       " (4 tensors): " + where);
    }
}

/// The host emulation of CUDA's log2f that torchao's power-of-two rule runs (cudaLog2f), and the
/// rule itself, against the device's own functions over all 2^31 − 2^23 − 1 positive finite
/// float32 values.
void checkLog2f(Checker& c) {
  const checks::MathSweep r = checks::sweepLog2f(1u, 0x7f800000u);
  std::printf("  log2f sweep: %llu values, %llu log2 and %llu pow2 mismatches\n",
              static_cast<unsigned long long>(r.compared), static_cast<unsigned long long>(r.log2_mismatches),
              static_cast<unsigned long long>(r.pow2_mismatches));
  c.expect(r.log2_mismatches == 0, "cudaLog2f = the device's log2f on every positive float32 (first mismatch at bits " +
                                       checks::hexf(checks::floatOf(r.first_log2_mismatch)) + ")");
  c.expect(r.pow2_mismatches == 0,
           "torchaoPow2 = exp2f(floorf(log2f)) on the device for every positive float32 (first mismatch at " +
               checks::hexf(checks::floatOf(r.first_pow2_mismatch)) + ")");
}

} // namespace

int main() {
  Checker c("check_gpu_kernels");
  const ProbeResult probe = probeDevices();
  if (!probe.hasDevice()) {
    std::printf("SKIP: check_gpu_kernels: %s\n", probe.summary().c_str());
    return checks::kSkip;
  }
  std::printf("check_gpu_kernels on %s\n", probe.summary().c_str());
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const auto inputs = makeInputs();
    checkPresets(c, inputs);
    checkPerTensorPipeline(c);
    checkDelayedKernel(c);
    checkLog2f(c);
  } catch (const std::exception& e) {
    c.expect(false, std::string("exception: ") + e.what());
  }
  std::printf("  %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return c.finish();
}

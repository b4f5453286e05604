// Tests of the host/device numerics (FP8LAB_HD functions, common/host_device.h): the element encode
// (formats/rne_encode.h), the torchao power-of-two rule with its CUDA log2f (scaling/scale_rules.h)
// and the delayed-scaling update (scaling/delayed_update.h), called one element / one tensor at a
// time exactly as the GPU kernels (gpu/quantize_kernels.cu) call them. They need no GPU and no
// CUDA toolkit, so they run in every build, the sanitizer build included; tests/gpu/
// check_gpu_kernels then compares the device's results with the CPU on a GPU.
// Expected values: the CPU pipeline (Format::encodeBulk's vector kernel, quantize(),
// DelayedScaling), which have their own oracle tests; x86's own float arithmetic; torchao's
// published test cases (test/float8/test_float8_utils.py); hand derivations in the comments.
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compare_bits.h"
#include "formats/format.h"
#include "formats/rne_encode.h"
#include "gemm/random_matrix.h"
#include "scaling/delayed_scaling.h"
#include "scaling/delayed_update.h"
#include "scaling/scale_rules.h"
#include "scaling/scaling.h"

using namespace fp8lab;
using fp8lab::test::bitsOf;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

float floatOf(uint32_t u) {
  return std::bit_cast<float>(u);
}

std::string hexf(float f) {
  return fp8lab::test::describeBits(f);
}

/// Encodes `in` with the kernel's per-element function (rneEncode, one call per element as the
/// GPU runs it) and with Format::encodeBulk (the vectorised loop over the same function); returns
/// the number of mismatches and describes the first in `first`.
size_t compareEncode(const Format& f, const std::vector<float>& in, float s, bool divide, bool saturate,
                     std::string& first) {
  std::vector<uint8_t> ref(in.size());
  EncodeOptions opt;
  opt.saturate = saturate;
  f.encodeBulk(in.data(), ref.data(), in.size(), opt, s, divide ? Format::ScaleOp::Divide : Format::ScaleOp::Multiply);
  const RneEncodeConstants& k = f.rneConstants(saturate);
  size_t bad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const uint8_t g = rneEncode(in[i], s, divide, k);
    if (g != ref[i] && bad++ == 0)
      first = f.name() + ": x = " + hexf(in[i]) + ", s = " + hexf(s) + (divide ? " (x/s)" : " (x*s)") +
              ": element function " + std::to_string(g) + ", encodeBulk " + std::to_string(ref[i]);
  }
  return bad;
}

} // namespace

class TestHostDevice : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void encodeEveryBitPatternStride11_data();
  void encodeEveryBitPatternStride11();
  void encodeMatchesScalarReferenceOnCriticalBits();
  void encodeOtherFormats();
  void encodeFnuzInfinity();
  void rneConstantsRefuseFormatsWithoutKernel();
  void encodeScaledAndAdversarial();
  void deviceNanRuleMatchesX86();
  void cudaLog2fExactOnPowersOfTwo();
  void cudaLog2fFloorAtBinadeEdges();
  void cudaLog2fWithinOneUlp();
  void torchaoPow2TorchaoTestCases();
  void delayedUpdateMatchesDelayedScaling();
  void delayedUpdateHandDerived();
  void presetCodesFromBlockScales();
  void devicePipelineMatchesQuantize();
};

void TestHostDevice::encodeEveryBitPatternStride11_data() {
  QTest::addColumn<QString>("format");
  QTest::addColumn<bool>("saturate");
  for (const char* f : {"E4M3FN", "E5M2"})
    for (bool sat : {true, false})
      QTest::newRow(qPrintable(
          QStringLiteral("%1_%2").arg(QLatin1String(f), sat ? QStringLiteral("sat") : QStringLiteral("nosat"))))
          << QString::fromLatin1(f) << sat;
}

// Every float32 bit pattern with stride 11 (odd, so every low-bit residue and every
// exponent / sign combination is visited): the per-element call against encodeBulk. Under the
// sanitizers (10–20× slower) the stride is 101.
void TestHostDevice::encodeEveryBitPatternStride11() {
  QFETCH(QString, format);
  QFETCH(bool, saturate);
  const Format& f = *Format::byName(format.toStdString());
#if defined(__SANITIZE_ADDRESS__)
  const uint64_t stride = 101;
#else
  const uint64_t stride = 11;
#endif
  std::vector<float> buf;
  buf.reserve(1 << 20);
  size_t bad = 0, n = 0;
  std::string first;
  for (uint64_t u = 0; u <= 0xffffffffull; u += stride) {
    buf.push_back(floatOf(static_cast<uint32_t>(u)));
    if (buf.size() == buf.capacity() || u + stride > 0xffffffffull) {
      bad += compareEncode(f, buf, 1.0f, false, saturate, first);
      n += buf.size();
      buf.clear();
    }
  }
  QVERIFY2(n > 4294967295ull / stride, "the sweep covered the whole float32 range");
  QVERIFY2(bad == 0, first.c_str());
}

// The rounding-critical low 12 bits (0, 1, half − 1, half, half + 1, all ones) at every exponent,
// sign and high mantissa: the per-element function against the scalar reference Format::encode
// (one rounding from double, a separate implementation) for E4M3FN and E5M2.
void TestHostDevice::encodeMatchesScalarReferenceOnCriticalBits() {
  for (const Format* f : {&Format::E4M3FN(), &Format::E5M2()})
    for (bool sat : {true, false}) {
      EncodeOptions opt;
      opt.saturate = sat;
      const RneEncodeConstants& k = f->rneConstants(sat);
      size_t bad = 0;
      std::string first;
      for (uint32_t hi = 0; hi < (1u << 20); hi += 3)
        for (uint32_t lo : {0x000u, 0x001u, 0x7ffu, 0x800u, 0x801u, 0xfffu}) {
          const float x = floatOf((hi << 12) | lo);
          const uint8_t g = rneEncodeScaled(x, k);
          const uint32_t r = f->encode(static_cast<double>(x), opt);
          if (g != r && bad++ == 0)
            first = f->name() + ": " + hexf(x) + ": element " + std::to_string(g) + ", encode " + std::to_string(r);
        }
      QVERIFY2(bad == 0, first.c_str());
    }
}

// The function is generic over ≤ 8-bit float formats: FNUZ, E4M3 (IEEE), E3M4, FP6, FP4.
void TestHostDevice::encodeOtherFormats() {
  for (const Format* f : {&Format::E4M3FNUZ(), &Format::E5M2FNUZ(), &Format::E4M3B11FNUZ(), &Format::E4M3(),
                          &Format::E3M4(), &Format::E2M3(), &Format::E3M2(), &Format::E2M1()}) {
    std::vector<float> buf;
    for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) buf.push_back(floatOf(static_cast<uint32_t>(u)));
    std::string first;
    const size_t bad = compareEncode(*f, buf, 1.0f, false, true, first);
    QVERIFY2(bad == 0, first.c_str());
  }
}

// ±Inf into the FNUZ formats, as ONNX Cast from opset 24: saturating → ±max 0x7F / 0xFF,
// non-saturating → NaN 0x80; an x·s that overflows float32 to Inf likewise.
void TestHostDevice::encodeFnuzInfinity() {
  for (const Format* f : {&Format::E4M3FNUZ(), &Format::E5M2FNUZ(), &Format::E4M3B11FNUZ()}) {
    const RneEncodeConstants &sat = f->rneConstants(true), &nosat = f->rneConstants(false);
    QCOMPARE(int(rneEncode(kInf, 1.0f, false, sat)), 0x7F);
    QCOMPARE(int(rneEncode(-kInf, 1.0f, false, sat)), 0xFF);
    QCOMPARE(int(rneEncode(1e30f, 1e30f, false, sat)), 0x7F);
    QCOMPARE(int(rneEncode(kInf, 1.0f, false, nosat)), 0x80);
    QCOMPARE(int(rneEncode(-kInf, 1.0f, false, nosat)), 0x80);
  }
}

void TestHostDevice::rneConstantsRefuseFormatsWithoutKernel() {
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, (void)Format::E8M0FNU().rneConstants(true));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, (void)Format::BF16().rneConstants(true));
}

// Every code's value, the exact midpoints between neighbouring codes (ties) and one float32 ulp
// either side, values beyond max, subnormals, ±0, ±Inf, NaN; then random values over 60 binades
// times / divided by scales (powers of two, TE-style fp8_max/amax, subnormal-producing ones).
void TestHostDevice::encodeScaledAndAdversarial() {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-30, 30), sign(0, 1);
  for (const Format* f : {&Format::E4M3FN(), &Format::E5M2()}) {
    std::vector<float> adv;
    const auto& table = f->decodeTable();
    for (size_t code = 0; code < table.size(); ++code) {
      const float v = table[code];
      adv.push_back(v);
      if (!std::isfinite(v)) continue;
      const float next = table[f->nextUp(static_cast<uint32_t>(code))];
      if (std::isfinite(next) && next != v) {
        const float mid = static_cast<float>((static_cast<double>(v) + next) / 2); // exact in float32
        adv.push_back(mid);
        adv.push_back(std::nextafter(mid, 0.0f));
        adv.push_back(std::nextafter(mid, kInf));
        adv.push_back(-mid);
      }
    }
    const float mx = static_cast<float>(f->maxFinite());
    for (float v : {mx, std::nextafter(mx, FLT_MAX), mx * 1.0625f, mx * 1.125f, mx * 2.0f, FLT_MAX, 1e-45f, 1e-40f,
                    FLT_MIN, 0.0f, -0.0f, kInf, -kInf, kNaN, -kNaN, static_cast<float>(f->minSubnormal()) / 2,
                    static_cast<float>(f->minSubnormal()) * 0.75f}) {
      adv.push_back(v);
      adv.push_back(-v);
    }
    std::string first;
    QVERIFY2(compareEncode(*f, adv, 1.0f, false, true, first) == 0, first.c_str());
    std::vector<float> x(1 << 16);
    for (auto& v : x) v = (sign(rng) ? -1.0f : 1.0f) * std::ldexp(mant(rng), expo(rng));
    std::copy(adv.begin(), adv.begin() + static_cast<std::ptrdiff_t>(std::min(adv.size(), x.size())), x.begin());
    for (float s : {1.0f, 0.5f, 3.0f, 448.0f / 3.7f, 57344.0f / 1234.5f, 1e-3f, 7.1e-20f, 3.3e15f, FLT_MAX, 1e-42f}) {
      QVERIFY2(compareEncode(*f, x, s, false, true, first) == 0, first.c_str());
      QVERIFY2(compareEncode(*f, x, s, true, true, first) == 0, first.c_str());
    }
  }
}

// The NaN rule the device applies (x86NanResult; the GPU's own NaN results are always the
// positive canonical 0x7FFFFFFF) against this CPU's own arithmetic: for formats whose NaN code keeps
// the sign (E4M3 with Inf, E3M4), encoding x86NanResult(x, s) must give encodeBulk's code for
// x·s / x/s. Only on x86-64, the CPU reference's platform (the GPU machines are x86-64 too).
void TestHostDevice::deviceNanRuleMatchesX86() {
#if defined(__x86_64__)
  struct Case {
    float x, s;
    bool divide;
    const char* what;
  };
  const Case cases[] = {{-kNaN, 2.0f, false, "-NaN * 2"},   {kNaN, 2.0f, false, "+NaN * 2"},
                        {-kNaN, 0.5f, true, "-NaN / 0.5"},  {floatOf(0xff800001u), 3.0f, false, "-sNaN * 3"},
                        {1.5f, -kNaN, false, "1.5 * -NaN"}, {-1.5f, kNaN, true, "-1.5 / +NaN"},
                        {0.0f, kInf, false, "0 * Inf"},     {-0.0f, kInf, false, "-0 * Inf"},
                        {0.0f, 0.0f, true, "0 / 0"},        {kInf, kInf, true, "Inf / Inf"},
                        {-kInf, kInf, true, "-Inf / Inf"}};
  for (const Format* f : {&Format::E4M3(), &Format::E3M4(), &Format::E4M3FN(), &Format::E5M2()}) {
    const RneEncodeConstants& k = f->rneConstants(true);
    for (const Case& cs : cases) {
      uint8_t ref = 0;
      f->encodeBulk(&cs.x, &ref, 1, {}, cs.s, cs.divide ? Format::ScaleOp::Divide : Format::ScaleOp::Multiply);
      const uint8_t dev = rneEncodeScaled(x86NanResult(cs.x, cs.s), k);
      QVERIFY2(dev == ref, qPrintable(QString::fromStdString(f->name()) + QLatin1String(" ") + QLatin1String(cs.what) +
                                      QStringLiteral(": device rule %1, CPU %2").arg(dev).arg(ref)));
    }
  }
  // Hand-derived (so the rule can fail): E4M3 (bias 7, with Inf) keeps the NaN sign, NaN =
  // exponent all ones with the mantissa's top bit: 0x78 | 0x04 = 0x7C, negative 0xFC. x86's
  // 0·Inf is the negative default NaN → 0xFC; −NaN·2 → 0xFC; +NaN·2 → 0x7C. The GPU's canonical
  // NaN alone would give 0x7C for all three.
  const RneEncodeConstants& k = Format::E4M3().rneConstants(true);
  QCOMPARE(int(rneEncodeScaled(x86NanResult(0.0f, kInf), k)), 0xFC);
  QCOMPARE(int(rneEncodeScaled(x86NanResult(-kNaN, 2.0f), k)), 0xFC);
  QCOMPARE(int(rneEncodeScaled(x86NanResult(kNaN, 2.0f), k)), 0x7C);
  QCOMPARE(int(rneEncodeScaled(floatOf(0x7fffffffu), k)), 0x7C);
#else
  QSKIP("the CPU reference's NaN signs are those of x86-64");
#endif
}

// log2 of a power of two is an integer: every normal and subnormal power of two 2^k, k in
// [−149, 127], gives exactly k (libdevice's reduction is exact there: m = 1, the polynomial in
// m − 1 = 0 vanishes). 0 → −Inf, negative → NaN, +Inf → +Inf, NaN → NaN (C99 log2).
void TestHostDevice::cudaLog2fExactOnPowersOfTwo() {
  for (int k = -149; k <= 127; ++k) QCOMPARE_BITS(cudaLog2f(std::ldexp(1.0f, k)), static_cast<float>(k));
  QCOMPARE_BITS(cudaLog2f(0.0f), -kInf);
  QCOMPARE_BITS(cudaLog2f(-0.0f), -kInf);
  QVERIFY(std::isnan(cudaLog2f(-1.0f)));
  QVERIFY(std::isnan(cudaLog2f(-FLT_MIN)));
  QCOMPARE_BITS(cudaLog2f(kInf), kInf);
  QVERIFY(std::isnan(cudaLog2f(kNaN)));
}

// floor(log2 s) decides torchao's power of two, and it can only go wrong beside a power of two
// (log2 near an integer). Within 2^12 float32 ulps either side of every power of two, the floor of
// cudaLog2f must equal the floor of log2 in float64 rounded once to float32 (the correctly rounded
// float32 log2; glibc's double log2 is within an ulp of float64, far from where the float32
// rounding turns). Hand-checked examples: 8·(1 − 2^-24) (log2 = 3 − 8.6e-8, within half an ulp of
// 3) → 3, so torchao's "round down" gives 8, above s; 2·(1 − 2^-24) → 0 (log2 = 1 − 8.6e-8 stays
// below 1: floats below 1 are 2^-24 apart).
void TestHostDevice::cudaLog2fFloorAtBinadeEdges() {
  size_t bad = 0, n = 0;
  std::string first;
  for (int k = -148; k <= 128; ++k) {
    const uint32_t p = k <= 127 ? bitsOf(std::ldexp(1.0f, k)) : 0x7f800000u;
    for (int d = -4096; d <= 4096; ++d) {
      const int64_t u = static_cast<int64_t>(p) + d;
      if (u < 1 || u >= 0x7f800000) continue;
      const float s = floatOf(static_cast<uint32_t>(u));
      const float ref = static_cast<float>(std::log2(static_cast<double>(s)));
      ++n;
      if (std::floor(cudaLog2f(s)) != std::floor(ref) && bad++ == 0)
        first = "s = " + hexf(s) + ": cudaLog2f " + hexf(cudaLog2f(s)) + ", float32(log2) " + hexf(ref);
    }
  }
  QVERIFY(n > 2000000);
  QVERIFY2(bad == 0, first.c_str());
  QCOMPARE_BITS(torchaoPow2(8.0f * (1.0f - std::ldexp(1.0f, -24))), 8.0f);
  QCOMPARE_BITS(torchaoPow2(2.0f * (1.0f - std::ldexp(1.0f, -24))), 1.0f);
}

// CUDA's documented accuracy of log2f (CUDA C++ Programming Guide, "Mathematical Functions":
// maximum ulp error 1): on every 4099th positive finite float32, cudaLog2f is within one float32
// ulp of log2 computed in float64 and rounded once (the correctly rounded value, but for the
// rare double-rounding case, which the bound absorbs).
void TestHostDevice::cudaLog2fWithinOneUlp() {
  size_t n = 0, bad = 0;
  std::string first;
  for (uint64_t u = 1; u < 0x7f800000u; u += 4099) {
    const float s = floatOf(static_cast<uint32_t>(u));
    const float got = cudaLog2f(s), ref = static_cast<float>(std::log2(static_cast<double>(s)));
    ++n;
    const bool ok = got == ref || std::nextafter(ref, kInf) == got || std::nextafter(ref, -kInf) == got;
    if (!ok && bad++ == 0) first = "s = " + hexf(s) + ": cudaLog2f " + hexf(got) + ", log2 " + hexf(ref);
  }
  QVERIFY(n > 500000);
  QVERIFY2(bad == 0, first.c_str());
}

// torchao test/float8/test_float8_utils.py, test_round_scale_down_to_power_of_2_valid_inputs (run
// on CUDA): one → 1, inf → inf, nan → nan, 2^-149 → 2^-149, FLT_MAX → inf, 2^-126 → 2^-126,
// 1 − 2^-24 → 0.5, 1 + 2^-23 → 1.
void TestHostDevice::torchaoPow2TorchaoTestCases() {
  QCOMPARE_BITS(torchaoPow2(1.0f), 1.0f);
  QCOMPARE_BITS(torchaoPow2(kInf), kInf);
  QVERIFY(std::isnan(torchaoPow2(kNaN)));
  QCOMPARE_BITS(torchaoPow2(std::ldexp(1.0f, -149)), std::ldexp(1.0f, -149));
  QCOMPARE_BITS(torchaoPow2(FLT_MAX), kInf);
  QCOMPARE_BITS(torchaoPow2(FLT_MIN), FLT_MIN);
  QCOMPARE_BITS(torchaoPow2(1.0f - std::ldexp(1.0f, -24)), 0.5f);
  QCOMPARE_BITS(torchaoPow2(1.0f + std::ldexp(1.0f, -23)), 1.0f);
}

// The kernel's per-tensor update (delayedScalingUpdate on a history at stride 3, the [L, n]
// layout of delayedScalingUpdateBatch with n = 3) against DelayedScaling step by step, bit for
// bit: scale, history and the step's flags; the neighbouring tensors' slots stay untouched.
void TestHostDevice::delayedUpdateMatchesDelayedScaling() {
  const std::vector<float> seq = {1.0f,   3.5f,  0.0f, 0.0f, 2.0f,    kInf, 5.0f, kNaN, 7.0f, 1e-40f, 1e-30f,
                                  448.0f, 0.25f, 0.0f, 6.0f, 1000.0f, 3.0f, 2.5f, 0.0f, 9.0f, 1e-45f, 12.0f};
  const int stride = 3, slot = 1;
  int configs = 0;
  for (DelayedPreset preset : {DelayedPreset::Flax, DelayedPreset::TE, DelayedPreset::TEJax})
    for (AmaxAlgo algo : {AmaxAlgo::Max, AmaxAlgo::MostRecent})
      for (int L : {1, 2, 5, 16})
        for (int margin : {0, 1, -2})
          for (const Format* f : {&Format::E4M3FN(), &Format::E5M2()}) {
            if (preset == DelayedPreset::Flax && algo == AmaxAlgo::MostRecent) continue;
            DelayedScalingConfig cfg;
            cfg.preset = preset;
            cfg.algo = algo;
            cfg.history_len = L;
            cfg.margin = margin;
            DelayedScaling cpu(*f, cfg);
            DelayedUpdateParams p;
            p.preset = preset;
            p.algo = algo;
            p.fp8_max = static_cast<float>(f->maxFinite());
            p.margin = margin;
            std::vector<float> hist(static_cast<size_t>(L * stride), -7.0f); // other tensors' slots: -7
            for (int i = 0; i < L; ++i) hist[static_cast<size_t>(i * stride + slot)] = 0.0f;
            float scale = 1.0f;
            for (size_t t = 0; t < seq.size(); ++t) {
              const DelayedUpdate u = cpu.update(seq[t]);
              const DelayedStep d = delayedScalingUpdate(hist.data() + slot, L, stride, &scale, seq[t], p);
              const QString where = QStringLiteral("%1/%2 L=%3 margin=%4 %5 step %6")
                                        .arg(QLatin1String(toString(preset)), QLatin1String(toString(algo)))
                                        .arg(L)
                                        .arg(margin)
                                        .arg(QString::fromStdString(f->name()))
                                        .arg(t);
              QVERIFY2(bitsOf(scale) == bitsOf(cpu.scale()), qPrintable(where + QLatin1String(": scale")));
              QVERIFY2(d.kept_previous == u.kept_previous && d.rolled == u.rolled && d.clamped == u.clamped,
                       qPrintable(where + QLatin1String(": flags")));
              for (int i = 0; i < L; ++i)
                QVERIFY2(bitsOf(hist[static_cast<size_t>(i * stride + slot)]) ==
                             bitsOf(cpu.historyRaw()[static_cast<size_t>(i)]),
                         qPrintable(where + QStringLiteral(": history[%1]").arg(i)));
            }
            for (size_t i = 0; i < hist.size(); ++i)
              if (static_cast<int>(i % stride) != slot) QCOMPARE_BITS(hist[i], -7.0f); // neighbours untouched
            ++configs;
          }
  QCOMPARE(configs, 120); // (1 Flax + 2 TE + 2 TE JAX) algos × 4 L × 3 margins × 2 formats
}

// Hand-derived (TE DelayedScaling, kernel_bulk; Flax update_fp8_meta), one tensor, E4M3 (448):
//  TE L = 3: amax 2 → window {2} → 448/2 = 224, history [0, 0, 2]; amax 0 → no roll, scale kept;
//  amax 4 → window {2, 4} → 448/4 = 112, history [0, 2, 4]; L = 1, amax 1e-40 → 448/1e-40
//  overflows → FLT_MAX (TE PR #786).
//  Flax L = 2: the first step sees the zero history → keeps 1/(1/1) = 1, hist[0] = 3; the second
//  sees {3, 0} → 1/(448/3).
//  TE JAX L = 2, margin 1: amax 2 → window {2} → (448/2)/2 = 112; amax 0 enters the history and
//  rolls; then amax 0 again: window {0, 0} → scale kept.
void TestHostDevice::delayedUpdateHandDerived() {
  DelayedUpdateParams te;
  std::vector<float> h(3, 0.0f);
  float s = 1.0f;
  delayedScalingUpdate(h.data(), 3, 1, &s, 2.0f, te);
  QCOMPARE_BITS(s, 224.0f);
  QCOMPARE_BITS(h, (std::vector<float>{0.0f, 0.0f, 2.0f}));
  const DelayedStep zero = delayedScalingUpdate(h.data(), 3, 1, &s, 0.0f, te);
  QVERIFY(zero.kept_previous && !zero.rolled);
  QCOMPARE_BITS(s, 224.0f);
  QCOMPARE_BITS(h, (std::vector<float>{0.0f, 0.0f, 2.0f}));
  delayedScalingUpdate(h.data(), 3, 1, &s, 4.0f, te);
  QCOMPARE_BITS(s, 112.0f);
  QCOMPARE_BITS(h, (std::vector<float>{0.0f, 2.0f, 4.0f}));
  std::vector<float> h1(1, 0.0f);
  float s1 = 1.0f;
  QVERIFY(delayedScalingUpdate(h1.data(), 1, 1, &s1, 1e-40f, te).clamped);
  QCOMPARE_BITS(s1, FLT_MAX);

  DelayedUpdateParams flax;
  flax.preset = DelayedPreset::Flax;
  std::vector<float> hf(2, 0.0f);
  float sf = 1.0f;
  delayedScalingUpdate(hf.data(), 2, 1, &sf, 3.0f, flax);
  QCOMPARE_BITS(sf, 1.0f);
  QCOMPARE_BITS(hf[0], 3.0f);
  delayedScalingUpdate(hf.data(), 2, 1, &sf, 5.0f, flax);
  QCOMPARE_BITS(sf, 1.0f / (448.0f / 3.0f));

  DelayedUpdateParams jax;
  jax.preset = DelayedPreset::TEJax;
  jax.margin = 1;
  std::vector<float> hj(2, 0.0f);
  float sj = 1.0f;
  delayedScalingUpdate(hj.data(), 2, 1, &sj, 2.0f, jax);
  QCOMPARE_BITS(sj, 112.0f);
  QVERIFY(delayedScalingUpdate(hj.data(), 2, 1, &sj, 0.0f, jax).rolled);
  QCOMPARE_BITS(sj, 112.0f); // window {2, 0}
  QVERIFY(delayedScalingUpdate(hj.data(), 2, 1, &sj, 0.0f, jax).kept_previous);
  QCOMPARE_BITS(sj, 112.0f);
}

// What check_gpu_kernels does on a device, on the host with the kernel's own per-element
// function: every current preset's codes must be reproducible from its block scales alone (the
// quantize kernel gets only x, the block grid, the scales and the op).
void TestHostDevice::presetCodesFromBlockScales() {
  RandomMatrixOptions o;
  o.distribution = Distribution::LogNormal;
  o.sigma = 3.0;
  std::vector<float> x = randomMatrix(260, 200, 11, o);
  const float specials[] = {0.0f, -0.0f, kInf, kNaN, 1e-40f, 1e30f, 448.0f, 464.0f};
  for (size_t i = 0; i < x.size(); i += 37) x[i] = specials[(i / 37) % 8];
  int cases = 0;
  for (const ScalingPresetInfo& info : scalingPresets()) {
    const auto cfg = scalingPreset(info.name);
    if (info.delayed || !cfg) continue;
    for (const Format* f : {&Format::E4M3FN(), &Format::E5M2()}) {
      const RneEncodeConstants& k = f->rneConstants(cfg->encode.saturate);
      for (Axis axis : {Axis::Cols, Axis::Rows}) {
        const QuantizedTensor q = quantize(x.data(), 260, 200, *f, *cfg, axis);
        const bool divide = q.scale_op == Format::ScaleOp::Divide;
        const std::vector<float>& sc = divide ? q.dequant_scales : q.quant_scales;
        size_t bad = 0;
        for (int64_t i = 0; i < 260; ++i)
          for (int64_t j = 0; j < 200; ++j) {
            const size_t e = static_cast<size_t>(i * 200 + j);
            const float s = sc[static_cast<size_t>((i / q.block.rows) * q.blockCols() + j / q.block.cols)];
            bad += rneEncode(x[e], s, divide, k) != q.codes[e];
          }
        ++cases;
        QVERIFY2(bad == 0, qPrintable(QString::fromStdString(info.name + " " + f->name() + " " + toString(axis)) +
                                      QStringLiteral(": %1 codes differ").arg(bad)));
      }
    }
  }
  QVERIFY(cases >= 30);
}

// quantizeOnDevice's whole pipeline with the device's own pieces: the block is scaleBlockFor's,
// the block amax follows the kernels' rule (max of the |x| bit patterns, NaN ignored or propagated
// per ruleAmaxPropagatesNaN, −0 as 0), scales come from blockScaleFromAmax(float32 amax,
// scaleRuleParams) and codes from rneEncode. Codes, quant / dequant scales and E8M0 codes must
// equal quantize()'s — what check_gpu_kernels then demands of the device.
void TestHostDevice::devicePipelineMatchesQuantize() {
  RandomMatrixOptions o;
  o.distribution = Distribution::LogNormal;
  o.sigma = 3.0;
  const int64_t R = 300, C = 264;
  std::vector<float> x = randomMatrix(R, C, 13, o);
  const float specials[] = {0.0f, -0.0f, kInf, kNaN, 1e-40f, 1e30f, 448.0f, -kInf};
  for (size_t i = 0; i < x.size(); i += 41) x[i] = specials[(i / 41) % 8];
  for (int64_t i = 0; i < 128; ++i) // an all-zero 128x128 block (edge rule of every preset)
    for (int64_t j = 0; j < 128; ++j) x[static_cast<size_t>(i * C + j)] = 0.0f;
  int cases = 0;
  for (const ScalingPresetInfo& info : scalingPresets()) {
    const auto cfg = scalingPreset(info.name);
    if (info.delayed || !cfg) continue;
    for (const Format* f : {&Format::E4M3FN(), &Format::E5M2()}) {
      const RneEncodeConstants& k = f->rneConstants(cfg->encode.saturate);
      const ScaleRuleParams rule = scaleRuleParams(*cfg, *f);
      const bool prop = ruleAmaxPropagatesNaN(cfg->rule);
      const bool mx = isMxRule(cfg->rule);
      for (Axis axis : {Axis::Cols, Axis::Rows}) {
        const QuantizedTensor q = quantize(x.data(), R, C, *f, *cfg, axis);
        const ScaleBlock blk = scaleBlockFor(*cfg, R, C, axis);
        QVERIFY(blk == q.block);
        const int64_t bc = (C + blk.cols - 1) / blk.cols, nb = ((R + blk.rows - 1) / blk.rows) * bc;
        std::vector<uint32_t> amax_bits(static_cast<size_t>(nb), 0u); // as the kernels: max of |x| bits
        for (int64_t i = 0; i < R; ++i)
          for (int64_t j = 0; j < C; ++j) {
            uint32_t a = bitsOf(x[static_cast<size_t>(i * C + j)]) & 0x7fffffffu;
            if (!prop && a > 0x7f800000u) a = 0;
            uint32_t& m = amax_bits[static_cast<size_t>((i / blk.rows) * bc + j / blk.cols)];
            m = std::max(m, a);
          }
        size_t bad = 0;
        std::vector<float> quant(static_cast<size_t>(nb)), dequant(static_cast<size_t>(nb));
        for (int64_t b = 0; b < nb; ++b) {
          const BlockScale s =
              blockScaleFromAmax(static_cast<double>(floatOf(amax_bits[static_cast<size_t>(b)])), rule);
          quant[static_cast<size_t>(b)] = s.quant;
          dequant[static_cast<size_t>(b)] = s.dequant;
          bad += bitsOf(s.quant) != bitsOf(q.quant_scales[static_cast<size_t>(b)]) ||
                 bitsOf(s.dequant) != bitsOf(q.dequant_scales[static_cast<size_t>(b)]);
          if (mx)
            bad += q.scale_codes.size() != static_cast<size_t>(nb) ||
                   static_cast<uint8_t>(s.scale_code < 0 ? 0 : s.scale_code) != q.scale_codes[static_cast<size_t>(b)];
        }
        const bool divide = cfg->op == Format::ScaleOp::Divide;
        for (int64_t i = 0; i < R; ++i)
          for (int64_t j = 0; j < C; ++j) {
            const size_t e = static_cast<size_t>(i * C + j),
                         b = static_cast<size_t>((i / blk.rows) * bc + j / blk.cols);
            bad += rneEncode(x[e], divide ? dequant[b] : quant[b], divide, k) != q.codes[e];
          }
        ++cases;
        QVERIFY2(bad == 0,
                 qPrintable(QString::fromStdString(info.name + " " + f->name() + " " + toString(axis)) +
                            QStringLiteral(": device pipeline differs from quantize() in %1 places").arg(bad)));
      }
    }
  }
  QVERIFY(cases >= 30);
}

QTEST_GUILESS_MAIN(TestHostDevice)
#include "test_host_device.moc"

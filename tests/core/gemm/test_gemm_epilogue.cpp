// FP8 Lab — the GEMM epilogue (alpha, beta·C, bias; cuBLASLt's order) and the accumulation
// presets (core/gemm/accumulation_preset.h), against hand derivations.
#include <QtTest>

#include "compare_bits.h"

#include "formats/format.h"
#include "gemm/accumulation_preset.h"
#include "gemm/error_split.h"
#include "gemm/gemm.h"
#include "gemm/random_matrix.h"
#include "scaling/scaling.h"

#include <cmath>
#include <cstring>
#include <memory>

using namespace fp8lab;

namespace {

/// An E4M3FN tensor of exactly representable values, one dequant scale of 1.
QuantizedTensor exactTensor(const std::vector<double>& v, int64_t rows, int64_t cols) {
  QuantizedTensor q;
  q.rows = rows;
  q.cols = cols;
  q.format = &Format::E4M3FN();
  q.block = {rows, cols};
  for (double x : v) {
    q.codes.push_back(static_cast<uint8_t>(q.format->encode(x)));
    if (q.format->decode(q.codes.back()) != x) throw std::runtime_error("value not exact in E4M3FN");
  }
  q.dequant_scales = {1.0f};
  return q;
}

std::shared_ptr<const std::vector<float>> shared(std::vector<float> v) {
  return std::make_shared<const std::vector<float>>(std::move(v));
}

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

} // namespace

class TestGemmEpilogue : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void xla46110AlphaDoesNotScaleTheBias();
  void fusedEqualsUnfused_data();
  void fusedEqualsUnfused();
  void wrongEpilogueSizesRefused();
  void presetTable();
  void presetBitsChangeTheSum();
  void measuredRulesByHand();
  void fastAccumNoteNamesTheModelsBits();
  void fastAccumBitsLimit();
};

// openxla/xla#46110: cuBLASLt computes D = alpha·(A·B) + beta·C and then the BIAS epilogue adds
// the bias, so alpha does not scale the bias. Hand derivation with A = [2 2], B = [1 1]^T
// (A·B = 2·1 + 2·1 = 4, every value exact in E4M3FN, scales 1), alpha = 0.5, bias = [2]:
//   cuBLASLt's formula:   D = 0.5·4 + 2 = 4          (what the reference must give)
//   alpha·(A·B + bias) = 0.5·(4 + 2) = 3             (what the program in the issue meant; XLA
//                                                      folded its multiply into alpha and got 4)
// To get 3 through this epilogue the bias itself must be scaled: bias = 0.5·2 = 1 → 0.5·4 + 1 = 3.
// With beta = 0.25 and C = [10]: D = 0.5·4 + 0.25·10 + 2 = 2 + 2.5 + 2 = 6.5. All values are
// exact in float32 and BF16, so every model and output type gives them exactly; the float64
// references of the error split apply the same epilogue.
void TestGemmEpilogue::xla46110AlphaDoesNotScaleTheBias() {
  const QuantizedTensor a = exactTensor({2, 2}, 1, 2), b = exactTensor({1, 1}, 2, 1);
  auto backend = makeCpuGemmBackend();
  for (Accumulation acc : {Accumulation::Exact, Accumulation::FP32, Accumulation::SplitFP32, Accumulation::FastAccum})
    for (OutputType out : {OutputType::FP32, OutputType::BF16, OutputType::FP16, OutputType::E4M3FN}) {
      GemmOptions o;
      o.accumulation = acc;
      o.output = out;
      o.alpha = 0.5f;
      o.bias = shared({2.0f});
      QCOMPARE(backend->run(a, b, o).d, std::vector<float>{4.0f});
      o.bias = shared({1.0f});
      QCOMPARE(backend->run(a, b, o).d, std::vector<float>{3.0f});
      o.bias = shared({2.0f});
      o.beta = 0.25f;
      o.c = shared({10.0f});
      const GemmOutput d = backend->run(a, b, o);
      QCOMPARE(d.d, std::vector<float>{6.5f});
      QCOMPARE(d.amax_d, 6.5f);
    }
  GemmOptions o;
  o.alpha = 0.5f;
  o.bias = shared({2.0f});
  const std::vector<float> af = {2, 2}, bf = {1, 1};
  const GemmExperimentResult r = runGemmExperiment(af.data(), bf.data(), a, b, o);
  QCOMPARE(r.ideal, std::vector<double>{4.0});
  QCOMPARE(r.quantized_exact, std::vector<double>{4.0});
  QCOMPARE(r.output.d, std::vector<float>{4.0f});
}

void TestGemmEpilogue::fusedEqualsUnfused_data() {
  QTest::addColumn<int>("m");
  QTest::addColumn<int>("k");
  QTest::addColumn<int>("n");
  QTest::addColumn<int>("model");
  QTest::addColumn<int>("output");
  const int shapes[][3] = {{3, 64, 5}, {17, 300, 33}, {64, 256, 48}};
  for (const auto& s : shapes)
    for (Accumulation acc : {Accumulation::FP32, Accumulation::SplitFP32, Accumulation::FastAccum})
      for (OutputType out : {OutputType::FP32, OutputType::BF16, OutputType::FP16, OutputType::E4M3FN})
        QTest::addRow("%dx%dx%d %s %s", s[0], s[1], s[2], toString(acc), toString(out))
            << s[0] << s[1] << s[2] << int(acc) << int(out);
}

// The epilogue inside the GEMM equals the GEMM with alpha = 1, beta = 0 and no bias (float32 D,
// the accumulator after the dequant scales) followed by the documented steps done here by hand:
// y = f32(alpha·x); y = f32(y + f32(beta·C)); y = f32(y + bias); amax_D = max |y|; then the output
// cast (BF16 / FP16: round to nearest even; E4M3FN: code = satfinite RNE of y·scale_D, value =
// decode(code)/scale_D, with scale_D = 0.5 a power of two so y·scale_D is exact).
void TestGemmEpilogue::fusedEqualsUnfused() {
  QFETCH(int, m);
  QFETCH(int, k);
  QFETCH(int, n);
  QFETCH(int, model);
  QFETCH(int, output);
  const std::vector<float> x = randomMatrix(m, k, 11, {}, 1), w = randomMatrix(k, n, 11, {}, 2);
  ScalingConfig sc;
  const QuantizedTensor a = quantize(x.data(), m, k, Format::E4M3FN(), sc, Axis::Cols);
  const QuantizedTensor b = quantize(w.data(), k, n, Format::E4M3FN(), sc, Axis::Rows);
  const std::vector<float> c = randomMatrix(m, n, 5, {}, 3), bias = randomMatrix(1, n, 6, {}, 4);
  auto backend = makeCpuGemmBackend();
  GemmOptions plain;
  plain.accumulation = static_cast<Accumulation>(model);
  const std::vector<float> x0 = backend->run(a, b, plain).d;

  GemmOptions fused = plain;
  fused.output = static_cast<OutputType>(output);
  if (fused.output == OutputType::E4M3FN) fused.output_quant_scale = 0.5f;
  fused.alpha = 0.75f;
  fused.beta = -1.5f;
  fused.c = shared(c);
  fused.bias = shared(bias);
  const GemmOutput got = backend->run(a, b, fused);

  std::vector<float> want(x0.size());
  float amax = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const size_t e = static_cast<size_t>(i * n + j);
      volatile float y = fused.alpha * x0[e];
      volatile float bc = fused.beta * c[e];
      y = y + bc;
      y = y + bias[static_cast<size_t>(j)];
      amax = std::max(amax, std::fabs(static_cast<float>(y)));
      EncodeOptions eo;
      switch (fused.output) {
      case OutputType::FP32:
        want[e] = y;
        break;
      case OutputType::BF16:
      case OutputType::FP16: {
        const Format& f = fused.output == OutputType::BF16 ? Format::BF16() : Format::FP16();
        eo.saturate = false;
        want[e] = static_cast<float>(f.decode(f.encode(static_cast<double>(y), eo)));
        break;
      }
      default: {
        eo.saturate = true;
        const double code_value = Format::E4M3FN().decode(Format::E4M3FN().encode(static_cast<double>(y) * 0.5, eo));
        want[e] = static_cast<float>(code_value / 0.5);
      }
      }
    }
  QCOMPARE(got.d.size(), want.size());
  for (size_t e = 0; e < want.size(); ++e)
    if (bitsOf(got.d[e]) != bitsOf(want[e]))
      QFAIL(qPrintable(QStringLiteral("element %1: fused %2, by hand %3")
                           .arg(e)
                           .arg(double(got.d[e]), 0, 'g', 9)
                           .arg(double(want[e]), 0, 'g', 9)));
  QCOMPARE(got.amax_d, amax);
}

void TestGemmEpilogue::wrongEpilogueSizesRefused() {
  const QuantizedTensor a = exactTensor({1, 2, 3, 4, 5, 6}, 2, 3), b = exactTensor({1, 1, 1, 1, 1, 1}, 3, 2);
  auto backend = makeCpuGemmBackend();
  auto refused = [&](const GemmOptions& o, const char* part1, const char* part2) {
    try {
      backend->run(a, b, o);
    } catch (const std::invalid_argument& e) {
      const QString msg = QString::fromUtf8(e.what());
      QVERIFY2(msg.contains(QLatin1String(part1)) && msg.contains(QLatin1String(part2)), e.what());
      QVERIFY(!backend->unsupportedReason(a, b, o).empty());
      return;
    }
    QFAIL("no std::invalid_argument");
  };
  GemmOptions o;
  o.bias = shared({1, 2, 3});
  refused(o, "bias holds 3 values", "needs one per column: 2");
  o.bias = nullptr;
  o.beta = 1;
  refused(o, "no C [2x2]", "beta");
  o.c = shared({1, 2, 3});
  refused(o, "C holds 3 values", "needs 4");
}

void TestGemmEpilogue::presetTable() {
  // One preset per instruction (docs/gemm.md's table): the rules measured on the MATLAB-tensor-core
  // data (tests/data/tensor_core, test_tensor_core_data) for hopper_fp8 (13 fraction bits below
  // e(a)+e(b), groups of 32, sums truncated to 13 fraction bits, C inside), ada_fp8 (the same in
  // groups of 16) and blackwell_fp8 (25 bits, sums truncated to binary32, C after the MMA); presets
  // with no measured data say so.
  const auto h = accumulationPreset("Hopper-FP8");
  QVERIFY(h);
  QCOMPARE(h->name, std::string("hopper_fp8"));
  QCOMPARE(int(h->accumulation), int(Accumulation::FastAccum));
  QCOMPARE(h->bits, 14);
  QCOMPARE(h->group, 32);
  QCOMPARE(h->promotion_interval, 128);
  QVERIFY(h->promotes && !h->unsure);
  QCOMPARE(int(h->rules.alignment), int(MmaAlignment::Operands));
  QCOMPARE(int(h->rules.sum), int(MmaSum::Fp32));
  QCOMPARE(h->rules.sum_bits, 13);
  QCOMPARE(int(h->rules.sum_rounding), int(MmaRounding::TowardZero));
  QCOMPARE(int(h->rules.c_entry), int(MmaCEntry::Accumulator));
  QVERIFY(h->measured.find("10000 of 10000") != std::string::npos);
  const auto ada = accumulationPreset("ada_fp8");
  QVERIFY(ada);
  QCOMPARE(ada->group, 16);
  QCOMPARE(ada->rules.sum_bits, 13);
  const auto bw = accumulationPreset("blackwell_fp8");
  QVERIFY(bw);
  QCOMPARE(bw->bits, 26);
  QCOMPARE(bw->rules.sum_bits, 23);
  QCOMPARE(int(bw->rules.c_entry), int(MmaCEntry::Epilogue));
  QVERIFY(!bw->unsure && bw->source.find("MATLAB-tensor-core") != std::string::npos);
  for (const AccumulationPreset& p : accumulationPresets()) {
    QVERIFY2(!p.source.empty() && !p.instruction.empty(), p.name.c_str());
    if (p.measured.empty()) QVERIFY2(p.unsure && p.summary.find("UNSURE") != std::string::npos, p.name.c_str());
  }
  QVERIFY(!accumulationPreset("block_scaled_mma"));
  QVERIFY(!accumulationPreset("split"));
  // Applying a preset sets the model's parameters and its rules; the mismatch names a rule.
  GemmOptions o;
  const GemmOptions p = withAccumulationPreset(o, *h);
  QCOMPARE(int(p.accumulation), int(Accumulation::FastAccum));
  QVERIFY(accumulationPresetMismatch(p, *h).empty());
  QVERIFY(!accumulationPresetMismatch(p, *bw).empty());
  GemmOptions q = p;
  q.mma.c_entry = MmaCEntry::Epilogue;
  QVERIFY(accumulationPresetMismatch(q, *h).find("mma_c epilogue differs") != std::string::npos);
}

// A = [256, 2^-6], B = [1, 1]^T (exact in E4M3FN). Alignment exponents e(a)+e(b): 8 and −6, so E = 8.
// hopper_fp8 keeps 13 fraction bits: grid 2^(8−13) = 2^-5, 2^-6 is cut to 0 → D = 256.
// blackwell_fp8 keeps 25: grid 2^-17, 2^-6 stays → 256 + 2^-6 = 256.015625 (exact in the 23-bit sum).
void TestGemmEpilogue::presetBitsChangeTheSum() {
  const QuantizedTensor a = exactTensor({256, 0.015625}, 1, 2), b = exactTensor({1, 1}, 2, 1);
  auto backend = makeCpuGemmBackend();
  auto run = [&](const char* preset) {
    return backend->run(a, b, withAccumulationPreset({}, *accumulationPreset(preset))).d.at(0);
  };
  QCOMPARE(run("hopper_fp8"), 256.0f);
  QCOMPARE(run("ada_fp8"), 256.0f);
  QCOMPARE(run("blackwell_fp8"), 256.015625f);
  QCOMPARE(run("blackwell_tcgen05"), 256.015625f);
}

// The two structural rules the measured data show, by hand (E4M3FN operands, one group):
// 1. Alignment on the operands' exponents. A = [1.875, 2^-6, 2^-6], B = [1.875, 2^-7, 2^-7]:
//    products 3.515625 (e(a)+e(b) = 0, though the product's own exponent is 1) and twice 2^-13
//    (2^-7 is subnormal: e = emin = −6, so E = −12). hopper_fp8: E = 0, grid 2^-13, both small
//    products kept → 3.515625 + 2^-12; the sum's binary32 exponent is 1, its 13 fraction bits a
//    quantum of 2^-12: exact → D = 3.515869140625. The prose model aligns on the product's exponent
//    1: grid 2^-12, each 2^-13 cut to 0 → D = 3.515625.
// 2. The group sum truncated to 13 fraction bits. A = [1.875, 0.25, 2^-6], B = [1, 1, 2^-7]: E = 0,
//    grid 2^-13, every product kept: 2.125 + 2^-13. Its exponent is 1, so 13 fraction bits are a
//    quantum of 2^-12 and truncation gives D = 2.125; with 23 fraction bits (RNE or not) the sum is
//    exact: 2.1251220703125.
// 3. C inside the first group (ada_fp8, beta = 1): A = [1], B = [1], C = 1 + 2^-14. Terms 1 and C,
//    E = 0, grid 2^-13: C is cut to 1 → D = 2. With C in the epilogue: the MMA gives 1, then
//    1 + (1 + 2^-14) in float32 = 2 + 2^-14 (exact) → D = 2.00006103515625.
void TestGemmEpilogue::measuredRulesByHand() {
  auto backend = makeCpuGemmBackend();
  const AccumulationPreset hopper = *accumulationPreset("hopper_fp8");
  const GemmOptions h = withAccumulationPreset({}, hopper);
  GemmOptions prose = h;
  prose.mma = MmaRules{};
  const QuantizedTensor a1 = exactTensor({1.875, 0.015625, 0.015625}, 1, 3),
                        b1 = exactTensor({1.875, 0.0078125, 0.0078125}, 3, 1);
  QCOMPARE_BITS(backend->run(a1, b1, h).d.at(0), 3.515869140625f);
  QCOMPARE_BITS(backend->run(a1, b1, prose).d.at(0), 3.515625f);
  const QuantizedTensor a2 = exactTensor({1.875, 0.25, 0.015625}, 1, 3), b2 = exactTensor({1, 1, 0.0078125}, 3, 1);
  QCOMPARE_BITS(backend->run(a2, b2, h).d.at(0), 2.125f);
  GemmOptions wide = h;
  wide.mma.sum_bits = 23;
  QCOMPARE_BITS(backend->run(a2, b2, wide).d.at(0), 2.1251220703125f);
  wide.mma.sum_rounding = MmaRounding::NearestEven;
  QCOMPARE_BITS(backend->run(a2, b2, wide).d.at(0), 2.1251220703125f);
  const QuantizedTensor a3 = exactTensor({1}, 1, 1), b3 = exactTensor({1}, 1, 1);
  GemmOptions ada = withAccumulationPreset({}, *accumulationPreset("ada_fp8"));
  ada.beta = 1.0f;
  ada.c = shared({1.0f + 0x1p-14f});
  QCOMPARE_BITS(backend->run(a3, b3, ada).d.at(0), 2.0f);
  ada.mma.c_entry = MmaCEntry::Epilogue;
  QCOMPARE_BITS(backend->run(a3, b3, ada).d.at(0), 2.00006103515625f);
  // C cannot enter the accumulator when alpha ≠ 1: the epilogue adds it, and the run says so.
  ada.mma.c_entry = MmaCEntry::Accumulator;
  ada.alpha = 2.0f;
  const GemmOutput out = backend->run(a3, b3, ada);
  QCOMPARE_BITS(out.d.at(0), 2.0f * 1.0f + (1.0f + 0x1p-14f)); // 2 + (1 + 2^-14) = 3 + 2^-14, exact
  bool said = false;
  for (const Issue& w : out.warnings) said |= w.what == "C in the epilogue";
  QVERIFY(said);
}

// The note beside a fast-accumulation result states the rules that ran, from the parameters.
void TestGemmEpilogue::fastAccumNoteNamesTheModelsBits() {
  const QuantizedTensor a = exactTensor({256, 0.015625}, 1, 2), b = exactTensor({1, 1}, 2, 1);
  auto backend = makeCpuGemmBackend();
  auto note = [&](const GemmOptions& o) {
    for (const Issue& w : backend->run(a, b, o).warnings)
      if (w.what == "model of undocumented hardware") return w.detail;
    return std::string();
  };
  const std::string bw = note(withAccumulationPreset({}, *accumulationPreset("blackwell_fp8")));
  QVERIFY2(bw.find("groups of 32 products aligned to the largest e(a) + e(b), 25 fraction bits kept (truncated), "
                   "each group's sum a binary32 with 23 fraction bits (truncated), no promotion window") !=
               std::string::npos,
           bw.c_str());
  GemmOptions prose;
  prose.accumulation = Accumulation::FastAccum;
  const std::string p = note(prose);
  QVERIFY2(p.find("largest product exponent, 13 fraction bits kept (truncated), group sums kept exactly, promoted "
                  "into float32 every 128 of K (DeepSeek-V3") != std::string::npos,
           p.c_str());
}

// bits + bit_width(group) ≤ 53 (gemm.h): 26 + bit_width(32) = 26 + 6 = 32 and 35 + bit_width(64) =
// 42 are accepted; 48 + bit_width(64) = 55 and 49 (above kFastAccumMaxBits) are refused; today's
// range 2..24 with any group up to 2^20 stays accepted (24 + 21 = 45).
void TestGemmEpilogue::fastAccumBitsLimit() {
  auto ok = [](int bits, int group) {
    GemmOptions o;
    o.fast_accum_bits = bits;
    o.fast_accum_group = group;
    try {
      checkFastAccum(o);
      return true;
    } catch (const std::invalid_argument&) {
      return false;
    }
  };
  QVERIFY(ok(26, 32));
  QVERIFY(ok(35, 64));
  QVERIFY(ok(24, 1 << 20));
  QVERIFY(ok(2, 1));
  QVERIFY(!ok(48, 64));
  QVERIFY(!ok(49, 1));
  QVERIFY(!ok(1, 32));
}

QTEST_APPLESS_MAIN(TestGemmEpilogue)
#include "test_gemm_epilogue.moc"

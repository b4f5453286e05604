// FP8 Lab — the GEMM epilogue (alpha, beta·C, bias; cuBLASLt's order) and the accumulation
// presets (core/gemm/accumulation_preset.h), against hand derivations.
#include <QtTest>

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
  // The figures of docs/gemm.md's table: DeepSeek-V3 (14 bits, N_C = 128), DeepGEMM#176 (B200
  // "25bits mantissa" vs H100 "13bit mantissa" → 26 on the table's scale; FP4 MMA "34..37" → 35).
  const auto h = accumulationPreset("Hopper-FP8");
  QVERIFY(h);
  QCOMPARE(h->name, std::string("hopper_fp8"));
  QCOMPARE(int(h->accumulation), int(Accumulation::FastAccum));
  QCOMPARE(h->bits, 14);
  QCOMPARE(h->group, 32);
  QCOMPARE(h->promotion_interval, 128);
  QVERIFY(h->promotes && !h->unsure);
  const auto bw = accumulationPreset("blackwell_fp8");
  QVERIFY(bw);
  QCOMPARE(bw->bits, 26);
  QVERIFY(!bw->unsure && bw->source.find("DeepGEMM#176") != std::string::npos);
  const auto bs = accumulationPreset("block_scaled_mma");
  QVERIFY(bs);
  QCOMPARE(bs->bits, 35);
  QVERIFY(bs->unsure && bs->summary.find("UNSURE") != std::string::npos);
  QVERIFY(!accumulationPreset("split"));
  // Today's defaults are the hopper_fp8 parameters: applying it changes only the model.
  GemmOptions o;
  const GemmOptions p = withAccumulationPreset(o, *h);
  QCOMPARE(int(p.accumulation), int(Accumulation::FastAccum));
  QCOMPARE(p.fast_accum_bits, o.fast_accum_bits);
  QCOMPARE(p.fast_accum_group, o.fast_accum_group);
  QCOMPARE(p.promotion_interval, o.promotion_interval);
  QVERIFY(accumulationPresetMismatch(p, *h).empty());
  QVERIFY(!accumulationPresetMismatch(p, *bw).empty());
}

// A = [256, 2^-6], B = [1, 1]^T (exact in E4M3FN). The products 256 = 2^8 and 2^-6 form one group;
// E = 8. hopper_fp8 (14 bits): grid 2^(8−13) = 2^-5, so 2^-6 truncates to 0 → D = 256.
// blackwell_fp8 (26 bits): grid 2^(8−25) = 2^-17, 2^-6 is kept → D = 256 + 2^-6 = 256.015625
// (15 significant bits, exact in float32). block_scaled_mma (35 bits) keeps it too.
void TestGemmEpilogue::presetBitsChangeTheSum() {
  const QuantizedTensor a = exactTensor({256, 0.015625}, 1, 2), b = exactTensor({1, 1}, 2, 1);
  auto backend = makeCpuGemmBackend();
  auto run = [&](const char* preset) {
    return backend->run(a, b, withAccumulationPreset({}, *accumulationPreset(preset))).d.at(0);
  };
  QCOMPARE(run("hopper_fp8"), 256.0f);
  QCOMPARE(run("blackwell_fp8"), 256.015625f);
  QCOMPARE(run("block_scaled_mma"), 256.015625f);
}

// The note beside a fast-accumulation result states the model that ran, from its parameters:
// blackwell_fp8 keeps 26 bits per group of 32 products and promotes every 128 (the preset table
// above), block_scaled_mma 35 bits per group of 64 with no window of its own. It used to say
// "as DeepSeek-V3 §3.3 describes it for Hopper (here ~26 bits)" whatever the preset.
void TestGemmEpilogue::fastAccumNoteNamesTheModelsBits() {
  const QuantizedTensor a = exactTensor({256, 0.015625}, 1, 2), b = exactTensor({1, 1}, 2, 1);
  auto backend = makeCpuGemmBackend();
  auto note = [&](const char* preset) {
    for (const Issue& w : backend->run(a, b, withAccumulationPreset({}, *accumulationPreset(preset))).warnings)
      if (w.what == "model of undocumented hardware") return w.detail;
    return std::string();
  };
  const std::string bw = note("blackwell_fp8"), bs = note("block_scaled_mma");
  QVERIFY2(bw.find("each aligned group of 32 products keeps 26 significant bits, promoted into float32 every 128 "
                   "of K") != std::string::npos,
           bw.c_str());
  QVERIFY2(bw.find("here ~") == std::string::npos, bw.c_str());
  QVERIFY2(bs.find("each aligned group of 64 products keeps 35 significant bits, with no promotion window") !=
               std::string::npos,
           bs.c_str());
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

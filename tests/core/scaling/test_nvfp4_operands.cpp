// NVFP4 tensors as GEMM operands: toQuantizedTensor keeps each system's dequantization bit for bit,
// the CPU GEMM applies the two E4M3 block scales of each K-block to its partial sum and the
// system's tensor factor to the result (TE's alpha, torchao's pts_A · pts_B), and the stats count
// what the quantizer did. Expected values are derived by hand in the comments.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "gemm/error_split.h"
#include "gemm/gemm.h"
#include "scaling/nvfp4.h"

using namespace fp8lab;

namespace {

std::vector<float> normal(int64_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(g);
  return v;
}

QuantizedTensor nvfp4(const std::vector<float>& x, int64_t rows, int64_t cols, const char* preset, Axis axis) {
  const Nvfp4Config c = *nvfp4Preset(preset);
  return toQuantizedTensor(quantizeNvfp4(x.data(), rows, cols, c, axis), c, x.data());
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

class TestNvfp4Operands : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void dequantizeMatchesTheSystemsFormula_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<int>("axis");
    for (const char* p : {"nvfp4_te", "nvfp4_te_2d", "nvfp4_te_4over6", "nvfp4_torchao", "nvfp4_torchao_single_level",
                          "nvfp4_cudnn_doc"}) {
      QTest::newRow((std::string(p) + "/cols").c_str()) << QString::fromLatin1(p) << int(Axis::Cols);
      QTest::newRow((std::string(p) + "/rows").c_str()) << QString::fromLatin1(p) << int(Axis::Rows);
    }
  }
  /// QuantizedTensor::dequantize (decode · the block's effective factor, rounded once) equals
  /// Nvfp4Tensor::dequantize, which writes each system's formula out (TE dequantize_fp4_kernel,
  /// torchao NVFP4Tensor.dequantize), on a 64×96 normal tensor with a few outliers.
  void dequantizeMatchesTheSystemsFormula() {
    QFETCH(QString, preset);
    QFETCH(int, axis);
    std::vector<float> x = normal(64 * 96, 7);
    x[5] = 40.0f;
    x[700] = -1e-6f;
    const Nvfp4Config c = *nvfp4Preset(preset.toStdString());
    const Nvfp4Tensor t = quantizeNvfp4(x.data(), 64, 96, c, Axis(axis));
    const QuantizedTensor q = toQuantizedTensor(t, c, x.data());
    QCOMPARE(q.format, &Format::E2M1());
    QCOMPARE(q.scale_format, &Format::E4M3FN());
    QCOMPARE(q.block, Axis(axis) == Axis::Cols ? (ScaleBlock{1, 16}) : (ScaleBlock{16, 1}));
    QCOMPARE(q.dequant_scales.size(), t.scale_codes.size());
    QVERIFY(sameBits(q.dequantize(), t.dequantize()));
    QCOMPARE(q.stats.elements, int64_t(64 * 96));
  }

  /// A [1,32] times B [32,1], TE rule, by hand:
  ///   A: block 0 = sixteen 6.0, block 1 = sixteen 0.75. amax 6 → S_enc = 2688/6 = 448.
  ///     f32(448 · f32(1/6)) = 74.66667; block 0: f32(6 · 74.66667) = 448.00002 → E4M3 448 (0x7E);
  ///     block 1: f32(0.75 · 74.66667) = 56.000004 → E4M3 56 = 1.75·2^5 (exponent field 12, mantissa 110: 0x66); every
  ///     element scales to (nearly) 6 → code 0x7 (6).
  ///   B: thirty-two 1.0: amax 1, S_enc 2688, f32(2688 · f32(1/6)) = 448.00003 → 448 (0x7E);
  ///     elements → 6 (0x7).
  ///   GEMM: block 0: 16 · 6 · 6 = 576, times 448 · 448 = 200704 → 115605504; block 1: 576 ·
  ///   (56 · 448 = 25088) = 14450688; sum 130056192 (exact in float32 and double).
  ///   TE alpha = f32(f32(6 · 1) · f32(1/(2688 · 2688))); D = f32(alpha · 130056192) ≈ 108 =
  ///   16·6 + 16·0.75, the exact product.
  void teGemmAppliesBlockScalesPerKBlockAndAlphaAfter() {
    std::vector<float> a(32, 6.0f), b(32, 1.0f);
    for (int i = 16; i < 32; ++i) a[static_cast<size_t>(i)] = 0.75f;
    const QuantizedTensor qa = nvfp4(a, 1, 32, "nvfp4_te", Axis::Cols);
    const QuantizedTensor qb = nvfp4(b, 32, 1, "nvfp4_te", Axis::Rows);
    QCOMPARE(qa.scale_codes, (std::vector<uint8_t>{0x7E, 0x66}));
    QCOMPARE(qb.scale_codes, (std::vector<uint8_t>{0x7E, 0x7E}));
    QCOMPARE(qa.codes, std::vector<uint8_t>(32, 0x7));
    QCOMPARE(qb.codes, std::vector<uint8_t>(32, 0x7));
    const float alpha = (6.0f * 1.0f) * (1.0f / 7225344.0f);
    const float expected = alpha * 130056192.0f;
    QVERIFY(std::fabs(expected - 108.0f) <= 108.0f * 0x1p-22f);
    for (Accumulation acc : {Accumulation::Exact, Accumulation::FP32, Accumulation::SplitFP32}) {
      GemmOptions opt;
      opt.accumulation = acc;
      const GemmOutput out = makeCpuGemmBackend()->run(qa, qb, opt);
      QCOMPARE(std::bit_cast<uint32_t>(out.d[0]), std::bit_cast<uint32_t>(expected));
    }
    QCOMPARE(gemmTensorFactor(qa.tensor_scale, qb.tensor_scale), alpha);
  }

  /// torchao two-level: the GEMM factor is f32(pts_A · pts_B) (torch._scaled_mm with the E4M3
  /// block scales, then the per-tensor scales). A = sixteen 3.0 [1,16], B = sixteen 2.0 [16,1]:
  /// pts_A = f32(3/2688), pts_B = f32(2/2688); block scales f32(f32(3/6)/pts_A) ≈ 448 and
  /// ≈ 448 → E4M3 448; elements x · f32(f32(1/pts)/448) ≈ 6 → code 0x7. Sum 16 · 36 · 448 · 448
  /// = 115605504; D = f32(f32(pts_A · pts_B) · 115605504) ≈ 96 = 16 · 3 · 2.
  void torchaoGemmAppliesPerTensorScalesAfter() {
    std::vector<float> a(16, 3.0f), b(16, 2.0f);
    const QuantizedTensor qa = nvfp4(a, 1, 16, "nvfp4_torchao", Axis::Cols);
    const QuantizedTensor qb = nvfp4(b, 16, 1, "nvfp4_torchao", Axis::Rows);
    QCOMPARE(qa.tensor_scale.kind, TensorScale::Kind::TorchaoPts);
    QCOMPARE(qa.tensor_scale.value, 3.0f / 2688.0f);
    QCOMPARE(qb.tensor_scale.value, 2.0f / 2688.0f);
    QCOMPARE(qa.scale_codes, (std::vector<uint8_t>{0x7E}));
    QCOMPARE(qa.codes, std::vector<uint8_t>(16, 0x7));
    const float f = (3.0f / 2688.0f) * (2.0f / 2688.0f);
    const float expected = f * 115605504.0f;
    QVERIFY(std::fabs(expected - 96.0f) <= 96.0f * 0x1p-21f);
    const GemmOutput out = makeCpuGemmBackend()->run(qa, qb, GemmOptions{});
    QCOMPARE(std::bit_cast<uint32_t>(out.d[0]), std::bit_cast<uint32_t>(expected));
  }

  /// The quantized-exact reference of the error split is the product of the dequantized operands
  /// (each element = E2M1 value · its block's effective factor) up to the rounding of the factors:
  /// on a 32×64 · 64×48 normal GEMM, the float64 GEMM of QuantizedTensor::dequantize() operands and
  /// quantizedExactGemm agree to 1e-5 relative (factors differ by at most an ulp of float32 per
  /// block, TE's alpha vs amax · f32(1/2688) per operand).
  void quantizedExactIsTheProductOfTheDequantizedOperands() {
    const std::vector<float> a = normal(32 * 64, 1), b = normal(64 * 48, 2, 3.0f);
    for (const char* p : {"nvfp4_te", "nvfp4_torchao", "nvfp4_cudnn_doc"}) {
      const QuantizedTensor qa = nvfp4(a, 32, 64, p, Axis::Cols), qb = nvfp4(b, 64, 48, p, Axis::Rows);
      const std::vector<double> got = quantizedExactGemm(qa, qb, 1);
      const std::vector<float> da = qa.dequantize(), db = qb.dequantize();
      const std::vector<double> want = idealGemm(da.data(), db.data(), 32, 64, 48, 1);
      double worst = 0, scale = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, std::fabs(got[i] - want[i]));
        scale = std::max(scale, std::fabs(want[i]));
      }
      QVERIFY2(worst <= 1e-5 * scale,
               qPrintable(QStringLiteral("%1: worst %2 of %3").arg(QString::fromLatin1(p)).arg(worst).arg(scale)));
    }
  }

  /// Stats: zero and NaN inputs are counted (TE's amax skips the NaN, which codes to +6); 1e-6 in a
  /// block of amax 6 scales by S_enc_b ≈ 1 (block scale ≈ 6 · 448/6 / 448) to about 1e-6, below
  /// E2M1's first midpoint 0.25 → code 0 → one underflow; the 1.0s of block 1 (scale ≈ 74.7) code
  /// to about 6, none underflows.
  void statsCountInputsAndUnderflow() {
    std::vector<float> x(32, 1.0f);
    x[0] = 6.0f;
    x[1] = 1e-6f;
    x[2] = 0.0f;
    x[3] = std::numeric_limits<float>::quiet_NaN();
    const QuantizedTensor q = nvfp4(x, 1, 32, "nvfp4_te", Axis::Cols);
    QCOMPARE(q.stats.elements, int64_t(32));
    QCOMPARE(q.stats.zero_inputs, int64_t(1));
    QCOMPARE(q.stats.nan_inputs, int64_t(1));
    QCOMPARE(q.stats.inf_inputs, int64_t(0));
    QCOMPARE(q.codes[3], uint8_t(0x7));
    QCOMPARE(q.stats.underflow, int64_t(1));
  }
};

QTEST_APPLESS_MAIN(TestNvfp4Operands)
#include "test_nvfp4_operands.moc"

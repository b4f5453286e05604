// Tests for core/scaling: scale rules, current-scaling presets, block / MX quantization.
// Expected values come from outside the code under test: the issue's vectors, published test
// vectors of Flax / Transformer Engine / torchao (named in each test), or hand derivations
// written out in the comments (float32 arithmetic done by hand or with Python's struct-based
// float32 rounding, marked "derived").
#include <QtTest>

#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "compare_bits.h"
#include "formats/format.h"
#include "scaling/scale_rules.h"
#include "scaling/scaling.h"

using namespace fp8lab;

namespace {
constexpr float kFltMax = std::numeric_limits<float>::max();
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

ScalingConfig preset(const char* name) {
  auto c = scalingPreset(name);
  if (!c) qFatal("unknown preset %s", name);
  return *c;
}
} // namespace

class TestScaling : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void transposeCodesIsAnExactTranspose();
  void dequantizeIsDecodeTimesTheBlockFactor();
  void teComputeScaleEdgeRules();
  void tePow2MantissaMask();
  void torchaoScaleRules();
  void torchaoPow2Quirks();
  void deepGemmClampAndUe8m0();
  void flaxDoubleReciprocal();
  void e8m0RoundUpSaturating();
  void mxScaleRulesIssue2035();
  void mxBlockOf480FloorVsRceil();
  void mxE5M2FloorClipsIssue436();
  void mxFp4Element();
  void mxNaNAndInfBlocks();
  void perTensorCurrentHandDerived_data();
  void perTensorCurrentHandDerived();
  void perColumnAndRowwisePow2();
  void partialBlocks1x128();
  void partialBlocks128x128();
  void block1DAlongRowsIsColumnBlocks();
  void columnBlocksMatchRowBlocksOnTranspose_data();
  void columnBlocksMatchRowBlocksOnTranspose();
  void statsCounts();
  void statsSkippedLeavesCodesAndScales();
  void threadsDoNotChangeResults();
  void edgeTensorsNeverCrash();
  void doubleInputSingleRounding();
  void divideOpPreset();
  void presetsListed();
  void badInput();
};

// TE recipe_common.cuh compute_scale_from_amax; TE test_scale_update_numeric_scenarios pins
// amax 0 / inf / NaN → 1.0 (for current scaling there is no previous scale) and
// 0 < amax < fp8_max / FLT_MAX → FLT_MAX (PR #786).
void TestScaling::teComputeScaleEdgeRules() {
  QCOMPARE_BITS(teScaleFromAmax(0.0f, 448.0f), 1.0f);
  QCOMPARE_BITS(teScaleFromAmax(kInf, 448.0f), 1.0f);
  QCOMPARE_BITS(teScaleFromAmax(kNaN, 448.0f), 1.0f);
  const float tiny = 448.0f / kFltMax / 2.0f; // TE's test: (fp8_max / FLT_MAX) / 2
  QVERIFY(tiny > 0.0f);
  QCOMPARE_BITS(teScaleFromAmax(tiny, 448.0f), kFltMax);
  QCOMPARE_BITS(teScaleFromAmax(57344.0f / kFltMax / 2.0f, 57344.0f), kFltMax);
  // A normal amax: 448 / 2 = 224 exactly; 448 / 0.01f = 44800 (derived: 448 / 0.0099999998 =
  // 44800.001, the float32 spacing at 44800 is 2^-8, so it rounds to 44800).
  QCOMPARE_BITS(teScaleFromAmax(2.0f, 448.0f), 224.0f);
  QCOMPARE_BITS(teScaleFromAmax(0.01f, 448.0f), 44800.0f);
  // amax_epsilon: amax below eps is raised to eps (1/1024 → 448·1024 = 458752).
  QCOMPARE_BITS(teScaleFromAmax(1e-30f, 448.0f, false, 1.0f / 1024.0f), 458752.0f);
  // NaN is not raised to eps (the comparison is false) and still gives 1.0.
  QCOMPARE_BITS(teScaleFromAmax(kNaN, 448.0f, false, 1.0f), 1.0f);
}

// TE pow2: bits & 0xFF800000 → round the quant multiplier down to a power of two.
void TestScaling::tePow2MantissaMask() {
  QCOMPARE_BITS(tePow2(149.33333f), 128.0f);
  QCOMPARE_BITS(tePow2(1.0f), 1.0f);
  QCOMPARE_BITS(tePow2(kFltMax), std::ldexp(1.0f, 127));      // not inf: the mask keeps the exponent
  QCOMPARE_BITS(teScaleFromAmax(3.0f, 448.0f, true), 128.0f); // 448/3 = 149.33 → 128
  QCOMPARE_BITS(teScaleFromAmax(448.0f / kFltMax / 2.0f, 448.0f, true), std::ldexp(1.0f, 127));
}

// torchao float8_utils.amax_to_scale: EPS = 1e-12, float64 division then float32.
void TestScaling::torchaoScaleRules() {
  // amax 0 → fp8_max / 1e-12: 4.48e14 (E4M3) and 5.7344e16 (E5M2), rounded to float32.
  QCOMPARE_BITS(torchaoScaleFromAmax(0.0, 448.0), static_cast<float>(4.48e14));
  QCOMPARE_BITS(torchaoScaleFromAmax(0.0, 57344.0), static_cast<float>(5.7344e16));
  // amax inf → 0; NaN → NaN.
  QCOMPARE_BITS(torchaoScaleFromAmax(INFINITY, 448.0), 0.0f);
  QVERIFY(std::isnan(torchaoScaleFromAmax(NAN, 448.0)));
  // Below EPS: clamped (TE would give 448/1e-13 = 4.48e15).
  QCOMPARE_BITS(torchaoScaleFromAmax(1e-13, 448.0), static_cast<float>(4.48e14));
  // float64 division: 448 / 149.33333333333334 (double) = 3.0000000000000004 → 3.0f.
  QCOMPARE_BITS(torchaoScaleFromAmax(448.0 / 3.0, 448.0), 3.0f);
  // float64 division matters for float64 amaxes: a = 1 + 2^-24 + 2^-40 (double).
  // torchao: 448 / a = 447.99997328... → float32 448 − 2^-15 (derived: the neighbours are
  // 448 − 2^-15 = 447.99996948 and 448, distance 3.8e-6 vs 2.7e-5).
  // Rounding a to float32 first (1 + 2^-23, as a float32 rule sees it) gives
  // 448 / (1 + 2^-23) = 447.99994659 → 448 − 2^-14.
  const double a = 1.0 + std::ldexp(1.0, -24) + std::ldexp(1.0, -40);
  QCOMPARE_BITS(torchaoScaleFromAmax(a, 448.0), 448.0f - std::ldexp(1.0f, -15));
  QCOMPARE_BITS(teScaleFromAmax(static_cast<float>(a), 448.0f), 448.0f - std::ldexp(1.0f, -14));
  // The same through quantize(double): the torchao preset keeps the float64 amax.
  const std::vector<double> xd = {a, 0.5};
  QCOMPARE_BITS(quantize(xd.data(), 1, 2, Format::E4M3FN(), *scalingPreset("torchao_tensorwise")).quant_scales[0],
                448.0f - std::ldexp(1.0f, -15));
  QCOMPARE_BITS(quantize(xd.data(), 1, 2, Format::E4M3FN(), *scalingPreset("te_current")).quant_scales[0],
                448.0f - std::ldexp(1.0f, -14));
}

// torchao test_float8_utils: _round_scale_down_to_power_of_2 cases.
void TestScaling::torchaoPow2Quirks() {
  QVERIFY(std::isinf(torchaoPow2(kFltMax))); // log2f(FLT_MAX) rounds to 128
  QCOMPARE_BITS(torchaoPow2(1.0f + std::ldexp(1.0f, -23)), 1.0f);
  QCOMPARE_BITS(torchaoPow2(1.0f - std::ldexp(1.0f, -24)), 0.5f);
  QCOMPARE_BITS(torchaoPow2(149.33333f), 128.0f);
  QCOMPARE_BITS(torchaoPow2(0.0f), 0.0f);
  QCOMPARE_BITS(torchaoScaleFromAmax(3.0, 448.0, true), 128.0f);
}

// DeepGEMM math.py: amax clamped to 1e-4 (not 1e-12), sf = amax / 448, UE8M0 rounds sf up.
void TestScaling::deepGemmClampAndUe8m0() {
  // derived: float32(1e-4) / 448 → 2.2321428616578487e-07 (Python struct float32 rounding).
  QCOMPARE_BITS(deepGemmDequantScale(0.0f, 448.0f), 2.2321428616578487e-07f);
  QCOMPARE_BITS(deepGemmDequantScale(5e-5f, 448.0f), 2.2321428616578487e-07f);
  QCOMPARE_BITS(deepGemmDequantScale(7.0f, 448.0f), 0.015625f); // 7/448 = 2^-6 exactly
  QCOMPARE_BITS(deepGemmDequantScale(448.0f, 448.0f, true), 1.0f);
  QCOMPARE_BITS(deepGemmDequantScale(449.0f, 448.0f, true), 2.0f); // 1.0022 → next power of two
  QCOMPARE_BITS(deepGemmDequantScale(300.0f, 448.0f, true), 1.0f); // 0.67 → 1
  QVERIFY(std::isnan(deepGemmDequantScale(kNaN, 448.0f)));
}

// Flax compute_scale: dequant = 1 / ((fp8_max / amax) / 2^margin), fallback 1 / (1 / prev).
void TestScaling::flaxDoubleReciprocal() {
  // derived: 1/(448/2) = 1/224 → 0.004464285913854837f, the float32 of 2/448.
  QCOMPARE_BITS(flaxComputeScale(2.0f, 1.0f, 448.0f).dequant, 0.004464285913854837f);
  // Keep-previous goes through 1/(1/prev): prev 7 → 1/7 = 0.14285715f → 1/0.14285715f =
  // 6.9999995 (derived: 6.999999523162842, one float32 ulp below 7).
  const FlaxScale k = flaxComputeScale(0.0f, 7.0f, 448.0f);
  QVERIFY(k.kept_previous);
  QCOMPARE_BITS(k.dequant, 6.999999523162842f);
  QVERIFY(flaxComputeScale(kInf, 7.0f, 448.0f).kept_previous);
  QVERIFY(flaxComputeScale(kNaN, 7.0f, 448.0f).kept_previous);
  // No clamp: a tiny amax gives sf = inf and a stored scale of 0.
  const FlaxScale t = flaxComputeScale(1e-38f, 1.0f, 448.0f);
  QVERIFY(std::isinf(t.sf));
  QCOMPARE_BITS(t.dequant, 0.0f);
  // margin 2: sf = (448/2)/4 = 56 → dequant 1/56.
  QCOMPARE_BITS(flaxComputeScale(2.0f, 1.0f, 448.0f, 2).sf, 56.0f);
}

// TE ptx_arch_spec.cuh float_to_e8m0.
void TestScaling::e8m0RoundUpSaturating() {
  QCOMPARE(int(fp8lab::e8m0RoundUpSaturating(1.0f)), 127);
  QCOMPARE(int(fp8lab::e8m0RoundUpSaturating(1.5f)), 128);
  QCOMPARE(int(fp8lab::e8m0RoundUpSaturating(2.0f)), 128);
  QCOMPARE(int(fp8lab::e8m0RoundUpSaturating(kFltMax)), 0xFE); // saturates at exponent 0xFE
  QCOMPARE(int(fp8lab::e8m0RoundUpSaturating(kInf)), 0xFE);
  QCOMPARE(int(fp8lab::e8m0RoundUpSaturating(kNaN)), 0xFF);
  QCOMPARE(int(fp8lab::e8m0RoundUpSaturating(0.0f)), 0x00);
  QCOMPARE(int(fp8lab::e8m0RoundUpSaturating(std::ldexp(1.0f, -127))), 0x00);        // mantissa 0x400000
  QCOMPARE(int(fp8lab::e8m0RoundUpSaturating(1.5f * std::ldexp(1.0f, -127))), 0x01); // mantissa 0x600000
  QCOMPARE_BITS(e8m0ToFloat(127), 1.0f);
  QCOMPARE_BITS(e8m0ToFloat(0), std::ldexp(1.0f, -127));
  QVERIFY(std::isnan(e8m0ToFloat(0xFF)));
  QCOMPARE_BITS(e8m0ReciprocalToFloat(128), 0.5f);
}

// pytorch/ao #2035: amax 150 in MXFP8 E4M3 → RCEIL byte 126, OCP ceil 127 (and FLOOR 126:
// floor(log2 150) = 7, 7 − 8 = −1).
void TestScaling::mxScaleRulesIssue2035() {
  QCOMPARE(int(mxScaleRceil(150.0f, 448.0f)), 126); // 150/448 = 0.335 → up to 2^-1
  QCOMPARE(int(mxScaleCeil(150.0f, 8)), 127);
  QCOMPARE(int(mxScaleFloor(150.0f, 8)), 126);
  // All-zero block: FLOOR reads exponent −127 → −135 → clamp −127 → 0x00; RCEIL 0 → 0x00.
  QCOMPARE(int(mxScaleFloor(0.0f, 8)), 0);
  QCOMPARE(int(mxScaleRceil(0.0f, 448.0f)), 0);
  QCOMPARE(int(mxScaleFloor(kInf, 8)), 0xFF);
  QCOMPARE(int(mxScaleFloor(kNaN, 8)), 0xFF);
}

// The issue's vector: a block of 32 equal values 480 in MX E4M3FN.
// FLOOR: floor(log2 480) = 8, 8 − emax(E4M3) 8 = 0 → byte 127, X = 1, 480 → saturates to 448
// = code 0x7E (0 1111 110), all 32 clipped.
// RCEIL: 480 · float32(1/448) = 1.0714 → rounded up to 2 → byte 128, 480 / 2 = 240 =
// 1.875 · 2^7 → code 0 1110 111 = 0x77, nothing clipped.
void TestScaling::mxBlockOf480FloorVsRceil() {
  const std::vector<float> x(32, 480.0f);
  const QuantizedTensor f = quantize(x.data(), 1, 32, Format::E4M3FN(), preset("mx_floor"));
  QCOMPARE(f.scale_codes.size(), size_t(1));
  QCOMPARE(int(f.scale_codes[0]), 127);
  QCOMPARE_BITS(f.dequant_scales[0], 1.0f);
  for (uint8_t c : f.codes) QCOMPARE(int(c), 0x7E);
  QCOMPARE(f.stats.saturated, int64_t(32));
  const QuantizedTensor r = quantize(x.data(), 1, 32, Format::E4M3FN(), preset("mx_rceil"));
  QCOMPARE(int(r.scale_codes[0]), 128);
  QCOMPARE_BITS(r.dequant_scales[0], 2.0f);
  QCOMPARE_BITS(r.quant_scales[0], 0.5f);
  for (uint8_t c : r.codes) QCOMPARE(int(c), 0x77);
  QCOMPARE(r.stats.saturated, int64_t(0));
  QCOMPARE(r.block, (ScaleBlock{1, 32}));
}

// pytorch/ao #436: a block max of 127.9999 in MX E5M2 (emax 15): floor(log2) = 6 → X = 2^-9,
// 127.9999 · 512 = 65535.9 > 57344 → must clamp to max (E5M2 57344 = 0 11110 11 = 0x7B).
void TestScaling::mxE5M2FloorClipsIssue436() {
  std::vector<float> x(32, 1.0f);
  x[7] = 127.9999f;
  const QuantizedTensor q = quantize(x.data(), 1, 32, Format::E5M2(), preset("mx_floor"));
  QCOMPARE(int(q.scale_codes[0]), 127 - 9);
  QCOMPARE(int(q.codes[7]), 0x7B);
  QCOMPARE(q.stats.saturated, int64_t(1));
  // 1.0 · 512 = 2^9 → E5M2 exponent 9+15 = 24 → 0 11000 00 = 0x60.
  QCOMPARE(int(q.codes[0]), 0x60);
}

// MX FP4 (E2M1, max 6, emax 2): block of 7.0. FLOOR: floor(log2 7) − 2 = 0 → 127, 7 → 6
// (code 0b0111, clipped). RCEIL: 7 · float32(1/6) = 1.1667 → 2 → 128, 3.5 is a tie between 3
// (0b0101) and 4 (0b0110) → RNE picks the even mantissa: 4 = 0x6.
void TestScaling::mxFp4Element() {
  const std::vector<float> x(32, 7.0f);
  const QuantizedTensor f = quantize(x.data(), 1, 32, Format::E2M1(), preset("mx_floor"));
  QCOMPARE(int(f.scale_codes[0]), 127);
  QCOMPARE(int(f.codes[0]), 0x7);
  QCOMPARE(f.stats.saturated, int64_t(32));
  const QuantizedTensor r = quantize(x.data(), 1, 32, Format::E2M1(), preset("mx_rceil"));
  QCOMPARE(int(r.scale_codes[0]), 128);
  QCOMPARE(int(r.codes[0]), 0x6);
}

// torchao MX: any NaN/inf in a block → scale 0xFF → the whole block dequantizes to NaN.
// TE RCEIL ignores NaN elements (fmaxf) and saturates an inf amax to 0xFE.
void TestScaling::mxNaNAndInfBlocks() {
  std::vector<float> x(64, 1.0f);
  x[3] = kNaN;  // block 0
  x[40] = kInf; // block 1
  const QuantizedTensor f = quantize(x.data(), 1, 64, Format::E4M3FN(), preset("mx_floor"));
  QCOMPARE(int(f.scale_codes[0]), 0xFF);
  QCOMPARE(int(f.scale_codes[1]), 0xFF);
  QVERIFY(std::isnan(f.dequantize()[0]));
  QVERIFY(std::isnan(f.dequantize()[63]));
  const QuantizedTensor r = quantize(x.data(), 1, 64, Format::E4M3FN(), preset("mx_rceil"));
  // block 0 amax ignores the NaN: 1 · float32(1/448) = 0.00223 = 1.14·2^-9 → up to 2^-8 → byte 119.
  QCOMPARE(int(r.scale_codes[0]), 127 - 8);
  QCOMPARE(int(r.scale_codes[1]), 0xFE);
  QCOMPARE(r.stats.nan_inputs, int64_t(1));
  QCOMPARE(r.stats.inf_inputs, int64_t(1));
  // torchao RCEIL: same round-up but no saturation: NaN and inf blocks → 0xFF (torchao/prototype/mx_formats).
  const QuantizedTensor t = quantize(x.data(), 1, 64, Format::E4M3FN(), preset("mx_rceil_torchao"));
  QCOMPARE(int(t.scale_codes[0]), 0xFF);
  QCOMPARE(int(t.scale_codes[1]), 0xFF);
  QCOMPARE(int(mxScaleRceilNoSat(480.0f, 448.0f)), 128); // finite amax: as TE
  QCOMPARE(int(mxScaleRceilNoSat(kInf, 448.0f)), 0xFF);
}

// The issue's per-tensor vector [0.001, 0.005, 0.008, 0.010] → E4M3FN, by hand:
// amax = 0.01f; s = 448 / 0.01f = 44800 (see teComputeScaleEdgeRules; torchao's float64 path
// gives the same). x · s in float32 (derived): 44.800003, 224, 358.40002, 448.
//   44.8  in [32,64) step 4: 44 (|.8| < |3.2|)  = 1.375·2^5 → 0 1100 011 = 0x63
//   224   = 1.75·2^7 exactly                    → 0 1110 110 = 0x76
//   358.4 in [256,448] step 32: 352             = 1.375·2^8 → 0 1111 011 = 0x7B
//   448   = max                                 → 0 1111 110 = 0x7E
// Decoded / s: 44/44800 = 9.82142857e-4, 0.005, 352/44800 = 7.85714286e-3, 0.01.
// Max abs error: 0.008 − 352/44800 = 6.4/44800 = 1/7000 = 1.4285714e-4 (0.001 has 1.79e-5).
void TestScaling::perTensorCurrentHandDerived_data() {
  QTest::addColumn<QString>("name");
  QTest::newRow("te_current") << QStringLiteral("te_current");
  QTest::newRow("torchao_tensorwise") << QStringLiteral("torchao_tensorwise");
}

void TestScaling::perTensorCurrentHandDerived() {
  QFETCH(QString, name);
  const std::vector<float> x = {0.001f, 0.005f, 0.008f, 0.010f};
  const QuantizedTensor q = quantize(x.data(), 1, 4, Format::E4M3FN(), *scalingPreset(name.toStdString()));
  QCOMPARE(q.quant_scales.size(), size_t(1));
  QCOMPARE_BITS(q.quant_scales[0], 44800.0f);
  QCOMPARE_BITS(q.dequant_scales[0], 1.0f / 44800.0f);
  const std::vector<int> codes = {0x63, 0x76, 0x7B, 0x7E};
  for (int i = 0; i < 4; ++i) QCOMPARE(int(q.codes[static_cast<size_t>(i)]), codes[static_cast<size_t>(i)]);
  const double expect[4] = {44.0 / 44800, 0.005, 352.0 / 44800, 0.01};
  double max_err = 0;
  for (int i = 0; i < 4; ++i) {
    const double d = q.dequantizedAt(0, i);
    QVERIFY2(std::fabs(d - expect[i]) <= 1e-6 * expect[i], qPrintable(QStringLiteral("element %1: %2").arg(i).arg(d)));
    max_err = std::max(max_err, std::fabs(d - static_cast<double>(x[static_cast<size_t>(i)])));
  }
  QVERIFY2(std::fabs(max_err - 1.0 / 7000.0) <= 1e-6 / 7000.0 + 1e-9, qPrintable(QString::number(max_err, 'g', 10)));
  QCOMPARE(q.stats.saturated, int64_t(0));
  QCOMPARE(q.stats.underflow, int64_t(0));
}

// Per-column (torchao rule, float64 division) on [[1,-8],[2,4],[-4,1]]:
// col 0 amax 4 → s = 112; col 1 amax 8 → s = 56.
// 1·112 = 112 = 1.75·2^6 → 0 1101 110 = 0x6E; −8·56 = −448 → 0xFE; −4·112 = −448 → 0xFE.
// torchao_rowwise on the same tensor with contraction axis Cols (per row, pow2):
// row 0 amax 8 → 56 → pow2 32; row 1 amax 4 → 112 → 64; row 2 amax 4 → 64.
void TestScaling::perColumnAndRowwisePow2() {
  const std::vector<float> x = {1, -8, 2, 4, -4, 1};
  const QuantizedTensor c = quantize(x.data(), 3, 2, Format::E4M3FN(), preset("per_column"));
  QCOMPARE(c.block, (ScaleBlock{3, 1}));
  QCOMPARE_BITS(c.quant_scales, (std::vector<float>{112.0f, 56.0f}));
  QCOMPARE(int(c.codes[0]), 0x6E);
  QCOMPARE(int(c.codes[1]), 0xFE);
  QCOMPARE(int(c.codes[4]), 0xFE);
  const QuantizedTensor r = quantize(x.data(), 3, 2, Format::E4M3FN(), preset("torchao_rowwise"), Axis::Cols);
  QCOMPARE(r.block, (ScaleBlock{1, 2}));
  QCOMPARE_BITS(r.quant_scales, (std::vector<float>{32.0f, 64.0f, 64.0f}));
  // Contraction along rows: the same preset gives one scale per column (torchao W dim 0 rule).
  const QuantizedTensor rc = quantize(x.data(), 3, 2, Format::E4M3FN(), preset("torchao_rowwise"), Axis::Rows);
  QCOMPARE(rc.block, (ScaleBlock{3, 1}));
  QCOMPARE_BITS(rc.quant_scales, (std::vector<float>{64.0f, 32.0f})); // 112 → 64, 56 → 32
}

// DeepGEMM 1x128 on a [2, 200] tensor: blocks cols 0..127 and 128..199 (partial, 72 wide).
//   (0,0): 0.5 everywhere, x[0][5] = 7 → sf = 7/448 = 2^-6
//   (0,1): 0.5 everywhere, x[0][150] = 14 → sf = 2^-5
//   (1,0): zeros → amax clamped to 1e-4 → sf = 1e-4f/448 (2.2321428616578487e-07, derived)
//   (1,1): zeros, x[1][199] = 896 → sf = 2
// Codes: 7 · 64 = 448 → 0x7E; 0.5 · 64 = 32 → 0x60; 0.5 · 32 = 16 → 0x58; 896/2 = 448 → 0x7E.
void TestScaling::partialBlocks1x128() {
  std::vector<float> x(400, 0.0f);
  for (int j = 0; j < 200; ++j) x[static_cast<size_t>(j)] = 0.5f;
  x[5] = 7.0f;
  x[150] = 14.0f;
  x[200 + 199] = 896.0f;
  const QuantizedTensor q = quantize(x.data(), 2, 200, Format::E4M3FN(), preset("deepgemm_1x128"));
  QCOMPARE(q.blockRows(), int64_t(2));
  QCOMPARE(q.blockCols(), int64_t(2));
  QCOMPARE_BITS(q.dequant_scales, (std::vector<float>{0.015625f, 0.03125f, 2.2321428616578487e-07f, 2.0f}));
  QCOMPARE(int(q.codes[5]), 0x7E);
  QCOMPARE(int(q.codes[0]), 0x60);
  QCOMPARE(int(q.codes[130]), 0x58);
  QCOMPARE(int(q.codes[399]), 0x7E);
  QCOMPARE(int(q.codes[200]), 0x00);
  QCOMPARE(q.stats.zero_inputs, int64_t(199));
}

// DeepGEMM 128x128 on [200, 200]: tiles (0,0) 128×128, (0,1) 128×72, (1,0) 72×128, (1,1) 72×72.
// One marker per tile sets its amax: 448·2^k for tile k → sf = 2^k; the rest are 1.0 (so the
// all-ones tile with marker 448 has sf 1, and 1 → code 0x38 = 0 0111 000).
void TestScaling::partialBlocks128x128() {
  const int64_t n = 200;
  std::vector<float> x(static_cast<size_t>(n * n), 1.0f);
  x[static_cast<size_t>(10 * n + 10)] = 448.0f;    // tile (0,0): sf 1
  x[static_cast<size_t>(100 * n + 199)] = 896.0f;  // tile (0,1): sf 2
  x[static_cast<size_t>(199 * n + 0)] = 1792.0f;   // tile (1,0): sf 4
  x[static_cast<size_t>(128 * n + 128)] = 3584.0f; // tile (1,1): sf 8
  const QuantizedTensor q = quantize(x.data(), n, n, Format::E4M3FN(), preset("deepgemm_128x128"));
  QCOMPARE(q.block, (ScaleBlock{128, 128}));
  QCOMPARE_BITS(q.dequant_scales, (std::vector<float>{1.0f, 2.0f, 4.0f, 8.0f}));
  QCOMPARE(int(q.codes[0]), 0x38);                                  // 1/1
  QCOMPARE(int(q.codes[static_cast<size_t>(0 * n + 150)]), 0x30);   // 1/2 = 0 0110 000
  QCOMPARE(int(q.codes[static_cast<size_t>(150 * n + 0)]), 0x28);   // 1/4 = 0 0101 000
  QCOMPARE(int(q.codes[static_cast<size_t>(199 * n + 199)]), 0x20); // 1/8 = 0 0100 000
  QCOMPARE(int(q.codes[static_cast<size_t>(128 * n + 128)]), 0x7E);
  // TE block preset: same tiles, pow2 quant multipliers 448/amax = 1, 0.5, 0.25, 0.125.
  const QuantizedTensor t = quantize(x.data(), n, n, Format::E4M3FN(), preset("te_block_128x128"));
  QCOMPARE_BITS(t.quant_scales, (std::vector<float>{1.0f, 0.5f, 0.25f, 0.125f}));
}

// 1x128 blocks for an operand whose contraction axis is Rows (B[K,N]) are 128×1: a [200, 3]
// tensor has a [2, 3] scale grid; rows 0..127 and 128..199 of each column.
void TestScaling::block1DAlongRowsIsColumnBlocks() {
  std::vector<float> x(600, 1.0f);
  x[static_cast<size_t>(5 * 3 + 0)] = 448.0f;    // (0,0) sf 1
  x[static_cast<size_t>(130 * 3 + 0)] = 896.0f;  // (1,0) sf 2
  x[static_cast<size_t>(127 * 3 + 1)] = 1792.0f; // (0,1) sf 4
  x[static_cast<size_t>(199 * 3 + 2)] = 3584.0f; // (1,2) sf 8
  const QuantizedTensor q = quantize(x.data(), 200, 3, Format::E4M3FN(), preset("deepgemm_1x128"), Axis::Rows);
  QCOMPARE(q.block, (ScaleBlock{128, 1}));
  // (0,2): all ones → 1/448 (float32 division); (1,1): 1/448.
  const float one = 1.0f / 448.0f;
  QCOMPARE_BITS(q.dequant_scales, (std::vector<float>{1.0f, 4.0f, one, 2.0f, one, 8.0f}));
  QCOMPARE(int(q.codes[static_cast<size_t>(130 * 3 + 0)]), 0x7E);
  QCOMPARE(int(q.codes[static_cast<size_t>(131 * 3 + 0)]), 0x30); // 1/2
  QCOMPARE(int(q.codes[static_cast<size_t>(0 * 3 + 1)]), 0x28);   // 1/4
}

// Column-shaped blocks (per-column, 128×1, MX 32×1) take a different code path (row buffer of
// per-column scales) than row-shaped ones; on the transposed tensor they must agree bit for bit
// (codes, scales, stats). Random normal data with outliers, zeros, NaN and inf, odd shape.
void TestScaling::columnBlocksMatchRowBlocksOnTranspose_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<QString>("format");
  for (const char* n : {"per_row", "torchao_rowwise", "deepgemm_1x128", "dsv3_act_quant", "te_block_1x128", "mx_floor",
                        "mx_rceil", "te_current"})
    for (const char* f : {"E4M3FN", "E5M2", "E2M1"})
      QTest::newRow(qPrintable(QStringLiteral("%1_%2").arg(QLatin1String(n), QLatin1String(f))))
          << QString::fromLatin1(n) << QString::fromLatin1(f);
}

void TestScaling::columnBlocksMatchRowBlocksOnTranspose() {
  QFETCH(QString, name);
  QFETCH(QString, format);
  const Format& fmt = *Format::byName(format.toStdString());
  const int64_t R = 300, C = 77; // not multiples of 32 or 128
  std::vector<float> x(static_cast<size_t>(R * C)), xt(x.size());
  uint64_t st = 12345;
  for (auto& v : x) { // xorshift → roughly uniform in [-4, 4), a few large outliers
    st ^= st << 13;
    st ^= st >> 7;
    st ^= st << 17;
    v = static_cast<float>(static_cast<int64_t>(st % 8000) - 4000) / 1000.0f;
    if (st % 97 == 0) v *= 1000.0f;
    if (st % 89 == 0) v = 0.0f;
  }
  x[17] = kNaN;
  x[1000] = kInf;
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) xt[static_cast<size_t>(j * R + i)] = x[static_cast<size_t>(i * C + j)];
  const ScalingConfig c = preset(qPrintable(name));
  const QuantizedTensor a = quantize(x.data(), R, C, fmt, c, Axis::Cols); // row-shaped blocks
  // per_row has a fixed orientation: its transpose partner is per_column.
  const ScalingConfig ct = name == QStringLiteral("per_row") ? preset("per_column") : c;
  const QuantizedTensor b = quantize(xt.data(), C, R, fmt, ct, Axis::Rows); // column-shaped blocks
  QCOMPARE(b.block.rows, a.block.cols);
  QCOMPARE(b.block.cols, a.block.rows);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j)
      QCOMPARE(int(b.codes[static_cast<size_t>(j * R + i)]), int(a.codes[static_cast<size_t>(i * C + j)]));
  const int64_t gr = a.blockRows(), gc = a.blockCols();
  for (int64_t i = 0; i < gr; ++i)
    for (int64_t j = 0; j < gc; ++j) {
      const size_t ka = static_cast<size_t>(i * gc + j), kb = static_cast<size_t>(j * gr + i);
      QCOMPARE_BITS(b.dequant_scales[kb], a.dequant_scales[ka]);
      QCOMPARE_BITS(b.quant_scales[kb], a.quant_scales[ka]);
      if (!a.scale_codes.empty()) QCOMPARE(a.scale_codes[ka], b.scale_codes[kb]);
    }
  QCOMPARE(a.stats.saturated, b.stats.saturated);
  QCOMPARE(a.stats.underflow, b.stats.underflow);
  QCOMPARE(a.stats.subnormal, b.stats.subnormal);
  QCOMPARE(a.stats.nan_inputs, int64_t(1));
  QCOMPARE(b.stats.inf_inputs, int64_t(1));
}

// Stats with a fixed scale 1 in E4M3FN: 0 (zero), 1e-10 (underflow: below half of 2^-9),
// NaN, ±inf, 1000 (> 448: saturated), 0.00390625 = 2^-8 (subnormal: below 2^-6).
void TestScaling::statsCounts() {
  const std::vector<float> x = {0.0f, 1e-10f, kNaN, kInf, -kInf, 1000.0f, 0.00390625f, 1.0f};
  const QuantizedTensor q =
      quantizeWithScale(x.data(), 1, 8, Format::E4M3FN(), BlockScale{1.0f, 1.0f, -1}, Format::ScaleOp::Multiply);
  QCOMPARE(q.stats.elements, int64_t(8));
  QCOMPARE(q.stats.zero_inputs, int64_t(1));
  QCOMPARE(q.stats.underflow, int64_t(1));
  QCOMPARE(q.stats.nan_inputs, int64_t(1));
  QCOMPARE(q.stats.inf_inputs, int64_t(2));
  QCOMPARE(q.stats.saturated, int64_t(1));
  QCOMPARE(q.stats.subnormal, int64_t(1));
  QCOMPARE(int(q.codes[5]), 0x7E);
  QCOMPARE(int(q.codes[2]), 0x7F);
}

// count_stats = false: the same codes, scales and E8M0 codes as with the statistics, whose counts
// all stay 0 (the eight elements of statsCounts' vector, repeated to 200 columns so that wide,
// narrow and per-tensor blocks each cover it; with the statistics it has underflow, NaN and
// saturated elements to count).
void TestScaling::statsSkippedLeavesCodesAndScales() {
  const std::vector<float> base = {0.0f, 1e-10f, kNaN, kInf, -kInf, 1000.0f, 0.00390625f, 1.0f};
  std::vector<float> x(3 * 200);
  for (size_t i = 0; i < x.size(); ++i) x[i] = base[i % base.size()] * float(1 + int(i % 7));
  for (const char* n : {"te_current", "te_block_1x128", "mx_rceil", "per_column"})
    for (Axis ax : {Axis::Cols, Axis::Rows}) {
      ScalingConfig with = *scalingPreset(n), without = with;
      without.count_stats = false;
      const QuantizedTensor a = quantize(x.data(), 3, 200, Format::E4M3FN(), with, ax);
      const QuantizedTensor b = quantize(x.data(), 3, 200, Format::E4M3FN(), without, ax);
      QVERIFY(a.codes == b.codes);
      QVERIFY(a.scale_codes == b.scale_codes);
      QCOMPARE(a.dequant_scales.size(), b.dequant_scales.size());
      for (size_t k = 0; k < a.dequant_scales.size(); ++k) {
        QCOMPARE(std::bit_cast<uint32_t>(a.dequant_scales[k]), std::bit_cast<uint32_t>(b.dequant_scales[k]));
        QCOMPARE(std::bit_cast<uint32_t>(a.quant_scales[k]), std::bit_cast<uint32_t>(b.quant_scales[k]));
      }
      QCOMPARE(a.stats.elements, int64_t(600));
      QVERIFY(a.stats.nan_inputs > 0);
      const QuantizeStats& z = b.stats;
      QCOMPARE(z.elements + z.saturated + z.underflow + z.subnormal + z.nan_inputs + z.inf_inputs + z.zero_inputs,
               int64_t(0));
    }
}

// The result (codes, scales, stats) is the same for 1 and 5 worker threads on a tensor large
// enough to be split (1000×700 = 700 K elements), for wide, narrow and 2-D blocks.
void TestScaling::threadsDoNotChangeResults() {
  const int64_t R = 1000, C = 700;
  std::vector<float> x(static_cast<size_t>(R * C));
  uint64_t st = 777;
  for (auto& v : x) {
    st ^= st << 13;
    st ^= st >> 7;
    st ^= st << 17;
    v = static_cast<float>(static_cast<int64_t>(st % 2000001) - 1000000) * 1e-4f;
  }
  x[123456] = kNaN;
  for (const char* n :
       {"te_current", "torchao_tensorwise", "per_column", "deepgemm_1x128", "deepgemm_128x128", "mx_floor"})
    for (Axis ax : {Axis::Cols, Axis::Rows}) {
      ScalingConfig c = preset(n);
      c.threads = 1;
      const QuantizedTensor a = quantize(x.data(), R, C, Format::E4M3FN(), c, ax);
      c.threads = 5;
      const QuantizedTensor b = quantize(x.data(), R, C, Format::E4M3FN(), c, ax);
      QVERIFY2(a.codes == b.codes, n);
      QCOMPARE_BITS(b.quant_scales, a.quant_scales);
      QCOMPARE_BITS(b.dequant_scales, a.dequant_scales);
      QVERIFY(a.scale_codes == b.scale_codes);
      QCOMPARE(a.stats.saturated, b.stats.saturated);
      QCOMPARE(a.stats.subnormal, b.stats.subnormal);
      QCOMPARE(a.stats.underflow, b.stats.underflow);
      QCOMPARE(b.stats.elements, R * C);
      QCOMPARE(b.stats.nan_inputs, int64_t(1));
    }
}

// Every preset on all-zero, all-NaN, all-inf and mixed tensors: no throw, sizes right, and the
// documented edge values (docs/scaling.md "edge rules").
void TestScaling::edgeTensorsNeverCrash() {
  const std::vector<std::vector<float>> inputs = {std::vector<float>(256, 0.0f), std::vector<float>(256, kNaN),
                                                  std::vector<float>(256, kInf), [] {
                                                    std::vector<float> v(256, 1.0f);
                                                    v[3] = kNaN;
                                                    v[77] = -kInf;
                                                    return v;
                                                  }()};
  for (const auto& p : scalingPresets()) {
    if (p.delayed) continue;
    const ScalingConfig c = *scalingPreset(p.name);
    for (const auto& x : inputs) {
      const QuantizedTensor q = quantize(x.data(), 2, 128, Format::E4M3FN(), c);
      QCOMPARE(q.codes.size(), size_t(256));
      QCOMPARE(q.dequant_scales.size(), size_t(q.blockRows() * q.blockCols()));
      QCOMPARE(q.stats.elements, int64_t(256));
    }
  }
  const std::vector<float> z(256, 0.0f);
  QCOMPARE_BITS(quantize(z.data(), 2, 128, Format::E4M3FN(), preset("te_current")).quant_scales[0], 1.0f);
  QCOMPARE_BITS(quantize(z.data(), 2, 128, Format::E4M3FN(), preset("torchao_tensorwise")).quant_scales[0],
                static_cast<float>(4.48e14));
  const std::vector<float> nan(256, kNaN);
  QCOMPARE_BITS(quantize(nan.data(), 2, 128, Format::E4M3FN(), preset("te_current")).quant_scales[0],
                1.0f); // NaNs skipped → amax 0
  QVERIFY(std::isnan(quantize(nan.data(), 2, 128, Format::E4M3FN(), preset("torchao_tensorwise")).quant_scales[0]));
  const std::vector<float> inf(256, kInf);
  QCOMPARE_BITS(quantize(inf.data(), 2, 128, Format::E4M3FN(), preset("te_current")).quant_scales[0], 1.0f);
  QCOMPARE_BITS(quantize(inf.data(), 2, 128, Format::E4M3FN(), preset("torchao_tensorwise")).quant_scales[0], 0.0f);
  // Empty tensors are fine too.
  const QuantizedTensor e = quantize(static_cast<const float*>(nullptr), 0, 5, Format::E4M3FN(), preset("te_current"));
  QVERIFY(e.codes.empty());
}

// float64 inputs are encoded from float64: 1.0625 + 2^-40 is just above the midpoint of 1 and
// 1.125 (E4M3FN spacing 1/8 in [1,2)) → 1.125 = 0 0111 001 = 0x39; through float32 it would be
// the tie 1.0625 → even → 1.0 = 0x38.
void TestScaling::doubleInputSingleRounding() {
  const std::vector<double> xd = {1.0625 + std::ldexp(1.0, -40), 448.0};
  const QuantizedTensor d = quantize(xd.data(), 1, 2, Format::E4M3FN(), preset("te_current"));
  QCOMPARE_BITS(d.quant_scales[0], 1.0f); // 448/448
  QCOMPARE(int(d.codes[0]), 0x39);
  const std::vector<float> xf = {static_cast<float>(xd[0]), 448.0f};
  const QuantizedTensor f = quantize(xf.data(), 1, 2, Format::E4M3FN(), preset("te_current"));
  QCOMPARE(int(f.codes[0]), 0x38);
}

// DeepSeek-V3 act_quant divides by sf: 0.3 with sf = 3/448 (amax 3): 0.3f / 0.0066964286f
// = 44.8000... → 44 = 0x63; the multiply variant gives the same code here. Check the op is
// recorded and the scale layout matches deepgemm_1x128.
void TestScaling::divideOpPreset() {
  const std::vector<float> x = {0.3f, 3.0f};
  const QuantizedTensor q = quantize(x.data(), 1, 2, Format::E4M3FN(), preset("dsv3_act_quant"));
  QVERIFY(q.scale_op == Format::ScaleOp::Divide);
  QCOMPARE_BITS(q.dequant_scales[0], 3.0f / 448.0f);
  QCOMPARE(int(q.codes[0]), 0x63);
  QCOMPARE(int(q.codes[1]), 0x7E);
}

void TestScaling::presetsListed() {
  QVERIFY(scalingPresets().size() >= 18);
  for (const char* n : {"te_current", "torchao_tensorwise", "torchao_rowwise", "deepgemm_1x128", "deepgemm_128x128",
                        "te_block_1x128", "te_block_128x128", "mx_floor", "mx_rceil", "per_row", "per_column"})
    QVERIFY2(scalingPreset(n).has_value(), n);
  QVERIFY(scalingPreset("TE-Current").has_value());
  QVERIFY(!scalingPreset("flax_delayed").has_value()); // delayed: DelayedScaling
  QVERIFY(!scalingPreset("nonsense").has_value());
  QCOMPARE(preset("mx_floor").block, int64_t(32));
  QVERIFY(preset("te_block_1x128").pow2);
  // The checked lookup for names the code gives: the same config, or an error naming the name.
  QCOMPARE(requireScalingPreset("TE-Current").name, std::string("te_current"));
  for (const char* bad : {"flax_delayed", "nonsense"}) {
    try {
      (void)requireScalingPreset(bad);
      QFAIL("requireScalingPreset accepted a name that is not a current-scaling preset");
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      QVERIFY2(what.rfind("'" + std::string(bad) + "' is not a current-scaling preset (", 0) == 0, e.what());
      QVERIFY2(what.find("te_current") != std::string::npos, e.what());
    }
  }
}

void TestScaling::badInput() {
  const std::vector<float> x(4, 1.0f);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, quantize(x.data(), -1, 4, Format::E4M3FN(), preset("te_current")));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           quantize(static_cast<const float*>(nullptr), 1, 4, Format::E4M3FN(), preset("te_current")));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, quantize(x.data(), 1, 4, Format::BF16(), preset("te_current")));
  ScalingConfig c = preset("deepgemm_1x128");
  c.block = 0;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, quantize(x.data(), 1, 4, Format::E4M3FN(), c));
  // Cancellation through the progress callback.
  std::vector<float> big(1 << 16, 1.0f);
  QVERIFY_THROWS_EXCEPTION(Cancelled, quantize(big.data(), 256, 256, Format::E4M3FN(), preset("per_row"), Axis::Cols,
                                               [](double, const std::string&) { return false; }));
}

// QuantizedTensor::dequantize() is, element by element, float32(decode(code) · dequantScaleAt(i, j))
// computed in double (quantized_tensor.h): checked on block grids with partial edge blocks
// (7 × 50 codes in 3 × 16 blocks), per row, per tensor, per column, and two-level (TeAmax) tensors
// whose block factor is f32(f32(s · amax) · f32(1 / 2688)); the expected values are formed here
// from Format::decode and that rule, one element at a time.
void TestScaling::dequantizeIsDecodeTimesTheBlockFactor() {
  const Format& f = Format::E4M3FN();
  for (const ScaleBlock blk : {ScaleBlock{3, 16}, ScaleBlock{1, 50}, ScaleBlock{7, 50}, ScaleBlock{7, 1}})
    for (const bool two_level : {false, true}) {
      QuantizedTensor q;
      q.rows = 7;
      q.cols = 50;
      q.format = &f;
      q.block = blk;
      for (int64_t i = 0; i < q.rows * q.cols; ++i) q.codes.push_back(uint8_t((i * 37 + 11) % 0x7f));
      for (int64_t b = 0; b < q.blockRows() * q.blockCols(); ++b) q.dequant_scales.push_back(0.3f + 0.01f * float(b));
      if (two_level) {
        q.tensor_scale.kind = TensorScale::Kind::TeAmax;
        q.tensor_scale.amax = 3.7f;
      }
      const std::vector<float> d = q.dequantize();
      QCOMPARE(d.size(), size_t(350));
      for (int64_t i = 0; i < q.rows; ++i)
        for (int64_t j = 0; j < q.cols; ++j) {
          const float s = q.dequant_scales[size_t((i / blk.rows) * q.blockCols() + j / blk.cols)];
          const float fac = two_level ? (s * 3.7f) * (1.0f / 2688.0f) : s;
          const float want = float(f.decode(q.codes[size_t(i * q.cols + j)]) * double(fac));
          QCOMPARE_BITS(d[size_t(i * q.cols + j)], want);
        }
    }
}

// out[j, i] = in[i, j] for every byte, for shapes with and without whole 16 × 16 register blocks
// and 64 × 64 cache tiles (the code of element (i, j) is (7·i + 13·j) mod 256: every position of
// a block holds a different byte).
void TestScaling::transposeCodesIsAnExactTranspose() {
  for (int64_t rows : {1, 15, 16, 17, 64, 100, 1024})
    for (int64_t cols : {1, 16, 31, 48, 65, 256}) {
      std::vector<uint8_t> in(static_cast<size_t>(rows * cols)), out(in.size(), 0);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) in[static_cast<size_t>(i * cols + j)] = uint8_t((7 * i + 13 * j) % 256);
      transposeCodes(in.data(), out.data(), rows, cols);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          if (out[static_cast<size_t>(j * rows + i)] != uint8_t((7 * i + 13 * j) % 256))
            QFAIL(
                qPrintable(QStringLiteral("%1 × %2: out[%3, %4] is not in[%4, %3]").arg(rows).arg(cols).arg(j).arg(i)));
    }
}

QTEST_APPLESS_MAIN(TestScaling)
#include "test_scaling.moc"

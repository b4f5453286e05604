// FP8 Lab — the kernel check (core/gemm/kernel_check.h): ULP distances from the formats' bit
// layouts, the element-by-element comparison, the CI verdict, the fit of the accumulation models,
// and the two bad kernels an SQNR cannot tell apart (one wrong block scale, float16 accumulation)
// told apart by their counts.
#include <QtTest>

#include "compare_bits.h"

#include "formats/format.h"
#include "gemm/gemm.h"
#include "gemm/accumulation_preset.h"
#include "gemm/kernel_check.h"
#include "gemm/random_matrix.h"
#include "scaling/scaling.h"

#include <cmath>

using namespace fp8lab;

namespace {

/// A and B quantized with presets (A along K = its columns, B along K = its rows).
std::pair<QuantizedTensor, QuantizedTensor> operands(int64_t m, int64_t k, int64_t n, const char* pa, const char* pb,
                                                     uint64_t seed) {
  const std::vector<float> xa = randomMatrix(m, k, seed, {}, 1), xb = randomMatrix(k, n, seed, {}, 2);
  return {quantize(xa.data(), m, k, Format::E4M3FN(), *scalingPreset(pa), Axis::Cols),
          quantize(xb.data(), k, n, Format::E4M3FN(), *scalingPreset(pb), Axis::Rows)};
}

ObservedOutput observedOf(const GemmOutput& o) {
  ObservedOutput obs;
  obs.rows = o.m;
  obs.cols = o.n;
  obs.values = o.d;
  obs.codes = o.d_codes;
  obs.origin = "test";
  return obs;
}

GemmOptions modelOptions(Accumulation acc, int nc = 128, int bits = 14, int group = 32, bool promotes = true) {
  GemmOptions o;
  o.accumulation = acc;
  o.promotion_interval = nc;
  o.fast_accum_bits = bits;
  o.fast_accum_group = group;
  o.fast_accum_promotes = promotes;
  return o;
}

float fp16(double x) {
  const Format& f = Format::FP16();
  return static_cast<float>(f.decode(f.encode(x)));
}

} // namespace

class TestKernelCheck : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void ulpDistanceFromTheBitLayouts();
  void outputCodes();
  void histogramBins();
  void intLists();
  void oneUlpOffIsFoundAtItsElement();
  void fp8OutputCodesCompared();
  void nanMismatchFailsWhateverTheUlpBound();
  void wrongBlockScaleAndFloat16AccumulationToldApart();
  void precisionBugsGetTheirOwnAdvice();
  void calcDiffPassesWhatUlpsTellApart();
  void fitRecoversTheModel_data();
  void fitRecoversTheModel();
  void shapeMismatchNamesBothShapes();
};

// Hand values from the bit layouts (IEEE 754 binary32 / binary16 / bfloat16, OCP OFP8 E4M3FN):
// ord(c) = magnitude bits, negated for a set sign bit; distance = |ord(a) − ord(b)|.
void TestKernelCheck::ulpDistanceFromTheBitLayouts() {
  QCOMPARE(ulpDistance(0x3F800000u, 0x3F800001u, 32), int64_t(1));       // 1.0f and its successor
  QCOMPARE(ulpDistance(0x00000000u, 0x80000000u, 32), int64_t(0));       // +0 and −0
  QCOMPARE(ulpDistance(0x00000001u, 0x80000001u, 32), int64_t(2));       // ± the smallest subnormal
  QCOMPARE(ulpDistance(0x3F800000u, 0x40000000u, 32), int64_t(1) << 23); // 1.0f to 2.0f: one binade
  QCOMPARE(ulpDistance(0x3F80u, 0xBF80u, 16), int64_t(2 * 0x3F80));      // bf16 1.0 and −1.0
  QCOMPARE(ulpDistance(0x38u, 0x40u, 8), int64_t(8)); // E4M3FN 1.0 to 2.0: 8 values (3 mantissa bits)
}

void TestKernelCheck::outputCodes() {
  int bits = 0;
  QCOMPARE(outputCode(OutputType::BF16, 1.0f, 1.0f, &bits).value_or(0), 0x3F80u);
  QCOMPARE(bits, 16);
  QVERIFY(!outputCode(OutputType::BF16, 1.0f + 0x1p-23f, 1.0f));               // 24 significant bits: not a bf16 value
  QCOMPARE(outputCode(OutputType::FP16, 65504.0f, 1.0f).value_or(0), 0x7BFFu); // fp16 max finite
  QVERIFY(!outputCode(OutputType::FP16, 1.0f + 0x1p-12f, 1.0f));
  // E4M3FN with scale_D: the value is decode(code) / scale_D; 448 · 0.5 → 224 is code 0x7E (448).
  QCOMPARE(outputCode(OutputType::E4M3FN, 224.0f, 2.0f, &bits).value_or(0), 0x7Eu);
  QCOMPARE(bits, 8);
  QVERIFY(!outputCode(OutputType::E4M3FN, 225.0f, 2.0f));
  QVERIFY(!outputCode(OutputType::FP32, std::nanf(""), 1.0f));
}

// Bin 0: 0 ULP; 1: (0, 1]; 2: (1, 2]; b ≥ 2: (2^(b−2), 2^(b−1)].
void TestKernelCheck::histogramBins() {
  QCOMPARE(ulpHistogramBin(0), 0);
  QCOMPARE(ulpHistogramBin(0.25), 1);
  QCOMPARE(ulpHistogramBin(1), 1);
  QCOMPARE(ulpHistogramBin(2), 2);
  QCOMPARE(ulpHistogramBin(3), 3);
  QCOMPARE(ulpHistogramBin(4), 3);
  QCOMPARE(ulpHistogramBin(5), 4);
  QCOMPARE(ulpHistogramBin(8), 4);
  QCOMPARE(ulpHistogramBin(9), 5);
  QCOMPARE(ulpHistogramLabel(4), std::string("5-8"));
}

void TestKernelCheck::intLists() {
  std::string why;
  QCOMPARE(parseIntList("10..28", 2, 48, &why)->size(), size_t(19));
  QCOMPARE(*parseIntList("64,1,2,2", 1, 64, &why), (std::vector<int>{1, 2, 64}));
  QVERIFY(!parseIntList("5..3", 1, 64, &why));
  QVERIFY(!parseIntList("0", 1, 64, &why));
  QVERIFY2(why.find("outside 1..64") != std::string::npos, why.c_str());
  QVERIFY(!parseIntList("1,x", 1, 64, &why));
}

// A correct kernel's D with one element moved to the next float32 up: found at that element,
// 1 ULP; bit-identity (no criterion) and --max-ulp 0 fail, --max-ulp 1 passes.
void TestKernelCheck::oneUlpOffIsFoundAtItsElement() {
  const auto [a, b] = operands(64, 256, 48, "te_current", "te_current", 7);
  auto cpu = makeCpuGemmBackend();
  const GemmOutput d = cpu->run(a, b, modelOptions(Accumulation::SplitFP32));
  ObservedOutput obs = observedOf(d);
  float& e = obs.values[size_t(5 * 48 + 7)];
  e = std::nextafter(e, INFINITY);
  const OutputComparison c = compareOutputs(obs, d.d, d.d_codes, OutputType::FP32);
  QCOMPARE(c.elements, int64_t(64 * 48));
  QCOMPARE(c.identical, int64_t(64 * 48 - 1));
  QCOMPARE(c.differing, int64_t(1));
  QCOMPARE(c.first.row, int64_t(5));
  QCOMPARE(c.first.col, int64_t(7));
  QCOMPARE(c.worst.row, int64_t(5));
  QCOMPARE(c.worst.col, int64_t(7));
  QCOMPARE(c.max_ulps, 1.0);
  QCOMPARE(c.median_ulps, 0.0);
  QCOMPARE(c.differing_rows, int64_t(1));
  QCOMPARE(c.worst_tile.row, int64_t(0)); // the 128-tile holding (5, 7): the only tile, 64 × 48
  QCOMPARE(c.ulp_histogram[1], int64_t(1));
  CheckCriteria none, zero, one;
  zero.max_ulp = 0;
  one.max_ulp = 1;
  QVERIFY(!judgeOutput(c, none, "split").passed);
  const CheckVerdict v0 = judgeOutput(c, zero, "split");
  QVERIFY(!v0.passed);
  QVERIFY2(v0.line.find("at (5, 7)") != std::string::npos, v0.line.c_str());
  QVERIFY(judgeOutput(c, one, "split").passed);
}

// An FP8 output compared as codes: the observed codes with one code moved up by one.
void TestKernelCheck::fp8OutputCodesCompared() {
  const auto [a, b] = operands(32, 128, 16, "te_current", "te_current", 3);
  GemmOptions o = modelOptions(Accumulation::SplitFP32);
  o.output = OutputType::E4M3FN;
  o.output_quant_scale = 0.25f;
  const GemmOutput d = makeCpuGemmBackend()->run(a, b, o);
  QCOMPARE(d.d_codes.size(), size_t(32 * 16));
  ObservedOutput obs = observedOf(d);
  size_t at = 0;
  while ((obs.codes[at] & 0x7F) >= 0x7E) ++at; // an element whose next code up is finite
  ++obs.codes[at];
  obs.values[at] = static_cast<float>(Format::E4M3FN().decode(obs.codes[at]) * (1.0 / 0.25));
  CompareOptions co;
  co.output_quant_scale = 0.25f;
  const OutputComparison c = compareOutputs(obs, d.d, d.d_codes, OutputType::E4M3FN, co);
  QCOMPARE(c.differing, int64_t(1));
  QCOMPARE(c.max_ulps, 1.0);
  QCOMPARE(c.first.row * 16 + c.first.col, int64_t(at));
}

void TestKernelCheck::nanMismatchFailsWhateverTheUlpBound() {
  const auto [a, b] = operands(16, 64, 16, "te_current", "te_current", 5);
  const GemmOutput d = makeCpuGemmBackend()->run(a, b, modelOptions(Accumulation::Exact));
  ObservedOutput obs = observedOf(d);
  obs.values[3] = std::nanf("");
  const OutputComparison c = compareOutputs(obs, d.d, d.d_codes, OutputType::FP32);
  QCOMPARE(c.nan_mismatches, int64_t(1));
  QCOMPARE(c.observed_nan, int64_t(1));
  QCOMPARE(c.worst.col, int64_t(3));
  CheckCriteria k;
  k.max_ulp = 1e9;
  k.allow_nonfinite = true; // allows NaN where the reference has NaN, not a mismatch
  const CheckVerdict v = judgeOutput(c, k, "exact");
  QVERIFY(!v.passed);
  QVERIFY2(v.line.find("1 NaN and 0 Inf mismatches") != std::string::npos, v.line.c_str());
}

// DeepSeek-V3's recipe (A 1x128, B 128x128 block scales, split accumulation N_C = 128). Two bad
// kernels: (1) A's scale of row 5, K block 1 doubled: that block enters only row 5 of D, and its
// partial sum is non-zero for every column (random data), so exactly the N = 128 outputs of row
// 5 differ; (2) every product rounded to float16 and summed in float16: nearly every output
// differs, in every row. Their SQNRs are both tens of dB; their counts tell them apart.
void TestKernelCheck::wrongBlockScaleAndFloat16AccumulationToldApart() {
  const int64_t M = 128, K = 256, N = 128;
  const auto [a, b] = operands(M, K, N, "deepgemm_1x128", "deepgemm_128x128", 11);
  QCOMPARE(a.block, (ScaleBlock{1, 128}));
  auto cpu = makeCpuGemmBackend();
  const GemmOptions split = modelOptions(Accumulation::SplitFP32);
  const GemmOutput good = cpu->run(a, b, split);

  QuantizedTensor a_bad = a;
  a_bad.dequant_scales[size_t(5 * a.blockCols() + 1)] *= 2.0f;
  const GemmOutput wrong = cpu->run(a_bad, b, split);
  const OutputComparison cw = compareOutputs(observedOf(wrong), good.d, {}, OutputType::FP32);
  QCOMPARE(cw.differing, N);
  QCOMPARE(cw.differing_rows, int64_t(1));
  QCOMPARE(cw.differing_cols, N);
  QCOMPARE(cw.first.row, int64_t(5));

  // The float16 kernel, written here: dequantized operands, products and sums rounded to fp16.
  ObservedOutput f16;
  f16.rows = M;
  f16.cols = N;
  f16.values.resize(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc = fp16(double(acc) + double(fp16(a.dequantizedAt(i, k) * b.dequantizedAt(k, j))));
      f16.values[size_t(i * N + j)] = acc;
    }
  const OutputComparison ch = compareOutputs(f16, good.d, {}, OutputType::FP32);
  QVERIFY2(ch.differing > M * N * 9 / 10, std::to_string(ch.differing).c_str());
  QCOMPARE(ch.differing_rows, M);
  QVERIFY2(cw.sqnr_db < 80 && ch.sqnr_db < 80, (std::to_string(cw.sqnr_db) + " " + std::to_string(ch.sqnr_db)).c_str());

  // Neither is explained by any model within 1 ULP; the warning names where to look.
  FitOptions fo;
  fo.grid.bits = {13, 14, 15};
  fo.grid.groups = {32};
  const FitResult fw = fitAccumulation(a, b, split, observedOf(wrong), fo);
  qInfo("wrong scale: SQNR %.1f dB, %lld differ; float16: SQNR %.1f dB, %lld differ; fit: %s | %s", cw.sqnr_db,
        static_cast<long long>(cw.differing), ch.sqnr_db, static_cast<long long>(ch.differing), fw.verdict.c_str(),
        fw.warning.c_str());
  QVERIFY(!fw.explained_within_1ulp);
  QVERIFY2(fw.warning.find("1 rows") != std::string::npos, fw.warning.c_str());
  QVERIFY2(fw.warning.find("sit in 1 of 128 rows and 128 of 128 columns: look for a wrong scale") != std::string::npos,
           fw.warning.c_str());
  QCOMPARE(fw.best.comparison.differing, N); // split N_C = 128 matches all of D but row 5
  // The float16 kernel's values are all FP16 values: the advice says so instead of blaming scales.
  const FitResult fh = fitAccumulation(a, b, split, f16, fo);
  QVERIFY(!fh.explained_within_1ulp);
  QVERIFY2(fh.warning.find("every value is an FP16 value") != std::string::npos &&
               fh.warning.find("accumulated in float16") != std::string::npos,
           fh.warning.c_str());
}

// Precision bugs a kernel developer meets, each with the advice its evidence supports, on
// DeepGEMM-style operands (1x128 / 128x128 scales), checked as FP32 against split N_C = 128:
// (1) a BF16 D written into an FP32 buffer: every value is a BF16 value → "pass --output bf16";
// declared --output bf16, the same values pass; float32 values declared BF16 fail (a value of no
// BF16 code is not a BF16 output whatever its ULP distance).
// (2) operands dequantized to float32 first, then a float32 GEMM (scales applied before the sum,
// not per window): a few ULPs everywhere → "spread … scales to the operands before an FP32 GEMM".
void TestKernelCheck::precisionBugsGetTheirOwnAdvice() {
  const int64_t M = 64, K = 512, N = 64;
  const auto [a, b] = operands(M, K, N, "deepgemm_1x128", "deepgemm_128x128", 7);
  auto cpu = makeCpuGemmBackend();
  const GemmOptions split = modelOptions(Accumulation::SplitFP32);
  const GemmOutput good = cpu->run(a, b, split);
  FitOptions fo;
  fo.grid.bits = {13, 14};
  fo.grid.groups = {32};
  ObservedOutput bf = observedOf(good);
  for (float& v : bf.values) v = float(Format::BF16().decode(Format::BF16().encode(v)));
  const FitResult fb = fitAccumulation(a, b, split, bf, fo);
  QVERIFY2(fb.warning.find("every value is a BF16 value: the kernel wrote BF16 — pass --output bf16") !=
               std::string::npos,
           fb.warning.c_str());
  GemmOptions as_bf16 = split;
  as_bf16.output = OutputType::BF16;
  const GemmOutput good_bf16 = cpu->run(a, b, as_bf16);
  QVERIFY(judgeOutput(compareOutputs(bf, good_bf16.d, {}, OutputType::BF16), {}, "split").passed);
  CheckCriteria loose;
  loose.max_ulp = 1;
  const CheckVerdict v =
      judgeOutput(compareOutputs(observedOf(good), good_bf16.d, {}, OutputType::BF16), loose, "split");
  QVERIFY(!v.passed);
  QVERIFY2(v.line.find("finite observed values are not bf16 values") != std::string::npos &&
               v.line.find("(a float32 D: pass --output fp32)") != std::string::npos,
           v.line.c_str());

  ObservedOutput deq = observedOf(good);
  const std::vector<float> da = a.dequantize(), db = b.dequantize();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k) acc = std::fma(da[size_t(i * K + k)], db[size_t(k * N + j)], acc);
      deq.values[size_t(i * N + j)] = acc;
    }
  const FitResult fd = fitAccumulation(a, b, split, deq, fo);
  qInfo("dequantize-then-FP32: %s | %s", fd.verdict.c_str(), fd.warning.c_str());
  QVERIFY(!fd.explained_within_1ulp);
  QVERIFY2(fd.warning.find("spread over every row and column") != std::string::npos &&
               fd.warning.find("applies the scales to the operands before an FP32 GEMM") != std::string::npos,
           fd.warning.c_str());
}

// DeepGEMM's calc_diff, 1 − 2Σxy / Σ(x² + y²) in float64, beside the ULP figures: a 13-bit and a
// 25-bit accumulator (the prose model at 14 and 26 bits, K = 4096, N(0,1) data) both pass its
// < 1e-3 bar against the exact sum, while the ULP counts tell them far apart. By hand: x = (1, 2),
// y = (1, 2) → 1 − 2·5/10 = 0; x = (1, 0), y = (0, 1) → 1 − 0/2 = 1. A NaN against a finite
// value makes calc_diff, max ULP and SQNR NaN.
void TestKernelCheck::calcDiffPassesWhatUlpsTellApart() {
  ObservedOutput o;
  o.rows = 1;
  o.cols = 2;
  o.values = {1, 2};
  QCOMPARE(compareOutputs(o, {1, 2}, {}, OutputType::FP32).calc_diff, 0.0);
  o.values = {1, 0};
  QCOMPARE(compareOutputs(o, {0, 1}, {}, OutputType::FP32).calc_diff, 1.0);
  o.values = {std::nanf(""), 2};
  const OutputComparison n = compareOutputs(o, {1, 2}, {}, OutputType::FP32);
  QVERIFY(std::isnan(n.calc_diff) && std::isnan(n.max_ulps) && std::isnan(n.sqnr_db));

  const int64_t M = 32, K = 4096, N = 32;
  const auto [a, b] = operands(M, K, N, "te_current", "te_current", 5);
  auto cpu = makeCpuGemmBackend();
  const GemmOutput exact = cpu->run(a, b, modelOptions(Accumulation::Exact));
  const GemmOutput b13 = cpu->run(a, b, modelOptions(Accumulation::FastAccum, 128, 14, 32, false));
  const GemmOutput b25 = cpu->run(a, b, modelOptions(Accumulation::FastAccum, 128, 26, 32, false));
  const OutputComparison c13 = compareOutputs(observedOf(b13), exact.d, {}, OutputType::FP32);
  const OutputComparison c25 = compareOutputs(observedOf(b25), exact.d, {}, OutputType::FP32);
  qInfo("calc_diff 13-bit %.3g, 25-bit %.3g; median ULP %.0f vs %.0f; max %.0f vs %.0f", c13.calc_diff, c25.calc_diff,
        c13.median_ulps, c25.median_ulps, c13.max_ulps, c25.max_ulps);
  QVERIFY(c13.calc_diff < 1e-3 && c25.calc_diff < 1e-3);
  QVERIFY(c13.median_ulps > 100 * std::max(1.0, c25.median_ulps));
  CheckCriteria k;
  k.max_ulp = 4;
  QVERIFY(!judgeOutput(c13, k, "exact").passed);
}

void TestKernelCheck::fitRecoversTheModel_data() {
  QTest::addColumn<int>("acc");
  QTest::addColumn<int>("nc");
  QTest::addColumn<int>("bits");
  QTest::addColumn<int>("group");
  QTest::addColumn<bool>("promotes");
  QTest::addColumn<QString>("preset"); // an accumulation preset's parameters instead of the columns
  const QString none;
  QTest::newRow("exact") << int(Accumulation::Exact) << 128 << 14 << 32 << true << none;
  QTest::newRow("fp32") << int(Accumulation::FP32) << 128 << 14 << 32 << true << none;
  QTest::newRow("split 128") << int(Accumulation::SplitFP32) << 128 << 14 << 32 << true << none;
  QTest::newRow("split 64") << int(Accumulation::SplitFP32) << 64 << 14 << 32 << true << none;
  for (const char* p : {"hopper_fp8", "hopper_fp8_fast_accum", "ada_fp8", "blackwell_fp8"})
    QTest::newRow(p) << 0 << 0 << 0 << 0 << true << QString::fromLatin1(p);
  QTest::newRow("prose 14/32/128") << int(Accumulation::FastAccum) << 128 << 14 << 32 << true << none;
  QTest::newRow("prose fast_accum=1") << int(Accumulation::FastAccum) << 128 << 14 << 32 << false << none;
  QTest::newRow("prose 26/32/128") << int(Accumulation::FastAccum) << 128 << 26 << 32 << true << none;
  QTest::newRow("prose 12/16/64") << int(Accumulation::FastAccum) << 64 << 12 << 16 << true << none;
  QTest::newRow("prose 19/8/none") << int(Accumulation::FastAccum) << 128 << 19 << 8 << false << none;
  QTest::newRow("prose 10/1/256") << int(Accumulation::FastAccum) << 256 << 10 << 1 << true << none;
}

// D made by a model with known parameters on N(0,1) operands (per-tensor TE scaling, K = 512):
// the fit must find a model that reproduces every element, and the generating parameters must be
// that model or one the fit states as giving the same output.
void TestKernelCheck::fitRecoversTheModel() {
  QFETCH(int, acc);
  QFETCH(int, nc);
  QFETCH(int, bits);
  QFETCH(int, group);
  QFETCH(bool, promotes);
  QFETCH(QString, preset);
  const auto [a, b] = operands(48, 512, 40, "te_current", "te_current", 21);
  const GemmOptions gen = preset.isEmpty()
                              ? modelOptions(Accumulation(acc), nc, bits, group, promotes)
                              : withAccumulationPreset(GemmOptions{}, *accumulationPreset(preset.toStdString()));
  const GemmOutput d = makeCpuGemmBackend()->run(a, b, gen);
  const FitResult f = fitAccumulation(a, b, GemmOptions{}, observedOf(d));
  const std::string info = f.verdict + " | equivalent: " + f.equivalent_summary;
  qInfo("%s", info.c_str());
  QVERIFY2(f.best.comparison.identical == f.best.comparison.elements, info.c_str());
  QVERIFY2(f.verdict.rfind("bit-identical to ", 0) == 0, info.c_str());
  AccumulationModel want;
  want.options = gen;
  bool found = f.best.model.key() == want.key();
  for (const auto& m : f.equivalent) found |= m.key() == want.key();
  QVERIFY2(found, (want.key() + " not in: " + info).c_str());
  QVERIFY(f.explained_within_1ulp && f.warning.empty());
  // Every reference model but the two block-scaled tcgen05 kinds, which need MX / NVFP4 block scales.
  size_t nref = 0;
  (void)fitCandidates(FitGrid{}, GemmOptions{}, a, b, &nref);
  QCOMPARE(nref, referenceModels(GemmOptions{}).size() - 2);
  QCOMPARE(f.models.size(), nref);
  QVERIFY(f.candidates > 700); // 19 bits × 7 groups × 6 windows + the rest, duplicates removed
  if (f.has_runner_up) QVERIFY(f.runner_up.comparison.identical < f.best.comparison.identical);
}

void TestKernelCheck::shapeMismatchNamesBothShapes() {
  const auto [a, b] = operands(8, 32, 6, "te_current", "te_current", 2);
  ObservedOutput obs;
  obs.rows = 6;
  obs.cols = 8;
  obs.values.assign(48, 0.0f);
  try {
    (void)checkKernelOutput(a, b, GemmOptions{}, obs);
    QFAIL("no exception");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(std::string(e.what()).find("[6, 8] but D = A·B is [8, 6]") != std::string::npos, e.what());
  }
}

QTEST_APPLESS_MAIN(TestKernelCheck)
#include "test_kernel_check.moc"

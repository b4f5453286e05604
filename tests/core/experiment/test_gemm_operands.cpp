// GEMM runs with NVFP4 operands, Hadamard-rotated operands and pre-quantized operands (codes and
// scales from files): the config keys and their refusals, runs whose D is derived by hand in the
// comments, and a stored config that re-runs bit for bit.
#include <QTemporaryDir>
#include <QtTest>

#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/gemm_run.h"
#include "gemm/error_split.h"
#include "scaling/hadamard.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>

using namespace fp8lab;

namespace {

/// A .npy v1.0 file: magic, version, header length, the dict padded to 64 bytes, raw data.
void writeNpy(const std::string& path, const std::string& descr, const std::string& shape, const std::string& data) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string s = std::string("\x93NUMPY\x01\x00", 8) + char(h.size() & 0xFF) + char(h.size() >> 8) + h + data;
  std::ofstream(path, std::ios::binary) << s;
}

std::string f32Bytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size()); // little-endian host
  return s;
}

std::string bytes(size_t n, uint8_t v) {
  return std::string(n, static_cast<char>(v));
}

/// Parses `json` as a GEMM config; "" or the error.
std::string parse(const std::string& json, GemmExperimentConfig* c) {
  return parseGemmConfig(Json::parse(json), c);
}

Result<Run> runConfig(const GemmExperimentConfig& c) {
  auto be = makeCpuGemmBackend();
  return runGemmExperimentRun(c, gemmConfigJson(c).dump(), "r", *be);
}

float d0(const Run& r) {
  return r.find("output/D")->f32[0];
}

QString q(const std::string& s) {
  return QString::fromStdString(s);
}

uint32_t bits(float x) {
  return std::bit_cast<uint32_t>(x);
}

} // namespace

class TestGemmOperands : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::string path(const char* name) const { return tmp_.filePath(QString::fromLatin1(name)).toStdString(); }

private Q_SLOTS:
  /// An NVFP4 preset makes the formats E2M1 when none is given, keeps its canonical name, and
  /// the stored config parses back to itself.
  void nvfp4ConfigIsCanonical();
  void nvfp4ConfigRefusals_data();
  void nvfp4ConfigRefusals();
  /// A [1,32] · B [32,1] under nvfp4_te, the operands imported from .npy (the derivation of
  /// tests/core/scaling/test_nvfp4_operands.cpp): A = sixteen 6.0 then sixteen 0.75 → block
  /// scales 448 (0x7E) and 56 (0x66), codes 0x7; B = thirty-two 1.0 → scales 0x7E, codes 0x7.
  /// Partial sums 16·36·448·448 = 115605504 and 16·36·56·448 = 14450688, sum 130056192;
  /// D = f32(alpha · 130056192) with TE's alpha = f32(f32(6 · 1) · f32(1/(2688 · 2688))). The
  /// ideal is the float64 product 16·6 + 16·0.75 = 108.
  void nvfp4RunMatchesTheHandDerivation();
  /// A stored NVFP4 config (stochastic rounding, so the seeds matter) re-runs bit for bit from
  /// its canonical JSON, as `fp8lab-cli rerun` does.
  void nvfp4StoredConfigRerunsBitForBit();
  /// R = diag(s)·H16/4 is orthogonal, so rotating each 16-block of A's rows and of B's columns
  /// (both along K, y = x·R) leaves A·B unchanged: on a 5×48 · 48×7 GEMM, the float64 product of
  /// the rotated (fp32, not BF16-rounded, not quantized) operands equals the unrotated one to
  /// float32 rounding of the rotated values (relative 1e-6 of the largest |D|).
  void rotationAlongKLeavesTheProductUnchanged();
  /// nvfp4_te_rht on both operands of a [1,16] · [16,1] GEMM, by hand. Sign mask 0xD7E8 has
  /// s_0 = s_1 = +1; H16[0][j] = 1, H16[1][j] = (−1)^j.
  ///   a = (4, 0, ..., 0): y_j = ¼·4·H16[0][j] = 1 for all j → amax 1, S_enc 2688, block scale
  ///     f32(1 · f32(2688·f32(1/6))) = 448.00003 → 448 (0x7E), codes 1·S_enc_b ≈ 6 → 0x7.
  ///   b = (4, 4, 0, ..., 0): y_j = H16[0][j] + H16[1][j] = 2 (j even), 0 (j odd) → amax 2,
  ///     S_enc 1344, f32(1344·f32(1/6)) = 224, block scale 2·224 = 448 (0x7E); codes 0x7 / 0x0.
  ///   Sum over K: 8 · 6·6 = 288, times the block scales 448·448 → 57802752; TE alpha =
  ///   f32(f32(1 · 2) · f32(1/7225344)); D = f32(alpha · 57802752) ≈ 16 = 4·4, the unrotated
  ///   product, which is the ideal (reference/D) exactly.
  void hadamardRunMatchesTheHandDerivation();
  void hadamardUnderflowCountsTheRotatedTensor();
  /// MX codes and E8M0 scales from files: A [1,32] E4M3FN codes 0x38 (1.0) with E8M0 0x80
  /// (2^(128−127) = 2), B [32,1] codes 0x40 (2.0) with E8M0 0x7E (2^−1): every product is
  /// 2 · 1, D = 32 · 2 = 64 (exact in float32), and the ideal is the same product of the
  /// dequantized operands, so the quantization error is 0.
  void preQuantizedMxRun();
  /// NVFP4 codes with E4M3 block scales and TE's tensor amax: A [1,16] codes 0x7 (6), scale
  /// 0x7E (448), amax 6; B [16,1] codes 0x2 (1.0), scale 0x7E, amax 1. Sum 16 · 6 · 1 · 448 ·
  /// 448 = 19267584; D = f32(f32(f32(6 · 1) · f32(1/7225344)) · 19267584) ≈ 16.
  void preQuantizedNvfp4TeRun();
  /// Float32 scales per row of A and one per tensor of B: A [2,4] codes 0x38 (1.0) in row 0 and
  /// 0x40 (2.0) in row 1, scales [0.5, 3.0] (a 1-D file for the [2,1] grid of block [1,4]); B
  /// [4,1] codes 0x38 with "scales": 0.25. D = [4 · 0.5 · 0.25, 4 · 6 · 0.25] = [0.5, 6].
  void preQuantizedFloatScalesRun();
  void preQuantizedBadInputs_data();
  void preQuantizedBadInputs();
};

// moc does not read raw string literals; it sees only the declarations above.
#ifndef Q_MOC_RUN

/// An NVFP4 preset makes the formats E2M1 when none is given, keeps its canonical name, and
/// the stored config parses back to itself.
void TestGemmOperands::nvfp4ConfigIsCanonical() {
  GemmExperimentConfig c;
  QCOMPARE(parse(R"({"scaling": "NVFP4-TE", "m": 32, "k": 64, "n": 16})", &c), std::string());
  QCOMPARE(c.scaling, std::string("nvfp4_te"));
  QCOMPARE(c.format_a, std::string("E2M1"));
  QCOMPARE(c.format_b, std::string("E2M1"));
  GemmExperimentConfig back;
  QCOMPARE(parseGemmConfig(gemmConfigJson(c), &back), std::string());
  QCOMPARE(gemmConfigJson(back).dump(), gemmConfigJson(c).dump());
}

void TestGemmOperands::nvfp4ConfigRefusals_data() {
  QTest::addColumn<QString>("json");
  QTest::addColumn<QString>("want");
  QTest::newRow("fp8 format beside nvfp4") << q(R"({"scaling": "nvfp4_te", "format_a": "E4M3FN", "k": 32})")
                                           << q("format_a: is 'E4M3FN' beside the NVFP4 preset 'nvfp4_te'");
  QTest::newRow("shared format key") << q(R"({"scaling": "nvfp4_te", "format": "E5M2", "k": 32})")
                                     << q("format: is 'E5M2' beside the NVFP4 preset");
  QTest::newRow("k not a multiple of 16")
      << q(R"({"scaling": "nvfp4_te", "k": 40})") << q("k: NVFP4 blocks hold 16 elements of K; K = 40");
  QTest::newRow("2-D tiles need M") << q(R"({"scaling": "nvfp4_te_2d", "m": 24, "k": 32, "n": 16})")
                                    << q("m: 'nvfp4_te_2d' uses 16×16 tiles on A; M = 24");
  QTest::newRow("nvfp4 x fp8") << q(R"({"scaling": "nvfp4_te", "scaling_b": "te_current", "k": 32})")
                               << q("A is NVFP4 ('nvfp4_te') and B is E4M3FN ('te_current'): no GEMM multiplies");
  QTest::newRow("rht on A only") << q(R"({"scaling": "nvfp4_te_rht", "scaling_b": "nvfp4_te", "k": 32})")
                                 << q("scaling_b: the Hadamard rotation is on A ('nvfp4_te_rht') only");
  QTest::newRow("unknown preset") << q(R"({"scaling": "nvfp4_nope"})") << q("not a current-scaling or NVFP4 preset");
}

void TestGemmOperands::nvfp4ConfigRefusals() {
  QFETCH(QString, json);
  QFETCH(QString, want);
  GemmExperimentConfig c;
  const std::string err = parse(json.toStdString(), &c);
  QVERIFY2(err.find(want.toStdString()) != std::string::npos, err.c_str());
}

/// A [1,32] · B [32,1] under nvfp4_te, the operands imported from .npy (the derivation of
/// tests/core/scaling/test_nvfp4_operands.cpp): A = sixteen 6.0 then sixteen 0.75 → block
/// scales 448 (0x7E) and 56 (0x66), codes 0x7; B = thirty-two 1.0 → scales 0x7E, codes 0x7.
/// Partial sums 16·36·448·448 = 115605504 and 16·36·56·448 = 14450688, sum 130056192;
/// D = f32(alpha · 130056192) with TE's alpha = f32(f32(6 · 1) · f32(1/(2688 · 2688))). The
/// ideal is the float64 product 16·6 + 16·0.75 = 108.
void TestGemmOperands::nvfp4RunMatchesTheHandDerivation() {
  std::vector<float> a(32, 6.0f), b(32, 1.0f);
  for (size_t i = 16; i < 32; ++i) a[i] = 0.75f;
  writeNpy(path("a.npy"), "<f4", "(1, 32)", f32Bytes(a));
  writeNpy(path("b.npy"), "<f4", "(32, 1)", f32Bytes(b));
  GemmExperimentConfig c;
  QCOMPARE(parse(R"({"scaling": "nvfp4_te", "accumulation": "fp32", "a": {"tensor": ")" + path("a.npy") +
                     R"("}, "b": {"tensor": ")" + path("b.npy") + R"("}})",
                 &c),
           std::string());
  auto r = runConfig(c);
  QVERIFY2(r.ok(), r.message().c_str());
  const float alpha = (6.0f * 1.0f) * (1.0f / 7225344.0f);
  QCOMPARE(bits(d0(r.value)), bits(alpha * 130056192.0f));
  QCOMPARE(r.value.find("reference/D")->f64[0], 108.0);
  const Dataset* sc = r.value.find("quantized/A_scale_codes");
  QVERIFY(sc);
  QCOMPARE(sc->u8, (std::vector<uint8_t>{0x7E, 0x66}));
  QCOMPARE(attrString(sc->attrs, "format").value_or(""), std::string("E4M3FN"));
  QCOMPARE(r.value.find("quantized/A_codes")->u8, std::vector<uint8_t>(32, 0x7));
  QCOMPARE(attrString(r.value.find("quantized/B_codes")->attrs, "format").value_or(""), std::string("E2M1"));
  QCOMPARE(attrString(r.value.attrs, "scaling").value_or(""), std::string("nvfp4_te"));
}

/// A stored NVFP4 config (stochastic rounding, so the seeds matter) re-runs bit for bit from
/// its canonical JSON, as `fp8lab-cli rerun` does.
void TestGemmOperands::nvfp4StoredConfigRerunsBitForBit() {
  GemmExperimentConfig c;
  QCOMPARE(parse(R"({"scaling": "nvfp4_te_rht_sr", "m": 24, "k": 48, "n": 20, "seed": 5})", &c), std::string());
  auto first = runConfig(c);
  QVERIFY2(first.ok(), first.message().c_str());
  GemmExperimentConfig again;
  QCOMPARE(parseGemmConfig(Json::parse(first.value.config_json), &again), std::string());
  auto second = runConfig(again);
  QVERIFY2(second.ok(), second.message().c_str());
  int nd = 0;
  const auto diffs = compareRuns(first.value, second.value, &nd);
  QVERIFY2(diffs.empty(), diffs.empty() ? "" : diffs.front().c_str());
  QVERIFY(nd >= 10);
  // A different seed draws other rounding bytes: the codes differ.
  GemmExperimentConfig other = again;
  other.seed = 6;
  auto third = runConfig(other);
  QVERIFY(third.ok());
  QVERIFY(third.value.find("quantized/A_codes")->u8 != first.value.find("quantized/A_codes")->u8);
}

/// R = diag(s)·H16/4 is orthogonal, so rotating each 16-block of A's rows and of B's columns
/// (both along K, y = x·R) leaves A·B unchanged: on a 5×48 · 48×7 GEMM, the float64 product of
/// the rotated (fp32, not BF16-rounded, not quantized) operands equals the unrotated one to
/// float32 rounding of the rotated values (relative 1e-6 of the largest |D|).
void TestGemmOperands::rotationAlongKLeavesTheProductUnchanged() {
  const int64_t M = 5, K = 48, N = 7;
  std::vector<float> a(M * K), b(K * N);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i * 37 % 23) - 11) / 8.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i * 53 % 19) - 9) / 4.0f;
  std::vector<float> ar(a.size()), br(b.size());
  for (int64_t i = 0; i < M; ++i)
    for (int64_t kb = 0; kb < K; kb += 16)
      hadamardTransform16(&a[size_t(i * K + kb)], &ar[size_t(i * K + kb)], kTeRhtSignMask, 1, 1, false);
  for (int64_t kb = 0; kb < K; kb += 16)
    for (int64_t j = 0; j < N; ++j)
      hadamardTransform16(&b[size_t(kb * N + j)], &br[size_t(kb * N + j)], kTeRhtSignMask, N, N, false);
  const std::vector<double> want = idealGemm(a.data(), b.data(), M, K, N, 1);
  const std::vector<double> got = idealGemm(ar.data(), br.data(), M, K, N, 1);
  double scale = 0, worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(want[i]));
    worst = std::max(worst, std::fabs(got[i] - want[i]));
  }
  QVERIFY(scale > 1.0);
  QVERIFY2(worst <= 1e-6 * scale, qPrintable(QString::number(worst)));
}

/// nvfp4_te_rht on both operands of a [1,16] · [16,1] GEMM, by hand. Sign mask 0xD7E8 has
/// s_0 = s_1 = +1; H16[0][j] = 1, H16[1][j] = (−1)^j.
///   a = (4, 0, ..., 0): y_j = ¼·4·H16[0][j] = 1 for all j → amax 1, S_enc 2688, block scale
///     f32(1 · f32(2688·f32(1/6))) = 448.00003 → 448 (0x7E), codes 1·S_enc_b ≈ 6 → 0x7.
///   b = (4, 4, 0, ..., 0): y_j = H16[0][j] + H16[1][j] = 2 (j even), 0 (j odd) → amax 2,
///     S_enc 1344, f32(1344·f32(1/6)) = 224, block scale 2·224 = 448 (0x7E); codes 0x7 / 0x0.
///   Sum over K: 8 · 6·6 = 288, times the block scales 448·448 → 57802752; TE alpha =
///   f32(f32(1 · 2) · f32(1/7225344)); D = f32(alpha · 57802752) ≈ 16 = 4·4, the unrotated
///   product, which is the ideal (reference/D) exactly.
void TestGemmOperands::hadamardRunMatchesTheHandDerivation() {
  std::vector<float> a(16, 0.0f), b(16, 0.0f);
  a[0] = 4.0f;
  b[0] = b[1] = 4.0f;
  writeNpy(path("ra.npy"), "<f4", "(1, 16)", f32Bytes(a));
  writeNpy(path("rb.npy"), "<f4", "(16, 1)", f32Bytes(b));
  GemmExperimentConfig c;
  QCOMPARE(parse(R"({"scaling": "nvfp4_te_rht", "accumulation": "fp32", "a": {"tensor": ")" + path("ra.npy") +
                     R"("}, "b": {"tensor": ")" + path("rb.npy") + R"("}})",
                 &c),
           std::string());
  auto r = runConfig(c);
  QVERIFY2(r.ok(), r.message().c_str());
  QCOMPARE(r.value.find("quantized/A_codes")->u8, std::vector<uint8_t>(16, 0x7));
  std::vector<uint8_t> bc(16, 0x0);
  for (size_t j = 0; j < 16; j += 2) bc[j] = 0x7;
  QCOMPARE(r.value.find("quantized/B_codes")->u8, bc);
  QCOMPARE(r.value.find("quantized/A_scale_codes")->u8, std::vector<uint8_t>{0x7E});
  QCOMPARE(r.value.find("quantized/B_scale_codes")->u8, std::vector<uint8_t>{0x7E});
  const float alpha = (1.0f * 2.0f) * (1.0f / 7225344.0f);
  QCOMPARE(bits(d0(r.value)), bits(alpha * 57802752.0f));
  QCOMPARE(r.value.find("reference/D")->f64[0], 16.0);
  QVERIFY(attrString(r.value.attrs, "rotation").has_value());
  // What was quantized is stored, and each operand's own error is measured against it: the rotated
  // A is sixteen 1.0 and the rotated B is 2, 0, 2, 0, ... (derived above). Its codes decode to
  // 6 · f32(f32(448 · amax) · f32(1/2688)): 6 · f32(448/2688) for A, 6 · f32(896/2688) for B, so the
  // dequantized operands differ from the rotated ones by float32 rounding only (SQNR > 100 dB),
  // where comparing them with the unrotated inputs (4, 0, ...) would give about −3.5 dB.
  const Dataset* ar = r.value.find("quantized/A_rotated");
  const Dataset* br = r.value.find("quantized/B_rotated");
  QVERIFY(ar && br);
  QCOMPARE(ar->f32, std::vector<float>(16, 1.0f));
  std::vector<float> bexp(16, 0.0f);
  for (size_t j = 0; j < 16; j += 2) bexp[j] = 2.0f;
  QCOMPARE(br->f32, bexp);
  const double sa = r.value.metrics.at("a_sqnr_db").value, sb = r.value.metrics.at("b_sqnr_db").value;
  QVERIFY2(sa > 100.0, qPrintable(QString::number(sa)));
  QVERIFY2(sb > 100.0, qPrintable(QString::number(sb)));
}

/// A rotated operand's underflow count is taken on the tensor that was quantized: the non-zero
/// elements of quantized/A_rotated whose E2M1 code is ±0, counted here from the stored datasets.
/// Outliers put small elements beside a large one in a block, so some flush to zero.
void TestGemmOperands::hadamardUnderflowCountsTheRotatedTensor() {
  GemmExperimentConfig c;
  QCOMPARE(
      parse(R"({"scaling": "nvfp4_te_rht", "m": 32, "k": 64, "n": 16, "seed": 3, "distribution": "outliers"})", &c),
      std::string());
  auto r = runConfig(c);
  QVERIFY2(r.ok(), r.message().c_str());
  const Dataset* rot = r.value.find("quantized/A_rotated");
  const Dataset* codes = r.value.find("quantized/A_codes");
  QVERIFY(rot && codes);
  int64_t under = 0;
  for (size_t i = 0; i < rot->f32.size(); ++i)
    if (rot->f32[i] != 0.0f && std::isfinite(rot->f32[i]) && (codes->u8[i] & 0x7) == 0) ++under;
  QVERIFY(under > 0); // outliers: small elements beside a large one in a block flush to zero
  QCOMPARE(r.value.metrics.at("a_underflow").value, double(under));
}

/// MX codes and E8M0 scales from files: A [1,32] E4M3FN codes 0x38 (1.0) with E8M0 0x80
/// (2^(128−127) = 2), B [32,1] codes 0x40 (2.0) with E8M0 0x7E (2^−1): every product is
/// 2 · 1, D = 32 · 2 = 64 (exact in float32), and the ideal is the same product of the
/// dequantized operands, so the quantization error is 0.
void TestGemmOperands::preQuantizedMxRun() {
  writeNpy(path("ma.npy"), "|u1", "(1, 32)", bytes(32, 0x38));
  writeNpy(path("mas.npy"), "|u1", "(1, 1)", bytes(1, 0x80));
  writeNpy(path("mb.npy"), "|u1", "(32, 1)", bytes(32, 0x40));
  writeNpy(path("mbs.npy"), "|u1", "(1, 1)", bytes(1, 0x7E));
  GemmExperimentConfig c;
  const std::string json = R"({"a": {"codes": ")" + path("ma.npy") + R"(", "format": "E4M3FN", "scales": ")" +
                           path("mas.npy") + R"(", "scale_format": "E8M0", "block": [1, 32]},
      "b": {"codes": ")" + path("mb.npy") +
                           R"(", "format": "e4m3fn", "scales": ")" + path("mbs.npy") +
                           R"(", "scale_format": "e8m0", "block": [32, 1]}})";
  QCOMPARE(parse(json, &c), std::string());
  auto r = runConfig(c);
  QVERIFY2(r.ok(), r.message().c_str());
  QCOMPARE(d0(r.value), 64.0f);
  QCOMPARE(r.value.find("reference/D")->f64[0], 64.0);
  QCOMPARE(r.value.metrics.at("quant_max_abs").value, 0.0);
  QCOMPARE(attrString(r.value.find("quantized/A_scale_codes")->attrs, "format").value_or(""), std::string("E8M0FNU"));
  QVERIFY(attrString(r.value.attrs, "pre_quantized").has_value());
  // The stored config is canonical and parses back to the same config.
  GemmExperimentConfig back;
  QCOMPARE(parseGemmConfig(Json::parse(r.value.config_json), &back), std::string());
  QCOMPARE(gemmConfigJson(back).dump(), gemmConfigJson(c).dump());
}

/// NVFP4 codes with E4M3 block scales and TE's tensor amax: A [1,16] codes 0x7 (6), scale
/// 0x7E (448), amax 6; B [16,1] codes 0x2 (1.0), scale 0x7E, amax 1. Sum 16 · 6 · 1 · 448 ·
/// 448 = 19267584; D = f32(f32(f32(6 · 1) · f32(1/7225344)) · 19267584) ≈ 16.
void TestGemmOperands::preQuantizedNvfp4TeRun() {
  writeNpy(path("na.npy"), "|u1", "(1, 16)", bytes(16, 0x7));
  writeNpy(path("nb.npy"), "|u1", "(16, 1)", bytes(16, 0x2));
  writeNpy(path("ns.npy"), "|u1", "(1, 1)", bytes(1, 0x7E));
  GemmExperimentConfig c;
  const std::string json = R"({"accumulation": "fp32", "a": {"codes": ")" + path("na.npy") +
                           R"(", "format": "E2M1", "scales": ")" + path("ns.npy") +
                           R"(", "scale_format": "E4M3FN", "block": [1, 16], "tensor_amax": 6},
      "b": {"codes": ")" + path("nb.npy") +
                           R"(", "format": "E2M1", "scales": ")" + path("ns.npy") +
                           R"(", "scale_format": "E4M3FN", "block": [16, 1], "tensor_amax": 1}})";
  QCOMPARE(parse(json, &c), std::string());
  auto r = runConfig(c);
  QVERIFY2(r.ok(), r.message().c_str());
  const float alpha = (6.0f * 1.0f) * (1.0f / 7225344.0f);
  QCOMPARE(bits(d0(r.value)), bits(alpha * 19267584.0f));
}

/// Float32 scales per row of A and one per tensor of B: A [2,4] codes 0x38 (1.0) in row 0 and
/// 0x40 (2.0) in row 1, scales [0.5, 3.0] (a 1-D file for the [2,1] grid of block [1,4]); B
/// [4,1] codes 0x38 with "scales": 0.25. D = [4 · 0.5 · 0.25, 4 · 6 · 0.25] = [0.5, 6].
void TestGemmOperands::preQuantizedFloatScalesRun() {
  writeNpy(path("fa.npy"), "|u1", "(2, 4)", bytes(4, 0x38) + bytes(4, 0x40));
  writeNpy(path("fas.npy"), "<f4", "(2,)", f32Bytes({0.5f, 3.0f}));
  writeNpy(path("fb.npy"), "|u1", "(4, 1)", bytes(4, 0x38));
  GemmExperimentConfig c;
  const std::string json = R"({"a": {"codes": ")" + path("fa.npy") + R"(", "format": "E4M3FN", "scales": ")" +
                           path("fas.npy") + R"(", "block": [1, 4]},
      "b": {"codes": ")" + path("fb.npy") +
                           R"(", "format": "E4M3FN", "scales": 0.25}})";
  QCOMPARE(parse(json, &c), std::string());
  auto r = runConfig(c);
  QVERIFY2(r.ok(), r.message().c_str());
  QCOMPARE(r.value.find("output/D")->f32, (std::vector<float>{0.5f, 6.0f}));
}

void TestGemmOperands::preQuantizedBadInputs_data() {
  QTest::addColumn<QString>("a");
  QTest::addColumn<QString>("b");
  QTest::addColumn<QString>("want");
  const QString A = QString::fromStdString(path("pa.npy")), S = QString::fromStdString(path("ps2.npy")),
                B = QString::fromStdString(path("pb.npy")), B16 = QString::fromStdString(path("pb16.npy")),
                F = QString::fromStdString(path("pf.npy")), S1 = QString::fromStdString(path("ps1.npy"));
  const QString b_ok =
      QStringLiteral(R"({"codes": "%1", "format": "E4M3FN", "scales": "%2", "scale_format": "E8M0", "block": [32, 1]})")
          .arg(B, S1);
  QTest::newRow("scale grid wrong")
      << QStringLiteral(
             R"({"codes": "%1", "format": "E4M3FN", "scales": "%2", "scale_format": "E8M0", "block": [1, 32]})")
             .arg(A, S)
      << b_ok
      << QStringLiteral("a.scales: '%1' is [1, 2] but codes [1, 32] in blocks of [1, 32] need a scale grid of [1, 1]")
             .arg(S);
  QTest::newRow("codes out of range")
      << QStringLiteral(R"({"codes": "%1", "format": "E2M1", "scales": 1.0})").arg(A) << b_ok
      << QStringLiteral("a.codes: code 0x38 at (0, 0) of '%1' is out of range for E2M1 (4 bits").arg(A);
  QTest::newRow("inner dimensions differ")
      << QStringLiteral(R"({"codes": "%1", "format": "E4M3FN", "scales": 1.0})").arg(A)
      << QStringLiteral(R"({"codes": "%1", "format": "E4M3FN", "scales": 1.0})").arg(B16)
      << q("A is [1, 32] and B is [16, 1]: inner dimensions differ");
  QTest::newRow("float codes file") << QStringLiteral(R"({"codes": "%1", "format": "E4M3FN", "scales": 1.0})").arg(F)
                                    << b_ok << q("dtype '<f4' is not uint8");
  QTest::newRow("mx block not along K")
      << QStringLiteral(
             R"({"codes": "%1", "format": "E4M3FN", "scales": "%2", "scale_format": "E8M0", "block": [32, 1]})")
             .arg(A, S1)
      << b_ok << q("a.block: E8M0 (MX) scales cover 32 elements along K: [1, 32] for A");
  QTest::newRow("nvfp4 x mx")
      << QStringLiteral(
             R"({"codes": "%1", "format": "E2M1", "scales": "%2", "scale_format": "E4M3FN", "block": [1, 16]})")
             .arg(A, S)
      << b_ok << q("A is pre-quantized E2M1 and B is pre-quantized E4M3FN: no GEMM multiplies");
  QTest::newRow("block without a file")
      << QStringLiteral(R"({"codes": "%1", "format": "E4M3FN", "scales": 2.0, "block": [1, 8]})").arg(A) << b_ok
      << q("a.block: one scale covers the whole tensor");
  QTest::newRow("random key beside codes")
      << QStringLiteral(R"({"codes": "%1", "format": "E4M3FN", "scales": 1.0, "sigma": 2})").arg(A) << b_ok
      << q("a.sigma: unknown key");
}

void TestGemmOperands::preQuantizedBadInputs() {
  QFETCH(QString, a);
  QFETCH(QString, b);
  QFETCH(QString, want);
  writeNpy(path("pa.npy"), "|u1", "(1, 32)", bytes(32, 0x38));
  writeNpy(path("pb.npy"), "|u1", "(32, 1)", bytes(32, 0x38));
  writeNpy(path("pb16.npy"), "|u1", "(16, 1)", bytes(16, 0x38));
  writeNpy(path("ps2.npy"), "|u1", "(1, 2)", bytes(2, 0x7F));
  writeNpy(path("ps1.npy"), "|u1", "(1, 1)", bytes(1, 0x7F));
  writeNpy(path("pf.npy"), "<f4", "(1, 32)", f32Bytes(std::vector<float>(32, 1.0f)));
  GemmExperimentConfig c;
  std::string err = parse("{\"a\": " + a.toStdString() + ", \"b\": " + b.toStdString() + "}", &c);
  if (err.empty()) {
    auto r = runConfig(c);
    QVERIFY(!r.ok());
    err = r.errors();
  }
  QVERIFY2(err.find(want.toStdString()) != std::string::npos, err.c_str());
}

#endif // Q_MOC_RUN

QTEST_APPLESS_MAIN(TestGemmOperands)
#include "test_gemm_operands.moc"

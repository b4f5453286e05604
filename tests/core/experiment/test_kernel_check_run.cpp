// FP8 Lab — a GEMM run that checks a kernel's output (config "observed" / "check",
// core/experiment/kernel_check/kernel_check_run.h), operands as kernels hold them (transposed B, packed FP4,
// cuBLASLt / DeepGEMM scale layouts, scale-format aliases), and the checks of a kernel developer's
// mistakes in scale files. Operands are exact by construction (tests/support/kernel_check_files.h).
#include <QTemporaryDir>
#include <QtTest>

#include "kernel_check_files.h"

#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/gemm_run.h"
#include "formats/format.h"

#include <bit>
#include <cmath>
#include <cstring>

using namespace fp8lab;
using fp8lab::test::KernelCheckFiles;
using fp8lab::test::writeTestNpy;

namespace {

std::string parse(const std::string& json, GemmExperimentConfig* c) {
  return parseGemmConfig(Json::parse(json), c);
}

Result<Run> runConfig(const GemmExperimentConfig& c, GemmRunDetails* det = nullptr) {
  auto be = makeCpuGemmBackend();
  return runGemmExperimentRun(c, gemmConfigJson(c).dump(), "r", *be, {}, det);
}

bool hasIssue(const Status& s, const std::string& text, Severity sev) {
  for (const auto& i : s.issues)
    if (i.severity == sev && i.detail.find(text) != std::string::npos) return true;
  return false;
}

std::string issues(const Status& s) {
  std::string t;
  for (const auto& i : s.issues) t += i.toString() + "\n";
  return t;
}

} // namespace

class TestKernelCheckRun : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  KernelCheckFiles f_;
  std::string path(const char* name) const { return tmp_.filePath(QString::fromLatin1(name)).toStdString(); }
  /// The config of the kernel's GEMM with the row-major scale files, plus `extra` keys.
  std::string config(const std::string& extra = {}) const;

private Q_SLOTS:
  void initTestCase() { f_ = fp8lab::test::writeKernelCheckFiles(tmp_.path().toStdString()); }
  void checkKeysRoundTrip();
  void checkKeyRefusals_data();
  void checkKeyRefusals();
  void correctKernelPassesAndIsStored();
  void badKernelsFail_data();
  void badKernelsFail();
  void observedShapeMismatchNamesBothShapes();
  void fp8OutputCodesObserved();
  void transposedBAndHardwareLayoutsGiveTheSameRun();
  void swizzledScaleFilesAreTheRowMajorGrid_data();
  void swizzledScaleFilesAreTheRowMajorGrid();
  void packedFp4IsTheUnpackedCodes();
  void scaleChecksFire_data();
  void scaleChecksFire();
  void nanCodesSayHowManyOutputsAreNaN();
};

// Raw string literals confuse moc's parser: the definitions below are hidden from it.
#ifndef Q_MOC_RUN

std::string TestKernelCheckRun::config(const std::string& extra) const {
  return R"({"a": {"codes": ")" + f_.a + R"(", "format": "E4M3FN", "scales": ")" + f_.sa +
         R"(", "block": [1, 128]}, "b": {"codes": ")" + f_.b + R"(", "format": "E4M3FN", "scales": ")" + f_.sb +
         R"(", "block": [128, 128]})" + (extra.empty() ? "" : ", " + extra) + "}";
}

void TestKernelCheckRun::checkKeysRoundTrip() {
  GemmExperimentConfig c;
  const std::string err = parse(config(R"("observed": ")" + f_.good + R"(", "check": {"reference": "split",
      "max_ulp": 1, "atol": 0.5, "min_sqnr_db": 60, "fit_bits": "12..16", "fit_groups": [32, 16], "fit": true})"),
                                &c);
  QCOMPARE(err, std::string());
  QCOMPARE(c.check.observed, f_.good);
  QCOMPARE(c.check.reference, std::string("split"));
  QCOMPARE(*c.check.criteria.max_ulp, 1.0);
  QCOMPARE(c.check.grid.bits, (std::vector<int>{12, 13, 14, 15, 16}));
  QCOMPARE(c.check.grid.groups, (std::vector<int>{16, 32}));
  GemmExperimentConfig back;
  QCOMPARE(parseGemmConfig(gemmConfigJson(c), &back), std::string());
  QCOMPARE(gemmConfigJson(back).dump(), gemmConfigJson(c).dump());
}

void TestKernelCheckRun::checkKeyRefusals_data() {
  QTest::addColumn<QString>("extra");
  QTest::addColumn<QString>("want");
  QTest::newRow("check without observed")
      << QStringLiteral(R"("check": {"max_ulp": 1})") << QStringLiteral("check: checks an observed output");
  QTest::newRow("unknown reference") << QStringLiteral(R"("observed": "d.npy", "check": {"reference": "fp64"})")
                                     << QStringLiteral("check.reference: unknown model 'fp64'");
  QTest::newRow("negative ulp") << QStringLiteral(R"("observed": "d.npy", "check": {"max_ulp": -1})")
                                << QStringLiteral("check.max_ulp: must be a number >= 0");
  QTest::newRow("bits out of range") << QStringLiteral(R"("observed": "d.npy", "check": {"fit_bits": "1..20"})")
                                     << QStringLiteral("check.fit_bits: '1..20': 1 is outside 2..48");
  QTest::newRow("auto scale with observed")
      << QStringLiteral(R"("observed": "d.npy", "output": "e4m3fn", "output_quant_scale": "auto")")
      << QStringLiteral("output_quant_scale: is \"auto\", but the observed output was cast with the kernel's own");
  QTest::newRow("layout of one number") << QStringLiteral("") << QStringLiteral("");
}

void TestKernelCheckRun::checkKeyRefusals() {
  QFETCH(QString, extra);
  QFETCH(QString, want);
  if (want.isEmpty()) { // scale_layout beside one per-tensor number
    GemmExperimentConfig c;
    const std::string e = parse(
        R"({"a": {"codes": ")" + f_.a + R"(", "format": "E4M3FN", "scales": 2.0, "scale_layout": "vec128"}})", &c);
    QVERIFY2(e.find("a.scale_layout: cublaslt_vec128 lays out a scale file") != std::string::npos, e.c_str());
    return;
  }
  GemmExperimentConfig c;
  const std::string e = parse(config(extra.toStdString()), &c);
  QVERIFY2(e.find(want.toStdString()) != std::string::npos, e.c_str());
}

// The correct kernel's D equals the exact model's bit for bit: PASS with no criterion (bit-identical
// required); the run stores the observed D, the maps, the histogram, the models table and the verdict,
// and they come back from the file.
void TestKernelCheckRun::correctKernelPassesAndIsStored() {
  GemmExperimentConfig c;
  QCOMPARE(
      parse(config(R"("observed": ")" + f_.good + R"(", "check": {"fit_bits": "12..16", "fit_groups": [32]})"), &c),
      std::string());
  GemmRunDetails det;
  auto r = runConfig(c, &det);
  QVERIFY2(r.ok(), r.message().c_str());
  QVERIFY(det.check);
  const KernelCheckResult& k = *det.check;
  QVERIFY2(k.verdict.passed, k.verdict.line.c_str());
  QCOMPARE(k.comparison.identical, KernelCheckFiles::M * KernelCheckFiles::N);
  QVERIFY2(k.fit.best.comparison.identical == k.comparison.elements, k.fit.verdict.c_str());
  const std::string file = path("check.h5");
  Session s;
  s.runs.push_back(r.value);
  QVERIFY(writeSession(file, s).ok());
  auto rd = SessionReader::open(file);
  QVERIFY(rd.ok());
  auto back = rd.value->readRun("r");
  QVERIFY2(back.ok(), back.message().c_str());
  const Run& run = back.value;
  QVERIFY(run.find("observed/D") && run.find("check/D_reference") && run.find("check/ulps") && run.find("check/diff"));
  QCOMPARE(run.find("observed/D")->f32, f_.d);
  QCOMPARE(run.find("check/ulp_histogram")->i64[0], KernelCheckFiles::M * KernelCheckFiles::N);
  const auto& g = run.group_attrs.at("check");
  QCOMPARE(attrInt(g, "passed").value_or(-1), int64_t(1));
  QVERIFY(attrString(g, "verdict").value_or("").rfind("PASS: 3072 of 3072 elements identical to exact", 0) == 0);
  const Json names = Json::parse(attrString(run.group_attrs.at("check/models"), "names").value_or("[]"));
  // The reference models less those that cannot take these operands (the block-scaled tcgen05
  // kinds need MX / NVFP4 scales, cdna3_fp8 scales constant along K; the files' are 1x128 / 128x128).
  QCOMPARE(names.size(), referenceModels(GemmOptions{}).size() - 3);
  QCOMPARE(names[0].get<std::string>(), std::string("exact"));
  QCOMPARE(run.find("check/models/identical")->i64[0], KernelCheckFiles::M * KernelCheckFiles::N);
  QCOMPARE(run.metrics.at("check_passed").value, 1.0);
}

void TestKernelCheckRun::badKernelsFail_data() {
  QTest::addColumn<QString>("which");
  QTest::addColumn<QString>("check");
  QTest::addColumn<QString>("want");
  QTest::newRow("one ULP up, max 0") << QStringLiteral("one_ulp") << QStringLiteral(R"({"max_ulp": 0, "fit": false})")
                                     << QStringLiteral("max 1 ULP at (3, 17) > 0 allowed");
  QTest::newRow("wrong block scale") << QStringLiteral("wrong_scale")
                                     << QStringLiteral(R"({"max_ulp": 1, "fit": false})")
                                     << QStringLiteral("elements differ from exact");
  QTest::newRow("float16 accumulation") << QStringLiteral("f16") << QStringLiteral(R"({"max_ulp": 1, "fit": false})")
                                        << QStringLiteral("elements differ from exact");
  QTest::newRow("NaN output") << QStringLiteral("nan") << QStringLiteral(R"({"max_ulp": 100, "fit": false})")
                              << QStringLiteral("1 NaN and 0 Inf mismatches");
}

void TestKernelCheckRun::badKernelsFail() {
  QFETCH(QString, which);
  QFETCH(QString, check);
  QFETCH(QString, want);
  const std::string d = which == QStringLiteral("one_ulp")       ? f_.one_ulp
                        : which == QStringLiteral("wrong_scale") ? f_.wrong_scale
                        : which == QStringLiteral("f16")         ? f_.f16
                                                                 : f_.with_nan;
  GemmExperimentConfig c;
  QCOMPARE(parse(config(R"("observed": ")" + d + R"(", "check": )" + check.toStdString()), &c), std::string());
  GemmRunDetails det;
  auto r = runConfig(c, &det);
  QVERIFY2(r.ok(), r.message().c_str());
  QVERIFY(!det.check->verdict.passed);
  QVERIFY2(det.check->verdict.line.find(want.toStdString()) != std::string::npos, det.check->verdict.line.c_str());
  QCOMPARE(attrInt(r.value.group_attrs.at("check"), "passed").value_or(-1), int64_t(0));
  if (which == QStringLiteral("wrong_scale")) { // only row 5 holds the doubled block
    QCOMPARE(det.check->comparison.differing_rows, int64_t(1));
    QCOMPARE(det.check->comparison.first.row, int64_t(5));
  }
}

void TestKernelCheckRun::observedShapeMismatchNamesBothShapes() {
  GemmExperimentConfig c;
  QCOMPARE(parse(config(R"("observed": ")" + f_.transposed + R"(")"), &c), std::string());
  auto r = runConfig(c);
  QVERIFY(!r.ok());
  QVERIFY2(r.errors().find("is [48, 64] but D = A·B is [64, 48] (M × N)") != std::string::npos, r.errors().c_str());
}

// An FP8 output given as codes: the kernel's codes of D · scale_D with scale_D = 1/16 (D's values
// are below 2^15, so D/16 < 2^11 ... the E4M3FN cast saturates some; the CPU reference does the
// same cast). The observed codes are the exact model's own: a PASS.
void TestKernelCheckRun::fp8OutputCodesObserved() {
  GemmExperimentConfig c0;
  QCOMPARE(parse(config(R"("output": "e4m3fn", "output_quant_scale": 0.0625, "accumulation": "exact")"), &c0),
           std::string());
  auto r0 = runConfig(c0);
  QVERIFY2(r0.ok(), r0.message().c_str());
  const Dataset* codes = r0.value.find("output/D_codes");
  QVERIFY(codes);
  const std::string p = path("d_codes.npy");
  writeTestNpy(p, "|u1", "(64, 48)", std::string(codes->u8.begin(), codes->u8.end()));
  GemmExperimentConfig c;
  QCOMPARE(parse(config(R"("output": "e4m3fn", "output_quant_scale": 0.0625, "observed": ")" + p +
                        R"(", "check": {"fit": false})"),
                 &c),
           std::string());
  GemmRunDetails det;
  auto r = runConfig(c, &det);
  QVERIFY2(r.ok(), r.message().c_str());
  QVERIFY2(det.check->verdict.passed, det.check->verdict.line.c_str());
  QCOMPARE(r.value.find("observed/D_codes")->u8, codes->u8);
  // The same codes for a float output are refused with what to do.
  GemmExperimentConfig cf;
  QCOMPARE(parse(config(R"("observed": ")" + p + R"(")"), &cf), std::string());
  auto rf = runConfig(cf);
  QVERIFY(!rf.ok());
  QVERIFY2(rf.errors().find("holds one-byte codes (|u1) but the output type is fp32") != std::string::npos,
           rf.errors().c_str());
}

// B stored [N, K] K-major ("transpose"), A's scales in cuBLASLt's VEC128_32F layout (M fastest) and
// B's in BLK128x128_32F (pitch 4): the same operands as the row-major files, so the same D and
// scale grids bit for bit.
void TestKernelCheckRun::transposedBAndHardwareLayoutsGiveTheSameRun() {
  GemmExperimentConfig c0, c1;
  QCOMPARE(parse(config(), &c0), std::string());
  const std::string j1 = R"({"a": {"codes": ")" + f_.a + R"(", "format": "E4M3FN", "scales": ")" + f_.sa_vec128 +
                         R"(", "block": [1, 128], "scale_layout": "VEC128_32F"},
      "b": {"codes": ")" +
                         f_.bt + R"(", "format": "E4M3FN", "transpose": true, "scales": ")" + f_.sbt_blk +
                         R"(", "block": [128, 128], "scale_layout": "cublaslt_blk128x128_32f"}})";
  QCOMPARE(parse(j1, &c1), std::string());
  auto r0 = runConfig(c0), r1 = runConfig(c1);
  QVERIFY2(r0.ok() && r1.ok(), (r0.message() + r1.message()).c_str());
  for (const char* d : {"output/D", "quantized/A_scales", "quantized/B_scales", "quantized/B_codes"}) {
    const Dataset *x = r0.value.find(d), *y = r1.value.find(d);
    QVERIFY2(x && y && x->shape == y->shape && x->f32 == y->f32 && x->u8 == y->u8, d);
  }
  QCOMPARE(r1.value.find("output/D")->f32, f_.d); // and it is the exact product
  // A scale file whose size fits no pitch is refused naming both sizes.
  writeTestNpy(path("short.npy"), "<f4", "(3,)", fp8lab::test::floatBytes({1, 1, 1}));
  GemmExperimentConfig c2;
  QCOMPARE(parse(R"({"a": {"codes": ")" + f_.a + R"(", "format": "E4M3FN", "scales": ")" + path("short.npy") +
                     R"(", "block": [1, 128], "scale_layout": "vec128"}})",
                 &c2),
           std::string());
  auto r2 = runConfig(c2);
  QVERIFY(!r2.ok());
  QVERIFY2(r2.errors().find("holds 128 elements (KB · P for a pitch P ≥ outer), but the file holds 3") !=
               std::string::npos,
           r2.errors().c_str());
}

void TestKernelCheckRun::swizzledScaleFilesAreTheRowMajorGrid_data() {
  QTest::addColumn<bool>("nvfp4");
  QTest::newRow("MXFP8 (VEC32_UE8M0)") << false;
  QTest::newRow("NVFP4 (VEC16_UE4M3)") << true;
}

// A [130, 64] with its block scales in cuBLASLt's swizzled layout. The storage is built here the way
// PyTorch's to_blocked builds it, step by step: the grid zero-padded to [256, 4]; viewed as
// blocks[rb][cb][r][c] = P[128·rb + r][4·cb + c] (permute(0, 2, 1, 3)); each 128×4 block reshaped to
// [4][32][4] (r = 32·i + j) and transposed to [32][4][4] (j, i, c), then flattened tile after tile.
// The run must read back exactly the grid it was given.
void TestKernelCheckRun::swizzledScaleFilesAreTheRowMajorGrid() {
  QFETCH(bool, nvfp4);
  const int64_t M = 130, K = 64, N = 16, blk = nvfp4 ? 16 : 32, KB = K / blk;
  std::vector<uint8_t> grid(size_t(M * KB));
  for (size_t i = 0; i < grid.size(); ++i)
    grid[i] = nvfp4 ? static_cast<uint8_t>(0x30 + i % 0x40) : static_cast<uint8_t>(120 + i % 10); // E4M3 / E8M0
  const int64_t R = 256, C = 4;                                                                   // padded
  std::vector<uint8_t> P(size_t(R * C), 0);
  for (int64_t o = 0; o < M; ++o)
    for (int64_t k = 0; k < KB; ++k) P[size_t(o * C + k)] = grid[size_t(o * KB + k)];
  std::string storage;
  for (int64_t rb = 0; rb < R / 128; ++rb)
    for (int64_t cb = 0; cb < C / 4; ++cb)
      for (int64_t j = 0; j < 32; ++j)
        for (int64_t i = 0; i < 4; ++i)
          for (int64_t c = 0; c < 4; ++c) storage += char(P[size_t((rb * 128 + 32 * i + j) * C + cb * 4 + c)]);
  QCOMPARE(storage.size(), size_t(1024));
  // Codes: A all 1.0 (E4M3FN 0x38 / E2M1 0x2), B all 1.0, its scales 1 (E8M0 0x7F / E4M3 0x38).
  writeTestNpy(path("sw_a.npy"), "|u1", "(130, 64)", std::string(size_t(M * K), char(nvfp4 ? 0x2 : 0x38)));
  writeTestNpy(path("sw_as.npy"), "|u1", "(1024,)", storage);
  writeTestNpy(path("sw_b.npy"), "|u1", "(64, 16)", std::string(size_t(K * N), char(nvfp4 ? 0x2 : 0x38)));
  writeTestNpy(path("sw_bs.npy"), "|u1", nvfp4 ? "(4, 16)" : "(2, 16)",
               std::string(size_t(KB * N), char(nvfp4 ? 0x38 : 0x7F)));
  const std::string fmt = nvfp4 ? "E2M1" : "E4M3FN", sf = nvfp4 ? "UE4M3" : "float8_e8m0fnu";
  const std::string layout = nvfp4 ? "cublaslt_vec16_ue4m3" : "cublaslt_vec32_ue8m0";
  const std::string bl = std::to_string(blk);
  GemmExperimentConfig c;
  QCOMPARE(parse(R"({"a": {"codes": ")" + path("sw_a.npy") + R"(", "format": ")" + fmt + R"(", "scales": ")" +
                     path("sw_as.npy") + R"(", "scale_format": ")" + sf + R"(", "block": [1, )" + bl +
                     R"(], "scale_layout": ")" + layout + R"("},
      "b": {"codes": ")" +
                     path("sw_b.npy") + R"(", "format": ")" + fmt + R"(", "scales": ")" + path("sw_bs.npy") +
                     R"(", "scale_format": ")" + sf + R"(", "block": [)" + bl + R"(, 1]}})",
                 &c),
           std::string());
  auto r = runConfig(c);
  QVERIFY2(r.ok(), r.message().c_str());
  QCOMPARE(r.value.find("quantized/A_scale_codes")->u8, grid);
}

// NVFP4 codes packed two a byte (low nibble first, PyTorch float4_e2m1fn_x2) read as the unpacked
// codes: the same D.
void TestKernelCheckRun::packedFp4IsTheUnpackedCodes() {
  const int64_t M = 4, K = 32;
  std::string codes, packed;
  for (int64_t i = 0; i < M * K; ++i) codes += char((i * 5) % 16);
  for (int64_t i = 0; i < M * K; i += 2) packed += char((codes[size_t(i)] & 0xF) | ((codes[size_t(i + 1)] & 0xF) << 4));
  writeTestNpy(path("p_a.npy"), "|u1", "(4, 32)", codes);
  writeTestNpy(path("p_ap.npy"), "|u1", "(4, 16)", packed);
  writeTestNpy(path("p_as.npy"), "|u1", "(4, 2)", std::string(8, char(0x38)));
  writeTestNpy(path("p_b.npy"), "|u1", "(32, 2)", std::string(64, char(0x3)));
  writeTestNpy(path("p_bs.npy"), "|u1", "(2, 2)", std::string(4, char(0x38)));
  auto cfg = [&](const std::string& a, const std::string& extra) {
    return R"({"a": {"codes": ")" + a + R"(", "format": "E2M1", "scales": ")" + path("p_as.npy") +
           R"(", "scale_format": "E4M3FN", "block": [1, 16])" + extra + R"(}, "b": {"codes": ")" + path("p_b.npy") +
           R"(", "format": "E2M1", "scales": ")" + path("p_bs.npy") +
           R"(", "scale_format": "E4M3FN", "block": [16, 1]}})";
  };
  GemmExperimentConfig c0, c1;
  QCOMPARE(parse(cfg(path("p_a.npy"), ""), &c0), std::string());
  QCOMPARE(parse(cfg(path("p_ap.npy"), R"(, "packed": "low_first")"), &c1), std::string());
  auto r0 = runConfig(c0), r1 = runConfig(c1);
  QVERIFY2(r0.ok() && r1.ok(), (r0.message() + r1.message()).c_str());
  QCOMPARE(r1.value.find("quantized/A_codes")->u8, r0.value.find("quantized/A_codes")->u8);
  QCOMPARE(r1.value.find("output/D")->f32, r0.value.find("output/D")->f32);
  GemmExperimentConfig c2;
  const std::string e =
      parse(R"({"a": {"codes": ")" + f_.a + R"(", "format": "E4M3FN", "scales": 1.0, "packed": true}})", &c2);
  QVERIFY2(e.find("a.packed: packs two 4-bit codes a byte; the format is E4M3FN") != std::string::npos, e.c_str());
}

void TestKernelCheckRun::scaleChecksFire_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<bool>("refused");
  QTest::addColumn<QString>("want");
  QTest::newRow("E8M0 NaN scale") << QStringLiteral("e8m0_nan") << true
                                  << QStringLiteral(
                                         "1 scale(s) are NaN or infinite (E8M0 0xFF is NaN): block(s) (0, 1)");
  QTest::newRow("negative float scale") << QStringLiteral("negative") << true
                                        << QStringLiteral("1 scale(s) are negative: block(s) (3, 0)");
  QTest::newRow("UE4M3 code with the sign bit")
      << QStringLiteral("signed_ue4m3") << true << QStringLiteral("have the sign bit set (first 0xB8)");
  QTest::newRow("zero scale over non-zero codes")
      << QStringLiteral("zero") << false << QStringLiteral("block(s) have scale 0 but hold non-zero codes");
  QTest::newRow("float16 subnormal scale")
      << QStringLiteral("f16_subnormal") << false << QStringLiteral("float16 scale(s) are subnormal (below 2^-14");
  QTest::newRow("quant convention given")
      << QStringLiteral("inverted") << false << QStringLiteral("these look like quant multipliers");
  QTest::newRow("dequantized range") << QStringLiteral("range") << false << QStringLiteral("A dequantized: [-");
}

void TestKernelCheckRun::scaleChecksFire() {
  QFETCH(QString, kind);
  QFETCH(bool, refused);
  QFETCH(QString, want);
  std::vector<float> sa(128, 1.0f); // A's row-major grid [64, 2]
  std::string a;
  if (kind == QStringLiteral("e8m0_nan") || kind == QStringLiteral("signed_ue4m3")) {
    // MX: A [2, 64] E4M3FN codes 1.0, E8M0 grid [2, 2] with one 0xFF; NVFP4: E2M1 with a 0xB8 scale.
    const bool nv = kind == QStringLiteral("signed_ue4m3");
    writeTestNpy(path("c_a.npy"), "|u1", "(2, 64)", std::string(128, char(nv ? 0x2 : 0x38)));
    writeTestNpy(path("c_as.npy"), "|u1", nv ? "(2, 4)" : "(2, 2)",
                 nv ? std::string("\x38\x38\x38\xB8\x38\x38\x38\x38", 8) : std::string("\x7F\xFF\x7F\x7F", 4));
    a = R"({"codes": ")" + path("c_a.npy") + R"(", "format": ")" + (nv ? "E2M1" : "E4M3FN") + R"(", "scales": ")" +
        path("c_as.npy") + R"(", "scale_format": ")" + (nv ? "E4M3FN" : "E8M0") + R"(", "block": [1, )" +
        (nv ? "16" : "32") + "]}";
  } else if (kind == QStringLiteral("f16_subnormal")) {
    std::string h;
    for (int i = 0; i < 128; ++i) h += i == 7 ? std::string("\x01\x00", 2) : std::string("\x00\x3C", 2); // 2^-24, 1.0
    writeTestNpy(path("c_sa16.npy"), "<f2", "(64, 2)", h);
    a = R"({"codes": ")" + f_.a + R"(", "format": "E4M3FN", "scales": ")" + path("c_sa16.npy") +
        R"(", "block": [1, 128]})";
  } else if (kind == QStringLiteral("inverted")) {
    a = R"({"codes": ")" + f_.a + R"(", "format": "E4M3FN", "scales": 448})";
    // With a scale of 448 the dequantized 4s reach 1792 ... and 448²/4 = 50176 is not reached: use
    // the largest code instead (448 · 448 = 200704 ≥ 50176).
    std::string c(size_t(64 * 256), char(0x38));
    c[0] = char(0x7E);
    writeTestNpy(path("c_big.npy"), "|u1", "(64, 256)", c);
    a = R"({"codes": ")" + path("c_big.npy") + R"(", "format": "E4M3FN", "scales": 448})";
  } else {
    if (kind == QStringLiteral("negative")) sa[size_t(3 * 2 + 0)] = -0.5f;
    if (kind == QStringLiteral("zero")) sa[size_t(9 * 2 + 1)] = 0.0f;
    writeTestNpy(path("c_sa.npy"), "<f4", "(64, 2)", fp8lab::test::floatBytes(sa));
    a = R"({"codes": ")" + f_.a + R"(", "format": "E4M3FN", "scales": ")" + path("c_sa.npy") +
        R"(", "block": [1, 128]})";
  }
  const bool small = kind == QStringLiteral("e8m0_nan") || kind == QStringLiteral("signed_ue4m3");
  const std::string b = small ? (kind == QStringLiteral("signed_ue4m3")
                                     ? R"({"codes": ")" + path("c_b16.npy") + R"(", "format": "E2M1", "scales": ")" +
                                           path("c_bs16.npy") + R"(", "scale_format": "E4M3FN", "block": [16, 1]})"
                                     : R"({"codes": ")" + path("c_b.npy") + R"(", "format": "E4M3FN", "scales": 1.0})")
                              : R"({"codes": ")" + f_.b + R"(", "format": "E4M3FN", "scales": 1.0})";
  writeTestNpy(path("c_b.npy"), "|u1", "(64, 3)", std::string(192, char(0x38)));
  writeTestNpy(path("c_b16.npy"), "|u1", "(64, 3)", std::string(192, char(0x2)));
  writeTestNpy(path("c_bs16.npy"), "|u1", "(4, 3)", std::string(12, char(0x38)));
  GemmExperimentConfig c;
  QCOMPARE(parse(R"({"a": )" + a + R"(, "b": )" + b + "}", &c), std::string());
  auto r = runConfig(c);
  QCOMPARE(!r.ok(), refused);
  QVERIFY2(hasIssue(r, want.toStdString(),
                    refused ? Severity::Error : (kind == QStringLiteral("range") ? Severity::Info : Severity::Warning)),
           issues(r).c_str());
  if (!refused) QVERIFY(attrString(r.value.attrs, "warnings").value_or("").find("dequantized") != std::string::npos);
}

// NaN codes (E4M3FN 0x7F) at A (2, 5) and (9, 0): rows 2 and 9 of D are NaN, 2 · 48 outputs; the
// warning says so, and the metric counts them.
void TestKernelCheckRun::nanCodesSayHowManyOutputsAreNaN() {
  std::string c;
  {
    std::ifstream in(f_.a, std::ios::binary);
    c.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t data = c.size() - 64 * 256;
  c[data + 2 * 256 + 5] = char(0x7F);
  c[data + 9 * 256 + 0] = char(0xFF);
  std::ofstream(path("nan_a.npy"), std::ios::binary) << c;
  GemmExperimentConfig cfg;
  QCOMPARE(parse(R"({"a": {"codes": ")" + path("nan_a.npy") + R"(", "format": "E4M3FN", "scales": ")" + f_.sa +
                     R"(", "block": [1, 128]}, "b": {"codes": ")" + f_.b + R"(", "format": "E4M3FN", "scales": ")" +
                     f_.sb + R"(", "block": [128, 128]}})",
                 &cfg),
           std::string());
  GemmRunDetails det;
  auto r = runConfig(cfg, &det);
  QVERIFY2(r.ok(), r.message().c_str());
  QVERIFY2(hasIssue(r, "A holds 2 NaN code(s) (E4M3FN 0x7F first, at (2, 5))", Severity::Warning), issues(r).c_str());
  QVERIFY2(hasIssue(r, "every output of D in rows 2, 9 of A (2 rows) is NaN", Severity::Warning), issues(r).c_str());
  QVERIFY(!hasIssue(r, "saturate or become NaN when quantized", Severity::Warning));
  QCOMPARE(det.nan_outputs_from_codes, int64_t(2 * 48));
  QCOMPARE(r.value.metrics.at("nonfinite_d").value, double(2 * 48));
}

#endif // Q_MOC_RUN

QTEST_APPLESS_MAIN(TestKernelCheckRun)
#include "test_kernel_check_run.moc"

// Tests for core/experiment's GEMM run: reproducible bit for bit (any thread count, after a save
// and reload), the stored layout, float64 imports quantized from float64, and compareRuns.
#include <QTemporaryDir>
#include <QtTest>

#include "layout_check.h"
#include "session/session_layout.h"
#include "experiment/gemm/gemm_run.h"
#include "formats/format.h"

#include <bit>
#include <cmath>
#include <fstream>

using namespace fp8lab;

namespace {

std::string le32(uint32_t v) {
  std::string s;
  for (int i = 0; i < 4; ++i) s += char((v >> (8 * i)) & 0xFF);
  return s;
}
std::string le64(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s += char((v >> (8 * i)) & 0xFF);
  return s;
}

void writeNpy(const std::string& path, const std::string& descr, const std::string& shape, const std::string& data) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string s = std::string("\x93NUMPY\x01\x00", 8) + char(h.size() & 0xFF) + char(h.size() >> 8) + h + data;
  std::ofstream(path, std::ios::binary) << s;
}

GemmExperimentConfig smallConfig() {
  GemmExperimentConfig c;
  c.m = 40;
  c.k = 300; // several 128-wide promotion windows plus a partial one
  c.n = 24;
  c.seed = 99;
  c.scaling = "te_block_1x128";
  c.a.random.distribution = Distribution::Outliers;
  return c;
}

Result<Run> runIt(GemmExperimentConfig c, int threads, const std::string& id = "r") {
  c.gemm.threads = threads;
  auto be = makeCpuGemmBackend();
  return runGemmExperimentRun(c, "{\"type\":\"gemm\"}", id, *be);
}

} // namespace

class TestGemmRun : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

private Q_SLOTS:
  void storesTheDocumentedLayout();
  void reproducibleAcrossThreadCountsAndSaves();
  void compareRunsFindsAChangedBit();
  void float64ImportIsQuantizedFromFloat64();
  void badConfigsAreReported();
  void runWithoutStoredInputsStillValidates();
  void fp8OutputRunsOpenWithoutWarnings();
};

void TestGemmRun::storesTheDocumentedLayout() {
  auto r = runIt(smallConfig(), 0);
  QVERIFY2(r.ok(), r.message().c_str());
  const Run& run = r.value;
  QCOMPARE(run.type, std::string("gemm"));
  QCOMPARE(run.seed, uint64_t(99));
  const std::vector<std::pair<std::string, std::vector<int64_t>>> want = {
      {"inputs/A", {40, 300}},
      {"inputs/B", {300, 24}},
      {"output/D", {40, 24}},
      {"reference/D", {40, 24}},
      {"reference/D_quantized_exact", {40, 24}},
      {"error/abs", {40, 24}},
      {"error/rel", {40, 24}},
      {"quantized/A_codes", {40, 300}},
      {"quantized/A_scales", {40, 3}}, // 1x128 blocks along K of A: ceil(300/128) = 3
      {"quantized/B_scales", {3, 24}}, // 128x1 blocks along K of B
      {"error/tile_max_abs", {1, 1}}};
  for (const auto& [p, shape] : want) {
    const Dataset* d = run.find(p);
    QVERIFY2(d, p.c_str());
    QCOMPARE(d->shape, shape);
    QVERIFY2(attrString(d->attrs, "units") && attrString(d->attrs, "meaning"), p.c_str());
  }
  // error/abs is |D − reference| rounded to float32, element by element.
  const Dataset* d = run.find("output/D");
  const Dataset* ref = run.find("reference/D");
  const Dataset* ea = run.find("error/abs");
  for (size_t i = 0; i < d->f32.size(); ++i) QCOMPARE(ea->f32[i], float(std::fabs(double(d->f32[i]) - ref->f64[i])));
  // SQNR recomputed here from the stored maps.
  double s = 0, e = 0;
  for (size_t i = 0; i < d->f32.size(); ++i) {
    s += ref->f64[i] * ref->f64[i];
    e += (double(d->f32[i]) - ref->f64[i]) * (double(d->f32[i]) - ref->f64[i]);
  }
  QVERIFY(std::fabs(10 * std::log10(s / e) - run.metrics.at("sqnr_db").value) < 1e-9);
  QVERIFY(run.getQuantized("quantized/A").ok());
  // Every dataset the writer stored is a path of the session layout, with its units and type.
  fp8lab::testsupport::checkDatasetsAgainstLayout(run);
  if (QTest::currentTestFailed()) return;
}

void TestGemmRun::reproducibleAcrossThreadCountsAndSaves() {
  auto a = runIt(smallConfig(), 1);
  auto b = runIt(smallConfig(), 2);
  QVERIFY(a.ok() && b.ok());
  int nd = 0, nm = 0;
  auto diffs = compareRuns(a.value, b.value, &nd, &nm);
  QVERIFY2(diffs.empty(), diffs.empty() ? "" : diffs[0].c_str());
  QVERIFY(nd >= 15 && nm >= 15);
  const std::string p = tmp_.path().toStdString() + "/rep.h5";
  QVERIFY(appendRuns(p, {a.value}).ok());
  auto back = loadSession(p);
  QVERIFY(back.ok());
  diffs = compareRuns(back.value.runs[0], b.value);
  QVERIFY2(diffs.empty(), diffs.empty() ? "" : diffs[0].c_str());
}

void TestGemmRun::compareRunsFindsAChangedBit() {
  auto a = runIt(smallConfig(), 0);
  QVERIFY(a.ok());
  Run b = a.value;
  auto& d = b.datasets["output/D"].f32[17];
  d = std::bit_cast<float>(std::bit_cast<uint32_t>(d) ^ 1u); // one ulp
  b.metrics["sqnr_db"].value = std::nextafter(b.metrics["sqnr_db"].value, 0.0);
  b.metrics["gemm_seconds"].value += 1; // wall time: never compared
  const auto diffs = compareRuns(a.value, b);
  QCOMPARE(diffs.size(), size_t(2));
  QVERIFY(diffs[0].find("output/D") != std::string::npos && diffs[0].find("1 of 960") != std::string::npos);
  QVERIFY(diffs[1].find("sqnr_db") != std::string::npos);
}

void TestGemmRun::float64ImportIsQuantizedFromFloat64() {
  // A = [[448, 1.0625 + 2^-40]] as float64. TE per-tensor current scaling: amax 448 → scale
  // 448/448 = 1. E4M3FN spacing on [1, 2) is 1/8, so 1.0625 is the midpoint of 1 and 1.125:
  // from float64 the 2^-40 puts it above the midpoint → 1.125 = code 0x39 (0 0111 001). Through
  // float32 first (24-bit significand) it would be exactly the midpoint → ties to even → 1.0 (0x38).
  const std::string pa = tmp_.path().toStdString() + "/a64.npy", pb = tmp_.path().toStdString() + "/b32.npy";
  writeNpy(pa, "<f8", "(1, 2)", le64(std::bit_cast<uint64_t>(448.0)) + le64(std::bit_cast<uint64_t>(1.0625 + 0x1p-40)));
  writeNpy(pb, "<f4", "(2, 1)", le32(std::bit_cast<uint32_t>(1.0f)) + le32(std::bit_cast<uint32_t>(1.0f)));
  GemmExperimentConfig c;
  c.scaling = "te_current";
  c.a.tensor = pa;
  c.b.tensor = pb;
  auto r = runIt(c, 0);
  QVERIFY2(r.ok(), r.message().c_str());
  const Dataset* in = r.value.find("inputs/A");
  QCOMPARE(int(in->dtype), int(DType::Float64));
  QCOMPARE(in->f64[1], 1.0625 + 0x1p-40);
  const Dataset* codes = r.value.find("quantized/A_codes");
  QCOMPARE(codes->u8[0], uint8_t(0x7E)); // 448 = max finite
  QCOMPARE(codes->u8[1], uint8_t(0x39));
  QCOMPARE(r.value.find("output/D")->shape, (std::vector<int64_t>{1, 1}));
  // The ideal reference is the float64 product: 448 + 1.0625 + 2^-40.
  QCOMPARE(r.value.find("reference/D")->f64[0], 449.0625 + 0x1p-40);
}

void TestGemmRun::badConfigsAreReported() {
  auto be = makeCpuGemmBackend();
  GemmExperimentConfig c = smallConfig();
  c.format_a = "E9M9";
  auto r = runGemmExperimentRun(c, "{}", "x", *be);
  QVERIFY(!r.ok());
  QVERIFY(r.message().find("E9M9") != std::string::npos);
  c = smallConfig();
  c.scaling = "te_delayed"; // needs a history: not a single-GEMM strategy
  r = runGemmExperimentRun(c, "{}", "x", *be);
  QVERIFY(!r.ok());
  QVERIFY(r.message().find("te_delayed") != std::string::npos);
  c = smallConfig();
  c.a.tensor = tmp_.path().toStdString() + "/missing.npy";
  r = runGemmExperimentRun(c, "{}", "x", *be);
  QVERIFY(!r.ok());
  QVERIFY(r.message().find("missing.npy") != std::string::npos);
}

// A run with an FP8 output ("output": "e4m3fn") opens without warnings, so its session can be
// merged (a warning such as "block_rows / block_cols absent" would make it "not a clean FP8 Lab
// session"). The codes carry one scale_D: block = the whole [M, N] output. Codes without block
// attributes and without D_scales open cleanly too.
void TestGemmRun::fp8OutputRunsOpenWithoutWarnings() {
  GemmExperimentConfig c = smallConfig();
  c.gemm.output = OutputType::E4M3FN;
  auto r = runIt(c, 0, "fp8out");
  QVERIFY2(r.ok(), r.message().c_str());
  const Dataset* codes = r.value.find("output/D_codes");
  QVERIFY(codes);
  QCOMPARE(attrInt(codes->attrs, "block_rows").value_or(0), c.m);
  QCOMPARE(attrInt(codes->attrs, "block_cols").value_or(0), c.n);
  const std::string p = tmp_.path().toStdString() + "/fp8out.h5", old = tmp_.path().toStdString() + "/old.h5",
                    merged = tmp_.path().toStdString() + "/merged.h5";
  Run before = r.value; // the same run, its codes without block attributes
  before.id = "before";
  before.datasets["output/D_codes"].attrs.erase("block_rows");
  before.datasets["output/D_codes"].attrs.erase("block_cols");
  QVERIFY(writeSession(p, Session{kSessionFormatVersion, {}, {}, {}, {r.value}}).ok());
  QVERIFY(writeSession(old, Session{kSessionFormatVersion, {}, {}, {}, {before}}).ok());
  for (const std::string& f : {p, old}) {
    auto rd = SessionReader::open(f);
    QVERIFY2(rd.ok() && rd.issues.empty(), rd.message().c_str());
  }
  const Status m = mergeSessions(merged, {p, old});
  QVERIFY2(m.ok(), m.message().c_str());
  auto rd = SessionReader::open(merged);
  QVERIFY2(rd.ok() && rd.issues.empty(), rd.message().c_str());
  QCOMPARE(rd.value->info().runs.size(), size_t(2));
}

void TestGemmRun::runWithoutStoredInputsStillValidates() {
  // A gemm run written with store_inputs / store_quantized / store_error_maps off validates: the
  // validator does not ask for inputs/A.
  GemmExperimentConfig c = smallConfig();
  c.store_inputs = c.store_quantized = c.store_error_maps = false;
  auto r = runIt(c, 0, "lean");
  QVERIFY(r.ok());
  QVERIFY(!r.value.find("inputs/A") && !r.value.find("error/abs"));
  const std::string p = tmp_.path().toStdString() + "/lean.h5";
  QVERIFY(writeSession(p, Session{.format_version = kSessionFormatVersion,
                                  .app_version = {},
                                  .created_utc = {},
                                  .attrs = {},
                                  .runs = {r.value}})
              .ok());
  auto rd = SessionReader::open(p);
  QVERIFY2(rd.ok() && rd.issues.empty(), rd.message().c_str());
  QCOMPARE(rd.value->info().runs.size(), size_t(1));
  QVERIFY(rd.value->info().runs[0].datasets.size() >= 4); // D, reference, quantized-exact, tile maps
}

QTEST_APPLESS_MAIN(TestGemmRun)
#include "test_gemm_run.moc"

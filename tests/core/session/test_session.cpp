// Tests for core/session: round trip of every dataset and attribute kind, quantized tensors,
// append / rename / delete / merge, partial reads, and every bad input that concerns files
// (docs/reliability.md). Expected values are hand-derived (comments show how), never read back from the
// code under test alone.
#include <QTemporaryDir>
#include <QtTest>

#include "formats/format.h"
#include "json/json_document.h"
#include "session/session.h"

#include <hdf5.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

using namespace fp8lab;
namespace fs = std::filesystem;
using Code = Issue::Code;

namespace {

std::string readBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool hasCode(const Status& st, Code c) {
  for (const auto& i : st.issues)
    if (i.code == c) return true;
  return false;
}

/// Files in dir other than `keep` (to find leftover temporaries).
std::vector<std::string> otherFiles(const std::string& dir, const std::vector<std::string>& keep) {
  std::vector<std::string> r;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto n = e.path().filename().string();
    if (std::find(keep.begin(), keep.end(), n) == keep.end()) r.push_back(n);
  }
  return r;
}

/// Float32 values whose bit patterns must survive: specials, −0, subnormals, extremes.
std::vector<float> trickyFloats(size_t n) {
  const float base[] = {0.0f,
                        -0.0f,
                        1.0f,
                        -1.5f,
                        std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::denorm_min(),
                        std::numeric_limits<float>::max(),
                        std::numeric_limits<float>::lowest(),
                        0.1f,
                        448.0f};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base[i % 12] * (i < 12 ? 1.0f : float(i % 7 + 1));
  return v;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return false;
  return true;
}
bool sameBits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint64_t>(a[i]) != std::bit_cast<uint64_t>(b[i])) return false;
  return true;
}

/// A quantized 2×4 E4M3FN tensor with per-row scales, built by hand:
/// E4M3FN code 0x38 = 0 0111 000 = 2^(7−7)·1 = 1.0; 0x40 = 2^(8−7) = 2.0; 0xC4 = −(2^1·1.5) = −3.0;
/// 0x7E = 2^(15−7)·1.75 = 448 (max finite); 0x01 = 2^−6·(1/8) = 2^−9 (min subnormal).
QuantizedTensor handQuantized() {
  QuantizedTensor q;
  q.rows = 2;
  q.cols = 4;
  q.format = &Format::E4M3FN();
  q.codes = {0x38, 0x40, 0xC4, 0x7E, 0x01, 0x00, 0x80, 0x38};
  q.block = {1, 4};
  q.dequant_scales = {0.5f, 4.0f};
  q.quant_scales = {2.0f, 0.25f};
  q.strategy = "per-row current (hand)";
  q.stats.elements = 8;
  q.stats.saturated = 1;
  q.stats.underflow = 2;
  return q;
}

Run gemmRun(const std::string& id, int m = 3, int k = 4, int n = 5) {
  Run r;
  r.id = id;
  r.type = "gemm";
  r.config_json = R"({"type":"gemm","m":3,"note":"ünïcode ✓"})";
  r.seed = std::numeric_limits<uint64_t>::max(); // needs unsigned 64-bit storage
  r.backend = "cpu";
  r.device = "test CPU";
  r.created_utc = "2026-11-29T07:00:00Z";
  r.attrs["label"] = std::string("hand-made");
  r.attrs["answer"] = int64_t(-42);
  r.attrs["big"] = std::numeric_limits<int64_t>::min();
  r.attrs["ratio"] = -0.0;
  r.putFloat32("inputs/A", trickyFloats(size_t(m * k)), m, k, "1", "A operand");
  r.putFloat32("inputs/B", trickyFloats(size_t(k * n)), k, n, "1", "B operand");
  r.putFloat32("output/D", trickyFloats(size_t(m * n)), m, n, "1", "D");
  r.putFloat32("reference/D", trickyFloats(size_t(m * n)), m, n, "1", "exact D");
  r.putFloat32("error/abs", std::vector<float>(size_t(m * n), 0.25f), m, n, "1", "|D - ref|");
  r.putFloat32("error/rel", std::vector<float>(size_t(m * n), 0.125f), m, n, "1", "|D - ref| / |ref|");
  r.putQuantized("quantized/A", handQuantized(), "A");
  r.datasets["history/fc1/input/amax_history"] =
      Dataset::float32({3, 4}, {1, 0, 0, 0, 2, 1, 0, 0, 3, 2, 1, 0}, "1", "amax window per step");
  r.datasets["history/fc1/input/scale"] = Dataset::float32({3}, {1, 0.5f, 0.25f}, "1", "dequant scale per step");
  r.datasets["history/fc1/input/saturated"] =
      Dataset::int64({3}, {0, 5, std::numeric_limits<int64_t>::max()}, "count", "clipped");
  r.datasets["training/loss"] = Dataset::float64({4}, {2.3, 1.0 + 0x1p-40, -0.0, std::nan("")}, "nat", "loss per step");
  r.group_attrs["history/fc1/input"] = {{"strategy", std::string("delayed")}, {"history_len", int64_t(4)}};
  r.group_attrs["history"] = {{"note", std::string("group attr on an intermediate group")}};
  r.setMetric("sqnr_db", 31.25, "dB", "signal to quantization noise");
  r.setMetric("max_abs", std::numeric_limits<double>::infinity(), "1", "max |D - ref|");
  return r;
}

Session sess(std::vector<Run> runs) {
  Session s;
  s.runs = std::move(runs);
  return s;
}

/// Runs an HDF5 C call sequence on an existing file (to damage it on purpose).
struct RawFile {
  hid_t f;
  explicit RawFile(const std::string& p) { f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT); }
  ~RawFile() { H5Fclose(f); }
};

} // namespace

class TestSession : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  std::string path(const char* name) { return (fs::path(tmp_.path().toStdString()) / name).string(); }

private Q_SLOTS:
  void roundTripEveryDatasetAndAttribute_data();
  void roundTripEveryDatasetAndAttribute();
  void quantizedTensorRoundTrip();
  void chunkedCompressedOnlyWhenAsked();
  void appendRenameDelete();
  void appendConflictPolicies();
  void mergeJoinsShardsAndRenamesCollisions();
  void mergeRefusesBadInput();
  void fromRunFollowsRenames();
  void mergeNeverReplacesAnUnrelatedOutput_data();
  void mergeNeverReplacesAnUnrelatedOutput();
  void writesGoThroughSymbolicLinks();
  void deleteRunsIsAllOrNothing();
  void regionReadIsAStridedWindow();
  void reducedReadKeepsEveryMaximum();
  void planeReadIsOnePlane();
  void planeOfA4DDataset();
  void regionOutsideDatasetIsReported();
  // bad input
  void missingFile();
  void nonHdf5AndEmptyFiles();
  void truncatedFile();
  void corruptSuperblock();
  void scatteredCorruptionNeverCrashes();
  void foreignHdf5();
  void futureVersion();
  void missingRunsGroup();
  void wrongShapeAndMissingAttributeSkipRunOnly();
  void wrongElementTypeIsReported();
  void unwritableOutputPath();
  void injectedWriteFailureKeepsPreviousFile();
  void injectedFailureDuringAppendKeepsPreviousFile();
  void cancelledSaveKeepsPreviousFile();
  void badCallerDataIsRejectedBeforeWriting();
  void declaredSizeIsCheckedBeforeReading();
};

void TestSession::roundTripEveryDatasetAndAttribute_data() {
  QTest::addColumn<bool>("compress");
  QTest::newRow("gzip+shuffle") << true;
  QTest::newRow("uncompressed") << false;
}

void TestSession::roundTripEveryDatasetAndAttribute() {
  QFETCH(bool, compress);
  Session s;
  s.attrs["project"] = std::string("round trip");
  s.runs.push_back(gemmRun("r1"));
  Run t;
  t.id = "train.fp8+delayed=1";
  t.type = "training";
  t.config_json = "{}";
  t.seed = 7;
  t.datasets["training/accuracy"] = Dataset::float32({2}, {0.5f, 0.875f}, "1", "test accuracy per epoch");
  t.datasets["quantized/codes_only"] = Dataset::uint8({2, 2}, {0, 255, 0x7F, 0x80}, "code", "raw");
  s.runs.push_back(t);
  WriteOptions opt;
  opt.compress = compress;
  opt.compress_min_elements = 4; // compress even these small maps
  const std::string p = path(compress ? "rt_c.h5" : "rt_u.h5");
  Status st = writeSession(p, s, opt);
  QVERIFY2(st.ok(), st.message().c_str());

  auto back = loadSession(p);
  QVERIFY2(back.ok(), back.message().c_str());
  QCOMPARE(back.value.format_version, kSessionFormatVersion);
  QCOMPARE(attrString(back.value.attrs, "project").value_or(""), std::string("round trip"));
  QCOMPARE(back.value.runs.size(), size_t(2));
  for (const auto& orig : s.runs) {
    const Run* r = back.value.find(orig.id);
    QVERIFY2(r, orig.id.c_str());
    QCOMPARE(r->type, orig.type);
    QCOMPARE(r->config_json, orig.config_json);
    QCOMPARE(r->seed, orig.seed);
    QCOMPARE(r->backend, orig.backend);
    QCOMPARE(r->device, orig.device);
    if (!orig.created_utc.empty()) QCOMPARE(r->created_utc, orig.created_utc);
    QVERIFY(!r->created_utc.empty());
    QCOMPARE(r->app_version, std::string(FP8LAB_VERSION));
    QCOMPARE(r->attrs.size(), orig.attrs.size());
    for (const auto& [k, v] : orig.attrs) {
      QVERIFY2(r->attrs.count(k), k.c_str());
      QCOMPARE(r->attrs.at(k).index(), v.index());
      if (auto d = std::get_if<double>(&v))
        QCOMPARE(std::bit_cast<uint64_t>(std::get<double>(r->attrs.at(k))), std::bit_cast<uint64_t>(*d));
      else
        QVERIFY(r->attrs.at(k) == v);
    }
    QCOMPARE(r->metrics.size(), orig.metrics.size());
    for (const auto& [k, m] : orig.metrics) {
      QCOMPARE(r->metrics.at(k).value, m.value);
      QCOMPARE(r->metrics.at(k).units, m.units);
      QCOMPARE(r->metrics.at(k).meaning, m.meaning);
    }
    QCOMPARE(r->group_attrs.size(), orig.group_attrs.size());
    for (const auto& [g, a] : orig.group_attrs) QVERIFY2(r->group_attrs.at(g) == a, g.c_str());
    QCOMPARE(r->datasets.size(), orig.datasets.size());
    for (const auto& [k, d] : orig.datasets) {
      QVERIFY2(r->datasets.count(k), k.c_str());
      const Dataset& b = r->datasets.at(k);
      QCOMPARE(int(b.dtype), int(d.dtype));
      QCOMPARE(b.shape, d.shape);
      QVERIFY2(b.attrs == d.attrs, k.c_str());
      QVERIFY2(sameBits(b.f32, d.f32), k.c_str());
      QVERIFY2(sameBits(b.f64, d.f64), k.c_str());
      QCOMPARE(b.u8, d.u8);
      QCOMPARE(b.i64, d.i64);
    }
  }
}

void TestSession::quantizedTensorRoundTrip() {
  Session s;
  s.runs.push_back(gemmRun("q"));
  const std::string p = path("q.h5");
  QVERIFY(writeSession(p, s).ok());
  auto back = loadSession(p);
  QVERIFY2(back.ok(), back.message().c_str());
  const Run& r = back.value.runs[0];
  auto q = r.getQuantized("quantized/A");
  QVERIFY2(q.ok(), q.message().c_str());
  const QuantizedTensor h = handQuantized();
  QCOMPARE(q.value.format, &Format::E4M3FN());
  QCOMPARE(q.value.codes, h.codes);
  QCOMPARE(q.value.block, h.block);
  QCOMPARE(q.value.dequant_scales, h.dequant_scales);
  QCOMPARE(q.value.quant_scales, h.quant_scales);
  QCOMPARE(q.value.strategy, h.strategy);
  QCOMPARE(q.value.stats.saturated, int64_t(1));
  QCOMPARE(q.value.stats.underflow, int64_t(2));
  // Dequantized copy, by hand: row 0 scale 0.5 → {0.5, 1, −1.5, 224}; row 1 scale 4 →
  // {2^−9·4 = 2^−7, 0, −0 (0x80 is −0 in E4M3FN), 4}.
  const Dataset* dq = r.find("quantized/A_dequantized");
  QVERIFY(dq);
  const std::vector<float> want{0.5f, 1.0f, -1.5f, 224.0f, 0x1p-7f, 0.0f, -0.0f, 4.0f};
  QVERIFY(sameBits(dq->f32, want));
  QCOMPARE(attrString(r.find("quantized/A_codes")->attrs, "format").value_or(""), std::string("E4M3FN"));
  QCOMPARE(attrInt(r.find("quantized/A_codes")->attrs, "block_cols").value_or(0), int64_t(4));
  // A missing piece is named.
  Run broken = r;
  broken.datasets.erase("quantized/A_scales");
  auto bad = broken.getQuantized("quantized/A");
  QVERIFY(!bad.ok());
  QVERIFY(hasCode(bad, Code::MissingDataset));
  QVERIFY(bad.message().find("A_scales") != std::string::npos);
}

void TestSession::chunkedCompressedOnlyWhenAsked() {
  Session s;
  Run r = gemmRun("big", 64, 64, 64); // 4096 elements each
  s.runs.push_back(r);
  const std::string pc = path("chunk_c.h5"), pu = path("chunk_u.h5");
  QVERIFY(writeSession(pc, s).ok());
  WriteOptions off;
  off.compress = false;
  QVERIFY(writeSession(pu, s, off).ok());
  auto rc = SessionReader::open(pc);
  auto ru = SessionReader::open(pu);
  QVERIFY(rc.ok() && ru.ok());
  auto find = [](const RunInfo& ri, const std::string& p) {
    for (const auto& d : ri.datasets)
      if (d.path == p) return d;
    return DatasetInfo{};
  };
  const DatasetInfo c = find(rc.value->info().runs[0], "output/D");
  const DatasetInfo u = find(ru.value->info().runs[0], "output/D");
  QCOMPARE(c.shape, (std::vector<int64_t>{64, 64}));
  QVERIFY(c.chunked && c.compressed);
  QVERIFY(!u.chunked && !u.compressed);
  // Small datasets stay contiguous even with compression on (default threshold 4096 elements).
  QVERIFY(!find(rc.value->info().runs[0], "history/fc1/input/scale").compressed);
}

void TestSession::appendRenameDelete() {
  const std::string p = path("edit.h5");
  QVERIFY(!fs::exists(p));
  std::vector<std::string> ids;
  Status st = appendRuns(p, {gemmRun("a")}, {}, &ids); // creates the file
  QVERIFY2(st.ok(), st.message().c_str());
  QCOMPARE(ids, std::vector<std::string>{"a"});
  QVERIFY(appendRuns(p, {gemmRun("b"), gemmRun("c")}).ok());
  {
    auto r = SessionReader::open(p);
    QVERIFY(r.ok());
    QCOMPARE(r.value->info().runs.size(), size_t(3));
    QCOMPARE(r.value->info().runs[1].id, std::string("b"));
  }
  QVERIFY(renameRun(p, "b", "b_renamed").ok());
  QVERIFY(deleteRun(p, "a").ok());
  auto r = loadSession(p);
  QVERIFY(r.ok());
  QCOMPARE(r.value.runs.size(), size_t(2));
  QCOMPARE(r.value.runs[0].id, std::string("b_renamed"));
  QCOMPARE(r.value.runs[1].id, std::string("c"));
  // The renamed run's content is intact (copied object by object).
  QVERIFY(sameBits(r.value.runs[0].find("output/D")->f32, trickyFloats(15)));
  QCOMPARE(r.value.runs[0].seed, std::numeric_limits<uint64_t>::max());
  // Errors leave the file untouched.
  const std::string before = readBytes(p);
  QVERIFY(hasCode(deleteRun(p, "nope"), Code::NotFound));
  QVERIFY(hasCode(renameRun(p, "nope", "x"), Code::NotFound));
  QVERIFY(hasCode(renameRun(p, "c", "b_renamed"), Code::DuplicateRun));
  QVERIFY(hasCode(renameRun(p, "c", "bad/id"), Code::InvalidArgument));
  QVERIFY(readBytes(p) == before);
}

void TestSession::appendConflictPolicies() {
  const std::string p = path("conflict.h5");
  QVERIFY(appendRuns(p, {gemmRun("x")}).ok());
  const std::string before = readBytes(p);
  QVERIFY(hasCode(appendRuns(p, {gemmRun("x")}), Code::DuplicateRun)); // default: Fail
  QVERIFY(readBytes(p) == before);
  WriteOptions ren;
  ren.on_conflict = WriteOptions::OnConflict::Rename;
  std::vector<std::string> ids;
  QVERIFY(appendRuns(p, {gemmRun("x"), gemmRun("x")}, ren, &ids).ok());
  QCOMPARE(ids, (std::vector<std::string>{"x-2", "x-3"}));
  WriteOptions rep;
  rep.on_conflict = WriteOptions::OnConflict::Replace;
  Run nx = gemmRun("x");
  nx.attrs["label"] = std::string("replaced");
  QVERIFY(appendRuns(p, {nx}, rep).ok());
  auto r = loadSession(p);
  QVERIFY(r.ok());
  QCOMPARE(r.value.runs.size(), size_t(3));
  QCOMPARE(attrString(r.value.find("x")->attrs, "label").value_or(""), std::string("replaced"));
}

void TestSession::mergeJoinsShardsAndRenamesCollisions() {
  const std::string a = path("shard0.h5"), b = path("shard1.h5"), out = path("merged.h5");
  QVERIFY(writeSession(a, sess({gemmRun("s0"), gemmRun("dup")})).ok());
  QVERIFY(writeSession(b, sess({gemmRun("s1"), gemmRun("dup")})).ok());
  WriteOptions opt;
  opt.on_conflict = WriteOptions::OnConflict::Rename;
  std::vector<std::string> notes;
  Status st = mergeSessions(out, {a, b}, opt, &notes);
  QVERIFY2(st.ok(), st.message().c_str());
  QCOMPARE(notes.size(), size_t(1));
  QVERIFY(notes[0].find("dup-2") != std::string::npos);
  auto r = loadSession(out);
  QVERIFY(r.ok());
  std::vector<std::string> ids;
  for (const auto& x : r.value.runs) ids.push_back(x.id);
  QCOMPARE(ids, (std::vector<std::string>{"dup", "dup-2", "s0", "s1"}));
  // Output may be one of the inputs.
  QVERIFY(mergeSessions(a, {a, b}, opt).ok());
  QCOMPARE(loadSession(a).value.runs.size(), size_t(4));
  // Fail policy refuses collisions and writes nothing.
  const std::string out2 = path("merged_fail.h5");
  QVERIFY(hasCode(mergeSessions(out2, {out, b}), Code::DuplicateRun));
  QVERIFY(!fs::exists(out2));
}

void TestSession::fromRunFollowsRenames() {
  // Each input holds a training run "t" and a GEMM run made from it (config {"from_run": "t"}),
  // as `run` writes gemm_on_trained_weights. Merged, the second input's "t" becomes "t-2" and its
  // GEMM run "g-2": that run's from_run must say "t-2" (the first input's GEMM still says "t").
  auto pair = [](const std::string& suffix) {
    Run t = gemmRun("t");
    Run g = gemmRun("g");
    g.config_json = R"({"from_run": "t", "layer": "fc1", "type": "gemm-trained-weights", "tag": ")" + suffix + R"("})";
    return sess({t, g});
  };
  const std::string a = path("from0.h5"), b = path("from1.h5"), out = path("from_merged.h5");
  QVERIFY(writeSession(a, pair("a")).ok());
  QVERIFY(writeSession(b, pair("b")).ok());
  WriteOptions opt;
  opt.on_conflict = WriteOptions::OnConflict::Rename;
  std::vector<std::string> notes;
  Status st = mergeSessions(out, {a, b}, opt, &notes);
  QVERIFY2(st.ok(), st.message().c_str());
  QCOMPARE(notes, (std::vector<std::string>{b + ": run g stored as g-2", b + ": run t stored as t-2",
                                            b + ": run g-2 made from t: its from_run is now t-2"}));
  auto r = loadSession(out);
  QVERIFY(r.ok());
  const Json g1 = Json::parse(r.value.find("g")->config_json), g2 = Json::parse(r.value.find("g-2")->config_json);
  QCOMPARE(g1.at("from_run").get<std::string>(), std::string("t"));
  QCOMPARE(g1.at("tag").get<std::string>(), std::string("a"));
  QCOMPARE(g2.at("from_run").get<std::string>(), std::string("t-2"));
  QCOMPARE(g2.at("tag").get<std::string>(), std::string("b")); // the rest of the config kept
  // The first input's GEMM config is copied as it was, byte for byte.
  QCOMPARE(r.value.find("g")->config_json,
           std::string(R"({"from_run": "t", "layer": "fc1", "type": "gemm-trained-weights", "tag": "a"})"));
  // `runs rename` of the training run moves the reference too.
  QVERIFY(renameRun(out, "t-2", "t-b").ok());
  r = loadSession(out);
  QVERIFY(r.ok());
  QCOMPARE(Json::parse(r.value.find("g-2")->config_json).at("from_run").get<std::string>(), std::string("t-b"));
  QCOMPARE(Json::parse(r.value.find("g")->config_json).at("from_run").get<std::string>(), std::string("t"));
}

void TestSession::mergeRefusesBadInput() {
  const std::string good = path("m_good.h5"), bad = path("m_bad.txt"), out = path("m_out.h5");
  QVERIFY(writeSession(good, sess({gemmRun("g")})).ok());
  writeBytes(bad, "not hdf5 at all");
  Status st = mergeSessions(out, {good, bad});
  QVERIFY(!st.ok());
  QVERIFY(hasCode(st, Code::NotHdf5));
  QVERIFY(!fs::exists(out));
}

// merge never loses an unrelated file: an existing output that is not an input (`merge keep.h5
// other.h5`) is refused unless replace_existing, and a file that is not a session (a text or JSON
// file named as the output) is never replaced.
void TestSession::mergeNeverReplacesAnUnrelatedOutput_data() {
  QTest::addColumn<QByteArray>("kind");    // what the existing output is
  QTest::addColumn<bool>("force");         // WriteOptions::replace_existing
  QTest::addColumn<int>("code");           // expected code besides WriteFailed (-1: none)
  QTest::addColumn<QByteArray>("message"); // expected text of the WriteFailed error
  const QByteArray unrelated("already exists and is not one of the inputs: merging would replace it and lose its "
                             "1 run(s) (file unchanged). To merge into it, name it as an input too (merge OUT OUT "
                             "IN...); to replace it, use --force");
  const QByteArray notSession("refusing to modify a file that is not a valid FP8 Lab session (file unchanged)");
  QTest::newRow("session") << QByteArray("session") << false << -1 << unrelated;
  QTest::newRow("text") << QByteArray("text") << false << int(Code::NotHdf5) << notSession;
  QTest::newRow("text, force") << QByteArray("text") << true << int(Code::NotHdf5) << notSession;
  QTest::newRow("json, force") << QByteArray("json") << true << int(Code::NotHdf5) << notSession;
  QTest::newRow("empty, force") << QByteArray("empty") << true << int(Code::NotHdf5) << notSession;
  QTest::newRow("foreign hdf5, force") << QByteArray("foreign") << true << int(Code::ForeignFile) << notSession;
}

void TestSession::mergeNeverReplacesAnUnrelatedOutput() {
  QFETCH(QByteArray, kind);
  QFETCH(bool, force);
  QFETCH(int, code);
  QFETCH(QByteArray, message);
  QTemporaryDir dir;
  const std::string d = dir.path().toStdString();
  const std::string out = d + "/keep.h5", in1 = d + "/m1.h5", in2 = d + "/m2.h5";
  QVERIFY(writeSession(in1, sess({gemmRun("m1")})).ok());
  QVERIFY(writeSession(in2, sess({gemmRun("m2")})).ok());
  if (kind == "session")
    QVERIFY(writeSession(out, sess({gemmRun("kept")})).ok());
  else if (kind == "text")
    writeBytes(out, "my notes\n");
  else if (kind == "json")
    writeBytes(out, R"({"type": "gemm", "m": 4})");
  else if (kind == "empty")
    writeBytes(out, "");
  else {
    hid_t f = H5Fcreate(out.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(H5Gcreate2(f, "weights", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Fclose(f);
  }
  const std::string before = readBytes(out);
  WriteOptions opt;
  opt.on_conflict = WriteOptions::OnConflict::Rename;
  opt.replace_existing = force;
  Status st = mergeSessions(out, {in1, in2}, opt);
  QVERIFY(!st.ok());
  if (code >= 0) QVERIFY2(hasCode(st, Code(code)), st.message().c_str());
  QCOMPARE(st.issues.back().code, Code::WriteFailed);
  QCOMPARE(st.issues.back().where, out);
  QCOMPARE(QByteArray::fromStdString(st.issues.back().detail), message);
  QVERIFY(readBytes(out) == before);
  QCOMPARE(otherFiles(d, {"keep.h5", "m1.h5", "m2.h5"}), std::vector<std::string>{});
  if (kind != "session") return;
  // Named as an input too (here through another path to the same file): merged into.
  QVERIFY(mergeSessions(out, {d + "/./keep.h5", in1}, opt).ok());
  std::vector<std::string> ids;
  for (const auto& r : loadSession(out).value.runs) ids.push_back(r.id);
  QCOMPARE(ids, (std::vector<std::string>{"kept", "m1"}));
  // With replace_existing: replaced by exactly the inputs' runs.
  opt.replace_existing = true;
  QVERIFY(mergeSessions(out, {in1, in2}, opt).ok());
  ids.clear();
  for (const auto& r : loadSession(out).value.runs) ids.push_back(r.id);
  QCOMPARE(ids, (std::vector<std::string>{"m1", "m2"}));
}

// `run --out link.h5` with link.h5 → real/target.h5 updates the target and keeps the link: every
// writer resolves the link and renames over the real file, with its temporary beside it.
void TestSession::writesGoThroughSymbolicLinks() {
  QTemporaryDir dir;
  const std::string d = dir.path().toStdString();
  fs::create_directory(d + "/real");
  const std::string target = d + "/real/target.h5", link = d + "/link.h5";
  fs::create_symlink("real/target.h5", link); // relative: resolved against the link's directory
  auto check = [&](const std::vector<std::string>& want, const char* step) {
    QVERIFY2(fs::is_symlink(link), step);
    QCOMPARE(fs::read_symlink(link).string(), std::string("real/target.h5"));
    QVERIFY2(fs::is_regular_file(fs::symlink_status(target)), step);
    std::vector<std::string> ids;
    for (const auto& r : loadSession(target).value.runs) ids.push_back(r.id);
    QCOMPARE(ids, want);
    QCOMPARE(otherFiles(d, {"link.h5", "real", "other.h5"}), std::vector<std::string>{});
    QCOMPARE(otherFiles(d + "/real", {"target.h5"}), std::vector<std::string>{});
  };
  // Dangling link: the write creates its target.
  QVERIFY(writeSession(link, sess({gemmRun("a")})).ok());
  check({"a"}, "write");
  QVERIFY(appendRuns(link, {gemmRun("b"), gemmRun("c")}).ok());
  check({"a", "b", "c"}, "append");
  QVERIFY(deleteRun(link, "c").ok());
  check({"a", "b"}, "delete");
  QVERIFY(renameRun(link, "b", "b2").ok());
  check({"a", "b2"}, "rename");
  const std::string other = d + "/other.h5";
  QVERIFY(writeSession(other, sess({gemmRun("o")})).ok());
  QVERIFY(mergeSessions(link, {link, other}).ok());
  check({"a", "b2", "o"}, "merge");
  // A chain of links ends at the same file; a loop is refused and writes nothing.
  const std::string link2 = d + "/real/link2.h5";
  fs::create_symlink(link, link2);
  QVERIFY(appendRuns(link2, {gemmRun("z")}).ok());
  fs::remove(link2);
  check({"a", "b2", "o", "z"}, "chain");
  const std::string loop1 = d + "/real/loop1.h5", loop2 = d + "/real/loop2.h5";
  fs::create_symlink("loop2.h5", loop1);
  fs::create_symlink("loop1.h5", loop2);
  Status st = writeSession(loop1, sess({gemmRun("x")}));
  QVERIFY(hasCode(st, Code::WriteFailed));
  QVERIFY2(st.firstError().find("too many levels of symbolic links") != std::string::npos, st.message().c_str());
  QVERIFY(fs::is_symlink(loop1) && fs::is_symlink(loop2));
}

// `runs delete d.h5 small nope` deletes nothing: deleteRuns checks every id first, so "no such run
// (file unchanged)" is true.
void TestSession::deleteRunsIsAllOrNothing() {
  const std::string p = path("del_many.h5");
  QVERIFY(writeSession(p, sess({gemmRun("small"), gemmRun("big"), gemmRun("keep")})).ok());
  const std::string before = readBytes(p);
  Status st = deleteRuns(p, {"small", "nope", "big", "zz", "nope"});
  QVERIFY(!st.ok());
  QCOMPARE(st.issues.size(), size_t(1));
  QCOMPARE(st.issues[0].code, Code::NotFound);
  QCOMPARE(st.issues[0].where, p);
  QCOMPARE(st.issues[0].detail, std::string("no such runs: nope, zz (nothing deleted, file unchanged)"));
  QVERIFY(readBytes(p) == before);
  st = deleteRuns(p, {"nope"});
  QCOMPARE(st.issues.size(), size_t(1));
  QCOMPARE(st.issues[0].toString(),
           "error: not found at " + p + "#/runs/nope: no such run (nothing deleted, file unchanged)");
  QVERIFY(readBytes(p) == before);
  QVERIFY(hasCode(deleteRuns(p, {}), Code::InvalidArgument));
  QVERIFY(readBytes(p) == before);
  // All present (one given twice): one rewrite without them.
  QVERIFY(deleteRuns(p, {"small", "keep", "small"}).ok());
  auto r = loadSession(p);
  QVERIFY(r.ok());
  QCOMPARE(r.value.runs.size(), size_t(1));
  QCOMPARE(r.value.runs[0].id, std::string("big"));
}

void TestSession::regionReadIsAStridedWindow() {
  // 300 × 500 map with value(i, j) = 1000·i + j (exact in float32: max 299 499 < 2^24).
  const int R = 300, Cc = 500;
  std::vector<float> v(size_t(R * Cc));
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < Cc; ++j) v[size_t(i * Cc + j)] = float(1000 * i + j);
  Run r = gemmRun("map");
  r.putFloat32("error/tile_map", v, R, Cc, "1", "test map");
  const std::string p = path("region.h5");
  WriteOptions opt;
  opt.compress_min_elements = 1000; // chunked + gzip: the hyperslab crosses chunks
  QVERIFY(writeSession(p, sess({r}), opt).ok());
  auto rd = SessionReader::open(p);
  QVERIFY(rd.ok());
  Region g;
  g.row0 = 7;
  g.col0 = 11;
  g.rows = 5;
  g.cols = 4;
  g.row_step = 60;
  g.col_step = 120;
  auto w = rd.value->readRegion("map", "error/tile_map", g);
  QVERIFY2(w.ok(), w.message().c_str());
  QCOMPARE(w.value.shape, (std::vector<int64_t>{5, 4}));
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 4; ++b) QCOMPARE(w.value.f32[size_t(a * 4 + b)], float(1000 * (7 + 60 * a) + 11 + 120 * b));
  // rows/cols = −1: "to the end" with the step: rows 7, 67, ..., 247 → 5; cols 11..491 step 120 → 5.
  g.rows = g.cols = -1;
  auto w2 = rd.value->readRegion("map", "error/tile_map", g);
  QVERIFY(w2.ok());
  QCOMPARE(w2.value.shape, (std::vector<int64_t>{5, 5}));
  QCOMPARE(w2.value.f32.back(), float(1000 * 247 + 491));
}

// A 3-D dataset [5, 300, 500] whose element (p, i, j) is 10^6·p + 1000·i + j (exact in float32:
// all below 2^24); plane p read alone is that plane, compressed or not.
void TestSession::planeReadIsOnePlane() {
  const int P = 5, R = 300, Cc = 500;
  std::vector<float> v(size_t(P * R * Cc));
  for (int p = 0; p < P; ++p)
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < Cc; ++j) v[size_t((p * R + i) * Cc + j)] = float(1000000 * p + 1000 * i + j);
  Run r = gemmRun("maps");
  r.datasets["block_stats/A/map_amax"] = Dataset::float32({P, R, Cc}, v, "1", "test maps");
  for (bool compress : {true, false}) {
    const std::string file = path(compress ? "planes_c.h5" : "planes_u.h5");
    WriteOptions o;
    o.compress = compress;
    QVERIFY(writeSession(file, sess({r}), o).ok());
    auto rd = SessionReader::open(file);
    QVERIFY(rd.ok());
    auto pl = rd.value->readPlane("maps", "block_stats/A/map_amax", 3);
    QVERIFY2(pl.ok(), pl.message().c_str());
    QCOMPARE(pl.value.shape, (std::vector<int64_t>{R, Cc}));
    QCOMPARE(pl.value.f32.front(), 3000000.0f);
    QCOMPARE(pl.value.f32[size_t(123 * Cc + 77)], float(3000000 + 123000 + 77));
    QCOMPARE(pl.value.f32.back(), float(3000000 + 299000 + 499));
    QCOMPARE(pl.value.attrs.count("units"), size_t{1});
    QVERIFY(hasCode(rd.value->readPlane("maps", "block_stats/A/map_amax", 5), Code::InvalidArgument));
    QVERIFY(hasCode(rd.value->readPlane("maps", "block_stats/A/map_amax", -1), Code::InvalidArgument));
    QVERIFY(hasCode(rd.value->readPlane("maps", "output/D", 0), Code::WrongShape));
  }
}

// A 4-D dataset [3, 2, 4, 4] (attention snapshots [s, heads, T, T]) whose element (s, h, q, k) is
// 1000·s + 100·h + 10·q + k: plane 2 is [2, 4, 4] holding 2000 + 100·h + 10·q + k.
void TestSession::planeOfA4DDataset() {
  std::vector<float> v;
  for (int s = 0; s < 3; ++s)
    for (int h = 0; h < 2; ++h)
      for (int q = 0; q < 4; ++q)
        for (int k = 0; k < 4; ++k) v.push_back(float(1000 * s + 100 * h + 10 * q + k));
  Run r = gemmRun("att");
  r.datasets["attention/blocks.0/probs"] = Dataset::float32({3, 2, 4, 4}, v, "1", "test snapshots");
  const std::string file = path("planes_4d.h5");
  QVERIFY(writeSession(file, sess({r})).ok());
  auto rd = SessionReader::open(file);
  QVERIFY(rd.ok());
  auto pl = rd.value->readPlane("att", "attention/blocks.0/probs", 2);
  QVERIFY2(pl.ok(), pl.message().c_str());
  QCOMPARE(pl.value.shape, (std::vector<int64_t>{2, 4, 4}));
  QCOMPARE(pl.value.f32.front(), 2000.0f);
  QCOMPARE(pl.value.f32[size_t((1 * 4 + 2) * 4 + 3)], 2123.0f);
  QCOMPARE(pl.value.f32.back(), 2133.0f);
  QVERIFY(hasCode(rd.value->readPlane("att", "attention/blocks.0/probs", 3), Code::InvalidArgument));
}

void TestSession::reducedReadKeepsEveryMaximum() {
  const int R = 300, Cc = 500;
  std::vector<float> v(size_t(R * Cc), 0.0f);
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < Cc; ++j) v[size_t(i * Cc + j)] = float(1000 * i + j);
  v[size_t(123 * Cc + 77)] = -1e9f;          // one large negative outlier
  v[size_t(250 * Cc + 400)] = std::nanf(""); // one NaN
  Run r = gemmRun("map");
  r.putFloat32("error/tile_map", v, R, Cc, "1", "test map");
  const std::string p = path("reduced.h5");
  QVERIFY(writeSession(p, sess({r})).ok());
  auto rd = SessionReader::open(p);
  QVERIFY(rd.ok());
  // Blocks of 64 × 100 → ceil(300/64) = 5 rows, 5 cols. Block (bi, bj) max (without specials)
  // = 1000·min(64·bi+63, 299) + 100·bj + 99.
  auto mx = rd.value->readReduced("map", "error/tile_map", 64, 100, Reduce::Max);
  QVERIFY2(mx.ok(), mx.message().c_str());
  QCOMPARE(mx.value.shape, (std::vector<int64_t>{5, 5}));
  QCOMPARE(mx.value.f64[0], 1000.0 * 63 + 99);
  QCOMPARE(mx.value.f64[size_t(4 * 5 + 4)], 1000.0 * 299 + 499);
  QVERIFY(std::isnan(mx.value.f64[size_t(3 * 5 + 4)])); // row 250 is in block row 3, col 400 in block col 4
  // MaxAbs sees the −1e9 outlier in block (1, 0): rows 64..127, cols 0..99.
  auto ma = rd.value->readReduced("map", "error/tile_map", 64, 100, Reduce::MaxAbs);
  QCOMPARE(ma.value.f64[size_t(1 * 5 + 0)], 1e9);
  // Mean of block (0, 0) = 1000·mean(0..63) + mean(0..99) = 1000·31.5 + 49.5.
  auto mean = rd.value->readReduced("map", "error/tile_map", 64, 100, Reduce::Mean);
  QCOMPARE(mean.value.f64[0], 31549.5);
  // Partial edge block (4, 0): rows 256..299 (44 rows) → mean 1000·277.5 + 49.5.
  QCOMPARE(mean.value.f64[size_t(4 * 5)], 277549.5);
  // Many bands (contiguous file, 7 × 9 blocks): max of block (bi, bj) = 1000·min(7bi+6, 299) +
  // min(9bj+8, 499), except the block holding the NaN at (250, 400): (35, 44).
  const std::string pu = path("reduced_u.h5");
  WriteOptions off;
  off.compress = false;
  QVERIFY(writeSession(pu, sess({r}), off).ok());
  auto ru = SessionReader::open(pu);
  auto m7 = ru.value->readReduced("map", "error/tile_map", 7, 9, Reduce::Max);
  QVERIFY2(m7.ok(), m7.message().c_str());
  QCOMPARE(m7.value.shape, (std::vector<int64_t>{43, 56}));
  for (int bi = 0; bi < 43; ++bi)
    for (int bj = 0; bj < 56; ++bj) {
      const double got = m7.value.f64[size_t(bi * 56 + bj)];
      if (bi == 35 && bj == 44)
        QVERIFY(std::isnan(got));
      else
        QCOMPARE(got, 1000.0 * std::min(7 * bi + 6, 299) + std::min(9 * bj + 8, 499));
    }
}

void TestSession::regionOutsideDatasetIsReported() {
  const std::string p = path("region_bad.h5");
  QVERIFY(writeSession(p, sess({gemmRun("r")})).ok());
  auto rd = SessionReader::open(p);
  QVERIFY(rd.ok());
  Region g;
  g.row0 = 2;
  g.rows = 2; // output/D is [3, 5]: rows 2, 3 → row 3 does not exist
  auto w = rd.value->readRegion("r", "output/D", g);
  QVERIFY(!w.ok());
  QVERIFY(hasCode(w, Code::InvalidArgument));
  QVERIFY(hasCode(rd.value->read("r", "no/such"), Code::MissingDataset));
  QVERIFY(hasCode(rd.value->read("zz", "output/D"), Code::NotFound));
  QVERIFY(hasCode(rd.value->readRegion("r", "history/fc1/input/scale", {}), Code::WrongShape)); // 1-D
}

void TestSession::missingFile() {
  auto r = SessionReader::open(path("does_not_exist.h5"));
  QVERIFY(!r.ok());
  QVERIFY(hasCode(r, Code::NotFound));
  QVERIFY(r.message().find("does_not_exist.h5") != std::string::npos);
}

void TestSession::nonHdf5AndEmptyFiles() {
  const std::string t = path("text.h5"), e = path("empty.h5");
  writeBytes(t, "{\"this\": \"is JSON, not HDF5\"}\n");
  writeBytes(e, "");
  for (const auto& p : {t, e}) {
    auto r = SessionReader::open(p);
    QVERIFY(!r.ok());
    QVERIFY2(hasCode(r, Code::NotHdf5), r.message().c_str());
  }
  // appending to a non-session file refuses and keeps it
  QVERIFY(!appendRuns(t, {gemmRun("a")}).ok());
  QCOMPARE(readBytes(t), std::string("{\"this\": \"is JSON, not HDF5\"}\n"));
}

void TestSession::truncatedFile() {
  const std::string p = path("trunc.h5");
  QVERIFY(writeSession(p, sess({gemmRun("a", 40, 40, 40)})).ok());
  std::string bytes = readBytes(p);
  for (double frac : {0.9, 0.5, 0.1}) {
    const std::string q = path("trunc_part.h5");
    writeBytes(q, bytes.substr(0, size_t(double(bytes.size()) * frac)));
    auto r = SessionReader::open(q);
    QVERIFY2(!r.ok(), "truncated file opened without error");
    QVERIFY2(hasCode(r, Code::Corrupt), r.message().c_str());
    QVERIFY(r.message().find("trunc") != std::string::npos);
  }
}

void TestSession::corruptSuperblock() {
  const std::string p = path("corrupt.h5");
  QVERIFY(writeSession(p, sess({gemmRun("a")})).ok());
  std::string bytes = readBytes(p);
  for (size_t i = 8; i < 48; ++i) bytes[i] = char(0xA5); // superblock after the 8-byte signature
  writeBytes(p, bytes);
  auto r = SessionReader::open(p);
  QVERIFY(!r.ok());
  QVERIFY2(hasCode(r, Code::Corrupt), r.message().c_str());
}

void TestSession::scatteredCorruptionNeverCrashes() {
  // Damage metadata and data in many places; whatever HDF5 makes of it, the reader must report
  // and not crash, and a full load must either succeed or say what failed.
  const std::string p = path("scatter.h5");
  QVERIFY(writeSession(p, sess({gemmRun("a", 32, 32, 32), gemmRun("b")})).ok());
  const std::string orig = readBytes(p);
  int reported = 0;
  for (size_t stride : {4099u, 1021u, 509u}) {
    std::string bytes = orig;
    for (size_t i = 2048; i < bytes.size(); i += stride) bytes[i] = char(bytes[i] ^ 0x5A);
    writeBytes(p, bytes);
    auto r = loadSession(p);
    if (!r.issues.empty()) ++reported;
  }
  QVERIFY(reported >= 1);
}

void TestSession::foreignHdf5() {
  const std::string p = path("foreign.h5");
  {
    hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t d[2] = {2, 2};
    hid_t sp = H5Screate_simple(2, d, nullptr);
    hid_t ds = H5Dcreate2(f, "weights", H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Fclose(f);
  }
  auto r = SessionReader::open(p);
  QVERIFY(!r.ok());
  QVERIFY2(hasCode(r, Code::ForeignFile), r.message().c_str());
  const std::string before = readBytes(p);
  QVERIFY(!appendRuns(p, {gemmRun("a")}).ok()); // never clobbers someone else's file
  QVERIFY(readBytes(p) == before);
}

void TestSession::futureVersion() {
  const std::string p = path("future.h5");
  QVERIFY(writeSession(p, sess({gemmRun("a")})).ok());
  {
    RawFile f(p);
    H5Adelete(f.f, "format_version");
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f.f, "format_version", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    const int64_t v = 99;
    H5Awrite(a, H5T_NATIVE_INT64, &v);
    H5Aclose(a);
    H5Sclose(sp);
  }
  auto r = SessionReader::open(p);
  QVERIFY(!r.ok());
  QVERIFY(hasCode(r, Code::FutureVersion));
  QVERIFY2(r.message().find("99") != std::string::npos, r.message().c_str());
}

void TestSession::missingRunsGroup() {
  const std::string p = path("noruns.h5");
  QVERIFY(writeSession(p, sess({gemmRun("a")})).ok());
  {
    RawFile f(p);
    H5Ldelete(f.f, "runs", H5P_DEFAULT);
  }
  auto r = SessionReader::open(p);
  QVERIFY(!r.ok());
  QVERIFY(hasCode(r, Code::MissingGroup));
  QVERIFY(r.message().find("/runs") != std::string::npos);
}

void TestSession::wrongShapeAndMissingAttributeSkipRunOnly() {
  const std::string p = path("damaged_run.h5");
  QVERIFY(writeSession(p, sess({gemmRun("good"), gemmRun("shape"), gemmRun("attr")})).ok());
  {
    RawFile f(p);
    // output/D of run "shape" becomes [3] instead of [3, 5]
    H5Ldelete(f.f, "runs/shape/output/D", H5P_DEFAULT);
    hsize_t d = 3;
    hid_t sp = H5Screate_simple(1, &d, nullptr);
    hid_t ds = H5Dcreate2(f.f, "runs/shape/output/D", H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(sp);
    hid_t g = H5Gopen2(f.f, "runs/attr", H5P_DEFAULT);
    H5Adelete(g, "config");
    H5Gclose(g);
  }
  auto r = SessionReader::open(p);
  QVERIFY2(r.ok(), r.message().c_str()); // the file opens: damage is confined to two runs
  QCOMPARE(r.value->info().runs.size(), size_t(1));
  QCOMPARE(r.value->info().runs[0].id, std::string("good"));
  bool shape = false, attr = false;
  for (const auto& i : r.issues) {
    if (i.code == Code::WrongShape && i.where.find("runs/shape/output/D") != std::string::npos &&
        i.detail.find("[3, 5]") != std::string::npos && i.detail.find("[3]") != std::string::npos)
      shape = true;
    if (i.code == Code::MissingAttribute && i.where.find("runs/attr") != std::string::npos &&
        i.detail.find("config") != std::string::npos)
      attr = true;
  }
  QVERIFY2(shape && attr, r.message().c_str());
  // Rewriting the file keeps the damaged runs too (nothing lost).
  QVERIFY(appendRuns(p, {gemmRun("new")}).ok());
  RawFile f(p);
  QVERIFY(H5Lexists(f.f, "runs/attr", H5P_DEFAULT) > 0);
  QVERIFY(H5Lexists(f.f, "runs/shape", H5P_DEFAULT) > 0);
}

void TestSession::wrongElementTypeIsReported() {
  const std::string p = path("wrongtype.h5");
  QVERIFY(writeSession(p, sess({gemmRun("a")})).ok());
  {
    RawFile f(p);
    hsize_t d = 4;
    hid_t sp = H5Screate_simple(1, &d, nullptr);
    hid_t ds = H5Dcreate2(f.f, "runs/a/error/int32", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(sp);
  }
  auto r = SessionReader::open(p);
  QVERIFY(r.ok());
  QVERIFY(hasCode(r, Code::WrongType));
  QVERIFY(r.message().find("error/int32") != std::string::npos);
}

void TestSession::unwritableOutputPath() {
  const std::string file = path("plain.txt");
  writeBytes(file, "x");
  // A path below a regular file (fails even for root, unlike a read-only directory).
  for (const std::string& p : {file + "/out.h5", path("no_such_dir") + "/out.h5", tmp_.path().toStdString()}) {
    Status st = writeSession(p, sess({gemmRun("a")}));
    QVERIFY2(!st.ok(), p.c_str());
    QVERIFY2(hasCode(st, Code::WriteFailed), st.message().c_str());
  }
}

void TestSession::injectedWriteFailureKeepsPreviousFile() {
  QTemporaryDir dir;
  const std::string p = dir.path().toStdString() + "/keep.h5";
  QVERIFY(writeSession(p, sess({gemmRun("v1")})).ok());
  const std::string before = readBytes(p);
  int calls = 0;
  WriteOptions opt;
  opt.fault_injection = [&](const std::string&) { return ++calls < 4; }; // fail at the 4th dataset
  Status st = writeSession(p, sess({gemmRun("v2"), gemmRun("v3")}), opt);
  QVERIFY(!st.ok());
  QVERIFY(hasCode(st, Code::WriteFailed));
  QCOMPARE(calls, 4);
  QVERIFY(readBytes(p) == before);
  QCOMPARE(otherFiles(dir.path().toStdString(), {"keep.h5"}), std::vector<std::string>{});
  auto r = loadSession(p);
  QVERIFY(r.ok());
  QCOMPARE(r.value.runs[0].id, std::string("v1"));
}

void TestSession::injectedFailureDuringAppendKeepsPreviousFile() {
  QTemporaryDir dir;
  const std::string p = dir.path().toStdString() + "/keep.h5";
  QVERIFY(appendRuns(p, {gemmRun("v1"), gemmRun("v2")}).ok());
  const std::string before = readBytes(p);
  // An append copies the file's bytes ("copy:file"), then writes the new run into the copy.
  for (const std::string failAt : {"copy:file", "/runs/v3/output/D"}) {
    WriteOptions opt;
    opt.fault_injection = [&](const std::string& what) { return what != failAt; };
    Status st = appendRuns(p, {gemmRun("v3")}, opt);
    QVERIFY2(!st.ok(), failAt.c_str());
    QVERIFY(readBytes(p) == before);
    QCOMPARE(otherFiles(dir.path().toStdString(), {"keep.h5"}), std::vector<std::string>{});
  }
}

void TestSession::cancelledSaveKeepsPreviousFile() {
  QTemporaryDir dir;
  const std::string p = dir.path().toStdString() + "/keep.h5";
  QVERIFY(writeSession(p, sess({gemmRun("v1")})).ok());
  const std::string before = readBytes(p);
  WriteOptions opt;
  int n = 0;
  opt.progress = [&](double, const std::string&) { return ++n < 3; };
  QVERIFY(!writeSession(p, sess({gemmRun("v2")}), opt).ok());
  QVERIFY(readBytes(p) == before);
  QCOMPARE(otherFiles(dir.path().toStdString(), {"keep.h5"}), std::vector<std::string>{});
}

void TestSession::badCallerDataIsRejectedBeforeWriting() {
  const std::string p = path("bad_caller.h5");
  Run r = gemmRun("a");
  r.datasets["oops"] = Dataset::float32({4, 4}, std::vector<float>(15), "1", "15 values for 16 slots");
  Status st = writeSession(p, sess({r}));
  QVERIFY(hasCode(st, Code::InvalidArgument));
  QVERIFY(st.message().find("15") != std::string::npos && st.message().find("16") != std::string::npos);
  QVERIFY(!fs::exists(p));
  QVERIFY(hasCode(writeSession(p, sess({gemmRun("bad id")})), Code::InvalidArgument));
  for (const char* bad : {"a//b", "a/../b", "./x", "x/", "metrics/x"}) {
    Run rr = gemmRun("a");
    rr.datasets[bad] = Dataset::float32({1}, {1.0f}, "1", "bad path");
    QVERIFY2(hasCode(writeSession(p, sess({rr})), Code::InvalidArgument), bad);
  }
  QVERIFY(hasCode(writeSession(p, sess({gemmRun("d"), gemmRun("d")})), Code::DuplicateRun));
  QVERIFY(!fs::exists(p));
  std::string why;
  QVERIFY(!isValidRunId("../x", &why));
  QVERIFY(!isValidRunId(".hidden", &why));
  QVERIFY(isValidRunId("gemm-E4M3FN_per-tensor.2", &why));
  // A non-ASCII character is named whole (U+00FC is the two bytes C3 BC in UTF-8), not its lead byte.
  QVERIFY(!isValidRunId("run-\xc3\xbc", &why));
  QCOMPARE(why,
           std::string("run id 'run-\xc3\xbc' contains '\xc3\xbc' (allowed: ASCII letters and digits, _ - . + =)"));
}

// A dataset's shape is the header's claim (a 5 kB file can declare 34 GB). A run dataset
// of 2^15 x 2^15 float64 (8 GiB = 8192 MiB) whose chunks were never written stores 0 bytes: more
// than 256 MiB and 1100:1 (beyond deflate's 1032:1), so the open leaves it out with a Corrupt
// warning — no read of any kind reaches it (neither read() nor the band-wise export, which would
// stream fill values without end). The run's other datasets still read.
void TestSession::declaredSizeIsCheckedBeforeReading() {
  const std::string p = path("claims.h5");
  QVERIFY(writeSession(p, sess({gemmRun("r1")})).ok());
  {
    hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    QVERIFY(f >= 0);
    const hsize_t dims[2] = {hsize_t(1) << 15, hsize_t(1) << 15}, chunk[2] = {64, 1024};
    hid_t sp = H5Screate_simple(2, dims, nullptr);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    hid_t ds = H5Dcreate2(f, "runs/r1/huge", H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    QVERIFY(ds >= 0);
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(sp);
    H5Fclose(f);
  }
  auto r = SessionReader::open(p);
  QVERIFY2(r.ok(), r.message().c_str());
  QVERIFY(hasCode(r, Code::Corrupt));
  QVERIFY2(r.message().find("runs/r1/huge") != std::string::npos &&
               r.message().find("declares 8192 MiB but the file stores only 0 bytes") != std::string::npos &&
               r.message().find("left out") != std::string::npos,
           r.message().c_str());
  const RunInfo* ri = r.value->info().find("r1");
  QVERIFY(ri);
  for (const auto& d : ri->datasets) QVERIFY(d.path != "huge");
  const auto big = r.value->read("r1", "huge");
  QVERIFY(!big.ok() && hasCode(big, Code::MissingDataset));
  QVERIFY(r.value->read("r1", ri->datasets.front().path).ok());
}

QTEST_APPLESS_MAIN(TestSession)
#include "test_session.moc"

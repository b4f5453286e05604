// Tests for FP8 checkpoints (core/io/fp8_checkpoint.h). Input files are built byte by byte here
// following the safetensors format (8-byte little-endian header length, JSON header, raw
// little-endian data); the FP8 code values are derived by hand in the comments (OCP OFP8 v1.0:
// E4M3FN bias 7, E5M2 bias 15), nothing is produced by the code under test.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include "experiment/training/checkpoint_run.h"
#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/gemm_run.h"
#include "io/fp8_checkpoint.h"
#include "io/tensor_import.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>

using namespace fp8lab;
using Code = Issue::Code;

namespace {

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string readBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::string le64(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s += char((v >> (8 * i)) & 0xFF);
  return s;
}

std::string f32Bytes(const std::vector<float>& v) {
  std::string s;
  for (float x : v) {
    const uint32_t u = std::bit_cast<uint32_t>(x);
    for (int i = 0; i < 4; ++i) s += char((u >> (8 * i)) & 0xFF);
  }
  return s;
}

/// A safetensors file: `header` is the JSON text, `data` the data section.
void writeSafetensors(const std::string& path, const std::string& header, const std::string& data) {
  writeBytes(path, le64(header.size()) + header + data);
}

/// A .npy v1.0 file: magic, version, header length, the dict padded to 64 bytes, raw data.
void writeNpy(const std::string& path, const std::string& descr, const std::string& shape, const std::string& data) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  writeBytes(path, std::string("\x93NUMPY\x01\x00", 8) + char(h.size() & 0xFF) + char(h.size() >> 8) + h + data);
}

bool hasCode(const Status& st, Code c) {
  for (const auto& i : st.issues)
    if (i.code == c) return true;
  return false;
}

uint32_t bits(float x) {
  return std::bit_cast<uint32_t>(x);
}

QString q(const std::string& s) {
  return QString::fromStdString(s);
}

/// Codes of the [2, 3] E4M3FN test weight, row-major: 0x38 = 0 0111 000 = 1.0, 0x40 = 0 1000 000 =
/// 2.0, 0xB8 = −1.0, 0x00 = 0, 0x3C = 0 0111 100 = 1.5, 0x01 = 2^−6 · 1/8 = 2^−9 (subnormal).
const std::string kCodes23 = std::string("\x38\x40\xB8\x00\x3C\x01", 6);

/// A shard holding, for each prefix P, the E4M3FN weight `P.weight` [2, 3] (kCodes23) and its
/// per-tensor scale `P.weight_scale` F32 [1] = 0.5.
void layerShard(const std::string& path, const std::vector<std::string>& prefixes) {
  std::string header = "{", data;
  for (const std::string& p : prefixes) {
    const size_t at = data.size();
    if (header.size() > 1) header += ",";
    header += "\"" + p + ".weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[" + std::to_string(at) +
              "," + std::to_string(at + 6) + "]},\"" + p +
              ".weight_scale\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" + std::to_string(at + 6) + "," +
              std::to_string(at + 10) + "]}";
    data += kCodes23 + f32Bytes({0.5f});
  }
  writeSafetensors(path, header + "}", data);
}

} // namespace

class TestFp8Checkpoint : public QObject {
  Q_OBJECT
  QTemporaryDir dir;
  std::string path(const char* n) const { return (dir.path() + QLatin1Char('/') + QLatin1String(n)).toStdString(); }

private Q_SLOTS:
  void perTensorScaleDecodes_data() {
    QTest::addColumn<QString>("scale_entry");
    QTest::addColumn<QByteArray>("scale_bytes");
    // 0.5 = 0x3F000000 in float32; as BF16 its top half 0x3F00.
    QTest::newRow("F32 scalar") << QStringLiteral("\"dtype\":\"F32\",\"shape\":[]")
                                << QByteArray("\x00\x00\x00\x3F", 4);
    QTest::newRow("F32 [1]") << QStringLiteral("\"dtype\":\"F32\",\"shape\":[1]") << QByteArray("\x00\x00\x00\x3F", 4);
    QTest::newRow("BF16 [1]") << QStringLiteral("\"dtype\":\"BF16\",\"shape\":[1]") << QByteArray("\x00\x3F", 2);
  }
  void perTensorScaleDecodes() {
    QFETCH(QString, scale_entry);
    QFETCH(QByteArray, scale_bytes);
    const std::string p = path("pt.safetensors");
    const std::string n = std::to_string(scale_bytes.size());
    const std::string header =
        "{\"l.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,6]},\"l.weight_scale\":{" +
        scale_entry.toStdString() + ",\"data_offsets\":[6," + std::to_string(6 + scale_bytes.size()) + "]}}";
    writeSafetensors(p, header, kCodes23 + scale_bytes.toStdString());
    auto r = importFp8Checkpoint(p, "l.weight");
    QVERIFY2(r.ok(), r.message().c_str());
    const QuantizedTensor& t = r.value;
    QCOMPARE(t.format->name(), std::string("E4M3FN"));
    QCOMPARE(t.rows, int64_t(2));
    QCOMPARE(t.cols, int64_t(3));
    QCOMPARE(t.codes, std::vector<uint8_t>({0x38, 0x40, 0xB8, 0x00, 0x3C, 0x01}));
    QCOMPARE(t.block, (ScaleBlock{2, 3}));
    QCOMPARE(t.dequant_scales, std::vector<float>({0.5f}));
    // decode(code) · 0.5: 0.5, 1.0, −0.5, 0, 0.75, 2^−10.
    const double want[6] = {0.5, 1.0, -0.5, 0.0, 0.75, std::ldexp(1.0, -10)};
    for (int i = 0; i < 6; ++i) QCOMPARE(t.dequantizedAt(i / 3, i % 3), want[i]);
  }

  void perChannelScale() {
    // [2, 1] compressed-tensors channel scales {4, 0.25}: row 0 × 4, row 1 × 0.25.
    const std::string p = path("pc.safetensors");
    writeSafetensors(p,
                     "{\"l.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,6]},"
                     "\"l.weight_scale\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[6,14]}}",
                     kCodes23 + f32Bytes({4.0f, 0.25f}));
    auto r = importFp8Checkpoint(p, "l.weight");
    QVERIFY2(r.ok(), r.message().c_str());
    QCOMPARE(r.value.block, (ScaleBlock{1, 3}));
    const double want[6] = {4.0, 8.0, -4.0, 0.0, 0.375, std::ldexp(1.0, -11)};
    for (int i = 0; i < 6; ++i) QCOMPARE(r.value.dequantizedAt(i / 3, i % 3), want[i]);
  }

  void blockScaleAtTheEdge() {
    // A 130×3 E5M2 weight, every code 0x3C = 0 01111 00 = 1.0, with DeepSeek-V3's weight_scale_inv
    // [ceil(130/128), ceil(3/128)] = [2, 1] = {2, 0.25}: rows 0..127 decode to 2, rows 128..129
    // (the partial bottom block) to 0.25.
    const std::string p = path("blk.safetensors");
    writeSafetensors(p,
                     "{\"m.weight\":{\"dtype\":\"F8_E5M2\",\"shape\":[130,3],\"data_offsets\":[0,390]},"
                     "\"m.weight_scale_inv\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[390,398]}}",
                     std::string(390, '\x3C') + f32Bytes({2.0f, 0.25f}));
    auto r = importFp8Checkpoint(p, "m.weight");
    QVERIFY2(r.ok(), r.message().c_str());
    QCOMPARE(r.value.format->name(), std::string("E5M2"));
    QCOMPARE(r.value.block, (ScaleBlock{128, 128}));
    QCOMPARE(r.value.dequantizedAt(0, 0), 2.0);
    QCOMPARE(r.value.dequantizedAt(127, 2), 2.0);
    QCOMPARE(r.value.dequantizedAt(128, 0), 0.25);
    QCOMPARE(r.value.dequantizedAt(129, 2), 0.25);
    auto l = listFp8Checkpoint(p);
    QVERIFY(l.ok());
    QCOMPARE(l.value.size(), size_t(1));
    QCOMPARE(l.value[0].layout, std::string("block128x128"));
    QCOMPARE(l.value[0].scale_name, std::string("m.weight_scale_inv"));
  }

  void shapeMismatchRefusedNamingBothShapes() {
    // [3, 1] fits no layout of [130, 3]: per tensor is [1], per channel [130, 1], blocks [2, 1].
    const std::string p = path("bad.safetensors");
    writeSafetensors(p,
                     "{\"m.weight\":{\"dtype\":\"F8_E5M2\",\"shape\":[130,3],\"data_offsets\":[0,390]},"
                     "\"m.weight_scale_inv\":{\"dtype\":\"F32\",\"shape\":[3,1],\"data_offsets\":[390,402]}}",
                     std::string(390, '\x3C') + f32Bytes({1.0f, 1.0f, 1.0f}));
    auto r = importFp8Checkpoint(p, "m.weight");
    QVERIFY(!r.ok());
    QVERIFY(hasCode(r, Code::WrongShape));
    const std::string m = r.errors();
    QVERIFY2(m.find("[3, 1]") != std::string::npos, m.c_str());
    QVERIFY2(m.find("[130, 3]") != std::string::npos, m.c_str());
    QVERIFY2(m.find("[2, 1] (128×128 blocks") != std::string::npos, m.c_str());
    QVERIFY2(m.find("[130, 1] (per output channel)") != std::string::npos, m.c_str());
    auto l = listFp8Checkpoint(p);
    QVERIFY(l.ok());
    QCOMPARE(l.value[0].layout, std::string());
    QVERIFY(!l.value[0].problem.empty());
  }

  void missingScaleAndWrongDtypesRefused() {
    const std::string p = path("noscale.safetensors");
    writeSafetensors(p, "{\"l.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,6]}}", kCodes23);
    auto r = importFp8Checkpoint(p, "l.weight");
    QVERIFY(hasCode(r, Code::NotFound));
    QVERIFY2(r.errors().find("l.weight_scale_inv") != std::string::npos, r.errors().c_str());
    QVERIFY2(r.errors().find("'l.weight_scale'") != std::string::npos, r.errors().c_str());

    // An F64 scale: not a scale dtype.
    const std::string p2 = path("f64scale.safetensors");
    writeSafetensors(p2,
                     "{\"l.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,6]},"
                     "\"l.weight_scale\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[6,14]}}",
                     kCodes23 + std::string(8, '\0'));
    auto r2 = importFp8Checkpoint(p2, "l.weight");
    QVERIFY(hasCode(r2, Code::MalformedInput));
    QVERIFY2(r2.errors().find("F64") != std::string::npos, r2.errors().c_str());

    // A U8 "weight" is not FP8.
    const std::string p3 = path("u8.safetensors");
    writeSafetensors(p3,
                     "{\"l.weight\":{\"dtype\":\"U8\",\"shape\":[2,3],\"data_offsets\":[0,6]},"
                     "\"l.weight_scale\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[6,10]}}",
                     kCodes23 + f32Bytes({1.0f}));
    auto r3 = importFp8Checkpoint(p3, "l.weight");
    QVERIFY(hasCode(r3, Code::MalformedInput));
    QVERIFY2(r3.errors().find("U8 is not an FP8 dtype") != std::string::npos, r3.errors().c_str());

    // An explicit scale name that is absent.
    Fp8ImportOptions opt;
    opt.scale_name = "l.s";
    auto r4 = importFp8Checkpoint(p, "l.weight", opt);
    QVERIFY(hasCode(r4, Code::NotFound));
    QVERIFY2(r4.errors().find("l.s") != std::string::npos, r4.errors().c_str());
  }

  void explicitScaleName() {
    const std::string p = path("named.safetensors");
    writeSafetensors(p,
                     "{\"l.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,6]},"
                     "\"l.s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[6,10]}}",
                     kCodes23 + f32Bytes({8.0f}));
    Fp8ImportOptions opt;
    opt.scale_name = "l.s";
    auto r = importFp8Checkpoint(p, "l.weight", opt);
    QVERIFY2(r.ok(), r.message().c_str());
    QCOMPARE(r.value.dequantizedAt(0, 1), 16.0); // 0x40 = 2 · 8
  }

  void exportImportRoundTripBitForBit_data() {
    QTest::addColumn<int>("layout");
    QTest::addColumn<bool>("e5m2");
    QTest::newRow("per_tensor") << int(Fp8ScaleLayout::PerTensor) << false;
    QTest::newRow("per_channel") << int(Fp8ScaleLayout::PerChannel) << false;
    QTest::newRow("block128") << int(Fp8ScaleLayout::Block) << false;
    QTest::newRow("per_channel E5M2") << int(Fp8ScaleLayout::PerChannel) << true;
    QTest::newRow("block128 E5M2") << int(Fp8ScaleLayout::Block) << true;
  }
  void exportImportRoundTripBitForBit() {
    QFETCH(int, layout);
    QFETCH(bool, e5m2);
    const int64_t rows = 130, cols = 200;
    std::vector<float> w(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        w[static_cast<size_t>(i * cols + j)] = float((i * 7 + j * 3) % 17 - 8) * 0.01f * float(1 + i / 64);
    const Format& fmt = e5m2 ? Format::E5M2() : Format::E4M3FN();
    const QuantizedTensor qt = quantizeForCheckpoint(w, rows, cols, Fp8ScaleLayout(layout), fmt);
    auto tensors = fp8WeightTensors("fc1", qt, Fp8ScaleLayout(layout));
    tensors.push_back(float32Tensor("fc1.bias", std::vector<float>(rows, 0.5f), 0, rows));
    const std::string p = path("rt.safetensors");
    const Status st = fp8lab::writeSafetensors(p, tensors, {{"producer", "test"}});
    QVERIFY2(st.ok(), st.message().c_str());
    // The 8-byte length is a multiple of 8 and the header is JSON followed by the data.
    const std::string raw = readBytes(p);
    uint64_t hlen = 0;
    for (int k = 0; k < 8; ++k) hlen |= uint64_t(uint8_t(raw[size_t(k)])) << (8 * k);
    QCOMPARE(hlen % 8, uint64_t(0));
    // per tensor 1; per channel one per row; blocks ceil(130/128) × ceil(200/128)
    const int64_t nscales = layout == int(Fp8ScaleLayout::PerTensor)    ? 1
                            : layout == int(Fp8ScaleLayout::PerChannel) ? rows
                                                                        : 2 * 2;
    QCOMPARE(raw.size(), size_t(8 + hlen + rows * cols + 4 * nscales + 4 * rows));
    auto r = importFp8Checkpoint(p, "fc1.weight");
    QVERIFY2(r.ok(), r.message().c_str());
    QCOMPARE(r.value.codes, qt.codes);
    QCOMPARE(r.value.format, &fmt);
    QCOMPARE(r.value.dequant_scales.size(), size_t(nscales));
    for (size_t i = 0; i < qt.dequant_scales.size(); ++i)
      QCOMPARE(bits(r.value.dequant_scales[i]), bits(qt.dequant_scales[i]));
    const ScaleBlock want_block = layout == int(Fp8ScaleLayout::PerTensor)    ? ScaleBlock{rows, cols}
                                  : layout == int(Fp8ScaleLayout::PerChannel) ? ScaleBlock{1, cols}
                                                                              : ScaleBlock{128, 128};
    QCOMPARE(r.value.block, want_block);
    // Per tensor: the amax is 8 · 0.01 · 3 (rows 128..129), TE's quant multiplier f32(448 / f32(0.24))
    // and the stored dequant scale is its float32 reciprocal.
    // Per channel, row 0: w[0, j] = ((3j) % 17 − 8) · 0.01, amax 8 · 0.01 = 0.08 (j = 0), torchao's
    // s = f32(max / 0.08) in float64, stored f32(1 / s).
    if (layout == int(Fp8ScaleLayout::PerChannel)) {
      const float s = static_cast<float>(fmt.maxFinite() / static_cast<double>(8 * 0.01f));
      QCOMPARE(bits(r.value.dequant_scales[0]), bits(1.0f / s));
    }
    if (layout == int(Fp8ScaleLayout::PerTensor)) {
      const float amax = 8 * 0.01f * 3;
      const float s = 448.0f / amax;
      QCOMPARE(bits(r.value.dequant_scales[0]), bits(1.0f / s));
    }
  }

  void requantizeWithTheSameRecipeKeepsTheCodes() {
    // A per-tensor E4M3FN tensor whose amax code is 448 (0x7E): requantizing its decoded values
    // with te_current finds amax = 448 · s, the same scale, and so the same codes.
    const std::string p = path("rq.safetensors");
    writeSafetensors(p,
                     "{\"l.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[1,4],\"data_offsets\":[0,4]},"
                     "\"l.weight_scale\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                     std::string("\x7E\x38\xC0\x01", 4) + f32Bytes({0.125f}));
    auto r = importFp8Checkpoint(p, "l.weight");
    QVERIFY2(r.ok(), r.message().c_str());
    const auto te = scalingPreset("te_current");
    const Fp8Requantized rq = requantizeCheckpointTensor(r.value, Format::E4M3FN(), *te);
    // x = {448, 1, −2, 2^−9} · 0.125 = {56, 0.125, −0.25, 2^−12}
    QCOMPARE(rq.original, std::vector<double>({56.0, 0.125, -0.25, std::ldexp(1.0, -12)}));
    QCOMPARE(rq.codes_changed, int64_t(0));
    QVERIFY(std::isinf(rq.sqnr_db));
    // MX (mx_rceil, block 32 along the columns): amax 56 → E8M0 = ceil(log2(56/448)) = −3, scale 2^−3:
    // the same values and codes again.
    const auto mx = scalingPreset("mx_rceil");
    const Fp8Requantized rm = requantizeCheckpointTensor(r.value, Format::E4M3FN(), *mx);
    QCOMPARE(rm.requantized.dequant_scales, std::vector<float>({0.125f}));
    QCOMPARE(rm.requantized.codes, std::vector<uint8_t>({0x7E, 0x38, 0xC0, 0x01}));
  }

  void gemmCheckpointOperandMatchesNpyOperands() {
    // A = x.weight [2, 3] (kCodes23, per-tensor 0.5): {0.5, 1, −0.5; 0, 0.75, 2^−10}.
    // W = w.weight [2, 3] as a Linear weight [out, in], codes {0x40 0x38 0x40; 0x38 0x38 0x38},
    // per-channel scales {1, 0.25}; B = Wᵀ [3, 2] = {2, 0.25; 1, 0.25; 2, 0.25}.
    // D = A·B: D00 = 1 + 1 − 1 = 1, D01 = 0.25 · (0.5 + 1 − 0.5) = 0.25,
    //          D10 = 0.75 + 2^−9, D11 = 0.25 · (0.75 + 2^−10).
    const std::string ck = path("g.safetensors");
    writeSafetensors(ck,
                     "{\"w.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,6]},"
                     "\"w.weight_scale\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[6,14]},"
                     "\"x.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[14,20]},"
                     "\"x.weight_scale\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[20,24]}}",
                     std::string("\x40\x38\x40\x38\x38\x38", 6) + f32Bytes({1.0f, 0.25f}) + kCodes23 +
                         f32Bytes({0.5f}));
    writeNpy(path("ga.npy"), "|u1", "(2, 3)", kCodes23);
    writeNpy(path("gb.npy"), "|u1", "(3, 2)", std::string("\x40\x38\x38\x38\x40\x38", 6));
    writeNpy(path("gbs.npy"), "<f4", "(1, 2)", f32Bytes({1.0f, 0.25f}));
    GemmExperimentConfig c1, c2;
    const std::string j1 = "{\"accumulation\": \"fp32\", \"a\": {\"checkpoint\": \"" + ck +
                           "\", \"tensor\": \"x.weight\"}, \"b\": {\"checkpoint\": \"" + ck +
                           "\", \"tensor\": \"w.weight\", \"transpose\": true}}";
    QCOMPARE(parseGemmConfig(Json::parse(j1), &c1), std::string());
    const std::string j2 = "{\"accumulation\": \"fp32\", \"a\": {\"codes\": \"" + path("ga.npy") +
                           "\", \"format\": \"E4M3FN\", \"scales\": 0.5}, \"b\": {\"codes\": \"" + path("gb.npy") +
                           "\", \"format\": \"E4M3FN\", \"scales\": \"" + path("gbs.npy") + "\", \"block\": [3, 1]}}";
    QCOMPARE(parseGemmConfig(Json::parse(j2), &c2), std::string());
    auto be = makeCpuGemmBackend();
    auto r1 = runGemmExperimentRun(c1, gemmConfigJson(c1).dump(), "ck", *be);
    auto r2 = runGemmExperimentRun(c2, gemmConfigJson(c2).dump(), "npy", *be);
    QVERIFY2(r1.ok(), r1.message().c_str());
    QVERIFY2(r2.ok(), r2.message().c_str());
    const Dataset* d1 = r1.value.find("output/D");
    const Dataset* d2 = r2.value.find("output/D");
    QVERIFY(d1 && d2);
    QCOMPARE(d1->shape, std::vector<int64_t>({2, 2}));
    const std::vector<float> want = {1.0f, 0.25f, float(0.75 + std::ldexp(1.0, -9)),
                                     float(0.25 * (0.75 + std::ldexp(1.0, -10)))};
    for (size_t i = 0; i < 4; ++i) {
      QCOMPARE(bits(d1->f32[i]), bits(want[i]));
      QCOMPARE(bits(d1->f32[i]), bits(d2->f32[i]));
    }
    // The stored config names the checkpoint and reads back to the same operands.
    GemmExperimentConfig back;
    QCOMPARE(parseGemmConfig(Json::parse(r1.value.config_json), &back), std::string());
    QCOMPARE(back.b.pre.checkpoint, ck);
    QCOMPARE(back.b.pre.checkpoint_tensor, std::string("w.weight"));
    QVERIFY(back.b.pre.transpose);
    QCOMPARE(back.format_a, std::string("E4M3FN"));
  }

  void gemmCheckpointErrorsNameTheKey() {
    const std::string ck = path("g.safetensors"); // written by the test above
    const std::string text = "{\n  \"a\": {\"checkpoint\": \"" + ck + "\",\n        \"tensor\": \"nope.weight\"},\n" +
                             "  \"b\": {\"distribution\": \"normal\"}\n}";
    const JsonDocument doc = JsonDocument::parse(text);
    GemmExperimentConfig c;
    const std::string m = parseGemmConfig(doc.root(), &c, &doc);
    QVERIFY2(m.find("a.tensor") != std::string::npos, m.c_str());
    QVERIFY2(m.find("no tensor of that name") != std::string::npos, m.c_str());
    QVERIFY2(m.find("line 3") != std::string::npos, m.c_str());
    GemmExperimentConfig c2;
    const std::string m2 = parseGemmConfig(
        Json::parse("{\"a\": {\"checkpoint\": \"" + ck + "\", \"tensor\": \"x.weight\", \"codes\": \"x\"}}"), &c2);
    QVERIFY2(m2.find("a.codes") != std::string::npos, m2.c_str());
    GemmExperimentConfig c3;
    const std::string m3 = parseGemmConfig(
        Json::parse("{\"a\": {\"checkpoint\": \"" + path("none.safetensors") + "\", \"tensor\": \"x.weight\"}}"), &c3);
    QVERIFY2(m3.find("a.checkpoint") != std::string::npos, m3.c_str());
    QVERIFY2(m3.find("no such file") != std::string::npos, m3.c_str());
  }

  // A checkpoint as a session run (checkpoint_run.h): one weight [1, 256] in two 128-blocks with
  // weight_scale_inv [0.5, 4]. Block 0: codes 0x38 (1.0) with 0x40 (2.0) at column 5 → x = 0.5 and
  // 1.0; block 1: codes 0x30 (0.5) → x = 2.0. Per block: amax 1 and 2, min non-zero 0.5 and 2,
  // range 1 and 0 bits, exact (SQNR +Inf: every x is decode · scale in float32 exactly).
  // What-if mx_rceil (E4M3FN, 1×32 along the row): 2^ceil(log2(amax/448)) = 2^−8 for the block
  // holding the 1.0, 2^−9 for the other three of checkpoint block 0, 2^−7 for the four of block 1;
  // log2 mean (−8 − 3·9 − 4·7)/8 = −7.875; every element lands on 256: exact.
  void checkpointAsASessionRun() {
    std::string codes(256, '\x38');
    codes[5] = '\x40';
    for (int j = 128; j < 256; ++j) codes[static_cast<size_t>(j)] = '\x30';
    const std::string scales("\x00\x00\x00\x3F\x00\x00\x80\x40", 8); // 0.5f, 4.0f
    const std::string p = path("run.safetensors");
    writeSafetensors(p,
                     "{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[1,256],\"data_offsets\":[0,256]},"
                     "\"w_scale_inv\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[256,264]}}",
                     codes + scales);
    CheckpointRunOptions o;
    std::string why;
    o.what_if.push_back(*parseWhatIfRecipe("mx_rceil", &why));
    const auto r = checkpointRun(p, "ck", o);
    QVERIFY2(r.ok(), r.message().c_str());
    const Run& run = r.value;
    QCOMPARE(run.type, std::string("checkpoint"));
    QVERIFY(run.find("quantized/w_codes"));
    QCOMPARE(run.find("block_stats/w/map_scale")->f32, (std::vector<float>{0.5f, 4.0f}));
    QCOMPARE(run.find("block_stats/w/map_amax")->f32, (std::vector<float>{1.0f, 2.0f}));
    QCOMPARE(run.find("block_stats/w/map_min_nonzero")->f32, (std::vector<float>{0.5f, 2.0f}));
    QCOMPARE(run.find("block_stats/w/map_dynamic_range")->f32, (std::vector<float>{1.0f, 0.0f}));
    QVERIFY(std::isinf(run.find("block_stats/w/sqnr_db")->f32.at(0)));
    QCOMPARE(attrInt(run.group_attrs.at("block_stats/w"), "grid_cols").value_or(0), int64_t{2});
    QCOMPARE(run.find("what_if/mx_rceil/w/log2_scale_mean")->f32, (std::vector<float>{-7.875f}));
    QCOMPARE(run.find("what_if/mx_rceil/w/log2_scale_min")->f32, (std::vector<float>{-9.0f}));
    QVERIFY(std::isinf(run.find("what_if/mx_rceil/w/sqnr_db")->f32.at(0)));
    QCOMPARE(run.find("what_if/steps")->i64, (std::vector<int64_t>{0}));
    // a tensor that is not in the file is named
    CheckpointRunOptions bad;
    bad.tensors = {"nope"};
    const auto e = checkpointRun(p, "ck", bad);
    QVERIFY(!e.ok());
    QVERIFY2(e.errors().find("no FP8 tensor 'nope'") != std::string::npos, e.errors().c_str());
  }

  // A sharded checkpoint (Hugging Face model.safetensors.index.json): the weight in one shard, its
  // block scale in the other; listing and importing through the index give what one file gives.
  void shardedCheckpointThroughItsIndex() {
    const int64_t rows = 130, cols = 200;
    std::vector<float> w(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 23) - 11) * 0.03f;
    const QuantizedTensor qt = quantizeForCheckpoint(w, rows, cols, Fp8ScaleLayout::Block);
    auto t = fp8WeightTensors("fc1", qt, Fp8ScaleLayout::Block); // fc1.weight, fc1.weight_scale_inv
    QCOMPARE(t.size(), size_t{2});
    QDir().mkpath(QString::fromStdString(path("sh")));
    QVERIFY(fp8lab::writeSafetensors(path("sh/model-00001-of-00002.safetensors"), {t[0]}).ok());
    QVERIFY(fp8lab::writeSafetensors(path("sh/model-00002-of-00002.safetensors"), {t[1]}).ok());
    const std::string index = path("sh/model.safetensors.index.json");
    {
      std::ofstream f(index);
      f << R"({"metadata": {"total_size": 26312}, "weight_map": {"fc1.weight": "model-00001-of-00002.safetensors",
             "fc1.weight_scale_inv": "model-00002-of-00002.safetensors"}})";
    }
    const auto listed = listFp8Checkpoint(index);
    QVERIFY2(listed.ok(), listed.message().c_str());
    QCOMPARE(listed.value.size(), size_t{1});
    QCOMPARE(listed.value[0].scale_name, std::string("fc1.weight_scale_inv"));
    QCOMPARE(listed.value[0].layout, std::string("block128x128"));
    const auto r = importFp8Checkpoint(index, "fc1.weight");
    QVERIFY2(r.ok(), r.message().c_str());
    QCOMPARE(r.value.codes, qt.codes);
    QCOMPARE(r.value.dequant_scales, qt.dequant_scales);
    // an index that places a tensor in a shard that lacks it lists with a warning naming both
    // (misplacedTensorIsListedWithAWarningAndRefusedOnImport has the details)
    const std::string bad = path("sh/bad.safetensors.index.json");
    {
      std::ofstream f(bad);
      f << R"({"weight_map": {"fc1.weight": "model-00002-of-00002.safetensors"}})";
    }
    const auto e = listFp8Checkpoint(bad);
    QVERIFY2(e.ok(), e.message().c_str());
    QCOMPARE(e.value.size(), size_t{0});
    QCOMPARE(q(e.message()), q("warning: malformed input at " + bad +
                               ":fc1.weight: the shard index puts tensor 'fc1.weight' in "
                               "model-00002-of-00002.safetensors, which lacks it; no shard of the index holds it"));
  }

  // A shard file the index names is missing: the error names the shard, the index and what the
  // index maps to it (3 tensors, the first by name), for list, import and a session run alike.
  void shardMissingNamesTheIndexAndItsTensors() {
    const std::string d = path("miss");
    QDir().mkpath(q(d));
    layerShard(d + "/model-00001-of-00002.safetensors", {"layers.0"});
    const std::string index = d + "/model.safetensors.index.json";
    writeBytes(index, R"({"weight_map": {"layers.0.weight": "model-00001-of-00002.safetensors",
        "layers.0.weight_scale": "model-00001-of-00002.safetensors",
        "layers.2.weight": "model-00002-of-00002.safetensors",
        "layers.1.weight_scale": "model-00002-of-00002.safetensors",
        "layers.1.weight": "model-00002-of-00002.safetensors"}})");
    const std::string want = "not found at " + d +
                             "/model-00002-of-00002.safetensors (named by model.safetensors.index.json for 3 "
                             "tensors, first 'layers.1.weight'): no such file";
    const auto l = listFp8Checkpoint(index);
    QVERIFY(!l.ok());
    QCOMPARE(q(l.errors()), q(want));
    QVERIFY(hasCode(l, Code::NotFound));
    const auto i = importFp8Checkpoint(index, "layers.0.weight");
    QCOMPARE(q(i.errors()), q(want));
    const auto r = checkpointRun(index, "model", {});
    QCOMPARE(q(r.errors()), q(want));
    // one tensor: no "first"
    const std::string one = d + "/one.safetensors.index.json";
    writeBytes(one, R"({"weight_map": {"layers.0.weight": "model-00001-of-00002.safetensors",
        "layers.0.weight_scale": "gone.safetensors"}})");
    QCOMPARE(q(listFp8Checkpoint(one).errors()),
             q("not found at " + d +
               "/gone.safetensors (named by one.safetensors.index.json for 1 tensor, 'layers.0.weight_scale'): no "
               "such file"));
  }

  // An index that misplaces tensors: layers.0.weight is mapped to shard 2 but is in shard 1,
  // layers.1.bias is in no shard, and layers.2.weight's scale is mapped to shard 2 but is in shard
  // 1. Listing gives one warning per misplaced tensor and lists every FP8 weight; importing a
  // misplaced weight, or a weight whose scale is misplaced, fails naming the tensor, the shard the
  // index names and the shard that holds it; the well-placed layers.1.weight imports.
  void misplacedTensorIsListedWithAWarningAndRefusedOnImport() {
    const std::string d = path("misplaced");
    QDir().mkpath(q(d));
    layerShard(d + "/model-00001-of-00002.safetensors", {"layers.0", "layers.2"});
    layerShard(d + "/model-00002-of-00002.safetensors", {"layers.1"});
    const std::string index = d + "/model.safetensors.index.json";
    writeBytes(index, R"({"weight_map": {"layers.0.weight": "model-00002-of-00002.safetensors",
        "layers.0.weight_scale": "model-00001-of-00002.safetensors",
        "layers.1.weight": "model-00002-of-00002.safetensors",
        "layers.1.weight_scale": "model-00002-of-00002.safetensors",
        "layers.1.bias": "model-00002-of-00002.safetensors",
        "layers.2.weight": "model-00001-of-00002.safetensors",
        "layers.2.weight_scale": "model-00002-of-00002.safetensors"}})");
    const std::string w0 = "the shard index puts tensor 'layers.0.weight' in model-00002-of-00002.safetensors, "
                           "which lacks it; model-00001-of-00002.safetensors holds a tensor of that name, which "
                           "is not read in its place";
    const std::string b1 = "the shard index puts tensor 'layers.1.bias' in model-00002-of-00002.safetensors, which "
                           "lacks it; no shard of the index holds it";
    const std::string s2 = "the shard index puts tensor 'layers.2.weight_scale' in "
                           "model-00002-of-00002.safetensors, which lacks it; model-00001-of-00002.safetensors "
                           "holds a tensor of that name, which is not read in its place";

    const auto l = listFp8Checkpoint(index);
    QVERIFY2(l.ok(), l.message().c_str());
    QCOMPARE(q(l.message()), q("warning: malformed input at " + index + ":layers.0.weight: " + w0 + "\n" +
                               "warning: malformed input at " + index + ":layers.1.bias: " + b1 + "\n" +
                               "warning: malformed input at " + index + ":layers.2.weight_scale: " + s2));
    QCOMPARE(l.value.size(), size_t{3});
    QCOMPARE(l.value[0].name, std::string("layers.0.weight"));
    QCOMPARE(l.value[0].dtype, std::string("F8_E4M3")); // from the shard that holds it
    QCOMPARE(l.value[0].shape, (std::vector<int64_t>{2, 3}));
    QCOMPARE(q(l.value[0].problem), q(w0));
    QCOMPARE(l.value[1].name, std::string("layers.1.weight"));
    QCOMPARE(l.value[1].layout, std::string("per_tensor"));
    QCOMPARE(l.value[1].problem, std::string());
    QCOMPARE(l.value[2].name, std::string("layers.2.weight"));
    QCOMPARE(q(l.value[2].problem), q("scale layers.2.weight_scale: " + s2));

    const auto i0 = importFp8Checkpoint(index, "layers.0.weight");
    QVERIFY(!i0.ok());
    QCOMPARE(q(i0.errors()), q("malformed input at " + index + ":layers.0.weight: " + w0));
    const auto i2 = importFp8Checkpoint(index, "layers.2.weight");
    QCOMPARE(q(i2.errors()),
             q("malformed input at " + index + ":layers.2.weight_scale: the scale of 'layers.2.weight': " + s2));
    QCOMPARE(q(fp8CheckpointFormat(index, "layers.1.bias").errors()),
             q("malformed input at " + index + ":layers.1.bias: " + b1));
    const auto i1 = importFp8Checkpoint(index, "layers.1.weight");
    QVERIFY2(i1.ok(), i1.message().c_str());
    QCOMPARE(i1.value.codes, std::vector<uint8_t>({0x38, 0x40, 0xB8, 0x00, 0x3C, 0x01}));
    QCOMPARE(i1.value.dequant_scales, std::vector<float>({0.5f}));

    // a session run takes what can be read and keeps the warnings
    const auto all = checkpointRun(index, "model", {});
    QVERIFY2(all.ok(), all.message().c_str());
    QCOMPARE(attrInt(all.value.attrs, "tensors").value_or(0), int64_t{1});
    QVERIFY(all.value.find("quantized/layers.1.weight_codes"));
    QCOMPARE(q(all.message()), q(l.message() + "\nwarning: malformed input at " + index +
                                 ":layers.2.weight: not imported: scale layers.2.weight_scale: " + s2));
    CheckpointRunOptions named;
    named.tensors = {"layers.0.weight"};
    QCOMPARE(q(checkpointRun(index, "model", named).errors()),
             q("malformed input at " + index + "#layers.0.weight: " + w0));
    named.tensors = {"layers.1.bias"};
    QCOMPARE(q(checkpointRun(index, "model", named).errors()),
             q("malformed input at " + index + ":layers.1.bias: " + b1));
  }

  // A shard index is recognized by its content whatever its name: JSON text with a top-level
  // "weight_map" object. Other JSON is refused as JSON; a safetensors file whose header length
  // starts with the byte '{' (123 = 0x7B) is still read as safetensors.
  void jsonIndexDetectedByContent() {
    const std::string d = path("byjson");
    QDir().mkpath(q(d));
    layerShard(d + "/part-a.safetensors", {"layers.0"});
    layerShard(d + "/part-b.safetensors", {"layers.1"});
    const std::string index = d + "/weights.json";
    writeBytes(index, "\n  "
                      R"({"weight_map": {"layers.0.weight": "part-a.safetensors",
        "layers.0.weight_scale": "part-a.safetensors", "layers.1.weight": "part-b.safetensors",
        "layers.1.weight_scale": "part-b.safetensors"}})");
    const auto l = listFp8Checkpoint(index);
    QVERIFY2(l.ok(), l.message().c_str());
    QCOMPARE(l.value.size(), size_t{2});
    QCOMPARE(l.value[0].name, std::string("layers.0.weight"));
    QCOMPARE(l.value[1].layout, std::string("per_tensor"));
    const auto i = importFp8Checkpoint(index, "layers.1.weight");
    QVERIFY2(i.ok(), i.message().c_str());
    QCOMPARE(i.value.dequant_scales, std::vector<float>({0.5f}));
    QVERIFY2(checkpointRun(index, "weights", {}).ok(), "checkpointRun of weights.json");

    const std::string other = d + "/config.json";
    writeBytes(other, R"({"architectures": ["X"], "weight_map": ["not", "an", "object"]})");
    QCOMPARE(q(listFp8Checkpoint(other).errors()),
             q("malformed input at " + other +
               ": a JSON file, not a safetensors file; as a shard index it lacks the \"weight_map\" object "
               "{tensor: file}"));
    const std::string broken = d + "/broken.json";
    writeBytes(broken, R"({"weight_map": {"layers.0.weight": )");
    const std::string m = listFp8Checkpoint(broken).errors();
    const std::string prefix = "malformed input at " + broken +
                               ": starts like JSON text, not like a safetensors file (an 8-byte header length), "
                               "but is not JSON: ";
    QVERIFY2(m.compare(0, prefix.size(), prefix) == 0, m.c_str());
    // nlohmann's "[json.exception.parse_error.101] " is cut; the position stays
    QCOMPARE(q(m.substr(prefix.size(), 30)), q("parse error at line 1, column "));

    std::string header = R"({"w":{"dtype":"F8_E4M3","shape":[2,3],"data_offsets":[0,6]},)"
                         R"("w_scale":{"dtype":"F32","shape":[1],"data_offsets":[6,10]}})";
    QCOMPARE(header.size(), size_t{120}); // padded with spaces to 123
    header.resize(123, ' ');
    const std::string brace = d + "/brace.safetensors";
    writeSafetensors(brace, header, kCodes23 + f32Bytes({0.5f}));
    QCOMPARE(readBytes(brace).front(), '{');
    const auto b = importFp8Checkpoint(brace, "w");
    QVERIFY2(b.ok(), b.message().c_str());
    QCOMPARE(b.value.dequant_scales, std::vector<float>({0.5f}));
  }

  // The default run id: a shard index gives the model's name, as its single-file form does.
  void defaultRunIdOfAnIndexIsTheModelName_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("id");
    QTest::newRow("single file") << "/m/model.safetensors"
                                 << "model";
    QTest::newRow("index") << "/m/model.safetensors.index.json"
                           << "model";
    QTest::newRow("relative index") << "model.safetensors.index.json"
                                    << "model";
    QTest::newRow("dotted index") << "ds.v3.safetensors.index.json"
                                  << "ds.v3";
    QTest::newRow("dotted file") << "ds.v3.safetensors"
                                 << "ds.v3";
    QTest::newRow("index without .safetensors") << "model.index.json"
                                                << "model";
    QTest::newRow("index by content") << "/m/weights.json"
                                      << "weights";
    QTest::newRow("space") << "DeepSeek V3.safetensors"
                           << "DeepSeek_V3";
    QTest::newRow("non-ASCII") << "mod\u00e8le.safetensors"
                               << "mod_le";
    QTest::newRow("no name") << "/m/.safetensors"
                             << "checkpoint";
    QTest::newRow("dot first") << ".x.safetensors"
                               << "checkpoint.x";
  }
  void defaultRunIdOfAnIndexIsTheModelName() {
    QFETCH(QString, file);
    QFETCH(QString, id);
    QCOMPARE(q(defaultCheckpointRunId(file.toStdString())), id);
  }

  // A block128 export of a weight within one 128×128 block ([10, 128], like an MLP's last layer)
  // stores DeepSeek-V3's `weight_scale_inv` as a [1, 1] grid, which reads back as that block; the
  // per-tensor export of the same weight keeps `weight_scale` [1]. w = 1.0 everywhere but
  // w[0, 0] = 448: amax 448, sf = 448 / 448 = 1, codes 0x7E (448) and 0x38 (1.0).
  void blockExportOfASmallWeightKeepsTheGrid() {
    std::vector<float> w(10 * 128, 1.0f);
    w[0] = 448.0f;
    const QuantizedTensor qb = quantizeForCheckpoint(w, 10, 128, Fp8ScaleLayout::Block);
    QCOMPARE(qb.dequant_scales, std::vector<float>({1.0f}));
    const auto tb = fp8WeightTensors("fc3", qb, Fp8ScaleLayout::Block);
    QCOMPARE(tb.size(), size_t{2});
    QCOMPARE(tb[1].name, std::string("fc3.weight_scale_inv"));
    QCOMPARE(tb[1].shape, (std::vector<int64_t>{1, 1}));
    const std::string p = path("small.safetensors");
    QVERIFY(fp8lab::writeSafetensors(p, tb).ok());
    const auto l = listFp8Checkpoint(p);
    QVERIFY2(l.ok(), l.message().c_str());
    QCOMPARE(l.value.size(), size_t{1});
    QCOMPARE(l.value[0].scale_name, std::string("fc3.weight_scale_inv"));
    QCOMPARE(l.value[0].scale_shape, (std::vector<int64_t>{1, 1}));
    QCOMPARE(l.value[0].layout, std::string("block128x128"));
    const auto r = importFp8Checkpoint(p, "fc3.weight");
    QVERIFY2(r.ok(), r.message().c_str());
    QCOMPARE(r.value.block, (ScaleBlock{128, 128}));
    QCOMPARE(r.value.codes[0], uint8_t{0x7E});
    QCOMPARE(r.value.codes[1], uint8_t{0x38});
    QCOMPARE(r.value.dequantizedAt(9, 127), 1.0);

    const QuantizedTensor qt = quantizeForCheckpoint(w, 10, 128, Fp8ScaleLayout::PerTensor);
    const auto tt = fp8WeightTensors("fc3", qt, Fp8ScaleLayout::PerTensor);
    QCOMPARE(tt[1].name, std::string("fc3.weight_scale"));
    QCOMPARE(tt[1].shape, (std::vector<int64_t>{1}));
    // the layout must fit the scale blocks: per-tensor blocks are not one scale per row
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fp8WeightTensors("fc3", qt, Fp8ScaleLayout::PerChannel));

    // a [1, 1] `weight_scale` (not the block grid's name) stays per tensor
    const std::string p2 = path("one.safetensors");
    writeSafetensors(p2,
                     "{\"l.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,6]},"
                     "\"l.weight_scale\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[6,10]}}",
                     kCodes23 + f32Bytes({0.5f}));
    QCOMPARE(listFp8Checkpoint(p2).value.at(0).layout, std::string("per_tensor"));
    QCOMPARE(importFp8Checkpoint(p2, "l.weight").value.block, (ScaleBlock{2, 3}));
  }

  // `list` marks as not importable what `import` refuses from the header: data_offsets that do not
  // span the shape (weight a: 5 bytes for [2, 3] F8_E4M3 = 6; c's F32 [1] scale: 8 bytes for 4), and
  // an 8-bit float dtype that is not read (b: F8_E4M3FNUZ); an F8_E8M0 scale (d's) is not listed as
  // a tensor of its own but as its weight's scale dtype.
  void listMarksWhatImportRefuses() {
    const std::string p = path("refused.safetensors");
    writeSafetensors(p,
                     "{\"a.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,5]},"
                     "\"b.weight\":{\"dtype\":\"F8_E4M3FNUZ\",\"shape\":[2,3],\"data_offsets\":[5,11]},"
                     "\"b.weight_scale\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[11,15]},"
                     "\"c.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[15,21]},"
                     "\"c.weight_scale\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[21,29]},"
                     "\"d.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[29,35]},"
                     "\"d.weight_scale\":{\"dtype\":\"F8_E8M0\",\"shape\":[1],\"data_offsets\":[35,36]}}",
                     std::string(36, '\x38'));
    const auto l = listFp8Checkpoint(p);
    QVERIFY2(l.ok(), l.message().c_str());
    QCOMPARE(l.value.size(), size_t{4});
    QCOMPARE(q(l.value[0].problem), q("shape [2, 3] F8_E4M3 does not fit data_offsets spanning 5 bytes"));
    QCOMPARE(l.value[1].dtype, std::string("F8_E4M3FNUZ"));
    QCOMPARE(q(l.value[1].problem), q("dtype F8_E4M3FNUZ is not read (F8_E4M3, F8_E5M2 are)"));
    QCOMPARE(q(l.value[2].problem),
             q("scale c.weight_scale: shape [1] F32 does not fit data_offsets spanning 8 bytes"));
    QCOMPARE(l.value[3].name, std::string("d.weight"));
    QCOMPARE(q(l.value[3].problem), q("scale dtype F8_E8M0 (expected F32, BF16 or F16)"));
    QCOMPARE(
        q(importFp8Checkpoint(p, "a.weight").errors()),
        q("malformed input at " + p + ":a.weight: shape [2, 3] F8_E4M3 does not fit data_offsets spanning 5 bytes"));
    QCOMPARE(q(importFp8Checkpoint(p, "b.weight").errors()),
             q("malformed input at " + p + ":b.weight: dtype F8_E4M3FNUZ is not read (F8_E4M3, F8_E5M2 are)"));
    QCOMPARE(
        q(importFp8Checkpoint(p, "c.weight").errors()),
        q("malformed input at " + p + ":c.weight_scale: shape [1] F32 does not fit data_offsets spanning 8 bytes"));
  }

  // Scale values: none of the recipes stores a dequant scale ≤ 0 or non-finite, so those are refused
  // naming the index and where it applies; NaN codes are E4M3FN values (0x7F, 0xFF) and are read,
  // with a warning giving their count and the first.
  void badScaleValuesRefusedNanCodesWarned() {
    // [130, 3] E5M2 (codes 0x3C = 1.0) with weight_scale_inv [2, 1] = {2, −0.5}: block (1, 0) < 0
    const std::string neg = path("neg.safetensors");
    writeSafetensors(neg,
                     "{\"m.weight\":{\"dtype\":\"F8_E5M2\",\"shape\":[130,3],\"data_offsets\":[0,390]},"
                     "\"m.weight_scale_inv\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[390,398]}}",
                     std::string(390, '\x3C') + f32Bytes({2.0f, -0.5f}));
    QCOMPARE(q(importFp8Checkpoint(neg, "m.weight").errors()),
             q("malformed input at " + neg +
               ":m.weight_scale_inv: scale index 1 (block (1, 0)) is -0.5: a dequant scale is > 0 (amax / max, as "
               "every FP8 recipe stores it)"));
    // per channel {4, 0}: row 1 is 0
    const std::string zero = path("zero.safetensors");
    writeSafetensors(zero,
                     "{\"l.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,6]},"
                     "\"l.weight_scale\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[6,14]}}",
                     kCodes23 + f32Bytes({4.0f, 0.0f}));
    QCOMPARE(q(importFp8Checkpoint(zero, "l.weight").errors()),
             q("malformed input at " + zero +
               ":l.weight_scale: scale index 1 (row 1) is 0: a dequant scale is > 0 (amax / max, as every FP8 "
               "recipe stores it)"));
    // per tensor +Inf
    const std::string inf = path("inf.safetensors");
    writeSafetensors(inf,
                     "{\"l.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,6]},"
                     "\"l.weight_scale\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[6,10]}}",
                     kCodes23 + f32Bytes({INFINITY}));
    QCOMPARE(q(importFp8Checkpoint(inf, "l.weight").errors()),
             q("malformed input at " + inf + ":l.weight_scale: scale index 0 (the tensor's scale) is not finite"));
    // codes {0x38, 0x7F, 0xB8; 0x00, 0xFF, 0x01}: NaN at indices 1 and 4
    const std::string nan = path("nan.safetensors");
    writeSafetensors(nan,
                     "{\"l.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,6]},"
                     "\"l.weight_scale\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[6,10]}}",
                     std::string("\x38\x7F\xB8\x00\xFF\x01", 6) + f32Bytes({0.5f}));
    const auto r = importFp8Checkpoint(nan, "l.weight");
    QVERIFY2(r.ok(), r.message().c_str());
    QCOMPARE(q(r.message()),
             q("warning: malformed input at " + nan +
               ":l.weight: 2 codes are NaN (E4M3FN), the first at index 1 (row 0, col 1); read as NaN"));
    QVERIFY(std::isnan(r.value.dequantizedAt(0, 1)));
    QCOMPARE(r.value.dequantizedAt(0, 0), 0.5);
    // a session run keeps the warning
    QCOMPARE(q(checkpointRun(nan, "nan", {}).message()), q(r.message()));
  }

  // An import of every tensor skips those that cannot be imported with one warning each, in
  // list's words, and stores the others; checkpointRunSqnr reads back the SQNR it stored. The
  // weight w is checkpointAsASessionRun's (both the stored copy and mx_rceil exact: +Inf).
  void importSkipsWhatCannotBeImportedWithAWarning() {
    std::string codes(256, '\x38');
    codes[5] = '\x40';
    for (int j = 128; j < 256; ++j) codes[static_cast<size_t>(j)] = '\x30';
    const std::string p = path("skip.safetensors");
    writeSafetensors(p,
                     "{\"v.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]},"
                     "\"v.weight_scale\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
                     "\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[1,256],\"data_offsets\":[8,264]},"
                     "\"w_scale_inv\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[264,272]},"
                     "\"x.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[272,278]}}",
                     std::string(4, '\x38') + f32Bytes({1.0f}) + codes + f32Bytes({0.5f, 4.0f}) + kCodes23);
    CheckpointRunOptions o;
    std::string why;
    o.what_if.push_back(*parseWhatIfRecipe("mx_rceil", &why));
    const auto r = checkpointRun(p, "skip", o);
    QVERIFY2(r.ok(), r.message().c_str());
    QCOMPARE(q(r.message()), q("warning: malformed input at " + p +
                               ":v.weight: not imported: shape [4]: an FP8 weight is a non-empty 2-D [rows, cols]\n"
                               "warning: malformed input at " +
                               p + ":x.weight: not imported: no scale: neither x.weight_scale_inv nor x.weight_scale"));
    QCOMPARE(attrInt(r.value.attrs, "tensors").value_or(0), int64_t{1});
    const auto sqnr = checkpointRunSqnr(r.value);
    QCOMPARE(sqnr.size(), size_t{1});
    QCOMPARE(sqnr[0].tensor, std::string("w"));
    QVERIFY(std::isinf(sqnr[0].stored_db));
    QCOMPARE(sqnr[0].what_if_db.size(), size_t{1});
    QCOMPARE(sqnr[0].what_if_db[0].first, std::string("mx_rceil"));
    QVERIFY(std::isinf(sqnr[0].what_if_db[0].second));
    // nothing importable: the warnings, then the error
    const std::string none = path("none.safetensors");
    writeSafetensors(none, "{\"x.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,6]}}", kCodes23);
    QCOMPARE(q(checkpointRun(none, "none", {}).message()),
             q("warning: malformed input at " + none +
               ":x.weight: not imported: no scale: neither x.weight_scale_inv nor x.weight_scale\n"
               "error: not found at " +
               none + ": the file holds no FP8 tensor that can be read with its scale"));
  }

  // A DeepSeek-V3 block-scaled weight W [rows, cols] (weight_scale_inv of 128×128 blocks) with a
  // grid of two or more block columns, transposed as a Linear weight is for y = x · Wᵀ. With one
  // block column (the tests above) a swapped grid index is harmless; here every block scale is a
  // different power of two, so a scale read from the wrong block changes the value.
  //   Codes: c(i, j) = (5i + 3j) mod 127 (0x00..0x7E, never the NaN code 0x7F), sign bit set when
  //   i + j is odd. E4M3FN by hand (OCP OFP8 v1.0, bias 7): e = bits 6..3, m = bits 2..0;
  //   e = 0 → m/8 · 2^-6, else (1 + m/8) · 2^(e − 7). W(i, j) = ±decode(c) · s[i/128][j/128].
  //   [384, 256]: grid [3, 2] = {1, 1/2; 1/4, 2; 4, 8}, so Wᵀ's grid [2, 3] is {1, 1/4, 4; 1/2, 2, 8}.
  //   [256, 384]: grid [2, 3] = {1, 1/2, 1/4; 2, 4, 8}, so Wᵀ's grid [3, 2] is {1, 2; 1/2, 4; 1/4, 8}.
  // Then a GEMM with B = Wᵀ read through {"checkpoint", "transpose": true} equals, bit for bit, the
  // same GEMM with B's codes and scale grid transposed by hand into .npy files.
  void transposeOfABlockGridWithTwoBlockColumns_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<std::vector<float>>("grid");
    QTest::addColumn<std::vector<float>>("transposed_grid");
    QTest::newRow("[384, 256]") << 384 << 256 << std::vector<float>{1, 0.5f, 0.25f, 2, 4, 8}
                                << std::vector<float>{1, 0.25f, 4, 0.5f, 2, 8};
    QTest::newRow("[256, 384]") << 256 << 384 << std::vector<float>{1, 0.5f, 0.25f, 2, 4, 8}
                                << std::vector<float>{1, 2, 0.5f, 4, 0.25f, 8};
  }
  void transposeOfABlockGridWithTwoBlockColumns() {
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(std::vector<float>, grid);
    QFETCH(std::vector<float>, transposed_grid);
    const int gr = (rows + 127) / 128, gc = (cols + 127) / 128;
    auto code = [](int i, int j) { return uint8_t(((5 * i + 3 * j) % 127) | ((i + j) % 2 ? 0x80 : 0x00)); };
    auto e4m3 = [](uint8_t c) {
      const int e = (c >> 3) & 0xF, m = c & 7;
      const double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
      return c & 0x80 ? -v : v;
    };
    auto want = [&](int i, int j) { return e4m3(code(i, j)) * double(grid[size_t((i / 128) * gc + j / 128)]); };
    std::string codes(size_t(rows) * size_t(cols), '\0'), codes_t(codes.size(), '\0');
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) {
        codes[size_t(i) * size_t(cols) + size_t(j)] = char(code(i, j));
        codes_t[size_t(j) * size_t(rows) + size_t(i)] = char(code(i, j));
      }
    const std::string ck = path("wide.safetensors");
    const std::string n = std::to_string(codes.size());
    writeSafetensors(ck,
                     "{\"w.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[" + std::to_string(rows) + "," +
                         std::to_string(cols) + "],\"data_offsets\":[0," + n + "]},\"w.weight_scale_inv\":{\"dtype\":" +
                         "\"F32\",\"shape\":[" + std::to_string(gr) + "," + std::to_string(gc) +
                         "],\"data_offsets\":[" + n + "," + std::to_string(codes.size() + 24) + "]}}",
                     codes + f32Bytes(grid));
    auto r = importFp8Checkpoint(ck, "w.weight");
    QVERIFY2(r.ok(), r.message().c_str());
    QCOMPARE(r.value.block, (ScaleBlock{128, 128}));
    QCOMPARE(r.value.dequant_scales, grid);
    const QuantizedTensor t = transposeQuantized(r.value);
    QCOMPARE(t.rows, int64_t(cols));
    QCOMPARE(t.cols, int64_t(rows));
    QCOMPARE(t.block, (ScaleBlock{128, 128}));
    QCOMPARE(t.dequant_scales, transposed_grid);
    int wrong = 0;
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j)
        if (!(r.value.dequantizedAt(i, j) == want(i, j) && t.dequantizedAt(j, i) == want(i, j)) && wrong++ == 0)
          qWarning("(%d, %d): W %g, Wt %g, by hand %g", i, j, r.value.dequantizedAt(i, j), t.dequantizedAt(j, i),
                   want(i, j));
    QCOMPARE(wrong, 0);

    // A [16, cols] = (((7i + 3k) mod 17) − 8) / 8, then D [16, rows] = A · Wᵀ two ways.
    const int m = 16;
    std::vector<float> a(size_t(m) * size_t(cols));
    for (int i = 0; i < m; ++i)
      for (int k = 0; k < cols; ++k) a[size_t(i) * size_t(cols) + size_t(k)] = float((7 * i + 3 * k) % 17 - 8) / 8;
    std::string abytes;
    for (float x : a) abytes += f32Bytes({x});
    writeNpy(path("wa.npy"), "<f4", "(16, " + std::to_string(cols) + ")", abytes);
    writeNpy(path("wt.npy"), "|u1", "(" + std::to_string(cols) + ", " + std::to_string(rows) + ")", codes_t);
    writeNpy(path("wts.npy"), "<f4", "(" + std::to_string(gc) + ", " + std::to_string(gr) + ")",
             f32Bytes(transposed_grid));
    const std::string a_spec = "\"a\": {\"tensor\": \"" + path("wa.npy") + "\"}";
    GemmExperimentConfig c1, c2;
    QCOMPARE(parseGemmConfig(Json::parse("{" + a_spec + ", \"b\": {\"checkpoint\": \"" + ck +
                                         "\", \"tensor\": \"w.weight\", \"transpose\": true}}"),
                             &c1),
             std::string());
    QCOMPARE(parseGemmConfig(Json::parse("{" + a_spec + ", \"b\": {\"codes\": \"" + path("wt.npy") +
                                         "\", \"format\": \"E4M3FN\", \"scales\": \"" + path("wts.npy") +
                                         "\", \"block\": [128, 128]}}"),
                             &c2),
             std::string());
    auto be = makeCpuGemmBackend();
    auto r1 = runGemmExperimentRun(c1, gemmConfigJson(c1).dump(), "ck", *be);
    auto r2 = runGemmExperimentRun(c2, gemmConfigJson(c2).dump(), "npy", *be);
    QVERIFY2(r1.ok(), r1.message().c_str());
    QVERIFY2(r2.ok(), r2.message().c_str());
    const Dataset* d1 = r1.value.find("output/D");
    const Dataset* d2 = r2.value.find("output/D");
    QVERIFY(d1 && d2);
    QCOMPARE(d1->shape, std::vector<int64_t>({m, rows}));
    QCOMPARE(d2->shape, d1->shape);
    for (size_t i = 0; i < d1->f32.size(); ++i) QCOMPARE(bits(d1->f32[i]), bits(d2->f32[i]));
  }

  // An FP8 tensor named as a float tensor ({"tensor": "ck.safetensors:w"}) is refused with the
  // operand that does read it, {"checkpoint": FILE, "tensor": NAME}, which then runs.
  void fp8TensorAsAFloatTensorNamesTheCheckpointOperand() {
    const std::string ck = path("ck.safetensors");
    writeSafetensors(ck,
                     "{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,3],\"data_offsets\":[0,6]},"
                     "\"w_scale\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[6,10]}}",
                     kCodes23 + f32Bytes({0.5f}));
    const std::string hint = "{\"checkpoint\": \"" + ck + "\", \"tensor\": \"w\"}";
    auto t = importTensor(ck + ":w");
    QVERIFY(!t.ok());
    QVERIFY2(t.message().find("dtype F8_E4M3 is an FP8 tensor") != std::string::npos, t.message().c_str());
    QVERIFY2(t.message().find(hint) != std::string::npos, t.message().c_str());
    QVERIFY2(t.message().find("is not supported") == std::string::npos, t.message().c_str());
    // The same through a GEMM config's operand; the operand the message names reads it.
    GemmExperimentConfig bad, good;
    QCOMPARE(parseGemmConfig(Json::parse("{\"a\": {\"tensor\": \"" + ck + ":w\"}, \"b\": {\"checkpoint\": \"" + ck +
                                         "\", \"tensor\": \"w\", \"transpose\": true}}"),
                             &bad),
             std::string());
    auto be = makeCpuGemmBackend();
    auto rb = runGemmExperimentRun(bad, gemmConfigJson(bad).dump(), "bad", *be);
    QVERIFY(!rb.ok());
    QVERIFY2(rb.message().find(hint) != std::string::npos, rb.message().c_str());
    QCOMPARE(parseGemmConfig(Json::parse("{\"a\": " + hint + ", \"b\": {\"checkpoint\": \"" + ck +
                                         "\", \"tensor\": \"w\", \"transpose\": true}}"),
                             &good),
             std::string());
    auto rg = runGemmExperimentRun(good, gemmConfigJson(good).dump(), "good", *be);
    QVERIFY2(rg.ok(), rg.message().c_str());
  }

  void transposeMovesCodesAndScaleGrid() {
    QuantizedTensor t;
    t.rows = 2;
    t.cols = 3;
    t.format = &Format::E4M3FN();
    t.codes = {1, 2, 3, 4, 5, 6};
    t.block = {1, 3};
    t.dequant_scales = {0.5f, 2.0f};
    const QuantizedTensor u = transposeQuantized(t);
    QCOMPARE(u.rows, int64_t(3));
    QCOMPARE(u.codes, std::vector<uint8_t>({1, 4, 2, 5, 3, 6}));
    QCOMPARE(u.block, (ScaleBlock{3, 1}));
    QCOMPARE(u.dequant_scales, std::vector<float>({0.5f, 2.0f}));
  }
};

QTEST_GUILESS_MAIN(TestFp8Checkpoint)
#include "test_fp8_checkpoint.moc"

// Tests for core/io importers. Input files are built byte by byte here following the published
// formats (NumPy format.rst, safetensors README), with values whose bit patterns are derived by
// hand in the comments; nothing is produced by the code under test.
#include <QTemporaryDir>
#include <QtTest>

#include <tuple>

#include "io/tensor_import.h"

#include <hdf5.h>

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

bool hasCode(const Status& st, Code c) {
  for (const auto& i : st.issues)
    if (i.code == c) return true;
  return false;
}

std::string le16(uint16_t v) {
  return {char(v & 0xFF), char(v >> 8)};
}
std::string be16(uint16_t v) {
  return {char(v >> 8), char(v & 0xFF)};
}
std::string le32(uint32_t v) {
  std::string s;
  for (int i = 0; i < 4; ++i) s += char((v >> (8 * i)) & 0xFF);
  return s;
}
std::string be32(uint32_t v) {
  std::string s;
  for (int i = 3; i >= 0; --i) s += char((v >> (8 * i)) & 0xFF);
  return s;
}
std::string le64(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s += char((v >> (8 * i)) & 0xFF);
  return s;
}
std::string be64(uint64_t v) {
  std::string s;
  for (int i = 7; i >= 0; --i) s += char((v >> (8 * i)) & 0xFF);
  return s;
}

/// .npy v1.0 (or v2.0) file: magic, version, header length, dict padded with spaces to a
/// multiple of 64 and ended by '\n' (NumPy format.rst), then the data.
std::string npy(const std::string& dict, const std::string& data, int major = 1) {
  const size_t pre = major == 1 ? 10 : 12;
  std::string h = dict;
  while ((pre + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string s = "\x93NUMPY";
  s += char(major);
  s += char(0);
  s += major == 1 ? le16(uint16_t(h.size())) : le32(uint32_t(h.size()));
  return s + h + data;
}

/// safetensors file: u64 LE header length, JSON header, data.
std::string safetensors(const std::string& json, const std::string& data) {
  return le64(json.size()) + json + data;
}

} // namespace

class TestImport : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::string path(const char* n) { return tmp_.path().toStdString() + "/" + n; }

private Q_SLOTS:
  void npyFloat32BothByteOrders_data();
  void npyFloat32BothByteOrders();
  void npyFloat16WidensExactly();
  void npyFloat64StaysFloat64();
  void npyFortranOrderIsTransposed();
  void npyVersion2HeaderAnd1D();
  void npyBadInput_data();
  void npyBadInput();
  void safetensorsAllFloatTypes();
  void safetensorsBadInput_data();
  void safetensorsBadInput();
  void hdf5AnyFloatDataset();
  void hdf5BadInput();
  void specDispatch();
  void shapeFromTheHeaderAlone();
};

// tensorShape reads headers only: the .npy shape (3, 5) and the safetensors entries' shapes come
// from the headers written here by hand; a missing name or file is an error.
void TestImport::shapeFromTheHeaderAlone() {
  const std::string n = path("shape.npy");
  writeBytes(n, npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }", std::string(60, '\0')));
  auto a = tensorShape(n);
  QVERIFY2(a.ok(), a.message().c_str());
  QCOMPARE(a.value, (std::vector<int64_t>{3, 5}));
  const std::string st = path("shape.safetensors");
  writeBytes(
      st,
      safetensors(
          R"({"w":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]},"v":{"dtype":"F32","shape":[4],"data_offsets":[32,48]}})",
          std::string(48, '\0')));
  auto b = tensorShape(st + ":w");
  QVERIFY2(b.ok(), b.message().c_str());
  QCOMPARE(b.value, (std::vector<int64_t>{2, 4}));
  auto c = tensorShape(st + ":v");
  QCOMPARE(c.value, (std::vector<int64_t>{4}));
  auto d = tensorShape(st + ":nope");
  QVERIFY(!d.ok());
  QVERIFY2(d.message().find("no tensor of that name") != std::string::npos, d.message().c_str());
  QVERIFY(!tensorShape(path("missing.npy")).ok());
}

void TestImport::npyFloat32BothByteOrders_data() {
  QTest::addColumn<bool>("big");
  QTest::newRow("<f4") << false;
  QTest::newRow(">f4") << true;
}

void TestImport::npyFloat32BothByteOrders() {
  QFETCH(bool, big);
  // float32 bit patterns: 1.0 = 0x3F800000, −2.5 = 0xC0200000, 448 = 0x43E00000,
  // min subnormal 2^−149 = 0x00000001, −0 = 0x80000000, +Inf = 0x7F800000.
  const uint32_t bits[6] = {0x3F800000, 0xC0200000, 0x43E00000, 0x00000001, 0x80000000, 0x7F800000};
  std::string data;
  for (auto b : bits) data += big ? be32(b) : le32(b);
  const std::string p = path(big ? "f32be.npy" : "f32le.npy");
  writeBytes(
      p, npy(std::string("{'descr': '") + (big ? ">" : "<") + "f4', 'fortran_order': False, 'shape': (2, 3), }", data));
  auto r = importNpy(p);
  QVERIFY2(r.ok(), r.message().c_str());
  QCOMPARE(int(r.value.dtype), int(DType::Float32));
  QCOMPARE(r.value.shape, (std::vector<int64_t>{2, 3}));
  for (int i = 0; i < 6; ++i) QCOMPARE(std::bit_cast<uint32_t>(r.value.f32[size_t(i)]), bits[i]);
  QCOMPARE(attrString(r.value.attrs, "source_dtype").value_or(""), std::string(big ? ">f4" : "<f4"));
}

void TestImport::npyFloat16WidensExactly() {
  // binary16: 0x3C00 = 1.0, 0xC000 = −2.0, 0x7BFF = 65504 (max), 0x0001 = 2^−24 (min subnormal),
  // 0x3555 = 2^−2·(1 + 341/1024) = 0.333251953125, 0xFC00 = −Inf.
  const uint16_t h[6] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x3555, 0xFC00};
  const float want[6] = {1.0f, -2.0f, 65504.0f, 0x1p-24f, 0.333251953125f, -INFINITY};
  for (bool big : {false, true}) {
    std::string data;
    for (auto x : h) data += big ? be16(x) : le16(x);
    const std::string p = path("f16.npy");
    writeBytes(
        p,
        npy(std::string("{'descr': '") + (big ? ">" : "<") + "f2', 'fortran_order': False, 'shape': (3, 2), }", data));
    auto r = importNpy(p);
    QVERIFY2(r.ok(), r.message().c_str());
    QCOMPARE(int(r.value.dtype), int(DType::Float32));
    for (int i = 0; i < 6; ++i) QCOMPARE(r.value.f32[size_t(i)], want[i]);
  }
}

void TestImport::npyFloat64StaysFloat64() {
  // 0.1 (0x3FB999999999999A) and 1 + 2^−40 (0x3FF0000000001000) are not float32 values: they must
  // arrive unrounded.
  const uint64_t bits[2] = {0x3FB999999999999Aull, 0x3FF0000000001000ull};
  for (bool big : {false, true}) {
    std::string data;
    for (auto b : bits) data += big ? be64(b) : le64(b);
    const std::string p = path("f64.npy");
    writeBytes(
        p, npy(std::string("{'descr': '") + (big ? ">" : "<") + "f8', 'fortran_order': False, 'shape': (2,), }", data));
    auto r = importNpy(p);
    QVERIFY2(r.ok(), r.message().c_str());
    QCOMPARE(int(r.value.dtype), int(DType::Float64));
    QCOMPARE(r.value.shape, std::vector<int64_t>{2});
    QCOMPARE(std::bit_cast<uint64_t>(r.value.f64[0]), bits[0]);
    QCOMPARE(std::bit_cast<uint64_t>(r.value.f64[1]), bits[1]);
    QCOMPARE(r.value.f64[1], 1.0 + 0x1p-40);
  }
}

void TestImport::npyFortranOrderIsTransposed() {
  // Matrix [[1, 2, 3], [4, 5, 6]] in Fortran (column-major) order is stored 1 4 2 5 3 6.
  std::string data;
  for (float v : {1.f, 4.f, 2.f, 5.f, 3.f, 6.f}) data += le32(std::bit_cast<uint32_t>(v));
  const std::string p = path("fortran.npy");
  writeBytes(p, npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", data));
  auto r = importNpy(p);
  QVERIFY2(r.ok(), r.message().c_str());
  QCOMPARE(r.value.shape, (std::vector<int64_t>{2, 3}));
  QCOMPARE(r.value.f32, (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

void TestImport::npyVersion2HeaderAnd1D() {
  std::string data = le32(0x40490FDB); // float32 nearest π = 3.14159274101257324
  const std::string p = path("v2.npy");
  writeBytes(p, npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", data, 2));
  auto r = importNpy(p);
  QVERIFY2(r.ok(), r.message().c_str());
  QCOMPARE(r.value.shape, std::vector<int64_t>{1});
  QCOMPARE(double(r.value.f32[0]), 3.14159274101257324);
}

void TestImport::npyBadInput_data() {
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<int>("code");
  QTest::addColumn<QString>("mentions");
  const std::string four = le32(0x3F800000) + le32(0x3F800000) + le32(0x3F800000) + le32(0x3F800000);
  auto row = [](const char* name, const std::string& b, Code c, const char* m) {
    QTest::newRow(name) << QByteArray(b.data(), qsizetype(b.size())) << int(c) << QString::fromUtf8(m);
  };
  row("not npy", "PK\x03\x04 this is a zip", Code::MalformedInput, "magic");
  row("int32 dtype", npy("{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", four), Code::MalformedInput,
      "<i4");
  row("complex dtype", npy("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", four), Code::MalformedInput,
      "<c8");
  row("truncated data", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", four), Code::MalformedInput,
      "truncated");
  // (1000000, 1000000) float32 = 4 TB claimed by a 96-byte file: refused before any allocation.
  row("huge claim", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }", four),
      Code::MalformedInput, "too large");
  row("huge but under limit", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 1000), }", four),
      Code::MalformedInput, "truncated");
  row("rank 3", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 2), }", four), Code::WrongShape,
      "rank 3");
  row("scalar", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", four), Code::WrongShape, "0-d");
  row("no shape", npy("{'descr': '<f4', 'fortran_order': False, }", four), Code::MalformedInput, "shape");
  row("bad fortran", npy("{'descr': '<f4', 'fortran_order': 7, 'shape': (4,), }", four), Code::MalformedInput,
      "fortran_order");
  std::string longhdr = "\x93NUMPY";
  longhdr += char(1);
  longhdr += char(0);
  longhdr += le16(60000);
  longhdr += "{'descr'";
  row("header beyond file", longhdr, Code::MalformedInput, "exceeds the file");
  row("unknown version", std::string("\x93NUMPY\x09\x00\x10\x00", 10) + "{}", Code::MalformedInput, "version");
}

void TestImport::npyBadInput() {
  QFETCH(QByteArray, bytes);
  QFETCH(int, code);
  QFETCH(QString, mentions);
  const std::string p = path("bad.npy");
  writeBytes(p, bytes.toStdString());
  auto r = importNpy(p);
  QVERIFY(!r.ok());
  QVERIFY2(hasCode(r, Code(code)), r.message().c_str());
  QVERIFY2(r.message().find(mentions.toStdString()) != std::string::npos, r.message().c_str());
  QVERIFY(r.value.f32.empty() && r.value.f64.empty());
}

void TestImport::safetensorsAllFloatTypes() {
  // Data section (offsets relative to its start):
  //  h  F16  [2]    0..4    : 0x3C00 = 1.0, 0xB800 = −0.5
  //  b  BF16 [1,2]  4..8    : 0x3F80 = 1.0, 0xC049 = bits 0xC0490000 = −3.140625
  //  s  F32  [2,1]  8..16   : 0x41200000 = 10.0, 0x80000000 = −0
  //  d  F64  [1]    16..24  : 0x3FB999999999999A = 0.1 (kept as float64)
  //  i  I32  [1]    24..28  : not importable
  const std::string data = le16(0x3C00) + le16(0xB800) + le16(0x3F80) + le16(0xC049) + le32(0x41200000) +
                           le32(0x80000000) + le64(0x3FB999999999999Aull) + le32(7);
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"s":{"dtype":"F32","shape":[2,1],"data_offsets":[8,16]},)"
      R"("h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[1,2],"data_offsets":[4,8]},)"
      R"("d":{"dtype":"F64","shape":[1],"data_offsets":[16,24]},"i":{"dtype":"I32","shape":[1],"data_offsets":[24,28]}})";
  const std::string p = path("t.safetensors");
  writeBytes(p, safetensors(json, data));
  auto l = listSafetensors(p);
  QVERIFY2(l.ok(), l.message().c_str());
  QCOMPARE(l.value.size(), size_t(5));
  QCOMPARE(l.value[0].name, std::string("b")); // sorted by name
  QVERIFY(!l.value[3].importable);             // "i" I32
  auto h = importSafetensors(p, "h");
  QVERIFY2(h.ok(), h.message().c_str());
  QCOMPARE(h.value.f32, (std::vector<float>{1.0f, -0.5f}));
  auto b = importSafetensors(p, "b");
  QCOMPARE(b.value.shape, (std::vector<int64_t>{1, 2}));
  QCOMPARE(b.value.f32, (std::vector<float>{1.0f, -3.140625f}));
  auto s = importSafetensors(p, "s");
  QCOMPARE(s.value.shape, (std::vector<int64_t>{2, 1}));
  QCOMPARE(s.value.f32[0], 10.0f);
  QCOMPARE(std::bit_cast<uint32_t>(s.value.f32[1]), 0x80000000u);
  auto d = importSafetensors(p, "d");
  QCOMPARE(int(d.value.dtype), int(DType::Float64));
  QCOMPARE(d.value.f64[0], 0.1);
  auto i = importSafetensors(p, "i");
  QVERIFY(!i.ok());
  QVERIFY(i.message().find("I32") != std::string::npos);
  auto none = importSafetensors(p, "zzz");
  QVERIFY(hasCode(none, Code::NotFound));
  QVERIFY2(none.message().find("b, d, h, i, s") != std::string::npos, none.message().c_str());
}

void TestImport::safetensorsBadInput_data() {
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<QString>("mentions");
  auto row = [](const char* n, const std::string& b, const char* m) {
    QTest::newRow(n) << QByteArray(b.data(), qsizetype(b.size())) << QString::fromUtf8(m);
  };
  const std::string d8 = le32(0x3F800000) + le32(0x3F800000);
  row("short", "abc", "shorter");
  row("header length beyond file", le64(1ull << 40) + "{}", "exceeds the file");
  row("bad json", safetensors(R"({"x":{"dtype":"F32",)", d8), "JSON");
  row("offsets beyond data", safetensors(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,800]}})", d8),
      "truncated");
  row("shape vs offsets", safetensors(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8),
      "data_offsets span 8");
  row("negative shape", safetensors(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", d8), "non-negative");
  row("missing fields", safetensors(R"({"x":{"dtype":"F32"}})", d8), "data_offsets");
  row("huge shape", safetensors(R"({"x":{"dtype":"F32","shape":[4000000000,4000000000],"data_offsets":[0,8]}})", d8),
      "too large");
  // Two entries named "x" (the first F32 [2], the second an unsupported dtype): which one a JSON
  // reader keeps differs between readers, so the file is refused.
  row("duplicate name",
      safetensors(
          R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"x":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}})",
          d8),
      "twice");
}

void TestImport::safetensorsBadInput() {
  QFETCH(QByteArray, bytes);
  QFETCH(QString, mentions);
  const std::string p = path("bad.safetensors");
  writeBytes(p, bytes.toStdString());
  auto r = importSafetensors(p, "x");
  QVERIFY(!r.ok());
  QVERIFY2(hasCode(r, Code::MalformedInput), r.message().c_str());
  QVERIFY2(r.message().find(mentions.toStdString()) != std::string::npos, r.message().c_str());
}

void TestImport::hdf5AnyFloatDataset() {
  const std::string p = path("w.h5");
  {
    hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hsize_t d2[2] = {2, 3};
    hid_t sp = H5Screate_simple(2, d2, nullptr);
    // big-endian float32 on disk; HDF5 converts on read
    hid_t ds = H5Dcreate2(f, "model/layer1/w", H5T_IEEE_F32BE, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    const float v[6] = {1, -2, 3.5f, 0, 448, -0.25f};
    H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dclose(ds);
    ds = H5Dcreate2(f, "model/b64", H5T_IEEE_F64LE, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    const double w[6] = {0.1, 1 + 0x1p-40, 3, 4, 5, 6};
    H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, w);
    H5Dclose(ds);
    ds = H5Dcreate2(f, "ints", H5T_STD_I32LE, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(sp);
    hsize_t d3[3] = {2, 2, 2};
    sp = H5Screate_simple(3, d3, nullptr);
    ds = H5Dcreate2(f, "cube", H5T_IEEE_F32LE, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Pclose(lcpl);
    H5Fclose(f);
  }
  auto l = listHdf5Tensors(p);
  QVERIFY2(l.ok(), l.message().c_str());
  QCOMPARE(l.value.size(), size_t(3)); // cube, model/b64, model/layer1/w (ints are not float)
  auto a = importHdf5Dataset(p, "/model/layer1/w");
  QVERIFY2(a.ok(), a.message().c_str());
  QCOMPARE(a.value.shape, (std::vector<int64_t>{2, 3}));
  QCOMPARE(a.value.f32, (std::vector<float>{1, -2, 3.5f, 0, 448, -0.25f}));
  QCOMPARE(attrString(a.value.attrs, "source_dtype").value_or(""), std::string(">float32"));
  auto b = importHdf5Dataset(p, "model/b64");
  QCOMPARE(int(b.value.dtype), int(DType::Float64));
  QCOMPARE(b.value.f64[1], 1 + 0x1p-40);
  QVERIFY(hasCode(importHdf5Dataset(p, "/ints"), Code::WrongType));
  QVERIFY(hasCode(importHdf5Dataset(p, "/cube"), Code::WrongShape));
  QVERIFY(hasCode(importHdf5Dataset(p, "/nope/x"), Code::NotFound));
  QVERIFY(hasCode(importHdf5Dataset(p, "/model"), Code::WrongType)); // a group
}

void TestImport::hdf5BadInput() {
  const std::string p = path("notreally.h5");
  writeBytes(p, "hello");
  QVERIFY(hasCode(importHdf5Dataset(p, "/x"), Code::NotHdf5));
  QVERIFY(hasCode(importHdf5Dataset(path("missing.h5"), "/x"), Code::NotFound));

  // A header's shape is only a claim: a chunked dataset with nothing written stores 0 bytes and
  // reads back as the fill value, so a 5 kB file can declare 34 GB. 2^30 float64 elements (8 GiB)
  // with 0 bytes stored is refused
  // before any allocation (more than 1100:1, beyond deflate's 1032:1 maximum); a small unwritten
  // dataset (1 Mi float32 = 4 MiB, under the 256 MiB threshold) still imports, as zeros.
  const std::string sparse = path("sparse.h5");
  {
    hid_t f = H5Fcreate(sparse.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    for (auto [name, rows, type] :
         {std::tuple{"huge", hsize_t(1) << 15, H5T_IEEE_F64LE}, std::tuple{"small", hsize_t(1) << 5, H5T_IEEE_F32LE}}) {
      const hsize_t dims[2] = {rows, hsize_t(1) << 15}, chunk[2] = {16, 1024};
      hid_t sp = H5Screate_simple(2, dims, nullptr);
      hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
      H5Pset_chunk(dcpl, 2, chunk);
      hid_t ds = H5Dcreate2(f, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
      QVERIFY(ds >= 0);
      H5Dclose(ds);
      H5Pclose(dcpl);
      H5Sclose(sp);
    }
    H5Fclose(f);
  }
  const auto huge = importHdf5Dataset(sparse, "/huge");
  QVERIFY(hasCode(huge, Code::MalformedInput));
  QVERIFY2(huge.message().find("declares 8.00 GiB but the file stores only 0 bytes") != std::string::npos ||
               huge.message().find("of memory,") != std::string::npos, // a machine with less than 8 GiB free
           huge.message().c_str());
  const auto small = importHdf5Dataset(sparse, "/small");
  QVERIFY2(small.ok(), small.message().c_str());
  QCOMPARE(small.value.f32.size(), size_t(1) << 20);
  QCOMPARE(small.value.f32[12345], 0.0f);
}

void TestImport::specDispatch() {
  std::string data;
  for (float v : {1.f, 2.f}) data += le32(std::bit_cast<uint32_t>(v));
  writeBytes(path("s.npy"), npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }", data));
  writeBytes(path("one.safetensors"),
             safetensors(R"({"only":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data));
  auto a = importTensor(path("s.npy"));
  QVERIFY2(a.ok(), a.message().c_str());
  QCOMPARE(a.value.f32, (std::vector<float>{1, 2}));
  auto b = importTensor(path("one.safetensors")); // single tensor: no name needed
  QVERIFY2(b.ok(), b.message().c_str());
  auto c = importTensor(path("one.safetensors") + ":only");
  QVERIFY(c.ok());
  QVERIFY(hasCode(importTensor(path("x.csv")), Code::InvalidArgument));
  QVERIFY(hasCode(importTensor(path("w.h5")), Code::InvalidArgument)); // needs :/path
}

QTEST_APPLESS_MAIN(TestImport)
#include "test_import.moc"

// FP8 Lab — block-scale layouts of cuBLASLt and DeepGEMM, and packed FP4 (core/scaling/
// kernel_layout.h): offsets derived by hand from the layouts' definitions, and round trips of
// MXFP8 / NVFP4 / float32 scale grids through each layout, bit for bit.
#include <QtTest>

#include "scaling/kernel_layout.h"

#include <cstring>

using namespace fp8lab;

class TestKernelLayout : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void storageShapesByHand();
  void swizzledOffsetsByHand();
  void swizzledRoundTrips_data();
  void swizzledRoundTrips();
  void floatLayoutsByHand();
  void floatLayoutsRoundTrip();
  void deepGemmPackedUe8m0ByHand();
  void wrongSizeNamesBoth();
  void names();
  void packedFp4();
};

// cuBLAS "1D block scaling factors layout", as PyTorch's to_blocked computes it: the grid [outer,
// KB] is zero-padded to [roundup(outer, 128), roundup(KB, 4)] and cut into 128×4 tiles (512 bytes),
// tile t = (o div 128)·ceil(KB/4) + kb div 4; inside a tile row r = o mod 128, column c = kb mod 4
// sit at (r mod 32)·16 + (r div 32)·4 + c. For an NVFP4 A of M = 256, K = 128 (KB = 128/16 = 8,
// two tiles across K):
//   (0, 0)   tile 0, r 0:   0
//   (1, 0)   r 1:           1·16 = 16
//   (32, 0)  r 32:          (32 mod 32)·16 + 1·4 = 4
//   (33, 2)  r 33, c 2:     16 + 4 + 2 = 22
//   (127, 3) r 127, c 3:    31·16 + 3·4 + 3 = 511 (the last byte of tile 0)
//   (0, 4)   tile 1:        512
//   (128, 0) tile 1·2 = 2:  1024
//   (130, 5) tile 2 + 1 = 3, r 2, c 1: 1536 + 2·16 + 0 + 1 = 1569
// Grid outer 200 x kblocks 5. cuBLASLt's VEC32 / VEC16 scales are stored in 128 x 4 tiles: 200 -> 256
// rows, 5 -> 8 columns; BLK128x128 pads kblocks to 4 (8); VEC128 is K-major [5, 200]; DeepGEMM
// pads the MN dimension to 4 (200 stays) and packs four UE8M0 scales in an int32: ceil(5 / 4) = 2.
void TestKernelLayout::storageShapesByHand() {
  const ScaleGridShape g{200, 5};
  QCOMPARE(scaleStorageShape(ScaleLayout::RowMajor, g), (std::vector<int64_t>{200, 5}));
  QCOMPARE(scaleStorageShape(ScaleLayout::CublasLtSwizzled, g), (std::vector<int64_t>{256, 8}));
  QCOMPARE(scaleStorageShape(ScaleLayout::CublasLtVec128, g), (std::vector<int64_t>{5, 200}));
  QCOMPARE(scaleStorageShape(ScaleLayout::CublasLtBlk128x128, g), (std::vector<int64_t>{200, 8}));
  QCOMPARE(scaleStorageShape(ScaleLayout::DeepGemmMnMajor, ScaleGridShape{201, 5}), (std::vector<int64_t>{5, 204}));
  QCOMPARE(scaleStorageShape(ScaleLayout::DeepGemmPackedUe8m0, g), (std::vector<int64_t>{2, 200}));
}

void TestKernelLayout::swizzledOffsetsByHand() {
  const ScaleGridShape g{256, 8};
  const auto L = ScaleLayout::CublasLtSwizzled;
  QCOMPARE(scaleStorageSize(L, g), int64_t(2048));
  QCOMPARE(scaleOffset(L, g, 0, 0), int64_t(0));
  QCOMPARE(scaleOffset(L, g, 1, 0), int64_t(16));
  QCOMPARE(scaleOffset(L, g, 32, 0), int64_t(4));
  QCOMPARE(scaleOffset(L, g, 33, 2), int64_t(22));
  QCOMPARE(scaleOffset(L, g, 127, 3), int64_t(511));
  QCOMPARE(scaleOffset(L, g, 0, 4), int64_t(512));
  QCOMPARE(scaleOffset(L, g, 128, 0), int64_t(1024));
  QCOMPARE(scaleOffset(L, g, 130, 5), int64_t(1569));
  // Padding: an MXFP8 A of M = 200, K = 160 (KB = 5) takes [256, 8] = 2048 bytes.
  QCOMPARE(scaleStorageSize(L, {200, 5}), int64_t(2048));
}

void TestKernelLayout::swizzledRoundTrips_data() {
  QTest::addColumn<qlonglong>("outer");
  QTest::addColumn<qlonglong>("kblocks");
  QTest::newRow("MXFP8 A 256 x K 256 (KB 8)") << 256LL << 8LL;
  QTest::newRow("MXFP8 B N 200 x K 160 (KB 5, padded)") << 200LL << 5LL;
  QTest::newRow("NVFP4 A 130 x K 96 (KB 6, padded)") << 130LL << 6LL;
  QTest::newRow("NVFP4 one row") << 1LL << 1LL;
}

// Every code of the grid lands in its own byte (the offsets are a bijection onto the grid's part
// of the storage), the padding stays zero, and unpacking gives the grid back bit for bit.
void TestKernelLayout::swizzledRoundTrips() {
  QFETCH(qlonglong, outer);
  QFETCH(qlonglong, kblocks);
  const ScaleGridShape g{outer, kblocks};
  std::vector<uint8_t> grid(size_t(outer * kblocks));
  for (size_t i = 0; i < grid.size(); ++i) grid[i] = static_cast<uint8_t>(1 + (i * 37 + i / 7) % 254); // never 0
  const auto storage = packScales(ScaleLayout::CublasLtSwizzled, g, grid, uint8_t(0));
  QCOMPARE(int64_t(storage.size()), scaleStorageSize(ScaleLayout::CublasLtSwizzled, g));
  int64_t nonzero = 0;
  for (uint8_t c : storage) nonzero += c != 0;
  QCOMPARE(nonzero, int64_t(grid.size())); // no two grid elements share a byte; padding is 0
  std::string why;
  const auto back = unpackScales(ScaleLayout::CublasLtSwizzled, g, storage, &why);
  QVERIFY2(back.has_value(), why.c_str());
  QVERIFY(*back == grid);
}

// VEC128_32F: (o, kb) at kb·P + o (outer fastest, PyTorch strides (1, outer)); a padded pitch is
// read from the size. BLK128x128_32F: (ob, kb) at ob·roundup(KB, 4) + kb. DeepGEMM SM90: (o, kb)
// at kb·roundup(outer, 4) + o.
void TestKernelLayout::floatLayoutsByHand() {
  QCOMPARE(scaleOffset(ScaleLayout::CublasLtVec128, {3, 2}, 2, 1), int64_t(1 * 3 + 2));
  QCOMPARE(scaleOffset(ScaleLayout::CublasLtVec128, {3, 2}, 2, 1, 16), int64_t(1 * 16 + 2));
  QCOMPARE(scaleStorageSize(ScaleLayout::CublasLtBlk128x128, {2, 5}), int64_t(2 * 8));
  QCOMPARE(scaleOffset(ScaleLayout::CublasLtBlk128x128, {2, 5}, 1, 4), int64_t(1 * 8 + 4));
  QCOMPARE(scaleStorageSize(ScaleLayout::DeepGemmMnMajor, {5, 3}), int64_t(3 * 8));
  QCOMPARE(scaleOffset(ScaleLayout::DeepGemmMnMajor, {5, 3}, 4, 2), int64_t(2 * 8 + 4));
  std::string why;
  QCOMPARE(scalePitchFor(ScaleLayout::CublasLtVec128, {3, 2}, 32, &why).value_or(-1), int64_t(16));
  QCOMPARE(scalePitchFor(ScaleLayout::CublasLtBlk128x128, {2, 5}, 10, &why).value_or(-1), int64_t(5));
}

void TestKernelLayout::floatLayoutsRoundTrip() {
  const ScaleGridShape g{7, 5};
  std::vector<float> grid(35);
  for (size_t i = 0; i < grid.size(); ++i) grid[i] = std::ldexp(1.0f + float(i) / 64.0f, int(i % 9) - 4);
  for (ScaleLayout l : {ScaleLayout::RowMajor, ScaleLayout::CublasLtVec128, ScaleLayout::CublasLtBlk128x128,
                        ScaleLayout::DeepGemmMnMajor}) {
    const auto st = packScales(l, g, grid, 0.0f);
    std::string why;
    const auto back = unpackScales(l, g, st, &why);
    QVERIFY2(back.has_value(), why.c_str());
    QVERIFY2(std::memcmp(back->data(), grid.data(), grid.size() * 4) == 0, toString(l));
  }
}

// DeepGEMM SM100: four UE8M0 codes per little-endian int32 along K, words MN-major with MN padded
// to 4. outer 5 (pitch 8), KB 6 (2 words per row): the code of (4, 5) is in word (5 div 4)·8 + 4 =
// 12, byte 5 mod 4 = 1 of it: byte 12·4 + 1 = 49; the storage is 2·8 words = 64 bytes.
void TestKernelLayout::deepGemmPackedUe8m0ByHand() {
  const ScaleGridShape g{5, 6};
  QCOMPARE(scaleStorageSize(ScaleLayout::DeepGemmPackedUe8m0, g), int64_t(64));
  QCOMPARE(scaleOffset(ScaleLayout::DeepGemmPackedUe8m0, g, 4, 5), int64_t(49));
  QCOMPARE(scaleOffset(ScaleLayout::DeepGemmPackedUe8m0, g, 0, 3), int64_t(3));
  std::vector<uint8_t> grid(30);
  for (size_t i = 0; i < grid.size(); ++i) grid[i] = static_cast<uint8_t>(120 + i);
  const auto st = packScales(ScaleLayout::DeepGemmPackedUe8m0, g, grid, uint8_t(0));
  QCOMPARE(st[49], uint8_t(120 + 4 * 6 + 5));
  std::string why;
  QVERIFY(*unpackScales(ScaleLayout::DeepGemmPackedUe8m0, g, st, &why) == grid);
}

void TestKernelLayout::wrongSizeNamesBoth() {
  std::string why;
  const std::vector<uint8_t> st(100);
  QVERIFY(!unpackScales(ScaleLayout::CublasLtSwizzled, {256, 8}, st, &why));
  QVERIFY2(why.find("holds 2048 elements") != std::string::npos && why.find("the file holds 100") != std::string::npos,
           why.c_str());
}

void TestKernelLayout::names() {
  QCOMPARE(parseScaleLayout("VEC32_UE8M0").value(), ScaleLayout::CublasLtSwizzled);
  QCOMPARE(parseScaleLayout("cublaslt-vec16-ue4m3").value(), ScaleLayout::CublasLtSwizzled);
  QCOMPARE(parseScaleLayout("BLK128x128_32F").value(), ScaleLayout::CublasLtBlk128x128);
  QCOMPARE(parseScaleLayout("deepgemm_sm100").value(), ScaleLayout::DeepGemmPackedUe8m0);
  QVERIFY(!parseScaleLayout("column_major"));
}

// Two E2M1 codes a byte: PyTorch's float4_e2m1fn_x2 (its tests pack x[1::2] << 4 | x[::2]) holds
// the first in the low nibble: byte 0x21 is codes 1, 2; high_first reads them as 2, 1.
void TestKernelLayout::packedFp4() {
  QCOMPARE(unpackFp4({0x21, 0xF0}, 1, 2, NibbleOrder::LowFirst), (std::vector<uint8_t>{1, 2, 0, 0xF}));
  QCOMPARE(unpackFp4({0x21}, 1, 1, NibbleOrder::HighFirst), (std::vector<uint8_t>{2, 1}));
  QCOMPARE(packFp4({1, 2, 0, 0xF}, 1, 4, NibbleOrder::LowFirst), (std::vector<uint8_t>{0x21, 0xF0}));
}

QTEST_APPLESS_MAIN(TestKernelLayout)
#include "test_kernel_layout.moc"

// core/scaling/recipe_cost.h: bytes per element with scales and totals for a GEMM's operands, worked
// out by hand from the layouts of CUBLASLT-FP8.md §3.1 and RECIPES-2026.md §G (padded MX / NVFP4
// scale grids), and the native-hardware verdicts of the table's rules.
#include <QtTest>

#include "scaling/recipe_cost.h"

using namespace fp8lab;

class TestRecipeCost : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // A [256, 1024], B [1024, 256]: 262144 elements each, one byte each in E4M3FN.
  //   te_current: one float32 per tensor: 262144 + 4 bytes each → 524296; per element 524296/524288.
  //   per_row: 256 float32 per operand (rows of A, columns of B) → 524288 + 2·1024 = 526336.
  //   deepgemm_1x128: ceil(1024/128)·256 = 2048 float32 per operand → 524288 + 2·8192 = 540672.
  //   deepgemm_1x128:deepgemm_128x128: B's tiles roundup(8, 4)·ceil(256/128) = 16 float32 = 64 bytes
  //     → 524288 + 8192 + 64 = 532544.
  //   mx_rceil (E4M3FN): roundup(256, 128)·roundup(1024/32, 4) = 8192 E8M0 bytes each → 540672.
  //   nvfp4_te (E2M1): 131072 element bytes each; roundup(256, 128)·roundup(1024/16, 4) = 16384 E4M3
  //     scales + a 4-byte tensor scale each → 2·(131072 + 16384 + 4) = 294920 = 0.5625076… B/element.
  void bytesHandDerived() {
    auto bytes = [](const char* a, const char* b, const char* fa, const char* fb) {
      const auto c = recipeCost(a, b, fa, fb, 256, 1024, 256);
      return c ? c->bytes() : int64_t(-1);
    };
    QCOMPARE(bytes("te_current", "", "E4M3FN", "E4M3FN"), int64_t(524296));
    QCOMPARE(bytes("per_row", "", "E4M3FN", "E4M3FN"), int64_t(526336));
    QCOMPARE(bytes("deepgemm_1x128", "", "E4M3FN", "E4M3FN"), int64_t(540672));
    QCOMPARE(bytes("deepgemm_1x128", "deepgemm_128x128", "E4M3FN", "E4M3FN"), int64_t(532544));
    QCOMPARE(bytes("mx_rceil", "", "E4M3FN", "E4M3FN"), int64_t(540672));
    QCOMPARE(bytes("mx_rceil", "mx_rceil_2d", "E4M3FN", "E4M3FN"), int64_t(540672));
    QCOMPARE(bytes("nvfp4_te", "", "E2M1", "E2M1"), int64_t(294920));
    const auto nv = recipeCost("nvfp4_te", "", "E2M1", "E2M1", 256, 1024, 256);
    QCOMPARE(nv->bytesPerElement(), 294920.0 / 524288.0);
    QCOMPARE(nv->a.element_bytes, int64_t(131072));
    QCOMPARE(nv->a.scales, int64_t(16384));
    QCOMPARE(nv->a.scale_bytes, int64_t(16388));
    QCOMPARE(recipeCost("te_current", "", "E4M3FN", "E4M3FN", 256, 1024, 256)->bytesPerElement(), 524296.0 / 524288.0);
  }

  // Padding: A [100, 48] in MX blocks of 32 along K: ceil(48/32) = 2 blocks per row, padded to 4;
  // 100 rows padded to 128 → 512 E8M0 scales; B [48, 20] with N = 20 → 128·4 = 512 too.
  // 128×128 tiles of B [48, 20]: roundup(ceil(48/128) = 1, 4)·ceil(20/128) = 4 float32.
  // E2M1 elements of an odd count: ceil(3·5·4 / 8) = 8 bytes.
  void paddedLayouts() {
    const auto mx = recipeCost("mx_rceil", "", "E4M3FN", "E4M3FN", 100, 48, 20);
    QCOMPARE(mx->a.scales, int64_t(512));
    QCOMPARE(mx->b.scales, int64_t(512));
    const auto blk = recipeCost("deepgemm_1x128", "deepgemm_128x128", "E4M3FN", "E4M3FN", 100, 48, 20);
    QCOMPARE(blk->a.scales, int64_t(100));
    QCOMPARE(blk->b.scales, int64_t(4));
    const auto fp4 = recipeCost("mx_rceil", "", "E2M1", "E2M1", 3, 5, 2);
    QCOMPARE(fp4->a.element_bytes, int64_t(8));
  }

  // Where it runs (CUBLASLT-FP8.md §3 table; gpu/scale_layout.h's exact promotions).
  void nativeVerdicts() {
    auto hw = [](const char* a, const char* b, const char* fa, const char* fb) {
      const auto c = recipeCost(a, b, fa, fb, 256, 256, 256);
      return c ? QString::fromStdString(c->hardware) : QStringLiteral("?");
    };
    QCOMPARE(hw("te_current", "", "E4M3FN", "E4M3FN"), QStringLiteral("Ada/Hopper/Blackwell"));
    QCOMPARE(hw("te_current", "", "E4M3FN", "E5M2"), QStringLiteral("Ada/Hopper/Blackwell"));
    QCOMPARE(hw("te_current", "", "E5M2", "E5M2"), QStringLiteral("emulation"));
    QCOMPARE(hw("per_row", "", "E4M3FN", "E4M3FN"), QStringLiteral("Hopper"));
    QCOMPARE(hw("deepgemm_1x128", "deepgemm_128x128", "E4M3FN", "E4M3FN"), QStringLiteral("Hopper"));
    QCOMPARE(hw("deepgemm_128x128", "", "E4M3FN", "E4M3FN"), QStringLiteral("Hopper"));  // A promoted to VEC128
    QCOMPARE(hw("te_current", "per_row", "E4M3FN", "E4M3FN"), QStringLiteral("Hopper")); // scalar → outer vector
    QCOMPARE(hw("mx_rceil", "", "E4M3FN", "E4M3FN"), QStringLiteral("Blackwell"));
    QCOMPARE(hw("mx_rceil", "", "E2M1", "E2M1"), QStringLiteral("Blackwell"));
    QCOMPARE(hw("nvfp4_te", "nvfp4_te_2d", "E2M1", "E2M1"), QStringLiteral("Blackwell"));
    QCOMPARE(hw("nvfp4_te", "", "E4M3FN", "E4M3FN"), QStringLiteral("emulation"));
    QCOMPARE(hw("mx_rceil", "deepgemm_128x128", "E4M3FN", "E4M3FN"), QStringLiteral("emulation"));
    QCOMPARE(hw("te_current", "", "E4M3FNUZ", "E4M3FNUZ"), QStringLiteral("emulation"));
    QCOMPARE(hw("te_current", "", "E2M1", "E2M1"), QStringLiteral("emulation"));
    const auto pair = recipeCost("deepgemm_1x128", "deepgemm_128x128", "E4M3FN", "E4M3FN", 256, 256, 256);
    QVERIFY(pair->native.find("VEC128_32F × BLK128x128_32F") != std::string::npos);
    QVERIFY(!recipeCost("nope", "", "E4M3FN", "E4M3FN", 1, 1, 1));
    QVERIFY(!recipeCost("te_current", "", "E9M9", "E4M3FN", 1, 1, 1));
    // Every row of the table names its source.
    for (const ScaleKind& k : scaleKinds()) QVERIFY2(!k.source.empty(), k.id.c_str());
    QCOMPARE(QString::fromStdString(bytesText(540672)), QStringLiteral("528 KiB"));
    QCOMPARE(QString::fromStdString(bytesText(1000)), QStringLiteral("1000 B"));
    // 1×128 float32 scales on both operands: 1 + 4/128 = 1.03125 bytes per element, a tie
    // at four decimals that printf rounds to even; 1.015625 is no tie.
    QCOMPARE(bytesPerElementText(1.03125), std::string("1.0312"));
    QCOMPARE(bytesPerElementText(1.015625), std::string("1.0156"));
    QCOMPARE(bytesPerElementText(1.03125, 3), std::string("1.031"));
  }
};

QTEST_APPLESS_MAIN(TestRecipeCost)
#include "test_recipe_cost.moc"

// The two-level scale display of NVFP4 (bit layout view): an element shown as tensor scale ×
// E4M3 block scale × E2M1 element, for TE's convention (the amax is kept; block factor
// f32(f32(s·amax)·f32(1/2688))) and torchao's (pts = amax/2688 is kept; block factor f32(pts·s)).
#include "bit_layout_view.h"

#include "scaling/nvfp4.h"

#include <QtTest>

using namespace fp8lab::ui;

namespace {

// One 1×16 block: 16, 4, 1, 0.5 and twelve zeros. Derived by hand (docs/nvfp4.md):
//   amax = 16.
//   TE: S_enc = f32(2688/16) = 168; block scale = E4M3 RNE(16 · f32(168 · f32(1/6)) = 16 · 28)
//       = 448 = 0x7E (E4M3FN max: 0 1111 110); element multiplier 1/f32(448 · f32(1/168)) ≈ 0.375,
//       so 4 → 1.5 (E2M1 0 01 1 = 0x3), 16 → 6 (0x7), 1 → 0.375 → RNE 0.5 (0x1).
//       Tensor factor f32(16 · f32(1/2688)): f32(1/2688) = 0x39C30C31, times 16 exact,
//       = 0.0059523810632526875 → "0.0059524" at 5 digits.
//       Block factor f32(f32(448·16) · f32(1/2688)) = f32(7168 · 0x39C30C31) = 0x402AAAAB
//       = 2.6666667461395264; element 4 → f32(1.5 · 2.6666667461…) = f32(4.00000011920929) = 4.
//   torchao: pts = f32(16/2688) = 0.0059523810632526875 (the same float); block scale
//       RNE_E4M3((16/6)/pts) = 448 (0x7E), element 4 · (f32(1/pts)/448) = 1.5 (0x3);
//       value f32(1.5 · f32(pts · 448)) = f32(1.5 · 2.6666667461…) = 4.
const std::vector<float> kBlock = {16, 4, 1, 0.5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

fp8lab::QuantizedTensor quantized(const char* preset) {
  const auto cfg = fp8lab::nvfp4Preset(preset);
  if (!cfg) qFatal("no preset %s", preset);
  return fp8lab::toQuantizedTensor(fp8lab::quantizeNvfp4(kBlock.data(), 1, 16, *cfg), *cfg, kBlock.data());
}

} // namespace

class TestTwoLevelScale : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void teKeepsTheAmax() {
    const auto q = quantized("nvfp4_te");
    QCOMPARE(twoLevelScaleText(q, 0, 1),
             QStringLiteral("x = 0.0059524 (tensor, amax/2688) \u00d7 448 (E4M3 0x7E) \u00d7 1.5 (E2M1 0x3) = 4"));
    // 16 → 6 (0x7): f32(6 · 2.6666667461…) = f32(16.0000004768…) = 16.
    QCOMPARE(twoLevelScaleText(q, 0, 0),
             QStringLiteral("x = 0.0059524 (tensor, amax/2688) \u00d7 448 (E4M3 0x7E) \u00d7 6 (E2M1 0x7) = 16"));
    // 1 → 0.5 (0x1): f32(0.5 · 2.6666667461…) = 1.3333333730697632, shortest "1.3333334".
    QCOMPARE(
        twoLevelScaleText(q, 0, 2),
        QStringLiteral("x = 0.0059524 (tensor, amax/2688) \u00d7 448 (E4M3 0x7E) \u00d7 0.5 (E2M1 0x1) = 1.3333334"));
    QCOMPARE(twoLevelConventionText(q, 0, 1),
             QStringLiteral("TE: block factor f32(f32(s\u00b7amax)\u00b7f32(1/2688)) = 2.6666667; amax 16, "
                            "S_enc = 2688/amax = 168"));
  }

  void torchaoKeepsThePerTensorScale() {
    const auto q = quantized("nvfp4_torchao");
    QCOMPARE(twoLevelScaleText(q, 0, 1),
             QStringLiteral("x = 0.0059524 (tensor, pts) \u00d7 448 (E4M3 0x7E) \u00d7 1.5 (E2M1 0x3) = 4"));
    QCOMPARE(twoLevelConventionText(q, 0, 1),
             QStringLiteral("torchao: block factor f32(pts\u00b7s) = 2.6666667; per_tensor_scale pts = amax/2688 = "
                            "0.0059523811"));
  }

  // The view's example panel: the typed values, padded with zeros to one block of 16, give the
  // same lines; a word that is not a number is refused with the reason.
  void theViewShowsTheTypedValues() {
    BitLayoutView v;
    QVERIFY(v.setTwoLevelExample(QStringLiteral("16, 4, 1, 0.5"), QStringLiteral("nvfp4_te"), 1));
    QVERIFY2(v.twoLevelText().contains(
                 QStringLiteral("x = 0.0059524 (tensor, amax/2688) \u00d7 448 (E4M3 0x7E) \u00d7 1.5 (E2M1 0x3) = 4")),
             qPrintable(v.twoLevelText()));
    QVERIFY(v.twoLevelText().startsWith(QStringLiteral("input 4\n")));
    QVERIFY(!v.setTwoLevelExample(QStringLiteral("16 four"), QStringLiteral("nvfp4_te"), 0));
    QVERIFY(v.twoLevelText().contains(QStringLiteral("'four' is not a number")));
    QVERIFY(!v.setTwoLevelExample(QStringLiteral("16"), QStringLiteral("nvfp4_nonesuch"), 0));
  }
};

QTEST_MAIN(TestTwoLevelScale)
#include "test_two_level_scale.moc"

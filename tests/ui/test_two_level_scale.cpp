// The two-level scale display of NVFP4 (bit layout view): an element shown as tensor scale ×
// E4M3 block scale × E2M1 element, for TE's convention (the amax is kept; block factor
// f32(f32(s·amax)·f32(1/2688))) and torchao's (pts = amax/2688 is kept; block factor f32(pts·s)).
#include "views/bit_layout_view.h"
#include "session/run_access.h"

#include "scaling/nvfp4.h"
#include "session/session.h"

#include <QComboBox>

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

/// A GEMM run whose A holds kBlock quantized by nvfp4_te, its datasets written out by hand from
/// the derivation above: E2M1 codes 16 → 0x7, 4 → 0x3, 1 → 0x1, 0.5 → 0.5 · 0.375 = 0.1875 →
/// RNE 0 (0x0), zeros 0x0; one block scale 448 (E4M3 0x7E); tensor amax 16, S_enc 168.
std::shared_ptr<fp8lab::Run> nvfp4Run() {
  auto r = std::make_shared<fp8lab::Run>();
  r->id = "fp4";
  r->type = "gemm";
  r->config_json = "{}";
  r->putFloat32("inputs/A", kBlock, 1, 16, "1", "A");
  std::vector<uint8_t> codes(16, 0x0);
  codes[0] = 0x7;
  codes[1] = 0x3;
  codes[2] = 0x1;
  auto& c = r->datasets["quantized/A_codes"] = fp8lab::Dataset::uint8({1, 16}, codes, "code", "A codes");
  c.attrs["format"] = std::string("E2M1");
  c.attrs["block_rows"] = int64_t(1);
  c.attrs["block_cols"] = int64_t(16);
  c.attrs["scaling"] = std::string("nvfp4_te");
  auto& s = r->putFloat32("quantized/A_scales", {448.0f}, 1, 1, "1", "A block scales");
  s.attrs["block_rows"] = int64_t(1);
  s.attrs["block_cols"] = int64_t(16);
  s.attrs["tensor_scale_kind"] = std::string("te_amax");
  s.attrs["tensor_amax"] = 16.0;
  s.attrs["tensor_scale"] = 168.0;
  s.attrs["fp4_fp8_max"] = 2688.0;
  auto& sc = r->datasets["quantized/A_scale_codes"] = fp8lab::Dataset::uint8({1, 1}, {0x7E}, "code", "A scale codes");
  sc.attrs["format"] = std::string("E4M3FN");
  return r;
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

  // An element of a run's NVFP4 operand: the levels read from its datasets give the typed
  // example's lines (element 1: 4 → 1.5 (0x3) × 448 (0x7E) × amax/2688), with the run, the
  // element and the TE convention named, and the input.
  void theBoxShowsAnElementOfARun() {
    const auto run = fp8lab::ui::RunAccess::fromRun(nvfp4Run());
    QString why;
    QCOMPARE(runTwoLevelText(*run, 'A', 0, 1, &why),
             QStringLiteral("A[0, 1] of run fp4 (nvfp4_te; Transformer Engine convention: the tensor amax is kept)\n"
                            "input 4\n"
                            "x = 0.0059524 (tensor, amax/2688) \u00d7 448 (E4M3 0x7E) \u00d7 1.5 (E2M1 0x3) = 4\n"
                            "TE: block factor f32(f32(s\u00b7amax)\u00b7f32(1/2688)) = 2.6666667; amax 16, "
                            "S_enc = 2688/amax = 168"));
    // Element 3 (0.5 → 0x0): f32(0 · 2.6666667) = 0.
    QVERIFY2(runTwoLevelText(*run, 'A', 0, 3, &why)
                 .contains(QStringLiteral("\u00d7 448 (E4M3 0x7E) \u00d7 0 (E2M1 0x0) = 0")),
             qPrintable(why));
    QCOMPARE(runTwoLevelText(*run, 'A', 0, 16, &why), QString());
    QCOMPARE(why, QStringLiteral("(0, 16) is outside quantized/A_codes [1\u00d716]"));
    QCOMPARE(runTwoLevelText(*run, 'B', 0, 0, &why), QString());
    QVERIFY2(why.startsWith(QStringLiteral("Run fp4 has no two-level (NVFP4) operand B")), qPrintable(why));

    // The same in the view's box, which switches to "From a GEMM run"; back to typed values after.
    BitLayoutView v;
    QVERIFY(v.setTwoLevelRun(run, 'A', 0, 1));
    QVERIFY(v.twoLevelFromRun());
    QCOMPARE(v.twoLevelText(), runTwoLevelText(*run, 'A', 0, 1, &why));
    QCOMPARE(v.findChild<QComboBox*>(QStringLiteral("twoLevelSource"))->currentIndex(), 1);
    QVERIFY(!v.setTwoLevelRun(run, 'B', 0, 0));
    QVERIFY(v.twoLevelText().startsWith(QStringLiteral("\u2716 Run fp4 has no two-level (NVFP4) operand B")));
    QVERIFY(v.setTwoLevelExample(QStringLiteral("16 4 1 0.5"), QStringLiteral("nvfp4_te"), 1));
    QVERIFY(!v.twoLevelFromRun());
    QVERIFY(v.twoLevelText().startsWith(QStringLiteral("input 4\n")));
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

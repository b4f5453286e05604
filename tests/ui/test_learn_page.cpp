// The Learn page's demos with their controls: each demo's numbers against values from outside the
// code — hand derivations in the comments, the Flax FP8 guide, published parameter counts, the
// integer oracle's survey count (tests/core/teaching) — and the tour's claims.
#include <QtTest>

#include "learn/learn_demos.h"
#include "learn/learn_page.h"

#include <QTableWidget>

using namespace fp8lab;
using namespace fp8lab::ui;

namespace {
QStringList column(QTableWidget* t, int c) {
  QStringList v;
  for (int r = 0; r < t->rowCount(); ++r) v << (t->item(r, c) ? t->item(r, c)->text() : QString());
  return v;
}
} // namespace

class TestLearnPage : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void eightDemosAndATour() {
    LearnPage v;
    QCOMPARE(LearnPage::kDemoCount, 8);
    QCOMPARE(v.demo(), -1); // the tour first
    QVERIFY(v.tourText().contains(QStringLiteral("Start here")));
    for (int i = 0; i < LearnPage::kDemoCount; ++i) {
      QVERIFY2(v.tourText().contains(QStringLiteral("learn:%1").arg(i)), "every demo is a step of the tour");
      v.setDemo(i);
      QCOMPARE(v.demo(), i);
      QVERIFY(v.exportPlot());
      QVERIFY(!v.csv().isEmpty());
    }
    v.setDemo(-1);
    QCOMPARE(v.demo(), -1);
    QVERIFY(v.csv().isEmpty());
  }

  // Demo 1 with E2M1 (values 0, 0.5, 1, 1.5, 2, 3, 4, 6; codes 0x0 .. 0x7) and x = 0.1, 0.5, 0.8, 1.0:
  //   unscaled: 0.1 < 0.25 → 0x0; 0.5 → 0x1 (subnormal); 0.8 > 0.75 → 1.0 = 0x2; 1.0 → 0x2.
  //   TE scale s = 6 / 1.0 = 6: 0.6 < 0.75 → 0.5 = 0x1; 3 → 0x5; 4.8 < 5 → 4 = 0x6; 6 → 0x7.
  void whyScaleControls() {
    WhyScaleDemo d;
    d.setInputs(QStringLiteral("0.1, 0.5, 0.8, 1.0"), QStringLiteral("E2M1"), QStringLiteral("te_current"));
    QCOMPARE(column(d.table(), 1),
             (QStringList{QStringLiteral("0x0"), QStringLiteral("0x1"), QStringLiteral("0x2"), QStringLiteral("0x2")}));
    QCOMPARE(column(d.table(), 5),
             (QStringList{QStringLiteral("0x1"), QStringLiteral("0x5"), QStringLiteral("0x6"), QStringLiteral("0x7")}));
    QVERIFY(d.noteText().contains(QStringLiteral("<b>6</b>"))); // the scale, in the text
    QVERIFY(d.noteText().contains(QStringLiteral("1 flushed to zero")));
    // A bad value keeps the table and says why.
    d.setInputs(QStringLiteral("0.1, x"), QStringLiteral("E2M1"), QStringLiteral("te_current"));
    QVERIFY(d.noteText().contains(QStringLiteral("'x'")));
    QCOMPARE(d.table()->rowCount(), 4);
  }

  // Demo 2: the formats' limits (OCP OFP8: E4M3FN max 448, min subnormal 2^-9; E5M2 57344,
  // 2^-16), and the tour's claim. With σ = 3.5 (ln|x|), the 16384 values span ±3σ/ln 2 ≈ ±15
  // binades around 2^-8.7, wider than E4M3FN's 17.8 binades below its max: more than half flush
  // (median error 100 %) while E5M2's 31.8 binades keep almost all; with σ = 1 (±4.3 binades)
  // nothing flushes and E4M3FN's 3 mantissa bits beat E5M2's 2 (median error about half).
  void rangeDemo() {
    RangeDemo d;
    d.ensureComputed(); // demos compute when first shown
    QCOMPARE(column(d.table(), 1), (QStringList{QStringLiteral("448"), QStringLiteral("57344")}));
    QVERIFY(d.table()->item(0, 2)->text().contains(QStringLiteral("0.001953125")));
    QVERIFY(d.table()->item(1, 2)->text().contains(QStringLiteral("1.52587890625e-05")));
    auto share = [&](int row, int col) { return d.table()->item(row, col)->text().chopped(1).toDouble(); };
    d.setSpread(-6, 3.5);
    QVERIFY(share(0, 6) > 50); // E4M3FN flushes more than half
    QVERIFY(share(1, 6) < 1);
    QCOMPARE(d.table()->item(0, 7)->text(), QStringLiteral("100.00%"));
    QVERIFY(d.noteText().contains(QStringLiteral("E5M2 keeps more of the tensor")));
    d.setSpread(-6, 1.0);
    QCOMPARE(share(0, 6), 0.0);
    QVERIFY(share(0, 7) < 0.6 * share(1, 7));
    QVERIFY(d.noteText().contains(QStringLiteral("E4M3FN fits this spread")));
  }

  // Demo 3, blocks of 2 channels of [0.001, 0.002, 0.003, 100] in E4M3FN:
  //   block 0: amax 0.002, s = 448/0.002 = 224000: 0.001·s = 224 = 1.75·2^7 → 0 1110 110 = 0x76;
  //            0.002·s = 448 → 0x7e.
  //   block 1: amax 100, s = 4.48: 0.003·s = 0.01344, a subnormal (< 2^-6): 0.01344 / 2^-9 = 6.9 → 7
  //            = 0x07; 100·s = 448 → 0x7e.
  void outlierBlocks() {
    OutlierDemo d;
    d.setInputs(QStringLiteral("0.001, 0.002, 0.003, 100"), QStringLiteral("E4M3FN"), 2);
    QCOMPARE(column(d.table(), 7), (QStringList{QStringLiteral("0x76"), QStringLiteral("0x7e"), QStringLiteral("0x07"),
                                                QStringLiteral("0x7e")}));
    // Block 4 holds every channel: the same codes as per tensor.
    d.setInputs(QStringLiteral("0.001, 0.002, 0.003, 100"), QStringLiteral("E4M3FN"), 4);
    QCOMPARE(column(d.table(), 7), column(d.table(), 3));
  }

  // Demo 5 (index 4): the Flax FP8 guide, inputs 2.0 and 3.0 on a zero history of 1024:
  // fp32_max_grad → 1.0 and [3, 0, …]; plain sum → 2.0 and [5, 0, …].
  void sharedMetadataFlaxNumbers() {
    LearnPage v;
    auto* d = v.demoAs<SharedMetaDemo>(4);
    QVERIFY(d);
    d->setParameters(2.0, 3.0, 1024, 4);
    QTableWidget* t = d->table();
    QCOMPARE(t->item(0, 1)->text(), QStringLiteral("1"));
    QCOMPARE(t->item(0, 2)->text(), QStringLiteral("[3, 0, \u2026, 0, 0]"));
    QCOMPARE(t->item(0, 3)->text(), QStringLiteral("2"));
    QCOMPARE(t->item(0, 4)->text(), QStringLiteral("[5, 0, \u2026, 0, 0]"));
    // Step 1, derived from Flax's update: history [a, 0, …, 0, previous] per use; sum [5, 0, …, 10].
    QCOMPARE(t->item(1, 4)->text(), QStringLiteral("[5, 0, \u2026, 0, 10]"));
    QVERIFY(d->noteText().contains(QStringLiteral("<b>[3, 0, \u2026, 0, 0]</b>")));
  }

  // Demo 6 (index 5): the table shows core's sweep (tests/core/teaching checks the models by hand),
  // four K, DeepSeek-V3's K = 4096 among them; without promotion the error grows with K.
  void accumulationDemo() {
    LearnPage v;
    auto* d = v.demoAs<AccumulationDemo>(5);
    QVERIFY(d);
    d->setParameters(14, 128, true);
    d->waitForResult();
    QCOMPARE(column(d->table(), 0), (QStringList{QStringLiteral("128"), QStringLiteral("1024"), QStringLiteral("4096"),
                                                 QStringLiteral("16384")}));
    const AccumulationSweep& s = d->sweep();
    QCOMPARE(s.ks.size(), size_t(8));
    QVERIFY(s.error[0].back().rel_fro > 10 * s.error[1].back().rel_fro); // promotion bounds it
    QVERIFY(s.error[0].back().rel_fro > s.error[0].front().rel_fro);
    QVERIFY(d->csv().count(QLatin1Char('\n')) == 9); // header + every K
    QVERIFY(d->noteText().contains(QStringLiteral("K = 4096")));
  }

  // Demo 7 (index 6): amax 0.3f (0x3e99999a): 448 / 0.3f = 1493.33327… → 1493.333252 in all four
  // orders (checked with integer arithmetic in tests/core/teaching); the survey of [1, 2):
  // 2,340,417 of 8,388,608 amaxes differ under reciprocal × max (the oracle's count).
  void determinismDemo() {
    LearnPage v;
    auto* d = v.demoAs<DeterminismDemo>(6);
    QVERIFY(d);
    d->setAmax(0.3f);
    QCOMPARE(column(d->table(), 1), QStringList(4, QStringLiteral("1493.333252")));
    QVERIFY(d->noteText().contains(QStringLiteral("all four orders agree")));
    QVERIFY(d->noteText().contains(QStringLiteral("2,340,417")));
    d->nextDifferingCase();
    QVERIFY(d->amax() > 0.3f);
    QCOMPARE(std::abs(d->scaleCase().ulps[size_t(ScaleEvaluation::ReciprocalMultiply)]), int64_t(1));
    QCOMPARE(d->table()->item(1, 3)->text(), QStringLiteral("0")); // float64 division: 0 steps
    QVERIFY(d->noteText().contains(QStringLiteral("Reciprocal")));
  }

  // Demo 8 (index 7): GPT-2 small (124,439,808 parameters), batch 8 × 1024, BF16, flash attention,
  // no dropout. By hand: GEMM weights 12·(4·768² + 2·768·3072) = 84,934,656 → ×2 B = 169,869,312;
  // other parameters 39,505,152 × 2 = 79,010,304; master and gradients 4 B each = 497,759,232 each;
  // Adam 8 B = 995,518,464; saved GEMM inputs 12·8192·(3·768 + 3072)·2 = 1,056,964,608; other
  // activations 12·8192·2·(2·768 + 3·768 + 3072) = 1,358,954,496; logits 8192·50257·4 =
  // 1,646,821,376. Total 6,302,657,024 B = 5.87 GiB.
  void memoryDemo() {
    LearnPage v;
    auto* d = v.demoAs<MemoryDemo>(7);
    QVERIFY(d);
    d->setInputs(QStringLiteral("gpt2_small"), 8, 1024, QStringLiteral("bf16"));
    QCOMPARE(d->budget().parameters, int64_t(124439808));
    QCOMPARE(d->budget().total_bytes, 6302657024.0);
    QTableWidget* t = d->table();
    QCOMPARE(t->item(t->rowCount() - 1, 4)->text(), QStringLiteral("5.87 GiB"));
    QVERIFY(d->noteText().contains(QStringLiteral("124,439,808")));
    // FP8 delayed: the weights' GEMM copy halves, and the scaling state appears.
    d->setInputs(QStringLiteral("gpt2_small"), 8, 1024, QStringLiteral("fp8_delayed"));
    QVERIFY(d->budget().total_bytes < 6302657024.0);
    QVERIFY(d->budget().scale_bytes > 0);
    // The scales' share is of the tensors they scale. By hand, per-tensor float32 scales (4 B):
    // weights 6 matrices × 12 layers = 288 B, GEMM inputs 4 × 12 = 192 B, scaling state
    // 12·12 tensors × (4·1024 + 8) = 590,976 B: 591,456 B in all. Scaled data: the weights' GEMM
    // copy 84,934,656 B + GEMM inputs 12·8192·(3·768 + 3072) = 528,482,304 B at 1 B each = 613,416,960 B
    // (0.57 GiB). 591,456 / 613,416,960 = 0.0964% (against the weights and every activation, logits
    // included, it would read 0.0163%).
    QCOMPARE(d->budget().scale_bytes, 591456.0);
    QVERIFY2(d->noteText().contains(QStringLiteral("(0.0964% of the 0.57 GiB of GEMM weights and saved GEMM inputs "
                                                   "they scale)")),
             qPrintable(d->noteText()));
  }
};

QTEST_MAIN(TestLearnPage)
#include "test_learn_page.moc"

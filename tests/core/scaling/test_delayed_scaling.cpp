// Tests for core/scaling/delayed_scaling: Flax fp8_ops and Transformer Engine DelayedScaling.
// Expected values: Flax tests/linen/linen_test.py (Fp8Test.test_fp8_meta_dtype), the Flax FP8
// guide (max vs sum accumulation of reused metadata, PR #3623), TE tests/pytorch/test_recipe.py
// (test_fp8_scale_update_with_linear_module: margin 2, HYBRID; test_scale_update_numeric_
// scenarios: amax 0 / tiny / inf / NaN), and hand-derived windows (comments).
#include <QtTest>

#include <cmath>
#include <limits>
#include <vector>

#include "compare_bits.h"
#include "formats/format.h"
#include "scaling/delayed_scaling.h"

using namespace fp8lab;

namespace {
constexpr float kFltMax = std::numeric_limits<float>::max();
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

DelayedScalingConfig flaxCfg(int len) {
  DelayedScalingConfig c;
  c.preset = DelayedPreset::Flax;
  c.history_len = len;
  return c;
}
DelayedScalingConfig teCfg(int len, AmaxAlgo algo = AmaxAlgo::Max, int margin = 0) {
  DelayedScalingConfig c;
  c.preset = DelayedPreset::TE;
  c.history_len = len;
  c.algo = algo;
  c.margin = margin;
  return c;
}
} // namespace

class TestDelayedScaling : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void flaxMetaDtype();
  void flaxMaxVersusSumAccumulation();
  void flaxEdgeRulesKeepPrevious();
  void flaxTinyAmaxStoresZero();
  void flaxQuantizeStepDividesByScale();
  void teMargin2Hybrid_data();
  void teMargin2Hybrid();
  void teMaxVersusMostRecent();
  void teNumericScenarios_data();
  void teNumericScenarios();
  void teZeroAmaxDoesNotRoll();
  void teInfStaysInWindow();
  void teWindowRollsOut();
  void flaxAndTeUseTheSameWindow();
  void teRecordCombinesByMax();
  void teQuantizeStepUsesCurrentScale();
  void teJaxRollsOnZeroAndDoesNotClamp();
  void simulateAndSetState();
  void badConfig();
};

// Flax Fp8Test.test_fp8_meta_dtype (the vector): history length 3, scale 1, inputs
// 2, 3, 4 used in turn → stored histories [2,0,0], [3,0,2], [4,2,3]; scales 1.0, 2/448, 3/448
// (float32, via the double reciprocal 1/(448/a): 1/224 = 0.004464285913854837f = float32(2/448),
// 1/(448/3) = 0.0066964286379516125f = float32(3/448), derived).
void TestDelayedScaling::flaxMetaDtype() {
  DelayedScaling s(Format::E4M3FN(), flaxCfg(3));
  QCOMPARE_BITS(s.scale(), 1.0f);
  const float inputs[3] = {2.0f, 3.0f, 4.0f};
  const std::vector<std::vector<float>> hist = {{2, 0, 0}, {3, 0, 2}, {4, 2, 3}};
  const std::vector<std::vector<float>> chrono = {{0, 0, 2}, {0, 2, 3}, {2, 3, 4}};
  const float scales[3] = {1.0f, 0.004464285913854837f, 0.0066964286379516125f};
  for (int i = 0; i < 3; ++i) {
    const DelayedUpdate u = s.update(inputs[i]);
    QCOMPARE_BITS(s.historyRaw(), hist[static_cast<size_t>(i)]);
    QCOMPARE_BITS(s.historyChronological(), chrono[static_cast<size_t>(i)]);
    QCOMPARE_BITS(s.scale(), scales[i]);
    QCOMPARE_BITS(u.scale_used, scales[i]); // Flax: the scale of this step's tensor
    QCOMPARE_BITS(u.dequant_scale, scales[i]);
    QCOMPARE(u.kept_previous, i == 0); // step 0: window all zeros → keep 1.0
  }
  // Within 1 float32 ulp of a/448 as Flax's assert_allclose expects.
  QVERIFY(std::fabs(scales[1] - 2.0 / 448.0) < 1e-9);
  QVERIFY(s.scaleOp() == Format::ScaleOp::Divide);
}

// Flax FP8 guide: the same meta used twice in one step with inputs 2.0 and 3.0 on a zero
// history (length 1024). Each use starts from (scale 1, zeros): history [a,0,...], scale 1.0
// (window all zero → keep). Max (fp32_max_grad): scale 1.0, history [3,0,...].
// Sum (plain autodiff, the bug): scale 2.0, history [5,0,...].
void TestDelayedScaling::flaxMaxVersusSumAccumulation() {
  const DelayedScaling start(Format::E4M3FN(), flaxCfg(1024));
  DelayedScaling use1 = start, use2 = start;
  use1.update(2.0f);
  use2.update(3.0f);
  const std::vector<DelayedScaling> uses = {use1, use2};
  const DelayedScaling mx = DelayedScaling::combineUses(uses, MetaCombine::Max);
  QCOMPARE_BITS(mx.scale(), 1.0f);
  QCOMPARE_BITS(mx.historyRaw()[0], 3.0f);
  for (size_t i = 1; i < 1024; ++i) QCOMPARE_BITS(mx.historyRaw()[i], 0.0f);
  const DelayedScaling sum = DelayedScaling::combineUses(uses, MetaCombine::Sum);
  QCOMPARE_BITS(sum.scale(), 2.0f);
  QCOMPARE_BITS(sum.historyRaw()[0], 5.0f);
  QCOMPARE_BITS(sum.historyRaw()[1], 0.0f);
  // Differing configs cannot be combined.
  const std::vector<DelayedScaling> bad = {use1, DelayedScaling(Format::E4M3FN(), flaxCfg(16))};
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DelayedScaling::combineUses(bad, MetaCombine::Max));
}

// Flax compute_scale: window amax 0 / inf / NaN → fallback 1/(1/prev). With prev 7.0 the
// double reciprocal gives 6.999999523162842f (derived: 1/7 → 0.14285715f; 1/0.14285715f =
// 6.99999952..., one float32 ulp below 7). An inf amax freezes the scale while in the window.
void TestDelayedScaling::flaxEdgeRulesKeepPrevious() {
  DelayedScaling s(Format::E4M3FN(), flaxCfg(2));
  s.setState(7.0f, {0.0f, 0.0f});
  DelayedUpdate u = s.update(kInf); // window {0,0} → keep
  QVERIFY(u.kept_previous);
  QCOMPARE_BITS(s.scale(), 6.999999523162842f);
  u = s.update(1.0f); // window {0, inf} → inf → keep
  QVERIFY(u.kept_previous);
  u = s.update(1.0f); // window {inf, 1} → still inf
  QVERIFY(u.kept_previous);
  u = s.update(1.0f); // window {1, 1} → 1/(448/1) = float32(1/448)
  QVERIFY(!u.kept_previous);
  QCOMPARE_BITS(s.scale(), 1.0f / 448.0f);
  // NaN behaves like inf (jnp.max propagates it).
  DelayedScaling n(Format::E4M3FN(), flaxCfg(1));
  n.update(kNaN);
  QVERIFY(n.update(2.0f).kept_previous);
  QVERIFY(!n.update(2.0f).kept_previous);
}

// Flax has no clamp: a tiny positive amax gives sf = 448/amax = inf and a stored scale of 0;
// the next use then divides by 0 (saturating every non-zero element).
void TestDelayedScaling::flaxTinyAmaxStoresZero() {
  DelayedScaling s(Format::E4M3FN(), flaxCfg(1));
  s.update(1e-38f);
  QCOMPARE_BITS(s.update(1.0f).scale, 0.0f);
  // A stored tiny amax: the step's own scale becomes 0 and x / 0 = ±inf saturates to ±448.
  const std::vector<float> x = {1.0f, -2.0f};
  DelayedScaling t(Format::E4M3FN(), flaxCfg(1));
  t.setState(1.0f, {1e-38f});
  DelayedUpdate u;
  const QuantizedTensor q = t.quantizeStep(x.data(), 1, 2, &u);
  QCOMPARE_BITS(u.scale_used, 0.0f);
  QCOMPARE(int(q.codes[0]), 0x7E);
  QCOMPARE(int(q.codes[1]), 0xFE);
  QCOMPARE(q.stats.saturated, int64_t(2));
}

// Flax quantizes cast(clip(x / scale)): window {4} → scale 1/(448/4) = 1/112 (0.008928571827709675f,
// derived); 4 / (1/112f) = 448.00000 → 0x7E; 2 / (1/112f) = 224 → 0x76.
void TestDelayedScaling::flaxQuantizeStepDividesByScale() {
  DelayedScaling s(Format::E4M3FN(), flaxCfg(4));
  s.update(4.0f);
  const std::vector<float> x = {2.0f, 4.0f, 0.0f, 1.0f};
  DelayedUpdate u;
  const QuantizedTensor q = s.quantizeStep(x.data(), 2, 2, &u);
  QCOMPARE_BITS(u.scale_used, 0.008928571827709675f);
  QVERIFY(q.scale_op == Format::ScaleOp::Divide);
  QCOMPARE_BITS(q.dequant_scales[0], 0.008928571827709675f);
  QCOMPARE(int(q.codes[0]), 0x76);
  QCOMPARE(int(q.codes[1]), 0x7E);
  QCOMPARE_BITS(s.historyRaw()[0], 4.0f); // this step's amax recorded
}

// TE test_fp8_scale_update_with_linear_module: DelayedScaling(margin=2, HYBRID), history 31 and
// 1024, both algos. At step s the input is filled with s+0.25, the weight with s+0.5, the output
// gradient with s+0.75 (s = 0..3). After each step: scale = (fp8_max / amax) / 2^2 with amax the
// max of the window (increasing inputs: also the most recent), fp8_max 448 forward (E4M3) and
// 57344 backward (E5M2). TE's reference computes (max/amax)/4 in float32.
void TestDelayedScaling::teMargin2Hybrid_data() {
  QTest::addColumn<int>("len");
  QTest::addColumn<int>("algo");
  for (int len : {31, 1024})
    for (int a : {0, 1})
      QTest::newRow(
          qPrintable(QStringLiteral("L%1_%2").arg(len).arg(a ? QStringLiteral("most_recent") : QStringLiteral("max"))))
          << len << a;
}

void TestDelayedScaling::teMargin2Hybrid() {
  QFETCH(int, len);
  QFETCH(int, algo);
  const AmaxAlgo al = algo ? AmaxAlgo::MostRecent : AmaxAlgo::Max;
  DelayedScaling x(Format::E4M3FN(), teCfg(len, al, 2));
  DelayedScaling w(Format::E4M3FN(), teCfg(len, al, 2));
  DelayedScaling g(Format::E5M2(), teCfg(len, al, 2));
  std::vector<float> xs, ws, gs;
  for (int s = 0; s < 4; ++s) {
    const float ax = static_cast<float>(s) + 0.25f, aw = static_cast<float>(s) + 0.5f,
                ag = static_cast<float>(s) + 0.75f;
    // The tensors themselves: the amax is taken from the data (TE's cast kernel).
    const std::vector<float> tx(64, ax), tw(64, -aw), tg(64, ag);
    const float used_x = x.scale();
    DelayedUpdate ux;
    x.quantizeStep(tx.data(), 8, 8, &ux);
    w.quantizeStep(tw.data(), 8, 8);
    g.quantizeStep(tg.data(), 8, 8);
    QCOMPARE_BITS(ux.scale_used, used_x); // TE quantizes with the scale from before the step
    QCOMPARE_BITS(x.scale(), (448.0f / ax) / 4.0f);
    QCOMPARE_BITS(w.scale(), (448.0f / aw) / 4.0f);
    QCOMPARE_BITS(g.scale(), (57344.0f / ag) / 4.0f);
    QCOMPARE_BITS(x.dequantScale(), 1.0f / x.scale());
    xs.push_back(ax);
    ws.push_back(aw);
    gs.push_back(ag);
    // History (chronological): L−1 stored amaxes oldest first, then the cleared staging slot.
    const std::vector<float> h = x.historyChronological();
    QCOMPARE(int(h.size()), len);
    QCOMPARE_BITS(h.back(), 0.0f);
    for (int k = 0; k <= s; ++k) QCOMPARE_BITS(h[static_cast<size_t>(len - 2 - s + k)], xs[static_cast<size_t>(k)]);
    QCOMPARE_BITS(h[static_cast<size_t>(len - 3 - s)], 0.0f);
    QVERIFY(!x.keptPrevious());
  }
}

// Decreasing amaxes 4 then 1 (E4M3, margin 0, L 31): max keeps 448/4 = 112, most_recent
// gives 448/1 = 448. With L = 1 the window is only the current amax: both give 448.
void TestDelayedScaling::teMaxVersusMostRecent() {
  for (int len : {31, 1}) {
    DelayedScaling m(Format::E4M3FN(), teCfg(len, AmaxAlgo::Max));
    DelayedScaling r(Format::E4M3FN(), teCfg(len, AmaxAlgo::MostRecent));
    m.update(4.0f);
    r.update(4.0f);
    QCOMPARE_BITS(m.scale(), 112.0f);
    QCOMPARE_BITS(r.scale(), 112.0f);
    m.update(1.0f);
    r.update(1.0f);
    QCOMPARE_BITS(m.scale(), len == 1 ? 448.0f : 112.0f);
    QCOMPARE_BITS(r.scale(), 448.0f);
  }
}

// TE test_scale_update_numeric_scenarios: history [[amax]] (length 1), scale 1.0:
// zero → 1.0, tiny = (fp8_max/FLT_MAX)/2 → FLT_MAX, inf → 1.0, NaN → 1.0, normal → max/amax.
void TestDelayedScaling::teNumericScenarios_data() {
  QTest::addColumn<int>("fmt");
  QTest::addColumn<float>("amax");
  QTest::addColumn<float>("expected");
  QTest::addColumn<bool>("kept");
  for (int f : {0, 1}) {
    const float mx = f ? 57344.0f : 448.0f;
    const char* n = f ? "E5M2" : "E4M3";
    QTest::newRow(qPrintable(QStringLiteral("%1_zero").arg(QLatin1String(n)))) << f << 0.0f << 1.0f << true;
    QTest::newRow(qPrintable(QStringLiteral("%1_tiny").arg(QLatin1String(n))))
        << f << (mx / kFltMax) / 2.0f << kFltMax << false;
    QTest::newRow(qPrintable(QStringLiteral("%1_normal").arg(QLatin1String(n)))) << f << 0.5f << 2.0f * mx << false;
    QTest::newRow(qPrintable(QStringLiteral("%1_inf").arg(QLatin1String(n)))) << f << kInf << 1.0f << true;
    QTest::newRow(qPrintable(QStringLiteral("%1_nan").arg(QLatin1String(n)))) << f << kNaN << 1.0f << true;
  }
}

void TestDelayedScaling::teNumericScenarios() {
  QFETCH(int, fmt);
  QFETCH(float, amax);
  QFETCH(float, expected);
  QFETCH(bool, kept);
  DelayedScaling s(fmt ? Format::E5M2() : Format::E4M3FN(), teCfg(1));
  const DelayedUpdate u = s.update(amax);
  QCOMPARE_BITS(s.scale(), expected);
  QCOMPARE(u.kept_previous, kept);
  QCOMPARE(u.clamped, expected == kFltMax);
}

// TE PR #825: a zero amax (module did not run) neither rolls the history nor changes the scale.
void TestDelayedScaling::teZeroAmaxDoesNotRoll() {
  DelayedScaling s(Format::E4M3FN(), teCfg(4));
  s.update(2.0f); // scale 224; raw [0, 0, 0, 2]
  const std::vector<float> before = s.historyRaw();
  const DelayedUpdate u = s.update(0.0f);
  QVERIFY(u.kept_previous);
  QVERIFY(!u.rolled);
  QCOMPARE_BITS(s.scale(), 224.0f);
  QCOMPARE_BITS(s.historyRaw(), before);
  QCOMPARE_BITS(s.historyRaw(), (std::vector<float>{0, 0, 0, 2}));
}

// inf/NaN amax: the history rolls (cur ≠ 0) but the scale is kept; an inf in the window keeps
// the scale until it rolls out (L = 3: three updates see it).
void TestDelayedScaling::teInfStaysInWindow() {
  DelayedScaling s(Format::E4M3FN(), teCfg(3));
  s.update(2.0f); // 224
  DelayedUpdate u = s.update(kInf);
  QVERIFY(u.kept_previous);
  QVERIFY(u.rolled);
  QCOMPARE_BITS(s.scale(), 224.0f);
  QVERIFY(s.update(1.0f).kept_previous);  // window {2, inf, 1}
  QVERIFY(s.update(1.0f).kept_previous);  // window {inf, 1, 1}
  QVERIFY(!s.update(1.0f).kept_previous); // window {1, 1, 1}
  QCOMPARE_BITS(s.scale(), 448.0f);
  DelayedScaling n(Format::E4M3FN(), teCfg(3));
  n.update(4.0f);
  QVERIFY(n.update(kNaN).kept_previous);
  QCOMPARE_BITS(n.scale(), 112.0f);
}

// TE L = 3, amaxes 8, 1, 1, 1 (hand-traced through TE's kernel_bulk):
//   step 0: staged 8, window {0,0,8} → 56;  raw [0,0,8]
//   step 1: staged 1, window {0,8,1} → 56;  raw [0,8,1]
//   step 2: staged 1, window {8,1,1} → 56;  raw [0,1,1]
//   step 3: staged 1, window {1,1,1} → 448; raw [0,1,1]
void TestDelayedScaling::teWindowRollsOut() {
  DelayedScaling s(Format::E4M3FN(), teCfg(3));
  const float expect[4] = {56.0f, 56.0f, 56.0f, 448.0f};
  const std::vector<std::vector<float>> raw = {{0, 0, 8}, {0, 8, 1}, {0, 1, 1}, {0, 1, 1}};
  const float in[4] = {8, 1, 1, 1};
  for (int i = 0; i < 4; ++i) {
    s.update(in[i]);
    QCOMPARE_BITS(s.scale(), expect[i]);
    QCOMPARE_BITS(s.historyRaw(), raw[static_cast<size_t>(i)]);
  }
}

// Flax and TE use the same window: TE's scale after step t is the
// scale Flax uses at step t+1 (up to Flax's double reciprocal: within 1 float32 ulp).
void TestDelayedScaling::flaxAndTeUseTheSameWindow() {
  const float amaxes[8] = {3.0f, 0.5f, 7.0f, 1.25f, 2.0f, 0.1f, 0.3f, 5.0f};
  DelayedScaling f(Format::E4M3FN(), flaxCfg(3));
  DelayedScaling t(Format::E4M3FN(), teCfg(3));
  float te_prev = 0;
  for (int i = 0; i < 8; ++i) {
    f.update(amaxes[i]);
    if (i > 0) {
      const float flax_quant = 1.0f / f.scale();
      QVERIFY2(std::fabs(flax_quant - te_prev) <= 2.0f * std::nextafter(te_prev, kInf) - 2.0f * te_prev,
               qPrintable(QStringLiteral("step %1: flax %2 te %3").arg(i).arg(flax_quant).arg(te_prev)));
    }
    t.update(amaxes[i]);
    te_prev = t.scale();
  }
}

// Several uses in one step combine by max in the staging slot (TE's atomic max).
void TestDelayedScaling::teRecordCombinesByMax() {
  DelayedScaling s(Format::E4M3FN(), teCfg(8));
  s.record(2.0f);
  s.record(7.0f);
  s.record(4.0f);
  s.update();
  QCOMPARE_BITS(s.scale(), 64.0f); // 448 / 7
  DelayedScaling f(Format::E4M3FN(), flaxCfg(8));
  QVERIFY_THROWS_EXCEPTION(std::logic_error, f.record(1.0f));
}

// TE quantizes with the current scale, then records the amax (NaN elements ignored, fmaxf):
// initial scale 1 → 300 → 288 (E4M3 [256,448] step 32: 300 → 288) = 0 1111 001 = 0x79;
// then scale = 448/300 = 1.4933333f.
void TestDelayedScaling::teQuantizeStepUsesCurrentScale() {
  DelayedScaling s(Format::E4M3FN(), teCfg(16));
  const std::vector<float> x = {300.0f, kNaN, -1.0f, 0.0f};
  DelayedUpdate u;
  const QuantizedTensor q = s.quantizeStep(x.data(), 1, 4, &u);
  QCOMPARE(int(q.codes[0]), 0x79);
  QCOMPARE_BITS(q.quant_scales[0], 1.0f);
  QCOMPARE_BITS(u.amax, 300.0);
  QCOMPARE_BITS(s.scale(), 448.0f / 300.0f);
  QCOMPARE(q.stats.nan_inputs, int64_t(1));
}

// TE JAX DelayedScaleQuantizer: amax 0 keeps the scale but the history
// still rolls (the 0 enters it); a tiny amax gives an infinite scale (no FLT_MAX clamp); otherwise
// the same window and values as the PyTorch preset.
void TestDelayedScaling::teJaxRollsOnZeroAndDoesNotClamp() {
  DelayedScalingConfig c = teCfg(4);
  c.preset = DelayedPreset::TEJax;
  DelayedScaling s(Format::E4M3FN(), c);
  s.update(2.0f);
  QCOMPARE_BITS(s.scale(), 224.0f);
  QCOMPARE_BITS(s.historyRaw(), (std::vector<float>{0, 0, 0, 2}));
  const DelayedUpdate u = s.update(0.0f);
  QVERIFY(u.rolled);
  QVERIFY(!u.kept_previous); // window {0, 0, 2, 0} still has 2
  QCOMPARE_BITS(s.scale(), 224.0f);
  QCOMPARE_BITS(s.historyRaw(), (std::vector<float>{0, 0, 2, 0}));
  DelayedScaling t(Format::E4M3FN(), c);
  const DelayedUpdate v = t.update((448.0f / kFltMax) / 2.0f);
  QVERIFY(std::isinf(t.scale()));
  QVERIFY(!v.clamped);
  QCOMPARE_BITS(t.dequantScale(), 0.0f);
  DelayedScaling z(Format::E4M3FN(), c);
  QVERIFY(z.update(0.0f).kept_previous);
  QCOMPARE_BITS(z.scale(), 1.0f);
  QVERIFY(parseDelayedPreset("te_jax") == DelayedPreset::TEJax);
}

void TestDelayedScaling::simulateAndSetState() {
  const std::vector<double> a = {2, 3, 4};
  std::vector<std::vector<float>> h;
  const auto ups = DelayedScaling::simulate(Format::E4M3FN(), flaxCfg(3), a, &h);
  QCOMPARE(ups.size(), size_t(3));
  QCOMPARE_BITS(h[2], (std::vector<float>{2, 3, 4}));
  QCOMPARE_BITS(ups[2].scale, 0.0066964286379516125f);
  DelayedScaling s(Format::E4M3FN(), teCfg(2));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, s.setState(1.0f, {1, 2, 3}));
  s.setState(5.0f, {0, 1});
  QCOMPARE_BITS(s.scale(), 5.0f);
  QCOMPARE_BITS(s.historyChronological(), (std::vector<float>{1, 0}));
}

void TestDelayedScaling::badConfig() {
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DelayedScaling(Format::E4M3FN(), teCfg(0)));
  DelayedScalingConfig c = flaxCfg(4);
  c.algo = AmaxAlgo::MostRecent;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DelayedScaling(Format::E4M3FN(), c));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DelayedScaling(Format::BF16(), teCfg(4)));
  QVERIFY(parseDelayedPreset("flax") == DelayedPreset::Flax);
  QVERIFY(parseDelayedPreset("TE") == DelayedPreset::TE);
  QVERIFY(!parseDelayedPreset("torchao"));
  QVERIFY(parseAmaxAlgo("most_recent") == AmaxAlgo::MostRecent);
  QVERIFY(!parseAmaxAlgo("mean"));
}

QTEST_APPLESS_MAIN(TestDelayedScaling)
#include "test_delayed_scaling.moc"

// Tests for core/teaching/shared_metadata: one Flax delayed-scaling state used by two branches.
// Expected values: the Flax FP8 guide ("Accumulate gradient of FP8 params": inputs 2.0 and 3.0 on
// a zero history of 1024 give 1.0 and [3, 0, …] with fp32_max_grad, 2.0 and [5, 0, …] without),
// and the later steps derived by hand from Flax's update (fp8_ops.py: scale from max(old
// history), then history = roll(history, −1) with [0] = amax) in the comments.
#include <QtTest>

#include <cmath>

#include "compare_bits.h"
#include "teaching/shared_metadata.h"

using namespace fp8lab;

class TestSharedMetadata : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void flaxGuideNumbers() {
    SharedMetaConfig c;
    c.history_len = 1024;
    c.steps = 1;
    const auto s = simulateSharedMeta(c);
    QCOMPARE(s.size(), size_t(1));
    QCOMPARE_BITS(s[0].scale[0], 1.0f);
    QCOMPARE_BITS(s[0].history[0][0], 3.0f);
    QCOMPARE_BITS(s[0].scale[1], 2.0f);
    QCOMPARE_BITS(s[0].history[1][0], 5.0f);
    for (size_t i = 1; i < 1024; ++i) {
      QCOMPARE_BITS(s[0].history[0][i], 0.0f);
      QCOMPARE_BITS(s[0].history[1][i], 0.0f);
    }
    // Step 0's tensors are cast with the initial scale 1.0 (the window is all zeros: keep).
    QCOMPARE_BITS(s[0].scale_used[0], 1.0f);
    QCOMPARE_BITS(s[0].scale_used[1], 1.0f);
  }

  // History 16. Step 1: each use computes its scale from the old window (max 3 / max 5), so
  //   max: scale 1/fl(448/3) for both uses, combined max → the same; history [a, 0, …, 0, 3]
  //        per use → [3, 0, …, 0, 3].
  //   sum: 2 · 1/fl(448/5); history [a, 0, …, 5] per use → [5, 0, …, 10].
  // Step t ≥ 1 under sum: every entry written before doubles each step, so the window amax of
  // step t is 5 · 2^(t−1) until the oldest entry leaves the 16-step window: from step 16 on it
  // stays at 5 · 2^15 = 163840.
  void sumDoublesTheHistory() {
    SharedMetaConfig c; // 2.0 and 3.0, history 16, 24 steps
    const auto s = simulateSharedMeta(c);
    QCOMPARE(s.size(), size_t(24));
    const float dq3 = 1.0f / (448.0f / 3.0f), dq5 = 1.0f / (448.0f / 5.0f);
    QCOMPARE_BITS(s[1].scale_used[0], dq3);
    QCOMPARE_BITS(s[1].scale[0], dq3);
    QCOMPARE_BITS(s[1].scale_used[1], dq5);
    QCOMPARE_BITS(s[1].scale[1], 2.0f * dq5);
    QCOMPARE_BITS(s[1].history[0][0], 3.0f);
    QCOMPARE_BITS(s[1].history[0][15], 3.0f);
    QCOMPARE_BITS(s[1].history[1][0], 5.0f);
    QCOMPARE_BITS(s[1].history[1][15], 10.0f);
    for (int t = 1; t < 24; ++t) {
      QCOMPARE_BITS(s[size_t(t)].window_amax[0], 3.0f);
      QCOMPARE_BITS(s[size_t(t)].window_amax[1], 5.0f * std::ldexp(1.0f, std::min(t, 16) - 1));
    }
    // Max keeps the precision of step 1 (every step is the same tensor with the same scale); sum
    // loses it as the inflated scale pushes values into the subnormals and flushes them.
    for (int t = 2; t < 24; ++t) QCOMPARE(s[size_t(t)].sqnr_db[0], s[1].sqnr_db[0]);
    QVERIFY(s[23].sqnr_db[1] < s[23].sqnr_db[0] - 15);
    QVERIFY(s[23].flushed[1] > 0.2);
    QCOMPARE(s[23].flushed[0], s[1].flushed[0]);
  }

  void badConfig() {
    SharedMetaConfig c;
    c.use_amax = {};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, simulateSharedMeta(c));
    c.use_amax = {1.0f, NAN};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, simulateSharedMeta(c));
    c.use_amax = {1.0f};
    c.history_len = 0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, simulateSharedMeta(c));
  }
};

QTEST_MAIN(TestSharedMetadata)
#include "test_shared_metadata.moc"

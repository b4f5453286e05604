// Per-block statistics (core/metrics/block_stats.h) on tensors whose every number is derived by
// hand below: underflow by a tie to zero, saturation beyond E4M3FN's rounding limit 464, exact
// blocks, edge blocks, two-level (NVFP4) factors, and the summary over the blocks.
#include <QtTest>

#include "common/cpu_level.h"
#include "cpu_level_skip.h"
#include "formats/format.h"
#include "metrics/block_stats.h"
#include "metrics/distribution_stats.h"
#include "scaling/scaling.h"

#include <cmath>
#include <limits>
#include <random>

using namespace fp8lab;

namespace {

/// x [rows, cols] in E4M3FN with one dequant scale per block (quant multiplier its reciprocal,
/// Multiply), codes = encode(x · quant) saturating.
QuantizedTensor handQuantized(const std::vector<float>& x, int64_t rows, int64_t cols, ScaleBlock block,
                              const std::vector<float>& dequant) {
  QuantizedTensor q;
  q.rows = rows;
  q.cols = cols;
  q.format = &Format::E4M3FN();
  q.block = block;
  q.dequant_scales = dequant;
  for (float d : dequant) q.quant_scales.push_back(1.0f / d);
  q.codes.resize(x.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const size_t b = static_cast<size_t>((i / block.rows) * q.blockCols() + j / block.cols);
      q.codes[static_cast<size_t>(i * cols + j)] =
          static_cast<uint8_t>(q.format->encode(double(x[static_cast<size_t>(i * cols + j)] * q.quant_scales[b])));
    }
  return q;
}

} // namespace

class TestBlockStats : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // CTest runs this suite at each CPU level (FP8LAB_CPU): the element pass has AVX2 and baseline
  // versions.
  void initTestCase() {
    test::skipWhenCpuLevelRefused();
    qInfo("CPU level %s", cpuLevelDescription().c_str());
  }

  // x = [2^-10, 500 | 2, 0.25], blocks 1×2 with dequant scales 1 and 2^-4 (quant 1 and 16).
  // Block 0: 2^-10 is half of E4M3FN's smallest subnormal 2^-9, a tie → even → 0: one underflow;
  //   500 > 464 saturates to 448: one saturation. amax 500, min non-zero 2^-10,
  //   dynamic range log2(500 / 2^-10) = log2(512000) = 18.96578428 bits;
  //   SQNR 10·log10((2^-20 + 250000) / (2^-20 + 52²)) = 10·log10(92.45562...) = 19.65936 dB.
  // Block 1: 2·16 = 32 and 0.25·16 = 4 are E4M3FN values: exact (SQNR +Inf), range log2(2/0.25) = 3.
  // Summary: log2 scales {0, −4}: min −4, max 0, mean −2, std 2; max range 18.96578; one of two
  //   blocks underflows, one saturates; underflow 1 of 4 non-zero, saturation 1 of 4 elements;
  //   tensor SQNR 10·log10((2^-20 + 250000 + 4 + 0.0625) / (2^-20 + 2704)) = 19.65943 dB.
  void handDerivedBlocks() {
    const std::vector<float> x = {0x1p-10f, 500.0f, 2.0f, 0.25f};
    const QuantizedTensor q = handQuantized(x, 1, 4, {1, 2}, {1.0f, 0x1p-4f});
    BlockStatsMap m;
    const BlockStatsSummary s = computeBlockStats(x.data(), q, m);
    QCOMPARE(m.grid_rows, int64_t{1});
    QCOMPARE(m.grid_cols, int64_t{2});
    QCOMPARE(m.underflow, (std::vector<int64_t>{1, 0}));
    QCOMPARE(m.saturated, (std::vector<int64_t>{1, 0}));
    QCOMPARE(m.amax, (std::vector<float>{500.0f, 2.0f}));
    QCOMPARE(m.min_nonzero, (std::vector<float>{0x1p-10f, 0.25f}));
    QVERIFY(std::fabs(m.dynamic_range[0] - 18.96578428f) < 1e-5f);
    QCOMPARE(m.dynamic_range[1], 3.0f);
    QVERIFY(std::fabs(m.sqnr_db[0] - 19.65936f) < 1e-4f);
    QVERIFY(std::isinf(m.sqnr_db[1]) && m.sqnr_db[1] > 0);
    QVERIFY(m.scale_code.empty());
    QCOMPARE(s.blocks, int64_t{2});
    QCOMPARE(s.nonzero, int64_t{4});
    QCOMPARE(s.log2_scale_min, -4.0f);
    QCOMPARE(s.log2_scale_max, 0.0f);
    QCOMPARE(s.log2_scale_mean, -2.0f);
    QCOMPARE(s.log2_scale_std, 2.0f);
    QVERIFY(std::fabs(s.max_dynamic_range - 18.96578428f) < 1e-5f);
    QCOMPARE(s.underflow_block_share, 0.5f);
    QCOMPARE(s.saturation_block_share, 0.5f);
    QCOMPARE(s.underflow_fraction, 0.25f);
    QCOMPARE(s.saturation_fraction, 0.25f);
    QVERIFY(std::fabs(s.sqnr_db - 19.65943f) < 1e-4f);
  }

  // The streaming accumulator the Block scales view reads bands with: the same x as
  // handDerivedBlocks plus a second row [NaN, 1 | 0, 0], x̂ the decoded codes times the scales, fed
  // one row at a time. Row 0's blocks give computeBlockStats's SQNR (19.65936 dB, +Inf); row 1's
  // NaN is left out (block 0 counts one non-finite element, its SQNR unchanged by the exact 1),
  // and block 1's zeros add nothing. Max rel: block 0 |448 − 500| / 500 = 0.104 (the flushed
  // 2^-10 gives 1), block 1 exact.
  void accumulatorAgreesWithBlockStats() {
    const std::vector<float> x = {0x1p-10f, 500.0f, 2.0f, 0.25f};
    const QuantizedTensor q = handQuantized(x, 1, 4, {1, 2}, {1.0f, 0x1p-4f});
    BlockStatsMap m;
    computeBlockStats(x.data(), q, m);
    std::vector<double> xd(x.begin(), x.end()), xq(4);
    for (size_t i = 0; i < 4; ++i) xq[i] = double(q.format->decode(q.codes[i])) * double(m.scale[i / 2]);
    BlockErrorAccumulator acc(2, 4, ScaleBlock{2, 2});
    acc.addRows(0, 1, xd.data(), xq.data());
    const std::vector<double> row1 = {std::nan(""), 1.0, 0.0, 0.0};
    acc.addRows(1, 1, row1.data(), std::vector<double>{1.0, 1.0, 0.0, 0.0}.data());
    QCOMPARE(acc.gridRows(), int64_t{1});
    QCOMPARE(acc.gridCols(), int64_t{2});
    QVERIFY(std::fabs(acc.sqnrDb(0) - 10.0 * std::log10((0x1p-20 + 250000.0 + 1.0) / (0x1p-20 + 2704.0))) < 1e-9);
    QVERIFY(std::isinf(acc.sqnrDb(1)) && acc.sqnrDb(1) > 0);
    QCOMPARE(acc.nonFinite(0), int64_t{1});
    QCOMPARE(acc.nonFinite(1), int64_t{0});
    QCOMPARE(acc.maxRel(0), 1.0);
    QCOMPARE(acc.maxRel(1), 0.0);
    // One row alone gives the block statistics' value (float32 there, float64 here).
    BlockErrorAccumulator one(1, 4, ScaleBlock{1, 2});
    one.addRows(0, 1, xd.data(), xq.data());
    QVERIFY(std::fabs(one.sqnrDb(0) - double(m.sqnr_db[0])) < 1e-4);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, one.addRows(1, 1, xd.data(), xq.data()));
  }

  // One 7 × 21 block (rows summed four at a time, then three; the vector element pass takes eight
  // elements at a time, so two groups and a tail of five per row) whose row 4 holds an Inf inside a
  // group and whose row 5 a NaN: the block's sums are defined row by row — each finite row's Σ x²
  // and Σ (x̂ − x)² from +0, j ascending, added to the block's in row order; a row with a
  // non-finite element adds its finite elements one by one instead — so the SQNR equals that of the
  // sums formed here in that order. amax counts the Inf, the largest finite |x| ignores it, and the
  // smallest non-zero |x|, the non-zero count, underflow (a non-zero finite x whose code decodes to
  // 0) and saturation (|x · 8| beyond E4M3FN's rounding limit 464) cover the finite elements.
  // Magnitudes from 2^-15 to 2^12 × 1.99: some flush to zero at scale 2^-3, some saturate.
  void rowsSummedInOrder() {
    constexpr int64_t rows = 7, cols = 21;
    std::vector<float> x(rows * cols);
    std::mt19937 gen(7);
    std::uniform_int_distribution<int> e(-15, 12);
    std::uniform_real_distribution<float> u(1.0f, 2.0f);
    for (float& v : x) v = std::ldexp(u(gen), e(gen)) * (gen() % 2 ? 1.0f : -1.0f);
    x[2] = 0.0f;
    x[4 * cols + 9] = std::numeric_limits<float>::infinity();
    x[5 * cols + 3] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> finite = x;
    finite[4 * cols + 9] = finite[5 * cols + 3] = 1.0f; // codes from finite values
    QuantizedTensor q = handQuantized(finite, rows, cols, {rows, cols}, {0x1p-3f});
    BlockStatsMap m;
    const BlockStatsSummary s = computeBlockStats(x.data(), q, m);
    double sig = 0, err = 0;
    float fmax = 0, mn = std::numeric_limits<float>::infinity();
    int64_t nz = 0, und = 0, sat = 0;
    for (int64_t i = 0; i < rows; ++i) {
      bool row_finite = true;
      for (int64_t j = 0; j < cols; ++j) row_finite = row_finite && std::isfinite(x[size_t(i * cols + j)]);
      double rs = 0, re = 0;
      double& ts = row_finite ? rs : sig;
      double& te = row_finite ? re : err;
      for (int64_t j = 0; j < cols; ++j) {
        const float v = x[size_t(i * cols + j)];
        if (!std::isfinite(v)) continue;
        const double xh = double(q.format->decode(q.codes[size_t(i * cols + j)])) * double(0x1p-3f);
        ts += double(v) * double(v);
        te += (xh - double(v)) * (xh - double(v));
        fmax = std::max(fmax, std::fabs(v));
        if (v != 0) {
          ++nz;
          mn = std::min(mn, std::fabs(v));
          if (q.format->decode(q.codes[size_t(i * cols + j)]) == 0.0) ++und;
          if (std::fabs(v * 8.0f) > 464.0f) ++sat;
        }
      }
      if (row_finite) {
        sig += rs;
        err += re;
      }
    }
    QCOMPARE(m.amax[0], std::numeric_limits<float>::infinity());
    QCOMPARE(m.min_nonzero[0], mn);
    QCOMPARE(s.nonzero, nz);
    QVERIFY(und > 0 && sat > 0);
    QCOMPARE(m.underflow[0], und);
    QCOMPARE(m.saturated[0], sat);
    QCOMPARE(m.dynamic_range[0], std::log2(static_cast<float>(double(fmax) / double(mn))));
    QCOMPARE(m.sqnr_db[0], 10.0f * std::log10(static_cast<float>(sig / err)));
  }

  // A 3×3 tensor in 2×2 blocks: the grid is 2×2 and the edge blocks hold 2, 2 and 1 elements.
  // All values 1 with scale 1/448 · 448 = exact; zeros do not count as non-zero, and an all-zero
  // block has SQNR NaN, no range and min non-zero 0.
  void edgeBlocksAndZeros() {
    const std::vector<float> x = {1, 1, 0, 1, 1, 0, 0, 0, 0};
    const QuantizedTensor q = handQuantized(x, 3, 3, {2, 2}, {1.0f, 1.0f, 1.0f, 1.0f});
    BlockStatsMap m;
    const BlockStatsSummary s = computeBlockStats(x.data(), q, m);
    QCOMPARE(m.blocks(), int64_t{4});
    QCOMPARE(m.blockElements(0, 0), int64_t{4});
    QCOMPARE(m.blockElements(0, 1), int64_t{2});
    QCOMPARE(m.blockElements(1, 0), int64_t{2});
    QCOMPARE(m.blockElements(1, 1), int64_t{1});
    QVERIFY(std::isinf(m.sqnr_db[0]));
    for (int b = 1; b < 4; ++b) {
      QVERIFY(std::isnan(m.sqnr_db[static_cast<size_t>(b)]));
      QCOMPARE(m.min_nonzero[static_cast<size_t>(b)], 0.0f);
      QCOMPARE(m.dynamic_range[static_cast<size_t>(b)], 0.0f);
    }
    QCOMPARE(s.nonzero, int64_t{4});
    QCOMPARE(s.underflow_fraction, 0.0f);
    QVERIFY(std::isinf(s.sqnr_db));
  }

  // Zeros inside a finite block are not magnitudes: block {1, 0, 0.5, 0.25, 0} has smallest
  // non-zero 0.25 and dynamic range log2(1 / 0.25) = 2 bits. The same values with the zeros first
  // ({0, 0.25, 0, 0.5, 1}) give the same. Both take the fast path (every element finite). The
  // third block, {1, 0, 0.5, 0.25, NaN}, takes the element-by-element path (a non-finite element);
  // its finite elements are those of the first, so every per-block value agrees: amax 1 (NaN
  // ignored), min non-zero 0.25, range 2, no underflow or saturation (scale 1: 1, 0.5, 0.25 are
  // E4M3FN values, 2^0, 2^-1, 2^-2), SQNR +Inf (exact). Summary: 9 non-zero elements, max range 2.
  void zerosInAFiniteBlockAreNotTheSmallestMagnitude() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> x = {1, 0, 0.5f, 0.25f, 0, 0, 0.25f, 0, 0.5f, 1, 1, 0, 0.5f, 0.25f, nan};
    const QuantizedTensor q = handQuantized(x, 3, 5, {1, 5}, {1.0f, 1.0f, 1.0f});
    for (const auto detail : {BlockStatsDetail::Full, BlockStatsDetail::Summary}) {
      BlockStatsMap m;
      const BlockStatsSummary s = computeBlockStats(x.data(), q, m, detail);
      QCOMPARE(m.blocks(), int64_t{3});
      QCOMPARE(m.min_nonzero, (std::vector<float>{0.25f, 0.25f, 0.25f}));
      QCOMPARE(m.amax, (std::vector<float>{1.0f, 1.0f, 1.0f}));
      QCOMPARE(m.underflow, (std::vector<int64_t>{0, 0, 0}));
      QCOMPARE(m.saturated, (std::vector<int64_t>{0, 0, 0}));
      if (detail == BlockStatsDetail::Full) {
        QCOMPARE(m.dynamic_range, (std::vector<float>{2.0f, 2.0f, 2.0f}));
        for (float db : m.sqnr_db) QVERIFY(std::isinf(db) && db > 0);
      }
      QCOMPARE(s.nonzero, int64_t{9});
      QCOMPARE(s.max_dynamic_range, 2.0f);
    }
  }

  // MX (mx_rceil, E4M3FN, 1×32 along the row) on a row of 64 values 0.5 with one 1.0 at column 40:
  // RCEIL scale = 2^ceil(log2(amax / 448)): block 0 (amax 0.5) 2^ceil(−9.807) = 2^−9, E8M0 code
  // 127 − 9 = 118; block 1 (amax 1) 2^ceil(−8.807) = 2^−8, code 119. Elements 0.5/2^−9 = 256 and
  // 1/2^−8 = 256 are E4M3FN values: exact. log2 scales {−9, −8}: mean −8.5, std 0.5.
  void mxScaleCodes() {
    std::vector<float> x(64, 0.5f);
    x[40] = 1.0f;
    const QuantizedTensor q = quantize(x.data(), 1, 64, Format::E4M3FN(), *scalingPreset("mx_rceil"), Axis::Cols);
    BlockStatsMap m;
    const BlockStatsSummary s = computeBlockStats(x.data(), q, m);
    QCOMPARE(m.scale, (std::vector<float>{0x1p-9f, 0x1p-8f}));
    QCOMPARE(m.scale_code, (std::vector<uint8_t>{118, 119}));
    QCOMPARE(m.dynamic_range, (std::vector<float>{0.0f, 1.0f}));
    QCOMPARE(s.log2_scale_mean, -8.5f);
    QCOMPARE(s.log2_scale_std, 0.5f);
    QVERIFY(std::isinf(s.sqnr_db));
  }

  // A two-level tensor: block scales 2 with a TorchaoPts tensor factor 0.25 give the effective
  // factor f32(0.25 · 2) = 0.5 (TensorScale::blockFactor); x = 1 codes as 1/0.5 = 2 (exact) and
  // x = 4 as 8 (exact); in E2M1 (max 6, RNE limit 7) 8 would saturate: one saturation, since
  // |4 / 0.5| = 8 > 7.
  void twoLevelFactor() {
    QuantizedTensor q;
    q.rows = 1;
    q.cols = 2;
    q.format = &Format::E2M1();
    q.block = {1, 2};
    q.dequant_scales = {2.0f};
    q.tensor_scale.kind = TensorScale::Kind::TorchaoPts;
    q.tensor_scale.value = 0.25f;
    q.codes = {static_cast<uint8_t>(Format::E2M1().encode(2.0)), static_cast<uint8_t>(Format::E2M1().encode(6.0))};
    const std::vector<float> x = {1.0f, 4.0f};
    BlockStatsMap m;
    const BlockStatsSummary s = computeBlockStats(x.data(), q, m);
    QCOMPARE(m.scale, (std::vector<float>{0.5f}));
    QCOMPARE(m.saturated, (std::vector<int64_t>{1}));
    QCOMPARE(s.log2_scale_mean, -1.0f);
    // error only at x = 4: 6 · 0.5 = 3; SQNR 10·log10(17 / 1) = 12.30449 dB
    QVERIFY(std::fabs(s.sqnr_db - 12.30449f) < 1e-4f);
  }

  // The per-element rules agree with operandStats() (metrics/distribution_stats.h, the counts the
  // Distribution view shows) on 4096 normal values with a fixed scale that clips the tails and
  // flushes the smallest values, for both scale ops, and for every element (saturation thresholds
  // at the exact rounding limit included: 464 · s and its neighbours are in the data).
  void countsAgreeWithOperandStats() {
    std::mt19937 g(7);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> x(4096);
    for (float& v : x) v = d(g) * 200.0f;
    const float s = 0.5f; // dequant: |x| / 0.5 > 464 ⟺ |x| > 232 saturates
    x[0] = 232.0f;
    x[1] = std::nextafter(232.0f, 1000.0f);
    x[2] = 1e-4f; // 2e-4 < 2^-10: flushed
    x[3] = 0.0f;
    for (Format::ScaleOp op : {Format::ScaleOp::Multiply, Format::ScaleOp::Divide}) {
      BlockScale bs;
      bs.dequant = s;
      bs.quant = 1.0f / s;
      const QuantizedTensor q = quantizeWithScale(x.data(), 64, 64, Format::E4M3FN(), bs, op);
      const OperandStats o = operandStats(x.data(), q);
      BlockStatsMap m;
      const BlockStatsSummary b = computeBlockStats(x.data(), q, m);
      QVERIFY(o.saturated > 0 && o.flushed > 0);
      QCOMPARE(b.saturated, o.saturated);
      QCOMPARE(b.underflow, o.flushed);
      QCOMPARE(b.nonzero, o.elements - o.zero - o.nan - o.inf);
    }
  }

  // Merging 1×2 blocks into 2×2 tiles (as NVFP4 2-D weights list one scale per 1×16 block): the
  // tile takes the blocks' common scale; blocks of one tile with different scales are refused.
  // An all-zero block (E8M0 code 0 = 2^−127 under MX) is left out of the log2 scale statistics.
  void tilesMergeAndZeroBlocksHaveNoScale() {
    const std::vector<float> x = {1, 1, 2, 2, 1, 1, 2, 2};
    const QuantizedTensor q = handQuantized(x, 2, 4, {1, 2}, {0.5f, 1.0f, 0.5f, 1.0f});
    const QuantizedTensor t = mergeScaleBlocks(q, {2, 2});
    QCOMPARE(t.block, (ScaleBlock{2, 2}));
    QCOMPARE(t.dequant_scales, (std::vector<float>{0.5f, 1.0f}));
    QCOMPARE(t.codes, q.codes);
    BlockStatsMap m;
    QCOMPARE(computeBlockStats(x.data(), t, m).blocks, int64_t{2});
    const QuantizedTensor bad = handQuantized(x, 2, 4, {1, 2}, {0.5f, 1.0f, 0.25f, 1.0f});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, mergeScaleBlocks(bad, {2, 2}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, mergeScaleBlocks(q, {2, 3}));
    // 64 values: block 0 all zero (RCEIL of amax 0: E8M0 code 0), block 1 all 1.0 (2^ceil(log2(1/448))
    // = 2^−8): the log2 statistics see block 1 only.
    std::vector<float> z(64, 0.0f);
    for (int j = 32; j < 64; ++j) z[static_cast<size_t>(j)] = 1.0f;
    const QuantizedTensor mq = quantize(z.data(), 1, 64, Format::E4M3FN(), *scalingPreset("mx_rceil"), Axis::Cols);
    QCOMPARE(int(mq.scale_codes.at(0)), 0);
    const BlockStatsSummary s = computeBlockStats(z.data(), mq, m);
    QCOMPARE(s.log2_scale_min, -8.0f);
    QCOMPARE(s.log2_scale_mean, -8.0f);
    QCOMPARE(s.log2_scale_std, 0.0f);
  }

  // x = [500, 1, 1; 2, 2, 2] zero padded to [4, 4], blocks 2×2, every dequant scale 1: padded,
  // 4 blocks of which two are padding only; 500 > 464 saturates, so the saturation shares are
  // 1/4 of the blocks and 1/16 of the elements. Cropped back to [2, 3]: 2 blocks (the second is
  // an edge block of 2×1 elements), shares 1/2 and 1/6, the same codes in the kept places.
  void cropLeavesTheRealBlocks() {
    const std::vector<float> pad = {500, 1, 1, 0, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    const QuantizedTensor q = handQuantized(pad, 4, 4, {2, 2}, {1.0f, 1.0f, 1.0f, 1.0f});
    BlockStatsMap m;
    const BlockStatsSummary sp = computeBlockStats(pad.data(), q, m);
    QCOMPARE(sp.blocks, int64_t{4});
    QCOMPARE(sp.saturation_block_share, 0.25f);
    QCOMPARE(sp.saturation_fraction, 1.0f / 16.0f);
    const QuantizedTensor c = cropQuantized(q, 2, 3);
    QCOMPARE(c.rows, int64_t{2});
    QCOMPARE(c.cols, int64_t{3});
    QCOMPARE(c.dequant_scales, (std::vector<float>{1.0f, 1.0f}));
    QCOMPARE(c.quant_scales, (std::vector<float>{1.0f, 1.0f}));
    QCOMPARE(c.codes, (std::vector<uint8_t>{q.codes[0], q.codes[1], q.codes[2], q.codes[4], q.codes[5], q.codes[6]}));
    const std::vector<float> x = cropMatrix(pad.data(), 4, 4, 2, 3);
    QCOMPARE(x, (std::vector<float>{500, 1, 1, 2, 2, 2}));
    const BlockStatsSummary sc = computeBlockStats(x.data(), c, m);
    QCOMPARE(sc.blocks, int64_t{2});
    QCOMPARE(sc.saturation_block_share, 0.5f);
    QCOMPARE(sc.saturation_fraction, 1.0f / 6.0f);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cropQuantized(q, 5, 1));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cropMatrix(pad.data(), 4, 4, 1, 5));
  }

  void badShapesAreRefused() {
    QuantizedTensor q = handQuantized({1, 2}, 1, 2, {1, 2}, {1.0f});
    q.dequant_scales.push_back(1.0f);
    BlockStatsMap m;
    const float x[2] = {1, 2};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, computeBlockStats(x, q, m));
    QuantizedTensor none;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, computeBlockStats(x, none, m));
  }
};

QTEST_APPLESS_MAIN(TestBlockStats)
#include "test_block_stats.moc"

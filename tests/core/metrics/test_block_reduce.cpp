// Tests for metrics/block_reduce: the block reduction SessionReader::readReduced and the GUI's
// error heatmap share. Expected grids are worked out by hand in the comments.
#include <QtTest>

#include "metrics/block_reduce.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace fp8lab;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// The 3 × 5 map
//    1  2   3  4  5
//    6  7   8  9 10
//   11 12 NaN 14 15
// in 2 × 2 blocks: a 2 × 3 grid whose last row and column are partial blocks.
const std::vector<double> kMap = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, kNaN, 14, 15};

void compareGrid(const std::vector<double>& got, const std::vector<double>& want) {
  QCOMPARE(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]))
      QVERIFY2(std::isnan(got[i]), qPrintable(QString::number(i)));
    else
      QCOMPARE(got[i], want[i]);
  }
}
} // namespace

class TestBlockReduce : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void meanOfEachBlock() {
    BlockReducer r(3, 5, 2, 2, BlockReduce::Mean);
    r.addRows(kMap.data(), 0, 3);
    QCOMPARE(r.gridRows(), int64_t(2));
    QCOMPARE(r.gridCols(), int64_t(3));
    // (1+2+6+7)/4 = 4, (3+4+8+9)/4 = 6, (5+10)/2 = 7.5; (11+12)/2 = 11.5, {NaN, 14} → NaN, 15.
    compareGrid(r.finish(), {4, 6, 7.5, 11.5, kNaN, 15});
    QCOMPARE(r.nanElements(), int64_t(1));
  }
  void maxOfEachBlockIndependentOfTheBands() {
    // Fed one row at a time: the same grid as all rows at once.
    BlockReducer r(3, 5, 2, 2, BlockReduce::Max);
    for (int64_t i = 0; i < 3; ++i) r.addRows(kMap.data() + i * 5, i, 1);
    compareGrid(r.finish(), {7, 9, 10, 12, kNaN, 15});
  }
  void minAndMaxAbs() {
    const std::vector<double> v = {-3, 2, -1, 0.5};
    BlockReducer mn(1, 4, 1, 2, BlockReduce::Min), ma(1, 4, 1, 2, BlockReduce::MaxAbs);
    mn.addRows(v.data(), 0, 1);
    ma.addRows(v.data(), 0, 1);
    compareGrid(mn.finish(), {-3, -1}); // min(−3, 2), min(−1, 0.5)
    compareGrid(ma.finish(), {3, 1});   // max(|−3|, |2|), max(|−1|, |0.5|)
  }
  void infinitiesAreValues() {
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> v = {inf, 1, inf, -inf};
    BlockReducer mx(1, 4, 1, 2, BlockReduce::Max), me(1, 4, 1, 2, BlockReduce::Mean);
    mx.addRows(v.data(), 0, 1);
    me.addRows(v.data(), 0, 1);
    compareGrid(mx.finish(), {inf, inf});
    compareGrid(me.finish(), {inf, kNaN}); // (+Inf + 1)/2 = +Inf; +Inf + (−Inf) = NaN (IEEE 754)
  }
};

QTEST_GUILESS_MAIN(TestBlockReduce)
#include "test_block_reduce.moc"

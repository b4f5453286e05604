// randomMatrix against its documented formula (random_matrix.h), element by element and bit for
// bit: Box-Muller on the pair (e & ~1, e | 1) with u1 = (w(2·pair) >> 11 + 1)·2^-53 and
// u2 = (w(2·pair + 1) >> 11)·2^-53, z_even = r·cos(2π·u2), z_odd = r·sin(2π·u2), each element
// computed alone here with separate std::sin / std::cos calls (through function pointers, so the
// compiler cannot merge them into sincos); the signs and outlier draws from stream ^ 0xA5A5A5A5.
// Shapes with an odd element count, chunk boundaries (65536) and several threads.
#include <QtTest>

#include <bit>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "gemm/random_matrix.h"

using namespace fp8lab;

namespace {
double (*volatile sinFn)(double) = std::sin;
double (*volatile cosFn)(double) = std::cos;

double normalByFormula(uint64_t seed, uint64_t stream, uint64_t e) {
  const uint64_t pair = e >> 1;
  const double u1 = (static_cast<double>(randomWord(seed, stream, 2 * pair) >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(randomWord(seed, stream, 2 * pair + 1) >> 11) * 0x1.0p-53;
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double t = 2.0 * std::numbers::pi * u2;
  return (e & 1) ? r * sinFn(t) : r * cosFn(t);
}

/// Element e of a [rows, cols] matrix by the formulas of random_matrix.h.
float byFormula(const RandomMatrixOptions& o, uint64_t seed, uint64_t stream, uint64_t e, int64_t rows, int64_t cols) {
  const uint64_t aux = stream ^ 0xA5A5A5A5ull;
  double x = 0;
  switch (o.distribution) {
  case Distribution::Normal:
    x = o.scale * normalByFormula(seed, stream, e);
    break;
  case Distribution::Uniform:
    x = o.scale * (2.0 * (static_cast<double>(randomWord(seed, stream, e) >> 11) * 0x1.0p-53) - 1.0);
    break;
  case Distribution::LogNormal:
    x = o.scale * std::exp(o.sigma * normalByFormula(seed, stream, e));
    if (randomWord(seed, aux, e) >> 63) x = -x;
    break;
  case Distribution::Outliers:
    x = o.scale * normalByFormula(seed, stream, e);
    if (static_cast<double>(randomWord(seed, aux, e) >> 11) * 0x1.0p-53 < o.outlier_fraction) x *= o.outlier_factor;
    break;
  case Distribution::ChannelOutliers: {
    // N(0, scale²), times outlier_factor in the drawn channels (columns, or rows with outlier_rows).
    x = o.scale * normalByFormula(seed, stream, e);
    const int64_t channel = o.outlier_rows ? int64_t(e) / cols : int64_t(e) % cols;
    const auto drawn = outlierChannelIndices(o.outlier_rows ? rows : cols, o.outlier_channels, seed, stream);
    if (std::find(drawn.begin(), drawn.end(), channel) != drawn.end()) x *= o.outlier_factor;
    break;
  }
  }
  return static_cast<float>(x);
}
} // namespace

class TestRandomMatrix : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void matchesTheFormula() {
    for (Distribution d : {Distribution::Normal, Distribution::Uniform, Distribution::LogNormal, Distribution::Outliers,
                           Distribution::ChannelOutliers}) {
      RandomMatrixOptions o;
      o.distribution = d;
      o.scale = 1.5;
      o.sigma = 2.0;
      o.outlier_fraction = 0.01;
      o.outlier_channels = 1;
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {257, 511}}) {
        for (int threads : {1, 2}) {
          const std::vector<float> v = randomMatrix(rows, cols, 42, o, 7, threads);
          for (int64_t e = 0; e < rows * cols; ++e) {
            const float want = byFormula(o, 42, 7, uint64_t(e), rows, cols);
            if (std::bit_cast<uint32_t>(v[size_t(e)]) != std::bit_cast<uint32_t>(want))
              QFAIL(qPrintable(QStringLiteral("%1, %2x%3, element %4: %5, formula %6")
                                   .arg(QString::fromUtf8(toString(d)))
                                   .arg(rows)
                                   .arg(cols)
                                   .arg(e)
                                   .arg(double(v[size_t(e)]), 0, 'g', 9)
                                   .arg(double(want), 0, 'g', 9)));
          }
        }
      }
    }
  }
};

QTEST_MAIN(TestRandomMatrix)
#include "test_random_matrix.moc"

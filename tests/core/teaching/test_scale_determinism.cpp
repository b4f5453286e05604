// Tests for core/teaching/scale_determinism: the evaluation orders of s = fp8_max / amax.
// Expected values come from outside the code under test:
//   * an exact integer oracle (below): each float32 operation of every evaluation order recomputed
//     with 128-bit integers and rounded to float32 by hand (round to nearest, ties to even);
//   * pytorch/pytorch#141753: compiled 11.0 / 7.0 = 1.57142865657806396484375 (reciprocal, then
//     multiply), eager 1.5714285373687744140625 (correctly rounded division);
//   * Figueroa's theorem (double rounding of a quotient is innocuous when 53 ≥ 2·24 + 2): float64
//     division then float32 equals the correctly rounded float32 division for every float32 pair.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>

#include "compare_bits.h"
#include "formats/format.h"
#include "gemm/random_matrix.h"
#include "teaching/scale_determinism.h"

using namespace fp8lab;

namespace {

// ---- exact oracle: values m·2^e with m a 128-bit integer ------------------------------------
__extension__ typedef __int128 i128; // GCC / Clang extension
__extension__ typedef unsigned __int128 u128;

struct Exact {
  i128 m; // signed
  int e;
};

Exact exactOf(float x) {
  int e = 0;
  const float fr = std::frexp(x, &e); // x = fr·2^e, 0.5 ≤ |fr| < 1
  return {static_cast<i128>(std::ldexp(fr, 24)), e - 24};
}

int bitLength(u128 v) {
  int n = 0;
  while (v) {
    ++n;
    v >>= 1;
  }
  return n;
}

/// Rounds m·2^e to float32, to nearest, ties to even (normal results only, as in these tests).
float roundToFloat(i128 m, int e) {
  if (m == 0) return 0.0f;
  const bool neg = m < 0;
  u128 a = static_cast<u128>(neg ? -m : m);
  const int n = bitLength(a);
  if (n > 24) {
    const int shift = n - 24;
    u128 keep = a >> shift;
    const u128 rem = a & ((static_cast<u128>(1) << shift) - 1);
    const u128 half = static_cast<u128>(1) << (shift - 1);
    if (rem > half || (rem == half && (keep & 1))) ++keep;
    a = keep;
    e += shift;
  }
  const float r = std::ldexp(static_cast<float>(static_cast<uint64_t>(a)), e);
  return neg ? -r : r;
}

float exactDivide(float x, float y) {
  const Exact a = exactOf(x), b = exactOf(y);
  // Quotient with 60 extra bits and a sticky bit for the remainder: enough for any rounding.
  const i128 num = a.m << 60;
  i128 q = num / b.m;
  const i128 r = num % b.m;
  q = (q << 1) | (r != 0 ? 1 : 0);
  return roundToFloat(q, a.e - b.e - 61);
}

float exactMultiply(float x, float y) {
  const Exact a = exactOf(x), b = exactOf(y);
  return roundToFloat(a.m * b.m, a.e + b.e);
}

/// fma(x, y, z) = x·y + z rounded once.
float exactFma(float x, float y, float z) {
  const Exact a = exactOf(x), b = exactOf(y), c = exactOf(z);
  i128 p = a.m * b.m;
  int ep = a.e + b.e;
  i128 s = c.m;
  int es = c.e;
  if (c.m == 0) return roundToFloat(p, ep);
  // Align to the smaller exponent (the differences stay far below 60 bits here).
  if (ep > es) {
    p <<= (ep - es);
    ep = es;
  } else {
    s <<= (es - ep);
    es = ep;
  }
  return roundToFloat(p + s, ep);
}

float oracle(float amax, float max, ScaleEvaluation how) {
  switch (how) {
  case ScaleEvaluation::Float32Divide:
  case ScaleEvaluation::Float64Divide:
    return exactDivide(max, amax);
  case ScaleEvaluation::ReciprocalMultiply:
    return exactMultiply(max, exactDivide(1.0f, amax));
  case ScaleEvaluation::NewtonFma: {
    const float r = exactDivide(1.0f, amax);
    const float q = exactMultiply(max, r);
    const float e = exactFma(-amax, q, max);
    return exactFma(e, r, q);
  }
  }
  return 0;
}

} // namespace

class TestScaleDeterminism : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // The oracle itself, on values derived by hand: 448 / 0.3f. 0.3f = 10066330·2^-25
  // = 0.300000011920928955078125; 448 / 0.3f = 1493.33327399…; the float32 neighbours are
  // 1493.33325195… (12233386·2^-13) and 1493.33337402… (12233387·2^-13); the first is nearer.
  void oracleByHand() {
    QCOMPARE_BITS(exactDivide(448.0f, 0.3f), std::ldexp(12233386.0f, -13));
    QCOMPARE_BITS(exactDivide(1.0f, 3.0f), 1.0f / 3.0f); // 0x3eaaaaab
    QCOMPARE_BITS(exactFma(2.0f, 3.0f, 1.0f), 7.0f);
  }

  // pytorch/pytorch#141753: 11.0 / 7.0 in eager (correct division) and compiled (reciprocal).
  void pytorchIssueValues() {
    QCOMPARE_BITS(evaluateQuantScale(7.0f, 11.0f, ScaleEvaluation::Float32Divide), 1.5714285373687744140625f);
    QCOMPARE_BITS(evaluateQuantScale(7.0f, 11.0f, ScaleEvaluation::Float64Divide), 1.5714285373687744140625f);
    QCOMPARE_BITS(evaluateQuantScale(7.0f, 11.0f, ScaleEvaluation::ReciprocalMultiply), 1.57142865657806396484375f);
  }

  // amax 0.3 (the float32 0.300000011920928955078125): every order gives 1493.33325195…; the
  // 1493.333374 of 448 / 0.3 is the quotient of the float64 0.3, a different amax.
  void amaxPointThree() {
    const ScaleCase c = scaleCase(0.3f, Format::E4M3FN());
    for (int i = 0; i < kScaleEvaluationCount; ++i) QCOMPARE_BITS(c.scale[size_t(i)], std::ldexp(12233386.0f, -13));
    QCOMPARE_BITS(static_cast<float>(448.0 / 0.3), std::ldexp(12233387.0f, -13));
  }

  // Every evaluation order against the oracle on 200000 amaxes spread over 2^-20 .. 2^20.
  void ordersMatchExactArithmetic() {
    for (float max : {448.0f, 57344.0f, 6.0f}) {
      for (uint64_t i = 0; i < 200000; ++i) {
        const uint64_t w = randomWord(11, 1, i);
        const int e = int(w % 41) - 20;
        const float amax = std::ldexp(1.0f + float((w >> 8) & 0x7FFFFF) * 0x1p-23f, e);
        for (ScaleEvaluation how : kScaleEvaluations) {
          const float got = evaluateQuantScale(amax, max, how), want = oracle(amax, max, how);
          if (std::bit_cast<uint32_t>(got) != std::bit_cast<uint32_t>(want))
            QFAIL(qPrintable(QStringLiteral("%1 of amax %2, max %3: %4, oracle %5")
                                 .arg(QString::fromUtf8(toString(how)))
                                 .arg(double(amax), 0, 'g', 9)
                                 .arg(double(max))
                                 .arg(double(got), 0, 'g', 9)
                                 .arg(double(want), 0, 'g', 9)));
        }
      }
    }
  }

  // The binade [1, 2) for E4M3FN (448): recounted here with the oracle for the reciprocal order;
  // float64 division never differs (Figueroa), nor does the Newton step (counted by the oracle
  // as well).
  void binadeSurveyCounts() {
    const BinadeSurvey s = surveyBinade(448.0f, 0, 2);
    QCOMPARE(s.amaxes, int64_t(1) << 23);
    int64_t recip = 0, newton = 0;
    float first = 0;
    for (uint32_t m = 0; m < (1u << 23); ++m) {
      const float a = std::bit_cast<float>(0x3F800000u + m);
      const float ref = exactDivide(448.0f, a);
      if (exactMultiply(448.0f, exactDivide(1.0f, a)) != ref) {
        ++recip;
        if (first == 0) first = a;
      }
      if ((m & 63) == 0 && oracle(a, 448.0f, ScaleEvaluation::NewtonFma) != ref) ++newton;
    }
    QCOMPARE(s.differ[size_t(ScaleEvaluation::Float64Divide)], int64_t(0));
    QCOMPARE(s.differ[size_t(ScaleEvaluation::ReciprocalMultiply)], recip);
    QCOMPARE(s.differ[size_t(ScaleEvaluation::NewtonFma)], int64_t(0));
    QCOMPARE(newton, int64_t(0));
    QCOMPARE_BITS(s.first[size_t(ScaleEvaluation::ReciprocalMultiply)], first);
    QCOMPARE(recip, int64_t(2340417)); // 27.9 % of the binade
  }

  // A found case: the first amax after 0.3 whose reciprocal scale differs. The scales are one
  // float32 step apart; the flipping element's scaled values lie on both sides of the E4M3FN
  // rounding midpoint between its two codes (checked with the oracle's products).
  void foundCaseFlipsAnElement() {
    const Format& f = Format::E4M3FN();
    const float amax = nextDifferingAmax(0.3f, 448.0f, ScaleEvaluation::ReciprocalMultiply);
    QVERIFY(amax > 0.3f);
    const ScaleCase c = scaleCase(amax, f);
    const size_t r = size_t(ScaleEvaluation::ReciprocalMultiply);
    QCOMPARE(std::abs(c.ulps[r]), int64_t(1));
    const CodeFlips& fl = c.flips[r];
    QVERIFY(fl.count > 0);
    QVERIFY(fl.example > 0 && fl.example <= amax);
    const float ya = exactMultiply(fl.example, c.scale[0]), yb = exactMultiply(fl.example, c.scale[r]);
    QCOMPARE_BITS(fl.scaled_a, ya);
    QCOMPARE_BITS(fl.scaled_b, yb);
    QVERIFY(fl.code_a != fl.code_b);
    QCOMPARE(fl.code_a, f.encode(ya));
    QCOMPARE(fl.code_b, f.encode(yb));
    const double lo = std::min(f.decode(fl.code_a), f.decode(fl.code_b)),
                 hi = std::max(f.decode(fl.code_a), f.decode(fl.code_b));
    QCOMPARE(f.nextUp(std::min(fl.code_a, fl.code_b)), std::max(fl.code_a, fl.code_b)); // neighbours
    const double mid = (lo + hi) / 2;
    QCOMPARE(fl.boundary, mid);
    QVERIFY(std::min(ya, yb) <= mid && std::max(ya, yb) >= mid);
  }

  // The flip intervals are exact: 1e6 random elements of (0, amax] and every float32 within 64
  // steps of each interval's ends agree with a direct comparison of the two codes.
  void flipIntervalsAreExact() {
    const Format& f = Format::E4M3FN();
    const float amax = nextDifferingAmax(1.0f, 448.0f, ScaleEvaluation::ReciprocalMultiply);
    const float sa = 448.0f / amax, sb = evaluateQuantScale(amax, 448.0f, ScaleEvaluation::ReciprocalMultiply);
    const CodeFlips fl = codeFlips(amax, sa, sb, f);
    QVERIFY(!fl.lo.empty());
    auto differs = [&](float x) { return f.encode(exactMultiply(x, sa)) != f.encode(exactMultiply(x, sb)); };
    int64_t seen = 0;
    for (size_t i = 0; i < fl.lo.size(); ++i)
      for (float end : {fl.lo[i], fl.hi[i]}) {
        float x = end;
        for (int k = 0; k < 64; ++k) x = std::nextafter(x, 0.0f);
        for (int k = 0; k < 128 && x <= amax; ++k, x = std::nextafter(x, 1e30f)) {
          QCOMPARE(fl.flips(x), differs(x));
          seen += differs(x);
        }
      }
    QVERIFY(seen > 0);
    for (uint64_t i = 0; i < 1000000; ++i) {
      const float x = std::max(std::nextafter(0.0f, 1.0f), float(unitInterval(randomWord(3, 0, i))) * amax);
      QCOMPARE(fl.flips(x), differs(x));
    }
    // The count is the sum of the intervals' widths in float32 steps.
    int64_t total = 0;
    for (size_t i = 0; i < fl.lo.size(); ++i)
      total += int64_t(std::bit_cast<uint32_t>(fl.hi[i])) - int64_t(std::bit_cast<uint32_t>(fl.lo[i]));
    QCOMPARE(fl.count, total);
    QCOMPARE(fl.candidates, int64_t(std::bit_cast<uint32_t>(amax)));
  }

  void tensorWithAmaxHasThatAmax() {
    const std::vector<float> x = tensorWithAmax(0.3f, 4096, 9);
    float m = 0;
    for (float v : x) m = std::max(m, std::fabs(v));
    QCOMPARE_BITS(m, 0.3f);
    QCOMPARE_BITS(x[0], 0.3f);
  }

  void badInput() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, scaleCase(0.0f, Format::E4M3FN()));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, scaleCase(INFINITY, Format::E4M3FN()));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, scaleCase(1.0f, Format::BF16()));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, surveyBinade(448.0f, 200));
  }
};

QTEST_MAIN(TestScaleDeterminism)
#include "test_scale_determinism.moc"

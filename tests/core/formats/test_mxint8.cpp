// Tests for the MXINT8 element codec (core/formats/mxint8.h): int8 two's complement, value k/64,
// RNE, saturating to ±127 (OCP MX v1.0's symmetric element range ±1.984375). Expected codes are
// derived by hand in the comments: code = round_half_even(x · 64), clamped to [−127, 127], written
// as an int8 bit pattern.
#include <QtTest>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "formats/mxint8.h"

using namespace fp8lab;

class TestMxInt8 : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void encodeByHand();
  void decodeByHand();
  void everyCodeRoundTrips();
  void bulkMatchesScalar();
};

// 1.0 · 64 = 64 = 0x40; −1.0 → −64 = 0xC0; 1/64 → 1 = 0x01; −1/64 → −1 = 0xFF.
// 0.5078125 = 32.5/64: tie 32 / 33 → even 32 = 0x20; 0.5234375 = 33.5/64 → 34 = 0x22;
// 0.5/64 ties 0 / 1 → 0; 1.5/64 ties 1 / 2 → 2.
// 3.0 → 192 → saturates to 127 = 0x7F (1.984375); −3.0 → −127 = 0x81;
// 1.9921875 = 127.5/64 ties 127 / 128 → 128, beyond the range → 127.
// ±inf → ±127; NaN → 0x7F; −0 → 0x00 (two's complement has one zero).
void TestMxInt8::encodeByHand() {
  QCOMPARE(int(mxint8::encode(1.0)), 0x40);
  QCOMPARE(int(mxint8::encode(-1.0)), 0xC0);
  QCOMPARE(int(mxint8::encode(1.0 / 64)), 0x01);
  QCOMPARE(int(mxint8::encode(-1.0 / 64)), 0xFF);
  QCOMPARE(int(mxint8::encode(0.5078125)), 0x20);
  QCOMPARE(int(mxint8::encode(0.5234375)), 0x22);
  QCOMPARE(int(mxint8::encode(-0.5078125)), 0xE0); // −32
  QCOMPARE(int(mxint8::encode(0.5 / 64)), 0x00);
  QCOMPARE(int(mxint8::encode(1.5 / 64)), 0x02);
  QCOMPARE(int(mxint8::encode(3.0)), 0x7F);
  QCOMPARE(int(mxint8::encode(-3.0)), 0x81);
  QCOMPARE(int(mxint8::encode(1.9921875)), 0x7F);
  QCOMPARE(int(mxint8::encode(std::numeric_limits<double>::infinity())), 0x7F);
  QCOMPARE(int(mxint8::encode(-std::numeric_limits<double>::infinity())), 0x81);
  QCOMPARE(int(mxint8::encode(std::numeric_limits<double>::quiet_NaN())), 0x7F);
  QCOMPARE(int(mxint8::encode(-0.0)), 0x00);
}

// 0x40 = 64 → 1.0; 0x7F = 127 → 1.984375; 0x81 = −127 → −1.984375; 0xFF = −1 → −0.015625;
// 0x80 = −128 → −2.0 (never produced by encode).
void TestMxInt8::decodeByHand() {
  QCOMPARE(mxint8::decode(0x40), 1.0);
  QCOMPARE(mxint8::decode(0x7F), 1.984375);
  QCOMPARE(mxint8::decode(0x81), -1.984375);
  QCOMPARE(mxint8::decode(0xFF), -0.015625);
  QCOMPARE(mxint8::decode(0x80), -2.0);
  QCOMPARE(mxint8::decode(0x00), 0.0);
}

// k/64 for k in −127..127 is exact, so it encodes to k's own bit pattern.
void TestMxInt8::everyCodeRoundTrips() {
  for (int k = -127; k <= 127; ++k) {
    const uint8_t c = static_cast<uint8_t>(static_cast<int8_t>(k));
    QCOMPARE(int(mxint8::encode(k / 64.0)), int(c));
    QCOMPARE(mxint8::decode(c), k / 64.0);
  }
}

// The vector kernel against the scalar encode of the same float32 product, on random values
// across the range, exact ties (k + 0.5)/64, the saturation edge and the specials.
void TestMxInt8::bulkMatchesScalar() {
  std::vector<float> x;
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-2.5f, 2.5f);
  for (int i = 0; i < 20000; ++i) x.push_back(u(g));
  for (int k = -128; k <= 127; ++k) x.push_back((k + 0.5f) / 64.0f);
  for (float v : {0.0f, -0.0f, 1.9921875f, -1.9921875f, 1e-30f, -1e-45f, 3e38f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()})
    x.push_back(v);
  for (float s : {1.0f, 0.5f, 3.0f, std::ldexp(1.0f, -127), std::ldexp(1.0f, 100)}) {
    std::vector<uint8_t> out(x.size());
    mxint8::encodeBulk(x.data(), out.data(), x.size(), s);
    for (size_t i = 0; i < x.size(); ++i) {
      const float y = x[i] * s;
      QVERIFY2(out[i] == mxint8::encode(static_cast<double>(y)),
               qPrintable(QStringLiteral("x=%1 s=%2").arg(double(x[i]), 0, 'g', 9).arg(double(s))));
    }
  }
  std::vector<float> d(3);
  const uint8_t c[3] = {0x40, 0x81, 0x80};
  mxint8::decodeBulk(c, d.data(), 3);
  QCOMPARE(d, (std::vector<float>{1.0f, -1.984375f, -2.0f}));
}

QTEST_APPLESS_MAIN(TestMxInt8)
#include "test_mxint8.moc"

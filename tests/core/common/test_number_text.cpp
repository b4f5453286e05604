// Tests for core/common/number_text: the report number and cell rules. Expected values are derived
// by hand in the comments (exact binary values of the inputs, printf's %g / %f definitions).
#include <QtTest>

#include <cmath>
#include <limits>

#include "common/number_text.h"

using namespace fp8lab;

class TestNumberText : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void decimal_data() {
    QTest::addColumn<double>("v");
    QTest::addColumn<char>("style");
    QTest::addColumn<int>("precision");
    QTest::addColumn<QString>("expected");
    // 8.0625 = 129/16 exactly: at 4 significant digits a tie between 8.062 and 8.063; away from
    // zero gives 8.063 (printf's round-half-even would give 8.062).
    QTest::newRow("tie up") << 8.0625 << 'g' << 4 << QStringLiteral("8.063");
    QTest::newRow("tie negative") << -8.0625 << 'g' << 4 << QStringLiteral("-8.063");
    // 43.8125 = 701/16: at 3 decimals a tie between 43.812 and 43.813.
    QTest::newRow("tie fixed") << 43.8125 << 'f' << 3 << QStringLiteral("43.813");
    // 0.1 is 0.1000000000000000055…: no tie; %g drops trailing zeros.
    QTest::newRow("not a tie") << 0.1 << 'g' << 6 << QStringLiteral("0.1");
    // 2.675 is 2.67499999999999982236431605997495353221893310546875: below the tie, rounds down.
    QTest::newRow("below tie") << 2.675 << 'f' << 2 << QStringLiteral("2.67");
    // %g switches to exponent form when the exponent is < -4 or >= precision; two exponent digits.
    QTest::newRow("exponent") << 1e-5 << 'g' << 6 << QStringLiteral("1e-05");
    QTest::newRow("large") << 1234567.0 << 'g' << 6 << QStringLiteral("1.23457e+06");
    QTest::newRow("negative zero") << -0.0 << 'g' << 6 << QStringLiteral("0");
    QTest::newRow("negative zero fixed") << -0.0 << 'f' << 3 << QStringLiteral("0.000");
  }
  void decimal() {
    QFETCH(double, v);
    QFETCH(char, style);
    QFETCH(int, precision);
    QFETCH(QString, expected);
    QCOMPARE(QString::fromStdString(decimalText(v, style, precision)), expected);
  }

  void general() {
    QCOMPARE(generalText(std::nan("")), std::string("nan"));
    QCOMPARE(generalText(-std::numeric_limits<double>::infinity()), std::string("-inf"));
    QCOMPARE(generalText(28.4712345, 4), std::string("28.47"));
  }

  void shortest() {
    // 0.1f is 0.100000001490116…: the shortest float text is "0.1", the shortest double text of
    // the same value needs 9 digits after rounding to double: 0.10000000149011612.
    QCOMPARE(shortestText(0.1f), std::string("0.1"));
    QCOMPARE(shortestText(double(0.1f)), std::string("0.10000000149011612"));
    QCOMPARE(shortestText(std::numeric_limits<double>::infinity()), std::string("inf"));
  }

  void cells() {
    QCOMPARE(padded("ab", 5), std::string("   ab"));
    QCOMPARE(padded("ab", -5), std::string("ab   "));
    QCOMPARE(padded("abcdef", 3), std::string("abcdef")); // never cut
    // "×" is two UTF-8 bytes and one character: two spaces fill width 4 after "a×b".
    QCOMPARE(padded("a\u00d7b", -5), std::string("a\u00d7b  "));
    QCOMPARE(tableLine({"x", "1", "22"}, {-3, 3, 4}), std::string("x     1   22\n"));
    QCOMPARE(tableLine({"x", "1"}, {-2, 2}, "  "), std::string("x    1\n"));
  }
};

QTEST_GUILESS_MAIN(TestNumberText)
#include "test_number_text.moc"

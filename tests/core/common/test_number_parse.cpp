// Tests for the number parsing of core/common/number_text (parseNumber, numberProblem,
// parseNumberList, parseInteger, trimmedText, valueWords). Expected values come from the C99 /
// IEEE 754 meaning of the literals (hand-derived in the comments) and from Unicode's White_Space
// property list.
#include <QtTest>

#include <cmath>
#include <cstring>

#include "common/number_text.h"

using namespace fp8lab;

class TestNumberParse : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void numbers() {
    // C99 hex float 0x1.8p3 = 1.5 · 2^3 = 12; decimal in the "C" locale.
    QCOMPARE(*parseNumber("0x1.8p3"), 12.0);
    QCOMPARE(*parseNumber("1e-3"), 0.001);
    QCOMPARE(*parseNumber("  -2.5\t"), -2.5);
    QVERIFY(std::isinf(*parseNumber("Infinity")) && *parseNumber("-inf") < 0);
    QVERIFY(std::isnan(*parseNumber("NaN")));
    const double neg_zero = *parseNumber("-0");
    QVERIFY(neg_zero == 0 && std::signbit(neg_zero));
    // 1e-310 is a float64 subnormal (below 2^-1022 ≈ 2.2e-308, above 2^-1074 ≈ 4.9e-324): kept.
    QCOMPARE(*parseNumber("1e-310"), 1e-310);
    // Beyond float64 (max ≈ 1.8e308) and below half its smallest subnormal: refused, not rounded.
    QVERIFY(!parseNumber("1e400"));
    QVERIFY(!parseNumber("1e-400"));
    QVERIFY(!parseNumber("0x1p-2000"));
    QVERIFY(parseNumber("0x0p0") && *parseNumber("0e5") == 0); // zero literals stay zero
    QVERIFY(!parseNumber("1e"));
    QVERIFY(!parseNumber("1,5"));
    QVERIFY(!parseNumber(""));
    // U+00A0 (no-break space) and U+3000 (ideographic space) are White_Space: trimmed.
    QCOMPARE(*parseNumber("\xc2\xa0"
                          "7\xe3\x80\x80"),
             7.0);
    // U+200B (zero width space) is not White_Space (category Cf): not trimmed.
    QVERIFY(!parseNumber("7\xe2\x80\x8b"));
  }
  void problems() {
    QCOMPARE(numberProblem(" x "), std::string("not a number: 'x'"));
    QCOMPARE(numberProblem("1e400"), std::string("'1e400' is beyond the float64 range (largest finite "
                                                 "1.7976931348623157e+308; write inf for infinity)"));
    QCOMPARE(numberProblem("1e-400"), std::string("'1e-400' underflows to 0 in float64 (smallest nonzero "
                                                  "4.9406564584124654e-324; write 0 for zero)"));
  }
  void lists() {
    std::string bad;
    size_t at = 0;
    const auto l = parseNumberList("1,2.5, -3", &bad);
    QVERIFY(l);
    QCOMPARE(*l, (std::vector<double>{1, 2.5, -3}));
    QVERIFY(!parseNumberList("1,x ,3", &bad, &at));
    QCOMPARE(bad, std::string("x "));
    QCOMPARE(at, size_t(2));
    QCOMPARE(numberListProblem("1,x ,3", bad, at), std::string("not a number: 'x'"));
    QVERIFY(parseNumberList("", &bad)->empty());
  }
  // An empty or blank item is refused with its 1-based place, never skipped: "1,,2" is three items,
  // the second empty ("1,,2" once quantized two values without a word).
  void listEmptyItems_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("position");
    QTest::newRow("middle") << QStringLiteral("1,,2") << 2;
    QTest::newRow("leading") << QStringLiteral(",1") << 1;
    QTest::newRow("trailing") << QStringLiteral("1,2,") << 3;
    QTest::newRow("blank") << QStringLiteral("1, ,2") << 2;
    QTest::newRow("only a comma") << QStringLiteral(",") << 1;
  }
  void listEmptyItems() {
    QFETCH(QString, text);
    QFETCH(int, position);
    const std::string t = text.toStdString();
    std::string bad = "unset";
    size_t at = 0;
    QVERIFY(!parseNumberList(t, &bad, &at));
    QCOMPARE(at, size_t(position));
    QCOMPARE(numberListProblem(t, bad, at), "item " + std::to_string(position) + " of '" + t +
                                                "' is empty (one comma between values, none at either end)");
  }
  void integers() {
    QCOMPARE(*parseInteger("+4"), int64_t(4));
    QCOMPARE(*parseInteger(" -12 "), int64_t(-12));
    QCOMPARE(*parseInteger("9223372036854775807"), INT64_MAX); // 2^63 − 1
    QVERIFY(!parseInteger("9223372036854775808"));
    QVERIFY(!parseInteger("4.0"));
    QVERIFY(!parseInteger("0x4"));
    QVERIFY(!parseInteger("+-4"));
    QVERIFY(!parseInteger("+"));
  }
  void trimming() {
    // U+0085 (NEL), U+1680, U+2000, U+200A, U+2028, U+2029, U+202F, U+205F are White_Space.
    QCOMPARE(std::string(trimmedText("\xc2\x85\xe1\x9a\x80\xe2\x80\x80"
                                     "a b\xe2\x80\x8a\xe2\x80\xa8\xe2\x80\xa9"
                                     "\xe2\x80\xaf\xe2\x81\x9f\v")),
             std::string("a b"));
    QCOMPARE(std::string(trimmedText(" \t\n")), std::string());
  }
  void words() {
    const std::vector<std::string_view> w = valueWords(" 1,2\n\n3 ,, x\r\n");
    QCOMPARE(w.size(), size_t(4));
    QCOMPARE(std::string(w[0]), std::string("1"));
    QCOMPARE(std::string(w[2]), std::string("3"));
    QCOMPARE(std::string(w[3]), std::string("x"));
    QVERIFY(valueWords(" , \t").empty());
  }
};

QTEST_APPLESS_MAIN(TestNumberParse)
#include "test_number_parse.moc"

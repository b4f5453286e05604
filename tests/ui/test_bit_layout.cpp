// Bit layout view (ui/views/bit_layout_view.h), bad input included. Expected values are derived by hand from the OCP
// OFP8 rev 1.0 E4M3FN definition (bias 7, no Inf, S.1111.111 = NaN), the derivation next to each check.
#include "views/bit_layout_view.h"

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QTableWidget>
#include <QtTest>

using namespace fp8lab::ui;

class TestBitLayout : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  // E8M0FNU (OCP MX v1.0 §5.4: 2^(e−127), no zero, no subnormals) has no min subnormal to show,
  // and its nearest rounding ties up (ml_dtypes), which the rounding choice says; E4M3FN's is RNE.
  void e8m0ShowsNoSubnormalAndItsTieRule() {
    BitLayoutView v;
    QVERIFY(v.setFormat(QStringLiteral("E8M0FNU")));
    auto* props = v.findChild<QLabel*>(QStringLiteral("propsLabel"));
    QVERIFY(props);
    QVERIFY2(props->text().contains(QStringLiteral("min subnormal \u2014")), qPrintable(props->text()));
    auto* box = v.findChild<QComboBox*>(QStringLiteral("roundingBox"));
    QVERIFY(box);
    QCOMPARE(box->itemText(0), QStringLiteral("nearest, ties up (ml_dtypes)"));
    QVERIFY(v.setFormat(QStringLiteral("E4M3FN")));
    QCOMPARE(box->itemText(0), QStringLiteral("nearest, ties to even (RNE)"));
    QVERIFY(!props->text().contains(QStringLiteral("min subnormal \u2014")));
    // E4M3 (IEEE-style: max 240, ±Inf) says it is not E4M3FN.
    QVERIFY(v.setFormat(QStringLiteral("E4M3")));
    QVERIFY2(props->text().contains(QStringLiteral("IEEE-style E4M3, not OCP E4M3FN")), qPrintable(props->text()));
  }

  // 0x7E = 0 1111 110 = 2^(15-7) · 1.75 = 448 (max finite). Clicking bit 0 gives 0 1111 111 =
  // 0x7F, the NaN of E4M3FN.
  void toggleBit0Of448GivesNaN() {
    BitLayoutView v;
    v.resize(1000, 700);
    v.show();
    QVERIFY(v.setFormat(QStringLiteral("E4M3FN")));
    v.setCode(0x7E);
    QCOMPARE(v.decodedText(), QStringLiteral("448"));
    QVERIFY(v.classTextShown().contains(QStringLiteral("max finite")));
    QVERIFY2(v.formulaText().contains(QStringLiteral("2^(15 \u2212 7)")), qPrintable(v.formulaText()));
    QVERIFY(v.formulaText().contains(QStringLiteral("1.110\u2082")));
    auto* cells = v.findChild<BitCells*>(QStringLiteral("bitCells"));
    QVERIFY(cells);
    QTest::mouseClick(cells, Qt::LeftButton, {}, cells->cellRect(0).center());
    QCOMPARE(v.code(), 0x7Fu);
    QCOMPARE(v.decodedText(), QStringLiteral("NaN"));
    QVERIFY(v.classTextShown().contains(QStringLiteral("NaN")));
    // And back.
    QTest::mouseClick(cells, Qt::LeftButton, {}, cells->cellRect(0).center());
    QCOMPARE(v.code(), 0x7Eu);
  }

  // 464 lies exactly between 448 (1.110 · 2^8, code 0x7E) and 480 (1.111 · 2^8, which would be
  // the NaN code): a tie, rounded to the even mantissa 110 = 448. OCP OFP8 §3 rounds before the
  // overflow check, so even without saturation the result is 0x7E, not NaN.
  void type464WithoutSaturationGives0x7E() {
    BitLayoutView v;
    v.show();
    v.setFormat(QStringLiteral("E4M3FN"));
    v.setSaturate(false);
    auto* edit = v.findChild<QLineEdit*>(QStringLiteral("valueEdit"));
    QVERIFY(edit);
    edit->clear();
    QTest::keyClicks(edit, QStringLiteral("464"));
    QVERIFY(v.valueValid());
    QCOMPARE(v.valueCode(), 0x7Eu);
    const QString shown = v.findChild<QLabel*>(QStringLiteral("valueResult"))->text();
    QVERIFY2(shown.contains(QStringLiteral("a tie")), qPrintable(shown));
    QVERIFY(shown.contains(QStringLiteral("448")));
    // RNE breaks the tie toward the even mantissa (110 of 448, not 111 of 480): "to even", not the
    // "toward zero" of RTZ.
    QVERIFY2(shown.contains(QStringLiteral("\u00b7 rounded to even (448 has the even mantissa)")), qPrintable(shown));
    QVERIFY2(!shown.contains(QStringLiteral("toward zero")), qPrintable(shown));
    // 465 is above the midpoint: it rounds to 480 > 448, which overflows; E4M3FN has no Inf, so
    // without saturation the result is NaN (0x7F), with saturation 448 (0x7E).
    edit->setText(QStringLiteral("465"));
    QCOMPARE(v.valueCode(), 0x7Fu);
    v.setSaturate(true);
    QCOMPARE(v.valueCode(), 0x7Eu);
  }

  // The same value in other formats: 464 in E5M2 (spacing 64 in [256, 512)) rounds to 448 =
  // 0 10111 11 = 0x5f; in E4M3FNUZ (max 240) it saturates to 240 = 0x7f.
  void comparisonTable() {
    BitLayoutView v;
    v.setFormat(QStringLiteral("E4M3FN"));
    v.setValueText(QStringLiteral("464"));
    auto* t = v.findChild<QTableWidget*>(QStringLiteral("compareTable"));
    QVERIFY(t);
    QHash<QString, QPair<QString, QString>> rows;
    for (int r = 0; r < t->rowCount(); ++r)
      rows[t->item(r, 0)->text()] = {t->item(r, 1)->text(), t->item(r, 2)->text()};
    QCOMPARE(rows.value(QStringLiteral("E5M2")).first, QStringLiteral("0x5f"));
    QCOMPARE(rows.value(QStringLiteral("E5M2")).second, QStringLiteral("448"));
    QCOMPARE(rows.value(QStringLiteral("E4M3FNUZ")).first, QStringLiteral("0x7f"));
    QCOMPARE(rows.value(QStringLiteral("E4M3FNUZ")).second, QStringLiteral("240"));
    QVERIFY(rows.contains(QStringLiteral("BF16")));
  }

  // Arrow keys step through representable values: 0x38 = 1.0; next up 1.125 (0x39); two steps
  // down from 1.125 give 0.9375 = 1.111 · 2^-1 (0x37).
  void arrowKeysStep() {
    BitLayoutView v;
    v.show();
    v.setFormat(QStringLiteral("E4M3FN"));
    v.setCode(0x38);
    QCOMPARE(v.decodedText(), QStringLiteral("1 = 2\u2070"));
    QTest::keyClick(&v, Qt::Key_Right);
    QCOMPARE(v.code(), 0x39u);
    QCOMPARE(v.decodedText(), QStringLiteral("1.125"));
    QTest::keyClick(&v, Qt::Key_Left);
    QTest::keyClick(&v, Qt::Key_Left);
    QCOMPARE(v.code(), 0x37u);
    QCOMPARE(v.decodedText(), QStringLiteral("0.9375"));
  }

  // Subnormal 0x01 = 0 0000 001 = 2^(1-7) · 0.001₂ = 2^-9.
  void subnormalFormula() {
    BitLayoutView v;
    v.setFormat(QStringLiteral("E4M3FN"));
    v.setCode(0x01);
    QCOMPARE(v.decodedText(), QStringLiteral("0.001953125 = 2\u207b\u2079"));
    QVERIFY(v.classTextShown().contains(QStringLiteral("subnormal")));
    QVERIFY(v.formulaText().contains(QStringLiteral("0.001\u2082")));
  }

  void badInputIsExplained() {
    BitLayoutView v;
    v.setValueText(QStringLiteral("12abc"));
    QVERIFY(!v.valueValid());
    QVERIFY(v.findChild<QLabel*>(QStringLiteral("valueResult"))->text().contains(QStringLiteral("not a number")));
    QVERIFY(!parseUserNumber(QStringLiteral("1/")).has_value());
    QCOMPARE(*parseUserNumber(QStringLiteral("2^-9")), 0.001953125);
    QCOMPARE(*parseUserNumber(QStringLiteral("0x1.8p3")), 12.0);
    QVERIFY(!v.setFormat(QStringLiteral("E9M9")));
  }

  // Four-bit E2M1 (OCP MX): 4 cells; 0x7 = 0 11 1 = 2^(3-1) · 1.5 = 6 (max).
  void fourBitFormat() {
    BitLayoutView v;
    QVERIFY(v.setFormat(QStringLiteral("E2M1")));
    v.setCode(0x7);
    QCOMPARE(v.decodedText(), QStringLiteral("6"));
    v.toggleBit(3);
    QCOMPARE(v.code(), 0xFu);
    QCOMPARE(v.decodedText(), QStringLiteral("\u22126"));
  }
};

QTEST_MAIN(TestBitLayout)
#include "test_bit_layout.moc"

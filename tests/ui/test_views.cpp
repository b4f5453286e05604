// Code grid, number line and Learn page: each view constructs and shows the
// expected content. Expected numbers are derived by hand from the format definitions
// (OCP OFP8 rev 1.0, OCP MX v1.0) and Transformer Engine's current-scaling rule s = max/amax.
#include "views/code_grid_view.h"
#include "learn/learn_page.h"
#include "views/number_line_view.h"

#include "plot/qcp.h"

#include <QLabel>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>

#include <cmath>

using namespace fp8lab::ui;

class TestViews : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  // E4M3FN: 256 codes = 2 zeros (0x00, 0x80) + 14 subnormals (exponent 0, mantissa 1..7, both
  // signs) + 2 max (0x7E, 0xFE) + 2 NaN (0x7F, 0xFF) + 236 other normals.
  void codeGridE4M3FN() {
    CodeGridView v;
    v.resize(900, 600);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QCOMPARE(v.grid()->rows(), 16);
    QCOMPARE(v.findChild<QLabel*>(QStringLiteral("summary"))->text(),
             QStringLiteral("256 codes: 2 zero, 14 subnormal, 236 normal, 2 max finite, 0 Inf, 2 NaN"));
    QSignalSpy spy(&v, &CodeGridView::codeActivated);
    QTest::mouseClick(v.grid(), Qt::LeftButton, {}, v.grid()->cellRect(0x7F).center());
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy[0][0].toString(), QStringLiteral("E4M3FN"));
    QCOMPARE(spy[0][1].toUInt(), 0x7Fu);
    QCOMPARE(v.grid()->selected(), 0x7F);
    // E5M2 has Inf: 0x7C and 0xFC; NaN: 0x7D-0x7F and 0xFD-0xFF (6).
    QVERIFY(v.setFormat(QStringLiteral("E5M2")));
    QVERIFY(v.findChild<QLabel*>(QStringLiteral("summary"))->text().endsWith(QStringLiteral("2 Inf, 6 NaN")));
    // E2M1 (FP4): 16 codes in one row; BF16 is refused (16 bits).
    QVERIFY(v.setFormat(QStringLiteral("E2M1")));
    QCOMPARE(v.grid()->rows(), 1);
    QVERIFY(!v.setFormat(QStringLiteral("BF16")));
    QVERIFY(v.csv().startsWith(QStringLiteral("format,code_hex,row,col,value,class\n")));
  }

  // Every cell of the code grid shows its value exactly (a rounded "0.00195" beside an exact
  // "0.015625" would mislead). Hand-derived E4M3FN cells:
  // 0x01 = 2⁻⁹ (0.001953125, 11 characters) → "2⁻⁹"; 0x03 = 3·2⁻⁹ → "3·2⁻⁹"; 0x08 = 2⁻⁶ = 0.015625
  // (8 characters) → "0.015625"; 0x09 = 9·2⁻⁹ = 0.017578125 → "9·2⁻⁹"; 0xFE = −448.
  // Then every code of every ≤ 8-bit format: the text, read back exactly, is the decoded value.
  void codeGridValuesAreExact() {
    QCOMPARE(codeCellText(std::ldexp(1.0, -9)), QStringLiteral("2\u207b\u2079"));
    QCOMPARE(codeCellText(3 * std::ldexp(1.0, -9)), QStringLiteral("3\u00b72\u207b\u2079"));
    QCOMPARE(codeCellText(0.015625), QStringLiteral("0.015625"));
    QCOMPARE(codeCellText(-9 * std::ldexp(1.0, -9)), QStringLiteral("\u22129\u00b72\u207b\u2079"));
    QCOMPARE(codeCellText(-448), QStringLiteral("\u2212448"));
    QCOMPARE(codeCellText(std::ldexp(1.0, 127)), QStringLiteral("2\u00b9\u00b2\u2077")); // E8M0FNU max
    // Reads "d", "−d", "2ⁿ", "k·2ⁿ" back to a double (exactly: k and 2ⁿ are exact in a double).
    auto parse = [](QString t) {
      static const QString sup = QStringLiteral("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079");
      double sign = 1;
      if (t.startsWith(QChar(0x2212))) sign = -1, t = t.mid(1);
      const int dot = t.indexOf(QChar(0x00b7));
      const int two = t.indexOf(QLatin1Char('2'), dot + 1);
      const bool pow = two >= 0 && two + 1 < t.size() && (t[two + 1] == QChar(0x207b) || sup.contains(t[two + 1]));
      if (!pow) return sign * t.toDouble();
      const double k = dot >= 0 ? t.left(dot).toDouble() : 1.0;
      int e = 0, es = 1;
      for (QChar c : t.mid(two + 1))
        if (c == QChar(0x207b))
          es = -1;
        else
          e = e * 10 + int(sup.indexOf(c));
      return sign * std::ldexp(k, es * e);
    };
    for (const fp8lab::Format* f : fp8lab::Format::all()) {
      if (f->bits() > 8) continue;
      for (uint32_t c = 0; c < f->codeCount(); ++c) {
        const double v = f->decode(c);
        const QString t = codeCellText(v);
        QVERIFY2(t.size() <= 9, qPrintable(t));
        if (!std::isfinite(v)) continue;
        QVERIFY2(parse(t) == v, qPrintable(QStringLiteral("%1 0x%2: %3 for %4")
                                               .arg(QString::fromStdString(f->name()))
                                               .arg(c, 0, 16)
                                               .arg(t)
                                               .arg(v, 0, 'g', 17)));
      }
    }
  }

  void numberLineShowsFormats() {
    NumberLineView v;
    v.resize(1100, 800);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QCOMPARE(v.formats(), QStringList({QStringLiteral("E4M3FN"), QStringLiteral("E5M2")}));
    QVERIFY(v.exportPlot());
    // Ticks: one graph of normal values + one of subnormals per format: E4M3FN 2·(7·16+... ) — we
    // check the counts instead: E4M3FN has 252 non-zero finite values (254 finite − 2 zeros).
    int e4m3Points = 0;
    for (int i = 0; i < v.exportPlot()->graphCount(); ++i)
      if (v.exportPlot()->graph(i)->name().startsWith(QStringLiteral("E4M3FN")))
        e4m3Points += v.exportPlot()->graph(i)->dataCount();
    QCOMPARE(e4m3Points, 252);
    QVERIFY(v.setFormats(QStringLiteral("E2M1")));
    QCOMPARE(v.formats(), QStringList({QStringLiteral("E2M1")}));
    QVERIFY(!v.setFormats(QStringLiteral("nope")));
  }

  // Hand-derived overlay shares in E4M3FN (max 448, min subnormal 2^-9, so anything below
  // 2^-10 rounds to 0):
  //   [1000, 1]: unscaled, 1000 > 448 saturates (1 of 2); s = 448/1000 = 0.448 brings it to 448
  //   and 1 to 0.448 — nothing saturates or underflows after scaling.
  //   [1e-5, 100]: 1e-5 < 2^-10 underflows unscaled; s = 4.48 gives 4.48e-5, still < 2^-10.
  void overlayShares() {
    const auto& f = fp8lab::Format::E4M3FN();
    TensorOverlay o = NumberLineView::analyse({1000.0f, 1.0f}, f, QStringLiteral("t"));
    QCOMPARE(o.saturate_before, 0.5);
    QCOMPARE(o.saturate_after, 0.0);
    QCOMPARE(o.underflow_before, 0.0);
    QCOMPARE(o.quant_scale, double(448.0f / 1000.0f));
    // binades before: 1 → 0, 1000 → 9 ([512, 1024)); after: 0.448 → −2 ([0.25, 0.5)), 448 → 8.
    QCOMPARE(o.binade, (std::vector<int>{-2, 0, 8, 9}));
    QCOMPARE(o.before, (std::vector<double>{0, 0.5, 0, 0.5}));
    QCOMPARE(o.after, (std::vector<double>{0.5, 0, 0.5, 0}));
    o = NumberLineView::analyse({1e-5f, 100.0f}, f, QStringLiteral("t"));
    QCOMPARE(o.underflow_before, 0.5);
    QCOMPARE(o.underflow_after, 0.5);
    QCOMPARE(o.saturate_after, 0.0);
    o = NumberLineView::analyse({}, f, QStringLiteral("empty"));
    QVERIFY(o.binade.empty());
  }

  // Learn demo 1: [0.001, 0.005, 0.008, 0.010] in E4M3FN.
  //   No scaling, quantum 2^-9 = 0.001953125: 0.001 → 1 quantum (0x01), 0.005 = 2.56 q → 3 (0x03),
  //   0.008 = 4.1 q → 4 (0x04), 0.010 = 5.12 q → 5 (0x05): all subnormal.
  //   Scaling s = 448/0.01 = 44800: 0.001·s = 44.8 → 44 = 1.011·2^5 (0x63); 0.01·s = 448 (0x7E).
  // Demo 3: [0.001, 0.002, 0.003, 100] per tensor: s = 4.48, 0.001·s = 0.00448 = 2.29 q → 0x02;
  // per channel every column's amax maps to 448 (0x7e).
  void learnDemos() {
    LearnPage v;
    v.resize(1100, 800);
    v.show();
    QTableWidget* t = v.table(0);
    QCOMPARE(t->rowCount(), 4);
    const QStringList raw = {QStringLiteral("0x01"), QStringLiteral("0x03"), QStringLiteral("0x04"),
                             QStringLiteral("0x05")};
    for (int r = 0; r < 4; ++r) QCOMPARE(t->item(r, 1)->text(), raw[r]);
    QCOMPARE(t->item(0, 5)->text(), QStringLiteral("0x63"));
    QCOMPARE(t->item(3, 5)->text(), QStringLiteral("0x7e"));
    t = v.table(2);
    QCOMPARE(t->item(0, 3)->text(), QStringLiteral("0x02"));
    for (int r = 0; r < 4; ++r) QCOMPARE(t->item(r, 7)->text(), QStringLiteral("0x7e"));
    // Demo 2: E4M3FN and E5M2 rows.
    QCOMPARE(v.table(1)->rowCount(), 2);
    QCOMPARE(v.table(1)->item(1, 0)->text(), QStringLiteral("E5M2"));
    v.setDemo(3);
    QCOMPARE(v.demo(), 3);
    QVERIFY(v.csv().startsWith(QStringLiteral("step,amax,")));
  }

  // Demo 4 (TE DelayedScaling, history 16, algo max, E4M3FN): steps have amax 1 except step 15
  // with amax 10000. Step 15 is quantized with the scale from amax 1 (448), so every element
  // with |x| > 448/(10000·448) = 1e-4 saturates; steps 16..31 use 448/10000 (the spike is in the
  // 16-step window); step 32 is back to 448.
  void delayedLag() {
    LearnPage v;
    v.setLagParameters(16, 15, 10000);
    const auto& used = v.lagScaleUsed();
    QVERIFY(used.size() >= 40);
    QCOMPARE(used[15], 448.0);
    QCOMPARE(float(used[16]), 448.0f / 10000.0f);
    QCOMPARE(float(used[31]), 448.0f / 10000.0f);
    QCOMPARE(used[32], 448.0);
    QVERIFY(v.lagSaturated()[15] > 0.99);
    QCOMPARE(v.lagSaturated()[16], 0.0);
    // A shorter window releases the spike sooner: history 4 → back at step 20.
    v.setLagParameters(4, 15, 10000);
    QCOMPARE(float(v.lagScaleUsed()[19]), 448.0f / 10000.0f);
    QCOMPARE(v.lagScaleUsed()[20], 448.0);
  }
};

QTEST_MAIN(TestViews)
#include "test_views.moc"

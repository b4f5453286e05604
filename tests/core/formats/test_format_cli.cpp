// Tests for the number-format commands of fp8lab-cli (formats, encode, decode, table) as a user
// runs them: the built binary in a child process, its stdout / stderr compared with values from
// outside the code (OCP MX v1.0, the oracle tables, ONNX Cast, hand
// derivations in the comments). Needs the fp8lab-cli target built beside the tests.
#include <QtTest>

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

namespace {

QString cliPath() {
  return QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli");
}

struct Result {
  int rc = -1;
  QString out, err;
};

Result runCli(const QStringList& args) {
  Result r;
  QProcess p;
  p.start(cliPath(), args);
  if (!p.waitForFinished(60000) || p.exitStatus() != QProcess::NormalExit) return r;
  r.rc = p.exitCode();
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

const QString kE4M3Note = QStringLiteral("note: E4M3 is the IEEE-style E4M3");

} // namespace

class TestFormatCli : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void cliBuilt();
  void formatsListsNoE8M0Subnormal();
  void e8m0RoundingLabel();
  void e8m0NegativeInputNeighbours();
  void e8m0BelowRange();
  void towardZeroOverflowSaysWhatHappened();
  void fnuzInfinitySaturates();
  void neighbourPastMaxHasNoCode();
  void e4m3NoteOncePerCommand_data();
  void e4m3NoteOncePerCommand();
};

void TestFormatCli::cliBuilt() {
  QVERIFY2(QFileInfo(cliPath()).isExecutable(), qPrintable(cliPath() + QStringLiteral(" is not built")));
}

void TestFormatCli::formatsListsNoE8M0Subnormal() {
  // OCP MX v1.0: E8M0 is 2^(code−127), no mantissa, hence no subnormals (smallest value 2^-127).
  const Result t = runCli({QStringLiteral("formats")});
  QCOMPARE(t.rc, 0);
  QString e8;
  for (const QString& line : t.out.split(QLatin1Char('\n')))
    if (line.startsWith(QStringLiteral("E8M0FNU "))) e8 = line;
  // format s/e/m bias max min-normal min-subnormal eps fin/nan/inf binades
  const QStringList cols = e8.split(QLatin1Char(' '), Qt::SkipEmptyParts);
  QCOMPARE(cols.size(), 9);
  QCOMPARE(cols[5], QStringLiteral("-"));
  QCOMPARE(cols[4], QStringLiteral("5.877471754111438e-39")); // 2^-127, the smallest value
  const Result j = runCli({QStringLiteral("formats"), QStringLiteral("--json")});
  QCOMPARE(j.rc, 0);
  int seen = 0;
  for (const QJsonValue& v : QJsonDocument::fromJson(j.out.toUtf8()).array()) {
    const QJsonObject o = v.toObject();
    if (o[QStringLiteral("name")] == QStringLiteral("E8M0FNU")) {
      QVERIFY(o[QStringLiteral("min_subnormal")].isNull());
      ++seen;
    } else if (o[QStringLiteral("name")] == QStringLiteral("E4M3FN")) {
      QCOMPARE(o[QStringLiteral("min_subnormal")].toDouble(), 0x1p-9); // OFP8 v1.0: 2^-9
      ++seen;
    }
  }
  QCOMPARE(seen, 2);
}

void TestFormatCli::e8m0RoundingLabel() {
  // E8M0 has no mantissa; its nearest rounds ties up (ml_dtypes: 1.5 → 2, code 0x80), so the
  // header does not call it "rne".
  const Result r =
      runCli({QStringLiteral("encode"), QStringLiteral("-f"), QStringLiteral("E8M0FNU"), QStringLiteral("1.5")});
  QCOMPARE(r.rc, 0);
  QVERIFY2(r.out.startsWith(QStringLiteral("format E8M0FNU, rounding nearest, ties up (ml_dtypes), saturating")),
           qPrintable(r.out));
  QVERIFY(r.out.contains(QStringLiteral("1.5          -> 0x80")));
  const Result e4 =
      runCli({QStringLiteral("encode"), QStringLiteral("-f"), QStringLiteral("E4M3FN"), QStringLiteral("1.5")});
  QVERIFY(e4.out.startsWith(QStringLiteral("format E4M3FN, rounding rne,")));
}

void TestFormatCli::e8m0NegativeInputNeighbours() {
  // CUDA's e8m0 conversion ignores the sign (in the oracle tables, E8M0 of x is E8M0 of |x|). −2:
  // |x| = 2 = 2^1 is exact (0x80), so there are no neighbours to show. −3: |x| lies between
  // 2 (0x80) and 4 (0x81), midpoint 3, a tie → up → 0x81.
  const Result a = runCli({QStringLiteral("encode"), QStringLiteral("-f"), QStringLiteral("E8M0FNU"),
                           QStringLiteral("--"), QStringLiteral("-2"), QStringLiteral("-3")});
  QCOMPARE(a.rc, 0);
  QVERIFY2(a.out.contains(QStringLiteral("-2           -> 0x80")), qPrintable(a.out));
  QVERIFY(a.out.contains(QStringLiteral("negative input: E8M0 is unsigned and CUDA encodes |x| = 2 (exact)")));
  QVERIFY(!a.out.contains(QStringLiteral("2 (0x80) .. 2 (0x81)")));
  QVERIFY(a.out.contains(QStringLiteral("-3           -> 0x81")));
  QVERIFY(a.out.contains(QStringLiteral("CUDA encodes |x| = 3\n")));
  QVERIFY(a.out.contains(QStringLiteral("neighbours 2 (0x80) .. 4 (0x81), midpoint 3 (tie)")));
}

void TestFormatCli::e8m0BelowRange() {
  // 2^-149 (1e-45 in float32) is below E8M0's smallest value 2^-127 (0x00): nothing lies below,
  // so it gives 0x00 and there is no lower neighbour to print.
  const Result a =
      runCli({QStringLiteral("encode"), QStringLiteral("-f"), QStringLiteral("E8M0FNU"), QStringLiteral("0x1p-149")});
  QCOMPARE(a.rc, 0);
  QVERIFY2(a.out.contains(QStringLiteral("-> 0x00")), qPrintable(a.out));
  QVERIFY(!a.out.contains(QStringLiteral("neighbours")));
  QVERIFY(a.out.contains(QStringLiteral("underflow: below the smallest E8M0 value 2^-127 (0x00)")));
  // −0: CUDA encodes |x| = 0, also below 2^-127 → 0x00; 0 is not "exact" in E8M0 (no zero).
  const Result z = runCli({QStringLiteral("encode"), QStringLiteral("-f"), QStringLiteral("E8M0FNU"),
                           QStringLiteral("--"), QStringLiteral("-0")});
  QVERIFY2(z.out.contains(QStringLiteral("-0           -> 0x00")), qPrintable(z.out));
  QVERIFY(z.out.contains(QStringLiteral("CUDA encodes |x| = 0\n")));
  QVERIFY(!z.out.contains(QStringLiteral("exact")));
}

void TestFormatCli::towardZeroOverflowSaysWhatHappened() {
  // E4M3FN, rtz, --no-saturate: 1000 rounds toward zero to 960 > 448; IEEE 754 §7.4 gives max
  // finite 448 (0x7E) for an overflow in round-toward-zero. No saturation took place.
  const Result a =
      runCli({QStringLiteral("encode"), QStringLiteral("-f"), QStringLiteral("E4M3FN"), QStringLiteral("--no-saturate"),
              QStringLiteral("--rounding"), QStringLiteral("rtz"), QStringLiteral("1000")});
  QCOMPARE(a.rc, 0);
  QVERIFY2(a.out.contains(QStringLiteral("1000         -> 0x7e")), qPrintable(a.out));
  QVERIFY(a.out.contains(QStringLiteral("overflow: rounded toward zero to max finite (rtz; not saturated)")));
  QVERIFY(!a.out.contains(QStringLiteral("saturated to max")));
  // Saturating: the same value is saturated.
  const Result b = runCli({QStringLiteral("encode"), QStringLiteral("-f"), QStringLiteral("E4M3FN"),
                           QStringLiteral("--rounding"), QStringLiteral("rtz"), QStringLiteral("1000")});
  QVERIFY(b.out.contains(QStringLiteral("overflow: saturated to max")));
}

// E4M3FN: 464 lies between max 448 (0x7e) and 480, the next grid point with an unbounded exponent
// (1.111b·2^8) — whose bit pattern 0x7f is E4M3FN's NaN, so it has no code to show. E5M2, not
// saturating: 61440 lies between 57344 (0x7b) and 65536 = 2^16, past max (0x7c would be +Inf).
void TestFormatCli::neighbourPastMaxHasNoCode() {
  const Result a =
      runCli({QStringLiteral("encode"), QStringLiteral("-f"), QStringLiteral("E4M3FN"), QStringLiteral("464")});
  QCOMPARE(a.rc, 0);
  QVERIFY2(a.out.contains(QStringLiteral("neighbours 448 (0x7e) .. 480 (beyond max, unbounded exponent), midpoint 464 "
                                         "(tie)")),
           qPrintable(a.out));
  const Result b = runCli({QStringLiteral("encode"), QStringLiteral("-f"), QStringLiteral("E5M2"),
                           QStringLiteral("--no-saturate"), QStringLiteral("61440")});
  QCOMPARE(b.rc, 0);
  QVERIFY2(b.out.contains(QStringLiteral("57344 (0x7b) .. 65536 (beyond max, unbounded exponent)")), qPrintable(b.out));
}

void TestFormatCli::fnuzInfinitySaturates() {
  // ONNX Cast (opset 24 on), saturate=1: ±Inf → ±FLT_MAX of the FNUZ format, codes 0x7F / 0xFF
  // (E5M2FNUZ 57344); saturate=0: NaN 0x80.
  const Result a = runCli({QStringLiteral("encode"), QStringLiteral("-f"), QStringLiteral("E5M2FNUZ"),
                           QStringLiteral("--"), QStringLiteral("inf"), QStringLiteral("-inf")});
  QCOMPARE(a.rc, 0);
  QVERIFY2(a.out.contains(QStringLiteral("inf          -> 0x7f  [0 11111 11]  = 57344  (max)")), qPrintable(a.out));
  QVERIFY(a.out.contains(QStringLiteral("-inf         -> 0xff  [1 11111 11]  = -57344  (max)")));
  const Result b = runCli({QStringLiteral("encode"), QStringLiteral("-f"), QStringLiteral("E5M2FNUZ"),
                           QStringLiteral("--no-saturate"), QStringLiteral("inf")});
  QVERIFY2(b.out.contains(QStringLiteral("inf          -> 0x80")), qPrintable(b.out));
}

void TestFormatCli::e4m3NoteOncePerCommand_data() {
  QTest::addColumn<QStringList>("args");
  QTest::addColumn<int>("notes");
  const QString f = QStringLiteral("-f");
  QTest::newRow("encode, 3 values") << QStringList{QStringLiteral("encode"), f,
                                                   QStringLiteral("E4M3"),   QStringLiteral("1"),
                                                   QStringLiteral("300"),    QStringLiteral("2")}
                                    << 1;
  QTest::newRow("encode E4M3FN") << QStringList{QStringLiteral("encode"), f, QStringLiteral("E4M3FN"),
                                                QStringLiteral("1")}
                                 << 0;
  QTest::newRow("encode float8_e4m3") << QStringList{QStringLiteral("encode"), f, QStringLiteral("float8_e4m3"),
                                                     QStringLiteral("1")}
                                      << 1;
  QTest::newRow("decode, 2 codes") << QStringList{QStringLiteral("decode"), f, QStringLiteral("e4m3"),
                                                  QStringLiteral("0x78"), QStringLiteral("0x77")}
                                   << 1;
  QTest::newRow("table") << QStringList{QStringLiteral("table"), f, QStringLiteral("E4M3")} << 1;
  QTest::newRow("quantize") << QStringList{QStringLiteral("quantize"), f, QStringLiteral("E4M3"),
                                           QStringLiteral("--values"), QStringLiteral("1,2,300")}
                            << 1;
  QTest::newRow("gemm, A and B E4M3") << QStringList{QStringLiteral("gemm"), QStringLiteral("--a-format"),
                                                     QStringLiteral("E4M3"), QStringLiteral("--b-format"),
                                                     QStringLiteral("E4M3"), QStringLiteral("--m"),
                                                     QStringLiteral("2"),    QStringLiteral("--n"),
                                                     QStringLiteral("2"),    QStringLiteral("--k"),
                                                     QStringLiteral("2"),    QStringLiteral("--backend"),
                                                     QStringLiteral("cpu")}
                                      << 1;
  QTest::newRow("scaling simulate") << QStringList{QStringLiteral("scaling"),
                                                   QStringLiteral("simulate"),
                                                   QStringLiteral("--preset"),
                                                   QStringLiteral("flax"),
                                                   f,
                                                   QStringLiteral("E4M3"),
                                                   QStringLiteral("--amax"),
                                                   QStringLiteral("1,2")}
                                    << 1;
}

void TestFormatCli::e4m3NoteOncePerCommand() {
  // `E4M3` is ml_dtypes' IEEE-style float8_e4m3 (max 240, ±Inf), not OCP E4M3FN (max 448): every
  // command that takes a format says so once on stderr, naming E4M3FN; stdout is unchanged.
  QFETCH(QStringList, args);
  QFETCH(int, notes);
  const Result r = runCli(args);
  QVERIFY2(r.rc == 0, qPrintable(r.err));
  QCOMPARE(r.err.count(kE4M3Note), notes);
  QVERIFY(!r.out.contains(kE4M3Note));
  if (notes) {
    QVERIFY(r.err.contains(QStringLiteral("max 240")));
    QVERIFY(r.err.contains(QStringLiteral("use E4M3FN")));
  }
}

QTEST_APPLESS_MAIN(TestFormatCli)
#include "test_format_cli.moc"

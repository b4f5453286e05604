// `fp8lab-cli gemm --observed` as a kernel's CI runs it: operands given as codes and scales by
// flags, the exit status 0 for a correct kernel and 1 for each bad one, the JSON verdict; `run
// --json` of a multi-experiment config as one document; `scale-layout index` worked examples. Runs
// the built fp8lab-cli on the exact-by-construction files of tests/support/kernel_check_files.h.
#include "cli_runner.h"
#include <QTemporaryDir>
#include <QtTest>

#include "kernel_check_files.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

using fp8lab::test::KernelCheckFiles;

namespace {

using fp8lab::testsupport::CliResult;

CliResult cli(const QStringList& args) {
  return fp8lab::testsupport::runCli(args);
}

QString q(const std::string& s) {
  return QString::fromStdString(s);
}

} // namespace

class TestKernelCheckCli : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  KernelCheckFiles f_;

  /// gemm on the kernel's operands (codes and scales by flags) with `more` flags.
  QStringList gemm(const QStringList& more) const {
    return QStringList{QStringLiteral("gemm"),
                       QStringLiteral("--a-codes"),
                       q(f_.a),
                       QStringLiteral("--a-scales"),
                       q(f_.sa),
                       QStringLiteral("--a-block"),
                       QStringLiteral("1x128"),
                       QStringLiteral("--b-codes"),
                       q(f_.bt),
                       QStringLiteral("--b-transpose"),
                       QStringLiteral("--b-scales"),
                       q(f_.sbt_blk),
                       QStringLiteral("--b-block"),
                       QStringLiteral("128x128"),
                       QStringLiteral("--b-scale-layout"),
                       QStringLiteral("blk128x128"),
                       QStringLiteral("--backend"),
                       QStringLiteral("cpu")} +
           more;
  }

private Q_SLOTS:
  void initTestCase() { f_ = fp8lab::test::writeKernelCheckFiles(tmp_.path().toStdString()); }

  // The Done-when: exit 0 for the correct kernel and non-zero for each bad one at
  // --max-ulp 1; the one-ULP kernel passes at --max-ulp 1 and fails at 0.
  void exitStatusPerKernel_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("maxulp");
    QTest::addColumn<int>("code");
    QTest::newRow("correct") << q(f_.good) << QStringLiteral("1") << 0;
    QTest::newRow("one ULP, max 1") << q(f_.one_ulp) << QStringLiteral("1") << 0;
    QTest::newRow("one ULP, max 0") << q(f_.one_ulp) << QStringLiteral("0") << 1;
    QTest::newRow("wrong block scale") << q(f_.wrong_scale) << QStringLiteral("1") << 1;
    QTest::newRow("float16 accumulation") << q(f_.f16) << QStringLiteral("1") << 1;
    QTest::newRow("NaN output") << q(f_.with_nan) << QStringLiteral("1") << 1;
    QTest::newRow("D transposed: shape refused") << q(f_.transposed) << QStringLiteral("1") << 2;
  }
  void exitStatusPerKernel() {
    QFETCH(QString, file);
    QFETCH(QString, maxulp);
    QFETCH(int, code);
    const CliResult r = cli(
        gemm({QStringLiteral("--observed"), file, QStringLiteral("--max-ulp"), maxulp, QStringLiteral("--no-fit")}));
    QVERIFY2(r.code == code, (r.out + r.err).constData());
    if (code == 0) QVERIFY2(r.out.contains("PASS: "), r.out.constData());
    if (code == 1) QVERIFY2(r.out.contains("FAIL: "), r.out.constData());
    if (code == 2) QVERIFY2(r.err.contains("is [48, 64] but D = A·B is [64, 48]"), r.err.constData());
  }

  // --json: the verdict, the counts and the fit as one object; the wrong block scale lies in row 5.
  void jsonVerdict() {
    const CliResult r = cli(gemm({QStringLiteral("--observed"), q(f_.wrong_scale), QStringLiteral("--max-ulp"),
                                  QStringLiteral("1"), QStringLiteral("--fit-bits"), QStringLiteral("13..15"),
                                  QStringLiteral("--fit-groups"), QStringLiteral("32"), QStringLiteral("--json")}));
    QCOMPARE(r.code, 1);
    QJsonParseError pe;
    const QJsonDocument d = QJsonDocument::fromJson(r.out, &pe);
    QVERIFY2(pe.error == QJsonParseError::NoError, r.out.constData());
    const QJsonObject c = d.object()[QStringLiteral("check")].toObject();
    QCOMPARE(c[QStringLiteral("passed")].toBool(true), false);
    const QJsonObject cmp = c[QStringLiteral("comparison")].toObject();
    QCOMPARE(cmp[QStringLiteral("differing_rows")].toDouble(), 1.0);
    QCOMPARE(cmp[QStringLiteral("first")].toArray()[0].toDouble(), 5.0);
    const QJsonObject fit = c[QStringLiteral("fit")].toObject();
    QVERIFY(!fit[QStringLiteral("warning")].toString().isEmpty()); // no model explains a wrong scale
    QVERIFY(fit[QStringLiteral("models")].toArray().size() >= 7);
  }

  void flagRefusals_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("want");
    QTest::newRow("check flag without --observed")
        << QStringList{QStringLiteral("--max-ulp"), QStringLiteral("1")}
        << QStringLiteral("--max-ulp checks a kernel's output: add --observed");
    QTest::newRow("codes without scales") << QStringList{QStringLiteral("gemm"), QStringLiteral("--a-codes"), q(f_.a)}
                                          << QStringLiteral("--a-codes needs --a-scales");
    QTest::newRow("m beside codes")
        << QStringList{QStringLiteral("gemm"),       QStringLiteral("--a-codes"), q(f_.a),
                       QStringLiteral("--a-scales"), QStringLiteral("1"),         QStringLiteral("--m"),
                       QStringLiteral("64")}
        << QStringLiteral("--m comes from the shape of --a-codes");
    QTest::newRow("layout of a block the layout does not hold")
        << QStringList{QStringLiteral("gemm"),
                       QStringLiteral("--a-codes"),
                       q(f_.a),
                       QStringLiteral("--a-scales"),
                       q(f_.sa),
                       QStringLiteral("--a-block"),
                       QStringLiteral("1x128"),
                       QStringLiteral("--a-scale-layout"),
                       QStringLiteral("blk128x128")}
        << QStringLiteral("--a-block: is [1, 128] but cublaslt_blk128x128 holds scales of [128, 128] blocks");
  }
  void flagRefusals() {
    QFETCH(QStringList, args);
    QFETCH(QString, want);
    if (args.first() != QStringLiteral("gemm")) args = gemm(args);
    const CliResult r = cli(args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(want.toUtf8()), r.err.constData());
  }

  // `run --json` of a config with two experiments prints one JSON document: an array of two.
  void runJsonIsOneDocument() {
    const QString cfg = tmp_.filePath(QStringLiteral("two.json"));
    QFile f(cfg);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"experiments\": [{\"type\": \"gemm\", \"name\": \"one\", \"m\": 8, \"k\": 32, \"n\": 8},\n"
            " {\"type\": \"gemm\", \"name\": \"two\", \"m\": 8, \"k\": 32, \"n\": 8, \"seed\": 2}]}");
    f.close();
    const CliResult r =
        cli({QStringLiteral("run"), cfg, QStringLiteral("--out"), tmp_.filePath(QStringLiteral("two.h5")),
             QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(r.code == 0, r.err.constData());
    QJsonParseError pe;
    const QJsonDocument d = QJsonDocument::fromJson(r.out, &pe);
    QVERIFY2(pe.error == QJsonParseError::NoError && d.isArray(), r.out.constData());
    QCOMPARE(d.array().size(), 2);
    QCOMPARE(d.array()[1].toObject()[QStringLiteral("run")].toString(), QStringLiteral("two"));
    QVERIFY(d.array()[0].toObject()[QStringLiteral("warnings")].isArray());
  }

  // The worked examples of docs/gemm.md ("Scale layouts"): the byte of NVFP4 scale (130, 5) of a
  // [256, 8] grid in cuBLASLt's swizzled layout is 1569 (tile 3, row 2 of its first 32, column 1:
  // 3·512 + 2·16 + 0·4 + 1); VEC128 (2, 1) of a [3, 2] grid is 1·3 + 2 = 5.
  void scaleLayoutIndex() {
    CliResult r =
        cli({QStringLiteral("scale-layout"), QStringLiteral("index"), QStringLiteral("--layout"),
             QStringLiteral("vec16_ue4m3"), QStringLiteral("--outer"), QStringLiteral("256"),
             QStringLiteral("--k-blocks"), QStringLiteral("8"), QStringLiteral("--at"), QStringLiteral("130,5")});
    QVERIFY2(r.code == 0 && r.out.contains("(130, 5) -> byte 1569"), (r.out + r.err).constData());
    r = cli({QStringLiteral("scale-layout"), QStringLiteral("index"), QStringLiteral("--layout"),
             QStringLiteral("vec128"), QStringLiteral("--outer"), QStringLiteral("3"), QStringLiteral("--k-blocks"),
             QStringLiteral("2"), QStringLiteral("--at"), QStringLiteral("2,1")});
    QVERIFY2(r.code == 0 && r.out.contains("(2, 1) -> element 5"), (r.out + r.err).constData());
    // The same example as JSON: storage of a VEC128 [3, 2] grid is its 6 float32 scales.
    r = cli({QStringLiteral("scale-layout"), QStringLiteral("index"), QStringLiteral("--layout"),
             QStringLiteral("vec128"), QStringLiteral("--outer"), QStringLiteral("3"), QStringLiteral("--k-blocks"),
             QStringLiteral("2"), QStringLiteral("--at"), QStringLiteral("2,1"), QStringLiteral("--json")});
    QVERIFY2(r.code == 0, (r.out + r.err).constData());
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(o[QStringLiteral("layout")].toString(), QStringLiteral("cublaslt_vec128"));
    QCOMPARE(o[QStringLiteral("storage_elements")].toInt(), 6);
    QCOMPARE(o[QStringLiteral("unit")].toString(), QStringLiteral("element"));
    const QJsonObject at = o[QStringLiteral("scales")].toArray().at(0).toObject();
    QCOMPARE(at[QStringLiteral("outer")].toInt(), 2);
    QCOMPARE(at[QStringLiteral("k_block")].toInt(), 1);
    QCOMPARE(at[QStringLiteral("offset")].toInt(), 5);
  }

  // Without --at the whole grid is listed, beyond 4096 scales too (streamed): a [256, 512] NVFP4
  // grid (K = 8192) has 131072 lines plus the header, and its last scale (255, 511) sits at the
  // last byte of the swizzled storage: tile (1, 127) of 128 × 4 → (1·128 + 127)·512 + row 127 → (127
  // mod 32)·16 + (127 / 32)·4 + 3 = 130560 + 496 + 12 + 3 = 131071.
  void scaleLayoutIndexOfAWholeLargeGrid() {
    const QStringList args{QStringLiteral("scale-layout"), QStringLiteral("index"),   QStringLiteral("--layout"),
                           QStringLiteral("vec16_ue4m3"),  QStringLiteral("--outer"), QStringLiteral("256"),
                           QStringLiteral("--k-blocks"),   QStringLiteral("512")};
    CliResult r = cli(args);
    QVERIFY2(r.code == 0, r.err.constData());
    QCOMPARE(r.out.count('\n'), 131073);
    QVERIFY(r.out.endsWith("  (255, 511) -> byte 131071\n"));
    r = cli(args + QStringList{QStringLiteral("--json")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(o[QStringLiteral("storage_elements")].toInt(), 131072);
    QCOMPARE(o[QStringLiteral("scales")].toArray().size(), 131072);
    QCOMPARE(o[QStringLiteral("scales")].toArray().at(131071).toObject()[QStringLiteral("offset")].toInt(), 131071);
  }

  // --reference fast with the fast model's flags pins the reference to those parameters (the run's
  // own model, split, does not read them); beside a reference preset they must agree with it.
  // The report's labels: pre-quantized operands say so, the CPU line names its level.
  void referenceFlagsPinTheReference() {
    CliResult r =
        cli(gemm({QStringLiteral("--observed"), q(f_.good), QStringLiteral("--reference"), QStringLiteral("fast"),
                  QStringLiteral("--fast-bits"), QStringLiteral("13"), QStringLiteral("--no-promotion")}));
    QVERIFY2(r.code == 0 || r.code == 1, r.err.constData());
    QVERIFY2(r.out.contains("against fast, 13 bits, group 32, no promotion"), r.out.constData());
    QVERIFY2(r.out.contains("A E4M3FN (pre-quantized, scales from file, block 1x128)"), r.out.constData());
    QVERIFY2(r.out.contains("(avx512") || r.out.contains("(avx2") || r.out.contains("(baseline"), r.out.constData());
    r = cli(gemm({QStringLiteral("--observed"), q(f_.good), QStringLiteral("--reference"), QStringLiteral("hopper_fp8"),
                  QStringLiteral("--fast-bits"), QStringLiteral("13")}));
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--reference hopper_fp8: --fast-bits 13 differs from accumulation preset hopper_fp8's 14"),
             r.err.constData());
  }

  // pack then unpack through files gives the row-major grid back bit for bit.
  void scaleLayoutPackUnpack() {
    std::string grid;
    for (int i = 0; i < 200 * 5; ++i) grid += char(100 + i % 50);
    const std::string g = tmp_.filePath(QStringLiteral("grid.npy")).toStdString();
    fp8lab::test::writeTestNpy(g, "|u1", "(200, 5)", grid);
    const QString sw = tmp_.filePath(QStringLiteral("sw.npy")), back = tmp_.filePath(QStringLiteral("back.npy"));
    const QStringList common{QStringLiteral("--layout"), QStringLiteral("vec32_ue8m0"), QStringLiteral("--outer"),
                             QStringLiteral("200"),      QStringLiteral("--k-blocks"),  QStringLiteral("5")};
    QCOMPARE(
        cli(QStringList{QStringLiteral("scale-layout"), QStringLiteral("pack")} + common + QStringList{q(g), sw}).code,
        0);
    QCOMPARE(cli(QStringList{QStringLiteral("scale-layout"), QStringLiteral("unpack")} + common + QStringList{sw, back})
                 .code,
             0);
    QFile a(q(g)), b(back);
    QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
    QCOMPARE(b.readAll().right(1000), a.readAll().right(1000));
  }
};

QTEST_APPLESS_MAIN(TestKernelCheckCli)
#include "test_kernel_check_cli.moc"

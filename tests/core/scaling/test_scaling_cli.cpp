// Checks the --json contracts of `fp8lab-cli quantize` and `fp8lab-cli scaling simulate` by
// running the built CLI (FP8LAB_BINARY_DIR/app/fp8lab-cli). Expected values are the issue's
// vectors (derivations in test_scaling.cpp / test_delayed_scaling.cpp). The CLI is part of the
// default build; if it is missing the test fails and says so. Scales are float32 values written
// as JSON doubles; QJson round-trips a double exactly, so they are compared bit for bit.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include "compare_bits.h"
#include "formats/format.h"
#include "oracle.h"
#include "recipe_vectors.h"

#include <bit>

class TestScalingCli : public QObject {
  Q_OBJECT

private:
  struct Result {
    int code = -1;
    QByteArray out, err;
  };
  static QString cli() { return QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli"); }
  static Result run(const QStringList& args) {
    QProcess p;
    p.start(cli(), args);
    Result r;
    if (!p.waitForFinished(30000)) return r;
    r.code = p.exitCode();
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
  }
  static QJsonDocument json(const QStringList& args) {
    const Result r = run(args);
    if (r.code != 0)
      qWarning("fp8lab-cli %s: exit %d: %s", qPrintable(args.join(QLatin1Char(' '))), r.code, r.err.constData());
    QJsonParseError e{};
    const QJsonDocument d = QJsonDocument::fromJson(r.out, &e);
    if (e.error != QJsonParseError::NoError) qWarning("not JSON: %s", r.out.constData());
    return d;
  }
  static QStringList strings(const QJsonValue& v) {
    QStringList l;
    for (const auto& x : v.toArray()) l << x.toString();
    return l;
  }

private Q_SLOTS:
  void initTestCase() {
    QVERIFY2(QFileInfo::exists(cli()), qPrintable(QStringLiteral("build fp8lab-cli first: %1 not found").arg(cli())));
  }

  // Per-tensor current scaling of [0.001, 0.005, 0.008, 0.010] to E4M3FN: s = 44800, codes
  // 0x63 0x76 0x7b 0x7e (hand derivation in test_scaling.cpp).
  void quantizeJsonContract() {
    const QJsonObject o = json({QStringLiteral("quantize"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
                                QStringLiteral("--scaling"), QStringLiteral("te_current"), QStringLiteral("--values"),
                                QStringLiteral("0.001,0.005,0.008,0.010"), QStringLiteral("--json")})
                              .object();
    QCOMPARE(strings(o[QStringLiteral("codes")]), (QStringList{QStringLiteral("0x63"), QStringLiteral("0x76"),
                                                               QStringLiteral("0x7b"), QStringLiteral("0x7e")}));
    QCOMPARE_BITS(o[QStringLiteral("quant_scales")].toArray().at(0).toDouble(), 44800.0);
    QCOMPARE_BITS(o[QStringLiteral("dequant_scales")].toArray().at(0).toDouble(), double(1.0f / 44800.0f));
    QCOMPARE(o[QStringLiteral("saturated")].toInt(), 0);
    QCOMPARE(o[QStringLiteral("underflow")].toInt(), 0);
    QVERIFY(!o.contains(QStringLiteral("scale_codes")));
  }

  // MX block of 32 × 480: FLOOR byte 0x7f, codes 0x7e, 32 saturated; RCEIL 0x80, codes 0x77.
  void quantizeMxJson() {
    QStringList v;
    for (int i = 0; i < 32; ++i) v << QStringLiteral("480");
    const QJsonObject f = json({QStringLiteral("quantize"), QStringLiteral("-f"), QStringLiteral("E4M3FN"),
                                QStringLiteral("-s"), QStringLiteral("mx_floor"), QStringLiteral("--values"),
                                v.join(QLatin1Char(',')), QStringLiteral("--json")})
                              .object();
    QCOMPARE(strings(f[QStringLiteral("scale_codes")]), QStringList{QStringLiteral("0x7f")});
    QCOMPARE(strings(f[QStringLiteral("codes")]), QStringList(32, QStringLiteral("0x7e")));
    QCOMPARE(f[QStringLiteral("saturated")].toInt(), 32);
    const QJsonObject r = json({QStringLiteral("quantize"), QStringLiteral("-f"), QStringLiteral("E4M3FN"),
                                QStringLiteral("-s"), QStringLiteral("mx_rceil"), QStringLiteral("--values"),
                                v.join(QLatin1Char(',')), QStringLiteral("--json")})
                              .object();
    QCOMPARE(strings(r[QStringLiteral("scale_codes")]), QStringList{QStringLiteral("0x80")});
    QCOMPARE(strings(r[QStringLiteral("codes")]), QStringList(32, QStringLiteral("0x77")));
    QCOMPARE_BITS(r[QStringLiteral("dequant_scales")].toArray().at(0).toDouble(), 2.0);
    QCOMPARE(r[QStringLiteral("saturated")].toInt(), 0);
  }

  // torchao EVEN through the table: 32 × 7.0 in E2M1 (mbits 1, emax 2): 7 = 1.75·2^2 carries to 8
  // → e = 3 − 2 = 1 → 0x80; 7 / 2 = 3.5 ties 3 / 4 → RNE 4 = 0x6 (derivation in
  // test_recipes_mx.cpp). FLOOR would give 0x7f and 0x7 (saturated).
  void quantizeMxEvenJson() {
    QStringList v;
    for (int i = 0; i < 32; ++i) v << QStringLiteral("7");
    const QJsonObject e = json({QStringLiteral("quantize"), QStringLiteral("--format"), QStringLiteral("E2M1"),
                                QStringLiteral("--scaling"), QStringLiteral("mx_even"), QStringLiteral("--values"),
                                v.join(QLatin1Char(',')), QStringLiteral("--json")})
                              .object();
    QCOMPARE(strings(e[QStringLiteral("scale_codes")]), QStringList{QStringLiteral("0x80")});
    QCOMPARE(strings(e[QStringLiteral("codes")]), QStringList(32, QStringLiteral("0x6")));
    QCOMPARE(e[QStringLiteral("saturated")].toInt(), 0);
  }

  // NVFP4 through the CLI: every 1×16 row of the recipe vectors for TE's kernels and torchao's
  // NVFP4Tensor (dynamic per-tensor scale) gives the CSV's E2M1 codes, E4M3 block scale codes and
  // fp32 tensor scale (TE: S_enc; torchao: per_tensor_scale).
  void quantizeNvfp4JsonMatchesTheRecipeVectors() {
    int checked = 0;
    for (const auto& v : fp8lab::test::recipeVectors("A")) {
      const bool te = v.variant == "te_nvfp4_1x16", ao = v.variant == "torchao_nvfp4_quantize";
      if (!te && !ao) continue;
      QStringList vals;
      for (float x : v.input) vals << QString::number(double(x), 'g', 17);
      const QJsonObject o = json({QStringLiteral("quantize"), QStringLiteral("-s"),
                                  te ? QStringLiteral("nvfp4_te") : QStringLiteral("nvfp4_torchao"),
                                  QStringLiteral("--values"), vals.join(QLatin1Char(',')), QStringLiteral("--json")})
                                .object();
      const QString what = QString::fromStdString(v.variant + "/" + v.name);
      QStringList codes, scales;
      for (uint32_t c : v.element_codes) codes << QStringLiteral("0x%1").arg(c, 0, 16);
      for (uint32_t c : v.scale_codes) scales << QStringLiteral("0x%1").arg(c, 2, 16, QLatin1Char('0'));
      QVERIFY2(strings(o[QStringLiteral("codes")]) == codes, qPrintable(what));
      QVERIFY2(strings(o[QStringLiteral("scale_codes")]) == scales, qPrintable(what));
      QCOMPARE(o[QStringLiteral("scale_format")].toString(), QStringLiteral("E4M3FN"));
      const QJsonObject ts = o[QStringLiteral("tensor_scale")].toObject();
      QVERIFY2(v.tensor_scale_bits.has_value(), qPrintable(what));
      QCOMPARE(ts[QStringLiteral("value_f32_hex")].toString(), QString::asprintf("0x%08X", *v.tensor_scale_bits));
      QCOMPARE(ts[QStringLiteral("kind")].toString(),
               te ? QStringLiteral("te_amax") : QStringLiteral("torchao_per_tensor_scale"));
      // The documented contract x ≈ decode(code) · dequant_scale holds with the two-level factor:
      // every dequantized value is its E2M1 value times its block's dequant_scale (the exact
      // product, as for every preset), and block_scales are the E4M3 values of scale_codes.
      static const double e2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
      const QJsonArray dq = o[QStringLiteral("dequant_scales")].toArray(),
                       bs = o[QStringLiteral("block_scales")].toArray();
      const QJsonArray deq = o[QStringLiteral("dequantized")].toArray();
      QCOMPARE(bs.size(), qsizetype(v.scale_codes.size()));
      // NaN (torchao's 0x7F for amax 0) is written as the JSON string "nan".
      auto num = [](const QJsonValue& x) {
        return x.isString() && x.toString() == QStringLiteral("nan") ? std::nan("") : x.toDouble();
      };
      for (qsizetype b = 0; b < bs.size(); ++b)
        QVERIFY(fp8lab::test::sameValue(num(bs[b]), fp8lab::Format::E4M3FN().decode(v.scale_codes[size_t(b)])));
      for (qsizetype i = 0; i < deq.size(); ++i) {
        const uint32_t c = v.element_codes[size_t(i)];
        const double e = (c & 8 ? -1 : 1) * e2m1[c & 7];
        const double want = e * num(dq[i / 16]);
        QVERIFY2(num(deq[i]) == want || (std::isnan(num(deq[i])) && std::isnan(want)), qPrintable(what));
      }
      ++checked;
    }
    QVERIFY2(checked >= 9, "the vectors have 5 TE and 4 torchao 1x16 rows"); // more in a longer file
    // NVFP4 fixes its element format and rounding: other choices are refused with the reason.
    const Result r =
        run({QStringLiteral("quantize"), QStringLiteral("-s"), QStringLiteral("nvfp4_te"), QStringLiteral("-f"),
             QStringLiteral("E4M3FN"), QStringLiteral("--values"), QStringLiteral("1")});
    QVERIFY(r.code != 0);
    QVERIFY2(r.err.contains("E2M1"), r.err.constData());
    const Result b =
        run({QStringLiteral("quantize"), QStringLiteral("-s"), QStringLiteral("nvfp4_te"), QStringLiteral("--block"),
             QStringLiteral("32"), QStringLiteral("--values"), QStringLiteral("1")});
    QVERIFY(b.code != 0);
    QVERIFY2(b.err.contains("1x16 blocks"), b.err.constData());
  }

  // nvfp4_te_rht lists the rotated tensor the codes encode beside the input. x = 1..16 and sign
  // mask 0xD7E8 (s_i = −1 at i = 3, 5, 6, 7, 8, 9, 10, 12, 14, 15): y_0 = Σ s_i·x_i·H[i][0] / 4 =
  // ((1 + 2 + 3 + 5 + 12 + 14) − (4 + 6 + 7 + 8 + 9 + 10 + 11 + 13 + 15 + 16)) / 4 = (37 − 99) / 4 =
  // −15.5 (every sum exact in BF16).
  void hadamardPresetListsTheRotatedTensor() {
    QStringList values;
    for (int i = 1; i <= 16; ++i) values << QString::number(i);
    const QStringList args{QStringLiteral("quantize"), QStringLiteral("-s"), QStringLiteral("nvfp4_te_rht"),
                           QStringLiteral("--values"), values.join(QLatin1Char(','))};
    const Result r = run(args);
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains("index      input          rotated        code   dequantized"), r.out.constData());
    QVERIFY2(r.out.contains("[0,0]      1              -15.5          0xf"), r.out.constData());
    const QJsonDocument d = json(args + QStringList{QStringLiteral("--json")});
    QCOMPARE(d[QStringLiteral("rotated")].toArray().size(), qsizetype(16));
    QCOMPARE(d[QStringLiteral("rotated")].toArray().first().toDouble(), -15.5);
    QVERIFY(json({QStringLiteral("quantize"), QStringLiteral("-s"), QStringLiteral("nvfp4_te"),
                  QStringLiteral("--values"), values.join(QLatin1Char(',')), QStringLiteral("--json")})
                .object()
                .value(QStringLiteral("rotated"))
                .isUndefined());
  }

  // `scaling presets` lists the NVFP4 presets too (those of core/scaling/nvfp4.h, which `quantize`
  // and `gemm --scaling` accept), after the FP8 / MX ones, in text and JSON.
  void presetsListTheNvfp4Presets() {
    const QStringList nvfp4{QStringLiteral("nvfp4_te"),
                            QStringLiteral("nvfp4_te_2d"),
                            QStringLiteral("nvfp4_te_4over6"),
                            QStringLiteral("nvfp4_te_4over6_mse"),
                            QStringLiteral("nvfp4_te_4over6_448"),
                            QStringLiteral("nvfp4_te_rht"),
                            QStringLiteral("nvfp4_te_sr"),
                            QStringLiteral("nvfp4_te_rht_sr"),
                            QStringLiteral("nvfp4_torchao"),
                            QStringLiteral("nvfp4_torchao_single_level"),
                            QStringLiteral("nvfp4_cudnn_doc")};
    const Result r = run({QStringLiteral("scaling"), QStringLiteral("presets")});
    QCOMPARE(r.code, 0);
    const QString text = QString::fromUtf8(r.out);
    const qsizetype header = text.indexOf(QStringLiteral("\nNVFP4 presets: E2M1 elements"));
    QVERIFY2(header > text.indexOf(QStringLiteral("\nmx_rceil ")), r.out.constData());
    for (const QString& n : nvfp4)
      QVERIFY2(text.indexOf(QStringLiteral("\n") + n + QLatin1Char(' ')) > header, qPrintable(n));
    QStringList listed;
    int fp8 = 0;
    for (const auto& v :
         json({QStringLiteral("scaling"), QStringLiteral("presets"), QStringLiteral("--json")}).array()) {
      const QJsonObject o = v.toObject();
      if (o[QStringLiteral("nvfp4")].toBool())
        listed << o[QStringLiteral("name")].toString();
      else
        ++fp8;
      QVERIFY(!o[QStringLiteral("source")].toString().isEmpty());
    }
    QCOMPARE(listed, nvfp4);
    QVERIFY(fp8 >= 24); // te_current … te_jax_delayed (core/scaling/scaling.h)
  }

  // Flax test_fp8_meta_dtype through the CLI: history (oldest first) [0,0,2], [0,2,3], [2,3,4];
  // scale 1, float32(2/448), float32(3/448); kept_previous only at step 0.
  void simulateFlaxJson() {
    const QJsonArray a = json({QStringLiteral("scaling"), QStringLiteral("simulate"), QStringLiteral("--preset"),
                               QStringLiteral("flax"), QStringLiteral("--history-len"), QStringLiteral("3"),
                               QStringLiteral("--amax"), QStringLiteral("2,3,4"), QStringLiteral("--json")})
                             .array();
    QCOMPARE(a.size(), 3);
    const double scales[3] = {1.0, double(0.004464285913854837f), double(0.0066964286379516125f)};
    const QList<QList<double>> hist = {{0, 0, 2}, {0, 2, 3}, {2, 3, 4}};
    for (int i = 0; i < 3; ++i) {
      const QJsonObject o = a[i].toObject();
      QCOMPARE(o[QStringLiteral("step")].toInt(), i);
      QCOMPARE_BITS(o[QStringLiteral("amax")].toDouble(), double(i + 2));
      QCOMPARE_BITS(o[QStringLiteral("scale")].toDouble(), scales[i]);
      QCOMPARE_BITS(o[QStringLiteral("dequant_scale")].toDouble(), scales[i]);
      QList<double> h;
      for (const auto& x : o[QStringLiteral("history")].toArray()) h << x.toDouble();
      QCOMPARE(h, hist[i]);
      QCOMPARE(o[QStringLiteral("kept_previous")].toBool(), i == 0);
    }
  }

  // TE: amax 2 → 224; 0 → kept (no roll); inf → kept, "inf" as a string.
  void simulateTeJson() {
    const QJsonArray a = json({QStringLiteral("scaling"), QStringLiteral("simulate"), QStringLiteral("--preset"),
                               QStringLiteral("te"), QStringLiteral("--history-len"), QStringLiteral("4"),
                               QStringLiteral("--amax"), QStringLiteral("2,0,inf"), QStringLiteral("--json")})
                             .array();
    QCOMPARE(a.size(), 3);
    QCOMPARE_BITS(a[0].toObject()[QStringLiteral("scale")].toDouble(), 224.0);
    QCOMPARE_BITS(a[0].toObject()[QStringLiteral("quant_scale")].toDouble(), 224.0);
    QCOMPARE_BITS(a[0].toObject()[QStringLiteral("dequant_scale")].toDouble(), double(1.0f / 224.0f));
    QCOMPARE(a[1].toObject()[QStringLiteral("kept_previous")].toBool(), true);
    QCOMPARE_BITS(a[1].toObject()[QStringLiteral("scale")].toDouble(), 224.0);
    QCOMPARE(a[2].toObject()[QStringLiteral("amax")].toString(), QStringLiteral("inf"));
    QCOMPARE(a[2].toObject()[QStringLiteral("kept_previous")].toBool(), true);
    QList<double> h;
    for (const auto& x : a[1].toObject()[QStringLiteral("history")].toArray()) h << x.toDouble();
    QCOMPARE(h, (QList<double>{0, 0, 2, 0})); // last = cleared staging slot
  }

  void badInputIsAClearError() {
    Result r = run({QStringLiteral("quantize"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
                    QStringLiteral("--values"), QStringLiteral("1,x")});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("not a number"));
    r = run({QStringLiteral("quantize"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
             QStringLiteral("--scaling"), QStringLiteral("bogus"), QStringLiteral("--values"), QStringLiteral("1")});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("unknown --scaling"));
    r = run({QStringLiteral("scaling"), QStringLiteral("simulate"), QStringLiteral("--preset"), QStringLiteral("flax"),
             QStringLiteral("--algo"), QStringLiteral("most_recent"), QStringLiteral("--amax"), QStringLiteral("1")});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("only --algo max"));
  }
};

QTEST_APPLESS_MAIN(TestScalingCli)
#include "test_scaling_cli.moc"

// `fp8lab-cli gemm` is a front end of the one GEMM error experiment: its flags and the equivalent
// `run` config give the same run (every dataset and metric bit for bit, compareRuns), --out saves
// it with the config that reproduces it, and `rerun` reproduces it. Runs the built fp8lab-cli.
#include <QtTest>

#include "experiment/gemm/gemm_run.h"
#include "session/session.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <cstring>
#include <fstream>
#include <limits>

using namespace fp8lab;

namespace {

int cli(const QStringList& args, QByteArray* err = nullptr) {
  QProcess p;
  p.start(QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli"), args);
  if (!p.waitForFinished(120000)) return -1;
  if (err) *err = p.readAllStandardError();
  return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
}

/// stdout of the built fp8lab-cli; exit code in *code.
QByteArray cliOut(const QStringList& args, int* code, QByteArray* err) {
  QProcess p;
  p.start(QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli"), args);
  if (!p.waitForFinished(120000)) {
    *code = -1;
    return {};
  }
  *err = p.readAllStandardError();
  *code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  return p.readAllStandardOutput();
}

/// A float32 .npy v1.0 file of `shape` ("(1, 64)"): magic, version, header padded to 64 bytes, data.
void writeNpy(const QString& path, const std::string& shape, const std::vector<float>& v) {
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string data(v.size() * 4, '\0');
  std::memcpy(data.data(), v.data(), data.size()); // little-endian host
  std::ofstream(path.toStdString(), std::ios::binary)
      << std::string("\x93NUMPY\x01\x00", 8) + char(h.size() & 0xFF) + char(h.size() >> 8) + h + data;
}

Run readOnly(const QString& file) {
  auto rd = SessionReader::open(file.toStdString());
  if (!rd.ok()) qFatal("%s", rd.errors().c_str());
  const auto runs = rd.value->info().runs;
  if (runs.size() != 1) qFatal("%s: %d runs", qPrintable(file), int(runs.size()));
  auto r = rd.value->readRun(runs.front().id);
  if (!r.ok()) qFatal("%s", r.errors().c_str());
  return std::move(r.value);
}

} // namespace

class TestGemmCli : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // Different presets for A and B, an FP8 output with the automatic scale_D, the fast
  // accumulation model and log-normal operands: every option the flags have that the config
  // spells differently.
  void gemmFlagsAndTheEquivalentConfigGiveTheSameRun() {
    QTemporaryDir dir;
    const QString a = dir.filePath(QStringLiteral("flags.h5")), b = dir.filePath(QStringLiteral("config.h5"));
    QByteArray err;
    QCOMPARE(cli({QStringLiteral("gemm"),
                  QStringLiteral("--m"),
                  QStringLiteral("40"),
                  QStringLiteral("--n"),
                  QStringLiteral("24"),
                  QStringLiteral("--k"),
                  QStringLiteral("300"),
                  QStringLiteral("--seed"),
                  QStringLiteral("11"),
                  QStringLiteral("--a-scaling"),
                  QStringLiteral("te_current"),
                  QStringLiteral("--b-scaling"),
                  QStringLiteral("torchao_rowwise"),
                  QStringLiteral("--output"),
                  QStringLiteral("e4m3fn"),
                  QStringLiteral("--accumulation"),
                  QStringLiteral("fast"),
                  QStringLiteral("--distribution"),
                  QStringLiteral("lognormal"),
                  QStringLiteral("--scale"),
                  QStringLiteral("0.5"),
                  QStringLiteral("--backend"),
                  QStringLiteral("cpu"),
                  QStringLiteral("--out"),
                  a},
                 &err),
             0);
    QVERIFY2(err.contains("saved as run gemm-E4M3FN-te_current-lognormal in"), err.constData());
    QFile cfg(dir.filePath(QStringLiteral("c.json")));
    QVERIFY(cfg.open(QIODevice::WriteOnly));
    cfg.write(R"({"type": "gemm", "m": 40, "n": 24, "k": 300, "seed": 11, "scaling": "te_current",
                  "scaling_b": "torchao_rowwise", "output": "e4m3fn", "output_quant_scale": "auto",
                  "accumulation": "fast_accum",
                  "a": {"distribution": "lognormal", "scale": 0.5}, "b": {"distribution": "lognormal", "scale": 0.5}})");
    cfg.close();
    QCOMPARE(cli({QStringLiteral("run"), cfg.fileName(), QStringLiteral("--backend"), QStringLiteral("cpu"),
                  QStringLiteral("--out"), b},
                 &err),
             0);
    const Run ra = readOnly(a), rb = readOnly(b);
    int nd = 0, nm = 0;
    const auto diffs = compareRuns(ra, rb, &nd, &nm);
    QVERIFY2(diffs.empty(), diffs.empty() ? "" : diffs.front().c_str());
    QVERIFY(nd >= 15);
    QVERIFY(nm >= 20);
    QCOMPARE(QString::fromStdString(attrString(ra.attrs, "scaling_b").value_or("")), QStringLiteral("torchao_rowwise"));
    // The saved flags run re-runs from its stored config.
    QCOMPARE(cli({QStringLiteral("rerun"), a, QStringLiteral("gemm-E4M3FN-te_current-lognormal")}, &err), 0);
  }

  // An NVFP4 run (stochastic rounding, so the seed matters) saved by `gemm --out` re-runs bit for
  // bit with `rerun` (which exits non-zero on any difference); the formats default to E2M1 and a
  // different one beside an NVFP4 preset is refused naming the flag.
  void nvfp4GemmRerunsBitForBit() {
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("nvfp4.h5"));
    QByteArray err;
    QCOMPARE(cli({QStringLiteral("gemm"), QStringLiteral("--m"), QStringLiteral("32"), QStringLiteral("--n"),
                  QStringLiteral("16"), QStringLiteral("--k"), QStringLiteral("64"), QStringLiteral("--scaling"),
                  QStringLiteral("nvfp4_te_sr"), QStringLiteral("--out"), f},
                 &err),
             0);
    const Run run = readOnly(f);
    QCOMPARE(run.id, std::string("gemm-E2M1-nvfp4_te_sr-normal"));
    QCOMPARE(attrString(run.find("quantized/A_scale_codes")->attrs, "format").value_or(""), std::string("E4M3FN"));
    QCOMPARE(cli({QStringLiteral("rerun"), f, QStringLiteral("gemm-E2M1-nvfp4_te_sr-normal")}, &err), 0);
    QCOMPARE(cli({QStringLiteral("gemm"), QStringLiteral("--k"), QStringLiteral("64"), QStringLiteral("--scaling"),
                  QStringLiteral("nvfp4_te"), QStringLiteral("--a-format"), QStringLiteral("E4M3FN")},
                 &err),
             2);
    QVERIFY2(err.contains("--a-format: is 'E4M3FN' beside the NVFP4 preset 'nvfp4_te'"), err.constData());
  }

  // `gemm --json` reports each operand's scales, on operands imported from .npy so that every
  // code is derived by hand. A [1, 64] = sixteen 6, sixteen 0.75, sixteen 2^-13, sixteen 0;
  // B [64, 1] = sixty-four 1.
  //   nvfp4_te (1x16 blocks along K, E4M3FN scales): A's tensor amax 6, S_enc = f32(2688/6) = 448;
  //   block scale = RNE_E4M3(amax_b · f32(448 · f32(1/6))) with f32(448 · f32(1/6)) = 74.666672:
  //   6 → 448.00003 → 448 = 0x7E (0 1111 110); 0.75 → 56.000004 → 56 = 0x66 (0 1100 110);
  //   2^-13 → 0.0091146 = 4.667 · 2^-9 → subnormal 5 · 2^-9 = 0x05; 0 → zero, 0x00. So min 0x00,
  //   max 0x7E, one zero, one subnormal, no NaN. B: amax 1, S_enc = 2688, four blocks of amax 1
  //   → 0x7E each.
  //   mx_floor on E2M1 elements (1x32 blocks, E8M0FNU): code = floor(log2 amax_b) − emax(E2M1) + 127 = ⌊log2⌋ + 125:
  //   A's blocks amax 6 → 127 = 0x7F, amax 2^-13 → 112 = 0x70; B's two blocks amax 1 → 125 = 0x7D.
  //   E8M0 has no zero or subnormal; no NaN. No tensor scale.
  void gemmJsonReportsTheOperandScales() {
    QTemporaryDir dir;
    std::vector<float> a;
    for (float v : {6.0f, 0.75f, 0x1p-13f, 0.0f}) a.insert(a.end(), 16, v);
    const QString fa = dir.filePath(QStringLiteral("a.npy")), fb = dir.filePath(QStringLiteral("b.npy"));
    writeNpy(fa, "(1, 64)", a);
    writeNpy(fb, "(64, 1)", std::vector<float>(64, 1.0f));
    auto gemm = [&](const char* scaling, const QStringList& more = {}) {
      int code = 0;
      QByteArray err;
      const QByteArray out =
          cliOut(QStringList{QStringLiteral("gemm"), QStringLiteral("--scaling"), QString::fromLatin1(scaling),
                             QStringLiteral("--a-tensor"), fa, QStringLiteral("--b-tensor"), fb,
                             QStringLiteral("--backend"), QStringLiteral("cpu"), QStringLiteral("--json")} +
                     more,
                 &code, &err);
      if (code != 0) qWarning("%s", err.constData());
      return code == 0 ? QJsonDocument::fromJson(out).object() : QJsonObject();
    };
    const QJsonObject te = gemm("nvfp4_te");
    QVERIFY(!te.isEmpty());
    // "config" is the canonical config (the tensor operands fix m, k, n: "shape" has them).
    const QJsonObject cfg = te[QStringLiteral("config")].toObject();
    const QJsonObject shape = te[QStringLiteral("shape")].toObject();
    QCOMPARE(shape[QStringLiteral("m")].toInt(), 1);
    QCOMPARE(shape[QStringLiteral("k")].toInt(), 64);
    QCOMPARE(shape[QStringLiteral("n")].toInt(), 1);
    QCOMPARE(cfg[QStringLiteral("a")].toObject()[QStringLiteral("tensor")].toString(), fa);
    const QJsonObject A = te[QStringLiteral("operands")].toObject()[QStringLiteral("A")].toObject();
    QCOMPARE(A[QStringLiteral("elements")].toInt(), 64); // the existing keys stay
    QCOMPARE(A[QStringLiteral("scale_format")].toString(), QStringLiteral("E4M3FN"));
    const QJsonObject ts = A[QStringLiteral("tensor_scale")].toObject();
    QCOMPARE(ts[QStringLiteral("kind")].toString(), QStringLiteral("te_amax"));
    QCOMPARE(ts[QStringLiteral("amax")].toDouble(), 6.0);
    QCOMPARE(ts[QStringLiteral("value")].toDouble(), 448.0);
    QCOMPARE(ts[QStringLiteral("fp4_fp8_max")].toDouble(), 2688.0);
    const QJsonObject bs = A[QStringLiteral("block_scale_codes")].toObject();
    QCOMPARE(bs[QStringLiteral("format")].toString(), QStringLiteral("E4M3FN"));
    QCOMPARE(bs[QStringLiteral("blocks")].toInt(), 4);
    QCOMPARE(bs[QStringLiteral("block_rows")].toInt(), 1);
    QCOMPARE(bs[QStringLiteral("block_cols")].toInt(), 16);
    QCOMPARE(bs[QStringLiteral("min_code")].toInt(), 0x00);
    QCOMPARE(bs[QStringLiteral("max_code")].toInt(), 0x7E);
    QCOMPARE(bs[QStringLiteral("zero")].toInt(), 1);
    QCOMPARE(bs[QStringLiteral("subnormal")].toInt(), 1);
    QCOMPARE(bs[QStringLiteral("nan")].toInt(), 0);
    const QJsonObject B = te[QStringLiteral("operands")].toObject()[QStringLiteral("B")].toObject();
    QCOMPARE(B[QStringLiteral("tensor_scale")].toObject()[QStringLiteral("amax")].toDouble(), 1.0);
    QCOMPARE(B[QStringLiteral("tensor_scale")].toObject()[QStringLiteral("value")].toDouble(), 2688.0);
    const QJsonObject bb = B[QStringLiteral("block_scale_codes")].toObject();
    QCOMPARE(bb[QStringLiteral("blocks")].toInt(), 4);
    QCOMPARE(bb[QStringLiteral("min_code")].toInt(), 0x7E);
    QCOMPARE(bb[QStringLiteral("max_code")].toInt(), 0x7E);

    const QJsonObject mx = gemm("mx_floor", {QStringLiteral("--a-format"), QStringLiteral("E2M1"),
                                             QStringLiteral("--b-format"), QStringLiteral("E2M1")});
    QVERIFY(!mx.isEmpty());
    const QJsonObject mA = mx[QStringLiteral("operands")].toObject()[QStringLiteral("A")].toObject();
    QCOMPARE(mA[QStringLiteral("scale_format")].toString(), QStringLiteral("E8M0FNU"));
    QVERIFY(!mA.contains(QStringLiteral("tensor_scale")));
    const QJsonObject mbs = mA[QStringLiteral("block_scale_codes")].toObject();
    QCOMPARE(mbs[QStringLiteral("blocks")].toInt(), 2);
    QCOMPARE(mbs[QStringLiteral("block_cols")].toInt(), 32);
    QCOMPARE(mbs[QStringLiteral("min_code")].toInt(), 0x70);
    QCOMPARE(mbs[QStringLiteral("max_code")].toInt(), 0x7F);
    for (const char* k : {"zero", "subnormal", "nan"}) QCOMPARE(mbs[QLatin1String(k)].toInt(), 0);
    const QJsonObject mbb = mx[QStringLiteral("operands")]
                                .toObject()[QStringLiteral("B")]
                                .toObject()[QStringLiteral("block_scale_codes")]
                                .toObject();
    QCOMPARE(mbb[QStringLiteral("min_code")].toInt(), 0x7D);
    QCOMPARE(mbb[QStringLiteral("max_code")].toInt(), 0x7D);

    // A per-tensor preset has float32 scales only: no codes to summarise.
    const QJsonObject pt = gemm("te_current");
    QVERIFY(!pt.isEmpty());
    const QJsonObject pA = pt[QStringLiteral("operands")].toObject()[QStringLiteral("A")].toObject();
    QCOMPARE(pA[QStringLiteral("scale_format")].toString(), QStringLiteral("float32"));
    QVERIFY(!pA.contains(QStringLiteral("block_scale_codes")));
  }

  // An imported A [64, 128] holding one NaN, one +Inf and one −Inf (the rest 0.5) runs in `gemm` as
  // in `run`: the warning "A holds 3 NaN or Inf value(s)" (docs/reliability.md rows 30–31), metrics
  // a_nonfinite = 3 (of A's 64·128 = 8192 elements) and b_nonfinite = 0, and the two commands store
  // the same run. Before, `gemm` refused it as "--scale 1 overflows float32 … 3 of 262144 elements
  // of A … infinite" although no --scale was given, A has 8192 elements and a NaN is not infinite.
  void nanInfTensorRunsWithTheWarningAsInRun() {
    QTemporaryDir dir;
    std::vector<float> a(64 * 128, 0.5f), b(128 * 8, 1.0f);
    a[1 * 128 + 2] = std::numeric_limits<float>::quiet_NaN();
    a[10 * 128 + 20] = std::numeric_limits<float>::infinity();
    a[30 * 128 + 40] = -std::numeric_limits<float>::infinity();
    const QString fa = dir.filePath(QStringLiteral("naninf.npy")), fb = dir.filePath(QStringLiteral("b.npy"));
    writeNpy(fa, "(64, 128)", a);
    writeNpy(fb, "(128, 8)", b);
    const QString g = dir.filePath(QStringLiteral("gemm.h5")), r = dir.filePath(QStringLiteral("run.h5"));
    const QByteArray warning = "A holds 3 NaN or Inf value(s)";
    QByteArray err;
    QCOMPARE(cli({QStringLiteral("gemm"), QStringLiteral("--a-tensor"), fa, QStringLiteral("--b-tensor"), fb,
                  QStringLiteral("--backend"), QStringLiteral("cpu"), QStringLiteral("--id"), QStringLiteral("t"),
                  QStringLiteral("--out"), g},
                 &err),
             0);
    QVERIFY2(err.contains(warning), err.constData());
    QVERIFY2(!err.contains("overflows"), err.constData());
    QFile cfg(dir.filePath(QStringLiteral("c.json")));
    QVERIFY(cfg.open(QIODevice::WriteOnly));
    cfg.write(QStringLiteral(R"({"type": "gemm", "a": {"tensor": "%1"}, "b": {"tensor": "%2"}})").arg(fa, fb).toUtf8());
    cfg.close();
    QCOMPARE(cli({QStringLiteral("run"), cfg.fileName(), QStringLiteral("--backend"), QStringLiteral("cpu"),
                  QStringLiteral("--id"), QStringLiteral("t"), QStringLiteral("--out"), r},
                 &err),
             0);
    QVERIFY2(err.contains(warning), err.constData());
    const Run rg = readOnly(g), rr = readOnly(r);
    for (const Run* x : {&rg, &rr}) {
      QCOMPARE(x->metrics.at("a_nonfinite").value, 3.0);
      QCOMPARE(x->metrics.at("b_nonfinite").value, 0.0);
      QCOMPARE(x->find("inputs/A")->shape, std::vector<int64_t>({64, 128}));
    }
    const auto diffs = compareRuns(rg, rr);
    QVERIFY2(diffs.empty(), diffs.empty() ? "" : diffs.front().c_str());
  }

  // Without --out nothing is written; a bad --out is refused before computing.
  void outIsCheckedFirst() {
    QTemporaryDir dir;
    QByteArray err;
    QCOMPARE(cli({QStringLiteral("gemm"), QStringLiteral("--m"), QStringLiteral("8"), QStringLiteral("--out"),
                  dir.filePath(QStringLiteral("no/such/dir/x.h5"))},
                 &err),
             2);
    QVERIFY2(!err.isEmpty(), "an error message");
  }

  // A flag the chosen model does not read is refused, not ignored: the fast model's parameters
  // beside split, a promotion interval beside exact (windows only at scale boundaries), a C or
  // bias scale without the seed that draws the values.
  void flagsTheModelDoesNotReadAreRefused() {
    const QStringList base{QStringLiteral("gemm"), QStringLiteral("--m"), QStringLiteral("8"), QStringLiteral("--n"),
                           QStringLiteral("8"),    QStringLiteral("--k"), QStringLiteral("32")};
    const std::pair<QStringList, const char*> cases[] = {
        {{QStringLiteral("--accumulation"), QStringLiteral("split"), QStringLiteral("--fast-bits"),
          QStringLiteral("20")},
         "--fast-bits applies to the fast-accumulation model"},
        {{QStringLiteral("--accumulation"), QStringLiteral("fp32"), QStringLiteral("--no-promotion")},
         "--no-promotion applies to the fast-accumulation model"},
        {{QStringLiteral("--accumulation"), QStringLiteral("exact"), QStringLiteral("--promotion-interval"),
          QStringLiteral("64")},
         "--promotion-interval applies to split and fast accumulation"},
        {{QStringLiteral("--c-scale"), QStringLiteral("3")}, "--c-scale needs --c-seed"},
        {{QStringLiteral("--bias-scale"), QStringLiteral("3")}, "--bias-scale needs --bias-seed"}};
    for (const auto& [extra, needle] : cases) {
      QByteArray err;
      QCOMPARE(cli(base + extra, &err), 2);
      QVERIFY2(err.contains(needle), err.constData());
    }
    // The models that read them still take them.
    QByteArray err;
    QCOMPARE(
        cli(base + QStringList{QStringLiteral("--accumulation"), QStringLiteral("fast"), QStringLiteral("--fast-bits"),
                               QStringLiteral("20"), QStringLiteral("--promotion-interval"), QStringLiteral("64")},
            &err),
        0);
  }
};

QTEST_MAIN(TestGemmCli)
#include "test_gemm_cli.moc"

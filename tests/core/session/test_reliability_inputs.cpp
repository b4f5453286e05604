// Reliability, inputs (docs/reliability.md, suite `rel`): Bad input refused, named and costed: NaN / Inf / all-zero and
// empty tensors in the GEMM experiment, runs too large for memory refused up front naming the size, a cancelled GEMM
// experiment that writes nothing, the CLI's bad input, numbers that ignore the user's locale, and oversized configs.
#include "reliability_util.h"

using namespace fp8lab;
using namespace reliability;

class TestReliabilityInputs : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void nanInfZeroTensorsInGemmExperiment();
  void emptyTensorIsRefusedWithItsShape();
  void hugeGemmIsRefusedUpFrontNamingTheSize();
  void hugeTrainingIsRefusedUpFrontNamingTheSize();
  void cancelledGemmExperimentWritesNothing();
  void cliBadInput_data();
  void cliBadInput();
  void cliNumbersIgnoreTheUserLocale();
  void cliRefusesOversizedConfigUpFront();
};

// NaN / Inf / all-zero operands through the whole GEMM experiment: it runs, D's non-finite
// elements are counted, Inf/NaN inputs are reported (warning + a_nonfinite), all-zero inputs give
// exact zeros (scale rule: amax 0 keeps scale 1, TE / Flax) and an error of exactly 0.
void TestReliabilityInputs::nanInfZeroTensorsInGemmExperiment() {
  QTemporaryDir dir;
  const std::string d = dir.path().toStdString();
  std::vector<float> a(4 * 8, 1.0f), b(8 * 4, 1.0f);
  auto runWith = [&](const std::vector<float>& av) {
    writeBytes(d + "/a.npy", npy(4, 8, av));
    writeBytes(d + "/b.npy", npy(8, 4, b));
    GemmExperimentConfig cfg;
    cfg.a.tensor = d + "/a.npy";
    cfg.b.tensor = d + "/b.npy";
    cfg.format_a = cfg.format_b = "E4M3FN";
    cfg.scaling = "te_current";
    auto backend = makeCpuGemmBackend();
    return runGemmExperimentRun(cfg, "{}", "t", *backend);
  };
  auto warned = [](const Status& st) {
    for (const auto& i : st.issues)
      if (i.severity == Severity::Warning && i.detail.find("NaN or Inf") != std::string::npos) return true;
    return false;
  };
  {
    std::vector<float> av = a;
    av[1 * 8 + 2] = std::numeric_limits<float>::quiet_NaN(); // row 1 of A → row 1 of D is NaN
    auto r = runWith(av);
    QVERIFY2(r.ok(), r.message().c_str());
    QVERIFY(warned(r));
    QCOMPARE(r.value.metrics.at("a_nonfinite").value, 1.0);
    QCOMPARE(r.value.metrics.at("b_nonfinite").value, 0.0);
    QCOMPARE(r.value.metrics.at("nonfinite_d").value, 4.0); // the 4 elements of row 1
  }
  {
    std::vector<float> av = a;
    av[0] = std::numeric_limits<float>::infinity();
    auto r = runWith(av);
    QVERIFY2(r.ok(), r.message().c_str());
    QVERIFY(warned(r));
    QCOMPARE(r.value.metrics.at("a_nonfinite").value, 1.0);
  }
  {
    auto r = runWith(std::vector<float>(32, 0.0f));
    QVERIFY2(r.ok(), r.message().c_str());
    QVERIFY(!warned(r));
    QVERIFY(!r.value.metrics.count("a_nonfinite"));
    // 0 · anything = 0 exactly: D, the reference and every error are 0.
    const Dataset* D = r.value.find("output/D");
    QVERIFY(D);
    for (float x : D->f32) QCOMPARE(x, 0.0f);
    QCOMPARE(r.value.metrics.at("max_abs").value, 0.0);
    QCOMPARE(r.value.metrics.at("nonfinite_d").value, 0.0);
  }
}

// A 0×8 tensor (valid .npy) as operand A: refused naming the shapes, not a confusing internal error.
void TestReliabilityInputs::emptyTensorIsRefusedWithItsShape() {
  QTemporaryDir dir;
  const std::string d = dir.path().toStdString();
  writeBytes(d + "/a.npy", npy(0, 8, {}));
  writeBytes(d + "/b.npy", npy(8, 4, std::vector<float>(32, 1.0f)));
  auto imp = importNpy(d + "/a.npy");
  QVERIFY2(imp.ok(), imp.message().c_str()); // an empty array is a valid .npy file
  QCOMPARE(imp.value.shape, (std::vector<int64_t>{0, 8}));
  GemmExperimentConfig cfg;
  cfg.a.tensor = d + "/a.npy";
  cfg.b.tensor = d + "/b.npy";
  cfg.scaling = "te_current";
  auto backend = makeCpuGemmBackend();
  auto r = runGemmExperimentRun(cfg, "{}", "t", *backend);
  QVERIFY(!r.ok());
  QVERIFY(hasCode(r, Code::InvalidArgument));
  QVERIFY2(r.firstError().find("A is [0, 8]") != std::string::npos, r.firstError().c_str());
  QVERIFY2(r.firstError().find("empty operand") != std::string::npos, r.firstError().c_str());
}

// m = k = n = 2^20 (allowed by the config parser): 21·2·2^40 + 36·2^40 B = 78 TiB of buffers.
// Refused before any allocation, naming the size; with an explicit 1 MiB limit a 256³ GEMM
// (21·2·2^16 + 36·2^16 = 5,111,808 B = 4.88 MiB) is refused the same way.
void TestReliabilityInputs::hugeGemmIsRefusedUpFrontNamingTheSize() {
  auto backend = makeCpuGemmBackend();
  GemmExperimentConfig cfg;
  cfg.m = cfg.k = cfg.n = int64_t(1) << 20;
  cfg.scaling = "te_current";
  auto r = runGemmExperimentRun(cfg, "{}", "huge", *backend);
  QVERIFY(!r.ok());
  QVERIFY2(r.firstError().find("needs about 7.99e+04 GiB") != std::string::npos, r.firstError().c_str());
  QVERIFY2(r.firstError().find("of memory available") != std::string::npos, r.firstError().c_str());

  GemmExperimentConfig small;
  small.scaling = "te_current";
  small.gemm.memory_limit_bytes = int64_t(1) << 20;
  auto s = runGemmExperimentRun(small, "{}", "small", *backend);
  QVERIFY(!s.ok());
  QVERIFY2(s.firstError().find("needs about 4.88 MiB of buffers, more than the 1 MiB allowed") != std::string::npos,
           s.firstError().c_str());
  small.gemm.memory_limit_bytes = 5111808; // exactly the estimate: accepted
  QVERIFY(runGemmExperimentRun(small, "{}", "small", *backend).ok());
}

// Training: the default 784-256-128-10 MLP, 1 epoch of 1 image, current scaling (no history
// window): weights 784·256 + 256·128 + 128·10 = 234,752 → 24 B each = 5,634,048 B; activations
// Σ(in+out) = 1040 + 384 + 138 = 1562, × 12 B × (batch 128 + eval 1000) = 21,143,232 B; 1 step ×
// (3·3·40 + 8) = 368 B; diagnostics (block_stats on, map_every 250): 9 summaries × 80 B = 720 B and
// (⌊0/250⌋ + 2) = 2 maps × ⌊434,688 / 16⌋ = 27,168 blocks × 45 B × 2 = 4,890,240 B (the 9 operands
// hold 128·784 + 784·256 + 128·256 + 128·256 + 256·128 + 128·128 + 128·128 + 128·10 + 128·10 =
// 434,688 elements). Total 31,668,608 B = 30.2 MiB > a 16 MiB limit: refused naming both.
void TestReliabilityInputs::hugeTrainingIsRefusedUpFrontNamingTheSize() {
  TrainingConfig c;
  c.label = "big";
  c.epochs = 1;
  c.scaling.kind = TrainingScalingKind::CurrentTE;
  static_assert(sizeof(BlockStatsSummary) == 80);
  QCOMPARE(estimateTrainingBytes(c, 1), 31668608.0);
  c.forward_gemm.memory_limit_bytes = int64_t(16) << 20;
  ImageDataset one;
  one.count = 1;
  one.pixels.assign(784, 0.5f);
  one.labels = {3};
  try {
    TrainingRun run(c, one, one);
    QFAIL("a run larger than the limit was accepted");
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    QVERIFY2(m.find("needs about 30.2 MiB") != std::string::npos, e.what());
    QVERIFY2(m.find("more than the 16 MiB allowed") != std::string::npos, e.what());
  }
  c.forward_gemm.memory_limit_bytes = 31668608; // exactly enough
  TrainingRun ok(c, one, one);
  Q_UNUSED(ok);
  // Without a limit: 65536-wide layers (parser maximum) need 24·(784·65536 + 65536² + 65536·10)
  // B ≥ 96 GiB for the weights alone — refused on any machine with less memory than that.
  TrainingConfig h;
  h.layer_sizes = {784, 65536, 65536, 10};
  QVERIFY(estimateTrainingBytes(h, 60000) > 96.0 * 0x1p30);
}

// Cancel during the GEMM experiment: Cancelled is thrown, nothing is returned to be written.
void TestReliabilityInputs::cancelledGemmExperimentWritesNothing() {
  auto backend = makeCpuGemmBackend();
  GemmExperimentConfig cfg;
  cfg.m = cfg.k = cfg.n = 64;
  cfg.scaling = "te_current";
  for (double stop_at : {0.0, 0.1, 0.5, 0.92}) { // operands, quantize, GEMM, metrics stages
    bool thrown = false;
    try {
      runGemmExperimentRun(cfg, "{}", "c", *backend, [&](double f, const std::string&) { return f < stop_at; });
    } catch (const Cancelled&) {
      thrown = true;
    }
    QVERIFY2(thrown, qPrintable(QStringLiteral("no cancel at %1").arg(stop_at)));
  }
}

// fp8lab-cli on bad configs, files and arguments: exit code 2 and a message naming the problem,
// nothing written. %D is replaced by a scratch directory holding the files named in the row.
void TestReliabilityInputs::cliBadInput_data() {
  QTest::addColumn<QStringList>("args");
  QTest::addColumn<QByteArray>("config"); // written to %D/c.json when non-empty
  QTest::addColumn<QString>("mentions");
  const QString c = QStringLiteral("%D/c.json"), o = QStringLiteral("%D/out.h5");
  auto run = [&](const char* name, const QByteArray& cfg, const char* m) {
    QTest::newRow(name) << QStringList{QStringLiteral("run"), c, QStringLiteral("--out"), o, QStringLiteral("-q")}
                        << cfg << QString::fromUtf8(m);
  };
  run("config: empty file", QByteArray(" "), "is not valid JSON");
  // Extra words are refused, not ignored: `table E5M2` would otherwise print E4M3FN's table.
  QTest::newRow("table with a positional format")
      << QStringList{QStringLiteral("table"), QStringLiteral("E5M2")} << QByteArray()
      << QStringLiteral("table takes no arguments (got 'E5M2'); name the format with --format E5M2");
  QTest::newRow("formats with an argument") << QStringList{QStringLiteral("formats"), QStringLiteral("x")}
                                            << QByteArray() << QStringLiteral("formats takes no arguments (got 'x')");
  // --threads is bounded to 0..1024 (100000 would start 100000 worker threads).
  QTest::newRow("run --threads 100000")
      << QStringList{QStringLiteral("run"),   c, QStringLiteral("--out"), o, QStringLiteral("--threads"),
                     QStringLiteral("100000")}
      << QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4})")
      << QStringLiteral("--threads: expected an integer 0..1024 (0 = one per core), got '100000'");
  QTest::newRow("sweep --threads -1") << QStringList{QStringLiteral("sweep"),     c,
                                                     QStringLiteral("--out"),     o,
                                                     QStringLiteral("--threads"), QStringLiteral("-1")}
                                      << QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4})")
                                      << QStringLiteral("--threads: expected an integer 0..1024");
  run("config: not JSON", QByteArray("{\"type\": \"gemm\",\n \"m\": }"), "line 2, column");
  run("config: top-level array", QByteArray("[1, 2]"), "expected a JSON object at the top");
  // A key given twice is refused: JSON readers disagree on which value wins ({"m": 4, "m": 4096}).
  run("config: key given twice", QByteArray("{\"type\": \"gemm\", \"m\": 4,\n \"k\": 4, \"n\": 4, \"m\": 4096}"),
      "key \"m\" appears twice in the same object (the second at line 2, column 18)"); // line 2 = ` "k": 4, "n": 4,
                                                                                       // "m"...`: its quote is
                                                                                       // character 18
  run("config: nested key given twice (escaped)",
      QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "a": {"scale": 1, "sc\u0061le": 2}})"),
      "key \"scale\" appears twice");
  run("config: unknown key", QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "colour": 1})"), "colour");
  run("config: m = 0", QByteArray(R"({"type": "gemm", "m": 0, "k": 4, "n": 4})"),
      "m: expected an integer in [1, 1048576]");
  run("config: m is a string", QByteArray(R"({"type": "gemm", "m": "64", "k": 4, "n": 4})"),
      "m: expected an integer in [1, 1048576]");
  run("config: m = 1e300", QByteArray(R"({"type": "gemm", "m": 1e300, "k": 4, "n": 4})"),
      "m: expected an integer in [1, 1048576]");
  run("config: NaN-like scale", QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "a": {"scale": "nan"}})"),
      "a.scale: expected a finite number");
  run("config: unknown type", QByteArray(R"({"type": "conv", "m": 4})"), "conv");
  run("config: unknown format", QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "format": "E9M9"})"), "E9M9");
  run("config: missing tensor file", QByteArray(R"({"type": "gemm", "a": {"tensor": "/nonexistent/a.npy"}})"),
      "/nonexistent/a.npy");
  run("config: GEMM larger than memory", QByteArray(R"({"type": "gemm", "m": 1048576, "k": 1048576, "n": 1048576})"),
      "GiB of buffers, more than the");
  run("config: training, huge layers",
      QByteArray(R"({"type": "training", "layers": [784, 65536, 65536, 10], "train_limit": 10, "test_limit": 10})"),
      "more than the");
  // A layer size of 2^53 + 1 gives the message and nothing else: it is never converted to int
  // (undefined behaviour, which UBSan would report).
  run("config: training, layer size 2^53+1",
      QByteArray(R"({"type": "training", "layers": [784, 9007199254740993, 10]})"),
      "sizes must be integers in 1..65536");
  // Every experiment is checked before the first runs: the good first one is not computed and
  // saved only for the command to fail on the second (and the error names which one).
  run("config: second of two experiments has k = 0",
      QByteArray(
          R"({"experiments": [{"type": "gemm", "m": 8, "n": 8, "k": 8}, {"type": "gemm", "m": 8, "n": 8, "k": 0}]})"),
      "experiments[1]: k: expected an integer in [1, 1048576]");
  run("config: m beside a tensor operand",
      QByteArray(R"({"type": "gemm", "m": 999, "a": {"tensor": "a.npy"}, "b": {"tensor": "b.npy"}})"),
      "m: comes from the shape of the tensor file 'a.npy'; leave it out");
  run("config: scale on a tensor operand", QByteArray(R"({"type": "gemm", "a": {"tensor": "a.npy", "scale": 2}})"),
      "a.scale: applies to random operands only");
  run("config: training, unknown strategy", QByteArray(R"({"type": "training", "scaling": {"strategy": "dalayed"}})"),
      "dalayed");
  QTest::newRow("config file missing") << QStringList{QStringLiteral("run"), QStringLiteral("%D/none.json"),
                                                      QStringLiteral("--out"), o}
                                       << QByteArray() << QStringLiteral("none.json': no such file");
  QTest::newRow("config is a directory") << QStringList{QStringLiteral("run"), QStringLiteral("%D"),
                                                        QStringLiteral("--out"), o}
                                         << QByteArray() << QStringLiteral("is a directory");
  // Configs and value lists are read only from what can be one (cli_util readInputFile): /dev/zero
  // would be read until memory runs out, and a FIFO blocks until a writer appears.
  QTest::newRow("config is /dev/zero") << QStringList{QStringLiteral("run"), QStringLiteral("/dev/zero"),
                                                      QStringLiteral("--out"), o}
                                       << QByteArray() << QStringLiteral("config '/dev/zero' is a device");
  QTest::newRow("train config is /dev/urandom")
      << QStringList{QStringLiteral("train"), QStringLiteral("/dev/urandom"), QStringLiteral("--out"), o}
      << QByteArray() << QStringLiteral("config '/dev/urandom' is a device");
  QTest::newRow("config is a FIFO") << QStringList{QStringLiteral("run"), QStringLiteral("%D/fifo"),
                                                   QStringLiteral("--out"), o}
                                    << QByteArray() << QStringLiteral("is a FIFO or socket, not a regular file");
  QTest::newRow("encode --input /dev/zero")
      << QStringList{QStringLiteral("encode"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
                     QStringLiteral("--input"), QStringLiteral("/dev/zero")}
      << QByteArray() << QStringLiteral("--input '/dev/zero' is a device");
  QTest::newRow("quantize --input /dev/zero")
      << QStringList{QStringLiteral("quantize"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
                     QStringLiteral("--input"), QStringLiteral("/dev/zero")}
      << QByteArray() << QStringLiteral("--input '/dev/zero' is a device");
  QTest::newRow("scaling simulate --input /dev/zero")
      << QStringList{QStringLiteral("scaling"), QStringLiteral("simulate"), QStringLiteral("--preset"),
                     QStringLiteral("te"),      QStringLiteral("--input"),  QStringLiteral("/dev/zero")}
      << QByteArray() << QStringLiteral("--input '/dev/zero' is a device");
  QTest::newRow("output dir missing") << QStringList{QStringLiteral("run"), c, QStringLiteral("--out"),
                                                     QStringLiteral("%D/no/such/dir/out.h5"), QStringLiteral("-q")}
                                      << QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4})")
                                      << QStringLiteral("%D/no/such/dir");
  QTest::newRow("inspect a FIFO") << QStringList{QStringLiteral("inspect"), QStringLiteral("%D/fifo")} << QByteArray()
                                  << QStringLiteral("not a regular file");
  QTest::newRow("inspect a text file") << QStringList{QStringLiteral("inspect"), c} << QByteArray("hello")
                                       << QStringLiteral("HDF5");
  QTest::newRow("unknown command") << QStringList{QStringLiteral("frobnicate")} << QByteArray()
                                   << QStringLiteral("unknown command 'frobnicate'");
  QTest::newRow("unknown option") << QStringList{QStringLiteral("encode"), QStringLiteral("--formt"),
                                                 QStringLiteral("E4M3FN"), QStringLiteral("1")}
                                  << QByteArray() << QStringLiteral("formt");
  QTest::newRow("encode: not a number") << QStringList{QStringLiteral("encode"), QStringLiteral("--format"),
                                                       QStringLiteral("E4M3FN"), QStringLiteral("1e")}
                                        << QByteArray() << QStringLiteral("not a number: '1e'");
  QTest::newRow("scaling simulate: negative amax")
      << QStringList{QStringLiteral("scaling"), QStringLiteral("simulate"), QStringLiteral("--preset"),
                     QStringLiteral("te"),      QStringLiteral("--amax"),   QStringLiteral("1,2,-1")}
      << QByteArray() << QStringLiteral("amax -1 (item 3) is negative");
  QTest::newRow("gemm: --scale overflows float32")
      << QStringList{QStringLiteral("gemm"), QStringLiteral("-m"),      QStringLiteral("8"),
                     QStringLiteral("-n"),   QStringLiteral("8"),       QStringLiteral("-k"),
                     QStringLiteral("16"),   QStringLiteral("--scale"), QStringLiteral("1e45")}
      << QByteArray()
      << QStringLiteral("scale 1e+45 of the random normal A overflows float32 (max 3.40282e+38): 128 of 128 "
                        "elements of A are infinite");
  // The same check in `run` (one GEMM run behind both): |normal| · 1e45 > FLT_MAX for every one of
  // B's 16 draws (|z| would have to be below 3.4e-7).
  run("config: random scale overflows float32",
      QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "b": {"scale": 1e45}})"),
      "scale 1e+45 of the random normal B overflows float32 (max 3.40282e+38): 16 of 16 elements of B are infinite");
  QTest::newRow("sweep: three-part format")
      << QStringList{QStringLiteral("sweep"), c, QStringLiteral("--dry-run"), QStringLiteral("--formats"),
                     QStringLiteral("E4M3FN:E5M2:E2M1")}
      << QByteArray(R"({"type": "gemm", "m": 8, "n": 8, "k": 8})")
      << QStringLiteral("'E4M3FN:E5M2:E2M1' is not FORMAT or FORMAT_A:FORMAT_B");
  QTest::newRow("sweep: empty formats list")
      << QStringList{QStringLiteral("sweep"), c, QStringLiteral("--dry-run")}
      << QByteArray(R"({"type": "gemm", "m": 8, "n": 8, "k": 8, "sweep": {"formats": []}})")
      << QStringLiteral("sweep.formats: an empty list");
  // strtod turns 1e400 into inf and 1e-400 into 0 (ERANGE): refused with the reason instead.
  QTest::newRow("encode: 1e400 beyond float64")
      << QStringList{QStringLiteral("encode"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
                     QStringLiteral("1e400")}
      << QByteArray() << QStringLiteral("'1e400' is beyond the float64 range");
  QTest::newRow("encode: 1e-400 underflows float64")
      << QStringList{QStringLiteral("encode"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
                     QStringLiteral("1e-400")}
      << QByteArray() << QStringLiteral("'1e-400' underflows to 0 in float64");
  QTest::newRow("encode: unknown format")
      << QStringList{QStringLiteral("encode"), QStringLiteral("--format"), QStringLiteral("E4M4"), QStringLiteral("1")}
      << QByteArray() << QStringLiteral("E4M4");
  // Options that would do nothing are refused with the reason. scale_D: cuBLASLt applies D_SCALE
  // only to FP8 outputs.
  auto gemmArgs = [](std::initializer_list<const char*> extra) {
    QStringList a{QStringLiteral("gemm"), QStringLiteral("-m"), QStringLiteral("8"), QStringLiteral("-n"),
                  QStringLiteral("8"),    QStringLiteral("-k"), QStringLiteral("16")};
    for (const char* e : extra) a << QString::fromLatin1(e);
    return a;
  };
  QTest::newRow("gemm: --output-scale with a BF16 output")
      << gemmArgs({"--output", "bf16", "--output-scale", "16"}) << QByteArray()
      << QStringLiteral("--output-scale applies only to FP8 outputs");
  run("config: output_quant_scale with an FP32 output",
      QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "output": "fp32", "output_quant_scale": 16})"),
      "output_quant_scale: an output scale scale_D applies only to FP8 outputs");
  // per_column on A, or a per-row B, puts scales along K: no GEMM can take them out of its sum.
  QTest::newRow("gemm: per_column scales A along K")
      << gemmArgs({"--scaling", "per_column"}) << QByteArray()
      << QStringLiteral("'per_column' gives A [M, K] one scale per column, so its scales vary along K");
  run("config: per_column GEMM", QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4, "scaling": "per_column"})"),
      "scaling: 'per_column' gives A [M, K] one scale per column");
  auto quantizeArgs = [](std::initializer_list<const char*> extra) {
    QStringList a{QStringLiteral("quantize"), QStringLiteral("-f"), QStringLiteral("E4M3FN"),
                  QStringLiteral("--values"), QStringLiteral("3,1")};
    for (const char* e : extra) a << QString::fromLatin1(e);
    return a;
  };
  QTest::newRow("quantize: --pow2 on a delayed preset")
      << quantizeArgs({"-s", "te_delayed", "--pow2"}) << QByteArray()
      << QStringLiteral("te_delayed follows TE DelayedScaling, whose per-tensor delayed scaling computes float32 "
                        "scales with no power-of-two option");
  QTest::newRow("quantize: --margin on torchao")
      << quantizeArgs({"-s", "torchao_tensorwise", "--margin", "1"}) << QByteArray()
      << QStringLiteral("'torchao_tensorwise' follows torchao, which has "
                        "no margin");
  QTest::newRow("quantize: --history-len on a current preset")
      << quantizeArgs({"-s", "te_current", "--history-len", "16"}) << QByteArray()
      << QStringLiteral("--history-len applies to delayed presets");
  QTest::newRow("quantize: --seed without stochastic rounding")
      << quantizeArgs({"--seed", "7"}) << QByteArray()
      << QStringLiteral("--seed applies only to --rounding stochastic");
  QTest::newRow("quantize: --no-saturate on a delayed preset")
      << quantizeArgs({"-s", "flax_delayed", "--no-saturate"}) << QByteArray()
      << QStringLiteral("flax_delayed follows Flax fp8_ops, whose per-tensor delayed scaling casts with "
                        "round-to-nearest-even, saturating");
  QTest::newRow("quantize: --pow2 on MX") << quantizeArgs({"-s", "mx_floor", "--pow2"}) << QByteArray()
                                          << QStringLiteral("E8M0 scales, powers of two by construction");
  // Outputs that cannot hold a session, refused before computing (also for root).
  QTest::newRow("run --out /dev/null") << QStringList{QStringLiteral("run"), c, QStringLiteral("--out"),
                                                      QStringLiteral("/dev/null"), QStringLiteral("-q")}
                                       << QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4})")
                                       << QStringLiteral("--out /dev/null is not a regular file (a device");
  QTest::newRow("run --out in /proc") << QStringList{QStringLiteral("run"), c, QStringLiteral("--out"),
                                                     QStringLiteral("/proc/fp8lab-out.h5"), QStringLiteral("-q")}
                                      << QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4})")
                                      << QStringLiteral("write failed: cannot create files in /proc (");
  QTest::newRow("sweep --out a text file")
      << QStringList{QStringLiteral("sweep"), c, QStringLiteral("--out"), c, QStringLiteral("-q")}
      << QByteArray(R"({"type": "gemm", "m": 4, "k": 4, "n": 4})")
      << QStringLiteral("c.json exists and is not an HDF5 session");
}

void TestReliabilityInputs::cliBadInput() {
  QFETCH(QStringList, args);
  QFETCH(QByteArray, config);
  QFETCH(QString, mentions);
  QVERIFY2(QFileInfo::exists(cliPath()), qPrintable(QStringLiteral("build fp8lab-cli first: %1").arg(cliPath())));
  QTemporaryDir dir;
  QVERIFY(mkfifo(qPrintable(dir.filePath(QStringLiteral("fifo"))), 0600) == 0);
  if (!config.isEmpty()) {
    QFile f(dir.filePath(QStringLiteral("c.json")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(config);
  }
  for (QString& a : args) a.replace(QStringLiteral("%D"), dir.path());
  mentions.replace(QStringLiteral("%D"), dir.path());
  QProcess p;
  p.start(cliPath(), args);
  const bool finished = p.waitForFinished(120000);
  if (!finished) p.kill();
  QVERIFY2(finished, "fp8lab-cli hung");
  const QString err = QString::fromUtf8(p.readAllStandardError());
  QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  QVERIFY2(p.exitCode() == 2, qPrintable(QStringLiteral("exit %1: %2").arg(p.exitCode()).arg(err)));
  QVERIFY2(err.contains(QStringLiteral("error")), qPrintable(err));
  QVERIFY2(err.contains(mentions), qPrintable(QStringLiteral("'%1' not in: %2").arg(mentions, err)));
  QVERIFY2(!QFileInfo::exists(dir.filePath(QStringLiteral("out.h5"))), "an output file was written");
}

// A config larger than 64 MiB is refused from its size before anything is read (reading a 3 GB
// sparse file as a config would take 3 GB of memory before the JSON error).
void TestReliabilityInputs::cliRefusesOversizedConfigUpFront() {
  QTemporaryDir dir;
  const QString big = dir.filePath(QStringLiteral("big.json"));
  {
    QFile f(big);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QVERIFY(f.resize(qint64(3) << 30)); // sparse: 3 GiB of zero bytes, no disk used
  }
  QProcess p;
  p.start(cliPath(), {QStringLiteral("run"), big, QStringLiteral("--out"), dir.filePath(QStringLiteral("o.h5"))});
  QVERIFY(p.waitForFinished(60000));
  const QString err = QString::fromUtf8(p.readAllStandardError());
  QCOMPARE(p.exitCode(), 2);
  QVERIFY2(err.contains(QStringLiteral("is 3.0 GiB; the limit is 64.0 MiB")), qPrintable(err));
}

// QCoreApplication sets the user's locale (setlocale(LC_ALL, "")); under de_DE (decimal comma)
// strtod rejected "0.5" — `fp8lab-cli encode --format E4M3FN 0.5` failed on a German desktop.
// The locale is compiled with localedef into a temporary LOCPATH (needs Debian's locale sources).
void TestReliabilityInputs::cliNumbersIgnoreTheUserLocale() {
  QVERIFY2(QFileInfo::exists(cliPath()), qPrintable(QStringLiteral("build fp8lab-cli first: %1").arg(cliPath())));
  if (!QFileInfo::exists(QStringLiteral("/usr/share/i18n/locales/de_DE")) ||
      QStandardPaths::findExecutable(QStringLiteral("localedef")).isEmpty())
    QSKIP("no locale sources (/usr/share/i18n/locales/de_DE, package 'locales') to build de_DE.UTF-8");
  QTemporaryDir dir;
  QProcess def;
  def.start(QStringLiteral("localedef"), {QStringLiteral("-i"), QStringLiteral("de_DE"), QStringLiteral("-f"),
                                          QStringLiteral("UTF-8"), dir.filePath(QStringLiteral("de_DE.UTF-8"))});
  QVERIFY(def.waitForFinished(180000));
  QVERIFY2(QFileInfo::exists(dir.filePath(QStringLiteral("de_DE.UTF-8/LC_NUMERIC"))),
           def.readAllStandardError().constData());
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("LOCPATH"), dir.path());
  env.insert(QStringLiteral("LC_ALL"), QStringLiteral("de_DE.UTF-8"));
  // glibc's setlocale keeps the loaded locale's data for the life of the process; LeakSanitizer
  // (sanitizer builds) reports it (argz_add_sep) and would turn exit 0 into 1.
  env.insert(QStringLiteral("ASAN_OPTIONS"), QStringLiteral("detect_leaks=0"));
  auto encode = [&](const QString& v, QByteArray* out) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(cliPath(), {QStringLiteral("encode"), QStringLiteral("--format"), QStringLiteral("E4M3FN"),
                        QStringLiteral("--json"), v});
    if (!p.waitForFinished(60000)) return -1;
    *out = p.readAllStandardOutput() + p.readAllStandardError();
    return p.exitCode();
  };
  QByteArray out;
  // 0.5 = 2^-1 → E4M3FN exponent field 7 - 1 = 6: 0 0110 000 = 0x30.
  QCOMPARE(encode(QStringLiteral("0.5"), &out), 0);
  QVERIFY2(out.contains("\"code\":\"0x30\""), out.constData());
  QVERIFY2(out.contains("\"value\":0.5"), out.constData());
  // The same text means the same number everywhere: "0,5" is not a number in any locale.
  QCOMPARE(encode(QStringLiteral("0,5"), &out), 2);
  QVERIFY2(out.contains("not a number"), out.constData());
}

int main(int argc, char** argv) {
  TestReliabilityInputs t;
  QTEST_SET_MAIN_SOURCE_PATH
  return QTest::qExec(&t, argc, argv);
}

#include "test_reliability_inputs.moc"

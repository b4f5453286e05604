// The core side of the scaling, scale-layout, kernel-check flag, advise, decide and backend
// commands: the kernel-check flags' rewrite of a GEMM config (experiment/kernel_check/kernel_check_flags.h),
// the scaling and scale-layout reports (experiment/scaling_report.h), scale files packed into and
// unpacked from a layout (io/scale_file.h), the advice JSON (experiment/decision/site_advice.h), the
// metric keys (experiment/decision/recipe_ranking.h) and the backend JSON (experiment/backend_report.h).
// Expected values are hand derivations (in the comments) and docs/gemm.md's worked examples.
#include "experiment/backend_report.h"
#include "experiment/gemm/gemm_config.h"
#include "experiment/kernel_check/kernel_check_flags.h"
#include "experiment/decision/recipe_ranking.h"
#include "experiment/scaling_report.h"
#include "experiment/decision/site_advice.h"
#include "formats/format.h"
#include "io/scale_file.h"
#include "io/npy_writer.h"
#include "io/tensor_import.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace fp8lab;

namespace {

/// A flag as the CLI hands it over: its text, and the number when the text is one.
GivenFlag given(const std::string& text, std::optional<double> number = std::nullopt) {
  return {text, number, number ? std::string() : "not a number: '" + text + "'"};
}

/// applyKernelCheckFlags with the codes operands A [M, K] = a.npy and B [K, N] = b.npy, one
/// dequant scale each, and `more` flags (replacing those): "" or the refusal.
std::string apply(std::map<std::string, GivenFlag> more, GemmExperimentConfig* cfg) {
  std::map<std::string, GivenFlag> g = {{"a-codes", given("a.npy")},
                                        {"a-scales", given("0.5", 0.5)},
                                        {"b-codes", given("b.npy")},
                                        {"b-scales", given("2", 2.0)}};
  for (auto& [k, v] : more) g[k] = v;
  return applyKernelCheckFlags(g, cfg);
}

} // namespace

class TestCommandReports : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // 9 flags per operand (8 described ones and --X-transpose), then the 11 of the check.
  void kernelCheckFlagTable() {
    const std::vector<CheckFlag>& f = kernelCheckFlags();
    QCOMPARE(f.size(), size_t(2 * 9 + 11));
    QCOMPARE(f[0].name, std::string("a-codes"));
    QCOMPARE(f[0].help, std::string("A as codes: uint8 .npy / .safetensors:NAME (U8, F8_E4M3, F8_E5M2) [M, K] (its "
                                    "format: --a-format)."));
    QCOMPARE(f[0].value, std::string("SPEC"));
    QCOMPARE(f[17].name, std::string("b-transpose"));
    QCOMPARE(f[17].value, std::string()); // a switch
    QCOMPARE(f[18].name, std::string("observed"));
    QCOMPARE(f[24].name, std::string("allow-nonfinite"));
    QCOMPARE(f.back().name, std::string("fit-intervals"));
  }

  // The flags written into the config: "1,128" is the block [1, 128] of A's scale file; a number
  // as --b-scales is B's per-tensor scale.
  void kernelCheckFlagsGiveTheConfig() {
    GemmExperimentConfig cfg;
    cfg.gemm.threads = 3;
    QCOMPARE(apply({{"a-scales", given("sa.npy")}, {"a-block", given("1,128")}, {"b-transpose", given("")}}, &cfg),
             std::string());
    const Json j = gemmConfigJson(cfg);
    QCOMPARE(j.at("a").at("codes").get<std::string>(), std::string("a.npy"));
    QCOMPARE(j.at("a").at("scales").get<std::string>(), std::string("sa.npy"));
    QCOMPARE(j.at("b").at("scales").get<double>(), 2.0);
    QCOMPARE(j.at("a").at("block"), Json::array({1, 128}));
    QCOMPARE(j.at("b").at("transpose").get<bool>(), true);
    QCOMPARE(cfg.gemm.threads, 3); // what the config does not carry is kept
  }

  void kernelCheckFlagsRefuse_data() {
    QTest::addColumn<QString>("flag");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("why");
    QTest::newRow("block of three") << "a-block"
                                    << "1x2x3"
                                    << "--a-block must be ROWSxCOLS with both >= 1 (1x128, 128x128, 1x32), got '1x2x3'";
    QTest::newRow("block of zero") << "b-block"
                                   << "0x128"
                                   << "--b-block must be ROWSxCOLS with both >= 1 (1x128, 128x128, 1x32), got '0x128'";
    QTest::newRow("dimension from the file") << "k"
                                             << "64"
                                             << "--k comes from the shape of --a-codes 'a.npy'; leave it out";
    QTest::newRow("check without --observed") << "max-ulp"
                                              << "2"
                                              << "--max-ulp checks a kernel's output: add --observed FILE";
    QTest::newRow("tensor amax not a number") << "a-tensor-amax"
                                              << "x"
                                              << "--a-tensor-amax: not a number: 'x'";
  }
  void kernelCheckFlagsRefuse() {
    QFETCH(QString, flag);
    QFETCH(QString, value);
    QFETCH(QString, why);
    GemmExperimentConfig cfg;
    const std::string v = value.toStdString();
    const bool number = v == "64" || v == "2";
    QCOMPARE(QString::fromStdString(
                 apply({{flag.toStdString(), given(v, number ? std::optional(std::stod(v)) : std::nullopt)}}, &cfg)),
             why);
  }

  // Flags of a codes operand without --X-codes, and a codes operand without scales.
  void kernelCheckFlagsNeedTheirSubject() {
    GemmExperimentConfig cfg;
    QCOMPARE(applyKernelCheckFlags({{"a-scales", given("1", 1.0)}}, &cfg),
             std::string("--a-scales describes A given as codes: add --a-codes"));
    QCOMPARE(applyKernelCheckFlags({{"b-codes", given("b.npy")}}, &cfg),
             std::string("--b-codes needs --b-scales: a scale file or one number (a per-tensor dequant scale)"));
    QCOMPARE(applyKernelCheckFlags({}, &cfg), std::string()); // nothing given: nothing to do
  }

  // The presets in display order (scaling.h: te_current first; nvfp4.h: nvfp4_te first), the
  // NVFP4 ones after their heading.
  void presetTable() {
    const Json j = scalingPresetsJson();
    QCOMPARE(j.at(0).at("name").get<std::string>(), std::string("te_current"));
    QCOMPARE(j.at(0).at("nvfp4").get<bool>(), false);
    const std::string t = scalingPresetsText();
    QVERIFY(t.rfind("te_current               ", 0) == 0); // padded to 24, then a space
    QVERIFY(t.find("\n                         source: ") != std::string::npos);
    const size_t heading =
        t.find("\nNVFP4 presets: E2M1 elements, E4M3FN scales of 16-element blocks and a float32 tensor scale\n"
               "nvfp4_te ");
    QVERIFY(heading != std::string::npos);
  }

  // Transformer Engine, E4M3FN (max 448), history 2, amaxes 1, 2, 0. Step 0: the window's amax
  // is 1, scale = 448 / 1 = 448 (quant, for the next step), this step used the initial 1; the
  // dequant form is 1/448 in float32 = 0.002232143. Step 1: window max(1, 2) = 2, scale 224, used
  // 448. Step 2: amax 0 keeps the scale and TE's fused update does not roll the history.
  void delayedReplay() {
    DelayedScalingConfig cfg;
    cfg.preset = DelayedPreset::TE;
    cfg.history_len = 2;
    const Format& f = *Format::byName("E4M3FN");
    const std::string t = delayedSimulationText(f, cfg, {1, 2, 0});
    QCOMPARE(t, std::string("Transformer Engine delayed scaling, E4M3FN (max 448), history 2, algo max, margin 0; "
                            "scale = quant (x_q = cast(x * scale)), for the next step\n"
                            " step           amax    window amax     scale used          scale          quant        "
                            "dequant note\n"
                            "    0              1              1              1            448            448    "
                            "0.002232143 \n"
                            "    1              2              2            448            224            224    "
                            "0.004464286 \n"
                            "    2              0              0            224            224            224    "
                            "0.004464286 kept previous, no roll\n"
                            "history after the last step (oldest first, last = staging slot): 2 0\n"));
    DelayedScaling s(f, cfg);
    const DelayedUpdate u = s.update(1.0f);
    const Json j = delayedStepJson(0, 1.0, u, s.historyChronological());
    QCOMPARE(j.at("scale").get<double>(), 448.0);
    QCOMPARE(j.at("dequant_scale").get<double>(), double(1.0f / 448.0f));
    QCOMPARE(j.at("history"), Json::array({1.0, 0.0}));
    QCOMPARE(j.at("scale_used").get<double>(), 1.0);
    QCOMPARE(j.at("step").get<int64_t>(), int64_t(0));
    // A NaN amax is written as the string "nan".
    QCOMPARE(delayedStepJson(1, std::nan(""), u, {}).at("amax").get<std::string>(), std::string("nan"));
  }

  // docs/gemm.md's worked examples: NVFP4 A of M = 256, K = 128 (grid [256, 8], 2048 bytes of
  // the swizzled layout vec16_ue4m3 names), scale (130, 5) at byte 1569; DeepGEMM MN-major, outer 5, KB 3: (4, 2) at
  // element 20.
  void scaleIndex() {
    const ScaleLayout vec16 = *parseScaleLayout("vec16_ue4m3");
    QCOMPARE(scaleIndexText(vec16, {256, 8}, {{130, 5}}),
             std::string("cublaslt_swizzled storage of a [256, 8] grid: 2048 bytes\n  (130, 5) -> byte 1569\n"));
    const Json j = scaleIndexJson(*parseScaleLayout("deepgemm_mn_major"), {5, 3}, {{4, 2}});
    QCOMPARE(j.at("unit").get<std::string>(), std::string("element"));
    QCOMPARE(j.at("scales").at(0).at("offset").get<double>(), 20.0);
  }

  // A [5, 3] float grid into DeepGEMM MN-major (pitch 8: 24 floats, element (o, k) at k·8 + o)
  // and back; a grid of the wrong size is refused naming both counts.
  void scaleFiles() {
    QTemporaryDir dir;
    const auto path = [&](const char* n) { return dir.filePath(QString::fromLatin1(n)).toStdString(); };
    std::vector<float> grid(15);
    for (size_t i = 0; i < grid.size(); ++i) grid[i] = float(i + 1);
    QVERIFY(writeNpy(path("grid.npy"), {5, 3}, grid).ok());
    const ScaleLayout mn = *parseScaleLayout("deepgemm_mn_major");
    QCOMPARE(packScaleFile(mn, {5, 3}, path("grid.npy"), path("packed.npy")), std::string());
    const auto packed = importTensor(path("packed.npy"));
    QVERIFY(packed.ok());
    QCOMPARE(packed.value.f32.size(), size_t(24));
    QCOMPARE(packed.value.f32[2 * 8 + 4], 15.0f); // (4, 2): grid element 4·3 + 2 = 14, value 15
    QCOMPARE(unpackScaleFile(mn, {5, 3}, path("packed.npy"), path("back.npy")), std::string());
    QCOMPARE(importTensor(path("back.npy")).value.f32, grid);
    QCOMPARE(packScaleFile(mn, {4, 3}, path("grid.npy"), path("x.npy")),
             "'" + path("grid.npy") + "' holds 15 scales, the grid [4, 3] needs 12");
  }

  void adviceJson() {
    SiteAdvice a;
    a.run_id = "nvfp4";
    a.loss_name = "test loss (nats)";
    a.high_loss = 1.25;
    a.full_loss = 1.5;
    GroupSensitivity g;
    g.group = {"fc2", {"fc2"}};
    g.delta = 0.125;
    g.share = 0.5;
    g.sqnr_db = std::nan("");
    g.keep_high = true;
    a.groups = {g};
    a.config_json = "{}";
    const Json j = siteAdviceJson(a);
    QCOMPARE(j.at("run").get<std::string>(), std::string("nvfp4"));
    QCOMPARE(j.at("groups").at(0).at("sites"), Json::array({"fc2"}));
    QCOMPARE(j.at("groups").at(0).at("sqnr_db").get<std::string>(), std::string("nan"));
    QCOMPARE(j.at("groups").at(0).at("keep_high").get<bool>(), true);
    QCOMPARE(j.at("full_loss").get<double>(), 1.5);

    TrainingExperimentSpec spec;
    spec.runs.resize(3);
    spec.runs[0].id = "fp32";
    mlpRun(spec.runs[0]).config.precision = TrainingPrecision::FP32;
    spec.runs[1].id = "e4m3";
    mlpRun(spec.runs[1]).config.precision = TrainingPrecision::FP8;
    spec.runs[2].id = "nvfp4";
    mlpRun(spec.runs[2]).config.precision = TrainingPrecision::FP8;
    QCOMPARE(runToAdvise(spec, std::nullopt), &spec.runs[1]); // the first FP8 run
    QCOMPARE(runToAdvise(spec, std::string("nvfp4")), &spec.runs[2]);
    QCOMPARE(runToAdvise(spec, std::string("none")), nullptr);
  }

  // recipe_ranking.h's list: sqnr_db, bulk_sqnr_db, rel_err_median, ... final_test_loss.
  void metricKeys() {
    const std::string k = rankingMetricKeys();
    QVERIFY(k.rfind("sqnr_db, bulk_sqnr_db, rel_err_median, rel_err_p99, cosine, ", 0) == 0);
    QVERIFY(k.size() > 17 && k.compare(k.size() - 17, 17, ", final_test_loss") == 0);
  }

  // A CPU run reports the request and the note only; a run on the GPU adds FAST_ACCUM and the
  // CUDA versions.
  void backendFields() {
    FallbackGemmBackend b(nullptr, makeCpuGemmBackend(), BackendRequest::Auto, "no CUDA device");
    b.cuda_versions = {12080, 12090, 120805};
    GemmOptions opt;
    opt.accumulation = Accumulation::FastAccum;
    QCOMPARE(backendJson(b, "cpu", opt, "no CUDA device"),
             (Json{{"backend_request", "auto"}, {"backend_note", "no CUDA device"}}));
    const Json j = backendJson(b, "cuda", opt, "");
    QCOMPARE(j.at("fast_accum").get<bool>(), true);
    QCOMPARE(j.at("versions").at("cuda_runtime").get<int>(), 12080);
    QCOMPARE(j.at("versions").at("cublaslt").get<double>(), 120805.0);
    opt.accumulation = Accumulation::Exact;
    QCOMPARE(backendJson(b, "cuda", opt, "").at("fast_accum").get<bool>(), false);
  }
};

QTEST_GUILESS_MAIN(TestCommandReports)
#include "test_command_reports.moc"

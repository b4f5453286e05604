// The flags of `fp8lab-cli gemm` read into a GEMM config in core (experiment/gemm/gemm_flags.h),
// without the command line: defaults from the parameter schema, NVFP4 presets choosing E2M1 for
// an unset format, an accumulation preset's parameters, the epilogue's flag rules, the refusals
// naming flags. (The command itself, its output and exit codes: test_gemm_cli, test_param_schema.)
#include <QtTest>

#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/gemm_flags.h"

using namespace fp8lab;

namespace {
std::string read(const std::map<std::string, std::string>& given, GemmFlagConfig* out) {
  return gemmConfigFromFlags(given, false, out);
}
} // namespace

class TestGemmFlags : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // No flag: the schema's flag defaults (docs/gemm.md "Parameters": the gemm flags' shape is
  // 512³, the config's 256³; seed 1, E4M3FN × E4M3FN, te_current, split accumulation promoting
  // every 128, FP32 output, normal operands of scale 1): the config a `run` of {"type": "gemm",
  // "m": 512, "k": 512, "n": 512} reads, apart from what `gemm` stores (nothing without --out).
  void defaultsAreTheSchemas() {
    GemmFlagConfig f;
    QCOMPARE(QString::fromStdString(read({}, &f)), QString());
    GemmExperimentConfig run;
    QCOMPARE(QString::fromStdString(parseGemmConfig(Json{{"type", "gemm"}, {"m", 512}, {"k", 512}, {"n", 512}}, &run)),
             QString());
    run.store_inputs = run.store_quantized = run.store_error_maps = false;
    QCOMPARE(gemmConfigJson(f.config), gemmConfigJson(run));
    QCOMPARE(f.config.m, int64_t(512));
    QCOMPARE(f.config.scaling, std::string("te_current"));
    QCOMPARE(f.config.gemm.accumulation, Accumulation::SplitFP32);
    QCOMPARE(f.config.gemm.promotion_interval, 128);
  }

  // An NVFP4 preset quantizes to E2M1 (NVIDIA's NVFP4: E2M1 elements, E4M3 scales of 16): an
  // unset format becomes E2M1, a format given stays (and the whole check refuses it).
  void nvfp4PresetPicksE2m1ForAnUnsetFormat() {
    GemmFlagConfig f;
    QCOMPARE(QString::fromStdString(read({{"scaling", "nvfp4_te"}}, &f)), QString());
    QCOMPARE(f.config.format_a, std::string("E2M1"));
    QCOMPARE(f.config.format_b, std::string("E2M1"));
    GemmFlagConfig g;
    QCOMPARE(QString::fromStdString(read({{"scaling", "nvfp4_te"}, {"a-format", "E4M3FN"}}, &g)), QString());
    QCOMPARE(g.config.format_a, std::string("E4M3FN"));
    QVERIFY(!gemmFlagConfigProblem(g.config, 256, 256, 256).empty());
  }

  // --accumulation hopper_fp8: the fast-accumulation model with the preset's parameters (14
  // mantissa bits, groups of 32, promotion every 128: DeepSeek-V3 §3.3.2); a different --fast-bits
  // beside it is refused naming the preset.
  void accumulationPresetSetsItsParameters() {
    GemmFlagConfig f;
    QCOMPARE(QString::fromStdString(read({{"accumulation", "hopper_fp8"}}, &f)), QString());
    QCOMPARE(f.config.gemm.accumulation, Accumulation::FastAccum);
    QCOMPARE(f.config.gemm.fast_accum_bits, 14);
    QCOMPARE(f.config.gemm.fast_accum_group, 32);
    QCOMPARE(f.config.gemm.promotion_interval, 128);
    QCOMPARE(f.config.accumulation_preset, std::string("hopper_fp8"));
    QVERIFY(f.accumulation_preset.has_value());
    GemmFlagConfig g;
    const std::string e = read({{"accumulation", "hopper_fp8"}, {"fast-bits", "20"}}, &g);
    QVERIFY2(e.rfind("--accumulation hopper_fp8: ", 0) == 0, e.c_str());
    // The parameter is named by the flag the user typed, not its config key.
    QCOMPARE(
        QString::fromStdString(e),
        QStringLiteral("--accumulation hopper_fp8: --fast-bits 20 differs from accumulation preset hopper_fp8's 14"));
  }

  // The epilogue as cuBLASLt reads it: C only with beta ≠ 0, seeded values, and --a-scaling
  // overriding --scaling for A only.
  void epilogueAndScalingFlags() {
    GemmFlagConfig f;
    QCOMPARE(QString::fromStdString(read({{"beta", "0.5"}}, &f)),
             QStringLiteral("--beta other than 0 needs a C matrix: --c-seed N or --c-file C.npy"));
    QCOMPARE(QString::fromStdString(read({{"c-seed", "3"}}, &f)),
             QStringLiteral("--c-seed: C is read only when --beta is not 0 (cuBLASLt ignores C at beta = 0; beta "
                            "defaults to 0): add --beta 1 for D = A·B + C"));
    QCOMPARE(QString::fromStdString(read({{"bias-scale", "2"}}, &f)),
             QStringLiteral("--bias-scale needs --bias-seed (the values are seeded)"));
    GemmFlagConfig g;
    QCOMPARE(QString::fromStdString(read({{"beta", "0.5"}, {"c-seed", "3"}, {"c-scale", "2"}}, &g)), QString());
    QVERIFY(g.config.c_source.enabled);
    QCOMPARE(g.config.c_source.seed, uint64_t(3));
    QCOMPARE(g.config.c_source.scale, 2.0);
    GemmFlagConfig h;
    QCOMPARE(QString::fromStdString(read({{"a-scaling", "deepgemm_1x128"}, {"b-scaling", "deepgemm_128x128"}}, &h)),
             QString());
    QCOMPARE(h.config.scaling, std::string("deepgemm_1x128"));
    QCOMPARE(h.config.scaling_b, std::string("deepgemm_128x128"));
  }
};

QTEST_MAIN(TestGemmFlags)
#include "test_gemm_flags.moc"

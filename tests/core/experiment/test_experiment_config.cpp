// core/experiment's config model: JSON read with positions and duplicate keys refused, errors
// naming the key path with line and column, one vocabulary with aliases, the canonical
// serializer, and the desktop panel's older form read as the preset it ran with.
#include <QtTest>

#include "experiment/gemm/gemm_config.h"
#include "experiment/training/training_config.h"
#include "json/json_document.h"
#include "scaling/scaling.h"

using namespace fp8lab;

namespace {
std::string gemmError(const std::string& text) {
  try {
    const JsonDocument d = JsonDocument::parse(text);
    GemmExperimentConfig c;
    return parseGemmConfig(d.root(), &c, &d);
  } catch (const JsonTextError& e) {
    return e.what();
  }
}
} // namespace

class TestExperimentConfig : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // accumulation_preset sets the five parameters of docs/gemm.md's table; a parameter key beside
  // it must agree; alpha/beta/c/bias round-trip; a config without the new keys keeps today's
  // defaults (split, 14 bits, group 32, N_C 128, alpha 1, beta 0, no C, no bias).
  void gemmPresetAndEpilogueKeys() {
    GemmExperimentConfig c;
    QVERIFY(parseGemmConfig(Json::parse(R"({"type": "gemm", "accumulation_preset": "blackwell_fp8"})"), &c).empty());
    QCOMPARE(int(c.gemm.accumulation), int(Accumulation::FastAccum));
    QCOMPARE(c.gemm.fast_accum_bits, 26);
    QCOMPARE(c.gemm.fast_accum_group, 32);
    QCOMPARE(c.gemm.promotion_interval, 128);
    QVERIFY(!c.gemm.fast_accum_promotes); // the tensor-memory accumulator: no promotion
    QCOMPARE(int(c.gemm.mma.alignment), int(MmaAlignment::Operands));
    QCOMPARE(c.gemm.mma.sum_bits, 23);
    QCOMPARE(c.accumulation_preset, std::string("blackwell_fp8"));
    QVERIFY(QString::fromStdString(gemmError(R"({"accumulation_preset": "hopper_fp8", "fast_accum_bits": 20})"))
                .contains(QStringLiteral("fast_accum_bits 20 differs from accumulation preset hopper_fp8's 14")));
    QVERIFY(
        gemmError(R"({"accumulation_preset": "hopper_fp8", "accumulation": "fast", "fast_accum_bits": 14})").empty());
    QVERIFY(
        QString::fromStdString(gemmError(R"({"accumulation_preset": "volta"})")).contains(QStringLiteral("unknown")));
    QVERIFY(QString::fromStdString(gemmError(R"({"beta": 1})")).contains(QStringLiteral("needs a C matrix")));
    QVERIFY(QString::fromStdString(gemmError(R"({"c": {"seed": 2}})")).contains(QStringLiteral("only when beta")));
    GemmExperimentConfig e;
    QVERIFY(parseGemmConfig(Json::parse(R"({"alpha": 0.5, "beta": -2, "c": {"seed": 7, "scale": 0.25},
                                            "bias": {"seed": 9}, "accumulation_preset": "blackwell_tcgen05"})"),
                            &e)
                .empty());
    QCOMPARE(e.gemm.alpha, 0.5f);
    QCOMPARE(e.gemm.beta, -2.0f);
    QVERIFY(e.c_source.enabled && e.c_source.seed == 7 && e.c_source.scale == 0.25);
    QVERIFY(e.bias_source.enabled && e.bias_source.seed == 9 && e.bias_source.scale == 1.0);
    GemmExperimentConfig back;
    QVERIFY(parseGemmConfig(gemmConfigJson(e), &back).empty());
    QCOMPARE(QString::fromStdString(gemmConfigJson(back).dump()), QString::fromStdString(gemmConfigJson(e).dump()));
    GemmExperimentConfig old;
    QVERIFY(parseGemmConfig(Json::parse(R"({"type": "gemm", "m": 8, "k": 16, "n": 8})"), &old).empty());
    QCOMPARE(int(old.gemm.accumulation), int(Accumulation::SplitFP32));
    QCOMPARE(old.gemm.fast_accum_bits, 14);
    QCOMPARE(old.gemm.alpha, 1.0f);
    QCOMPARE(old.gemm.beta, 0.0f);
    QVERIFY(!old.c_source.enabled && !old.bias_source.enabled && old.accumulation_preset.empty());
  }
  // Line 2 is ` "b": {"x": 1, "x": 2}}`: the second "x" opens at column 16 (counted by hand:
  // space, "b", colon, space, brace, "x", colon, space, 1, comma, space → the quote is 16th).
  void duplicateKeyIsReportedAtItsQuote() {
    try {
      JsonDocument::parse("{\"a\": 1,\n \"b\": {\"x\": 1, \"x\": 2}}");
      QFAIL("accepted a duplicate key");
    } catch (const JsonTextError& e) {
      QCOMPARE(int(e.kind), int(JsonTextError::Kind::DuplicateKey));
      QCOMPARE(e.pos.line, 2);
      QCOMPARE(e.pos.column, 16);
      QCOMPARE(QString::fromStdString(e.key), QStringLiteral("x"));
    }
    // "\u0078" is "x" after unescaping (RFC 8259 §7): still the same key.
    QVERIFY_THROWS_EXCEPTION(JsonTextError, JsonDocument::parse(R"({"x": 1, "\u0078": 2})"));
    // The same key in two different objects is fine.
    JsonDocument::parse(R"({"x": {"x": 1}, "y": [{"x": 1}, {"x": 2}]})");
  }

  // Every array element has a position, scalars too. In `{"a": [12, -3.5e2 ,true,\n  null,
  // "s\"q", [7]]}` (counted by hand): 12 at column 8, -3.5e2 at 12, true at 20, then on line 2
  // null at column 3, the string's quote at 9, the inner array's '[' at 17 and its 7 at 18.
  void scalarArrayElementsHavePositions() {
    const JsonDocument d = JsonDocument::parse("{\"a\": [12, -3.5e2 ,true,\n  null, \"s\\\"q\", [7]]}");
    const auto at = [&](const char* p) {
      const auto pos = d.position(p);
      return pos ? std::make_pair(pos->line, pos->column) : std::make_pair(0, 0);
    };
    QCOMPARE(at("/a/0"), std::make_pair(1, 8));
    QCOMPARE(at("/a/1"), std::make_pair(1, 12));
    QCOMPARE(at("/a/2"), std::make_pair(1, 20));
    QCOMPARE(at("/a/3"), std::make_pair(2, 3));
    QCOMPARE(at("/a/4"), std::make_pair(2, 9));
    QCOMPARE(at("/a/5"), std::make_pair(2, 17));
    QCOMPARE(at("/a/5/0"), std::make_pair(2, 18));
    QCOMPARE(at("/a"), std::make_pair(1, 2));
  }

  void syntaxErrorsHaveAPosition() {
    try {
      JsonDocument::parse("{\"type\": \"gemm\",\n \"m\": }");
      QFAIL("accepted invalid JSON");
    } catch (const JsonTextError& e) {
      QCOMPARE(int(e.kind), int(JsonTextError::Kind::Syntax));
      QCOMPARE(e.pos.line, 2);
      QCOMPARE(e.pos.column, 7); // the '}' where a value should be
    }
  }

  // Errors name the key path and, from the document, where the key is.
  void errorsNameTheKeyPathWithLineAndColumn() {
    QCOMPARE(QString::fromStdString(gemmError("{\n  \"type\": \"gemm\",\n  \"m\": 0\n}")),
             QStringLiteral("m: expected an integer in [1, 1048576] (line 3, column 3)"));
    const QString e = QString::fromStdString(gemmError(R"({"type": "gemm", "a": {"distrbution": "normal"}})"));
    QVERIFY2(e.startsWith(QStringLiteral("a.distrbution: unknown key (known: distribution, ")), qPrintable(e));
    QVERIFY2(e.endsWith(QStringLiteral("(line 1, column 24)")), qPrintable(e));
    std::string terr;
    const JsonDocument d =
        JsonDocument::parse("{\"type\": \"training\", \"runs\": [{}, {\"scaling\": {\"strategy\": \"dalayed\"}}]}");
    QVERIFY(!parseTrainingExperiment(d.root(), &terr, &d));
    QVERIFY2(QString::fromStdString(terr).startsWith(QStringLiteral("runs[1].scaling.strategy: unknown strategy "
                                                                    "'dalayed'")),
             terr.c_str());
    QVERIFY2(QString::fromStdString(terr).endsWith(QStringLiteral("(line 1, column 48)")), terr.c_str());
  }

  // A mistake in "defaults" is reported where it was written, with the run it broke; a top-level
  // key merged into every run where it was written, named by its key alone. Line 3 of the first
  // text is `   "diagnostics": {"blok_stats": true}},`: three spaces, "diagnostics" in columns
  // 4–16, the colon, a space and the brace, so the key's quote is column 20 (counted by hand). In
  // the second, "train_limit" opens at column 22 of line 1 (`{"type": "training", ` is 21 bytes).
  void defaultsErrorsPointAtTheDefaults() {
    std::string err;
    const JsonDocument d =
        JsonDocument::parse("{\"type\": \"training\",\n \"defaults\": {\"precision\": \"fp8\",\n"
                            "   \"diagnostics\": {\"blok_stats\": true}},\n \"runs\": [{\"id\": \"a\"}]}");
    QVERIFY(!parseTrainingExperiment(d.root(), &err, &d));
    QCOMPARE(err, std::string("defaults.diagnostics.blok_stats: unknown key (known: block_stats, map_every, what_if) "
                              "(line 3, column 20) (in runs[0])"));
    const JsonDocument t = JsonDocument::parse(
        "{\"type\": \"training\", \"train_limit\": -5, \"runs\": [{\"id\": \"a\"}, {\"id\": \"b\"}]}");
    QVERIFY(!parseTrainingExperiment(t.root(), &err, &t));
    QCOMPARE(err, std::string("train_limit: expected an integer in [0, 60000] (line 1, column 22)"));
    // The run's own value wins and is reported at the run.
    const JsonDocument o = JsonDocument::parse(
        "{\"type\": \"training\", \"defaults\": {\"epochs\": 2}, \"runs\": [{\"id\": \"a\", \"epochs\": 0}]}");
    QVERIFY(!parseTrainingExperiment(o.root(), &err, &o));
    QVERIFY2(QString::fromStdString(err).startsWith(QStringLiteral("runs[0].epochs: ")), err.c_str());
    QVERIFY2(err.find("(in runs[0])") == std::string::npos, err.c_str());
  }

  // A knob the strategy lacks is refused where it asks for something (docs/training.md, the
  // strategies' "knobs" column): TE's Float8CurrentScaling has no margin or window, the delayed
  // presets no power-of-two option. "margin" opens at column 60 of line 1 (counted by hand: the
  // text up to it is `{"type": "training", ` 21 bytes, `"scaling": {` 12, `"strategy": "current-te", `
  // 26: 59 bytes).
  void strategiesRefuseKnobsTheyLack() {
    std::string err;
    const JsonDocument m =
        JsonDocument::parse(R"({"type": "training", "scaling": {"strategy": "current-te", "margin": 2}})");
    QVERIFY(!parseTrainingExperiment(m.root(), &err, &m));
    QCOMPARE(err, std::string("scaling.margin: 'current-te' scales each tensor from its own amax: it keeps no amax "
                              "history, so it has no history_len, amax_compute_algo or margin (those are "
                              "delayed-te's) (line 1, column 60)"));
    const JsonDocument p =
        JsonDocument::parse(R"({"type": "training", "scaling": {"strategy": "delayed-te", "power_of_two": true}})");
    QVERIFY(!parseTrainingExperiment(p.root(), &err, &p));
    QVERIFY2(err.find("scaling.power_of_two: 'delayed-te' computes float32 scales") == 0, err.c_str());
    // Defaults are accepted (older sessions store every knob), and saturate belongs to both.
    const JsonDocument ok = JsonDocument::parse(R"({"type": "training", "scaling": {"strategy": "current-te",
        "margin": 0, "history_len": 1024, "amax_compute_algo": "max", "saturate": false}})");
    QVERIFY2(parseTrainingExperiment(ok.root(), &err, &ok), err.c_str());
  }

  // Optimizer and spike values are checked at their keys, with the range: the default network
  // 784-256-128-10 has Linear layers 0 … 2, and fc1 takes 784 inputs. "learning_rate" opens at
  // column 36 (`{"type": "training", ` is 21 bytes, `"optimizer": {` 14).
  void optimizerAndSpikeErrorsNameTheKey() {
    std::string err;
    auto fails = [&](const char* text) {
      const JsonDocument d = JsonDocument::parse(text);
      return !parseTrainingExperiment(d.root(), &err, &d);
    };
    QVERIFY(fails(R"({"type": "training", "optimizer": {"learning_rate": -1}})"));
    QCOMPARE(err, std::string("optimizer.learning_rate: must be a positive number (Adam's step size; got -1.0) "
                              "(line 1, column 36)"));
    QVERIFY(fails(R"({"type": "training", "optimizer": {"beta2": 1}})"));
    QVERIFY2(err.find("optimizer.beta2: must be in [0, 1) (got 1.0)") == 0, err.c_str());
    QVERIFY(fails(R"({"type": "training", "spike": {"layer": 5}})"));
    QVERIFY2(err.find("spike.layer: must name a Linear layer: 0 … 2 (0-based: 0 is fc1; got 5)") == 0, err.c_str());
    QVERIFY(fails(R"({"type": "training", "spike": {"layer": 0, "col": 900}})"));
    QVERIFY2(err.find("spike.col: must be below the input size of layer 0 (fc1 takes 784 inputs: col 0 … 783)") == 0,
             err.c_str());
  }

  // gemm_on_trained_weights names its formats as a "gemm" config does (format_a / format_b) and
  // writes them so in the runs it stores; a_format / b_format, the older names, are still read;
  // both spellings of one key at once are refused naming the older one.
  void trainedWeightsGemmFormatKeys() {
    auto weightGemm = [](const char* go, std::string* err) -> std::optional<WeightGemmSpec> {
      const std::string text =
          std::string(R"({"type": "training", "runs": [{"id": "r"}], "gemm_on_trained_weights": )") + go + "}";
      const JsonDocument d = JsonDocument::parse(text);
      auto spec = parseTrainingExperiment(d.root(), err, &d);
      if (!spec) return std::nullopt;
      return spec->weight_gemm;
    };
    std::string err;
    auto g = weightGemm(R"({"format_a": "E5M2"})", &err);
    QVERIFY2(g, err.c_str());
    QCOMPARE(g->gemm.format_a->name(), std::string("E5M2"));
    QCOMPARE(g->gemm.format_b->name(), std::string("E4M3FN"));
    const Json stored = Json::parse(g->configJson(0));
    QCOMPARE(stored["format_a"].get<std::string>(), std::string("E5M2"));
    QCOMPARE(stored["format_b"].get<std::string>(), std::string("E4M3FN"));
    QVERIFY(!stored.contains("a_format"));
    // The stored config reads back as the same formats.
    const auto back = parseWeightGemmRunConfig(stored, &err);
    QVERIFY2(back, err.c_str());
    QCOMPARE(back->format_a->name(), std::string("E5M2"));
    // A run stored before, with the older names.
    const auto old = parseWeightGemmRunConfig(Json::parse(R"({"a_format": "E4M3FN", "b_format": "E5M2"})"), &err);
    QVERIFY2(old, err.c_str());
    QCOMPARE(old->format_b->name(), std::string("E5M2"));
    g = weightGemm(R"({"b_format": "E5M2"})", &err);
    QVERIFY2(g, err.c_str());
    QCOMPARE(g->gemm.format_b->name(), std::string("E5M2"));
    QVERIFY(!weightGemm(R"({"format_a": "E5M2", "a_format": "E5M2"})", &err));
    QVERIFY2(err.find("gemm_on_trained_weights.a_format: give \"format_a\" only") == 0, err.c_str());
    QVERIFY(!weightGemm(R"({"format_b": "E9M9"})", &err));
    QVERIFY2(err.find("gemm_on_trained_weights.format_b:") == 0, err.c_str());
  }

  // One spelling table: flags, configs, training configs and the panel's "split-fp32" alike.
  void vocabularyAcceptsEveryOldSpelling() {
    for (const char* s : {"split", "split_fp32", "split-fp32", "SPLIT_FP32", "splitfp32"})
      QCOMPARE(int(parseAccumulation(s).value_or(Accumulation::Exact)), int(Accumulation::SplitFP32));
    for (const char* s : {"fast", "fast_accum", "fast-accum", "fastaccum"})
      QCOMPARE(int(parseAccumulation(s).value_or(Accumulation::Exact)), int(Accumulation::FastAccum));
    QCOMPARE(int(parseAccumulation("double").value_or(Accumulation::FP32)), int(Accumulation::Exact));
    QVERIFY(!parseAccumulation("splt"));
    QCOMPARE(int(parseOutputType("E4M3").value_or(OutputType::FP32)), int(OutputType::E4M3FN));
    QCOMPARE(int(parseOutputType("bfloat16").value_or(OutputType::FP32)), int(OutputType::BF16));
  }

  // Every preset a GEMM takes survives gemmConfigJson → parseGemmConfig, with its random-operand
  // settings, a seed above 2^53 (written as text) and an FP8 output scale.
  void canonicalConfigRoundTripsEveryPreset() {
    int n = 0;
    for (const auto& p : scalingPresets()) {
      const auto sp = scalingPreset(p.name);
      if (!sp || !gemmScalingProblem(*sp, Axis::Cols).empty() || !gemmScalingProblem(*sp, Axis::Rows).empty()) continue;
      GemmExperimentConfig c;
      c.m = 17;
      c.k = 300;
      c.n = 5;
      c.seed = (uint64_t(1) << 60) + 3;
      c.scaling = p.name;
      c.format_b = "E5M2";
      c.a.random.distribution = Distribution::Outliers;
      c.a.random.outlier_fraction = 0.25;
      c.b.random.scale = 3.5;
      c.gemm.accumulation = Accumulation::FastAccum;
      c.gemm.output = OutputType::E4M3FN;
      c.gemm.output_quant_scale = 0.125f;
      c.store_quantized = false;
      const Json j = gemmConfigJson(c, "x");
      GemmExperimentConfig back;
      QCOMPARE(QString::fromStdString(parseGemmConfig(j, &back)), QString());
      QCOMPARE(QString::fromStdString(gemmConfigJson(back, "x").dump()), QString::fromStdString(j.dump()));
      QCOMPARE(back.seed, c.seed);
      QCOMPARE(QString::fromStdString(back.scaling), QString::fromStdString(p.name));
      QVERIFY(j["seed"].is_string());
      ++n;
    }
    QVERIFY(n >= 15);
  }

  // The older panel form: "per-row" with TE → torchao_rowwise (the only row-wise preset a GEMM
  // takes), sigma → both operands' scale, "split-fp32" → split; the same run as the canonical
  // config written by hand from those rules.
  void olderPanelConfigRunsAsItsPreset() {
    const Json legacy = Json::parse(R"({"a_format": "E5M2", "b_format": "E4M3FN", "m": 24, "n": 16, "k": 64,
      "scaling": "per-row", "preset": "te", "pow2_scales": false, "accumulation": "split-fp32", "output": "bf16",
      "input": "distribution", "distribution": "uniform", "sigma": 2.0, "seed": 9, "backend": "auto",
      "run_id": "run-0007", "history_len": 1024, "amax_algo": "max", "margin": 0, "block": 128,
      "mx_rule": "floor", "promotion_interval": 128, "fast_accum_bits": 14, "import_path": "",
      "training_run": ""})");
    const Json canonical = Json::parse(R"({"type": "gemm", "format_a": "E5M2", "format_b": "E4M3FN", "m": 24,
      "n": 16, "k": 64, "scaling": "torchao_rowwise", "accumulation": "split", "output": "bf16", "seed": 9,
      "a": {"distribution": "uniform", "scale": 2.0}, "b": {"distribution": "uniform", "scale": 2.0}})");
    GemmExperimentConfig a, b;
    QCOMPARE(QString::fromStdString(parseGemmConfig(legacy, &a)), QString());
    QCOMPARE(QString::fromStdString(parseGemmConfig(canonical, &b)), QString());
    QCOMPARE(QString::fromStdString(gemmConfigJson(a).dump()), QString::fromStdString(gemmConfigJson(b).dump()));
    // Flax has no per-tensor current scaling: refused, naming why.
    Json flax = legacy;
    flax["scaling"] = "per-tensor-current";
    flax["preset"] = "flax";
    GemmExperimentConfig f;
    QVERIFY(QString::fromStdString(parseGemmConfig(flax, &f)).contains(QStringLiteral("no per-tensor current")));
  }
};

QTEST_MAIN(TestExperimentConfig)
#include "test_experiment_config.moc"

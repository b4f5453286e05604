// Training diagnostics (core/training/diagnostics.h): per-block statistics of the recipe that
// trained and what-if recipes, on images whose every value is known (every pixel 0.5 except one
// 1.0), so the scales and SQNRs of the first step are derived by hand below; the what-if path is
// checked against the training path where both run the same recipe; the session layout
// (docs/session-format.md) and the config keys.
#include <QtTest>

#include "experiment/training/training_config.h"
#include "json/json_document.h"
#include "training/diagnostics.h"
#include "training/trainer.h"
#include "training/training_session.h"
#include "uniform_images.h"

#include <cmath>
#include <cstring>

using namespace fp8lab;

namespace {

constexpr int64_t kHot = test::kHotPixel;

const ImageDataset& trainSet() {
  return test::uniformTrainSet();
}
const ImageDataset& testSet() {
  return test::uniformTestSet();
}

WhatIfRecipe recipe(const std::string& id) {
  std::string why;
  const auto r = parseWhatIfRecipe(id, &why);
  if (!r) qFatal("%s", why.c_str());
  return *r;
}

/// 8 steps per epoch (batch 64 of 512), 3 epochs = 24 steps; maps every 10 steps, what-if every 8.
TrainingConfig baseConfig(TrainingScalingKind kind, std::vector<std::string> what_if) {
  TrainingConfig c;
  c.precision = TrainingPrecision::FP8;
  c.scaling.kind = kind;
  c.scaling.history_len = 4;
  c.batch_size = 64;
  c.epochs = 3;
  c.eval_batch_size = 16;
  c.seed = 20261201;
  c.threads = 2;
  c.forward_gemm.threads = c.backward_gemm.threads = 2;
  c.diagnostics.map_every = 10;
  c.diagnostics.what_if_every = 8;
  for (const std::string& id : what_if) c.diagnostics.what_if.push_back(recipe(id));
  return c;
}

TrainingResult train(const TrainingConfig& c) {
  TrainingRun run(c, trainSet(), testSet());
  run.run();
  return run.takeResult();
}

const OperandBlockSeries* series(const std::vector<OperandBlockSeries>& v, const std::string& layer,
                                 const std::string& op) {
  for (const OperandBlockSeries& s : v)
    if (s.layer == layer && s.operand == op) return &s;
  return nullptr;
}

const WhatIfSeries* whatIf(const TrainingResult& r, const std::string& id) {
  for (const WhatIfSeries& w : r.diagnostics.what_if)
    if (w.id == id) return &w;
  return nullptr;
}

bool sameBits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

} // namespace

class TestTrainingDiagnostics : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // Step 0 of a per-tensor current (TE) run: fc1's input x [64, 784] is 0.5 everywhere except
  // x[:, 300] = 1, so amax 1, quant scale 448/1 = 448, dequant f32(1/448); 0.5·448 = 224 and 448
  // are E4M3FN values, so the codes are exact and the only error is the dequant factor's
  // rounding: x̂ / x = 448 · f32(1/448) for every element, SQNR = −20·log10|448 · f32(1/448) − 1|.
  // No underflow or saturation, range log2(1/0.5) = 1 bit, one block (per tensor), log2 scale =
  // log2(f32(1/448)).
  void perTensorStepZeroByHand() {
    const TrainingResult r = train(baseConfig(TrainingScalingKind::CurrentTE, {}));
    const OperandBlockSeries* s = series(r.diagnostics.block_stats, "fc1", "input");
    QVERIFY(s);
    QCOMPARE(s->steps.size(), size_t{24});
    QCOMPARE(s->grid_rows * s->grid_cols, int64_t{1});
    QCOMPARE(s->scale_format, std::string("float32"));
    QCOMPARE(s->quantization, std::string("per-tensor current-te E4M3FN"));
    const BlockStatsSummary& z = s->steps[0];
    const double rel = std::fabs(448.0 * static_cast<double>(1.0f / 448.0f) - 1.0);
    QVERIFY2(std::fabs(z.sqnr_db - static_cast<float>(-20.0 * std::log10(rel))) < 1e-3f,
             std::to_string(z.sqnr_db).c_str());
    QCOMPARE(z.underflow_fraction, 0.0f);
    QCOMPARE(z.saturation_fraction, 0.0f);
    QCOMPARE(z.max_dynamic_range, 1.0f);
    QCOMPARE(z.log2_scale_mean, static_cast<float>(std::log2(static_cast<double>(1.0f / 448.0f))));
    QCOMPARE(z.log2_scale_std, 0.0f);
    // maps at 0, 10, 20 and the last step 23
    QCOMPARE(s->map_steps, (std::vector<int64_t>{0, 10, 20, 23}));
    QCOMPARE(s->maps.size(), size_t{4});
    QCOMPARE(s->maps[0].amax, (std::vector<float>{1.0f}));
    QCOMPARE(s->maps[0].min_nonzero, (std::vector<float>{0.5f}));
    // the block counts agree with the per-step history's counts at every step
    const OperandHistory* h = r.find("fc1/kernel");
    const OperandBlockSeries* k = series(r.diagnostics.block_stats, "fc1", "kernel");
    for (size_t t = 0; t < k->steps.size(); ++t) {
      QCOMPARE(k->steps[t].underflow, h->underflow[t]);
      QCOMPARE(k->steps[t].saturated, h->saturated[t]);
    }
  }

  // What-if at step 0 on the same input, derived by hand:
  //   mx_rceil (E4M3FN, 1×32 along in): 25 blocks per row (the last of 16); block 9 (columns
  //     288..319) holds the 1.0: scale 2^ceil(log2(1/448)) = 2^−8; the other 24 have amax 0.5:
  //     2^ceil(log2(0.5/448)) = 2^−9. log2 scales: mean (−8 − 24·9)/25 = −8.96, std
  //     sqrt((64 + 24·81)/25 − 8.96²) = sqrt(0.0384) = 0.195959; elements 256 both: exact.
  //   delayed_L4 (TE): the initial scale is 1: 0.5 and 1 are E4M3FN values: exact, log2 scale 0.
  //   te_current: the recipe that trained: the same numbers as block_stats at every what-if step.
  void whatIfByHandAndAgainstTheTrainedRecipe() {
    const TrainingResult r =
        train(baseConfig(TrainingScalingKind::CurrentTE, {"mx_rceil", "delayed_L4", "te_current", "nvfp4_te"}));
    QCOMPARE(r.diagnostics.what_if_steps, (std::vector<int64_t>{0, 8, 16, 23}));
    const WhatIfSeries* mx = whatIf(r, "mx_rceil");
    QVERIFY(mx);
    const OperandBlockSeries* mi = series(mx->operands, "fc1", "input");
    QCOMPARE(mi->grid_rows, int64_t{64});
    QCOMPARE(mi->grid_cols, int64_t{25});
    QCOMPARE(mi->scale_format, std::string("E8M0FNU"));
    QCOMPARE(mi->steps.size(), size_t{4});
    QCOMPARE(mi->steps[0].log2_scale_min, -9.0f);
    QCOMPARE(mi->steps[0].log2_scale_max, -8.0f);
    QVERIFY(std::fabs(mi->steps[0].log2_scale_mean - (-8.96f)) < 1e-5f);
    QVERIFY(std::fabs(mi->steps[0].log2_scale_std - 0.195959f) < 1e-5f);
    QVERIFY(std::isinf(mi->steps[0].sqnr_db));
    // the output gradient is E5M2 by default (HYBRID), E4M3FN with the suffix
    QCOMPARE(series(mx->operands, "fc1", "output_grad")->format, std::string("E5M2"));
    const OperandBlockSeries* di = series(whatIf(r, "delayed_L4")->operands, "fc1", "input");
    QCOMPARE(di->steps[0].log2_scale_mean, 0.0f);
    QVERIFY(std::isinf(di->steps[0].sqnr_db));
    QCOMPARE(series(whatIf(r, "nvfp4_te")->operands, "fc1", "input")->format, std::string("E2M1"));
    // te_current as a what-if equals the trained te_current, bit for bit, operand by operand
    const WhatIfSeries* cur = whatIf(r, "te_current");
    for (const OperandBlockSeries& w : cur->operands) {
      const OperandBlockSeries* t = series(r.diagnostics.block_stats, w.layer, w.operand);
      QVERIFY(t);
      for (size_t i = 0; i < r.diagnostics.what_if_steps.size(); ++i) {
        const BlockStatsSummary& a = w.steps[i];
        const BlockStatsSummary& b = t->steps[static_cast<size_t>(r.diagnostics.what_if_steps[i])];
        QVERIFY2(sameBits(a.sqnr_db, b.sqnr_db) && sameBits(a.log2_scale_mean, b.log2_scale_mean) &&
                     a.underflow == b.underflow && a.saturated == b.saturated,
                 (w.layer + "/" + w.operand + " step " + std::to_string(r.diagnostics.what_if_steps[i])).c_str());
      }
    }
  }

  // A delayed (TE) run with amax_history_len 4 and the what-if delayed_L4: the what-if keeps its
  // own TE DelayedScaling state from the operand's amaxes; it must reproduce the scale the run
  // trained with, so every what-if row equals the trained row of that step, bit for bit.
  void delayedWhatIfReproducesTheDelayedRun() {
    const TrainingResult r = train(baseConfig(TrainingScalingKind::DelayedTE, {"delayed_L4"}));
    const WhatIfSeries* w = whatIf(r, "delayed_L4");
    QVERIFY(w);
    for (const OperandBlockSeries& s : w->operands) {
      const OperandBlockSeries* t = series(r.diagnostics.block_stats, s.layer, s.operand);
      for (size_t i = 0; i < r.diagnostics.what_if_steps.size(); ++i) {
        const BlockStatsSummary& a = s.steps[i];
        const BlockStatsSummary& b = t->steps[static_cast<size_t>(r.diagnostics.what_if_steps[i])];
        QVERIFY2(sameBits(a.log2_scale_mean, b.log2_scale_mean) && sameBits(a.sqnr_db, b.sqnr_db),
                 (s.layer + "/" + s.operand).c_str());
      }
    }
  }

  // A block recipe (te_mxfp8): fc1's input at step 0 has the grid and E8M0 codes of the hand
  // derivation above: code 127 − 8 = 119 in block column 9 of every row, 118 elsewhere.
  void blockRecipeMapsHoldTheScaleCodes() {
    TrainingConfig c = baseConfig(TrainingScalingKind::CurrentTE, {});
    c.recipe.recipe = TrainingRecipe::TeMxfp8;
    const TrainingResult r = train(c);
    const OperandBlockSeries* s = series(r.diagnostics.block_stats, "fc1", "input");
    QVERIFY(s);
    QCOMPARE(s->scale_format, std::string("E8M0FNU"));
    QCOMPARE(s->grid_rows, int64_t{64});
    QCOMPARE(s->grid_cols, int64_t{25});
    const BlockStatsMap& m = s->maps.at(0);
    for (int64_t i = 0; i < 64; ++i)
      for (int64_t j = 0; j < 25; ++j) QCOMPARE(int(m.scale_code[static_cast<size_t>(i * 25 + j)]), j == 9 ? 119 : 118);
  }

  // te_nvfp4 quantizes weights in 16×16 tiles: their statistics are per tile — fc1's kernel W
  // [784, 256] has a 49 × 16 grid of 16×16 blocks; the input x [64, 784] keeps 1×16 blocks
  // (64 × 49).
  void nvfp4WeightStatisticsArePerTile() {
    TrainingConfig c = baseConfig(TrainingScalingKind::CurrentTE, {"nvfp4_te_2d"});
    c.recipe.recipe = TrainingRecipe::TeNvfp4;
    c.epochs = 1;
    const TrainingResult r = train(c);
    const OperandBlockSeries* k = series(r.diagnostics.block_stats, "fc1", "kernel");
    QVERIFY(k);
    QCOMPARE(k->block, (ScaleBlock{16, 16}));
    QCOMPARE(k->grid_rows, int64_t{49});
    QCOMPARE(k->grid_cols, int64_t{16});
    const OperandBlockSeries* x = series(r.diagnostics.block_stats, "fc1", "input");
    QCOMPARE(x->block, (ScaleBlock{1, 16}));
    QCOMPARE(x->grid_cols, int64_t{49});
    const OperandBlockSeries* w = series(whatIf(r, "nvfp4_te_2d")->operands, "fc1", "kernel");
    QCOMPARE(w->block, (ScaleBlock{16, 16}));
    // fc3's kernel [128, 10] is quantized zero padded to [128, 16]; its statistics cover the real
    // [128, 10]: 8 × 1 tiles of 16 × 16, the last column of each cut to 10 elements.
    for (const OperandBlockSeries* f3 : {series(r.diagnostics.block_stats, "fc3", "kernel"),
                                         series(whatIf(r, "nvfp4_te_2d")->operands, "fc3", "kernel")}) {
      QVERIFY(f3);
      QCOMPARE(f3->rows, int64_t{128});
      QCOMPARE(f3->cols, int64_t{10});
      QCOMPARE(f3->grid_rows, int64_t{8});
      QCOMPARE(f3->grid_cols, int64_t{1});
    }
  }

  // The session layout of docs/session-format.md: shapes, units and the group attributes.
  void sessionLayout() {
    const TrainingConfig c = baseConfig(TrainingScalingKind::DelayedFlax, {"mx_rceil", "delayed_L16_most_recent"});
    const TrainingResult r = train(c);
    const Run run = trainingRunToSession(r, "d", trainingConfigJson(c, "d"));
    const Dataset* sq = run.find("block_stats/fc2/output_grad/sqnr_db");
    QVERIFY(sq);
    QCOMPARE(sq->shape, (std::vector<int64_t>{24}));
    QCOMPARE(attrString(sq->attrs, "units").value_or(""), std::string("dB"));
    const Dataset* ms = run.find("block_stats/fc1/input/map_scale");
    QVERIFY(ms);
    QCOMPARE(ms->shape, (std::vector<int64_t>{4, 1, 1}));
    QVERIFY(!run.find("block_stats/fc1/input/map_scale_code")); // float32 per-tensor scales
    QCOMPARE(run.find("block_stats/fc1/input/map_steps")->i64, (std::vector<int64_t>{0, 10, 20, 23}));
    const Attributes& ga = run.group_attrs.at("block_stats/fc1/input");
    QCOMPARE(attrString(ga, "scale_format").value_or(""), std::string("float32"));
    QCOMPARE(attrInt(ga, "map_every").value_or(-1), int64_t{10});
    QCOMPARE(run.find("what_if/steps")->i64, (std::vector<int64_t>{0, 8, 16, 23}));
    const Dataset* wm = run.find("what_if/mx_rceil/fc1/input/log2_scale_mean");
    QVERIFY(wm);
    QCOMPARE(wm->shape, (std::vector<int64_t>{4}));
    QVERIFY(run.find("what_if/delayed_L16_most_recent/fc3/kernel/sqnr_db"));
    QCOMPARE(attrString(run.group_attrs.at("what_if"), "recipes").value_or(""),
             std::string("mx_rceil,delayed_L16_most_recent"));
    QCOMPARE(attrInt(run.group_attrs.at("what_if/mx_rceil/fc1/input"), "grid_cols").value_or(0), int64_t{25});
  }

  void configKeys() {
    const JsonDocument d = JsonDocument::parse(R"({"type": "training",
        "diagnostics": {"map_every": 100, "what_if": {"every": 20, "recipes": ["te_current", "mx_rceil@E4M3FN",
        "delayed_L16", "nvfp4_te"]}}})");
    std::string err;
    const auto spec = parseTrainingExperiment(d.root(), &err, &d);
    QVERIFY2(spec, err.c_str());
    const TrainingDiagnostics& dg = mlpRun(spec->runs.at(0)).config.diagnostics;
    QCOMPARE(dg.map_every, 100);
    QCOMPARE(dg.what_if_every, 20);
    QCOMPARE(dg.what_if.size(), size_t{4});
    QCOMPARE(dg.what_if[1].format, &Format::E4M3FN());
    QCOMPARE(dg.what_if[2].delayed.history_len, 16);
    // the stored config reads back to the same recipes
    const JsonDocument back = JsonDocument::parse(spec->runs[0].configJson());
    const auto again = parseTrainingExperiment(back.root(), &err, &back);
    QVERIFY2(again, err.c_str());
    QCOMPARE(mlpRun(again->runs[0]).config.diagnostics.what_if.size(), size_t{4});
    QCOMPARE(mlpRun(again->runs[0]).config.diagnostics.what_if[1].id, std::string("mx_rceil@E4M3FN"));
    QCOMPARE(mlpRun(again->runs[0]).config.diagnostics.map_every, 100);
    // an unknown recipe is named, with where it is
    const JsonDocument bad = JsonDocument::parse(
        R"({"type": "training", "diagnostics": {"what_if": {"recipes": ["te_current", "mx_bogus"]}}})");
    QVERIFY(!parseTrainingExperiment(bad.root(), &err, &bad));
    QVERIFY2(err.find("diagnostics.what_if.recipes[1]: what-if recipe 'mx_bogus': unknown recipe") == 0, err.c_str());
    // The quote that opens "mx_bogus" is column 76 of line 1 (counted by hand: the array's '['
    // is column 61, "te_current" takes 62..73 and ", " 74..75).
    QVERIFY2(QString::fromStdString(err).endsWith(QStringLiteral("(line 1, column 76)")), err.c_str());
    // A recipe given twice is reported at its second place: line 2, column 5 (four spaces
    // before the quote).
    const JsonDocument twice = JsonDocument::parse("{\"type\": \"training\", \"diagnostics\": {\"what_if\": "
                                                   "{\"recipes\": [\"mx_rceil\",\n    \"mx_rceil\"]}}}");
    QVERIFY(!parseTrainingExperiment(twice.root(), &err, &twice));
    QCOMPARE(err, std::string("diagnostics.what_if.recipes[1]: 'mx_rceil' is listed twice (line 2, column 5)"));
    std::string why;
    QVERIFY(!parseWhatIfRecipe("te_delayed", &why));
    QVERIFY2(why.find("use delayed_L<N>") != std::string::npos, why.c_str());
    QVERIFY(!parseWhatIfRecipe("delayed_L0", &why));
    QVERIFY(!parseWhatIfRecipe("nvfp4_te@E4M3FN", &why));
    QVERIFY(!parseWhatIfRecipe("mx_rceil@BF16", &why));
    // "E4M3" names OCP E4M3FN in TE's fp8_format but the IEEE-style format by name: refused.
    QVERIFY(!parseWhatIfRecipe("mx_rceil@E4M3", &why));
    QVERIFY2(why.find("'@E4M3' is ambiguous: write @E4M3FN") != std::string::npos, why.c_str());
    QVERIFY(!parseWhatIfRecipe("mx_rceil@e4m3", &why));
    const auto ieee = parseWhatIfRecipe("mx_rceil@float8_e4m3", &why);
    QVERIFY(ieee);
    QCOMPARE(ieee->format, &Format::E4M3());
    QCOMPARE(parseWhatIfRecipe("mx_rceil@E4M3FN", &why)->format, &Format::E4M3FN());
    // One recipe, one id: the canonical spelling, so that two spellings are caught as one listed twice.
    QCOMPARE(parseWhatIfRecipe("delayed_L016", &why)->id, std::string("delayed_L16"));
    QCOMPARE(parseWhatIfRecipe("mx_rceil@e4m3fn", &why)->id, std::string("mx_rceil@E4M3FN"));
    QCOMPARE(ieee->id, std::string("mx_rceil@float8_e4m3"));
    const JsonDocument dup = JsonDocument::parse(
        R"({"type": "training", "diagnostics": {"what_if": {"recipes": ["delayed_L16", "delayed_L016"]}}})");
    QVERIFY(!parseTrainingExperiment(dup.root(), &err, &dup));
    QVERIFY2(err.find("recipes[1]: 'delayed_L16' is listed twice") != std::string::npos, err.c_str());
  }
};

QTEST_APPLESS_MAIN(TestTrainingDiagnostics)
#include "test_training_diagnostics.moc"

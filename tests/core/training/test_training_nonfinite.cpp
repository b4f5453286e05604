// The first non-finite value of a training run: an overflow injected at a known step, layer and
// element (a single-element spike with a non-saturating cast, or an FP16 GEMM output) is recorded
// exactly; on_nonfinite stop keeps the finished steps, continue trains on and keeps the first
// record; a clean run records nothing; the config key and the session group.
#include <QtTest>

#include "experiment/training/training_config.h"
#include "experiment/training/training_experiment.h"
#include "json/json_document.h"
#include "training/nonfinite.h"
#include "training/trainer.h"
#include "training/training_session.h"
#include "uniform_images.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace fp8lab;

namespace {

constexpr int64_t kHot = test::kHotPixel;
constexpr int64_t kStep = 5; // the spike step (epoch 0: batches of 64 from 512 images → 8 steps)
constexpr int64_t kRow = 5;  // the spiked batch row

// Every image is the same (uniform_images.h): whatever the shuffle, batch row kRow of step kStep
// holds it, so the spiked element x[kRow, kHot] is 1.0 · factor and every other element of the
// batch is 0.5 or 1.0.
const ImageDataset& trainSet() {
  return test::uniformTrainSet();
}
const ImageDataset& testSet() {
  return test::uniformTestSet();
}

TrainingConfig baseConfig(TrainingScalingKind kind) {
  TrainingConfig c;
  c.precision = TrainingPrecision::FP8;
  c.scaling.kind = kind;
  c.scaling.history_len = 4;
  c.batch_size = 64; // 8 steps per epoch
  c.epochs = 3;      // 24 steps
  c.eval_batch_size = 16;
  c.seed = 20261201;
  c.threads = 2;
  c.forward_gemm.threads = c.backward_gemm.threads = 2;
  return c;
}

/// Delayed (TE) scaling with a non-saturating E4M3FN cast, margin 4, and x[kRow, kHot] × 1e6 at
/// step kStep. The scale in use came from amaxes of 1.0: quant scale (448 / 1) / 2^4 = 28, so that
/// element scales to 2.8e7 ≫ 464 (E4M3FN's rounding limit) and becomes NaN (E4M3FN has no Inf);
/// every other element scales to ≤ 28 and stays finite. The float32 input 1e6 is finite, so the
/// quantized fprop.input of fc1 is the first non-finite tensor of the run. (The margin keeps the
/// other operands inside the range: without saturation, delayed scaling overflows by itself as
/// soon as an amax grows past the window's max — fc2's input does so at step 2 with margin 0.)
TrainingConfig quantizedOverflowConfig(NonFinitePolicy policy) {
  TrainingConfig c = baseConfig(TrainingScalingKind::DelayedTE);
  c.scaling.margin = 4;
  c.scaling.saturate = false;
  c.spike = {true, kStep, 1e6f, 0, kRow, kHot};
  c.on_nonfinite = policy;
  return c;
}

bool sameFloat(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

TrainingResult train(const TrainingConfig& c) {
  TrainingRun run(c, trainSet(), testSet());
  run.run();
  return run.takeResult();
}

} // namespace

class TestTrainingNonFinite : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void quantizedOperandOverflowIsRecorded_data();
  void quantizedOperandOverflowIsRecorded();
  void gemmOutputOverflowRecordsTheDotProduct();
  void cleanRunRecordsNothing();
  void sameSeedGivesTheSameRecord();
  void sessionGroupHoldsTheRecord();
  void experimentGoesOnAndSkipsTheGemmOnNonFiniteWeights();
  void weightGemmNamesTheStoredTrainingRun();
  void configReadsTheKeys();
  void configRefusesAnUnknownPolicy();
  void largestDotTermsOrder();
  void finiteChecks();
};

void TestTrainingNonFinite::quantizedOperandOverflowIsRecorded_data() {
  QTest::addColumn<int>("policy");
  QTest::newRow("stop") << static_cast<int>(NonFinitePolicy::Stop);
  QTest::newRow("continue") << static_cast<int>(NonFinitePolicy::Continue);
}

void TestTrainingNonFinite::quantizedOperandOverflowIsRecorded() {
  QFETCH(int, policy);
  const auto p = static_cast<NonFinitePolicy>(policy);
  const TrainingResult r = train(quantizedOverflowConfig(p));
  const NonFiniteRecord& n = r.first_nonfinite;
  QVERIFY(n.found);
  QCOMPARE(n.step, kStep);
  QCOMPARE(QString::fromStdString(n.layer), QStringLiteral("fc1"));
  QCOMPARE(QString::fromStdString(n.tensor), QStringLiteral("fprop.input"));
  QCOMPARE(QString::fromStdString(n.kind), QStringLiteral("quantized_operand"));
  QCOMPARE(n.rows, int64_t{64});
  QCOMPARE(n.cols, int64_t{784});
  QCOMPARE(n.row, kRow);
  QCOMPARE(n.col, kHot);
  QVERIFY(std::isnan(n.value));
  const OperandHistory& in = *r.find("fc1/input");
  // The inputs of the quantization: x = 1.0 · 1e6 (exact), and the scale of step kStep, which
  // the window {1, 1, 1, 1} set to quant 28 (TE: (448 / amax) / 2^margin), dequant 1/28.
  QCOMPARE(n.input_names, (std::vector<std::string>{"x", "quant_scale", "dequant_scale"}));
  QCOMPARE(n.inputs.size(), size_t{3});
  QVERIFY(sameFloat(n.inputs[0], 1e6f));
  QVERIFY(sameFloat(n.inputs[1], 28.0f));
  QVERIFY(sameFloat(n.inputs[2], 1.0f / 28.0f));
  QVERIFY(sameFloat(in.dequant_scale[size_t(kStep)], 1.0f / 28.0f));
  QVERIFY(sameFloat(in.amax[size_t(kStep)], 1e6f));
  QCOMPARE(in.saturated[size_t(kStep)], int64_t{1}); // the one overflowing element, nothing else
  QCOMPARE(in.saturated[size_t(kStep - 1)], int64_t{0});
  if (p == NonFinitePolicy::Stop) {
    // Stop: the step of the record is finished and recorded; nothing after it ran.
    QVERIFY(r.stopped_nonfinite);
    QVERIFY(!r.cancelled);
    QCOMPARE(r.steps_done, kStep + 1);
    QCOMPARE(r.loss.size(), size_t(kStep + 1));
    QCOMPARE(in.amax.size(), size_t(kStep + 1));
    QVERIFY(r.epochs.empty()); // epoch 1 (8 steps) did not finish: no evaluation
    for (int64_t t = 0; t < kStep; ++t) QVERIFY(std::isfinite(r.loss[size_t(t)]));
  } else {
    // Continue: all 24 steps; the NaN reached the weights at step kStep's update, so step
    // kStep + 1 is non-finite from its first GEMM on — yet the record still names step kStep.
    QVERIFY(!r.stopped_nonfinite);
    QCOMPARE(r.steps_done, int64_t{24});
    QCOMPARE(r.epochs.size(), size_t{3});
    QVERIFY(std::isnan(r.loss[size_t(kStep + 1)]));
    QVERIFY(std::isnan(r.loss.back()));
  }
}

void TestTrainingNonFinite::gemmOutputOverflowRecordsTheDotProduct() {
  // Current (TE) scaling with saturating casts: x[kRow, kHot] × 1e30 sets the amax, so that
  // element is coded 448 (1e30 · 448/1e30 rounds to 448) and every other element of the batch
  // (≤ 1 · 448/1e30) underflows to 0. Rows 0 … kRow−1 of A are zero; row kRow has the one term
  // k = kHot ≈ 1e30 · W[kHot, j]. The forward GEMM's FP16 output (IEEE conversion, overflow to
  // ±Inf) makes D[kRow, 0] ±Inf: the first element in row-major order. The quantized operands
  // are finite (saturating), so fprop.output is the first non-finite tensor.
  TrainingConfig c = baseConfig(TrainingScalingKind::CurrentTE);
  c.spike = {true, kStep, 1e30f, 0, kRow, kHot};
  c.forward_gemm.output = OutputType::FP16;
  const TrainingResult r = train(c);
  const NonFiniteRecord& n = r.first_nonfinite;
  QVERIFY(n.found);
  QVERIFY(r.stopped_nonfinite); // the default policy
  QCOMPARE(r.steps_done, kStep + 1);
  QCOMPARE(n.step, kStep);
  QCOMPARE(QString::fromStdString(n.layer), QStringLiteral("fc1"));
  QCOMPARE(QString::fromStdString(n.tensor), QStringLiteral("fprop.output"));
  QCOMPARE(QString::fromStdString(n.kind), QStringLiteral("gemm_output"));
  QCOMPARE(n.rows, int64_t{64});
  QCOMPARE(n.cols, int64_t{256});
  QCOMPARE(n.row, kRow);
  QCOMPARE(n.col, int64_t{0});
  QCOMPARE(n.k_len, int64_t{784});
  QVERIFY(std::isinf(n.value));
  const OperandHistory& in = *r.find("fc1/input");
  const OperandHistory& w = *r.find("fc1/kernel");
  QCOMPARE(QString::fromStdString(n.a_operand), QStringLiteral("fc1/input"));
  QCOMPARE(QString::fromStdString(n.b_operand), QStringLiteral("fc1/kernel"));
  QVERIFY(sameFloat(n.a_amax, 1e30f));
  QVERIFY(sameFloat(n.a_scale, in.dequant_scale[size_t(kStep)]));
  QVERIFY(sameFloat(n.b_amax, w.amax[size_t(kStep)]));
  QVERIFY(sameFloat(n.b_scale, w.dequant_scale[size_t(kStep)]));
  QVERIFY(!n.terms_before_quantization);
  QCOMPARE(n.terms.size(), size_t{NonFiniteRecord::kTopTerms});
  // The one non-zero term: k = kHot, a = 448 · scale (code 448), b = the quantized W[kHot, 0];
  // its sign is the sign of the infinity.
  const DotTerm& t0 = n.terms[0];
  QCOMPARE(t0.k, kHot);
  QVERIFY(sameFloat(t0.a, 448.0f * in.dequant_scale[size_t(kStep)]));
  QVERIFY(t0.b != 0.0f);
  QCOMPARE(t0.product, static_cast<double>(t0.a) * static_cast<double>(t0.b));
  QCOMPARE(n.value > 0, t0.product > 0);
  // The other seven are zero terms (a underflowed to 0), ties in ascending k: 0 … 6.
  for (size_t i = 1; i < n.terms.size(); ++i) {
    QCOMPARE(n.terms[i].k, static_cast<int64_t>(i - 1));
    QCOMPARE(n.terms[i].a, 0.0f);
    QCOMPARE(n.terms[i].product, 0.0);
  }
  // The input and the quantized operands were finite at that step: nothing clipped.
  QCOMPARE(in.saturated[size_t(kStep)], int64_t{0});
}

void TestTrainingNonFinite::cleanRunRecordsNothing() {
  TrainingConfig c = baseConfig(TrainingScalingKind::DelayedFlax);
  c.epochs = 1;
  const TrainingResult r = train(c);
  QVERIFY(!r.first_nonfinite.found);
  QVERIFY(!r.stopped_nonfinite);
  QCOMPARE(r.steps_done, int64_t{8});
  const Run run = trainingRunToSession(r, "clean", trainingConfigJson(c, "clean"));
  QCOMPARE(attrString(run.attrs, "status").value_or(""), std::string("completed"));
  const Attributes& g = run.group_attrs.at("nonfinite");
  QCOMPARE(attrInt(g, "found").value_or(-1), int64_t{0});
  QCOMPARE(attrString(g, "policy").value_or(""), std::string("stop"));
  QCOMPARE(attrString(g, "description").value_or(""), std::string("no non-finite value"));
  QVERIFY(!attrInt(g, "step").has_value());
  QVERIFY(!run.find("nonfinite/inputs"));
  // Off: the same run, not checked, and the numerics are the same bit for bit.
  c.on_nonfinite = NonFinitePolicy::Off;
  const TrainingResult off = train(c);
  QCOMPARE(off.loss, r.loss);
  QCOMPARE(off.weights[0].kernel, r.weights[0].kernel);
  const Run run_off = trainingRunToSession(off, "off", trainingConfigJson(c, "off"));
  QCOMPARE(attrString(run_off.group_attrs.at("nonfinite"), "description").value_or(""),
           std::string("not checked (on_nonfinite off)"));
}

void TestTrainingNonFinite::sameSeedGivesTheSameRecord() {
  const TrainingResult a = train(quantizedOverflowConfig(NonFinitePolicy::Continue));
  const TrainingResult b = train(quantizedOverflowConfig(NonFinitePolicy::Continue));
  QVERIFY(a.first_nonfinite.found && b.first_nonfinite.found);
  QCOMPARE(a.first_nonfinite.describe(), b.first_nonfinite.describe());
  QCOMPARE(a.first_nonfinite.row, b.first_nonfinite.row);
  QCOMPARE(a.first_nonfinite.col, b.first_nonfinite.col);
  QCOMPARE(a.first_nonfinite.inputs.size(), b.first_nonfinite.inputs.size());
  for (size_t i = 0; i < a.first_nonfinite.inputs.size(); ++i)
    QVERIFY(sameFloat(a.first_nonfinite.inputs[i], b.first_nonfinite.inputs[i]));
  // Another spiked row moves the record with it.
  TrainingConfig c = quantizedOverflowConfig(NonFinitePolicy::Stop);
  c.spike.row = 9;
  const TrainingResult d = train(c);
  QCOMPARE(d.first_nonfinite.row, int64_t{9});
  QCOMPARE(d.first_nonfinite.col, kHot);
}

void TestTrainingNonFinite::sessionGroupHoldsTheRecord() {
  const TrainingConfig c = quantizedOverflowConfig(NonFinitePolicy::Stop);
  const TrainingResult r = train(c);
  const Run run = trainingRunToSession(r, "nf", trainingConfigJson(c, "nf"));
  QCOMPARE(attrString(run.attrs, "status").value_or(""), std::string("stopped_nonfinite"));
  QCOMPARE(
      QString::fromStdString(attrString(run.attrs, "status_reason").value_or("")),
      QString::fromStdString(
          std::string("stopped after the step of the first non-finite value: step 5, layer fc1, fprop.input[5,300] "
                      "= nan (from x = 1e+06, quant_scale = 28, dequant_scale = ") +
          floatText(1.0f / 28.0f) + ")"));
  QCOMPARE(attrInt(run.attrs, "steps_completed").value_or(-1), kStep + 1);
  const Attributes& g = run.group_attrs.at("nonfinite");
  QCOMPARE(attrInt(g, "found").value_or(-1), int64_t{1});
  QCOMPARE(attrInt(g, "step").value_or(-1), kStep);
  QCOMPARE(attrString(g, "layer").value_or(""), std::string("fc1"));
  QCOMPARE(attrString(g, "tensor").value_or(""), std::string("fprop.input"));
  QCOMPARE(attrString(g, "kind").value_or(""), std::string("quantized_operand"));
  QCOMPARE(attrInt(g, "row").value_or(-1), kRow);
  QCOMPARE(attrInt(g, "col").value_or(-1), kHot);
  QCOMPARE(attrInt(g, "rows").value_or(-1), int64_t{64});
  QCOMPARE(attrInt(g, "cols").value_or(-1), int64_t{784});
  QCOMPARE(attrString(g, "value_text").value_or(""), std::string("nan"));
  QCOMPARE(attrString(g, "input_names").value_or(""), std::string("x,quant_scale,dequant_scale"));
  const Dataset* inputs = run.find("nonfinite/inputs");
  QVERIFY(inputs);
  QCOMPARE(inputs->shape, (std::vector<int64_t>{3}));
  QCOMPARE(inputs->f32, r.first_nonfinite.inputs);
  // the stored config reproduces the run: it names the options that made the overflow
  const std::string json = trainingConfigJson(c, "nf");
  QVERIFY(json.find("\"saturate\": false") != std::string::npos);
  QVERIFY(json.find("\"row\": 5, \"col\": 300") != std::string::npos);
  QVERIFY(json.find("on_nonfinite") == std::string::npos); // stop is the default
}

void TestTrainingNonFinite::experimentGoesOnAndSkipsTheGemmOnNonFiniteWeights() {
  // Run "nf" (Fashion-MNIST, the whole batch × 1e6 at step 5 through the non-saturating cast of
  // quantizedOverflowConfig) stops with NaN weights after step 5; run "ok" still trains; the GEMM
  // error experiment on nf's weights is skipped, not run on NaN.
  const JsonDocument d = JsonDocument::parse(R"({"type": "training", "train_limit": 512, "test_limit": 100,
    "defaults": {"epochs": 1, "batch_size": 64},
    "runs": [{"id": "nf", "scaling": {"strategy": "delayed-te", "history_len": 4, "margin": 4, "saturate": false},
              "spike": {"step": 5, "factor": 1e6, "layer": 0}},
             {"id": "ok", "precision": "fp32"}],
    "gemm_on_trained_weights": {"from_run": "nf", "rows": 100}})");
  std::string err;
  const auto spec = parseTrainingExperiment(d.root(), &err, &d);
  QVERIFY2(spec, err.c_str());
  std::vector<Run> saved;
  TrainingHooks hooks;
  hooks.save = [&](const Run& r, std::string* id, std::string*) {
    saved.push_back(r);
    *id = r.id;
    return true;
  };
  const TrainingExperimentOutcome o = runTrainingExperiment(*spec, {}, hooks);
  QVERIFY2(o.status == TrainingExperimentOutcome::Status::Completed, o.error.c_str());
  QCOMPARE(o.runs.size(), size_t{2});
  QVERIFY(o.runs[0].stopped_nonfinite);
  QCOMPARE(o.runs[0].steps_done, int64_t{6});
  QCOMPARE(o.runs[0].first_nonfinite.step, int64_t{5});
  QVERIFY(!o.runs[1].stopped_nonfinite);
  QCOMPARE(o.runs[1].steps_done, int64_t{8});
  QCOMPARE(saved.size(), size_t{2}); // no gemm-trained-weights runs
  QCOMPARE(attrString(saved[0].attrs, "status").value_or(""), std::string("stopped_nonfinite"));
  QCOMPARE(o.weight_gemm_skipped, std::string("the GEMM on trained weights is skipped: the weights of run 'nf' hold "
                                              "non-finite values (see its first non-finite value)"));
}

void TestTrainingNonFinite::weightGemmNamesTheStoredTrainingRun() {
  // The file already holds a run "r": the save stores the new one as "r-2" (as appendRuns does).
  // The GEMM run on its weights is then "gemm-r-2-fc1" and its config's from_run is "r-2", the
  // run whose kernel is its inputs/B, not the older "r".
  const JsonDocument d = JsonDocument::parse(R"({"type": "training", "train_limit": 256, "test_limit": 100,
    "defaults": {"epochs": 1, "batch_size": 64, "precision": "fp32"}, "runs": [{"id": "r"}],
    "gemm_on_trained_weights": {"from_run": "r", "layers": ["fc1"], "rows": 50}})");
  std::string err;
  const auto spec = parseTrainingExperiment(d.root(), &err, &d);
  QVERIFY2(spec, err.c_str());
  std::vector<Run> saved;
  TrainingHooks hooks;
  hooks.save = [&](const Run& r, std::string* id, std::string*) {
    saved.push_back(r);
    *id = r.id == "r" ? "r-2" : r.id;
    return true;
  };
  const TrainingExperimentOutcome o = runTrainingExperiment(*spec, {}, hooks);
  QVERIFY2(o.status == TrainingExperimentOutcome::Status::Completed, o.error.c_str());
  QCOMPARE(saved.size(), size_t{2});
  QCOMPARE(o.runs[0].stored_id, std::string("r-2"));
  QCOMPARE(saved[1].id, std::string("gemm-r-2-fc1"));
  QCOMPARE(Json::parse(saved[1].config_json).at("from_run").get<std::string>(), std::string("r-2"));
  const auto w = trainedWeightsFromRun(saved[0], "fc1"); // the kernel the GEMM ran on is r-2's
  QVERIFY(w.ok());
  QCOMPARE(saved[1].find("inputs/B")->f32, w.value.kernel);
}

void TestTrainingNonFinite::configReadsTheKeys() {
  const JsonDocument d = JsonDocument::parse(R"({"type": "training", "on_nonfinite": "continue",
      "scaling": {"strategy": "delayed-flax", "saturate": false},
      "spike": {"step": 5, "factor": 1e6, "layer": 0, "row": 5, "col": 300},
      "forward_gemm": {"output": "fp16"}})");
  std::string err;
  const auto spec = parseTrainingExperiment(d.root(), &err, &d);
  QVERIFY2(spec, err.c_str());
  const TrainingConfig& c = mlpRun(spec->runs.at(0)).config;
  QCOMPARE(static_cast<int>(c.on_nonfinite), static_cast<int>(NonFinitePolicy::Continue));
  QVERIFY(!c.scaling.saturate);
  QCOMPARE(c.spike.row, int64_t{5});
  QCOMPARE(c.spike.col, int64_t{300});
  QCOMPARE(static_cast<int>(c.forward_gemm.output), static_cast<int>(OutputType::FP16));
  QCOMPARE(static_cast<int>(c.backward_gemm.output), static_cast<int>(OutputType::FP32));
  // the stored one-run config reads back to the same options
  const JsonDocument back = JsonDocument::parse(spec->runs[0].configJson());
  const auto again = parseTrainingExperiment(back.root(), &err, &back);
  QVERIFY2(again, err.c_str());
  const TrainingConfig& c2 = mlpRun(again->runs.at(0)).config;
  QCOMPARE(static_cast<int>(c2.on_nonfinite), static_cast<int>(NonFinitePolicy::Continue));
  QVERIFY(!c2.scaling.saturate);
  QCOMPARE(c2.spike.row, int64_t{5});
  QCOMPARE(c2.spike.col, int64_t{300});
  QCOMPARE(static_cast<int>(c2.forward_gemm.output), static_cast<int>(OutputType::FP16));
  // defaults: stop, saturating, the whole layer spiked
  const JsonDocument dd = JsonDocument::parse(R"({"type": "training", "spike": {"step": 1, "factor": 2}})");
  const auto def = parseTrainingExperiment(dd.root(), &err, &dd);
  QVERIFY2(def, err.c_str());
  QCOMPARE(static_cast<int>(mlpRun(def->runs[0]).config.on_nonfinite), static_cast<int>(NonFinitePolicy::Stop));
  QVERIFY(mlpRun(def->runs[0]).config.scaling.saturate);
  QCOMPARE(mlpRun(def->runs[0]).config.spike.row, int64_t{-1});
  QCOMPARE(mlpRun(def->runs[0]).config.spike.col, int64_t{-1});
}

void TestTrainingNonFinite::configRefusesAnUnknownPolicy() {
  // the position is the key's, as for every key: line 2, column 2 (after one space)
  const JsonDocument d = JsonDocument::parse("{\"type\": \"training\",\n \"on_nonfinite\": \"halt\"}");
  std::string err;
  QVERIFY(!parseTrainingExperiment(d.root(), &err, &d));
  QCOMPARE(QString::fromStdString(err),
           QStringLiteral("on_nonfinite: unknown value 'halt' (stop, continue, off) (line 2, column 2)"));
  // inside an experiment the key path names the run
  const JsonDocument e = JsonDocument::parse(R"({"type": "training", "runs": [{}, {"on_nonfinite": 1}]})");
  QVERIFY(!parseTrainingExperiment(e.root(), &err, &e));
  QVERIFY2(QString::fromStdString(err).startsWith(QStringLiteral("runs[1].on_nonfinite: ")), err.c_str());
  // a spike column beyond the layer's input
  const JsonDocument s =
      JsonDocument::parse(R"({"type": "training", "spike": {"step": 1, "factor": 2, "layer": 1, "col": 256}})");
  QVERIFY(!parseTrainingExperiment(s.root(), &err, &s));
  QVERIFY2(err.find("spike.col: must be below the input size of layer 1 (fc2 takes 256 inputs: col 0 … 255)") == 0,
           err.c_str());
  // GEMM outputs: fp32, bf16, fp16 only, and only where the per-tensor FP8 GEMMs run
  const JsonDocument o = JsonDocument::parse(R"({"type": "training", "forward_gemm": {"output": "e4m3"}})");
  QVERIFY(!parseTrainingExperiment(o.root(), &err, &o));
  QVERIFY2(QString::fromStdString(err).startsWith(
               QStringLiteral("forward_gemm.output: unknown output type 'e4m3' (fp32, bf16, fp16)")),
           err.c_str());
  const JsonDocument f =
      JsonDocument::parse(R"({"type": "training", "precision": "fp32", "backward_gemm": {"output": "fp16"}})");
  QVERIFY(!parseTrainingExperiment(f.root(), &err, &f));
  QVERIFY2(err.find("applies to the per-tensor FP8 GEMMs only") != std::string::npos, err.c_str());
}

void TestTrainingNonFinite::largestDotTermsOrder() {
  // products a_k·b_k = 1, −2, 3, −4, 5, −6 (k = 0 … 5) and NaN at k = 6, 0 at k = 7
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, nan, 0};
  const std::vector<float> b = {1, -1, 1, -1, 1, -1, 1, 1};
  const auto t = largestDotTerms(a.data(), 1, b.data(), 1, 8, 4);
  QCOMPARE(t.size(), size_t{4});
  QCOMPARE(t[0].k, int64_t{6}); // NaN first
  QVERIFY(std::isnan(t[0].product));
  QCOMPARE(t[1].k, int64_t{5});
  QCOMPARE(t[1].product, -6.0);
  QCOMPARE(t[2].k, int64_t{4});
  QCOMPARE(t[3].k, int64_t{3});
  QCOMPARE(t[3].a, 4.0f);
  QCOMPARE(t[3].b, -1.0f);
  // ties in |product|: ascending k; strides pick a column of a row-major [3, 2] matrix
  const std::vector<float> col = {2, 9, -2, 9, 2, 9}; // column 0 = {2, −2, 2}
  const std::vector<float> ones = {1, 1, 1};
  const auto u = largestDotTerms(col.data(), 2, ones.data(), 1, 3);
  QCOMPARE(u.size(), size_t{3}); // fewer terms than the default 8
  QCOMPARE(u[0].k, int64_t{0});
  QCOMPARE(u[1].k, int64_t{1});
  QCOMPARE(u[1].product, -2.0);
  QCOMPARE(u[2].k, int64_t{2});
  // float64 products of float32 values: 2^127 · 4 = 2^129 is kept (it would be Inf in float32)
  const float big = std::ldexp(1.0f, 127), four = 4.0f;
  const auto v = largestDotTerms(&big, 1, &four, 1, 1);
  QCOMPARE(v[0].product, std::ldexp(1.0, 129));
}

void TestTrainingNonFinite::finiteChecks() {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> ok = {0.0f, -0.0f, 3.4028235e38f, -3.4028235e38f, 1e-45f};
  QVERIFY(allFinite(ok.data(), ok.size()));
  QCOMPARE(firstNonFinite(ok.data(), ok.size()), int64_t{-1});
  const std::vector<float> bad = {1.0f, 2.0f, -inf, std::numeric_limits<float>::quiet_NaN()};
  QVERIFY(!allFinite(bad.data(), bad.size()));
  QCOMPARE(firstNonFinite(bad.data(), bad.size()), int64_t{2});
  QCOMPARE(floatText(-inf), std::string("-inf"));
  QCOMPARE(floatText(inf), std::string("inf"));
  QCOMPARE(floatText(0.1f), std::string("0.1"));
  NonFinitePolicy p = NonFinitePolicy::Off;
  QVERIFY(parseNonFinitePolicy("continue", &p));
  QCOMPARE(static_cast<int>(p), static_cast<int>(NonFinitePolicy::Continue));
  QVERIFY(!parseNonFinitePolicy("Stop", &p)); // the config lower-cases; the parser itself is exact
}

QTEST_APPLESS_MAIN(TestTrainingNonFinite)
#include "test_training_nonfinite.moc"

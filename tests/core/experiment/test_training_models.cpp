// The registry of training model kinds (experiment/training/training_models.h): each parsed run
// finds its kind by the config's model.kind, and the kind's answers agree with the model's own
// config — sites, steps, shared settings, the probe-run cut — as docs/training.md states them.
#include "experiment/training/training_config.h"
#include "experiment/training/training_job.h"
#include "experiment/training/training_models.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace fp8lab;

namespace {

TrainingRunSpec parseOne(const char* text) {
  std::string err;
  const auto spec = parseTrainingExperiment(Json::parse(text), &err);
  if (!spec || spec->runs.size() != 1) throw std::runtime_error("config refused: " + err);
  return spec->runs.front();
}

} // namespace

class TestTrainingModels : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void registry() {
    QCOMPARE(trainingModelKinds().size(), size_t(2));
    QCOMPARE(QString::fromStdString(trainingModelKindNames()), QStringLiteral("mlp, transformer"));
    QVERIFY(findTrainingModelKind("mlp") == &mlpModelKind());
    QVERIFY(findTrainingModelKind("transformer") == &transformerModelKind());
    QVERIFY(findTrainingModelKind("pytorch") == nullptr); // observed runs are not trained here
    TrainingRunSpec bad;
    bad.model_kind = "rnn";
    QVERIFY_THROWS_EXCEPTION(std::logic_error, bad.kind());
    // Each kind brings its own rows of the training schema, and the schema holds them after the
    // shared settings; a key of the other kind only is not the kind's.
    size_t rows = 0;
    for (const TrainingModelKind* k : trainingModelKinds())
      for (const TrainingParam& p : k->schema()) {
        QCOMPARE(p.model, k->kind);
        ++rows;
      }
    size_t shared = 0;
    for (const TrainingParam& p : trainingSchema()) shared += p.model.empty() ? 1 : 0;
    QCOMPARE(trainingSchema().size(), shared + rows);
    QCOMPARE(trainingParam("steps", "transformer").def, std::string("600"));
    QCOMPARE(trainingParam("block_gemm", "mlp").def, std::string("fake_quant"));
    QCOMPARE(trainingParam("block_gemm", "transformer").def, std::string("core"));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, trainingParam("steps", "mlp"));
  }

  void mlp() {
    // 3 epochs of ceil(1000 / 100) = 10 steps; three Linear layers fc1..fc3 of 784-64-32-10
    TrainingRunSpec s = parseOne(
        R"({"type": "training", "layers": [784, 64, 32, 10], "batch_size": 100, "epochs": 3, "train_limit": 1000,
            "seed": 7})");
    QCOMPARE(QString::fromStdString(s.model_kind), QStringLiteral("mlp"));
    QCOMPARE(s.steps(), int64_t(30));
    QCOMPARE(s.sites().size(), size_t(3));
    QCOMPARE(QString::fromStdString(s.sites()[1].path), QStringLiteral("fc2"));
    QCOMPARE(s.run().seed, uint64_t(7));
    QVERIFY(&s.run() == static_cast<TrainingRunConfig*>(&mlpRun(s).config));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, lmRun(s)); // the spec holds the MLP's config only
    QCOMPARE(s.kind().loss_metric, std::string("final_test_loss"));
    // the probe-run cut: one epoch of `steps` batches; a test set of 2000 when the run had none
    QCOMPARE(s.kind().max_short_steps(s), int64_t(600)); // 60000 training images / batch 100
    s.kind().shorten(s, 4);
    QCOMPARE(mlpRun(s).config.epochs, 1);
    QCOMPARE(mlpRun(s).train_limit, int64_t(400));
    QCOMPARE(mlpRun(s).test_limit, int64_t(2000));
    QCOMPARE(s.steps(), int64_t(4));
  }

  // The rules only one model had stay that model's: a GEMM output type other than fp32 with a
  // block recipe is refused for the MLP (its block recipes multiply dequantized operands by
  // default), and taken by the language model (whose block recipes run core/gemm, under the
  // output type).
  void modelRulesStayTheModels() {
    std::string err;
    const Json mlp =
        Json::parse(R"({"type": "training", "recipe": {"name": "te_mxfp8"}, "forward_gemm": {"output": "bf16"}})");
    QVERIFY(!parseTrainingExperiment(mlp, &err));
    QVERIFY2(err.find("applies to the per-tensor FP8 GEMMs only") != std::string::npos, err.c_str());
    const Json lm = Json::parse(R"({"type": "training", "model": {"kind": "transformer"},
        "recipe": {"name": "te_mxfp8"}, "forward_gemm": {"output": "bf16"}})");
    const auto spec = parseTrainingExperiment(lm, &err);
    QVERIFY2(spec, err.c_str());
    QVERIFY(lmRun(spec->runs[0]).forward_gemm.output == OutputType::BF16);
  }

  void transformer() {
    // per block attn.qkv, attn.scores, attn.context, attn.out, ffn.up, ffn.down; then lm_head
    TrainingRunSpec s = parseOne(
        R"({"type": "training", "model": {"kind": "transformer", "d_model": 16, "layers": 2, "heads": 2,
            "context": 8}, "steps": 40, "seed": 3, "precision": "fp32"})");
    QCOMPARE(QString::fromStdString(s.model_kind), QStringLiteral("transformer"));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, mlpRun(s)); // the spec holds the language model's config only
    QCOMPARE(s.steps(), int64_t(40));
    QCOMPARE(s.sites().size(), size_t(2 * 6 + 1));
    QCOMPARE(s.run().seed, uint64_t(3));
    QVERIFY(!s.run().fp8());
    QVERIFY(&s.run() == static_cast<TrainingRunConfig*>(&lmRun(s)));
    QVERIFY(lmRun(s).block_gemm == BlockGemmPath::Core); // the language model's default
    QCOMPARE(s.kind().loss_metric, std::string("final_val_loss"));
    s.kind().shorten(s, 5);
    QCOMPARE(lmRun(s).steps, int64_t(5));
    QCOMPARE(lmRun(s).eval_every, 5);
    QCOMPARE(lmRun(s).sample_bytes, 0);
  }

  // A kind's job (training_job.h) trains a run whatever its model: the language model on a
  // 4000-byte text file. Its default val_fraction 0.1 keeps llround(400) bytes for validation, so
  // the job reports 3600 training bytes; 3 steps, no epochs.
  void transformerJob() {
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("text.txt")).toStdString();
    {
      std::ofstream f(path, std::ios::binary);
      for (int i = 0; i < 100; ++i) f << "the quick brown fox jumps over lazy dog\n"; // 40 bytes
    }
    Json cfg = Json::parse(R"({"type": "training", "model": {"kind": "transformer", "d_model": 16, "layers": 1,
        "heads": 2, "context": 8}, "steps": 3, "precision": "fp32", "eval": {"every": 3, "batches": 1},
        "sample_bytes": 0})");
    cfg["data"] = Json{{"text", path}};
    const TrainingRunSpec s = parseOne(cfg.dump().c_str());
    TrainingDataCache data;
    std::string err;
    std::unique_ptr<TrainingJob> job = makeTrainingJob(s, 1, data, &err);
    QVERIFY2(job, err.c_str());
    QCOMPARE(job->items(), int64_t(3600));
    QCOMPARE(job->stepsPerEpoch(), int64_t(3));
    QCOMPARE(job->steps(), int64_t(3));
    job->build(nullptr);
    int calls = 0;
    job->run([&](double, const std::string&) { return ++calls > 0; });
    QCOMPARE(job->stepsDone(), int64_t(3));
    QCOMPARE(job->epochsDone(), size_t(0));
    QVERIFY(!job->trainedLinears()); // the GEMM on trained weights takes MLP runs only
    const Run run = job->session("lm", s.configJson());
    QCOMPARE(attrInt(run.attrs, "steps_completed").value_or(-1), int64_t(3));
    const TrainingRunOutcome o = job->outcome(run, false);
    QCOMPARE(o.steps_done, int64_t(3));
    QCOMPARE(o.steps_total, int64_t(3));
    QCOMPARE(o.val_loss.size(), size_t(1)); // evaluated once, after step 3

    // `rerun` of a run saved after a cancel stops after the same number of steps
    const auto alone = trainRunAlone(s, "lm", s.configJson(), 2, {}, &err);
    QVERIFY2(alone, err.c_str());
    QCOMPARE(attrInt(alone->attrs, "steps_completed").value_or(-1), int64_t(2));
    QCOMPARE(attrString(alone->attrs, "status").value_or(""), std::string("cancelled"));
    // a cancel from progress is not a run to store
    QVERIFY(!trainRunAlone(
        s, "lm", s.configJson(), -1, [](double, const std::string&) { return false; }, &err));
    QCOMPARE(err, std::string("cancelled"));

    // the data the kind cannot read: no job, and why
    cfg["data"]["text"] = path + ".absent";
    err.clear();
    QVERIFY(!makeTrainingJob(parseOne(cfg.dump().c_str()), 0, data, &err));
    QVERIFY2(err.find(path + ".absent") != std::string::npos, err.c_str());
  }

  // A hook that throws while a run trains on its thread leaves runTrainingExperiment with that
  // exception, after the run was stopped and its thread joined (a joinable std::thread destroyed
  // would end the process).
  void aThrowingHookStopsTheRun() {
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("text.txt")).toStdString();
    {
      std::ofstream f(path, std::ios::binary);
      for (int i = 0; i < 100; ++i) f << "the quick brown fox jumps over lazy dog\n";
    }
    Json cfg = Json::parse(R"({"type": "training", "model": {"kind": "transformer", "d_model": 16, "layers": 1,
        "heads": 2, "context": 8}, "steps": 100000, "precision": "fp32", "sample_bytes": 0})");
    cfg["data"] = Json{{"text", path}};
    std::string err;
    const auto spec = parseTrainingExperiment(cfg, &err);
    QVERIFY2(spec, err.c_str());
    TrainingHooks hooks;
    int calls = 0;
    hooks.progress = [&](double, double, const std::string&) -> bool {
      if (++calls == 3) throw std::runtime_error("hook failed");
      return true;
    };
    bool thrown = false;
    try {
      runTrainingExperiment(*spec, {}, hooks);
    } catch (const std::runtime_error& e) {
      thrown = std::string(e.what()) == "hook failed";
    }
    QVERIFY(thrown);
    QCOMPARE(calls, 3);
  }

  // The GEMM on trained weights multiplies an MLP's Linear layers: a run of a kind without
  // trained Linears to give (weight_gemm false) is refused where the config names it.
  void weightGemmTakesMlpRuns() {
    QVERIFY(mlpModelKind().weight_gemm);
    QVERIFY(!transformerModelKind().weight_gemm);
    std::string err;
    QVERIFY(!parseTrainingExperiment(Json::parse(R"({"type": "training", "runs": [{"id": "lm", "model":
        {"kind": "transformer"}}], "gemm_on_trained_weights": {"from_run": "lm"}})"),
                                     &err));
    QCOMPARE(err, std::string("gemm_on_trained_weights.from_run: run 'lm' has model kind 'transformer': the GEMM on "
                              "trained weights multiplies the Linear layers of an MLP run (a run without \"model\")"));
  }
};

QTEST_GUILESS_MAIN(TestTrainingModels)
#include "test_training_models.moc"

// The registry of training model kinds (experiment/training/training_models.h): each parsed run
// finds its kind by the config's model.kind, and the kind's answers agree with the model's own
// config — sites, steps, shared settings, the probe-run cut — as docs/training.md states them.
#include "experiment/training/training_config.h"
#include "experiment/training/training_models.h"

#include <QtTest>

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
    QVERIFY(&s.run() == static_cast<TrainingRunConfig*>(&s.config));
    QCOMPARE(s.kind().loss_metric, std::string("final_test_loss"));
    // the probe-run cut: one epoch of `steps` batches; a test set of 2000 when the run had none
    QCOMPARE(s.kind().max_short_steps(s), int64_t(600)); // 60000 training images / batch 100
    s.kind().shorten(s, 4);
    QCOMPARE(s.config.epochs, 1);
    QCOMPARE(s.train_limit, int64_t(400));
    QCOMPARE(s.test_limit, int64_t(2000));
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
    QVERIFY(spec->runs[0].lm->forward_gemm.output == OutputType::BF16);
  }

  void transformer() {
    // per block attn.qkv, attn.scores, attn.context, attn.out, ffn.up, ffn.down; then lm_head
    TrainingRunSpec s = parseOne(
        R"({"type": "training", "model": {"kind": "transformer", "d_model": 16, "layers": 2, "heads": 2,
            "context": 8}, "steps": 40, "seed": 3, "precision": "fp32"})");
    QCOMPARE(QString::fromStdString(s.model_kind), QStringLiteral("transformer"));
    QVERIFY(s.lm.has_value());
    QCOMPARE(s.steps(), int64_t(40));
    QCOMPARE(s.sites().size(), size_t(2 * 6 + 1));
    QCOMPARE(s.run().seed, uint64_t(3));
    QVERIFY(!s.run().fp8());
    QVERIFY(&s.run() == static_cast<TrainingRunConfig*>(&*s.lm));
    QVERIFY(s.lm->block_gemm == BlockGemmPath::Core); // the language model's default
    QCOMPARE(s.kind().loss_metric, std::string("final_val_loss"));
    s.kind().shorten(s, 5);
    QCOMPARE(s.lm->steps, int64_t(5));
    QCOMPARE(s.lm->eval_every, 5);
    QCOMPARE(s.lm->sample_bytes, 0);
  }
};

QTEST_GUILESS_MAIN(TestTrainingModels)
#include "test_training_models.moc"

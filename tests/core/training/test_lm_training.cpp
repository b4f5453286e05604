// The transformer language model's training run (core/training/lm_trainer.h) on text the test
// makes: it learns, it is reproducible bit for bit (also through its stored config), the policy
// does what its rules say, the session holds what docs/session-format.md lists, and a missing
// corpus is a clear error naming the Debian package.
#include "experiment/training/training_config.h"
#include "experiment/training/training_experiment.h"
#include "json/json_document.h"
#include "training/lm_trainer.h"
#include "training/text_corpus.h"
#include "training/training_session.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>

using namespace fp8lab;

namespace {

/// A text with a short period: a model that looks back 12 bytes predicts it perfectly, while its
/// byte frequencies alone give log2(8) = 3 bits per byte (8 distinct bytes equally often).
TextCorpus periodicText() {
  const std::string period = "abcdefgh"
                             "hgfedcba"
                             "acegbdfh";
  std::vector<uint8_t> bytes;
  // 1500 periods: the 10 % validation split is 150 of them, so both splits hold whole periods.
  while (bytes.size() < 36000) bytes.insert(bytes.end(), period.begin(), period.end());
  return makeCorpus(std::move(bytes), "periodic test text", 0.1);
}

LmTrainingConfig tiny() {
  LmTrainingConfig c;
  c.model.d_model = 16;
  c.model.layers = 1;
  c.model.heads = 2;
  c.model.context = 16;
  c.model.ffn_hidden = 32;
  c.batch_size = 8;
  c.steps = 150;
  c.optimizer.learning_rate = 1e-2f;
  c.optimizer.beta2 = 0.99f;
  c.warmup_steps = 10;
  c.eval_every = 50;
  c.eval_batches = 2;
  c.probes.every = 50;
  c.probes.attention_every = 75;
  c.sample_bytes = 24;
  c.threads = 1;
  c.precision = TrainingPrecision::FP8;
  c.scaling.kind = TrainingScalingKind::CurrentTE;
  return c;
}

} // namespace

class TestLmTraining : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // The byte frequencies of the periodic text are uniform over 8 bytes: 3 bits per byte. A model
  // that uses the context gets far below: after 150 steps both runs' validation loss is under half
  // of that (1.5 bits per byte), and FP32 and FP8 end within half a bit of each other.
  void learnsThePeriodicText() {
    const TextCorpus text = periodicText();
    QCOMPARE(text.unigram_bits, 3.0);
    LmTrainingConfig c8 = tiny(), c32 = tiny();
    c32.precision = TrainingPrecision::FP32;
    LmTrainingRun r8(c8, text), r32(c32, text);
    r8.run();
    r32.run();
    const double bits8 = r8.result().val_loss.back() / std::log(2.0);
    const double bits32 = r32.result().val_loss.back() / std::log(2.0);
    qInfo("validation: FP8 %.4f, FP32 %.4f bits per byte (unigram 3)", bits8, bits32);
    QVERIFY2(bits8 < 1.5, qPrintable(QString::number(bits8)));
    QVERIFY2(bits32 < 1.5, qPrintable(QString::number(bits32)));
    QVERIFY(std::fabs(bits8 - bits32) < 0.5);
    QCOMPARE(r8.result().val_steps, (std::vector<int64_t>{49, 99, 149}));
    QCOMPARE(r8.result().probes.steps, (std::vector<int64_t>{0, 50, 100, 149}));
    QCOMPARE(r8.result().attention.steps, (std::vector<int64_t>{0, 75, 149}));
    // A sample (temperature 0.8, the default) follows the validation prompt.
    QVERIFY2(!r8.result().sample.empty(), "no sample");
    // Every operand of every site has one record per step.
    for (const OperandHistory& h : r8.result().operands) QCOMPARE(int64_t(h.amax.size()), int64_t(150));
    // Per-tensor E4M3FN current scaling: the input scale of a Linear site is amax / 448 at every
    // step (TE Float8CurrentScaling: quant scale 448 / amax).
    const OperandHistory& qkv = r8.result().operands[SiteTable::operandIndex(0, SiteOperand::Input)];
    QCOMPARE(qkv.name(), std::string("blocks.0.attn.qkv/input"));
    for (size_t t = 0; t < qkv.amax.size(); t += 37) QCOMPARE(qkv.quant_scale[t], float(448.0 / double(qkv.amax[t])));
  }

  // Same config, same bits: two runs and the run reproduced from its stored config.
  void reproducibleBitForBit() {
    const TextCorpus text = periodicText();
    LmTrainingConfig c = tiny();
    c.steps = 40;
    LmTrainingRun a(c, text), b(c, text);
    a.run();
    b.run();
    QCOMPARE(a.result().loss, b.result().loss);
    QCOMPARE(a.result().val_loss, b.result().val_loss);
    for (size_t i = 0; i < a.result().params.size(); ++i)
      QCOMPARE(a.result().params[i].value, b.result().params[i].value);
    // The stored config parses back to the same run.
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("text.txt")).toStdString();
    {
      std::ofstream f(path, std::ios::binary);
      for (uint8_t x : text.train) f << char(x);
      for (uint8_t x : text.val) f << char(x);
    }
    c.data.path = path;
    const std::string json = lmConfigJson(c, "lm-a");
    std::string err;
    const auto doc = parseStoredConfig(json, &err);
    QVERIFY2(doc, err.c_str());
    const auto spec = parseTrainingExperiment(doc->root(), &err, &*doc);
    QVERIFY2(spec, err.c_str());
    QCOMPARE(spec->runs.front().model_kind, std::string("transformer"));
    QCOMPARE(lmConfigJson(lmRun(spec->runs.front()), "lm-a"), json);
    const TextCorpus again = *loadTextFile(path, &err);
    LmTrainingRun c2(lmRun(spec->runs.front()), again);
    c2.run();
    QCOMPARE(c2.result().loss, a.result().loss);
  }

  // A warm-up rule: every site in FP32 for steps 0..9, the recipe after. Current scaling feeds no
  // state in high-precision steps, so those steps record scale 1 (nothing was quantized) and
  // later steps the per-tensor scale amax / 448.
  void policyWarmupAndAttention() {
    const TextCorpus text = periodicText();
    LmTrainingConfig c = tiny();
    c.steps = 20;
    c.policy.rules.push_back(PolicyRule{"*", {}, SitePrecision::FP32, 0, 10});
    // FP8 attention for the scores matmul only: Q and K per-tensor current scaling.
    c.policy.rules.push_back(PolicyRule{"blocks.0.attn.scores", {}, SitePrecision::Recipe, 10, -1});
    LmTrainingRun r(c, text);
    r.run();
    const OperandHistory& x = r.result().operands[SiteTable::operandIndex(0, SiteOperand::Input)];
    for (int t = 0; t < 10; ++t) QCOMPARE(x.dequant_scale[size_t(t)], 1.0f);
    for (int t = 10; t < 20; ++t) QCOMPARE(x.quant_scale[size_t(t)], float(448.0 / double(x.amax[size_t(t)])));
    const OperandHistory& q = r.result().operands[SiteTable::operandIndex(1, SiteOperand::Input)];
    QCOMPARE(q.name(), std::string("blocks.0.attn.scores/input"));
    QCOMPARE(q.quant_scale[5], 1.0f);
    QCOMPARE(q.quant_scale[15], float(448.0 / double(q.amax[15])));
    // A rule that names no site is refused (a typo would otherwise keep everything in FP8).
    LmTrainingConfig bad = tiny();
    bad.policy.rules.push_back(PolicyRule{"blocks.*.atn.*", {}, SitePrecision::BF16, 0, -1});
    QVERIFY(bad.validate().find("match no site") != std::string::npos);
  }

  // Regression: attention sites were labelled E4M3FN (and "per-tensor current-te") in FP8 runs
  // though their matmuls run in FP32 unless the policy puts them in the recipe.
  void attentionSitesLabelledAsTheyRun() {
    const TextCorpus text = periodicText();
    LmTrainingConfig c = tiny();
    c.steps = 2;
    c.eval_every = 2;
    c.probes.every = 0;
    c.probes.attention_every = 0;
    c.sample_bytes = 0;
    LmTrainingRun r(c, text);
    r.run();
    const auto& ops = r.result().operands;
    QCOMPARE(ops[SiteTable::operandIndex(0, SiteOperand::Input)].format, std::string("E4M3FN")); // attn.qkv
    for (size_t site : {size_t{1}, size_t{2}})                                                   // scores, context
      for (SiteOperand k : {SiteOperand::Input, SiteOperand::Kernel, SiteOperand::OutputGrad})
        QCOMPARE(ops[SiteTable::operandIndex(site, k)].format, std::string("FP32"));
    // Put in the recipe by the policy: Q and K are cast to E4M3FN, the gradient stays FP32.
    c.policy.rules.push_back(PolicyRule{"blocks.0.attn.scores", {}, SitePrecision::Recipe, 0, -1});
    LmTrainingRun p(c, text);
    p.run();
    const auto& po = p.result().operands;
    QCOMPARE(po[SiteTable::operandIndex(1, SiteOperand::Input)].format, std::string("E4M3FN"));
    QCOMPARE(po[SiteTable::operandIndex(1, SiteOperand::Kernel)].format, std::string("E4M3FN"));
    QCOMPARE(po[SiteTable::operandIndex(1, SiteOperand::OutputGrad)].format, std::string("FP32"));
    QCOMPARE(po[SiteTable::operandIndex(2, SiteOperand::Input)].format, std::string("FP32"));
  }

  // Per-block statistics stay indexed by step when the policy keeps a site in high precision for
  // a while: NaN rows for blocks.0.attn.*'s FP32 steps 0..9, values from step 10; the FFN, in FP8
  // throughout, has a value at every step.
  void blockStatsIndexedByStepUnderAPolicy() {
    const TextCorpus text = periodicText();
    LmTrainingConfig c = tiny();
    c.steps = 20;
    c.policy.rules.push_back(PolicyRule{"blocks.0.attn.*", {}, SitePrecision::FP32, 0, 10});
    LmTrainingRun r(c, text);
    r.run();
    auto series = [&](const std::string& layer) -> const OperandBlockSeries& {
      for (const OperandBlockSeries& s : r.result().diagnostics.block_stats)
        if (s.layer == layer && s.operand == "input") return s;
      throw std::runtime_error("no block statistics of " + layer);
    };
    const OperandBlockSeries& qkv = series("blocks.0.attn.qkv");
    QCOMPARE(qkv.steps.size(), size_t(20));
    for (int t = 0; t < 10; ++t) QVERIFY(std::isnan(qkv.steps[size_t(t)].sqnr_db));
    for (int t = 10; t < 20; ++t) QVERIFY(std::isfinite(qkv.steps[size_t(t)].sqnr_db));
    QCOMPARE(qkv.map_steps.front(), int64_t(10));
    const OperandBlockSeries& up = series("blocks.0.ffn.up");
    QCOMPARE(up.steps.size(), size_t(20));
    for (const BlockStatsSummary& b : up.steps) QVERIFY(std::isfinite(b.sqnr_db));
  }

  // softmax_underflow of a block whose P cast runs in FP8 counts the cast itself (the stored
  // probabilities are then the cast ones, with the flushed values already zero). With the scores
  // in high precision in both runs, block 0's probabilities before the cast are the same at step
  // 0, so the counted share equals the share computed from the high-precision run's P. Quant
  // multiplier 1/128: E4M3FN flushes x·s below half its smallest subnormal (2^-10), i.e. every
  // probability under 1/8 — most of them in rows of 16 keys.
  void softmaxUnderflowCountsTheFp8Cast() {
    const TextCorpus text = periodicText();
    LmTrainingConfig c = tiny();
    c.steps = 1;
    c.probes.every = 1;
    c.softmax_scale = 1.0f / 128.0f;
    LmTrainingRun high(c, text);
    high.run();
    c.policy.rules.push_back(PolicyRule{"blocks.0.attn.context", {}, SitePrecision::Recipe, 0, -1});
    LmTrainingRun low(c, text);
    low.run();
    const float expected = high.result().probes.softmax_underflow.at("blocks.0").at(0);
    QVERIFY2(expected > 0.3f, qPrintable(QString::number(expected)));
    QCOMPARE(low.result().probes.softmax_underflow.at("blocks.0").at(0), expected);
  }

  // The session of a run: the datasets docs/session-format.md lists, named by site.
  void sessionLayout() {
    const TextCorpus text = periodicText();
    LmTrainingConfig c = tiny();
    c.steps = 30;
    c.eval_every = 10;
    c.probes.every = 10;
    c.probes.attention_every = 15;
    LmTrainingRun r(c, text);
    r.run();
    const Run run = lmRunToSession(r.result(), "lm", lmConfigJson(c, "lm"));
    QCOMPARE(attrString(run.attrs, "model").value_or(""), std::string("transformer"));
    QCOMPARE(attrString(run.attrs, "sites").value_or(""),
             std::string("blocks.0.attn.qkv,blocks.0.attn.scores,blocks.0.attn.context,blocks.0.attn.out,"
                         "blocks.0.ffn.up,blocks.0.ffn.down,lm_head"));
    for (const char* p :
         {"training/loss", "training/lr", "training/grad_norm", "training/val_loss",
          "history/blocks.0.ffn.down/output_grad/amax", "history/lm_head/input/scale", "probes/steps",
          "probes/blocks.0/kurtosis", "probes/blocks.0/quant_error", "probes/blocks.0.attn.qkv/max_median",
          "probes/lm_head/grad_noise_ratio", "attention/steps", "attention/tokens", "weights/wte.weight",
          "weights/blocks.0.attn.qkv.weight", "block_stats/blocks.0.ffn.up/input/sqnr_db"})
      QVERIFY2(run.find(p), p);
    const Dataset* sink = run.find("probes/blocks.0/sink");
    QVERIFY(sink);
    QCOMPARE(sink->shape, (std::vector<int64_t>{4, 2})); // probe steps 0, 10, 20, 29 × 2 heads
    const Dataset* probs = run.find("attention/blocks.0/probs");
    QVERIFY(probs);
    QCOMPARE(probs->shape, (std::vector<int64_t>{3, 2, 16, 16})); // snapshots at 0, 15, 29
    // each causal row sums to 1
    double row = 0;
    for (int k = 0; k < 16; ++k) row += probs->f32[size_t(5 * 16 + k)];
    QVERIFY(std::fabs(row - 1.0) < 1e-5);
    QCOMPARE(run.find("weights/blocks.0.attn.qkv.weight")->shape, (std::vector<int64_t>{16, 48}));
  }

  void missingCorpusNamesThePackage() {
    std::string why;
    QVERIFY(!loadFortunes(&why, "/nonexistent/fortunes"));
    QVERIFY2(why.find("install the Debian package fortunes") != std::string::npos, why.c_str());
    QVERIFY(!loadTextFile("/nonexistent/text.txt", &why));
    QVERIFY2(why.find("does not exist") != std::string::npos, why.c_str());
    // A file too short for the context: both sizes named.
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("short.txt")).toStdString();
    std::ofstream(path) << "hello";
    QVERIFY(!loadTextFile(path, &why, 0.1, 34));
    QVERIFY2(why.find("5 bytes") != std::string::npos, why.c_str());
  }

  // Config errors name the key: an MLP key on the language model, an unknown norm, a policy typo.
  void configErrorsNameTheKey_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("message");
    QTest::newRow("epochs on the LM") << QStringLiteral(
                                             R"({"type":"training","model":{"kind":"transformer"},"epochs":3})")
                                      << QStringLiteral("epochs: applies to the Fashion-MNIST MLP");
    QTest::newRow("unknown norm") << QStringLiteral(
                                         R"({"type":"training","model":{"kind":"transformer","norm":"batchnorm"}})")
                                  << QStringLiteral("model.norm: unknown norm 'batchnorm'");
    QTest::newRow("steps on the MLP") << QStringLiteral(R"({"type":"training","steps":10})")
                                      << QStringLiteral("steps: applies to the language model");
    QTest::newRow("policy precision")
        << QStringLiteral(
               R"({"type":"training","model":{"kind":"transformer"},"policy":[{"sites":"*","precision":"fp16"}]})")
        << QStringLiteral("policy[0].precision: unknown precision 'fp16'");
    QTest::newRow("heads") << QStringLiteral(
                                  R"({"type":"training","model":{"kind":"transformer","d_model":30,"heads":4}})")
                           << QStringLiteral("model.heads: d_model (30) must be a multiple of heads (4)");
  }
  void configErrorsNameTheKey() {
    QFETCH(QString, json);
    QFETCH(QString, message);
    std::string err;
    const auto doc = parseStoredConfig(json.toStdString(), &err);
    QVERIFY2(doc, err.c_str());
    QVERIFY(!parseTrainingExperiment(doc->root(), &err, &*doc));
    QVERIFY2(QString::fromStdString(err).contains(message), err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestLmTraining)
#include "test_lm_training.moc"

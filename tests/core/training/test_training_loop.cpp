// The one training loop (training_loop.h) that drives every model's run: the order of steps,
// progress lines and evaluations, the non-finite stop and the stop request, written out by hand
// from training_loop.h's contract for a scripted model; then the same contract through both real
// runs (the MLP's TrainingRun and the language model's LmTrainingRun) on tiny data.
#include "training/lm_trainer.h"
#include "training/trainer.h"
#include "training/training_loop.h"

#include <QtTest>

#include <string>
#include <vector>

using namespace fp8lab;

namespace {

/// Steps of loss 1, 2, 3, ...; an evaluation after every `every`-th step; a non-finite value
/// "found" at step `nonfinite_at`; everything the loop asks for logged in order.
class ScriptedModel : public TrainingLoopModel {
public:
  ScriptedModel(int64_t total, int64_t every, NonFiniteRecord& first, int64_t nonfinite_at = -1)
      : total_(total), every_(every), first_(first), nonfinite_at_(nonfinite_at) {}
  int64_t totalSteps() const override { return total_; }
  float trainStep(int64_t step) override {
    log.push_back("step " + std::to_string(step));
    if (step == nonfinite_at_) first_.found = true;
    return float(step + 1);
  }
  std::string progressLine(int64_t step, float loss) const override {
    return "line " + std::to_string(step) + " loss " + std::to_string(int(loss));
  }
  bool evaluationDue(int64_t step) const override { return (step + 1) % every_ == 0; }
  std::string evaluationStage() const override { return "evaluating"; }
  void evaluate(int64_t step) override { log.push_back("evaluate " + std::to_string(step)); }
  std::vector<std::string> log;

private:
  int64_t total_, every_;
  NonFiniteRecord& first_;
  int64_t nonfinite_at_;
};

} // namespace

class TestTrainingLoop : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void completeRun() {
    NonFiniteRecord first;
    ScriptedModel m(4, 2, first);
    std::vector<std::string> progress;
    const TrainingLoopOutcome o = runTrainingLoop(m, NonFinitePolicy::Stop, first, [&](double f, const std::string& s) {
      progress.push_back(std::to_string(int(f * 100)) + " " + s);
      return true;
    });
    QCOMPARE(o.steps_done, int64_t(4));
    QVERIFY(!o.cancelled && !o.stopped_nonfinite);
    QCOMPARE(m.log, (std::vector<std::string>{"step 0", "step 1", "evaluate 1", "step 2", "step 3", "evaluate 3"}));
    // progress after each step, then the evaluation's stage at the same fraction
    QCOMPARE(progress, (std::vector<std::string>{"25 line 0 loss 1", "50 line 1 loss 2", "50 evaluating",
                                                 "75 line 2 loss 3", "100 line 3 loss 4", "100 evaluating"}));
  }

  void stopMidInterval() {
    // a stop asked after step 2 (no evaluation due): steps 0-2 done, nothing evaluated after 1
    NonFiniteRecord first;
    ScriptedModel m(6, 2, first);
    int calls = 0;
    const TrainingLoopOutcome o = runTrainingLoop(m, NonFinitePolicy::Stop, first, [&](double, const std::string& s) {
      return s == "evaluating" || ++calls < 3;
    });
    QCOMPARE(o.steps_done, int64_t(3));
    QVERIFY(o.cancelled);
    QCOMPARE(m.log, (std::vector<std::string>{"step 0", "step 1", "evaluate 1", "step 2"}));
  }

  void stopAtEvaluationStep() {
    // a stop asked after step 3, where an evaluation is due: it still runs, then the run ends
    NonFiniteRecord first;
    ScriptedModel m(6, 2, first);
    int calls = 0;
    const TrainingLoopOutcome o = runTrainingLoop(m, NonFinitePolicy::Stop, first, [&](double, const std::string& s) {
      return s == "evaluating" || ++calls < 4;
    });
    QCOMPARE(o.steps_done, int64_t(4));
    QVERIFY(o.cancelled);
    QCOMPARE(m.log, (std::vector<std::string>{"step 0", "step 1", "evaluate 1", "step 2", "step 3", "evaluate 3"}));
  }

  void stopAfterLastStepIsComplete() {
    NonFiniteRecord first;
    ScriptedModel m(2, 2, first);
    const TrainingLoopOutcome o =
        runTrainingLoop(m, NonFinitePolicy::Stop, first, [&](double f, const std::string&) { return f < 1.0; });
    QCOMPARE(o.steps_done, int64_t(2));
    QVERIFY(!o.cancelled); // nothing left undone
    QCOMPARE(m.log, (std::vector<std::string>{"step 0", "step 1", "evaluate 1"}));
  }

  void nonFiniteStop() {
    // found in step 1, an evaluation step: the run ends after it, without the evaluation
    NonFiniteRecord first;
    ScriptedModel m(4, 2, first, 1);
    const TrainingLoopOutcome o = runTrainingLoop(m, NonFinitePolicy::Stop, first, {});
    QCOMPARE(o.steps_done, int64_t(2));
    QVERIFY(o.stopped_nonfinite && !o.cancelled);
    QCOMPARE(m.log, (std::vector<std::string>{"step 0", "step 1"}));
  }

  void nonFiniteContinue() {
    NonFiniteRecord first;
    ScriptedModel m(4, 2, first, 1);
    const TrainingLoopOutcome o = runTrainingLoop(m, NonFinitePolicy::Continue, first, {});
    QCOMPARE(o.steps_done, int64_t(4));
    QVERIFY(!o.stopped_nonfinite);
    QCOMPARE(m.log.size(), size_t(6));
  }

  // The language model's run through the loop: stopped after step 2 of 6 (validation every 3
  // steps), the result holds steps 0-2 and no validation; stopped after step 5, the last, it is
  // complete: the final validation and the sample are there and no Cancelled is thrown.
  void languageModelStops() {
    TextCorpus corpus;
    for (int i = 0; i < 4000; ++i) corpus.train.push_back(uint8_t('a' + (i * 7) % 26));
    for (int i = 0; i < 1000; ++i) corpus.val.push_back(uint8_t('a' + (i * 5) % 26));
    corpus.source = "test";
    LmTrainingConfig c;
    c.precision = TrainingPrecision::FP32;
    c.model.d_model = 8;
    c.model.heads = 2;
    c.model.layers = 1;
    c.model.context = 8;
    c.model.ffn_hidden = 16;
    c.batch_size = 2;
    c.steps = 6;
    c.eval_every = 3;
    c.eval_batches = 1;
    c.sample_bytes = 4;
    c.threads = 1;
    {
      LmTrainingRun run(c, corpus);
      int steps = 0;
      bool cancelled = false;
      try {
        run.run([&](double, const std::string& s) { return s.find("validation") != std::string::npos || ++steps < 3; });
      } catch (const Cancelled&) {
        cancelled = true;
      }
      QVERIFY(cancelled);
      QVERIFY(run.result().cancelled);
      QCOMPARE(run.result().steps_done, int64_t(3));
      QCOMPARE(run.result().loss.size(), size_t(3));
      QCOMPARE(run.result().val_steps, (std::vector<int64_t>{2}));
      QVERIFY(run.result().sample.empty());
    }
    {
      LmTrainingRun run(c, corpus);
      run.run([&](double f, const std::string&) { return f < 1.0; });
      QVERIFY(!run.result().cancelled);
      QCOMPARE(run.result().steps_done, int64_t(6));
      QCOMPARE(run.result().val_steps, (std::vector<int64_t>{2, 5}));
      QVERIFY(!run.result().sample.empty());
    }
  }
};

QTEST_GUILESS_MAIN(TestTrainingLoop)
#include "test_training_loop.moc"

// FP8 Lab — the one training loop of the engine: every model's run (the MLP's epochs over
// Fashion-MNIST, the language model's steps over a corpus) is driven by runTrainingLoop, so
// progress, cancellation, the non-finite stop and the evaluation cadence mean the same thing for
// every model.
//
// Per step s = 0, 1, ..., totalSteps() − 1:
//   1. trainStep(s): one optimizer step (the model records what it measures);
//   2. with NonFinitePolicy::Stop and a non-finite value found: the run ends after this step,
//      without its evaluation (stopped_nonfinite);
//   3. progress(fraction, progressLine(s, loss)): false asks the run to stop;
//   4. when evaluationDue(s): progress(fraction, evaluationStage()) (its answer ignored) and
//      evaluate(s) — also after a stop request, so a stopped run ends at a step boundary with its
//      evaluation complete, as a re-run that stops at the same step records it;
//   5. after a stop request the loop ends.
// A stop requested after the last step leaves nothing undone: the run is complete, not cancelled.
#pragma once

#include "common/progress.h"
#include "training/nonfinite.h"

#include <cstdint>
#include <string>

namespace fp8lab {

/// What the loop drives: one model's training run (its data, model, optimizer and records).
class TrainingLoopModel {
public:
  virtual ~TrainingLoopModel() = default;
  /// Optimizer steps in the whole run (≥ 1).
  virtual int64_t totalSteps() const = 0;
  /// One optimizer step, `step` 0-based; returns the step's training loss (nats).
  virtual float trainStep(int64_t step) = 0;
  /// The progress line after step `step` with loss `loss`, e.g. "fp8: epoch 1/3, step 5/469, loss 0.71".
  virtual std::string progressLine(int64_t step, float loss) const = 0;
  /// Whether an evaluation follows step `step`.
  virtual bool evaluationDue(int64_t step) const = 0;
  /// The progress stage shown while evaluating, e.g. "fp8: evaluating on the test set".
  virtual std::string evaluationStage() const = 0;
  /// The evaluation after step `step` (it must not change the training state).
  virtual void evaluate(int64_t step) = 0;
};

struct TrainingLoopOutcome {
  int64_t steps_done = 0;         ///< completed optimizer steps
  bool stopped_nonfinite = false; ///< ended by NonFinitePolicy::Stop after step steps_done − 1
  bool cancelled = false;         ///< stopped by progress() before the last step
};

/// Runs `model` to the end, a non-finite stop (`policy` Stop and `first.found` after a step) or a
/// stop request (above). Exceptions of the model propagate.
TrainingLoopOutcome runTrainingLoop(TrainingLoopModel& model, NonFinitePolicy policy, const NonFiniteRecord& first,
                                    const ProgressFn& progress);

} // namespace fp8lab

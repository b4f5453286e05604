// FP8 Lab — the one training loop (see training_loop.h).
#include "training/training_loop.h"

namespace fp8lab {

TrainingLoopOutcome runTrainingLoop(TrainingLoopModel& model, NonFinitePolicy policy, const NonFiniteRecord& first,
                                    const ProgressFn& progress) {
  TrainingLoopOutcome out;
  const int64_t total = model.totalSteps();
  bool stop = false;
  for (int64_t step = 0; step < total && !stop; ++step) {
    const float loss = model.trainStep(step);
    ++out.steps_done;
    if (policy == NonFinitePolicy::Stop && first.found) {
      out.stopped_nonfinite = true; // this step is complete; no evaluation follows it
      break;
    }
    const double fraction = static_cast<double>(out.steps_done) / static_cast<double>(total);
    if (progress && !progress(fraction, model.progressLine(step, loss))) stop = true;
    if (model.evaluationDue(step)) {
      // Progress only: a stop is honoured after the step, so a stopped run always ends at a
      // boundary that a re-run can reproduce.
      if (progress) (void)progress(fraction, model.evaluationStage());
      model.evaluate(step);
    }
  }
  out.cancelled = stop && !out.stopped_nonfinite && out.steps_done < total;
  return out;
}

} // namespace fp8lab

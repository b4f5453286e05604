// FP8 Lab — a training experiment run into a session file (`fp8lab-cli run` / `train`): core's
// runner (training_experiment.h) with each finished run appended to the file as soon as it ends
// (taken ids renamed -2, -3, ...), where its GEMMs ran, the lines a terminal front end prints
// (training_report.h) and the JSON summary of the runs. The front end supplies the terminal
// (progress bar, stderr) and the signal state through hooks.
#pragma once

#include "experiment/training/training_experiment.h"
#include "gemm/backend_policy.h"
#include "json/json_document.h"
#include "session/session.h"

#include <functional>
#include <string>

namespace fp8lab {

/// What runTrainingIntoFile reports and asks. Every hook may be empty.
struct TrainingFileHooks {
  /// A line for stderr. `detail`: the progress lines a quiet front end drops (run start, epochs,
  /// backend notes; the run summaries too when `result` is unset); the others
  /// (first non-finite value, a skipped trained-weights GEMM) are always worth showing.
  std::function<void(const std::string& line, bool detail)> line;
  /// A result line for stdout: each saved run's summary (trainingRunSavedLines: the LM's validation
  /// loss and sample, the what-if ranking, the trained-weights GEMM's SQNR). Unset: they go to
  /// `line` as details.
  std::function<void(const std::string& line)> result;
  /// Training run "[i/n] ID" (`label`) starts.
  std::function<void(const std::string& label)> started;
  /// Progress of the current piece of work (a training run, or a trained-weights GEMM when no
  /// run was started since the last `ended`); false cancels (TrainingHooks::progress).
  std::function<bool(double fraction, const std::string& stage)> progress;
  /// The current piece of work ended (its run is about to be saved).
  std::function<void()> ended;
  /// What a forced stop would lose now, whenever it changes.
  std::function<void(const std::string& note)> loss_note;
  /// Records where the GEMMs of `run` ran: recordBackend (backend/backend_record.h) with the
  /// backend, `gemm` and `note`. Called for FP8 training runs and trained-weights GEMM runs when
  /// there is a backend.
  std::function<void(Run& run, const GemmOptions& gemm, const std::string& note)> record_backend;
};

struct TrainingFileResult {
  TrainingExperimentOutcome outcome;
  Json runs = Json::array(); ///< trainingOutcomeJson of each saved run, in order
};

/// Runs `spec` with `backend` (not owned; null = the CPU reference) and `threads`, appending
/// every finished run to `out` with `write` (on_conflict set to Rename). For each FP8 training
/// run the backend's counts restart at its start; when it ends, the fallbacks of its GEMMs
/// (fallbackSummary, else noGpuReason) become its backend note ("LABEL: note: --backend WHY"
/// line when there were fallbacks), and the run gets gemm_runs_gpu, gemm_runs_cpu and, on
/// CUDA, fast_accum_backward (0/1: backward GEMMs with FastAccum). A save that fails ends the
/// experiment as Failed with "to OUT: <first error>".
TrainingFileResult runTrainingIntoFile(const TrainingExperimentSpec& spec, const std::string& out, WriteOptions write,
                                       FallbackGemmBackend* backend, int threads, const TrainingFileHooks& hooks);

} // namespace fp8lab

// FP8 Lab — what a front end of the training runner (training_experiment.h) says: the command-
// line overrides applied to a parsed experiment, the progress lines of a run (start, epoch), the
// lines about a saved run (first non-finite value, what-if ranking, language-model validation,
// GEMM on trained weights), the JSON summary and the interrupt text. Lines carry no newline;
// numbers are written as printf's %.Nf (the fixed precisions below).
#pragma once

#include "experiment/training/training_experiment.h"
#include "json/json_document.h"
#include "session/session.h"

#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// Command-line settings that replace the config's for every run.
struct TrainingOverrides {
  std::string data_dir; ///< non-empty: every run's data directory
  int threads = 0;      ///< > 0: GEMM threads of every run, forward and backward
  std::string run_id;   ///< non-empty: the id of the single run
  std::string only_run; ///< non-empty: keep only the run with this id (and drop the trained-weights GEMM)
  /// Replaces the config's "seeds" (`fp8lab-cli sweep --seeds`).
  std::optional<std::vector<uint64_t>> seeds;
};

/// Applies `o` to `spec`; "" or the error: "--id needs a training config with a single run", the
/// run id's problem (isValidRunId), "no run 'ID' in the config".
std::string applyTrainingOverrides(TrainingExperimentSpec& spec, const TrainingOverrides& o);

/// The training experiment `config` (at `at` in `doc`, which may be null) parsed
/// (parseTrainingExperiment) with `o` applied; nullopt with *error: "invalid training config:
/// <the parser's message>" or applyTrainingOverrides's error. Then every run is repeated with each
/// seed of o.seeds, else of the config's "seeds" (expandTrainingSeeds, training_sweep.h).
std::optional<TrainingExperimentSpec> trainingExperimentToRun(const Json& config, const ConfigPath& at,
                                                              const JsonDocument* doc, const TrainingOverrides& o,
                                                              std::string* error);

/// The line when a training run starts (`label` e.g. "[1/3] fp8-delayed"): for a transformer
/// "LABEL: transformer LM (P parameters: d_model D, L layers, H heads, context C, FFN, NORM
/// pre|post-norm), SCALING|FP32 baseline, S steps of batch B on N bytes of text"; for the MLP
/// "LABEL: SCALING|FP32 baseline, E epochs of S steps (batch B, N images)" ("1 epoch of …" for E = 1).
std::string trainingRunStartLine(const std::string& label, const TrainingRunSpec& run, int64_t steps_per_epoch,
                                 int64_t images);

/// "LABEL: epoch E: train loss %.4f, test loss %.4f, test accuracy %.2f% (%.1f s)".
std::string trainingEpochLine(const std::string& label, const EpochRecord& e);

/// "ID: first non-finite value: DESCRIPTION[; run stopped (on_nonfinite stop)]" for a saved run
/// whose "nonfinite" group says found = 1; nullopt otherwise. `stored_id`: the id it was stored
/// under.
std::optional<std::string> trainingNonFiniteLine(const Run& run, const std::string& stored_id);

/// The summary lines of a saved run:
///   with a what-if group: "ID: what-if, mean SQNR over the operands at T steps (dB): R1 v1, R2 v2"
///     — per recipe the mean of the finite what-if sqnr_db values, and for "trained" (the recipe
///     that trained) the block-stats sqnr_db at the what-if steps; best first, %.2f;
///   an MLP training run with a final test accuracy: "ID: test accuracy %.2f %%, test loss %.4f
///     nats after N steps";
///   a transformer: "ID: validation loss %.4f nats/byte = %.3f bits/byte (unigram entropy of the
///     text: %.3f bits/byte), %.1f ms per step", then "ID: sample (after a validation
///     prompt):\nSAMPLE" when the run has a sample;
///   a "gemm-trained-weights" run: "GEMM on trained LAYER: SQNR %.2f dB total, %.2f dB
///     quantization, %.2f dB accumulation".
std::vector<std::string> trainingRunSavedLines(const Run& run, const std::string& stored_id);

/// The JSON summary of one saved run: id, type, backend, device; a trained-weights GEMM adds
/// layer, total_sqnr_db, quantization_sqnr_db, accumulation_sqnr_db, total_rel_fro; a training
/// run adds precision, scaling (FP8), model "transformer" with val_loss, val_bits_per_byte,
/// unigram_bits_per_byte, step_seconds, sample (language models), status
/// (completed | cancelled | stopped_nonfinite), first_nonfinite (when found), backend_request
/// and backend_note (when `backend_request` is not empty), steps, test_accuracy, seconds,
/// mean_epoch_seconds (after an epoch), saturated_total.
Json trainingOutcomeJson(const TrainingRunOutcome& o, const std::string& backend_request,
                         const std::string& backend_note);

/// {"session": OUT, "interrupted": bool, "runs": [...]}.
Json trainingSummaryJson(const std::string& out, bool interrupted, const Json& runs);

/// What the front end says when a cancel stopped the experiment `res` saved in `out`: "interrupted:
/// run 'ID' stopped after D of T steps (steps 0 to D-1, 0-based as in the session); the session
/// so far (N run(s)) is saved in OUT" when its last run was cancelled, else "interrupted; the
/// session so far (N runs) is saved in OUT".
std::string trainingInterruptText(const TrainingExperimentOutcome& res, const std::string& out);

} // namespace fp8lab

// FP8 Lab — one "gemm" experiment object of a config run as `fp8lab-cli run` runs it: parsed and
// checked (gemm_config.h), its run id chosen, run (runGemmExperimentRun) with the object's text
// as the run's config, and handed to the config's RunBatch (experiment_batch.h). Also the check
// of every experiment object of a config before any runs, and the front end's texts.
#pragma once

#include "common/progress.h"
#include "experiment/experiment_batch.h"
#include "experiment/experiment_registry.h"
#include "experiment/gemm/gemm_run.h"
#include "gemm/backend_policy.h"
#include "json/json_document.h"
#include "session/session.h"

#include <functional>
#include <string>
#include <vector>

namespace fp8lab {

/// Checks every experiment object of a config before anything runs, so a typo in the last one
/// does not waste the first ones: its type (experimentTypeOf, findExperimentKind), then its
/// schema (ExperimentKind::validate, with line and column from `doc`). "" or the first problem,
/// naming the object ("experiments[1]: ..." with several, "config: ..." with one): "missing
/// \"type\" (one of: gemm, ...)", "unknown experiment type 'T' (this build knows: ...)", or the
/// schema's message.
std::string checkExperimentObjects(const std::vector<ExperimentObject>& objects, const JsonDocument* doc);

/// The experiment objects `fp8lab-cli run` runs from a config (`doc`, parsed from `text`):
/// experimentObjects, then checkExperimentObjects. Empty with *error: "config: <why there are
/// none>", "--id needs a config with a single experiment" (`run_id_given` with several), or the
/// check's message.
std::vector<ExperimentObject> experimentsToRun(const JsonDocument& doc, const std::string& text, bool run_id_given,
                                               std::string* error);

/// Why experiments of `type` cannot run from a config, for a type no config holds: for
/// "gemm-trained-weights", "\"gemm-trained-weights\" runs are made by a training experiment's
/// \"gemm_on_trained_weights\" (see docs/training.md); they can be re-run with `fp8lab-cli
/// rerun`"; "" for the other types.
std::string notRunnableText(const std::string& type);

/// What a GEMM object's run reports and asks. Every hook may be empty.
struct GemmObjectHooks {
  /// The config reader's notes (ConfigReader::notes), before the run.
  std::function<void(const std::string& note)> config_note;
  /// A line for stderr. `detail`: a line a quiet front end drops ("note: run ID: --backend WHY"
  /// when GEMMs fell back to the CPU); the others are always shown: "note: the config has a
  /// \"sweep\" object; `run` does one GEMM, `fp8lab-cli sweep` runs the grid" before the run, the
  /// run's warnings (Issue::toString, severity below Error) after it.
  std::function<void(const std::string& line, bool detail)> line;
  /// The run with this id starts.
  std::function<void(const std::string& id)> started;
  /// Progress of the run; false cancels it (Cancelled).
  ProgressFn progress;
  /// Records where the GEMMs of the finished run ran: recordBackend (backend/backend_record.h)
  /// with the backend, `gemm` and `note` (the fallback reason, else the backend's noGpuReason).
  std::function<void(Run& run, const GemmOptions& gemm, const std::string& note)> record_backend;
  /// Reports the run once it is saved, with the id it was stored under and the config it ran.
  std::function<void(const Run& run, const std::string& stored_id, const GemmExperimentConfig& cfg)> report;
};

struct GemmObjectResult {
  enum class Status {
    Done,        ///< the run was added to the batch (and saved, for an immediate batch)
    ConfigError, ///< the object or the run id was refused before running: `error`
    Failed,      ///< the run failed: `error` (its errors)
    Cancelled,   ///< progress returned false
    SaveFailed,  ///< the immediate batch's save failed (its save function reported why)
  };
  Status status = Status::Done;
  std::string error;
  std::string id; ///< the run id: `id_override`, else the object's "name", else defaultGemmRunId
};

/// What the front end says when `signal` (e.g. "Ctrl-C (SIGINT)") stopped GEMM run `id` before it
/// finished: "interrupted by S: GEMM run 'ID' stopped before it finished and was not saved (OUT
/// keeps what it held, with any runs finished before)".
std::string gemmInterruptText(const std::string& signal, const std::string& id, const std::string& out);

/// Runs the GEMM experiment object `ex` (of `doc`, for line and column) on `backend` (not owned)
/// with `threads` GEMM threads (0 = all cores; results do not depend on it), and adds the
/// finished run, stored with the object's text as its config, to `batch`. Config errors are
/// "config: <parser message>" or the run id's problem (isValidRunId).
GemmObjectResult runGemmExperimentObject(const ExperimentObject& ex, const JsonDocument* doc,
                                         const std::string& id_override, int threads, FallbackGemmBackend& backend,
                                         RunBatch& batch, const GemmObjectHooks& hooks);

} // namespace fp8lab

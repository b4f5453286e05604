// FP8 Lab — one "gemm" experiment object of a config run as `fp8lab-cli run` runs it: parsed and
// checked (gemm_config.h), its run id chosen, run (runGemmExperimentRun) with the object's text
// as the run's config. Also the check of every experiment object of a config before any runs.
#pragma once

#include "common/progress.h"
#include "experiment/experiment_registry.h"
#include "experiment/gemm_run.h"
#include "io/json_document.h"
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

/// What a GEMM object's run reports and asks. Every hook may be empty.
struct GemmObjectHooks {
  /// The config reader's notes (ConfigReader::notes), before the run.
  std::function<void(const std::string& note)> config_note;
  /// Other remarks before the run: "note: the config has a \"sweep\" object; `run` does one GEMM,
  /// `fp8lab-cli sweep` runs the grid".
  std::function<void(const std::string& line)> remark;
  /// The run with this id starts.
  std::function<void(const std::string& id)> started;
  /// Progress of the run; false cancels it (Cancelled).
  ProgressFn progress;
};

struct GemmObjectResult {
  enum class Status {
    Done,        ///< `run` holds the finished run
    ConfigError, ///< the object or the run id was refused before running: `error`
    Failed,      ///< the run failed: `error` (its errors)
    Cancelled,   ///< progress returned false
  };
  Status status = Status::Done;
  std::string error;
  std::string id;              ///< the run id: `id_override`, else the object's "name", else defaultGemmRunId
  GemmExperimentConfig cfg;    ///< as parsed, with the GEMM threads of the call
  std::vector<Issue> warnings; ///< Done and Failed: the run's issues of severity below Error
  Run run;
};

/// Runs the GEMM experiment object `ex` (of `doc`, for line and column) on `backend` (not owned)
/// with `threads` GEMM threads (0 = all cores; results do not depend on it). Config errors are
/// "config: <parser message>" or the run id's problem (isValidRunId).
GemmObjectResult runGemmExperimentObject(const ExperimentObject& ex, const JsonDocument* doc,
                                         const std::string& id_override, int threads, GemmBackend& backend,
                                         const GemmObjectHooks& hooks);

} // namespace fp8lab

// FP8 Lab — the experiment types a config can hold and a session run can have: "gemm" (gemm_run.h),
// "training" and "gemm-trained-weights" (training_experiment.h). For each, how to check an
// experiment object without running it and how to reproduce a stored run from its config; the
// front ends (`fp8lab-cli run` / `rerun`, the desktop app) run them. Also the experiment objects of
// a config file ({"experiments": [...]} or one object) and the re-run of a stored run.
#pragma once

#include "common/progress.h"
#include "experiment/config_reader.h"
#include "json/json_document.h"
#include "session/session.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// One experiment type.
struct ExperimentKind {
  std::string type; ///< the config's and the run's "type"
  /// Reproduces a stored run from its config and seed on the CPU reference backend (`threads`
  /// 0 = all cores; results do not depend on it); nullopt with *error on failure.
  std::function<std::optional<Run>(const Run& stored, int threads, const ProgressFn& progress, std::string* error)>
      reproduce;
  /// Checks one experiment object (at `at` in `doc`, which may be null) without running it: keys,
  /// types, ranges; false with *error set. Empty for a type that no config holds.
  std::function<bool(const Json& config, const ConfigPath& at, const JsonDocument* doc, std::string* error)> validate;
};

/// The experiment types, in this order: gemm, training, gemm-trained-weights.
const std::vector<ExperimentKind>& experimentKinds();

/// The kind of `type`; null when there is none.
const ExperimentKind* findExperimentKind(const std::string& type);

/// The types joined by ", " for messages: "gemm, training, gemm-trained-weights".
std::string experimentKindNames();

/// Reproduces a stored GEMM run: its stored config parsed (parseGemmConfig), the seed checked
/// against the run's seed attribute, run on the CPU reference backend with the run's id and
/// config text. nullopt with *error (the parser's message, the seed disagreement, the run's
/// errors).
std::optional<Run> reproduceGemmRun(const Run& stored, int threads, const ProgressFn& progress, std::string* error);

/// One experiment object of a config, the JSON text to store for it, and where it sits.
struct ExperimentObject {
  const Json* obj;  ///< points into the config's document
  std::string text; ///< the object as given (a lone object) or re-serialised (an array element)
  ConfigPath at;    ///< "/experiments/<i>" for an array element, the root otherwise
};

/// The experiment objects of a config whose root object is `doc`'s and whose text is `text`: the
/// elements of "experiments" (a non-empty array of objects) or the root itself. Empty with
/// *error ("experiments: expected a non-empty array of experiment objects", "experiments[1]:
/// expected an object") when the array is not such.
std::vector<ExperimentObject> experimentObjects(const JsonDocument& doc, const std::string& text, std::string* error);

/// The type of an experiment object: its "type" string, or "gemm" for an object without one that
/// has "m" or is a GEMM config of the desktop app's older panel dialect; "" otherwise.
std::string experimentTypeOf(const Json& o);

/// A stored run reproduced and compared bit for bit (compareRuns).
struct RerunResult {
  Run fresh;                            ///< the reproduced run
  std::vector<std::string> differences; ///< one line per difference; empty = identical
  int datasets = 0, metrics = 0;        ///< how many were compared
};

/// Reproduces `stored` with its experiment kind and compares the result with it. nullopt with
/// *error: "run ID has type 'T', which this build cannot re-run (known: ...)", or "cannot re-run
/// ID: <why>".
std::optional<RerunResult> rerunStoredRun(const Run& stored, int threads, const ProgressFn& progress,
                                          std::string* error);

/// What `rerun` prints for a rerun of `stored` (text lines): "reproduced bit for bit: run ID
/// (TYPE, seed S) — N datasets and M metrics identical on the CPU backend", or "NOT reproduced:
/// run ID differs in K place(s):" and one indented line per difference; both say which backend
/// the stored run used when it was not the CPU.
std::string rerunReportText(const Run& stored, const RerunResult& r);

} // namespace fp8lab

// FP8 Lab — the model kinds a training experiment knows, keyed by the run's "model": {"kind": ...}
// (the Fashion-MNIST MLP is the run without "model", kind "mlp"). Each kind is one entry with what
// the experiment, the advice sweep, the sweeps and the reports need of a model beyond the shared
// run settings (TrainingRunConfig): its sites, its length in steps, how to cut it short, how its
// start is announced and its outcome reported, the metric of its final loss, and the one-run
// config that reproduces it. The entries live one per file (model_mlp.cpp,
// model_transformer.cpp); trainingModelKinds() lists them.
#pragma once

#include "experiment/config_reader.h"
#include "experiment/training/training_schema.h"
#include "json/json_document.h"
#include "common/progress.h"
#include "session/session.h"
#include "training/run_config.h"
#include "training/sites.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

struct TrainingRunSpec;
struct TrainingRunOutcome;
class TrainingJob;
class TrainingDataCache;

struct TrainingModelKind {
  std::string kind;        ///< "mlp", "transformer": the config's model.kind and the session's attribute
  std::string title;       ///< what the GUI's model box shows: "MLP on Fashion-MNIST"
  std::string description; ///< one line, for tooltips and help texts
  /// The session metric holding the run's final loss ("final_test_loss", "final_val_loss") and
  /// its name in reports ("test loss (nats)").
  std::string loss_metric, loss_name;
  /// Whether a run of this kind trains beside the next such run of its experiment, on the CPU
  /// backend with two threads or more (most of an MLP step runs on one core; a run's results do
  /// not depend on it). Runs of other kinds train alone.
  bool trains_beside;
  /// Whether the run's trained Linear weights feed "gemm_on_trained_weights" (TrainingJob::trainedLinears).
  bool weight_gemm;
  /// The run keys only this kind reads (a run of another kind refuses them: "applies to
  /// <subject>"), and how such a refusal names the kind.
  std::vector<std::string> own_keys;
  std::string subject;
  /// Reads the model's members of the run object `o` (at `where`) into `spec`, whose id and
  /// model_kind are set, over `shared`: the settings every run has, as the parser read them
  /// (training_config.cpp). Errors go to `r` at their key path (ConfigReader keeps the first);
  /// the model's own validation comes last.
  void (*parse)(ConfigReader& r, const Json& o, const ConfigPath& where, const TrainingRunConfig& shared,
                TrainingRunSpec& spec);
  /// `--data-dir DIR` (fp8lab-cli run, train, advise): reads the run's data set from DIR (the
  /// MLP: Fashion-MNIST). Null for a kind whose data the config names (the language model's text).
  void (*use_data_dir)(TrainingRunSpec& spec, const std::string& dir);
  /// The kind's entries of the training schema (training_schema.h; `model` is `kind`): the
  /// range, default, unit and help of each key it reads.
  std::vector<TrainingParam> (*schema)();
  /// The shared run settings of a spec of this kind (the base of the model's config).
  TrainingRunConfig& (*run)(TrainingRunSpec& spec);
  /// The model's sites, in recording order.
  SiteTable (*sites)(const TrainingRunSpec& spec);
  /// Optimizer steps the run takes.
  int64_t (*steps)(const TrainingRunSpec& spec);
  /// The most steps shorten() can give the run (an MLP's probe runs are one epoch at most).
  int64_t (*max_short_steps)(const TrainingRunSpec& spec);
  /// Cuts the run to `steps` optimizer steps, as the advice sweep's probe runs (site_advice.h)
  /// train it: no more evaluation, probes or samples than the final ones.
  void (*shorten)(TrainingRunSpec& spec, int64_t steps);
  /// The one-run config that reproduces the run (stored as the run's config).
  std::string (*config_json)(const TrainingRunSpec& spec);
  /// The line announcing the run's start ("fp8: te_current, 3 epochs of 469 steps (batch 128,
  /// 60000 images)"); `steps_per_epoch` and `images` as the runner reports them (the language
  /// model: its steps and its training text's bytes).
  std::string (*start_line)(const std::string& label, const TrainingRunSpec& spec, int64_t steps_per_epoch,
                            int64_t images);
  /// The model's members of a finished run's JSON summary (`fp8lab-cli run --json`), added to `js`.
  void (*outcome_json)(Json& js, const TrainingRunOutcome& o);
  /// The model's lines of a stored run's summary (`fp8lab-cli run` and `rerun` print them), from
  /// the run's metrics and attributes, appended to `lines`.
  void (*stored_lines)(const Run& run, const std::string& stored_id, std::vector<std::string>& lines);
  /// The run's job (training_job.h) on a copy of `spec`, its data loaded through `data`: null
  /// with *error when the data cannot be read.
  std::unique_ptr<TrainingJob> (*job)(const TrainingRunSpec& spec, TrainingDataCache& data, std::string* error);
  /// How the decision tables name the setting a stored run trained in ("MLP 784-256-128-10 on
  /// Fashion-MNIST, 3 epochs"), from its stored config and attributes.
  std::string (*setting_label)(const Json& config, const Attributes& attrs);
};

/// Every model kind, the MLP first.
const std::vector<const TrainingModelKind*>& trainingModelKinds();
/// The kind named `kind` (case-sensitive), or null. A stored run's kind is its "model" attribute
/// ("mlp" where the attribute is absent: MLP runs do not store it).
const TrainingModelKind* findTrainingModelKind(std::string_view kind);
/// "mlp, transformer": the kinds, for error messages.
std::string trainingModelKindNames();

/// The entries (one file each).
const TrainingModelKind& mlpModelKind();         ///< model_mlp.cpp
const TrainingModelKind& transformerModelKind(); ///< model_transformer.cpp

} // namespace fp8lab

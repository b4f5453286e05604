// FP8 Lab — the model kinds a training experiment knows, keyed by the run's "model": {"kind": ...}
// (the Fashion-MNIST MLP is the run without "model", kind "mlp"). Each kind is one entry with what
// the experiment, the advice sweep, the sweeps and the reports need of a model beyond the shared
// run settings (TrainingRunConfig): its sites, its length in steps, how to cut it short, how its
// start is announced and its outcome reported, the metric of its final loss, and the one-run
// config that reproduces it. The entries live one per file (model_mlp.cpp,
// model_transformer.cpp); trainingModelKinds() lists them.
#pragma once

#include "json/json_document.h"
#include "common/progress.h"
#include "session/session.h"
#include "training/run_config.h"
#include "training/sites.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

struct TrainingRunSpec;
struct TrainingRunOutcome;

struct TrainingModelKind {
  std::string kind;        ///< "mlp", "transformer": the config's model.kind and the session's attribute
  std::string title;       ///< what the GUI's model box shows: "MLP on Fashion-MNIST"
  std::string description; ///< one line, for tooltips and help texts
  /// The session metric holding the run's final loss ("final_test_loss", "final_val_loss") and
  /// its name in reports ("test loss (nats)").
  std::string loss_metric, loss_name;
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
  /// Trains the run alone, on the calling thread (`fp8lab-cli rerun`: the run reproduced from its
  /// stored config), and returns it as stored under `run_id` with `config_json`. `stop_after` ≥ 0:
  /// the run is stopped after that many steps, as a run saved after a cancel was (it is then
  /// stored as cancelled). nullopt with *error when its data cannot be read, the run fails, or
  /// `progress` cancels it.
  std::optional<Run> (*train_alone)(const TrainingRunSpec& spec, const std::string& run_id,
                                    const std::string& config_json, int64_t stop_after, const ProgressFn& progress,
                                    std::string* error);
  /// How the decision tables name the setting a stored run trained in ("MLP 784-256-128-10 on
  /// Fashion-MNIST, 3 epochs"), from its stored config and attributes.
  std::string (*setting_label)(const Json& config, const Attributes& attrs);
};

/// Runs `train(progress')` where progress' stops the run after `stop_after` steps (≥ 0; as read
/// by `steps_done()`) and otherwise asks `progress`: true when the run ended as asked (complete, or
/// stopped exactly after `stop_after` steps), false with *error "cancelled" when `progress` stopped
/// it. The shared part of every kind's train_alone.
bool trainAloneStopping(const std::function<void(const ProgressFn&)>& train, const std::function<int64_t()>& steps_done,
                        int64_t stop_after, const ProgressFn& progress, std::string* error);

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

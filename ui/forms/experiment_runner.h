// The bridge from the experiment panel to core/experiment: the panel's canonical GEMM config
// (gemm_config.h) runs on the backend it names and is what the run stores, so `fp8lab-cli rerun`
// reproduces GUI runs; training experiments run in process on core's runner. Kept in one file so the rest of the GUI
// does not depend on the runner's API.
#pragma once

#include "forms/training_request.h"
#include "main_window.h"

#include <QByteArray>

namespace fp8lab::ui {

/// The runner this build has: core/experiment (runGemmExperimentRun) on the request's backend; empty when the build has
/// no core/experiment (then the panel says why Run is off).
ExperimentRunner builtinExperimentRunner();
/// Why there is no runner (empty when there is one).
QString experimentRunnerMissingReason();

/// The experiment panel's Strategy entry ("per-tensor-current", "per-tensor-delayed", "per-row",
/// "1x128", "128x128", "mx32") of a preset of the table, from its granularity and rule; "" for a
/// preset a GEMM cannot take (per_column: A's columns run along K) or an unknown name.
QString panelStrategyOf(const QString& preset);

/// The canonical GEMM config `config` (ExperimentPanel::config()) with every default filled in
/// (gemmConfigJson, JSON text): what a run stores and `fp8lab-cli run` reads; `run_id` is stored
/// as its "name" when not empty. "" with *why (core's message) when core refuses the config.
QByteArray canonicalGemmConfig(const QJsonObject& config, const QString& run_id, QString* why);

/// The Training tab's config `training` (a training config of one run) parsed by core, with the
/// one-run config that reproduces it (trainingConfigJson, every default filled in: what the run
/// stores and `fp8lab-cli run` reads). Empty with *why when core refuses it.
TrainingRequest trainingRequest(const QJsonObject& training, QString* why);
/// A training config file's text (resources/experiments/default.json) parsed by core; empty with
/// *why when it is not valid JSON or core refuses it.
TrainingRequest trainingRequestFromText(const QByteArray& config_json, QString* why);
/// trainingRequest(training).config_json: "" with *why when core refuses it.
QByteArray canonicalTrainingConfig(const QJsonObject& training, QString* why);
/// The Training tab's fields of a training config file (Load config…); an empty object with *why
/// when it is not a training config, holds more than one run or a GEMM on trained weights, or
/// sets a key the tab has no field for (the layers, the optimizer, a spike, ...).
QJsonObject trainingPanelFromCanonical(const QByteArray& json, QString* why);

/// The work of a training experiment for a Job: the request's spec run on core's runner, each
/// finished run appended to `out_file`; progress is the whole experiment's; Cancel stops after the
/// current step and keeps that run (status cancelled) and the ones before. The result names the
/// file to open. Throws std::invalid_argument for an empty request.
JobResult runTrainingJob(const TrainingRequest& request, const QString& out_file, const fp8lab::ProgressFn& progress);

} // namespace fp8lab::ui

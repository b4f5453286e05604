#include "forms/experiment_runner.h"

#include "forms/job.h"

#ifdef FP8LAB_HAVE_HDF5
#include "backend/backend_factory.h"
#include "backend/backend_record.h"
#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/gemm_run.h"
#include "experiment/training/training_config.h"
#include "experiment/training/training_experiment.h"
#include "gemm/accumulation_preset.h"
#include "training/training_session.h"
#include "session/session_document.h"
#include "forms/training_model_form.h"
#endif

#include "scaling/scaling.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace fp8lab::ui {

QString panelStrategyOf(const QString& preset) {
  const std::string name = preset.toStdString();
  for (const auto& p : scalingPresets())
    if (p.delayed && p.name == name) return QStringLiteral("per-tensor-delayed");
  const auto c = scalingPreset(name);
  if (!c || !gemmScalingProblem(*c, Axis::Cols).empty() || !gemmScalingProblem(*c, Axis::Rows).empty()) return {};
  const bool mx = isMxRule(c->rule);
  switch (c->granularity) {
  case Granularity::PerTensor:
    return QStringLiteral("per-tensor-current");
  case Granularity::Outer:
    return QStringLiteral("per-row");
  case Granularity::Block1D:
    return mx ? QStringLiteral("mx32") : QStringLiteral("1x128");
  case Granularity::Block2D:
    return mx ? QStringLiteral("mx32") : QStringLiteral("128x128");
  default:
    return {};
  }
}

#ifdef FP8LAB_HAVE_HDF5

namespace {

Json toJson(const QJsonObject& o) {
  return Json::parse(QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString());
}

QJsonValue fromJson(const Json& j) {
  const Json wrapped = {{"v", j}};
  return QJsonDocument::fromJson(QByteArray::fromStdString(wrapped.dump())).object().value(QStringLiteral("v"));
}

} // namespace

ExperimentRunner builtinExperimentRunner() {
  return [](const GemmRunRequest& request, const fp8lab::ProgressFn& progress) -> JobResult {
    const QString name = request.config.value(QStringLiteral("name")).toString();
    const std::string run_id = name.isEmpty() ? std::string("run-gui") : name.toStdString();
    // core parses the panel's config once; the run stores its canonical text
    GemmExperimentConfig cfg;
    if (const std::string e = parseGemmConfig(toJson(request.config), &cfg); !e.empty()) throw std::invalid_argument(e);
    const std::string canonical = gemmConfigJson(cfg, run_id).dump(2);
    // Core's policy (gemm/backend_policy.h), the same as fp8lab-cli --backend.
    const auto backend_request = parseBackendRequest(request.backend.toStdString());
    if (!backend_request) throw std::invalid_argument("unknown backend '" + request.backend.toStdString() + "'");
    std::string no_gpu;
    const auto backend = makeGemmBackend(*backend_request, &no_gpu);
    if (!backend) throw std::runtime_error("the CUDA backend is not available: " + no_gpu);
    auto res = runGemmExperimentRun(cfg, canonical, run_id, *backend, progress);
    if (!res.ok()) throw std::runtime_error(res.firstError());
    recordBackend(res.value, *backend, cfg.gemm, backend->note());
    JobResult jr;
    jr.run = session_io::fromCoreRun(res.value);
    for (const auto& i : res.issues) jr.warnings.push_back(i);
    return jr;
  };
}

QString experimentRunnerMissingReason() {
  return {};
}

QByteArray canonicalGemmConfig(const QJsonObject& config, const QString& run_id, QString* why) {
  GemmExperimentConfig cfg;
  if (const std::string e = parseGemmConfig(toJson(config), &cfg); !e.empty()) {
    if (why) *why = QString::fromStdString(e);
    return {};
  }
  return QByteArray::fromStdString(gemmConfigJson(cfg, run_id.toStdString()).dump(2));
}

TrainingRequest trainingRequest(const QJsonObject& training, QString* why) {
  std::string err;
  auto spec = parseTrainingExperiment(toJson(training), &err);
  if (!spec || spec->runs.size() != 1) {
    if (why) *why = spec ? QObject::tr("a training config of one run is expected") : QString::fromStdString(err);
    return {};
  }
  TrainingRequest r;
  r.config_json = QByteArray::fromStdString(spec->runs.front().configJson());
  r.spec = std::make_shared<const TrainingExperimentSpec>(std::move(*spec));
  return r;
}

TrainingRequest trainingRequestFromText(const QByteArray& config_json, QString* why) {
  JsonDocument doc;
  try {
    doc = JsonDocument::parse(config_json.toStdString());
  } catch (const JsonTextError& e) {
    if (why) *why = QObject::tr("the training config is not valid JSON: %1").arg(QString::fromStdString(e.what()));
    return {};
  }
  std::string err;
  auto spec = parseTrainingExperiment(doc.root(), &err, &doc);
  if (!spec) {
    if (why) *why = QObject::tr("invalid training config: %1").arg(QString::fromStdString(err));
    return {};
  }
  TrainingRequest r;
  r.config_json = config_json;
  r.spec = std::make_shared<const TrainingExperimentSpec>(std::move(*spec));
  return r;
}

QByteArray canonicalTrainingConfig(const QJsonObject& training, QString* why) {
  return trainingRequest(training, why).config_json;
}

QJsonObject trainingPanelFromCanonical(const QByteArray& json, QString* why) {
  auto no = [&](const QString& w) {
    if (why) *why = w;
    return QJsonObject();
  };
  std::optional<TrainingExperimentSpec> spec;
  std::string err;
  try {
    const JsonDocument doc = JsonDocument::parse(json.toStdString());
    if (!isTrainingConfig(doc.root())) return no(QObject::tr("not a training config (\"type\": \"training\")"));
    spec = parseTrainingExperiment(doc.root(), &err, &doc);
  } catch (const JsonTextError& e) {
    return no(QObject::tr("not valid JSON: %1 (line %2, column %3)")
                  .arg(QString::fromStdString(e.what()))
                  .arg(e.pos.line)
                  .arg(e.pos.column));
  }
  if (!spec) return no(QString::fromStdString(err));
  if (spec->runs.size() != 1 || spec->weight_gemm)
    return no(QObject::tr("the Training tab holds one run; this config has %1 run(s)%2 (run it with fp8lab-cli run)")
                  .arg(spec->runs.size())
                  .arg(spec->weight_gemm ? QObject::tr(" and a GEMM on trained weights") : QString()));
  const TrainingRunSpec& run = spec->runs.front();
  const TrainingRunConfig& t = run.run();
  QJsonObject c;
  c[QStringLiteral("type")] = QStringLiteral("training");
  c[QStringLiteral("id")] = QString::fromStdString(run.id);
  c[QStringLiteral("precision")] = QString::fromLatin1(toString(t.precision));
  if (t.precision == TrainingPrecision::FP8 && t.recipe.recipe != TrainingRecipe::PerTensor) {
    QJsonObject r;
    r[QStringLiteral("name")] = QString::fromLatin1(toString(t.recipe.recipe));
    if (t.recipe.recipe != TrainingRecipe::TeNvfp4)
      r[QStringLiteral("fp8_format")] = t.recipe.hybrid ? QStringLiteral("HYBRID") : QStringLiteral("E4M3");
    r[QStringLiteral("weight_2d")] = t.recipe.weight2d();
    if (t.recipe.recipe == TrainingRecipe::TeNvfp4) {
      r[QStringLiteral("hadamard")] = t.recipe.nvfp4_rht;
      r[QStringLiteral("stochastic_rounding")] = t.recipe.nvfp4_stochastic_rounding;
    }
    const auto& ov = t.recipe.overrides;
    if (ov[size_t(OperandRole::WgradInput)].kind == RoleKind::HighPrecision &&
        ov[size_t(OperandRole::WgradGradOutput)].kind == RoleKind::HighPrecision)
      r[QStringLiteral("overrides")] = QJsonObject{
          {QStringLiteral("wgrad"), QJsonObject{{QStringLiteral("recipe"), QStringLiteral("high_precision")}}}};
    c[QStringLiteral("recipe")] = r;
  } else if (t.precision == TrainingPrecision::FP8) {
    c[QStringLiteral("scaling")] =
        QJsonObject{{QStringLiteral("strategy"), QString::fromLatin1(toString(t.scaling.kind))},
                    {QStringLiteral("history_len"), t.scaling.history_len}};
    c[QStringLiteral("forward_format")] = QString::fromStdString(t.forward_format->name());
    c[QStringLiteral("backward_format")] = QString::fromStdString(t.backward_format->name());
  }
  const Json want = Json::parse(run.configJson());
  const bool lm = run.model_kind == transformerModelKind().kind;
  if (lm) {
    // The language model: its batch, seed and steps, the model's knobs and the policy as the
    // canonical config states them (the tab's fields read them back; the check below refuses a
    // config whose other keys differ from the defaults).
    const LmTrainingConfig& lmc = lmRun(run);
    c[QStringLiteral("batch_size")] = lmc.batch_size;
    c[QStringLiteral("seed")] = double(lmc.seed);
    c[QStringLiteral("steps")] = double(lmc.steps);
    // The model's knobs the tab has fields for; another key (untied embeddings) fails the check.
    if (want.contains("model")) {
      const QJsonObject m = fromJson(want["model"]).toObject();
      QJsonObject shown;
      for (const char* k :
           {"kind", "d_model", "layers", "heads", "context", "ffn_hidden", "ffn", "norm", "norm_position"})
        if (m.contains(QString::fromLatin1(k))) shown[QString::fromLatin1(k)] = m.value(QString::fromLatin1(k));
      c[QStringLiteral("model")] = shown;
    }
  } else {
    const MlpRunConfig& m = mlpRun(run);
    c[QStringLiteral("epochs")] = m.config.epochs;
    c[QStringLiteral("batch_size")] = m.config.batch_size;
    c[QStringLiteral("seed")] = double(t.seed);
    c[QStringLiteral("train_limit")] = double(m.train_limit);
    c[QStringLiteral("test_limit")] = double(m.test_limit);
  }
  // A policy the tab's presets produce (TrainingModelForm); another one has no field.
  if (want.contains("policy")) {
    const QJsonArray rules = fromJson(want["policy"]).toArray();
    const int blocks = lm ? int(lmRun(run).model.layers) : 0;
    const auto preset = policyPresetOf(rules, lm, blocks);
    if (!preset)
      return no(QObject::tr("the Training tab's policy presets do not produce this config's \"policy\"; run it with "
                            "fp8lab-cli run"));
    c[QStringLiteral("policy")] = rules;
  }
  // The fields above must reproduce the run: a key the tab has no field for would be lost.
  const Json have = Json::parse(canonicalTrainingConfig(c, nullptr).toStdString());
  for (auto it = want.begin(); it != want.end(); ++it)
    if (!have.contains(it.key()) || have[it.key()] != it.value())
      return no(QObject::tr("the Training tab has no field for this config's \"%1\"; run it with fp8lab-cli run")
                    .arg(QString::fromStdString(it.key())));
  return c;
}

JobResult runTrainingJob(const TrainingRequest& request, const QString& out_file, const fp8lab::ProgressFn& progress) {
  if (!request.ok()) throw std::invalid_argument("no training config to run (core refused it)");
  const TrainingExperimentSpec* spec = request.spec.get();
  JobResult jr;
  TrainingHooks hooks;
  hooks.progress = [&](double, double overall, const std::string& stage) {
    return progress ? progress(overall, stage) : true;
  };
  hooks.save = [&](const Run& run, std::string* stored, std::string* error) {
    WriteOptions wo;
    wo.on_conflict = WriteOptions::OnConflict::Rename;
    std::vector<std::string> ids;
    const Status st = appendRuns(out_file.toStdString(), {run}, wo, &ids);
    if (!st.ok()) {
      *error = session_io::errorText(st).toStdString();
      return false;
    }
    *stored = ids.empty() ? run.id : ids.front();
    return true;
  };
  TrainingRunnerOptions ro;
  const TrainingExperimentOutcome res = runTrainingExperiment(*spec, ro, hooks);
  if (!res.runs.empty()) jr.session_file = out_file;
  using S = TrainingExperimentOutcome::Status;
  if (res.status == S::Failed) {
    if (res.runs.empty()) throw std::runtime_error(res.error);
    jr.warnings.push_back({Severity::Error, res.error, "training experiment", out_file.toStdString()});
  }
  jr.kept_after_cancel = res.status == S::Cancelled && !res.runs.empty();
  if (res.status == S::Cancelled && !res.runs.empty() && res.runs.back().cancelled) {
    const auto& o = res.runs.back();
    jr.summary = QObject::tr("Cancelled: run %1 stopped after %2 of %3 steps%6; %4 run(s) saved in %5")
                     .arg(QString::fromStdString(o.stored_id))
                     .arg(o.steps_done)
                     .arg(o.steps_total)
                     .arg(res.runs.size())
                     .arg(out_file)
                     .arg(o.steps_done > 0 ? QObject::tr(" (steps 0 to %1)").arg(o.steps_done - 1) : QString());
  } else if (res.status == S::Cancelled) {
    jr.summary = QObject::tr("Cancelled; %1 finished run(s) saved in %2").arg(res.runs.size()).arg(out_file);
  } else if (res.status == S::Completed) {
    jr.summary = QObject::tr("Training experiment finished: %1 run(s) saved in %2").arg(res.runs.size()).arg(out_file);
  }
  return jr;
}

#else

ExperimentRunner builtinExperimentRunner() {
  return {};
}

QString experimentRunnerMissingReason() {
  return QObject::tr("Run needs the experiment runner (core/experiment with HDF5), which this build does not have.");
}

QByteArray canonicalGemmConfig(const QJsonObject&, const QString&, QString* why) {
  if (why) *why = experimentRunnerMissingReason();
  return {};
}

TrainingRequest trainingRequest(const QJsonObject&, QString* why) {
  if (why) *why = experimentRunnerMissingReason();
  return {};
}

TrainingRequest trainingRequestFromText(const QByteArray&, QString* why) {
  if (why) *why = experimentRunnerMissingReason();
  return {};
}

QByteArray canonicalTrainingConfig(const QJsonObject&, QString* why) {
  if (why) *why = experimentRunnerMissingReason();
  return {};
}

QJsonObject trainingPanelFromCanonical(const QByteArray&, QString* why) {
  if (why) *why = experimentRunnerMissingReason();
  return {};
}

JobResult runTrainingJob(const TrainingRequest&, const QString&, const fp8lab::ProgressFn&) {
  throw std::runtime_error(experimentRunnerMissingReason().toStdString());
}

#endif

} // namespace fp8lab::ui

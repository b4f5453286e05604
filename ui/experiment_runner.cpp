#include "experiment_runner.h"

#include "job.h"

#ifdef FP8LAB_HAVE_HDF5
#include "backend/backend_factory.h"
#include "backend/backend_record.h"
#include "experiment/gemm_config.h"
#include "experiment/gemm_run.h"
#include "experiment/training_config.h"
#include "experiment/training_experiment.h"
#include "gemm/accumulation_preset.h"
#include "training/training_session.h"
#include "session_document.h"
#include "training_model_form.h"
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

ExperimentRunner builtinExperimentRunner() {
  return [](const QJsonObject& c, const fp8lab::ProgressFn& progress) -> JobResult {
    const std::string run_id = c.value(QStringLiteral("run_id")).toString().toStdString();
    QString why;
    const QByteArray canonical =
        canonicalGemmConfig(c, QString::fromStdString(run_id.empty() ? "run-gui" : run_id), &why);
    if (canonical.isEmpty()) throw std::invalid_argument(why.toStdString());
    GemmExperimentConfig cfg;
    if (const std::string e = parseGemmConfig(Json::parse(canonical.toStdString()), &cfg); !e.empty())
      throw std::invalid_argument(e);
    // The config's "backend" is "auto", "cpu" or "cuda": core's policy (gemm/backend_policy.h),
    // the same as fp8lab-cli --backend.
    const QString choice = c.value(QStringLiteral("backend")).toString(QStringLiteral("auto"));
    const auto request = parseBackendRequest(choice.toStdString());
    if (!request) throw std::invalid_argument("unknown backend '" + choice.toStdString() + "'");
    std::string no_gpu;
    const auto backend = makeGemmBackend(*request, &no_gpu);
    if (!backend) throw std::runtime_error("the CUDA backend is not available: " + no_gpu);
    auto res =
        runGemmExperimentRun(cfg, canonical.toStdString(), run_id.empty() ? "run-gui" : run_id, *backend, progress);
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

namespace {

Json toJson(const QJsonObject& o) {
  return Json::parse(QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString());
}

QJsonValue fromJson(const Json& j) {
  const Json wrapped = {{"v", j}};
  return QJsonDocument::fromJson(QByteArray::fromStdString(wrapped.dump())).object().value(QStringLiteral("v"));
}

/// Core's messages start with the key path ("scaling: ..."); the panel shows them by its field.
QString reasonOf(const std::string& e) {
  const auto c = e.find(": ");
  return QString::fromStdString(c == std::string::npos ? e : e.substr(c + 2));
}

/// The panel keys core's older-form mapping does not know: an accumulation preset named in the
/// Accumulation box (it sets the model and its parameters, so the model keys are left out), and
/// the epilogue: alpha, beta, C (present exactly when beta ≠ 0, as parseGemmConfig requires) and
/// the bias.
void addPanelGemmKeys(const QJsonObject& panel, Json& g) {
  const std::string acc = panel.value(QStringLiteral("accumulation")).toString().toStdString();
  if (const auto preset = accumulationPreset(acc)) {
    g.erase("accumulation");
    g.erase("promotion_interval");
    g.erase("fast_accum_bits");
    g["accumulation_preset"] = preset->name;
  }
  const double alpha = panel.value(QStringLiteral("alpha")).toDouble(1.0);
  const double beta = panel.value(QStringLiteral("beta")).toDouble(0.0);
  g["alpha"] = alpha;
  g["beta"] = beta;
  auto source = [&](const char* seed, const char* scale) {
    Json o = Json::object();
    o["seed"] = static_cast<uint64_t>(panel.value(QLatin1String(seed)).toDouble(1.0));
    o["scale"] = panel.value(QLatin1String(scale)).toDouble(1.0);
    return o;
  };
  if (float(beta) != 0.0f) g["c"] = source("c_seed", "c_scale");
  if (panel.value(QStringLiteral("bias")).toBool()) g["bias"] = source("bias_seed", "bias_scale");
}

} // namespace

QString scalingPresetFor(const QJsonObject& c, QString* why) {
  ConfigReader r;
  const Json g = legacyPanelGemmConfig(toJson(c), r);
  if (!r.ok() || !g.contains("scaling") || g["scaling"].get<std::string>().empty()) {
    if (why) *why = reasonOf(r.error());
    return {};
  }
  return QString::fromStdString(g["scaling"].get<std::string>());
}

QByteArray canonicalGemmConfig(const QJsonObject& panel, const QString& run_id, QString* why) {
  ConfigReader r;
  QJsonObject p = panel;
  p.remove(QStringLiteral("run_id"));
  Json g = legacyPanelGemmConfig(toJson(p), r);
  if (r.ok()) addPanelGemmKeys(panel, g);
  GemmExperimentConfig cfg;
  if (r.ok()) parseGemmConfig(g, &cfg, r);
  if (!r.ok()) {
    if (why) *why = QString::fromStdString(r.error());
    return {};
  }
  return QByteArray::fromStdString(gemmConfigJson(cfg, run_id.toStdString()).dump(2));
}

QJsonObject panelConfigFromCanonical(const QByteArray& json, const QJsonObject& base, QString* why) {
  auto no = [&](const QString& w) {
    if (why) *why = w;
    return QJsonObject();
  };
  GemmExperimentConfig cfg;
  try {
    const JsonDocument doc = JsonDocument::parse(json.toStdString());
    if (const std::string e = parseGemmConfig(doc.root(), &cfg, &doc); !e.empty()) return no(QString::fromStdString(e));
  } catch (const JsonTextError& e) {
    return no(QObject::tr("not valid JSON: %1 (line %2, column %3)")
                  .arg(QString::fromStdString(e.what()))
                  .arg(e.pos.line)
                  .arg(e.pos.column));
  }
  {
    const GemmExperimentConfig d;
    const char* hidden = nullptr;
    // An accumulation preset sets the group and the promotion itself.
    if (cfg.accumulation_preset.empty() && cfg.gemm.fast_accum_group != d.gemm.fast_accum_group)
      hidden = "fast_accum_group";
    if (cfg.accumulation_preset.empty() && cfg.gemm.fast_accum_promotes != d.gemm.fast_accum_promotes)
      hidden = "fast_accum_promotes";
    if (cfg.gemm.output_quant_scale != d.gemm.output_quant_scale) hidden = "output_quant_scale";
    if (cfg.tile != d.tile) hidden = "tile";
    if (cfg.store_inputs != d.store_inputs || cfg.store_quantized != d.store_quantized ||
        cfg.store_error_maps != d.store_error_maps)
      hidden = "store_*";
    if (hidden)
      return no(QObject::tr("the panel has no field for \"%1\"; run this config with fp8lab-cli run")
                    .arg(QString::fromLatin1(hidden)));
  }
  QJsonObject c = base;
  c[QStringLiteral("a_format")] = QString::fromStdString(cfg.format_a);
  c[QStringLiteral("b_format")] = QString::fromStdString(cfg.format_b);
  c[QStringLiteral("m")] = int(cfg.m);
  c[QStringLiteral("k")] = int(cfg.k);
  c[QStringLiteral("n")] = int(cfg.n);
  c[QStringLiteral("seed")] = double(cfg.seed);
  // The panel's Accumulation box keys (aliases of the canonical names).
  const char* acc = "split-fp32";
  switch (cfg.gemm.accumulation) {
  case Accumulation::Exact:
    acc = "exact";
    break;
  case Accumulation::FP32:
    acc = "fp32";
    break;
  case Accumulation::SplitFP32:
    break;
  case Accumulation::FastAccum:
    acc = "fast-accum";
    break;
  }
  c[QStringLiteral("accumulation")] =
      cfg.accumulation_preset.empty() ? QString::fromLatin1(acc) : QString::fromStdString(cfg.accumulation_preset);
  c[QStringLiteral("alpha")] = double(cfg.gemm.alpha);
  c[QStringLiteral("beta")] = double(cfg.gemm.beta);
  // C is in a config exactly when beta ≠ 0; the bias when it is on.
  if (cfg.c_source.enabled) {
    c[QStringLiteral("c_seed")] = double(cfg.c_source.seed);
    c[QStringLiteral("c_scale")] = cfg.c_source.scale;
  }
  c[QStringLiteral("bias")] = cfg.bias_source.enabled;
  if (cfg.bias_source.enabled) {
    c[QStringLiteral("bias_seed")] = double(cfg.bias_source.seed);
    c[QStringLiteral("bias_scale")] = cfg.bias_source.scale;
  }
  c[QStringLiteral("output")] = QString::fromLatin1(toString(cfg.gemm.output));
  c[QStringLiteral("promotion_interval")] = cfg.gemm.promotion_interval;
  c[QStringLiteral("fast_accum_bits")] = cfg.gemm.fast_accum_bits;
  if (!cfg.a.tensor.empty() || !cfg.b.tensor.empty()) {
    if (cfg.a.transpose || cfg.b.transpose)
      return no(QObject::tr("the panel imports tensors untransposed; this config transposes one"));
    const RandomMatrixOptions def;
    for (const OperandSource* o : {&cfg.a, &cfg.b})
      if (o->tensor.empty() &&
          (o->random.distribution != def.distribution || o->random.scale != def.scale || o->random.sigma != def.sigma ||
           o->random.outlier_fraction != def.outlier_fraction || o->random.outlier_factor != def.outlier_factor))
        return no(QObject::tr("beside an imported tensor the panel's random operand is normal with scale 1; this "
                              "config's differs (run it with fp8lab-cli run)"));
    c[QStringLiteral("input")] = QStringLiteral("import");
    c[QStringLiteral("import_path")] = QString::fromStdString(cfg.a.tensor);
    c[QStringLiteral("import_path_b")] = QString::fromStdString(cfg.b.tensor);
  } else {
    const RandomMatrixOptions& ra = cfg.a.random;
    const RandomMatrixOptions& rb = cfg.b.random;
    const RandomMatrixOptions def;
    if (ra.distribution != rb.distribution || ra.scale != rb.scale || ra.sigma != def.sigma || rb.sigma != def.sigma ||
        ra.outlier_fraction != def.outlier_fraction || rb.outlier_fraction != def.outlier_fraction ||
        ra.outlier_factor != def.outlier_factor || rb.outlier_factor != def.outlier_factor)
      return no(QObject::tr("the panel draws A and B from one distribution with one scale; this config's operands "
                            "differ (run it with fp8lab-cli run)"));
    c[QStringLiteral("input")] = QStringLiteral("distribution");
    c[QStringLiteral("distribution")] = QString::fromLatin1(toString(ra.distribution));
    c[QStringLiteral("sigma")] = ra.scale;
  }
  const QString preset = QString::fromStdString(cfg.scaling);
  const QString strategy = panelStrategyOf(preset);
  if (strategy.isEmpty())
    return no(QObject::tr("the scaling preset '%1' cannot scale both operands of a GEMM").arg(preset));
  c[QStringLiteral("scaling")] = strategy;
  c[QStringLiteral("preset")] = preset;
  const auto sp = scalingPreset(cfg.scaling);
  if (!sp)
    return no(QObject::tr("the panel has no fields for the preset '%1' (run it with fp8lab-cli run)").arg(preset));
  c[QStringLiteral("pow2_scales")] = sp->pow2;
  return c;
}

QByteArray canonicalTrainingConfig(const QJsonObject& training, QString* why) {
  std::string err;
  const Json j = toJson(training);
  const auto spec = parseTrainingExperiment(j, &err);
  if (!spec || spec->runs.size() != 1) {
    if (why) *why = spec ? QObject::tr("a training config of one run is expected") : QString::fromStdString(err);
    return {};
  }
  return QByteArray::fromStdString(spec->runs.front().configJson());
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
  const TrainingConfig& t = run.config;
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
  if (run.lm) {
    // The language model: its batch, seed and steps, the model's knobs and the policy as the
    // canonical config states them (the tab's fields read them back; the check below refuses a
    // config whose other keys differ from the defaults).
    const LmTrainingConfig& lm = *run.lm;
    c[QStringLiteral("batch_size")] = lm.batch_size;
    c[QStringLiteral("seed")] = double(lm.seed);
    c[QStringLiteral("steps")] = double(lm.steps);
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
    c[QStringLiteral("epochs")] = t.epochs;
    c[QStringLiteral("batch_size")] = t.batch_size;
    c[QStringLiteral("seed")] = double(t.seed);
    c[QStringLiteral("train_limit")] = double(run.train_limit);
    c[QStringLiteral("test_limit")] = double(run.test_limit);
  }
  // A policy the tab's presets produce (TrainingModelForm); another one has no field.
  if (want.contains("policy")) {
    const QJsonArray rules = fromJson(want["policy"]).toArray();
    const int blocks = run.lm ? int(run.lm->model.layers) : 0;
    const auto preset = policyPresetOf(rules, bool(run.lm), blocks);
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

JobResult runTrainingJob(const QByteArray& config_json, const QString& out_file, const fp8lab::ProgressFn& progress) {
  JsonDocument doc;
  try {
    doc = JsonDocument::parse(config_json.toStdString());
  } catch (const JsonTextError& e) {
    throw std::invalid_argument(std::string("the training config is not valid JSON: ") + e.what());
  }
  std::string err;
  const auto spec = parseTrainingExperiment(doc.root(), &err, &doc);
  if (!spec) throw std::invalid_argument("invalid training config: " + err);
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
      *error = st.firstError();
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

QString scalingPresetFor(const QJsonObject&, QString* why) {
  if (why) *why = experimentRunnerMissingReason();
  return {};
}

QByteArray canonicalGemmConfig(const QJsonObject&, const QString&, QString* why) {
  if (why) *why = experimentRunnerMissingReason();
  return {};
}

QJsonObject panelConfigFromCanonical(const QByteArray&, const QJsonObject&, QString* why) {
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

JobResult runTrainingJob(const QByteArray&, const QString&, const fp8lab::ProgressFn&) {
  throw std::runtime_error(experimentRunnerMissingReason().toStdString());
}

#endif

} // namespace fp8lab::ui

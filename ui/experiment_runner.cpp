#include "experiment_runner.h"

#include "job.h"

#ifdef FP8LAB_HAVE_HDF5
#include "backend/backend_factory.h"
#include "backend/backend_record.h"
#include "experiment/gemm_config.h"
#include "experiment/gemm_experiment.h"
#include "experiment/training_config.h"
#include "experiment/training_experiment.h"
#include "session.h"
#endif

#include <QJsonDocument>

namespace fp8lab::ui {


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
    for (const auto& i : res.issues) jr.warnings.push_back(i.toWarning());
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

/// Core's messages start with the key path ("scaling: ..."); the panel shows them by its field.
QString reasonOf(const std::string& e) {
  const auto c = e.find(": ");
  return QString::fromStdString(c == std::string::npos ? e : e.substr(c + 2));
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
  const Json g = legacyPanelGemmConfig(toJson(p), r);
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
  QJsonObject c = base;
  c[QStringLiteral("a_format")] = QString::fromStdString(cfg.format_a);
  c[QStringLiteral("b_format")] = QString::fromStdString(cfg.format_b);
  c[QStringLiteral("m")] = int(cfg.m);
  c[QStringLiteral("k")] = int(cfg.k);
  c[QStringLiteral("n")] = int(cfg.n);
  c[QStringLiteral("seed")] = double(cfg.seed);
  c[QStringLiteral("accumulation")] = QString::fromLatin1(toString(cfg.gemm.accumulation));
  c[QStringLiteral("output")] = QString::fromLatin1(toString(cfg.gemm.output));
  c[QStringLiteral("promotion_interval")] = cfg.gemm.promotion_interval;
  c[QStringLiteral("fast_accum_bits")] = cfg.gemm.fast_accum_bits;
  if (!cfg.a.tensor.empty() || !cfg.b.tensor.empty()) {
    if (!cfg.b.tensor.empty() || cfg.a.transpose)
      return no(QObject::tr("the panel imports operand A only, untransposed; this config imports %1")
                    .arg(QString::fromStdString(cfg.b.tensor.empty() ? cfg.a.tensor + " transposed" : cfg.b.tensor)));
    c[QStringLiteral("input")] = QStringLiteral("import");
    c[QStringLiteral("import_path")] = QString::fromStdString(cfg.a.tensor);
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
  // The panel's scaling fields that map to this preset (the same mapping Run uses).
  for (const char* s : {"per-tensor-current", "per-row", "1x128", "128x128", "mx32"})
    for (const char* p : {"te", "torchao", "deepgemm", "flax"})
      for (bool pow2 : {false, true})
        for (const char* mx : {"floor", "rceil"}) {
          QJsonObject t = c;
          t[QStringLiteral("scaling")] = QString::fromLatin1(s);
          t[QStringLiteral("preset")] = QString::fromLatin1(p);
          t[QStringLiteral("pow2_scales")] = pow2;
          t[QStringLiteral("mx_rule")] = QString::fromLatin1(mx);
          t[QStringLiteral("block")] = 128;
          if (scalingPresetFor(t, nullptr) == QString::fromStdString(cfg.scaling)) return t;
        }
  return no(QObject::tr("the scaling preset '%1' has no combination of the panel's choices; run it with "
                        "fp8lab-cli run")
                .arg(QString::fromStdString(cfg.scaling)));
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
    jr.warnings.push_back({Warning::Severity::Error, res.error, "training experiment", out_file.toStdString()});
  }
  jr.kept_after_cancel = res.status == S::Cancelled && !res.runs.empty();
  if (res.status == S::Cancelled && !res.runs.empty() && res.runs.back().cancelled) {
    const auto& o = res.runs.back();
    jr.summary = QObject::tr("Cancelled: run %1 stopped after step %2 of %3; %4 run(s) saved in %5")
                     .arg(QString::fromStdString(o.stored_id))
                     .arg(o.steps_done)
                     .arg(o.steps_total)
                     .arg(res.runs.size())
                     .arg(out_file);
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

JobResult runTrainingJob(const QByteArray&, const QString&, const fp8lab::ProgressFn&) {
  throw std::runtime_error(experimentRunnerMissingReason().toStdString());
}

#endif

} // namespace fp8lab::ui

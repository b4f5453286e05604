#include "experiment_runner.h"

#include "job.h"

#ifdef FP8LAB_HAVE_HDF5
#include "backend/backend_factory.h"
#include "backend/backend_record.h"
#include "experiment/gemm_experiment.h"
#include "session.h"
#endif

#include <QJsonDocument>

namespace fp8lab::ui {

QString scalingPresetFor(const QJsonObject& c, QString* why) {
  const QString s = c.value(QStringLiteral("scaling")).toString();
  const QString p = c.value(QStringLiteral("preset")).toString();
  const bool pow2 = c.value(QStringLiteral("pow2_scales")).toBool();
  auto no = [&](const QString& reason) {
    if (why) *why = reason;
    return QString();
  };
  if (s == QStringLiteral("per-tensor-current")) {
    if (p == QStringLiteral("te")) return pow2 ? QStringLiteral("te_current_pow2") : QStringLiteral("te_current");
    if (p == QStringLiteral("torchao")) {
      if (pow2)
        return no(QObject::tr("torchao's tensorwise preset has no power-of-two option here; use Transformer Engine."));
      return QStringLiteral("torchao_tensorwise");
    }
    return no(QObject::tr("%1 has no per-tensor current scaling (Flax scales with a delayed amax history; DeepGEMM "
                          "uses blocks). Pick Transformer Engine or torchao.")
                  .arg(p == QStringLiteral("flax") ? QStringLiteral("Flax") : QStringLiteral("DeepGEMM")));
  }
  if (s == QStringLiteral("per-tensor-delayed"))
    return no(QObject::tr("a single GEMM has no amax history, so delayed scaling needs a training run "
                          "(fp8lab-cli run-training); its history is shown per step there."));
  if (s == QStringLiteral("per-row")) {
    if (pow2) return no(QObject::tr("row-wise scaling follows torchao without power-of-two scales here."));
    return QStringLiteral("torchao_rowwise");
  }
  if (s == QStringLiteral("1x128") || s == QStringLiteral("128x128")) {
    if (c.value(QStringLiteral("block")).toInt() != 128)
      return no(
          QObject::tr("the block presets (DeepSeek-V3, TE, torchao) use 128; other block sizes are not available."));
    const QString shape = s == QStringLiteral("1x128") ? QStringLiteral("1x128") : QStringLiteral("128x128");
    if (p == QStringLiteral("te")) return QStringLiteral("te_block_") + shape;
    if (p == QStringLiteral("torchao")) return QStringLiteral("torchao_block_") + shape;
    if (p == QStringLiteral("deepgemm"))
      return QStringLiteral("deepgemm_") + shape + (pow2 ? QStringLiteral("_ue8m0") : QString());
    return no(QObject::tr("Flax has no block scaling; pick DeepGEMM, Transformer Engine or torchao."));
  }
  if (s == QStringLiteral("mx32"))
    return c.value(QStringLiteral("mx_rule")).toString() == QStringLiteral("rceil") ? QStringLiteral("mx_rceil")
                                                                                    : QStringLiteral("mx_floor");
  return no(QObject::tr("unknown scaling strategy '%1'.").arg(s));
}

#ifdef FP8LAB_HAVE_HDF5

ExperimentRunner builtinExperimentRunner() {
  return [](const QJsonObject& c, const fp8lab::ProgressFn& progress) -> JobResult {
    QString why;
    const QString preset = scalingPresetFor(c, &why);
    if (preset.isEmpty()) throw std::invalid_argument(why.toStdString());
    GemmExperimentConfig cfg;
    cfg.m = c.value(QStringLiteral("m")).toInt();
    cfg.n = c.value(QStringLiteral("n")).toInt();
    cfg.k = c.value(QStringLiteral("k")).toInt();
    cfg.seed = uint64_t(c.value(QStringLiteral("seed")).toDouble());
    cfg.format_a = c.value(QStringLiteral("a_format")).toString().toStdString();
    cfg.format_b = c.value(QStringLiteral("b_format")).toString().toStdString();
    cfg.scaling = preset.toStdString();
    const auto acc = parseAccumulation(c.value(QStringLiteral("accumulation")).toString().toStdString());
    const auto out = parseOutputType(c.value(QStringLiteral("output")).toString().toStdString());
    if (!acc || !out) throw std::invalid_argument("unknown accumulation or output type");
    cfg.gemm.accumulation = *acc;
    cfg.gemm.output = *out;
    cfg.gemm.promotion_interval = c.value(QStringLiteral("promotion_interval")).toInt(128);
    cfg.gemm.fast_accum_bits = c.value(QStringLiteral("fast_accum_bits")).toInt(14);
    const QString input = c.value(QStringLiteral("input")).toString();
    if (input == QStringLiteral("distribution")) {
      const auto d = parseDistribution(c.value(QStringLiteral("distribution")).toString().toStdString());
      if (!d) throw std::invalid_argument("unknown distribution");
      cfg.a.random.distribution = cfg.b.random.distribution = *d;
      cfg.a.random.scale = cfg.b.random.scale = c.value(QStringLiteral("sigma")).toDouble(1.0);
    } else if (input == QStringLiteral("import")) {
      cfg.a.tensor = c.value(QStringLiteral("import_path")).toString().toStdString();
    } else if (input == QStringLiteral("training")) {
      // The trained kernel of the first layer, read from the saved session file (B = W [K, N]).
      const QString file = c.value(QStringLiteral("session_file")).toString();
      if (file.isEmpty()) throw std::invalid_argument("save the session first: trained weights are read from its file");
      cfg.b.tensor = (file + QStringLiteral(":/runs/") + c.value(QStringLiteral("training_run")).toString() +
                      QStringLiteral("/weights/fc1/kernel"))
                         .toStdString();
    }
    // The config's "backend" is "auto", "cpu" or "cuda": core's policy (gemm/backend_policy.h),
    // the same as fp8lab-cli --backend.
    const QString choice = c.value(QStringLiteral("backend")).toString(QStringLiteral("auto"));
    const auto request = parseBackendRequest(choice.toStdString());
    if (!request) throw std::invalid_argument("unknown backend '" + choice.toStdString() + "'");
    std::string no_gpu;
    const auto backend = makeGemmBackend(*request, &no_gpu);
    if (!backend) throw std::runtime_error("the CUDA backend is not available: " + no_gpu);
    const std::string run_id = c.value(QStringLiteral("run_id")).toString().toStdString();
    const std::string json = QJsonDocument(c).toJson(QJsonDocument::Compact).toStdString();
    auto res = runGemmExperimentRun(cfg, json, run_id.empty() ? "run-gui" : run_id, *backend, progress);
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

#else

ExperimentRunner builtinExperimentRunner() {
  return {};
}

QString experimentRunnerMissingReason() {
  return QObject::tr("Run needs the experiment runner (core/experiment with HDF5), which this build does not have.");
}

#endif

} // namespace fp8lab::ui

// The desktop app's experiment runner (ui/forms/experiment_runner.cpp) chooses its GEMM backend the way
// fp8lab-cli --backend does (core/gemm/backend_policy.h, core/backend): the config's "backend"
// values auto / cpu / cuda, what the run records (backend_request, backend_note), cuda without a
// usable GPU refused with the reason, an unknown value refused. Checked against what this machine
// has: without a usable GPU (the build machine) auto runs on the CPU and the run names the reason.
#include "forms/experiment_panel.h"
#include "forms/experiment_runner.h"
#include "forms/job.h"

#include "backend/backend_factory.h"
#include "experiment/training/training_report.h"
#include "session/session.h"

#include <QtTest>

#include <stdexcept>

using namespace fp8lab::ui;

namespace {
GemmRunRequest smallGemm(const QString& backend) {
  QJsonObject c = ExperimentPanel::defaultConfig();
  c[QStringLiteral("m")] = 16;
  c[QStringLiteral("n")] = 8;
  c[QStringLiteral("k")] = 32;
  return {c, backend};
}

std::optional<std::string> attr(const JobResult& r, const char* key) {
#ifdef FP8LAB_HAVE_HDF5
  return r.run.core ? fp8lab::attrString(r.run.core->attrs, key) : std::nullopt;
#else
  (void)r, (void)key; // no runner without HDF5: initTestCase skips
  return std::nullopt;
#endif
}
} // namespace

class TestExperimentRunner : public QObject {
  Q_OBJECT

  ExperimentRunner runner_ = builtinExperimentRunner();
  std::string no_gpu_; // why this machine has no usable GPU; empty when it has one

private Q_SLOTS:
  // The line a training run's progress starts with: "epoch" for one, "epochs" for more
  // (2048 images / batch 128 = 16 steps; 60,000 / 128 = 469 steps, the last one partial).
  void runStartLineCountsEpochs() {
    fp8lab::TrainingRunSpec one;
    one.id = "fp32-baseline";
    fp8lab::mlpRun(one).config.precision = fp8lab::TrainingPrecision::FP32;
    fp8lab::mlpRun(one).config.batch_size = 128;
    fp8lab::mlpRun(one).config.epochs = 1;
    QCOMPARE(QString::fromStdString(fp8lab::trainingRunStartLine("[1/2] fp32-baseline", one, 16, 2048)),
             QStringLiteral("[1/2] fp32-baseline: FP32 baseline, 1 epoch of 16 steps (batch 128, 2048 images)"));
    fp8lab::mlpRun(one).config.epochs = 3;
    QCOMPARE(QString::fromStdString(fp8lab::trainingRunStartLine("[1/2] fp32-baseline", one, 469, 60000)),
             QStringLiteral("[1/2] fp32-baseline: FP32 baseline, 3 epochs of 469 steps (batch 128, 60000 images)"));
  }

  void initTestCase() {
    if (!runner_) QSKIP("this build has no experiment runner (FP8LAB_WITH_HDF5=OFF)");
    const auto probe = fp8lab::makeGemmBackend(fp8lab::BackendRequest::Auto);
    if (!probe->hasGpu()) no_gpu_ = probe->noGpuReason();
  }

  void cpuRecordsTheRequest() {
    const JobResult r = runner_(smallGemm(QStringLiteral("cpu")), {});
    QCOMPARE(r.run.backend, QStringLiteral("cpu"));
    QCOMPARE(attr(r, "backend_request"), std::optional<std::string>("cpu"));
    QCOMPARE(attr(r, "backend_note"), std::optional<std::string>());
  }

  void autoWithoutAGpuRunsOnTheCpuAndSaysWhy() {
    if (no_gpu_.empty()) QSKIP("this machine has a usable GPU");
    const JobResult r = runner_(smallGemm(QStringLiteral("auto")), {});
    QCOMPARE(r.run.backend, QStringLiteral("cpu"));
    QCOMPARE(attr(r, "backend_request"), std::optional<std::string>("auto"));
    QCOMPARE(attr(r, "backend_note"), std::optional<std::string>(no_gpu_));
  }

  void cudaWithoutAGpuIsRefusedWithTheReason() {
    if (no_gpu_.empty()) QSKIP("this machine has a usable GPU");
    QString what;
    try {
      (void)runner_(smallGemm(QStringLiteral("cuda")), {});
    } catch (const std::runtime_error& e) {
      what = QString::fromStdString(e.what());
    }
    QCOMPARE(what, QStringLiteral("the CUDA backend is not available: ") + QString::fromStdString(no_gpu_));
  }

  void cudaWithAGpuRecordsGpu() {
    if (!no_gpu_.empty()) QSKIP("this machine has no usable GPU");
    const JobResult r = runner_(smallGemm(QStringLiteral("cuda")), {});
    QCOMPARE(r.run.backend, QStringLiteral("cuda"));
    QCOMPARE(attr(r, "backend_request"), std::optional<std::string>("gpu"));
  }

  void anUnknownBackendIsRefused() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, (void)runner_(smallGemm(QStringLiteral("tpu")), {}));
  }
};

QTEST_MAIN(TestExperimentRunner)
#include "test_experiment_runner.moc"

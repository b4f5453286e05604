// core/backend: makeGemmBackend (which backend each request gets on this machine) and
// recordBackend (the run attributes docs/session-format.md lists under "Backend attributes"),
// including a whole GEMM experiment run through the policy with a stand-in GPU that refuses it,
// the path the desktop app's experiment runner takes.
//
// makeGemmBackend is checked against what this machine has: with no usable GPU (the build machine)
// auto names the reason and gpu is refused with the same reason; with one, both get the CUDA
// backend and its versions.
#include <QtTest>

#include "backend/backend_factory.h"
#include "backend/backend_record.h"
#include "experiment/gemm/gemm_run.h"

using namespace fp8lab;

namespace {

const char* const kDevice = "Stand-in H200";
const char* const kRefusal = "E5M2 x E5M2 is not supported by cuBLASLt";

/// A GPU backend that refuses every GEMM.
class RefusingGpu final : public GemmBackend {
public:
  std::string name() const override { return "cuda"; }
  std::string device() const override { return kDevice; }
  std::string unsupportedReason(const QuantizedTensor&, const QuantizedTensor&, const GemmOptions&) const override {
    return kRefusal;
  }
  GemmOutput run(const QuantizedTensor&, const QuantizedTensor&, const GemmOptions&, const ProgressFn&) override {
    throw std::runtime_error("run() of a refused GEMM");
  }
};

bool startsWith(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

/// The no-GPU reasons makeCudaGemmBackend gives (gpu/cuda_gemm_backend.cpp), or the build's.
bool isANoGpuReason(const std::string& why) {
  if (!buildHasCuda()) return why == "this build has no CUDA support (configure with CUDA to use the GPU backend)";
  return startsWith(why, "no CUDA device (") || why.find("has no FP8 tensor cores") != std::string::npos ||
         startsWith(why, "the CUDA backend could not start: ");
}

} // namespace

class TestBackend : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void cpuNeverProbesTheGpu() {
    std::string error = "untouched";
    const auto b = makeGemmBackend(BackendRequest::Cpu, &error);
    QVERIFY(b);
    QCOMPARE(error, std::string("untouched"));
    QCOMPARE(b->request(), BackendRequest::Cpu);
    QVERIFY(!b->hasGpu());
    QCOMPARE(b->name(), std::string("cpu"));
    QCOMPARE(b->noGpuReason(), std::string());
    QCOMPARE(b->cuda_versions.runtime, 0);
  }

  void autoAndGpuOnThisMachine() {
    std::string auto_error;
    const auto au = makeGemmBackend(BackendRequest::Auto, &auto_error);
    QVERIFY(au); // auto always gets a backend
    QCOMPARE(au->request(), BackendRequest::Auto);
    QCOMPARE(auto_error, std::string());
    std::string gpu_error;
    const auto gp = makeGemmBackend(BackendRequest::Gpu, &gpu_error);
    if (au->hasGpu()) {
      QVERIFY(gp && gp->hasGpu());
      QCOMPARE(au->name(), std::string("cuda"));
      QCOMPARE(au->noGpuReason(), std::string());
      QVERIFY(au->cuda_versions.runtime > 0 && au->cuda_versions.driver > 0 && au->cuda_versions.cublaslt > 0);
      return;
    }
    QCOMPARE(au->name(), std::string("cpu"));
    QVERIFY2(isANoGpuReason(au->noGpuReason()), au->noGpuReason().c_str());
    QCOMPARE(au->note(), au->noGpuReason());
    QCOMPARE(au->cuda_versions.runtime, 0);
    QVERIFY(!gp);
    QCOMPARE(gpu_error, au->noGpuReason()); // the same reason, as the refusal
  }

  void recordBackendOfACpuRun() {
    FallbackGemmBackend b(nullptr, makeCpuGemmBackend(), BackendRequest::Auto, "no CUDA device (test)");
    Run run;
    run.backend = "cpu";
    recordBackend(run, b, GemmOptions{}, b.note());
    QCOMPARE(attrString(run.attrs, "backend_request"), std::optional<std::string>("auto"));
    QCOMPARE(attrString(run.attrs, "backend_note"), std::optional<std::string>("no CUDA device (test)"));
    for (const char* gpu_only : {"fast_accum", "cuda_runtime_version", "cuda_driver_version", "cublaslt_version"})
      QVERIFY2(!run.attrs.count(gpu_only), gpu_only);
  }

  void recordBackendWithoutANote() {
    FallbackGemmBackend b(nullptr, makeCpuGemmBackend(), BackendRequest::Cpu);
    Run run;
    run.backend = "cpu";
    recordBackend(run, b, GemmOptions{}, b.note());
    QCOMPARE(attrString(run.attrs, "backend_request"), std::optional<std::string>("cpu"));
    QVERIFY(!run.attrs.count("backend_note"));
  }

  void recordBackendOfAGpuRun_data() {
    QTest::addColumn<int>("accumulation");
    QTest::addColumn<int>("fastAccum");
    QTest::newRow("SplitFP32: FAST_ACCUM=0") << int(Accumulation::SplitFP32) << 0;
    QTest::newRow("FastAccum: FAST_ACCUM=1") << int(Accumulation::FastAccum) << 1;
  }
  void recordBackendOfAGpuRun() {
    QFETCH(int, accumulation);
    QFETCH(int, fastAccum);
    FallbackGemmBackend b(std::make_unique<RefusingGpu>(), makeCpuGemmBackend(), BackendRequest::Gpu);
    b.cuda_versions = {13000, 13000, 130100};
    GemmOptions opt;
    opt.accumulation = Accumulation(accumulation);
    Run run;
    run.backend = "cuda";
    recordBackend(run, b, opt, "");
    QCOMPARE(attrString(run.attrs, "backend_request"), std::optional<std::string>("gpu"));
    QVERIFY(!run.attrs.count("backend_note"));
    QCOMPARE(attrInt(run.attrs, "fast_accum"), std::optional<int64_t>(fastAccum));
    QCOMPARE(attrInt(run.attrs, "cuda_runtime_version"), std::optional<int64_t>(13000));
    QCOMPARE(attrInt(run.attrs, "cuda_driver_version"), std::optional<int64_t>(13000));
    QCOMPARE(attrInt(run.attrs, "cublaslt_version"), std::optional<int64_t>(130100));
  }

  // A GEMM experiment under auto whose GEMM the GPU refuses: it runs on the CPU, the run says so.
  void anExperimentRunRecordsTheFallback() {
    FallbackGemmBackend b(std::make_unique<RefusingGpu>(), makeCpuGemmBackend(), BackendRequest::Auto);
    GemmExperimentConfig cfg;
    cfg.m = 8;
    cfg.n = 8;
    cfg.k = 32;
    auto res = runGemmExperimentRun(cfg, "{}", "run-1", b);
    QVERIFY2(res.ok(), res.ok() ? "" : res.firstError().c_str());
    recordBackend(res.value, b, cfg.gemm, b.note());
    const std::string note = std::string("auto: ") + kDevice + " cannot run this GEMM: " + kRefusal +
                             "; running on the CPU reference backend";
    QCOMPARE(res.value.backend, std::string("cpu"));
    QCOMPARE(attrString(res.value.attrs, "backend_request"), std::optional<std::string>("auto"));
    QCOMPARE(attrString(res.value.attrs, "backend_note"), std::optional<std::string>(note));
    QVERIFY(!res.value.attrs.count("cuda_runtime_version"));
    QCOMPARE(b.cpu_runs, int64_t(1));
    bool warned = false; // the GEMM's warning reaches the run's issues
    for (const auto& i : res.issues) warned |= i.toString().find(note) != std::string::npos;
    QVERIFY(warned);
  }
};

QTEST_GUILESS_MAIN(TestBackend)
#include "test_backend.moc"

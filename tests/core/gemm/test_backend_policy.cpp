// The one backend policy (core/gemm/backend_policy.h) that fp8lab-cli --backend, the desktop app's
// experiment panel and the GPU checks share: which backend runs each GEMM for auto / cpu / gpu,
// what is counted, which reasons are kept and which warnings a result carries. The expected
// strings are the ones docs/session-format.md quotes for backend_note.
//
// No GPU is needed: a stand-in GPU backend plays the device and either accepts a GEMM (and returns
// a sentinel D of -1s, so a result from it cannot be mistaken for the CPU's), refuses it with a
// reason, throws while running it (out of device memory), or throws Cancelled. The CPU side is the
// real CPU reference backend. The expected D is hand-derived: A = [[1, 2], [3, 4]], B = I₂, both
// E4M3FN with scale 1 (small integers are exact in E4M3FN: 1 = 0x38, 2 = 0x40, 3 = 0x44,
// 4 = 0x48), so D = A·I = A exactly in FP32 output.
#include <QtTest>

#include "gemm/backend_policy.h"
#include "scaling/scaling.h"

#include <stdexcept>

using namespace fp8lab;

namespace {

const char* const kDevice = "Stand-in H200";
const char* const kRefusal = "E5M2 x E5M2 is not supported by cuBLASLt";
const char* const kOom = "cudaMalloc of 3221225472 bytes for D: out of memory (cudaErrorMemoryAllocation)";

/// How often a FakeGpu was asked and run; outlives the fake (the policy drops its GPU for cpu).
struct Calls {
  int asked = 0, runs = 0;
};

/// A GPU backend that behaves as `how` says; `how` may be changed between GEMMs.
class FakeGpu final : public GemmBackend {
public:
  enum class How { Accept, Refuse, OutOfMemory, Cancel };
  explicit FakeGpu(How h, Calls* calls = nullptr) : how(h), calls_(calls ? calls : &own_) {}
  std::string name() const override { return "cuda"; }
  std::string device() const override { return kDevice; }
  std::string unsupportedReason(const QuantizedTensor&, const QuantizedTensor&, const GemmOptions&) const override {
    ++calls_->asked;
    return how == How::Refuse ? kRefusal : "";
  }
  GemmOutput run(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions&, const ProgressFn&) override {
    ++calls_->runs;
    if (how == How::Cancel) throw Cancelled();
    if (how == How::OutOfMemory) throw std::runtime_error(kOom);
    if (how == How::Refuse) throw std::runtime_error(std::string("run() of a refused GEMM: ") + kRefusal);
    GemmOutput out;
    out.m = a.rows;
    out.n = b.cols;
    out.d.assign(size_t(a.rows * b.cols), -1.0f);
    out.backend = "cuda";
    out.device = kDevice;
    return out;
  }
  How how;
  int runs() const { return calls_->runs; }

private:
  Calls own_;
  Calls* calls_;
};

QuantizedTensor q(const std::vector<float>& x, int64_t rows, int64_t cols) {
  return quantizeWithScale(x.data(), rows, cols, Format::E4M3FN(), BlockScale{1.0f, 1.0f, -1},
                           Format::ScaleOp::Multiply);
}

const std::vector<float> kCpuD = {1, 2, 3, 4};     // A·I on the CPU reference backend
const std::vector<float> kGpuD = {-1, -1, -1, -1}; // the stand-in GPU's sentinel

std::string refusedNote() {
  return std::string("auto: ") + kDevice + " cannot run this GEMM: " + kRefusal +
         "; running on the CPU reference backend";
}
std::string failedNote() {
  return std::string("auto: the GEMM failed on ") + kDevice + " (" + kOom + "); running on the CPU reference backend";
}

} // namespace

Q_DECLARE_METATYPE(FakeGpu::How)

class TestBackendPolicy : public QObject {
  Q_OBJECT

  const QuantizedTensor a_ = q({1, 2, 3, 4}, 2, 2);
  const QuantizedTensor id_ = q({1, 0, 0, 1}, 2, 2);

private Q_SLOTS:
  void parseBackendRequest_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("expected"); // -1: refused
    QTest::newRow("auto") << "auto" << int(BackendRequest::Auto);
    QTest::newRow("cpu") << "cpu" << int(BackendRequest::Cpu);
    QTest::newRow("gpu") << "gpu" << int(BackendRequest::Gpu);
    QTest::newRow("cuda is gpu") << "cuda" << int(BackendRequest::Gpu);
    QTest::newRow("upper case") << "GPU" << int(BackendRequest::Gpu);
    QTest::newRow("mixed case cuda") << "Cuda" << int(BackendRequest::Gpu);
    QTest::newRow("mixed case auto") << "AuTo" << int(BackendRequest::Auto);
    QTest::newRow("spaces around") << " cpu\t" << int(BackendRequest::Cpu);
    QTest::newRow("empty") << "" << -1;
    QTest::newRow("tpu") << "tpu" << -1;
    QTest::newRow("space inside") << "au to" << -1;
    QTest::newRow("gpu0") << "gpu0" << -1;
  }
  void parseBackendRequest() {
    QFETCH(QString, text);
    QFETCH(int, expected);
    const auto r = fp8lab::parseBackendRequest(text.toStdString());
    QCOMPARE(r ? int(*r) : -1, expected);
  }

  void toStringNamesEachRequest() {
    QCOMPARE(std::string(toString(BackendRequest::Auto)), std::string("auto"));
    QCOMPARE(std::string(toString(BackendRequest::Cpu)), std::string("cpu"));
    QCOMPARE(std::string(toString(BackendRequest::Gpu)), std::string("gpu"));
  }

  // One GEMM per row: which backend ran it (or what was thrown), the counts, the note, the warning
  // and the summary.
  void oneGemm_data() {
    QTest::addColumn<int>("request");
    QTest::addColumn<FakeGpu::How>("how");
    QTest::addColumn<QString>("ran"); // "cpu", "cuda", "refused" (std::runtime_error), "cancelled"
    QTest::addColumn<QString>("error");
    QTest::addColumn<int>("gpuRuns");
    QTest::addColumn<int>("cpuRuns");
    QTest::addColumn<QString>("fallback");
    QTest::addColumn<int>("warningSeverity"); // -1: no warning
    QTest::addColumn<QString>("reason");      // the one kept in fallback_reasons, "" for none
    using H = FakeGpu::How;
    const int kNo = -1, kInfo = int(Severity::Info), kWarn = int(Severity::Warning);
    const QString oom = QString::fromLatin1(kOom);
    const QString refusal = QString::fromLatin1(kRefusal);
    const int au = int(BackendRequest::Auto), cp = int(BackendRequest::Cpu), gp = int(BackendRequest::Gpu);
    // clang-format off
    QTest::newRow("auto, GPU can")      << au << H::Accept      << "cuda" << "" << 1 << 0 << "" << kNo << "";
    QTest::newRow("auto, GPU cannot")   << au << H::Refuse      << "cpu"  << "" << 0 << 1
                                        << QString::fromStdString(refusedNote()) << kInfo << refusal;
    QTest::newRow("auto, GPU run fails")<< au << H::OutOfMemory << "cpu"  << "" << 0 << 1
                                        << QString::fromStdString(failedNote()) << kWarn
                                        << QStringLiteral("run failed: ") + oom;
    QTest::newRow("auto, cancel")       << au << H::Cancel      << "cancelled" << "" << 0 << 0 << "" << kNo << "";
    QTest::newRow("gpu, GPU can")       << gp << H::Accept      << "cuda" << "" << 1 << 0 << "" << kNo << "";
    QTest::newRow("gpu, GPU cannot")    << gp << H::Refuse      << "refused"
                                        << QString::fromLatin1(kDevice) + QStringLiteral(" cannot run this GEMM: ") + refusal
                                        << 0 << 0 << "" << kNo << "";
    QTest::newRow("gpu, GPU run fails") << gp << H::OutOfMemory << "refused" << oom << 0 << 0 << "" << kNo << "";
    QTest::newRow("gpu, cancel")        << gp << H::Cancel      << "cancelled" << "" << 0 << 0 << "" << kNo << "";
    QTest::newRow("cpu, GPU can")       << cp << H::Accept      << "cpu"  << "" << 0 << 1 << "" << kNo << "";
    QTest::newRow("cpu, GPU cannot")    << cp << H::Refuse      << "cpu"  << "" << 0 << 1 << "" << kNo << "";
    QTest::newRow("cpu, GPU would fail")<< cp << H::OutOfMemory << "cpu"  << "" << 0 << 1 << "" << kNo << "";
    // clang-format on
  }
  void oneGemm() {
    QFETCH(int, request);
    QFETCH(FakeGpu::How, how);
    QFETCH(QString, ran);
    QFETCH(QString, error);
    QFETCH(int, gpuRuns);
    QFETCH(int, cpuRuns);
    QFETCH(QString, fallback);
    QFETCH(int, warningSeverity);
    QFETCH(QString, reason);
    Calls calls;
    FallbackGemmBackend b(std::make_unique<FakeGpu>(how, &calls), makeCpuGemmBackend(), BackendRequest(request));
    QCOMPARE(b.hasGpu(), request != int(BackendRequest::Cpu));
    QCOMPARE(b.name(), std::string(request == int(BackendRequest::Cpu) ? "cpu" : "cuda"));

    GemmOutput out;
    QString outcome;
    try {
      out = b.run(a_, id_, GemmOptions{});
      outcome = QString::fromStdString(out.backend);
    } catch (const Cancelled&) {
      outcome = QStringLiteral("cancelled");
    } catch (const std::runtime_error& e) {
      outcome = QStringLiteral("refused");
      QCOMPARE(QString::fromStdString(e.what()), error);
    }
    QCOMPARE(outcome, ran);
    if (ran == QStringLiteral("cpu")) QCOMPARE(out.d, kCpuD);
    if (ran == QStringLiteral("cuda")) QCOMPARE(out.d, kGpuD);
    if (request == int(BackendRequest::Cpu)) {
      QCOMPARE(calls.asked, 0); // cpu never asks the GPU
      QCOMPARE(calls.runs, 0);
    }
    if (how == FakeGpu::How::Refuse) QCOMPARE(calls.runs, 0); // a refused GEMM is never sent to the GPU
    QCOMPARE(b.gpu_runs.load(), int64_t(gpuRuns));
    QCOMPARE(b.cpu_runs.load(), int64_t(cpuRuns));
    QCOMPARE(QString::fromStdString(b.lastFallback()), fallback);
    QCOMPARE(QString::fromStdString(b.note()), fallback); // a GPU is present: no no-GPU reason
    if (warningSeverity < 0) {
      QVERIFY(out.warnings.empty());
    } else {
      QCOMPARE(out.warnings.size(), size_t(1));
      const Issue& w = out.warnings.front();
      QCOMPARE(int(w.severity), warningSeverity);
      QCOMPARE(w.what, std::string("GPU fallback"));
      QCOMPARE(w.where, std::string("backend"));
      QCOMPARE(QString::fromStdString(w.detail), fallback);
    }
    if (reason.isEmpty()) {
      QVERIFY(b.fallback_reasons.empty());
      QCOMPARE(b.fallbackSummary(), std::string());
    } else {
      QCOMPARE(b.fallback_reasons, std::set<std::string>{reason.toStdString()});
      QCOMPARE(QString::fromStdString(b.fallbackSummary()),
               QStringLiteral("auto: 1 of 1 GEMMs ran on the CPU reference backend (%1 cannot run: %2)")
                   .arg(QString::fromLatin1(kDevice), reason));
    }
  }

  void unsupportedReasonFollowsTheRequest() {
    const GemmOptions opt;
    FallbackGemmBackend au(std::make_unique<FakeGpu>(FakeGpu::How::Refuse), makeCpuGemmBackend(), BackendRequest::Auto);
    QCOMPARE(au.unsupportedReason(a_, id_, opt), std::string()); // the CPU runs it
    FallbackGemmBackend gp(std::make_unique<FakeGpu>(FakeGpu::How::Refuse), makeCpuGemmBackend(), BackendRequest::Gpu);
    QCOMPARE(gp.unsupportedReason(a_, id_, opt), std::string(kRefusal));
    FallbackGemmBackend cp(std::make_unique<FakeGpu>(FakeGpu::How::Refuse), makeCpuGemmBackend(), BackendRequest::Cpu);
    QCOMPARE(cp.unsupportedReason(a_, id_, opt), std::string());
  }

  // Many GEMMs on one backend (a training run): the counts add up, each reason is kept once, the
  // last fallback belongs to the last GEMM only, and resetCounts() starts over.
  void countsAcrossGemms() {
    auto gpu = std::make_unique<FakeGpu>(FakeGpu::How::Accept);
    FakeGpu* g = gpu.get();
    FallbackGemmBackend b(std::move(gpu), makeCpuGemmBackend(), BackendRequest::Auto);
    for (FakeGpu::How h : {FakeGpu::How::Accept, FakeGpu::How::Refuse, FakeGpu::How::Refuse, FakeGpu::How::OutOfMemory,
                           FakeGpu::How::Accept}) {
      g->how = h;
      (void)b.run(a_, id_, GemmOptions{});
    }
    QCOMPARE(b.gpu_runs.load(), int64_t(2));
    QCOMPARE(b.cpu_runs.load(), int64_t(3));
    QCOMPARE(b.lastFallback(), std::string()); // the last GEMM ran on the GPU
    QCOMPARE(b.fallback_reasons, (std::set<std::string>{kRefusal, std::string("run failed: ") + kOom}));
    QCOMPARE(b.fallbackSummary(), std::string("auto: 3 of 5 GEMMs ran on the CPU reference backend (") + kDevice +
                                      " cannot run: " + kRefusal + "; run failed: " + kOom + ")");
    b.resetCounts();
    QCOMPARE(b.gpu_runs.load(), int64_t(0));
    QCOMPARE(b.cpu_runs.load(), int64_t(0));
    QVERIFY(b.fallback_reasons.empty());
    QCOMPARE(b.fallbackSummary(), std::string());
  }

  // A cancel inside the CPU run of an auto fallback is a cancel, not another fallback.
  void cancelDuringTheCpuFallbackPassesThrough() {
    FallbackGemmBackend b(std::make_unique<FakeGpu>(FakeGpu::How::Refuse), makeCpuGemmBackend(), BackendRequest::Auto);
    QVERIFY_THROWS_EXCEPTION(Cancelled,
                             (void)b.run(a_, id_, GemmOptions{}, [](double, const std::string&) { return false; }));
    QCOMPARE(b.gpu_runs.load(), int64_t(0));
    QCOMPARE(b.cpu_runs.load(), int64_t(0));
  }

  void withoutAGpuAutoRunsOnTheCpuWithTheReason() {
    const std::string why = "no CUDA device (error 100 cudaErrorNoDevice: no CUDA-capable device is detected)";
    FallbackGemmBackend b(nullptr, makeCpuGemmBackend(), BackendRequest::Auto, why);
    QVERIFY(!b.hasGpu());
    QCOMPARE(b.name(), std::string("cpu"));
    QCOMPARE(b.noGpuReason(), why);
    QCOMPARE(b.unsupportedReason(a_, id_, GemmOptions{}), std::string());
    const GemmOutput out = b.run(a_, id_, GemmOptions{});
    QCOMPARE(out.backend, std::string("cpu"));
    QCOMPARE(out.d, kCpuD);
    QVERIFY(out.warnings.empty()); // the reason is the run's note, not a per-GEMM warning
    QCOMPARE(b.cpu_runs.load(), int64_t(1));
    QCOMPARE(b.lastFallback(), std::string());
    QCOMPARE(b.note(), why);
    QCOMPARE(b.fallbackSummary(), std::string());
  }

  void withoutAGpuGpuRefusesEveryGemm() {
    const std::string why = "this build has no CUDA support (configure with CUDA to use the GPU backend)";
    FallbackGemmBackend b(nullptr, makeCpuGemmBackend(), BackendRequest::Gpu, why);
    QCOMPARE(b.unsupportedReason(a_, id_, GemmOptions{}), why);
    QString what;
    try {
      (void)b.run(a_, id_, GemmOptions{});
    } catch (const std::runtime_error& e) {
      what = QString::fromStdString(e.what());
    }
    QCOMPARE(what, QString::fromStdString(why));
    QCOMPARE(b.cpu_runs.load(), int64_t(0));
  }

  void aNullFallbackIsRefused() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, FallbackGemmBackend(std::make_unique<FakeGpu>(FakeGpu::How::Accept),
                                                                        nullptr, BackendRequest::Auto));
  }

  // auto: a GEMM the GPU fails (here out of memory) runs again on the CPU, and the note says why.
  void autoFallsBackToTheCpuWhenTheGpuRunFails() {
    auto gpu = std::make_unique<FakeGpu>(FakeGpu::How::OutOfMemory);
    FakeGpu* g = gpu.get();
    FallbackGemmBackend b(std::move(gpu), makeCpuGemmBackend(), BackendRequest::Auto);
    const QuantizedTensor a = q({1, 2, 3, 4}, 2, 2);
    const QuantizedTensor id = q({1, 0, 0, 1}, 2, 2);
    QCOMPARE(a.codes, (std::vector<uint8_t>{0x38, 0x40, 0x44, 0x48})); // the derivation above
    const GemmOutput out = b.run(a, id, GemmOptions{});
    QCOMPARE(g->runs(), 1);
    QCOMPARE(out.backend, std::string("cpu"));
    QCOMPARE(out.d, (std::vector<float>{1, 2, 3, 4}));
    QCOMPARE(b.cpu_runs.load(), int64_t(1));
    QCOMPARE(b.gpu_runs.load(), int64_t(0));
    QVERIFY2(b.lastFallback().find("out of memory") != std::string::npos, b.lastFallback().c_str());
    QVERIFY2(b.lastFallback().find("Stand-in H200") != std::string::npos, b.lastFallback().c_str());
    bool noted = false;
    for (const Issue& w : out.warnings) noted |= w.detail.find("cudaErrorMemoryAllocation") != std::string::npos;
    QVERIFY(noted);
    QVERIFY(b.fallbackSummary().find("out of memory") != std::string::npos);
  }

  void gpuRequestReportsTheFailure() {
    FallbackGemmBackend b(std::make_unique<FakeGpu>(FakeGpu::How::OutOfMemory), makeCpuGemmBackend(),
                          BackendRequest::Gpu);
    const QuantizedTensor a = q({1, 2, 3, 4}, 2, 2);
    bool threw = false;
    try {
      (void)b.run(a, a, GemmOptions{});
    } catch (const std::runtime_error& e) {
      threw = std::string(e.what()).find("out of memory") != std::string::npos;
    }
    QVERIFY(threw);
    QCOMPARE(b.cpu_runs.load(), int64_t(0));
  }

  void cancelIsNotAFallback() {
    FallbackGemmBackend b(std::make_unique<FakeGpu>(FakeGpu::How::Cancel), makeCpuGemmBackend(), BackendRequest::Auto);
    const QuantizedTensor a = q({1, 2, 3, 4}, 2, 2);
    QVERIFY_THROWS_EXCEPTION(Cancelled, (void)b.run(a, a, GemmOptions{}));
    QCOMPARE(b.cpu_runs.load(), int64_t(0));
  }
};

QTEST_GUILESS_MAIN(TestBackendPolicy)
#include "test_backend_policy.moc"

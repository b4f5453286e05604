// fp8lab-cli's backend dispatcher (app/cli/backend_choice.h, issue 7 "Bad input"): a GEMM the GPU
// backend accepted up front but then failed to run (out of device memory, every cuBLASLt
// algorithm refused, a driver error) must not end the command under --backend auto: the CPU
// reference backend runs it, the result says why, and the counts record the fallback. Under
// --backend gpu the error is the answer; a cancel is never turned into a CPU run.
//
// No GPU is needed: a stand-in GPU backend that accepts every GEMM and then throws plays the
// device. The expected D is hand-derived: A = [[1, 2], [3, 4]], B = I₂, both E4M3FN with scale 1
// (small integers are exact in E4M3FN: 1 = 0x38, 2 = 0x40, 3 = 0x44, 4 = 0x48), so D = A·I = A
// exactly in FP32 output.
#include <QtTest>

#include "backend_choice.h"
#include "scaling/scaling.h"

#include <stdexcept>

using namespace fp8lab;
using namespace fp8lab::cli;

namespace {

/// A GPU backend that accepts everything and then fails the way `what` says.
class FailingGpu final : public GemmBackend {
public:
  enum class How { OutOfMemory, Cancel };
  explicit FailingGpu(How how) : how_(how) {}
  std::string name() const override { return "cuda"; }
  std::string device() const override { return "Stand-in H200"; }
  std::string unsupportedReason(const QuantizedTensor&, const QuantizedTensor&, const GemmOptions&) const override {
    return {};
  }
  GemmOutput run(const QuantizedTensor&, const QuantizedTensor&, const GemmOptions&, const ProgressFn&) override {
    ++calls;
    if (how_ == How::Cancel) throw Cancelled();
    throw std::runtime_error("cudaMalloc of 3221225472 bytes for D: out of memory (cudaErrorMemoryAllocation)");
  }
  int calls = 0;

private:
  How how_;
};

QuantizedTensor q(const std::vector<float>& x, int64_t rows, int64_t cols) {
  return quantizeWithScale(x.data(), rows, cols, Format::E4M3FN(), BlockScale{1.0f, 1.0f, -1},
                           Format::ScaleOp::Multiply);
}

} // namespace

class TestBackendFallback : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void autoFallsBackToTheCpuWhenTheGpuRunFails() {
    auto gpu = std::make_unique<FailingGpu>(FailingGpu::How::OutOfMemory);
    FailingGpu* g = gpu.get();
    ChosenGemmBackend b(BackendRequest::Auto, std::move(gpu), std::string());
    const QuantizedTensor a = q({1, 2, 3, 4}, 2, 2);
    const QuantizedTensor id = q({1, 0, 0, 1}, 2, 2);
    QCOMPARE(a.codes, (std::vector<uint8_t>{0x38, 0x40, 0x44, 0x48})); // the derivation above
    const GemmOutput out = b.run(a, id, GemmOptions{});
    QCOMPARE(g->calls, 1);
    QCOMPARE(out.backend, std::string("cpu"));
    QCOMPARE(out.d, (std::vector<float>{1, 2, 3, 4}));
    QCOMPARE(b.cpu_runs, int64_t(1));
    QCOMPARE(b.gpu_runs, int64_t(0));
    QVERIFY2(b.lastFallback().find("out of memory") != std::string::npos, b.lastFallback().c_str());
    QVERIFY2(b.lastFallback().find("Stand-in H200") != std::string::npos, b.lastFallback().c_str());
    bool noted = false;
    for (const Warning& w : out.warnings) noted |= w.detail.find("cudaErrorMemoryAllocation") != std::string::npos;
    QVERIFY(noted);
    QVERIFY(b.fallbackSummary().find("out of memory") != std::string::npos);
  }

  void gpuRequestReportsTheFailure() {
    ChosenGemmBackend b(BackendRequest::Gpu, std::make_unique<FailingGpu>(FailingGpu::How::OutOfMemory), std::string());
    const QuantizedTensor a = q({1, 2, 3, 4}, 2, 2);
    bool threw = false;
    try {
      (void)b.run(a, a, GemmOptions{});
    } catch (const std::runtime_error& e) {
      threw = std::string(e.what()).find("out of memory") != std::string::npos;
    }
    QVERIFY(threw);
    QCOMPARE(b.cpu_runs, int64_t(0));
  }

  void cancelIsNotAFallback() {
    ChosenGemmBackend b(BackendRequest::Auto, std::make_unique<FailingGpu>(FailingGpu::How::Cancel), std::string());
    const QuantizedTensor a = q({1, 2, 3, 4}, 2, 2);
    QVERIFY_THROWS_EXCEPTION(Cancelled, (void)b.run(a, a, GemmOptions{}));
    QCOMPARE(b.cpu_runs, int64_t(0));
  }
};

QTEST_GUILESS_MAIN(TestBackendFallback)
#include "test_backend_fallback.moc"

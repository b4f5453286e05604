#include "backend_choice.h"

#include "cli_util.h"

#ifdef FP8LAB_HAVE_CUDA
#include "cuda_gemm_backend.h"
#include "device_probe.h"
#endif

#include <cstdio>
#include <stdexcept>

namespace fp8lab::cli {
namespace {
void noteLine(const QString& s) {
  std::fprintf(stderr, "%s\n", s.toUtf8().constData());
}
} // namespace

std::optional<BackendRequest> parseBackendRequest(const QString& s) {
  const QString l = s.trimmed().toLower();
  if (l == QStringLiteral("auto")) return BackendRequest::Auto;
  if (l == QStringLiteral("cpu")) return BackendRequest::Cpu;
  if (l == QStringLiteral("gpu") || l == QStringLiteral("cuda")) return BackendRequest::Gpu;
  return std::nullopt;
}

const char* toString(BackendRequest r) {
  switch (r) {
  case BackendRequest::Auto:
    return "auto";
  case BackendRequest::Cpu:
    return "cpu";
  case BackendRequest::Gpu:
    return "gpu";
  }
  return "auto";
}

bool buildHasCuda() {
#ifdef FP8LAB_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

QCommandLineOption backendOption() {
  return QCommandLineOption(
      QStringLiteral("backend"),
      QStringLiteral("Where the FP8 GEMMs run: auto (default: the GPU when present and able to run the "
                     "GEMM, else the CPU, with a note why) | cpu | gpu (refuse what the GPU cannot run)."),
      QStringLiteral("auto|cpu|gpu"), QStringLiteral("auto"));
}

ChosenGemmBackend::ChosenGemmBackend(BackendRequest request, std::unique_ptr<GemmBackend> gpu,
                                     std::string no_gpu_reason)
    : request_(request), gpu_(std::move(gpu)), cpu_(makeCpuGemmBackend()), no_gpu_reason_(std::move(no_gpu_reason)) {}

std::string ChosenGemmBackend::name() const {
  return gpu_ ? gpu_->name() : cpu_->name();
}
std::string ChosenGemmBackend::device() const {
  return gpu_ ? gpu_->device() : cpu_->device();
}

std::string ChosenGemmBackend::unsupportedReason(const QuantizedTensor& a, const QuantizedTensor& b,
                                                 const GemmOptions& opt) const {
  if (gpu_) {
    std::string r = gpu_->unsupportedReason(a, b, opt);
    if (r.empty() || request_ == BackendRequest::Gpu) return r;
  }
  return cpu_->unsupportedReason(a, b, opt);
}

GemmOutput ChosenGemmBackend::run(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt,
                                  const ProgressFn& progress) {
  last_fallback_.clear();
  if (gpu_) {
    const std::string r = gpu_->unsupportedReason(a, b, opt);
    if (r.empty()) {
      try {
        GemmOutput out = gpu_->run(a, b, opt, progress);
        ++gpu_runs;
        return out;
      } catch (const Cancelled&) {
        throw;
      } catch (const std::exception& e) {
        // The GPU accepted the GEMM up front but failed running it (out of device memory, every
        // cuBLASLt algorithm refused, a driver error). gpu: that is the answer; auto: the CPU
        // reference backend runs it, with the GPU's error kept as the note.
        if (request_ == BackendRequest::Gpu) throw;
        last_fallback_ =
            "auto: the GEMM failed on " + gpu_->device() + " (" + e.what() + "); running on the CPU reference backend";
        fallback_reasons.insert(std::string("run failed: ") + e.what());
        GemmOutput out = cpu_->run(a, b, opt, progress);
        ++cpu_runs;
        out.warnings.push_back({Warning::Severity::Warning, "GPU fallback", "backend", last_fallback_});
        return out;
      }
    }
    if (request_ == BackendRequest::Gpu) throw std::runtime_error(gpu_->device() + " cannot run this GEMM: " + r);
    // selectGemmBackend's words for the same case (gpu/cuda_gemm_backend.cpp)
    last_fallback_ =
        "auto: " + gpu_->device() + " cannot run this GEMM: " + r + "; running on the CPU reference backend";
    GemmOutput out = cpu_->run(a, b, opt, progress);
    ++cpu_runs;
    fallback_reasons.insert(r);
    out.warnings.push_back({Warning::Severity::Info, "GPU fallback", "backend", last_fallback_});
    return out;
  }
  GemmOutput out = cpu_->run(a, b, opt, progress);
  ++cpu_runs;
  return out;
}

std::string ChosenGemmBackend::fallbackSummary() const {
  if (fallback_reasons.empty()) return {};
  std::string s = "auto: " + std::to_string(cpu_runs) + " of " + std::to_string(cpu_runs + gpu_runs) +
                  " GEMMs ran on the CPU reference backend (" + (gpu_ ? gpu_->device() : std::string("GPU")) +
                  " cannot run: ";
  bool first = true;
  for (const auto& r : fallback_reasons) {
    s += (first ? "" : "; ") + r;
    first = false;
  }
  return s + ")";
}

std::unique_ptr<ChosenGemmBackend> makeChosenBackend(const QString& value, bool quiet) {
  const auto req = parseBackendRequest(value);
  if (!req) {
    fail(QStringLiteral("--backend must be auto, cpu or gpu (got '%1')").arg(value));
    return nullptr;
  }
  if (*req == BackendRequest::Cpu) return std::make_unique<ChosenGemmBackend>(*req, nullptr, std::string());
#ifdef FP8LAB_HAVE_CUDA
  std::string why;
  std::unique_ptr<GemmBackend> gpu = gpu::makeCudaGemmBackend(&why);
  if (!gpu) {
    if (*req == BackendRequest::Gpu) {
      fail(QStringLiteral("--backend gpu: %1").arg(QString::fromStdString(why)));
      return nullptr;
    }
    if (!quiet)
      noteLine(QStringLiteral("note: --backend auto: %1; running on the CPU reference backend")
                   .arg(QString::fromStdString(why)));
    return std::make_unique<ChosenGemmBackend>(*req, nullptr, why);
  }
  auto b = std::make_unique<ChosenGemmBackend>(*req, std::move(gpu), std::string());
  const gpu::ProbeResult pr = gpu::probeDevices();
  b->runtime_version = pr.runtime_version;
  b->driver_version = pr.driver_version;
  b->cublaslt_version = static_cast<int64_t>(pr.cublaslt_version);
  return b;
#else
  const std::string why = "this build has no CUDA support (configure with CUDA to use the GPU backend)";
  if (*req == BackendRequest::Gpu) {
    fail(QStringLiteral("--backend gpu: %1").arg(QString::fromStdString(why)));
    return nullptr;
  }
  (void)quiet; // auto without CUDA: the CPU, as the build intends; no note
  return std::make_unique<ChosenGemmBackend>(*req, nullptr, why);
#endif
}

void recordBackend(Run& run, const ChosenGemmBackend& b, const GemmOptions& opt, const std::string& note) {
  run.attrs["backend_request"] = std::string(toString(b.request()));
  if (!note.empty()) run.attrs["backend_note"] = note;
  if (run.backend == "cuda") {
    run.attrs["fast_accum"] = int64_t(opt.accumulation == Accumulation::FastAccum ? 1 : 0);
    run.attrs["cuda_runtime_version"] = int64_t(b.runtime_version);
    run.attrs["cuda_driver_version"] = int64_t(b.driver_version);
    run.attrs["cublaslt_version"] = b.cublaslt_version;
  }
}

void addBackendJson(QJsonObject& j, const ChosenGemmBackend& b, const std::string& backend_that_ran,
                    const GemmOptions& opt, const std::string& note) {
  j[QStringLiteral("backend_request")] = QString::fromLatin1(toString(b.request()));
  j[QStringLiteral("backend_note")] = QString::fromStdString(note);
  if (backend_that_ran == "cuda") {
    j[QStringLiteral("fast_accum")] = opt.accumulation == Accumulation::FastAccum;
    j[QStringLiteral("versions")] = QJsonObject{{QStringLiteral("cuda_runtime"), b.runtime_version},
                                                {QStringLiteral("cuda_driver"), b.driver_version},
                                                {QStringLiteral("cublaslt"), static_cast<double>(b.cublaslt_version)}};
  }
}

} // namespace fp8lab::cli

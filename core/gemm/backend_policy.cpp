#include "gemm/backend_policy.h"

#include <cctype>
#include <stdexcept>

namespace fp8lab {

std::optional<BackendRequest> parseBackendRequest(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  std::string l(s);
  for (char& ch : l) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (l == "auto") return BackendRequest::Auto;
  if (l == "cpu") return BackendRequest::Cpu;
  if (l == "gpu" || l == "cuda") return BackendRequest::Gpu;
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

FallbackGemmBackend::FallbackGemmBackend(std::unique_ptr<GemmBackend> primary, std::unique_ptr<GemmBackend> fallback,
                                         BackendRequest request, std::string no_gpu_reason)
    : request_(request), primary_(request == BackendRequest::Cpu ? nullptr : std::move(primary)),
      fallback_(std::move(fallback)), no_gpu_reason_(std::move(no_gpu_reason)) {
  if (!fallback_) throw std::invalid_argument("FallbackGemmBackend: the fallback backend is null");
}

std::string FallbackGemmBackend::name() const {
  return primary_ ? primary_->name() : fallback_->name();
}

std::string FallbackGemmBackend::device() const {
  return primary_ ? primary_->device() : fallback_->device();
}

namespace {
std::string noGpuError(const std::string& reason) {
  return reason.empty() ? std::string("no GPU backend") : reason;
}
} // namespace

std::string FallbackGemmBackend::unsupportedReason(const QuantizedTensor& a, const QuantizedTensor& b,
                                                   const GemmOptions& opt) const {
  if (request_ == BackendRequest::Gpu && !primary_) return noGpuError(no_gpu_reason_);
  if (primary_) {
    std::string r = primary_->unsupportedReason(a, b, opt);
    if (r.empty() || request_ == BackendRequest::Gpu) return r;
  }
  return fallback_->unsupportedReason(a, b, opt);
}

GemmOutput FallbackGemmBackend::run(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt,
                                    const ProgressFn& progress) {
  if (!last_fallback_.empty()) last_fallback_.clear(); // no write on the CPU-only path, which runs shared
  if (!primary_) {
    if (request_ == BackendRequest::Gpu) throw std::runtime_error(noGpuError(no_gpu_reason_));
    GemmOutput out = fallback_->run(a, b, opt, progress);
    ++cpu_runs;
    return out;
  }
  const std::string r = primary_->unsupportedReason(a, b, opt);
  if (r.empty()) {
    try {
      GemmOutput out = primary_->run(a, b, opt, progress);
      ++gpu_runs;
      return out;
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      // The GPU accepted the GEMM up front but failed running it (out of device memory, every
      // cuBLASLt algorithm refused, a driver error). gpu: that is the answer; auto: the CPU
      // reference backend runs it, with the GPU's error kept as the note.
      if (request_ == BackendRequest::Gpu) throw;
      last_fallback_ = "auto: the GEMM failed on " + primary_->device() + " (" + e.what() +
                       "); running on the CPU reference backend";
      fallback_reasons.insert(std::string("run failed: ") + e.what());
      GemmOutput out = fallback_->run(a, b, opt, progress);
      ++cpu_runs;
      out.warnings.push_back({Severity::Warning, "GPU fallback", "backend", last_fallback_});
      return out;
    }
  }
  if (request_ == BackendRequest::Gpu) throw std::runtime_error(primary_->device() + " cannot run this GEMM: " + r);
  last_fallback_ =
      "auto: " + primary_->device() + " cannot run this GEMM: " + r + "; running on the CPU reference backend";
  GemmOutput out = fallback_->run(a, b, opt, progress);
  ++cpu_runs;
  fallback_reasons.insert(r);
  out.warnings.push_back({Severity::Info, "GPU fallback", "backend", last_fallback_});
  return out;
}

std::string FallbackGemmBackend::fallbackSummary() const {
  if (fallback_reasons.empty()) return {};
  std::string s = "auto: " + std::to_string(cpu_runs) + " of " + std::to_string(cpu_runs + gpu_runs) +
                  " GEMMs ran on the CPU reference backend (" + (primary_ ? primary_->device() : std::string("GPU")) +
                  " cannot run: ";
  bool first = true;
  for (const auto& r : fallback_reasons) {
    s += (first ? "" : "; ") + r;
    first = false;
  }
  return s + ")";
}

} // namespace fp8lab

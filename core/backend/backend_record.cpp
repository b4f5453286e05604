#include "backend/backend_record.h"

namespace fp8lab {

void recordBackend(Run& run, const FallbackGemmBackend& b, const GemmOptions& opt, const std::string& note) {
  run.attrs["backend_request"] = std::string(toString(b.request()));
  if (!note.empty()) run.attrs["backend_note"] = note;
  if (run.backend == "cuda") {
    run.attrs["fast_accum"] = int64_t(opt.accumulation == Accumulation::FastAccum ? 1 : 0);
    run.attrs["cuda_runtime_version"] = int64_t(b.cuda_versions.runtime);
    run.attrs["cuda_driver_version"] = int64_t(b.cuda_versions.driver);
    run.attrs["cublaslt_version"] = b.cuda_versions.cublaslt;
  }
}

} // namespace fp8lab

// The backend facts of --json outputs (backend_report.h).
#include "experiment/backend_report.h"

namespace fp8lab {

Json backendJson(const FallbackGemmBackend& b, const std::string& backend_that_ran, const GemmOptions& opt,
                 const std::string& note) {
  Json j = {{"backend_request", toString(b.request())}, {"backend_note", note}};
  if (backend_that_ran == "cuda") {
    j["fast_accum"] = opt.accumulation == Accumulation::FastAccum;
    j["versions"] = {{"cuda_runtime", b.cuda_versions.runtime},
                     {"cuda_driver", b.cuda_versions.driver},
                     {"cublaslt", double(b.cuda_versions.cublaslt)}};
  }
  return j;
}

} // namespace fp8lab

#include "lt_support.h"

#include <cstdio>

namespace fp8lab::gpu {

std::vector<LtSupportRow> enumerateLtSupport(const LtRunner& runner, int64_t m, int64_t n, int64_t k, int requested) {
  const cudaDataType_t in_types[] = {CUDA_R_8F_E4M3, CUDA_R_8F_E5M2};
  const cudaDataType_t out_types[] = {CUDA_R_16BF, CUDA_R_16F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E5M2};
  using M = LtScaleMode;
  const std::pair<M, M> pairings[] = {
      {M::Scalar, M::Scalar},     {M::OuterVec, M::OuterVec},     {M::Scalar, M::OuterVec},
      {M::OuterVec, M::Scalar},   {M::Vec128, M::Vec128},         {M::Vec128, M::Blk128x128},
      {M::Blk128x128, M::Vec128}, {M::Blk128x128, M::Blk128x128}, {M::Scalar, M::Vec128}};
  // Scale buffers big enough for any mode at this size (the heuristic never reads them).
  const int64_t scale_floats =
      std::max(ltScaleCount(M::Vec128, std::max(m, n), k), ltScaleCount(M::Blk128x128, std::max(m, n), k));
  DeviceBuffer<float> sa(static_cast<size_t>(scale_floats)), sb(static_cast<size_t>(scale_floats)), sd(1), amax(1);
  std::vector<LtSupportRow> rows;
  for (auto ta : in_types)
    for (auto tb : in_types)
      for (auto td : out_types)
        for (const auto& pr : pairings)
          for (int fast = 0; fast < 2; ++fast) {
            LtSupportRow r;
            r.problem.m = m;
            r.problem.n = n;
            r.problem.k = k;
            r.problem.a_type = ta;
            r.problem.b_type = tb;
            r.problem.d_type = td;
            r.problem.a_mode = pr.first;
            r.problem.b_mode = pr.second;
            r.problem.fast_accum = fast != 0;
            LtPointers p;
            p.a_scale = sa.get();
            p.b_scale = sb.get();
            p.d_scale = sd.get();
            p.amax_d = amax.get();
            try {
              const LtOperation op(r.problem, p, /*validate=*/false);
              std::string why;
              const auto res = runner.heuristics(op, requested, &why);
              r.algorithms = static_cast<int>(res.size());
              r.supported = !res.empty();
              r.workspace_bytes = res.empty() ? 0 : res.front().workspaceSize;
              r.status = r.supported ? "ok" : why;
            } catch (const GpuError& e) {
              r.status = e.what();
            }
            rows.push_back(r);
          }
  return rows;
}

std::string formatSupportTable(const std::vector<LtSupportRow>& rows) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-5s %-5s %-5s %-15s %-15s %-4s %-4s %-6s %s\n", "A", "B", "D", "A scale",
                "B scale", "fast", "ok", "algos", "status");
  out += line;
  int ok = 0;
  for (const auto& r : rows) {
    ok += r.supported;
    std::snprintf(line, sizeof line, "%-5s %-5s %-5s %-15s %-15s %-4d %-4s %-6d %s\n", typeName(r.problem.a_type),
                  typeName(r.problem.b_type), typeName(r.problem.d_type), toString(r.problem.a_mode),
                  toString(r.problem.b_mode), r.problem.fast_accum ? 1 : 0, r.supported ? "yes" : "no", r.algorithms,
                  r.status.c_str());
    out += line;
  }
  out += std::to_string(ok) + " of " + std::to_string(rows.size()) + " combinations supported\n";
  return out;
}

std::string supportCsv(const std::vector<LtSupportRow>& rows) {
  std::string out = "a_type,b_type,d_type,a_mode,b_mode,fast_accum,supported,algorithms,workspace_bytes,status\n";
  for (const auto& r : rows) {
    std::string st = r.status;
    for (char& c : st)
      if (c == ',' || c == '\n') c = ';';
    out += std::string(typeName(r.problem.a_type)) + "," + typeName(r.problem.b_type) + "," +
           typeName(r.problem.d_type) + "," + toString(r.problem.a_mode) + "," + toString(r.problem.b_mode) + "," +
           (r.problem.fast_accum ? "1" : "0") + "," + (r.supported ? "1" : "0") + "," + std::to_string(r.algorithms) +
           "," + std::to_string(r.workspace_bytes) + "," + st + "\n";
  }
  return out;
}

} // namespace fp8lab::gpu

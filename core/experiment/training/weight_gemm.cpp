// FP8 Lab — GEMM error experiment on trained weights (see weight_gemm.h).
#include "experiment/training/weight_gemm.h"
#include "training/sites.h"

#include "experiment/gemm/gemm_run.h"
#include "metrics/error_metrics.h"
#include "scaling/scaling.h"
#include "training/dense.h"

#include <stdexcept>

namespace fp8lab {

std::vector<float> layerInputs(const std::vector<LayerWeights>& w, int layer, const ImageDataset& test, int64_t rows,
                               int threads) {
  if (layer < 0 || layer >= static_cast<int>(w.size())) throw std::invalid_argument("layer index out of range");
  rows = std::min(rows, test.count);
  return mlpLayerInputF32(w, test.pixels.data(), rows, static_cast<size_t>(layer), threads);
}

Run weightGemmRun(const std::vector<LayerWeights>& w, const ImageDataset& test, const WeightGemmConfig& cfg,
                  const std::string& run_id, const std::string& config_json, GemmBackend* backend,
                  const ProgressFn& progress) {
  if (cfg.layer < 0 || cfg.layer >= static_cast<int>(w.size()))
    throw std::invalid_argument("trained-weights GEMM: layer " + std::to_string(cfg.layer + 1) + " does not exist");
  if (cfg.rows < 1) throw std::invalid_argument("trained-weights GEMM: rows must be ≥ 1");
  const LayerWeights& L = w[static_cast<size_t>(cfg.layer)];
  const int64_t m = std::min(cfg.rows, test.count);
  const std::vector<float> a = layerInputs(w, cfg.layer, test, m, cfg.gemm.threads);
  return weightGemmRunFromInputs(a, L.kernel, m, L.in, L.out, mlpLayerName(cfg.layer), cfg, run_id, config_json,
                                 backend, progress);
}

Run weightGemmRunFromInputs(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t k, int64_t n,
                            const std::string& layer, const WeightGemmConfig& cfg, const std::string& run_id,
                            const std::string& config_json, GemmBackend* backend, const ProgressFn& progress) {
  if (m < 1 || k < 1 || n < 1 || static_cast<int64_t>(a.size()) != m * k || static_cast<int64_t>(b.size()) != k * n)
    throw std::invalid_argument("trained-weights GEMM: inputs do not match [m,k] x [k,n]");
  const auto preset = scalingPreset(cfg.scaling);
  if (!preset)
    throw std::invalid_argument("trained-weights GEMM: unknown current-scaling preset '" + cfg.scaling + "'");
  for (Axis ax : {Axis::Cols, Axis::Rows})
    if (const std::string why = gemmScalingProblem(*preset, ax); !why.empty())
      throw std::invalid_argument("trained-weights GEMM: " + why);
  // The one GEMM error experiment (core/experiment), on these operands: the same datasets and
  // metric names as every "gemm" run, the float64 reference included.
  GemmExperimentConfig g;
  g.m = m;
  g.k = k;
  g.n = n;
  g.format_a = cfg.format_a->name();
  g.format_b = cfg.format_b->name();
  g.scaling = cfg.scaling;
  g.gemm = cfg.gemm;
  g.a.values = &a;
  g.a.rows = m;
  g.a.cols = k;
  g.a.origin = layer + " input activations of the first " + std::to_string(m) + " test images";
  g.b.values = &b;
  g.b.rows = k;
  g.b.cols = n;
  g.b.origin = "trained " + layer + " kernel (FP32 master weights)";
  std::unique_ptr<GemmBackend> cpu;
  if (!backend) {
    cpu = makeCpuGemmBackend();
    backend = cpu.get();
  }
  Result<Run> res = runGemmExperimentRun(g, config_json, run_id, *backend, progress);
  if (!res.ok()) throw std::invalid_argument("trained-weights GEMM: " + res.firstError());
  Run run = std::move(res.value);
  run.type = "gemm-trained-weights";
  run.seed = 0; // no random operand
  run.attrs["layer"] = layer;
  run.attrs["description"] = "A = " + layer + " input of the first " + std::to_string(m) +
                             " test images (float32 through the trained weights), B = trained " + layer + " kernel";
  run.attrs["rows"] = m;
  return run;
}

} // namespace fp8lab

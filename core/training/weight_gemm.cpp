// FP8 Lab — GEMM error experiment on trained weights (see weight_gemm.h).
#include "training/weight_gemm.h"

#include "metrics/error_metrics.h"
#include "scaling/scaling.h"
#include "training/dense.h"

#include <stdexcept>

namespace fp8lab {

std::vector<float> layerInputs(const std::vector<LayerWeights>& w, int layer, const ImageDataset& test, int64_t rows,
                               int threads) {
  if (layer < 0 || layer >= static_cast<int>(w.size())) throw std::invalid_argument("layer index out of range");
  rows = std::min(rows, test.count);
  std::vector<float> x(test.pixels.begin(), test.pixels.begin() + rows * test.features()), y;
  for (int l = 0; l < layer; ++l) {
    y.resize(static_cast<size_t>(rows * w[l].out));
    matmulF32(x.data(), w[l].kernel.data(), y.data(), rows, w[l].in, w[l].out, threads);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < w[l].out; ++j) {
        float& v = y[static_cast<size_t>(i * w[l].out + j)];
        v = std::max(v + w[l].bias[static_cast<size_t>(j)], 0.0f);
      }
    x.swap(y);
  }
  return x;
}

namespace {

void putMetrics(Run& run, const std::string& prefix, const ErrorMetrics& m, const std::string& what) {
  run.setMetric(prefix + "_max_abs", m.max_abs, "1", "max absolute error, " + what);
  run.setMetric(prefix + "_max_rel", m.max_rel, "1", "max relative error over non-zero references, " + what);
  run.setMetric(prefix + "_rmse", m.rmse, "1", "root-mean-square error, " + what);
  run.setMetric(prefix + "_rel_fro", m.rel_fro, "1", "relative Frobenius error, " + what);
  run.setMetric(prefix + "_sqnr_db", m.sqnr_db, "dB", "signal-to-quantization-noise ratio, " + what);
}

std::vector<float> toF32(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

} // namespace

Run weightGemmRun(const std::vector<LayerWeights>& w, const ImageDataset& test, const WeightGemmConfig& cfg,
                  const std::string& run_id, const std::string& config_json, GemmBackend* backend,
                  const ProgressFn& progress) {
  if (cfg.layer < 0 || cfg.layer >= static_cast<int>(w.size()))
    throw std::invalid_argument("trained-weights GEMM: layer " + std::to_string(cfg.layer + 1) + " does not exist");
  if (cfg.rows < 1) throw std::invalid_argument("trained-weights GEMM: rows must be ≥ 1");
  const LayerWeights& L = w[static_cast<size_t>(cfg.layer)];
  const int64_t m = std::min(cfg.rows, test.count);
  const std::vector<float> a = layerInputs(w, cfg.layer, test, m, cfg.gemm.threads);
  return weightGemmRunFromInputs(a, L.kernel, m, L.in, L.out, "fc" + std::to_string(cfg.layer + 1), cfg, run_id,
                                 config_json, backend, progress);
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
  const std::vector<float>& kernel = b;
  const QuantizedTensor qa = quantize(a.data(), m, k, *cfg.a_format, *preset, Axis::Cols);
  const QuantizedTensor qb = quantize(kernel.data(), k, n, *cfg.b_format, *preset, Axis::Rows);
  GemmExperimentResult r = runGemmExperiment(a.data(), kernel.data(), qa, qb, cfg.gemm, backend, progress);

  Run run;
  run.id = run_id;
  run.type = "gemm-trained-weights";
  run.config_json = config_json;
  run.backend = r.output.backend;
  run.device = r.output.device;
  run.attrs["layer"] = layer;
  run.attrs["scaling"] = cfg.scaling;
  run.attrs["a_format"] = cfg.a_format->name();
  run.attrs["b_format"] = cfg.b_format->name();
  run.attrs["accumulation"] = std::string(toString(cfg.gemm.accumulation));
  run.attrs["algorithm"] = r.output.algorithm;
  run.attrs["description"] = "A = " + layer + " input of the first " + std::to_string(m) +
                             " test images (float32 through the trained weights), B = trained " + layer + " kernel";
  run.attrs["rows"] = m;
  run.putFloat32("inputs/A", a, m, k, "1", layer + " input activations of test images [M=images, K=in features]");
  run.putFloat32("inputs/B", kernel, k, n, "1", "trained " + layer + " kernel [K=in, N=out] (FP32 master weights)");
  run.putQuantized("quantized/A", qa, "A quantized with " + cfg.scaling);
  run.putQuantized("quantized/B", qb, "B quantized with " + cfg.scaling);
  run.putFloat32("output/D", r.output.d, m, n, "1",
                 std::string("FP8 GEMM output D = A_q·B_q, ") + toString(cfg.gemm.accumulation) + " accumulation");
  run.putFloat32("reference/D", toF32(r.ideal), m, n, "1",
                 "ideal A·B of the unquantized inputs (double, rounded to float32 for storage)");
  run.putFloat32("reference/D_quantized_exact", toF32(r.quantized_exact), m, n, "1",
                 "dequant(A_q)·dequant(B_q) in double (exact accumulation), rounded to float32 for storage");
  run.putFloat32("error/abs", errorMap(r.ideal.data(), r.output.d.data(), m * n, ErrorMapKind::Abs), m, n, "1",
                 "|D − ideal| per element");
  run.putFloat32("error/rel", errorMap(r.ideal.data(), r.output.d.data(), m * n, ErrorMapKind::Rel), m, n, "1",
                 "|D − ideal| / |ideal| per element (NaN where ideal = 0 and D ≠ 0)");
  putMetrics(run, "total", r.total, "D vs ideal");
  putMetrics(run, "quantization", r.quantization, "quantized-exact vs ideal");
  putMetrics(run, "accumulation", r.accumulation, "D vs quantized-exact");
  run.setMetric("a_saturated", static_cast<double>(qa.stats.saturated), "elements", "A elements clipped");
  run.setMetric("a_underflow", static_cast<double>(qa.stats.underflow), "elements", "A elements flushed to zero");
  run.setMetric("b_saturated", static_cast<double>(qb.stats.saturated), "elements", "B elements clipped");
  run.setMetric("b_underflow", static_cast<double>(qb.stats.underflow), "elements", "B elements flushed to zero");
  run.setMetric("gemm_seconds", r.output.seconds, "s", "wall time of the FP8 GEMM");
  return run;
}

} // namespace fp8lab

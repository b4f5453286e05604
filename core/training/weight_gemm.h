// FP8 Lab — the GEMM error experiment on trained weights: how well does an FP8 GEMM reproduce
// one Linear layer of the trained MLP on real activations?
//
//   A [M, K] = the layer's input for the first M test images, computed in float32 through the
//              trained FP32 master weights (ReLU after every earlier layer)
//   B [K, N] = the layer's trained kernel (FP32 master weights)
// Both are quantized with a scaling preset of core/scaling (A along its rows' K axis, B along
// its columns'), multiplied by core/gemm, and compared (core/metrics) with the ideal A·B in
// double and with the quantized-exact product: quantization vs accumulation error on real data.
#pragma once

#include "gemm/gemm.h"
#include "gemm/gemm_experiment.h"
#include "session/session.h"
#include "training/fashion_mnist.h"
#include "training/trainer.h"

#include <string>
#include <vector>

namespace fp8lab {

struct WeightGemmConfig {
  int layer = 0;                      ///< 0-based Linear layer (0 = "fc1")
  int64_t rows = 1000;                ///< M: test images used (≤ test-set size)
  std::string scaling = "te_current"; ///< a current-scaling preset name of core/scaling
  const Format* a_format = &Format::E4M3FN();
  const Format* b_format = &Format::E4M3FN();
  GemmOptions gemm; ///< accumulation model, output type, threads
};

/// The float32 input of Linear layer `layer` for the first `rows` test images, [rows, in].
std::vector<float> layerInputs(const std::vector<LayerWeights>& weights, int layer, const ImageDataset& test,
                               int64_t rows, int threads = 0);

/// Runs the experiment and builds a session run of type "gemm-trained-weights" with datasets
/// inputs/A, inputs/B (float32), quantized/A, quantized/B (Run::putQuantized), output/D,
/// reference/D (ideal, float32 of the double result), reference/D_quantized_exact, error/abs and
/// error/rel (output vs ideal), and metrics for the three error splits (quantization,
/// accumulation, total: max_abs, max_rel, rmse, rel_fro, sqnr_db) plus operand saturation counts.
/// Throws std::invalid_argument for an unknown preset, a layer out of range or rows < 1.
Run weightGemmRun(const std::vector<LayerWeights>& weights, const ImageDataset& test, const WeightGemmConfig& cfg,
                  const std::string& run_id, const std::string& config_json, GemmBackend* backend = nullptr,
                  const ProgressFn& progress = {});

/// The same experiment on given inputs A [m,k] and B [k,n] (what weightGemmRun computes after
/// building A; `fp8lab-cli rerun` calls it with the stored inputs/A and inputs/B). `layer_name`
/// is stored as the run's "layer" attribute ("fc1", ...).
Run weightGemmRunFromInputs(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t k, int64_t n,
                            const std::string& layer_name, const WeightGemmConfig& cfg, const std::string& run_id,
                            const std::string& config_json, GemmBackend* backend = nullptr,
                            const ProgressFn& progress = {});

} // namespace fp8lab

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
#include "gemm/error_split.h"
#include "session/session.h"
#include "training/fashion_mnist.h"
#include "training/trainer.h"

#include <string>
#include <vector>

namespace fp8lab {

struct WeightGemmConfig {
  int layer = 0;                              ///< 0-based Linear layer (0 = "fc1")
  int64_t rows = 1000;                        ///< M: test images used (≤ test-set size)
  std::string scaling = "te_current";         ///< a current-scaling preset name of core/scaling
  const Format* format_a = &Format::E4M3FN(); ///< A's (the activations') element format
  const Format* format_b = &Format::E4M3FN(); ///< B's (the kernel's) element format
  GemmOptions gemm;                           ///< accumulation model, output type, threads
};

/// The float32 input of Linear layer `layer` for the first `rows` test images, [rows, in].
std::vector<float> layerInputs(const std::vector<LayerWeights>& weights, int layer, const ImageDataset& test,
                               int64_t rows, int threads = 0);

/// Runs the GEMM error experiment of core/experiment (runGemmExperimentRun) on A = the layer's
/// input activations and B = its trained kernel, and returns it as a session run of type
/// "gemm-trained-weights": the datasets and metric names of every "gemm" run (inputs/A, inputs/B,
/// quantized/*, output/D, reference/D and reference/D_quantized_exact in float64, error maps;
/// sqnr_db, quant_sqnr_db, accum_sqnr_db, ... — docs/session-format.md) plus the attributes
/// layer, rows and description. Throws std::invalid_argument for an unknown preset, a layer out
/// of range or rows < 1.
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

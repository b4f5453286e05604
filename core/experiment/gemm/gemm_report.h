// FP8 Lab — the summary of one GEMM error experiment (core/experiment/gemm/gemm_run.h) as the text
// `fp8lab-cli gemm` prints: the shape and operands, the accumulation model and epilogue, the backend,
// the timings, the quantization / accumulation / total error table (core/metrics), the operands'
// saturation counts, amax_D, the worst tile, the warnings and the kernel check
// (kernel_check_report.h); and the JSON pieces of `gemm --json` that describe the results.
#pragma once

#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/gemm_run.h"
#include "gemm/accumulation_preset.h"
#include "json/json_document.h"
#include "metrics/error_metrics.h"
#include "scaling/quantized_tensor.h"

#include <string>

namespace fp8lab {

/// What the summary is about: the config that ran, what the run computed, and the words the
/// user chose (scaling names as given, the backend request).
struct GemmReportInput {
  const GemmExperimentConfig* config = nullptr;          ///< formats, seed, distribution, C / bias, tile, check
  const GemmRunDetails* details = nullptr;               ///< shape, metrics, stats, tiles, output, check result
  GemmOptions options;                                   ///< the GEMM as run (scale_D resolved)
  std::string scaling_a, scaling_b;                      ///< the operands' scaling presets as given
  std::optional<AccumulationPreset> accumulation_preset; ///< the preset the accumulation came from
  std::string backend_request;                           ///< "auto", "cpu" or "gpu"
  bool imported = false;                                 ///< an operand came from a tensor file
  bool allow_nonfinite = false;                          ///< NaN outputs do not set exit status 1
};

/// The summary as text lines (each ending in a newline). Numbers: 4 significant digits in the error
/// table and tiles, 6 for scale_D, 9 for alpha / beta, 8 for amax_D, 3 for seconds; percentages
/// with 3 decimals.
std::string gemmReportText(const GemmReportInput& in);

/// The index of the tile with the largest mean in `tiles` (row-major over grid_rows x grid_cols,
/// NaN means skipped), −1 when every mean is NaN or there is none.
int64_t worstTile(const TileMap& tiles);

/// Error metrics as JSON: max_abs, max_abs_index, max_rel, max_rel_index, rmse, rel_fro, sqnr_db,
/// ref_rms, finite_pairs, nan_ref, inf_ref, nan_test, inf_test ("nan", "inf", "-inf" as strings).
Json errorMetricsJson(const ErrorMetrics& m);

/// An operand's quantization counts as JSON: elements, saturated, flushed_to_zero, subnormal (and
/// their *_percent), nan, inf.
Json operandStatsJson(const OperandStats& s);

/// Adds to `o` the scales of one quantized operand: scale_format ("float32" or the scale code
/// format), tensor_scale of a two-level format (NVFP4: kind, amax, value, fp4_fp8_max) and, for
/// block scale codes (MX: E8M0FNU, NVFP4: E4M3FN), block_scale_codes: the format, blocks, block
/// shape, the smallest and largest code and the counts of zero, subnormal and NaN codes.
void addScalesJson(Json& o, const QuantizedTensor& q);

/// What `gemm --json` reports of one run (gemmResultJson).
struct GemmResultJsonInput {
  const GemmExperimentConfig* config = nullptr; ///< the config that ran
  std::string run_id;                           ///< stored as the config's "name"
  const GemmRunDetails* details = nullptr;      ///< what the run computed
  const Run* run = nullptr;                     ///< its datasets (the operands' quantized scales)
  std::vector<Issue> issues;                    ///< the run's warnings and notes (not its errors)
  double total_seconds = 0;                     ///< wall time of the whole command
  std::string file, stored_id;                  ///< --out: the session file and the id the run got
};

/// The JSON object of `fp8lab-cli gemm --json`, except the backend's keys (the front end adds
/// them): "config" (gemmConfigJson with the run id as "name"), "shape" {m, n, k} as run (a tensor
/// operand fixes what the config leaves out), "accumulation_preset" {name, summary, source,
/// unsure} when one set the model, backend / device / algorithm / model_of_undocumented_hardware
/// of the output, "seconds" {quantize_s, gemm_s, ideal_s, quantized_exact_s, total_s}, "errors"
/// {quantization, accumulation, total} (errorMetricsJson), "operands" {A, B} (operandStatsJson
/// with addScalesJson), "amax_d", "d_saturated" (FP8 outputs), "tile_map" {what, tile, grid_rows,
/// grid_cols, mean, max} of |D − ideal|, the backend's "warnings" {what, where, detail}, the run's
/// "issues" {severity, where, detail}, "nan_outputs" when D has NaN, "check" (kernelCheckJson)
/// with an observed D, and "file" / "run" when the run was saved. Non-finite numbers are the
/// strings "nan", "inf", "-inf".
Json gemmResultJson(const GemmResultJsonInput& in);

} // namespace fp8lab

// FP8 Lab — the GEMM experiment config as JSON: one parser (with its validation) and one
// serializer, used by `fp8lab-cli run / sweep / gemm / rerun`, the desktop app's experiment
// panel and the tests. Keys: docs/session-format.md, "GEMM experiment config".
//
// Vocabulary: formats by Format::byName, scaling by the preset table (scalingPresets()),
// accumulation and output by parseAccumulation / parseOutputType (core/gemm/gemm.h), each with
// its aliases. The serializer writes the canonical spelling of every value, all keys explicit,
// so the stored text alone reproduces the run.
//
// Older desktop-app sessions stored the experiment panel's own keys (a_format, b_format,
// scaling = a strategy, preset = a system, pow2_scales, block, mx_rule, input, sigma,
// import_path, ...). parseGemmConfig reads that form too, mapping it to the preset it ran with,
// so those runs still re-run.
#pragma once

#include "json/json_document.h"
#include "experiment/config_reader.h"
#include "experiment/gemm/gemm_run.h"

#include <optional>
#include <string>
#include <utility>

namespace fp8lab {

/// Parses a GEMM experiment object into `cfg` (fields absent from `o` keep cfg's values). Errors
/// go to `r` naming the key path under `at`; unknown keys, wrong types, out-of-range values,
/// unknown formats / presets / accumulation / output, a tensor operand beside m/k/n it fixes,
/// random-data keys on a tensor operand, an output scale on a non-FP8 output are all errors.
/// Returns r.ok().
bool parseGemmConfig(const Json& o, GemmExperimentConfig* cfg, ConfigReader& r, const ConfigPath& at = {});
/// The same with its own reader; "" when `o` is a valid config, else the message.
std::string parseGemmConfig(const Json& o, GemmExperimentConfig* cfg, const JsonDocument* doc = nullptr);

/// The kernel check keys of a GEMM config object `o` into cfg->check (called by parseGemmConfig):
/// "observed" (the kernel's D file) and "check" {reference, atol, rtol, max_ulp, min_sqnr_db,
/// allow_nonfinite, fit, fit_bits, fit_groups, fit_intervals, fit_no_promotion}. Errors name the
/// key: "check" without "observed", an unknown reference model, a negative tolerance, a grid list
/// out of range, "observed" beside an automatic FP8 output scale (the kernel used its own scale_D).
bool parseKernelCheck(const Json& o, const ConfigPath& at, GemmExperimentConfig* cfg, ConfigReader& r);

/// The canonical config object of `cfg`: "type": "gemm" and every key with its value in the
/// canonical spelling (m/k/n only for dimensions no tensor operand fixes; output_quant_scale
/// only for FP8 outputs; the random-data keys only for random operands). `name`, when not
/// empty, is stored as "name". parseGemmConfig(gemmConfigJson(c)) gives c back.
Json gemmConfigJson(const GemmExperimentConfig& cfg, const std::string& name = {});

/// The run id used when a config names none: "gemm-<format_a>[x<format_b>]-<scaling, or codes when
/// both operands are pre-quantized>-<distribution of A or import>", e.g.
/// "gemm-E4M3FN-te_current-normal", "gemm-E4M3FN-codes-import".
std::string defaultGemmRunId(const GemmExperimentConfig& cfg);

/// True when `o` is in the form the desktop app stored before its panel wrote canonical configs
/// (it has "a_format", "preset" or "pow2_scales"): sessions written by FP8 Lab before 2026-12.
bool isOldPanelFormGemmConfig(const Json& o);
/// Reads a config of that old panel form (a run stored by an older desktop app) as the canonical
/// config; errors into `r` (a combination that has no preset, e.g. Flax per-tensor current
/// scaling) naming the key. Only parseGemmConfig calls it, so old sessions still re-run.
Json gemmConfigFromOldPanelForm(const Json& o, ConfigReader& r, const ConfigPath& at = {});

/// The tensor spec of a training run's first-layer kernel in a session file,
/// "<session_file>:/runs/<run_id>/weights/fc1/kernel" (session_layout.h): B = W [K, N] of a GEMM
/// on trained weights (the desktop app's "Trained weights of a run" source).
std::string trainedKernelSpec(const std::string& session_file, const std::string& run_id);
/// The session file and run id of a spec of that form (either may be empty: no file or no run
/// chosen yet); nullopt for any other spec.
std::optional<std::pair<std::string, std::string>> trainedKernelOf(const std::string& spec);

} // namespace fp8lab

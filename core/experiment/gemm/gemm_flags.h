// FP8 Lab — the flags of `fp8lab-cli gemm` read into a GEMM experiment config. Each flag is a
// parameter schema entry (param_schema.h: its flag, type, range, default); this reads the values
// given on a command line with the same rules as a config file (the accumulation rule
// accumulationProblem, the presets of scaling.h / nvfp4.h, the epilogue's C and bias) and names
// the flags, not the config keys, in its refusals. The front end checks the numbers against
// their ranges first (checkParamText) and adds what is not a schema flag (threads, the kernel
// check's codes and observed D).
#pragma once

#include "experiment/gemm/gemm_run.h"
#include "gemm/accumulation_preset.h"

#include <map>
#include <optional>
#include <string>

namespace fp8lab {

/// The config the flags describe, and the words the user chose.
struct GemmFlagConfig {
  GemmExperimentConfig config;
  std::string scaling_a, scaling_b;                      ///< the presets as given (--a-scaling / --b-scaling)
  std::optional<AccumulationPreset> accumulation_preset; ///< the preset --accumulation named, if any
};

/// Reads the flags of `gemm` into *out. `given` maps a flag's name without the dashes ("m",
/// "accumulation", "c-seed", "no-promotion", and "a-scaling" and "reference", the flags outside the
/// schema) to its text, for the flags on the command line only; with "reference" a fast model or a
/// preset, the fast model's parameters are read for the kernel check's reference even when the
/// run's own model does not read them (and must agree with a reference preset); the others take their schema default
/// (flagDefault; --output-scale "auto"). Numbers are assumed inside their ranges (checked by the
/// front end). `store` sets store_inputs / store_quantized / store_error_maps. Returns "" or the
/// first refusal as one line naming the flag: an unknown format or one wider than 8 bits, an
/// unknown or delayed scaling preset, a preset that cannot scale its operand of a GEMM, an
/// unknown accumulation, output, distribution, outlier axis or rounding, a parameter the model
/// does not read or that disagrees with its preset, non-finite alpha / beta, beta ≠ 0 without
/// --c-seed (and --c-seed with beta = 0), a C or bias scale without its seed, --output-scale for
/// a non-FP8 output, --stochastic-bits without stochastic rounding. Semantics: the config
/// parser's (gemm_config.h), so `gemm --json` prints a config that `run` reads back unchanged.
std::string gemmConfigFromFlags(const std::map<std::string, std::string>& given, bool store, GemmFlagConfig* out);

/// The checks of the whole config the flags and the front end's additions made (the codes
/// operands, the kernel check): the operands of shape `m` × `k` × `n` (the flags') against their
/// formats and presets (gemmOperandProblem, named by flag: "--b-scaling: ..."; not for tensor
/// operands, whose shape the run checks once loaded), then the config parser on its canonical
/// form. "" or the refusal.
std::string gemmFlagConfigProblem(const GemmExperimentConfig& cfg, int64_t m, int64_t k, int64_t n);

} // namespace fp8lab

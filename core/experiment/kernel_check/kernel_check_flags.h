// FP8 Lab — the command-line form of a GEMM's codes operands and of the kernel check: the flags
// (--a-codes, --a-scales, ..., --observed, --max-ulp, ...) with their help, and the rewrite of a
// GEMM config by the flags given, through the one config parser (gemm_config.h) so that flags and
// config files follow the same rules and refusals. `fp8lab-cli gemm` declares and reads the flags.
#pragma once

#include "experiment/gemm/gemm_run.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// One flag: its name without "--", its help, and the name of its value ("" for a flag that
/// takes none).
struct CheckFlag {
  std::string name;
  std::string help;
  std::string value;
};

/// The flags in the order `gemm --help` lists them: for A then B, --X-codes, --X-scales,
/// --X-block, --X-scale-format, --X-scale-layout, --X-packed, --X-tensor-amax, --X-tensor-scale,
/// --X-transpose (X = a, b); then --observed, --reference, --max-ulp, --atol, --rtol, --min-sqnr,
/// --allow-nonfinite, --no-fit, --fit-bits, --fit-groups, --fit-intervals.
const std::vector<CheckFlag>& kernelCheckFlags();

/// A flag as given: its text, and the text read as a number by the front end's number parser
/// (`number`, or nullopt with `number_problem` saying why not).
struct GivenFlag {
  std::string text;
  std::optional<double> number;
  std::string number_problem;
};

/// Rewrites `cfg` (built from the other flags) with the codes operands and the kernel check of
/// the flags `given` (name without "--" → value; the kernelCheckFlags() given, and "m", "k", "n"
/// when given), through parseGemmConfig. A codes operand replaces the operand's format key and
/// the dimensions its file fixes (A [M, K], B [K, N]); --X-block is ROWSxCOLS (also "R,C",
/// "RXC"); --X-scales is one number (a per-tensor dequant scale) or a file. The CPU kernel,
/// threads, memory limit and the store_* switches of `cfg` are kept. Returns "" or the refusal,
/// config keys named as their flags ("a.block: ..." → "--a-block: ..."); `cfg` is unchanged on
/// a refusal.
std::string applyKernelCheckFlags(const std::map<std::string, GivenFlag>& given, GemmExperimentConfig* cfg);

} // namespace fp8lab

// FP8 Lab — the parameter schema: one table of every GEMM experiment parameter and of the
// scaling parameters the quantize and train commands share with it. Each entry names its config
// key, its command-line flag, its type, unit, range or choices, default, the commands and presets
// that read it, and its help text with the source of its semantics.
//
// The table is the one author of these facts: the config parser (gemm_config.cpp,
// training_config.cpp) reads its ranges, `fp8lab-cli gemm` builds its flags and --help from it,
// `quantize` and `train` read the entries they share, and the desktop app's experiment panel takes
// its widgets' ranges, choices and tooltips from it. Choices come from the core registries
// (Format::all, scalingPresets, nvfp4Presets, accumulationPresets, the enums' toString), not
// retyped. docs/gemm.md lists the table (tests/core/experiment/test_param_schema.cpp keeps it current).
#pragma once

#include "gemm/accumulation_preset.h"
#include "gemm/gemm.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// The value type of a parameter.
enum class ParamType {
  Integer, ///< a whole number in [min, max]
  Number,  ///< a finite double in [min, max]
  Boolean, ///< true / false (a flag without a value on the command line)
  Choice,  ///< one of `choices` (canonical spellings; the parsers also take their aliases)
  Text,    ///< free text (a file spec, a run id)
  Seed,    ///< an unsigned 64-bit integer
};

/// Where a parameter sits in the GEMM config object.
enum class ParamScope {
  Top,      ///< a key of the config object ("m", "accumulation")
  Operands, ///< a key of each random operand object "a" and "b" (the flag sets both)
  OperandA, ///< a key of "a" only ("tensor")
  OperandB, ///< a key of "b" only
  C,        ///< a key of the epilogue C object "c"
  Bias,     ///< a key of the epilogue bias object "bias"
  None,     ///< no config key: a setting of the command or the app (threads, backend)
};

/// One parameter of the schema.
struct ParamSpec {
  std::string key; ///< the key in its config object (see scope); "" for scope None
  ParamScope scope = ParamScope::Top;
  std::string flag; ///< the command-line flag without "--"; "" when no command takes it
  ParamType type = ParamType::Integer;
  std::string unit;                 ///< e.g. "elements", "bits"; "" when none
  double min = 0, max = 0;          ///< Integer / Number: the accepted range, inclusive but for min_open
  bool min_open = false;            ///< the range excludes min: (0, max] for a positive scale
  std::vector<std::string> choices; ///< Choice: the canonical values, from the core registries
  std::string def;                  ///< the config's default, as the flag would spell it ("" = none)
  std::string cli_def;              ///< the gemm command's default where it differs from def ("" = def)
  std::string commands;             ///< the commands that read it: "gemm", "gemm quantize train", ...
  std::string presets;              ///< the presets / models that read it ("" = every one)
  std::string help;                 ///< one sentence with the source of its semantics

  /// The range as the refusals name it: "[1, 1048576]", "(0, 3.40282347e+38]"; "" for
  /// non-numeric types.
  std::string rangeText() const;
  /// The flag's default: cli_def when given, else def.
  const std::string& flagDefault() const { return cli_def.empty() ? def : cli_def; }
  /// Whether `command` ("gemm", "quantize", "train") reads it.
  bool usedBy(std::string_view command) const;
};

/// Every GEMM experiment parameter and the scaling parameters quantize / train share, in the
/// order `fp8lab-cli gemm --help` lists them.
const std::vector<ParamSpec>& paramSchema();

/// The help of an entry: its help text, then "Default X." (the flag's default when `flag`, else
/// the config's), "Range [lo, hi] <unit>." or "One of: a, b, c." and the commands / presets that read it.
std::string paramHelp(const ParamSpec& p, bool flag);

/// The table as Markdown (docs/gemm.md, "Parameters"): one row per entry with its config key
/// (a.KEY / b.KEY for operand keys, c.KEY, bias.KEY), flag, type, range or choices, default,
/// commands and presets that read it, and help.
std::string paramSchemaMarkdown();

/// The entry with this config key in this scope; nullptr when none.
const ParamSpec* findParam(std::string_view key, ParamScope scope = ParamScope::Top);
/// The entry with this command-line flag (without "--"); nullptr when none.
const ParamSpec* findParamByFlag(std::string_view flag);
/// The entry with this key in this scope; throws std::logic_error naming the key when the schema
/// has none (a caller asking for a parameter the table lacks is a programming error).
const ParamSpec& param(std::string_view key, ParamScope scope = ParamScope::Top);

/// Whether `v` lies in the range of the entry with this key (any scope, the first found).
bool inParamRange(std::string_view key, double v);

/// Checks one value typed for `p` (a flag's text): "" when it is valid, else a sentence naming
/// the flag and the range or the choices ("--fast-bits must be an integer in [2, 48]"). Choices
/// are checked by their own parsers (aliases allowed); this checks Integer / Number / Seed.
std::string checkParamText(const ParamSpec& p, std::string_view text);

/// Whether the accumulation model reads the parameter `key` (promotion_interval: split and fast;
/// fast_accum_bits, fast_accum_group, fast_accum_promotes: fast only). exact and fp32 have no
/// windows but the scale blocks' (core/gemm/gemm.h).
bool accumulationReads(Accumulation a, std::string_view key);

/// The rule between the accumulation model, an accumulation preset and the model's parameters,
/// written once for the config parser, the gemm command and the experiment panel.
///
/// `opt` holds the values given (or defaults); `given` the config keys explicitly given among
/// "accumulation", "promotion_interval", "fast_accum_bits", "fast_accum_group",
/// "fast_accum_promotes". With `preset` the preset's parameters are applied and every given key
/// must agree with them (accumulation_preset.h, accumulationPresetMismatch). Without a preset and
/// with `refuse_unread`, a given parameter the model does not read is refused: the fast model's
/// bits / group / promotes beside another model, a promotion interval beside exact or fp32 (no
/// windows but the scale blocks'). Finally checkFastAccum's limits apply.
/// Returns the problem's key ("accumulation_preset" or the parameter's) and sentence, or nullopt
/// with *resolved set to the options to run with.
struct ParamProblem {
  std::string key;
  std::string why;
};
std::optional<ParamProblem> accumulationProblem(const GemmOptions& opt, const std::set<std::string>& given,
                                                const AccumulationPreset* preset, bool refuse_unread,
                                                GemmOptions* resolved);

/// The accumulation preset named `name`; throws std::invalid_argument naming the known presets
/// when there is none (accumulationPreset() gives nullopt instead).
AccumulationPreset requireAccumulationPreset(std::string_view name);

} // namespace fp8lab

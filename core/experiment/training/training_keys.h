// FP8 Lab — reading a training config's keys by their training schema entry (training_schema.h):
// the range and default of a number, the choices of a name. The config parser
// (training_config.cpp) reads the shared run settings with them, and each model kind
// (model_mlp.cpp, model_transformer.cpp) its own members.
#pragma once

#include "experiment/config_reader.h"
#include "experiment/training/training_schema.h"
#include "json/json_document.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace fp8lab {

/// `s` in ASCII lower case (config names are read case-insensitively).
std::string lowerName(std::string s);

/// The key inside its object of a training schema path: "model.d_model" → "d_model".
std::string schemaLeaf(std::string_view key);

/// A training integer key of `o` (the last part of `key`, a training schema path) in the range of
/// its schema entry, with the entry's default unless `def` is given.
int64_t trainingInteger(ConfigReader& r, const Json& o, std::string_view key, std::string_view model,
                        const ConfigPath& at, std::optional<int64_t> def = std::nullopt);

/// A training number key of `o` with its schema entry's default.
double trainingNumber(ConfigReader& r, const Json& o, std::string_view key, std::string_view model,
                      const ConfigPath& at);

/// A training choice key of `o` (lowercased), its schema entry's default when absent; a value
/// `accepts` refuses (the core parser of the key, which also takes its aliases) fails naming the
/// schema's choices: "unknown <noun> 'v' (a, b)".
std::string trainingChoice(ConfigReader& r, const Json& o, std::string_view key, std::string_view model,
                           const ConfigPath& at, const char* noun,
                           const std::function<bool(const std::string&)>& accepts);

} // namespace fp8lab

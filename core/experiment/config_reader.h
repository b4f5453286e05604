// FP8 Lab — typed reading of experiment configs (JSON objects): every getter checks the JSON
// type and range, and the first problem becomes the error, worded as
//   "<key path>: <what is wrong> (line L, column C)"
// e.g. "runs[1].scaling.strategy: unknown strategy 'dalayed' (...) (line 12, column 7)". The line
// and column come from the JsonDocument the object was parsed from, when there is one.
#pragma once

#include "json/json_document.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

class Format;

/// Where a value sits: the path shown to people ("runs[1].scaling") and its JSON Pointer
/// ("/runs/1/scaling") to find its position.
struct ConfigPath {
  std::string path;
  std::string pointer;
  /// The member `key` of this object.
  ConfigPath member(std::string_view key) const;
  /// Element `i` of this array.
  ConfigPath element(size_t i) const;
  /// "path: " or "" at the top level, to prefix a message.
  std::string prefix() const { return path.empty() ? std::string() : path + ": "; }
};

/// Reads values out of config objects, keeping the first error. Not thread-safe.
class ConfigReader {
public:
  /// `doc` (may be null, not owned) gives line and column to the messages.
  explicit ConfigReader(const JsonDocument* doc = nullptr) : doc_(doc) {}

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  /// Records "<at.path>: <what> (line, column)" unless an error is already recorded.
  void fail(const ConfigPath& at, const std::string& what);

  /// Values of the object at `merged` may come from the objects `sources` (a run merged over the
  /// experiment's "defaults" and top-level keys): an error at a place under `merged` that has no
  /// position of its own in the document is reported at the first source holding that place,
  /// with the run it broke ("defaults.diagnostics.blok_stats: ... (line 4, column 20) (in
  /// runs[0])"); a source at the top level (empty path) is named by its key alone, as a key of a
  /// single-run config is ("train_limit: ... (line 1, column 22)"). Replaces an earlier call; an
  /// empty `sources` ends it.
  void setSources(const ConfigPath& merged, std::vector<ConfigPath> sources);

  /// A remark for the person who wrote the config (not an error), kept once.
  void note(const std::string& text);
  const std::vector<std::string>& notes() const { return notes_; }

  /// Every member of `o` must be one of `known`; else "<key>: unknown key (known: a, b, ...)".
  void checkKeys(const Json& o, const ConfigPath& at, std::initializer_list<std::string_view> known);
  void checkKeys(const Json& o, const ConfigPath& at, const std::vector<std::string>& known);

  static bool has(const Json& o, std::string_view key) { return o.is_object() && o.contains(key); }
  /// An integer (a JSON number with an integral value) in [lo, hi]; `def` when absent.
  int64_t integer(const Json& o, std::string_view key, const ConfigPath& at, int64_t def, int64_t lo, int64_t hi);
  /// A finite number; `def` when absent.
  double number(const Json& o, std::string_view key, const ConfigPath& at, double def);
  std::string string(const Json& o, std::string_view key, const ConfigPath& at, const std::string& def);
  bool boolean(const Json& o, std::string_view key, const ConfigPath& at, bool def);
  /// A seed: an integral number in [0, 2^53], or a string with a decimal or 0x-hex uint64.
  uint64_t seed(const Json& o, std::string_view key, const ConfigPath& at, uint64_t def);
  /// The member object, or nullptr when absent (no error) or not an object (error).
  const Json* object(const Json& o, std::string_view key, const ConfigPath& at);
  /// An element format of at most 8 bits by name (Format::byName: any case, aliases); `def` when
  /// absent. Notes the IEEE-style E4M3 (a frequent slip for E4M3FN).
  const Format* format(const Json& o, std::string_view key, const ConfigPath& at, const Format* def);

private:
  const JsonDocument* doc_;
  ConfigPath merged_;
  std::vector<ConfigPath> sources_;
  std::string error_;
  std::vector<std::string> notes_;
};

/// The JSON of a run's stored config, or nullopt with *error ("the stored config is not valid
/// JSON: ...").
std::optional<JsonDocument> parseStoredConfig(const std::string& text, std::string* error);

/// A config file's text parsed (JsonDocument::parse: no key given twice in one object) with an
/// object at the top. nullopt with *error naming the file `origin`: "config 'F': <duplicate key
/// message>; JSON readers disagree on which one counts, so remove one", "config 'F' is not valid
/// JSON: <what> at line L, column C" (1-based), "config 'F': expected a JSON object at the top".
std::optional<JsonDocument> parseConfigText(const std::string& text, const std::string& origin, std::string* error);

/// "a, b, c".
std::string joinNames(const std::vector<std::string>& names);

} // namespace fp8lab

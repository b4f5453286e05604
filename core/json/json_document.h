// FP8 Lab — JSON text as the experiment configs and file headers read it: nlohmann::json for the
// value, plus what a person fixing the file needs — the line and column of every object member,
// and a refusal of keys given twice in one object (RFC 8259 §4: names "SHOULD be unique", and
// readers disagree on which value wins, so `{"m": 64, "m": 4096}` is an error, not m = 4096).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fp8lab {

using Json = nlohmann::json;

/// A place in a text: 1-based line and column (columns count bytes).
struct TextPos {
  int line = 1, column = 1;
};

/// Why a JSON text was refused: not JSON (with where the parser stopped), or a key given twice
/// in one object (where the second one starts, at its opening quote).
struct JsonTextError : std::runtime_error {
  enum class Kind { Syntax, DuplicateKey };
  JsonTextError(Kind kind, std::string message, TextPos pos, std::string key = {})
      : std::runtime_error(std::move(message)), kind(kind), pos(pos), key(std::move(key)) {}
  Kind kind;
  TextPos pos;
  std::string key; ///< DuplicateKey: the key (unescaped)
};

/// A parsed JSON text with the position of each object member and array element, keyed by JSON
/// Pointer (RFC 6901: "/experiments/0/m").
class JsonDocument {
public:
  /// Parses `text` (UTF-8 JSON, RFC 8259). Throws JsonTextError for invalid JSON (message from
  /// nlohmann::json, position where it stopped) and for the first key that appears twice in one
  /// object (compared after unescaping: "m" and "\u006d" are the same key). `max_depth` bounds
  /// nesting (deeper input is a Syntax error, so hostile input cannot exhaust the stack).
  static JsonDocument parse(std::string_view text, int max_depth = 256);

  const Json& root() const { return root_; }
  Json& root() { return root_; }
  /// Where the member or element at `pointer` starts (a member: its key's opening quote; an
  /// element: its first byte); nullopt when the document has no position for it (values added
  /// after parsing).
  std::optional<TextPos> position(const std::string& pointer) const;

private:
  Json root_;
  std::map<std::string, TextPos> positions_;
};

/// The position of byte `offset` of `text`.
TextPos textPosition(std::string_view text, size_t offset);

/// `token` escaped as one JSON Pointer reference token ("~" → "~0", "/" → "~1").
std::string jsonPointerToken(std::string_view token);

} // namespace fp8lab

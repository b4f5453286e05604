#include "json/json_document.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <vector>

namespace fp8lab {

namespace {

/// Moves `p` (the position of byte `from`) on to the position of byte `to` of `text`.
void advance(TextPos& p, std::string_view text, size_t from, size_t to) {
  for (size_t i = from; i < to && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
}

} // namespace

TextPos textPosition(std::string_view text, size_t offset) {
  TextPos p;
  advance(p, text, 0, offset);
  return p;
}

std::string jsonPointerToken(std::string_view token) {
  std::string r;
  r.reserve(token.size());
  for (char c : token) {
    if (c == '~')
      r += "~0";
    else if (c == '/')
      r += "~1";
    else
      r += c;
  }
  return r;
}

namespace {

/// An input iterator over the text that publishes how far the parser has read, so the SAX
/// handler knows where each key ended.
class TrackingIterator {
public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIterator(const char* p, const char** cursor) : p_(p), cursor_(cursor) {}
  reference operator*() const { return *p_; }
  TrackingIterator& operator++() {
    ++p_;
    *cursor_ = p_;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator t = *this;
    ++*this;
    return t;
  }
  bool operator==(const TrackingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const TrackingIterator& o) const { return p_ != o.p_; }

private:
  const char* p_;
  const char** cursor_;
};

/// Records member positions and stops at the first duplicate key.
class PositionSax {
public:
  PositionSax(std::string_view text, const char** cursor, std::map<std::string, TextPos>* positions)
      : text_(text), cursor_(cursor), positions_(positions) {}

  std::optional<JsonTextError> duplicate;

  // A literal's last byte was the last read; a number's scan read one byte past it; a string's
  // closing quote was the last byte read.
  bool null() { return scalar(offset() - 4); }
  bool boolean(bool b) { return scalar(offset() - (b ? 4 : 5)); }
  bool number_integer(Json::number_integer_t) { return scalar(numberStart()); }
  bool number_unsigned(Json::number_unsigned_t) { return scalar(numberStart()); }
  bool number_float(Json::number_float_t, const Json::string_t&) { return scalar(numberStart()); }
  bool string(Json::string_t&) { return scalar(openingQuote(offset() - 1)); }
  bool binary(Json::binary_t&) { return element(); }
  bool start_object(std::size_t) {
    // '{' was the last byte read.
    if (!frames_.empty() && !frames_.back().object) {
      element();
      (*positions_)[pointer()] = positionOf(offset() - 1);
    }
    frames_.push_back({true, {}, {}, 0});
    return true;
  }
  bool end_object() {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    // '[' was the last byte read.
    if (!frames_.empty() && !frames_.back().object) scalar(offset() - 1);
    frames_.push_back({false, {}, {}, 0});
    return true;
  }
  bool end_array() {
    frames_.pop_back();
    return true;
  }
  bool key(Json::string_t& k) {
    Frame& f = frames_.back();
    // The closing quote was the last byte read; the key starts at the quote that opens it.
    const size_t open = openingQuote(offset() - 1);
    f.token = jsonPointerToken(k);
    const TextPos at = positionOf(open);
    if (!f.keys.insert(k).second) {
      duplicate.emplace(JsonTextError::Kind::DuplicateKey,
                        "key \"" + k + "\" appears twice in the same object (the second at line " +
                            std::to_string(at.line) + ", column " + std::to_string(at.column) + ")",
                        at, k);
      return false;
    }
    (*positions_)[pointer()] = at;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string token;
    int64_t next_index;
  };
  size_t offset() const { return static_cast<size_t>(*cursor_ - text_.data()); }
  /// The unescaped '"' that opens the string whose closing quote is at `close`.
  size_t openingQuote(size_t close) const {
    size_t open = close;
    while (open > 0) {
      --open;
      if (text_[open] != '"') continue;
      size_t backslashes = 0;
      while (open >= backslashes + 1 && text_[open - backslashes - 1] == '\\') ++backslashes;
      if (backslashes % 2 == 0) break;
    }
    return open;
  }
  /// The first byte of the number just read: the byte before the cursor ends the number (a
  /// separator, white space or bracket), and the number's bytes come before it.
  size_t numberStart() const {
    size_t i = offset() >= 2 ? offset() - 2 : 0;
    const auto numeric = [](char c) {
      return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
    };
    while (i > 0 && numeric(text_[i - 1])) --i;
    return i;
  }
  /// A scalar (or array) value starting at byte `start`: inside an array, its position is kept.
  bool scalar(size_t start) {
    if (!frames_.empty() && !frames_.back().object) {
      element();
      (*positions_)[pointer()] = positionOf(start);
    }
    return true;
  }
  /// textPosition(text_, offset), counted on from the last position asked for, so that a text
  /// with n values costs O(text) rather than O(n * text).
  TextPos positionOf(size_t offset) {
    if (offset < seen_offset_) {
      seen_offset_ = 0;
      seen_ = TextPos{};
    }
    advance(seen_, text_, seen_offset_, offset);
    seen_offset_ = std::min(offset, text_.size());
    return seen_;
  }
  /// A value starts: inside an array it is the next element.
  bool element() {
    if (!frames_.empty() && !frames_.back().object) frames_.back().token = std::to_string(frames_.back().next_index++);
    return true;
  }
  std::string pointer() const {
    std::string p;
    for (const Frame& f : frames_) p += "/" + f.token;
    return p;
  }

  std::string_view text_;
  const char** cursor_;
  std::map<std::string, TextPos>* positions_;
  std::vector<Frame> frames_;
  size_t seen_offset_ = 0;
  TextPos seen_;
};

int depthOf(std::string_view text) {
  int depth = 0, max = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max = std::max(max, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max;
}

} // namespace

JsonDocument JsonDocument::parse(std::string_view text, int max_depth) {
  if (depthOf(text) > max_depth)
    throw JsonTextError(JsonTextError::Kind::Syntax,
                        "nested deeper than " + std::to_string(max_depth) + " levels of objects and arrays", TextPos{});
  JsonDocument doc;
  try {
    doc.root_ = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    // e.byte is 1-based: the byte at which the parser stopped.
    const size_t at = e.byte > 0 ? e.byte - 1 : 0;
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." → the reason.
    if (const size_t c = what.find(": "); c != std::string::npos) what = what.substr(c + 2);
    throw JsonTextError(JsonTextError::Kind::Syntax, what, textPosition(text, at));
  }
  const char* cursor = text.data();
  PositionSax sax(text, &cursor, &doc.positions_);
  Json::sax_parse(TrackingIterator(text.data(), &cursor), TrackingIterator(text.data() + text.size(), &cursor), &sax);
  if (sax.duplicate) throw *sax.duplicate;
  return doc;
}

std::optional<TextPos> JsonDocument::position(const std::string& pointer) const {
  const auto it = positions_.find(pointer);
  if (it == positions_.end()) return std::nullopt;
  return it->second;
}

} // namespace fp8lab

#include "experiment/config_reader.h"

#include "formats/format.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace fp8lab {

ConfigPath ConfigPath::member(std::string_view key) const {
  ConfigPath p;
  p.path = path.empty() ? std::string(key) : path + "." + std::string(key);
  p.pointer = pointer + "/" + jsonPointerToken(key);
  return p;
}

ConfigPath ConfigPath::element(size_t i) const {
  ConfigPath p;
  p.path = path + "[" + std::to_string(i) + "]";
  p.pointer = pointer + "/" + std::to_string(i);
  return p;
}

std::string joinNames(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

void ConfigReader::setSources(const ConfigPath& merged, std::vector<ConfigPath> sources) {
  merged_ = merged;
  sources_ = std::move(sources);
}

void ConfigReader::fail(const ConfigPath& at, const std::string& what) {
  if (!error_.empty()) return;
  auto where = [](const TextPos& p) {
    return " (line " + std::to_string(p.line) + ", column " + std::to_string(p.column) + ")";
  };
  if (doc_) {
    if (const auto pos = doc_->position(at.pointer)) {
      error_ = at.prefix() + what + where(*pos);
      return;
    }
    const bool under = !sources_.empty() && at.pointer.size() > merged_.pointer.size() &&
                       at.pointer.compare(0, merged_.pointer.size(), merged_.pointer) == 0 &&
                       at.pointer[merged_.pointer.size()] == '/' &&
                       at.path.compare(0, merged_.path.size(), merged_.path) == 0;
    if (under) {
      const std::string rest_pointer = at.pointer.substr(merged_.pointer.size());
      std::string rest_path = at.path.substr(merged_.path.size());
      for (const ConfigPath& src : sources_)
        if (const auto pos = doc_->position(src.pointer + rest_pointer)) {
          ConfigPath moved;
          moved.pointer = src.pointer + rest_pointer;
          moved.path = src.path.empty() && !rest_path.empty() && rest_path[0] == '.' ? rest_path.substr(1)
                                                                                     : src.path + rest_path;
          // A top-level key is every run's and is named by its path alone; a value of another
          // source (the "defaults" object) also names the run it broke.
          error_ = moved.prefix() + what + where(*pos) + (src.path.empty() ? "" : " (in " + merged_.path + ")");
          return;
        }
    }
  }
  error_ = at.prefix() + what;
}

void ConfigReader::note(const std::string& text) {
  for (const auto& n : notes_)
    if (n == text) return;
  notes_.push_back(text);
}

void ConfigReader::checkKeys(const Json& o, const ConfigPath& at, std::initializer_list<std::string_view> known) {
  checkKeys(o, at, std::vector<std::string>(known.begin(), known.end()));
}

void ConfigReader::checkKeys(const Json& o, const ConfigPath& at, const std::vector<std::string>& known) {
  if (!o.is_object()) return;
  for (auto it = o.begin(); it != o.end(); ++it) {
    bool found = false;
    for (const auto& k : known) found = found || k == it.key();
    if (!found) fail(at.member(it.key()), "unknown key (known: " + joinNames(known) + ")");
  }
}

int64_t ConfigReader::integer(const Json& o, std::string_view key, const ConfigPath& at, int64_t def, int64_t lo,
                              int64_t hi) {
  if (!has(o, key)) return def;
  const Json& v = o.at(key);
  bool good = false;
  int64_t x = 0;
  if (v.is_number_integer()) {
    if (v.is_number_unsigned()) {
      const auto u = v.get<uint64_t>();
      good = u <= static_cast<uint64_t>(hi) && static_cast<int64_t>(u) >= lo;
      x = static_cast<int64_t>(u);
    } else {
      x = v.get<int64_t>();
      good = x >= lo && x <= hi;
    }
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    good = std::isfinite(d) && d == std::floor(d) && d >= static_cast<double>(lo) && d <= static_cast<double>(hi);
    if (good) x = static_cast<int64_t>(d);
  }
  if (!good) {
    fail(at.member(key), "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return def;
  }
  return x;
}

double ConfigReader::number(const Json& o, std::string_view key, const ConfigPath& at, double def) {
  if (!has(o, key)) return def;
  const Json& v = o.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>())) {
    fail(at.member(key), "expected a finite number");
    return def;
  }
  return v.get<double>();
}

std::string ConfigReader::string(const Json& o, std::string_view key, const ConfigPath& at, const std::string& def) {
  if (!has(o, key)) return def;
  const Json& v = o.at(key);
  if (!v.is_string()) {
    fail(at.member(key), "expected a string");
    return def;
  }
  return v.get<std::string>();
}

bool ConfigReader::boolean(const Json& o, std::string_view key, const ConfigPath& at, bool def) {
  if (!has(o, key)) return def;
  const Json& v = o.at(key);
  if (!v.is_boolean()) {
    fail(at.member(key), "expected true or false");
    return def;
  }
  return v.get<bool>();
}

uint64_t ConfigReader::seed(const Json& o, std::string_view key, const ConfigPath& at, uint64_t def) {
  if (!has(o, key)) return def;
  const Json& v = o.at(key);
  constexpr double kMaxExact = 9007199254740992.0; // 2^53: larger seeds lose bits in some JSON readers
  if (v.is_number()) {
    bool good = false;
    uint64_t x = 0;
    if (v.is_number_unsigned()) {
      x = v.get<uint64_t>();
      good = x <= (uint64_t(1) << 53);
    } else if (v.is_number_float()) {
      const double d = v.get<double>();
      good = d >= 0 && d <= kMaxExact && d == std::floor(d);
      if (good) x = static_cast<uint64_t>(d);
    }
    if (good) return x;
    fail(at.member(key), "expected an integer in [0, 2^53] (give larger seeds as a string)");
    return def;
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    const std::string digits = hex ? s.substr(2) : s;
    bool good = !digits.empty() && digits.size() <= (hex ? 16u : 20u);
    for (char c : digits)
      good = good && (hex ? std::isxdigit(static_cast<unsigned char>(c)) != 0 : c >= '0' && c <= '9');
    if (good) {
      errno = 0;
      char* end = nullptr;
      const unsigned long long x = std::strtoull(digits.c_str(), &end, hex ? 16 : 10);
      if (errno == 0 && end && *end == '\0') return x;
    }
  }
  fail(at.member(key), "expected an unsigned 64-bit integer (number or string)");
  return def;
}

const Json* ConfigReader::object(const Json& o, std::string_view key, const ConfigPath& at) {
  if (!has(o, key)) return nullptr;
  const Json& v = o.at(key);
  if (!v.is_object()) {
    fail(at.member(key), "expected an object");
    return nullptr;
  }
  return &v;
}

const Format* ConfigReader::format(const Json& o, std::string_view key, const ConfigPath& at, const Format* def) {
  if (!has(o, key)) return def;
  const std::string name = string(o, key, at, {});
  if (!ok()) return def;
  const Format* f = Format::byName(name);
  if (!f || f->bits() > 8) {
    std::vector<std::string> names;
    for (const Format* x : Format::all()) names.push_back(x->name());
    fail(at.member(key), "'" + name + "' is unknown or wider than 8 bits (known: " + joinNames(names) + ")");
    return def;
  }
  if (f == &Format::E4M3())
    note("E4M3 is the IEEE-style E4M3 (ml_dtypes float8_e4m3: max 240, with ±Inf), not OCP E4M3FN (max 448, no "
         "Inf, as in CUDA and FP8 training); use E4M3FN for that");
  return f;
}

std::optional<JsonDocument> parseStoredConfig(const std::string& text, std::string* error) {
  try {
    return JsonDocument::parse(text);
  } catch (const JsonTextError& e) {
    if (error) *error = std::string("the stored config is not valid JSON: ") + e.what();
  }
  return std::nullopt;
}

std::optional<JsonDocument> parseConfigText(const std::string& text, const std::string& origin, std::string* error) {
  try {
    JsonDocument doc = JsonDocument::parse(text);
    if (doc.root().is_object()) return doc;
    *error = "config '" + origin + "': expected a JSON object at the top";
  } catch (const JsonTextError& e) {
    if (e.kind == JsonTextError::Kind::DuplicateKey)
      *error = "config '" + origin + "': " + e.what() + "; JSON readers disagree on which one counts, so remove one";
    else
      *error = "config '" + origin + "' is not valid JSON: " + e.what() + " at line " + std::to_string(e.pos.line) +
               ", column " + std::to_string(e.pos.column);
  }
  return std::nullopt;
}

} // namespace fp8lab

// FP8 Lab — reading FP8 checkpoints in safetensors (fp8_checkpoint.h, docs/checkpoints.md): the
// listing with the scale each weight is read with, the import of one weight, and re-quantizing a
// stored weight. Writing is fp8_checkpoint_write.cpp.
#include "io/fp8_checkpoint.h"

#include "formats/format.h"
#include "io/import_detail.h"
#include "json/json_document.h"
#include "metrics/error_metrics.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unistd.h>

namespace fp8lab {

namespace fs = std::filesystem;
using C = Issue::Code;
using import_detail::shapeText;

namespace {

const Format* formatOfDtype(const std::string& dtype) {
  if (dtype == "F8_E4M3") return &Format::E4M3FN();
  if (dtype == "F8_E5M2") return &Format::E5M2();
  return nullptr;
}

/// Whether `dtype` is an 8-bit float dtype of safetensors or a dialect ("F8_E4M3FNUZ",
/// "F8_E8M0", ...), read or not.
bool isF8Dtype(const std::string& dtype) {
  return dtype.compare(0, 3, "F8_") == 0;
}

/// Why a weight of `dtype` is not read: "dtype F8_E4M3FNUZ is not read (F8_E4M3, F8_E5M2 are)" for
/// another 8-bit float, "dtype U8 is not an FP8 dtype (F8_E4M3 or F8_E5M2)" otherwise.
std::string dtypeProblem(const std::string& dtype) {
  return isF8Dtype(dtype) ? "dtype " + dtype + " is not read (F8_E4M3, F8_E5M2 are)"
                          : "dtype " + dtype + " is not an FP8 dtype (F8_E4M3 or F8_E5M2)";
}

/// Why a weight of shape `s` is not read; "" when it is a non-empty [rows, cols].
std::string weightShapeProblem(const std::vector<int64_t>& s);

/// Why `bytes` of data do not hold a tensor of `dtype` and shape `s` (readSafetensorsBytes' words:
/// "shape [300, 200] F8_E4M3 does not fit data_offsets spanning 10 bytes"); "" when they do.
std::string spanProblem(const std::string& dtype, const std::vector<int64_t>& s, int64_t bytes);

bool isScaleDtype(const std::string& d) {
  return d == "F32" || d == "BF16" || d == "F16";
}

int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// Whether `scale_name` is named as DeepSeek-V3's block grid, "<X>_scale_inv".
bool namedAsBlockGrid(const std::string& scale_name) {
  static const std::string suffix = "_scale_inv";
  return scale_name.size() > suffix.size() &&
         scale_name.compare(scale_name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The layout a scale of shape `s` gives a weight [rows, cols]; false when none fits. A scale named
/// as a block grid (`block_grid_name`: "<X>_scale_inv") that has the grid's shape is the Block
/// layout, also when that grid is [1, 1] (a weight within one block). Otherwise the layouts are
/// checked in this order, so a shape that fits two of them (a [1, 1] `weight_scale`) is read as the
/// simpler one.
bool layoutOf(const std::vector<int64_t>& s, int64_t rows, int64_t cols, int64_t block, bool block_grid_name,
              Fp8ScaleLayout* out) {
  if (block_grid_name && s.size() == 2 && s[0] == ceilDiv(rows, block) && s[1] == ceilDiv(cols, block)) {
    *out = Fp8ScaleLayout::Block;
    return true;
  }
  const bool one = s.empty() || (s.size() == 1 && s[0] == 1) || (s.size() == 2 && s[0] == 1 && s[1] == 1);
  if (one) {
    *out = Fp8ScaleLayout::PerTensor;
    return true;
  }
  if ((s.size() == 2 && s[0] == rows && s[1] == 1) || (s.size() == 1 && s[0] == rows)) {
    *out = Fp8ScaleLayout::PerChannel;
    return true;
  }
  if (s.size() == 2 && s[0] == ceilDiv(rows, block) && s[1] == ceilDiv(cols, block)) {
    *out = Fp8ScaleLayout::Block;
    return true;
  }
  return false;
}

/// The shapes the rule allows, for messages.
std::string allowedShapes(int64_t rows, int64_t cols, int64_t block) {
  const std::string b = std::to_string(block);
  return "[] or [1] (per tensor), [" + std::to_string(rows) + ", 1] (per output channel) or [" +
         std::to_string(ceilDiv(rows, block)) + ", " + std::to_string(ceilDiv(cols, block)) + "] (" + b + "×" + b +
         " blocks: [ceil(" + std::to_string(rows) + "/" + b + "), ceil(" + std::to_string(cols) + "/" + b + ")])";
}

/// The scale's name by the convention, among `names`; "" when neither exists.
std::string conventionalScale(const std::string& tensor, const std::set<std::string>& names) {
  for (const char* suffix : {"_scale_inv", "_scale"})
    if (names.count(tensor + suffix)) return tensor + suffix;
  return {};
}

std::vector<float> widenScales(const SafetensorsBytes& s) {
  const auto& b = s.bytes;
  const std::string& d = s.entry.dtype;
  const size_t eb = d == "F32" ? 4 : 2;
  std::vector<float> out(b.size() / eb);
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t v = 0;
    for (size_t k = 0; k < eb; ++k) v |= uint32_t(b[i * eb + k]) << (8 * k);
    if (d == "F32")
      out[i] = std::bit_cast<float>(v);
    else if (d == "BF16")
      out[i] = std::bit_cast<float>(v << 16); // exact widening
    else
      out[i] = static_cast<float>(Format::FP16().decode(v)); // exact in float32
  }
  return out;
}

std::string weightShapeProblem(const std::vector<int64_t>& s) {
  if (s.size() == 2 && s[0] >= 1 && s[1] >= 1) return {};
  return "shape " + shapeText(s) + ": an FP8 weight is a non-empty 2-D [rows, cols]";
}

std::string spanProblem(const std::string& dtype, const std::vector<int64_t>& s, int64_t bytes) {
  const int eb = safetensorsDtypeBytes(dtype);
  if (eb == 0 || bytes < 0) return {}; // not a size this reader knows; readSafetensorsBytes reports it
  int64_t n = eb;
  for (int64_t d : s) {
    if (d < 0 || (d > 0 && n > INT64_MAX / d)) return "shape " + shapeText(s) + " " + dtype + " overflows";
    n *= d;
  }
  if (n == bytes) return {};
  return "shape " + shapeText(s) + " " + dtype + " does not fit data_offsets spanning " + std::to_string(bytes) +
         " bytes";
}

/// Which scale element index `i` of a `layout` grid with `grid_cols` columns is, for messages:
/// "block (1, 0)", "row 5", "the tensor's scale".
std::string scaleElementText(Fp8ScaleLayout layout, size_t i, int64_t grid_cols) {
  switch (layout) {
  case Fp8ScaleLayout::PerTensor:
    return "the tensor's scale";
  case Fp8ScaleLayout::PerChannel:
    return "row " + std::to_string(i);
  case Fp8ScaleLayout::Block:
    break;
  }
  const auto c = static_cast<size_t>(grid_cols);
  return "block (" + std::to_string(i / c) + ", " + std::to_string(i % c) + ")";
}

/// Shortest decimal text that reads back as `v` ("-0.5", "0", "-0").
std::string floatText(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// nlohmann::json's message without its "[json.exception.parse_error.101] " prefix: "parse error
/// at line 1, column 38: syntax error while parsing object key - unexpected '}'; …".
std::string jsonErrorText(const std::string& what) {
  if (what.compare(0, 16, "[json.exception.") == 0)
    if (const size_t end = what.find("] "); end != std::string::npos) return what.substr(end + 2);
  return what;
}

} // namespace

namespace {

/// One tensor of a checkpoint and the file that holds it.
struct Located {
  TensorEntry entry;
  std::string file;
  int64_t bytes = -1; ///< end − begin of its data_offsets; −1 = not known
};

/// A tensor that a shard index maps to a shard whose header lacks it.
struct Misplaced {
  std::string name;     ///< the tensor
  std::string shard;    ///< the shard file the index names, as the index spells it
  std::string found_in; ///< another shard of the index whose header holds the name; "" = none
  TensorEntry entry;    ///< its entry in `found_in` (meaningful only when found_in is set)
};

/// What a checkpoint holds: every tensor that is where it is said to be, and (shard index only)
/// the tensors the index misplaces.
struct Checkpoint {
  std::vector<Located> tensors; ///< in name order
  std::vector<Misplaced> misplaced;
};

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Reads a whole (small) file into `text`; false with `why` set when it cannot be opened.
bool readText(const std::string& path, std::string* text, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = std::strerror(errno);
    return false;
  }
  text->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

/// The largest file taken for a JSON shard index when its name does not say so (the limit of a
/// safetensors header; real indexes are well under a megabyte).
constexpr uintmax_t kMaxIndexBytes = 100u << 20;

/// Whether a file not named `*.index.json` is JSON text: its first 8 bytes hold no NUL (a
/// safetensors file starts with its header length as 8 little-endian bytes, whose top byte is 0
/// for any length a file can have) and its first non-space byte is '{'. Such a file cannot be
/// safetensors; `text` then holds it whole. False (nothing read) otherwise, and for a file that
/// cannot be opened or is larger than kMaxIndexBytes: listSafetensors reports on those.
bool looksLikeJson(const std::string& path, std::string* text) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxIndexBytes) return false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  char head[8] = {};
  in.read(head, sizeof head);
  const std::string_view h(head, static_cast<size_t>(in.gcount()));
  if (h.find('\0') != std::string_view::npos) return false;
  if (const size_t first = h.find_first_not_of(" \t\r\n"); first != std::string_view::npos && h[first] != '{')
    return false;
  in.clear();
  in.seekg(0);
  text->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const size_t first = text->find_first_not_of(" \t\r\n");
  return first != std::string::npos && (*text)[first] == '{';
}

/// The byte count of each tensor's data_offsets [begin, end] in the header of safetensors file
/// `file` (which listSafetensors has accepted); empty when the header cannot be read again.
std::map<std::string, int64_t> dataSpans(const std::string& file) {
  std::map<std::string, int64_t> spans;
  std::ifstream in(file, std::ios::binary);
  unsigned char len[8] = {};
  if (!in.read(reinterpret_cast<char*>(len), sizeof len)) return spans;
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= uint64_t(len[k]) << (8 * k);
  if (n > kMaxIndexBytes) return spans;
  std::string header(static_cast<size_t>(n), '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n))) return spans;
  try {
    const Json doc = Json::parse(header);
    for (const auto& [name, e] : doc.items()) {
      if (name == "__metadata__" || !e.is_object() || !e.contains("data_offsets")) continue;
      const Json& o = e["data_offsets"];
      if (o.is_array() && o.size() == 2 && o[0].is_number_integer() && o[1].is_number_integer())
        spans[name] = o[1].get<int64_t>() - o[0].get<int64_t>();
    }
  } catch (const std::exception&) {
    spans.clear();
  }
  return spans;
}

/// Every tensor of a checkpoint: one safetensors file, or the shards of a Hugging Face index
/// ({"weight_map": {tensor: shard file}}, shard files relative to the index's directory). A file
/// is an index when it is named `*.index.json` (`model.safetensors.index.json`) or, whatever its
/// name, when it is JSON text (looksLikeJson) with a top-level "weight_map" object. A tensor the
/// index puts in a shard that lacks it goes into `misplaced`, with the shard that holds it if
/// another shard of the index does; an error in a shard (a missing file, a bad header) names the
/// index and the tensors it maps there.
Result<Checkpoint> listCheckpoint(const std::string& path) {
  Result<Checkpoint> r;
  std::string text;
  const bool named_index = endsWith(path, ".index.json");
  if (named_index) {
    std::string why;
    if (!readText(path, &text, &why)) {
      r.add(C::NotFound, path, "cannot open the shard index: " + why);
      return r;
    }
  } else if (!looksLikeJson(path, &text)) {
    auto list = listSafetensors(path);
    r.merge(list);
    if (!list.ok()) return r;
    const auto spans = dataSpans(path);
    for (auto& e : list.value) {
      const auto it = spans.find(e.name);
      r.value.tensors.push_back({std::move(e), path, it == spans.end() ? int64_t{-1} : it->second});
    }
    return r;
  }
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const std::exception& e) {
    r.add(C::MalformedInput, path,
          named_index ? "the shard index is not JSON: " + jsonErrorText(e.what())
                      : "starts like JSON text, not like a safetensors file (an 8-byte header length), but is not "
                        "JSON: " +
                            jsonErrorText(e.what()));
    return r;
  }
  if (!doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object()) {
    r.add(C::MalformedInput, path,
          named_index ? "the shard index has no \"weight_map\" object {tensor: file}"
                      : "a JSON file, not a safetensors file; as a shard index it lacks the \"weight_map\" "
                        "object {tensor: file}");
    return r;
  }
  const fs::path dir = fs::path(path).parent_path();
  const std::string index_name = fs::path(path).filename().string();
  std::map<std::string, std::vector<std::string>> by_shard; // shard (as named) → tensors the index puts there
  for (const auto& [name, file] : doc["weight_map"].items()) {
    if (!file.is_string()) {
      r.add(C::MalformedInput, path, "weight_map[\"" + name + "\"] is not a file name");
      return r;
    }
    const std::string f = file.get<std::string>();
    if (f.empty() || fs::path(f).is_absolute() || f.find("..") != std::string::npos) {
      r.add(C::MalformedInput, path,
            "weight_map[\"" + name + "\"] = \"" + f + "\": a shard is a file beside the index");
      return r;
    }
    by_shard[f].push_back(name);
  }
  std::map<std::string, std::map<std::string, TensorEntry>> headers; // shard (as named) → its tensors
  std::map<std::string, std::map<std::string, int64_t>> spans;       // shard (as named) → data bytes
  for (auto& [shard, names] : by_shard) {
    std::sort(names.begin(), names.end());
    const std::string file = (dir / shard).string();
    auto list = listSafetensors(file);
    if (!list.ok()) {
      // Name the index and what it maps to the shard beside the shard's own error.
      const std::string named_by = " (named by " + index_name + " for " + std::to_string(names.size()) +
                                   (names.size() == 1 ? " tensor, '" : " tensors, first '") + names.front() + "')";
      for (Issue i : list.issues) {
        if (i.where == file) i.where += named_by;
        r.issues.push_back(std::move(i));
      }
      return r;
    }
    r.merge(list);
    auto& here = headers[shard];
    for (auto& e : list.value) here[e.name] = std::move(e);
    spans[shard] = dataSpans(file);
  }
  for (const auto& [shard, names] : by_shard) {
    const auto& here = headers.at(shard);
    for (const std::string& n : names) {
      if (const auto it = here.find(n); it != here.end()) {
        const auto& sp = spans.at(shard);
        const auto b = sp.find(n);
        r.value.tensors.push_back({it->second, (dir / shard).string(), b == sp.end() ? int64_t{-1} : b->second});
        continue;
      }
      Misplaced m{n, shard, {}, {}};
      for (const auto& [other, tensors] : headers)
        if (const auto it = tensors.find(n); other != shard && it != tensors.end()) {
          m.found_in = other;
          m.entry = it->second;
          break;
        }
      r.value.misplaced.push_back(std::move(m));
    }
  }
  std::sort(r.value.tensors.begin(), r.value.tensors.end(),
            [](const Located& a, const Located& b) { return a.entry.name < b.entry.name; });
  std::sort(r.value.misplaced.begin(), r.value.misplaced.end(),
            [](const Misplaced& a, const Misplaced& b) { return a.name < b.name; });
  return r;
}

const Located* findLocated(const std::vector<Located>& v, const std::string& name) {
  for (const Located& l : v)
    if (l.entry.name == name) return &l;
  return nullptr;
}

const Misplaced* findMisplaced(const Checkpoint& c, const std::string& name) {
  for (const Misplaced& m : c.misplaced)
    if (m.name == name) return &m;
  return nullptr;
}

/// What is wrong with a misplaced tensor, for messages: "the shard index puts tensor 'T' in S,
/// which lacks it; S2 holds a tensor of that name, which is not read in its place" (or "; no shard
/// of the index holds it").
std::string misplacedText(const Misplaced& m) {
  return "the shard index puts tensor '" + m.name + "' in " + m.shard + ", which lacks it; " +
         (m.found_in.empty() ? std::string("no shard of the index holds it")
                             : m.found_in + " holds a tensor of that name, which is not read in its place");
}

/// The names of every tensor of `c`, misplaced ones included.
std::set<std::string> allNames(const Checkpoint& c) {
  std::set<std::string> names;
  for (const auto& l : c.tensors) names.insert(l.entry.name);
  for (const auto& m : c.misplaced) names.insert(m.name);
  return names;
}

} // namespace

std::string toString(Fp8ScaleLayout l, int64_t block) {
  switch (l) {
  case Fp8ScaleLayout::PerTensor:
    return "per_tensor";
  case Fp8ScaleLayout::PerChannel:
    return "per_channel";
  case Fp8ScaleLayout::Block:
    break;
  }
  return "block" + std::to_string(block) + "x" + std::to_string(block);
}

Result<std::vector<Fp8CheckpointEntry>> listFp8Checkpoint(const std::string& path, int64_t block) {
  Result<std::vector<Fp8CheckpointEntry>> r;
  auto list = listCheckpoint(path);
  r.merge(list);
  if (!list.ok()) return r;
  const Checkpoint& ck = list.value;
  const std::set<std::string> names = allNames(ck);
  for (const auto& l : ck.tensors) {
    const TensorEntry& e = l.entry;
    if (!formatOfDtype(e.dtype)) {
      // Another 8-bit float is listed as not read, unless it is the scale of a weight (MX's E8M0).
      const bool is_scale = (endsWith(e.name, "_scale") && names.count(e.name.substr(0, e.name.size() - 6))) ||
                            (endsWith(e.name, "_scale_inv") && names.count(e.name.substr(0, e.name.size() - 10)));
      if (!isF8Dtype(e.dtype) || is_scale) continue;
    }
    Fp8CheckpointEntry c;
    c.name = e.name;
    c.dtype = e.dtype;
    c.shape = e.shape;
    c.scale_name = conventionalScale(e.name, names);
    const Located* s = c.scale_name.empty() ? nullptr : findLocated(ck.tensors, c.scale_name);
    if (s) {
      c.scale_dtype = s->entry.dtype;
      c.scale_shape = s->entry.shape;
    }
    Fp8ScaleLayout layout;
    if (!formatOfDtype(e.dtype)) {
      c.problem = dtypeProblem(e.dtype);
    } else if (const std::string why = weightShapeProblem(e.shape); !why.empty()) {
      c.problem = why;
    } else if (const std::string span = spanProblem(e.dtype, e.shape, l.bytes); !span.empty()) {
      c.problem = span;
    } else if (c.scale_name.empty()) {
      c.problem = "no scale: neither " + e.name + "_scale_inv nor " + e.name + "_scale";
    } else if (const Misplaced* m = findMisplaced(ck, c.scale_name)) {
      c.problem = "scale " + c.scale_name + ": " + misplacedText(*m);
    } else if (!isScaleDtype(c.scale_dtype)) {
      c.problem = "scale dtype " + c.scale_dtype + " (expected F32, BF16 or F16)";
    } else if (const std::string sspan = spanProblem(c.scale_dtype, c.scale_shape, s ? s->bytes : -1); !sspan.empty()) {
      c.problem = "scale " + c.scale_name + ": " + sspan;
    } else if (!layoutOf(c.scale_shape, e.shape[0], e.shape[1], block, namedAsBlockGrid(c.scale_name), &layout)) {
      c.problem = "scale " + shapeText(c.scale_shape) + " fits no layout of " + shapeText(e.shape) + ": " +
                  allowedShapes(e.shape[0], e.shape[1], block);
    } else {
      c.layout = toString(layout, block);
    }
    r.value.push_back(std::move(c));
  }
  for (const Misplaced& m : ck.misplaced) {
    r.add(C::MalformedInput, path + ":" + m.name, misplacedText(m), Severity::Warning);
    if (m.found_in.empty() || !formatOfDtype(m.entry.dtype)) continue;
    Fp8CheckpointEntry c;
    c.name = m.name;
    c.dtype = m.entry.dtype;
    c.shape = m.entry.shape;
    c.scale_name = conventionalScale(m.name, names);
    c.problem = misplacedText(m);
    r.value.push_back(std::move(c));
  }
  std::sort(r.value.begin(), r.value.end(),
            [](const Fp8CheckpointEntry& a, const Fp8CheckpointEntry& b) { return a.name < b.name; });
  return r;
}

Result<const Format*> fp8CheckpointFormat(const std::string& path, const std::string& tensor_name) {
  Result<const Format*> r;
  auto list = listCheckpoint(path);
  r.merge(list);
  if (!list.ok()) return r;
  for (const auto& l : list.value.tensors)
    if (const TensorEntry& e = l.entry; e.name == tensor_name) {
      r.value = formatOfDtype(e.dtype);
      if (!r.value) r.add(C::MalformedInput, path + ":" + tensor_name, dtypeProblem(e.dtype));
      return r;
    }
  if (const Misplaced* m = findMisplaced(list.value, tensor_name))
    r.add(C::MalformedInput, path + ":" + tensor_name, misplacedText(*m));
  else
    r.add(C::NotFound, path + ":" + tensor_name, "no tensor of that name");
  return r;
}

Result<QuantizedTensor> importFp8Checkpoint(const std::string& path, const std::string& tensor_name,
                                            const Fp8ImportOptions& opt) {
  Result<QuantizedTensor> r;
  const std::string where = path + ":" + tensor_name;
  if (opt.block < 1) {
    r.add(C::InvalidArgument, where, "block must be ≥ 1");
    return r;
  }
  auto list = listCheckpoint(path);
  r.merge(list);
  if (!list.ok()) return r;
  const Checkpoint& ck = list.value;
  const std::set<std::string> names = allNames(ck);
  if (!names.count(tensor_name)) {
    std::string fp8;
    for (const auto& l : ck.tensors)
      if (formatOfDtype(l.entry.dtype)) fp8 += (fp8.empty() ? "" : ", ") + l.entry.name;
    r.add(C::NotFound, where, "no tensor of that name; the file's FP8 tensors: " + (fp8.empty() ? "none" : fp8));
    return r;
  }
  if (const Misplaced* m = findMisplaced(ck, tensor_name)) {
    r.add(C::MalformedInput, where, misplacedText(*m));
    return r;
  }
  const Located* located = findLocated(ck.tensors, tensor_name);
  const Format* f = formatOfDtype(located->entry.dtype);
  if (!f) {
    r.add(C::MalformedInput, where, dtypeProblem(located->entry.dtype));
    return r;
  }
  auto w = readSafetensorsBytes(located->file, tensor_name);
  r.merge(w);
  if (!w.ok()) return r;
  const auto& shape = w.value.entry.shape;
  if (const std::string why = weightShapeProblem(shape); !why.empty()) {
    r.add(C::WrongShape, where, why);
    return r;
  }
  const int64_t rows = shape[0], cols = shape[1];
  std::string scale_name = opt.scale_name;
  if (scale_name.empty()) {
    scale_name = conventionalScale(tensor_name, names);
    if (scale_name.empty()) {
      r.add(C::NotFound, where,
            "no scale: neither '" + tensor_name + "_scale_inv' (DeepSeek-V3 blocks) nor '" + tensor_name +
                "_scale' (per tensor / per channel) is in the file; name it explicitly if it is stored otherwise");
      return r;
    }
  } else if (!names.count(scale_name)) {
    r.add(C::NotFound, path + ":" + scale_name, "no scale tensor of that name");
    return r;
  }
  if (const Misplaced* m = findMisplaced(ck, scale_name)) {
    r.add(C::MalformedInput, path + ":" + scale_name, "the scale of '" + tensor_name + "': " + misplacedText(*m));
    return r;
  }
  auto s = readSafetensorsBytes(findLocated(ck.tensors, scale_name)->file, scale_name);
  r.merge(s);
  if (!s.ok()) return r;
  const std::string swhere = path + ":" + scale_name;
  if (!isScaleDtype(s.value.entry.dtype)) {
    r.add(C::MalformedInput, swhere, "scale dtype " + s.value.entry.dtype + " is not F32, BF16 or F16");
    return r;
  }
  Fp8ScaleLayout layout;
  if (!layoutOf(s.value.entry.shape, rows, cols, opt.block, namedAsBlockGrid(scale_name), &layout)) {
    r.add(C::WrongShape, swhere,
          "scale shape " + shapeText(s.value.entry.shape) + " does not match weight '" + tensor_name + "' " +
              shapeText(shape) + ": the scale must be " + allowedShapes(rows, cols, opt.block));
    return r;
  }
  std::vector<float> scales = widenScales(s.value);
  const int64_t grid_cols = layout == Fp8ScaleLayout::Block ? ceilDiv(cols, opt.block) : 1;
  for (size_t i = 0; i < scales.size(); ++i) {
    const std::string at = "scale index " + std::to_string(i) + " (" + scaleElementText(layout, i, grid_cols) + ")";
    if (!std::isfinite(scales[i])) {
      r.add(C::MalformedInput, swhere, at + " is not finite");
      return r;
    }
    // x = decode(code) · scale with scale = amax / max (DeepSeek-V3, torchao) or 1 / s (TE) is
    // positive by construction; a scale ≤ 0 flips or erases the weight.
    if (!(scales[i] > 0)) {
      r.add(C::MalformedInput, swhere,
            at + " is " + floatText(scales[i]) +
                ": a dequant scale is > 0 (amax / max, as every FP8 recipe stores it)");
      return r;
    }
  }
  // NaN codes are values of the format (E4M3FN: 0x7F, 0xFF; E5M2: exponent 11111 with a non-zero
  // mantissa), read as they are; the first is named so that it can be found.
  bool is_nan[256];
  for (uint32_t c = 0; c < 256; ++c) is_nan[c] = std::isnan(f->decode(c));
  int64_t nan_codes = 0, first_nan = -1;
  for (size_t i = 0; i < w.value.bytes.size(); ++i)
    if (is_nan[w.value.bytes[i]] && nan_codes++ == 0) first_nan = static_cast<int64_t>(i);
  if (nan_codes > 0)
    r.add(C::MalformedInput, where,
          std::to_string(nan_codes) + (nan_codes == 1 ? " code is NaN" : " codes are NaN") + " (" + f->name() +
              "), the first at index " + std::to_string(first_nan) + " (row " + std::to_string(first_nan / cols) +
              ", col " + std::to_string(first_nan % cols) + "); read as NaN",
          Severity::Warning);
  QuantizedTensor& q = r.value;
  q.rows = rows;
  q.cols = cols;
  q.format = f;
  q.codes = std::move(w.value.bytes);
  q.block = layout == Fp8ScaleLayout::PerTensor    ? ScaleBlock{rows, cols}
            : layout == Fp8ScaleLayout::PerChannel ? ScaleBlock{1, cols}
                                                   : ScaleBlock{opt.block, opt.block};
  q.dequant_scales = std::move(scales);
  q.stats.elements = rows * cols;
  // DeepSeek-V3's weight_quant divides by the block scale; the per-tensor and per-channel systems
  // multiply by its reciprocal. Either way dequant_scales is the factor.
  q.scale_op = layout == Fp8ScaleLayout::Block ? Format::ScaleOp::Divide : Format::ScaleOp::Multiply;
  q.strategy = "checkpoint " + where + " (" + scale_name + ", " + toString(layout, opt.block) + ")";
  return r;
}

QuantizedTensor transposeQuantized(const QuantizedTensor& q) {
  QuantizedTensor t = q;
  t.rows = q.cols;
  t.cols = q.rows;
  t.block = {q.block.cols, q.block.rows};
  transposeCodes(q.codes.data(), t.codes.data(), q.rows, q.cols);
  const int64_t gr = q.blockRows(), gc = q.blockCols();
  auto grid = [&](const auto& v, auto* out) {
    if (v.size() != static_cast<size_t>(gr * gc)) return; // empty (absent) scale kinds stay as they are
    for (int64_t i = 0; i < gr; ++i)
      for (int64_t j = 0; j < gc; ++j) (*out)[static_cast<size_t>(j * gr + i)] = v[static_cast<size_t>(i * gc + j)];
  };
  grid(q.dequant_scales, &t.dequant_scales);
  grid(q.quant_scales, &t.quant_scales);
  grid(q.scale_codes, &t.scale_codes);
  return t;
}

// ---- re-quantizing --------------------------------------------------------------------------

Fp8Requantized requantizeCheckpointTensor(const QuantizedTensor& stored, const Format& format,
                                          const ScalingConfig& preset, Axis contraction) {
  Fp8Requantized out;
  const int64_t n = stored.rows * stored.cols;
  out.original.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < stored.rows; ++i)
    for (int64_t j = 0; j < stored.cols; ++j)
      out.original[static_cast<size_t>(i * stored.cols + j)] = stored.dequantizedAt(i, j);
  out.requantized = quantize(out.original.data(), stored.rows, stored.cols, format, preset, contraction);
  std::vector<double> back(static_cast<size_t>(n));
  for (int64_t i = 0; i < stored.rows; ++i)
    for (int64_t j = 0; j < stored.cols; ++j)
      back[static_cast<size_t>(i * stored.cols + j)] = out.requantized.dequantizedAt(i, j);
  out.sqnr_db = compareErrors(out.original.data(), back.data(), n, 1).sqnr_db;
  out.same_format = stored.format && stored.format->name() == format.name();
  if (out.same_format)
    for (size_t i = 0; i < stored.codes.size(); ++i) out.codes_changed += stored.codes[i] != out.requantized.codes[i];
  return out;
}

} // namespace fp8lab

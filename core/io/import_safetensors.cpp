// FP8 Lab — the .safetensors importer (Hugging Face format: an 8-byte header length, a JSON
// header of dtype, shape and data_offsets per tensor, then the bytes). See tensor_import.h.
#include "io/import_detail.h"

#include "json/json_document.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

namespace fp8lab {

using C = Issue::Code;
using namespace import_detail;

namespace {

/// Exact non-negative integer from a JSON number (safetensors shapes and offsets).
bool jsonInt(const Json& j, int64_t* v) {
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() > uint64_t(9e15)) return false;
    *v = static_cast<int64_t>(j.get<uint64_t>());
    return true;
  }
  if (j.is_number_integer()) return false; // negative
  if (!j.is_number_float()) return false;
  const double d = j.get<double>();
  if (!(d >= 0 && d <= 9.0e15) || d != static_cast<double>(static_cast<int64_t>(d))) return false;
  *v = static_cast<int64_t>(d);
  return true;
}

// ---- safetensors header ---------------------------------------------------------------------

struct StEntry {
  TensorEntry e;
  int64_t begin = 0, end = 0;
};

bool readSafetensorsHeader(const std::string& path, File* file, int64_t* data_start, int64_t* file_size,
                           std::vector<StEntry>* entries, Status* st) {
  if (!openFile(path, file, file_size, st)) return false;
  unsigned char lenb[8];
  if (*file_size < 8 || !readExact(file->f, lenb, 8)) {
    st->add(C::MalformedInput, path, "file shorter than the 8-byte safetensors header length");
    return false;
  }
  uint64_t hlen = 0;
  for (int k = 0; k < 8; ++k) hlen |= uint64_t(lenb[k]) << (8 * k);
  if (hlen > uint64_t(*file_size - 8) || hlen > (uint64_t(100) << 20)) {
    st->add(C::MalformedInput, path,
            "header length " + std::to_string(hlen) + " exceeds the file (" + std::to_string(*file_size) +
                " bytes) or the 100 MB limit: not a safetensors file, or truncated");
    return false;
  }
  std::string header(static_cast<size_t>(hlen), '\0');
  if (!readExact(file->f, header.data(), header.size())) {
    st->add(C::MalformedInput, path, "cannot read the JSON header");
    return false;
  }
  *data_start = 8 + static_cast<int64_t>(hlen);
  JsonDocument doc;
  try {
    doc = JsonDocument::parse(header, 64);
  } catch (const JsonTextError& e) {
    // A name given twice is ambiguous (JSON readers disagree on which one wins): refuse the file
    // rather than import one of the two silently.
    if (e.kind == JsonTextError::Kind::DuplicateKey) {
      st->add(C::MalformedInput, path + ":" + e.key,
              "the header names '" + e.key + "' twice in one object: ambiguous, not imported");
      return false;
    }
    st->add(C::MalformedInput, path, std::string("header is not a JSON object: ") + e.what());
    return false;
  }
  const Json& root = doc.root();
  if (!root.is_object()) {
    st->add(C::MalformedInput, path, "header is not a JSON object: not an object");
    return false;
  }
  const int64_t data_len = *file_size - *data_start;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& name = it.key();
    const Json& v = it.value();
    if (name == "__metadata__") continue;
    const std::string where = path + ":" + name;
    const Json* dt = v.is_object() && v.contains("dtype") ? &v["dtype"] : nullptr;
    const Json* sh = v.is_object() && v.contains("shape") ? &v["shape"] : nullptr;
    const Json* off = v.is_object() && v.contains("data_offsets") ? &v["data_offsets"] : nullptr;
    if (!dt || !dt->is_string() || !sh || !sh->is_array() || !off || !off->is_array() || off->size() != 2) {
      st->add(C::MalformedInput, where, "tensor entry needs string 'dtype', array 'shape', 2-element 'data_offsets'");
      return false;
    }
    StEntry e;
    e.e.name = name;
    e.e.dtype = dt->get<std::string>();
    for (const auto& d : *sh) {
      int64_t x;
      if (!jsonInt(d, &x)) {
        st->add(C::MalformedInput, where, "shape entries must be non-negative integers");
        return false;
      }
      e.e.shape.push_back(x);
    }
    if (!jsonInt((*off)[0], &e.begin) || !jsonInt((*off)[1], &e.end) || e.end < e.begin) {
      st->add(C::MalformedInput, where, "data_offsets must be non-negative integers with begin ≤ end");
      return false;
    }
    if (e.end > data_len) {
      st->add(C::MalformedInput, where,
              "data_offsets end " + std::to_string(e.end) + " beyond the data section (" + std::to_string(data_len) +
                  " bytes): file truncated?");
      return false;
    }
    const bool fl = e.e.dtype == "F16" || e.e.dtype == "BF16" || e.e.dtype == "F32" || e.e.dtype == "F64";
    e.e.importable = fl && (e.e.shape.size() == 1 || e.e.shape.size() == 2);
    entries->push_back(std::move(e));
  }
  // The JSON object's members come in name order (names are unique: refused above otherwise).
  return true;
}

} // namespace

Result<std::vector<TensorEntry>> listSafetensors(const std::string& path) {
  Result<std::vector<TensorEntry>> r;
  File file;
  int64_t start = 0, size = 0;
  std::vector<StEntry> entries;
  if (!readSafetensorsHeader(path, &file, &start, &size, &entries, &r)) return r;
  for (auto& e : entries) r.value.push_back(e.e);
  return r;
}

Result<Dataset> importSafetensors(const std::string& path, const std::string& name) {
  Result<Dataset> r;
  File file;
  int64_t start = 0, size = 0;
  std::vector<StEntry> entries;
  if (!readSafetensorsHeader(path, &file, &start, &size, &entries, &r)) return r;
  const StEntry* e = nullptr;
  std::string names;
  for (const auto& x : entries) {
    if (x.e.name == name) e = &x;
    names += (names.empty() ? "" : ", ") + x.e.name;
  }
  if (!e && name.empty() && entries.size() == 1) e = &entries[0];
  if (!e) {
    r.add(C::NotFound, path + ":" + name,
          name.empty() ? "give a tensor name; the file holds: " + names
                       : "no tensor of that name; the file holds: " + names);
    return r;
  }
  const std::string where = path + ":" + e->e.name;
  Src src;
  if (e->e.dtype == "F16")
    src = Src::F16;
  else if (e->e.dtype == "BF16")
    src = Src::BF16;
  else if (e->e.dtype == "F32")
    src = Src::F32;
  else if (e->e.dtype == "F64")
    src = Src::F64;
  else if (e->e.dtype == "F8_E4M3" || e->e.dtype == "F8_E5M2") {
    // FP8 codes mean nothing without their scales, which live in other tensors of the file.
    r.add(C::MalformedInput, where,
          "dtype " + e->e.dtype +
              " is an FP8 tensor, read with its scales as a pre-quantized operand: {\"checkpoint\": \"" + path +
              "\", \"tensor\": \"" + e->e.name + "\"} (`fp8lab-cli checkpoint list " + path +
              "` lists its FP8 tensors); {\"tensor\": ...} imports F16, BF16, F32 and F64");
    return r;
  } else {
    r.add(C::MalformedInput, where, "dtype " + e->e.dtype + " is not supported (F16, BF16, F32, F64)");
    return r;
  }
  if (e->e.shape.empty() || e->e.shape.size() > 2) {
    r.add(C::WrongShape, where, "shape " + shapeText(e->e.shape) + ": FP8 Lab imports 1-D and 2-D tensors");
    return r;
  }
  int64_t n = 0;
  if (!checkedCount(e->e.shape, &n)) {
    r.add(C::MalformedInput, where, "shape " + shapeText(e->e.shape) + " is too large");
    return r;
  }
  const int64_t bytes = n * static_cast<int64_t>(srcBytes(src));
  if (bytes != e->end - e->begin) {
    r.add(C::MalformedInput, where,
          "shape " + shapeText(e->e.shape) + " " + e->e.dtype + " needs " + std::to_string(bytes) +
              " bytes but data_offsets span " + std::to_string(e->end - e->begin));
    return r;
  }
  std::vector<unsigned char> raw;
  if (!readRange(file, size, start + e->begin, bytes, &raw, where, &r)) return r;
  r.value.shape = e->e.shape;
  decodeInto(raw, src, false, false, e->e.shape, &r.value);
  setSourceAttrs(&r.value, path, e->e.dtype, e->e.name);
  return r;
}

int safetensorsDtypeBytes(const std::string& dtype) {
  static const std::map<std::string, int> sizes = {
      {"BOOL", 1}, {"U8", 1},   {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}, {"U16", 2}, {"I16", 2},
      {"F16", 2},  {"BF16", 2}, {"U32", 4}, {"I32", 4},     {"F32", 4},     {"U64", 8},     {"I64", 8}, {"F64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

Result<SafetensorsBytes> readSafetensorsBytes(const std::string& path, const std::string& name) {
  Result<SafetensorsBytes> r;
  File file;
  int64_t start = 0, size = 0;
  std::vector<StEntry> entries;
  if (!readSafetensorsHeader(path, &file, &start, &size, &entries, &r)) return r;
  const StEntry* e = nullptr;
  for (const auto& x : entries)
    if (x.e.name == name) e = &x;
  if (!e) {
    r.add(C::NotFound, path + ":" + name, "no tensor of that name");
    return r;
  }
  const std::string where = path + ":" + name;
  const int eb = safetensorsDtypeBytes(e->e.dtype);
  int64_t n = 0;
  if (eb == 0) {
    r.add(C::MalformedInput, where, "dtype " + e->e.dtype + " is not a safetensors dtype");
    return r;
  }
  if (!checkedCount(e->e.shape, &n) || n * eb != e->end - e->begin) {
    r.add(C::MalformedInput, where,
          "shape " + shapeText(e->e.shape) + " " + e->e.dtype + " does not fit data_offsets spanning " +
              std::to_string(e->end - e->begin) + " bytes");
    return r;
  }
  if (!readRange(file, size, start + e->begin, n * eb, &r.value.bytes, where, &r)) return r;
  r.value.entry = e->e;
  return r;
}

// ---- HDF5 -----------------------------------------------------------------------------------

namespace import_detail {

Result<Dataset> importSafetensorsCodes(const std::string& file, const std::string& name, const std::string& spec,
                                       bool words_as_bytes) {
  Result<Dataset> r;
  File f;
  int64_t start = 0, size = 0;
  std::vector<StEntry> entries;
  if (!readSafetensorsHeader(file, &f, &start, &size, &entries, &r)) return r;
  const StEntry* e = nullptr;
  for (const auto& x : entries)
    if (x.e.name == name || (name.empty() && entries.size() == 1)) e = &x;
  if (!e) {
    r.add(C::NotFound, spec, "no tensor of that name (give FILE.safetensors:NAME)");
    return r;
  }
  const std::string where = file + ":" + e->e.name;
  int64_t n = 0;
  // One-byte codes: U8, and the FP8 dtypes (their bytes are the codes; the caller checks the format).
  const std::string& dt = e->e.dtype;
  const bool words = words_as_bytes && (dt == "I32" || dt == "U32");
  if (dt != "U8" && dt != "F8_E4M3" && dt != "F8_E5M2" && dt != "F8_E8M0" && !words) {
    r.add(C::MalformedInput, where,
          "dtype " + dt + " is not U8 (or F8_E4M3, F8_E5M2, F8_E8M0): codes are one byte per element" +
              (words_as_bytes ? std::string(" (or I32 / U32 words of four codes)") : std::string()));
    return r;
  }
  std::vector<int64_t> byte_shape = e->e.shape;
  if (words && !byte_shape.empty()) byte_shape.back() *= 4;
  if (byte_shape.empty() || byte_shape.size() > 2 || !checkedCount(byte_shape, &n) || n != e->end - e->begin) {
    r.add(C::MalformedInput, where,
          "shape " + shapeText(e->e.shape) + " U8 does not fit data_offsets spanning " +
              std::to_string(e->end - e->begin) + " bytes (1-D or 2-D tensors only)");
    return r;
  }
  std::vector<unsigned char> raw;
  if (!readRange(f, size, start + e->begin, n, &raw, where, &r)) return r;
  r.value.shape = byte_shape;
  decodeInto(raw, Src::U8, false, false, byte_shape, &r.value);
  setSourceAttrs(&r.value, file, e->e.dtype, e->e.name);
  return r;
}

} // namespace import_detail

} // namespace fp8lab

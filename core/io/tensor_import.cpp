// FP8 Lab — tensor importers (.npy, .safetensors, HDF5 datasets). See tensor_import.h.
#include "io/tensor_import.h"

#include "formats/format.h"
#include "io/json_document.h"
#include "session/hdf5_isolation.h"
#include "session/hdf5_util.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string_view>

namespace fp8lab {

namespace fs = std::filesystem;
using C = Issue::Code;

namespace {

// ---- byte helpers ---------------------------------------------------------------------------

struct File {
  std::FILE* f = nullptr;
  ~File() {
    if (f) std::fclose(f);
  }
};

/// Opens a file and gets its size; NotFound / MalformedInput issues on failure.
bool openFile(const std::string& path, File* file, int64_t* size, Status* st) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    st->add(C::NotFound, path, "no such file");
    return false;
  }
  if (!fs::is_regular_file(path, ec)) {
    st->add(C::MalformedInput, path, "not a regular file");
    return false;
  }
  *size = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) {
    st->add(C::MalformedInput, path, "cannot get the file size: " + ec.message());
    return false;
  }
  file->f = std::fopen(path.c_str(), "rb");
  if (!file->f) {
    st->add(C::NotFound, path, "cannot open for reading");
    return false;
  }
  return true;
}

bool readExact(std::FILE* f, void* buf, size_t n) {
  return n == 0 || std::fread(buf, 1, n, f) == n;
}

/// Product of dims with overflow and limit checks.
bool checkedCount(const std::vector<int64_t>& shape, int64_t* n) {
  int64_t c = 1;
  for (auto d : shape) {
    if (d < 0) return false;
    if (d != 0 && c > kMaxImportElements / d) return false;
    c *= d;
  }
  *n = c;
  return c <= kMaxImportElements;
}

std::string shapeText(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

/// Element kinds the importers decode.
enum class Src { F16, BF16, F32, F64, U8 };

size_t srcBytes(Src s) {
  return s == Src::U8 ? 1 : s == Src::F16 || s == Src::BF16 ? 2 : s == Src::F32 ? 4 : 8;
}

/// Converts `n` raw elements (byte order `big`) into out (float32 for ≤ 32-bit, float64 for F64),
/// row-major. When fortran is true the raw data are column-major [rows, cols] and are transposed.
void decodeInto(const std::vector<unsigned char>& raw, Src src, bool big, bool fortran,
                const std::vector<int64_t>& shape, Dataset* out) {
  const size_t eb = srcBytes(src);
  const int64_t n = static_cast<int64_t>(raw.size() / eb);
  const bool swap = big != (std::endian::native == std::endian::big);
  auto u = [&](int64_t i) -> uint64_t {
    uint64_t v = 0;
    const unsigned char* p = raw.data() + static_cast<size_t>(i) * eb;
    for (size_t b = 0; b < eb; ++b) {
      const size_t k = swap ? eb - 1 - b : b;
      v |= uint64_t(p[k]) << (8 * b);
    }
    return v;
  };
  const int64_t rows = shape.size() == 2 ? shape[0] : n, cols = shape.size() == 2 ? shape[1] : 1;
  auto dst = [&](int64_t i) -> int64_t {
    if (!fortran || shape.size() != 2) return i;
    // raw index i = j*rows + r  →  row-major r*cols + j
    const int64_t r = i % rows, j = i / rows;
    return r * cols + j;
  };
  if (src == Src::U8) {
    out->dtype = DType::UInt8;
    out->u8.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out->u8[static_cast<size_t>(dst(i))] = static_cast<uint8_t>(u(i));
    return;
  }
  if (src == Src::F64) {
    out->dtype = DType::Float64;
    out->f64.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out->f64[static_cast<size_t>(dst(i))] = std::bit_cast<double>(u(i));
    return;
  }
  out->dtype = DType::Float32;
  out->f32.resize(static_cast<size_t>(n));
  const Format& f16 = Format::FP16();
  const Format& bf16 = Format::BF16();
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t v = u(i);
    float x;
    if (src == Src::F32)
      x = std::bit_cast<float>(static_cast<uint32_t>(v));
    else if (src == Src::BF16)
      x = std::bit_cast<float>(static_cast<uint32_t>(v) << 16); // exact widening
    else
      x = static_cast<float>(f16.decode(static_cast<uint32_t>(v))); // exact in float32
    (void)bf16;
    out->f32[static_cast<size_t>(dst(i))] = x;
  }
}

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

/// Reads `bytes` at `offset` after checking against the file size.
bool readRange(File& file, int64_t file_size, int64_t offset, int64_t bytes, std::vector<unsigned char>* raw,
               const std::string& where, Status* st) {
  if (offset < 0 || bytes < 0 || offset > file_size || bytes > file_size - offset) {
    st->add(C::MalformedInput, where,
            "needs " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) + " but the file has " +
                std::to_string(file_size) + ": truncated");
    return false;
  }
  try {
    raw->resize(static_cast<size_t>(bytes));
  } catch (const std::bad_alloc&) {
    st->add(C::MalformedInput, where, "not enough memory for " + std::to_string(bytes) + " bytes");
    return false;
  }
  if (std::fseek(file.f, static_cast<long>(offset), SEEK_SET) != 0 || !readExact(file.f, raw->data(), raw->size())) {
    st->add(C::MalformedInput, where, "read error (file truncated while reading?)");
    return false;
  }
  return true;
}

void setSourceAttrs(Dataset* d, const std::string& path, const std::string& src_dtype, const std::string& tensor) {
  d->attrs["units"] = std::string("1");
  d->attrs["meaning"] = std::string("imported tensor");
  d->attrs["source"] = path;
  d->attrs["source_dtype"] = src_dtype;
  if (!tensor.empty()) d->attrs["tensor"] = tensor;
}

// ---- .npy header ----------------------------------------------------------------------------

/// Finds the Python literal value of 'key' in an .npy header dict ("{'descr': '<f4', ...}").
bool npyField(const std::string& h, const std::string& key, std::string* value) {
  for (const char q : {'\'', '"'}) {
    const std::string k = std::string(1, q) + key + std::string(1, q);
    size_t p = h.find(k);
    if (p == std::string::npos) continue;
    p = h.find(':', p + k.size());
    if (p == std::string::npos) return false;
    ++p;
    while (p < h.size() && h[p] == ' ') ++p;
    if (p >= h.size()) return false;
    size_t e;
    if (h[p] == '\'' || h[p] == '"') {
      e = h.find(h[p], p + 1);
      if (e == std::string::npos) return false;
      *value = h.substr(p + 1, e - p - 1);
      return true;
    }
    if (h[p] == '(') {
      e = h.find(')', p);
      if (e == std::string::npos) return false;
      *value = h.substr(p, e - p + 1);
      return true;
    }
    e = h.find_first_of(",}", p);
    if (e == std::string::npos) return false;
    *value = h.substr(p, e - p);
    while (!value->empty() && value->back() == ' ') value->pop_back();
    return true;
  }
  return false;
}

} // namespace

/// The header of a .npy file, checked against the file's size (nothing of the data is read).
struct NpyHeader {
  Src src = Src::F32;
  bool big = false;
  bool fortran = false;
  std::string descr;
  std::vector<int64_t> shape;
  int64_t data_off = 0, bytes = 0;
};

/// `codes`: the file must hold uint8 codes (|u1, <u1, >u1, =u1) instead of floats.
/// `codes`: 0 float dtypes; 1 one-byte codes (|u1); 2 one-byte codes or little-endian 4-byte words
/// (<i4, <u4), the words read as their bytes (shape [rows, 4·cols]).
bool readNpyHeader(const std::string& path, File& file, int64_t size, NpyHeader* out, Status& r, int codes = 0) {
  unsigned char pre[10];
  if (size < 10 || !readExact(file.f, pre, 10) || std::memcmp(pre, "\x93NUMPY", 6) != 0) {
    r.add(C::MalformedInput, path, "no .npy magic (\\x93NUMPY): not a NumPy .npy file");
    return false;
  }
  const int major = pre[6];
  int64_t hlen = 0, hstart = 0;
  if (major == 1) {
    hlen = pre[8] | (pre[9] << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    unsigned char b[2];
    if (!readExact(file.f, b, 2)) {
      r.add(C::MalformedInput, path, "truncated header length");
      return false;
    }
    hlen = int64_t(pre[8]) | (int64_t(pre[9]) << 8) | (int64_t(b[0]) << 16) | (int64_t(b[1]) << 24);
    hstart = 12;
  } else {
    r.add(C::MalformedInput, path,
          "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(pre[7]));
    return false;
  }
  if (hlen > size - hstart || hlen > (int64_t(1) << 24)) {
    r.add(C::MalformedInput, path, "header length " + std::to_string(hlen) + " exceeds the file: truncated");
    return false;
  }
  std::string h(static_cast<size_t>(hlen), '\0');
  if (!readExact(file.f, h.data(), h.size())) {
    r.add(C::MalformedInput, path, "cannot read the header");
    return false;
  }
  std::string descr, fortran, shape_txt;
  if (!npyField(h, "descr", &descr) || !npyField(h, "fortran_order", &fortran) || !npyField(h, "shape", &shape_txt)) {
    r.add(C::MalformedInput, path, "header lacks 'descr', 'fortran_order' or 'shape': " + h.substr(0, 120));
    return false;
  }
  if (fortran != "True" && fortran != "False") {
    r.add(C::MalformedInput, path, "fortran_order is '" + fortran + "', expected True or False");
    return false;
  }
  Src src;
  bool big = false;
  bool words = false;
  if (codes) {
    if (descr.size() == 3 && std::string_view("|<>=").find(descr[0]) != std::string_view::npos && descr[1] == 'u' &&
        descr[2] == '1') {
      src = Src::U8;
    } else if (codes == 2 && (descr == "<i4" || descr == "<u4" ||
                              ((descr == "=i4" || descr == "=u4") && std::endian::native == std::endian::little))) {
      src = Src::U8;
      words = true;
    } else {
      r.add(C::MalformedInput, path,
            "dtype '" + descr + "' is not uint8 (|u1): codes are one byte per element" +
                (codes == 2 ? std::string(" (or little-endian int32 words of four codes: <i4, <u4)") : std::string()));
      return false;
    }
  } else if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '>' || descr[0] == '=') && descr[1] == 'f' &&
             (descr[2] == '2' || descr[2] == '4' || descr[2] == '8')) {
    big = descr[0] == '>' || (descr[0] == '=' && std::endian::native == std::endian::big);
    src = descr[2] == '2' ? Src::F16 : descr[2] == '4' ? Src::F32 : Src::F64;
  } else {
    r.add(C::MalformedInput, path,
          "dtype '" + descr +
              "' is not supported (float16, float32 or float64 in either byte order: <f2 >f2 <f4 >f4 <f8 >f8)");
    return false;
  }
  // shape "(3, 4)" / "(5,)" / "()"
  std::vector<int64_t> shape;
  if (shape_txt.size() < 2 || shape_txt.front() != '(' || shape_txt.back() != ')') {
    r.add(C::MalformedInput, path, "shape '" + shape_txt + "' is not a tuple");
    return false;
  }
  {
    std::string inner = shape_txt.substr(1, shape_txt.size() - 2);
    size_t p = 0;
    while (p < inner.size()) {
      while (p < inner.size() && (inner[p] == ' ' || inner[p] == ',')) ++p;
      if (p >= inner.size()) break;
      size_t e = p;
      while (e < inner.size() && std::isdigit(static_cast<unsigned char>(inner[e]))) ++e;
      if (e == p || e - p > 15) {
        r.add(C::MalformedInput, path, "shape '" + shape_txt + "' has a non-integer or absurd entry");
        return false;
      }
      shape.push_back(std::stoll(inner.substr(p, e - p)));
      p = e;
      while (p < inner.size() && inner[p] == 'L') ++p; // Python 2 longs
    }
  }
  if (shape.empty()) {
    r.add(C::WrongShape, path, "a 0-d (scalar) array; FP8 Lab imports 1-D and 2-D tensors");
    return false;
  }
  if (shape.size() > 2) {
    r.add(C::WrongShape, path,
          "shape " + shapeText(shape) + " has rank " + std::to_string(shape.size()) +
              "; FP8 Lab imports 1-D and 2-D tensors (reshape it first)");
    return false;
  }
  if (words) {
    if (fortran == "True") {
      r.add(C::MalformedInput, path, "int32 words of packed codes must be in C order (fortran_order False)");
      return false;
    }
    shape.back() *= 4; // the words' bytes, little-endian: four codes per word
  }
  int64_t n = 0;
  if (!checkedCount(shape, &n)) {
    r.add(C::MalformedInput, path, "shape " + shapeText(shape) + " is too large (limit 2^34 elements)");
    return false;
  }
  const int64_t bytes = n * static_cast<int64_t>(srcBytes(src));
  const int64_t data_off = hstart + hlen;
  if (bytes > size - data_off) {
    r.add(C::MalformedInput, path,
          "header claims " + shapeText(shape) + " " + descr + " = " + std::to_string(bytes) +
              " bytes of data, the file has " + std::to_string(size - data_off) + ": truncated");
    return false;
  }
  if (bytes < size - data_off)
    r.add(C::MalformedInput, path, std::to_string(size - data_off - bytes) + " bytes after the data ignored",
          Severity::Warning);
  out->src = src;
  out->big = big;
  out->fortran = fortran == "True";
  out->descr = descr;
  out->shape = shape;
  out->data_off = data_off;
  out->bytes = bytes;
  return true;
}

Result<Dataset> importNpy(const std::string& path) {
  Result<Dataset> r;
  File file;
  int64_t size = 0;
  if (!openFile(path, &file, &size, &r)) return r;
  NpyHeader h;
  if (!readNpyHeader(path, file, size, &h, r)) return r;
  std::vector<unsigned char> raw;
  if (!readRange(file, size, h.data_off, h.bytes, &raw, path, &r)) return r;
  r.value.shape = h.shape;
  decodeInto(raw, h.src, h.big, h.fortran, h.shape, &r.value);
  setSourceAttrs(&r.value, path, h.descr, "");
  r.value.attrs["fortran_order"] = static_cast<int64_t>(h.fortran);
  return r;
}

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

namespace {

struct H5List {
  hid_t file;
  std::vector<TensorEntry>* out;
};

herr_t h5ListCb(hid_t, const char* name, const H5L_info_t* info, void* data) {
  auto* d = static_cast<H5List*>(data);
  if (info->type != H5L_TYPE_HARD) return 0;
  h5::Handle o = h5::object(H5Oopen(d->file, name, H5P_DEFAULT));
  if (!o.valid() || H5Iget_type(o) != H5I_DATASET) {
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  h5::Handle t = h5::type(H5Dget_type(o));
  h5::Handle sp = h5::space(H5Dget_space(o));
  TensorEntry e;
  e.name = std::string("/") + name;
  const int rank = H5Sget_simple_extent_ndims(sp);
  if (rank > 0 && rank <= 8) {
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(sp, dims.data(), nullptr);
    e.shape.assign(dims.begin(), dims.end());
  }
  const bool fl = H5Tget_class(t) == H5T_FLOAT;
  e.dtype = fl ? "float" + std::to_string(8 * H5Tget_size(t)) : "other";
  e.importable = fl && (rank == 1 || rank == 2);
  if (fl) d->out->push_back(std::move(e));
  return 0;
}

/// Checks that `path` is a regular HDF5 file (NotFound / NotHdf5 otherwise).
bool foreignH5Exists(const std::string& path, Status* st) {
  h5::quietErrors();
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    st->add(C::NotFound, path, "no such file");
    return false;
  }
  if (!fs::is_regular_file(path, ec)) { // a FIFO would block H5Fis_hdf5's open() forever
    st->add(C::NotHdf5, path, "not a regular file");
    return false;
  }
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    st->add(C::NotHdf5, path, "not an HDF5 file");
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return true;
}

/// Opens a foreign HDF5 file in this process, after the separate checking process's verdict on its
/// metadata (hdf5_isolation.h): a file from elsewhere can crash or hang libhdf5 itself.
bool openForeignH5(const std::string& path, h5::Handle* f, Status* st) {
  const Status verdict = checkHdf5FileOutOfProcess(path);
  if (!verdict.ok()) {
    st->merge(verdict);
    return false;
  }
  *f = h5::file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!f->valid()) {
    st->add(C::Corrupt, path, "HDF5 cannot open it: " + h5::errorText());
    return false;
  }
  return true;
}

} // namespace

Result<std::vector<TensorEntry>> listHdf5Tensors(const std::string& path) {
  Result<std::vector<TensorEntry>> r;
  if (!foreignH5Exists(path, &r)) return r;
  h5::Handle f;
  if (!openForeignH5(path, &f, &r)) return r;
  H5List d{f, &r.value};
  H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, h5ListCb, &d);
  H5Eclear2(H5E_DEFAULT);
  return r;
}

Result<Dataset> importHdf5Dataset(const std::string& path, const std::string& dataset_path) {
  Result<Dataset> r;
  if (!foreignH5Exists(path, &r)) return r;
  h5::Handle f;
  if (!openForeignH5(path, &f, &r)) return r;
  const std::string where = path + ":" + dataset_path;
  std::string rel = dataset_path;
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  if (rel.empty() || !h5::pathExists(f, rel)) {
    r.add(C::NotFound, where, "no such dataset");
    return r;
  }
  h5::Handle ds = h5::dataset(H5Dopen2(f, rel.c_str(), H5P_DEFAULT));
  if (!ds.valid()) {
    r.add(C::WrongType, where, "not a dataset: " + h5::errorText());
    return r;
  }
  h5::Handle t = h5::type(H5Dget_type(ds));
  if (H5Tget_class(t) != H5T_FLOAT) {
    r.add(C::WrongType, where, "element type is not floating point");
    return r;
  }
  const size_t esz = H5Tget_size(t);
  h5::Handle sp = h5::space(H5Dget_space(ds));
  const int rank = H5Sget_simple_extent_ndims(sp);
  if (rank != 1 && rank != 2) {
    r.add(C::WrongShape, where, "rank " + std::to_string(rank) + "; FP8 Lab imports 1-D and 2-D datasets");
    return r;
  }
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(sp, dims, nullptr);
  std::vector<int64_t> shape(dims, dims + rank);
  int64_t n = 0;
  if (!checkedCount(shape, &n)) {
    r.add(C::MalformedInput, where, "shape " + shapeText(shape) + " is too large");
    return r;
  }
  // The header's shape is only a claim (h5::checkReadSize): refuse before allocating.
  if (std::string why; h5::checkReadSize(ds, n * (esz > 4 ? 8 : 4), shapeText(shape), &why) != h5::ReadSize::Ok) {
    r.add(C::MalformedInput, where, why);
    return r;
  }
  Dataset& d = r.value;
  d.shape = shape;
  d.dtype = esz > 4 ? DType::Float64 : DType::Float32;
  try {
    if (d.dtype == DType::Float64)
      d.f64.resize(static_cast<size_t>(n));
    else
      d.f32.resize(static_cast<size_t>(n));
  } catch (const std::bad_alloc&) {
    r.add(C::MalformedInput, where, "not enough memory");
    return r;
  }
  void* buf = d.dtype == DType::Float64 ? static_cast<void*>(d.f64.data()) : static_cast<void*>(d.f32.data());
  if (n > 0 && H5Dread(ds, h5::memType(d.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
    r.add(C::Corrupt, where, "cannot read: " + h5::errorText());
    r.value = {};
    return r;
  }
  const bool big = H5Tget_order(t) == H5T_ORDER_BE;
  setSourceAttrs(&d, path, std::string(big ? ">" : "<") + "float" + std::to_string(8 * esz), dataset_path);
  return r;
}

namespace {

/// "FILE.ext:NAME" split at the first ':' after a known extension; false for an unknown type.
bool splitTensorSpec(const std::string& spec, std::string* file, std::string* name, std::string* ext) {
  auto ends = [](const std::string& s, const std::string& suf) {
    if (s.size() < suf.size()) return false;
    std::string t = s.substr(s.size() - suf.size());
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return t == suf;
  };
  std::string lower = spec;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const std::string e : {".safetensors", ".h5", ".hdf5", ".hdf", ".npy"}) {
    const size_t p = lower.find(e + ":");
    if (p != std::string::npos) {
      *file = spec.substr(0, p + e.size());
      *name = spec.substr(p + e.size() + 1);
    } else if (ends(spec, e)) {
      *file = spec;
      name->clear();
    } else {
      continue;
    }
    *ext = e;
    return true;
  }
  return false;
}

} // namespace

Result<std::vector<int64_t>> tensorShape(const std::string& spec) {
  Result<std::vector<int64_t>> r;
  std::string file, name, ext;
  if (!splitTensorSpec(spec, &file, &name, &ext)) {
    r.add(C::InvalidArgument, spec, "unknown tensor file type (use .npy, .safetensors:NAME or .h5:/PATH)");
    return r;
  }
  if (ext == ".npy") {
    File f;
    int64_t size = 0;
    NpyHeader h;
    if (openFile(file, &f, &size, &r) && readNpyHeader(file, f, size, &h, r)) r.value = h.shape;
    return r;
  }
  auto list = ext == ".safetensors" ? listSafetensors(file) : listHdf5Tensors(file);
  r.merge(list);
  if (!list.ok()) return r;
  const TensorEntry* found = nullptr;
  for (const auto& e : list.value)
    if (e.name == name) found = &e;
  if (!found && name.empty() && ext == ".safetensors" && list.value.size() == 1) found = &list.value.front();
  if (!found) {
    r.add(C::NotFound, spec, name.empty() ? "give the tensor's name as FILE:NAME" : "no tensor of that name");
    return r;
  }
  r.value = found->shape;
  return r;
}

Result<Dataset> importCodeTensor(const std::string& spec, bool words_as_bytes) {
  Result<Dataset> r;
  std::string file, name, ext;
  if (!splitTensorSpec(spec, &file, &name, &ext)) {
    r.add(C::InvalidArgument, spec, "unknown tensor file type (use .npy or .safetensors:NAME)");
    return r;
  }
  if (ext == ".npy") {
    File f;
    int64_t size = 0;
    NpyHeader h;
    if (!openFile(file, &f, &size, &r) || !readNpyHeader(file, f, size, &h, r, words_as_bytes ? 2 : 1)) return r;
    std::vector<unsigned char> raw;
    if (!readRange(f, size, h.data_off, h.bytes, &raw, file, &r)) return r;
    r.value.shape = h.shape;
    decodeInto(raw, Src::U8, false, h.fortran, h.shape, &r.value);
    setSourceAttrs(&r.value, file, h.descr, "");
    return r;
  }
  if (ext != ".safetensors") {
    r.add(C::InvalidArgument, spec, "code tensors are read from .npy (uint8) or .safetensors (U8) files");
    return r;
  }
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

Result<Dataset> importTensor(const std::string& spec) {
  std::string file, name, ext;
  if (!splitTensorSpec(spec, &file, &name, &ext)) {
    Result<Dataset> r;
    r.add(C::InvalidArgument, spec, "unknown tensor file type (use .npy, .safetensors:NAME or .h5:/PATH)");
    return r;
  }
  if (ext == ".npy") return importNpy(file);
  if (ext == ".safetensors") return importSafetensors(file, name);
  if (name.empty()) {
    Result<Dataset> r;
    auto l = listHdf5Tensors(file);
    std::string names;
    for (const auto& e : l.value)
      if (e.importable) names += (names.empty() ? "" : ", ") + e.name;
    r.add(C::InvalidArgument, spec, "give the dataset path as FILE.h5:/path (float datasets: " + names + ")");
    return r;
  }
  return importHdf5Dataset(file, name);
}

} // namespace fp8lab

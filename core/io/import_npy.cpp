// FP8 Lab — the .npy importer (NumPy format 1.0–3.0): floats, and one-byte codes for
// pre-quantized operands. See tensor_import.h.
#include "io/import_detail.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace fp8lab {

using C = Issue::Code;
using namespace import_detail;

namespace {

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
namespace {

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

} // namespace

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

namespace import_detail {

Result<std::vector<int64_t>> npyShape(const std::string& file) {
  Result<std::vector<int64_t>> r;
  File f;
  int64_t size = 0;
  NpyHeader h;
  if (openFile(file, &f, &size, &r) && readNpyHeader(file, f, size, &h, r)) r.value = h.shape;
  return r;
}

Result<Dataset> importNpyCodes(const std::string& file, bool words_as_bytes) {
  Result<Dataset> r;
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

} // namespace import_detail

} // namespace fp8lab

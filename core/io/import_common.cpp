// FP8 Lab — the tensor importers' shared file and byte helpers (import_detail.h).
#include "io/import_detail.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <new>

namespace fp8lab::import_detail {

namespace fs = std::filesystem;
using C = Issue::Code;

// ---- byte helpers ---------------------------------------------------------------------------

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

} // namespace fp8lab::import_detail

// FP8 Lab — IDX reader (see idx_reader.h for the format and the checks).
#include "training/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>

namespace fp8lab {

int64_t IdxArray::count() const {
  if (dims.empty()) return 0;
  int64_t n = 1;
  for (uint32_t d : dims) n *= static_cast<int64_t>(d);
  return n;
}

namespace {

struct InflateStream {
  z_stream z{};
  bool ready = false;
  ~InflateStream() {
    if (ready) inflateEnd(&z);
  }
};

uint32_t readBE32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

} // namespace

std::vector<uint8_t> gunzip(const std::vector<uint8_t>& gz, const std::string& what, int64_t max_output) {
  if (gz.size() < 2 || gz[0] != 0x1f || gz[1] != 0x8b)
    throw IdxError(what + ": not a gzip stream (missing the 1f 8b magic)");
  InflateStream s;
  // 16 + MAX_WBITS: gzip wrapper only, header and CRC-32 / ISIZE trailer checked by zlib.
  if (inflateInit2(&s.z, 16 + MAX_WBITS) != Z_OK) throw IdxError(what + ": zlib initialisation failed");
  s.ready = true;
  std::vector<uint8_t> out;
  const size_t cap = static_cast<size_t>(max_output);
  out.resize(std::min<size_t>(cap + 1, std::max<size_t>(gz.size() * 4, 1 << 16)));
  size_t in_pos = 0, out_pos = 0;
  for (;;) {
    const size_t in_chunk = std::min<size_t>(gz.size() - in_pos, std::numeric_limits<uInt>::max());
    s.z.next_in = const_cast<Bytef*>(gz.data() + in_pos);
    s.z.avail_in = static_cast<uInt>(in_chunk);
    if (out_pos == out.size()) {
      if (out.size() > cap)
        throw IdxError(what + ": decompresses to more than the allowed " + std::to_string(max_output) + " bytes");
      out.resize(std::min(cap + 1, out.size() * 2));
    }
    const size_t out_chunk = std::min<size_t>(out.size() - out_pos, std::numeric_limits<uInt>::max());
    s.z.next_out = out.data() + out_pos;
    s.z.avail_out = static_cast<uInt>(out_chunk);
    const int rc = inflate(&s.z, Z_NO_FLUSH);
    in_pos += in_chunk - s.z.avail_in;
    out_pos += out_chunk - s.z.avail_out;
    if (out_pos > cap)
      throw IdxError(what + ": decompresses to more than the allowed " + std::to_string(max_output) + " bytes");
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (RFC 1952 §2.2); anything else is trailing garbage.
      if (in_pos == gz.size()) break;
      if (gz.size() - in_pos >= 2 && gz[in_pos] == 0x1f && gz[in_pos + 1] == 0x8b) {
        if (inflateReset(&s.z) != Z_OK) throw IdxError(what + ": zlib reset failed");
        continue;
      }
      throw IdxError(what + ": " + std::to_string(gz.size() - in_pos) +
                     " unexpected bytes after the end of the gzip stream");
    }
    if (rc == Z_DATA_ERROR)
      throw IdxError(what + ": corrupt gzip data (" + (s.z.msg ? std::string(s.z.msg) : std::string("data error")) +
                     ")");
    if (rc == Z_MEM_ERROR) throw IdxError(what + ": out of memory while decompressing");
    if (rc == Z_NEED_DICT) throw IdxError(what + ": corrupt gzip data (dictionary requested)");
    if (rc == Z_BUF_ERROR || (rc == Z_OK && in_pos == gz.size() && s.z.avail_out != 0)) {
      if (in_pos == gz.size())
        throw IdxError(what + ": truncated gzip stream (ended after " + std::to_string(gz.size()) +
                       " bytes, before its end marker and checksum)");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) throw IdxError(what + ": zlib error " + std::to_string(rc));
  }
  out.resize(out_pos);
  return out;
}

IdxArray parseIdx(const std::vector<uint8_t>& bytes, const std::string& what, int expect_dims, int64_t max_elements) {
  if (bytes.size() < 4)
    throw IdxError(what + ": too short for an IDX header (" + std::to_string(bytes.size()) + " bytes)");
  if (bytes[0] != 0 || bytes[1] != 0)
    throw IdxError(what + ": not an IDX file (the first two bytes of the magic number must be zero)");
  const int type = bytes[2];
  const int nd = bytes[3];
  if (type != 0x08) {
    const char* names[] = {"signed byte", "", "int16", "int32", "float32", "float64"};
    const std::string tn = (type >= 0x09 && type <= 0x0E && type != 0x0A) ? names[type - 0x09] : "unknown";
    throw IdxError(what + ": IDX element type 0x" + (type < 16 ? "0" : "") +
                   [&] {
                     char b[4];
                     std::snprintf(b, sizeof b, "%x", type);
                     return std::string(b);
                   }() +
                   " (" + tn + ") is not supported; Fashion-MNIST files hold unsigned bytes (0x08)");
  }
  if (nd == 0) throw IdxError(what + ": IDX header declares zero dimensions");
  if (expect_dims > 0 && nd != expect_dims)
    throw IdxError(what + ": expected " + std::to_string(expect_dims) + " dimensions (magic 0x0000080" +
                   std::to_string(expect_dims) + "), the header declares " + std::to_string(nd));
  const size_t header = 4 + 4 * static_cast<size_t>(nd);
  if (bytes.size() < header)
    throw IdxError(what + ": truncated IDX header (" + std::to_string(bytes.size()) + " bytes, need " +
                   std::to_string(header) + ")");
  IdxArray a;
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) {
    const uint32_t d = readBE32(bytes.data() + 4 + 4 * i);
    a.dims.push_back(d);
    if (d != 0 && n > max_elements / static_cast<int64_t>(d))
      throw IdxError(what + ": the declared sizes exceed the limit of " + std::to_string(max_elements) + " elements");
    n *= static_cast<int64_t>(d);
  }
  const size_t payload = bytes.size() - header;
  if (static_cast<int64_t>(payload) != n) {
    std::string dims;
    for (size_t i = 0; i < a.dims.size(); ++i) {
      if (i) dims += 'x';
      dims += std::to_string(a.dims[i]);
    }
    throw IdxError(what + ": the header declares " + dims + " = " + std::to_string(n) +
                   " elements but the file holds " + std::to_string(payload) +
                   (static_cast<int64_t>(payload) < n ? " (truncated)" : " (trailing data)"));
  }
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return a;
}

IdxArray readIdxFile(const std::filesystem::path& path, int expect_dims, int64_t max_elements) {
  const std::string what = path.string();
  std::error_code rec;
  // Checked before opening: opening a FIFO blocks until a writer appears, a device never ends.
  if (std::filesystem::exists(path, rec) && !std::filesystem::is_regular_file(path, rec))
    throw IdxError(what + ": not a regular file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IdxError(what + ": cannot open for reading");
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw IdxError(what + ": cannot read the file size (" + ec.message() + ")");
  // The whole file is held in memory; the compressed file cannot be larger than the limit either.
  if (static_cast<int64_t>(size) > max_elements + 4096)
    throw IdxError(what + ": file of " + std::to_string(size) + " bytes exceeds the limit");
  std::vector<uint8_t> raw(static_cast<size_t>(size));
  if (size > 0 && !f.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(size)))
    throw IdxError(what + ": read error");
  if (raw.size() >= 2 && raw[0] == 0x1f && raw[1] == 0x8b) {
    // header (≤ 4 + 4·255 bytes) plus at most max_elements payload bytes
    raw = gunzip(raw, what, max_elements + 4 + 4 * 255);
  }
  return parseIdx(raw, what, expect_dims, max_elements);
}

} // namespace fp8lab

// FP8 Lab — .npy writer (npy_writer.h).
#include "io/npy_writer.h"

#include "io/atomic_file.h"

#include <cstdlib>
#include <cstring>

namespace fp8lab {

Status writeNpy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape,
                const std::vector<unsigned char>& bytes) {
  Status st;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const size_t width = descr.size() >= 3 ? static_cast<size_t>(std::atoi(descr.c_str() + 2)) : 0;
  if (shape.empty() || width == 0 || static_cast<size_t>(n) * width != bytes.size()) {
    st.add(Issue::Code::InvalidArgument, path,
           "writeNpy: " + std::to_string(bytes.size()) + " bytes do not hold an array of that shape and dtype " +
               descr);
    return st;
  }
  std::string sh = "(";
  for (size_t i = 0; i < shape.size(); ++i) sh += (i ? ", " : "") + std::to_string(shape[i]);
  sh += shape.size() == 1 ? ",)" : ")";
  // Header: magic, version 1.0, little-endian length, the dict padded with spaces so that the data
  // start at a multiple of 64 bytes, ending in a newline.
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + sh + ", }";
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  const unsigned char magic[10] = {0x93,
                                   'N',
                                   'U',
                                   'M',
                                   'P',
                                   'Y',
                                   1,
                                   0,
                                   static_cast<unsigned char>(h.size() & 0xFF),
                                   static_cast<unsigned char>(h.size() >> 8)};
  std::vector<unsigned char> file(sizeof magic + h.size() + bytes.size());
  std::memcpy(file.data(), magic, sizeof magic);
  std::memcpy(file.data() + sizeof magic, h.data(), h.size());
  if (!bytes.empty()) std::memcpy(file.data() + sizeof magic + h.size(), bytes.data(), bytes.size());
  return writeFileAtomically(path, file);
}

Status writeNpy(const std::string& path, const std::vector<int64_t>& shape, const std::vector<float>& values) {
  std::vector<unsigned char> b(values.size() * 4);
  std::memcpy(b.data(), values.data(), b.size()); // little-endian hosts (x86-64, AArch64)
  return writeNpy(path, "<f4", shape, b);
}

Status writeNpy(const std::string& path, const std::vector<int64_t>& shape, const std::vector<uint8_t>& codes) {
  return writeNpy(path, "|u1", shape, std::vector<unsigned char>(codes.begin(), codes.end()));
}

} // namespace fp8lab

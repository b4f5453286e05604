// FP8 Lab — reader for IDX files (the MNIST / Fashion-MNIST container), gzipped or plain.
//
// Format (Y. LeCun's MNIST page; Fashion-MNIST uses it unchanged): a big-endian header
//     bytes 0-1  zero
//     byte  2    element type: 0x08 unsigned byte, 0x09 signed byte, 0x0B int16, 0x0C int32,
//                0x0D float32, 0x0E float64
//     byte  3    number of dimensions d (1..255)
//     then d big-endian uint32 sizes, then the elements, row-major, big-endian.
// Fashion-MNIST images are magic 0x00000803 ([n, 28, 28] ubyte), labels 0x00000801 ([n] ubyte).
//
// Nothing in the header is trusted: the product of the sizes must not overflow, must not exceed
// a limit, and the (decompressed) payload must hold exactly that many elements — a short or
// over-long file is an error, as is a corrupt gzip stream (bad header, CRC or length trailer).
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp8lab {

/// An IDX file that cannot be read or is malformed; what() names the file and the problem.
struct IdxError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The contents of an IDX file of unsigned bytes (element type 0x08), the only type
/// Fashion-MNIST uses.
struct IdxArray {
  std::vector<uint32_t> dims; ///< sizes, outermost first (e.g. {60000, 28, 28})
  std::vector<uint8_t> data;  ///< product(dims) elements, row-major
  int64_t count() const;      ///< product of dims (0 for no dims)
};

/// Default upper bound on the elements of an IDX file (1 GiB): far above Fashion-MNIST's
/// 47 MB, low enough that a corrupt header cannot make the reader allocate without bound.
inline constexpr int64_t kIdxDefaultMaxElements = int64_t{1} << 30;

/// Decompresses a complete gzip stream (RFC 1952; multiple members allowed) with zlib.
/// At most `max_output` bytes are produced; more is an error. Throws IdxError on a corrupt or
/// truncated stream (the message says which), naming `what` (the file) in the message.
std::vector<uint8_t> gunzip(const std::vector<uint8_t>& gz, const std::string& what, int64_t max_output);

/// Parses the bytes of an uncompressed IDX file. `expect_dims` > 0 requires that number of
/// dimensions. Throws IdxError (naming `what`) on a bad magic, an element type other than
/// unsigned byte, a size product that overflows or exceeds `max_elements`, or a payload whose
/// length is not exactly header + product(dims).
IdxArray parseIdx(const std::vector<uint8_t>& bytes, const std::string& what, int expect_dims = 0,
                  int64_t max_elements = kIdxDefaultMaxElements);

/// Reads an IDX file from disk; gzip is detected by its magic bytes (0x1f 0x8b), so both
/// "x-idx3-ubyte.gz" and an unpacked "x-idx3-ubyte" work. Throws IdxError when the file cannot
/// be opened or read, or as gunzip() / parseIdx().
IdxArray readIdxFile(const std::filesystem::path& path, int expect_dims = 0,
                     int64_t max_elements = kIdxDefaultMaxElements);

} // namespace fp8lab

// FP8 Lab — what the tensor importers share (core/io/import_*.cpp): file and byte helpers, the
// raw-element conversion, and each format's code-tensor and shape readers that the dispatcher in
// tensor_import.cpp calls. Internal to core/io: include tensor_import.h instead.
#pragma once

#include "io/tensor_import.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace fp8lab::import_detail {

struct File {
  std::FILE* f = nullptr;
  File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() {
    if (f) std::fclose(f);
  }
};

/// Opens a file and gets its size; NotFound / MalformedInput issues on failure.
bool openFile(const std::string& path, File* file, int64_t* size, Status* st);
/// Reads exactly n bytes; false on a short read.
bool readExact(std::FILE* f, void* buf, size_t n);
/// The element count of `shape` when every extent is ≥ 0 and the product fits int64.
bool checkedCount(const std::vector<int64_t>& shape, int64_t* n);
/// "[2, 3]".
std::string shapeText(const std::vector<int64_t>& s);

/// The element types the importers read.
enum class Src { F16, BF16, F32, F64, U8 };
size_t srcBytes(Src s);
/// Converts raw elements (byte order `big`) into out (float32 for ≤ 32-bit, float64 for F64),
/// row-major. When fortran is true the raw data are column-major [rows, cols] and are transposed.
void decodeInto(const std::vector<unsigned char>& raw, Src src, bool big, bool fortran,
                const std::vector<int64_t>& shape, Dataset* out);
/// Reads `bytes` at `offset` after checking against the file size.
bool readRange(File& file, int64_t file_size, int64_t offset, int64_t bytes, std::vector<unsigned char>* raw,
               const std::string& where, Status* st);
/// The attributes every imported dataset carries (units, meaning, source file, dtype, tensor).
void setSourceAttrs(Dataset* d, const std::string& path, const std::string& src_dtype, const std::string& tensor);

/// The shape of a .npy file's array (its header only).
Result<std::vector<int64_t>> npyShape(const std::string& file);
/// One-byte codes from a .npy file (uint8; with words_as_bytes also little-endian 4-byte words
/// read as their bytes).
Result<Dataset> importNpyCodes(const std::string& file, bool words_as_bytes);
/// One-byte codes from a .safetensors tensor (U8, F8_E4M3, F8_E5M2, F8_E8M0; with words_as_bytes
/// also I32 / U32 words read as their bytes). `spec` names the request in messages.
Result<Dataset> importSafetensorsCodes(const std::string& file, const std::string& name, const std::string& spec,
                                       bool words_as_bytes);

} // namespace fp8lab::import_detail

// FP8 Lab — tensor importers: NumPy .npy, safetensors, and any 2-D float dataset of an HDF5 file.
//
// Every importer returns a session Dataset (core/session/session.h) of rank 1 or 2, row-major:
//   - float16 / bfloat16 sources are widened exactly to float32 (dtype Float32);
//   - float32 sources stay float32;
//   - float64 sources stay float64 (dtype Float64) so they are quantized from float64 later, never
//     rounded through float32 first.
// Attributes set on the result: "source" (file path), "source_dtype" ("<f2", "BF16", "float64",
// ...), "tensor" (name or HDF5 path where applicable), "units" = "1", "meaning".
//
// Untrusted input: headers are parsed with explicit length checks; a claimed shape is checked
// against the real file size before anything is allocated; element counts are checked for
// overflow. Errors are Issue::Code::MalformedInput (bad header, dtype, truncated data,
// size mismatch), NotFound (file or tensor name), WrongType / WrongShape (HDF5 dataset not a float
// or not 1-/2-D). Nothing throws.
//
// Formats: NumPy NEP 1 / "format.rst" .npy v1.0–3.0 (dtypes <f2 >f2 <f4 >f4 <f8 >f8, C and
// Fortran order — Fortran is transposed to row-major on import); safetensors (Hugging Face:
// 8-byte little-endian header length, JSON header, dtypes F16 BF16 F32 F64, little-endian data).
#pragma once

#include "session/session.h"

#include <string>
#include <vector>

namespace fp8lab {

/// Largest tensor an importer accepts (elements), to refuse absurd claims early: 2^34.
inline constexpr int64_t kMaxImportElements = int64_t(1) << 34;

/// Reads a .npy file. Rank 0 is refused; rank 1 → [n]; rank 2 → [rows, cols]; higher ranks are
/// refused (WrongShape) since FP8 Lab works on matrices.
Result<Dataset> importNpy(const std::string& path);

/// One tensor listed in a safetensors header.
struct TensorEntry {
  std::string name;
  std::string dtype; ///< "F16", "BF16", "F32", "F64", or other (not importable)
  std::vector<int64_t> shape;
  bool importable = false; ///< float dtype and rank 1 or 2
};

/// Lists the tensors of a safetensors file (header only).
Result<std::vector<TensorEntry>> listSafetensors(const std::string& path);
/// Reads one tensor of a safetensors file by name. MalformedInput for a dtype other than F16,
/// BF16, F32, F64; for F8_E4M3 / F8_E5M2 the message names the pre-quantized operand that reads
/// FP8 codes with their scales: {"checkpoint": FILE, "tensor": NAME} (core/io/fp8_checkpoint.h).
Result<Dataset> importSafetensors(const std::string& path, const std::string& tensor_name);

/// One tensor of a safetensors file as stored: its header entry and its raw little-endian bytes.
struct SafetensorsBytes {
  TensorEntry entry;                ///< name, dtype, shape (any rank, rank 0 = a scalar)
  std::vector<unsigned char> bytes; ///< product(shape) · element size bytes
};

/// Element size in bytes of a safetensors dtype ("F8_E4M3" 1, "BF16" 2, "F32" 4, ...); 0 for an
/// unknown dtype.
int safetensorsDtypeBytes(const std::string& dtype);

/// Reads one tensor of a safetensors file by name without converting it, for readers of dtypes the
/// float importers do not take (FP8 codes, rank-0 scales: core/io/fp8_checkpoint.h). The header
/// checks of importSafetensors; MalformedInput for an unknown dtype or a shape whose byte size
/// differs from the span of data_offsets, NotFound for a missing name.
Result<SafetensorsBytes> readSafetensorsBytes(const std::string& path, const std::string& tensor_name);

/// Lists the 1-/2-D float datasets of any HDF5 file (absolute paths, e.g. "/model/w1").
Result<std::vector<TensorEntry>> listHdf5Tensors(const std::string& path);
/// Reads a 1-D or 2-D float dataset (any float width / byte order; ≤ 32-bit → float32, wider →
/// float64) of any HDF5 file by path.
Result<Dataset> importHdf5Dataset(const std::string& path, const std::string& dataset_path);

/// Dispatch on a spec string: "FILE.npy", "FILE.safetensors:NAME", "FILE.h5:/PATH"
/// (also .hdf5 / .hdf). A safetensors file with exactly one tensor needs no name.
Result<Dataset> importTensor(const std::string& spec);

/// Reads a tensor of uint8 codes (quantized elements or E8M0 / E4M3 scale codes): "FILE.npy"
/// (dtype |u1, <u1, >u1, C or Fortran order) or "FILE.safetensors:NAME" (dtype U8, or F8_E4M3 /
/// F8_E5M2 / F8_E8M0, whose bytes are the codes: attr "source_dtype" says which), rank 1 or 2,
/// into a Dataset of dtype UInt8 (row-major). With `words_as_bytes`, little-endian 32-bit integer
/// tensors (.npy <i4 / <u4 in C order, safetensors I32 / U32) are read as their bytes, four codes
/// per word: [rows, cols] words give [rows, 4·cols] codes (DeepGEMM's packed UE8M0 scales). Float
/// files are refused (MalformedInput naming the dtype); HDF5 code tensors are not read
/// (InvalidArgument). The same size and header checks as importNpy / importSafetensors.
Result<Dataset> importCodeTensor(const std::string& spec, bool words_as_bytes = false);

/// The shape a spec's tensor has in its file, from the header alone (the .npy header, the
/// safetensors header, the HDF5 listing; no data is read): [n] or [rows, cols]. The errors of
/// the importers for a missing file, an unknown type, a damaged header or a missing name.
Result<std::vector<int64_t>> tensorShape(const std::string& spec);

} // namespace fp8lab

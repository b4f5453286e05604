// FP8 Lab — block-scale layouts and packed FP4 (kernel_layout.h).
#include "scaling/kernel_layout.h"

#include "common/names.h"

#include <stdexcept>

namespace fp8lab {

namespace {

int64_t roundUp(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

/// The swizzled offset (cuBLAS 1D block scaling factors layout). PyTorch's to_blocked views the
/// padded grid as [outer/128, 128, KB/4, 4], permutes it to [outer/128, KB/4, 128, 4] (tile t =
/// (o div 128)·(KB/4) + kb div 4, 512 elements each), splits the 128 rows of a tile as 4 × 32
/// (r = 32·i + j), swaps them to [32, 4, 4] and flattens: row j = r mod 32, column i·4 + c with
/// i = r div 32 and c = kb mod 4, so inside the tile the element is at j·16 + i·4 + c.
int64_t swizzled(int64_t kb_tiles, int64_t o, int64_t kb) {
  const int64_t tile = (o / 128) * kb_tiles + kb / 4;
  const int64_t r = o % 128;
  return tile * 512 + (r % 32) * 16 + (r / 32) * 4 + kb % 4;
}

} // namespace

const char* toString(ScaleLayout l) {
  switch (l) {
  case ScaleLayout::RowMajor:
    return "row_major";
  case ScaleLayout::CublasLtSwizzled:
    return "cublaslt_swizzled";
  case ScaleLayout::CublasLtVec128:
    return "cublaslt_vec128";
  case ScaleLayout::CublasLtBlk128x128:
    return "cublaslt_blk128x128";
  case ScaleLayout::DeepGemmMnMajor:
    return "deepgemm_mn_major";
  case ScaleLayout::DeepGemmPackedUe8m0:
    return "deepgemm_packed_ue8m0";
  }
  return "?";
}

std::optional<ScaleLayout> parseScaleLayout(std::string_view name) {
  const std::string n = normalizedName(name);
  if (n == "row_major" || n == "rowmajor" || n == "grid") return ScaleLayout::RowMajor;
  if (n == "cublaslt_swizzled" || n == "swizzled" || n == "128x4" || n == "vec32_ue8m0" ||
      n == "cublaslt_vec32_ue8m0" || n == "vec16_ue4m3" || n == "cublaslt_vec16_ue4m3")
    return ScaleLayout::CublasLtSwizzled;
  if (n == "cublaslt_vec128" || n == "vec128" || n == "vec128_32f" || n == "cublaslt_vec128_32f")
    return ScaleLayout::CublasLtVec128;
  if (n == "cublaslt_blk128x128" || n == "blk128x128" || n == "blk128x128_32f" || n == "cublaslt_blk128x128_32f")
    return ScaleLayout::CublasLtBlk128x128;
  if (n == "deepgemm_mn_major" || n == "deepgemm" || n == "deepgemm_sm90") return ScaleLayout::DeepGemmMnMajor;
  if (n == "deepgemm_packed_ue8m0" || n == "deepgemm_ue8m0" || n == "deepgemm_sm100")
    return ScaleLayout::DeepGemmPackedUe8m0;
  return std::nullopt;
}

std::string scaleLayoutNames() {
  return "row_major, cublaslt_swizzled (VEC32_UE8M0 / VEC16_UE4M3), cublaslt_vec128 (VEC128_32F), "
         "cublaslt_blk128x128 (BLK128x128_32F), deepgemm_mn_major (SM90 float32), deepgemm_packed_ue8m0 (SM100)";
}

bool scaleLayoutHoldsCodes(ScaleLayout l) {
  return l == ScaleLayout::CublasLtSwizzled || l == ScaleLayout::DeepGemmPackedUe8m0;
}

std::vector<int64_t> scaleStorageShape(ScaleLayout l, ScaleGridShape g) {
  auto up = [](int64_t x, int64_t m) { return (x + m - 1) / m * m; };
  switch (l) {
  case ScaleLayout::RowMajor:
    return {g.outer, g.kblocks};
  case ScaleLayout::CublasLtSwizzled:
    return {up(g.outer, 128), up(g.kblocks, 4)};
  case ScaleLayout::CublasLtVec128:
    return {g.kblocks, g.outer};
  case ScaleLayout::CublasLtBlk128x128:
    return {g.outer, up(g.kblocks, 4)};
  case ScaleLayout::DeepGemmMnMajor:
    return {g.kblocks, up(g.outer, 4)};
  case ScaleLayout::DeepGemmPackedUe8m0:
    return {(g.kblocks + 3) / 4, up(g.outer, 4)}; // int32 words
  }
  return {};
}

int64_t scaleStorageSize(ScaleLayout l, ScaleGridShape g) {
  switch (l) {
  case ScaleLayout::RowMajor:
    return g.outer * g.kblocks;
  case ScaleLayout::CublasLtSwizzled:
    return roundUp(g.outer, 128) * roundUp(g.kblocks, 4);
  case ScaleLayout::CublasLtVec128:
    return g.kblocks * g.outer;
  case ScaleLayout::CublasLtBlk128x128:
    return g.outer * roundUp(g.kblocks, 4);
  case ScaleLayout::DeepGemmMnMajor:
    return g.kblocks * roundUp(g.outer, 4);
  case ScaleLayout::DeepGemmPackedUe8m0:
    return (g.kblocks + 3) / 4 * roundUp(g.outer, 4) * 4;
  }
  return 0;
}

int64_t scaleOffset(ScaleLayout l, ScaleGridShape g, int64_t o, int64_t kb, int64_t pitch) {
  switch (l) {
  case ScaleLayout::RowMajor:
    return o * g.kblocks + kb;
  case ScaleLayout::CublasLtSwizzled:
    return swizzled((g.kblocks + 3) / 4, o, kb);
  case ScaleLayout::CublasLtVec128:
    return kb * (pitch > 0 ? pitch : g.outer) + o;
  case ScaleLayout::CublasLtBlk128x128:
    return o * (pitch > 0 ? pitch : roundUp(g.kblocks, 4)) + kb;
  case ScaleLayout::DeepGemmMnMajor:
    return kb * (pitch > 0 ? pitch : roundUp(g.outer, 4)) + o;
  case ScaleLayout::DeepGemmPackedUe8m0:
    return ((kb / 4) * (pitch > 0 ? pitch : roundUp(g.outer, 4)) + o) * 4 + kb % 4;
  }
  return 0;
}

std::optional<int64_t> scalePitchFor(ScaleLayout l, ScaleGridShape g, int64_t elements, std::string* error) {
  const int64_t want = scaleStorageSize(l, g);
  if (elements == want) return int64_t(0);
  auto fail = [&](const std::string& extra) -> std::optional<int64_t> {
    if (error)
      *error = std::string(toString(l)) + " storage of a [" + std::to_string(g.outer) + ", " +
               std::to_string(g.kblocks) + "] scale grid (outer × K blocks) holds " + std::to_string(want) +
               " elements" + extra + ", but the file holds " + std::to_string(elements);
    return std::nullopt;
  };
  // A padded pitch: VEC128 outer fastest (elements = KB·P, P ≥ outer), BLK128x128 K fastest
  // (elements = outer·P, P ≥ KB, which takes the unpadded pitch KB of older PyTorch versions too).
  if (l == ScaleLayout::CublasLtVec128 && g.kblocks > 0 && elements % g.kblocks == 0 && elements / g.kblocks >= g.outer)
    return elements / g.kblocks;
  if (l == ScaleLayout::CublasLtBlk128x128 && g.outer > 0 && elements % g.outer == 0 && elements / g.outer >= g.kblocks)
    return elements / g.outer;
  if (l == ScaleLayout::CublasLtVec128) return fail(" (KB · P for a pitch P ≥ outer)");
  if (l == ScaleLayout::CublasLtBlk128x128) return fail(" (outer · P for a pitch P ≥ KB)");
  return fail("");
}

template <class T> std::vector<T> packScales(ScaleLayout l, ScaleGridShape g, const std::vector<T>& grid, T pad) {
  if (static_cast<int64_t>(grid.size()) != g.outer * g.kblocks)
    throw std::invalid_argument("packScales: the grid holds " + std::to_string(grid.size()) + " values, [" +
                                std::to_string(g.outer) + ", " + std::to_string(g.kblocks) + "] needs " +
                                std::to_string(g.outer * g.kblocks));
  std::vector<T> s(static_cast<size_t>(scaleStorageSize(l, g)), pad);
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t kb = 0; kb < g.kblocks; ++kb)
      s[static_cast<size_t>(scaleOffset(l, g, o, kb))] = grid[static_cast<size_t>(o * g.kblocks + kb)];
  return s;
}

template <class T>
std::optional<std::vector<T>> unpackScales(ScaleLayout l, ScaleGridShape g, const std::vector<T>& storage,
                                           std::string* error) {
  const auto pitch = scalePitchFor(l, g, static_cast<int64_t>(storage.size()), error);
  if (!pitch) return std::nullopt;
  std::vector<T> grid(static_cast<size_t>(g.outer * g.kblocks));
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t kb = 0; kb < g.kblocks; ++kb)
      grid[static_cast<size_t>(o * g.kblocks + kb)] = storage[static_cast<size_t>(scaleOffset(l, g, o, kb, *pitch))];
  return grid;
}

template <class T> std::vector<T> transposeGrid(const std::vector<T>& grid, int64_t rows, int64_t cols) {
  std::vector<T> t(grid.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[static_cast<size_t>(j * rows + i)] = grid[static_cast<size_t>(i * cols + j)];
  return t;
}

template std::vector<float> packScales(ScaleLayout, ScaleGridShape, const std::vector<float>&, float);
template std::vector<uint8_t> packScales(ScaleLayout, ScaleGridShape, const std::vector<uint8_t>&, uint8_t);
template std::optional<std::vector<float>> unpackScales(ScaleLayout, ScaleGridShape, const std::vector<float>&,
                                                        std::string*);
template std::optional<std::vector<uint8_t>> unpackScales(ScaleLayout, ScaleGridShape, const std::vector<uint8_t>&,
                                                          std::string*);
template std::vector<float> transposeGrid(const std::vector<float>&, int64_t, int64_t);
template std::vector<uint8_t> transposeGrid(const std::vector<uint8_t>&, int64_t, int64_t);

std::optional<NibbleOrder> parseNibbleOrder(std::string_view s) {
  const std::string n = normalizedName(s);
  if (n == "low_first" || n == "low" || n == "true") return NibbleOrder::LowFirst;
  if (n == "high_first" || n == "high") return NibbleOrder::HighFirst;
  return std::nullopt;
}

const char* toString(NibbleOrder o) {
  return o == NibbleOrder::LowFirst ? "low_first" : "high_first";
}

std::vector<uint8_t> unpackFp4(const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols_bytes, NibbleOrder o) {
  if (static_cast<int64_t>(bytes.size()) != rows * cols_bytes)
    throw std::invalid_argument("unpackFp4: " + std::to_string(bytes.size()) + " bytes for [" + std::to_string(rows) +
                                ", " + std::to_string(cols_bytes) + "]");
  std::vector<uint8_t> c(bytes.size() * 2);
  const int first = o == NibbleOrder::LowFirst ? 0 : 4, second = 4 - first;
  for (size_t i = 0; i < bytes.size(); ++i) {
    c[2 * i] = static_cast<uint8_t>((bytes[i] >> first) & 0xF);
    c[2 * i + 1] = static_cast<uint8_t>((bytes[i] >> second) & 0xF);
  }
  return c;
}

std::vector<uint8_t> packFp4(const std::vector<uint8_t>& codes, int64_t rows, int64_t cols, NibbleOrder o) {
  if (cols % 2 != 0 || static_cast<int64_t>(codes.size()) != rows * cols)
    throw std::invalid_argument("packFp4: [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "] needs an even number of columns and rows·cols codes");
  std::vector<uint8_t> b(codes.size() / 2);
  const int first = o == NibbleOrder::LowFirst ? 0 : 4, second = 4 - first;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<uint8_t>(((codes[2 * i] & 0xF) << first) | ((codes[2 * i + 1] & 0xF) << second));
  return b;
}

} // namespace fp8lab

// Scale grid files packed into and unpacked from kernel scale layouts (scale_file.h).
#include "io/scale_file.h"

#include "io/npy_writer.h"
#include "io/tensor_import.h"

#include <optional>

namespace fp8lab {

namespace {

/// The values of a scale file as T (uint8 codes or float32); nullopt with *error set.
template <class T> std::optional<std::vector<T>> readScales(const std::string& spec, bool words, std::string* error) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    auto r = importCodeTensor(spec, words);
    if (!r.ok()) return *error = r.errors(), std::nullopt;
    return std::move(r.value.u8);
  } else {
    auto r = importTensor(spec);
    if (!r.ok()) return *error = r.errors(), std::nullopt;
    if (r.value.dtype != DType::Float32) return *error = "'" + spec + "' is float64; scales are float32", std::nullopt;
    return std::move(r.value.f32);
  }
}

template <class T>
std::string pack(ScaleLayout layout, ScaleGridShape g, const std::string& in, const std::string& out) {
  std::string error;
  const auto grid = readScales<T>(in, false, &error);
  if (!grid) return error;
  if (int64_t(grid->size()) != g.outer * g.kblocks)
    return "'" + in + "' holds " + std::to_string(grid->size()) + " scales, the grid [" + std::to_string(g.outer) +
           ", " + std::to_string(g.kblocks) + "] needs " + std::to_string(g.outer * g.kblocks);
  const std::vector<T> storage = packScales(layout, g, *grid, T(0));
  const std::vector<int64_t> shape = scaleStorageShape(layout, g);
  Status st;
  if constexpr (std::is_same_v<T, uint8_t>)
    st = layout == ScaleLayout::DeepGemmPackedUe8m0
             ? writeNpy(out, "<i4", shape, std::vector<unsigned char>(storage.begin(), storage.end()))
             : writeNpy(out, shape, storage);
  else
    st = writeNpy(out, shape, storage);
  return st.ok() ? std::string() : st.errors();
}

template <class T>
std::string unpack(ScaleLayout layout, ScaleGridShape g, const std::string& in, const std::string& out) {
  std::string error;
  const auto storage = readScales<T>(in, layout == ScaleLayout::DeepGemmPackedUe8m0, &error);
  if (!storage) return error;
  const auto grid = unpackScales(layout, g, *storage, &error);
  if (!grid) return error;
  const Status st = writeNpy(out, {g.outer, g.kblocks}, *grid);
  return st.ok() ? std::string() : st.errors();
}

} // namespace

std::string packScaleFile(ScaleLayout layout, ScaleGridShape g, const std::string& in, const std::string& out) {
  return scaleLayoutHoldsCodes(layout) ? pack<uint8_t>(layout, g, in, out) : pack<float>(layout, g, in, out);
}

std::string unpackScaleFile(ScaleLayout layout, ScaleGridShape g, const std::string& in, const std::string& out) {
  return scaleLayoutHoldsCodes(layout) ? unpack<uint8_t>(layout, g, in, out) : unpack<float>(layout, g, in, out);
}

} // namespace fp8lab

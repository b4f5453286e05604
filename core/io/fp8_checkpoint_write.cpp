// FP8 Lab — writing FP8 checkpoints in safetensors (fp8_checkpoint.h, docs/checkpoints.md): the
// safetensors file writer, the tensors of one FP8 weight with its scale, and the quantization a
// checkpoint export uses. Reading is fp8_checkpoint.cpp.
#include "io/fp8_checkpoint.h"

#include "formats/format.h"
#include "io/atomic_file.h"
#include "io/import_detail.h"
#include "json/json_document.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <stdexcept>

namespace fp8lab {

using C = Issue::Code;
using import_detail::shapeText;

namespace {

void putLe32(std::vector<unsigned char>* out, uint32_t v) {
  for (int k = 0; k < 4; ++k) out->push_back(static_cast<unsigned char>((v >> (8 * k)) & 0xFF));
}

} // namespace

Status writeSafetensors(const std::string& path, std::vector<SafetensorsTensor> tensors,
                        const std::map<std::string, std::string>& metadata) {
  Status st;
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  Json header = Json::object();
  if (!metadata.empty()) {
    Json m = Json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = m;
  }
  int64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    if (t.name.empty() || t.name == "__metadata__" || (i > 0 && tensors[i - 1].name == t.name)) {
      st.add(C::InvalidArgument, path + ":" + t.name, "tensor names must be unique, not empty and not __metadata__");
      return st;
    }
    int64_t n = 1;
    for (auto d : t.shape) n *= d;
    const int eb = safetensorsDtypeBytes(t.dtype);
    if (eb == 0 || static_cast<int64_t>(t.bytes.size()) != n * eb) {
      st.add(C::InvalidArgument, path + ":" + t.name,
             "dtype " + t.dtype + " " + shapeText(t.shape) + " does not match " + std::to_string(t.bytes.size()) +
                 " bytes");
      return st;
    }
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + static_cast<int64_t>(t.bytes.size())}}};
    offset += static_cast<int64_t>(t.bytes.size());
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  std::vector<unsigned char> out;
  out.reserve(8 + text.size() + static_cast<size_t>(offset));
  const uint64_t n = text.size();
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<unsigned char>((n >> (8 * k)) & 0xFF));
  out.insert(out.end(), text.begin(), text.end());
  for (const auto& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());

  return writeFileAtomically(path, out);
}

SafetensorsTensor float32Tensor(const std::string& name, const std::vector<float>& v, int64_t rows, int64_t cols) {
  SafetensorsTensor t;
  t.name = name;
  t.dtype = "F32";
  t.shape = rows > 0 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{cols};
  for (float x : v) putLe32(&t.bytes, std::bit_cast<uint32_t>(x));
  return t;
}

std::vector<SafetensorsTensor> fp8WeightTensors(const std::string& prefix, const QuantizedTensor& q,
                                                Fp8ScaleLayout layout) {
  const bool e4 = q.format == &Format::E4M3FN() || (q.format && q.format->name() == "E4M3FN");
  const bool e5 = q.format == &Format::E5M2() || (q.format && q.format->name() == "E5M2");
  if (!e4 && !e5) throw std::invalid_argument("fp8WeightTensors: the format must be E4M3FN or E5M2");
  const bool per_tensor = layout == Fp8ScaleLayout::PerTensor;
  const bool per_channel = layout == Fp8ScaleLayout::PerChannel;
  if (per_tensor && (q.block.rows < q.rows || q.block.cols < q.cols))
    throw std::invalid_argument("fp8WeightTensors: per_tensor needs one scale block covering the tensor");
  if (per_channel && (q.block.rows != 1 || q.block.cols < q.cols))
    throw std::invalid_argument("fp8WeightTensors: per_channel needs one scale per row");
  if (layout == Fp8ScaleLayout::Block && q.block.rows != q.block.cols)
    throw std::invalid_argument("fp8WeightTensors: the block layout needs square scale blocks");
  std::vector<SafetensorsTensor> out(2);
  out[0].name = prefix + ".weight";
  out[0].dtype = e4 ? "F8_E4M3" : "F8_E5M2";
  out[0].shape = {q.rows, q.cols};
  out[0].bytes.assign(q.codes.begin(), q.codes.end());
  if (per_tensor) {
    out[1] = float32Tensor(prefix + ".weight_scale", q.dequant_scales, 0, 1);
  } else if (per_channel) {
    out[1] = float32Tensor(prefix + ".weight_scale", q.dequant_scales, q.rows, 1);
  } else {
    out[1] = float32Tensor(prefix + ".weight_scale_inv", q.dequant_scales, q.blockRows(), q.blockCols());
  }
  return out;
}

QuantizedTensor quantizeForCheckpoint(const std::vector<float>& w, int64_t rows, int64_t cols, Fp8ScaleLayout layout,
                                      const Format& format) {
  if (rows < 1 || cols < 1 || w.size() != static_cast<size_t>(rows * cols))
    throw std::invalid_argument("quantizeForCheckpoint: " + std::to_string(w.size()) + " values for [" +
                                std::to_string(rows) + ", " + std::to_string(cols) + "]");
  if (&format != &Format::E4M3FN() && &format != &Format::E5M2())
    throw std::invalid_argument("quantizeForCheckpoint: checkpoints store E4M3FN or E5M2, not " + format.name());
  const char* name = layout == Fp8ScaleLayout::PerTensor    ? "te_current"
                     : layout == Fp8ScaleLayout::PerChannel ? "per_row"
                                                            : "deepgemm_128x128";
  const auto preset = scalingPreset(name);
  if (!preset) throw std::invalid_argument("quantizeForCheckpoint: scaling preset missing");
  return quantize(w.data(), rows, cols, format, *preset, Axis::Cols);
}

} // namespace fp8lab

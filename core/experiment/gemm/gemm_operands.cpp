// FP8 Lab — the operands of a GEMM experiment (gemm_operands.h).
#include "experiment/gemm/gemm_operands.h"

#include "common/worker_pool.h"
#include "formats/format.h"
#include "gemm/error_split.h"
#include "gemm/random_matrix.h"
#include "io/fp8_checkpoint.h"
#include "io/tensor_import.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace fp8lab {

namespace {

std::string shapeStr(int64_t r, int64_t c) {
  std::string t = "[";
  t += std::to_string(r);
  t += ", ";
  t += std::to_string(c);
  return t + "]";
}

} // namespace

bool fitsInMemory(int64_t m, int64_t k, int64_t n, int64_t limit, const std::string& where, Status* st) {
  const double need = gemmExperimentBytes(m, n, k);
  const double have = double(limit > 0 ? limit : availableMemoryBytes());
  if (need <= have) return true;
  auto gib = [](double b) {
    char t[40];
    std::snprintf(t, sizeof t, b >= 0x1p30 ? "%.3g GiB" : "%.3g MiB", b / (b >= 0x1p30 ? 0x1p30 : 0x1p20));
    return std::string(t);
  };
  st->add(Issue::Code::InvalidArgument, where,
          "GEMM " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + " needs about " +
              gib(need) + " of buffers, more than the " + gib(have) +
              (limit > 0 ? " allowed" : " of memory available") + "; refused before allocating anything");
  return false;
}

bool loadOperand(const OperandSource& src, int64_t rows, int64_t cols, uint64_t seed, uint64_t stream, int threads,
                 const char* name, GemmOperand* op, Status* st) {
  if (src.values) {
    if (src.rows < 1 || src.cols < 1 || static_cast<int64_t>(src.values->size()) != src.rows * src.cols) {
      st->add(Issue::Code::InvalidArgument, name,
              std::string(name) + " holds " + std::to_string(src.values->size()) + " values, not [" +
                  std::to_string(src.rows) + ", " + std::to_string(src.cols) + "]");
      return false;
    }
    op->rows = src.rows;
    op->cols = src.cols;
    op->f32 = *src.values;
    op->origin = src.origin;
    return true;
  }
  if (src.tensor.empty()) {
    if (src.random.distribution == Distribution::ChannelOutliers &&
        src.random.outlier_channels > (src.random.outlier_rows ? rows : cols)) {
      st->add(Issue::Code::InvalidArgument, std::string(name[0] == 'A' ? "a" : "b") + ".outlier_channels",
              std::to_string(src.random.outlier_channels) + " outlier channels, but " + name + " [" +
                  std::to_string(rows) + ", " + std::to_string(cols) + "] has " +
                  std::to_string(src.random.outlier_rows ? rows : cols) +
                  (src.random.outlier_rows ? " rows" : " columns"));
      return false;
    }
    op->rows = rows;
    op->cols = cols;
    op->f32 = randomMatrix(rows, cols, seed, src.random, stream, threads);
    op->origin = std::string("random ") + toString(src.random.distribution) + " (seed " + std::to_string(seed) +
                 ", stream " + std::to_string(stream) + ")";
    // A scale so large that the values overflow float32 (normal · 1e45) gives ±Inf operands whose
    // every error reads 0 — a perfect-looking result from nothing. Imported tensors that hold
    // NaN / Inf run with a warning instead (the caller counts them); generated ones are refused.
    int64_t inf = 0, nan = 0;
    for (float v : op->f32) {
      inf += std::isinf(v);
      nan += std::isnan(v);
    }
    if (inf + nan > 0) {
      char scale[32], max[32];
      std::snprintf(scale, sizeof scale, "%g", src.random.scale);
      std::snprintf(max, sizeof max, "%g", double(std::numeric_limits<float>::max()));
      st->add(Issue::Code::InvalidArgument, std::string(name[0] == 'A' ? "a" : "b") + ".scale",
              "scale " + std::string(scale) + " of the random " + toString(src.random.distribution) + " " + name +
                  " overflows float32 (max " + max + "): " + std::to_string(inf + nan) + " of " +
                  std::to_string(rows * cols) + " elements of " + name +
                  (nan > 0 ? " are not finite (NaN or ±Inf)" : " are infinite") +
                  "; use a smaller scale (fp8lab-cli gemm --scale)");
      return false;
    }
    return true;
  }
  auto t = importTensor(src.tensor);
  if (!t.ok()) {
    st->merge(t);
    return false;
  }
  Dataset& d = t.value;
  if (d.shape.size() == 1) d.shape = {1, d.shape[0]};
  int64_t r = d.shape[0], c = d.shape[1];
  op->is64 = d.dtype == DType::Float64;
  op->f32 = std::move(d.f32);
  op->f64 = std::move(d.f64);
  if (src.transpose) {
    auto tr = [&](auto& v) {
      std::remove_reference_t<decltype(v)> o(v.size());
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < c; ++j) o[static_cast<size_t>(j * r + i)] = v[static_cast<size_t>(i * c + j)];
      v.swap(o);
    };
    if (op->is64)
      tr(op->f64);
    else
      tr(op->f32);
    std::swap(r, c);
  }
  op->rows = r;
  op->cols = c;
  op->origin = src.tensor + (src.transpose ? " (transposed)" : "");
  (void)name;
  return true;
}

bool loadPreQuantized(const PreQuantizedSource& p, const char* key, QuantizedTensor* q, GemmOperand* op, Status* st,
                      PreQuantizedFindings* findings) {
  const std::string at = std::string(key) + ".";
  auto bad = [&](const std::string& k, const std::string& why) {
    st->add(Issue::Code::InvalidArgument, at + k, why);
    return false;
  };
  if (!p.checkpoint.empty()) {
    Fp8ImportOptions opt;
    opt.scale_name = p.checkpoint_scale;
    auto ck = importFp8Checkpoint(p.checkpoint, p.checkpoint_tensor, opt);
    st->merge(ck);
    if (!ck.ok()) return false;
    if (ck.value.format->name() != p.format)
      return bad("tensor", "'" + p.checkpoint_tensor + "' is " + ck.value.format->name() + " now but was " + p.format +
                               " when the config was read");
    *q = p.transpose ? transposeQuantized(ck.value) : std::move(ck.value);
    op->rows = q->rows;
    op->cols = q->cols;
    op->is64 = true;
    op->f64.resize(static_cast<size_t>(q->rows * q->cols));
    for (int64_t i = 0; i < q->rows; ++i)
      for (int64_t j = 0; j < q->cols; ++j) op->f64[static_cast<size_t>(i * q->cols + j)] = q->dequantizedAt(i, j);
    op->origin = "checkpoint: " + q->strategy + (p.transpose ? " (transposed)" : "");
    return true;
  }
  const Format* f = Format::byName(p.format);
  if (!f || f->bits() > 8) return bad("format", "'" + p.format + "' is unknown or wider than 8 bits");
  auto codes = importCodeTensor(p.codes);
  if (!codes.ok()) {
    st->merge(codes);
    return false;
  }
  Dataset& cd = codes.value;
  if (cd.shape.size() == 1) cd.shape = {1, cd.shape[0]};
  const std::string code_dtype = attrString(cd.attrs, "source_dtype").value_or("");
  if ((code_dtype == "F8_E4M3" && f->name() != "E4M3FN") || (code_dtype == "F8_E5M2" && f->name() != "E5M2") ||
      code_dtype == "F8_E8M0")
    return bad("codes", "'" + p.codes + "' holds " + code_dtype + " codes but the operand's format is " + f->name());
  // Packed FP4: two codes a byte along the stored rows.
  if (p.packed) {
    cd.u8 = unpackFp4(cd.u8, cd.shape[0], cd.shape[1], *p.packed);
    cd.shape[1] *= 2;
  }
  // The codes as stored (B stored [N, K] K-major with "transpose"), transposed below.
  const int64_t rows = cd.shape[0], cols = cd.shape[1];
  if (rows < 1 || cols < 1) return bad("codes", "'" + p.codes + "' is " + shapeStr(rows, cols) + ": empty");
  const uint32_t limit = 1u << f->bits();
  for (size_t i = 0; i < cd.u8.size(); ++i)
    if (cd.u8[i] >= limit) {
      char hex[8], lim[8];
      std::snprintf(hex, sizeof hex, "0x%02X", cd.u8[i]);
      std::snprintf(lim, sizeof lim, "0x%02X", limit);
      return bad("codes", "code " + std::string(hex) + " at (" + std::to_string(int64_t(i) / cols) + ", " +
                              std::to_string(int64_t(i) % cols) + ") of '" + p.codes + "' is out of range for " +
                              f->name() + " (" + std::to_string(f->bits()) + " bits: codes below " + lim + ")");
    }
  q->rows = rows;
  q->cols = cols;
  q->format = f;
  q->codes = std::move(cd.u8);
  q->block = p.block.rows > 0 ? p.block : ScaleBlock{rows, cols};
  q->strategy = "pre-quantized (" + p.codes + ")";
  q->stats.elements = rows * cols;
  const int64_t gr = q->blockRows(), gc = q->blockCols();
  std::string scale_dtype;
  if (p.scales.empty()) {
    q->dequant_scales = {static_cast<float>(p.scale)};
  } else {
    const bool float_scales = p.scale_format == PreQuantizedSource::ScaleFormat::Float32;
    const bool layout = p.scale_layout != ScaleLayout::RowMajor;
    auto sd = float_scales ? importTensor(p.scales)
                           : importCodeTensor(p.scales, p.scale_layout == ScaleLayout::DeepGemmPackedUe8m0);
    if (!sd.ok()) {
      st->merge(sd);
      return false;
    }
    Dataset& d = sd.value;
    scale_dtype = attrString(d.attrs, "source_dtype").value_or("");
    if (float_scales && d.dtype != DType::Float32)
      return bad("scales", "'" + p.scales +
                               "' holds float64 values; float32 scales are float16, bfloat16 or "
                               "float32 (the GEMM applies float32 factors)");
    if (layout) {
      // A hardware layout holds the grid in the (outer, K-block) orientation of the operand as the
      // GEMM uses it (kernel_layout.h): A's grid [M-blocks, K-blocks] as it is, B's [K-blocks,
      // N-blocks] transposed. The file is read as its flat storage.
      const bool is_a = key[0] == 'a';
      const int64_t lr = p.transpose ? gc : gr, lc = p.transpose ? gr : gc; // the operand's grid
      const ScaleGridShape g = is_a ? ScaleGridShape{lr, lc} : ScaleGridShape{lc, lr};
      std::string why;
      std::vector<float> grid_f;
      std::vector<uint8_t> grid_c;
      if (float_scales) {
        auto v = unpackScales(p.scale_layout, g, d.f32, &why);
        if (!v) return bad("scales", "'" + p.scales + "': " + why);
        grid_f = is_a ? std::move(*v) : transposeGrid(*v, g.outer, g.kblocks);
        if (p.transpose) grid_f = transposeGrid(grid_f, lr, lc); // to the stored orientation
        d.f32 = std::move(grid_f);
      } else {
        auto v = unpackScales(p.scale_layout, g, d.u8, &why);
        if (!v) return bad("scales", "'" + p.scales + "': " + why);
        grid_c = is_a ? std::move(*v) : transposeGrid(*v, g.outer, g.kblocks);
        if (p.transpose) grid_c = transposeGrid(grid_c, lr, lc);
        d.u8 = std::move(grid_c);
      }
      d.shape = {gr, gc};
    }
    // A 1-D scale vector fits a grid with one row or one column (per-row scales of A: [M]).
    if (d.shape.size() == 1 && (gr == 1 || gc == 1)) d.shape = {gr, gc};
    if (d.shape.size() == 1) d.shape = {1, d.shape[0]};
    if (d.shape[0] != gr || d.shape[1] != gc)
      return bad("scales", "'" + p.scales + "' is " + shapeStr(d.shape[0], d.shape[1]) + " but codes " +
                               shapeStr(rows, cols) + " in blocks of " + shapeStr(q->block.rows, q->block.cols) +
                               " need a scale grid of " + shapeStr(gr, gc));
    if (float_scales) {
      q->dequant_scales = std::move(d.f32);
    } else {
      const bool e8 = p.scale_format == PreQuantizedSource::ScaleFormat::E8M0;
      const Format& sf = e8 ? Format::E8M0FNU() : Format::E4M3FN();
      q->scale_format = &sf;
      q->scale_codes = std::move(d.u8);
      q->dequant_scales.resize(q->scale_codes.size());
      for (size_t i = 0; i < q->scale_codes.size(); ++i)
        q->dequant_scales[i] = static_cast<float>(sf.decode(q->scale_codes[i]));
      if (!e8 && p.tensor_kind == TensorScale::Kind::TeAmax) {
        q->tensor_scale.kind = TensorScale::Kind::TeAmax;
        q->tensor_scale.amax = p.tensor_amax;
        q->tensor_scale.value = teNvfp4GlobalEncodeScale(p.tensor_amax, p.fp4_fp8_max / 6.0f);
        q->tensor_scale.fp4_fp8_max = p.fp4_fp8_max;
      } else if (!e8 && p.tensor_kind == TensorScale::Kind::TorchaoPts) {
        q->tensor_scale.kind = TensorScale::Kind::TorchaoPts;
        q->tensor_scale.value = p.tensor_scale;
      }
    }
  }
  if (p.transpose) *q = transposeQuantized(*q);
  // A kernel developer's mistakes in the scales and codes: refused or warned per block.
  if (!checkPreQuantizedOperand(*q, key, p.scales.empty() ? std::string("one per-tensor scale") : p.scales, scale_dtype,
                                st, findings))
    return false;
  op->rows = q->rows;
  op->cols = q->cols;
  op->is64 = true;
  op->f64.resize(static_cast<size_t>(q->rows * q->cols));
  for (int64_t i = 0; i < q->rows; ++i)
    for (int64_t j = 0; j < q->cols; ++j) op->f64[static_cast<size_t>(i * q->cols + j)] = q->dequantizedAt(i, j);
  describeDequantizedOperand(*q, op->f64, key, st);
  op->origin = "pre-quantized: " + f->name() + " codes " + p.codes + (p.transpose ? " (transposed)" : "") +
               (p.packed ? std::string(" (packed FP4, ") + toString(*p.packed) + ")" : std::string()) + ", scales " +
               (p.scales.empty() ? std::string("one per tensor")
                                 : p.scales + (p.scale_layout != ScaleLayout::RowMajor
                                                   ? std::string(" (") + toString(p.scale_layout) + ")"
                                                   : std::string()));
  return true;
}

QuantizedTensor quantizeOperand(const GemmOperand& op, const Format& f, const ScalingConfig& cfg, Axis axis,
                                const ProgressFn& p) {
  return op.is64 ? quantize(op.f64.data(), op.rows, op.cols, f, cfg, axis, p)
                 : quantize(op.f32.data(), op.rows, op.cols, f, cfg, axis, p);
}

QuantizedTensor quantizeNvfp4Operand(const GemmOperand& op, const Nvfp4Config& c, Axis axis) {
  std::vector<float> narrowed;
  const float* x = op.f32.data();
  if (op.is64) {
    narrowed.assign(op.f64.begin(), op.f64.end());
    x = narrowed.data();
  }
  return toQuantizedTensor(quantizeNvfp4(x, op.rows, op.cols, c, axis), c, x);
}

} // namespace fp8lab

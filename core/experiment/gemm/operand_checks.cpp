// FP8 Lab — checks of pre-quantized operands (operand_checks.h).
#include "experiment/gemm/operand_checks.h"

#include "formats/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fp8lab {

namespace {

using C = Issue::Code;

std::string num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string hex(uint32_t c) {
  char b[8];
  std::snprintf(b, sizeof b, "0x%02X", c);
  return b;
}

/// Blocks of a scale grid that share one finding: "(0, 3), (1, 3) and 14 more".
struct BlockList {
  std::vector<std::pair<int64_t, int64_t>> first;
  int64_t count = 0;
  void add(int64_t r, int64_t c) {
    if (first.size() < 5) first.push_back({r, c});
    ++count;
  }
  std::string text() const {
    std::string s;
    for (size_t i = 0; i < first.size(); ++i)
      s += (i ? ", " : "") + std::string("(") + std::to_string(first[i].first) + ", " +
           std::to_string(first[i].second) + ")";
    if (count > int64_t(first.size())) s += " and " + std::to_string(count - int64_t(first.size())) + " more";
    return s;
  }
};

} // namespace

bool checkPreQuantizedOperand(const QuantizedTensor& q, const std::string& key, const std::string& scales,
                              const std::string& scale_dtype, Status* st, PreQuantizedFindings* findings) {
  const std::string name = key == "a" ? "A" : "B";
  const std::string at = key + ".scales";
  const int64_t gr = q.blockRows(), gc = q.blockCols();
  const bool codes = !q.scale_codes.empty();
  const bool ue4m3 = codes && q.scale_format && q.scale_format->name() == "E4M3FN";
  const bool f16 = scale_dtype == "<f2" || scale_dtype == ">f2" || scale_dtype == "=f2" || scale_dtype == "F16";
  const bool bf16 = scale_dtype == "BF16";
  // Which blocks hold a non-zero code (decoded value ≠ 0, NaN included).
  std::vector<char> nonzero(static_cast<size_t>(gr * gc), 0);
  const std::vector<float>& table = q.format->decodeTable();
  PreQuantizedFindings f;
  std::vector<char> nan_line(static_cast<size_t>(key == "a" ? q.rows : q.cols), 0);
  for (int64_t i = 0; i < q.rows; ++i)
    for (int64_t j = 0; j < q.cols; ++j) {
      const uint8_t c = q.codes[static_cast<size_t>(i * q.cols + j)];
      const float v = table[c];
      if (v != 0.0f) nonzero[static_cast<size_t>((i / q.block.rows) * gc + j / q.block.cols)] = 1;
      if (std::isnan(v)) {
        if (!f.first_nan.valid()) f.first_nan = {i, j};
        ++f.nan_codes;
        nan_line[static_cast<size_t>(key == "a" ? i : j)] = 1;
      } else if (std::isinf(v)) {
        ++f.inf_codes;
      }
    }
  for (size_t l = 0; l < nan_line.size(); ++l)
    if (nan_line[l]) f.nan_lines.push_back(static_cast<int64_t>(l));
  BlockList nonfinite, negative, signed_code, zero, subnormal;
  for (int64_t r = 0; r < gr; ++r)
    for (int64_t c = 0; c < gc; ++c) {
      const size_t b = static_cast<size_t>(r * gc + c);
      const float s = q.dequant_scales[b];
      if (ue4m3 && (q.scale_codes[b] & 0x80) && !std::isnan(s)) {
        signed_code.add(r, c);
        continue;
      }
      if (!std::isfinite(s))
        nonfinite.add(r, c);
      else if (s < 0)
        negative.add(r, c);
      else if (s == 0 && nonzero[b])
        zero.add(r, c);
      else if (s != 0 && ((f16 && std::fabs(s) < 0x1p-14f) || (bf16 && std::fabs(s) < 0x1p-126f)))
        subnormal.add(r, c);
    }
  const std::string grid = " of " + name + "'s scale grid [" + std::to_string(gr) + ", " + std::to_string(gc) +
                           "] (blocks of " + std::to_string(q.block.rows) + "x" + std::to_string(q.block.cols) +
                           ") in '" + scales + "'";
  bool ok = true;
  if (nonfinite.count > 0) {
    std::string what = codes ? std::string(" (") + (ue4m3 ? "E4M3 0x7F / 0xFF" : "E8M0 0xFF") + " is NaN)" : "";
    st->add(C::InvalidArgument, at,
            std::to_string(nonfinite.count) + " scale(s) are NaN or infinite" + what + ": block(s) " +
                nonfinite.text() + grid);
    ok = false;
  }
  if (negative.count > 0) {
    st->add(C::InvalidArgument, at,
            std::to_string(negative.count) + " scale(s) are negative: block(s) " + negative.text() + grid +
                "; a dequant factor is > 0");
    ok = false;
  }
  if (signed_code.count > 0) {
    st->add(C::InvalidArgument, at,
            std::to_string(signed_code.count) + " E4M3 scale code(s) have the sign bit set (first " +
                hex(q.scale_codes[static_cast<size_t>(signed_code.first[0].first * gc + signed_code.first[0].second)]) +
                "): block(s) " + signed_code.text() + grid +
                "; NVFP4 block scales are unsigned UE4M3 (cuBLASLt VEC16_UE4M3): codes 0x00..0x7E");
    ok = false;
  }
  if (!ok) return false;
  if (zero.count > 0)
    st->add(C::Computation, at,
            std::to_string(zero.count) + " block(s) have scale 0 but hold non-zero codes, which all dequantize to 0: " +
                "block(s) " + zero.text() + grid,
            Severity::Warning);
  if (subnormal.count > 0)
    st->add(C::Computation, at,
            std::to_string(subnormal.count) + " " + (f16 ? "float16" : "bfloat16") + " scale(s) are subnormal (below " +
                (f16 ? "2^-14" : "2^-126") + ", fewer significant bits: the file's values are lossy): block(s) " +
                subnormal.text() + grid,
            Severity::Warning);
  if (f.nan_codes > 0) {
    const std::string line = key == "a" ? "row" : "column";
    std::string lines;
    for (size_t i = 0; i < f.nan_lines.size() && i < 5; ++i) lines += (i ? ", " : "") + std::to_string(f.nan_lines[i]);
    if (f.nan_lines.size() > 5) lines += ", ...";
    const uint8_t c0 = q.codes[static_cast<size_t>(f.first_nan.row * q.cols + f.first_nan.col)];
    st->add(C::Computation, key + ".codes",
            name + " holds " + std::to_string(f.nan_codes) + " NaN code(s) (" + q.format->name() + " " + hex(c0) +
                " first, at (" + std::to_string(f.first_nan.row) + ", " + std::to_string(f.first_nan.col) +
                ")): a NaN product makes its whole sum NaN, so every output of D in " + line +
                (f.nan_lines.size() == 1 ? " " : "s ") + lines + " of " + name + " (" +
                std::to_string(f.nan_lines.size()) + " " + line + (f.nan_lines.size() == 1 ? "" : "s") + ") is NaN",
            Severity::Warning);
  }
  if (findings) *findings = std::move(f);
  return true;
}

void describeDequantizedOperand(const QuantizedTensor& q, const std::vector<double>& deq, const std::string& key,
                                Status* st) {
  const std::string name = key == "a" ? "A" : "B";
  double lo = INFINITY, hi = -INFINITY, amax = 0;
  std::vector<double> mags;
  mags.reserve(deq.size());
  for (double v : deq) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    amax = std::max(amax, std::fabs(v));
    mags.push_back(std::fabs(v));
  }
  if (mags.empty()) {
    st->add(C::Computation, key, name + " dequantized: no finite element", Severity::Warning);
    return;
  }
  const size_t mid = mags.size() / 2;
  std::nth_element(mags.begin(), mags.begin() + static_cast<std::ptrdiff_t>(mid), mags.end());
  const double med = mags[mid];
  st->add(C::Computation, key,
          name + " dequantized: [" + num(lo) + ", " + num(hi) + "], amax " + num(amax) + ", median |x| " + num(med) +
              " over " + std::to_string(mags.size()) + " finite elements",
          Severity::Info);
  // The effective dequant factors of the blocks (NVFP4: times the tensor's second level).
  std::vector<double> s;
  for (float v : q.dequant_scales) {
    const double e = q.tensor_scale.kind == TensorScale::Kind::None ? v : q.tensor_scale.blockFactor(v);
    if (std::isfinite(e) && e > 0) s.push_back(e);
  }
  if (s.empty()) return;
  const size_t sm = s.size() / 2;
  std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(sm), s.end());
  const double fmax = q.format->maxFinite();
  if (s[sm] > 1 && amax >= fmax * fmax / 4)
    st->add(C::Computation, key,
            name + "'s dequantized values reach " + num(amax) + " with a median scale of " + num(s[sm]) +
                ": these look like quant multipliers (x_q = cast(x * s): Transformer Engine's `scale`) where FP8 Lab "
                "takes dequant factors (x ~= decode(code) * s: cuBLASLt's a_scale / b_scale, torch._scaled_mm's "
                "scale_a / scale_b, TE's `scale_inv`); if so, pass 1/s",
            Severity::Warning);
}

} // namespace fp8lab

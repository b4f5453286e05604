#include "scale_layout.h"

#include <algorithm>
#include <stdexcept>

namespace fp8lab::gpu {
namespace {

struct Extents {
  int64_t k = 0, outer = 0; // tensor sizes along K and the outer dimension
  int64_t ek = 0, eo = 0;   // block extents, clamped to the tensor
};

Extents extentsOf(const QuantizedTensor& t, Operand role) {
  Extents e;
  if (role == Operand::A) {
    e.k = t.cols;
    e.outer = t.rows;
    e.ek = std::min(t.block.cols, t.cols);
    e.eo = std::min(t.block.rows, t.rows);
  } else {
    e.k = t.rows;
    e.outer = t.cols;
    e.ek = std::min(t.block.rows, t.rows);
    e.eo = std::min(t.block.cols, t.cols);
  }
  return e;
}

bool representable(const Extents& e, LtScaleMode m) {
  const bool k_whole = e.ek >= e.k;
  const bool k_128 = k_whole || e.ek % 128 == 0;
  switch (m) {
  case LtScaleMode::Scalar:
    return k_whole && e.eo >= e.outer;
  case LtScaleMode::OuterVec:
    return k_whole;
  case LtScaleMode::Vec128:
    return k_128;
  case LtScaleMode::Blk128x128:
    return k_128 && (e.eo >= e.outer || e.eo % 128 == 0);
  }
  return false;
}

const char* roleName(Operand r) {
  return r == Operand::A ? "A" : "B";
}

void checkTensor(const QuantizedTensor& t, const char* what) {
  if (t.rows < 1 || t.cols < 1) throw std::invalid_argument(std::string(what) + ": empty tensor");
  if (t.codes.size() != static_cast<size_t>(t.rows * t.cols))
    throw std::invalid_argument(std::string(what) + ": codes hold " + std::to_string(t.codes.size()) +
                                " values, expected rows·cols = " + std::to_string(t.rows * t.cols));
  if (t.block.rows < 1 || t.block.cols < 1) throw std::invalid_argument(std::string(what) + ": empty scale block");
  if (t.dequant_scales.size() != static_cast<size_t>(t.blockRows() * t.blockCols()))
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(t.dequant_scales.size()) +
                                " dequant scales, expected " + std::to_string(t.blockRows() * t.blockCols()));
}

} // namespace

const char* toString(LtScaleMode m) {
  switch (m) {
  case LtScaleMode::Scalar:
    return "SCALAR_32F";
  case LtScaleMode::OuterVec:
    return "OUTER_VEC_32F";
  case LtScaleMode::Vec128:
    return "VEC128_32F";
  case LtScaleMode::Blk128x128:
    return "BLK128x128_32F";
  }
  return "?";
}

bool isBlockMode(LtScaleMode m) {
  return m == LtScaleMode::Vec128 || m == LtScaleMode::Blk128x128;
}

std::optional<LtScaleMode> nativeScaleMode(const QuantizedTensor& t, Operand role, std::string* why) {
  auto fail = [&](std::string s) -> std::optional<LtScaleMode> {
    if (why) *why = std::move(s);
    return std::nullopt;
  };
  if (!t.scale_codes.empty())
    return fail(std::string("operand ") + roleName(role) +
                " has MX E8M0 block scales (VEC32_UE8M0), which cuBLASLt supports on Blackwell only, not on Hopper");
  if (t.block.rows < 1 || t.block.cols < 1)
    return fail(std::string("operand ") + roleName(role) + " has no scale block");
  const Extents e = extentsOf(t, role);
  if (representable(e, LtScaleMode::Scalar)) return LtScaleMode::Scalar;
  if (representable(e, LtScaleMode::OuterVec)) return LtScaleMode::OuterVec;
  if (e.eo > 1 && representable(e, LtScaleMode::Blk128x128)) return LtScaleMode::Blk128x128;
  if (representable(e, LtScaleMode::Vec128)) return LtScaleMode::Vec128;
  return fail(std::string("operand ") + roleName(role) + " has " + std::to_string(t.block.rows) + "x" +
              std::to_string(t.block.cols) + " scale blocks whose extent along K (" + std::to_string(e.ek) + " of " +
              std::to_string(e.k) +
              ") is neither all of K nor a multiple of 128; cuBLASLt on Hopper scales along K only per 128 elements");
}

ModePair choosePairing(LtScaleMode a, LtScaleMode b) {
  ModePair p{a, b, {}};
  if (!isBlockMode(a) && !isBlockMode(b)) {
    if (a != b) {
      p.a = p.b = LtScaleMode::OuterVec;
      p.note = "per-tensor scale broadcast to an outer vector (SCALAR x OUTER_VEC is not a pairing cuBLASLt is known "
               "to accept)";
    }
    return p;
  }
  if (!isBlockMode(a)) {
    p.a = LtScaleMode::Vec128;
    p.note = std::string("A's ") + toString(a) + " scales broadcast to VEC128_32F to pair with B's block scales";
  }
  if (!isBlockMode(b)) {
    p.b = LtScaleMode::Vec128;
    p.note = std::string("B's ") + toString(b) + " scales broadcast to VEC128_32F to pair with A's block scales";
  }
  if (p.a == LtScaleMode::Blk128x128 && p.b == LtScaleMode::Blk128x128) {
    p.a = LtScaleMode::Vec128;
    p.note = "128x128 x 128x128 is not supported on sm_90: A's 128x128 scales expanded to 1x128 (VEC128_32F)";
  }
  return p;
}

int64_t roundUp(int64_t x, int64_t to) {
  return (x + to - 1) / to * to;
}

PaddedShape padShape(int64_t m, int64_t n, int64_t k, bool block_modes) {
  if (m < 1 || n < 1 || k < 1)
    throw std::invalid_argument("GEMM sizes must be positive (M=" + std::to_string(m) + ", N=" + std::to_string(n) +
                                ", K=" + std::to_string(k) + ")");
  PaddedShape s{m, n, k, roundUp(m, 16), roundUp(n, 16), roundUp(k, block_modes ? 128 : 16)};
  return s;
}

std::vector<uint8_t> packKMajor(const QuantizedTensor& t, Operand role, int64_t outer_pad, int64_t k_pad) {
  checkTensor(t, "packKMajor");
  const Extents e = extentsOf(t, role);
  if (outer_pad < e.outer || k_pad < e.k)
    throw std::invalid_argument("packKMajor: padded size " + std::to_string(outer_pad) + "x" + std::to_string(k_pad) +
                                " is smaller than the operand (" + std::to_string(e.outer) + "x" + std::to_string(e.k) +
                                ")");
  std::vector<uint8_t> out(static_cast<size_t>(outer_pad * k_pad), 0);
  if (role == Operand::A) {
    for (int64_t i = 0; i < t.rows; ++i) std::copy_n(t.codes.begin() + i * t.cols, t.cols, out.begin() + i * k_pad);
  } else {
    // B [K,N] → [N, K]: blocked transpose for cache friendliness.
    constexpr int64_t T = 64;
    for (int64_t k0 = 0; k0 < t.rows; k0 += T)
      for (int64_t n0 = 0; n0 < t.cols; n0 += T)
        for (int64_t k = k0; k < std::min(k0 + T, t.rows); ++k)
          for (int64_t n = n0; n < std::min(n0 + T, t.cols); ++n)
            out[static_cast<size_t>(n * k_pad + k)] = t.codes[static_cast<size_t>(k * t.cols + n)];
  }
  return out;
}

int64_t ltScaleCount(LtScaleMode mode, int64_t outer_pad, int64_t k_pad) {
  const int64_t kb = (k_pad + 127) / 128;
  switch (mode) {
  case LtScaleMode::Scalar:
    return 1;
  case LtScaleMode::OuterVec:
    return outer_pad;
  case LtScaleMode::Vec128:
    return kb * outer_pad;
  case LtScaleMode::Blk128x128:
    return roundUp(kb, 4) * ((outer_pad + 127) / 128);
  }
  return 0;
}

std::vector<float> ltScaleTensor(const QuantizedTensor& t, Operand role, LtScaleMode mode, int64_t outer_pad,
                                 int64_t k_pad) {
  checkTensor(t, "ltScaleTensor");
  const Extents e = extentsOf(t, role);
  if (!representable(e, mode))
    throw std::invalid_argument(std::string("ltScaleTensor: operand ") + roleName(role) + "'s " +
                                std::to_string(t.block.rows) + "x" + std::to_string(t.block.cols) +
                                " scale blocks cannot be expressed exactly as " + toString(mode));
  if (outer_pad < e.outer || k_pad < e.k)
    throw std::invalid_argument("ltScaleTensor: padded size smaller than the operand");
  // Dequant scale at (outer o, K index k); 1.0 in the padding.
  auto at = [&](int64_t o, int64_t k) -> float {
    if (o >= e.outer || k >= e.k) return 1.0f;
    return role == Operand::A ? t.dequantScaleAt(o, k) : t.dequantScaleAt(k, o);
  };
  const int64_t kb_count = (k_pad + 127) / 128;
  std::vector<float> s(static_cast<size_t>(ltScaleCount(mode, outer_pad, k_pad)), 1.0f);
  switch (mode) {
  case LtScaleMode::Scalar:
    s[0] = at(0, 0);
    break;
  case LtScaleMode::OuterVec:
    for (int64_t o = 0; o < outer_pad; ++o) s[static_cast<size_t>(o)] = at(o, 0);
    break;
  case LtScaleMode::Vec128:
    for (int64_t kb = 0; kb < kb_count; ++kb)
      for (int64_t o = 0; o < outer_pad; ++o) s[static_cast<size_t>(kb * outer_pad + o)] = at(o, kb * 128);
    break;
  case LtScaleMode::Blk128x128: {
    const int64_t ld = roundUp(kb_count, 4);
    const int64_t ob_count = (outer_pad + 127) / 128;
    for (int64_t ob = 0; ob < ob_count; ++ob)
      for (int64_t kb = 0; kb < kb_count; ++kb) s[static_cast<size_t>(ob * ld + kb)] = at(ob * 128, kb * 128);
    break;
  }
  }
  return s;
}

} // namespace fp8lab::gpu

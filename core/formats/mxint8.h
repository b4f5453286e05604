// FP8 Lab — MXINT8 elements (OCP Microscaling Formats (MX) v1.0, the concrete format MXINT8):
// 8-bit two's-complement integers with an implicit scale of 2^-6, so code k (int8) stands for
// k / 64. A separate codec rather than a Format: Format's codes are sign-magnitude (a sign bit
// over exponent and mantissa fields), and two's complement cannot be expressed as one.
//
// Element range: OCP gives MXINT8's element range as symmetric, ±(2 − 2^-6) = ±1.984375, i.e. codes
// −127 .. 127; encode never produces 0x80 (−128 = −2.0). decode reads every byte as two's
// complement, so 0x80 decodes to −2.0 (it only arises from data written elsewhere). The OCP spec
// text itself was not available here; the range follows the spec as quoted by the MX reference
// implementation microsoft/microxcaling (int8: emax 0, max_norm 1.984375, values clamped to
// ±max_norm) and Graphcore gfloat's format_info_ocp_int8 (two's complement, emax 0).
//
// Scale convention: an MX block stores one E8M0 scale X = 2^(e−127) (core/scaling, FLOOR rule with
// emax_elem = 0); the element value is decode(code) · X.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8lab::mxint8 {

/// log2 of the implicit element scale: code k is k · 2^-6.
inline constexpr int kImplicitExponent = -6;
/// Largest code magnitude encode() produces (127 / 64 = 1.984375).
inline constexpr int kMaxCode = 127;
/// The element's emax for the MX FLOOR scale rule: the largest power of two below 1.984375 is 2^0.
inline constexpr int kEmaxElem = 0;

/// The code of x (in element units, i.e. after the block scale): round(x · 64) to nearest, ties to
/// even, saturated to ±127, as an int8 bit pattern. ±inf → ±127 (0x7F / 0x81); NaN → 0x7F (the
/// project's rule for formats without NaN, as FP6/FP4 under SpecialsPolicy::Cuda); −0 → 0x00.
/// One rounding from double.
uint8_t encode(double x);

/// k / 64 for the int8 k that `code` is (0x40 → 1.0, 0xC0 → −1.0, 0x80 → −2.0). Exact.
double decode(uint8_t code);

/// out[i] = encode(float32(in[i] · s)) for i < n: the product rounded once to float32 (as
/// Format::encodeBulk), then RNE on the 1/64 grid. Branch-free; vectorised (AVX-512 / AVX2 clones
/// picked at run time on x86-64 GCC). Equal to the scalar encode of the float32 product.
void encodeBulk(const float* in, uint8_t* out, std::size_t n, float s = 1.0f);

/// out[i] = decode(in[i]) as float32 (exact).
void decodeBulk(const uint8_t* in, float* out, std::size_t n);

} // namespace fp8lab::mxint8

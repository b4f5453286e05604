// FP8 Lab — a scale grid file written into a kernel's scale layout and read back out of one
// (core/scaling/kernel_layout.h), bit for bit: `fp8lab-cli scale-layout pack | unpack`.
#pragma once

#include "scaling/kernel_layout.h"

#include <string>

namespace fp8lab {

/// Reads the row-major scale grid `g` ([outer, kblocks]) from `in` (.npy / .safetensors:NAME:
/// uint8 codes for the layouts that hold codes, importCodeTensor; else float32, importTensor)
/// and writes it packed into `layout` (scaleStorageShape, padding 0) to the .npy `out`: uint8,
/// or "<i4" words for deepgemm_packed_ue8m0. Returns "" or the error: the importer's, a float64
/// file ("'IN' is float64; scales are float32"), a count other than outer × kblocks ("'IN' holds
/// N scales, the grid [O, KB] needs O·KB"), the writer's.
std::string packScaleFile(ScaleLayout layout, ScaleGridShape g, const std::string& in, const std::string& out);

/// The reverse: reads `layout`'s storage from `in` (int32 words of deepgemm_packed_ue8m0 read as
/// their bytes) and writes the row-major grid [outer, kblocks] to the .npy `out` (uint8 or
/// float32). Returns "" or the error (the importer's, unpackScales's, the writer's).
std::string unpackScaleFile(ScaleLayout layout, ScaleGridShape g, const std::string& in, const std::string& out);

} // namespace fp8lab

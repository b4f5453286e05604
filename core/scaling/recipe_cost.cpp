// FP8 Lab — what a recipe costs and where it runs natively (recipe_cost.h).
#include "scaling/recipe_cost.h"

#include "formats/format.h"
#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <cstdio>

namespace fp8lab {

namespace {

constexpr const char* kLtHeader = "CUDA 13.0 cublasLt.h cublasLtMatmulMatrixScale_t";

const ScaleKind* kindById(const std::string& id) {
  for (const ScaleKind& k : scaleKinds())
    if (k.id == id) return &k;
  return nullptr;
}

int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t roundUp(int64_t a, int64_t to) {
  return ceilDiv(a, to) * to;
}

/// The scale kind, the preset's own block text and the tensor-scale flag of one operand's preset.
struct Resolved {
  const ScaleKind* kind = nullptr;
  std::string block;
  bool tensor_scale = false; ///< a float32 second level (two-level NVFP4)
};

std::optional<Resolved> resolve(const std::string& preset, bool is_a) {
  Resolved r;
  if (const auto nv = nvfp4Preset(preset)) {
    r.kind = kindById(nv->tile_2d ? "nvfp4_16x16" : "nvfp4_16");
    r.block = nv->tile_2d ? "16×16 tile" : (is_a ? "1×16" : "16×1");
    r.tensor_scale =
        nv->rule != Nvfp4Rule::CudnnDocSingleLevel && nv->tensor_scale_source != Nvfp4TensorScaleSource::None;
    return r;
  }
  const auto sc = scalingPreset(preset);
  if (!sc) return std::nullopt;
  const bool mx = isMxRule(sc->rule);
  const std::string b = std::to_string(sc->block);
  switch (sc->granularity) {
  case Granularity::PerTensor:
    r.kind = kindById("per_tensor");
    r.block = "per tensor";
    break;
  case Granularity::Outer:
    r.kind = kindById("outer");
    r.block = is_a ? "per row" : "per column";
    break;
  case Granularity::PerRow:
    r.kind = kindById(is_a ? "outer" : "other");
    r.block = "per row";
    break;
  case Granularity::PerColumn:
    r.kind = kindById(is_a ? "other" : "outer");
    r.block = "per column";
    break;
  case Granularity::Block1D:
    r.block = is_a ? "1×" + b : b + "×1";
    r.kind = kindById(mx && sc->block == 32 ? "mx32" : !mx && sc->block == 128 ? "vec128" : "other");
    break;
  case Granularity::Block2D:
    r.block = b + "×" + b + " tile";
    r.kind = kindById(mx && sc->block == 32 ? "mx32x32" : !mx && sc->block == 128 ? "blk128" : "other");
    break;
  }
  return r;
}

/// Scales of an operand [rows, cols] with K along `is_a ? cols : rows` in the kind's native layout.
int64_t scaleCount(const ScaleKind& kind, int64_t rows, int64_t cols, bool is_a, int64_t preset_block) {
  const int64_t K = is_a ? cols : rows, outer = is_a ? rows : cols;
  if (kind.id == "per_tensor") return 1;
  if (kind.id == "outer") return outer;
  if (kind.id == "vec128") return ceilDiv(K, 128) * outer;
  if (kind.id == "blk128") return roundUp(ceilDiv(K, 128), 4) * ceilDiv(outer, 128);
  if (kind.id == "mx32" || kind.id == "mx32x32") return roundUp(outer, 128) * roundUp(ceilDiv(K, 32), 4);
  if (kind.id == "nvfp4_16" || kind.id == "nvfp4_16x16") return roundUp(outer, 128) * roundUp(ceilDiv(K, 16), 4);
  // Blocks no kernel takes: the preset's own grid, unpadded.
  const int64_t b = std::max<int64_t>(preset_block, 1);
  return ceilDiv(K, b) * outer;
}

bool isMxKind(const ScaleKind* k) {
  return k && (k->id == "mx32" || k->id == "mx32x32");
}
bool isNvKind(const ScaleKind* k) {
  return k && (k->id == "nvfp4_16" || k->id == "nvfp4_16x16");
}
bool isFp8Element(const std::string& f) {
  return f == "E4M3FN" || f == "E5M2";
}
bool isMxElement(const std::string& f) {
  return isFp8Element(f) || f == "E2M3" || f == "E3M2" || f == "E2M1";
}

} // namespace

const std::vector<ScaleKind>& scaleKinds() {
  static const std::vector<ScaleKind> t = {
      {"per_tensor", "1 float32 for the whole tensor", "float32", 32, "SCALAR_32F",
       "Ada (sm_89), Hopper (sm_90), Blackwell (sm_100+)", true, true,
       std::string(kLtHeader) + " SCALAR_32F; NVIDIA/CUDALibrarySamples#180; Transformer Engine's per-tensor recipes"},
      {"outer", "1 float32 per row of A / per column of B (outer vector)", "float32", 32, "OUTER_VEC_32F",
       "Hopper (sm_90) only, cuBLAS >= 12.9 (sm_100+ refuse it; PyTorch falls back to CUTLASS)", true, false,
       "NVIDIA/CUDALibrarySamples#270 (NVIDIA); pytorch/pytorch PR #154680, PR #161236, issue #192707"},
      {"vec128", "1 float32 per 1×128 block along K, outer dimension fastest: [ceil(K/128), outer]", "float32", 32,
       "VEC128_32F", "Hopper (sm_90) only, cuBLAS >= 12.9", true, false,
       "NVIDIA/CUDALibrarySamples#270, #310 (NVIDIA: \"Hopper (sm_90) only\"); PyTorch _check_deepseek_support; "
       "DeepGEMM's own Hopper kernels"},
      {"blk128", "1 float32 per 128×128 tile, K-block fastest, pitch padded to 4: [ceil(outer/128), roundup(KB, 4)]",
       "float32", 32, "BLK128x128_32F", "Hopper (sm_90) only, cuBLAS >= 12.9; never on both operands", true, false,
       "NVIDIA/CUDALibrarySamples#270, #310; Transformer Engine cublaslt_gemm.cu (\"Only 1D by 1D, 1D by 2D, and 2D "
       "by 1D block scaling GEMM is supported\"); CUDALibrarySamples cuBLASLt/Common/helpers.h getScaleTensorSize"},
      {"mx32", "1 E8M0 per 1×32 block along K, padded to [roundup(outer, 128), roundup(K/32, 4)]", "E8M0", 8,
       "VEC32_UE8M0", "Blackwell (sm_100+) only", false, true,
       "NVIDIA/CUDALibrarySamples#270 (\"On SM100+ supports VEC32_UE8M0\"); Transformer Engine MXFP8BlockScaling, "
       "quantize_mxfp8.cuh (padded scale shape)"},
      {"mx32x32",
       "1 E8M0 per 32×32 tile, stored as the 1×32 grid with each tile's code repeated (no 2-D mode), padded like mx32",
       "E8M0", 8, "VEC32_UE8M0", "Blackwell (sm_100+) only", false, true,
       "Transformer Engine MXFP8BlockScaling(enable_2d_quantization=True), #2634: rowwise scales repeat the tile "
       "code (RECIPES-2026 §G)"},
      {"nvfp4_16",
       "1 E4M3 per 1×16 block along K, padded to [roundup(outer, 128), roundup(K/16, 4)], + 1 float32 tensor scale",
       "E4M3 + float32 tensor scale", 8, "VEC16_UE4M3", "Blackwell (sm_100+) only", false, true,
       std::string(kLtHeader) + " VEC16_UE4M3; Transformer Engine NVFP4BlockScaling (RECIPES-2026 §A)"},
      {"nvfp4_16x16",
       "1 E4M3 per 16×16 tile, stored as the 1×16 grid with each tile's scale repeated, + 1 float32 tensor scale",
       "E4M3 + float32 tensor scale", 8, "VEC16_UE4M3", "Blackwell (sm_100+) only", false, true,
       "Transformer Engine quantize_transpose_nvfp4_2D_kernel: weights in 16×16 tiles (RECIPES-2026 §B)"},
      {"other", "the preset's own grid (no kernel takes this block shape)", "float32", 32, "", "emulation only", false,
       false, "no cuBLASLt scale mode has this granularity (CUBLASLT-FP8.md §3)"},
  };
  return t;
}

double RecipeCost::bytesPerElement() const {
  const int64_t e = a.rows * a.cols + b.rows * b.cols;
  return e > 0 ? double(bytes()) / double(e) : 0.0;
}

std::string bytesText(double bytes) {
  char t[48];
  if (bytes < 1024)
    std::snprintf(t, sizeof t, "%.4g B", bytes);
  else if (bytes < 1024.0 * 1024)
    std::snprintf(t, sizeof t, "%.4g KiB", bytes / 1024);
  else if (bytes < 1024.0 * 1024 * 1024)
    std::snprintf(t, sizeof t, "%.4g MiB", bytes / (1024.0 * 1024));
  else
    std::snprintf(t, sizeof t, "%.4g GiB", bytes / (1024.0 * 1024 * 1024));
  return t;
}

std::optional<RecipeCost> recipeCost(const std::string& scaling_a, const std::string& scaling_b,
                                     const std::string& format_a, const std::string& format_b, int64_t m, int64_t k,
                                     int64_t n) {
  const Format* fa = Format::byName(format_a);
  const Format* fb = Format::byName(format_b);
  const auto ra = resolve(scaling_a, true), rb = resolve(scaling_b.empty() ? scaling_a : scaling_b, false);
  if (!fa || !fb || !ra || !rb || !ra->kind || !rb->kind) return std::nullopt;
  RecipeCost c;
  auto fill = [&](OperandCost& o, const Resolved& r, const Format& f, const std::string& preset, int64_t rows,
                  int64_t cols, bool is_a) {
    o.preset = preset;
    o.element_format = f.name();
    o.element_bits = f.bits();
    o.kind = r.kind;
    o.block = r.block;
    o.rows = rows;
    o.cols = cols;
    int64_t pb = 128;
    if (const auto sc = scalingPreset(preset)) pb = sc->block;
    o.scales = scaleCount(*r.kind, rows, cols, is_a, pb);
    o.element_bytes = ceilDiv(rows * cols * f.bits(), 8);
    o.scale_bytes = o.scales * r.kind->scale_bits / 8 + (r.tensor_scale ? 4 : 0);
  };
  fill(c.a, *ra, *fa, scaling_a, m, k, true);
  fill(c.b, *rb, *fb, scaling_b.empty() ? scaling_a : scaling_b, k, n, false);
  const ScaleKind *ka = ra->kind, *kb = rb->kind;
  auto emulation = [&](const std::string& why, const std::string& source) {
    c.native = "emulation only: " + why;
    c.hardware = "emulation";
    c.native_any = false;
    c.source = source;
    return c;
  };
  const std::string fan = fa->name(), fbn = fb->name();
  if (fan.find("FNUZ") != std::string::npos || fbn.find("FNUZ") != std::string::npos)
    return emulation("FNUZ formats are AMD's (hipBLASLt HIP_R_8F_E4M3_FNUZ); CUDA has no such type",
                     "CUDA 13.0 library_types.h (CUBLASLT-FP8.md §3.2)");
  if (ka->id == "other" || kb->id == "other")
    return emulation("no cuBLASLt scale mode has the block " + (ka->id == "other" ? c.a.block : c.b.block),
                     ka->id == "other" ? ka->source : kb->source);
  const std::string lt_pair = ka->lt_mode + (kb->lt_mode != ka->lt_mode ? " × " + kb->lt_mode : "");
  if (isNvKind(ka) || isNvKind(kb)) {
    if (!(isNvKind(ka) && isNvKind(kb)) || fan != "E2M1" || fbn != "E2M1")
      return emulation("NVFP4 needs E2M1 with E4M3 scales of 16 on both operands", "Blackwell block-scaled MMA "
                                                                                   "kind::mxf4nvf4 (PTX ISA)");
    c.native = "Blackwell (sm_100+): cuBLASLt VEC16_UE4M3 (NVFP4), tensor scales through alpha";
    c.hardware = "Blackwell";
    c.native_any = true;
    c.source = ka->source;
    return c;
  }
  if (isMxKind(ka) || isMxKind(kb)) {
    if (!(isMxKind(ka) && isMxKind(kb)))
      return emulation("no MMA mixes MX (E8M0 block-32) scales with float32 scales", ka->source);
    if (!isMxElement(fan) || !isMxElement(fbn))
      return emulation("MX elements are E4M3, E5M2, E2M3, E3M2 or E2M1", "OCP MX v1.0 §5");
    c.hardware = "Blackwell";
    c.native_any = true;
    if (isFp8Element(fan) && isFp8Element(fbn)) {
      c.native = "Blackwell (sm_100+): cuBLASLt VEC32_UE8M0 (MXFP8)";
      c.source = ka->source;
    } else {
      c.native = "Blackwell (sm_100+): block-scaled MMA kind::mxf8f6f4 (MXFP6 / MXFP4); cuBLASLt support not "
                 "verified here";
      c.source = "PTX ISA tcgen05.mma kind::mxf8f6f4; " + ka->source;
    }
    return c;
  }
  // Float32 scales (FP8 recipes).
  if (!isFp8Element(fan) || !isFp8Element(fbn))
    return emulation("float32-scaled GEMMs take E4M3 or E5M2 elements only (" + fan + " × " + fbn + ")",
                     "CUDA 13.0 library_types.h: CUDA_R_8F_E4M3, CUDA_R_8F_E5M2 (CUBLASLT-FP8.md §3.2)");
  if (fan == "E5M2" && fbn == "E5M2")
    return emulation("cuBLASLt has no E5M2 × E5M2 kernel",
                     "cuBLAS FP8 type table as quoted in PyTorch ScaledBlas.cpp (CUBLASLT-FP8.md §2.2)");
  c.native_any = true;
  if (ka->id == "per_tensor" && kb->id == "per_tensor") {
    c.native = "Ada, Hopper, Blackwell: cuBLASLt SCALAR_32F";
    c.hardware = "Ada/Hopper/Blackwell";
    c.source = ka->source;
    return c;
  }
  c.hardware = "Hopper";
  c.source = ka->source + (kb != ka ? "; " + kb->source : std::string());
  if (ka == kb && ka->id == "outer") {
    c.native = "Hopper (sm_90): cuBLASLt OUTER_VEC_32F (cuBLAS >= 12.9)";
    return c;
  }
  if ((ka->id == "vec128" || ka->id == "blk128") && (kb->id == "vec128" || kb->id == "blk128")) {
    if (ka->id == "blk128" && kb->id == "blk128") {
      c.native = "Hopper (sm_90) after an exact promotion: cuBLASLt refuses BLK128x128 on both operands, so A's "
                 "128×128 scales are sent as VEC128_32F (each row repeats its tile's scale)";
      return c;
    }
    c.native = "Hopper (sm_90): cuBLASLt " + lt_pair + " (cuBLAS >= 12.9; DeepGEMM's kernels too)";
    return c;
  }
  // Mixed float32 kinds: per-tensor or outer-vector scales broadcast exactly into the finer mode.
  c.native = "Hopper (sm_90) after an exact promotion: " + ka->lt_mode + " × " + kb->lt_mode +
             " has no cuBLASLt pairing, so the coarser scales are broadcast to the finer mode (no value changes)";
  return c;
}

std::string bytesPerElementText(double bytes_per_element, int decimals) {
  char t[48];
  std::snprintf(t, sizeof t, "%.*f", decimals, bytes_per_element);
  return t;
}

} // namespace fp8lab

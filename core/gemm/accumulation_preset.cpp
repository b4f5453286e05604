// FP8 Lab — the accumulation preset table (accumulation_preset.h; docs/gemm.md).
#include "gemm/accumulation_preset.h"

#include "common/names.h"

namespace fp8lab {

namespace {

MmaRules rules(MmaSum sum, int sum_bits, MmaCEntry c) {
  MmaRules r;
  r.alignment = MmaAlignment::Operands;
  r.sum = sum;
  r.sum_bits = sum_bits;
  r.sum_rounding = MmaRounding::TowardZero;
  r.c_entry = c;
  return r;
}

constexpr const char* kMatlab =
    "North-numerical-computing/MATLAB-tensor-core (BSD-2; Khattak & Mikaitis, 'Accurate Models of NVIDIA Tensor "
    "Cores', arXiv 2512.07004) @ b12b5a7, model_validation/";
constexpr const char* kMmaSim =
    "microsoft/MMA-Sim (MIT; arXiv 2511.10909) @ c785138, mmasim/simulator/nv_ptx.py and arithmetic.py "
    "(nv_fused_dot_add)";

} // namespace

const std::vector<AccumulationPreset>& accumulationPresets() {
  // bits = fraction bits kept below the alignment exponent + 1, the scale of the earlier table
  // ("14 bits" on Hopper = 13 fraction bits).
  static const std::vector<AccumulationPreset> table = [] {
    std::vector<AccumulationPreset> t;
    AccumulationPreset p;
    p.accumulation = Accumulation::FastAccum;

    p.name = "hopper_fp8";
    p.bits = 14;
    p.group = 32;
    p.promotion_interval = 128;
    p.promotes = true;
    p.rules = rules(MmaSum::Fp32, 13, MmaCEntry::Accumulator);
    p.instruction = "wgmma.mma_async.sync.aligned.m64nNk32.f32.e4m3/e5m2 (sm_90a)";
    p.summary = "Hopper (H100 / H200) FP8 WGMMA: groups of 32 products aligned on e(a)+e(b), 13 fraction bits "
                "kept (truncated), each K = 32 step's sum a binary32 cut to 13 fraction bits; promoted into float32 "
                "every 128 of K (cuBLAS split accumulation, DeepGEMM)";
    p.source = std::string(kMatlab) +
               "H100/{E4M3,E5M2} (wgmma, C = 0; H200's D files are byte-identical), reproduced 10000 of 10000; the "
               "C-in-accumulator rule from the MATLAB H100TC model and MMA-Sim wgmma; promotion every 128: "
               "DeepSeek-V3 §3.3.2 and DeepGEMM";
    p.measured = "MATLAB-tensor-core model_validation H100 E4M3 + E5M2 (C = 0): 10000 of 10000 samples";
    t.push_back(p);

    p.name = "hopper_fp8_fast_accum";
    p.promotes = false;
    p.instruction = "wgmma.mma_async … .f32.e4m3/e5m2 (sm_90a), whole K in the tensor-core accumulator";
    p.summary = "Hopper FP8 WGMMA with no promotion (cuBLASLt CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1, torch._scaled_mm "
                "use_fast_accum=True): the hopper_fp8 rules over all of K";
    p.source = std::string(kMatlab) + "H100 (the instruction's rules, as hopper_fp8); FAST_ACCUM: cuBLASLt docs, "
                                      "TransformerEngine cublaslt_gemm.cu";
    p.measured = "the instruction: MATLAB-tensor-core H100 E4M3 + E5M2, 10000 of 10000 (no promotion data)";
    t.push_back(p);

    p.name = "hopper_mma_sync";
    p.promotes = true;
    p.unsure = true;
    p.instruction = "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 (sm_90)";
    p.summary = "UNSURE: Hopper FP8 mma.sync, assumed to share the wgmma datapath (hopper_fp8's rules); neither "
                "source models or measured it";
    p.source = std::string("no source: MMA-Sim lists no FP8 mma.sync for sm_90 and MATLAB-tensor-core measured wgmma "
                           "only; the rules are hopper_fp8's (") +
               kMatlab + "H100)";
    p.measured = "";
    t.push_back(p);

    p.name = "ada_fp8";
    p.bits = 14;
    p.group = 16;
    p.promotes = true;
    p.unsure = false;
    p.rules = rules(MmaSum::Fp32, 13, MmaCEntry::Accumulator);
    p.instruction = "mma.sync.aligned.m16n8k32.row.col.f32.e4m3/e5m2.f32 (sm_89: Ada, L40S)";
    p.summary = "Ada (RTX 40, L40S) FP8 mma.sync: groups of 16 products aligned on e(a)+e(b) with C inside the "
                "first group, 13 fraction bits kept (truncated), each group's sum a binary32 cut to 13 fraction "
                "bits; promotion every 128 of K as cuBLAS does on Hopper";
    p.source = std::string(kMatlab) +
               "Ada/{E4M3,E5M2} (C from the file; L40S's files are byte-identical), reproduced 10000 of 10000; the "
               "promotion interval is Hopper's (not measured on Ada)";
    p.measured = "MATLAB-tensor-core model_validation Ada E4M3 + E5M2 (C used): 10000 of 10000 samples";
    t.push_back(p);

    p.name = "blackwell_fp8";
    p.bits = 26;
    p.group = 32;
    p.promotes = false;
    p.rules = rules(MmaSum::Fp32, 23, MmaCEntry::Epilogue);
    p.instruction = "tcgen05.mma.cta_group::1.kind::f8f6f4 (sm_100: B200), C added after the MMA";
    p.summary = "Blackwell (B200) FP8 as measured: groups of 32 products aligned on e(a)+e(b), 25 fraction bits "
                "kept (truncated), the sum a binary32 truncated to 23 fraction bits, then + C with one RNE; no "
                "promotion (the tensor-memory accumulator is float32)";
    p.source = std::string(kMatlab) +
               "B200/{E4M3,E5M2}, reproduced 10000 of 10000 with C added after the tensor-core sum (with C inside "
               "the MMA, as MMA-Sim's tcgen05 model has it, 6443 of 10000); the data fix neither the group (16 or "
               "32) nor the bits (≥ 23): 32 and 25 are MMA-Sim's";
    p.measured = "MATLAB-tensor-core model_validation B200 E4M3 + E5M2 (C used): 10000 of 10000 samples";
    t.push_back(p);

    p.name = "blackwell_tcgen05";
    p.unsure = true;
    p.rules = rules(MmaSum::Fp32, 23, MmaCEntry::Accumulator);
    p.instruction = "tcgen05.mma.cta_group::1.kind::f8f6f4 (sm_100), C as the accumulator";
    p.summary = "UNSURE: Blackwell tcgen05 kind::f8f6f4 as MMA-Sim models it: blackwell_fp8's rules with C inside "
                "the first group; the published B200 data reject C inside (see blackwell_fp8)";
    p.source = std::string(kMmaSim) + " tcgen05mma: 25 fraction bits, C aligned with the products, truncated to "
                                      "binary32; no measured data here";
    p.measured = "";
    t.push_back(p);

    // Block-scaled tcgen05 kinds: the scales enter the fused sum (MMA-Sim tcgen05mma_block_scale).
    p.name = "tcgen05_mxf8f6f4";
    p.bits = 26;
    p.group = 32;
    p.promotes = false;
    p.unsure = true;
    p.rules = rules(MmaSum::Fp32, 23, MmaCEntry::Accumulator);
    p.rules.block_scales = MmaBlockScales::Inside;
    p.instruction = "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X (sm_100), UE8M0 block 32";
    p.summary = "UNSURE: Blackwell block-scaled MXFP8 MMA as MMA-Sim models it: each product's alignment exponent is "
                "e(a)+e(b) plus its two E8M0 scale exponents, C inside, 25 fraction bits, truncated to binary32; one "
                "accumulator over K (no promotion); needs MX block-32 scales on both operands";
    p.source = std::string(kMmaSim) + " tcgen05mma_block_scale → nv_fused_dot_add(…, 25, 'f32', scale_a, scale_b); "
                                      "test vectors from docs/scripts/tensor_core_models.py (no measured data)";
    p.measured = "";
    t.push_back(p);

    p.name = "tcgen05_mxf4nvf4";
    p.bits = 36;
    p.group = 64;
    p.rules = rules(MmaSum::Fp32, 23, MmaCEntry::Accumulator);
    p.rules.block_scales = MmaBlockScales::Inside;
    p.rules.chunk = 16;
    p.instruction = "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale (sm_100): E2M1 with UE8M0 (block 32 / 16) "
                    "or UE4M3 (block 16) scales";
    p.summary = "UNSURE: Blackwell block-scaled FP4 MMA (MXFP4, NVFP4) as MMA-Sim models it: each chunk of 16 E2M1 "
                "products summed exactly, times its scales' significands, aligned on the scales' exponents alone, "
                "with C inside, 35 fraction bits, truncated to binary32; NVFP4's tensor factor after";
    p.source = std::string(kMmaSim) + " tcgen05mma_block_scale → nv_fused_dot_add_with_block_scale(…, 35); test "
                                      "vectors from docs/scripts/tensor_core_models.py (no measured data)";
    t.push_back(p);

    p.name = "cdna3_fp8";
    p.bits = 25;
    p.group = 16;
    p.promotes = false;
    p.rules = MmaRules{};
    p.rules.datapath = MmaDatapath::Cdna3;
    p.rules.c_entry = MmaCEntry::Accumulator;
    p.instruction = "v_mfma_f32_16x16x32_fp8_fp8 and the other FP8 / BF8 MFMAs (AMD CDNA3: MI300)";
    p.summary = "UNSURE: AMD CDNA3 FP8 MFMA as MMA-Sim models it: groups of 16, even and odd products summed apart "
                "24 bits below their own largest exponent (zero operands at −126), realigned by floor with C, "
                "rounded to float32 (RNE) per group; for E4M3FNUZ / E5M2FNUZ operands";
    p.source = std::string("microsoft/MMA-Sim (MIT; arXiv 2511.10909) @ c785138, mmasim/simulator/amd.py mfma and "
                           "arithmetic.py amd_fused_dot_rd_add(is_fp8=True, n_fractional_bits=24); test vectors from "
                           "docs/scripts/tensor_core_models.py (no measured data)");
    t.push_back(p);
    return t;
  }();
  return table;
}

std::optional<AccumulationPreset> accumulationPreset(std::string_view name) {
  const std::string n = normalizedName(name);
  for (const auto& p : accumulationPresets())
    if (p.name == n) return p;
  return std::nullopt;
}

std::string accumulationPresetNames() {
  std::string s;
  for (const auto& p : accumulationPresets()) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

GemmOptions withAccumulationPreset(GemmOptions opt, const AccumulationPreset& p) {
  opt.accumulation = p.accumulation;
  opt.fast_accum_bits = p.bits;
  opt.fast_accum_group = p.group;
  opt.promotion_interval = p.promotion_interval;
  opt.fast_accum_promotes = p.promotes;
  opt.mma = p.rules;
  return opt;
}

std::string accumulationPresetMismatch(const GemmOptions& o, const AccumulationPreset& p) {
  auto differs = [&](const char* what, const std::string& have, const std::string& want) {
    return std::string(what) + " " + have + " differs from accumulation preset " + p.name + "'s " + want;
  };
  if (o.accumulation != p.accumulation)
    return differs("accumulation", toString(o.accumulation), toString(p.accumulation));
  if (o.fast_accum_bits != p.bits)
    return differs("fast_accum_bits", std::to_string(o.fast_accum_bits), std::to_string(p.bits));
  if (o.fast_accum_group != p.group)
    return differs("fast_accum_group", std::to_string(o.fast_accum_group), std::to_string(p.group));
  if (o.promotion_interval != p.promotion_interval)
    return differs("promotion_interval", std::to_string(o.promotion_interval), std::to_string(p.promotion_interval));
  if (o.fast_accum_promotes != p.promotes)
    return differs("fast_accum_promotes", o.fast_accum_promotes ? "true" : "false", p.promotes ? "true" : "false");
  if (o.mma.alignment != p.rules.alignment)
    return differs("mma_alignment", toString(o.mma.alignment), toString(p.rules.alignment));
  if (o.mma.sum != p.rules.sum) return differs("mma_sum", toString(o.mma.sum), toString(p.rules.sum));
  if (o.mma.sum_bits != p.rules.sum_bits)
    return differs("mma_sum_bits", std::to_string(o.mma.sum_bits), std::to_string(p.rules.sum_bits));
  if (o.mma.sum_rounding != p.rules.sum_rounding)
    return differs("mma_sum_rounding", toString(o.mma.sum_rounding), toString(p.rules.sum_rounding));
  if (o.mma.c_entry != p.rules.c_entry) return differs("mma_c", toString(o.mma.c_entry), toString(p.rules.c_entry));
  if (o.mma.block_scales != p.rules.block_scales)
    return differs("mma_block_scales", toString(o.mma.block_scales), toString(p.rules.block_scales));
  if (o.mma.chunk != p.rules.chunk)
    return differs("mma_chunk", std::to_string(o.mma.chunk), std::to_string(p.rules.chunk));
  if (o.mma.datapath != p.rules.datapath)
    return differs("mma_datapath", toString(o.mma.datapath), toString(p.rules.datapath));
  return {};
}

} // namespace fp8lab

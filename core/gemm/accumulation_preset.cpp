// FP8 Lab — the accumulation preset table (accumulation_preset.h; docs/gemm.md).
#include "gemm/accumulation_preset.h"

#include "common/names.h"

namespace fp8lab {

const std::vector<AccumulationPreset>& accumulationPresets() {
  // Bits are significant bits kept relative to the largest exponent of an aligned group (the
  // FastAccum model, gemm.h). DeepGEMM#176 counts the H100 accumulator as a "13bit mantissa",
  // which the hopper_fp8 row, following DeepSeek-V3's "14 bits", counts as 14; the other rows
  // convert that mantissa counts on the same scale (+1).
  static const std::vector<AccumulationPreset> table = {
      {"hopper_fp8", Accumulation::FastAccum, 14, 32, 128, true, false,
       "Hopper (sm_90) FP8 WGMMA: about 14 significant bits per aligned group of 32 products (one WGMMA, K = 32), "
       "promoted into float32 every 128 of K as DeepGEMM does",
       "DeepSeek-V3 Technical Report (arXiv:2412.19437) §3.3.2: FP8 GEMM accumulation on H800 is limited to "
       "retaining around 14 bits, and promotion to FP32 every N_C = 128 elements; §3.5.2: after aligning 32 "
       "mantissa products the tensor core uses only the highest 14 bits of each; deepseek-ai/DeepGEMM#176: H100 "
       "'13bit mantissa'; deepseek-ai/DeepSeek-V3#197: a user's 16x32 by 32x8 FP8 product on H100 differed from a "
       "float32 CPU product 'at most in the last two bits of the mantissa'"},
      {"blackwell_fp8", Accumulation::FastAccum, 26, 32, 128, true, false,
       "Blackwell (sm_100) FP8 tcgen05.mma kind::f8f6f4: about 26 significant bits per aligned group of 32 "
       "products (one user's measurement), promoted into float32 every 128 of K as on Hopper",
       "deepseek-ai/DeepGEMM#176 (B200, tcgen05.mma.cta_group::1.kind::f8f6f4): 'the accumulator maintain 25bits "
       "mantissa, higher compared to H100 (13bit mantissa)'; 25 + 1 = 26 on this table's scale. The reporter asks "
       "whether the 25 bits are reliable and whether DeepGEMM still promotes every 128 on SM100; the promotion "
       "here is Hopper's"},
      {"block_scaled_mma", Accumulation::FastAccum, 35, 64, 128, false, true,
       "UNSURE: MX / NVFP4 block-scaled MMA on sm_100 (tcgen05.mma kind::mxf4nvf4, kind::mxf4): about 35 "
       "significant bits per aligned group of 64 products (K of one kind::mxf4nvf4 instruction), no promotion "
       "window of its own (block scales cut K at every scale block); the source could not settle the width",
       "deepseek-ai/DeepGEMM#176: for kind::mxf4nvf4 and kind::mxf4 'the number of mantissa bits in accumulator is "
       "not sure, 34,35,36,37bits are tested'; the lowest, 34, is 35 on this table's scale. K = 64 per "
       "instruction: PTX ISA, tcgen05.mma shapes for kind::mxf4nvf4 (inference, not measured)"},
  };
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
  return {};
}

} // namespace fp8lab

// The flags of `fp8lab-cli gemm` read into a GEMM experiment config (gemm_flags.h).
#include "experiment/gemm/gemm_flags.h"

#include "experiment/config_reader.h"
#include "experiment/gemm/gemm_config.h"
#include "experiment/param_schema.h"
#include "formats/format.h"
#include "formats/format_table.h"
#include "gemm/gemm.h"
#include "gemm/random_matrix.h"
#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <cmath>
#include <cstdlib>
#include <set>

namespace fp8lab {

namespace {

std::string flagOf(const ParamSpec& s) {
  return "--" + s.flag;
}

/// A refusal of the accumulation rule under the flag of its key ("--fast-bits applies to ...").
std::string flagProblem(const std::string& key, const std::string& why) {
  const ParamSpec* s = findParam(key);
  const std::string flag = s && !s->flag.empty() ? flagOf(*s) : key;
  return flag + (why.rfind("applies", 0) == 0 ? " " : ": ") + why;
}

/// A preset mismatch ("fast_accum_bits 12 differs from accumulation preset hopper_fp8's 14") with
/// its leading config key written as the flag the user typed ("--fast-bits 12 differs …"); boolean
/// keys, whose flags invert them, stay keys.
std::string withFlagName(const std::string& why) {
  const std::string key = why.substr(0, why.find(' '));
  const ParamSpec* s = findParam(key);
  if (!s || s->flag.empty() || s->type == ParamType::Boolean) return why;
  return flagOf(*s) + why.substr(key.size());
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

} // namespace

std::string gemmConfigFromFlags(const std::map<std::string, std::string>& given, bool store, GemmFlagConfig* out) {
  auto isSet = [&](const char* key, ParamScope scope = ParamScope::Top) {
    return given.count(param(key, scope).flag) > 0;
  };
  auto value = [&](const char* key, ParamScope scope = ParamScope::Top) -> std::string {
    const ParamSpec& s = param(key, scope);
    if (const auto it = given.find(s.flag); it != given.end()) return it->second;
    return s.flag == "output-scale" ? std::string("auto") : s.flagDefault();
  };
  auto integer = [&](const char* key, ParamScope scope = ParamScope::Top) {
    return std::strtoll(value(key, scope).c_str(), nullptr, 10);
  };
  auto number = [&](const char* key, ParamScope scope = ParamScope::Top) {
    return std::strtod(value(key, scope).c_str(), nullptr);
  };
  auto choices = [&](const char* key, ParamScope scope = ParamScope::Top) {
    return joinNames(param(key, scope).choices);
  };
  GemmExperimentConfig& cfg = out->config;
  const Format* fa = Format::byName(value("format_a"));
  const Format* fb = Format::byName(value("format_b"));
  for (const auto& [f, key] : {std::pair{fa, "format_a"}, {fb, "format_b"}})
    if (!f || f->bits() > 8)
      return flagOf(param(key)) + ": unknown or wider than 8 bits: '" + value(key) + "' (known: " + formatNameList() +
             ")";
  const auto a_flag = given.find("a-scaling");
  out->scaling_a = a_flag != given.end() && !a_flag->second.empty() ? a_flag->second : value("scaling");
  out->scaling_b = value("scaling_b").empty() ? value("scaling") : value("scaling_b");
  // NVFP4 presets (nvfp4_*) quantize an operand to E2M1 with E4M3 block scales of 16 along K.
  const auto nva = nvfp4Preset(out->scaling_a), nvb = nvfp4Preset(out->scaling_b);
  const auto ca = nva ? std::optional<ScalingConfig>() : scalingPreset(out->scaling_a);
  const auto cb = nvb ? std::optional<ScalingConfig>() : scalingPreset(out->scaling_b);
  for (const auto& [name, ok] : {std::pair{out->scaling_a, ca || nva}, {out->scaling_b, cb || nvb}})
    if (!ok)
      return "unknown or delayed scaling preset '" + name + "' (current-scaling presets: " + choices("scaling") + ")";
  if (ca)
    if (const std::string why = gemmScalingProblem(*ca, Axis::Cols); !why.empty()) return "scaling of A: " + why;
  if (cb)
    if (const std::string why = gemmScalingProblem(*cb, Axis::Rows); !why.empty()) return "scaling of B: " + why;
  // An NVFP4 preset makes an unset format E2M1.
  if (nva && !isSet("format_a")) fa = &Format::E2M1();
  if (nvb && !isSet("format_b")) fb = &Format::E2M1();
  const std::string name_a = nva ? nva->name : ca->name, name_b = nvb ? nvb->name : cb->name;

  GemmOptions o;
  const std::string acc_name = value("accumulation");
  const auto acc = parseAccumulation(acc_name);
  out->accumulation_preset = accumulationPreset(acc_name);
  const AccumulationPreset* ap = out->accumulation_preset ? &*out->accumulation_preset : nullptr;
  if (!acc && !ap)
    return "--accumulation must be one of " + accumulationNames() + " or a preset (" + accumulationPresetNames() + ")";
  o.accumulation = acc ? *acc : ap->accumulation;
  const auto out_type = parseOutputType(value("output"));
  if (!out_type) return "--output must be one of " + choices("output");
  o.output = *out_type;
  o.promotion_interval = static_cast<int>(integer("promotion_interval"));
  o.fast_accum_bits = static_cast<int>(integer("fast_accum_bits"));
  o.fast_accum_group = static_cast<int>(integer("fast_accum_group"));
  o.fast_accum_promotes = !isSet("fast_accum_promotes");
  o.mma.sum_bits = static_cast<int>(integer("mma_sum_bits"));
  {
    const auto al = parseMmaAlignment(value("mma_alignment"));
    const auto su = parseMmaSum(value("mma_sum"));
    const auto ro = parseMmaRounding(value("mma_sum_rounding"));
    const auto ce = parseMmaCEntry(value("mma_c"));
    const auto bs = parseMmaBlockScales(value("mma_block_scales"));
    const auto dp = parseMmaDatapath(value("mma_datapath"));
    if (!bs) return "--mma-block-scales must be one of " + choices("mma_block_scales");
    if (!dp) return "--mma-datapath must be one of " + choices("mma_datapath");
    o.mma.block_scales = *bs;
    o.mma.datapath = *dp;
    o.mma.chunk = static_cast<int>(integer("mma_chunk"));
    if (!al) return "--mma-alignment must be one of " + choices("mma_alignment");
    if (!su) return "--mma-sum must be one of " + choices("mma_sum");
    if (!ro) return "--mma-sum-rounding must be one of " + choices("mma_sum_rounding");
    if (!ce) return "--mma-c must be one of " + choices("mma_c");
    o.mma.alignment = *al;
    o.mma.sum = *su;
    o.mma.sum_rounding = *ro;
    o.mma.c_entry = *ce;
  }
  // A parameter the chosen model does not read is refused, naming the models that read it; a
  // preset's parameters given beside it must agree (core's rule, as for configs and the panel).
  std::set<std::string> set_params;
  for (const char* k :
       {"promotion_interval", "fast_accum_bits", "fast_accum_group", "fast_accum_promotes", "mma_alignment", "mma_sum",
        "mma_sum_bits", "mma_sum_rounding", "mma_c", "mma_block_scales", "mma_chunk", "mma_datapath"})
    if (isSet(k)) set_params.insert(k);
  // The kernel check's reference model (--reference) reads these parameters too: with --reference
  // fast they pin the reference (namedModel keeps the run's parameters), with a preset they must
  // agree with it; otherwise a parameter the run's model does not read is refused.
  std::optional<AccumulationPreset> ref_preset;
  bool ref_fast = false;
  if (const auto it = given.find("reference"); it != given.end()) {
    const auto ra = parseAccumulation(it->second);
    ref_fast = ra && *ra == Accumulation::FastAccum;
    ref_preset = accumulationPreset(it->second);
  }
  if (ref_preset && !set_params.empty()) {
    GemmOptions pinned = o;
    if (const auto pr = accumulationProblem(pinned, set_params, &*ref_preset, false, &pinned))
      return "--reference " + ref_preset->name + ": " + withFlagName(pr->why);
  }
  const bool ref_reads = ref_fast || (ref_preset && ref_preset->accumulation == Accumulation::FastAccum);
  if (const auto pr = accumulationProblem(o, set_params, ap, !ref_reads, &o))
    return pr->key == "accumulation_preset" ? "--accumulation " + ap->name + ": " + withFlagName(pr->why)
                                            : flagProblem(pr->key, pr->why);
  o.alpha = static_cast<float>(number("alpha"));
  o.beta = static_cast<float>(number("beta"));
  if (!std::isfinite(o.alpha) || !std::isfinite(o.beta)) return "--alpha and --beta must be finite float32 numbers";
  if (isSet("file", ParamScope::C)) {
    if (isSet("seed", ParamScope::C) || isSet("scale", ParamScope::C))
      return "--c-file: C comes from a file or from --c-seed / --c-scale, not both";
    cfg.c_source.file = value("file", ParamScope::C);
    if (cfg.c_source.file.empty()) return "--c-file: expected a tensor file (C.npy, F.safetensors:NAME, F.h5:/PATH)";
    cfg.c_source.enabled = true;
  }
  for (const auto& [scope, src] : {std::pair{ParamScope::C, &cfg.c_source}, {ParamScope::Bias, &cfg.bias_source}}) {
    if (src->fromFile()) continue;
    if (!isSet("seed", scope)) {
      if (isSet("scale", scope))
        return flagOf(param("scale", scope)) + " needs " + flagOf(param("seed", scope)) + " (the values are seeded)";
      continue;
    }
    src->seed = std::strtoull(value("seed", scope).c_str(), nullptr, 10);
    src->scale = number("scale", scope);
    src->enabled = true;
  }
  if (o.beta != 0.0f && !cfg.c_source.enabled)
    return "--beta other than 0 needs a C matrix: --c-seed N or --c-file C.npy";
  if (o.beta == 0.0f && cfg.c_source.enabled)
    return std::string(cfg.c_source.fromFile() ? "--c-file" : "--c-seed") +
           ": C is read only when --beta is not 0 (cuBLASLt ignores C at beta = 0; beta defaults to 0): add --beta 1 "
           "for D = A·B + C";
  const std::string kern = lower(value("kernel", ParamScope::None));
  if (kern == "portable")
    o.cpu_kernel = CpuKernel::Portable;
  else if (kern == "avx512bf16" || kern == "avx512-bf16")
    o.cpu_kernel = CpuKernel::Avx512Bf16;
  else if (kern == "avx512fma" || kern == "avx512-fma")
    o.cpu_kernel = CpuKernel::Avx512Fma;
  else if (kern == "avx2fma" || kern == "avx2-fma")
    o.cpu_kernel = CpuKernel::Avx2Fma;
  else if (kern != "auto")
    return "--kernel must be one of " + choices("kernel", ParamScope::None);
  const bool fp8_out = o.output == OutputType::E4M3FN || o.output == OutputType::E5M2;
  std::optional<float> out_scale;
  if (value("output_quant_scale") != "auto") {
    out_scale = static_cast<float>(number("output_quant_scale"));
    if (!fp8_out)
      return std::string("--output-scale applies only to FP8 outputs (--output e4m3fn or e5m2): cuBLASLt multiplies "
                         "D by scale_D only when D is FP8, and the output here is ") +
             toString(o.output);
  }
  RandomMatrixOptions ro;
  const auto dist = parseDistribution(value("distribution", ParamScope::Operands));
  if (!dist) return "--distribution must be one of " + choices("distribution", ParamScope::Operands);
  ro.distribution = *dist;
  ro.scale = number("scale", ParamScope::Operands);
  ro.sigma = number("sigma", ParamScope::Operands);
  ro.outlier_fraction = number("outlier_fraction", ParamScope::Operands);
  ro.outlier_factor = number("outlier_factor", ParamScope::Operands);
  ro.outlier_channels = integer("outlier_channels", ParamScope::Operands);
  const std::string axis = value("outlier_axis", ParamScope::Operands);
  if (axis != "rows" && axis != "columns") return "--outlier-axis must be columns or rows";
  ro.outlier_rows = axis == "rows";

  cfg.m = integer("m");
  cfg.k = integer("k");
  cfg.n = integer("n");
  cfg.seed = std::strtoull(value("seed").c_str(), nullptr, 10);
  cfg.format_a = fa->name();
  cfg.format_b = fb->name();
  cfg.scaling = name_a;
  cfg.scaling_b = name_b == name_a ? std::string() : name_b;
  cfg.a.random = cfg.b.random = ro;
  cfg.a.tensor = value("tensor", ParamScope::OperandA);
  cfg.b.tensor = value("tensor", ParamScope::OperandB);
  cfg.gemm = o;
  cfg.accumulation_preset = ap ? ap->name : std::string();
  cfg.tile = integer("tile");
  cfg.output_scale_auto = fp8_out && !out_scale;
  if (out_scale) cfg.gemm.output_quant_scale = *out_scale;
  const std::string rounding = value("rounding");
  if (rounding != "rne" && rounding != "stochastic") return "--rounding must be rne or stochastic";
  cfg.stochastic_rounding = rounding == "stochastic";
  if (isSet("stochastic_bits") && !cfg.stochastic_rounding)
    return "--stochastic-bits applies to --rounding stochastic only";
  cfg.stochastic_bits = static_cast<int>(integer("stochastic_bits"));
  cfg.store_inputs = cfg.store_quantized = cfg.store_error_maps = store;
  return {};
}

std::string gemmFlagConfigProblem(const GemmExperimentConfig& cfg, int64_t m, int64_t k, int64_t n) {
  // Imported operands fix the shape: the run checks them once they are loaded.
  if (!cfg.a.fromFile() && !cfg.b.fromFile())
    if (const auto pr = gemmOperandProblem(cfg, m, k, n)) {
      const std::string& k = pr->key;
      const std::string flag = k == "format_a"    ? "--a-format"
                               : k == "format_b"  ? "--b-format"
                               : k == "scaling_b" ? "--b-scaling"
                               : k == "scaling"   ? "--scaling"
                                                  : "--" + k;
      return flag + ": " + pr->why;
    }
  // The config parser checks the whole combination as it checks a config file.
  GemmExperimentConfig back;
  return parseGemmConfig(gemmConfigJson(cfg), &back);
}

} // namespace fp8lab

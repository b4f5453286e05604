#include "experiment/param_schema.h"

#include "common/names.h"
#include "experiment/config_reader.h"
#include "formats/format.h"
#include "gemm/backend_policy.h"
#include "gemm/random_matrix.h"
#include "scaling/delayed_scaling.h"
#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace fp8lab {

namespace {

constexpr double kBig = double(int64_t(1) << 20); // 2^20: dimensions, windows, tiles, channels

std::vector<std::string> formatChoices() {
  std::vector<std::string> r;
  for (const Format* f : Format::all())
    if (f->bits() <= 8) r.push_back(f->name());
  return r;
}

std::vector<std::string> gemmScalingChoices() {
  std::vector<std::string> r;
  for (const auto& p : scalingPresets())
    if (!p.delayed) r.push_back(p.name);
  for (const auto& p : nvfp4Presets()) r.push_back(p.name);
  return r;
}

std::vector<std::string> accumulationChoices() {
  std::vector<std::string> r;
  for (Accumulation a : {Accumulation::Exact, Accumulation::FP32, Accumulation::SplitFP32, Accumulation::FastAccum})
    r.push_back(toString(a));
  return r;
}

std::vector<std::string> accumulationPresetChoices() {
  std::vector<std::string> r;
  for (const auto& p : accumulationPresets()) r.push_back(p.name);
  return r;
}

std::vector<std::string> outputChoices() {
  std::vector<std::string> r;
  for (OutputType t : {OutputType::FP32, OutputType::BF16, OutputType::FP16, OutputType::E4M3FN, OutputType::E5M2})
    r.push_back(toString(t));
  return r;
}

std::vector<std::string> distributionChoices() {
  std::vector<std::string> r;
  for (Distribution d : {Distribution::Normal, Distribution::Uniform, Distribution::LogNormal, Distribution::Outliers,
                         Distribution::ChannelOutliers})
    r.push_back(toString(d));
  return r;
}

std::vector<std::string> kernelChoices() {
  std::vector<std::string> r;
  for (CpuKernel k :
       {CpuKernel::Auto, CpuKernel::Portable, CpuKernel::Avx512Bf16, CpuKernel::Avx512Fma, CpuKernel::Avx2Fma})
    r.push_back(toString(k));
  return r;
}

std::vector<std::string> backendChoices() {
  std::vector<std::string> r;
  for (BackendRequest b : {BackendRequest::Auto, BackendRequest::Cpu, BackendRequest::Gpu}) r.push_back(toString(b));
  return r;
}

ParamSpec integer(std::string key, ParamScope scope, std::string flag, std::string unit, double lo, double hi,
                  std::string def, std::string commands, std::string presets, std::string help) {
  ParamSpec p;
  p.key = std::move(key);
  p.scope = scope;
  p.flag = std::move(flag);
  p.type = ParamType::Integer;
  p.unit = std::move(unit);
  p.min = lo;
  p.max = hi;
  p.def = std::move(def);
  p.commands = std::move(commands);
  p.presets = std::move(presets);
  p.help = std::move(help);
  return p;
}

ParamSpec typed(ParamType t, std::string key, ParamScope scope, std::string flag, std::string def, std::string commands,
                std::string presets, std::string help) {
  ParamSpec p = integer(std::move(key), scope, std::move(flag), {}, 0, 0, std::move(def), std::move(commands),
                        std::move(presets), std::move(help));
  p.type = t;
  return p;
}

ParamSpec number(std::string key, ParamScope scope, std::string flag, double lo, double hi, std::string def,
                 std::string commands, std::string presets, std::string help) {
  ParamSpec p = typed(ParamType::Number, std::move(key), scope, std::move(flag), std::move(def), std::move(commands),
                      std::move(presets), std::move(help));
  p.min = lo;
  p.max = hi;
  return p;
}

ParamSpec choice(std::string key, ParamScope scope, std::string flag, std::vector<std::string> choices, std::string def,
                 std::string commands, std::string presets, std::string help) {
  ParamSpec p = typed(ParamType::Choice, std::move(key), scope, std::move(flag), std::move(def), std::move(commands),
                      std::move(presets), std::move(help));
  p.choices = std::move(choices);
  return p;
}

std::vector<ParamSpec> buildSchema() {
  using S = ParamScope;
  using T = ParamType;
  const double fmax = 3.4028234663852886e38; // float32 max: the epilogue and scales are float32
  std::vector<ParamSpec> s;
  // Shape (docs/gemm.md: D[M,N] = A[M,K]·B[K,N]); a tensor operand fixes its own dimensions.
  for (const auto& [k, what] : {std::pair{"m", "Rows of A and D"},
                                {"n", "Columns of B and D"},
                                {"k", "Contraction length K (K = 0 has nothing to accumulate)"}}) {
    s.push_back(integer(k, S::Top, k, "elements", 1, kBig, "256", "gemm", "",
                        std::string(what) + "; a tensor operand fixes it (docs/gemm.md)."));
    s.back().cli_def = "512";
  }
  s.push_back(typed(T::Seed, "seed", S::Top, "seed", "1", "gemm", "",
                    "Seed of the random operands: A draws stream 1, B stream 2 of randomMatrix (core/gemm)."));
  s.push_back(
      choice("format_a", S::Top, "a-format", formatChoices(), "E4M3FN", "gemm", "",
             "Element format of A (core/formats; 6- and 4-bit formats with MX or NVFP4 scaling: OCP MX v1.0)."));
  s.push_back(choice("format_b", S::Top, "b-format", formatChoices(), "E4M3FN", "gemm", "",
                     "Element format of B (core/formats)."));
  s.push_back(choice("scaling", S::Top, "scaling", gemmScalingChoices(), "te_current", "gemm", "",
                     "Current-scaling or NVFP4 preset of both operands (docs/scaling.md: each follows one system's "
                     "source); NVFP4 presets give E2M1 operands, need K a multiple of 16, and go on both operands "
                     "or neither."));
  s.push_back(choice("scaling_b", S::Top, "b-scaling", gemmScalingChoices(), "", "gemm", "",
                     "Preset of B when it differs from A's (overrides --scaling for B)."));
  s.push_back(choice("accumulation", S::Top, "accumulation", accumulationChoices(), "split", "gemm", "",
                     "How the K products are summed (core/gemm/gemm.h): exact (double), fp32, split (float32 per "
                     "window of N_C, cuBLAS default, DeepSeek-V3 §3.3), fast (the tensor-core MMA family; without a "
                     "preset or mma_* keys, DeepSeek-V3's prose rules, which measured GPUs reject); the gemm flag also "
                     "takes an accumulation preset: one GPU instruction's measured rules (hopper_fp8, ada_fp8, …)."));
  s.push_back(choice("accumulation_preset", S::Top, "", accumulationPresetChoices(), "", "gemm", "",
                     "The fast model's parameters and rules of one GPU instruction (core/gemm/accumulation_preset.h, "
                     "each with its source: measured outputs of H100, Ada, B200 or MMA-Sim's models); a parameter "
                     "given beside it must agree."));
  s.push_back(integer("promotion_interval", S::Top, "promotion-interval", "elements of K", 1, kBig, "128", "gemm",
                      "split fast hopper_fp8 hopper_mma_sync ada_fp8",
                      "N_C: elements of K per promotion window into the float32 accumulator (DeepSeek-V3 §3.3.2: "
                      "128)."));
  s.push_back(integer("fast_accum_bits", S::Top, "fast-bits", "bits", 2, kFastAccumMaxBits, "14", "gemm",
                      "fast hopper_fp8 hopper_fp8_fast_accum hopper_mma_sync ada_fp8 blackwell_fp8 blackwell_tcgen05 "
                      "tcgen05_mxf8f6f4 tcgen05_mxf4nvf4 cdna3_fp8",
                      "Fraction bits the fast model keeps below a group's alignment exponent, plus one (measured H100 "
                      "and Ada: 14; B200: 26; core/gemm/gemm.h kFastAccumMaxBits)."));
  s.push_back(integer("fast_accum_group", S::Top, "fast-group", "products", 1, kBig, "32", "gemm",
                      "fast hopper_fp8 hopper_fp8_fast_accum hopper_mma_sync ada_fp8 blackwell_fp8 blackwell_tcgen05 "
                      "tcgen05_mxf8f6f4 tcgen05_mxf4nvf4 cdna3_fp8",
                      "Products the fast model aligns together (one Hopper FP8 WGMMA covers K = 32)."));
  s.push_back(typed(T::Boolean, "fast_accum_promotes", S::Top, "no-promotion", "true", "gemm",
                    "fast hopper_fp8 hopper_fp8_fast_accum hopper_mma_sync ada_fp8 blackwell_fp8 blackwell_tcgen05 "
                    "tcgen05_mxf8f6f4 tcgen05_mxf4nvf4 cdna3_fp8",
                    "Fast model: promote per window; the flag --no-promotion sets false (one window over all of "
                    "K, cuBLASLt FAST_ACCUM=1)."));
  // The tensor-core MMA rules (core/gemm/gemm.h MmaRules): the defaults are DeepSeek-V3's prose
  // model; the presets set the rules measured on GPUs.
  s.push_back(choice("mma_alignment", S::Top, "mma-alignment", {"product", "operands"}, "product", "gemm",
                     "fast hopper_fp8 hopper_fp8_fast_accum hopper_mma_sync ada_fp8 blackwell_fp8 blackwell_tcgen05 "
                     "tcgen05_mxf8f6f4 tcgen05_mxf4nvf4 cdna3_fp8",
                     "Fast model: the alignment exponent of a group: product = floor(log2|a·b|) (DeepSeek-V3's prose), "
                     "operands = e(a) + e(b) with each exponent clamped at its format's emin (measured on H100, Ada, "
                     "B200: MATLAB-tensor-core; MMA-Sim)."));
  s.push_back(choice("mma_sum", S::Top, "mma-sum", {"exact", "fp32"}, "exact", "gemm",
                     "fast hopper_fp8 hopper_fp8_fast_accum hopper_mma_sync ada_fp8 blackwell_fp8 blackwell_tcgen05 "
                     "tcgen05_mxf8f6f4 tcgen05_mxf4nvf4 cdna3_fp8",
                     "Fast model: a group's sum kept exactly (exact) or normalised to a binary32 with mma_sum_bits "
                     "fraction bits before the next group (fp32; H100 / Ada: 13 bits)."));
  s.push_back(integer("mma_sum_bits", S::Top, "mma-sum-bits", "bits", 1, 23, "23", "gemm",
                      "fast hopper_fp8 hopper_fp8_fast_accum hopper_mma_sync ada_fp8 blackwell_fp8 blackwell_tcgen05 "
                      "tcgen05_mxf8f6f4 tcgen05_mxf4nvf4 cdna3_fp8",
                      "Fast model with mma_sum fp32: fraction bits of the binary32 running sum (H100 / Ada 13, "
                      "Blackwell 23)."));
  s.push_back(choice("mma_sum_rounding", S::Top, "mma-sum-rounding", {"rz", "rne"}, "rz", "gemm",
                     "fast hopper_fp8 hopper_fp8_fast_accum hopper_mma_sync ada_fp8 blackwell_fp8 blackwell_tcgen05 "
                     "tcgen05_mxf8f6f4 tcgen05_mxf4nvf4 cdna3_fp8",
                     "Fast model with mma_sum fp32: how the group's sum is cut to those bits: rz = truncation (every "
                     "measured NVIDIA instruction), rne = round to nearest even."));
  s.push_back(choice("mma_c", S::Top, "mma-c", {"epilogue", "accumulator"}, "epilogue", "gemm",
                     "fast hopper_fp8 hopper_fp8_fast_accum hopper_mma_sync ada_fp8 blackwell_fp8 blackwell_tcgen05 "
                     "tcgen05_mxf8f6f4 tcgen05_mxf4nvf4 cdna3_fp8",
                     "Fast model: where C enters: epilogue = y = alpha·x + beta·C after the MMA (B200 data, "
                     "cuBLASLt), accumulator = as the MMA's first running sum, aligned with the first group (Ada "
                     "mma.sync; needs alpha = 1 and unit scales, else the epilogue)."));
  s.push_back(choice("mma_block_scales", S::Top, "mma-block-scales", {"promoted", "inside"}, "promoted", "gemm",
                     "fast tcgen05_mxf8f6f4 tcgen05_mxf4nvf4",
                     "Fast model: block scales along K promoted with each block's partial sum (DeepGEMM, cuBLASLt on "
                     "Hopper) or inside the fused sum, raising each term's alignment exponent (Blackwell block-scaled "
                     "MMA: MMA-Sim); inside needs MX / NVFP4 scale codes."));
  s.push_back(integer("mma_chunk", S::Top, "mma-chunk", "products", 1, 64, "1", "gemm", "fast tcgen05_mxf4nvf4",
                      "Fast model with block scales inside: products summed exactly per chunk before alignment "
                      "(kind::mxf4nvf4: 16; 1 = each product a term)."));
  s.push_back(choice("mma_datapath", S::Top, "mma-datapath", {"fused", "cdna3"}, "fused", "gemm", "fast cdna3_fp8",
                     "Fast model: NVIDIA's one fused sum per group, or AMD CDNA3's FP8 MFMA (groups of 16, even and "
                     "odd products apart, RNE per group; MMA-Sim amd.py)."));
  s.push_back(choice("output", S::Top, "output", outputChoices(), "fp32", "gemm", "",
                     "Element type of D (cuBLASLt D types; FP8 outputs are cast at scale_D)."));
  s.push_back(number("output_quant_scale", S::Top, "output-scale", 0, fmax, "auto", "gemm", "e4m3fn e5m2",
                     "FP8 outputs: scale_D, the quant multiplier (cuBLASLt D_SCALE); auto = max / amax of the "
                     "quantized-exact D."));
  s.back().min_open = true;
  s.push_back(number("alpha", S::Top, "alpha", -fmax, fmax, "1", "gemm", "",
                     "Epilogue D = scale_D·(alpha·(A·B) + beta·C + bias): alpha, float32 (cuBLASLt)."));
  s.push_back(number("beta", S::Top, "beta", -fmax, fmax, "0", "gemm", "",
                     "Epilogue beta, float32; beta ≠ 0 needs C (cuBLASLt reads C only then)."));
  s.push_back(typed(T::Seed, "seed", S::C, "c-seed", "", "gemm", "",
                    "Epilogue C [M,N]: seeded normal values rounded to BF16 (stream 3)."));
  s.push_back(number("scale", S::C, "c-scale", 0, fmax, "1", "gemm", "", "Standard deviation of C (> 0)."));
  s.back().min_open = true;
  s.push_back(typed(T::Text, "file", S::C, "c-file", "", "gemm", "",
                    "Epilogue C [M,N] from a tensor file (.npy, safetensors, HDF5; float32, or float64 holding "
                    "float32 values), used as is: the C a kernel was given; needs --beta other than 0 (beta defaults "
                    "to 0). The accumulation preset decides where C enters: inside the MMA for most (mma_c "
                    "accumulator), after it for blackwell_fp8 (epilogue)."));
  s.push_back(typed(T::Seed, "seed", S::Bias, "bias-seed", "", "gemm", "",
                    "Epilogue bias [N], added to every row after alpha: seeded normal values rounded to BF16 "
                    "(stream 4)."));
  s.push_back(
      number("scale", S::Bias, "bias-scale", 0, fmax, "1", "gemm", "", "Standard deviation of the bias (> 0)."));
  s.back().min_open = true;
  s.push_back(choice("distribution", S::Operands, "distribution", distributionChoices(), "normal", "gemm", "",
                     "Element distribution of the random operands (core/gemm/random_matrix.h; channel_outliers: "
                     "LLM.int8() §3.2 outlier feature channels)."));
  // A random scale may overflow float32: the run refuses it, counting the infinite elements.
  s.push_back(number("scale", S::Operands, "scale", 0, std::numeric_limits<double>::max(), "1", "gemm", "",
                     "Standard deviation (normal, outliers), half-width (uniform) or median (lognormal) of the random "
                     "operands (> 0)."));
  s.back().min_open = true;
  s.push_back(number("sigma", S::Operands, "sigma", 0, fmax, "1", "gemm", "lognormal",
                     "Lognormal operands: standard deviation of log|x|."));
  s.push_back(number("outlier_fraction", S::Operands, "outlier-fraction", 0, 1, "0.001", "gemm", "outliers",
                     "Outliers: probability of an element being an outlier."));
  s.push_back(number("outlier_factor", S::Operands, "outlier-factor", 0, fmax, "100", "gemm",
                     "outliers channel_outliers", "Multiplier of an outlier element or channel."));
  s.push_back(integer("outlier_channels", S::Operands, "outlier-channels", "channels", 0, kBig, "4", "gemm",
                      "channel_outliers",
                      "channel_outliers: how many whole channels are outliers (drawn from the seed)."));
  s.push_back(choice("outlier_axis", S::Operands, "outlier-axis", {"columns", "rows"}, "columns", "gemm",
                     "channel_outliers", "channel_outliers: whether the outlier channels are columns or rows."));
  s.push_back(typed(T::Text, "tensor", S::OperandA, "a-tensor", "", "gemm", "",
                    "Import A [M,K] instead of random data (w.npy, m.safetensors:NAME, f.h5:/path); fixes M and K."));
  s.push_back(
      typed(T::Text, "tensor", S::OperandB, "b-tensor", "", "gemm", "", "Import B [K,N] the same way; fixes K and N."));
  s.push_back(integer("tile", S::Top, "tile", "elements", 1, kBig, "128", "gemm", "",
                      "Tile edge of the per-tile error map (error/tile_*)."));
  s.push_back(
      choice("rounding", S::Top, "rounding", {"rne", "stochastic"}, "rne", "gemm", "",
             "Element rounding of the operands a current-scaling preset quantizes (core/formats EncodeOptions)."));
  s.push_back(integer("stochastic_bits", S::Top, "stochastic-bits", "bits", 1, 32, "16", "gemm", "stochastic",
                      "Random bits per element for stochastic rounding."));
  s.push_back(integer("threads", S::None, "threads", "threads", 0, 1024, "0", "gemm", "",
                      "Threads of the CPU backend (0 = all hardware threads)."));
  s.push_back(choice("kernel", S::None, "kernel", kernelChoices(), "auto", "gemm", "",
                     "CPU kernel (core/gemm/gemm.h CpuKernel; all give bit-identical results)."));
  s.push_back(choice("backend", S::None, "backend", backendChoices(), "auto", "gemm run train", "",
                     "Where GEMMs run (core/gemm/backend_policy.h): the GPU when it can, the CPU reference, or the "
                     "GPU always."));
  // Scaling parameters the quantize and train commands share (delayed scaling: Flax fp8_ops, TE
  // DelayedScaling; the TE margin rule).
  // 2^20: `scaling simulate` streams one step at a time in O(L) memory (docs/reliability.md #78).
  s.push_back(integer("history_len", S::None, "history-len", "steps", 1, kMaxAmaxHistoryLen, "1024",
                      "quantize scaling train", "flax_delayed te_delayed te_jax_delayed",
                      "Delayed scaling: amax history length (TE DelayedScaling amax_history_len; Flax 1024)."));
  s.push_back(integer("margin", S::None, "margin", "powers of two", -126, 126, "0", "quantize scaling train",
                      "te_current te_current_pow2 te_block_1x128 te_block_128x128 te_delayed te_jax_delayed",
                      "TE margin m: the scale is computed for max / 2^m (TE DelayedScaling margin; Flax has none)."));
  s.push_back(choice("amax_compute_algo", S::None, "algo", {"max", "most_recent"}, "max", "quantize train",
                     "te_delayed te_jax_delayed", "Delayed scaling: amax of the history (TE amax_compute_algo)."));
  return s;
}

} // namespace

std::string ParamSpec::rangeText() const {
  if (type != ParamType::Integer && type != ParamType::Number) return {};
  auto text = [&](double v) {
    if (type == ParamType::Integer || (v == std::floor(v) && std::fabs(v) < 1e15))
      return std::to_string(static_cast<int64_t>(v));
    char b[32];
    std::snprintf(b, sizeof b, "%.9g", v);
    return std::string(b);
  };
  return (min_open ? "(" : "[") + text(min) + ", " + text(max) + "]";
}

std::string paramHelp(const ParamSpec& p, bool flag) {
  std::string h = p.help;
  const std::string& def = flag ? p.flagDefault() : p.def;
  if (!def.empty()) h += " Default " + def + ".";
  if (p.type == ParamType::Integer || p.type == ParamType::Number)
    h += " Range " + p.rangeText() + (p.unit.empty() ? "" : " " + p.unit) + ".";
  if (p.type == ParamType::Choice) h += " One of: " + joinNames(p.choices) + ".";
  if (!p.presets.empty()) h += " Read by: " + p.presets + ".";
  return h;
}

std::string paramSchemaMarkdown() {
  auto typeName = [](ParamType t) {
    switch (t) {
    case ParamType::Integer:
      return "integer";
    case ParamType::Number:
      return "number";
    case ParamType::Boolean:
      return "boolean";
    case ParamType::Choice:
      return "choice";
    case ParamType::Text:
      return "text";
    case ParamType::Seed:
      return "seed";
    }
    return "";
  };
  auto keyOf = [](const ParamSpec& p) -> std::string {
    switch (p.scope) {
    case ParamScope::Operands:
      return "a." + p.key + ", b." + p.key;
    case ParamScope::OperandA:
      return "a." + p.key;
    case ParamScope::OperandB:
      return "b." + p.key;
    case ParamScope::C:
      return "c." + p.key;
    case ParamScope::Bias:
      return "bias." + p.key;
    case ParamScope::None:
      return "(" + p.key + ")";
    default:
      return p.key;
    }
  };
  auto code = [](const std::string& s) { return s.empty() ? std::string() : "`" + s + "`"; };
  std::string m = "| config key | flag | type | range / choices | default | commands | read by | what |\n"
                  "|---|---|---|---|---|---|---|---|\n";
  for (const ParamSpec& p : paramSchema()) {
    std::string range = p.rangeText();
    if (!range.empty() && !p.unit.empty()) range += " " + p.unit;
    if (p.type == ParamType::Choice) range = joinNames(p.choices);
    std::string def = p.def;
    if (!p.cli_def.empty()) def += " (gemm flag: " + p.cli_def + ")";
    m += "| " + code(keyOf(p)) + " | " + (p.flag.empty() ? std::string() : code("--" + p.flag)) + " | " +
         typeName(p.type) + " | " + range + " | " + def + " | " + p.commands + " | " + p.presets + " | " + p.help +
         " |\n";
  }
  return m;
}

bool ParamSpec::usedBy(std::string_view command) const {
  size_t i = 0;
  while (i < commands.size()) {
    size_t j = commands.find(' ', i);
    if (j == std::string::npos) j = commands.size();
    if (std::string_view(commands).substr(i, j - i) == command) return true;
    i = j + 1;
  }
  return false;
}

const std::vector<ParamSpec>& paramSchema() {
  static const std::vector<ParamSpec> s = buildSchema();
  return s;
}

const ParamSpec* findParam(std::string_view key, ParamScope scope) {
  for (const auto& p : paramSchema())
    if (p.key == key && p.scope == scope) return &p;
  // The settings outside the GEMM config are found by key in any scope.
  if (scope == ParamScope::Top)
    for (const auto& p : paramSchema())
      if (p.scope == ParamScope::None && p.key == key) return &p;
  return nullptr;
}

const ParamSpec* findParamByFlag(std::string_view flag) {
  for (const auto& p : paramSchema())
    if (!p.flag.empty() && p.flag == flag) return &p;
  return nullptr;
}

const ParamSpec& param(std::string_view key, ParamScope scope) {
  if (const ParamSpec* p = findParam(key, scope)) return *p;
  throw std::logic_error("the parameter schema has no '" + std::string(key) + "'");
}

bool inParamRange(std::string_view key, double v) {
  for (const auto& p : paramSchema())
    if (p.key == key) return v >= p.min && v <= p.max;
  throw std::logic_error("the parameter schema has no '" + std::string(key) + "'");
}

std::string checkParamText(const ParamSpec& p, std::string_view text) {
  const std::string flag = "--" + p.flag;
  switch (p.type) {
  case ParamType::Integer: {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || double(v) < p.min || double(v) > p.max)
      return flag + " must be an integer in " + p.rangeText();
    return {};
  }
  case ParamType::Number: {
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < p.min || v > p.max ||
        (p.min_open && v == p.min))
      return flag + " must be a finite number in " + p.rangeText();
    return {};
  }
  case ParamType::Seed: {
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
      return flag + " must be a non-negative integer (an unsigned 64-bit seed)";
    return {};
  }
  default:
    return {};
  }
}

bool accumulationReads(Accumulation a, std::string_view key) {
  if (a == Accumulation::FastAccum) return true;
  return a == Accumulation::SplitFP32 && key == "promotion_interval";
}

std::optional<ParamProblem> accumulationProblem(const GemmOptions& opt, const std::set<std::string>& given,
                                                const AccumulationPreset* preset, bool refuse_unread,
                                                GemmOptions* resolved) {
  auto has = [&](const char* k) { return given.count(k) > 0; };
  GemmOptions o = opt;
  if (preset) {
    // The preset sets the model's parameters; a parameter given beside it must say the same.
    GemmOptions g = withAccumulationPreset(opt, *preset);
    if (has("accumulation")) g.accumulation = opt.accumulation;
    if (has("promotion_interval")) g.promotion_interval = opt.promotion_interval;
    if (has("fast_accum_bits")) g.fast_accum_bits = opt.fast_accum_bits;
    if (has("fast_accum_group")) g.fast_accum_group = opt.fast_accum_group;
    if (has("fast_accum_promotes")) g.fast_accum_promotes = opt.fast_accum_promotes;
    if (has("mma_alignment")) g.mma.alignment = opt.mma.alignment;
    if (has("mma_sum")) g.mma.sum = opt.mma.sum;
    if (has("mma_sum_bits")) g.mma.sum_bits = opt.mma.sum_bits;
    if (has("mma_sum_rounding")) g.mma.sum_rounding = opt.mma.sum_rounding;
    if (has("mma_c")) g.mma.c_entry = opt.mma.c_entry;
    if (has("mma_block_scales")) g.mma.block_scales = opt.mma.block_scales;
    if (has("mma_chunk")) g.mma.chunk = opt.mma.chunk;
    if (has("mma_datapath")) g.mma.datapath = opt.mma.datapath;
    if (std::string why = accumulationPresetMismatch(g, *preset); !why.empty())
      return ParamProblem{"accumulation_preset", std::move(why)};
    o = g;
  } else if (refuse_unread) {
    for (const char* k : {"fast_accum_bits", "fast_accum_group", "fast_accum_promotes", "mma_alignment", "mma_sum",
                          "mma_sum_bits", "mma_sum_rounding", "mma_c", "mma_block_scales", "mma_chunk", "mma_datapath"})
      if (has(k) && !accumulationReads(o.accumulation, k))
        return ParamProblem{k,
                            std::string("applies to the fast-accumulation model (fast or an accumulation preset); '") +
                                toString(o.accumulation) + "' does not read it"};
    if (has("promotion_interval") && !accumulationReads(o.accumulation, "promotion_interval"))
      return ParamProblem{"promotion_interval", std::string("applies to split and fast accumulation; '") +
                                                    toString(o.accumulation) + "' has no promotion windows"};
  }
  try {
    checkFastAccum(o);
  } catch (const std::invalid_argument& e) {
    return ParamProblem{"fast_accum_bits", e.what()};
  }
  if (resolved) *resolved = o;
  return std::nullopt;
}

AccumulationPreset requireAccumulationPreset(std::string_view name) {
  if (auto p = accumulationPreset(name)) return *p;
  throw std::invalid_argument("unknown accumulation preset '" + std::string(name) + "' (" + accumulationPresetNames() +
                              ")");
}

} // namespace fp8lab

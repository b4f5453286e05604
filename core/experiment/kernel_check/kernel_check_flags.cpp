// The codes-operand and kernel-check flags, and the config they give (kernel_check_flags.h).
#include "experiment/kernel_check/kernel_check_flags.h"

#include "experiment/gemm/gemm_config.h"

#include <array>
#include <charconv>

namespace fp8lab {

namespace {

/// The per-operand codes flags: name suffix, help (%1 the operand, %2 its shape, %3 its letter),
/// value name.
struct OperandFlag {
  const char* suffix;
  const char* help;
  const char* value;
};
constexpr OperandFlag kOperandFlags[] = {
    {"codes", "%1 as codes: uint8 .npy / .safetensors:NAME (U8, F8_E4M3, F8_E5M2) [%2] (its format: --%3-format).",
     "SPEC"},
    {"scales", "%1's scales: a file (.npy / .safetensors:NAME) or one number (a per-tensor dequant scale).", "S"},
    {"block", "Codes one scale of %1 covers, ROWSxCOLS of the stored codes (1x128, 128x128, 1x32, ...).", "RxC"},
    {"scale-format", "%1's scale file: float32 (default) | E8M0 (UE8M0, float8_e8m0fnu) | E4M3FN (UE4M3).", "F"},
    {"scale-layout",
     "How %1's scale file is laid out: row_major (default) | cublaslt_vec32_ue8m0 | cublaslt_vec16_ue4m3 | "
     "cublaslt_vec128 | cublaslt_blk128x128 | deepgemm_mn_major | deepgemm_packed_ue8m0 (docs/gemm.md).",
     "L"},
    {"packed", "%1's codes are FP4 packed two a byte: low_first (PyTorch float4_e2m1fn_x2) | high_first.", "ORDER"},
    {"tensor-amax", "NVFP4 %1: Transformer Engine's tensor amax (the second scale level).", "X"},
    {"tensor-scale", "NVFP4 %1: torchao's per_tensor_scale (the second scale level).", "X"},
};

/// The flags of the check, which need --observed.
constexpr const char* kCheckFlags[] = {"reference", "max-ulp",  "atol",       "rtol",         "min-sqnr",
                                       "no-fit",    "fit-bits", "fit-groups", "fit-intervals"};

std::string flag(char op, const std::string& suffix) {
  return std::string(1, op) + '-' + suffix;
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\v\f\r");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\n\v\f\r") - b + 1);
}

/// A whole number in decimal with an optional sign (QString::toLongLong's rule); nullopt otherwise.
std::optional<int64_t> wholeNumber(std::string s) {
  s = trimmed(s);
  if (!s.empty() && s[0] == '+') s.erase(0, 1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

/// "a.block: ..." → "--a-block: ...", "check.max_ulp" → "--max-ulp", and the like.
std::string flagNames(const std::string& msg) {
  static const std::pair<const char*, const char*> map[] = {
      {"a.codes", "--a-codes"},
      {"a.scales", "--a-scales"},
      {"a.block", "--a-block"},
      {"a.scale_format", "--a-scale-format"},
      {"a.scale_layout", "--a-scale-layout"},
      {"a.packed", "--a-packed"},
      {"a.transpose", "--a-transpose"},
      {"a.tensor_amax", "--a-tensor-amax"},
      {"a.tensor_scale", "--a-tensor-scale"},
      {"a.format", "--a-format"},
      {"b.codes", "--b-codes"},
      {"b.scales", "--b-scales"},
      {"b.block", "--b-block"},
      {"b.scale_format", "--b-scale-format"},
      {"b.scale_layout", "--b-scale-layout"},
      {"b.packed", "--b-packed"},
      {"b.transpose", "--b-transpose"},
      {"b.tensor_amax", "--b-tensor-amax"},
      {"b.tensor_scale", "--b-tensor-scale"},
      {"b.format", "--b-format"},
      {"check.reference", "--reference"},
      {"check.max_ulp", "--max-ulp"},
      {"check.atol", "--atol"},
      {"check.rtol", "--rtol"},
      {"check.min_sqnr_db", "--min-sqnr"},
      {"check.fit_bits", "--fit-bits"},
      {"check.fit_groups", "--fit-groups"},
      {"check.fit_intervals", "--fit-intervals"},
      {"output_quant_scale", "--output-scale"},
      {"observed", "--observed"},
      {"format_a", "--a-format"},
      {"format_b", "--b-format"},
      {"scaling_b", "--b-scaling"},
      {"scaling", "--scaling"},
  };
  for (const auto& [key, f] : map) {
    const std::string k = std::string(key) + ':';
    if (msg.compare(0, k.size(), k) == 0) return f + msg.substr(k.size() - 1);
  }
  return msg;
}

} // namespace

const std::vector<CheckFlag>& kernelCheckFlags() {
  static const std::vector<CheckFlag> flags = [] {
    std::vector<CheckFlag> v;
    for (char op : {'a', 'b'}) {
      const std::string name = op == 'a' ? "A" : "B", letter(1, op);
      const std::string shape = op == 'a' ? "M, K" : "K, N; [N, K] with --b-transpose";
      for (const auto& f : kOperandFlags)
        v.push_back(
            {flag(op, f.suffix), replaced(replaced(replaced(f.help, "%1", name), "%2", shape), "%3", letter), f.value});
      v.push_back({flag(op, "transpose"),
                   name + "'s codes file holds the transpose (B stored [N, K] K-major, as kernels hold it); --" +
                       letter + "-block and a row-major scale grid are the stored tensor's.",
                   ""});
    }
    v.push_back({"observed",
                 "Check a kernel's output D [M,N] against the CPU reference: float32 / float16 (.npy, "
                 ".safetensors:NAME, .h5:/PATH), bfloat16 from .safetensors only (NumPy has no bfloat16 dtype: "
                 "save a torch bfloat16 D with safetensors, or as float32, whose values stay BF16 values), or the "
                 "uint8 / F8 codes of an FP8 --output with --output-scale = the kernel's scale_D. Exit status 0 "
                 "when it passes, 1 when it fails.",
                 "FILE"});
    v.push_back({"reference", "The model the verdict compares with: exact (default) | fp32 | split | fast | a preset.",
                 "MODEL"});
    v.push_back({"max-ulp", "Pass when every element is within this many ULPs of the output type.", "N"});
    v.push_back(
        {"atol", "Pass when |observed - reference| <= atol + rtol·|reference| everywhere (numpy.isclose).", "X"});
    v.push_back({"rtol", "See --atol.", "X"});
    v.push_back({"min-sqnr", "Pass when the SQNR of observed vs reference is at least this (dB).", "DB"});
    v.push_back({"allow-nonfinite",
                 "Exit 0 although D holds NaN outputs; with --observed: accept NaN / Inf outputs where the reference "
                 "has the same (they fail by default).",
                 ""});
    v.push_back({"no-fit", "Skip the fit of the accumulation models.", ""});
    v.push_back({"fit-bits", "Significant bits the fit tries (default 10..28).", "LIST"});
    v.push_back({"fit-groups", "Groups the fit tries (default 1,2,4,8,16,32,64).", "LIST"});
    v.push_back({"fit-intervals", "Promotion intervals N_C the fit tries (default 32,64,128,256,512).", "LIST"});
    return v;
  }();
  return flags;
}

std::string applyKernelCheckFlags(const std::map<std::string, GivenFlag>& given, GemmExperimentConfig* cfg) {
  const auto has = [&](const std::string& f) { return given.count(f) > 0; };
  const auto text = [&](const std::string& f) { return given.at(f).text; };
  Json j = gemmConfigJson(*cfg);
  for (char op : {'a', 'b'}) {
    const std::string A(1, char(op - 'a' + 'A')), codes = flag(op, "codes");
    if (!has(codes)) {
      for (const auto& f : kOperandFlags)
        if (has(flag(op, f.suffix)))
          return "--" + flag(op, f.suffix) + " describes " + A + " given as codes: add --" + codes;
      if (has(flag(op, "transpose")))
        return "--" + flag(op, "transpose") + " applies to codes operands (--" + codes + "); an imported tensor: --" +
               std::string(1, op) + "-tensor FILE with \"transpose\" in a config";
      continue;
    }
    // The dimensions the codes file fixes: A [M, K], B [K, N].
    const std::array<const char*, 2> dims =
        op == 'a' ? std::array<const char*, 2>{"m", "k"} : std::array<const char*, 2>{"k", "n"};
    for (const char* dim : dims)
      if (has(dim))
        return "--" + std::string(dim) + " comes from the shape of --" + codes + " '" + text(codes) + "'; leave it out";
    Json o = Json::object();
    o["codes"] = text(codes);
    o["format"] = op == 'a' ? cfg->format_a : cfg->format_b;
    const std::string scales = flag(op, "scales");
    if (!has(scales))
      return "--" + codes + " needs --" + scales + ": a scale file or one number (a per-tensor dequant scale)";
    if (const GivenFlag& s = given.at(scales); s.number)
      o["scales"] = *s.number;
    else
      o["scales"] = s.text;
    if (const std::string block = flag(op, "block"); has(block)) {
      std::string b = text(block);
      for (char& c : b)
        if (c == ',' || c == 'X') c = 'x';
      const size_t x = b.find('x');
      std::optional<int64_t> r, c;
      if (x != std::string::npos && b.find('x', x + 1) == std::string::npos) {
        r = wholeNumber(b.substr(0, x));
        c = wholeNumber(b.substr(x + 1));
      }
      if (!r || !c || *r < 1 || *c < 1)
        return "--" + block + " must be ROWSxCOLS with both >= 1 (1x128, 128x128, 1x32), got '" + text(block) + "'";
      o["block"] = Json::array({*r, *c});
    }
    for (const char* k : {"scale-format", "scale-layout", "packed"})
      if (has(flag(op, k))) o[replaced(k, "-", "_")] = text(flag(op, k));
    if (has(flag(op, "transpose"))) o["transpose"] = true;
    for (const char* k : {"tensor-amax", "tensor-scale"})
      if (const std::string f = flag(op, k); has(f)) {
        const GivenFlag& g = given.at(f);
        if (!g.number) return "--" + f + ": " + g.number_problem;
        o[replaced(k, "-", "_")] = *g.number;
      }
    j[std::string(1, op)] = o;
    j.erase(op == 'a' ? "format_a" : "format_b");
    for (const char* dim : dims) j.erase(dim);
  }
  // Without codes operands and --observed there is nothing for the config parser: only the
  // refusals of check flags given without their subject. (--allow-nonfinite also lets a run
  // without --observed exit 0 with NaN outputs.)
  if (!has("observed")) {
    for (const char* f : kCheckFlags)
      if (has(f)) return "--" + std::string(f) + " checks a kernel's output: add --observed FILE";
    if (!has("a-codes") && !has("b-codes")) return {};
  } else {
    j["observed"] = text("observed");
    Json c = Json::object();
    if (has("reference")) c["reference"] = text("reference");
    for (const auto& [f, key] :
         {std::pair{"max-ulp", "max_ulp"}, {"atol", "atol"}, {"rtol", "rtol"}, {"min-sqnr", "min_sqnr_db"}}) {
      if (!has(f)) continue;
      const GivenFlag& g = given.at(f);
      if (!g.number) return "--" + std::string(f) + ": " + g.number_problem;
      c[key] = *g.number;
    }
    if (has("allow-nonfinite")) c["allow_nonfinite"] = true;
    if (has("no-fit")) c["fit"] = false;
    for (const auto& [f, key] :
         {std::pair{"fit-bits", "fit_bits"}, {"fit-groups", "fit_groups"}, {"fit-intervals", "fit_intervals"}})
      if (has(f)) c[key] = text(f);
    j["check"] = c;
  }
  GemmExperimentConfig out;
  const std::string err = parseGemmConfig(j, &out);
  if (!err.empty()) return flagNames(err);
  // What the config does not carry: the CPU kernel, threads and the memory limit.
  out.gemm.threads = cfg->gemm.threads;
  out.gemm.cpu_kernel = cfg->gemm.cpu_kernel;
  out.gemm.memory_limit_bytes = cfg->gemm.memory_limit_bytes;
  out.store_inputs = cfg->store_inputs;
  out.store_quantized = cfg->store_quantized;
  out.store_error_maps = cfg->store_error_maps;
  *cfg = std::move(out);
  return {};
}

} // namespace fp8lab

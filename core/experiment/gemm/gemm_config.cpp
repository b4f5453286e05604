#include "experiment/gemm/gemm_config.h"

#include "common/names.h"

#include "experiment/param_schema.h"
#include "session/session_layout.h"

#include "formats/format.h"
#include "io/fp8_checkpoint.h"
#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>

namespace fp8lab {

namespace {

const std::vector<std::string> kGemmKeys = {"type",
                                            "name",
                                            "description",
                                            "m",
                                            "k",
                                            "n",
                                            "seed",
                                            "format",
                                            "format_a",
                                            "format_b",
                                            "scaling",
                                            "scaling_b",
                                            "distribution",
                                            "a",
                                            "b",
                                            "accumulation",
                                            "accumulation_preset",
                                            "promotion_interval",
                                            "fast_accum_bits",
                                            "fast_accum_group",
                                            "fast_accum_promotes",
                                            "mma_alignment",
                                            "mma_sum",
                                            "mma_sum_bits",
                                            "mma_sum_rounding",
                                            "mma_c",
                                            "mma_block_scales",
                                            "mma_chunk",
                                            "mma_datapath",
                                            "output",
                                            "output_quant_scale",
                                            "alpha",
                                            "beta",
                                            "c",
                                            "bias",
                                            "tile",
                                            "store_inputs",
                                            "store_quantized",
                                            "store_error_maps",
                                            "rounding",
                                            "stochastic_bits",
                                            "observed",
                                            "check",
                                            "sweep"};

constexpr const char* kRandomKeys[] = {"distribution",     "scale",       "sigma", "outlier_fraction", "outlier_factor",
                                       "outlier_channels", "outlier_axis"};

/// An integer key of `o` in the range of its schema entry (param_schema.h).
int64_t schemaInteger(const Json& o, std::string_view key, ParamScope scope, const ConfigPath& at, int64_t def,
                      ConfigReader& r) {
  const ParamSpec& p = param(key, scope);
  return r.integer(o, key, at, def, static_cast<int64_t>(p.min), static_cast<int64_t>(p.max));
}

/// A format name into `out` (its canonical spelling).
void readFormat(const Json& o, std::string_view key, const ConfigPath& at, std::string* out, ConfigReader& r) {
  if (const Format* f = r.format(o, key, at, nullptr)) *out = f->name();
}

void readDistribution(const Json& o, const ConfigPath& at, Distribution* d, ConfigReader& r) {
  if (!ConfigReader::has(o, "distribution")) return;
  const std::string s = r.string(o, "distribution", at, {});
  if (!r.ok()) return;
  const auto p = parseDistribution(s);
  if (!p)
    r.fail(at.member("distribution"), "unknown '" + s + "' (normal, uniform, lognormal, outliers, channel_outliers)");
  else
    *d = *p;
}

constexpr const char* kPreQuantizedKeys[] = {"codes",       "format",       "scales",      "scale_format", "block",
                                             "tensor_amax", "tensor_scale", "fp4_fp8_max", "scale_layout", "packed"};

const char* toString(PreQuantizedSource::ScaleFormat f) {
  using SF = PreQuantizedSource::ScaleFormat;
  return f == SF::E8M0 ? "E8M0" : f == SF::E4M3FN ? "E4M3FN" : "float32";
}

/// The pre-quantized form of an operand object ("codes" present): PreQuantizedSource. `axis` is
/// the operand's contraction axis (A: Cols, B: Rows), which the MX and NVFP4 blocks must follow.
void parsePreQuantized(const Json& o, const ConfigPath& at, Axis axis, PreQuantizedSource* p, ConfigReader& r) {
  using SF = PreQuantizedSource::ScaleFormat;
  p->codes = r.string(o, "codes", at, p->codes);
  if (r.ok() && p->codes.empty())
    r.fail(at.member("codes"), "expected the codes file (\"c.npy\", \"m.safetensors:NAME\")");
  if (!ConfigReader::has(o, "format"))
    r.fail(at.member("codes"), "pre-quantized codes need their element format: add \"format\"");
  if (!r.ok()) return;
  if (const Format* f = r.format(o, "format", at, nullptr)) p->format = f->name();
  if (!ConfigReader::has(o, "scales")) {
    r.fail(at.member("codes"), "pre-quantized codes need \"scales\": a file of block scales or one number");
    return;
  }
  const Json& sv = o["scales"];
  const bool one = sv.is_number();
  if (one) {
    p->scale = r.number(o, "scales", at, 1.0);
    p->scales.clear();
    if (r.ok() && !(std::isfinite(float(p->scale)) && p->scale > 0))
      r.fail(at.member("scales"), "one per-tensor dequant scale must be a finite float32 number > 0");
  } else {
    p->scales = r.string(o, "scales", at, {});
    if (r.ok() && p->scales.empty()) r.fail(at.member("scales"), "expected a scale file or one number");
  }
  if (!r.ok()) return;
  const std::string sf = r.string(o, "scale_format", at, toString(p->scale_format));
  if (!r.ok()) return;
  // The names users type: FP8 Lab's, cuBLASLt's (UE8M0, UE4M3: unsigned scale formats), PyTorch's
  // dtypes (float8_e8m0fnu, float8_e4m3fn).
  const std::string low = normalizedName(sf);
  if (low == "float32" || low == "f32" || low == "fp32")
    p->scale_format = SF::Float32;
  else if (low == "e8m0" || low == "e8m0fnu" || low == "ue8m0" || low == "float8_e8m0fnu")
    p->scale_format = SF::E8M0;
  else if (low == "e4m3fn" || low == "e4m3" || low == "ue4m3" || low == "float8_e4m3fn")
    p->scale_format = SF::E4M3FN;
  else {
    r.fail(at.member("scale_format"),
           "unknown '" + sf + "' (float32; E8M0 = UE8M0 = float8_e8m0fnu; E4M3FN = UE4M3 = float8_e4m3fn)");
    return;
  }
  p->transpose = r.boolean(o, "transpose", at, false);
  p->packed.reset();
  if (ConfigReader::has(o, "packed")) {
    const Json& pk = o["packed"];
    if (pk.is_boolean()) {
      if (pk.get<bool>()) p->packed = NibbleOrder::LowFirst;
    } else if (pk.is_string() && parseNibbleOrder(pk.get<std::string>())) {
      p->packed = parseNibbleOrder(pk.get<std::string>());
    } else {
      r.fail(at.member("packed"), "expected true, \"low_first\" or \"high_first\" (the nibble of the first code)");
      return;
    }
    if (p->packed && p->format != "E2M1") {
      r.fail(at.member("packed"), "packs two 4-bit codes a byte; the format is " + p->format + ", not E2M1");
      return;
    }
  }
  p->scale_layout = ScaleLayout::RowMajor;
  if (ConfigReader::has(o, "scale_layout")) {
    const std::string ls = r.string(o, "scale_layout", at, "row_major");
    if (!r.ok()) return;
    const auto l = parseScaleLayout(ls);
    if (!l) {
      r.fail(at.member("scale_layout"), "unknown '" + ls + "' (" + scaleLayoutNames() + ")");
      return;
    }
    p->scale_layout = *l;
  }
  p->block = {0, 0};
  if (ConfigReader::has(o, "block")) {
    const Json& b = o["block"];
    const ConfigPath bp = at.member("block");
    if (!b.is_array() || b.size() != 2) {
      r.fail(bp, "expected [rows, cols] of one scale block");
      return;
    }
    int64_t v[2] = {0, 0};
    for (size_t i = 0; i < 2; ++i) {
      if (!b[i].is_number_integer() || b[i].get<int64_t>() < 1 || b[i].get<int64_t>() > (int64_t(1) << 40)) {
        r.fail(bp.element(i), "expected an integer ≥ 1");
        return;
      }
      v[i] = b[i].get<int64_t>();
    }
    p->block = {v[0], v[1]};
  }
  if (one && ConfigReader::has(o, "block")) {
    r.fail(at.member("block"), "one scale covers the whole tensor; a block shape goes with a scale file");
    return;
  }
  if (!one && !ConfigReader::has(o, "block")) {
    r.fail(at.member("scales"), "a scale file needs \"block\": [rows, cols] of the codes one scale covers");
    return;
  }
  // With "transpose" the block is the stored tensor's: B stored [N, K] has its K blocks along its
  // rows ([1, 32] for MX), like A.
  const bool a = (axis == Axis::Cols) != p->transpose;
  auto alongK = [&](int64_t len) { return a ? ScaleBlock{1, len} : ScaleBlock{len, 1}; };
  auto blockText = [](ScaleBlock b) { return "[" + std::to_string(b.rows) + ", " + std::to_string(b.cols) + "]"; };
  if (p->scale_layout != ScaleLayout::RowMajor) {
    const ScaleLayout l = p->scale_layout;
    const char* lname = toString(l);
    if (one) {
      r.fail(at.member("scale_layout"), std::string(lname) + " lays out a scale file; one number has no layout");
      return;
    }
    if (scaleLayoutHoldsCodes(l) != (p->scale_format != SF::Float32)) {
      r.fail(at.member("scale_layout"),
             std::string(lname) +
                 (scaleLayoutHoldsCodes(l) ? " holds one-byte scale codes (scale_format E8M0 or E4M3FN)"
                                           : " holds float32 scales (scale_format float32)") +
                 ", not " + toString(p->scale_format));
      return;
    }
    if (l == ScaleLayout::DeepGemmPackedUe8m0 && p->scale_format != SF::E8M0) {
      r.fail(at.member("scale_layout"), "deepgemm_packed_ue8m0 packs E8M0 (UE8M0) codes");
      return;
    }
    // The layouts hold one scale row per row of A / column of B (BLK128x128: per 128 of them).
    const int64_t outer = a ? p->block.rows : p->block.cols, along = a ? p->block.cols : p->block.rows;
    const bool blk = l == ScaleLayout::CublasLtBlk128x128;
    if (outer != (blk ? 128 : 1) || (l == ScaleLayout::CublasLtVec128 && along != 128) || (blk && along != 128)) {
      const std::string want = blk ? std::string("[128, 128] blocks")
                               : l == ScaleLayout::CublasLtVec128
                                   ? blockText(alongK(128)) + " blocks"
                                   : std::string("blocks one row of A (column of B) wide");
      r.fail(at.member("block"), "is " + blockText(p->block) + " but " + lname + " holds scales of " + want);
      return;
    }
  }
  // E8M0 scales: MX blocks of 32 along K; DeepGEMM's packed UE8M0 also carries its 1x128 blocks.
  if (p->scale_format == SF::E8M0 && p->block != alongK(32) &&
      !(p->scale_layout == ScaleLayout::DeepGemmPackedUe8m0 && p->block == alongK(128))) {
    r.fail(at.member("block"),
           "E8M0 (MX) scales cover 32 elements along K: " + blockText(alongK(32)) + " for " + (a ? "A" : "B"));
    return;
  }
  if (p->scale_format == SF::E4M3FN) {
    if (p->block != alongK(16)) {
      r.fail(at.member("block"), "E4M3FN (NVFP4) block scales cover 16 elements along K: " + blockText(alongK(16)) +
                                     " for " + (a ? "A" : "B"));
      return;
    }
    if (p->format != "E2M1") {
      r.fail(at.member("format"), "is '" + p->format + "' beside E4M3FN block scales (NVFP4), whose elements are E2M1");
      return;
    }
  }
  const bool has_amax = ConfigReader::has(o, "tensor_amax"), has_pts = ConfigReader::has(o, "tensor_scale");
  if ((has_amax || has_pts || ConfigReader::has(o, "fp4_fp8_max")) && p->scale_format != SF::E4M3FN) {
    r.fail(at.member(has_amax  ? "tensor_amax"
                     : has_pts ? "tensor_scale"
                               : "fp4_fp8_max"),
           "the second scale level belongs to NVFP4 (scale_format E4M3FN)");
    return;
  }
  if (has_amax && has_pts) {
    r.fail(at.member("tensor_scale"), "give the TE tensor_amax or the torchao tensor_scale, not both");
    return;
  }
  if (ConfigReader::has(o, "fp4_fp8_max") && !has_amax) {
    r.fail(at.member("fp4_fp8_max"), "applies to the TE second level (tensor_amax)");
    return;
  }
  p->tensor_kind = has_amax  ? TensorScale::Kind::TeAmax
                   : has_pts ? TensorScale::Kind::TorchaoPts
                             : TensorScale::Kind::None;
  p->tensor_amax = static_cast<float>(r.number(o, "tensor_amax", at, p->tensor_amax));
  p->tensor_scale = static_cast<float>(r.number(o, "tensor_scale", at, p->tensor_scale));
  p->fp4_fp8_max = static_cast<float>(r.number(o, "fp4_fp8_max", at, p->fp4_fp8_max));
  if (!r.ok()) return;
  if (has_amax && !(std::isfinite(p->tensor_amax) && p->tensor_amax >= 0))
    r.fail(at.member("tensor_amax"), "must be a finite float32 number ≥ 0");
  else if (has_pts && !(std::isfinite(p->tensor_scale) && p->tensor_scale >= 0))
    r.fail(at.member("tensor_scale"), "must be a finite float32 number ≥ 0");
  else if (p->fp4_fp8_max != 2688.0f && p->fp4_fp8_max != 1536.0f)
    r.fail(at.member("fp4_fp8_max"), "is 2688 (6 · 448) or 1536 (6 · 256, TE 4over6)");
}

/// The checkpoint form of a pre-quantized operand ("checkpoint" present): an FP8 tensor of a
/// safetensors file with its scales (core/io/fp8_checkpoint.h). The file's header is read here for
/// the tensor's format, so a missing file or tensor is an error at its key.
void parseCheckpointOperand(const Json& o, const ConfigPath& at, PreQuantizedSource* p, ConfigReader& r) {
  r.checkKeys(o, at, {"checkpoint", "tensor", "scale", "transpose"});
  if (!r.ok()) return;
  *p = PreQuantizedSource{};
  p->checkpoint = r.string(o, "checkpoint", at, {});
  if (r.ok() && p->checkpoint.empty()) r.fail(at.member("checkpoint"), "expected the safetensors file");
  if (r.ok() && !ConfigReader::has(o, "tensor"))
    r.fail(at.member("checkpoint"), "a checkpoint operand needs \"tensor\": the FP8 weight's name in the file");
  p->checkpoint_tensor = r.string(o, "tensor", at, {});
  p->checkpoint_scale = r.string(o, "scale", at, {});
  p->transpose = r.boolean(o, "transpose", at, false);
  if (!r.ok()) return;
  const auto f = fp8CheckpointFormat(p->checkpoint, p->checkpoint_tensor);
  if (!f.ok()) {
    const bool file_problem = std::any_of(f.issues.begin(), f.issues.end(), [&](const Issue& i) {
      return i.severity == Severity::Error && i.where == p->checkpoint;
    });
    r.fail(at.member(file_problem ? "checkpoint" : "tensor"), f.errors());
    return;
  }
  p->format = f.value->name();
}

void parseOperand(const Json& o, const ConfigPath& at, Axis axis, OperandSource* src, ConfigReader& r) {
  if (ConfigReader::has(o, "checkpoint")) {
    src->tensor.clear();
    parseCheckpointOperand(o, at, &src->pre, r);
    return;
  }
  if (ConfigReader::has(o, "codes")) {
    r.checkKeys(o, at,
                {"codes", "format", "scales", "scale_format", "block", "tensor_amax", "tensor_scale", "fp4_fp8_max",
                 "transpose", "packed", "scale_layout"});
    if (!r.ok()) return;
    src->tensor.clear();
    src->pre.checkpoint.clear();
    parsePreQuantized(o, at, axis, &src->pre, r);
    return;
  }
  for (const char* k : kPreQuantizedKeys)
    if (ConfigReader::has(o, k)) {
      r.fail(at.member(k), "belongs to a pre-quantized operand; add \"codes\" (the codes file) or leave it out");
      return;
    }
  r.checkKeys(o, at,
              {"distribution", "scale", "sigma", "outlier_fraction", "outlier_factor", "outlier_channels",
               "outlier_axis", "tensor", "transpose"});
  readDistribution(o, at, &src->random.distribution, r);
  src->random.scale = r.number(o, "scale", at, src->random.scale);
  src->random.sigma = r.number(o, "sigma", at, src->random.sigma);
  src->random.outlier_fraction = r.number(o, "outlier_fraction", at, src->random.outlier_fraction);
  src->random.outlier_factor = r.number(o, "outlier_factor", at, src->random.outlier_factor);
  src->random.outlier_channels =
      schemaInteger(o, "outlier_channels", ParamScope::Operands, at, src->random.outlier_channels, r);
  if (ConfigReader::has(o, "outlier_axis")) {
    const std::string ax = r.string(o, "outlier_axis", at, {});
    if (r.ok() && ax != "rows" && ax != "columns")
      r.fail(at.member("outlier_axis"), "unknown '" + ax + "' (columns, rows)");
    src->random.outlier_rows = ax == "rows";
  }
  src->tensor = r.string(o, "tensor", at, src->tensor);
  src->transpose = r.boolean(o, "transpose", at, src->transpose);
  // The random-data keys describe generated operands; beside a tensor file they would be ignored.
  if (r.ok() && !src->tensor.empty())
    for (const char* k : kRandomKeys)
      if (ConfigReader::has(o, k))
        r.fail(at.member(k), "applies to random operands only; this operand is the tensor file '" + src->tensor + "'");
}

/// A list of integers for the fit grid: an array of integers or a string ("10..28", "1,2,4").
std::vector<int> intList(const Json& o, const char* key, const ConfigPath& at, const std::vector<int>& def, int lo,
                         int hi, ConfigReader& r) {
  if (!ConfigReader::has(o, key)) return def;
  const Json& v = o[key];
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
  } else if (v.is_array() && !v.empty()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number_integer()) {
        r.fail(at.member(key).element(i), "expected an integer");
        return def;
      }
      text += (i ? "," : "") + std::to_string(v[i].get<int64_t>());
    }
  } else {
    r.fail(at.member(key), "expected a non-empty array of integers or a string such as \"10..28\"");
    return def;
  }
  std::string why;
  const auto l = parseIntList(text, lo, hi, &why);
  if (!l) {
    r.fail(at.member(key), why);
    return def;
  }
  return *l;
}

} // namespace

bool parseKernelCheck(const Json& o, const ConfigPath& at, GemmExperimentConfig* cfg, ConfigReader& r) {
  KernelCheckConfig& k = cfg->check;
  if (ConfigReader::has(o, "observed")) {
    k.observed = r.string(o, "observed", at, {});
    if (r.ok() && k.observed.empty())
      r.fail(at.member("observed"), "expected the kernel's output file (\"d.npy\", \"d.safetensors:NAME\")");
  }
  if (!r.ok()) return false;
  const Json* c = r.object(o, "check", at);
  if (!r.ok()) return false;
  if (c && k.observed.empty()) {
    r.fail(at.member("check"), "checks an observed output: add \"observed\" (the kernel's D file)");
    return false;
  }
  if (!k.observed.empty() && cfg->output_scale_auto) {
    r.fail(at.member("output_quant_scale"),
           "is \"auto\", but the observed output was cast with the kernel's own scale_D: give that number");
    return false;
  }
  if (!c) return true;
  const ConfigPath cp = at.member("check");
  r.checkKeys(*c, cp,
              {"reference", "atol", "rtol", "max_ulp", "min_sqnr_db", "allow_nonfinite", "fit", "fit_bits",
               "fit_groups", "fit_intervals", "fit_no_promotion"});
  if (!r.ok()) return false;
  k.reference = r.string(*c, "reference", cp, k.reference);
  if (r.ok() && !namedModel(k.reference, GemmOptions{}))
    r.fail(cp.member("reference"),
           "unknown model '" + k.reference + "' (" + accumulationNames() + ", " + accumulationPresetNames() + ")");
  for (const auto& [key, dst] :
       {std::pair{"atol", &k.criteria.atol}, {"rtol", &k.criteria.rtol}, {"max_ulp", &k.criteria.max_ulp}}) {
    if (!ConfigReader::has(*c, key)) continue;
    const double v = r.number(*c, key, cp, 0.0);
    if (r.ok() && !(v >= 0)) r.fail(cp.member(key), "must be a number >= 0");
    *dst = v;
  }
  if (ConfigReader::has(*c, "min_sqnr_db")) k.criteria.min_sqnr_db = r.number(*c, "min_sqnr_db", cp, 0.0);
  k.criteria.allow_nonfinite = r.boolean(*c, "allow_nonfinite", cp, k.criteria.allow_nonfinite);
  k.fit = r.boolean(*c, "fit", cp, k.fit);
  // The fit grid's values are the model's parameters: their schema ranges.
  for (const auto& [key, param_key, dst] : {std::tuple{"fit_bits", "fast_accum_bits", &k.grid.bits},
                                            {"fit_groups", "fast_accum_group", &k.grid.groups},
                                            {"fit_intervals", "promotion_interval", &k.grid.intervals}}) {
    const ParamSpec& ps = param(param_key);
    *dst = intList(*c, key, cp, *dst, int(ps.min), int(ps.max), r);
  }
  k.grid.no_promotion = r.boolean(*c, "fit_no_promotion", cp, k.grid.no_promotion);
  return r.ok();
}

namespace {

void parseEpilogueSource(const Json& o, const char* key, const ConfigPath& at, EpilogueSource* src, ConfigReader& r) {
  const Json* ob = r.object(o, key, at);
  if (!ob) return;
  const ConfigPath p = at.member(key);
  const bool is_c = std::string(key) == "c";
  if (is_c)
    r.checkKeys(*ob, p, {"seed", "scale", "file"});
  else
    r.checkKeys(*ob, p, {"seed", "scale"});
  src->enabled = true;
  if (is_c && ConfigReader::has(*ob, "file")) {
    if (ConfigReader::has(*ob, "seed") || ConfigReader::has(*ob, "scale")) {
      r.fail(p.member("file"), "C comes from a file or from a seed, not both: drop \"seed\" / \"scale\" or \"file\"");
      return;
    }
    if (!(*ob)["file"].is_string() || (*ob)["file"].get<std::string>().empty()) {
      r.fail(p.member("file"), "must be a tensor file (\"C.npy\", \"F.safetensors:NAME\", \"F.h5:/PATH\")");
      return;
    }
    src->file = (*ob)["file"].get<std::string>();
    return;
  }
  src->seed = r.seed(*ob, "seed", p, src->seed);
  src->scale = r.number(*ob, "scale", p, src->scale);
  if (r.ok() && !(std::isfinite(src->scale) && src->scale > 0))
    r.fail(p.member("scale"), "must be a finite number > 0");
}

} // namespace

std::string defaultGemmRunId(const GemmExperimentConfig& c) {
  std::string id = "gemm-" + c.format_a;
  if (c.format_b != c.format_a) id += "x" + c.format_b;
  // Operands given as codes were not scaled here: the id says "codes", not the unused preset.
  id += "-" + (c.a.pre.enabled() && c.b.pre.enabled() ? std::string("codes") : c.scaling) + "-";
  id += c.a.fromFile() ? std::string("import") : std::string(toString(c.a.random.distribution));
  return id;
}

namespace {
/// The weights of the first Linear layer of the MLP (training/mlp.h), B of a GEMM on trained weights.
constexpr const char* kTrainedKernel = "fc1/kernel";
} // namespace

std::string trainedKernelSpec(const std::string& session_file, const std::string& run_id) {
  return session_file + ":/" + layout::runPath(run_id, layout::weights(kTrainedKernel));
}

std::optional<std::pair<std::string, std::string>> trainedKernelOf(const std::string& spec) {
  const std::string head = ":/" + std::string(layout::kRuns) + "/", tail = "/" + layout::weights(kTrainedKernel);
  const size_t at = spec.rfind(head);
  if (at == std::string::npos || spec.size() < at + head.size() + tail.size() ||
      spec.compare(spec.size() - tail.size(), tail.size(), tail) != 0)
    return std::nullopt;
  std::string run = spec.substr(at + head.size(), spec.size() - tail.size() - at - head.size());
  if (run.find('/') != std::string::npos) return std::nullopt;
  return std::pair{spec.substr(0, at), std::move(run)};
}

bool isOldPanelFormGemmConfig(const Json& o) {
  return o.is_object() && (o.contains("a_format") || o.contains("preset") || o.contains("pow2_scales"));
}

Json gemmConfigFromOldPanelForm(const Json& c, ConfigReader& r, const ConfigPath& at) {
  auto str = [&](const char* k, const char* def) { return r.string(c, k, at, def); };
  const std::string s = str("scaling", "per-tensor-current"), p = str("preset", "te");
  const bool pow2 = r.boolean(c, "pow2_scales", at, false);
  std::string preset;
  auto no = [&](const std::string& why) { r.fail(at.member("scaling"), why); };
  if (const auto named = scalingPreset(p)) {
    preset = named->name; // the panel names the table's preset itself
  } else if (s == "per-tensor-delayed") {
    no("a single GEMM has no amax history: delayed scaling needs a training run");
  } else if (s == "per-tensor-current") {
    if (p == "te")
      preset = pow2 ? "te_current_pow2" : "te_current";
    else if (p == "torchao" && !pow2)
      preset = "torchao_tensorwise";
    else if (p == "torchao")
      no("torchao's tensorwise preset has no power-of-two option; use Transformer Engine (te_current_pow2)");
    else
      no("'" + p +
         "' has no per-tensor current scaling (Flax scales with a delayed amax history; DeepGEMM uses "
         "blocks)");
  } else if (s == "per-row") {
    preset = "torchao_rowwise";
  } else if (s == "1x128" || s == "128x128") {
    if (r.integer(c, "block", at, 128, 1, 1 << 20) != 128)
      no("the block presets (DeepSeek-V3, TE, torchao) use 128; other block sizes are not available");
    else if (p == "te")
      preset = "te_block_" + s;
    else if (p == "torchao")
      preset = "torchao_block_" + s;
    else if (p == "deepgemm")
      preset = "deepgemm_" + s + (pow2 ? "_ue8m0" : "");
    else
      no("'" + p + "' has no block scaling (DeepGEMM, Transformer Engine and torchao have)");
  } else if (s == "mx32") {
    preset = str("mx_rule", "floor") == "rceil" ? "mx_rceil" : "mx_floor";
  } else {
    no("unknown scaling strategy '" + s + "'");
  }
  Json g = Json::object();
  g["type"] = "gemm";
  if (c.contains("run_id") && c["run_id"].is_string() && !c["run_id"].get<std::string>().empty())
    g["name"] = c["run_id"];
  g["format_a"] = str("a_format", "E4M3FN");
  g["format_b"] = str("b_format", "E4M3FN");
  g["scaling"] = preset;
  g["seed"] = r.seed(c, "seed", at, 1);
  g["accumulation"] = str("accumulation", "split");
  g["output"] = str("output", "fp32");
  g["promotion_interval"] = schemaInteger(c, "promotion_interval", ParamScope::Top, at, 128, r);
  g["fast_accum_bits"] = schemaInteger(c, "fast_accum_bits", ParamScope::Top, at, 14, r);
  const std::string input = str("input", "distribution");
  const int64_t m = schemaInteger(c, "m", ParamScope::Top, at, 256, r),
                k = schemaInteger(c, "k", ParamScope::Top, at, 256, r),
                n = schemaInteger(c, "n", ParamScope::Top, at, 256, r);
  if (input == "distribution") {
    g["m"] = m;
    g["k"] = k;
    g["n"] = n;
    const Json op = {{"distribution", str("distribution", "normal")}, {"scale", r.number(c, "sigma", at, 1.0)}};
    g["a"] = op;
    g["b"] = op;
  } else if (input == "import") {
    // A from import_path, B from import_path_b; an operand without a file is random (normal,
    // scale 1). Each tensor fixes its dimensions.
    const std::string ta = str("import_path", ""), tb = str("import_path_b", "");
    if (ta.empty()) {
      g["m"] = m;
      if (tb.empty()) g["k"] = k;
    } else {
      g["a"] = {{"tensor", ta}};
    }
    if (tb.empty())
      g["n"] = n;
    else
      g["b"] = {{"tensor", tb}};
    if (ta.empty() && tb.empty()) r.fail(at.member("import_path"), "choose a tensor file to import");
  } else if (input == "training") {
    // The trained kernel of the first layer, read from the saved session file (B = W [K, N]).
    g["m"] = m;
    g["b"] = {{"tensor", trainedKernelSpec(str("session_file", ""), str("training_run", ""))}};
  } else {
    r.fail(at.member("input"), "unknown input '" + input + "' (distribution, import, training)");
  }
  return g;
}

namespace {

/// The shape, seed, element formats and scaling presets (each checked against the axis it scales).
bool parseShapeAndRecipe(const Json& o, GemmExperimentConfig* cfg, ConfigReader& r, const ConfigPath& at) {
  cfg->m = schemaInteger(o, "m", ParamScope::Top, at, cfg->m, r);
  cfg->k = schemaInteger(o, "k", ParamScope::Top, at, cfg->k, r);
  cfg->n = schemaInteger(o, "n", ParamScope::Top, at, cfg->n, r);
  cfg->seed = r.seed(o, "seed", at, cfg->seed);
  if (!r.ok()) return false;
  std::string fmt;
  readFormat(o, "format", at, &fmt, r);
  if (!fmt.empty()) cfg->format_a = cfg->format_b = fmt;
  readFormat(o, "format_a", at, &cfg->format_a, r);
  readFormat(o, "format_b", at, &cfg->format_b, r);
  cfg->scaling = r.string(o, "scaling", at, cfg->scaling);
  cfg->scaling_b = r.string(o, "scaling_b", at, cfg->scaling_b);
  if (!r.ok()) return false;
  // "scaling" scales A, and B too unless scaling_b is given.
  const bool own_b = !cfg->scaling_b.empty();
  for (const auto& [key, name, axes] :
       {std::tuple{"scaling", &cfg->scaling, own_b ? std::vector{Axis::Cols} : std::vector{Axis::Cols, Axis::Rows}},
        std::tuple{"scaling_b", &cfg->scaling_b, std::vector{Axis::Rows}}}) {
    if (name == &cfg->scaling_b && name->empty()) continue; // scaling_b absent
    if (const auto nv = nvfp4Preset(*name)) {
      *name = nv->name; // NVFP4: the quantizer checks its own block rules (gemmOperandProblem)
      continue;
    }
    const auto sp = scalingPreset(*name);
    if (!sp) {
      std::vector<std::string> n;
      for (const auto& p : scalingPresets())
        if (!p.delayed) n.push_back(p.name);
      for (const auto& p : nvfp4Presets()) n.push_back(p.name);
      r.fail(at.member(key), "'" + *name + "' is not a current-scaling or NVFP4 preset (one of: " + joinNames(n) + ")");
      return false;
    }
    for (Axis ax : axes)
      if (const std::string why = gemmScalingProblem(*sp, ax); !why.empty()) {
        r.fail(at.member(key), why);
        return false;
      }
    *name = sp->name; // the table's spelling (scalingPreset accepts any case and '-' for '_')
  }
  if (cfg->scaling_b == cfg->scaling) cfg->scaling_b.clear();
  return true;
}

/// The operands: distribution, a / b sources, a pre-quantized operand's own format, NVFP4's E2M1,
/// and the shape rules of tensor operands.
bool parseOperandKeys(const Json& o, GemmExperimentConfig* cfg, ConfigReader& r, const ConfigPath& at) {
  Distribution d = cfg->a.random.distribution;
  const bool has_dist = ConfigReader::has(o, "distribution");
  readDistribution(o, at, &d, r);
  if (has_dist) cfg->a.random.distribution = cfg->b.random.distribution = d;
  for (const char* key : {"a", "b"})
    if (const Json* ob = r.object(o, key, at))
      parseOperand(*ob, at.member(key), key[0] == 'a' ? Axis::Cols : Axis::Rows, key[0] == 'a' ? &cfg->a : &cfg->b, r);
  if (!r.ok()) return false;
  // A pre-quantized operand brings its own format; the run quantizes only the other one, with
  // `scaling`.
  for (auto [src, fk, fmt] : {std::tuple{&cfg->a, "format_a", &cfg->format_a}, {&cfg->b, "format_b", &cfg->format_b}}) {
    if (!src->pre.enabled()) continue;
    const char* given = ConfigReader::has(o, fk) ? fk : ConfigReader::has(o, "format") ? "format" : nullptr;
    if (given && *fmt != src->pre.format) {
      r.fail(at.member(given),
             "is '" + *fmt + "' but the pre-quantized operand's format is '" + src->pre.format + "'; leave it out");
      return false;
    }
    *fmt = src->pre.format;
  }
  if (cfg->a.pre.enabled() && !cfg->scaling_b.empty()) {
    cfg->scaling = cfg->scaling_b;
    cfg->scaling_b.clear();
  }
  if (cfg->b.pre.enabled()) cfg->scaling_b.clear();
  // NVFP4 operands have E2M1 elements: an absent format means E2M1.
  const bool fmt_a_given = ConfigReader::has(o, "format_a") || ConfigReader::has(o, "format");
  const bool fmt_b_given = ConfigReader::has(o, "format_b") || ConfigReader::has(o, "format");
  if (!cfg->a.pre.enabled() && !fmt_a_given && isNvfp4Scaling(cfg->scaling)) cfg->format_a = "E2M1";
  if (!cfg->b.pre.enabled() && !fmt_b_given && isNvfp4Scaling(cfg->scaling_b.empty() ? cfg->scaling : cfg->scaling_b))
    cfg->format_b = "E2M1";
  {
    const bool fa = cfg->a.fromFile(), fb = cfg->b.fromFile();
    if (const auto pr = gemmOperandProblem(*cfg, fa ? 0 : cfg->m, fa || fb ? 0 : cfg->k, fb ? 0 : cfg->n)) {
      std::string key = pr->key;
      if (key == "format_a" || key == "format_b") key = ConfigReader::has(o, key) ? key : "format";
      r.fail(at.member(key), pr->why);
      return false;
    }
  }
  // A tensor operand brings its own shape: A [M, K], B [K, N]. An explicit m / k / n for it would be
  // ignored (or contradict the file), so it is refused, naming the file.
  for (const char* dim : {"m", "k", "n"}) {
    if (!ConfigReader::has(o, dim)) continue;
    const std::string dm = dim;
    const bool from_a = cfg->a.fromFile() && (dm == "m" || dm == "k");
    const bool from_b = cfg->b.fromFile() && (dm == "k" || dm == "n");
    if (from_a || from_b) {
      const OperandSource& s = from_a ? cfg->a : cfg->b;
      r.fail(at.member(dim), "comes from the shape of the tensor file '" + (s.pre.enabled() ? s.pre.file() : s.tensor) +
                                 "'; leave it out");
      return false;
    }
  }
  return true;
}

/// The accumulation model: output type, promotion and fast-accumulation parameters, MMA rules, and
/// an accumulation preset with the parameter keys beside it (accumulationProblem).
bool parseAccumulationKeys(const Json& o, GemmExperimentConfig* cfg, ConfigReader& r, const ConfigPath& at) {
  if (ConfigReader::has(o, "accumulation")) {
    const std::string acc = r.string(o, "accumulation", at, {});
    if (!r.ok()) return false;
    const auto a = parseAccumulation(acc);
    if (!a) {
      r.fail(at.member("accumulation"), "unknown '" + acc + "' (" + accumulationNames() + ")");
      return false;
    }
    cfg->gemm.accumulation = *a;
  }
  if (ConfigReader::has(o, "output")) {
    const std::string outp = r.string(o, "output", at, {});
    if (!r.ok()) return false;
    const auto t = parseOutputType(outp);
    if (!t) {
      r.fail(at.member("output"), "unknown '" + outp + "' (fp32, bf16, fp16, e4m3fn, e5m2)");
      return false;
    }
    cfg->gemm.output = *t;
  }
  for (const auto& [key, dst] : {std::pair{"promotion_interval", &cfg->gemm.promotion_interval},
                                 {"fast_accum_bits", &cfg->gemm.fast_accum_bits},
                                 {"fast_accum_group", &cfg->gemm.fast_accum_group}})
    *dst = static_cast<int>(schemaInteger(o, key, ParamScope::Top, at, *dst, r));
  cfg->gemm.fast_accum_promotes = r.boolean(o, "fast_accum_promotes", at, cfg->gemm.fast_accum_promotes);
  cfg->gemm.mma.sum_bits =
      static_cast<int>(schemaInteger(o, "mma_sum_bits", ParamScope::Top, at, cfg->gemm.mma.sum_bits, r));
  cfg->gemm.mma.chunk = static_cast<int>(schemaInteger(o, "mma_chunk", ParamScope::Top, at, cfg->gemm.mma.chunk, r));
  if (!r.ok()) return false;
  // The MMA rules' choices, each through its core spelling table.
  const auto rule = [&](const char* key, auto parse, auto* dst, const char* names) {
    if (!ConfigReader::has(o, key)) return true;
    const std::string v = r.string(o, key, at, {});
    if (!r.ok()) return false;
    const auto x = parse(v);
    if (!x) {
      r.fail(at.member(key), "unknown '" + v + "' (" + names + ")");
      return false;
    }
    *dst = *x;
    return true;
  };
  if (!rule("mma_alignment", parseMmaAlignment, &cfg->gemm.mma.alignment, "product, operands") ||
      !rule("mma_sum", parseMmaSum, &cfg->gemm.mma.sum, "exact, fp32") ||
      !rule("mma_sum_rounding", parseMmaRounding, &cfg->gemm.mma.sum_rounding, "rz, rne") ||
      !rule("mma_c", parseMmaCEntry, &cfg->gemm.mma.c_entry, "epilogue, accumulator") ||
      !rule("mma_block_scales", parseMmaBlockScales, &cfg->gemm.mma.block_scales, "promoted, inside") ||
      !rule("mma_datapath", parseMmaDatapath, &cfg->gemm.mma.datapath, "fused, cdna3"))
    return false;
  {
    // A preset sets the accumulation parameters; a parameter key beside it must say the same
    // (accumulationProblem, the rule the gemm command and the panel apply too).
    std::optional<AccumulationPreset> p;
    if (ConfigReader::has(o, "accumulation_preset")) {
      const std::string name = r.string(o, "accumulation_preset", at, {});
      if (!r.ok()) return false;
      p = accumulationPreset(name);
      if (!p) {
        r.fail(at.member("accumulation_preset"), "unknown '" + name + "' (" + accumulationPresetNames() + ")");
        return false;
      }
    }
    std::set<std::string> given;
    for (const char* k : {"accumulation", "promotion_interval", "fast_accum_bits", "fast_accum_group",
                          "fast_accum_promotes", "mma_alignment", "mma_sum", "mma_sum_bits", "mma_sum_rounding",
                          "mma_c", "mma_block_scales", "mma_chunk", "mma_datapath"})
      if (ConfigReader::has(o, k)) given.insert(k);
    if (const auto pr = accumulationProblem(cfg->gemm, given, p ? &*p : nullptr, false, &cfg->gemm)) {
      r.fail(at.member(pr->key),
             pr->why + (pr->key == "accumulation_preset" ? "; leave the key out or the preset" : ""));
      return false;
    }
    if (p) cfg->accumulation_preset = p->name;
  }
  return true;
}

/// The epilogue D = alpha·(A·B) + beta·C + bias and the FP8 output's scale_D.
bool parseEpilogueKeys(const Json& o, GemmExperimentConfig* cfg, ConfigReader& r, const ConfigPath& at) {
  cfg->gemm.alpha = static_cast<float>(r.number(o, "alpha", at, cfg->gemm.alpha));
  cfg->gemm.beta = static_cast<float>(r.number(o, "beta", at, cfg->gemm.beta));
  parseEpilogueSource(o, "c", at, &cfg->c_source, r);
  parseEpilogueSource(o, "bias", at, &cfg->bias_source, r);
  if (!r.ok()) return false;
  for (const char* key : {"alpha", "beta"})
    if (!std::isfinite(key[0] == 'a' ? cfg->gemm.alpha : cfg->gemm.beta)) {
      r.fail(at.member(key), "must be a finite float32 number");
      return false;
    }
  if (cfg->gemm.beta != 0.0f && !cfg->c_source.enabled) {
    r.fail(at.member("beta"),
           "beta ≠ 0 needs a C matrix: add \"c\": {\"seed\": N, \"scale\": X} or \"c\": {\"file\": \"C.npy\"}");
    return false;
  }
  if (cfg->gemm.beta == 0.0f && cfg->c_source.enabled) {
    r.fail(at.member("c"), "C is read only when beta ≠ 0 (cuBLASLt ignores C at beta = 0); set beta or leave c out");
    return false;
  }
  if (ConfigReader::has(o, "output_quant_scale") && o["output_quant_scale"].is_string()) {
    if (o["output_quant_scale"].get<std::string>() != "auto")
      r.fail(at.member("output_quant_scale"), "expected a finite number or \"auto\"");
    cfg->output_scale_auto = true;
  } else {
    cfg->gemm.output_quant_scale =
        static_cast<float>(r.number(o, "output_quant_scale", at, cfg->gemm.output_quant_scale));
  }
  return true;
}

/// Tile edge, what the run stores, and the element rounding of the operands.
bool parseRoundingAndStorage(const Json& o, GemmExperimentConfig* cfg, ConfigReader& r, const ConfigPath& at) {
  cfg->tile = schemaInteger(o, "tile", ParamScope::Top, at, cfg->tile, r);
  cfg->store_inputs = r.boolean(o, "store_inputs", at, cfg->store_inputs);
  cfg->store_quantized = r.boolean(o, "store_quantized", at, cfg->store_quantized);
  cfg->store_error_maps = r.boolean(o, "store_error_maps", at, cfg->store_error_maps);
  if (ConfigReader::has(o, "rounding")) {
    const std::string rn = r.string(o, "rounding", at, "rne");
    if (rn == "stochastic" || rn == "sr")
      cfg->stochastic_rounding = true;
    else if (rn == "rne" || rn == "nearest")
      cfg->stochastic_rounding = false;
    else {
      r.fail(at.member("rounding"), "'" + rn + "' is not an element rounding of the GEMM operands (rne, stochastic)");
      return false;
    }
  }
  if (ConfigReader::has(o, "stochastic_bits") && !cfg->stochastic_rounding) {
    r.fail(at.member("stochastic_bits"), "applies to \"rounding\": \"stochastic\" only");
    return false;
  }
  cfg->stochastic_bits =
      static_cast<int>(schemaInteger(o, "stochastic_bits", ParamScope::Top, at, cfg->stochastic_bits, r));
  if (!r.ok()) return false;
  if (cfg->stochastic_rounding)
    for (const auto& [key, name] : {std::pair{"scaling", &cfg->scaling}, {"scaling_b", &cfg->scaling_b}})
      if (isNvfp4Scaling(*name)) {
        r.fail(at.member("rounding"), std::string("the NVFP4 preset '") + *name + "' of " + key +
                                          " has its own rounding: use nvfp4_te_sr (TE's 8-bit stochastic rounding)");
        return false;
      }
  if (cfg->output_scale_auto && cfg->gemm.output != OutputType::E4M3FN && cfg->gemm.output != OutputType::E5M2) {
    r.fail(at.member("output_quant_scale"), "\"auto\" applies only to FP8 outputs (e4m3fn, e5m2)");
    return false;
  }
  if (ConfigReader::has(o, "output_quant_scale") && !cfg->output_scale_auto) {
    try {
      checkOutputScale(cfg->gemm);
    } catch (const std::invalid_argument& e) {
      r.fail(at.member("output_quant_scale"), e.what());
      return false;
    }
  }
  return true;
}

} // namespace

bool parseGemmConfig(const Json& in, GemmExperimentConfig* cfg, ConfigReader& r, const ConfigPath& at) {
  if (!in.is_object()) {
    r.fail(at, "expected an object");
    return false;
  }
  Json translated;
  const Json* op = &in;
  if (isOldPanelFormGemmConfig(in)) {
    translated = gemmConfigFromOldPanelForm(in, r, at);
    if (!r.ok()) return false;
    op = &translated;
  }
  const Json& o = *op;
  r.checkKeys(o, at, kGemmKeys);
  if (!r.ok()) return false;
  if (!parseShapeAndRecipe(o, cfg, r, at) || !parseOperandKeys(o, cfg, r, at) ||
      !parseAccumulationKeys(o, cfg, r, at) || !parseEpilogueKeys(o, cfg, r, at) ||
      !parseRoundingAndStorage(o, cfg, r, at))
    return false;
  if (!parseKernelCheck(o, at, cfg, r)) return false;
  if (ConfigReader::has(o, "type") && !(o["type"].is_string() && o["type"].get<std::string>() == "gemm")) {
    r.fail(at.member("type"), "expected \"gemm\"");
    return false;
  }
  return r.ok();
}

std::string parseGemmConfig(const Json& o, GemmExperimentConfig* cfg, const JsonDocument* doc) {
  ConfigReader r(doc);
  parseGemmConfig(o, cfg, r);
  return r.error();
}

Json gemmConfigJson(const GemmExperimentConfig& c, const std::string& name) {
  Json j = Json::object();
  j["type"] = "gemm";
  if (!name.empty()) j["name"] = name;
  const bool ta = c.a.fromFile(), tb = c.b.fromFile();
  const bool pa = c.a.pre.enabled(), pb = c.b.pre.enabled();
  if (!ta) j["m"] = c.m;
  if (!ta && !tb) j["k"] = c.k;
  if (!tb) j["n"] = c.n;
  // Seeds above 2^53 as decimal text: JSON readers that hold numbers as doubles would round them.
  if (c.seed > (uint64_t(1) << 53))
    j["seed"] = std::to_string(c.seed);
  else
    j["seed"] = c.seed;
  // A pre-quantized operand's format is in its object; `scaling` is the other operand's.
  if (!pa) j["format_a"] = c.format_a;
  if (!pb) j["format_b"] = c.format_b;
  if (!pa || !pb) j["scaling"] = c.scaling;
  if (!pa && !pb && !c.scaling_b.empty() && c.scaling_b != c.scaling) j["scaling_b"] = c.scaling_b;
  auto operand = [](const OperandSource& s) {
    Json o = Json::object();
    if (!s.pre.checkpoint.empty()) {
      const PreQuantizedSource& p = s.pre;
      o["checkpoint"] = p.checkpoint;
      o["tensor"] = p.checkpoint_tensor;
      if (!p.checkpoint_scale.empty()) o["scale"] = p.checkpoint_scale;
      o["transpose"] = p.transpose;
    } else if (s.pre.enabled()) {
      const PreQuantizedSource& p = s.pre;
      o["codes"] = p.codes;
      o["format"] = p.format;
      if (p.scales.empty())
        o["scales"] = p.scale;
      else
        o["scales"] = p.scales;
      o["scale_format"] = toString(p.scale_format);
      if (!p.scales.empty()) o["block"] = Json::array({p.block.rows, p.block.cols});
      if (p.tensor_kind == TensorScale::Kind::TeAmax) {
        o["tensor_amax"] = p.tensor_amax;
        o["fp4_fp8_max"] = p.fp4_fp8_max;
      } else if (p.tensor_kind == TensorScale::Kind::TorchaoPts) {
        o["tensor_scale"] = p.tensor_scale;
      }
      o["transpose"] = p.transpose;
      if (p.packed) o["packed"] = toString(*p.packed);
      if (!p.scales.empty()) o["scale_layout"] = toString(p.scale_layout);
    } else if (!s.tensor.empty()) {
      o["tensor"] = s.tensor;
      o["transpose"] = s.transpose;
    } else {
      o["distribution"] = toString(s.random.distribution);
      o["scale"] = s.random.scale;
      o["sigma"] = s.random.sigma;
      o["outlier_fraction"] = s.random.outlier_fraction;
      o["outlier_factor"] = s.random.outlier_factor;
      if (s.random.distribution == Distribution::ChannelOutliers) {
        o["outlier_channels"] = s.random.outlier_channels;
        o["outlier_axis"] = s.random.outlier_rows ? "rows" : "columns";
      }
    }
    return o;
  };
  j["a"] = operand(c.a);
  j["b"] = operand(c.b);
  j["accumulation"] = toString(c.gemm.accumulation);
  j["promotion_interval"] = c.gemm.promotion_interval;
  j["fast_accum_bits"] = c.gemm.fast_accum_bits;
  j["fast_accum_group"] = c.gemm.fast_accum_group;
  if (!c.accumulation_preset.empty()) j["accumulation_preset"] = c.accumulation_preset;
  j["fast_accum_promotes"] = c.gemm.fast_accum_promotes;
  // The MMA rules where the model reads them and they are not the prose defaults (a config without
  // them keeps its text).
  if (c.gemm.accumulation == Accumulation::FastAccum && !(c.gemm.mma == MmaRules{})) {
    j["mma_alignment"] = toString(c.gemm.mma.alignment);
    j["mma_sum"] = toString(c.gemm.mma.sum);
    j["mma_sum_bits"] = c.gemm.mma.sum_bits;
    j["mma_sum_rounding"] = toString(c.gemm.mma.sum_rounding);
    j["mma_c"] = toString(c.gemm.mma.c_entry);
    j["mma_block_scales"] = toString(c.gemm.mma.block_scales);
    j["mma_chunk"] = c.gemm.mma.chunk;
    j["mma_datapath"] = toString(c.gemm.mma.datapath);
  }
  j["alpha"] = c.gemm.alpha;
  j["beta"] = c.gemm.beta;
  auto source = [](const EpilogueSource& e) {
    Json o = Json::object();
    if (e.fromFile()) {
      o["file"] = e.file;
      return o;
    }
    if (e.seed > (uint64_t(1) << 53))
      o["seed"] = std::to_string(e.seed);
    else
      o["seed"] = e.seed;
    o["scale"] = e.scale;
    return o;
  };
  if (c.c_source.enabled) j["c"] = source(c.c_source);
  if (c.bias_source.enabled) j["bias"] = source(c.bias_source);
  j["output"] = toString(c.gemm.output);
  if (c.gemm.output == OutputType::E4M3FN || c.gemm.output == OutputType::E5M2) {
    if (c.output_scale_auto)
      j["output_quant_scale"] = "auto";
    else
      j["output_quant_scale"] = c.gemm.output_quant_scale;
  }
  j["tile"] = c.tile;
  j["store_inputs"] = c.store_inputs;
  j["store_quantized"] = c.store_quantized;
  j["store_error_maps"] = c.store_error_maps;
  if (c.stochastic_rounding) {
    j["rounding"] = "stochastic";
    j["stochastic_bits"] = c.stochastic_bits;
  }
  if (c.check.enabled()) {
    const KernelCheckConfig& k = c.check;
    j["observed"] = k.observed;
    Json ck = Json::object();
    ck["reference"] = k.reference;
    if (k.criteria.atol) ck["atol"] = *k.criteria.atol;
    if (k.criteria.rtol) ck["rtol"] = *k.criteria.rtol;
    if (k.criteria.max_ulp) ck["max_ulp"] = *k.criteria.max_ulp;
    if (k.criteria.min_sqnr_db) ck["min_sqnr_db"] = *k.criteria.min_sqnr_db;
    ck["allow_nonfinite"] = k.criteria.allow_nonfinite;
    ck["fit"] = k.fit;
    ck["fit_bits"] = k.grid.bits;
    ck["fit_groups"] = k.grid.groups;
    ck["fit_intervals"] = k.grid.intervals;
    ck["fit_no_promotion"] = k.grid.no_promotion;
    j["check"] = ck;
  }
  return j;
}

} // namespace fp8lab

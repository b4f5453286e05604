// `fp8lab-cli quantize`: a tensor quantized with a preset, and its report (quantize_report.h).
#include "experiment/quantize_report.h"
#include "json/json_number.h"

#include "common/names.h"
#include "common/number_text.h"
#include "experiment/param_schema.h"
#include "formats/format_table.h"
#include "scaling/delayed_scaling.h"
#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace fp8lab {

namespace {

/// An int option that checkParamText accepted (or that is empty: 0).
int intValue(const std::string& text) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() ? v : 0;
}

/// "" when the schema entry `key`'s flag value is empty or in range, else the refusal.
std::string schemaProblem(const QuantizeFlags& flags, const char* key) {
  const ParamSpec& s = param(key, ParamScope::None);
  const std::string v = flags.value(s.flag.c_str());
  return v.empty() ? std::string() : checkParamText(s, v);
}

std::optional<QuantizeOutcome> refuse(std::string* error, std::string message) {
  *error = std::move(message);
  return std::nullopt;
}

} // namespace

std::string quantizePresetList() {
  std::string n;
  for (const auto& p : scalingPresets()) n += (n.empty() ? "" : ", ") + p.name;
  for (const auto& p : nvfp4Presets()) n += (n.empty() ? "" : ", ") + p.name;
  return n;
}

QuantizeFormatChoice quantizeFormat(const std::string& scaling, const std::string& name) {
  QuantizeFormatChoice c;
  const bool nv = nvfp4Preset(scaling).has_value();
  const std::string fname = nv && name.empty() ? "E2M1" : name;
  if (fname.empty()) {
    c.error = "--format is required (one of: " + formatNameList() + ")";
    return c;
  }
  c.format = Format::byName(fname);
  if (!c.format)
    c.error = "unknown format '" + fname + "' (known: " + formatNameList() + ")";
  else if (nv && c.format != &Format::E2M1())
    c.error = "'" + scaling + "' is NVFP4, whose elements are E2M1; --format " + fname +
              " does not apply (leave it out or give E2M1)";
  else if (c.format->bits() > 8)
    c.error = fname + " has " + std::to_string(c.format->bits()) + " bits; quantize needs a format of at most 8 bits";
  return c;
}

bool parseShapeText(std::string_view text, int64_t* rows, int64_t* cols) {
  const auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  size_t i = 0;
  const auto skipSpace = [&] {
    while (i < text.size() && space(text[i])) ++i;
  };
  const auto integer = [&](int64_t* v) {
    const size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i > start && std::from_chars(text.data() + start, text.data() + i, *v).ec == std::errc();
  };
  skipSpace();
  if (!integer(rows)) return false;
  skipSpace();
  if (i == text.size() || std::string_view("xX,*").find(text[i]) == std::string_view::npos) return false;
  ++i;
  skipSpace();
  if (!integer(cols)) return false;
  skipSpace();
  return i == text.size();
}

std::optional<Axis> parseAxisName(std::string_view name) {
  if (name == "rows" || name == "row" || name == "0") return Axis::Rows;
  if (name == "cols" || name == "col" || name == "columns" || name == "1") return Axis::Cols;
  return std::nullopt;
}

std::optional<QuantizeOutcome> quantizeWithPreset(const std::string& sname, const Format& fmt,
                                                  const std::vector<double>& v, int64_t rows, int64_t cols, Axis axis,
                                                  const EncodeOptions& enc, uint64_t seed, bool f64,
                                                  const QuantizeFlags& flags, std::string* error) {
  const auto isSet = [&](const char* o) { return flags.is_set(o); };
  const std::optional<Nvfp4Config> nv = nvfp4Preset(sname);
  const std::vector<float> vf(v.begin(), v.end());
  QuantizeOutcome r;
  r.rows = rows;
  r.cols = cols;
  const std::string sl = normalizedName(sname);
  // A delayed preset (flax_delayed, te_delayed, ...): `delayed` says whether sl names one.
  // (a value and a flag, not an optional: GCC 12 takes the optional's payload for uninitialized)
  DelayedPreset delayed_preset = DelayedPreset::TE;
  bool delayed = false;
  if (sl.ends_with("_delayed"))
    if (const auto p = parseDelayedPreset(sl)) delayed_preset = *p, delayed = true;
  if (isSet("seed") && enc.rounding != Rounding::Stochastic && !(nv && nv->stochastic_rounding))
    return refuse(error, "--seed applies only to --rounding stochastic (the other roundings draw no random bits)");
  if (nv) {
    for (const char* o : {"block", "pow2", "no-pow2", "amax-epsilon", "margin", "history-len", "algo", "amax-history",
                          "rounding", "no-saturate", "float64"})
      if (isSet(o))
        return refuse(error, std::string("--") + o + " does not apply to '" + sname +
                                 "': NVFP4 fixes 1x16 blocks, E4M3 block scales, the system's rounding (RNE, or "
                                 "stochastic for *_sr presets) and float32 input");
    if (isSet("seed") && !nv->stochastic_rounding)
      return refuse(error, "--seed applies to the stochastic-rounding NVFP4 presets (nvfp4_te_sr, nvfp4_te_rht_sr); '" +
                               sname + "' rounds to nearest");
    Nvfp4Config c = *nv;
    c.seed = seed;
    try {
      const Nvfp4Tensor t = quantizeNvfp4(vf.data(), rows, cols, c, axis);
      r.q = toQuantizedTensor(t, c, vf.data());
      if (c.rht) {
        // The Hadamard presets quantize the input rotated along the block axis: the codes and the
        // dequantized values are those of the rotated tensor, listed beside the input.
        r.rotated = rhtOperand(vf.data(), rows, cols, c.rht_sign_mask, axis);
        char mask[8];
        std::snprintf(mask, sizeof mask, "%04x", unsigned(c.rht_sign_mask));
        r.note = std::string("rotated: the input rounded to BF16 and rotated along the block axis by R = diag(s)·H16/4 "
                             "(sign mask 0x") +
                 mask +
                 "), what the codes encode; dequantized is in that basis (R is orthogonal: the GEMM's second "
                 "rotated operand undoes it)";
      }
    } catch (const std::invalid_argument& e) {
      return refuse(error, sname + ": " + e.what());
    }
  } else if (delayed) {
    const std::string reason = sl + " follows " +
                               (delayed_preset == DelayedPreset::Flax ? "Flax fp8_ops" : "TE DelayedScaling") +
                               ", whose per-tensor delayed scaling ";
    if (isSet("pow2") || isSet("no-pow2"))
      return refuse(error, "--pow2 / --no-pow2: " + reason +
                               "computes float32 scales with no power-of-two option; for TE's power-of-two scales "
                               "with a margin use --scaling te_current --pow2 --margin M");
    if (isSet("block")) return refuse(error, "--block: " + reason + "has one scale per tensor");
    if (isSet("axis"))
      return refuse(error, "--axis: " + reason + "has one scale per tensor, so the contraction axis changes nothing");
    if (isSet("amax-epsilon"))
      return refuse(error, "--amax-epsilon: " + reason + "keeps the previous scale for amax 0 instead of an epsilon");
    if (isSet("rounding") || isSet("no-saturate") || isSet("seed"))
      return refuse(error, "--rounding / --no-saturate / --seed: " + reason +
                               "casts with round-to-nearest-even, saturating, as the system does");
    DelayedScalingConfig dc;
    dc.preset = delayed_preset;
    for (const char* k : {"history_len", "margin"})
      if (std::string why = schemaProblem(flags, k); !why.empty()) return refuse(error, why);
    dc.history_len = intValue(flags.value("history-len"));
    const auto al = parseAmaxAlgo(flags.value("algo"));
    if (!al) return refuse(error, "--algo must be max or most_recent");
    dc.algo = *al;
    dc.margin = intValue(flags.value("margin"));
    if (f64) return refuse(error, "--float64 is not available for delayed presets (their state is float32)");
    DelayedScaling st(fmt, dc); // throws invalid_argument with a message (e.g. Flax + most_recent)
    if (isSet("amax-history")) {
      std::string bad;
      size_t at = 0;
      const std::string list = flags.value("amax-history");
      const auto h = parseNumberList(list, &bad, &at);
      if (!h) return refuse(error, "--amax-history: " + numberListProblem(list, bad, at));
      for (double a : *h) st.update(static_cast<float>(a));
    }
    DelayedUpdate u;
    r.q = st.quantizeStep(vf.data(), rows, cols, &u);
    r.note = "after " + std::to_string(st.steps() - 1) +
             " earlier step(s); this step's amax updated the state: stored scale now " + shortestText(st.scale());
  } else {
    auto cfg = scalingPreset(sname);
    if (!cfg) return refuse(error, "unknown --scaling '" + sname + "' (presets: " + quantizePresetList() + ")");
    for (const char* o : {"history-len", "algo", "amax-history"})
      if (isSet(o))
        return refuse(error, std::string("--") + o +
                                 " applies to delayed presets (flax_delayed, te_delayed, te_jax_delayed); '" + sname +
                                 "' is current scaling, computed from this tensor's own amax");
    if (isSet("margin")) {
      if (cfg->rule != ScaleRule::TransformerEngine)
        return refuse(error, "--margin applies to the TE rule (te_current, te_current_pow2, te_block_*) and the "
                             "delayed presets; '" +
                                 sname + "' follows " + toString(cfg->rule) + ", which has no margin");
      if (std::string why = schemaProblem(flags, "margin"); !why.empty()) return refuse(error, why);
      cfg->margin = intValue(flags.value("margin"));
    }
    if (isMxRule(cfg->rule) && (isSet("pow2") || isSet("no-pow2")))
      return refuse(error, "--pow2 / --no-pow2: '" + sname + "' has E8M0 scales, powers of two by construction");
    if (isSet("axis") && cfg->granularity == Granularity::PerTensor)
      return refuse(error, "--axis: '" + sname + "' has one scale per tensor, so the contraction axis changes nothing");
    if (isSet("block")) {
      if (cfg->granularity != Granularity::Block1D && cfg->granularity != Granularity::Block2D)
        return refuse(error, "--block applies to block presets only; '" + sname + "' is " + toString(cfg->granularity));
      const auto b = parseInteger(flags.value("block"));
      if (!b || *b < 1) return refuse(error, "--block must be a positive integer");
      cfg->block = *b;
    }
    if (isSet("pow2") && isSet("no-pow2")) return refuse(error, "--pow2 and --no-pow2 exclude each other");
    if (isSet("pow2")) cfg->pow2 = true;
    if (isSet("no-pow2")) cfg->pow2 = false;
    if (isSet("amax-epsilon")) {
      if (cfg->rule != ScaleRule::TransformerEngine)
        return refuse(error, "--amax-epsilon applies to TE rules only (torchao uses 1e-12, DeepGEMM 1e-4)");
      const auto e = parseNumber(flags.value("amax-epsilon"));
      if (!e || !(*e >= 0)) return refuse(error, "--amax-epsilon must be a non-negative number");
      cfg->amax_epsilon = static_cast<float>(*e);
    }
    cfg->encode = enc;
    cfg->seed = seed;
    r.q = f64 ? quantize(v.data(), rows, cols, fmt, *cfg, axis) : quantize(vf.data(), rows, cols, fmt, *cfg, axis);
  }
  return r;
}

Json quantizeReportJson(const Format& fmt, const std::string& scaling, const QuantizeOutcome& r) {
  const QuantizedTensor& q = r.q;
  const QuantizeStats& s = q.stats;
  const auto floats = [](const std::vector<float>& xs, auto f) {
    Json a = Json::array();
    for (float x : xs) a.push_back(f(x));
    return a;
  };
  const auto plain = [](float x) { return numberJson(x); };
  Json o = Json::object();
  o["format"] = fmt.name();
  o["scaling"] = scaling;
  o["strategy"] = q.strategy;
  o["shape"] = Json::array({r.rows, r.cols});
  o["block"] = Json::array({q.block.rows, q.block.cols});
  o["scale_grid"] = Json::array({q.blockRows(), q.blockCols()});
  o["scale_op"] = q.scale_op == Format::ScaleOp::Divide ? "divide" : "multiply";
  Json codes = Json::array(), deq = Json::array();
  for (int64_t i = 0; i < r.rows; ++i)
    for (int64_t j = 0; j < r.cols; ++j) {
      codes.push_back(fmt.hexString(q.codes[static_cast<size_t>(i * r.cols + j)]));
      deq.push_back(numberJson(q.dequantizedAt(i, j)));
    }
  o["codes"] = std::move(codes);
  o["dequantized"] = std::move(deq);
  if (!r.rotated.empty()) o["rotated"] = floats(r.rotated, plain);
  // dequant_scales are the factors x ≈ decode(code) · dequant_scale uses: for two-level formats
  // (NVFP4) each block's E4M3 scale times the tensor level (block_scales lists the E4M3 values).
  const bool two_level = q.tensor_scale.kind != TensorScale::Kind::None;
  o["dequant_scales"] =
      floats(q.dequant_scales, [&](float x) { return numberJson(two_level ? q.tensor_scale.blockFactor(x) : x); });
  if (two_level) o["block_scales"] = floats(q.dequant_scales, plain);
  // NVFP4 has no single multiplier per block: each element's follows the preset's rule from
  // S_enc and the block's E4M3 scale (docs/nvfp4.md), so the key is left out rather than empty.
  if (!q.quant_scales.empty())
    o["quant_scales"] = floats(q.quant_scales, plain);
  else
    o["quant_scales_rule"] = "per element, by the preset's rule from the tensor scale and the block's " +
                             q.scaleCodeFormat().name() + " scale (docs/nvfp4.md)";
  if (!q.scale_codes.empty()) {
    Json sc = Json::array();
    for (uint8_t c : q.scale_codes) sc.push_back(q.scaleCodeFormat().hexString(c));
    o["scale_codes"] = std::move(sc);
    o["scale_format"] = q.scaleCodeFormat().name();
  }
  if (two_level) {
    // The second level as the system keeps it: TE the amax (S_enc = fp4_fp8_max / amax is the
    // quant multiplier), torchao per_tensor_scale (a dequant factor).
    const bool te = q.tensor_scale.kind == TensorScale::Kind::TeAmax;
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08X", std::bit_cast<uint32_t>(q.tensor_scale.value));
    Json ts = Json::object();
    ts["kind"] = te ? "te_amax" : "torchao_per_tensor_scale";
    ts["amax"] = numberJson(q.tensor_scale.amax);
    ts["value"] = numberJson(q.tensor_scale.value);
    ts["value_f32_hex"] = hex;
    ts["convention"] = te ? "quant multiplier S_enc = fp4_fp8_max / amax" : "dequant factor amax / 2688";
    if (te) ts["fp4_fp8_max"] = numberJson(q.tensor_scale.fp4_fp8_max);
    o["tensor_scale"] = std::move(ts);
  }
  o["saturated"] = s.saturated;
  o["underflow"] = s.underflow;
  o["subnormal"] = s.subnormal;
  o["nan_inputs"] = s.nan_inputs;
  o["inf_inputs"] = s.inf_inputs;
  o["zero_inputs"] = s.zero_inputs;
  return o;
}

std::string quantizeReportText(const Format& fmt, const QuantizeOutcome& r, const std::vector<double>& values,
                               bool float64) {
  const QuantizedTensor& q = r.q;
  const QuantizeStats& s = q.stats;
  const auto f = [](float x) { return shortestText(x); };
  const auto n = [](int64_t x) { return std::to_string(x); };
  std::string t = "format " + fmt.name() + ", " + q.strategy + "\n";
  if (!r.note.empty()) t += r.note + "\n";
  t += "shape " + n(r.rows) + "x" + n(r.cols) + ", scale block " + n(q.block.rows) + "x" + n(q.block.cols) +
       ", scale grid " + n(q.blockRows()) + "x" + n(q.blockCols()) + ", " +
       (q.scale_op == Format::ScaleOp::Divide ? "x_q = cast(x / dequant_scale)" : "x_q = cast(x * quant_scale)") + "\n";
  const TensorScale& ts = q.tensor_scale;
  if (ts.kind == TensorScale::Kind::TeAmax)
    t += "tensor scale (TE): amax " + f(ts.amax) + ", S_enc = " + f(ts.fp4_fp8_max) + "/amax = " + f(ts.value) +
         " (quant multiplier); block factor = E4M3 scale * amax * (1/" + f(ts.fp4_fp8_max) + ")\n";
  else if (ts.kind == TensorScale::Kind::TorchaoPts)
    t += "tensor scale (torchao): per_tensor_scale = amax/2688 = " + f(ts.value) + " (dequant factor, amax " +
         f(ts.amax) + "); block factor = per_tensor_scale * E4M3 scale\n";
  t += "scales (block grid, row-major):\n";
  for (size_t k = 0; k < q.dequant_scales.size(); ++k) {
    const bool two_level = ts.kind != TensorScale::Kind::None;
    const int64_t kk = static_cast<int64_t>(k);
    t += "  [" + n(kk / q.blockCols()) + "," + n(kk % q.blockCols()) + "] dequant " +
         padded(f(two_level ? ts.blockFactor(q.dequant_scales[k]) : q.dequant_scales[k]), -14) + "  quant " +
         (k < q.quant_scales.size() ? f(q.quant_scales[k]) : std::string("(per rule)"));
    if (!q.scale_codes.empty())
      t += "  " + q.scaleCodeFormat().name() + " " + q.scaleCodeFormat().hexString(q.scale_codes[k]);
    t += "\n";
  }
  const bool rot = !r.rotated.empty();
  t += padded("index", -10) + " " + padded("input", -14) + " " + (rot ? padded("rotated", -14) + " " : "") +
       padded("code", -6) + " dequantized\n";
  for (int64_t i = 0; i < r.rows; ++i)
    for (int64_t j = 0; j < r.cols; ++j) {
      const size_t k = static_cast<size_t>(i * r.cols + j);
      t += padded("[" + n(i) + "," + n(j) + "]", -10) + " " +
           padded(float64 ? shortestText(values[k]) : f(static_cast<float>(values[k])), -14) + " " +
           (rot ? padded(f(r.rotated[k]), -14) + " " : "") + padded(fmt.hexString(q.codes[k]), -6) + " " +
           shortestText(q.dequantizedAt(i, j)) + "\n";
    }
  t += "saturated " + n(s.saturated) + ", underflow " + n(s.underflow) + ", subnormal " + n(s.subnormal) +
       ", NaN inputs " + n(s.nan_inputs) + ", Inf inputs " + n(s.inf_inputs) + ", zero inputs " + n(s.zero_inputs) +
       " (of " + n(s.elements) + ")\n";
  return t;
}

} // namespace fp8lab

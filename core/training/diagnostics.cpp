// FP8 Lab — training diagnostics: per-block statistics and what-if recipes (see diagnostics.h).
#include "training/diagnostics.h"

#include "common/names.h"
#include "common/number_text.h"

#include <algorithm>
#include <limits>
#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace fp8lab {

const Format& WhatIfRecipe::formatFor(bool gradient) const {
  if (kind == Kind::Nvfp4) return Format::E2M1();
  if (format) return *format;
  return gradient ? Format::E5M2() : Format::E4M3FN();
}

std::string WhatIfRecipe::describe(bool gradient) const {
  switch (kind) {
  case Kind::Nvfp4:
    return nvfp4.name + " E2M1" + (nvfp4.tile_2d ? " 16x16" : " 1x16") + (nvfp4.rht ? " rht" : "") +
           (nvfp4.stochastic_rounding ? " sr" : "");
  case Kind::Delayed:
    return "per-tensor delayed (TE DelayedScaling, amax_history_len " + std::to_string(delayed.history_len) +
           ", amax_compute_algo " + (delayed.algo == AmaxAlgo::Max ? "max" : "most_recent") + ") " +
           formatFor(gradient).name();
  case Kind::Scaling:
    break;
  }
  return scaling.name + " " + formatFor(gradient).name();
}

namespace {

bool parsePositiveInt(std::string_view s, int* out) {
  int v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 1) return false;
  *out = v;
  return true;
}

} // namespace

namespace {

/// The canonical spelling of a parsed id: "delayed_L16" for "delayed_L016", the format by its
/// name ("@E4M3FN" for "@e4m3fn"), so that two spellings of one recipe are one recipe.
std::string canonicalId(const std::string& name, const Format* f) {
  if (!f) return name;
  return name + "@" + (f == &Format::E4M3() ? std::string("float8_e4m3") : f->name());
}

} // namespace

std::optional<WhatIfRecipe> parseWhatIfRecipe(const std::string& id, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<WhatIfRecipe> {
    if (why)
      *why = "what-if recipe '" + id + "': " + w +
             " (use a scaling preset such as te_current, te_block_1x128, mx_rceil, an NVFP4 preset such as nvfp4_te, "
             "or delayed_L<N> / delayed_L<N>_most_recent; optionally @E4M3FN / @E5M2)";
    return std::nullopt;
  };
  WhatIfRecipe r;
  r.id = id;
  std::string name = id;
  if (const size_t at = id.find('@'); at != std::string::npos) {
    name = id.substr(0, at);
    const std::string fname = id.substr(at + 1);
    const Format* f = Format::byName(fname);
    if (!f) return fail("unknown format '" + fname + "'");
    // "E4M3" is the OCP E4M3FN in Transformer Engine's fp8_format and in the recipes' own
    // labels, but the IEEE-style format by name here: refused, so a what-if meant to reproduce a
    // recipe does not silently take the other one.
    if (f == &Format::E4M3() && fname != "float8_e4m3")
      return fail("'@" + fname +
                  "' is ambiguous: write @E4M3FN for OCP E4M3 (max 448, what Transformer Engine's "
                  "fp8_format \"E4M3\" means) or @float8_e4m3 for the IEEE-style E4M3 (max 240, with ±Inf)");
    if (f->bits() != 8) return fail(f->name() + " is not an 8-bit format");
    r.format = f;
  }
  if (name.rfind("delayed_L", 0) == 0) {
    std::string_view rest = std::string_view(name).substr(9);
    bool most_recent = false;
    if (const size_t u = rest.find("_most_recent"); u != std::string_view::npos && u + 12 == rest.size()) {
      most_recent = true;
      rest = rest.substr(0, u);
    }
    int len = 0;
    if (!parsePositiveInt(rest, &len)) return fail("the history length must be a whole number ≥ 1");
    r.kind = WhatIfRecipe::Kind::Delayed;
    r.delayed.preset = DelayedPreset::TE;
    r.delayed.history_len = len;
    r.delayed.algo = most_recent ? AmaxAlgo::MostRecent : AmaxAlgo::Max;
    r.semantics = "Transformer Engine DelayedScaling (fused amax/scale update, margin 0), from the operand's own "
                  "amax of every step";
    r.id = canonicalId("delayed_L" + std::to_string(len) + (most_recent ? "_most_recent" : ""), r.format);
    return r;
  }
  for (const ScalingPresetInfo& p : scalingPresets())
    if (p.name == name) {
      if (p.delayed) return fail("the delayed presets need a history; use delayed_L<N>");
      r.kind = WhatIfRecipe::Kind::Scaling;
      r.scaling = requireScalingPreset(name);
      r.semantics = p.source;
      r.id = canonicalId(name, r.format);
      return r;
    }
  if (const auto n = nvfp4Preset(name)) {
    if (r.format) return fail("NVFP4 elements are E2M1; a format suffix applies to the FP8 recipes only");
    r.kind = WhatIfRecipe::Kind::Nvfp4;
    r.nvfp4 = *n;
    for (const Nvfp4PresetInfo& p : nvfp4Presets())
      if (p.name == n->name) r.semantics = p.source;
    return r;
  }
  return fail("unknown recipe");
}

std::optional<std::vector<WhatIfRecipe>> parseWhatIfList(const std::string& ids, std::string* why) {
  std::vector<WhatIfRecipe> list;
  for (const std::string& item : commaItems(ids)) {
    const auto r = parseWhatIfRecipe(std::string(trimmedText(item)), why);
    if (!r) return std::nullopt;
    if (std::any_of(list.begin(), list.end(), [&](const WhatIfRecipe& w) { return w.id == r->id; })) {
      *why = "'" + r->id + "' is listed twice";
      return std::nullopt;
    }
    list.push_back(*r);
  }
  return list;
}

std::string TrainingDiagnostics::validate() const {
  if (map_every < 0) return "diagnostics.map_every must be ≥ 0";
  if (what_if_every < 1) return "diagnostics.what_if.every must be ≥ 1";
  for (size_t i = 0; i < what_if.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (what_if[i].id == what_if[j].id) return "diagnostics.what_if.recipes lists '" + what_if[i].id + "' twice";
  return {};
}

void OperandBlockSeries::setShape(const BlockStatsMap& m) {
  rows = m.rows;
  cols = m.cols;
  block = m.block;
  grid_rows = m.grid_rows;
  grid_cols = m.grid_cols;
}

namespace {

std::string scaleFormatName(const QuantizedTensor& q) {
  if (q.scale_codes.empty()) return "float32";
  return q.scaleCodeFormat().name();
}

void startSeries(OperandBlockSeries& s, const QuantizedTensor& q, const BlockStatsMap& m) {
  if (!s.steps.empty()) return;
  s.format = q.format->name();
  s.scale_format = scaleFormatName(q);
  s.setShape(m);
}

/// Steps at which the precision policy kept an operand's site in high precision have no
/// statistics: NaN rows (counts 0) up to `steps` keep the series indexed by step.
void padSeries(OperandBlockSeries& s, int64_t steps) {
  if (int64_t(s.steps.size()) >= steps) return;
  BlockStatsSummary gap;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  gap.log2_scale_min = gap.log2_scale_max = gap.log2_scale_mean = gap.log2_scale_std = nan;
  gap.max_dynamic_range = gap.underflow_block_share = gap.saturation_block_share = nan;
  gap.underflow_fraction = gap.saturation_fraction = gap.sqnr_db = nan;
  s.steps.resize(size_t(steps), gap);
}

/// Copies x [rows, cols] into a zero-padded [pr, pc].
std::vector<float> padded(const float* x, int64_t rows, int64_t cols, int64_t pr, int64_t pc) {
  std::vector<float> p(static_cast<size_t>(pr * pc), 0.0f);
  for (int64_t i = 0; i < rows; ++i) std::copy_n(x + i * cols, cols, p.begin() + i * pc);
  return p;
}

uint64_t mixSeed(int64_t step, size_t op, size_t recipe) {
  uint64_t z = 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(step) + 1) ^ (static_cast<uint64_t>(op) << 20) ^
               (static_cast<uint64_t>(recipe) << 40);
  z ^= z >> 31;
  z *= 0xBF58476D1CE4E5B9ull;
  return z ^ (z >> 29);
}

} // namespace

struct DiagnosticsRecorder::Impl {
  TrainingDiagnostics cfg;
  std::vector<Operand> ops;
  int64_t total = 0;
  int threads = 0;
  DiagnosticsResult res;
  std::vector<BlockStatsMap> work;                // per operand: the latest map
  std::vector<int64_t> last_step;                 // per operand: the latest step in `work`
  std::vector<std::vector<DelayedScaling>> state; // [recipe][operand], delayed recipes only
  BlockStatsMap scratch;
};

DiagnosticsRecorder::DiagnosticsRecorder(TrainingDiagnostics cfg, std::vector<Operand> operands, int64_t total_steps,
                                         int threads)
    : d(std::make_unique<Impl>()) {
  if (const std::string why = cfg.validate(); !why.empty()) throw std::invalid_argument(why);
  d->cfg = std::move(cfg);
  d->ops = std::move(operands);
  d->total = total_steps;
  d->threads = threads;
  d->res.map_every = d->cfg.map_every;
  d->res.what_if_every = d->cfg.what_if.empty() ? 0 : d->cfg.what_if_every;
  if (d->cfg.block_stats)
    for (const Operand& o : d->ops)
      if (o.quantized) {
        OperandBlockSeries s;
        s.layer = o.layer;
        s.operand = o.operand;
        s.quantization = o.quantization;
        d->res.block_stats.push_back(std::move(s));
      }
  d->work.resize(d->ops.size());
  d->last_step.assign(d->ops.size(), -1);
  for (const WhatIfRecipe& r : d->cfg.what_if) {
    WhatIfSeries w;
    w.id = r.id;
    w.semantics = r.semantics;
    std::vector<DelayedScaling> st;
    for (const Operand& o : d->ops) {
      OperandBlockSeries s;
      s.layer = o.layer;
      s.operand = o.operand;
      s.quantization = r.describe(o.gradient);
      w.operands.push_back(std::move(s));
      if (r.kind == WhatIfRecipe::Kind::Delayed) st.emplace_back(r.formatFor(o.gradient), r.delayed);
    }
    d->state.push_back(std::move(st));
    d->res.what_if.push_back(std::move(w));
  }
}

DiagnosticsRecorder::~DiagnosticsRecorder() = default;

bool DiagnosticsRecorder::isMapStep(int64_t step) const {
  const int e = d->cfg.map_every;
  return step == 0 || step == d->total - 1 || (e > 0 && step % e == 0);
}

bool DiagnosticsRecorder::isWhatIfStep(int64_t step) const {
  return !d->cfg.what_if.empty() && (step % d->cfg.what_if_every == 0 || step == d->total - 1);
}

void DiagnosticsRecorder::trained(size_t op, int64_t step, const float* x, const QuantizedTensor& q) {
  if (!d->cfg.block_stats) return;
  // the series of operand `op`: block_stats holds the quantized operands only, in order
  size_t si = 0;
  for (size_t i = 0; i < op; ++i) si += d->ops[i].quantized ? 1 : 0;
  if (op >= d->ops.size() || !d->ops[op].quantized || si >= d->res.block_stats.size())
    throw std::logic_error("diagnostics: operand " + std::to_string(op) + " is not a quantized operand");
  OperandBlockSeries& s = d->res.block_stats[si];
  // Maps have the shape of the first step; a step of another shape (the short last batch of an
  // epoch) is summarized but not mapped.
  const bool same_shape = s.steps.empty() || (q.rows == s.rows && q.cols == s.cols);
  BlockStatsMap& m = same_shape ? d->work[op] : d->scratch;
  // Full detail every step: the last map of a run that stops early is the step it stopped at.
  const BlockStatsSummary sum = computeBlockStats(x, q, m, BlockStatsDetail::Full);
  startSeries(s, q, m);
  padSeries(s, step);
  s.steps.push_back(sum);
  if (!same_shape) return;
  d->last_step[op] = step;
  // A site the policy quantizes from a later step on gets its first map at that step.
  if (isMapStep(step) || s.map_steps.empty()) {
    s.map_steps.push_back(step);
    s.maps.push_back(m);
  }
}

void DiagnosticsRecorder::whatIf(size_t op, int64_t step, const float* x, int64_t rows, int64_t cols, Axis axis) {
  if (d->cfg.what_if.empty()) return;
  const bool measure = isWhatIfStep(step);
  if (measure && op == 0) d->res.what_if_steps.push_back(step);
  const bool grad = d->ops[op].gradient;
  for (size_t ri = 0; ri < d->cfg.what_if.size(); ++ri) {
    const WhatIfRecipe& r = d->cfg.what_if[ri];
    OperandBlockSeries& s = d->res.what_if[ri].operands[op];
    const Format& f = r.formatFor(grad);
    if (r.kind == WhatIfRecipe::Kind::Delayed) {
      // TE: this step's tensor is cast with the current scale, then the amax enters the history
      DelayedScaling& st = d->state[ri][op];
      if (!measure) {
        (void)st.update(static_cast<float>(amaxOf(x, static_cast<size_t>(rows * cols), true)));
        continue;
      }
      const QuantizedTensor q = st.quantizeStep(x, rows, cols);
      const BlockStatsSummary sum = computeBlockStats(x, q, d->scratch, BlockStatsDetail::Summary);
      startSeries(s, q, d->scratch);
      s.steps.push_back(sum);
      continue;
    }
    if (!measure) continue;
    if (r.kind == WhatIfRecipe::Kind::Scaling) {
      ScalingConfig sc = r.scaling;
      sc.threads = d->threads;
      const QuantizedTensor q = quantize(x, rows, cols, f, sc, axis);
      const BlockStatsSummary sum = computeBlockStats(x, q, d->scratch, BlockStatsDetail::Summary);
      startSeries(s, q, d->scratch);
      s.steps.push_back(sum);
      continue;
    }
    // NVFP4: whole 16-element blocks along the block axis (both axes for 2-D tiles), zero padded
    Nvfp4Config nc = r.nvfp4;
    nc.threads = d->threads;
    nc.seed = mixSeed(step, op, ri);
    const auto up16 = [](int64_t v) { return (v + 15) / 16 * 16; };
    const int64_t pr = axis == Axis::Rows || nc.tile_2d ? up16(rows) : rows;
    const int64_t pc = axis == Axis::Cols || nc.tile_2d ? up16(cols) : cols;
    std::vector<float> pad;
    const float* src = x;
    if (pr != rows || pc != cols) {
      pad = padded(x, rows, cols, pr, pc);
      src = pad.data();
    }
    const Nvfp4Tensor t = quantizeNvfp4(src, pr, pc, nc, axis);
    const Nvfp4StatsView v = nvfp4StatsView(t, nc, src, pr, pc, rows, cols, axis, d->threads);
    const BlockStatsSummary sum = computeBlockStats(v.elements(src), v.q, d->scratch, BlockStatsDetail::Summary);
    startSeries(s, v.q, d->scratch);
    s.steps.push_back(sum);
  }
}

DiagnosticsResult DiagnosticsRecorder::finish(int64_t steps_done) {
  size_t si = 0;
  for (size_t op = 0; op < d->ops.size(); ++op) {
    if (!d->ops[op].quantized || !d->cfg.block_stats) continue;
    OperandBlockSeries& s = d->res.block_stats[si++];
    if (!s.steps.empty()) padSeries(s, steps_done);
    const int64_t last = d->last_step[op];
    if (last >= 0 && (s.map_steps.empty() || s.map_steps.back() != last)) {
      s.map_steps.push_back(last);
      s.maps.push_back(d->work[op]);
    }
  }
  return std::move(d->res);
}

Nvfp4StatsView nvfp4StatsView(const Nvfp4Tensor& t, const Nvfp4Config& nc, const float* src, int64_t pr, int64_t pc,
                              int64_t rows, int64_t cols, Axis axis, int threads) {
  Nvfp4StatsView v;
  // Without the element counts (QuantizeStats): per-block statistics count per block from the
  // codes and elements themselves, and with RHT the counts would need the rotation again.
  v.q = nc.tile_2d ? mergeScaleBlocks(toQuantizedTensor(t, nc, nullptr), {16, 16}) : toQuantizedTensor(t, nc, nullptr);
  if (nc.rht) v.x = rhtOperand(src, pr, pc, nc.rht_sign_mask, axis, threads);
  const int64_t kr = nc.rht && axis == Axis::Rows ? pr : rows, kc = nc.rht && axis == Axis::Cols ? pc : cols;
  if (kr != pr || kc != pc) {
    v.q = cropQuantized(v.q, kr, kc);
    v.x = cropMatrix(v.elements(src), pr, pc, kr, kc);
  }
  return v;
}

double estimateDiagnosticsBytes(const TrainingDiagnostics& cfg, int64_t steps, int64_t operands, int64_t elements) {
  if (steps < 1) return 0.0;
  const double row = sizeof(BlockStatsSummary); // one summary per operand and recorded step
  const double summaries = cfg.block_stats ? double(steps) * double(operands) * row : 0.0;
  // maps at every map_every-th step from 0 plus the last; at most one block per 16 elements and
  // 45 bytes per block, once in the result and once in the stored run
  const int64_t maps_n = cfg.block_stats ? (cfg.map_every > 0 ? (steps - 1) / cfg.map_every + 1 : 1) + 1 : 0;
  const double maps = double(maps_n) * double(elements / 16) * 45.0 * 2.0;
  const int64_t what_if_n = cfg.what_if.empty() ? 0 : (steps - 1) / cfg.what_if_every + 2;
  const double wi = double(what_if_n) * double(cfg.what_if.size()) * double(operands) * row;
  return summaries + maps + wi;
}

} // namespace fp8lab

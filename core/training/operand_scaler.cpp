// FP8 Lab — OperandScaler (see operand_scaler.h).
//
// TEMPORARY: until core/scaling's delayed/current state classes land, the rules are restated
// here from SCALING-SEMANTICS.md; this file is the single adapter to switch to core/scaling.
#include "training/operand_scaler.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace fp8lab {

bool parseTrainingScalingKind(const std::string& s, TrainingScalingKind* out) {
  if (s == "delayed-flax" || s == "delayed" || s == "flax") *out = TrainingScalingKind::DelayedFlax;
  else if (s == "delayed-te" || s == "te-delayed" || s == "te") *out = TrainingScalingKind::DelayedTE;
  else if (s == "current-te" || s == "current" || s == "te-current") *out = TrainingScalingKind::CurrentTE;
  else if (s == "current-torchao" || s == "torchao") *out = TrainingScalingKind::CurrentTorchao;
  else return false;
  return true;
}

const char* toString(TrainingScalingKind k) {
  switch (k) {
  case TrainingScalingKind::DelayedFlax: return "delayed-flax";
  case TrainingScalingKind::DelayedTE: return "delayed-te";
  case TrainingScalingKind::CurrentTE: return "current-te";
  case TrainingScalingKind::CurrentTorchao: return "current-torchao";
  }
  return "?";
}

bool isDelayed(TrainingScalingKind k) {
  return k == TrainingScalingKind::DelayedFlax || k == TrainingScalingKind::DelayedTE;
}

struct OperandScaler::Impl {
  TrainingScalingConfig cfg;
  const Format* format = nullptr;
  float fp8_max = 0;
  // Delayed state, stored in the preset's own layout (SCALING-SEMANTICS §2.1 / §3.1).
  std::vector<float> hist;  ///< raw history array (Flax: hist[0] newest; TE: hist[0] staging)
  float flax_scale = 1.0f;  ///< Flax: stored dequant scale, init 1
  float te_scale = 1.0f;    ///< TE: stored quant scale, init 1
  std::vector<float> te_window; ///< TE: the window of the last update, chronological
};

OperandScaler::OperandScaler(const TrainingScalingConfig& cfg, const Format& format) : d(std::make_unique<Impl>()) {
  if (format.bits() > 8) throw std::invalid_argument("OperandScaler: format " + format.name() + " is not an 8-bit (or narrower) format");
  if (isDelayed(cfg.kind) && cfg.history_len < 1)
    throw std::invalid_argument("OperandScaler: amax history length must be ≥ 1 (got " + std::to_string(cfg.history_len) + ")");
  if (cfg.margin < 0 || cfg.margin > 64) throw std::invalid_argument("OperandScaler: margin must be in 0..64");
  d->cfg = cfg;
  d->format = &format;
  d->fp8_max = static_cast<float>(format.maxFinite());
  if (isDelayed(cfg.kind)) {
    d->hist.assign(static_cast<size_t>(cfg.history_len), 0.0f);
    d->te_window = d->hist;
  }
}
OperandScaler::~OperandScaler() = default;
OperandScaler::OperandScaler(const OperandScaler& o) : d(std::make_unique<Impl>(*o.d)) {}
OperandScaler& OperandScaler::operator=(const OperandScaler& o) {
  if (this != &o) *d = *o.d;
  return *this;
}
const Format& OperandScaler::format() const { return *d->format; }
const TrainingScalingConfig& OperandScaler::config() const { return d->cfg; }

namespace {

float amaxOf(const float* x, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(x[i])); // fmax: NaN ignored (TE fmaxf)
  return m;
}

// Roll left by one (hist[i] ← hist[i+1], hist[L-1] ← hist[0]).
void rollLeft(std::vector<float>& h) { std::rotate(h.begin(), h.begin() + 1, h.end()); }

float pow2Down(float s) { // TE: drop the mantissa bits (round down to a power of two)
  uint32_t b;
  std::memcpy(&b, &s, 4);
  b &= 0xFF800000u;
  std::memcpy(&s, &b, 4);
  return s;
}

} // namespace

void OperandScaler::quantize(const float* x, int64_t rows, int64_t cols, QuantizedTensor& out,
                             OperandStepRecord* rec) {
  Impl& s = *d;
  const size_t n = static_cast<size_t>(rows * cols);
  const float amax = amaxOf(x, n);
  float dq = 1, q = 1;
  bool kept = false;
  Format::ScaleOp op = Format::ScaleOp::Multiply;
  float op_scale = 1;
  switch (s.cfg.kind) {
  case TrainingScalingKind::DelayedFlax: {
    // SCALING-SEMANTICS §2.2: scale from the OLD history, then roll and write the new amax.
    const float a_hist = *std::max_element(s.hist.begin(), s.hist.end());
    float sf = s.fp8_max / a_hist;
    if (!(a_hist > 0) || !std::isfinite(a_hist)) {
      sf = 1.0f / s.flax_scale;
      kept = true;
    }
    s.flax_scale = 1.0f / sf;
    rollLeft(s.hist);
    s.hist[0] = amax;
    dq = s.flax_scale;
    q = sf;
    op = Format::ScaleOp::Divide;
    op_scale = dq;
    break;
  }
  case TrainingScalingKind::DelayedTE: {
    // §3.1: cast with the current quant scale, stage the amax, then the fused update.
    q = s.te_scale;
    dq = 1.0f / q;
    op = Format::ScaleOp::Multiply;
    op_scale = q;
    s.hist[0] = amax;
    const float cur = s.hist[0];
    float window_max = 0;
    if (cur != 0) {
      // The window of this update, chronological: hist[1..L-1] (oldest first) then cur.
      s.te_window.assign(s.hist.begin() + 1, s.hist.end());
      s.te_window.push_back(cur);
      window_max = cur;
      for (size_t i = 1; i < s.hist.size(); ++i) window_max = std::max(window_max, s.hist[i]);
      rollLeft(s.hist);
      s.hist[0] = 0;
    }
    const float a = s.cfg.most_recent ? cur : window_max;
    const float scaled_max = std::ldexp(s.fp8_max, -s.cfg.margin);
    if (std::isfinite(a) && a > 0) {
      s.te_scale = scaled_max / a;
      if (std::isinf(s.te_scale)) s.te_scale = FLT_MAX;
    }
    break;
  }
  case TrainingScalingKind::CurrentTE: {
    // §3.3 compute_scale_from_amax with eps 0, value_for_inf FLT_MAX.
    float sc;
    if (std::isinf(amax) || amax == 0 || std::isnan(amax)) {
      sc = 1.0f;
      kept = true;
    } else {
      sc = s.fp8_max / amax;
      if (std::isinf(sc)) sc = FLT_MAX;
      if (s.cfg.power_of_two) sc = pow2Down(sc);
    }
    q = sc;
    dq = 1.0f / sc;
    op_scale = q;
    break;
  }
  case TrainingScalingKind::CurrentTorchao: {
    // §4.1: float64 division with EPS 1e-12, rounded to float32; optional pow2 round-down.
    float sc = static_cast<float>(static_cast<double>(s.fp8_max) / std::max(static_cast<double>(amax), 1e-12));
    if (s.cfg.power_of_two) sc = std::exp2(std::floor(std::log2(sc)));
    q = sc;
    dq = 1.0f / sc;
    op_scale = q;
    break;
  }
  }
  out.rows = rows;
  out.cols = cols;
  out.format = s.format;
  out.block = {rows, cols};
  out.codes.resize(n);
  out.dequant_scales.assign(1, dq);
  out.quant_scales.assign(1, q);
  out.scale_codes.clear();
  out.strategy = toString(s.cfg.kind);
  s.format->encodeBulk(x, out.codes.data(), n, EncodeOptions{}, op_scale, op);
  // Statistics (QuantizeStats semantics).
  QuantizeStats st;
  st.elements = static_cast<int64_t>(n);
  const auto& table = s.format->decodeTable();
  const float fmax = s.fp8_max;
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (std::isnan(v)) { ++st.nan_inputs; continue; }
    if (std::isinf(v)) { ++st.inf_inputs; continue; }
    if (v == 0) { ++st.zero_inputs; continue; }
    const float sv = op == Format::ScaleOp::Multiply ? v * op_scale : v / op_scale;
    if (std::fabs(sv) > fmax) ++st.saturated;
    const float dv = table[out.codes[i]];
    if (dv == 0) ++st.underflow;
    else if (std::fabs(dv) < static_cast<float>(s.format->minNormal())) ++st.subnormal;
  }
  out.stats = st;
  if (rec) {
    rec->amax = amax;
    rec->dequant_scale = dq;
    rec->quant_scale = q;
    rec->kept_previous = kept;
    rec->saturated = st.saturated;
    rec->underflow = st.underflow;
    rec->history.clear();
    if (s.cfg.kind == TrainingScalingKind::DelayedFlax) {
      // chronological: hist[1:] + [hist[0]] = {a_(t-L+1) … a_t}
      rec->history.assign(s.hist.begin() + 1, s.hist.end());
      rec->history.push_back(s.hist[0]);
    } else if (s.cfg.kind == TrainingScalingKind::DelayedTE) {
      // The L values the fused update took the max over: {a_(t-L+1) … a_t}, the window
      // that sets the next step's scale (same as Flax's chronological history).
      rec->history = s.te_window;
    }
  }
}

void transposeQuantized(const QuantizedTensor& in, QuantizedTensor& out) {
  out.rows = in.cols;
  out.cols = in.rows;
  out.format = in.format;
  out.block = {in.block.cols, in.block.rows};
  out.dequant_scales = in.dequant_scales;
  out.quant_scales = in.quant_scales;
  out.scale_codes = in.scale_codes;
  out.stats = in.stats;
  out.strategy = in.strategy;
  out.codes.resize(in.codes.size());
  const int64_t R = in.rows, C = in.cols;
  constexpr int64_t T = 32; // cache tiles
  for (int64_t i0 = 0; i0 < R; i0 += T)
    for (int64_t j0 = 0; j0 < C; j0 += T)
      for (int64_t i = i0; i < std::min(R, i0 + T); ++i)
        for (int64_t j = j0; j < std::min(C, j0 + T); ++j)
          out.codes[static_cast<size_t>(j * R + i)] = in.codes[static_cast<size_t>(i * C + j)];
}

} // namespace fp8lab

// FP8 Lab — OperandScaler (see operand_scaler.h).
//
// The scaling itself is core/scaling's (DelayedScaling for the delayed presets, quantize() with
// a current-scaling preset otherwise); this file adapts it to one operand of the training loop
// and records what each step did.
#include "training/operand_scaler.h"

#include "scaling/delayed_scaling.h"
#include "scaling/scaling.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <stdexcept>

namespace fp8lab {

bool parseTrainingScalingKind(const std::string& s, TrainingScalingKind* out) {
  if (s == "delayed-flax" || s == "delayed" || s == "flax")
    *out = TrainingScalingKind::DelayedFlax;
  else if (s == "delayed-te" || s == "te-delayed" || s == "te")
    *out = TrainingScalingKind::DelayedTE;
  else if (s == "current-te" || s == "current" || s == "te-current")
    *out = TrainingScalingKind::CurrentTE;
  else if (s == "current-torchao" || s == "torchao")
    *out = TrainingScalingKind::CurrentTorchao;
  else
    return false;
  return true;
}

const char* toString(TrainingScalingKind k) {
  switch (k) {
  case TrainingScalingKind::DelayedFlax:
    return "delayed-flax";
  case TrainingScalingKind::DelayedTE:
    return "delayed-te";
  case TrainingScalingKind::CurrentTE:
    return "current-te";
  case TrainingScalingKind::CurrentTorchao:
    return "current-torchao";
  }
  return "?";
}

bool isDelayed(TrainingScalingKind k) {
  return k == TrainingScalingKind::DelayedFlax || k == TrainingScalingKind::DelayedTE;
}

struct OperandScaler::Impl {
  TrainingScalingConfig cfg;
  const Format* format = nullptr;
  std::optional<DelayedScaling> delayed; ///< delayed presets: the state (core/scaling)
  ScalingConfig current;                 ///< current presets: the strategy (core/scaling)
};

OperandScaler::OperandScaler(const TrainingScalingConfig& cfg, const Format& format) : d(std::make_unique<Impl>()) {
  if (format.bits() > 8)
    throw std::invalid_argument("OperandScaler: format " + format.name() + " is not an 8-bit (or narrower) format");
  if (isDelayed(cfg.kind) && cfg.history_len < 1)
    throw std::invalid_argument("OperandScaler: amax history length must be ≥ 1 (got " +
                                std::to_string(cfg.history_len) + ")");
  if (cfg.margin < 0 || cfg.margin > 64) throw std::invalid_argument("OperandScaler: margin must be in 0..64");
  if (cfg.kind == TrainingScalingKind::DelayedFlax && (cfg.margin != 0 || cfg.most_recent))
    throw std::invalid_argument(
        "OperandScaler: the Flax preset has no margin and only the max algorithm (use delayed-te)");
  d->cfg = cfg;
  d->format = &format;
  switch (cfg.kind) {
  case TrainingScalingKind::DelayedFlax:
  case TrainingScalingKind::DelayedTE: {
    DelayedScalingConfig dc;
    dc.preset = cfg.kind == TrainingScalingKind::DelayedFlax ? DelayedPreset::Flax : DelayedPreset::TE;
    dc.history_len = cfg.history_len;
    dc.algo = cfg.most_recent ? AmaxAlgo::MostRecent : AmaxAlgo::Max;
    dc.margin = cfg.margin;
    d->delayed.emplace(format, dc);
    break;
  }
  case TrainingScalingKind::CurrentTE:
    d->current = requireScalingPreset(cfg.power_of_two ? "te_current_pow2" : "te_current");
    break;
  case TrainingScalingKind::CurrentTorchao:
    d->current = requireScalingPreset("torchao_tensorwise");
    d->current.pow2 = cfg.power_of_two;
    break;
  }
  if (!cfg.saturate) d->current.encode.saturate = false;
}
OperandScaler::~OperandScaler() = default;
OperandScaler::OperandScaler(const OperandScaler& o) : d(std::make_unique<Impl>(*o.d)) {}
OperandScaler& OperandScaler::operator=(const OperandScaler& o) {
  if (this != &o) *d = *o.d;
  return *this;
}
const Format& OperandScaler::format() const {
  return *d->format;
}
const TrainingScalingConfig& OperandScaler::config() const {
  return d->cfg;
}

void OperandScaler::quantize(const float* x, int64_t rows, int64_t cols, QuantizedTensor& out, OperandStepRecord* rec) {
  Impl& s = *d;
  const size_t n = static_cast<size_t>(rows * cols);
  if (s.delayed) {
    // Chronological history before the step (TE: hist[1:] + [staging 0]).
    std::vector<float> before;
    if (rec && s.cfg.kind == TrainingScalingKind::DelayedTE) before = s.delayed->historyChronological();
    DelayedUpdate u;
    if (s.cfg.saturate) {
      out = s.delayed->quantizeStep(x, rows, cols, &u);
    } else {
      // DelayedScaling::quantizeStep with a non-saturating cast: the same amax rule (Flax
      // NaN-propagating, TE NaN-ignoring), the same order of scale update and cast.
      EncodeOptions enc;
      enc.saturate = false;
      DelayedScaling& ds = *s.delayed;
      if (s.cfg.kind == TrainingScalingKind::DelayedFlax) {
        u = ds.update(static_cast<float>(amaxOf(x, n, /*ignore_nan=*/false)));
        out = quantizeWithScale(x, rows, cols, *s.format, BlockScale{ds.quantScale(), ds.dequantScale(), -1},
                                Format::ScaleOp::Divide, enc);
      } else {
        out = quantizeWithScale(x, rows, cols, *s.format, BlockScale{ds.quantScale(), ds.dequantScale(), -1},
                                Format::ScaleOp::Multiply, enc);
        u = ds.update(static_cast<float>(amaxOf(x, n, /*ignore_nan=*/true)));
      }
      out.strategy = std::string(toString(s.cfg.kind)) + " (per-tensor, non-saturating cast)";
    }
    if (rec) {
      rec->amax = static_cast<float>(u.amax);
      rec->kept_previous = u.kept_previous;
      if (s.cfg.kind == TrainingScalingKind::DelayedFlax) {
        // Flax after update: hist[1:] + [hist[0]] = {a_(t-L+1) … a_t}, the window of the
        // next step's scale (Flax fp8_ops update_fp8_meta).
        rec->history = s.delayed->historyChronological();
      } else {
        // TE: the window the fused update took its max over — the L−1 stored amaxes (oldest
        // first) plus the one staged this step = {a_(t-L+1) … a_t} (TE kernel_bulk). After the update the
        // array itself holds the last L−1 of them and a cleared staging slot.
        rec->history.assign(before.begin(), before.end() - 1);
        rec->history.push_back(rec->amax);
      }
    }
  } else {
    out = fp8lab::quantize(x, rows, cols, *s.format, s.current, Axis::Cols);
    if (rec) {
      // NaN elements ignored (CUDA fmaxf, as TE's amax kernel; torchao would propagate NaN, which
      // training data never holds)
      rec->amax = static_cast<float>(amaxOf(x, n, /*ignore_nan=*/true));
      rec->kept_previous = !(rec->amax > 0) || !std::isfinite(rec->amax);
      rec->history.clear();
    }
  }
  if (rec) {
    rec->dequant_scale = out.dequant_scales.at(0);
    rec->quant_scale = out.quant_scales.empty() ? 1.0f / rec->dequant_scale : out.quant_scales[0];
    rec->saturated = out.stats.saturated;
    rec->underflow = out.stats.underflow;
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
  transposeCodes(in.codes.data(), out.codes.data(), in.rows, in.cols);
}

} // namespace fp8lab

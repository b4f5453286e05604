#include "scaling/delayed_scaling.h"

#include "common/names.h"

#include "scaling/scaling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fp8lab {

namespace {

void rollLeft(std::vector<float>& h) {
  if (h.size() > 1) std::rotate(h.begin(), h.begin() + 1, h.end());
}

} // namespace

const char* toString(DelayedPreset p) {
  return p == DelayedPreset::Flax ? "flax" : p == DelayedPreset::TE ? "te" : "te_jax";
}
const char* toString(AmaxAlgo a) {
  return a == AmaxAlgo::Max ? "max" : "most_recent";
}

std::optional<DelayedPreset> parseDelayedPreset(std::string_view s) {
  const std::string l = normalizedName(s);
  if (l == "flax" || l == "flax_delayed") return DelayedPreset::Flax;
  if (l == "te" || l == "te_delayed" || l == "transformer_engine") return DelayedPreset::TE;
  if (l == "te_jax" || l == "te_jax_delayed") return DelayedPreset::TEJax;
  return std::nullopt;
}

std::optional<AmaxAlgo> parseAmaxAlgo(std::string_view s) {
  const std::string l = normalizedName(s);
  if (l == "max") return AmaxAlgo::Max;
  if (l == "most_recent" || l == "mostrecent") return AmaxAlgo::MostRecent;
  return std::nullopt;
}

DelayedScaling::DelayedScaling(const Format& fmt, DelayedScalingConfig cfg)
    : fmt_(&fmt), cfg_(cfg), fp8_max_(static_cast<float>(fmt.maxFinite())) {
  if (cfg_.history_len < 1)
    throw std::invalid_argument("delayed scaling: history length must be at least 1, got " +
                                std::to_string(cfg_.history_len));
  if (fmt.bits() > 8)
    throw std::invalid_argument("delayed scaling: " + fmt.name() + " is not an FP8 (or narrower) format");
  if (cfg_.preset == DelayedPreset::Flax && cfg_.algo != AmaxAlgo::Max)
    throw std::invalid_argument("delayed scaling: Flax fp8_ops supports only amax_compute_algo 'max'");
  if (cfg_.margin < -126 || cfg_.margin > 126)
    throw std::invalid_argument("delayed scaling: margin must be within [-126, 126], got " +
                                std::to_string(cfg_.margin));
  hist_.assign(static_cast<std::size_t>(cfg_.history_len), 0.0f);
}

float DelayedScaling::quantScale() const {
  return cfg_.preset != DelayedPreset::Flax ? scale_ : 1.0f / scale_;
}
float DelayedScaling::dequantScale() const {
  return cfg_.preset != DelayedPreset::Flax ? 1.0f / scale_ : scale_;
}
Format::ScaleOp DelayedScaling::scaleOp() const {
  return cfg_.preset != DelayedPreset::Flax ? Format::ScaleOp::Multiply : Format::ScaleOp::Divide;
}

std::vector<float> DelayedScaling::historyChronological() const {
  std::vector<float> h = hist_;
  rollLeft(h); // hist[1:] + [hist[0]]
  return h;
}

void DelayedScaling::fillConventions(DelayedUpdate& u) const {
  u.scale = scale_;
  u.quant_scale = quantScale();
  u.dequant_scale = dequantScale();
}

void DelayedScaling::record(float amax) {
  if (cfg_.preset == DelayedPreset::Flax)
    throw std::logic_error("DelayedScaling::record: Flax has no staging slot; use update(amax)");
  delayedRecord(hist_.data(), amax);
}

DelayedUpdateParams DelayedScaling::params() const {
  DelayedUpdateParams p;
  p.preset = cfg_.preset;
  p.algo = cfg_.algo;
  p.fp8_max = fp8_max_;
  p.margin = cfg_.margin;
  return p;
}

DelayedUpdate DelayedScaling::finish(float scale_before, const DelayedStep& step) {
  DelayedUpdate u;
  u.amax = step.amax;
  u.scale_before = scale_before;
  // Flax computes this step's scale from the old window; TE's update takes effect next step.
  u.scale_used = cfg_.preset == DelayedPreset::Flax ? scale_ : scale_before;
  u.window_amax = step.window_amax;
  u.kept_previous = step.kept_previous;
  u.clamped = step.clamped;
  u.rolled = step.rolled;
  fillConventions(u);
  ++steps_;
  last_ = u;
  return u;
}

DelayedUpdate DelayedScaling::update() {
  if (cfg_.preset == DelayedPreset::Flax)
    throw std::logic_error("DelayedScaling::update(): Flax updates with the tensor's amax; use update(amax)");
  const float before = scale_;
  return finish(before, delayedUpdateStaged(hist_.data(), cfg_.history_len, 1, &scale_, params()));
}

DelayedUpdate DelayedScaling::update(float amax) {
  const float before = scale_;
  return finish(before, delayedScalingUpdate(hist_.data(), cfg_.history_len, 1, &scale_, amax, params()));
}

QuantizedTensor DelayedScaling::quantizeStep(const float* x, int64_t rows, int64_t cols, DelayedUpdate* upd,
                                             const ProgressFn& progress) {
  if (rows < 0 || cols < 0) throw std::invalid_argument("quantizeStep: negative shape");
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  if (n > 0 && !x) throw std::invalid_argument("quantizeStep: null input");
  QuantizedTensor q;
  DelayedUpdate u;
  if (cfg_.preset == DelayedPreset::Flax) {
    const float a = static_cast<float>(amaxOf(x, n, /*ignore_nan=*/false));
    u = update(a);
    q = quantizeWithScale(x, rows, cols, *fmt_, BlockScale{quantScale(), dequantScale(), -1}, Format::ScaleOp::Divide,
                          {}, progress);
    q.strategy = "flax_delayed (per-tensor, x/scale, history " + std::to_string(cfg_.history_len) + ")";
  } else {
    q = quantizeWithScale(x, rows, cols, *fmt_, BlockScale{quantScale(), dequantScale(), -1}, Format::ScaleOp::Multiply,
                          {}, progress);
    // TE PyTorch: the cast kernel's fmaxf skips NaN; TE JAX: jnp.max propagates it.
    const float a = static_cast<float>(amaxOf(x, n, /*ignore_nan=*/cfg_.preset == DelayedPreset::TE));
    u = update(a);
    q.strategy = std::string(toString(cfg_.preset)) + "_delayed (per-tensor, x*scale, history " +
                 std::to_string(cfg_.history_len) + ", " + toString(cfg_.algo) + ", margin " +
                 std::to_string(cfg_.margin) + ")";
  }
  if (upd) *upd = u;
  return q;
}

void DelayedScaling::setState(float scale, std::vector<float> raw_history) {
  if (raw_history.size() != hist_.size())
    throw std::invalid_argument("DelayedScaling::setState: history has " + std::to_string(raw_history.size()) +
                                " values, expected " + std::to_string(hist_.size()));
  scale_ = scale;
  hist_ = std::move(raw_history);
}

DelayedScaling DelayedScaling::combineUses(std::span<const DelayedScaling> uses, MetaCombine how) {
  if (uses.empty()) throw std::invalid_argument("DelayedScaling::combineUses: no uses given");
  DelayedScaling r = uses[0];
  for (std::size_t k = 1; k < uses.size(); ++k) {
    const DelayedScaling& o = uses[k];
    if (o.fmt_ != r.fmt_ || o.cfg_.preset != r.cfg_.preset || o.cfg_.history_len != r.cfg_.history_len ||
        o.cfg_.algo != r.cfg_.algo || o.cfg_.margin != r.cfg_.margin)
      throw std::invalid_argument("DelayedScaling::combineUses: uses differ in format or config");
    for (std::size_t i = 0; i < r.hist_.size(); ++i)
      r.hist_[i] = how == MetaCombine::Max ? hd::maxPropagateNan(r.hist_[i], o.hist_[i]) : r.hist_[i] + o.hist_[i];
    r.scale_ = how == MetaCombine::Max ? hd::maxPropagateNan(r.scale_, o.scale_) : r.scale_ + o.scale_;
  }
  r.fillConventions(r.last_);
  return r;
}

std::vector<DelayedUpdate> DelayedScaling::simulate(const Format& fmt, const DelayedScalingConfig& cfg,
                                                    std::span<const double> amaxes,
                                                    std::vector<std::vector<float>>* histories) {
  DelayedScaling s(fmt, cfg);
  std::vector<DelayedUpdate> r;
  r.reserve(amaxes.size());
  if (histories) histories->clear();
  for (double a : amaxes) {
    r.push_back(s.update(static_cast<float>(a)));
    if (histories) histories->push_back(s.historyChronological());
  }
  return r;
}

} // namespace fp8lab

#include "scaling/delayed_scaling.h"

#include "scaling/scale_rules.h"
#include "scaling/scaling.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fp8lab {

namespace {

/// max that propagates NaN (jnp.max / torch.max; TE's window max is assumed to do the same —
/// with a NaN staged amax this gives TE's pinned "NaN → previous scale").
float maxNaN(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
  return a > b ? a : b;
}

void rollLeft(std::vector<float>& h) {
  if (h.size() > 1) std::rotate(h.begin(), h.begin() + 1, h.end());
}

std::string lower(std::string_view s) {
  std::string r;
  for (char c : s) r += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

} // namespace

const char* toString(DelayedPreset p) {
  return p == DelayedPreset::Flax ? "flax" : p == DelayedPreset::TE ? "te" : "te_jax";
}
const char* toString(AmaxAlgo a) {
  return a == AmaxAlgo::Max ? "max" : "most_recent";
}

std::optional<DelayedPreset> parseDelayedPreset(std::string_view s) {
  const std::string l = lower(s);
  if (l == "flax" || l == "flax_delayed") return DelayedPreset::Flax;
  if (l == "te" || l == "te_delayed" || l == "transformer_engine") return DelayedPreset::TE;
  if (l == "te_jax" || l == "te_jax_delayed") return DelayedPreset::TEJax;
  return std::nullopt;
}

std::optional<AmaxAlgo> parseAmaxAlgo(std::string_view s) {
  const std::string l = lower(s);
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
  const float h0 = hist_[0];
  hist_[0] = h0 == 0.0f ? amax : maxNaN(h0, amax);
}

DelayedUpdate DelayedScaling::update() {
  if (cfg_.preset == DelayedPreset::Flax)
    throw std::logic_error("DelayedScaling::update(): Flax updates with the tensor's amax; use update(amax)");
  DelayedUpdate u;
  const float cur = hist_[0];
  u.amax = cur;
  u.scale_before = scale_;
  u.scale_used = scale_;
  const bool jax = cfg_.preset == DelayedPreset::TEJax;
  float window = 0.0f;
  if (cur != 0.0f || jax) { // PyTorch fused: "module did not run" → no roll (TE PR #825); JAX always rolls
    window = cur;
    for (std::size_t i = 1; i < hist_.size(); ++i) window = maxNaN(window, hist_[i]);
    rollLeft(hist_);
    hist_[0] = 0.0f; // staging slot cleared
    u.rolled = true;
  } else {
    u.rolled = false;
  }
  const float amax = cfg_.algo == AmaxAlgo::Max ? window : cur;
  u.window_amax = amax;
  const float scaled_max = fp8_max_ * std::ldexp(1.0f, -cfg_.margin);
  if (std::isfinite(amax) && amax > 0.0f) {
    float s = jax ? (fp8_max_ / amax) / std::ldexp(1.0f, cfg_.margin) // JAX: no clamp
                  : scaled_max / amax;                                // IEEE float32 division
    if (std::isinf(s) && !jax) {
      s = std::numeric_limits<float>::max(); // TE PR #786
      u.clamped = true;
    }
    scale_ = s;
  } else {
    u.kept_previous = true;
  }
  fillConventions(u);
  ++steps_;
  last_ = u;
  return u;
}

DelayedUpdate DelayedScaling::updateFlax(float amax) {
  DelayedUpdate u;
  u.amax = amax;
  u.scale_before = scale_;
  float window = hist_[0];
  for (std::size_t i = 1; i < hist_.size(); ++i) window = maxNaN(window, hist_[i]); // jnp.max
  u.window_amax = window;
  const FlaxScale fs = flaxComputeScale(window, scale_, fp8_max_, cfg_.margin);
  u.kept_previous = fs.kept_previous;
  rollLeft(hist_);
  hist_[0] = amax;
  scale_ = fs.dequant;
  u.scale_used = scale_;
  u.rolled = true;
  fillConventions(u);
  ++steps_;
  last_ = u;
  return u;
}

DelayedUpdate DelayedScaling::update(float amax) {
  if (cfg_.preset == DelayedPreset::Flax) return updateFlax(amax);
  if (cfg_.preset == DelayedPreset::TEJax) {
    hist_[0] = amax; // DelayedScaleQuantizer.update writes the amax into slot 0
    return update();
  }
  record(amax);
  return update();
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
      r.hist_[i] = how == MetaCombine::Max ? maxNaN(r.hist_[i], o.hist_[i]) : r.hist_[i] + o.hist_[i];
    r.scale_ = how == MetaCombine::Max ? maxNaN(r.scale_, o.scale_) : r.scale_ + o.scale_;
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

// FP8 Lab — shared FP8 metadata combined by max or by sum (shared_metadata.h).
#include "teaching/shared_metadata.h"

#include "metrics/error_metrics.h"
#include "scaling/delayed_scaling.h"
#include "teaching/scale_determinism.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fp8lab {

std::vector<SharedMetaStep> simulateSharedMeta(const SharedMetaConfig& cfg) {
  if (cfg.use_amax.empty()) throw std::invalid_argument("shared metadata: at least one branch is needed");
  for (float a : cfg.use_amax)
    if (!std::isfinite(a) || !(a > 0.0f))
      throw std::invalid_argument("shared metadata: every branch amax must be finite and > 0");
  if (cfg.history_len < 1 || cfg.steps < 1 || cfg.elements < 1 || !cfg.format || cfg.format->bits() > 8)
    throw std::invalid_argument("shared metadata: history length, steps and elements must be >= 1 and the format "
                                "at most 8 bits, got history " +
                                std::to_string(cfg.history_len) + ", steps " + std::to_string(cfg.steps));
  DelayedScalingConfig dc;
  dc.preset = DelayedPreset::Flax;
  dc.history_len = cfg.history_len;
  std::array<DelayedScaling, 2> state = {DelayedScaling(*cfg.format, dc), DelayedScaling(*cfg.format, dc)};
  std::vector<std::vector<float>> tensors;
  std::vector<std::vector<double>> as_double;
  for (size_t i = 0; i < cfg.use_amax.size(); ++i) {
    tensors.push_back(tensorWithAmax(cfg.use_amax[i], cfg.elements, cfg.seed + i));
    as_double.emplace_back(tensors.back().begin(), tensors.back().end());
  }
  std::vector<SharedMetaStep> steps;
  for (int t = 0; t < cfg.steps; ++t) {
    SharedMetaStep s;
    s.step = t;
    for (int c = 0; c < 2; ++c) {
      std::vector<DelayedScaling> uses;
      double signal = 0, noise = 0;
      int64_t flushed = 0, nonzero = 0, saturated = 0;
      for (size_t i = 0; i < tensors.size(); ++i) {
        DelayedScaling use = state[size_t(c)];
        DelayedUpdate u;
        const QuantizedTensor q = use.quantizeStep(tensors[i].data(), 1, cfg.elements, &u);
        s.scale_used[size_t(c)] = u.scale_used;
        s.window_amax[size_t(c)] = u.window_amax;
        const std::vector<float> dq = q.dequantize();
        for (int64_t k = 0; k < cfg.elements; ++k) {
          const double r = as_double[i][size_t(k)], e = double(dq[size_t(k)]) - r;
          signal += r * r;
          noise += std::isfinite(e) ? e * e : std::numeric_limits<double>::infinity();
        }
        flushed += q.stats.underflow;
        nonzero += q.stats.elements - q.stats.zero_inputs;
        saturated += q.stats.saturated;
        uses.push_back(std::move(use));
      }
      state[size_t(c)] = DelayedScaling::combineUses(uses, c == 0 ? MetaCombine::Max : MetaCombine::Sum);
      s.scale[size_t(c)] = state[size_t(c)].scale();
      s.history[size_t(c)] = state[size_t(c)].historyRaw();
      s.sqnr_db[size_t(c)] = noise == 0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(signal / noise);
      s.flushed[size_t(c)] = nonzero > 0 ? double(flushed) / double(nonzero) : 0.0;
      s.saturated[size_t(c)] = double(saturated) / double(cfg.elements * int64_t(tensors.size()));
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

} // namespace fp8lab

// FP8 Lab — optimizers (see optimizer.h).
#include "training/optimizer.h"

#include <cmath>
#include <numbers>

namespace fp8lab {

const char* toString(OptimizerKind k) {
  return k == OptimizerKind::Sgd ? "sgd" : "adam";
}

void Optimizer::step(const std::vector<ParamRef>& params, float learning_rate) {
  ++t_;
  if (cfg_.kind == OptimizerKind::Sgd) {
    const float mu = cfg_.momentum, wd = cfg_.weight_decay;
    for (const ParamRef& pr : params) {
      std::vector<float>& p = *pr.value;
      const std::vector<float>& g = *pr.grad;
      std::vector<float>& m = *pr.m;
      const float d = pr.decay ? wd : 0.0f;
      for (size_t i = 0; i < p.size(); ++i) {
        const float gi = g[i] + d * p[i];
        m[i] = mu * m[i] + gi;
        p[i] -= learning_rate * m[i];
      }
    }
    return;
  }
  const double bc1 = 1.0 - std::pow(static_cast<double>(cfg_.beta1), static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(static_cast<double>(cfg_.beta2), static_cast<double>(t_));
  const float step_size = static_cast<float>(learning_rate / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float b1 = cfg_.beta1, b2 = cfg_.beta2, eps = cfg_.epsilon;
  for (const ParamRef& pr : params) {
    std::vector<float>& p = *pr.value;
    const std::vector<float>& gr = *pr.grad;
    std::vector<float>& m = *pr.m;
    std::vector<float>& v = *pr.v;
    const float decay = pr.decay && cfg_.weight_decay > 0 ? learning_rate * cfg_.weight_decay : 0.0f;
    for (size_t i = 0; i < p.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * gr[i];
      v[i] = b2 * v[i] + (1 - b2) * gr[i] * gr[i];
      if (decay != 0.0f) p[i] -= decay * p[i];
      p[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
    }
  }
}

double clipGradNorm(const std::vector<ParamRef>& params, double max_norm) {
  double s = 0;
  for (const ParamRef& pr : params)
    for (float g : *pr.grad) s += double(g) * double(g);
  const double norm = std::sqrt(s);
  if (max_norm > 0 && norm > max_norm && std::isfinite(norm)) {
    const float k = static_cast<float>(max_norm / norm);
    for (const ParamRef& pr : params)
      for (float& g : *pr.grad) g *= k;
  }
  return norm;
}

float scheduledLearningRate(float lr, int64_t step, int64_t total, int64_t warmup, double min_ratio) {
  if (warmup > 0 && step < warmup) return static_cast<float>(double(lr) * double(step + 1) / double(warmup));
  if (min_ratio >= 1.0 || total <= warmup + 1) return lr;
  const double t = std::min(1.0, double(step - warmup) / double(total - warmup - 1));
  const double c = 0.5 * (1.0 + std::cos(std::numbers::pi * t));
  return static_cast<float>(double(lr) * (min_ratio + (1.0 - min_ratio) * c));
}

} // namespace fp8lab

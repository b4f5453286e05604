// FP8 Lab — evaluation orders of a per-tensor scale (scale_determinism.h).
//
// Compiled with -ffp-contract=off (core/CMakeLists.txt): every multiply here is rounded on its
// own unless the code calls std::fma, so each evaluation is the operation sequence it names.
#include "teaching/scale_determinism.h"

#include "common/worker_pool.h"
#include "gemm/random_matrix.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>

namespace fp8lab {

const char* toString(ScaleEvaluation e) {
  switch (e) {
  case ScaleEvaluation::Float32Divide:
    return "float32 division";
  case ScaleEvaluation::Float64Divide:
    return "float64 division";
  case ScaleEvaluation::ReciprocalMultiply:
    return "reciprocal \u00d7 max";
  case ScaleEvaluation::NewtonFma:
    return "Newton step (FMA)";
  }
  return "?";
}

const char* sourceOf(ScaleEvaluation e) {
  switch (e) {
  case ScaleEvaluation::Float32Divide:
    return "eager PyTorch on float32 tensors; Transformer Engine compute_scale_from_amax";
  case ScaleEvaluation::Float64Divide:
    return "torchao amax_to_scale and nanochat _to_fp8: amax.to(float64), divide, .to(float32)";
  case ScaleEvaluation::ReciprocalMultiply:
    return "torch.compile (Inductor) rewrites c / x as c * reciprocal(x) (pytorch/pytorch#141753)";
  case ScaleEvaluation::NewtonFma:
    return "a software division: float32 reciprocal, then one Newton correction in two FMAs";
  }
  return "?";
}

float evaluateQuantScale(float amax, float fp8_max, ScaleEvaluation how) {
  switch (how) {
  case ScaleEvaluation::Float32Divide:
    return fp8_max / amax;
  case ScaleEvaluation::Float64Divide:
    return static_cast<float>(static_cast<double>(fp8_max) / static_cast<double>(amax));
  case ScaleEvaluation::ReciprocalMultiply: {
    const float r = 1.0f / amax;
    return fp8_max * r;
  }
  case ScaleEvaluation::NewtonFma: {
    const float r = 1.0f / amax;
    const float q = fp8_max * r;
    const float e = std::fma(-amax, q, fp8_max);
    return std::fma(e, r, q);
  }
  }
  return 0.0f;
}

namespace {

/// Magnitude index of a code: the code without its sign bit (positive codes are ordered by value
/// in every ≤ 8-bit format with a sign).
uint32_t magnitude(const Format& f, uint32_t code) {
  return f.spec().has_sign ? code & (f.codeMask() >> 1) : code;
}

uint32_t codeOf(const Format& f, float x, float s) {
  const float y = x * s;
  return f.encode(static_cast<double>(y));
}

/// Smallest positive float32 bit pattern b ≤ top with magnitude(code(x(b)·s)) ≥ c; top + 1 when none.
uint32_t firstReaching(const Format& f, float s, uint32_t c, uint32_t top) {
  uint32_t lo = 1, hi = top + 1; // answer in [lo, hi]
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (magnitude(f, codeOf(f, std::bit_cast<float>(mid), s)) >= c)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

void checkArgs(float amax, const Format& fmt) {
  if (fmt.bits() > 8) throw std::invalid_argument("scale determinism: " + fmt.name() + " is wider than 8 bits");
  if (!std::isfinite(amax) || !(amax > 0.0f))
    throw std::invalid_argument("scale determinism: amax must be finite and > 0");
}

} // namespace

bool CodeFlips::flips(float x) const {
  const float a = std::fabs(x);
  for (size_t i = 0; i < lo.size(); ++i)
    if (a >= lo[i] && a < hi[i]) return true;
  return false;
}

CodeFlips codeFlips(float amax, float s_a, float s_b, const Format& fmt) {
  checkArgs(amax, fmt);
  for (float s : {s_a, s_b})
    if (!std::isfinite(s) || !(s > 0.0f)) throw std::invalid_argument("scale determinism: scales must be finite > 0");
  CodeFlips r;
  const uint32_t top = std::bit_cast<uint32_t>(amax);
  r.candidates = top; // positive float32 patterns 1 .. top
  if (s_a == s_b) return r;
  const float s_lo = std::min(s_a, s_b), s_hi = std::max(s_a, s_b);
  const uint32_t max_mag = magnitude(fmt, codeOf(fmt, amax, s_hi));
  // For each code c: x ≥ X_hi(c) reaches c under the larger scale, x ≥ X_lo(c) under the smaller;
  // the x in [X_hi(c), X_lo(c)) have a code ≥ c under one scale and < c under the other.
  for (uint32_t c = 1; c <= max_mag; ++c) {
    const uint32_t from = firstReaching(fmt, s_hi, c, top);
    const uint32_t to = firstReaching(fmt, s_lo, c, top);
    if (from >= to) continue;
    const float lo = std::bit_cast<float>(from);
    // `to` may be top + 1 (the smaller scale never reaches c): the interval ends after amax.
    const float hi = to > top ? std::nextafter(amax, INFINITY) : std::bit_cast<float>(to);
    if (!r.lo.empty() && std::bit_cast<uint32_t>(r.hi.back()) >= from) {
      r.hi.back() = std::max(r.hi.back(), hi);
    } else {
      r.lo.push_back(lo);
      r.hi.push_back(hi);
    }
  }
  for (size_t i = 0; i < r.lo.size(); ++i)
    r.count += int64_t(std::bit_cast<uint32_t>(r.hi[i])) - int64_t(std::bit_cast<uint32_t>(r.lo[i]));
  if (!r.lo.empty()) {
    r.example = std::bit_cast<float>(std::bit_cast<uint32_t>(r.hi.back()) - 1);
    r.code_a = codeOf(fmt, r.example, s_a);
    r.code_b = codeOf(fmt, r.example, s_b);
    r.scaled_a = r.example * s_a;
    r.scaled_b = r.example * s_b;
    r.boundary = (fmt.decode(r.code_a) + fmt.decode(r.code_b)) / 2.0;
  }
  return r;
}

ScaleCase scaleCase(float amax, const Format& fmt) {
  checkArgs(amax, fmt);
  ScaleCase c;
  c.amax = amax;
  c.fp8_max = static_cast<float>(fmt.maxFinite());
  c.quotient = static_cast<double>(c.fp8_max) / static_cast<double>(amax);
  const float ref = evaluateQuantScale(amax, c.fp8_max, ScaleEvaluation::Float32Divide);
  for (int i = 0; i < kScaleEvaluationCount; ++i) {
    c.scale[size_t(i)] = evaluateQuantScale(amax, c.fp8_max, kScaleEvaluations[size_t(i)]);
    c.ulps[size_t(i)] = int64_t(std::bit_cast<uint32_t>(c.scale[size_t(i)])) - int64_t(std::bit_cast<uint32_t>(ref));
    if (c.scale[size_t(i)] != ref) c.flips[size_t(i)] = codeFlips(amax, ref, c.scale[size_t(i)], fmt);
  }
  return c;
}

BinadeSurvey surveyBinade(float fp8_max, int exponent, int threads, const ProgressFn& progress) {
  if (exponent < -100 || exponent > 100)
    throw std::invalid_argument("surveyBinade: exponent " + std::to_string(exponent) + " is outside [-100, 100]");
  BinadeSurvey s;
  s.exponent = exponent;
  s.fp8_max = fp8_max;
  s.amaxes = int64_t(1) << 23;
  const uint32_t base = std::bit_cast<uint32_t>(std::ldexp(1.0f, exponent));
  constexpr uint32_t kChunk = 1u << 16;
  const uint32_t chunks = (1u << 23) / kChunk;
  std::atomic<uint32_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  struct Part {
    std::array<int64_t, kScaleEvaluationCount> differ{};
    std::array<uint32_t, kScaleEvaluationCount> first{};
  };
  const int workers =
      std::max(1, threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  std::vector<Part> parts(static_cast<size_t>(workers));
  for (auto& p : parts) p.first.fill(UINT32_MAX);
  runOnWorkers(workers, [&](int w) {
    Part& p = parts[size_t(w)];
    for (uint32_t ch; !stop && (ch = next++) < chunks;) {
      for (uint32_t m = ch * kChunk; m < (ch + 1) * kChunk; ++m) {
        const float amax = std::bit_cast<float>(base + m);
        const float ref = fp8_max / amax;
        for (int i = 1; i < kScaleEvaluationCount; ++i)
          if (evaluateQuantScale(amax, fp8_max, kScaleEvaluations[size_t(i)]) != ref) {
            ++p.differ[size_t(i)];
            p.first[size_t(i)] = std::min(p.first[size_t(i)], m);
          }
      }
      const uint32_t d = ++done;
      if (w == 0 && progress && !progress(double(d) / chunks, "surveying the binade")) stop = true;
    }
  });
  if (stop) throw Cancelled();
  for (const Part& p : parts)
    for (int i = 0; i < kScaleEvaluationCount; ++i) {
      s.differ[size_t(i)] += p.differ[size_t(i)];
      if (p.first[size_t(i)] != UINT32_MAX) {
        const float a = std::bit_cast<float>(base + p.first[size_t(i)]);
        s.first[size_t(i)] = s.first[size_t(i)] == 0.0f ? a : std::min(s.first[size_t(i)], a);
      }
    }
  return s;
}

float nextDifferingAmax(float from, float fp8_max, ScaleEvaluation how, int64_t limit) {
  float a = from;
  for (int64_t i = 0; i < limit; ++i) {
    a = std::nextafter(a, INFINITY);
    if (!std::isfinite(a)) return 0.0f;
    if (evaluateQuantScale(a, fp8_max, how) != fp8_max / a) return a;
  }
  return 0.0f;
}

std::vector<float> tensorWithAmax(float amax, int64_t n, uint64_t seed) {
  if (n < 1) throw std::invalid_argument("tensorWithAmax: n must be >= 1");
  if (!std::isfinite(amax) || !(amax > 0.0f)) throw std::invalid_argument("tensorWithAmax: amax must be finite > 0");
  std::vector<float> x = randomMatrix(1, n, seed, {}, 0, 1);
  double zmax = 0;
  for (float v : x) zmax = std::max(zmax, double(std::fabs(v)));
  const double k = zmax > 0 ? double(amax) / zmax : 0.0;
  for (float& v : x) v = std::clamp(static_cast<float>(double(v) * k), -amax, amax);
  x[0] = amax;
  return x;
}

} // namespace fp8lab

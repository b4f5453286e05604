// FP8 Lab — the first non-finite value of a training run (see nonfinite.h).
#include "training/nonfinite.h"

#include "scaling/scaling.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace fp8lab {

const char* toString(NonFinitePolicy p) {
  switch (p) {
  case NonFinitePolicy::Stop:
    return "stop";
  case NonFinitePolicy::Continue:
    return "continue";
  case NonFinitePolicy::Off:
    return "off";
  }
  return "?";
}

bool parseNonFinitePolicy(const std::string& s, NonFinitePolicy* out) {
  for (auto p : {NonFinitePolicy::Stop, NonFinitePolicy::Continue, NonFinitePolicy::Off})
    if (s == toString(p)) {
      *out = p;
      return true;
    }
  return false;
}

bool allFinite(const float* x, size_t n) {
  // Finite exactly when no element is NaN and the largest magnitude is below Inf: scaling.h's amax
  // (its vector kernels at the CPU level) without NaNs ignored is NaN or Inf otherwise.
  return std::isfinite(amaxOf(x, n, /*ignore_nan=*/false));
}

int64_t firstNonFinite(const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return static_cast<int64_t>(i);
  return -1;
}

std::vector<DotTerm> largestDotTerms(const float* a, int64_t a_stride, const float* b, int64_t b_stride, int64_t k_len,
                                     int top) {
  std::vector<DotTerm> t(static_cast<size_t>(std::max<int64_t>(k_len, 0)));
  for (int64_t k = 0; k < k_len; ++k) {
    const float av = a[k * a_stride], bv = b[k * b_stride];
    t[static_cast<size_t>(k)] = {k, av, bv, static_cast<double>(av) * static_cast<double>(bv)};
  }
  // NaN first, then |product| descending, then k ascending: a strict weak order.
  auto key = [](const DotTerm& d) { return std::isnan(d.product) ? INFINITY : std::fabs(d.product); };
  auto before = [&](const DotTerm& x, const DotTerm& y) {
    const double kx = key(x), ky = key(y);
    const bool nx = std::isnan(x.product), ny = std::isnan(y.product);
    if (nx != ny) return nx;
    if (kx != ky) return kx > ky;
    return x.k < y.k;
  };
  const size_t n = std::min(t.size(), static_cast<size_t>(std::max(top, 0)));
  std::partial_sort(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(n), t.end(), before);
  t.resize(n);
  return t;
}

std::string floatText(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string NonFiniteRecord::describe() const {
  if (!found) return "no non-finite value";
  std::string s = "step ";
  s += std::to_string(step);
  s += ", layer ";
  s += layer;
  s += ", ";
  s += tensor;
  if (kind == "gemm_output") s += " D";
  s += '[';
  s += std::to_string(row);
  s += ',';
  s += std::to_string(col);
  s += "] = ";
  s += floatText(value);
  if (kind == "gemm_output" && !terms.empty()) {
    const DotTerm& d = terms.front();
    char buf[160];
    std::snprintf(buf, sizeof buf, " (K = %lld; largest term k=%lld: %.6g × %.6g = %.6g)",
                  static_cast<long long>(k_len), static_cast<long long>(d.k), static_cast<double>(d.a),
                  static_cast<double>(d.b), d.product);
    s += buf;
  } else if (!inputs.empty()) {
    s += " (from";
    for (size_t i = 0; i < inputs.size(); ++i) {
      s += i ? ", " : " ";
      s += i < input_names.size() ? input_names[i] : std::string("in");
      s += " = ";
      s += floatText(inputs[i]);
    }
    s += ")";
  }
  return s;
}

} // namespace fp8lab

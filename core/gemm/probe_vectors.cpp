// FP8 Lab — probe inputs that tell accumulation models apart (probe_vectors.h).
#include "gemm/probe_vectors.h"

#include "common/worker_pool.h"
#include "formats/format.h"
#include "gemm/random_matrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>

namespace fp8lab {

namespace {

/// The finite, non-zero codes of f.
std::vector<uint8_t> finiteCodes(const Format& f) {
  std::vector<uint8_t> v;
  for (uint32_t c = 0; c < f.codeCount(); ++c) {
    const double x = f.decode(c);
    if (std::isfinite(x) && x != 0) v.push_back(static_cast<uint8_t>(c));
  }
  return v;
}

QuantizedTensor randomCodes(int64_t rows, int64_t cols, const Format& f, const std::vector<uint8_t>& codes,
                            double zero_share, uint64_t seed, uint64_t stream) {
  QuantizedTensor q;
  q.rows = rows;
  q.cols = cols;
  q.format = &f;
  q.block = {rows, cols};
  q.dequant_scales = {1.0f};
  q.codes.resize(static_cast<size_t>(rows * cols));
  const uint64_t zero_below = static_cast<uint64_t>(zero_share * 18446744073709551616.0);
  for (size_t i = 0; i < q.codes.size(); ++i) {
    const uint64_t w = randomWord(seed, stream, i);
    q.codes[i] = w < zero_below ? 0 : codes[static_cast<size_t>((w >> 11) % codes.size())];
  }
  return q;
}

} // namespace

GemmOptions probeGemmOptions(const ProbeVectors& p, const GemmOptions& base) {
  GemmOptions o = base;
  o.alpha = 1.0f;
  o.beta = 1.0f;
  o.c = std::make_shared<const std::vector<float>>(p.c);
  o.bias = nullptr;
  o.output = OutputType::FP32;
  o.output_quant_scale = 1.0f;
  return o;
}

ProbeVectors makeProbeVectors(const ProbeOptions& opt, const ProgressFn& progress) {
  const Format* f = Format::byName(opt.format);
  if (!f || (f->name() != "E4M3FN" && f->name() != "E5M2"))
    throw std::invalid_argument("probe vectors: format '" + opt.format + "' is not an FP8 MMA input (E4M3FN, E5M2)");
  if (opt.m < 1 || opt.n < 1 || opt.k < 32)
    throw std::invalid_argument("probe vectors: need m, n ≥ 1 and k ≥ 32 (one MMA group), got " +
                                std::to_string(opt.m) + " x " + std::to_string(opt.n) + " x " + std::to_string(opt.k));
  if (!(opt.zero_share >= 0 && opt.zero_share < 1))
    throw std::invalid_argument("probe vectors: zero_share must be in [0, 1)");
  const std::vector<uint8_t> codes = finiteCodes(*f);
  ProbeVectors p;
  p.a = randomCodes(opt.m, opt.k, *f, codes, opt.zero_share, opt.seed, 1);
  p.b = randomCodes(opt.k, opt.n, *f, codes, opt.zero_share, opt.seed, 2);
  // C: a decoded code times 2^j, j uniform in [0, 8): values across the products' range, with
  // bits below every group's grid.
  p.c.resize(static_cast<size_t>(opt.m * opt.n));
  for (size_t i = 0; i < p.c.size(); ++i) {
    const uint64_t w = randomWord(opt.seed, 3, i);
    const double v = f->decode(codes[static_cast<size_t>((w >> 11) % codes.size())]);
    p.c[i] = static_cast<float>(std::ldexp(v * (1.0 + std::ldexp(double((w >> 3) & 0xFF), -8 - 8)), int(w & 7)));
  }
  if (!opt.check) return p;

  // Run every candidate and group the outputs.
  const GemmOptions base = probeGemmOptions(p, GemmOptions{});
  size_t n_ref = 0;
  const std::vector<AccumulationModel> cands = fitCandidates(FitGrid{}, base, p.a, p.b, &n_ref);
  std::vector<std::vector<float>> outs(cands.size());
  const int threads = resolveThreads(opt.threads);
  parallelJobs(static_cast<int64_t>(cands.size()), threads, progress, "probe vectors: running the candidate models",
               0.0, 1.0, [&](int64_t i) {
                 GemmOptions o = cands[static_cast<size_t>(i)].options;
                 o.threads = 1;
                 outs[static_cast<size_t>(i)] = makeCpuGemmBackend()->run(p.a, p.b, o).d;
               });
  auto bitsKey = [](const std::vector<float>& d) {
    std::string k(d.size() * 4, '\0');
    for (size_t i = 0; i < d.size(); ++i) {
      uint32_t u;
      std::memcpy(&u, &d[i], 4);
      if (std::isnan(d[i])) u = 0x7FC00000u; // every NaN alike
      std::memcpy(&k[i * 4], &u, 4);
    }
    return k;
  };
  std::map<std::string, std::vector<size_t>> classes;
  for (size_t i = 0; i < cands.size(); ++i) classes[bitsKey(outs[i])].push_back(i);
  p.candidates = static_cast<int64_t>(cands.size());
  p.distinct = static_cast<int64_t>(classes.size());
  for (const auto& [key, members] : classes) {
    std::vector<std::string> refs;
    for (size_t i : members)
      if (i < n_ref) refs.push_back(cands[i].preset.empty() ? cands[i].name() : cands[i].preset);
    if (refs.size() < 2) continue;
    std::string t;
    for (const auto& r : refs) t += (t.empty() ? "" : " = ") + r;
    p.reference_ties.push_back(t);
  }
  p.summary = std::to_string(opt.m) + " x " + std::to_string(opt.n) + " x " + std::to_string(opt.k) + " " + f->name() +
              " probes: " + std::to_string(p.candidates) + " candidate models, " + std::to_string(p.distinct) +
              " distinct outputs";
  p.summary += p.reference_ties.empty() ? "; every reference model and preset gives its own output"
                                        : "; reference models with identical rules or outputs: ";
  for (size_t i = 0; i < p.reference_ties.size(); ++i) p.summary += (i ? "; " : "") + p.reference_ties[i];
  return p;
}

} // namespace fp8lab

// FP8 Lab — the Bigram-Backcopy task (see bigram_backcopy.h).
#include "training/bigram_backcopy.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace fp8lab {

bool BigramBackcopyTask::isTrigger(uint8_t b) const {
  return std::find(triggers.begin(), triggers.end(), b) != triggers.end();
}

BigramBackcopyTask bigramBackcopyTask(const std::vector<uint8_t>& text, int triggers) {
  BigramBackcopyTask t;
  t.bigram.assign(256, {});
  uint8_t prev = 0;
  bool have_prev = false;
  for (uint8_t b : text) {
    if (b == kBosToken) {
      have_prev = false;
      continue;
    }
    ++t.unigram[b];
    if (have_prev) ++t.bigram[prev][b];
    prev = b;
    have_prev = true;
  }
  std::vector<int> order;
  for (int b = 0; b < 256; ++b)
    if (t.unigram[size_t(b)] > 0) order.push_back(b);
  const int64_t total = std::accumulate(t.unigram.begin(), t.unigram.end(), int64_t(0));
  if (total < 2) throw std::invalid_argument("the Bigram-Backcopy task needs a source text of at least 2 bytes");
  if (triggers < 1 || triggers >= int(order.size()))
    throw std::invalid_argument("triggers must be in 1.." + std::to_string(order.size() - 1) + " (fewer than the " +
                                std::to_string(order.size()) + " distinct bytes of the source text)");
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return t.unigram[size_t(a)] > t.unigram[size_t(b)]; });
  for (int i = 0; i < triggers; ++i) t.triggers.push_back(uint8_t(order[size_t(i)]));
  t.first = t.unigram;
  for (uint8_t b : t.triggers) t.first[b] = 0;
  return t;
}

namespace {

/// The first index whose running sum of `counts` exceeds rng.uniformInt(Σ counts); Σ > 0.
uint8_t draw(const std::array<int64_t, 256>& counts, int64_t sum, TrainingRng& rng) {
  const int64_t r = int64_t(rng.uniformInt(uint64_t(sum)));
  int64_t run = 0;
  for (int b = 0; b < 256; ++b) {
    run += counts[size_t(b)];
    if (run > r) return uint8_t(b);
  }
  return 255; // not reached: run ends at sum > r
}

} // namespace

std::vector<uint8_t> bigramBackcopySequence(const BigramBackcopyTask& task, int64_t length, TrainingRng& rng) {
  const int64_t uni = std::accumulate(task.unigram.begin(), task.unigram.end(), int64_t(0));
  std::vector<uint8_t> s;
  s.reserve(size_t(std::max<int64_t>(length, 0)));
  s.push_back(kBosToken);
  if (length < 2) return s;
  s.push_back(draw(task.first, std::accumulate(task.first.begin(), task.first.end(), int64_t(0)), rng));
  while (int64_t(s.size()) < length) {
    const size_t i = s.size() - 1; // x_i, 1-based after the BOS
    const uint8_t x = s[i];
    if (i >= 2 && task.isTrigger(x)) {
      s.push_back(s[i - 1]);
      continue;
    }
    const auto& row = task.bigram[x];
    const int64_t sum = std::accumulate(row.begin(), row.end(), int64_t(0));
    s.push_back(sum > 0 ? draw(row, sum, rng) : draw(task.unigram, uni, rng));
  }
  return s;
}

TextCorpus bigramBackcopyCorpus(const BigramBackcopyTask& task, int64_t sequences, int64_t length, uint64_t seed,
                                double val_fraction, std::string source) {
  TrainingRng rng(seed);
  std::vector<std::vector<uint8_t>> docs;
  docs.reserve(size_t(sequences));
  for (int64_t i = 0; i < sequences; ++i) {
    std::vector<uint8_t> s = bigramBackcopySequence(task, length, rng);
    docs.emplace_back(s.begin() + 1, s.end()); // makeDocumentCorpus puts the BOS back
  }
  return makeDocumentCorpus(docs, std::move(source), val_fraction);
}

} // namespace fp8lab

// FP8 Lab — the language model's text (see text_corpus.h).
#include "training/text_corpus.h"

#include "training/bigram_backcopy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace fp8lab {

namespace fs = std::filesystem;

TextCorpus makeCorpus(std::vector<uint8_t> bytes, std::string source, double val_fraction) {
  TextCorpus c;
  c.source = std::move(source);
  c.bytes = int64_t(bytes.size());
  const double f = std::clamp(val_fraction, 0.0, 0.9);
  const size_t nval = static_cast<size_t>(std::llround(double(bytes.size()) * f));
  const size_t ntrain = bytes.size() - nval;
  c.train.assign(bytes.begin(), bytes.begin() + std::ptrdiff_t(ntrain));
  c.val.assign(bytes.begin() + std::ptrdiff_t(ntrain), bytes.end());
  std::vector<int64_t> counts(256, 0);
  for (uint8_t b : c.train) ++counts[b];
  double h = 0;
  for (int64_t k : counts)
    if (k > 0) {
      const double p = double(k) / double(c.train.size());
      h -= p * std::log2(p);
    }
  c.unigram_bits = h;
  return c;
}

std::vector<std::vector<uint8_t>> splitDocuments(const std::vector<uint8_t>& text) {
  std::vector<std::vector<uint8_t>> docs;
  std::vector<uint8_t> cur;
  size_t i = 0;
  while (i < text.size()) {
    size_t e = i;
    while (e < text.size() && text[e] != '\n') ++e;
    const bool separator = e - i == 1 && text[i] == '%';
    if (separator) {
      if (!cur.empty()) docs.push_back(std::move(cur));
      cur.clear();
    } else {
      for (size_t k = i; k < e; ++k)
        if (text[k] != kBosToken) cur.push_back(text[k]);
      cur.push_back('\n');
    }
    i = e + 1;
  }
  if (!cur.empty()) docs.push_back(std::move(cur));
  return docs;
}

TextCorpus makeDocumentCorpus(const std::vector<std::vector<uint8_t>>& docs, std::string source, double val_fraction) {
  const int64_t n = int64_t(docs.size());
  const double f = std::clamp(val_fraction, 0.0, 0.9);
  const int64_t ntrain = std::clamp<int64_t>(std::llround(double(n) * (1.0 - f)), 1, std::max<int64_t>(n - 1, 1));
  TextCorpus c;
  c.source = std::move(source);
  for (int64_t d = 0; d < n; ++d) {
    std::vector<uint8_t>& split = d < ntrain ? c.train : c.val;
    (d < ntrain ? c.train_docs : c.val_docs).push_back(int64_t(split.size()));
    split.push_back(kBosToken);
    split.insert(split.end(), docs[size_t(d)].begin(), docs[size_t(d)].end());
  }
  c.bytes = int64_t(c.train.size() + c.val.size());
  c.unigram_bits = makeCorpus(c.train, {}, 0.0).unigram_bits;
  return c;
}

std::vector<int64_t> documentWindowStarts(const std::vector<int64_t>& docs, int64_t split_size, int64_t window) {
  std::vector<int64_t> s;
  for (int64_t d : docs)
    if (d + window <= split_size) s.push_back(d);
  return s;
}

int64_t drawWindowStart(const std::vector<int64_t>& starts, int64_t split_size, int64_t window, TrainingRng& rng) {
  if (starts.empty()) return int64_t(rng.uniformInt(uint64_t(split_size - window + 1)));
  return starts[size_t(rng.uniformInt(starts.size()))];
}

std::optional<TextCorpus> loadFortunes(std::string* error, const std::string& dir, double val_fraction,
                                       bool documents) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (error)
      *error = "the text corpus is missing: " + dir +
               " does not exist; install the Debian package fortunes (apt-get install fortunes, or "
               "installers/debian/install-deps.sh), or name a UTF-8 file with \"data\": {\"text\": \"PATH\"}";
    return std::nullopt;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec) || e.is_symlink(ec)) continue;
    if (e.path().has_extension()) continue; // .dat indexes, .u8 links
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<uint8_t> bytes;
  std::vector<std::vector<uint8_t>> docs;
  for (const fs::path& p : files) {
    std::ifstream in(p, std::ios::binary);
    if (documents) {
      const std::vector<uint8_t> text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (std::vector<uint8_t>& d : splitDocuments(text)) {
        bytes.insert(bytes.end(), d.begin(), d.end());
        docs.push_back(std::move(d));
      }
      continue;
    }
    std::string line;
    while (std::getline(in, line)) {
      if (line == "%") line.clear();
      bytes.insert(bytes.end(), line.begin(), line.end());
      bytes.push_back('\n');
    }
  }
  if (bytes.size() < 4096 || (documents && docs.size() < 2)) {
    if (error)
      *error = "the text corpus in " + dir + " holds " + std::to_string(bytes.size()) +
               " bytes of fortunes; install the Debian package fortunes";
    return std::nullopt;
  }
  std::string source = "fortunes (" + dir + ", " + std::to_string(files.size()) + " files";
  if (documents)
    return makeDocumentCorpus(docs, source + ", " + std::to_string(docs.size()) + " documents)", val_fraction);
  return makeCorpus(std::move(bytes), source + ")", val_fraction);
}

std::optional<TextCorpus> loadTextFile(const std::string& path, std::string* error, double val_fraction,
                                       int64_t min_bytes, bool documents) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (error) *error = "text file '" + path + "' does not exist";
    return std::nullopt;
  }
  if (!fs::is_regular_file(path, ec)) {
    if (error) *error = "text file '" + path + "' is not a regular file";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (error) *error = "cannot read text file '" + path + "'";
    return std::nullopt;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (documents) {
    const std::vector<std::vector<uint8_t>> docs = splitDocuments(bytes);
    if (docs.size() < 2) {
      if (error)
        *error = "text file '" + path + "' holds " + std::to_string(docs.size()) +
                 " document(s); \"documents\": true needs at least 2, separated by lines holding only \"%\"";
      return std::nullopt;
    }
    TextCorpus c = makeDocumentCorpus(docs, path, val_fraction);
    if (int64_t(c.train.size()) < min_bytes || int64_t(c.val.size()) < min_bytes) {
      if (error)
        *error = "text file '" + path + "' splits into " + std::to_string(c.train.size()) + " training and " +
                 std::to_string(c.val.size()) + " validation bytes: each split needs at least " +
                 std::to_string(min_bytes);
      return std::nullopt;
    }
    return c;
  }
  const double f = std::clamp(val_fraction, 0.0, 0.9);
  const int64_t nval = std::llround(double(bytes.size()) * f);
  const int64_t ntrain = int64_t(bytes.size()) - nval;
  if (ntrain < min_bytes || nval < min_bytes || bytes.empty()) {
    if (error)
      *error = "text file '" + path + "' holds " + std::to_string(bytes.size()) +
               " bytes: too little for a training split of at least " + std::to_string(min_bytes) +
               " bytes and a validation split of at least " + std::to_string(min_bytes) + " bytes";
    return std::nullopt;
  }
  return makeCorpus(std::move(bytes), path, val_fraction);
}

std::string TextSource::key(int64_t context) const {
  std::string k = (path.empty() ? "corpus:" + corpus : "file:" + path) + "@" + std::to_string(val_fraction);
  if (documents) k += "#documents";
  if (!task.empty())
    k += "#" + task + ":" + std::to_string(triggers) + "," + std::to_string(sequences) + "," +
         std::to_string(task_seed) + ",T" + std::to_string(context);
  return k;
}

std::optional<TextCorpus> loadTextSource(const TextSource& src, int64_t context, std::string* error) {
  const int64_t need = 2 * (context + 1);
  if (src.task.empty())
    return src.path.empty() ? loadFortunes(error, kFortunesDir, src.val_fraction, src.documents)
                            : loadTextFile(src.path, error, src.val_fraction, need, src.documents);
  if (src.task != "bigram_backcopy") {
    if (error) *error = "unknown task '" + src.task + "' (bigram_backcopy)";
    return std::nullopt;
  }
  std::optional<TextCorpus> text =
      src.path.empty() ? loadFortunes(error, kFortunesDir, 0.0) : loadTextFile(src.path, error, 0.0, 2);
  if (!text) return std::nullopt;
  try {
    const BigramBackcopyTask task = bigramBackcopyTask(text->train, src.triggers);
    std::string triggers;
    for (uint8_t b : task.triggers) triggers += (triggers.empty() ? "" : " ") + printableText({b});
    return bigramBackcopyCorpus(task, src.sequences, context + 1, src.task_seed, src.val_fraction,
                                "bigram_backcopy (" + std::to_string(src.sequences) + " sequences of " +
                                    std::to_string(context + 1) + " tokens, triggers '" + triggers + "', bigrams of " +
                                    text->source + ")");
  } catch (const std::invalid_argument& e) {
    if (error) *error = std::string("bigram_backcopy: ") + e.what();
    return std::nullopt;
  }
}

std::string printableText(const std::vector<uint8_t>& tokens) {
  std::string s;
  for (uint8_t b : tokens) {
    if (b == '\n' || b == '\t' || b >= 0x20) {
      if (b == 0x7F) {
        s += "\\x7f";
        continue;
      }
      s += char(b);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", b);
      s += buf;
    }
  }
  return s;
}

} // namespace fp8lab

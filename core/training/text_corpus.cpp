// FP8 Lab — the language model's text (see text_corpus.h).
#include "training/text_corpus.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

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

std::optional<TextCorpus> loadFortunes(std::string* error, const std::string& dir, double val_fraction) {
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
  for (const fs::path& p : files) {
    std::ifstream in(p, std::ios::binary);
    std::string line;
    while (std::getline(in, line)) {
      if (line == "%") line.clear();
      bytes.insert(bytes.end(), line.begin(), line.end());
      bytes.push_back('\n');
    }
  }
  if (bytes.size() < 4096) {
    if (error)
      *error = "the text corpus in " + dir + " holds " + std::to_string(bytes.size()) +
               " bytes of fortunes; install the Debian package fortunes";
    return std::nullopt;
  }
  return makeCorpus(std::move(bytes), "fortunes (" + dir + ", " + std::to_string(files.size()) + " files)",
                    val_fraction);
}

std::optional<TextCorpus> loadTextFile(const std::string& path, std::string* error, double val_fraction,
                                       int64_t min_bytes) {
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

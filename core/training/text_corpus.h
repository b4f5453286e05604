// FP8 Lab — the text the language model learns: a byte-level corpus with a fixed train /
// validation split.
//
// Sources:
//  - the Debian package `fortunes` (with `fortunes-min`): the plain-text fortune files under
//    /usr/share/games/fortunes (every regular file there without an extension — the ".dat" index
//    files and ".u8" links are left out), in file-name order, each "%" separator line replaced by
//    an empty line; about 2.6 MB. installers/debian/install-deps.sh installs it.
//  - any UTF-8 (or plain byte) file a user names.
// Tokens are bytes (vocabulary 256), so any file works and a character that takes two UTF-8 bytes
// is two tokens. The last `val_fraction` of the bytes (default 10 %) is the validation split,
// the rest the training split; nothing is shuffled, so the split is the same on every machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// Where the Debian package puts the fortunes.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

struct TextCorpus {
  std::string source;         ///< what was read: "fortunes (/usr/share/games/fortunes, 62 files)" or the path
  std::vector<uint8_t> train; ///< token ids (bytes)
  std::vector<uint8_t> val;
  int64_t bytes = 0; ///< total bytes read
  /// Entropy of the training split's byte frequencies, in bits per byte (the loss of a model that
  /// knows only how often each byte occurs; a language model must get well below it).
  double unigram_bits = 0;
};

/// Reads the fortunes of `dir` (kFortunesDir by default). nullopt with *error when the directory
/// is missing or holds no fortune file ("... install the Debian package fortunes").
std::optional<TextCorpus> loadFortunes(std::string* error, const std::string& dir = kFortunesDir,
                                       double val_fraction = 0.1);
/// Reads any file as bytes. nullopt with *error for a missing, unreadable or too small file (it
/// needs at least 2 × (context + 1) bytes in each split; `min_bytes` is that number).
std::optional<TextCorpus> loadTextFile(const std::string& path, std::string* error, double val_fraction = 0.1,
                                       int64_t min_bytes = 0);
/// Splits `bytes` into train and validation and fills the unigram entropy.
TextCorpus makeCorpus(std::vector<uint8_t> bytes, std::string source, double val_fraction);

/// Printable text of token ids: bytes as they are, control characters other than newline and tab
/// as "\xNN" (so a sample never writes escape sequences to a terminal).
std::string printableText(const std::vector<uint8_t>& tokens);

} // namespace fp8lab

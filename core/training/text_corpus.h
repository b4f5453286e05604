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
//
// Documents: a corpus may instead be a list of documents, each stored as the BOS token kBosToken
// followed by its bytes, concatenated. A fortune is one document (the text between two "%"
// separator lines, the separators dropped); the last `val_fraction` of the documents is the
// validation split. A window of T + 1 tokens then starts at a document's BOS (and runs on into
// the next document where the first is shorter), so the same token is first in every sequence:
// Gu et al. 2024 ("When Attention Sink Emerges", arXiv 2410.10781, §5) find that a token
// fixed at position k during pre-training always takes the sink at k; Guo et al. 2024
// ("Active-Dormant Attention Heads", arXiv 2410.13835) put a BOS token first in every sequence.
#pragma once

#include "training/random.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// Where the Debian package puts the fortunes.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

/// The beginning-of-sequence token of document corpora: byte 0x02 (ASCII STX, "start of text"),
/// which no fortune holds. A byte 0x02 inside a document's text is dropped, so the token only
/// ever marks a document's start.
inline constexpr uint8_t kBosToken = 0x02;

struct TextCorpus {
  std::string source;         ///< what was read: "fortunes (/usr/share/games/fortunes, 62 files)" or the path
  std::vector<uint8_t> train; ///< token ids (bytes)
  std::vector<uint8_t> val;
  int64_t bytes = 0; ///< total bytes read
  /// Entropy of the training split's byte frequencies, in bits per byte (the loss of a model that
  /// knows only how often each byte occurs; a language model must get well below it).
  double unigram_bits = 0;
  /// Document corpora: the offset of each document's BOS token in `train` / `val`, ascending
  /// (the first is 0). Empty for a plain byte stream.
  std::vector<int64_t> train_docs, val_docs;
  bool documents() const { return !train_docs.empty(); }
};

/// Reads the fortunes of `dir` (kFortunesDir by default). nullopt with *error when the directory
/// is missing or holds no fortune file ("... install the Debian package fortunes").
/// With `documents`, each fortune is a document (makeDocumentCorpus).
std::optional<TextCorpus> loadFortunes(std::string* error, const std::string& dir = kFortunesDir,
                                       double val_fraction = 0.1, bool documents = false);
/// Reads any file as bytes. nullopt with *error for a missing, unreadable or too small file (it
/// needs at least 2 × (context + 1) bytes in each split; `min_bytes` is that number). With
/// `documents`, the file is read as fortune files are: documents separated by lines holding only
/// "%" (splitDocuments); each split then needs at least one document.
std::optional<TextCorpus> loadTextFile(const std::string& path, std::string* error, double val_fraction = 0.1,
                                       int64_t min_bytes = 0, bool documents = false);
/// Splits `bytes` into train and validation and fills the unigram entropy.
TextCorpus makeCorpus(std::vector<uint8_t> bytes, std::string source, double val_fraction);

/// The documents of fortune-format text: the lines between "%" lines, each line ending in "\n"
/// (a last line without one gets it), empty documents (two "%" lines in a row, or a file that ends
/// in "%") left out, any kBosToken byte dropped. "ab\n%\ncd\n%\n" → {"ab\n", "cd\n"}.
std::vector<std::vector<uint8_t>> splitDocuments(const std::vector<uint8_t>& text);
/// A document corpus: every document becomes kBosToken + its bytes, the first
/// round(n · (1 − val_fraction)) documents (at least one, and at least one left) the training
/// split, the rest the validation split; train_docs / val_docs hold each document's offset. The
/// unigram entropy counts the training split, BOS tokens included. Needs at least 2 documents.
TextCorpus makeDocumentCorpus(const std::vector<std::vector<uint8_t>>& docs, std::string source, double val_fraction);
/// The window starts a document split offers for windows of `window` tokens: each document's
/// offset with offset + window ≤ split size (a window may run on into the following documents).
std::vector<int64_t> documentWindowStarts(const std::vector<int64_t>& docs, int64_t split_size, int64_t window);
/// The start of one training window of `window` tokens in a split of `split_size` tokens: with
/// `starts` empty (plain text) rng.uniformInt(split_size − window + 1), a uniform offset; else
/// starts[rng.uniformInt(starts.size())], a document drawn uniformly (its BOS first in the window).
int64_t drawWindowStart(const std::vector<int64_t>& starts, int64_t split_size, int64_t window, TrainingRng& rng);

/// Where a language model's text comes from (the run config's "data").
struct TextSource {
  std::string corpus = "fortunes"; ///< "fortunes" (the Debian package), or empty when `path` is set
  std::string path;                ///< any UTF-8 / byte file
  double val_fraction = 0.1;
  bool documents = false; ///< BOS-delimited documents ("%" lines separate them), see above
  /// "" (the text itself) or "bigram_backcopy": sequences of bigram_backcopy.h, whose statistics
  /// come from the text above.
  std::string task;
  int triggers = 3;          ///< bigram_backcopy: trigger tokens (Guo et al.'s k)
  int64_t sequences = 20000; ///< bigram_backcopy: sequences generated (train and validation)
  uint64_t task_seed = 1;    ///< bigram_backcopy: the generator's seed (the data stays fixed across run seeds)
  /// A key naming everything that makes the text (runs with equal keys share one corpus).
  std::string key(int64_t context) const;
};

/// Reads (or generates) the text of `src` for a model of `context` tokens: the corpus or file,
/// as documents when asked, and a bigram_backcopy task's sequences of context + 1 tokens. nullopt
/// with *error when the text is missing, too small (each split needs 2 × (context + 1) bytes), or
/// the task cannot be built from it.
std::optional<TextCorpus> loadTextSource(const TextSource& src, int64_t context, std::string* error);

/// Printable text of token ids: bytes as they are, control characters other than newline and tab
/// as "\xNN" (so a sample never writes escape sequences to a terminal).
std::string printableText(const std::vector<uint8_t>& tokens);

} // namespace fp8lab

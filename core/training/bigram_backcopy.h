// FP8 Lab — the Bigram-Backcopy task of Guo et al. 2024 ("Active-Dormant Attention Heads:
// Mechanistically Demystifying Extreme-Token Phenomena in LLMs", arXiv 2410.13835, §2; code:
// GuoTianYu2000/Active-Dormant-Attention, `task_name=bbm`): synthetic sequences on which 1–3 layer
// transformers grow an attention sink on the BOS token, dormant heads and a massive residual norm
// of the first token.
//
// A sequence of `length` tokens is the BOS token kBosToken followed by x_1 … x_{length−1}:
//  - x_1 is drawn from the unigram distribution of the source text's non-trigger bytes (a
//    trigger first would let a bigram-drawn trigger follow it, and the two would then copy each
//    other to the end of the sequence; with x_1 a non-trigger no two triggers are ever adjacent);
//  - x_{i+1} = x_{i−1} when x_i is a trigger token and i ≥ 2 (backcopy: the token before the
//    trigger is copied);
//  - otherwise x_{i+1} is drawn from the bigram distribution of the source text given x_i (a byte
//    never followed by another in the text draws from the unigram distribution instead).
// The triggers are the `triggers` most frequent bytes of the source text (ties: the smaller byte
// first), as Guo et al. choose them ("fixed triggers, chosen as the most frequent tokens", k = 3 in
// their runs). Their transitions are the character bigrams of a text (the tiny-Shakespeare
// set-up of Bietti et al. 2023 their code derives from); here they are the byte bigrams of the run's
// text (the fortunes by default), with kBosToken bytes left out of the counts.
//
// Every draw is an integer: with the counts c(a → b) of the text, r = rng.uniformInt(Σ_b c(a → b))
// picks the first b (ascending) whose running sum exceeds r; the unigram draw likewise with the
// byte counts. So a sequence follows from the seed exactly, on every platform.
#pragma once

#include "training/random.h"
#include "training/text_corpus.h"

#include <array>
#include <cstdint>
#include <vector>

namespace fp8lab {

/// Byte statistics of a source text and the task's triggers.
struct BigramBackcopyTask {
  std::array<int64_t, 256> unigram{};           ///< byte counts (kBosToken: 0)
  std::vector<std::array<int64_t, 256>> bigram; ///< [256][256]: c(a → b) over adjacent byte pairs
  std::vector<uint8_t> triggers;                ///< the most frequent bytes, most frequent first
  std::array<int64_t, 256> first{};             ///< unigram counts with the triggers' set to 0
  bool isTrigger(uint8_t b) const;
};

/// The statistics of `text` and its `triggers` most frequent bytes (1 ≤ triggers < distinct
/// bytes of the text; std::invalid_argument otherwise, or for a text of fewer than 2 bytes).
BigramBackcopyTask bigramBackcopyTask(const std::vector<uint8_t>& text, int triggers);

/// One sequence of `length` ≥ 2 tokens, the first kBosToken, drawn from `rng`.
std::vector<uint8_t> bigramBackcopySequence(const BigramBackcopyTask& task, int64_t length, TrainingRng& rng);

/// A document corpus (text_corpus.h) of `sequences` sequences of `length` tokens drawn with
/// TrainingRng(seed) in turn; the last round(sequences · val_fraction) form the validation split.
TextCorpus bigramBackcopyCorpus(const BigramBackcopyTask& task, int64_t sequences, int64_t length, uint64_t seed,
                                double val_fraction, std::string source);

} // namespace fp8lab

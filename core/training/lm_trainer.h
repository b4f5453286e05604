// FP8 Lab — training the tiny transformer language model (transformer.h) on a byte-level corpus
// (text_corpus.h), with every Linear layer's GEMMs in low precision under the run's recipe and
// precision policy (linear_site.h), recording every site's operands step by step as the MLP run
// does (OperandHistory, per-block statistics, what-if recipes, the first non-finite value), and the
// transformer probes (probes.h) at a cadence.
//
// A step: B windows of T + 1 bytes drawn from the training split at offsets from the run's
// random stream (seed + 1) — in a document corpus (text_corpus.h), at the BOS tokens of documents
// drawn from that stream —, the model's forward on the first T, the mean cross-entropy against the
// next byte, the backward, gradient clipping by the global norm, the optimizer with the
// step's scheduled learning rate (linear warm-up, cosine decay: optimizer.h). Validation: the mean
// loss over a fixed set of windows — `eval_batches` × B windows at evenly spaced offsets of the
// validation split — every `eval_every` steps and at the end, with copies of the scaling state
// (evaluation never advances training). Losses in nats per byte; bits per byte = nats / ln 2.
//
// Attention's batched matmuls are sites too (blocks.l.attn.scores = Q·Kᵀ, blocks.l.attn.context
// = P·V), in FP32 unless the policy puts them in the recipe: then Q, K and V are fake-quantized
// per tensor (current scaling, E4M3FN; E5M2 for gradients is not applied — the backward passes
// through the casts), and each softmax probability row is cast to E4M3FN with the fixed quant
// multiplier `softmax_scale` (cuDNN's FP8 attention uses a fixed scale for P; 256 keeps small
// probabilities from flushing to zero, arXiv 2606.06521).
#pragma once

#include "common/progress.h"
#include "gemm/gemm.h"
#include "training/diagnostics.h"
#include "training/nonfinite.h"
#include "training/operand_scaler.h"
#include "training/optimizer.h"
#include "training/recipe.h"
#include "training/sites.h"
#include "training/text_corpus.h"
#include "training/trainer.h"
#include "training/transformer.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fp8lab {

/// What the probes measure and how often.
struct ProbeConfig {
  int every = 25;                  ///< steps between probes (0: none); the last step is probed too
  double massive_threshold = 20.0; ///< absolute |x| threshold of massive activations (paper: 100)
  double massive_ratio = 1000.0;   ///< ... and the ratio to the row's median |x|
  int attention_every = 100;       ///< steps between attention snapshots of the fixed sequence (0: none)
};

/// The language model run's config: what every run shares (TrainingRunConfig; block_gemm
/// defaults to BlockGemmPath::Core here) and the model, data, optimizer schedule, evaluation,
/// probes and sample of the language model.
struct LmTrainingConfig : TrainingRunConfig {
  LmTrainingConfig() { block_gemm = BlockGemmPath::Core; }
  float softmax_scale = 256.0f; ///< quant multiplier of the P cast of FP8 attention
  TransformerConfig model;
  TextSource data;
  int batch_size = 16;
  int64_t steps = 600;
  OptimizerConfig optimizer;
  int64_t warmup_steps = 50;
  double min_lr_ratio = 0.1;
  double clip_norm = 1.0; ///< ≤ 0: no clipping
  int eval_every = 100;
  int eval_batches = 8;
  ProbeConfig probes;
  int sample_bytes = 240; ///< a continuation printed and stored at the end (0: none)
  /// Its sampling temperature (≤ 0: greedy, the most likely byte each time; a small model then
  /// repeats itself), drawn from the run's seed.
  double sample_temperature = 0.8;

  /// Empty when usable, else why not (one line).
  std::string validate() const;
};

/// The probes of one run, at `steps`.
struct ProbeSeries {
  std::vector<int64_t> steps;
  /// Per tensor ("blocks.0.attn.qkv" for a site's input, "blocks.0" for a block's output,
  /// "embedding"): one value per probe step.
  std::map<std::string, std::vector<float>> kurtosis, max_median, massive;
  /// Per block ("blocks.0"): [steps × H] attention mass on position 0, and the share of non-zero
  /// probabilities an E4M3FN cast with softmax_scale flushes to zero (counted in the cast itself
  /// where the block's P cast runs in FP8).
  std::map<std::string, std::vector<float>> sink, softmax_underflow;
  /// Per Linear site: the share of the output gradient's non-zero elements that its cast flushed
  /// to zero, and ‖g‖ / ‖Q(g) − g‖ (NaN where the gradient was not quantized).
  std::map<std::string, std::vector<float>> grad_underflow, grad_noise_ratio;
  /// Per block ("blocks.0"), low-precision runs: ‖x − x₃₂‖ / ‖x₃₂‖ of the block's output x against
  /// x₃₂, the output of a float32 forward of the same weights and batch — how the quantization
  /// error grows (or not) with depth.
  std::map<std::string, std::vector<float>> quant_error;
  int64_t heads = 0;
};

/// Attention probabilities of the fixed validation sequence (the first validation window) at
/// snapshot steps, per block [snapshots, H, T, T].
struct AttentionSnapshots {
  std::vector<int64_t> steps;
  std::vector<std::vector<float>> probs; ///< per block
  std::vector<uint8_t> tokens;           ///< the sequence [T]
};

struct LmTrainingResult {
  LmTrainingConfig config;
  SiteTable sites;
  int64_t steps_done = 0;
  bool cancelled = false;
  bool stopped_nonfinite = false;
  NonFiniteRecord first_nonfinite;
  std::vector<float> loss, lr, grad_norm; ///< [steps]: nats per byte; learning rate; ‖g‖ before clipping
  std::vector<int64_t> val_steps;
  std::vector<float> val_loss; ///< nats per byte
  std::vector<OperandHistory> operands;
  DiagnosticsResult diagnostics;
  ProbeSeries probes;
  AttentionSnapshots attention;
  std::vector<Param<float>> params; ///< the FP32 master weights after the last step (no optimizer state)
  std::string sample;               ///< the generated text (printableText)
  std::string corpus_source;
  int64_t train_bytes = 0, val_bytes = 0;
  double unigram_bits = 0;
  double seconds = 0;
  double step_seconds = 0; ///< mean wall time of a training step (without evaluation and probes)
  std::string gemm_backend, gemm_device, gemm_algorithm;
  int64_t gemm_runs_gpu = 0, gemm_runs_cpu = 0; ///< low-precision runs: how many GEMMs ran on each side
  std::vector<Issue> warnings;
};

/// Bytes a run needs at its peak, for the up-front refusal (an estimate within 2× of the truth).
double estimateLmTrainingBytes(const LmTrainingConfig& c);

class LmTrainingRun {
public:
  /// `corpus` must outlive the run. Throws std::invalid_argument for an unusable config or a
  /// corpus too small for the context, and when the estimate exceeds the memory available.
  LmTrainingRun(LmTrainingConfig config, const TextCorpus& corpus, GemmBackend* backend = nullptr);
  ~LmTrainingRun();
  /// Trains config.steps steps. progress(fraction, stage) after every step; false stops after
  /// that step (result().cancelled, throws Cancelled, the result consistent up to that step). A
  /// non-finite value is recorded (and stops the run with on_nonfinite stop).
  void run(const ProgressFn& progress = {});
  const LmTrainingResult& result() const;
  LmTrainingResult takeResult();

private:
  struct Impl;
  struct Loop;
  std::unique_ptr<Impl> d;
};

} // namespace fp8lab

// FP8 Lab — the training parameter schema (training_schema.h).
#include "experiment/training/training_schema.h"

#include "experiment/config_reader.h"
#include "training/lm_trainer.h"
#include "training/nonfinite.h"
#include "training/operand_scaler.h"
#include "training/optimizer.h"
#include "training/run_config.h"
#include "training/transformer.h"

#include <stdexcept>

namespace fp8lab {

const char* toString(TrainingModel m) {
  switch (m) {
  case TrainingModel::Any:
    return "any";
  case TrainingModel::Mlp:
    return "mlp";
  case TrainingModel::Lm:
    return "lm";
  }
  return "?";
}

namespace {

constexpr double k2p30 = double(int64_t(1) << 30);

TrainingParam entry(TrainingModel model, std::string key, ParamType type, std::string unit, double min, double max,
                    std::string def, std::string help) {
  TrainingParam p;
  p.model = model;
  p.spec.key = std::move(key);
  p.spec.scope = ParamScope::None;
  p.spec.type = type;
  p.spec.unit = std::move(unit);
  p.spec.min = min;
  p.spec.max = max;
  p.spec.def = std::move(def);
  p.spec.commands = "train run";
  p.spec.help = std::move(help);
  return p;
}

TrainingParam choice(TrainingModel model, std::string key, std::vector<std::string> choices, std::string def,
                     std::string help) {
  TrainingParam p = entry(model, std::move(key), ParamType::Choice, "", 0, 0, std::move(def), std::move(help));
  p.spec.choices = std::move(choices);
  return p;
}

/// The canonical names of an enum's values, from its toString.
template <class E> std::vector<std::string> names(std::initializer_list<E> values) {
  std::vector<std::string> v;
  for (E e : values) v.push_back(toString(e));
  return v;
}

const char* const kBlockGemmHelp =
    "How block recipes multiply: float32 GEMMs of the dequantized operands (fake quantization), or core/gemm "
    "with the block-scaled operands under the accumulation model.";

std::vector<TrainingParam> build() {
  using M = TrainingModel;
  using T = ParamType;
  using K = TrainingScalingKind;
  return {
      choice(M::Any, "precision", names({TrainingPrecision::FP8, TrainingPrecision::FP32}), "fp8",
             "fp8: the run's GEMMs in low precision under the scaling strategy or block recipe; fp32: the float32 "
             "baseline (operand amaxes still recorded)."),
      choice(M::Any, "scaling.strategy", names({K::DelayedFlax, K::DelayedTE, K::CurrentTE, K::CurrentTorchao}),
             "delayed-flax",
             "Per-tensor scaling of every operand: delayed (Flax fp8_ops, TE DelayedScaling: the scale from an amax "
             "history) or current (TE Float8CurrentScaling, torchao tensorwise: the scale from this step's amax)."),
      choice(M::Any, "on_nonfinite", names({NonFinitePolicy::Stop, NonFinitePolicy::Continue, NonFinitePolicy::Off}),
             "stop",
             "A step that produces a NaN or ±Inf: record it and stop after the step, record it and continue, or do "
             "not check (docs/training.md \"The first non-finite value\")."),
      choice(M::Mlp, "block_gemm", names({BlockGemmPath::FakeQuant, BlockGemmPath::Core}), "fake_quant",
             kBlockGemmHelp),
      choice(M::Lm, "block_gemm", names({BlockGemmPath::FakeQuant, BlockGemmPath::Core}), "core", kBlockGemmHelp),
      entry(M::Any, "seed", T::Seed, "", 0, 0, "1",
            "Initial weights and the data order (the per-epoch shuffles; the LM's windows); same-seed runs of two "
            "recipes are pairs (docs/decide.md)."),
      entry(M::Any, "threads", T::Integer, "threads", 0, 1024, "0",
            "Threads of the run's GEMMs and kernels (0: every core); results do not depend on it."),
      entry(M::Mlp, "epochs", T::Integer, "epochs", 1, 1000, "3", "Passes over the training images."),
      entry(M::Mlp, "batch_size", T::Integer, "images", 1, 60000, "128", "Images per optimizer step."),
      entry(M::Mlp, "eval_batch_size", T::Integer, "images", 1, 10000, "1000",
            "Images per forward pass of the test-set evaluation (no effect on the result)."),
      entry(M::Mlp, "train_limit", T::Integer, "images", 0, 60000, "0",
            "Train on the first N of the 60000 training images (0: all)."),
      entry(M::Mlp, "test_limit", T::Integer, "images", 0, 10000, "0",
            "Evaluate on the first N of the 10000 test images (0: all)."),
      entry(M::Mlp, "optimizer.learning_rate", T::Number, "", 0, 0, "0.001", "Adam's step size (Kingma & Ba 2015)."),
      entry(M::Mlp, "optimizer.beta1", T::Number, "", 0, 0, "0.9", "Adam's first-moment decay."),
      entry(M::Mlp, "optimizer.beta2", T::Number, "", 0, 0, "0.999", "Adam's second-moment decay."),
      entry(M::Mlp, "optimizer.epsilon", T::Number, "", 0, 0, "1e-08", "Adam's epsilon."),
      entry(M::Lm, "model.d_model", T::Integer, "", 1, 4096, "64",
            "Width of the residual stream (C); a multiple of the heads (GPT-2's n_embd)."),
      entry(M::Lm, "model.layers", T::Integer, "blocks", 1, 64, "2", "Transformer blocks (L; GPT-2's n_layer)."),
      entry(M::Lm, "model.heads", T::Integer, "heads", 1, 256, "4",
            "Attention heads per block (H; d_model / H per head; GPT-2's n_head)."),
      entry(M::Lm, "model.context", T::Integer, "bytes", 2, 4096, "64",
            "Context length (T), the longest sequence the model reads (GPT-2's block_size)."),
      entry(M::Lm, "model.ffn_hidden", T::Integer, "", 1, 16384, "",
            "Width of the FFN's hidden layer (F); default 4·d_model, GPT-2's."),
      choice(M::Lm, "model.ffn", names({FfnKind::Gelu, FfnKind::Swiglu}), "gelu",
             "The FFN: GELU (GPT-2: up, down) or SwiGLU (Shazeer 2020, LLaMA: up, gate, down)."),
      choice(M::Lm, "model.norm", names({NormKind::LayerNorm, NormKind::RmsNorm}), "layernorm",
             "The norms: LayerNorm (GPT-2) or RMSNorm (Zhang & Sennrich 2019, LLaMA)."),
      choice(M::Lm, "model.norm_position", {"pre", "post"}, "pre",
             "pre: norm before attention and FFN (GPT-2); post: after the residual add (the original Transformer)."),
      entry(M::Lm, "batch_size", T::Integer, "sequences", 1, 4096, "16", "Sequences per optimizer step."),
      entry(M::Lm, "steps", T::Integer, "steps", 1, 10000000, "600", "Optimizer steps."),
      entry(M::Lm, "sample_bytes", T::Integer, "bytes", 0, 100000, "240",
            "Bytes of text sampled from the trained model at the end (0: none)."),
      choice(M::Lm, "optimizer.name", names({OptimizerKind::Adam, OptimizerKind::Sgd}), "adam",
             "Adam (Kingma & Ba 2015; with weight_decay: AdamW; also \"adamw\") or SGD with momentum (PyTorch's)."),
      entry(M::Lm, "optimizer.warmup_steps", T::Integer, "steps", 0, k2p30, "50",
            "Linear learning-rate warm-up, then cosine decay to min_lr_ratio (nanoGPT's schedule)."),
      entry(M::Lm, "optimizer.beta1", T::Number, "", 0, 0, "0.9", "Adam's first-moment decay."),
      entry(M::Lm, "optimizer.beta2", T::Number, "", 0, 0, "0.99", "Adam's second-moment decay."),
      entry(M::Lm, "optimizer.epsilon", T::Number, "", 0, 0, "1e-08", "Adam's epsilon."),
      entry(M::Lm, "optimizer.momentum", T::Number, "", 0, 0, "0.9", "SGD's momentum."),
      entry(M::Lm, "optimizer.weight_decay", T::Number, "", 0, 0, "0",
            "Decoupled weight decay (AdamW, Loshchilov & Hutter 2019)."),
      entry(M::Lm, "optimizer.min_lr_ratio", T::Number, "", 0, 0, "0.1",
            "The cosine decay's floor, as a fraction of the learning rate."),
      entry(M::Lm, "optimizer.clip_norm", T::Number, "", 0, 0, "1",
            "Global gradient-norm clipping (0: none; nanoGPT's grad_clip)."),
      entry(M::Lm, "eval.every", T::Integer, "steps", 1, k2p30, "100", "Steps between validation-loss evaluations."),
      entry(M::Lm, "eval.batches", T::Integer, "batches", 1, 10000, "8", "Validation batches per evaluation."),
      entry(M::Lm, "probes.every", T::Integer, "steps", 0, k2p30, "25",
            "Steps between the outlier, sink and error probes (0: none; docs/training.md \"Probes\")."),
      entry(M::Lm, "probes.attention_every", T::Integer, "steps", 0, k2p30, "100",
            "Steps between attention-probability snapshots (0: none)."),
  };
}

} // namespace

const std::vector<TrainingParam>& trainingSchema() {
  static const std::vector<TrainingParam> all = build();
  return all;
}

const ParamSpec& trainingParam(std::string_view key, TrainingModel model) {
  for (const TrainingParam& p : trainingSchema())
    if (p.spec.key == key && (p.model == model || p.model == TrainingModel::Any)) return p.spec;
  throw std::logic_error("training schema has no parameter '" + std::string(key) + "' for model " + toString(model));
}

std::string trainingSchemaMarkdown() {
  std::string s = "| key | model | type | range | default | help |\n|---|---|---|---|---|---|\n";
  for (const TrainingParam& p : trainingSchema()) {
    const ParamSpec& x = p.spec;
    const char* type = x.type == ParamType::Integer  ? "integer"
                       : x.type == ParamType::Number ? "number"
                       : x.type == ParamType::Choice ? "choice"
                                                     : "seed";
    std::string range = x.type == ParamType::Number && x.min == 0 && x.max == 0 ? std::string() : x.rangeText();
    if (x.type == ParamType::Choice) range = joinNames(x.choices);
    if (!range.empty() && !x.unit.empty()) range += " " + x.unit;
    if (x.type == ParamType::Seed) range = "unsigned 64-bit: an integer up to 2^53, or a decimal string";
    s += "| `" + x.key + "` | " + toString(p.model) + " | " + type + " | " + (range.empty() ? "any finite" : range) +
         " | " + (x.def.empty() ? "see help" : x.def) + " | " + x.help + " |\n";
  }
  return s;
}

} // namespace fp8lab

// FP8 Lab — the byte-level transformer language model as a training model kind
// (training_models.h): a run with "model": {"kind": "transformer", ...} (training/lm_trainer.h,
// training/transformer.h).
#include "experiment/training/model_transformer.h"
#include "experiment/training/training_config.h"
#include "experiment/training/training_experiment.h"
#include "experiment/training/training_job.h"
#include "experiment/training/training_keys.h"
#include "experiment/training/training_models.h"
#include "training/lm_trainer.h"
#include "training/text_corpus.h"
#include "training/training_session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace fp8lab {

namespace {

/// A language-model run: its text (loaded once per source and context length per experiment).
class LmJob final : public TrainingJob {
public:
  LmJob(TrainingRunSpec spec, const TextCorpus& corpus) : spec_(std::move(spec)), corpus_(corpus) {}
  int64_t stepsPerEpoch() const override { return lmRun(spec_).steps; }
  int64_t items() const override { return int64_t(corpus_.train.size()); }
  int64_t steps() const override { return lmRun(spec_).steps; }
  void build(GemmBackend* backend) override { run_.emplace(lmRun(spec_), corpus_, backend); }
  void run(const ProgressFn& progress) override { run_->run(progress); }
  int64_t stepsDone() const override { return run_->result().steps_done; }
  Run session(const std::string& run_id, const std::string& config_json) const override {
    return lmRunToSession(run_->result(), run_id, config_json);
  }
  TrainingRunOutcome outcome(const Run& stored, bool cancelled) const override {
    const LmTrainingResult& res = run_->result();
    TrainingRunOutcome o = trainingOutcome(stored, res, cancelled);
    o.steps_total = lmRun(spec_).steps;
    o.val_loss = res.val_loss;
    o.unigram_bits = res.unigram_bits;
    o.sample = res.sample;
    o.step_seconds = res.step_seconds;
    return o;
  }

private:
  TrainingRunSpec spec_;
  const TextCorpus& corpus_;
  std::optional<LmTrainingRun> run_;
};

/// The language model's members of a run object (the kind's `parse`, training_models.h).
void parseLanguageModel(ConfigReader& r, const Json& o, const ConfigPath& where, const TrainingRunConfig& shared,
                        TrainingRunSpec& s) {
  s.model = LmTrainingConfig{};
  LmTrainingConfig lm;
  const ConfigPath mw = where.member("model");
  const Json* mo = r.object(o, "model", where);
  if (!mo) return;
  r.checkKeys(*mo, mw,
              {"kind", "d_model", "layers", "heads", "context", "ffn_hidden", "ffn", "norm", "norm_position",
               "tied_embeddings", "position_embedding", "bias"});
  TransformerConfig& m = lm.model;
  m.d_model = trainingInteger(r, *mo, "model.d_model", "transformer", mw);
  m.layers = trainingInteger(r, *mo, "model.layers", "transformer", mw);
  m.heads = trainingInteger(r, *mo, "model.heads", "transformer", mw);
  m.context = trainingInteger(r, *mo, "model.context", "transformer", mw);
  m.ffn_hidden = trainingInteger(r, *mo, "model.ffn_hidden", "transformer", mw, 4 * m.d_model);
  const auto is = [](std::initializer_list<const char*> names) {
    return [names](const std::string& v) {
      return std::any_of(names.begin(), names.end(), [&](const char* n) { return v == n; });
    };
  };
  m.ffn = trainingChoice(r, *mo, "model.ffn", "transformer", mw, "FFN", is({"gelu", "swiglu"})) == "swiglu"
              ? FfnKind::Swiglu
              : FfnKind::Gelu;
  m.norm = trainingChoice(r, *mo, "model.norm", "transformer", mw, "norm", is({"layernorm", "rmsnorm"})) == "rmsnorm"
               ? NormKind::RmsNorm
               : NormKind::LayerNorm;
  m.pre_norm =
      trainingChoice(r, *mo, "model.norm_position", "transformer", mw, "norm position", is({"pre", "post"})) != "post";
  m.tied_embeddings = r.boolean(*mo, "tied_embeddings", mw, true);
  m.position_embedding = r.boolean(*mo, "position_embedding", mw, true);
  m.linear_bias = r.boolean(*mo, "bias", mw, true);
  if (r.ok() && m.d_model % m.heads != 0)
    r.fail(mw.member("heads"),
           "d_model (" + std::to_string(m.d_model) + ") must be a multiple of heads (" + std::to_string(m.heads) + ")");
  if (const Json* dv = r.object(o, "data", where)) {
    const ConfigPath dw = where.member("data");
    r.checkKeys(*dv, dw, {"corpus", "text", "val_fraction", "documents", "task", "triggers", "sequences", "seed"});
    if (ConfigReader::has(*dv, "text") && ConfigReader::has(*dv, "corpus"))
      r.fail(dw, "give \"corpus\" or \"text\", not both");
    lm.data.path = r.string(*dv, "text", dw, {});
    lm.data.corpus = lm.data.path.empty() ? lowerName(r.string(*dv, "corpus", dw, "fortunes")) : std::string();
    if (r.ok() && lm.data.path.empty() && lm.data.corpus != "fortunes")
      r.fail(dw.member("corpus"), "unknown corpus '" + lm.data.corpus +
                                      "' (fortunes: the Debian package; or \"text\": PATH for any UTF-8 file)");
    lm.data.val_fraction = r.number(*dv, "val_fraction", dw, 0.1);
    if (r.ok() && !(lm.data.val_fraction > 0 && lm.data.val_fraction < 0.9))
      r.fail(dw.member("val_fraction"), "must be in (0, 0.9)");
    lm.data.documents = r.boolean(*dv, "documents", dw, false);
    lm.data.task = lowerName(r.string(*dv, "task", dw, {}));
    if (r.ok() && !lm.data.task.empty() && lm.data.task != "bigram_backcopy")
      r.fail(dw.member("task"), "unknown task '" + lm.data.task +
                                    "' (bigram_backcopy: Guo et al. 2024's synthetic sequences, built from the "
                                    "text's byte bigrams)");
    if (lm.data.task.empty()) {
      for (const char* k : {"triggers", "sequences", "seed"})
        if (r.ok() && ConfigReader::has(*dv, k)) r.fail(dw.member(k), "belongs to \"task\": \"bigram_backcopy\"");
    } else {
      if (r.ok() && ConfigReader::has(*dv, "documents"))
        r.fail(dw.member("documents"), "a task's sequences are documents already (each starts with the BOS token)");
      lm.data.triggers = int(r.integer(*dv, "triggers", dw, 3, 1, 64));
      lm.data.sequences = r.integer(*dv, "sequences", dw, 20000, 16, 1000000);
      lm.data.task_seed = uint64_t(r.integer(*dv, "seed", dw, 1, 0, int64_t(1) << 53));
    }
  }
  // the shared run settings; block_gemm keeps the language model's default (core) unless the
  // run gives it
  static_cast<TrainingRunConfig&>(lm) = shared;
  if (!ConfigReader::has(o, "block_gemm")) lm.block_gemm = BlockGemmPath::Core;
  if (!ConfigReader::has(o, "diagnostics")) lm.diagnostics.map_every = 200;
  lm.batch_size = int(trainingInteger(r, o, "batch_size", "transformer", where));
  lm.steps = trainingInteger(r, o, "steps", "transformer", where);
  lm.softmax_scale = float(r.number(o, "softmax_scale", where, 256.0));
  lm.sample_bytes = int(trainingInteger(r, o, "sample_bytes", "transformer", where));
  lm.sample_temperature = r.number(o, "sample_temperature", where, 0.8);
  if (r.ok() && !(lm.sample_temperature >= 0 && lm.sample_temperature <= 10))
    r.fail(where.member("sample_temperature"), "must be in [0, 10] (0: greedy)");
  if (const Json* oo = r.object(o, "optimizer", where)) {
    const ConfigPath w = where.member("optimizer");
    OptimizerConfig& op = lm.optimizer;
    const std::string name =
        trainingChoice(r, *oo, "optimizer.name", "transformer", w, "optimizer",
                       [](const std::string& v) { return v == "adam" || v == "adamw" || v == "sgd"; });
    op.kind = name == "sgd" ? OptimizerKind::Sgd : OptimizerKind::Adam;
    op.learning_rate = float(r.number(*oo, "learning_rate", w, op.kind == OptimizerKind::Sgd ? 0.1 : 3e-3));
    op.beta1 = float(trainingNumber(r, *oo, "optimizer.beta1", "transformer", w));
    op.beta2 = float(trainingNumber(r, *oo, "optimizer.beta2", "transformer", w));
    op.epsilon = float(trainingNumber(r, *oo, "optimizer.epsilon", "transformer", w));
    op.momentum = float(trainingNumber(r, *oo, "optimizer.momentum", "transformer", w));
    op.weight_decay = float(trainingNumber(r, *oo, "optimizer.weight_decay", "transformer", w));
    lm.warmup_steps = trainingInteger(r, *oo, "optimizer.warmup_steps", "transformer", w);
    lm.min_lr_ratio = trainingNumber(r, *oo, "optimizer.min_lr_ratio", "transformer", w);
    lm.clip_norm = trainingNumber(r, *oo, "optimizer.clip_norm", "transformer", w);
    if (r.ok() && !(op.learning_rate > 0)) r.fail(w.member("learning_rate"), "must be a positive number");
    if (r.ok() && !(op.beta1 >= 0 && op.beta1 < 1)) r.fail(w.member("beta1"), "must be in [0, 1)");
    if (r.ok() && !(op.beta2 >= 0 && op.beta2 < 1)) r.fail(w.member("beta2"), "must be in [0, 1)");
    if (r.ok() && !(op.epsilon > 0)) r.fail(w.member("epsilon"), "must be a positive number");
    if (r.ok() && !(op.momentum >= 0 && op.momentum < 1)) r.fail(w.member("momentum"), "must be in [0, 1)");
    if (r.ok() && !(op.weight_decay >= 0)) r.fail(w.member("weight_decay"), "must be ≥ 0");
    if (r.ok() && !(lm.min_lr_ratio >= 0 && lm.min_lr_ratio <= 1))
      r.fail(w.member("min_lr_ratio"), "must be in [0, 1]");
    if (r.ok() && !(lm.clip_norm >= 0)) r.fail(w.member("clip_norm"), "must be ≥ 0 (0: no clipping)");
  } else {
    lm.optimizer.learning_rate = 3e-3f;
    lm.optimizer.beta2 = 0.99f;
  }
  if (const Json* ev = r.object(o, "eval", where)) {
    const ConfigPath w = where.member("eval");
    r.checkKeys(*ev, w, {"every", "batches"});
    lm.eval_every = int(trainingInteger(r, *ev, "eval.every", "transformer", w));
    lm.eval_batches = int(trainingInteger(r, *ev, "eval.batches", "transformer", w));
  }
  if (const Json* pv = r.object(o, "probes", where)) {
    const ConfigPath w = where.member("probes");
    r.checkKeys(*pv, w, {"every", "massive_threshold", "massive_ratio", "attention_every"});
    lm.probes.every = int(trainingInteger(r, *pv, "probes.every", "transformer", w));
    lm.probes.massive_threshold = r.number(*pv, "massive_threshold", w, 20.0);
    lm.probes.massive_ratio = r.number(*pv, "massive_ratio", w, 1000.0);
    lm.probes.attention_every = int(trainingInteger(r, *pv, "probes.attention_every", "transformer", w));
  }
  if (r.ok())
    if (const std::string v = lm.validate(); !v.empty()) r.fail(where, v);
  s.model = std::move(lm);
}

/// The language model's entries of the training schema (training_schema.h).
std::vector<TrainingParam> transformerSchema() {
  using T = ParamType;
  constexpr double k2p30 = double(int64_t(1) << 30);
  return {
      trainingChoiceEntry("transformer", "block_gemm", choiceNames({BlockGemmPath::FakeQuant, BlockGemmPath::Core}),
                          "core", kTrainingBlockGemmHelp),
      trainingEntry("transformer", "model.d_model", T::Integer, "", 1, 4096, "64",
                    "Width of the residual stream (C); a multiple of the heads (GPT-2's n_embd)."),
      trainingEntry("transformer", "model.layers", T::Integer, "blocks", 1, 64, "2",
                    "Transformer blocks (L; GPT-2's n_layer)."),
      trainingEntry("transformer", "model.heads", T::Integer, "heads", 1, 256, "4",
                    "Attention heads per block (H; d_model / H per head; GPT-2's n_head)."),
      trainingEntry("transformer", "model.context", T::Integer, "bytes", 2, 4096, "64",
                    "Context length (T), the longest sequence the model reads (GPT-2's block_size)."),
      trainingEntry("transformer", "model.ffn_hidden", T::Integer, "", 1, 16384, "",
                    "Width of the FFN's hidden layer (F); default 4·d_model, GPT-2's."),
      trainingChoiceEntry("transformer", "model.ffn", choiceNames({FfnKind::Gelu, FfnKind::Swiglu}), "gelu",
                          "The FFN: GELU (GPT-2: up, down) or SwiGLU (Shazeer 2020, LLaMA: up, gate, down)."),
      trainingChoiceEntry("transformer", "model.norm", choiceNames({NormKind::LayerNorm, NormKind::RmsNorm}),
                          "layernorm", "The norms: LayerNorm (GPT-2) or RMSNorm (Zhang & Sennrich 2019, LLaMA)."),
      trainingChoiceEntry(
          "transformer", "model.norm_position", {"pre", "post"}, "pre",
          "pre: norm before attention and FFN (GPT-2); post: after the residual add (the original Transformer)."),
      trainingEntry("transformer", "batch_size", T::Integer, "sequences", 1, 4096, "16",
                    "Sequences per optimizer step."),
      trainingEntry("transformer", "steps", T::Integer, "steps", 1, 10000000, "600", "Optimizer steps."),
      trainingEntry("transformer", "sample_bytes", T::Integer, "bytes", 0, 100000, "240",
                    "Bytes of text sampled from the trained model at the end (0: none)."),
      trainingChoiceEntry(
          "transformer", "optimizer.name", choiceNames({OptimizerKind::Adam, OptimizerKind::Sgd}), "adam",
          "Adam (Kingma & Ba 2015; with weight_decay: AdamW; also \"adamw\") or SGD with momentum (PyTorch's)."),
      trainingEntry("transformer", "optimizer.warmup_steps", T::Integer, "steps", 0, k2p30, "50",
                    "Linear learning-rate warm-up, then cosine decay to min_lr_ratio (nanoGPT's schedule)."),
      trainingEntry("transformer", "optimizer.beta1", T::Number, "", 0, 0, "0.9", "Adam's first-moment decay."),
      trainingEntry("transformer", "optimizer.beta2", T::Number, "", 0, 0, "0.99", "Adam's second-moment decay."),
      trainingEntry("transformer", "optimizer.epsilon", T::Number, "", 0, 0, "1e-08", "Adam's epsilon."),
      trainingEntry("transformer", "optimizer.momentum", T::Number, "", 0, 0, "0.9", "SGD's momentum."),
      trainingEntry("transformer", "optimizer.weight_decay", T::Number, "", 0, 0, "0",
                    "Decoupled weight decay (AdamW, Loshchilov & Hutter 2019)."),
      trainingEntry("transformer", "optimizer.min_lr_ratio", T::Number, "", 0, 0, "0.1",
                    "The cosine decay's floor, as a fraction of the learning rate."),
      trainingEntry("transformer", "optimizer.clip_norm", T::Number, "", 0, 0, "1",
                    "Global gradient-norm clipping (0: none; nanoGPT's grad_clip)."),
      trainingEntry("transformer", "eval.every", T::Integer, "steps", 1, k2p30, "100",
                    "Steps between validation-loss evaluations."),
      trainingEntry("transformer", "eval.batches", T::Integer, "batches", 1, 10000, "8",
                    "Validation batches per evaluation."),
      trainingEntry("transformer", "probes.every", T::Integer, "steps", 0, k2p30, "25",
                    "Steps between the outlier, sink and error probes (0: none; docs/training.md \"Probes\")."),
      trainingEntry("transformer", "probes.attention_every", T::Integer, "steps", 0, k2p30, "100",
                    "Steps between attention-probability snapshots (0: none)."),
  };
}

} // namespace

LmTrainingConfig& lmRun(TrainingRunSpec& spec) {
  return spec.modelConfig<LmTrainingConfig>();
}

const LmTrainingConfig& lmRun(const TrainingRunSpec& spec) {
  return spec.modelConfig<LmTrainingConfig>();
}

const TrainingModelKind& transformerModelKind() {
  static const TrainingModelKind k{
      "transformer",
      "Transformer LM on text",
      "A byte-level GPT-2-shaped decoder on the fortunes of the Debian package fortunes: every Linear (attn.qkv, "
      "attn.out, ffn.up/down, lm_head) a site of the recipe",
      "final_val_loss",
      "validation loss (nats per byte)",
      /*trains_beside=*/false,
      /*weight_gemm=*/false,
      {"data", "steps", "eval", "probes", "softmax_scale", "sample_bytes", "sample_temperature"},
      "the language model (a run with \"model\": {\"kind\": \"transformer\"})",
      parseLanguageModel,
      nullptr,
      transformerSchema,
      [](TrainingRunSpec& s) -> TrainingRunConfig& { return lmRun(s); },
      [](const TrainingRunSpec& s) { return lmRun(s).model.sites(); },
      [](const TrainingRunSpec& s) { return lmRun(s).steps; },
      [](const TrainingRunSpec& s) { return lmRun(s).steps; },
      [](TrainingRunSpec& s, int64_t steps) {
        lmRun(s).steps = steps;
        lmRun(s).eval_every = int(std::max<int64_t>(steps, 1));
        lmRun(s).sample_bytes = 0;
        lmRun(s).probes.attention_every = 0;
      },
      [](const TrainingRunSpec& s) { return lmConfigJson(lmRun(s), s.id); },
      [](const std::string& label, const TrainingRunSpec& s, int64_t steps, int64_t bytes) {
        const LmTrainingConfig& lm = lmRun(s);
        using ll = long long;
        char t[640];
        std::snprintf(t, sizeof t,
                      "%s: transformer LM (%lld parameters: d_model %lld, %lld layers, %lld heads, context %lld, %s, "
                      "%s %s-norm%s), %s, %lld steps of batch %lld on %lld bytes of text",
                      label.c_str(), ll(lm.model.parameterCount()), ll(lm.model.d_model), ll(lm.model.layers),
                      ll(lm.model.heads), ll(lm.model.context), toString(lm.model.ffn), toString(lm.model.norm),
                      lm.model.pre_norm ? "pre" : "post", lm.model.linear_bias ? "" : ", no biases",
                      lm.fp8() ? lm.scalingName().c_str() : "FP32 baseline", ll(steps), ll(lm.batch_size), ll(bytes));
        return std::string(t);
      },
      [](Json& js, const TrainingRunOutcome& o) {
        js["model"] = "transformer";
        Json vl = Json::array();
        for (float v : o.val_loss) vl.push_back(double(v));
        js["val_loss"] = vl;
        if (!o.val_loss.empty()) js["val_bits_per_byte"] = double(o.val_loss.back()) / std::log(2.0);
        js["unigram_bits_per_byte"] = o.unigram_bits;
        js["step_seconds"] = o.step_seconds;
        js["sample"] = o.sample;
      },
      [](const Run& run, const std::string& stored_id, std::vector<std::string>& lines) {
        const auto m = [&](const char* k) { return run.metrics.count(k) ? run.metrics.at(k).value : std::nan(""); };
        char t[512];
        std::snprintf(t, sizeof t,
                      "%s: validation loss %.4f nats/byte = %.3f bits/byte (unigram entropy of the text: %.3f "
                      "bits/byte), %.1f ms per step",
                      stored_id.c_str(), m("final_val_loss"), m("final_val_bits_per_byte"), m("unigram_bits_per_byte"),
                      1000.0 * m("step_seconds"));
        lines.push_back(t);
        if (const auto sample = attrString(run.attrs, "sample"); sample && !sample->empty())
          lines.push_back(stored_id + ": sample (after a validation prompt):\n" + *sample);
      },
      [](const TrainingRunSpec& s, TrainingDataCache& data, std::string* error) -> std::unique_ptr<TrainingJob> {
        const LmTrainingConfig& cfg = lmRun(s);
        try {
          const TextCorpus& corpus = data.get<TextCorpus>("text:" + cfg.data.key(cfg.model.context), [&] {
            std::string why;
            std::optional<TextCorpus> c = loadTextSource(cfg.data, cfg.model.context, &why);
            if (!c) throw std::runtime_error(why);
            return std::move(*c);
          });
          return std::make_unique<LmJob>(s, corpus);
        } catch (const std::exception& e) {
          *error = e.what();
        }
        return nullptr;
      },
      [](const Json& cfg, const Attributes& attrs) {
        std::string label = "transformer LM";
        if (cfg.contains("model") && cfg["model"].is_object()) {
          const Json& mo = cfg["model"];
          auto num = [&](const char* k) {
            return mo.contains(k) && mo[k].is_number() ? mo[k].dump() : std::string("?");
          };
          label += " (d_model " + num("d_model") + ", " + num("layers") + " blocks, " + num("heads") +
                   " heads, context " + num("context") + ", " + mo.value("ffn", std::string("gelu")) + ", " +
                   mo.value("norm", std::string("layernorm")) + " " + mo.value("norm_position", std::string("pre")) +
                   "-norm" + (mo.value("bias", true) ? "" : ", no biases") + ")";
        }
        if (cfg.contains("optimizer") && cfg["optimizer"].is_object()) {
          const Json& o = cfg["optimizer"];
          label += ", " + o.value("name", std::string("adam"));
          if (o.contains("learning_rate") && o["learning_rate"].is_number())
            label += " lr " + o["learning_rate"].dump();
        }
        if (const auto st = attrInt(attrs, "steps_planned")) label += ", " + std::to_string(*st) + " steps";
        return label;
      },
  };
  return k;
}

} // namespace fp8lab

// FP8 Lab — the byte-level transformer language model as a training model kind
// (training_models.h): a run with "model": {"kind": "transformer", ...} (training/lm_trainer.h,
// training/transformer.h).
#include "experiment/training/training_config.h"
#include "experiment/training/training_experiment.h"
#include "experiment/training/training_models.h"
#include "training/lm_trainer.h"
#include "training/text_corpus.h"
#include "training/training_session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fp8lab {

const TrainingModelKind& transformerModelKind() {
  static const TrainingModelKind k{
      "transformer",
      "Transformer LM on text",
      "A byte-level GPT-2-shaped decoder on the fortunes of the Debian package fortunes: every Linear (attn.qkv, "
      "attn.out, ffn.up/down, lm_head) a site of the recipe",
      "final_val_loss",
      "validation loss (nats per byte)",
      [](TrainingRunSpec& s) -> TrainingRunConfig& { return *s.lm; },
      [](const TrainingRunSpec& s) { return s.lm->model.sites(); },
      [](const TrainingRunSpec& s) { return s.lm->steps; },
      [](const TrainingRunSpec& s) { return s.lm->steps; },
      [](TrainingRunSpec& s, int64_t steps) {
        s.lm->steps = steps;
        s.lm->eval_every = int(std::max<int64_t>(steps, 1));
        s.lm->sample_bytes = 0;
        s.lm->probes.attention_every = 0;
      },
      [](const TrainingRunSpec& s) { return lmConfigJson(*s.lm, s.id); },
      [](const std::string& label, const TrainingRunSpec& s, int64_t steps, int64_t bytes) {
        const LmTrainingConfig& lm = *s.lm;
        using ll = long long;
        char t[640];
        std::snprintf(t, sizeof t,
                      "%s: transformer LM (%lld parameters: d_model %lld, %lld layers, %lld heads, context %lld, %s, "
                      "%s %s-norm), %s, %lld steps of batch %lld on %lld bytes of text",
                      label.c_str(), ll(lm.model.parameterCount()), ll(lm.model.d_model), ll(lm.model.layers),
                      ll(lm.model.heads), ll(lm.model.context), toString(lm.model.ffn), toString(lm.model.norm),
                      lm.model.pre_norm ? "pre" : "post", lm.fp8() ? lm.scalingName().c_str() : "FP32 baseline",
                      ll(steps), ll(lm.batch_size), ll(bytes));
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
      [](const TrainingRunSpec& s, const std::string& run_id, const std::string& config_json, int64_t stop_after,
         const ProgressFn& progress, std::string* error) -> std::optional<Run> {
        const LmTrainingConfig& cfg = *s.lm;
        const std::optional<TextCorpus> corpus = loadTextSource(cfg.data, cfg.model.context, error);
        if (!corpus) return std::nullopt;
        try {
          LmTrainingRun run(cfg, *corpus);
          if (!trainAloneStopping([&](const ProgressFn& p) { run.run(p); }, [&] { return run.result().steps_done; },
                                  stop_after, progress, error))
            return std::nullopt;
          return lmRunToSession(run.result(), run_id, config_json);
        } catch (const std::exception& e) {
          *error = e.what();
        }
        return std::nullopt;
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
                   "-norm)";
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

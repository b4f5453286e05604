#include "experiment/training_experiment.h"
#include "session/session_layout.h"

#include "training/fashion_mnist.h"
#include "training/training_session.h"

#include <map>

namespace fp8lab {

namespace {

/// Loads the data set once per distinct directory.
struct DataCache {
  std::map<std::string, FashionMnist> sets;
  const FashionMnist& get(const std::string& dir) {
    auto it = sets.find(dir);
    if (it == sets.end()) it = sets.emplace(dir, loadFashionMnist(dir)).first;
    return it->second;
  }
};

int64_t stepsOf(const TrainingRunSpec& r) {
  if (r.lm) return r.lm->steps;
  const int64_t images = r.train_limit > 0 ? r.train_limit : 60000;
  return static_cast<int64_t>(r.config.epochs) * ((images + r.config.batch_size - 1) / r.config.batch_size);
}

/// The text of a language-model run, loaded once per source.
struct TextCache {
  std::map<std::string, TextCorpus> texts;
  /// nullptr with *error when the corpus is missing or too short.
  const TextCorpus* get(const TextSource& src, int64_t min_bytes, std::string* error) {
    const std::string key =
        (src.path.empty() ? "corpus:" + src.corpus : "file:" + src.path) + "@" + std::to_string(src.val_fraction);
    auto it = texts.find(key);
    if (it != texts.end()) return &it->second;
    std::optional<TextCorpus> c = src.path.empty() ? loadFortunes(error, kFortunesDir, src.val_fraction)
                                                   : loadTextFile(src.path, error, src.val_fraction, min_bytes);
    if (!c) return nullptr;
    return &texts.emplace(key, std::move(*c)).first->second;
  }
};

} // namespace

TrainingExperimentOutcome runTrainingExperiment(const TrainingExperimentSpec& spec, const TrainingRunnerOptions& opt,
                                                const TrainingHooks& hooks) {
  TrainingExperimentOutcome out;
  auto failed = [&](std::string why) {
    out.status = TrainingExperimentOutcome::Status::Failed;
    out.error = std::move(why);
    return out;
  };
  // Weights of the overall fraction: every training step counts 1, each trained-weights GEMM 2 %
  // of the training steps.
  double total = 0;
  for (const auto& r : spec.runs) total += static_cast<double>(stepsOf(r));
  const double gemm_weight = spec.weight_gemm ? 0.02 * total : 0.0;
  if (spec.weight_gemm) total += gemm_weight * static_cast<double>(spec.weight_gemm->layers.size());
  if (total <= 0) total = 1;
  double done_before = 0;

  auto save = [&](Run& run, const TrainingRunSpec* training, std::string* stored) -> bool {
    if (hooks.finish_run) hooks.finish_run(run, training);
    *stored = run.id;
    std::string error;
    if (hooks.save && !hooks.save(run, stored, &error)) {
      failed("could not save run '" + run.id + "': " + error);
      return false;
    }
    return true;
  };

  DataCache data;
  std::map<std::string, std::vector<LayerWeights>> trained;
  std::map<std::string, std::string> stored_as; // a run's id in the config -> its id in the file
  std::map<std::string, const FashionMnist*> data_of;
  // A cancel that arrives between two pieces of work stops before the next one starts.
  auto stopRequested = [&](const std::string& stage) {
    if (!hooks.progress || hooks.progress(0.0, done_before / total, stage)) return false;
    out.status = TrainingExperimentOutcome::Status::Cancelled;
    return true;
  };
  TextCache texts;
  for (size_t i = 0; i < spec.runs.size(); ++i) {
    const TrainingRunSpec& rs = spec.runs[i];
    if (i > 0 && stopRequested("starting " + rs.id)) return out;
    if (rs.lm) {
      LmTrainingConfig cfg = *rs.lm;
      if (opt.threads > 0) cfg.threads = cfg.forward_gemm.threads = cfg.backward_gemm.threads = opt.threads;
      std::string why;
      const TextCorpus* corpus = texts.get(cfg.data, 2 * (cfg.model.context + 1), &why);
      if (!corpus) return failed(why);
      if (hooks.run_started) hooks.run_started(i, spec.runs.size(), rs, cfg.steps, int64_t(corpus->train.size()));
      const double run_steps = double(cfg.steps);
      bool cancelled = false;
      std::optional<LmTrainingRun> run;
      try {
        run.emplace(cfg, *corpus, cfg.precision == TrainingPrecision::FP8 ? opt.backend : nullptr);
        auto progress = [&](double f, const std::string& stage) {
          if (!hooks.progress) return true;
          return hooks.progress(f, (done_before + f * run_steps) / total, stage);
        };
        try {
          run->run(progress);
          progress(1.0, "done");
        } catch (const Cancelled&) {
          cancelled = true;
        }
      } catch (const std::exception& e) {
        return failed("training run '" + rs.id + "' failed: " + e.what());
      }
      done_before += run_steps;
      const LmTrainingResult& res = run->result();
      Run session_run = lmRunToSession(res, rs.id, rs.configJson());
      TrainingRunOutcome o;
      if (!save(session_run, &rs, &o.stored_id)) return out;
      o.type = "training";
      o.cancelled = cancelled;
      o.stopped_nonfinite = res.stopped_nonfinite;
      o.first_nonfinite = res.first_nonfinite;
      o.spec = &rs;
      o.steps_done = res.steps_done;
      o.steps_total = cfg.steps;
      o.seconds = res.seconds;
      o.val_loss = res.val_loss;
      o.unigram_bits = res.unigram_bits;
      o.sample = res.sample;
      o.step_seconds = res.step_seconds;
      for (const auto& h : res.operands)
        for (int64_t v : h.saturated) o.saturated_total += v;
      o.backend = session_run.backend;
      o.device = session_run.device;
      out.runs.push_back(std::move(o));
      if (cancelled) {
        out.status = TrainingExperimentOutcome::Status::Cancelled;
        return out;
      }
      continue;
    }
    TrainingRunSpec local = rs;
    if (opt.threads > 0)
      local.config.threads = local.config.forward_gemm.threads = local.config.backward_gemm.threads = opt.threads;
    const FashionMnist* fm = nullptr;
    try {
      fm = &data.get(rs.data_dir);
    } catch (const DatasetMissingError& e) {
      return failed(e.what());
    } catch (const IdxError& e) {
      return failed(std::string("Fashion-MNIST is damaged: ") + e.what());
    } catch (const std::exception& e) {
      return failed(e.what());
    }
    const ImageDataset train = fm->train.head(rs.train_limit), test = fm->test.head(rs.test_limit);
    data_of[rs.id] = fm;
    const int64_t steps_per_epoch = (train.count + rs.config.batch_size - 1) / rs.config.batch_size;
    if (hooks.run_started) hooks.run_started(i, spec.runs.size(), rs, steps_per_epoch, train.count);
    const double run_steps = static_cast<double>(steps_per_epoch) * rs.config.epochs;
    bool cancelled = false;
    std::optional<TrainingRun> run;
    try {
      run.emplace(local.config, train, test, rs.config.precision == TrainingPrecision::FP8 ? opt.backend : nullptr);
      size_t epochs_reported = 0;
      auto progress = [&](double f, const std::string& stage) {
        const auto& eps = run->result().epochs;
        for (; epochs_reported < eps.size(); ++epochs_reported)
          if (hooks.epoch_done) hooks.epoch_done(rs, eps[epochs_reported]);
        if (!hooks.progress) return true;
        return hooks.progress(f, (done_before + f * run_steps) / total, stage);
      };
      try {
        run->run(progress);
        progress(1.0, "done");
      } catch (const Cancelled&) {
        cancelled = true;
      }
    } catch (const std::exception& e) {
      return failed("training run '" + rs.id + "' failed: " + e.what());
    }
    done_before += run_steps;
    const TrainingResult& res = run->result();
    Run session_run = trainingRunToSession(res, rs.id, rs.configJson());
    TrainingRunOutcome o;
    if (!save(session_run, &rs, &o.stored_id)) return out;
    o.type = "training";
    o.cancelled = cancelled;
    o.stopped_nonfinite = res.stopped_nonfinite;
    o.first_nonfinite = res.first_nonfinite;
    o.spec = &rs;
    o.steps_done = res.steps_done;
    o.steps_total = res.steps_per_epoch * rs.config.epochs;
    for (const auto& e : res.epochs) o.test_accuracy.push_back(e.test_accuracy);
    o.seconds = res.seconds;
    if (!res.epochs.empty()) {
      double s = 0;
      for (const auto& e : res.epochs) s += e.seconds;
      o.mean_epoch_seconds = s / static_cast<double>(res.epochs.size());
    }
    for (const auto& h : res.operands)
      for (int64_t v : h.saturated) o.saturated_total += v;
    o.backend = session_run.backend;
    o.device = session_run.device;
    out.runs.push_back(std::move(o));
    if (cancelled) {
      out.status = TrainingExperimentOutcome::Status::Cancelled;
      return out;
    }
    trained[rs.id] = run->result().weights;
    stored_as[rs.id] = out.runs.back().stored_id;
  }

  if (spec.weight_gemm) {
    const auto& weights = trained.at(spec.weight_gemm->from_run);
    const FashionMnist* fm = data_of.at(spec.weight_gemm->from_run);
    // The GEMM runs name the training run by the id it was stored under (the file may have held
    // the config's id already: "fp8-current" stored as "fp8-current-2").
    WeightGemmSpec g = *spec.weight_gemm;
    if (const auto it = stored_as.find(g.from_run); it != stored_as.end() && !it->second.empty())
      g.from_run = it->second;
    for (const LayerWeights& w : weights)
      if (!allFinite(w.kernel.data(), w.kernel.size()) || !allFinite(w.bias.data(), w.bias.size())) {
        // the GEMM error of NaN weights means nothing (its SQNR would read inf)
        out.weight_gemm_skipped = "the GEMM on trained weights is skipped: the weights of run '" + g.from_run +
                                  "' hold non-finite values (see its first non-finite value)";
        return out;
      }
    for (int l : g.layers) {
      if (stopRequested("starting " + g.runId(l))) return out;
      WeightGemmConfig wc = g.gemm;
      wc.layer = l;
      wc.gemm.threads = opt.threads;
      Run run;
      try {
        run = weightGemmRun(weights, fm->test, wc, g.runId(l), g.configJson(l), opt.backend,
                            [&](double f, const std::string& s) {
                              if (!hooks.progress) return true;
                              return hooks.progress(f, (done_before + f * gemm_weight) / total, s);
                            });
      } catch (const Cancelled&) {
        out.status = TrainingExperimentOutcome::Status::Cancelled;
        return out;
      } catch (const std::exception& e) {
        return failed("GEMM on trained weights (" + g.runId(l) + ") failed: " + e.what());
      }
      done_before += gemm_weight;
      TrainingRunOutcome o;
      if (!save(run, nullptr, &o.stored_id)) return out;
      o.type = "gemm-trained-weights";
      o.backend = run.backend;
      o.device = run.device;
      o.layer = "fc" + std::to_string(l + 1);
      for (const auto& [k, v] : run.metrics) o.metrics[k] = v.value;
      out.runs.push_back(std::move(o));
    }
  }
  return out;
}

namespace {

std::optional<Run> reproduceLmRun(const Run& stored, TrainingRunSpec& rs, int threads, const ProgressFn& progress,
                                  std::string* error) {
  LmTrainingConfig cfg = *rs.lm;
  if (cfg.seed != stored.seed) {
    *error = "the stored seed attribute (" + std::to_string(stored.seed) + ") disagrees with the config's seed (" +
             std::to_string(cfg.seed) + ")";
    return std::nullopt;
  }
  if (threads > 0) cfg.threads = cfg.forward_gemm.threads = cfg.backward_gemm.threads = threads;
  const bool was_cancelled = attrString(stored.attrs, "status").value_or("") == "cancelled";
  const int64_t stop_after = attrInt(stored.attrs, "steps_completed").value_or(-1);
  TextCache texts;
  const TextCorpus* corpus = texts.get(cfg.data, 2 * (cfg.model.context + 1), error);
  if (!corpus) return std::nullopt;
  try {
    LmTrainingRun run(cfg, *corpus);
    try {
      run.run([&](double f, const std::string& st) {
        if (was_cancelled && run.result().steps_done >= stop_after) return false;
        return progress ? progress(f, st) : true;
      });
    } catch (const Cancelled&) {
      if (!was_cancelled || run.result().steps_done != stop_after) {
        *error = "cancelled";
        return std::nullopt;
      }
    }
    return lmRunToSession(run.result(), stored.id, stored.config_json);
  } catch (const std::exception& e) {
    *error = e.what();
  }
  return std::nullopt;
}

} // namespace

std::optional<Run> reproduceTrainingRun(const Run& stored, int threads, const ProgressFn& progress,
                                        std::string* error) {
  const auto doc = parseStoredConfig(stored.config_json, error);
  if (!doc) return std::nullopt;
  std::string err;
  auto spec = parseTrainingExperiment(doc->root(), &err, &*doc);
  if (!spec || spec->runs.size() != 1) {
    *error = spec ? std::string("the stored config holds more than one run") : err;
    return std::nullopt;
  }
  TrainingRunSpec& rs = spec->runs.front();
  if (rs.lm) return reproduceLmRun(stored, rs, threads, progress, error);
  if (rs.config.seed != stored.seed) {
    *error = "the stored seed attribute (" + std::to_string(stored.seed) + ") disagrees with the config's seed (" +
             std::to_string(rs.config.seed) + ")";
    return std::nullopt;
  }
  if (threads > 0) rs.config.threads = rs.config.forward_gemm.threads = rs.config.backward_gemm.threads = threads;
  // A run saved after a cancel is reproduced up to the same step.
  const bool was_cancelled = attrString(stored.attrs, "status").value_or("") == "cancelled";
  const int64_t stop_after = attrInt(stored.attrs, "steps_completed").value_or(-1);
  try {
    const FashionMnist fm = loadFashionMnist(rs.data_dir);
    const ImageDataset train = fm.train.head(rs.train_limit), test = fm.test.head(rs.test_limit);
    TrainingRun run(rs.config, train, test);
    try {
      run.run([&](double f, const std::string& st) {
        if (was_cancelled && run.result().steps_done >= stop_after) return false;
        return progress ? progress(f, st) : true;
      });
    } catch (const Cancelled&) {
      if (!was_cancelled || run.result().steps_done != stop_after) {
        *error = "cancelled";
        return std::nullopt;
      }
    }
    return trainingRunToSession(run.result(), stored.id, stored.config_json);
  } catch (const std::exception& e) {
    *error = e.what();
  }
  return std::nullopt;
}

std::optional<Run> reproduceWeightGemmRun(const Run& stored, int threads, const ProgressFn& progress,
                                          std::string* error) {
  const auto doc = parseStoredConfig(stored.config_json, error);
  if (!doc) return std::nullopt;
  auto wc = parseWeightGemmRunConfig(doc->root(), error);
  if (!wc) return std::nullopt;
  wc->gemm.threads = threads;
  const Dataset* a = stored.find(layout::inputs("A"));
  const Dataset* b = stored.find(layout::inputs("B"));
  if (!a || !b || a->dtype != DType::Float32 || b->dtype != DType::Float32 || a->shape.size() != 2 ||
      b->shape.size() != 2 || a->shape[1] != b->shape[0]) {
    *error = "the run lacks float32 inputs/A [M,K] and inputs/B [K,N]";
    return std::nullopt;
  }
  try {
    return weightGemmRunFromInputs(a->f32, b->f32, a->shape[0], a->shape[1], b->shape[1],
                                   attrString(stored.attrs, "layer").value_or("fc?"), *wc, stored.id,
                                   stored.config_json, nullptr, progress);
  } catch (const std::exception& e) {
    *error = e.what();
  }
  return std::nullopt;
}

} // namespace fp8lab

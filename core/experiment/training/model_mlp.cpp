// FP8 Lab — the Fashion-MNIST MLP as a training model kind (training_models.h): the run without
// "model" in its config (training/trainer.h, training/mlp.h).
#include "experiment/training/model_mlp.h"
#include "experiment/training/training_config.h"
#include "experiment/training/training_experiment.h"
#include "experiment/training/training_job.h"
#include "experiment/training/training_keys.h"
#include "experiment/training/training_models.h"
#include "training/fashion_mnist.h"
#include "training/trainer.h"
#include "training/training_session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fp8lab {

namespace {

constexpr int64_t kTrainImages = 60000; // Fashion-MNIST's training split

int64_t images(const TrainingRunSpec& s) {
  return mlpRun(s).train_limit > 0 ? std::min(mlpRun(s).train_limit, kTrainImages) : kTrainImages;
}

int64_t stepsPerEpoch(const TrainingRunSpec& s) {
  const int64_t batch = std::max(1, mlpRun(s).config.batch_size);
  return (images(s) + batch - 1) / batch;
}

/// A Fashion-MNIST run: the data set of its directory (loaded once per experiment), cut to the
/// run's train_limit / test_limit.
class MlpJob final : public TrainingJob {
public:
  MlpJob(TrainingRunSpec spec, const FashionMnist& fm)
      : spec_(std::move(spec)), fm_(fm), train_(fm.train.head(mlpRun(spec_).train_limit)),
        test_(fm.test.head(mlpRun(spec_).test_limit)) {}
  int64_t stepsPerEpoch() const override {
    return (train_.count + mlpRun(spec_).config.batch_size - 1) / mlpRun(spec_).config.batch_size;
  }
  int64_t items() const override { return train_.count; }
  int64_t steps() const override { return stepsPerEpoch() * mlpRun(spec_).config.epochs; }
  void build(GemmBackend* backend) override { run_.emplace(mlpRun(spec_).config, train_, test_, backend); }
  void run(const ProgressFn& progress) override { run_->run(progress); }
  int64_t stepsDone() const override { return run_->result().steps_done; }
  size_t epochsDone() const override { return run_->result().epochs.size(); }
  EpochRecord epoch(size_t i) const override { return run_->result().epochs.at(i); }
  Run session(const std::string& run_id, const std::string& config_json) const override {
    return trainingRunToSession(run_->result(), run_id, config_json);
  }
  TrainingRunOutcome outcome(const Run& stored, bool cancelled) const override {
    const TrainingResult& res = run_->result();
    TrainingRunOutcome o = trainingOutcome(stored, res, cancelled);
    o.steps_total = res.steps_per_epoch * mlpRun(spec_).config.epochs;
    for (const auto& e : res.epochs) o.test_accuracy.push_back(e.test_accuracy);
    if (!res.epochs.empty()) {
      double sum = 0;
      for (const auto& e : res.epochs) sum += e.seconds;
      o.mean_epoch_seconds = sum / static_cast<double>(res.epochs.size());
    }
    return o;
  }
  std::optional<TrainedLinears> trainedLinears() const override {
    return TrainedLinears{&run_->result().weights, &fm_.test};
  }

private:
  TrainingRunSpec spec_;
  const FashionMnist& fm_;
  ImageDataset train_, test_;
  std::optional<TrainingRun> run_;
};

/// The MLP's members of a run object (the kind's `parse`, training_models.h).
void parseMlp(ConfigReader& r, const Json& o, const ConfigPath& where, const TrainingRunConfig& shared,
              TrainingRunSpec& s) {
  TrainingConfig& c = mlpRun(s).config;
  static_cast<TrainingRunConfig&>(c) = shared;
  if (ConfigReader::has(o, "dataset") && lowerName(r.string(o, "dataset", where, {})) != "fashion-mnist")
    r.fail(where.member("dataset"), "only \"fashion-mnist\" is supported");
  mlpRun(s).data_dir = r.string(o, "data_dir", where, {});
  mlpRun(s).train_limit = trainingInteger(r, o, "train_limit", "mlp", where);
  mlpRun(s).test_limit = trainingInteger(r, o, "test_limit", "mlp", where);
  if (ConfigReader::has(o, "layers")) {
    const Json& lv = o["layers"];
    const ConfigPath w = where.member("layers");
    c.layer_sizes.clear();
    if (!lv.is_array()) r.fail(w, "must be an array of sizes");
    for (const Json& v : lv.is_array() ? lv : Json::array()) {
      const bool integral =
          v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
      const double d = v.is_number() ? v.get<double>() : -1;
      if (!integral || d < 1 || d > 65536) {
        r.fail(w, "sizes must be integers in 1..65536");
        continue;
      }
      c.layer_sizes.push_back(static_cast<int>(d));
    }
    if (!c.layer_sizes.empty() && c.layer_sizes.front() != 784) r.fail(w, "the first size must be 784 (28×28 pixels)");
    if (!c.layer_sizes.empty() && c.layer_sizes.back() != 10) r.fail(w, "the last size must be 10 (classes)");
    if (c.layer_sizes.size() < 2) r.fail(w, "needs at least input and output sizes");
  }
  c.batch_size = static_cast<int>(trainingInteger(r, o, "batch_size", "mlp", where));
  c.epochs = static_cast<int>(trainingInteger(r, o, "epochs", "mlp", where));
  c.eval_batch_size = static_cast<int>(trainingInteger(r, o, "eval_batch_size", "mlp", where));
  if (const Json* oo = r.object(o, "optimizer", where)) {
    const ConfigPath w = where.member("optimizer");
    r.checkKeys(*oo, w, {"name", "learning_rate", "beta1", "beta2", "epsilon"});
    if (lowerName(r.string(*oo, "name", w, "adam")) != "adam") r.fail(w.member("name"), "only \"adam\" is supported");
    c.learning_rate = static_cast<float>(trainingNumber(r, *oo, "optimizer.learning_rate", "mlp", w));
    c.beta1 = static_cast<float>(trainingNumber(r, *oo, "optimizer.beta1", "mlp", w));
    c.beta2 = static_cast<float>(trainingNumber(r, *oo, "optimizer.beta2", "mlp", w));
    c.adam_epsilon = static_cast<float>(trainingNumber(r, *oo, "optimizer.epsilon", "mlp", w));
    // Checked here, at the key, as well as by TrainingConfig::validate.
    auto num = [](float v) { return Json(v).dump(); };
    if (r.ok() && !(c.learning_rate > 0))
      r.fail(w.member("learning_rate"),
             "must be a positive number (Adam's step size; got " + num(c.learning_rate) + ")");
    for (const auto& [key, v] : {std::pair{"beta1", c.beta1}, std::pair{"beta2", c.beta2}})
      if (r.ok() && !(v >= 0 && v < 1)) r.fail(w.member(key), "must be in [0, 1) (got " + num(v) + ")");
    if (r.ok() && !(c.adam_epsilon > 0))
      r.fail(w.member("epsilon"), "must be a positive number (got " + num(c.adam_epsilon) + ")");
  }
  if (const Json* so = r.object(o, "spike", where)) {
    const ConfigPath w = where.member("spike");
    r.checkKeys(*so, w, {"step", "factor", "layer", "row", "col"});
    c.spike.enabled = true;
    c.spike.step = r.integer(*so, "step", w, 0, 0, int64_t{1} << 40);
    c.spike.factor = static_cast<float>(r.number(*so, "factor", w, 1.0));
    c.spike.layer = static_cast<int>(r.integer(*so, "layer", w, 0, 0, 64));
    c.spike.row = r.integer(*so, "row", w, -1, 0, 65535);
    c.spike.col = r.integer(*so, "col", w, -1, 0, 65535);
    const int linears = static_cast<int>(c.layer_sizes.size()) - 1;
    if (r.ok() && linears > 0 && c.spike.layer >= linears)
      r.fail(w.member("layer"), "must name a Linear layer: 0 … " + std::to_string(linears - 1) +
                                    " (0-based: 0 is fc1; got " + std::to_string(c.spike.layer) + ")");
    if (r.ok() && linears > 0 && c.spike.col >= c.layer_sizes[static_cast<size_t>(c.spike.layer)])
      r.fail(w.member("col"), "must be below the input size of layer " + std::to_string(c.spike.layer) + " (fc" +
                                  std::to_string(c.spike.layer + 1) + " takes " +
                                  std::to_string(c.layer_sizes[static_cast<size_t>(c.spike.layer)]) +
                                  " inputs: col 0 … " +
                                  std::to_string(c.layer_sizes[static_cast<size_t>(c.spike.layer)] - 1) + ")");
  }
  if (r.ok())
    if (const std::string v = c.validate(); !v.empty()) r.fail(where, v);
}

/// The MLP's entries of the training schema (training_schema.h).
std::vector<TrainingParam> mlpSchema() {
  using T = ParamType;
  return {
      trainingChoiceEntry("mlp", "block_gemm", choiceNames({BlockGemmPath::FakeQuant, BlockGemmPath::Core}),
                          "fake_quant", kTrainingBlockGemmHelp),
      trainingEntry("mlp", "epochs", T::Integer, "epochs", 1, 1000, "3", "Passes over the training images."),
      trainingEntry("mlp", "batch_size", T::Integer, "images", 1, 60000, "128", "Images per optimizer step."),
      trainingEntry("mlp", "eval_batch_size", T::Integer, "images", 1, 10000, "1000",
                    "Images per forward pass of the test-set evaluation (no effect on the result)."),
      trainingEntry("mlp", "train_limit", T::Integer, "images", 0, 60000, "0",
                    "Train on the first N of the 60000 training images (0: all)."),
      trainingEntry("mlp", "test_limit", T::Integer, "images", 0, 10000, "0",
                    "Evaluate on the first N of the 10000 test images (0: all)."),
      trainingEntry("mlp", "optimizer.learning_rate", T::Number, "", 0, 0, "0.001",
                    "Adam's step size (Kingma & Ba 2015)."),
      trainingEntry("mlp", "optimizer.beta1", T::Number, "", 0, 0, "0.9", "Adam's first-moment decay."),
      trainingEntry("mlp", "optimizer.beta2", T::Number, "", 0, 0, "0.999", "Adam's second-moment decay."),
      trainingEntry("mlp", "optimizer.epsilon", T::Number, "", 0, 0, "1e-08", "Adam's epsilon."),
  };
}

} // namespace

MlpRunConfig& mlpRun(TrainingRunSpec& spec) {
  return spec.modelConfig<MlpRunConfig>();
}

const MlpRunConfig& mlpRun(const TrainingRunSpec& spec) {
  return spec.modelConfig<MlpRunConfig>();
}

const TrainingModelKind& mlpModelKind() {
  static const TrainingModelKind k{
      "mlp",
      "MLP on Fashion-MNIST",
      "784-256-128-10 Linear\u2013ReLU layers fc1\u2026fc3 on the images of the Debian package dataset-fashion-mnist",
      "final_test_loss",
      "test loss (nats)",
      /*trains_beside=*/true,
      /*weight_gemm=*/true,
      {"dataset", "data_dir", "train_limit", "test_limit", "layers", "epochs", "eval_batch_size", "spike"},
      "the Fashion-MNIST MLP (a run without \"model\")",
      parseMlp,
      [](TrainingRunSpec& s, const std::string& dir) { mlpRun(s).data_dir = dir; },
      mlpSchema,
      [](TrainingRunSpec& s) -> TrainingRunConfig& { return mlpRun(s).config; },
      [](const TrainingRunSpec& s) { return SiteTable::mlp(mlpRun(s).config.layer_sizes); },
      [](const TrainingRunSpec& s) { return int64_t(mlpRun(s).config.epochs) * stepsPerEpoch(s); },
      [](const TrainingRunSpec& s) { return kTrainImages / std::max(1, mlpRun(s).config.batch_size); },
      [](TrainingRunSpec& s, int64_t steps) {
        mlpRun(s).config.epochs = 1;
        mlpRun(s).train_limit = std::min<int64_t>(kTrainImages, steps * mlpRun(s).config.batch_size);
        if (mlpRun(s).test_limit == 0) mlpRun(s).test_limit = 2000;
      },
      [](const TrainingRunSpec& s) {
        return trainingConfigJson(mlpRun(s).config, s.id, mlpRun(s).train_limit, mlpRun(s).test_limit,
                                  mlpRun(s).data_dir);
      },
      [](const std::string& label, const TrainingRunSpec& s, int64_t steps_per_epoch, int64_t images) {
        const TrainingConfig& c = mlpRun(s).config;
        char t[512];
        std::snprintf(t, sizeof t, "%s: %s, %lld %s of %lld steps (batch %lld, %lld images)", label.c_str(),
                      c.fp8() ? c.scalingName().c_str() : "FP32 baseline", static_cast<long long>(c.epochs),
                      c.epochs == 1 ? "epoch" : "epochs", static_cast<long long>(steps_per_epoch),
                      static_cast<long long>(c.batch_size), static_cast<long long>(images));
        return std::string(t);
      },
      [](Json&, const TrainingRunOutcome&) {},
      [](const Run& run, const std::string& stored_id, std::vector<std::string>& lines) {
        if (!run.metrics.count("final_test_accuracy")) return;
        const auto m = [&](const char* k) { return run.metrics.count(k) ? run.metrics.at(k).value : std::nan(""); };
        char t[512];
        std::snprintf(t, sizeof t, "%s: test accuracy %.2f %%, test loss %.4f nats after %lld steps", stored_id.c_str(),
                      100.0 * m("final_test_accuracy"), m("final_test_loss"),
                      static_cast<long long>(attrInt(run.attrs, "steps_completed").value_or(0)));
        lines.push_back(t);
      },
      [](const TrainingRunSpec& s, TrainingDataCache& data, std::string* error) -> std::unique_ptr<TrainingJob> {
        try {
          const FashionMnist& fm = data.get<FashionMnist>("fashion-mnist:" + mlpRun(s).data_dir,
                                                          [&] { return loadFashionMnist(mlpRun(s).data_dir); });
          return std::make_unique<MlpJob>(s, fm);
        } catch (const DatasetMissingError& e) {
          *error = e.what();
        } catch (const IdxError& e) {
          *error = std::string("Fashion-MNIST is damaged: ") + e.what();
        } catch (const std::exception& e) {
          *error = e.what();
        }
        return nullptr;
      },
      [](const Json& cfg, const Attributes&) {
        std::string label = "MLP";
        if (cfg.contains("layers") && cfg["layers"].is_array()) {
          std::string l;
          for (const Json& x : cfg["layers"]) l += (l.empty() ? " " : "-") + x.dump();
          label += l;
        }
        label += " on Fashion-MNIST";
        if (cfg.contains("epochs") && cfg["epochs"].is_number_integer())
          label += ", " + cfg["epochs"].dump() + (cfg["epochs"].get<int64_t>() == 1 ? " epoch" : " epochs");
        if (cfg.contains("train_limit") && cfg["train_limit"].is_number_integer() &&
            cfg["train_limit"].get<int64_t>() > 0)
          label += ", " + cfg["train_limit"].dump() + " training images";
        return label;
      },
  };
  return k;
}

} // namespace fp8lab

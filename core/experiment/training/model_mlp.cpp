// FP8 Lab — the Fashion-MNIST MLP as a training model kind (training_models.h): the run without
// "model" in its config (training/trainer.h, training/mlp.h).
#include "experiment/training/training_config.h"
#include "experiment/training/training_experiment.h"
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
  return s.train_limit > 0 ? std::min(s.train_limit, kTrainImages) : kTrainImages;
}

int64_t stepsPerEpoch(const TrainingRunSpec& s) {
  const int64_t batch = std::max(1, s.config.batch_size);
  return (images(s) + batch - 1) / batch;
}

} // namespace

const TrainingModelKind& mlpModelKind() {
  static const TrainingModelKind k{
      "mlp",
      "MLP on Fashion-MNIST",
      "784-256-128-10 Linear\u2013ReLU layers fc1\u2026fc3 on the images of the Debian package dataset-fashion-mnist",
      "final_test_loss",
      "test loss (nats)",
      [](TrainingRunSpec& s) -> TrainingRunConfig& { return s.config; },
      [](const TrainingRunSpec& s) { return SiteTable::mlp(s.config.layer_sizes); },
      [](const TrainingRunSpec& s) { return int64_t(s.config.epochs) * stepsPerEpoch(s); },
      [](const TrainingRunSpec& s) { return kTrainImages / std::max(1, s.config.batch_size); },
      [](TrainingRunSpec& s, int64_t steps) {
        s.config.epochs = 1;
        s.train_limit = std::min<int64_t>(kTrainImages, steps * s.config.batch_size);
        if (s.test_limit == 0) s.test_limit = 2000;
      },
      [](const TrainingRunSpec& s) {
        return trainingConfigJson(s.config, s.id, s.train_limit, s.test_limit, s.data_dir);
      },
      [](const std::string& label, const TrainingRunSpec& s, int64_t steps_per_epoch, int64_t images) {
        const TrainingConfig& c = s.config;
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
      [](const TrainingRunSpec& s, const std::string& run_id, const std::string& config_json, int64_t stop_after,
         const ProgressFn& progress, std::string* error) -> std::optional<Run> {
        try {
          const FashionMnist fm = loadFashionMnist(s.data_dir);
          const ImageDataset train = fm.train.head(s.train_limit), test = fm.test.head(s.test_limit);
          TrainingRun run(s.config, train, test);
          if (!trainAloneStopping([&](const ProgressFn& p) { run.run(p); }, [&] { return run.result().steps_done; },
                                  stop_after, progress, error))
            return std::nullopt;
          return trainingRunToSession(run.result(), run_id, config_json);
        } catch (const std::exception& e) {
          *error = e.what();
        }
        return std::nullopt;
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

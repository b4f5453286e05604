// core/experiment/training/training_sweep.h and the "seeds" key of training configs: runs × seeds with their
// ids and seeds, shards that together hold every run once, resume from a session's runs, and the
// refusals of a bad "seeds" value.
#include <QtTest>

#include "experiment/training/training_report.h"
#include "experiment/training/training_sweep.h"
#include "json/json_document.h"

using namespace fp8lab;

namespace {

const char* kLm = R"({"type": "training", "seeds": "1-3",
  "defaults": {"model": {"kind": "transformer", "d_model": 16, "layers": 1, "heads": 2, "context": 16,
                         "ffn_hidden": 32},
               "data": {"text": "/nonexistent.txt"}, "steps": 20, "batch_size": 4},
  "runs": [{"id": "fp32", "precision": "fp32"}, {"id": "nvfp4", "precision": "fp8", "recipe": "te_nvfp4"}]})";

TrainingExperimentSpec parsed(const std::string& text, const TrainingOverrides& o = {}) {
  const JsonDocument d = JsonDocument::parse(text);
  std::string e;
  auto s = trainingExperimentToRun(d.root(), {}, &d, o, &e);
  if (!s) throw std::runtime_error(e);
  return *s;
}

std::string parseError(const std::string& text) {
  const JsonDocument d = JsonDocument::parse(text);
  std::string e;
  return parseTrainingExperiment(d.root(), &e, &d) ? std::string() : e;
}

} // namespace

class TestTrainingSweep : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // "seeds": "1-3" repeats both runs with seeds 1, 2, 3, run-major, ids <id>-s<seed>.
  void seedsKeyRepeatsEveryRun() {
    const TrainingExperimentSpec s = parsed(kLm);
    QCOMPARE(s.seeds, (std::vector<uint64_t>{1, 2, 3}));
    QCOMPARE(s.runs.size(), size_t(6));
    const std::vector<std::string> ids{"fp32-s1", "fp32-s2", "fp32-s3", "nvfp4-s1", "nvfp4-s2", "nvfp4-s3"};
    for (size_t i = 0; i < ids.size(); ++i) {
      QCOMPARE(s.runs[i].id, ids[i]);
      QCOMPARE(s.runs[i].model_kind, std::string("transformer"));
      QCOMPARE(lmRun(s.runs[i]).seed, uint64_t(i % 3 + 1));
      // The stored config carries the seed, so the run reproduces alone.
      QCOMPARE(JsonDocument::parse(s.runs[i].configJson()).root()["seed"].get<uint64_t>(), uint64_t(i % 3 + 1));
    }
    // --seeds replaces the key.
    TrainingOverrides o;
    o.seeds = std::vector<uint64_t>{7};
    const TrainingExperimentSpec one = parsed(kLm, o);
    QCOMPARE(one.runs.size(), size_t(2));
    QCOMPARE(one.runs[1].id, std::string("nvfp4-s7"));
    QCOMPARE(lmRun(one.runs[1]).seed, uint64_t(7));
  }

  // A single-run MLP config takes the key too, as a list.
  void singleRunMlpConfig() {
    const TrainingExperimentSpec s =
        parsed(R"({"type": "training", "id": "m", "precision": "fp8", "recipe": "te_nvfp4", "seeds": [4, 2]})");
    QCOMPARE(s.runs.size(), size_t(2));
    QCOMPARE(s.runs[0].id, std::string("m-s4"));
    QCOMPARE(mlpRun(s.runs[0]).config.seed, uint64_t(4));
    QCOMPARE(mlpRun(s.runs[1]).config.seed, uint64_t(2));
  }

  void badSeedsAreRefused() {
    QVERIFY(parseError(R"({"type": "training", "seeds": []})").find("seeds: an empty list") != std::string::npos);
    QVERIFY2(parseError(R"({"type": "training", "seeds": [1, 1]})").find("seed 1 is listed twice") != std::string::npos,
             parseError(R"({"type": "training", "seeds": [1, 1]})").c_str());
    QVERIFY(parseError(R"({"type": "training", "seeds": [-1]})").find("entry 0 is not an integer seed") !=
            std::string::npos);
    QVERIFY(parseError(R"({"type": "training", "seeds": "1-x"})").find("'1-x'") != std::string::npos);
  }

  // Shards i/n: runs i, i + n, ...; together every run once.
  void shardsSplitTheRuns() {
    const TrainingExperimentSpec s = parsed(kLm);
    const TrainingExperimentSpec a = trainingShard(s, 0, 4), b = trainingShard(s, 1, 4);
    QCOMPARE(a.runs.size(), size_t(2));
    QCOMPARE(a.runs[0].id, std::string("fp32-s1"));
    QCOMPARE(a.runs[1].id, std::string("nvfp4-s2"));
    QCOMPARE(b.runs[1].id, std::string("nvfp4-s3"));
    size_t total = 0;
    for (int i = 0; i < 4; ++i) total += trainingShard(s, i, 4).runs.size();
    QCOMPARE(total, size_t(6));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, trainingShard(s, 4, 4));
  }

  // Resume: a completed run with the same config is skipped (whatever its thread count); a cancelled
  // one, or the same id with another seed, is run again.
  void resumeSkipsFinishedRuns() {
    TrainingExperimentSpec s = parsed(kLm);
    auto stored = [&](size_t i, const std::string& status, const std::string& config) {
      RunInfo r;
      r.id = s.runs[i].id;
      r.type = "training";
      r.attrs["status"] = status;
      r.config_json = config;
      return r;
    };
    Json threaded = JsonDocument::parse(s.runs[1].configJson()).root();
    threaded["threads"] = 2;
    Json other_seed = JsonDocument::parse(s.runs[2].configJson()).root();
    other_seed["seed"] = 9;
    const std::vector<RunInfo> runs{stored(0, "completed", s.runs[0].configJson()),
                                    stored(1, "completed", threaded.dump()), stored(2, "completed", other_seed.dump()),
                                    stored(3, "cancelled", s.runs[3].configJson())};
    const std::vector<std::string> removed = removeStoredTrainingRuns(&s, runs);
    QCOMPARE(removed, (std::vector<std::string>{"fp32-s1", "fp32-s2"}));
    QCOMPARE(s.runs.size(), size_t(4));
    QCOMPARE(s.runs[0].id, std::string("fp32-s3"));
    QCOMPARE(s.runs[1].id, std::string("nvfp4-s1"));
  }
};

QTEST_APPLESS_MAIN(TestTrainingSweep)
#include "test_training_sweep.moc"

// The training parameter schema (core/experiment/training/training_schema.h) is what the config
// parser reads: a config that leaves a key out gets the entry's default, and a value one past the
// entry's maximum is refused with the key's path. The defaults are the ones docs/training.md
// states for each model (the MLP: 3 epochs of batch 128, Adam 1e-3; the transformer: d_model 64,
// 2 blocks of 4 heads, context 64, ffn_hidden 4·d_model, 600 steps of 16 sequences).
#include "experiment/training/training_config.h"
#include "experiment/training/training_schema.h"
#include "json/json_document.h"
#include "training/nonfinite.h"
#include "training/optimizer.h"

#include <QFile>
#include <QtTest>

#include <set>

using namespace fp8lab;

namespace {

std::optional<TrainingExperimentSpec> parse(const Json& j, std::string* err) {
  return parseTrainingExperiment(j, err);
}

Json lm(Json extra = Json::object()) {
  Json run = {{"id", "r"}, {"model", {{"kind", "transformer"}}}};
  run.merge_patch(extra);
  return Json{{"type", "training"}, {"runs", Json::array({run})}};
}

} // namespace

class TestTrainingSchema : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void defaultsAreTheSchemas() {
    std::string err;
    const auto mlp = parse(Json{{"type", "training"}, {"runs", Json::array({Json{{"id", "m"}}})}}, &err);
    QVERIFY2(mlp, err.c_str());
    const TrainingConfig& c = mlpRun(mlp->runs.front()).config;
    auto def = [](const char* key, std::string_view m) { return std::stod(trainingParam(key, m).def); };
    QCOMPARE(double(c.epochs), def("epochs", "mlp"));
    QCOMPARE(double(c.batch_size), def("batch_size", "mlp"));
    QCOMPARE(c.learning_rate, float(def("optimizer.learning_rate", "mlp")));
    QCOMPARE(c.beta2, float(def("optimizer.beta2", "mlp")));
    QCOMPARE(c.epochs, 3);
    QCOMPARE(c.batch_size, 128);
    QCOMPARE(c.learning_rate, 1e-3f);

    const auto l = parse(lm(), &err);
    QVERIFY2(l, err.c_str());
    const LmTrainingConfig& t = lmRun(l->runs.front());
    QCOMPARE(double(t.model.d_model), def("model.d_model", "transformer"));
    QCOMPARE(double(t.model.layers), def("model.layers", "transformer"));
    QCOMPARE(double(t.model.heads), def("model.heads", "transformer"));
    QCOMPARE(double(t.model.context), def("model.context", "transformer"));
    QCOMPARE(double(t.steps), def("steps", "transformer"));
    QCOMPARE(double(t.batch_size), def("batch_size", "transformer"));
    QCOMPARE(double(t.warmup_steps), def("optimizer.warmup_steps", "transformer"));
    QCOMPARE(double(t.eval_every), def("eval.every", "transformer"));
    QCOMPARE(t.model.d_model, int64_t(64));
    QCOMPARE(t.model.ffn_hidden, 4 * t.model.d_model); // the entry without a default: 4·d_model
    QCOMPARE(t.steps, int64_t(600));
    QCOMPARE(t.batch_size, 16);
  }

  // One past each maximum is refused at its path, naming the schema's range.
  void rangesAreTheSchemas() {
    struct Case {
      const char* key;
      Json patch;
      const char* path;
    };
    const double dmax = trainingParam("model.d_model", "transformer").max;
    const double smax = trainingParam("steps", "transformer").max;
    const double bmax = trainingParam("batch_size", "transformer").max;
    const Case cases[] = {
        {"model.d_model", Json{{"model", {{"d_model", dmax + 1}}}}, "model.d_model"},
        {"steps", Json{{"steps", smax + 1}}, "steps"},
        {"batch_size", Json{{"batch_size", bmax + 1}}, "batch_size"},
    };
    for (const Case& c : cases) {
      std::string err;
      QVERIFY2(!parse(lm(c.patch), &err), c.key);
      const std::string range = trainingParam(c.key, "transformer").rangeText();
      QVERIFY2(err.find(c.path) != std::string::npos && err.find(range) != std::string::npos, err.c_str());
    }
    std::string err;
    const Json too_many = {{"type", "training"}, {"runs", Json::array({Json{{"id", "m"}, {"epochs", 1001}}})}};
    QVERIFY(!parse(too_many, &err));
    QVERIFY2(err.find("epochs") != std::string::npos, err.c_str());
  }

  // Every choice key: left out, the parsed config holds the entry's default (docs/training.md's
  // defaults: fp8, delayed-flax, stop, fake_quant for the MLP and core for the language model, GELU,
  // LayerNorm, pre-norm, Adam); a value outside the choices is refused with the key's path and the
  // entry's choices listed.
  void choicesAreTheSchemas() {
    std::string err;
    const auto m = parse(Json{{"type", "training"}, {"runs", Json::array({Json{{"id", "m"}}})}}, &err);
    QVERIFY2(m, err.c_str());
    const TrainingConfig& c = mlpRun(m->runs[0]).config;
    auto def = [](const char* key, std::string_view model) { return trainingParam(key, model).def; };
    QCOMPARE(std::string(toString(c.precision)), def("precision", ""));
    QCOMPARE(std::string(toString(c.scaling.kind)), def("scaling.strategy", ""));
    QCOMPARE(std::string(toString(c.on_nonfinite)), def("on_nonfinite", ""));
    QCOMPARE(std::string(toString(c.block_gemm)), def("block_gemm", "mlp"));
    QCOMPARE(std::string(toString(c.block_gemm)), std::string("fake_quant"));
    const auto l = parse(lm(), &err);
    QVERIFY2(l, err.c_str());
    const LmTrainingConfig& t = lmRun(l->runs[0]);
    QCOMPARE(std::string(toString(t.block_gemm)), def("block_gemm", "transformer"));
    QCOMPARE(std::string(toString(t.block_gemm)), std::string("core"));
    QCOMPARE(std::string(toString(t.model.ffn)), def("model.ffn", "transformer"));
    QCOMPARE(std::string(toString(t.model.norm)), def("model.norm", "transformer"));
    QCOMPARE(t.model.pre_norm, def("model.norm_position", "transformer") == "pre");
    QCOMPARE(std::string(toString(t.optimizer.kind)), def("optimizer.name", "transformer"));
    struct Case {
      const char* key;
      std::string_view model;
      Json patch;
    };
    const Case cases[] = {
        {"precision", "", Json{{"precision", "fp16"}}},
        {"scaling.strategy", "", Json{{"scaling", {{"strategy", "dalayed"}}}}},
        {"on_nonfinite", "", Json{{"on_nonfinite", "halt"}}},
        {"block_gemm", "transformer", Json{{"block_gemm", "gpu"}}},
        {"model.ffn", "transformer", Json{{"model", {{"ffn", "relu"}}}}},
        {"model.norm", "transformer", Json{{"model", {{"norm", "batchnorm"}}}}},
        {"model.norm_position", "transformer", Json{{"model", {{"norm_position", "middle"}}}}},
        {"optimizer.name", "transformer", Json{{"optimizer", {{"name", "lion"}}}}},
    };
    for (const Case& k : cases) {
      QVERIFY2(!parse(lm(k.patch), &err), k.key);
      std::string choices;
      for (const std::string& v : trainingParam(k.key, k.model).choices) choices += (choices.empty() ? "" : ", ") + v;
      QVERIFY2(err.find(k.key) != std::string::npos && err.find("(" + choices + ")") != std::string::npos, err.c_str());
    }
  }

  // docs/training.md lists the schema as trainingSchemaMarkdown() writes it, between its markers;
  // FP8LAB_UPDATE_DOCS=1 rewrites the list.
  void docsListTheSchema() {
    QFile f(QStringLiteral(FP8LAB_SOURCE_DIR "/docs/training.md"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(f.readAll());
    f.close();
    const QString begin = QStringLiteral("<!-- training-schema:begin -->\n"),
                  end = QStringLiteral("<!-- training-schema:end -->");
    const qsizetype b = text.indexOf(begin), e = text.indexOf(end);
    QVERIFY(b >= 0 && e > b);
    const QString want = QString::fromStdString(trainingSchemaMarkdown());
    const QString have = text.mid(b + begin.size(), e - b - begin.size());
    if (qEnvironmentVariableIntValue("FP8LAB_UPDATE_DOCS") == 1 && have != want) {
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write((text.left(b + begin.size()) + want + text.mid(e)).toUtf8());
      return;
    }
    QVERIFY2(have == want, "docs/training.md's parameter table differs from the schema: run with FP8LAB_UPDATE_DOCS=1");
  }

  // Every key named once per model, every integer entry with a range, and the Markdown table one row
  // per entry.
  void tableIsWellFormed() {
    std::set<std::pair<std::string, std::string>> seen;
    for (const TrainingParam& p : trainingSchema()) {
      QVERIFY2(seen.insert({p.spec.key, p.model}).second, p.spec.key.c_str());
      if (p.spec.type == ParamType::Integer) QVERIFY2(p.spec.max > p.spec.min, p.spec.key.c_str());
      QVERIFY2(!p.spec.help.empty(), p.spec.key.c_str());
    }
    const std::string md = trainingSchemaMarkdown();
    QCOMPARE(size_t(std::count(md.begin(), md.end(), '\n')), trainingSchema().size() + 2);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, trainingParam("no_such_key", "transformer"));
  }
};

QTEST_GUILESS_MAIN(TestTrainingSchema)
#include "test_training_schema.moc"

// The experiment panel takes its numeric widgets' ranges and its range validation from the
// parameter schema (core/experiment/param_schema.h): for every schema entry the panel shows, the
// widget's minimum and maximum are the schema's, and validate() refuses max + 1 naming the
// schema's range. With tests/core/experiment/test_param_schema.cpp (the gemm flags and the config
// parser), a range changed in the schema changes all three front ends.
#include <QComboBox>
#include <QtTest>

#include "cli_runner.h"
#include "param_samples.h"

#include "experiment/gemm/gemm_config.h"
#include "experiment/param_schema.h"
#include "experiment/training/training_schema.h"
#include "forms/experiment_panel.h"
#include "forms/experiment_runner.h"

#include <QFile>
#include <QSpinBox>
#include <QTemporaryDir>

using namespace fp8lab;
using namespace fp8lab::ui;

namespace {

/// The panel's widget of each schema entry it shows (object name), and its key in the canonical
/// config when validate() checks it there ("" = the widget alone bounds it).
struct PanelField {
  const char* key;
  ParamScope scope;
  const char* widget;
  const char* json_key;
};
const PanelField kFields[] = {{"m", ParamScope::Top, "m", "m"},
                              {"n", ParamScope::Top, "n", "n"},
                              {"k", ParamScope::Top, "k", "k"},
                              {"promotion_interval", ParamScope::Top, "promotionInterval", "promotion_interval"},
                              {"fast_accum_bits", ParamScope::Top, "fastAccumBits", "fast_accum_bits"},
                              {"history_len", ParamScope::None, "trainHistory", ""}};

} // namespace

class TestParamSchemaPanel : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void widgetRangesAreTheSchemas() {
    ExperimentPanel panel;
    for (const PanelField& f : kFields) {
      const ParamSpec& p = param(f.key, f.scope);
      auto* w = panel.findChild<QSpinBox*>(QString::fromLatin1(f.widget));
      QVERIFY2(w, f.widget);
      QCOMPARE(double(w->minimum()), p.min);
      QCOMPARE(double(w->maximum()), p.max);
    }
    // The unified values (the schema test pins them to their sources): M up to 2^20, fast bits 2..48.
    QCOMPARE(panel.findChild<QSpinBox*>(QStringLiteral("m"))->maximum(), 1048576);
    QCOMPARE(panel.findChild<QSpinBox*>(QStringLiteral("fastAccumBits"))->minimum(), 2);
    QCOMPARE(panel.findChild<QSpinBox*>(QStringLiteral("fastAccumBits"))->maximum(), 48);
  }

  // The Training tab's numbers come from the training schema: each spin box's range and, before
  // any edit, its value are the entry's (the MLP's where both models have the key; the LM's
  // ffn_hidden computes its default, 4·d_model). The GEMM tab's seed starts at the GEMM schema's.
  void trainingWidgetsAreTheTrainingSchemas() {
    ExperimentPanel panel;
    struct Field {
      const char* key;
      std::string model;
      const char* widget;
    };
    const Field fields[] = {{"model.d_model", "transformer", "dModel"},
                            {"model.layers", "transformer", "lmLayers"},
                            {"model.heads", "transformer", "heads"},
                            {"model.context", "transformer", "context"},
                            {"model.ffn_hidden", "transformer", "ffnHidden"},
                            {"steps", "transformer", "lmSteps"},
                            {"epochs", "mlp", "epochs"},
                            {"batch_size", "mlp", "batchSize"},
                            {"train_limit", "mlp", "trainLimit"},
                            {"test_limit", "mlp", "testLimit"}};
    for (const Field& f : fields) {
      const ParamSpec& p = trainingParam(f.key, f.model);
      auto* w = panel.findChild<QSpinBox*>(QString::fromLatin1(f.widget));
      QVERIFY2(w, f.widget);
      QCOMPARE(double(w->minimum()), p.min);
      QCOMPARE(double(w->maximum()), p.max);
      if (!p.def.empty()) QCOMPARE(w->value(), std::stoi(p.def));
    }
    QCOMPARE(panel.findChild<QSpinBox*>(QStringLiteral("ffnHidden"))->value(),
             4 * std::stoi(trainingParam("model.d_model", "transformer").def));
    QCOMPARE(panel.findChild<QSpinBox*>(QStringLiteral("trainSeed"))->value(),
             std::stoi(trainingParam("seed", "").def));
    // The values the parser reads when a config leaves the keys out (training_config.cpp):
    // d_model 64 in [1, 4096], 600 LM steps, an MLP batch of 128.
    QCOMPARE(panel.findChild<QSpinBox*>(QStringLiteral("dModel"))->maximum(), 4096);
    QCOMPARE(panel.findChild<QSpinBox*>(QStringLiteral("lmSteps"))->value(), 600);
    QCOMPARE(panel.findChild<QSpinBox*>(QStringLiteral("batchSize"))->value(), 128);
    QCOMPARE(panel.findChild<QSpinBox*>(QStringLiteral("seed"))->value(), std::stoi(param("seed").def));
  }

  // The Training tab's choice boxes list the schema's choices (their data: the config's values),
  // in its order, with its default chosen before any edit (fp8, delayed-flax, GELU, LayerNorm,
  // pre-norm); the model box lists the registry's kinds (mlp, transformer).
  void trainingChoicesAreTheTrainingSchemas() {
    ExperimentPanel panel;
    struct Field {
      const char* key;
      std::string model;
      const char* widget;
    };
    const Field fields[] = {{"precision", "", "trainPrecision"},
                            {"scaling.strategy", "", "trainStrategy"},
                            {"model.ffn", "transformer", "ffn"},
                            {"model.norm", "transformer", "norm"},
                            {"model.norm_position", "transformer", "normPosition"}};
    for (const Field& f : fields) {
      const ParamSpec& p = trainingParam(f.key, f.model);
      auto* c = panel.findChild<QComboBox*>(QString::fromLatin1(f.widget));
      QVERIFY2(c, f.widget);
      QCOMPARE(size_t(c->count()), p.choices.size());
      for (int i = 0; i < c->count(); ++i)
        QCOMPARE(c->itemData(i).toString(), QString::fromStdString(p.choices[size_t(i)]));
      QCOMPARE(c->currentData().toString(), QString::fromStdString(p.def));
    }
    QCOMPARE(panel.findChild<QComboBox*>(QStringLiteral("trainStrategy"))->currentData().toString(),
             QStringLiteral("delayed-flax"));
    auto* model = panel.findChild<QComboBox*>(QStringLiteral("trainModel"));
    QVERIFY(model);
    QCOMPARE(model->count(), 2);
    QCOMPARE(model->itemData(0).toString(), QStringLiteral("mlp"));
    QCOMPARE(model->itemData(1).toString(), QStringLiteral("transformer"));
  }

  void validationRefusesPastTheSchemasMax() {
    for (const PanelField& f : kFields) {
      if (!*f.json_key) continue;
      const ParamSpec& p = param(f.key, f.scope);
      QJsonObject c = ExperimentPanel::defaultConfig();
      c[QString::fromLatin1(f.json_key)] = p.max + 1;
      bool found = false;
      for (const auto& pr : ExperimentPanel::validate(c, QStringLiteral("cpu"), false, {}))
        found |= pr.blocking && pr.reason.contains(QString::fromStdString(p.rangeText()));
      QVERIFY2(found, f.key);
    }
  }

  // flag → config → panel → config: for every GEMM config entry with a flag, the canonical config
  // `fp8lab-cli gemm --json` prints for its sample value loads into the panel (Load config…), and
  // the panel's config, with the defaults filled in (canonicalGemmConfig), is that config again.
  // The entries the panel has no field for are refused by Load config… and are exactly the list
  // below, so a new schema entry either reaches the panel or is added here on purpose.
  void flagToConfigToPanelToConfig() {
    QTemporaryDir dir;
    QStringList refused;
    int checked = 0;
    for (const ParamSpec& p : paramSchema()) {
      if (p.flag.empty() || !testsupport::inConfig(p) || !p.usedBy("gemm") || p.type == ParamType::Text) continue;
      QStringList args{QStringLiteral("gemm"), QStringLiteral("--m"), QStringLiteral("8"),  QStringLiteral("--n"),
                       QStringLiteral("8"),    QStringLiteral("--k"), QStringLiteral("32"), QStringLiteral("--json")};
      Json ignored = Json::object();
      testsupport::addCompanions(p, &args, &ignored);
      const std::string v = testsupport::sampleOf(p);
      if (p.flag == "m" || p.flag == "n" || p.flag == "k") {
        const int i = args.indexOf(QStringLiteral("--") + QString::fromStdString(p.flag));
        args.removeAt(i);
        args.removeAt(i);
      }
      args << QStringLiteral("--") + QString::fromStdString(p.flag);
      if (p.type != ParamType::Boolean) args << QString::fromStdString(v);
      const testsupport::CliResult r = testsupport::runCli(args);
      QVERIFY2(r.code == 0, (p.flag + ": " + r.err.toStdString()).c_str());
      Json cfg = Json::parse(r.out.toStdString())["config"];
      // What a run stores is not an experiment parameter: `gemm` stores less than a panel run
      // (no inputs, no error maps), and the run's id is the session's.
      for (const char* k : {"name", "store_inputs", "store_quantized", "store_error_maps"}) cfg.erase(k);
      const QString f = dir.filePath(QStringLiteral("c.json"));
      QFile out(f);
      QVERIFY(out.open(QIODevice::WriteOnly));
      out.write(QByteArray::fromStdString(cfg.dump()));
      out.close();
      ExperimentPanel panel;
      QString why;
      if (!panel.loadConfig(f, &why)) {
        refused << QString::fromStdString(p.key);
        continue;
      }
      ++checked;
      const QByteArray again = canonicalGemmConfig(panel.config(), QString(), &why);
      QVERIFY2(!again.isEmpty(), qPrintable(QString::fromStdString(p.key) + QStringLiteral(": ") + why));
      Json got = Json::parse(again.toStdString());
      for (const char* k : {"store_inputs", "store_quantized", "store_error_maps"}) got.erase(k);
      QVERIFY2(got == cfg, (p.key + ": " + got.dump() + " != " + cfg.dump()).c_str());
    }
    refused.sort();
    // `fp8lab-cli run` only: the fast-accumulation group, promotion switch and MMA rules outside
    // an accumulation preset, the operand options beyond one distribution and its scale, the FP8
    // output's fixed scale, stochastic rounding, a second preset for B, the error maps' tile.
    QCOMPARE(refused, (QStringList{QStringLiteral("fast_accum_group"),
                                   QStringLiteral("fast_accum_promotes"),
                                   QStringLiteral("mma_alignment"),
                                   QStringLiteral("mma_block_scales"),
                                   QStringLiteral("mma_c"),
                                   QStringLiteral("mma_chunk"),
                                   QStringLiteral("mma_datapath"),
                                   QStringLiteral("mma_sum"),
                                   QStringLiteral("mma_sum_bits"),
                                   QStringLiteral("mma_sum_rounding"),
                                   QStringLiteral("outlier_axis"),
                                   QStringLiteral("outlier_channels"),
                                   QStringLiteral("outlier_factor"),
                                   QStringLiteral("outlier_fraction"),
                                   QStringLiteral("output_quant_scale"),
                                   QStringLiteral("rounding"),
                                   QStringLiteral("scaling_b"),
                                   QStringLiteral("sigma"),
                                   QStringLiteral("stochastic_bits"),
                                   QStringLiteral("tile")}));
    QCOMPARE(checked, 19);
    QCOMPARE(checked + int(refused.size()), 39); // test_param_schema's count of flagged entries
  }
};

QTEST_MAIN(TestParamSchemaPanel)
#include "test_param_schema_panel.moc"

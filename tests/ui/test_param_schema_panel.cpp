// The experiment panel takes its numeric widgets' ranges and its range validation from the
// parameter schema (core/experiment/param_schema.h): for every schema entry the panel shows, the
// widget's minimum and maximum are the schema's, and validate() refuses max + 1 naming the
// schema's range. With tests/core/data/test_param_schema.cpp (the gemm flags and the config
// parser), a range changed in the schema changes all three front ends.
#include <QtTest>

#include "experiment/param_schema.h"
#include "experiment_panel.h"

#include <QSpinBox>

using namespace fp8lab;
using namespace fp8lab::ui;

namespace {

/// The panel's widget of each schema entry it shows (object name), and its key in the panel's
/// JSON when validate() checks it there ("" = the widget alone bounds it).
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
                              {"history_len", ParamScope::None, "historyLength", "history_len"},
                              {"history_len", ParamScope::None, "trainHistory", ""},
                              {"margin", ParamScope::None, "margin", ""}};

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

  void validationRefusesPastTheSchemasMax() {
    for (const PanelField& f : kFields) {
      if (!*f.json_key) continue;
      const ParamSpec& p = param(f.key, f.scope);
      QJsonObject c = ExperimentPanel::defaultConfig();
      c[QStringLiteral("backend")] = QStringLiteral("cpu");
      c[QStringLiteral("scaling")] = QStringLiteral("per-tensor-current");
      if (QString::fromLatin1(f.key) == QStringLiteral("history_len"))
        c[QStringLiteral("scaling")] = QStringLiteral("per-tensor-delayed");
      c[QString::fromLatin1(f.json_key)] = p.max + 1;
      bool found = false;
      for (const auto& pr : ExperimentPanel::validate(c, false, {}))
        found |= pr.blocking && pr.reason.contains(QString::fromStdString(p.rangeText()));
      QVERIFY2(found, f.key);
    }
  }
};

QTEST_MAIN(TestParamSchemaPanel)
#include "test_param_schema_panel.moc"

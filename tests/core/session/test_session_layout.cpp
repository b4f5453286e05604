// Tests for core/session/session_layout: the paths the layout names are the ones
// docs/session-format.md documents (written out by hand below from its prose sections), every
// path a writer stores matches a pattern of the table with the units the table gives, and the
// document's path index is the table (FP8LAB_UPDATE_DOCS=1 rewrites it).
#include <QtTest>

#include "scaling/scaling.h"
#include "session/session.h"
#include "session/session_layout.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

using namespace fp8lab;

namespace {

const char* kBegin = "<!-- BEGIN path index (generated from core/session/session_layout.cpp) -->\n";
const char* kEnd = "<!-- END path index -->";

std::string docPath() {
  return std::string(FP8LAB_SOURCE_DIR) + "/docs/session-format.md";
}

std::string readText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

} // namespace

class TestSessionLayout : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // Paths as docs/session-format.md spells them in its sections on GEMM runs, kernel checks,
  // training runs, language-model runs, block statistics and what-if recipes.
  void paths_data() {
    QTest::addColumn<QString>("got");
    QTest::addColumn<QString>("want");
    auto row = [](const char* name, const std::string& got, const char* want) {
      QTest::newRow(name) << QString::fromStdString(got) << QString::fromUtf8(want);
    };
    row("runGroup", layout::runGroup("r1"), "runs/r1");
    row("runPath", layout::runPath("r1", layout::kErrorAbs), "runs/r1/error/abs");
    row("inputs", layout::inputs("A"), "inputs/A");
    row("quantized", layout::quantized("B"), "quantized/B");
    row("quantizedCodes", layout::quantizedCodes("A"), "quantized/A_codes");
    row("quantizedScales", layout::quantizedScales("A"), "quantized/A_scales");
    row("quantizedDequantized", layout::quantizedDequantized("B"), "quantized/B_dequantized");
    row("quantizedRotated", layout::quantizedRotated("A"), "quantized/A_rotated");
    row("checkModels", layout::checkModels("max_ulps"), "check/models/max_ulps");
    row("history", layout::history("fc1/input"), "history/fc1/input");
    row("historyAmax", layout::historyAmax("fc1/input"), "history/fc1/input/amax");
    row("historyScale", layout::historyScale("fc2/kernel"), "history/fc2/kernel/scale");
    row("historyQuantScale", layout::historyQuantScale("fc1/input"), "history/fc1/input/quant_scale");
    row("historyAmaxHistory", layout::historyAmaxHistory("fc1/input"), "history/fc1/input/amax_history");
    row("historySaturated", layout::historySaturated("fc1/input"), "history/fc1/input/saturated");
    row("historyUnderflow", layout::historyUnderflow("fc1/input"), "history/fc1/input/underflow");
    row("historyKeptPrevious", layout::historyKeptPrevious("fc1/input"), "history/fc1/input/kept_previous");
    row("blockStats", layout::blockStats("fc1/input", "map_scale"), "block_stats/fc1/input/map_scale");
    row("whatIf", layout::whatIf("te_current", "fc1/input", "sqnr_db"), "what_if/te_current/fc1/input/sqnr_db");
    row("nonfinite", layout::nonfinite("terms_k"), "nonfinite/terms_k");
    row("training", layout::training("val_loss"), "training/val_loss");
    row("weights", layout::weights("fc1/kernel"), "weights/fc1/kernel");
    row("sites", layout::sites("block"), "sites/block");
    row("probe", layout::probe("blocks.0.mlp", "kurtosis"), "probes/blocks.0.mlp/kurtosis");
    row("attentionProbs", layout::attentionProbs("blocks.1"), "attention/blocks.1/probs");
    row("advice", layout::advice("keep_high"), "advice/keep_high");
  }
  void paths() {
    QFETCH(QString, got);
    QFETCH(QString, want);
    QCOMPARE(got, want);
  }

  // The table's units for paths a writer stores, as docs/session-format.md and the writers'
  // sections give them ("1" dimensionless, "code" bit patterns, "nats" losses, "dB" SQNR).
  void matchUnits_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<QString>("units");
    auto row = [](const std::string& path, const char* pattern, const char* units) {
      QTest::newRow(path.c_str()) << QString::fromStdString(path) << QString::fromUtf8(pattern)
                                  << QString::fromUtf8(units);
    };
    row(layout::quantizedCodes("A"), "quantized/<tensor>_codes", "code");
    row(layout::quantizedScales("blocks.0.attn.qkv.weight"), "quantized/<tensor>_scales", "1");
    row(layout::historyAmax("blocks.0.attn.qkv/activation"), "history/<operand>/amax", "1 (same units as the tensor)");
    row(layout::historySaturated("fc1/input"), "history/<operand>/saturated", "elements");
    row(layout::training("loss"), "training/loss", "nats");
    row(layout::blockStats("A", "sqnr_db"), "block_stats/<operand>/sqnr_db", "dB");
    row(layout::blockStats("fc1/input", "map_steps"), "block_stats/<operand>/map_steps", "steps");
    row(layout::kProbesSteps, "probes/steps", "steps"); // the literal, not probes/<tensor>/...
    row(layout::probe("blocks.0", "massive"), "probes/<tensor>/massive", "elements");
    row(layout::attentionProbs("blocks.0"), "attention/<block>/probs", "1");
    row(layout::kCheckUlpHistogram, "check/ulp_histogram", "count");
  }
  void matchUnits() {
    QFETCH(QString, path);
    QFETCH(QString, pattern);
    QFETCH(QString, units);
    const layout::PathPattern* p = layout::match(path.toStdString());
    QVERIFY2(p, qPrintable(path));
    QCOMPARE(QString::fromUtf8(p->pattern), pattern);
    QCOMPARE(QString::fromUtf8(p->units), units);
  }

  void unknownPathMatchesNothing() {
    QVERIFY(!layout::match("no_such_group/x"));
    QVERIFY(!layout::match("history/"));
  }

  // Run::putQuantized is a writer: every dataset it stores is in the table with its units.
  void putQuantizedFollowsTheLayout() {
    const std::vector<float> x = {1.0f, -2.0f, 0.5f, 448.0f};
    const QuantizedTensor q = quantize(x.data(), 2, 2, Format::E4M3FN(), ScalingConfig{});
    Run run;
    run.putQuantized(layout::quantized("A"), q, "operand A");
    QVERIFY(run.find(layout::quantizedCodes("A")));
    QVERIFY(run.find(layout::quantizedScales("A")));
    QVERIFY(run.find(layout::quantizedDequantized("A")));
    for (const auto& [path, d] : run.datasets) {
      const layout::PathPattern* p = layout::match(path);
      QVERIFY2(p, path.c_str());
      QCOMPARE(QString::fromStdString(attrString(d.attrs, "units").value_or("?")), QString::fromUtf8(p->units));
      QCOMPARE(QString::fromUtf8(toString(d.dtype)), QString::fromUtf8(p->dtype));
    }
  }

  // No two rows of the table share a pattern; every row has units and a meaning.
  void tableIsWellFormed() {
    std::set<std::string> seen;
    for (const layout::PathPattern& p : layout::patterns()) {
      QVERIFY2(seen.insert(p.pattern).second, p.pattern);
      QVERIFY2(*p.units && *p.meaning && *p.run && *p.dtype, p.pattern);
    }
  }

  // docs/session-format.md's path index is the table.
  void docIndexIsGenerated() {
    const std::string path = docPath();
    const std::string doc = readText(path);
    const size_t b = doc.find(kBegin), e = doc.find(kEnd);
    QVERIFY2(b != std::string::npos && e != std::string::npos && b < e,
             "docs/session-format.md lacks the path index markers");
    const std::string want = layout::markdownIndex();
    const std::string have = doc.substr(b + std::strlen(kBegin), e - b - std::strlen(kBegin));
    if (have == want) return;
    const char* update = std::getenv("FP8LAB_UPDATE_DOCS");
    if (update && std::string(update) == "1") {
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      f << doc.substr(0, b + std::strlen(kBegin)) << want << doc.substr(e);
      QVERIFY(f.good());
      return;
    }
    QFAIL("docs/session-format.md's path index differs from core/session/session_layout.cpp: run "
          "FP8LAB_UPDATE_DOCS=1 ctest -R test_session_layout");
  }
};

QTEST_GUILESS_MAIN(TestSessionLayout)
#include "test_session_layout.moc"

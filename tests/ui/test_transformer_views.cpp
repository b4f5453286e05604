// The views on language-model runs (docs/session-format.md, "Language-model runs"): site names read
// from the run (the `sites` attribute) instead of fc<N>, the Layer × step map's groups and filter at
// ~50 sites and its transformer probes, the Attention view's query × key maps and attention sink,
// the Training form's transformer and policy presets, and the validation loss in the Comparison.
// The runs are built here with core/session; every expected number is chosen by hand and derived in
// a comment.
#include "window_options.h"
#include "views/amax_history_view.h"
#include "views/attention_view.h"
#include "views/comparison_view.h"
#include "forms/experiment_panel.h"
#include "forms/experiment_runner.h"
#include "forms/job.h"
#include "views/layer_step_view.h"
#include "main_window.h"
#include "plot/qcp.h"
#include "session/run_access.h"
#include "session/run_sites.h"
#include "views/scale_evolution_view.h"
#include "forms/training_model_form.h"

#include "session/session.h"

#include <QComboBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QtTest>

#include <QListWidget>

#include <cmath>
#include <limits>

using namespace fp8lab;
using namespace fp8lab::ui;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

std::shared_ptr<RunAccess> memoryRun(Run r) {
  return RunAccess::fromRun(std::make_shared<const Run>(std::move(r)));
}

/// The sites of a transformer of `blocks` blocks as the language model records them (GELU FFN).
QStringList lmSites(int blocks) {
  QStringList s;
  for (int b = 0; b < blocks; ++b)
    for (const char* part : {"attn.qkv", "attn.scores", "attn.context", "attn.out", "ffn.up", "ffn.down"})
      s << QStringLiteral("blocks.%1.%2").arg(b).arg(QLatin1String(part));
  s << QStringLiteral("lm_head");
  return s;
}

void putSeries(Run& r, const std::string& group, const std::vector<float>& underflow, const std::vector<float>& sqnr) {
  r.datasets[group + "/underflow_fraction"] =
      Dataset::float32({int64_t(underflow.size())}, underflow, "1", "underflowed / non-zero elements");
  r.datasets[group + "/sqnr_db"] = Dataset::float32({int64_t(sqnr.size())}, sqnr, "dB", "SQNR");
}

/// A language-model training run of `blocks` blocks and 3 steps with per-block statistics of every
/// Linear site's operands (attn.qkv, attn.out, ffn.up, ffn.down, lm_head; the attention matmuls in
/// FP32 record none): underflow 0 and SQNR 30 dB everywhere except
///   blocks.3.ffn.up input    underflow 0.1, 0.2, 0.3    SQNR 25, 20, 31
///   blocks.3.ffn.down input  underflow 0, 0.5, 0.25     SQNR 28, 22, 18
/// (only with blocks > 3), and amax histories of four operands.
Run lmRun(const std::string& id, int blocks) {
  Run r;
  r.id = id;
  r.type = "training";
  r.config_json = R"({"type": "training", "model": {"kind": "transformer"}, "precision": "fp8"})";
  r.attrs["model"] = std::string("transformer");
  r.attrs["sites"] = lmSites(blocks).join(QLatin1Char(',')).toStdString();
  r.attrs["scaling"] = std::string("current-te");
  for (const QString& s : lmSites(blocks)) {
    if (s.endsWith(QStringLiteral(".scores")) || s.endsWith(QStringLiteral(".context"))) continue;
    for (const char* op : {"input", "kernel", "output_grad"}) {
      const std::string g = "block_stats/" + s.toStdString() + "/" + op;
      std::vector<float> u{0, 0, 0}, q{30, 30, 30};
      if (s == QStringLiteral("blocks.3.ffn.up") && std::string(op) == "input")
        u = {0.1f, 0.2f, 0.3f}, q = {25, 20, 31};
      if (s == QStringLiteral("blocks.3.ffn.down") && std::string(op) == "input")
        u = {0, 0.5f, 0.25f}, q = {28, 22, 18};
      putSeries(r, g, u, q);
    }
  }
  for (const char* op :
       {"lm_head/output_grad", "blocks.10.ffn.up/input", "blocks.2.attn.qkv/kernel", "blocks.2.attn.qkv/input"})
    if (blocks > 10 || std::string(op).rfind("blocks.10", 0) != 0)
      r.putFloat32(std::string("history/") + op + "/amax", {1.0f, 2.0f, 3.0f}, 3, -1, "1", "amax");
  return r;
}

/// An MLP run (no `sites` attribute) with fc1, fc2, fc10 inputs.
Run mlpRun(const std::string& id) {
  Run r;
  r.id = id;
  r.type = "training";
  r.config_json = R"({"type": "training", "precision": "fp8"})";
  for (const char* l : {"fc1", "fc2", "fc10"})
    putSeries(r, std::string("block_stats/") + l + "/input", {0, 0}, {30, 30});
  return r;
}

/// A one-block language-model run with probes at steps 0 and 10 (2 heads):
///   kurtosis: embedding 1.5, 2.5; blocks.0.attn.qkv 3, 4; blocks.0.ffn.up 5, 6; blocks.0 7, 8;
///             lm_head 9, 10
///   sink of blocks.0 [2 steps, 2 heads] = {0.25, 0.5; 0.125, 1.0}
///   grad_noise_ratio of blocks.0.attn.qkv: +Inf (exact), 2
Run probeRun(const std::string& id) {
  Run r;
  r.id = id;
  r.type = "training";
  r.config_json = R"({"type": "training", "model": {"kind": "transformer"}, "precision": "fp32"})";
  r.attrs["sites"] = lmSites(1).join(QLatin1Char(',')).toStdString();
  r.datasets["probes/steps"] = Dataset::int64({2}, {0, 10}, "steps", "probe steps");
  auto put = [&r](const std::string& t, const std::string& p, std::vector<float> v) {
    r.datasets["probes/" + t + "/" + p] = Dataset::float32({int64_t(v.size())}, v, "1", p);
  };
  put("embedding", "kurtosis", {1.5f, 2.5f});
  put("blocks.0.attn.qkv", "kurtosis", {3, 4});
  put("blocks.0.ffn.up", "kurtosis", {5, 6});
  put("blocks.0", "kurtosis", {7, 8});
  put("lm_head", "kurtosis", {9, 10});
  put("blocks.0.attn.qkv", "grad_noise_ratio", {kInf, 2});
  r.datasets["probes/blocks.0/sink"] = Dataset::float32({2, 2}, {0.25f, 0.5f, 0.125f, 1.0f}, "1", "sink");
  r.putFloat32("history/blocks.0.attn.qkv/input/amax", {1.0f, 2.0f}, 2, -1, "1", "amax");
  return r;
}

/// Attention snapshots of one block, 2 heads, T = 4, of the sequence "ab\nc", at steps 0 and 50:
///   step 0:  head 0 uniform over the causal prefix, P[q, k] = 1/(q+1) for k ≤ q;
///            head 1 on the diagonal, P[q, q] = 1;
///   step 50: head 0 on key 0, P[q, 0] = 1 (a sink); head 1 uniform.
/// The sink (mean over q = 1…3 of P[q, 0]): uniform (1/2 + 1/3 + 1/4) / 3 = 13/36 = 0.36111…
/// (36.1 %), diagonal 0, key 0 1 (100 %).
Run attentionRun(const std::string& id) {
  Run r;
  r.id = id;
  r.type = "training";
  r.config_json = R"({"type": "training", "model": {"kind": "transformer"}})";
  r.attrs["sites"] = lmSites(1).join(QLatin1Char(',')).toStdString();
  const int T = 4, H = 2;
  std::vector<float> p(size_t(2 * H * T * T), 0.0f);
  auto at = [&](int s, int h, int q, int k) -> float& { return p[size_t(((s * H + h) * T + q) * T + k)]; };
  for (int q = 0; q < T; ++q) {
    for (int k = 0; k <= q; ++k) at(0, 0, q, k) = 1.0f / float(q + 1);
    at(0, 1, q, q) = 1.0f;
    at(1, 0, q, 0) = 1.0f;
    for (int k = 0; k <= q; ++k) at(1, 1, q, k) = 1.0f / float(q + 1);
  }
  r.datasets["attention/blocks.0/probs"] = Dataset::float32({2, H, T, T}, p, "1", "softmax probabilities");
  r.datasets["attention/steps"] = Dataset::int64({2}, {0, 50}, "steps", "snapshot steps");
  r.datasets["attention/tokens"] = Dataset::uint8({T}, {'a', 'b', '\n', 'c'}, "byte", "the sequence");
  return r;
}

/// The tick labels of a text ticker, by position.
QMap<double, QString> tickLabels(QCPAxis* axis) {
  auto t = axis->ticker().dynamicCast<QCPAxisTickerText>();
  return t ? t->ticks() : QMap<double, QString>{};
}

} // namespace

class TestTransformerViews : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // The rows follow the run's `sites` attribute, not the alphabet: blocks.0.attn.qkv before
  // blocks.0.attn.out (alphabetically "out" < "qkv") and blocks.2 before blocks.10; within a site
  // input, kernel, output_grad. 12 blocks × 4 Linear sites + lm_head = 49 sites, 147 operand rows:
  // block b's first row at 12·b, lm_head's at 144.
  void sitesKeepTheRunsOrder() {
    auto run = memoryRun(lmRun("lm", 12));
    QCOMPARE(runSites(*run), lmSites(12));
    const std::vector<OperandRow> rows = blockStatOperands(*run);
    QCOMPARE(int(rows.size()), 147);
    QCOMPARE(rows[0].path(), QStringLiteral("blocks.0.attn.qkv/input"));
    QCOMPARE(rows[1].path(), QStringLiteral("blocks.0.attn.qkv/kernel"));
    QCOMPARE(rows[2].path(), QStringLiteral("blocks.0.attn.qkv/output_grad"));
    QCOMPARE(rows[3].path(), QStringLiteral("blocks.0.attn.out/input"));
    QCOMPARE(rows[24].path(), QStringLiteral("blocks.2.attn.qkv/input"));
    QCOMPARE(rows[120].path(), QStringLiteral("blocks.10.attn.qkv/input"));
    QCOMPARE(rows[146].path(), QStringLiteral("lm_head/output_grad"));
    // The Amax history and Scale evolution lists: the same order.
    const QStringList want{QStringLiteral("blocks.2.attn.qkv/input"), QStringLiteral("blocks.2.attn.qkv/kernel"),
                           QStringLiteral("blocks.10.ffn.up/input"), QStringLiteral("lm_head/output_grad")};
    AmaxHistoryView amax;
    amax.setRunAccess(run);
    QCOMPARE(amax.tensors(), want);
    ScaleEvolutionView scales;
    scales.setRuns(run);
    QCOMPARE(scales.tensors(), want);
    // Every name fits the tensor list (it was cut at 190 px): the list is as wide as the longest.
    auto* list = scales.findChild<QListWidget*>(QStringLiteral("tensors"));
    QVERIFY(list);
    const QFontMetrics fm(list->font());
    for (int r = 0; r < list->count(); ++r)
      QVERIFY2(fm.horizontalAdvance(list->item(r)->text()) < list->maximumWidth() - 30,
               qPrintable(list->item(r)->text()));
    // The loss of a non-finite value belongs to the last site, lm_head.
    QCOMPARE(siteGroup(QStringLiteral("blocks.10.ffn.down")).key, QStringLiteral("blocks.10.ffn"));
    QCOMPARE(siteGroup(QStringLiteral("blocks.10.attn.scores")).label, QStringLiteral("block 10 attention"));
    QCOMPARE(siteGroup(QStringLiteral("lm_head")).key, QStringLiteral("head"));
    QCOMPARE(siteGroup(QStringLiteral("fc2")).key, QString());
    // Without the attribute (an MLP run) the layers sort by number: fc1, fc2, fc10.
    QCOMPARE(runSites(*memoryRun(mlpRun("m"))),
             (QStringList{QStringLiteral("fc1"), QStringLiteral("fc2"), QStringLiteral("fc10")}));
  }

  // ~50 sites open readable: 147 rows > 30 → the inputs (49 rows); 49 > 40 → every group collapsed
  // to one row: 12 blocks × (attention, FFN) + the head = 25 rows, block 3's FFN the 8th (index 7).
  // A collapsed row shows the worst of its rows: underflow (higher is worse) of ffn.up and
  // ffn.down inputs max(10, 0) = 10 %, max(20, 50) = 50 %, max(30, 25) = 30 %; SQNR (lower is worse)
  // min(25, 28) = 25, min(20, 22) = 20, min(31, 18) = 18 dB.
  void layerMapGroupsAndFiltersFiftySites() {
    LayerStepView v;
    v.resize(1400, 900);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.setRunAccess(memoryRun(lmRun("lm", 12)));
    QVERIFY(v.filterBarShown());
    QCOMPARE(v.operandFilter(), QStringLiteral("input"));
    QCOMPARE(v.groups().size(), 25);
    QCOMPARE(int(v.shownRows().size()), 25);
    QCOMPARE(v.shownRows()[0].label, QStringLiteral("\u25b8 block 0 attention (max of 2)"));
    QCOMPARE(v.shownRows()[7].label, QStringLiteral("\u25b8 block 3 FFN (max of 2)"));
    QCOMPARE(v.shownRows()[24].label, QStringLiteral("\u25b8 LM head (max of 1)"));
    QCOMPARE(v.shownValue(7, 0), 100.0 * double(0.1f));
    QCOMPARE(v.shownValue(7, 1), 50.0);
    QCOMPARE(v.shownValue(7, 2), 100.0 * double(0.3f));
    // Geometry: one map row per shown row, every one labelled on the left at 900 px.
    v.plot()->replot();
    QCOMPARE(v.colorMap()->data()->valueSize(), 25);
    QCOMPARE(v.colorMap()->data()->keySize(), 3);
    const auto left = tickLabels(v.colorMap()->valueAxis());
    QCOMPARE(int(left.size()), 25);
    QCOMPARE(left.value(7), QStringLiteral("\u25b8 block 3 FFN (max of 2)"));
    QVERIFY(v.colorMap()->valueAxis()->axisRect()->height() / 25 >=
            QFontMetrics(v.colorMap()->valueAxis()->tickLabelFont()).height());
    // A click on the collapsed row expands it: its two rows, named on the right axis.
    v.clickCell(7, 1);
    QVERIFY(!v.isGroupCollapsed(QStringLiteral("blocks.3.ffn")));
    QCOMPARE(int(v.shownRows().size()), 26);
    QCOMPARE(v.shownRows()[7].label, QStringLiteral("blocks.3.ffn.up input"));
    QCOMPARE(v.shownRows()[8].label, QStringLiteral("blocks.3.ffn.down input"));
    QCOMPARE(v.shownValue(8, 1), 50.0);
    const auto right = tickLabels(v.colorMap()->valueAxis()->axisRect()->axis(QCPAxis::atRight));
    QCOMPARE(right.size(), 1);
    QCOMPARE(right.firstKey(), 7.5);
    QCOMPARE(right.first(), QStringLiteral("block 3 FFN"));
    // SQNR: a collapsed row holds the lowest.
    v.setStat(LayerStat::SqnrDb);
    v.setGroupCollapsed(QStringLiteral("blocks.3.ffn"), true);
    QCOMPARE(v.shownRows()[7].label, QStringLiteral("\u25b8 block 3 FFN (min of 2)"));
    QCOMPARE(v.shownValue(7, 0), 25.0);
    QCOMPARE(v.shownValue(7, 1), 20.0);
    QCOMPARE(v.shownValue(7, 2), 18.0);
    v.hoverAt(7, 2);
    QVERIFY2(v.hoverText().contains(QStringLiteral("blocks.3.ffn.down input")), qPrintable(v.hoverText()));
    // The filter: sites blocks.1? (blocks 10 and 11), every operand, expanded: 2 × 4 × 3 = 24 rows.
    v.setSiteFilter(QStringLiteral("blocks.1?.*"));
    v.setOperandFilter(QString());
    v.setAllGroupsCollapsed(false);
    QCOMPARE(int(v.shownRows().size()), 24);
    QCOMPARE(v.shownRows()[0].label, QStringLiteral("blocks.10.attn.qkv input"));
    QCOMPARE(v.shownRows()[23].label, QStringLiteral("blocks.11.ffn.down output_grad"));
    // A click on a row shows its operand in the Block map and Amax history views.
    QSignalSpy spy(&v, &View::showOperandRequested);
    v.clickCell(0, 2);
    QCOMPARE(spy.count(), 2);
    QCOMPARE(spy[1][2].toString(), QStringLiteral("blocks.10.attn.qkv/input"));
    QCOMPARE(spy[1][3].toLongLong(), 2);
    // No row matches: no map, and the filter stays to be changed.
    v.setSiteFilter(QStringLiteral("blocks.99.*"));
    QVERIFY(v.shownRows().empty());
    QVERIFY(v.filterBarShown());
    // showOperand of an operand behind the filter clears the filter to show it.
    QVERIFY(v.showOperand(QStringLiteral("lm"), QStringLiteral("blocks.3.ffn.down/input"), 1));
    QCOMPARE(v.siteFilter(), QString());
    const auto [r, c] = v.selectedCell();
    QCOMPARE(v.shownRows()[size_t(r)].label, QStringLiteral("blocks.3.ffn.down input"));
    QCOMPARE(c, 1);
  }

  // An MLP run looks as before: no filter bar, no groups, a row per operand.
  void mlpMapHasNoGroups() {
    LayerStepView v;
    v.setRunAccess(memoryRun(mlpRun("m")));
    QVERIFY(!v.filterBarShown());
    QVERIFY(v.groups().isEmpty());
    QCOMPARE(int(v.shownRows().size()), 3);
    QCOMPARE(v.shownRows()[2].label, QStringLiteral("fc10 input"));
    QVERIFY(!v.colorMap()->valueAxis()->axisRect()->axis(QCPAxis::atRight)->visible());
    // Its Statistic box lists the seven per-block statistics and no probe.
    auto* box = v.findChild<QComboBox*>(QStringLiteral("stat"));
    QCOMPARE(box->count(), 7);
  }

  // The probes as metrics: rows in model order — embedding output, the sites' inputs, the block's
  // output after its sites, lm_head last — at the probe steps 0 and 10.
  void probesAreMetricsOfTheMap() {
    auto run = memoryRun(probeRun("p"));
    LayerStepMatrix m;
    QString why;
    QVERIFY2(layerStepMatrix(*run, LayerStat::Kurtosis, QString(), false, &m, &why), qPrintable(why));
    QCOMPARE(m.steps, (std::vector<int64_t>{0, 10}));
    QStringList labels;
    for (const OperandRow& r : m.rows) labels << r.label();
    QCOMPARE(labels, (QStringList{QStringLiteral("embedding output"), QStringLiteral("blocks.0.attn.qkv input"),
                                  QStringLiteral("blocks.0.ffn.up input"), QStringLiteral("blocks.0 output"),
                                  QStringLiteral("lm_head input")}));
    QCOMPARE(m.at(0, 1), 2.5);
    QCOMPARE(m.at(3, 0), 7.0);
    QCOMPARE(m.at(4, 1), 10.0);
    // Only a recorded operand is a link to the Amax history view.
    QCOMPARE(m.links[1], QStringLiteral("blocks.0.attn.qkv/input"));
    QCOMPARE(m.links[2], QString()); // no history/blocks.0.ffn.up/input in this run
    QCOMPARE(m.links[3], QString());
    // The sink per head in %: head 0 25, 12.5; head 1 50, 100.
    QVERIFY(layerStepMatrix(*run, LayerStat::Sink, QString(), false, &m, &why));
    QCOMPARE(int(m.rows.size()), 2);
    QCOMPARE(m.rows[1].label(), QStringLiteral("blocks.0.attn head 1"));
    QCOMPARE(m.at(0, 0), 25.0);
    QCOMPARE(m.at(0, 1), 12.5);
    QCOMPARE(m.at(1, 0), 50.0);
    QCOMPARE(m.at(1, 1), 100.0);
    // ‖g‖/‖Q(g) − g‖: +Inf (exact) is kept and drawn grey.
    QVERIFY(layerStepMatrix(*run, LayerStat::GradNoiseRatio, QString(), false, &m, &why));
    QCOMPARE(m.rows[0].label(), QStringLiteral("blocks.0.attn.qkv output_grad"));
    QVERIFY(std::isinf(m.at(0, 0)));
    QCOMPARE(m.at(0, 1), 2.0);
    // The probes take no what-if recipe, and a run without probes says where they come from.
    QVERIFY(!layerStepMatrix(*run, LayerStat::Kurtosis, QStringLiteral("te_current"), false, &m, &why));
    QVERIFY(!layerStepMatrix(*memoryRun(mlpRun("m")), LayerStat::Sink, QString(), false, &m, &why));
    QVERIFY2(why.contains(QStringLiteral("attention_every")) || why.contains(QStringLiteral("probes")),
             qPrintable(why));
    QCOMPARE(parseLayerStat(QStringLiteral("softmax_underflow")), std::optional(LayerStat::SoftmaxUnderflow));

    // The view: an FP32 language-model run (probes, no per-block statistics) opens at a probe.
    LayerStepView v;
    v.setRunAccess(run);
    QCOMPARE(v.stat(), LayerStat::Kurtosis);
    QVERIFY(v.emptyText().isEmpty());
    QCOMPARE(int(v.shownRows().size()), 5);
    v.setStat(LayerStat::Sink);
    QCOMPARE(v.csv().section(QLatin1Char('\n'), 0, 1),
             QStringLiteral("operand,step,sink_percent\nblocks.0.attn/head 0,0,25"));
    // Sink cells of at least 30 % carry a mark: head 1 at both steps (50 %, 100 %), not head 0
    // (25 %, 12.5 %); no kurtosis here reaches 20.
    QCOMPARE(v.markedCells(), (std::vector<std::pair<int, int>>{{1, 0}, {1, 1}}));
    const QString note = v.findChild<QLabel*>(QStringLiteral("hover"))->text();
    QVERIFY2(note.contains(QStringLiteral("2 cell(s) with a sink of at least 30 %")), qPrintable(note));
    v.setStat(LayerStat::Kurtosis);
    QVERIFY(v.markedCells().empty());
    QCOMPARE(layerStatMarkThreshold(LayerStat::Kurtosis), 20.0);
    QVERIFY(std::isnan(layerStatMarkThreshold(LayerStat::SqnrDb)));
  }

  // The Attention view reads the snapshot probabilities and states each head's sink.
  void attentionViewShowsHeadsAndTheSink() {
    AttentionView v;
    v.resize(1400, 900);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.setRunAccess(memoryRun(attentionRun("a")));
    QVERIFY2(v.emptyText().isEmpty(), qPrintable(v.emptyText()));
    // It opens at the last snapshot, step 50.
    QCOMPARE(v.snapshot().step, int64_t(50));
    QCOMPARE(v.snapshot().heads, int64_t(2));
    QCOMPARE(v.snapshot().length, int64_t(4));
    QCOMPARE(v.snapshot().sink[0], 1.0);
    // The stored float32 probabilities: 1/2, f32(1/3), 1/4.
    QCOMPARE(v.snapshot().sink[1], (0.5 + double(1.0f / 3.0f) + 0.25) / 3.0);
    QCOMPARE(v.headTitle(0), QStringLiteral("head 0 \u00b7 sink 100.0 %"));
    QCOMPARE(v.headTitle(1), QStringLiteral("head 1 \u00b7 sink 36.1 %"));
    QVERIFY2(v.sinkText().contains(QStringLiteral("head 0 100.0 %, head 1 36.1 %")), qPrintable(v.sinkText()));
    QVERIFY2(v.sequenceText().contains(QStringLiteral("ab\u21b5c")), qPrintable(v.sequenceText()));
    // The map of head 1: P[2, 1] = 1/3 under the diagonal, NaN (masked) above it.
    QCPAxisRect* r1 = v.headRect(1);
    QVERIFY(r1);
    QCPColorMap* map1 = qobject_cast<QCPColorMap*>(r1->plottables().value(0));
    QVERIFY(map1);
    QCOMPARE(map1->data()->cell(1, 2), double(1.0f / 3.0f));
    QVERIFY(std::isnan(map1->data()->cell(3, 1)));
    // Geometry at 1400 × 900: square maps, side by side, every byte labelled when the cells are
    // wide enough (4 positions: they are).
    v.plot()->replot();
    QCPAxisRect* r0 = v.headRect(0);
    QVERIFY(std::abs(r0->width() - r0->height()) <= 1);
    QVERIFY(r0->width() > 200);
    QCOMPARE(r0->top(), r1->top());
    const auto keys = tickLabels(r1->axis(QCPAxis::atBottom));
    QCOMPARE(int(keys.size()), 4);
    QCOMPARE(keys.value(2), QStringLiteral("\u21b5"));
    QCOMPARE(keys.value(3), QStringLiteral("c"));
    // Hover: a probability and a masked cell.
    v.hoverAt(1, 2, 1);
    QCOMPARE(v.hoverText(), QStringLiteral("head 1, query 2 \u2018\u21b5\u2019 \u2192 key 1 \u2018b\u2019: P = 0.3333 "
                                           "(step 50)"));
    v.hoverAt(0, 1, 3);
    QVERIFY(v.hoverText().contains(QStringLiteral("masked")));
    // The sink profile at step 50: head 0 puts everything on position 0 at every query (100 %),
    // head 1 1/2, 1/3, 1/4 — after the uniform reference 100/(t+1), dashed; none of them in the
    // legend of the sink-over-steps plot (its two heads only).
    QCPAxisRect* prof = v.profileRect();
    QVERIFY(prof);
    const QList<QCPGraph*> pg = prof->graphs();
    QCOMPARE(int(pg.size()), 3);
    QCOMPARE(pg[0]->name(), QStringLiteral("uniform 1/(t+1)"));
    QCOMPARE(pg[0]->data()->at(0)->value, 50.0);
    QCOMPARE(pg[0]->data()->at(2)->value, 25.0);
    QCOMPARE(pg[0]->pen().style(), Qt::DashLine);
    QCOMPARE(pg[1]->data()->at(2)->value, 100.0);
    QCOMPARE(pg[2]->data()->at(0)->value, 50.0);
    QCOMPARE(v.plot()->legend->itemCount(), 2);
    // The slider's first snapshot, step 0: head 0 uniform (36.1 %), head 1 on the diagonal (0 %).
    QVERIFY(v.setSnapshot(0));
    QCOMPARE(v.snapshot().step, int64_t(0));
    QCOMPARE(v.headTitle(0), QStringLiteral("head 0 \u00b7 sink 36.1 %"));
    QCOMPARE(v.headTitle(1), QStringLiteral("head 1 \u00b7 sink 0.0 %"));
    // One head alone.
    QVERIFY(v.setHead(1));
    QVERIFY(!v.headRect(0));
    QVERIFY(v.headRect(1));
    QVERIFY(!v.setHead(2));
    QCOMPARE(v.csv().section(QLatin1Char('\n'), 0, 2),
             QStringLiteral("block,step,head,query,key,query_byte,key_byte,probability\n"
                            "blocks.0,0,1,0,0,97,97,1\nblocks.0,0,1,1,0,98,97,0"));
    // The series of the sink over the snapshots, from the same probabilities.
    const auto series = attentionSinkSeries(*memoryRun(attentionRun("a")), QStringLiteral("blocks.0"));
    QCOMPARE(int(series.size()), 2);
    QCOMPARE(series[0][1], 0.0);
    QCOMPARE(series[1][0], 1.0);
  }

  // From a session file: a snapshot is one plane of the rank-4 dataset, read alone.
  void attentionSnapshotFromAFile() {
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("a.h5"));
    Session s;
    s.runs = {attentionRun("a")};
    QVERIFY(writeSession(file.toStdString(), s).ok());
    QString err;
    auto run = RunAccess::fromFile(file, QStringLiteral("a"), &err);
    QVERIFY2(run, qPrintable(err));
    AttentionSnapshot a;
    QVERIFY2(readAttentionSnapshot(*run, QStringLiteral("blocks.0"), 0, &a, &err), qPrintable(err));
    QCOMPARE(a.step, int64_t(0));
    QCOMPARE(a.at(1, 3, 3), 1.0); // head 1 on the diagonal at step 0
    QCOMPARE(a.at(1, 3, 2), 0.0);
    QCOMPARE(a.sink[1], 0.0);
    QVERIFY(!readAttentionSnapshot(*run, QStringLiteral("blocks.0"), 2, &a, &err));
    QVERIFY2(err.contains(QStringLiteral("2 attention snapshot(s)")), qPrintable(err));
  }

  // Empty states say what to run.
  void attentionViewEmptyStates() {
    AttentionView v;
    v.setRunAccess(nullptr);
    QVERIFY2(v.emptyText().contains(QStringLiteral("resources/experiments/transformer-lm.json")),
             qPrintable(v.emptyText()));
    v.setRunAccess(memoryRun(probeRun("p")));
    QVERIFY2(v.emptyText().contains(QStringLiteral("\"attention_every\"")), qPrintable(v.emptyText()));
    QCOMPARE(tokenLabel(' '), QStringLiteral("\u2423"));
    QCOMPARE(tokenLabel(0x07), QStringLiteral("\\x07"));
    QCOMPARE(tokenLabel('Q'), QStringLiteral("Q"));
  }

  // The Training form: the transformer's knobs and a policy preset become the config's "model",
  // "steps" and "policy" (no epochs, no image counts); core accepts it, and the canonical config
  // loads back into the same fields.
  void trainingFormWritesTheTransformerAndItsPolicy() {
    ExperimentPanel panel;
    auto* model = panel.findChild<QComboBox*>(QStringLiteral("trainModel"));
    QVERIFY(model);
    model->setCurrentIndex(model->findData(QStringLiteral("transformer")));
    panel.findChild<QSpinBox*>(QStringLiteral("dModel"))->setValue(32);
    panel.findChild<QSpinBox*>(QStringLiteral("lmLayers"))->setValue(3);
    panel.findChild<QSpinBox*>(QStringLiteral("heads"))->setValue(2);
    panel.findChild<QSpinBox*>(QStringLiteral("context"))->setValue(32);
    panel.findChild<QSpinBox*>(QStringLiteral("ffnHidden"))->setValue(96);
    panel.findChild<QSpinBox*>(QStringLiteral("lmSteps"))->setValue(300);
    auto* policy = panel.findChild<QComboBox*>(QStringLiteral("policy"));
    policy->setCurrentIndex(policy->findData(QStringLiteral("ffn_first")));
    panel.findChild<QSpinBox*>(QStringLiteral("policySteps"))->setValue(100);
    const QJsonObject c = panel.trainingConfig();
    QCOMPARE(c.value(QStringLiteral("batch_size")).toInt(), 16); // the language model's default batch
    QVERIFY(!c.contains(QStringLiteral("epochs")));
    QVERIFY(!c.contains(QStringLiteral("train_limit")));
    QCOMPARE(c.value(QStringLiteral("steps")).toInt(), 300);
    const QJsonObject m = c.value(QStringLiteral("model")).toObject();
    QCOMPARE(m.value(QStringLiteral("kind")).toString(), QStringLiteral("transformer"));
    QCOMPARE(m.value(QStringLiteral("d_model")).toInt(), 32);
    QCOMPARE(m.value(QStringLiteral("layers")).toInt(), 3);
    QCOMPARE(m.value(QStringLiteral("ffn_hidden")).toInt(), 96);
    const QJsonArray ffn_first{QJsonObject{{QStringLiteral("sites"), QStringLiteral("blocks.*.attn.*")},
                                           {QStringLiteral("precision"), QStringLiteral("fp32")},
                                           {QStringLiteral("until_step"), 100}}};
    QCOMPARE(c.value(QStringLiteral("policy")).toArray(), ffn_first);
    QString why;
    const QByteArray canonical = canonicalTrainingConfig(c, &why);
    QVERIFY2(!canonical.isEmpty(), qPrintable(why));
    const QJsonObject back = trainingPanelFromCanonical(canonical, &why);
    QVERIFY2(!back.isEmpty(), qPrintable(why));
    ExperimentPanel other;
    other.setTrainingConfig(back);
    QCOMPARE(canonicalTrainingConfig(other.trainingConfig(), nullptr), canonical);
    QCOMPARE(other.findChild<QComboBox*>(QStringLiteral("policy"))->currentData().toString(),
             QStringLiteral("ffn_first"));
    // "First and last block in BF16" names blocks 0 and 2 of the three, and the head.
    QCOMPARE(policyRules(QStringLiteral("ends_bf16"), true, 3, 0).size(), 3);
    QCOMPARE(policyRules(QStringLiteral("ends_bf16"), true, 3, 0)[1].toObject().value(QStringLiteral("sites")),
             QJsonValue(QStringLiteral("blocks.2.*")));
    // A policy no preset makes is refused with its key.
    QJsonObject odd = c;
    odd[QStringLiteral("policy")] = QJsonArray{QJsonObject{{QStringLiteral("sites"), QStringLiteral("blocks.1.*")},
                                                           {QStringLiteral("precision"), QStringLiteral("bf16")}}};
    QVERIFY(trainingPanelFromCanonical(canonicalTrainingConfig(odd, nullptr), &why).isEmpty());
    QVERIFY2(why.contains(QStringLiteral("\"policy\"")), qPrintable(why));
    // The MLP: the attention presets are off; wgrad in BF16 applies to it.
    model->setCurrentIndex(model->findData(QStringLiteral("mlp")));
    QCOMPARE(policy->currentData().toString(), QStringLiteral("none")); // ffn_first is a transformer preset
    policy->setCurrentIndex(policy->findData(QStringLiteral("wgrad_bf16")));
    const QJsonObject mc = panel.trainingConfig();
    QVERIFY(!mc.contains(QStringLiteral("model")));
    QCOMPARE(mc.value(QStringLiteral("batch_size")).toInt(), 128);
    QCOMPARE(mc.value(QStringLiteral("policy")).toArray().size(), 1);
    QVERIFY2(!canonicalTrainingConfig(mc, &why).isEmpty(), qPrintable(why));
    auto* items = qobject_cast<QStandardItemModel*>(policy->model());
    QVERIFY(!items->item(policy->findData(QStringLiteral("attn_bf16")))->isEnabled());
  }

  // The Comparison shows the language models' validation loss; MLP sessions keep their columns.
  void comparisonShowsTheValidationLoss() {
    Run lm = lmRun("lm", 1);
    lm.metrics["final_val_loss"] = Metric{2.5, "nats", "validation loss"};
    ComparisonView v;
    v.setRuns({memoryRun(lm)});
    QVERIFY(!v.table()->isColumnHidden(ComparisonView::ColFinalValLoss));
    QCOMPARE(v.table()->item(0, ComparisonView::ColFinalValLoss)->text(), QStringLiteral("2.5"));
    QVERIFY(v.csv().section(QLatin1Char('\n'), 0, 0).endsWith(QStringLiteral(",rank,final_val_loss")));
    v.setRuns({memoryRun(mlpRun("m"))});
    QVERIFY(v.table()->isColumnHidden(ComparisonView::ColFinalValLoss));
    QVERIFY(v.csv().section(QLatin1Char('\n'), 0, 0).endsWith(QStringLiteral(",group,rank")));
  }

  // The Training tab runs the transformer in process: progress per step, Cancel keeps the steps
  // done (status cancelled, steps_completed between 1 and the 200 planned, a loss per step).
  void transformerRunsInProcessAndCancelKeepsTheSteps() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    if (!w.hasExperimentRunner()) QSKIP("no experiment runner in this build");
    ExperimentPanel* panel = w.experimentPanel();
    QJsonObject c = ExperimentPanel::defaultTrainingConfig();
    c[QStringLiteral("id")] = QStringLiteral("tiny-lm");
    c[QStringLiteral("model")] = QJsonObject{{QStringLiteral("kind"), QStringLiteral("transformer")},
                                             {QStringLiteral("d_model"), 32},
                                             {QStringLiteral("layers"), 1},
                                             {QStringLiteral("heads"), 2},
                                             {QStringLiteral("context"), 32},
                                             {QStringLiteral("ffn_hidden"), 64}};
    c[QStringLiteral("steps")] = 200;
    c[QStringLiteral("batch_size")] = 8;
    c[QStringLiteral("scaling")] = QJsonObject{{QStringLiteral("strategy"), QStringLiteral("current-te")}};
    panel->setTrainingConfig(c);
    QString why;
    const TrainingRequest request = trainingRequest(panel->trainingConfig(), &why);
    QVERIFY2(request.ok(), qPrintable(why));
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("lm.h5"));
    QSignalSpy ended(w.job(), &Job::ended);
    QSignalSpy failed(w.job(), &Job::failed);
    QList<double> fractions;
    QStringList stages;
    connect(w.job(), &Job::progress, this, [&](double f, const QString& stage) {
      fractions << f;
      stages << stage;
      if (f > 0.3) w.job()->cancel();
    });
    QVERIFY(w.runTrainingExperiment(request, file, QStringLiteral("tiny transformer")));
    QVERIFY(ended.wait(300000));
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed[0][0].toString()));
    // Progress reaches the GUI at most 30 times a second: several distinct fractions before the
    // cancel, each naming its step.
    QVERIFY2(std::count_if(fractions.begin(), fractions.end(), [](double f) { return f > 0 && f <= 0.3; }) >= 2,
             qPrintable(QString::number(fractions.size())));
    QVERIFY2(std::any_of(stages.begin(), stages.end(),
                         [](const QString& s) { return s.contains(QStringLiteral("/200, loss")); }),
             qPrintable(stages.join(QLatin1Char('|'))));
    auto rd = SessionReader::open(file.toStdString());
    QVERIFY2(rd.ok(), rd.errors().c_str());
    auto run = rd.value->readRun("tiny-lm");
    QVERIFY2(run.ok(), run.errors().c_str());
    QCOMPARE(QString::fromStdString(attrString(run.value.attrs, "status").value_or("")), QStringLiteral("cancelled"));
    const int64_t steps = attrInt(run.value.attrs, "steps_completed").value_or(-1);
    QVERIFY2(steps >= 1 && steps < 200, qPrintable(QString::number(steps)));
    const Dataset* loss = run.value.find("training/loss");
    QVERIFY(loss);
    QCOMPARE(loss->shape, std::vector<int64_t>{steps});
  }
};

QTEST_MAIN(TestTransformerViews)
#include "test_transformer_views.moc"

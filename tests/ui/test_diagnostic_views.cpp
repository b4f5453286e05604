// The diagnostic views over per-block statistics: the Layer × step map (block_stats/, what_if/,
// the first non-finite value) and the Block map, against small runs built here with core/session
// in the layout of docs/session-format.md ("Per-block statistics", "What-if recipes", "First
// non-finite value") and written to a real session file. Every expected number is chosen by hand
// and derived in a comment.
#include "window_options.h"
#include "views/amax_history_view.h"
#include "views/block_map_view.h"
#include "session/block_stats.h"
#include "views/layer_step_view.h"
#include "main_window.h"
#include "views/number_line_view.h"
#include "plot/qcp.h"
#include "session/run_access.h"
#include "session/session_document.h"
#include "plot/wrapped_title.h"

#include "session/session.h"

#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <limits>

using namespace fp8lab;
using namespace fp8lab::ui;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

/// The nine per-step series of one operand, every one `steps` long: zeros except those given.
void putSeries(Run& r, const std::string& group, int64_t steps,
               const std::map<std::string, std::vector<float>>& given) {
  for (const char* name :
       {"log2_scale_min", "log2_scale_max", "log2_scale_mean", "log2_scale_std", "max_dynamic_range",
        "underflow_block_share", "saturation_block_share", "underflow_fraction", "saturation_fraction", "sqnr_db"}) {
    auto it = given.find(name);
    std::vector<float> v = it != given.end() ? it->second : std::vector<float>(size_t(steps), 0.0f);
    r.datasets[group + "/" + name] = Dataset::float32({int64_t(v.size())}, v, "1", name);
  }
}

void putGroupAttrs(Run& r, const std::string& group, const std::string& layer, const std::string& op, int64_t rows,
                   int64_t cols, int64_t br, int64_t bc) {
  Attributes& a = r.group_attrs[group];
  a["layer"] = layer;
  a["operand"] = op;
  a["quantization"] = std::string("te_mxfp8 E4M3FN 1x32");
  a["format"] = std::string("E4M3FN");
  a["scale_format"] = std::string("E8M0FNU");
  a["rows"] = rows;
  a["cols"] = cols;
  a["block_rows"] = br;
  a["block_cols"] = bc;
  a["grid_rows"] = (rows + br - 1) / br;
  a["grid_cols"] = (cols + bc - 1) / bc;
  a["map_every"] = int64_t(3);
}

/// A training run of 4 steps with operands fc1 input, fc1 kernel, fc2 input and fc10 input (fc10
/// after fc2: layers sort by number), what-if recipes mx_rceil and te_current at steps 0 and 2,
/// block maps of fc1 input at steps 0 and 3, and a first non-finite value at step 2 in
/// fprop.weight of fc1 (→ row fc1 kernel).
Run trainingRun(const std::string& id, bool nonfinite = true) {
  Run r;
  r.id = id;
  r.type = "training";
  r.config_json = "{}";
  r.attrs["scaling"] = std::string("te_mxfp8");
  const int64_t steps = 4;
  // fc1 input: underflow_fraction 0.25, 0.5, 0, 0.125 → 25 %, 50 %, 0 %, 12.5 %;
  //            sqnr_db 20, 21, 22, +Inf (exact at step 3).
  putSeries(r, "block_stats/fc1/input", steps,
            {{"underflow_fraction", {0.25f, 0.5f, 0.0f, 0.125f}}, {"sqnr_db", {20.0f, 21.0f, 22.0f, kInf}}});
  putGroupAttrs(r, "block_stats/fc1/input", "fc1", "input", 2, 48, 1, 32);
  // fc1 kernel: sqnr_db 15, 14, 12, 11.
  putSeries(r, "block_stats/fc1/kernel", steps, {{"sqnr_db", {15.0f, 14.0f, 12.0f, 11.0f}}});
  putGroupAttrs(r, "block_stats/fc1/kernel", "fc1", "kernel", 64, 32, 32, 1);
  putSeries(r, "block_stats/fc2/input", steps, {{"sqnr_db", {30.0f, 30.0f, 30.0f, 30.0f}}});
  putGroupAttrs(r, "block_stats/fc2/input", "fc2", "input", 2, 32, 1, 32);
  putSeries(r, "block_stats/fc10/input", steps, {{"sqnr_db", {40.0f, 40.0f, 40.0f, 40.0f}}});
  putGroupAttrs(r, "block_stats/fc10/input", "fc10", "input", 2, 32, 1, 32);

  // What-if at steps 0 and 2.
  r.datasets["what_if/steps"] = Dataset::int64({2}, {0, 2}, "steps", "what-if steps");
  r.group_attrs["what_if"]["every"] = int64_t(2);
  r.group_attrs["what_if"]["recipes"] = std::string("mx_rceil,te_current");
  // mx_rceil: fc1 input 16.5, 30 (differences 16.5 − 20 = −3.5 and 30 − 22 = +8);
  //           fc1 kernel +Inf, 10 (difference +Inf − 15 = +Inf: no data; 10 − 12 = −2).
  putSeries(r, "what_if/mx_rceil/fc1/input", 2, {{"sqnr_db", {16.5f, 30.0f}}});
  putSeries(r, "what_if/mx_rceil/fc1/kernel", 2, {{"sqnr_db", {kInf, 10.0f}}});
  putSeries(r, "what_if/mx_rceil/fc2/input", 2, {{"sqnr_db", {31.0f, 29.0f}}});
  putSeries(r, "what_if/mx_rceil/fc10/input", 2, {{"sqnr_db", {40.0f, 40.0f}}});
  // te_current: fc1 input NaN, 25 (the NaN step is left out of the mean: 25 over 1 step).
  putSeries(r, "what_if/te_current/fc1/input", 2, {{"sqnr_db", {kNaN, 25.0f}}});
  putSeries(r, "what_if/te_current/fc1/kernel", 2, {{"sqnr_db", {13.0f, 13.0f}}});
  putSeries(r, "what_if/te_current/fc2/input", 2, {{"sqnr_db", {20.0f, 20.0f}}});
  putSeries(r, "what_if/te_current/fc10/input", 2, {{"sqnr_db", {50.0f, 50.0f}}});

  // Block maps of fc1 input [2, 48] in 1×32 blocks: grid 2×2, the right column of blocks holds
  // 48 − 32 = 16 elements. Maps at steps 0 and 3 ([2 maps, 2, 2]).
  const std::string g = "block_stats/fc1/input/";
  r.datasets[g + "map_steps"] = Dataset::int64({2}, {0, 3}, "steps", "map steps");
  // Scale codes 0x7A (2^(122 − 127) = 2^−5) everywhere; amax 0.5, min non-zero 2^−9.
  r.datasets[g + "map_scale"] = Dataset::float32({2, 2, 2}, std::vector<float>(8, 0.03125f), "1", "scale");
  r.datasets[g + "map_scale_code"] = Dataset::uint8({2, 2, 2}, std::vector<uint8_t>(8, 0x7A), "code", "code");
  r.datasets[g + "map_amax"] = Dataset::float32({2, 2, 2}, std::vector<float>(8, 0.5f), "1", "amax");
  r.datasets[g + "map_min_nonzero"] =
      Dataset::float32({2, 2, 2}, std::vector<float>(8, 0.001953125f), "1", "min non-zero");
  // Step 3 (plane 1): block (0, 0) 2 of 32 underflow (6.25 %), the edge block (0, 1) 4 of 16 (25 %).
  r.datasets[g + "map_underflow"] = Dataset::int64({2, 2, 2}, {0, 0, 0, 0, 2, 4, 0, 0}, "elements", "underflow");
  r.datasets[g + "map_saturated"] = Dataset::int64({2, 2, 2}, {0, 0, 0, 0, 0, 1, 0, 0}, "elements", "saturated");
  r.datasets[g + "map_dynamic_range"] = Dataset::float32({2, 2, 2}, std::vector<float>(8, 8.0f), "bits", "dr");
  r.datasets[g + "map_sqnr_db"] =
      Dataset::float32({2, 2, 2}, {30.0f, 31.0f, 32.0f, 33.0f, 30.0f, kInf, kNaN, 33.0f}, "dB", "sqnr");

  // Amax histories, so that the Amax history view lists the operands.
  for (const char* op : {"fc1/input", "fc1/kernel", "fc2/input", "fc10/input"}) {
    r.putFloat32(std::string("history/") + op + "/amax", {1.0f, 2.0f, 3.0f, 4.0f}, 4, -1, "1", "amax");
    r.putFloat32(std::string("history/") + op + "/scale", {1.0f, 1.0f, 1.0f, 1.0f}, 4, -1, "1", "scale");
  }

  Attributes& nf = r.group_attrs["nonfinite"];
  nf["policy"] = std::string("continue");
  nf["found"] = int64_t(nonfinite ? 1 : 0);
  if (nonfinite) {
    nf["description"] = std::string("step 2, layer fc1, fprop.weight[3,4] = inf");
    nf["step"] = int64_t(2);
    nf["layer"] = std::string("fc1");
    nf["tensor"] = std::string("fprop.weight");
    nf["kind"] = std::string("quantized_operand");
  }
  return r;
}

/// Writes `runs` to `file` and opens run `id` from it.
std::shared_ptr<RunAccess> written(const QString& file, const std::vector<Run>& runs, const std::string& id) {
  Session s;
  s.runs = runs;
  const auto st = writeSession(file.toStdString(), s);
  if (!st.ok()) qFatal("writeSession: %s", st.errors().c_str());
  QString err;
  auto a = RunAccess::fromFile(file, QString::fromStdString(id), &err);
  if (!a) qFatal("fromFile: %s", qPrintable(err));
  return a;
}

std::shared_ptr<RunAccess> memoryRun(Run r) {
  return RunAccess::fromRun(std::make_shared<const Run>(std::move(r)));
}

} // namespace

class TestDiagnosticViews : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  // Rows by layer number then input, kernel, output_grad: fc1 input, fc1 kernel, fc2 input, fc10
  // input. Underflow % = underflow_fraction × 100: 25, 50, 0, 12.5 for fc1 input; 0 elsewhere.
  void layersMatrixShowsUnderflowPercent() {
    auto run = written(dir_.filePath(QStringLiteral("t.h5")), {trainingRun("t")}, "t");
    const auto rows = blockStatOperands(*run);
    QCOMPARE(int(rows.size()), 4);
    QCOMPARE(rows[0].label(), QStringLiteral("fc1 input"));
    QCOMPARE(rows[1].label(), QStringLiteral("fc1 kernel"));
    QCOMPARE(rows[2].label(), QStringLiteral("fc2 input"));
    QCOMPARE(rows[3].label(), QStringLiteral("fc10 input"));

    LayerStepView v;
    v.resize(1100, 700);
    v.setRunAccess(run);
    QCOMPARE(v.stat(), LayerStat::UnderflowPct);
    const LayerStepMatrix& m = v.matrix();
    QCOMPARE(m.steps, (std::vector<int64_t>{0, 1, 2, 3}));
    QCOMPARE(m.at(0, 0), 25.0);
    QCOMPARE(m.at(0, 1), 50.0);
    QCOMPARE(m.at(0, 2), 0.0);
    QCOMPARE(m.at(0, 3), 12.5);
    QCOMPARE(m.at(1, 0), 0.0);
    QVERIFY(v.colorMap());
    QCOMPARE(v.colorMap()->data()->cell(1, 0), 50.0); // column 1 = step 1, row 0 = fc1 input
    QVERIFY(v.csv().startsWith(
        QStringLiteral("operand,step,underflow_percent\nfc1/input,0,25\nfc1/input,1,50\nfc1/input,2,0\n")));
    v.hoverAt(0, 3);
    QVERIFY2(v.hoverText().contains(QStringLiteral("fc1 input, step 3")), qPrintable(v.hoverText()));
    QVERIFY2(v.hoverText().contains(QStringLiteral("12.5 %")), qPrintable(v.hoverText()));
    QCOMPARE(v.colorMap()->colorScale()->axis()->label(), QStringLiteral("underflow (of non-zero elements) (%)"));
  }

  // SQNR of fc1 input as trained is +Inf at step 3 (exact): no data, grey (NaN cell), said in the
  // hover.
  void exactSqnrIsNoData() {
    LayerStepView v;
    v.setRunAccess(memoryRun(trainingRun("t")));
    v.setStat(LayerStat::SqnrDb);
    QCOMPARE(v.matrix().at(0, 0), 20.0);
    QVERIFY(std::isinf(v.matrix().at(0, 3)));
    QVERIFY(std::isnan(v.colorMap()->data()->cell(3, 0)));
    v.hoverAt(0, 3);
    QVERIFY2(v.hoverText().contains(QStringLiteral("no data")), qPrintable(v.hoverText()));
  }

  // "mx_rceil − trained": at what-if step 0, 16.5 − 20 = −3.5 dB; at step 2, 30 − 22 = +8 dB. fc1
  // kernel: +Inf − 15 = +Inf (no data, NaN cell), then 10 − 12 = −2. The colour scale is symmetric
  // about 0: ±max |d| over finite cells = ±8.
  void whatIfDifference() {
    auto run = written(dir_.filePath(QStringLiteral("d.h5")), {trainingRun("t")}, "t");
    LayerStepMatrix m;
    QString why;
    QVERIFY(!layerStepMatrix(*run, LayerStat::UnderflowPct, QStringLiteral("mx_rceil"), true, &m, &why));
    QVERIFY(layerStepMatrix(*run, LayerStat::SqnrDb, QStringLiteral("mx_rceil"), true, &m, &why));
    QCOMPARE(m.steps, (std::vector<int64_t>{0, 2}));
    QCOMPARE(m.at(0, 0), -3.5);
    QCOMPARE(m.at(0, 1), 8.0);
    QVERIFY(std::isinf(m.at(1, 0)));
    QVERIFY(LayerStepMatrix::noData(m.at(1, 0)));
    QCOMPARE(m.at(1, 1), -2.0);
    QCOMPARE(m.trained[0], 20.0);
    QCOMPARE(m.what_if[0], 16.5);

    LayerStepView v;
    v.resize(1100, 700);
    v.setRunAccess(run);
    v.setStat(LayerStat::SqnrDb);
    QVERIFY(v.setRecipe(QStringLiteral("mx_rceil"), true));
    QCOMPARE(v.matrix().at(0, 0), -3.5);
    QVERIFY(std::isnan(v.colorMap()->data()->cell(0, 1))); // fc1 kernel at step 0
    QCOMPARE(v.colorMap()->dataRange().lower, -8.0);
    QCOMPARE(v.colorMap()->dataRange().upper, 8.0);
    v.hoverAt(0, 0);
    QVERIFY2(
        v.hoverText().contains(QStringLiteral("SQNR under mx_rceil 16.5 dB, as trained 20 dB; difference -3.5 dB")),
        qPrintable(v.hoverText()));
    v.hoverAt(1, 0);
    QVERIFY2(v.hoverText().contains(QStringLiteral("no data")), qPrintable(v.hoverText()));
    QVERIFY(
        v.csv().startsWith(QStringLiteral("operand,step,sqnr_db_minus_trained\nfc1/input,0,-3.5\nfc1/input,2,8\n")));
    // The what-if recipe itself, at its steps.
    QVERIFY(v.setRecipe(QStringLiteral("te_current")));
    QVERIFY(std::isnan(v.matrix().at(0, 0)));
    QCOMPARE(v.matrix().at(0, 1), 25.0);
    QVERIFY(!v.setRecipe(QStringLiteral("no_such_recipe")));
  }

  // Mean SQNR over the what-if steps 0 and 2, finite values only:
  //   fc1 input:  trained (20 + 22)/2 = 21, mx_rceil (16.5 + 30)/2 = 23.25, te_current 25 (NaN
  //               left out) → te_current, mx_rceil, trained.
  //   fc1 kernel: trained (15 + 12)/2 = 13.5, mx_rceil 10 (+Inf left out), te_current 13
  //               → trained, te_current, mx_rceil.
  //   fc2 input:  trained 30, mx_rceil (31 + 29)/2 = 30 (tie: trained first), te_current 20.
  void recipeRankingByMeanSqnr() {
    LayerStepView v;
    v.setRunAccess(memoryRun(trainingRun("t")));
    const auto& rk = v.ranking();
    QCOMPARE(int(rk.size()), 4);
    QCOMPARE(rk[0].row.path(), QStringLiteral("fc1/input"));
    QCOMPARE(rk[0].scores[0].recipe, QStringLiteral("te_current"));
    QCOMPARE(rk[0].scores[0].mean_db, 25.0);
    QCOMPARE(rk[0].scores[0].steps, int64_t(1));
    QCOMPARE(rk[0].scores[1].recipe, QStringLiteral("mx_rceil"));
    QCOMPARE(rk[0].scores[1].mean_db, 23.25);
    QCOMPARE(rk[0].scores[2].recipe, QString());
    QCOMPARE(rk[0].scores[2].mean_db, 21.0);
    QCOMPARE(rk[1].scores[0].recipe, QString());
    QCOMPARE(rk[1].scores[0].mean_db, 13.5);
    QCOMPARE(rk[1].scores[1].recipe, QStringLiteral("te_current"));
    QCOMPARE(rk[1].scores[2].recipe, QStringLiteral("mx_rceil"));
    QCOMPARE(rk[1].scores[2].mean_db, 10.0);
    QCOMPARE(rk[2].scores[0].recipe, QString());
    QCOMPARE(rk[2].scores[1].recipe, QStringLiteral("mx_rceil"));
    QCOMPARE(rk[2].scores[1].mean_db, 30.0);
    auto* table = v.findChild<QTableWidget*>(QStringLiteral("ranking"));
    QVERIFY(table);
    QCOMPARE(table->item(0, 0)->text(), QStringLiteral("te_current: 25.00 dB"));
    QCOMPARE(table->item(0, 2)->text(), QStringLiteral("as trained (te_mxfp8): 21.00 dB"));
  }

  // An FP32 run that measured what-if recipes records no block_stats/: its rows come from
  // what_if/, the map opens on the first recipe, there is nothing "as trained" to pick or to
  // subtract, and the ranking has only the what-if recipes (fc1 input: te_current 25 dB over 1
  // step before mx_rceil (16.5 + 30) / 2 = 23.25 dB).
  void whatIfOnlyRunShowsItsRecipes() {
    Run r = trainingRun("base", false);
    r.config_json = R"({"precision": "fp32", "diagnostics": {"what_if": {"every": 2, "recipes": ["mx_rceil",
        "te_current"]}}})";
    for (auto it = r.datasets.begin(); it != r.datasets.end();)
      it = it->first.rfind("block_stats/", 0) == 0 ? r.datasets.erase(it) : std::next(it);
    for (auto it = r.group_attrs.begin(); it != r.group_attrs.end();)
      it = it->first.rfind("block_stats/", 0) == 0 ? r.group_attrs.erase(it) : std::next(it);
    auto run = written(dir_.filePath(QStringLiteral("fp32_what_if.h5")), {r}, "base");
    QVERIFY(!hasTrainedBlockStats(*run));
    const auto rows = blockStatOperands(*run);
    QCOMPARE(int(rows.size()), 4);
    QCOMPARE(rows[0].path(), QStringLiteral("fc1/input"));
    QCOMPARE(rows[3].path(), QStringLiteral("fc10/input"));
    LayerStepMatrix m;
    QString why;
    QVERIFY(!layerStepMatrix(*run, LayerStat::SqnrDb, QString(), false, &m, &why));
    QVERIFY2(why.contains(QStringLiteral("an FP32 run quantizes nothing")), qPrintable(why));
    QVERIFY(!layerStepMatrix(*run, LayerStat::SqnrDb, QStringLiteral("mx_rceil"), true, &m, &why));

    LayerStepView v;
    v.resize(1100, 700);
    v.setRunAccess(run);
    v.setStat(LayerStat::SqnrDb);
    QVERIFY2(v.emptyText().isEmpty(), qPrintable(v.emptyText()));
    QCOMPARE(v.matrix().recipe, QStringLiteral("mx_rceil"));
    QCOMPARE(v.matrix().steps, (std::vector<int64_t>{0, 2}));
    QCOMPARE(v.matrix().at(0, 0), 16.5);
    QCOMPARE(v.matrix().at(0, 1), 30.0);
    auto* box = v.findChild<QComboBox*>(QStringLiteral("recipe"));
    QVERIFY(box);
    QStringList items;
    for (int i = 0; i < box->count(); ++i) items << box->itemText(i);
    QCOMPARE(items, (QStringList{QStringLiteral("mx_rceil"), QStringLiteral("te_current")}));
    QVERIFY(!v.setRecipe(QStringLiteral("mx_rceil"), true));
    QVERIFY(!v.setRecipe(QString()));
    QVERIFY(v.setRecipe(QStringLiteral("te_current")));
    QCOMPARE(v.matrix().at(1, 0), 13.0); // fc1 kernel under te_current at step 0
    const auto& rk = v.ranking();
    QCOMPARE(int(rk.size()), 4);
    QCOMPARE(int(rk[0].scores.size()), 2);
    QCOMPARE(rk[0].scores[0].recipe, QStringLiteral("te_current"));
    QCOMPARE(rk[0].scores[0].mean_db, 25.0);
    QCOMPARE(rk[0].scores[1].recipe, QStringLiteral("mx_rceil"));
    QCOMPARE(rk[0].scores[1].mean_db, 23.25);
  }

  // A click on fc1 input at step 2 asks the block map, then the amax history, to show fc1/input
  // of run t at step 2.
  void clickRequestsTheOperandAtTheStep() {
    LayerStepView v;
    v.resize(1100, 700);
    v.setRunAccess(memoryRun(trainingRun("t")));
    QSignalSpy spy(&v, &View::showOperandRequested);
    v.clickCell(0, 2);
    QCOMPARE(spy.count(), 2);
    QCOMPARE(spy[0][0].toString(), QStringLiteral("block_map"));
    QCOMPARE(spy[1][0].toString(), QStringLiteral("amax"));
    for (const auto& args : spy) {
      QCOMPARE(args[1].toString(), QStringLiteral("t"));
      QCOMPARE(args[2].toString(), QStringLiteral("fc1/input"));
      QCOMPARE(args[3].toLongLong(), qint64(2));
    }
    QCOMPARE(v.selectedCell(), std::make_pair(0, 2));
    // A what-if column is its what-if step: column 1 of mx_rceil is step 2.
    v.setStat(LayerStat::SqnrDb);
    QVERIFY(v.setRecipe(QStringLiteral("mx_rceil"), true));
    spy.clear();
    v.clickCell(1, 1);
    QCOMPARE(spy.count(), 2);
    QCOMPARE(spy[1][2].toString(), QStringLiteral("fc1/kernel"));
    QCOMPARE(spy[1][3].toLongLong(), qint64(2));
  }

  // The first non-finite value: step 2, fprop.weight of fc1 → the fc1 kernel row. The button
  // names it, selects that cell and asks the amax view for it.
  void nonfiniteJumpSelectsItsCell() {
    LayerStepView v;
    v.resize(1100, 700);
    v.setRunAccess(memoryRun(trainingRun("t")));
    QCOMPARE(v.nonfinite().found, true);
    QCOMPARE(v.nonfinite().step, int64_t(2));
    QCOMPARE(v.nonfinite().operand, QStringLiteral("fc1/kernel"));
    QCOMPARE(v.nonfiniteButtonText(), QStringLiteral("Go to the first non-finite value (step 2, fc1/kernel)"));
    QSignalSpy spy(&v, &View::showOperandRequested);
    QVERIFY(v.goToNonfinite());
    QCOMPARE(v.selectedCell(), std::make_pair(1, 2));
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy[0][0].toString(), QStringLiteral("amax"));
    QCOMPARE(spy[0][2].toString(), QStringLiteral("fc1/kernel"));
    QCOMPARE(spy[0][3].toLongLong(), qint64(2));
    LayerStepView none;
    none.setRunAccess(memoryRun(trainingRun("u", false)));
    QVERIFY(!none.nonfinite().found);
    QCOMPARE(none.nonfiniteButtonText(), QString());
    QVERIFY(!none.goToNonfinite());
  }

  // Tensor → row: fprop.input / input → input, fprop.weight / weight → kernel, wgrad.grad_output /
  // output_grad / loss_grad → output_grad (layer loss_grad: the last layer); a GEMM output → its
  // a_operand; an elementwise tensor → no row.
  void nonfiniteTensorToRow_data() {
    QTest::addColumn<QString>("layer");
    QTest::addColumn<QString>("tensor");
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("a_operand");
    QTest::addColumn<QString>("operand");
    QTest::newRow("fprop.input") << "fc2"
                                 << "fprop.input"
                                 << "quantized_operand"
                                 << ""
                                 << "fc2/input";
    QTest::newRow("input") << "fc1"
                           << "input"
                           << "elementwise"
                           << ""
                           << "fc1/input";
    QTest::newRow("weight") << "fc1"
                            << "weight"
                            << "elementwise"
                            << ""
                            << "fc1/kernel";
    QTest::newRow("wgrad.grad_output") << "fc2"
                                       << "wgrad.grad_output"
                                       << "quantized_operand"
                                       << ""
                                       << "fc2/output_grad";
    QTest::newRow("loss_grad of the last layer") << "loss_grad"
                                                 << "loss_grad"
                                                 << "elementwise"
                                                 << ""
                                                 << "fc2/output_grad";
    QTest::newRow("gemm output") << "fc2"
                                 << "fprop.output"
                                 << "gemm_output"
                                 << "fc2/input"
                                 << "fc2/input";
    QTest::newRow("activation") << "fc1"
                                << "activation"
                                << "elementwise"
                                << ""
                                << "";
    QTest::newRow("row not recorded") << "fc1"
                                      << "wgrad.grad_output"
                                      << "quantized_operand"
                                      << ""
                                      << "";
  }
  void nonfiniteTensorToRow() {
    QFETCH(QString, layer);
    QFETCH(QString, tensor);
    QFETCH(QString, kind);
    QFETCH(QString, a_operand);
    QFETCH(QString, operand);
    Run r;
    r.id = "n";
    r.type = "training";
    r.config_json = "{}";
    for (const char* op : {"fc1/input", "fc1/kernel", "fc2/input", "fc2/kernel", "fc2/output_grad"})
      putSeries(r, std::string("block_stats/") + op, 1, {});
    Attributes& a = r.group_attrs["nonfinite"];
    a["found"] = int64_t(1);
    a["step"] = int64_t(7);
    a["layer"] = layer.toStdString();
    a["tensor"] = tensor.toStdString();
    a["kind"] = kind.toStdString();
    if (!a_operand.isEmpty()) a["a_operand"] = a_operand.toStdString();
    const NonfiniteJump j = nonfiniteJump(*memoryRun(r));
    QVERIFY(j.found);
    QCOMPARE(j.step, int64_t(7));
    QCOMPARE(j.operand, operand);
  }

  void emptyStatesSayWhatToDo() {
    LayerStepView v;
    v.setRunAccess(nullptr);
    QVERIFY2(v.emptyText().contains(QStringLiteral("No training run in this session")), qPrintable(v.emptyText()));
    Run bare;
    bare.id = "bare";
    bare.type = "training";
    bare.config_json = "{}";
    bare.putFloat32("history/fc1/input/amax", {1.0f}, 1, -1, "1", "amax");
    v.setRunAccess(memoryRun(bare));
    QVERIFY2(v.emptyText().contains(QStringLiteral("was recorded without per-block statistics")),
             qPrintable(v.emptyText()));
    QVERIFY2(v.emptyText().contains(QStringLiteral("rerun it with diagnostics on \u2014 see docs/training.md"),
                                    Qt::CaseInsensitive),
             qPrintable(v.emptyText()));
    QCOMPARE(v.csv(), QString());

    BlockMapView b;
    b.setRunAccess(nullptr);
    QVERIFY2(b.emptyText().contains(QStringLiteral("No run to show")), qPrintable(b.emptyText()));
    b.setRunAccess(memoryRun(bare));
    QVERIFY2(b.emptyText().contains(QStringLiteral("without per-block statistics")), qPrintable(b.emptyText()));
    Run gemm;
    gemm.id = "g";
    gemm.type = "gemm";
    gemm.config_json = "{}";
    gemm.putFloat32("output/D", {1.0f}, 1, 1, "1", "D");
    b.setRunAccess(memoryRun(gemm));
    QVERIFY2(b.emptyText().contains(QStringLiteral("stores no block maps of A or B")), qPrintable(b.emptyText()));
  }

  // The map of fc1 input at step 3 (plane 1), read from a session file: block (0, 0) 2 of its 32
  // elements underflow = 6.25 %; the edge block (0, 1) covers columns 32–47, 16 elements, 4 of
  // them underflow = 25 %. SQNR +Inf (exact) and NaN are no data (NaN cells).
  void blockMapValuesAndGeometry() {
    auto run = written(dir_.filePath(QStringLiteral("m.h5")), {trainingRun("t")}, "t");
    BlockMapView v;
    v.resize(1100, 700);
    v.setRunAccess(run);
    QCOMPARE(v.operand(), QStringLiteral("fc1/input"));
    QCOMPARE(v.step(), int64_t(0));
    v.setStep(2); // the nearest map step to 2 is 3
    QCOMPARE(v.step(), int64_t(3));
    const BlockMap& m = v.map();
    QCOMPARE(m.grid_rows, int64_t(2));
    QCOMPARE(m.grid_cols, int64_t(2));
    QCOMPARE(m.elements(0, 0), int64_t(32));
    QCOMPARE(m.elements(0, 1), int64_t(16));
    QCOMPARE(m.value(BlockStat::UnderflowPct, 0, 0), 6.25);
    QCOMPARE(m.value(BlockStat::UnderflowPct, 0, 1), 25.0);
    QCOMPARE(m.value(BlockStat::Log2Scale, 0, 0), -5.0);
    QCOMPARE(m.value(BlockStat::Log2Amax, 0, 0), -1.0);
    QCOMPARE(m.value(BlockStat::Saturated, 0, 1), 1.0);
    v.setStat(BlockStat::UnderflowPct);
    QCOMPARE(v.colorMap()->data()->cell(1, 0), 25.0);
    QVERIFY(v.csv().startsWith(QStringLiteral("block_row,block_col,underflow_percent\n0,0,6.25\n0,1,25\n1,0,0\n")));
    v.setStat(BlockStat::SqnrDb);
    QVERIFY(std::isnan(v.colorMap()->data()->cell(1, 0))); // +Inf
    QVERIFY(std::isnan(v.colorMap()->data()->cell(0, 1))); // NaN
    QVERIFY2(v.plotTitle().startsWith(QStringLiteral("block SQNR per block of fc1 input in t, step 3\n")),
             qPrintable(v.plotTitle()));
    QVERIFY2(v.plotTitle().endsWith(
                 QStringLiteral("\n2 of 4 blocks grey: no finite value (an all-zero block, an exact SQNR)")),
             qPrintable(v.plotTitle()));
    // Element geometry: columns span 0 … 48 elements, rows 0 … 2.
    QCOMPARE(v.colorMap()->keyAxis()->range().upper, 47.5);
    QCOMPARE(v.colorMap()->valueAxis()->range().upper, 1.5);
    QCOMPARE(v.colorMap()->keyAxis()->label(), QStringLiteral("column (elements)"));
    v.hoverAt(0, 1);
    QVERIFY2(v.hoverText().contains(QStringLiteral("columns 32\u201347 (16 elements)")), qPrintable(v.hoverText()));
    QVERIFY2(v.hoverText().contains(QStringLiteral("underflow 4 (25 %)")), qPrintable(v.hoverText()));
  }

  // A click on a block: scale 2^−5 from code 0x7A of E8M0FNU (sign 0, exponent 122, mantissa 0);
  // its link to the bit layout, and the range of its elements after scaling, 2^−9 / 2^−5 = 0.0625
  // … 0.5 / 2^−5 = 16, on the number line.
  void blockClickShowsScaleBitsAndRange() {
    BlockMapView v;
    v.resize(1100, 700);
    v.setRunAccess(memoryRun(trainingRun("t")));
    v.selectBlock(0, 0);
    QVERIFY2(v.detailText().contains(QStringLiteral("scale code 0x7a in E8M0FNU")), qPrintable(v.detailText()));
    QVERIFY2(v.detailText().contains(QStringLiteral("sign 0 \u00b7 exponent 122 \u00b7 mantissa 0")),
             qPrintable(v.detailText()));
    QSignalSpy codes(&v, &View::showCodeRequested);
    QVERIFY(v.showScaleBits());
    QCOMPARE(codes.count(), 1);
    QCOMPARE(codes[0][0].toString(), QStringLiteral("bits"));
    QCOMPARE(codes[0][1].toString(), QStringLiteral("E8M0FNU"));
    QCOMPARE(codes[0][2].toUInt(), 0x7Au);
    QSignalSpy ranges(&v, &View::showRangeRequested);
    QVERIFY(v.showOnNumberLine());
    QCOMPARE(ranges.count(), 1);
    QCOMPARE(ranges[0][0].toString(), QStringLiteral("numberline"));
    QCOMPARE(ranges[0][1].toString(), QStringLiteral("E4M3FN"));
    QCOMPARE(ranges[0][2].toDouble(), 0.0625);
    QCOMPARE(ranges[0][3].toDouble(), 16.0);

    NumberLineView nl;
    nl.resize(1100, 800);
    QVERIFY(nl.showRange(QStringLiteral("E5M2"), 0.0625, 16.0, QStringLiteral("fc1 input block (0, 0)")));
    QCOMPARE(nl.formats().first(), QStringLiteral("E5M2"));
    QCOMPARE(nl.markedRange().lo, 0.0625);
    QCOMPARE(nl.markedRange().hi, 16.0);
    QVERIFY(!nl.showRange(QStringLiteral("E5M2"), 0.0, 1.0, QStringLiteral("empty")));
  }

  // The session's current run when a view does not list it (an FP32 run without what-if
  // recipes has nothing for Layer × step or Block map): the view shows no run and says why, rather
  // than going on showing the previous run as if it were the one selected.
  void unlistedCurrentRunIsSaidNotSwapped() {
    Run base;
    base.id = "base";
    base.type = "training";
    base.config_json = R"({"precision": "fp32"})";
    base.putFloat32("history/fc1/input/amax", {1.0f}, 1, -1, "1", "amax");
    SessionDocument doc;
    doc.addRun(session_io::fromCoreRun(trainingRun("t", false)));
    doc.addRun(session_io::fromCoreRun(base));
    doc.setCurrentRun(0);
    LayerStepView v;
    v.resize(1100, 700);
    v.setSession(&doc);
    v.runPendingReloads();
    QVERIFY2(v.emptyText().isEmpty(), qPrintable(v.emptyText()));
    BlockMapView b;
    b.resize(1100, 700);
    b.setSession(&doc);
    b.runPendingReloads();
    QCOMPARE(b.operand(), QStringLiteral("fc1/input"));
    doc.setCurrentRun(1);
    v.runPendingReloads();
    b.runPendingReloads();
    auto* box = v.findChild<QComboBox*>(QStringLiteral("run"));
    QCOMPARE(box->currentIndex(), -1);
    QVERIFY2(v.emptyText().startsWith(QStringLiteral("Run base is an FP32 run: it quantizes nothing")),
             qPrintable(v.emptyText()));
    QVERIFY2(v.emptyText().endsWith(QStringLiteral("Choose a run in the Run box above.")), qPrintable(v.emptyText()));
    QVERIFY2(b.emptyText().startsWith(QStringLiteral("Run base is an FP32 run")), qPrintable(b.emptyText()));
    // Choosing in the box shows that run again.
    box->setCurrentIndex(0);
    QVERIFY2(v.emptyText().isEmpty(), qPrintable(v.emptyText()));
    QCOMPARE(v.matrix().steps.size(), size_t{4});
  }

  // The Number line's "current run's tensor": a checkpoint run's stored weights (dequantized), a
  // training run's trained kernels, a GEMM's inputs. A checkpoint weight [2, 3] of 1, 2, 4, 8, 16
  // and 448 in E4M3FN: per-tensor current scaling maps amax 448 to 448 (scale 1), so the six
  // values keep their binades 0, 1, 2, 3, 4 and 8 (448 = 1.75 · 2^8), one sixth each.
  void numberLineShowsARunsTensor() {
    Run ck;
    ck.id = "ck";
    ck.type = "checkpoint";
    ck.config_json = "{}";
    ck.putFloat32("quantized/w.weight_dequantized", {1, 2, 4, 8, 16, 448}, 2, 3, "1", "stored weight");
    ck.putFloat32("quantized/a.weight_dequantized", {1}, 1, 1, "1", "stored weight");
    Run tr = trainingRun("t", false);
    tr.putFloat32("weights/fc2/kernel", {1, 2}, 1, 2, "1", "kernel");
    tr.putFloat32("weights/fc1/kernel", {1, 2}, 1, 2, "1", "kernel");
    tr.putFloat32("weights/fc1/bias", {1, 2}, 1, 2, "1", "bias");
    QCOMPARE(histogramTensors(*memoryRun(ck)), (QStringList{QStringLiteral("quantized/a.weight_dequantized"),
                                                            QStringLiteral("quantized/w.weight_dequantized")}));
    QCOMPARE(histogramTensors(*memoryRun(tr)),
             (QStringList{QStringLiteral("weights/fc1/kernel"), QStringLiteral("weights/fc2/kernel")}));
    SessionDocument doc;
    doc.addRun(session_io::fromCoreRun(ck));
    doc.setCurrentRun(0);
    NumberLineView nl;
    nl.resize(1100, 800);
    nl.setSession(&doc);
    QVERIFY(nl.setRunTensor(QStringLiteral("quantized/w.weight_dequantized")));
    QVERIFY(!nl.setRunTensor(QStringLiteral("inputs/A")));
    QVERIFY(nl.setRunTensor(QStringLiteral("quantized/w.weight_dequantized")));
    const TensorOverlay& o = nl.overlay();
    QVERIFY2(o.source.contains(QStringLiteral("quantized/w.weight_dequantized [2\u00d73]")), qPrintable(o.source));
    QCOMPARE(o.elements, qint64(6));
    QCOMPARE(o.amax, 448.0);
    QCOMPARE(o.binade, (std::vector<int>{0, 1, 2, 3, 4, 8}));
  }

  // A GEMM run's block_stats/A, one map without map_steps: index 0, titled without a step.
  void gemmRunHasOneMap() {
    Run r;
    r.id = "g";
    r.type = "gemm";
    r.config_json = "{}";
    putSeries(r, "block_stats/A", 1, {});
    putGroupAttrs(r, "block_stats/A", "", "A", 4, 64, 1, 32);
    for (const char* m : {"map_scale", "map_amax", "map_min_nonzero", "map_dynamic_range", "map_sqnr_db"})
      r.datasets[std::string("block_stats/A/") + m] = Dataset::float32({1, 4, 2}, std::vector<float>(8, 1.0f), "1", m);
    for (const char* m : {"map_underflow", "map_saturated"})
      r.datasets[std::string("block_stats/A/") + m] = Dataset::int64({1, 4, 2}, std::vector<int64_t>(8, 8), "1", m);
    BlockMapView v;
    v.setRunAccess(memoryRun(r));
    QCOMPARE(v.operand(), QStringLiteral("A"));
    QCOMPARE(v.step(), int64_t(0));
    QCOMPARE(v.map().value(BlockStat::UnderflowPct, 3, 1), 25.0); // 8 of 32
    // Float32 scales (no map_scale_code): the 32 bits as text, no Bit layout link.
    v.selectBlock(0, 0);
    QVERIFY2(v.detailText().contains(QStringLiteral("float32 scale bits <tt>0 01111111 00000000000000000000000</tt>")),
             qPrintable(v.detailText()));
    QVERIFY2(v.plotTitle().startsWith(QStringLiteral("log\u2082 of the block scale per block of A in g\n")),
             qPrintable(v.plotTitle()));
    // One map, not a map at step 0: the detail names no step.
    QVERIFY2(v.detailText().startsWith(QStringLiteral("<b>Block (0, 0)</b> of A<br>")), qPrintable(v.detailText()));
    QVERIFY(!v.showScaleBits());
    // The training run above stores no elements: only the range. A GEMM run stores inputs/A:
    // "Show on number line" also sends block (3, 1)'s 32 elements, A[3, 32..63] = 3·64 + j.
    QSignalSpy none(&v, &View::showValuesRequested);
    QVERIFY(v.showOnNumberLine());
    QCOMPARE(none.count(), 0);
    std::vector<float> a(4 * 64);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(i);
    r.putFloat32("inputs/A", a, 4, 64, "1", "A");
    BlockMapView g;
    g.setRunAccess(memoryRun(r));
    g.selectBlock(3, 1);
    QSignalSpy values(&g, &View::showValuesRequested);
    QVERIFY(g.showOnNumberLine());
    QCOMPARE(values.count(), 1);
    const QList<float> got = values[0][2].value<QList<float>>();
    QCOMPARE(got.size(), qsizetype(32));
    QCOMPARE(got.first(), 3.0f * 64 + 32);
    QCOMPARE(got.last(), 3.0f * 64 + 63);
    NumberLineView nl;
    QVERIFY(nl.showValues(QStringLiteral("E4M3FN"), got, QStringLiteral("A block (3, 1)")));
    QCOMPARE(nl.overlay().elements, qint64(32));
    QCOMPARE(nl.overlay().amax, 255.0);
  }

  // In the window at 1400×900 the block map's title wraps at spaces: a run id of 121 characters
  // makes its first line wider than the plot, and the id alone too, so it breaks after a '-'. No
  // line is elided ("…", which cut "1×32 blocks" to "1×…locks"), the lines hold every character of
  // the title in order, the second line of the title is whole, each line fits the plot's width, the
  // title row spans the plot and is as high as its lines, and the map starts below it.
  void blockMapTitleWrapsAtWords() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const std::string id = "fp8-delayed-lr3e-4-warmup200-wd0.1-seed17-history1024-margin0-amax-max-te_current-e4m3fn-"
                           "e5m2-from-a-sweep-script-shard07";
    QCOMPARE(id.size(), size_t(121));
    w.session()->addRun(session_io::fromCoreRun(trainingRun(id, false)));
    QVERIFY(w.showView(QStringLiteral("block_map")));
    auto* map = qobject_cast<BlockMapView*>(w.view(QStringLiteral("block_map")));
    QVERIFY(map);
    QTRY_VERIFY(map->colorMap());
    for (int i = 0; i < 3; ++i) QCoreApplication::processEvents();
    map->plot()->replot(QCustomPlot::rpImmediateRefresh);
    auto* title = dynamic_cast<WrappedTitle*>(map->plot()->plotLayout()->element(0, 0));
    QVERIFY(title);
    QVERIFY2(title->text().contains(QString::fromStdString(id)), qPrintable(title->text()));
    const QStringList lines = title->drawnLines();
    const QFontMetrics fm(title->font());
    QVERIFY2(lines.size() > title->text().count(QLatin1Char('\n')) + 1, qPrintable(lines.join(QLatin1Char('|'))));
    for (const QString& l : lines) {
      QVERIFY2(!l.contains(QChar(0x2026)), qPrintable(l));
      QVERIFY2(fm.horizontalAdvance(l) <= title->rect().width(), qPrintable(l));
    }
    const QRegularExpression space(QStringLiteral("\\s+"));
    QCOMPARE(lines.join(QString()).remove(space), title->text().remove(space));
    QVERIFY2(lines.contains(QStringLiteral("te_mxfp8 E4M3FN 1x32: 2\u00d72 blocks of 1\u00d732 elements over [2, 48]")),
             qPrintable(lines.join(QLatin1Char('|'))));
    QCOMPARE(title->outerRect().width(), map->plot()->viewport().width());
    QVERIFY2(title->rect().height() >= int(lines.size()) * fm.height(),
             qPrintable(QStringLiteral("%1 px for %2 lines").arg(title->rect().height()).arg(lines.size())));
    QVERIFY(title->outerRect().bottom() <= map->colorMap()->keyAxis()->axisRect()->outerRect().top());
  }

  // The window: a click on a cell puts the block map on fc1 input at map step 3 (nearest 2) and
  // the amax history, in front, on fc1/input at step 2; the banner offers the non-finite jump,
  // which brings the layers view to the front on the fc1 kernel cell at step 2.
  void windowRoutesTheRequests() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    w.show();
    w.session()->addRun(session_io::fromCoreRun(trainingRun("t")));
    QVERIFY2(w.bannerShown(), qPrintable(w.bannerText()));
    QVERIFY2(w.bannerText().contains(QStringLiteral("Go to the first non-finite value (step 2, fc1/kernel)")),
             qPrintable(w.bannerText()));
    QVERIFY(w.jumpToNonfinite(QStringLiteral("t")));
    QCOMPARE(w.currentView()->viewId(), QStringLiteral("layers"));
    auto* layers = qobject_cast<LayerStepView*>(w.view(QStringLiteral("layers")));
    QVERIFY(layers);
    QCOMPARE(layers->selectedCell(), std::make_pair(1, 2));
    layers->clickCell(0, 2);
    QCOMPARE(w.currentView()->viewId(), QStringLiteral("amax"));
    auto* amax = qobject_cast<AmaxHistoryView*>(w.view(QStringLiteral("amax")));
    QCOMPARE(amax->tensor(), QStringLiteral("fc1/input"));
    QCOMPARE(amax->step(), int64_t(2));
    auto* map = qobject_cast<BlockMapView*>(w.view(QStringLiteral("block_map")));
    QCOMPARE(map->operand(), QStringLiteral("fc1/input"));
    QCOMPARE(map->step(), int64_t(3));
    // The block map's "Show on number line" reaches the number line.
    map->selectBlock(0, 0);
    QVERIFY(map->showOnNumberLine());
    QCOMPARE(w.currentView()->viewId(), QStringLiteral("numberline"));
    auto* nl = qobject_cast<NumberLineView*>(w.view(QStringLiteral("numberline")));
    QCOMPARE(nl->markedRange().hi, 16.0);
  }

private:
  QTemporaryDir dir_;
};

QTEST_MAIN(TestDiagnosticViews)
#include "test_diagnostic_views.moc"

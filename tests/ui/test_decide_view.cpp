// The Decide view (ui/views/decide_view.h) on runs built here: the part a session opens on, the GEMM
// ranking's table against means and intervals worked out by hand, the cost column against the cost
// table's hand-derived bytes, the training chart's FP32 line and deltas, the advice, the empty states,
// the metric choice, the report it saves (HTML and PDF), the renderer's decide files, and a training
// session opening on this view in the main window.
#include "views/decide_view.h"
#include "main_window.h"
#include "plot/qcp.h"
#include "session/run_access.h"
#include "session/session_document.h"
#include "views/view_render.h"

#include "experiment/decision/site_advice.h"
#include "experiment/gemm/sweep.h"
#include "json/json_document.h"

#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace fp8lab;
using namespace fp8lab::ui;

namespace {

/// A GEMM run of `scaling` with seed `seed` on 32×256·256×32 normal operands and its SQNR.
std::shared_ptr<const Run> gemmRun(const std::string& scaling, uint64_t seed, double sqnr) {
  auto r = std::make_shared<Run>();
  r->id = "g-" + scaling + "-s" + std::to_string(seed);
  r->type = "gemm";
  r->seed = seed;
  r->config_json = "{\"type\": \"gemm\", \"m\": 32, \"k\": 256, \"n\": 32, \"seed\": " + std::to_string(seed) +
                   ", \"scaling\": \"" + scaling + "\"}";
  r->attrs["m"] = int64_t(32);
  r->attrs["k"] = int64_t(256);
  r->attrs["n"] = int64_t(32);
  r->setMetric("sqnr_db", sqnr, "dB", "");
  r->setMetric("rel_err_median", 0.03, "1", "");
  return r;
}

std::shared_ptr<const Run> trainingRun(const std::string& id, const std::string& precision, double acc) {
  auto r = std::make_shared<Run>();
  r->id = id;
  r->type = "training";
  r->seed = 1;
  r->config_json = "{\"id\": \"" + id + "\", \"precision\": \"" + precision + "\", \"epochs\": 3}";
  r->attrs["precision"] = precision;
  if (precision == "fp8") r->attrs["recipe"] = std::string("te_mxfp8");
  r->setMetric("final_test_accuracy", acc, "1", "");
  return r;
}

QList<std::shared_ptr<RunAccess>> access(const std::vector<std::shared_ptr<const Run>>& runs) {
  QList<std::shared_ptr<RunAccess>> l;
  for (const auto& r : runs) l << RunAccess::fromRun(r);
  return l;
}

/// te_current 28.0 28.4 28.2 (mean 28.2, sd 0.2, half = 4.303·0.2/√3 = 0.49687) and per_row
/// 31.0 31.3 31.1 (mean 31.1333, sd 0.152753, half 0.37949): per_row's interval [30.75, 31.51]
/// lies wholly above te_current's [27.70, 28.70], so per_row is rank 1 and te_current rank 2.
std::vector<std::shared_ptr<const Run>> sweepRuns() {
  return {gemmRun("te_current", 1, 28.0), gemmRun("te_current", 2, 28.4), gemmRun("te_current", 3, 28.2),
          gemmRun("per_row", 1, 31.0),    gemmRun("per_row", 2, 31.3),    gemmRun("per_row", 3, 31.1)};
}

QString cell(QTableWidget* t, int row, int col) {
  return t->item(row, col) ? t->item(row, col)->text() : QString();
}

/// The row of the table whose column 1 (recipe) is `label`, or −1.
int rowOf(QTableWidget* t, const QString& label) {
  for (int r = 0; r < t->rowCount(); ++r)
    if (cell(t, r, 1) == label) return r;
  return -1;
}

} // namespace

class TestDecideView : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void emptySessionSaysWhatToRun() {
    DecideView v;
    v.resize(1000, 700);
    v.setRuns({});
    QCOMPARE(v.part(), DecideView::Part::Gemm);
    QCOMPARE(v.emptyText(), QString::fromStdString(hintGemmRanking()));
    QVERIFY(v.emptyText().contains(QStringLiteral("fp8lab-cli sweep")));
    QVERIFY(!v.table()->isVisibleTo(&v));
    v.setPart(DecideView::Part::Training);
    QCOMPARE(v.emptyText(), QString::fromStdString(hintTraining()));
    v.setPart(DecideView::Part::Advice);
    QVERIFY(v.emptyText().contains(QStringLiteral("fp8lab-cli advise")));
    v.setPart(DecideView::Part::WhatIf);
    QVERIFY(v.emptyText().contains(QStringLiteral("checkpoint import")));
    QVERIFY(v.csv().isEmpty());
  }

  void gemmRankingTableAndCost() {
    DecideView v;
    v.resize(1200, 800);
    v.setRuns(access(sweepRuns()));
    QCOMPARE(v.part(), DecideView::Part::Gemm);
    QCOMPARE(v.metric(), QStringLiteral("sqnr_db"));
    QTableWidget* t = v.table();
    QCOMPARE(t->rowCount(), 2);
    const int pr = rowOf(t, QStringLiteral("per_row · E4M3FN")), tc = rowOf(t, QStringLiteral("te_current · E4M3FN"));
    QVERIFY(pr >= 0 && tc >= 0);
    QCOMPARE(cell(t, pr, 0), QStringLiteral("1"));
    QCOMPARE(cell(t, tc, 0), QStringLiteral("2"));
    QCOMPARE(cell(t, pr, 2), QStringLiteral("31.13 ± 0.38"));
    // te_current 28.0, 28.4, 28.2: mean 28.2, sd 0.2, half 4.303 · 0.2 / √3 = 0.4969: two digits of
    // the half-width, the mean to the same place.
    QCOMPARE(cell(t, tc, 2), QStringLiteral("28.20 ± 0.50"));
    QCOMPARE(cell(t, tc, 4), QStringLiteral("3"));
    // Cost: 32×256 + 256×32 = 16384 element bytes; per_row 32 + 32 float32 = 256 bytes of scales →
    // 16640 / 16384 = 1.015625; te_current 2 × 4 bytes → 16392 / 16384 = 1.00048828.
    QCOMPARE(cell(t, pr, 5), QStringLiteral("1.0156"));
    QCOMPARE(cell(t, tc, 5), QStringLiteral("1.0005"));
    QVERIFY(cell(t, pr, 9).startsWith(QStringLiteral("Hopper (sm_90): cuBLASLt OUTER_VEC_32F")));
    QVERIFY(cell(t, tc, 9).startsWith(QStringLiteral("Ada, Hopper, Blackwell")));
    // The chart: a row per recipe, the best first, its rank in the label; cost on the right axis.
    QCPAxisRect* rect = v.plot()->axisRects().value(0);
    QVERIFY(rect);
    auto* left = dynamic_cast<QCPAxisTickerText*>(rect->axis(QCPAxis::atLeft)->ticker().data());
    QVERIFY(left);
    QCOMPARE(left->ticks().value(0), QStringLiteral("1  per_row · E4M3FN"));
    QCOMPARE(left->ticks().value(1), QStringLiteral("2  te_current · E4M3FN"));
    auto* right = dynamic_cast<QCPAxisTickerText*>(rect->axis(QCPAxis::atRight)->ticker().data());
    QCOMPARE(right->ticks().value(0), QStringLiteral("1.016 B/elem · Hopper"));
    QCOMPARE(rect->axis(QCPAxis::atBottom)->label(), QStringLiteral("SQNR of D (dB)"));
    QVERIFY(v.csv().startsWith(QStringLiteral("\"Rank\",\"Recipe\"")));
    // Another metric: the one the runs have is offered; unknown keys are refused.
    QVERIFY(v.setMetric(QStringLiteral("rel_err_median")));
    QCOMPARE(v.metric(), QStringLiteral("rel_err_median"));
    QCOMPARE(cell(v.table(), 0, 2), QStringLiteral("0.03 ± 0"));
    QVERIFY(!v.setMetric(QStringLiteral("bogus")));
    auto* box = v.findChild<QComboBox*>(QStringLiteral("metric"));
    QVERIFY(box->findData(QStringLiteral("sqnr_db")) >= 0);
    QVERIFY(box->findData(QStringLiteral("bulk_sqnr_db")) < 0); // no run has it
  }

  // Training runs: the part a training session opens on; the FP32 baseline as a dashed line; Δ.
  void trainingAgainstFp32() {
    DecideView v;
    v.resize(1200, 800);
    v.setRuns(access({trainingRun("fp32-baseline", "fp32", 0.8652), trainingRun("mxfp8", "fp8", 0.8637)}));
    QCOMPARE(v.part(), DecideView::Part::Training);
    QCOMPARE(v.metric(), QStringLiteral("final_test_accuracy"));
    QTableWidget* t = v.table();
    const int m = rowOf(t, QStringLiteral("te_mxfp8"));
    QVERIFY(m >= 0);
    QCOMPARE(cell(t, m, 3), QString::asprintf("%+.4g", 0.8637 - 0.8652));
    QCOMPARE(cell(t, rowOf(t, QStringLiteral("FP32 baseline")), 3), QStringLiteral("baseline"));
    // The cost beside the loss: this run's config names no block recipe, so per-tensor E4M3FN (one
    // float32 scale per operand: (2·4096² + 8) / (2·4096²) → 1.0000); FP32 reads 4 bytes.
    QCOMPARE(cell(t, m, 7), QStringLiteral("1.0000"));
    QCOMPARE(cell(t, m, 8), QStringLiteral("Ada/Hopper/Blackwell"));
    QCOMPARE(cell(t, rowOf(t, QStringLiteral("FP32 baseline")), 7), QStringLiteral("4.0000"));
    int lines = 0;
    for (int i = 0; i < v.plot()->itemCount(); ++i)
      lines += qobject_cast<QCPItemStraightLine*>(v.plot()->item(i)) != nullptr;
    QCOMPARE(lines, 1);
    // One seed, no interval: the value axis spans at least a tenth of the values (0.08652 here) so
    // the 0.0015 gap does not fill it; with the 6 % / 30 % margins the range is 1.36 × 0.08652.
    const QCPRange xr = v.plot()->axisRect()->axis(QCPAxis::atBottom)->range();
    QVERIFY2(xr.size() >= 1.36 * 0.08652 - 1e-9, qPrintable(QString::number(xr.size())));
    QVERIFY(xr.lower < 0.8637 && xr.upper > 0.8652);
    QVERIFY(v.findChild<QLabel*>(QStringLiteral("note"))->text().contains(QStringLiteral("One seed")));
    QVERIFY(DecideView::opensOn(access({trainingRun("x", "fp32", 0.5)})));
  }

  // An accuracy difference reads in percentage points on the chart: 0.8752 − 0.8652 = +0.0100,
  // "+1.00 pp"; 0.8637 − 0.8652 = −0.0015, "−0.15 pp". The subtitle names the test set the runs
  // were measured on (test_limit 1000 in both configs).
  void trainingDeltaInPercentagePoints() {
    auto limited = [](const std::string& id, const std::string& precision, double acc) {
      auto r = std::make_shared<Run>(*trainingRun(id, precision, acc));
      r->config_json =
          "{\"id\": \"" + id + "\", \"precision\": \"" + precision + "\", \"epochs\": 3, \"test_limit\": 1000}";
      return std::shared_ptr<const Run>(r);
    };
    DecideView v;
    v.resize(1200, 800);
    v.setRuns(access({limited("fp32-baseline", "fp32", 0.8652), limited("mxfp8", "fp8", 0.8752)}));
    QCOMPARE(v.part(), DecideView::Part::Training);
    auto* right = dynamic_cast<QCPAxisTickerText*>(v.plot()->axisRect()->axis(QCPAxis::atRight)->ticker().data());
    QVERIFY(right);
    QStringList labels;
    for (const QString& l : right->ticks()) labels << l;
    QVERIFY2(labels.contains(QStringLiteral("\u0394 +1.00 pp vs FP32")), qPrintable(labels.join(QLatin1Char('|'))));
    auto* sub = qobject_cast<QCPTextElement*>(v.plot()->plotLayout()->element(1, 0));
    QVERIFY(sub);
    QVERIFY2(sub->text().contains(QStringLiteral(" \u00b7 test set: the first 1000 images")), qPrintable(sub->text()));
    v.setRuns(access({limited("fp32-baseline", "fp32", 0.8652), limited("mxfp8", "fp8", 0.8637)}));
    right = dynamic_cast<QCPAxisTickerText*>(v.plot()->axisRect()->axis(QCPAxis::atRight)->ticker().data());
    labels.clear();
    for (const QString& l : right->ticks()) labels << l;
    QVERIFY2(labels.contains(QStringLiteral("\u0394 -0.15 pp vs FP32")), qPrintable(labels.join(QLatin1Char('|'))));
  }

  // A GEMM session opens here only when its recipes were run with several seeds.
  void opensOnSeededSweeps() {
    QVERIFY(DecideView::opensOn(access(sweepRuns())));
    QVERIFY(!DecideView::opensOn(access({gemmRun("te_current", 1, 28), gemmRun("per_row", 1, 31)})));
    QVERIFY(!DecideView::opensOn({}));
  }

  void adviceTable() {
    SiteAdvice a;
    a.run_id = "nvfp4";
    a.loss_name = "test loss (nats)";
    a.high_loss = 0.49;
    a.full_loss = 0.52;
    a.seeds = 3;
    a.groups = {GroupSensitivity{SiteGroup{"fc1", {"fc1"}}, 0.5, 0.0025, 0.01, -0.0223, 0.0273, {}, 0.08, 21.0, false},
                GroupSensitivity{SiteGroup{"fc2", {"fc2"}}, 0.515, 0.025, 0.01, 0.0002, 0.0498, {}, 0.83, 17.0, true}};
    a.policy.rules.push_back(PolicyRule{});
    auto run = std::make_shared<const Run>(adviceToSession(a, "nvfp4-advice", 150));
    DecideView v;
    v.resize(1200, 800);
    v.setRuns(access({run}));
    QCOMPARE(v.part(), DecideView::Part::Advice);
    QTableWidget* t = v.table();
    QCOMPARE(t->rowCount(), 2);
    QCOMPARE(cell(t, 1, 0), QStringLiteral("fc2"));
    // Δ with its 95 % interval, as stored (float32).
    QCOMPARE(cell(t, 1, 1),
             QString::asprintf("%+.4f [%+.4f, %+.4f]", double(0.025f), double(0.0002f), double(0.0498f)));
    QCOMPARE(cell(t, 1, 4), QStringLiteral("keep in high precision"));
    // fc1's Δ (0.0025) is positive but its interval [−0.0223, 0.0273] holds 0: low precision, said to be noise.
    QCOMPARE(cell(t, 0, 4), QStringLiteral("low precision (interval holds 0: within seed noise)"));
    QVERIFY(v.findChild<QLabel*>(QStringLiteral("note"))->text().startsWith(QStringLiteral("Policy: ")));
    // An advice session holds the training runs it measured too (no FP32 baseline among them): it
    // still opens on the advice, not on "Training against FP32 / No FP32 run".
    DecideView w;
    w.resize(1200, 800);
    w.setRuns(access({run, trainingRun("nvfp4-advice-s1", "fp8", 0.85), trainingRun("nvfp4-advice-s2", "fp8", 0.86)}));
    QCOMPARE(w.part(), DecideView::Part::Advice);
  }

  // Save report: HTML as core writes it, PDF through QPdfWriter.
  void savesTheReport() {
    QTemporaryDir dir;
    DecideView v;
    v.setRuns(access(sweepRuns()));
    QString err;
    const QString html = dir.filePath(QStringLiteral("r.html")), pdf = dir.filePath(QStringLiteral("r.pdf"));
    QVERIFY2(v.saveReport(html, &err), qPrintable(err));
    QFile h(html);
    QVERIFY(h.open(QIODevice::ReadOnly));
    const QByteArray text = h.readAll();
    QVERIFY(text.contains("FP8 Lab report"));
    QVERIFY(text.contains("data-recipe=\"per_row · E4M3FN\""));
    QVERIFY2(v.saveReport(pdf, &err), qPrintable(err));
    QFile p(pdf);
    QVERIFY(p.open(QIODevice::ReadOnly));
    QCOMPARE(p.read(5), QByteArray("%PDF-"));
    QVERIFY(p.size() > 2000);
    QVERIFY(!v.saveReport(dir.filePath(QStringLiteral("no/such/dir/r.html")), &err));
  }

  // fp8lab-render's decide files, and the metric refused when no view knows it.
  void rendererWritesDecideParts() {
    QTemporaryDir dir;
    // Real GEMM runs (a session file's GEMM runs carry their datasets): two recipes × two seeds.
    Session s;
    SweepSpec spec;
    const JsonDocument doc = JsonDocument::parse(
        "{\"type\": \"gemm\", \"m\": 16, \"k\": 128, \"n\": 16, \"sweep\": {\"scalings\": [\"te_current\", "
        "\"per_row\"], \"seeds\": [1, 2]}}");
    QCOMPARE(parseSweepSpec(doc.root(), {}, &spec), std::string());
    std::vector<SweepPoint> grid;
    QCOMPARE(expandSweep(spec, &grid), std::string());
    auto backend = makeCpuGemmBackend();
    SweepHooks h;
    h.save = [&](const std::vector<Run>& runs, std::string*) {
      s.runs.insert(s.runs.end(), runs.begin(), runs.end());
      return true;
    };
    QCOMPARE(int(runSweep(grid, *backend, h).status), int(SweepOutcome::Status::Completed));
    s.runs.push_back(*trainingRun("fp32-baseline", "fp32", 0.8652));
    s.runs.push_back(*trainingRun("mxfp8", "fp8", 0.8637));
    const QString file = dir.filePath(QStringLiteral("s.h5"));
    QVERIFY(writeSession(file.toStdString(), s).ok());
    RenderRequest req;
    req.session = file;
    req.dir = dir.filePath(QStringLiteral("png"));
    req.views = {QStringLiteral("decide")};
    req.size = QSize(900, 600);
    req.metric = QStringLiteral("rel_err_median");
    QList<RenderedFile> files;
    QString err;
    QVERIFY2(renderViews(req, &files, &err), qPrintable(err));
    QStringList names;
    for (const auto& f : files) names << QFileInfo(f.file).fileName();
    QVERIFY2(names.contains(QStringLiteral("decide-gemm.png")), qPrintable(names.join(QLatin1Char(' '))));
    QVERIFY(names.contains(QStringLiteral("decide-training.png")));
    QFile csv(dir.filePath(QStringLiteral("png/decide-gemm.csv")));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    QVERIFY(csv.readAll().contains("median relative error of D"));
    req.metric = QStringLiteral("bogus");
    QVERIFY(!renderViews(req, &files, &err));
    QVERIFY(err.contains(QStringLiteral("unknown metric 'bogus'")));
  }

  // The main job's session (training runs beside an FP32 baseline) opens on the accuracy chart.
  void trainingSessionOpensOnDecide() {
    QTemporaryDir dir;
    Session s;
    s.runs.push_back(*trainingRun("fp32-baseline", "fp32", 0.8652));
    s.runs.push_back(*trainingRun("mxfp8", "fp8", 0.8637));
    const QString file = dir.filePath(QStringLiteral("t.h5"));
    QVERIFY(writeSession(file.toStdString(), s).ok());
    MainWindow::Options o;
    o.restore_settings = false;
    o.open_default_session = false;
    o.probe_backend = false;
    MainWindow w(o);
    w.resize(1400, 900);
    w.show();
    QVERIFY(w.openSession(file));
    QVERIFY(w.currentView());
    QCOMPARE(w.currentView()->viewId(), QStringLiteral("decide"));
    auto* d = qobject_cast<DecideView*>(w.currentView());
    QVERIFY(d);
    d->runPendingReloads();
    QCOMPARE(d->part(), DecideView::Part::Training);
  }
};

QTEST_MAIN(TestDecideView)
#include "test_decide_view.moc"

// The texts and JSON objects `fp8lab-cli run`, `sweep`, `rerun` and `train` print, as core
// writes them (core/experiment/run_results.h, sweep_file.h, training_report.h,
// experiment_batch.h, gemm_experiment_object.h). Expected texts are written out by hand from the
// formats the headers document; numbers follow printf's %.6g (std::to_chars, ties to even).
#include <QtTest>

#include "experiment/experiment_batch.h"
#include "experiment/gemm/gemm_experiment_object.h"
#include "experiment/run_results.h"
#include "experiment/gemm/sweep_file.h"
#include "experiment/training/training_report.h"

#include <cmath>
#include <limits>

using namespace fp8lab;

namespace {

Run gemmRun() {
  Run r;
  r.id = "g";
  r.type = "gemm";
  r.backend = "cpu";
  r.device = "CPU X";
  r.attrs = {{"m", int64_t(48)},   {"k", int64_t(64)},        {"n", int64_t(40)},     {"format_a", "E4M3FN"},
             {"format_b", "E5M2"}, {"scaling", "te_current"}, {"algorithm", "split"}, {"warnings", "[\"w1\"]"}};
  r.metrics["sqnr_db"].value = 24.64961;
  r.metrics["rel_fro"].value = 0.05854934;
  r.metrics["max_abs"].value = 1.780451;
  r.metrics["quant_sqnr_db"].value = 24.64961;
  return r;
}

} // namespace

class TestRunReports : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void sixDigitTextIsPrintfG6() {
    QCOMPARE(sixDigitText(28.54661234), std::string("28.5466"));
    QCOMPARE(sixDigitText(1e-7), std::string("1e-07"));
    // 123456.5 is exact in binary: a decimal tie at 6 digits, rounded to even as printf does
    QCOMPARE(sixDigitText(123456.5), std::string("123456"));
    QCOMPARE(sixDigitText(-0.0), std::string("-0"));
    QCOMPARE(sixDigitText(std::numeric_limits<double>::infinity()), std::string("inf"));
    QCOMPARE(sixDigitText(-std::numeric_limits<double>::infinity()), std::string("-inf"));
    QCOMPARE(sixDigitText(std::nan("")), std::string("nan"));
  }

  void nonFiniteJsonNumbersAreStrings() {
    QVERIFY(reportJsonNumber(std::nan("")) == Json("nan"));
    QVERIFY(reportJsonNumber(-std::numeric_limits<double>::infinity()) == Json("-inf"));
    QVERIFY(reportJsonNumber(2.5) == Json(2.5));
  }

  void gemmRunTextReport() {
    // The shape, formats and scaling come from the run's attributes; accum_sqnr_db is missing: "-".
    GemmExperimentConfig cfg; // its 256x256x256 would show only without the attributes
    QCOMPARE(gemmRunReportText(gemmRun(), "g-2", cfg, "out.h5"),
             std::string("run g-2 (gemm 48x64x40, E4M3FN x E5M2, te_current, cpu backend: CPU X) -> out.h5\n"
                         "  SQNR 24.6496 dB  rel_fro 0.0585493  max_abs 1.78045  (quantization 24.6496 dB, "
                         "accumulation - dB)\n"));
  }

  void gemmRunJsonResult() {
    Run r = gemmRun();
    Json j = gemmRunResultJson(r, "out.h5", "g-2");
    QVERIFY(j["file"] == Json("out.h5"));
    QVERIFY(j["run"] == Json("g-2"));
    QVERIFY(j["type"] == Json("gemm"));
    QVERIFY(j["algorithm"] == Json("split"));
    QVERIFY(j["warnings"] == Json::array({"w1"}));
    QVERIFY(j["metrics"]["rel_fro"] == Json(0.05854934));
    QVERIFY(!j.contains("check"));
    r.attrs["warnings"] = "not JSON";
    r.group_attrs["check"]["verdict"] = "pass";
    j = gemmRunResultJson(r, "out.h5", "g");
    QVERIFY(j["warnings"] == Json::array());
    QVERIFY(j["check"] == Json("pass"));
  }

  void sweepTexts() {
    std::vector<std::string> ids;
    for (int i = 1; i <= 13; ++i) ids.push_back("p" + std::to_string(i));
    QCOMPARE(sweepSkippedText(ids, "w.h5"),
             std::string("sweep: 13 grid point(s) already in w.h5 with the same configuration, skipped (--recompute "
                         "runs them again): p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, ..."));
    ids.resize(2);
    QCOMPARE(sweepSkippedText(ids, "w.h5"),
             std::string("sweep: 2 grid point(s) already in w.h5 with the same configuration, skipped (--recompute "
                         "runs them again): p1, p2"));
    std::vector<SweepPoint> grid(3);
    grid[0].id = "a";
    grid[1].id = "b";
    grid[2].id = "c";
    SweepOutcome o;
    o.status = SweepOutcome::Status::Cancelled;
    o.finished = 1;
    o.in_point = true;
    QCOMPARE(sweepInterruptText(o, grid, "SIGTERM", "w.h5"),
             std::string("interrupted by SIGTERM at grid point 2 of 3 (b); saved the 1 finished point in w.h5"));
    o.in_point = false;
    o.finished = 2;
    o.save_error = "disk full";
    QCOMPARE(sweepInterruptText(o, grid, "SIGTERM", "w.h5"),
             std::string("interrupted by SIGTERM after grid point 2 of 3; could not save the finished points in w.h5"));
    o = {};
    o.finished = 3;
    QCOMPARE(sweepInterruptText(o, grid, "SIGHUP", "w.h5"),
             std::string("interrupted by SIGHUP after the last grid point; all 3 points are saved in w.h5"));
    SweepPlan plan;
    plan.grid = grid;
    plan.grid_size = 6;
    QCOMPARE(sweepStartText(plan, 1, 2, "w.h5"), std::string("sweep: 3 of 6 grid points (shard 1/2) -> w.h5"));
  }

  void runAndTrainingTexts() {
    QCOMPARE(experimentDoneLine(0, 3, true),
             std::string("run: experiment 1/3 done (its run is saved with the next batch)"));
    QCOMPARE(experimentDoneLine(2, 3, false), std::string("run: experiment 3/3 done"));
    QCOMPARE(gemmInterruptText("Ctrl-C (SIGINT)", "g", "o.h5"),
             std::string("interrupted by Ctrl-C (SIGINT): GEMM run 'g' stopped before it finished and was not saved "
                         "(o.h5 keeps what it held, with any runs finished before)"));
    TrainingExperimentOutcome res;
    res.status = TrainingExperimentOutcome::Status::Cancelled;
    res.runs.resize(1);
    res.runs[0].stored_id = "r";
    res.runs[0].cancelled = true;
    res.runs[0].steps_done = 3;
    res.runs[0].steps_total = 10;
    QCOMPARE(trainingInterruptText(res, "o.h5"),
             std::string("interrupted: run 'r' stopped after 3 of 10 steps (steps 0 to 2, 0-based as in the "
                         "session); the session so far (1 run) is saved in o.h5"));
    res.runs[0].cancelled = false;
    QCOMPARE(trainingInterruptText(res, "o.h5"),
             std::string("interrupted; the session so far (1 runs) is saved in o.h5"));
  }
};

QTEST_MAIN(TestRunReports)
#include "test_run_reports.moc"

// The desktop app and the CLI on one experiment model: a GEMM run made in the window stores the
// canonical config and `fp8lab-cli rerun` reproduces it bit for bit; a training experiment runs in
// process with per-step progress, Cancel keeps the finished steps (status "cancelled"), and the
// CLI reproduces that run too; every GEMM preset of the table is reachable from the panel and
// round-trips through Save config… / Load config….
#include "window_options.h"
#include "forms/experiment_panel.h"
#include "forms/experiment_runner.h"
#include "forms/job.h"
#include "main_window.h"
#include "session/session_document.h"

#include "experiment/training/training_config.h"
#include "json/json_document.h"
#include "scaling/scaling.h"
#include "session/session.h"

#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QProcess>
#include <QSpinBox>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace fp8lab::ui;

namespace {

const QString kCli = QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli");

/// fp8lab-cli with `args`; its exit code, stdout+stderr in *output.
int cli(const QStringList& args, QByteArray* output) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(kCli, args);
  if (!p.waitForFinished(300000)) return -1;
  *output = p.readAll();
  return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
}

fp8lab::Json storedConfig(const QString& file, const QString& run) {
  auto rd = fp8lab::SessionReader::open(file.toStdString());
  if (!rd.ok()) return {};
  for (const auto& ri : rd.value->info().runs)
    if (ri.id == run.toStdString()) return fp8lab::Json::parse(ri.config_json);
  return {};
}

/// A little-endian float32 .npy file (format 1.0: magic, header length, a dict padded with
/// spaces to a multiple of 64 bytes ending in '\n', then the data).
void writeNpy(const QString& file, int64_t rows, int64_t cols, const std::vector<float>& v) {
  QByteArray h =
      QStringLiteral("{'descr': '<f4', 'fortran_order': False, 'shape': (%1, %2), }").arg(rows).arg(cols).toLatin1();
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  QFile f(file);
  if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(file));
  f.write("\x93NUMPY\x01\x00", 8);
  const quint16 len = quint16(h.size());
  f.write(reinterpret_cast<const char*>(&len), 2);
  f.write(h);
  f.write(reinterpret_cast<const char*>(v.data()), qint64(v.size() * sizeof(float)));
}

} // namespace

class TestExperimentEngine : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // A GEMM run from the panel (per-row scaling with power-of-two unticked — the per_row preset,
  // not torchao_rowwise, whose scales are powers of two; split accumulation) stores the canonical
  // config: format_a, the preset name, the canonical accumulation name; the CLI re-runs it from
  // the saved file and finds every dataset and metric identical.
  void guiGemmRunRerunsBitForBitWithTheCli() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    if (!w.hasExperimentRunner()) QSKIP("no experiment runner in this build");
    if (!QFileInfo(kCli).isExecutable()) QSKIP("no fp8lab-cli in this build");
    QJsonObject c = ExperimentPanel::defaultConfig();
    c[QStringLiteral("m")] = 48;
    c[QStringLiteral("n")] = 40;
    c[QStringLiteral("k")] = 256;
    c[QStringLiteral("scaling")] = QStringLiteral("per_row");
    c[QStringLiteral("accumulation")] = QStringLiteral("split");
    w.experimentPanel()->setConfig(c);
    w.experimentPanel()->setBackend(QStringLiteral("cpu"));
    QSignalSpy ended(w.job(), &Job::ended);
    QVERIFY(w.runExperiment(w.experimentPanel()->config()));
    QVERIFY(ended.wait(120000));
    QCOMPARE(w.session()->runCount(), 1);
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("gui.h5"));
    QString error;
    QVERIFY2(w.writeSession(file, &error), qPrintable(error));
    const QString id = w.session()->run(0).id;
    const fp8lab::Json cfg = storedConfig(file, id);
    QCOMPARE(QString::fromStdString(cfg.value("type", "")), QStringLiteral("gemm"));
    QCOMPARE(QString::fromStdString(cfg.value("scaling", "")), QStringLiteral("per_row"));
    QCOMPARE(QString::fromStdString(cfg.value("format_a", "")), QStringLiteral("E4M3FN"));
    QCOMPARE(QString::fromStdString(cfg.value("accumulation", "")), QStringLiteral("split"));
    QVERIFY(!cfg.contains("a_format"));
    QByteArray out;
    QCOMPARE(cli({QStringLiteral("rerun"), file, id}, &out), 0);
    QVERIFY2(out.contains("reproduced bit for bit"), out.constData());
  }

  // The 2026 GEMM choices from the panel: the hopper_fp8 accumulation preset and an epilogue
  // (alpha 0.5, beta 0.25 with C seed 9 scale 2, a bias seed 11 scale 0.5). The stored config
  // names the preset with the table's parameters (hopper_fp8: the measured H100 rules, 13
  // fraction bits below e(a)+e(b), groups of 32, promotion every 128) and the epilogue keys as given (0.5, 0.25,
  // 2 and 0.5 are exact in float32); the CLI re-runs it bit for bit.
  void guiPresetAndEpilogueRunRerunsBitForBitWithTheCli() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    if (!w.hasExperimentRunner()) QSKIP("no experiment runner in this build");
    if (!QFileInfo(kCli).isExecutable()) QSKIP("no fp8lab-cli in this build");
    QJsonObject c = ExperimentPanel::defaultConfig();
    c[QStringLiteral("m")] = 24;
    c[QStringLiteral("n")] = 16;
    c[QStringLiteral("k")] = 256;
    c.remove(QStringLiteral("accumulation"));
    c.remove(QStringLiteral("promotion_interval"));
    c[QStringLiteral("accumulation_preset")] = QStringLiteral("hopper_fp8");
    c[QStringLiteral("alpha")] = 0.5;
    c[QStringLiteral("beta")] = 0.25;
    c[QStringLiteral("c")] = QJsonObject{{QStringLiteral("seed"), 9}, {QStringLiteral("scale"), 2.0}};
    c[QStringLiteral("bias")] = QJsonObject{{QStringLiteral("seed"), 11}, {QStringLiteral("scale"), 0.5}};
    w.experimentPanel()->setConfig(c);
    w.experimentPanel()->setBackend(QStringLiteral("cpu"));
    QCOMPARE(w.experimentPanel()->config().value(QStringLiteral("accumulation_preset")).toString(),
             QStringLiteral("hopper_fp8"));
    QSignalSpy ended(w.job(), &Job::ended);
    QVERIFY(w.runExperiment(w.experimentPanel()->config()));
    QVERIFY(ended.wait(120000));
    QCOMPARE(w.session()->runCount(), 1);
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("gui.h5"));
    QString error;
    QVERIFY2(w.writeSession(file, &error), qPrintable(error));
    const QString id = w.session()->run(0).id;
    const fp8lab::Json cfg = storedConfig(file, id);
    QCOMPARE(QString::fromStdString(cfg.value("accumulation_preset", "")), QStringLiteral("hopper_fp8"));
    QCOMPARE(QString::fromStdString(cfg.value("accumulation", "")), QStringLiteral("fast"));
    QCOMPARE(cfg.value("fast_accum_bits", 0), 14);
    QCOMPARE(cfg.value("fast_accum_group", 0), 32);
    QCOMPARE(cfg.value("promotion_interval", 0), 128);
    QCOMPARE(QString::fromStdString(cfg.value("mma_alignment", "")), QStringLiteral("operands"));
    QCOMPARE(cfg.value("mma_sum_bits", 0), 13);
    QCOMPARE(cfg.value("alpha", 0.0), 0.5);
    QCOMPARE(cfg.value("beta", 0.0), 0.25);
    QCOMPARE(cfg["c"].value("seed", 0), 9);
    QCOMPARE(cfg["c"].value("scale", 0.0), 2.0);
    QCOMPARE(cfg["bias"].value("seed", 0), 11);
    QCOMPARE(cfg["bias"].value("scale", 0.0), 0.5);
    QByteArray out;
    QCOMPARE(cli({QStringLiteral("rerun"), file, id}, &out), 0);
    QVERIFY2(out.contains("reproduced bit for bit"), out.constData());
  }

  // The epilogue and the accumulation preset round-trip through Save config… / Load config…, and
  // the C fields are off (with the reason) while beta is 0.
  void epilogueAndAccumulationPresetRoundTrip() {
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("in.json"));
    QFile in(f);
    QVERIFY(in.open(QIODevice::WriteOnly));
    in.write(R"({"type": "gemm", "m": 32, "k": 128, "n": 16, "scaling": "mx_rceil_2d",
                 "accumulation_preset": "tcgen05_mxf8f6f4", "alpha": 2, "beta": -0.5,
                 "c": {"seed": 4, "scale": 3}, "bias": {"seed": 6, "scale": 0.25}})");
    in.close();
    ExperimentPanel panel;
    auto* cSeed = panel.findChild<QSpinBox*>(QStringLiteral("cSeed"));
    QVERIFY(!cSeed->isEnabled());
    QVERIFY(cSeed->toolTip().contains(QStringLiteral("β ≠ 0")));
    QString why;
    QVERIFY2(panel.loadConfig(f, &why), qPrintable(why));
    QVERIFY(cSeed->isEnabled());
    const QJsonObject c = panel.config();
    QCOMPARE(c.value(QStringLiteral("accumulation_preset")).toString(), QStringLiteral("tcgen05_mxf8f6f4"));
    QCOMPARE(c.value(QStringLiteral("scaling")).toString(), QStringLiteral("mx_rceil_2d"));
    QCOMPARE(c.value(QStringLiteral("alpha")).toDouble(), 2.0);
    QCOMPARE(c.value(QStringLiteral("beta")).toDouble(), -0.5);
    QCOMPARE(c.value(QStringLiteral("c")).toObject().value(QStringLiteral("seed")).toInt(), 4);
    QCOMPARE(c.value(QStringLiteral("bias")).toObject().value(QStringLiteral("scale")).toDouble(), 0.25);
    // tcgen05_mxf8f6f4 (no measured data, MMA-Sim's rules) is marked unsure: a note, not a refusal.
    bool unsure = false;
    for (const auto& p : panel.problems()) unsure |= !p.blocking && p.reason.contains(QStringLiteral("UNSURE"));
    QVERIFY(unsure);
    const QString out = dir.filePath(QStringLiteral("out.json"));
    QVERIFY2(panel.saveConfig(out, &why), qPrintable(why));
    QFile o(out);
    QVERIFY(o.open(QIODevice::ReadOnly));
    const fp8lab::Json j = fp8lab::Json::parse(o.readAll().toStdString());
    QCOMPARE(QString::fromStdString(j.value("accumulation_preset", "")), QStringLiteral("tcgen05_mxf8f6f4"));
    QCOMPARE(j.value("fast_accum_bits", 0), 26); // the table's tcgen05_mxf8f6f4 row
    QCOMPARE(j.value("fast_accum_group", 0), 32);
    QCOMPARE(QString::fromStdString(j.value("mma_block_scales", "")), QStringLiteral("inside"));
    QCOMPARE(j.value("fast_accum_promotes", true), false);
    QCOMPARE(j.value("alpha", 0.0), 2.0);
    QCOMPARE(j.value("beta", 0.0), -0.5);
    QCOMPARE(j["c"].value("seed", 0), 4);
    QCOMPARE(j["c"].value("scale", 0.0), 3.0);
    QCOMPARE(j["bias"].value("seed", 0), 6);
    QCOMPARE(j["bias"].value("scale", 0.0), 0.25);
  }

  // A te_mxfp8 run picked in the Training tab's widgets gives exactly the canonical config the
  // CLI reads from the hand-written one-run config below (the recipe with TE's MXFP8 defaults:
  // fp8_format E4M3, weight_2d false); Hadamard and stochastic rounding are off for it and say
  // that only te_nvfp4 has them.
  void panelBuiltMxfp8TrainingConfigIsTheCanonicalOne() {
    ExperimentPanel panel;
    panel.showTab(ExperimentPanel::Tab::Training);
    panel.findChild<QLineEdit*>(QStringLiteral("trainId"))->setText(QStringLiteral("mx"));
    auto* recipe = panel.findChild<QComboBox*>(QStringLiteral("recipe"));
    recipe->setCurrentIndex(recipe->findData(QStringLiteral("te_mxfp8")));
    panel.findChild<QSpinBox*>(QStringLiteral("epochs"))->setValue(1);
    panel.findChild<QSpinBox*>(QStringLiteral("batchSize"))->setValue(64);
    panel.findChild<QSpinBox*>(QStringLiteral("trainSeed"))->setValue(5);
    panel.findChild<QSpinBox*>(QStringLiteral("trainLimit"))->setValue(512);
    panel.findChild<QSpinBox*>(QStringLiteral("testLimit"))->setValue(128);
    for (const char* name : {"hadamard", "stochasticRounding"}) {
      auto* box = panel.findChild<QCheckBox*>(QLatin1String(name));
      QVERIFY(!box->isEnabled());
      QVERIFY(box->toolTip().contains(QStringLiteral("Only te_nvfp4")));
    }
    QVERIFY(!panel.findChild<QCheckBox*>(QStringLiteral("weight2d"))->isChecked());
    QString why;
    const QByteArray got = canonicalTrainingConfig(panel.trainingConfig(), &why);
    QVERIFY2(!got.isEmpty(), qPrintable(why));
    const fp8lab::Json cli_form = fp8lab::Json::parse(R"({"type": "training", "id": "mx", "precision": "fp8",
        "recipe": "te_mxfp8", "epochs": 1, "batch_size": 64, "seed": 5, "train_limit": 512, "test_limit": 128})");
    std::string err;
    const auto spec = fp8lab::parseTrainingExperiment(cli_form, &err);
    QVERIFY2(spec, err.c_str());
    QCOMPARE(got, QByteArray::fromStdString(spec->runs.front().configJson()));
    const fp8lab::Json j = fp8lab::Json::parse(got.toStdString());
    QCOMPARE(j["recipe"], fp8lab::Json::parse(R"({"name": "te_mxfp8", "fp8_format": "E4M3", "weight_2d": false})"));
    QVERIFY(!j.contains("scaling"));

    // What Run hands core's runner is the spec core parsed from the tab, with that same text.
    const TrainingRequest request = trainingRequest(panel.trainingConfig(), &why);
    QVERIFY2(request.ok(), qPrintable(why));
    QCOMPARE(request.config_json, got);
    QCOMPARE(request.spec->runs.size(), size_t(1));
    QCOMPARE(request.spec->runs.front().configJson(), got.toStdString());
    QVERIFY(request.spec->runs.front().run().recipe.recipe == fp8lab::TrainingRecipe::TeMxfp8);

    // Run on the Training tab emits that request, with the tab's run id.
    TrainingRequest emitted;
    QString emitted_id;
    connect(&panel, &ExperimentPanel::trainingRunRequested, this, [&](const TrainingRequest& r, const QString& id) {
      emitted = r;
      emitted_id = id;
    });
    panel.requestRun();
    QVERIFY(emitted.ok());
    QCOMPARE(emitted.config_json, got);
    QCOMPARE(emitted_id, QStringLiteral("mx"));
    QCOMPARE(emitted.spec->runs.front().id, std::string("mx"));
  }

  // A config the runner cannot take gives an empty request that says why, and nothing runs.
  void trainingRequestRefusesWhatCoreRefuses() {
    QString why;
    QVERIFY(!trainingRequestFromText("{\"type\": \"training\",", &why).ok());
    QVERIFY2(why.startsWith(QStringLiteral("the training config is not valid JSON: ")), qPrintable(why));
    QVERIFY(!trainingRequestFromText(R"({"type": "training", "epochs": 0})", &why).ok());
    QVERIFY2(why.startsWith(QStringLiteral("invalid training config: epochs: ")), qPrintable(why));
    QVERIFY(!trainingRequest(
                 QJsonObject{{QStringLiteral("type"), QStringLiteral("training")}, {QStringLiteral("steps"), 5}}, &why)
                 .ok());
    QVERIFY2(why.startsWith(QStringLiteral("steps: applies to the language model")), qPrintable(why));
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    QVERIFY(!w.runTrainingExperiment(TrainingRequest{}, QStringLiteral("/nonexistent/x.h5"), QStringLiteral("none")));
    QVERIFY(!w.job()->isRunning());
  }

  // A te_nvfp4 run with RHT off, stochastic rounding on and the wgrad GEMM in high precision
  // round-trips through Save config… / Load config… (the file is the canonical training config);
  // the Hadamard box is off with the reason while wgrad is in high precision.
  void nvfp4TrainingConfigRoundTrips() {
    ExperimentPanel panel;
    QJsonObject t = ExperimentPanel::defaultTrainingConfig();
    t.remove(QStringLiteral("scaling"));
    t.remove(QStringLiteral("forward_format"));
    t.remove(QStringLiteral("backward_format"));
    t[QStringLiteral("id")] = QStringLiteral("fp4");
    t[QStringLiteral("recipe")] =
        QJsonObject{{QStringLiteral("name"), QStringLiteral("te_nvfp4")},
                    {QStringLiteral("hadamard"), false},
                    {QStringLiteral("stochastic_rounding"), true},
                    {QStringLiteral("overrides"),
                     QJsonObject{{QStringLiteral("wgrad"),
                                  QJsonObject{{QStringLiteral("recipe"), QStringLiteral("high_precision")}}}}}};
    panel.setTrainingConfig(t);
    panel.showTab(ExperimentPanel::Tab::Training);
    auto* had = panel.findChild<QCheckBox*>(QStringLiteral("hadamard"));
    QVERIFY(!had->isEnabled());
    QVERIFY(had->toolTip().contains(QStringLiteral("both wgrad operands")));
    QVERIFY(panel.findChild<QCheckBox*>(QStringLiteral("stochasticRounding"))->isEnabled());
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("t.json"));
    QString why;
    QVERIFY2(panel.saveConfig(f, &why), qPrintable(why));
    QFile in(f);
    QVERIFY(in.open(QIODevice::ReadOnly));
    const fp8lab::Json saved = fp8lab::Json::parse(in.readAll().toStdString());
    QCOMPARE(saved["recipe"], fp8lab::Json::parse(R"({"name": "te_nvfp4", "weight_2d": true,
        "hadamard": false, "stochastic_rounding": true, "overrides": {"wgrad.input": {"recipe": "high_precision"},
        "wgrad.grad_output": {"recipe": "high_precision"}}})"));
    ExperimentPanel other;
    QVERIFY2(other.loadConfig(f, &why), qPrintable(why));
    QCOMPARE(other.currentTab(), ExperimentPanel::Tab::Training);
    QCOMPARE(canonicalTrainingConfig(other.trainingConfig(), nullptr),
             canonicalTrainingConfig(panel.trainingConfig(), nullptr));
    // A config with a key the tab has no field for is refused with the key.
    const QString g = dir.filePath(QStringLiteral("layers.json"));
    QFile lf(g);
    QVERIFY(lf.open(QIODevice::WriteOnly));
    lf.write(R"({"type": "training", "id": "x", "layers": [784, 32, 10]})");
    lf.close();
    QVERIFY(!other.loadConfig(g, &why));
    QVERIFY2(why.contains(QStringLiteral("\"layers\"")), qPrintable(why));
  }

  // A training experiment in process: progress is reported per step (many distinct fractions,
  // not a busy bar), Cancel after a few steps keeps the run with the steps it finished (status
  // cancelled, steps_completed between 1 and the total), the window opens the file, and the CLI
  // re-runs the cancelled run bit for bit (it stops at the same step).
  void guiTrainingRunsInProcessAndCancelKeepsTheSteps() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    if (!QFileInfo(kCli).isExecutable()) QSKIP("no fp8lab-cli in this build");
    // 1024 images, batch 64: 16 steps per epoch, 4 epochs = 64 steps.
    const QByteArray config = R"({"type": "training", "id": "tiny", "train_limit": 1024, "test_limit": 256,
      "batch_size": 64, "epochs": 4, "layers": [784, 32, 10], "seed": 5,
      "scaling": {"strategy": "delayed-te", "history_len": 16}})";
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("train.h5"));
    QSignalSpy ended(w.job(), &Job::ended);
    QSignalSpy cancelled(w.job(), &Job::cancelled);
    QSignalSpy failed(w.job(), &Job::failed);
    QList<double> fractions;
    connect(w.job(), &Job::progress, this, [&](double f, const QString&) {
      fractions << f;
      if (f > 0.3) w.job()->cancel();
    });
    QString why;
    const TrainingRequest request = trainingRequestFromText(config, &why);
    QVERIFY2(request.ok(), qPrintable(why));
    QVERIFY(w.runTrainingExperiment(request, file, QStringLiteral("tiny training")));
    QVERIFY(ended.wait(300000));
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed[0][0].toString()));
    QCOMPARE(cancelled.count(), 0); // the finished steps were kept: the job ends as finished
    QVERIFY(std::adjacent_find(fractions.begin(), fractions.end(), std::greater<double>()) == fractions.end());
    QVERIFY2(std::any_of(fractions.begin(), fractions.end(), [](double f) { return f > 0 && f < 1; }),
             "a fraction of the experiment, not a busy bar");
    auto rd = fp8lab::SessionReader::open(file.toStdString());
    QVERIFY2(rd.ok(), rd.errors().c_str());
    auto run = rd.value->readRun("tiny");
    QVERIFY2(run.ok(), run.errors().c_str());
    QCOMPARE(QString::fromStdString(fp8lab::attrString(run.value.attrs, "status").value_or("")),
             QStringLiteral("cancelled"));
    const int64_t steps = fp8lab::attrInt(run.value.attrs, "steps_completed").value_or(-1);
    QVERIFY2(steps >= 1 && steps < 64, qPrintable(QString::number(steps)));
    rd.value.reset();
    QCOMPARE(w.session()->fileName(), file); // opened when the job ended
    QByteArray out;
    QCOMPARE(cli({QStringLiteral("rerun"), file, QStringLiteral("tiny")}, &out), 0);
    QVERIFY2(out.contains("reproduced bit for bit"), out.constData());
  }

  // Every preset of the table is accounted for: those that can scale both operands of a GEMM
  // are reachable from the panel — a canonical config naming it loads into the panel (Strategy,
  // Preset, power-of-two box), the panel's config names it, and Save config… writes the same
  // canonical config back — and the others are exactly per_column (A's columns run along K) and
  // the three delayed presets (a single GEMM has no amax history), which Load config… refuses.
  void everyGemmPresetRoundTripsThroughThePanel() {
    QTemporaryDir dir;
    int checked = 0;
    QStringList skipped, reached;
    for (const auto& p : fp8lab::scalingPresets()) {
      const auto sp = fp8lab::scalingPreset(p.name);
      if (!sp || !fp8lab::gemmScalingProblem(*sp, fp8lab::Axis::Cols).empty() ||
          !fp8lab::gemmScalingProblem(*sp, fp8lab::Axis::Rows).empty()) {
        skipped << QString::fromStdString(p.name);
        const QString f = dir.filePath(QStringLiteral("refused.json"));
        QFile in(f);
        QVERIFY(in.open(QIODevice::WriteOnly));
        in.write(QByteArray::fromStdString(fp8lab::Json{{"type", "gemm"}, {"scaling", p.name}}.dump()));
        in.close();
        ExperimentPanel panel;
        const QJsonObject before = panel.config();
        QString why;
        QVERIFY2(!panel.loadConfig(f, &why), p.name.c_str());
        QCOMPARE(panel.config(), before);
        continue;
      }
      reached << QString::fromStdString(p.name);
      const QString name = QString::fromStdString(p.name);
      // MX presets take MX element formats; E4M3FN is one.
      const QByteArray canonical = QByteArray::fromStdString(fp8lab::Json{
          {"type", "gemm"},
          {"m", 64},
          {"k", 256},
          {"n", 32},
          {"seed", 7},
          {"scaling", p.name},
          {"accumulation", "fast"}}.dump());
      const QString f = dir.filePath(QStringLiteral("in.json"));
      QFile in(f);
      QVERIFY(in.open(QIODevice::WriteOnly));
      in.write(canonical);
      in.close();
      ExperimentPanel panel; // starts at te_current
      QString why;
      QVERIFY2(panel.loadConfig(f, &why), qPrintable(name + QStringLiteral(": ") + why));
      QCOMPARE(panel.config().value(QStringLiteral("scaling")).toString(), name);
      auto* pow2 = panel.findChild<QCheckBox*>(QStringLiteral("pow2"));
      QCOMPARE(pow2->isChecked(), sp->pow2);
      QCOMPARE(pow2->isEnabled(), !fp8lab::scalingPresetTwin(p.name).empty());
      const QString out = dir.filePath(QStringLiteral("out.json"));
      QVERIFY2(panel.saveConfig(out, &why), qPrintable(why));
      {
        QFile o(out);
        QVERIFY(o.open(QIODevice::ReadOnly));
        const fp8lab::Json j = fp8lab::Json::parse(o.readAll().toStdString());
        QCOMPARE(QString::fromStdString(j.value("scaling", "")), name);
        QCOMPARE(QString::fromStdString(j.value("accumulation", "")), QStringLiteral("fast"));
        QCOMPARE(j.value("k", 0), 256);
      }
      ++checked;
    }
    skipped.sort();
    QCOMPARE(skipped, (QStringList{QStringLiteral("flax_delayed"), QStringLiteral("per_column"),
                                   QStringLiteral("te_delayed"), QStringLiteral("te_jax_delayed")}));
    QVERIFY(reached.contains(QStringLiteral("mx_even")));
    QVERIFY(reached.contains(QStringLiteral("mx_rceil_2d")));
    QCOMPARE(checked + int(skipped.size()), int(fp8lab::scalingPresets().size()));
  }

  // The widgets themselves: picking per-row, then ticking and unticking the power-of-two box,
  // moves between the twins per_row and torchao_rowwise; te_block_1x128 (pow2 only) leaves the box
  // ticked and disabled with the reason.
  void powerOfTwoBoxFollowsTheTwins() {
    ExperimentPanel panel;
    auto* strategy = panel.findChild<QComboBox*>(QStringLiteral("scaling"));
    auto* preset = panel.findChild<QComboBox*>(QStringLiteral("preset"));
    auto* pow2 = panel.findChild<QCheckBox*>(QStringLiteral("pow2"));
    strategy->setCurrentIndex(strategy->findData(QStringLiteral("per-row")));
    QCOMPARE(preset->currentData().toString(), QStringLiteral("per_row"));
    QVERIFY(pow2->isEnabled());
    pow2->setChecked(true);
    QCOMPARE(panel.config().value(QStringLiteral("scaling")).toString(), QStringLiteral("torchao_rowwise"));
    pow2->setChecked(false);
    QCOMPARE(panel.config().value(QStringLiteral("scaling")).toString(), QStringLiteral("per_row"));
    strategy->setCurrentIndex(strategy->findData(QStringLiteral("1x128")));
    preset->setCurrentIndex(preset->findData(QStringLiteral("te_block_1x128")));
    QVERIFY(!pow2->isEnabled());
    QVERIFY(pow2->isChecked());
    QVERIFY(pow2->toolTip().contains(QStringLiteral("always")));
    QCOMPARE(panel.config().value(QStringLiteral("scaling")).toString(), QStringLiteral("te_block_1x128"));
  }

  // Both operands imported in the panel: the run takes M, K, N from the tensors (A [3,4] and
  // B [4,2], while the M/N/K fields say 256/256/1024 and are disabled), stores them unchanged as
  // inputs/A and inputs/B, and the CLI re-runs it bit for bit from the stored config.
  void bothOperandsImportedTakeTheirShape() {
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    if (!w.hasExperimentRunner()) QSKIP("no experiment runner in this build");
    QTemporaryDir dir;
    const std::vector<float> a = {1, -2, 0.5f, 3, 0.25f, 7, -1, 2, 4, -0.125f, 1.5f, -6};
    const std::vector<float> b = {2, -1, 0.5f, 3, -4, 1, 0.75f, -2};
    const QString fa = dir.filePath(QStringLiteral("a.npy")), fb = dir.filePath(QStringLiteral("b.npy"));
    writeNpy(fa, 3, 4, a);
    writeNpy(fb, 4, 2, b);
    QJsonObject c = ExperimentPanel::defaultConfig();
    for (const char* dim : {"m", "k", "n"}) c.remove(QLatin1String(dim));
    c[QStringLiteral("a")] = QJsonObject{{QStringLiteral("tensor"), fa}};
    c[QStringLiteral("b")] = QJsonObject{{QStringLiteral("tensor"), fb}};
    w.experimentPanel()->setConfig(c);
    w.experimentPanel()->setBackend(QStringLiteral("cpu"));
    auto* m = w.experimentPanel()->findChild<QSpinBox*>(QStringLiteral("m"));
    auto* n = w.experimentPanel()->findChild<QSpinBox*>(QStringLiteral("n"));
    QVERIFY(!m->isEnabled());
    QVERIFY(!n->isEnabled());
    // The fields show the shape the run will have, read from the files' headers.
    auto* k = w.experimentPanel()->findChild<QSpinBox*>(QStringLiteral("k"));
    QCOMPARE(m->value(), 3);
    QCOMPARE(k->value(), 4);
    QCOMPARE(n->value(), 2);
    QVERIFY2(w.experimentPanel()->isValid(), "importing both operands is a valid experiment");
    QSignalSpy ended(w.job(), &Job::ended);
    QSignalSpy failed(w.job(), &Job::failed);
    QVERIFY(w.runExperiment(w.experimentPanel()->config()));
    QVERIFY(ended.wait(60000));
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed[0][0].toString()));
    QCOMPARE(w.session()->runCount(), 1);
    const QString file = dir.filePath(QStringLiteral("imp.h5"));
    QString error;
    QVERIFY2(w.writeSession(file, &error), qPrintable(error));
    const QString id = w.session()->run(0).id;
    auto rd = fp8lab::SessionReader::open(file.toStdString());
    QVERIFY2(rd.ok(), rd.errors().c_str());
    auto run = rd.value->readRun(id.toStdString());
    QVERIFY2(run.ok(), run.errors().c_str());
    QCOMPARE(fp8lab::attrInt(run.value.attrs, "m").value_or(0), int64_t(3));
    QCOMPARE(fp8lab::attrInt(run.value.attrs, "k").value_or(0), int64_t(4));
    QCOMPARE(fp8lab::attrInt(run.value.attrs, "n").value_or(0), int64_t(2));
    QCOMPARE(run.value.find("inputs/A")->f32, a);
    QCOMPARE(run.value.find("inputs/B")->f32, b);
    rd.value.reset();
    QByteArray out;
    QCOMPARE(cli({QStringLiteral("rerun"), file, id}, &out), 0);
    QVERIFY2(out.contains("reproduced bit for bit"), out.constData());
  }

  // Two tensors whose inner dimensions differ are refused in place, naming both shapes.
  void importedShapesThatDoNotMultiplyAreRefused() {
    QTemporaryDir dir;
    const QString fa = dir.filePath(QStringLiteral("a.npy")), fb = dir.filePath(QStringLiteral("b.npy"));
    writeNpy(fa, 3, 4, std::vector<float>(12, 1.0f));
    writeNpy(fb, 5, 2, std::vector<float>(10, 1.0f));
    QJsonObject c = ExperimentPanel::defaultConfig();
    for (const char* dim : {"m", "k", "n"}) c.remove(QLatin1String(dim));
    c[QStringLiteral("a")] = QJsonObject{{QStringLiteral("tensor"), fa}};
    c[QStringLiteral("b")] = QJsonObject{{QStringLiteral("tensor"), fb}};
    bool found = false;
    for (const auto& p : ExperimentPanel::validate(c, QStringLiteral("auto"), false, {}))
      found |= p.blocking && p.reason.contains(QStringLiteral("A is [3, 4] and B is [5, 2]"));
    QVERIFY(found);
  }

  // Load config… refuses what the panel cannot express, and leaves the fields as they were.
  void panelLoadRefusesWhatItCannotShow() {
    ExperimentPanel p;
    const QJsonObject before = p.config();
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("c.json"));
    QFile out(f);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(R"({"type": "gemm", "m": 8, "k": 8, "n": 8, "a": {"distribution": "normal"},
                  "b": {"distribution": "lognormal"}})");
    out.close();
    QString why;
    QVERIFY(!p.loadConfig(f, &why));
    QVERIFY2(why.contains(QStringLiteral("one distribution")), qPrintable(why));
    QCOMPARE(p.config(), before);
  }
};

QTEST_MAIN(TestExperimentEngine)
#include "test_experiment_engine.moc"

// The error heatmap's Kernel check map: a GEMM run with an observed D (one A block scale of the
// kernel doubled, tests/support/kernel_check_files.h) shows observed − reference in ULPs, the ULP
// histogram with the verdict, and the models with their identical shares in the detail pane.
#include "views/error_heatmap_view.h"
#include "views/heatmap_model.h"
#include "plot/qcp.h"
#include "session/run_access.h"

#include "kernel_check_files.h"

#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/gemm_run.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace fp8lab;
using namespace fp8lab::ui;

class TestKernelCheckView : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void kernelCheckMapHistogramAndModels();
};

#ifndef Q_MOC_RUN

// The wrong-scale kernel differs from the exact model only in row 5 (the doubled block enters
// that row alone), so the ULP map is 0 outside row 5; the exact model reproduces every other
// element (the operands are exact by construction), so its identical share is 1 − 48/3072 of the
// 3072 elements, minus the elements of row 5 whose K block 1 partial sum is 0 (they do not change).
void TestKernelCheckView::kernelCheckMapHistogramAndModels() {
  QTemporaryDir tmp;
  const auto f = fp8lab::test::writeKernelCheckFiles(tmp.path().toStdString());
  GemmExperimentConfig c;
  const std::string json = "{\"a\": {\"codes\": \"" + f.a + "\", \"format\": \"E4M3FN\", \"scales\": \"" + f.sa +
                           "\", \"block\": [1, 128]}, \"b\": {\"codes\": \"" + f.b +
                           "\", \"format\": \"E4M3FN\", \"scales\": \"" + f.sb +
                           "\", \"block\": [128, 128]}, \"observed\": \"" + f.wrong_scale +
                           "\", \"check\": {\"max_ulp\": 1, \"fit_bits\": \"13..15\", \"fit_groups\": [32]}}";
  QCOMPARE(parseGemmConfig(Json::parse(json), &c), std::string());
  auto be = makeCpuGemmBackend();
  GemmRunDetails det;
  auto r = runGemmExperimentRun(c, json, "wrong-scale", *be, {}, &det);
  QVERIFY2(r.ok(), r.message().c_str());
  const int64_t differing = det.check->comparison.differing;
  QVERIFY(differing > 0 && differing <= fp8lab::test::KernelCheckFiles::N);
  auto run = RunAccess::fromRun(std::make_shared<Run>(std::move(r.value)));

  ErrorHeatmapView v;
  v.resize(1400, 900);
  v.setRunAccess(run);
  v.setMode(ErrorHeatmapView::Mode::KernelCheck);
  v.setKind(ErrorKind::Ulp);
  v.refresh();
  QCOMPARE(v.colorMaps().size(), 1);
  // The grid is one cell per element (64 × 48): non-zero exactly in row 5.
  const HeatmapGrid& g = v.grids().first();
  QCOMPARE(g.grid_rows, int64_t(64));
  int64_t nonzero = 0, row5 = 0;
  for (int64_t i = 0; i < g.grid_rows; ++i)
    for (int64_t j = 0; j < g.grid_cols; ++j)
      if (g.cell(i, j) > 0) {
        ++nonzero;
        row5 += i == 5;
      }
  QCOMPARE(nonzero, differing);
  QCOMPARE(row5, differing);
  // The models table: exact first, with its identical share; the fit's warning (no model explains
  // a wrong scale).
  const QString d = v.detailText();
  QVERIFY2(d.contains(QStringLiteral("<td>exact</td>")), qPrintable(d));
  const QString share = QString::number(100.0 * double(3072 - differing) / 3072.0, 'f', 2) + QLatin1Char('%');
  QVERIFY2(d.contains(share), qPrintable(share + QStringLiteral(" in ") + d));
  QVERIFY2(d.contains(QStringLiteral("no accumulation model explains the output within 1 ULP")), qPrintable(d));
  // The histogram's first bar (0 ULP) holds the identical elements.
  QVERIFY(v.plot()->plottableCount() >= 2);
  auto* bars = qobject_cast<QCPBars*>(v.plot()->plottable(v.plot()->plottableCount() - 1));
  QVERIFY(bars);
  QCOMPARE(bars->data()->at(0)->value, double(3072 - differing));
  QVERIFY(v.grab().save(QStringLiteral(FP8LAB_BINARY_DIR "/kernel_check_view.png")));
}

#endif // Q_MOC_RUN

QTEST_MAIN(TestKernelCheckView)
#include "test_kernel_check_view.moc"

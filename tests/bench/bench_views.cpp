// Analysis views of the desktop app, offscreen:
//   BM_HeatmapRedraw2048/512    redraw of the heatmap of a 2048×2048 run as the view draws it (target ≤ 150 ms);
//                               /2048: the same at one cell per element, for reference
//   BM_HeatmapRecomputeDraw2048 the same window recomputed from the run (in memory, on the thread
//                               pool as zoomTo reads a window this big) and redrawn
//   BM_AmaxScrub1024            one slider step of the amax history view over a 1024-long history,
//                               L = 1024, redrawn immediately (target ≥ 30 steps/s)
//   BM_Open4096Overview         open a session file holding a 4096×4096 run and show the error
//                               heatmap's decimated overview (target ≤ 1 s)
//   BM_Read4096Full             peer: read the whole 4096×4096 error/abs dataset (what the overview
//                               must never need more than)
// Run: build-*/tests/bench/bench_views [--benchmark_filter=...]
#include "views/amax_history_view.h"
#include "views/error_heatmap_view.h"
#include "plot/qcp.h"

#include "session/session.h"

#include <QApplication>
#include <QTemporaryDir>

#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>

using namespace fp8lab;
using namespace fp8lab::ui;

namespace {

std::vector<float> errorField(int64_t n) {
  std::vector<float> v(size_t(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      v[size_t(i * n + j)] = float(1e-3 * (1.0 + std::sin(0.01 * double(i)) * std::cos(0.013 * double(j))) +
                                   ((i * 7 + j * 13) % 101 == 0 ? 0.05 : 0.0));
  return v;
}

std::shared_ptr<Run> gemmRun(int64_t n) {
  auto r = std::make_shared<Run>();
  r->id = "bench";
  r->type = "gemm";
  r->config_json = "{}";
  r->putFloat32("error/abs", errorField(n), n, n, "1", "|D - ref|");
  r->putFloat32("output/D", errorField(n), n, n, "1", "D (required by the session layout of a gemm run)");
  return r;
}

QTemporaryDir& tmp() {
  static QTemporaryDir d;
  return d;
}

QString bigFile() {
  static QString f;
  if (f.isEmpty()) {
    f = tmp().filePath(QStringLiteral("big4096.h5"));
    fp8lab::Session s;
    s.runs.push_back(*gemmRun(4096));
    WriteOptions o; // compressed, as fp8lab-cli writes sessions
    const auto st = writeSession(f.toStdString(), s, o);
    if (!st.ok()) std::fprintf(stderr, "cannot write %s: %s\n", qPrintable(f), st.message().c_str());
  }
  return f;
}

// The view as it draws a 2048×2048 run: never more cells than the plot has pixels (the overview,
// max-decimated to ≤ 512 cells a side; zooming re-reads finer windows). Arg 0 = 512 (the view's
// default), 2048 = one cell per element (for reference: what decimation saves).
void BM_HeatmapRedraw2048(benchmark::State& st) {
  ErrorHeatmapView v;
  v.resize(1400, 900);
  v.setOverviewCells(int(st.range(0)));
  v.setRunAccess(RunAccess::fromRun(gemmRun(2048)));
  if (v.grids().isEmpty()) st.SkipWithError("no grid");
  for (auto _ : st) {
    auto* d = v.colorMaps().first()->data();
    d->setCell(0, 0, d->cell(0, 0)); // marks the data modified: the map image is rebuilt
    v.plot()->replot(QCustomPlot::rpImmediateRefresh);
  }
  st.counters["cells"] = double(v.grids().first().grid_rows * v.grids().first().grid_cols);
}
BENCHMARK(BM_HeatmapRedraw2048)->Arg(512)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_HeatmapRecomputeDraw2048(benchmark::State& st) {
  ErrorHeatmapView v;
  v.resize(1400, 900);
  v.setOverviewCells(2048);
  v.setRunAccess(RunAccess::fromRun(gemmRun(2048)));
  for (auto _ : st) {
    // Not the cached overview: the window is recomputed, on the thread pool as for any window
    // of more than 2^20 elements, and drawn when it is back.
    v.zoomTo(0, 0, 2048, 2047);
    while (v.isReading()) QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
    v.zoomTo(0, 0, 2048, 2048);
  }
  st.counters["windows_per_iter"] = 2;
}
BENCHMARK(BM_HeatmapRecomputeDraw2048)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AmaxScrub1024(benchmark::State& st) {
  auto r = std::make_shared<Run>();
  r->id = "scrub";
  r->type = "training";
  const auto a = demoAmaxSequence(1024);
  r->putFloat32("history/fc1/input/amax", std::vector<float>(a.begin(), a.end()), 1024, -1, "1", "amax");
  r->group_attrs["history/fc1/input"]["history_len"] = int64_t(1024);
  r->group_attrs["history/fc1/input"]["scaling"] = std::string("delayed-flax");
  r->group_attrs["history/fc1/input"]["format"] = std::string("E4M3FN");
  AmaxHistoryView v;
  v.resize(1400, 900);
  v.setRunAccess(RunAccess::fromRun(r));
  if (v.steps() != 1024 || v.whatIf().history_len != 1024) st.SkipWithError("setup");
  int64_t t = 0;
  for (auto _ : st) {
    t = (t + 1) % 1024;
    v.setStep(t);
    v.plot()->replot(QCustomPlot::rpImmediateRefresh);
  }
  st.SetItemsProcessed(st.iterations()); // items/s = frames per second
}
BENCHMARK(BM_AmaxScrub1024)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Open4096Overview(benchmark::State& st) {
  const QString f = bigFile();
  for (auto _ : st) {
    QString err;
    auto run = RunAccess::fromFile(f, QString(), &err);
    if (!run) {
      st.SkipWithError(qPrintable(err));
      break;
    }
    ErrorHeatmapView v;
    v.resize(1400, 900);
    v.setRunAccess(run);
    v.plot()->replot(QCustomPlot::rpImmediateRefresh);
    benchmark::DoNotOptimize(v.grids().first().max);
  }
}
BENCHMARK(BM_Open4096Overview)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_Read4096Full(benchmark::State& st) {
  const QString f = bigFile();
  for (auto _ : st) {
    auto rd = SessionReader::open(f.toStdString());
    auto d = rd.value->read("bench", "error/abs");
    benchmark::DoNotOptimize(d.value.f32.data());
  }
}
BENCHMARK(BM_Read4096Full)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

} // namespace

int main(int argc, char** argv) {
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// core/experiment/gemm/sweep.h: the sweep object parsed with the CLI's messages, the grid's order, ids and
// shards, the resume filter against stored configs, and the runner's batches, cancel and failure.
// Expected ids and indices are worked out by hand in the comments.
#include <QtTest>

#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/sweep.h"
#include "json/json_document.h"

using namespace fp8lab;

namespace {

/// parseSweepSpec of `text` (with its document, so errors carry line and column): "" or the message.
std::string specError(const std::string& text, const SweepAxisOverrides& over = {}, SweepSpec* out = nullptr) {
  const JsonDocument d = JsonDocument::parse(text);
  SweepSpec s;
  const std::string e = parseSweepSpec(d.root(), over, &s, &d);
  if (out) *out = s;
  return e;
}

std::vector<SweepPoint> gridOf(const std::string& text, const SweepAxisOverrides& over = {}) {
  SweepSpec s;
  const std::string e = specError(text, over, &s);
  if (!e.empty()) throw std::runtime_error(e);
  std::vector<SweepPoint> g;
  if (const std::string x = expandSweep(s, &g); !x.empty()) throw std::runtime_error(x);
  return g;
}

std::vector<std::string> idsOf(const std::vector<SweepPoint>& g) {
  std::vector<std::string> v;
  for (const auto& p : g) v.push_back(p.id);
  return v;
}

std::vector<int64_t> indicesOf(const std::vector<SweepPoint>& g) {
  std::vector<int64_t> v;
  for (const auto& p : g) v.push_back(p.index);
  return v;
}

// 2 formats × 2 scalings × 1 distribution. "E5M2:E4M3FN" gives A E5M2, B E4M3FN; its id part is
// "E5M2xE4M3FN". A per-operand "a" distribution (uniform) gives way to the grid's lognormal.
const char* kTwoByTwo = R"({"type": "gemm", "name": "dropped", "m": 8, "k": 32, "n": 8, "seed": 3,
  "a": {"distribution": "uniform"},
  "sweep": {"formats": ["E4M3FN", "E5M2:E4M3FN"], "scalings": ["te_current", "mx_rceil"],
            "distributions": "lognormal"}})";

RunInfo storedGemm(const std::string& id, const std::string& config) {
  RunInfo r;
  r.id = id;
  r.type = "gemm";
  r.config_json = config;
  return r;
}

} // namespace

class TestSweep : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // Formats outermost, distributions innermost: (f, s, d) has index (f·2 + s)·1 + d, so
  //   0 E4M3FN/te_current, 1 E4M3FN/mx_rceil, 2 E5M2:E4M3FN/te_current, 3 E5M2:E4M3FN/mx_rceil.
  void gridOrderAndIds() {
    const auto g = gridOf(kTwoByTwo);
    QCOMPARE(idsOf(g), (std::vector<std::string>{"sweep-E4M3FN-te_current-lognormal", "sweep-E4M3FN-mx_rceil-lognormal",
                                                 "sweep-E5M2xE4M3FN-te_current-lognormal",
                                                 "sweep-E5M2xE4M3FN-mx_rceil-lognormal"}));
    QCOMPARE(indicesOf(g), (std::vector<int64_t>{0, 1, 2, 3}));
    QCOMPARE(QString::fromStdString(g[2].format), QStringLiteral("E5M2:E4M3FN"));
    QCOMPARE(QString::fromStdString(g[2].config.format_a), QStringLiteral("E5M2"));
    QCOMPARE(QString::fromStdString(g[2].config.format_b), QStringLiteral("E4M3FN"));
    QCOMPARE(QString::fromStdString(g[1].config.scaling), QStringLiteral("mx_rceil"));
    for (const auto& p : g) {
      QCOMPARE(int(p.config.a.random.distribution), int(Distribution::LogNormal));
      QCOMPARE(int(p.config.b.random.distribution), int(Distribution::LogNormal));
      QCOMPARE(p.config.m, int64_t(8));
      QCOMPARE(p.config.k, int64_t(32));
      QCOMPARE(p.config.n, int64_t(8));
      QCOMPARE(p.config.seed, uint64_t(3));
    }
  }

  // index mod n == i: shard 1/3 of 0..3 is {1} (4 would be next), 0/3 is {0, 3}, 2/3 is {2}.
  void shardsSplitByIndex() {
    const auto g = gridOf(kTwoByTwo);
    QCOMPARE(indicesOf(sweepShard(g, 1, 3)), (std::vector<int64_t>{1}));
    QCOMPARE(indicesOf(sweepShard(g, 0, 3)), (std::vector<int64_t>{0, 3}));
    QCOMPARE(indicesOf(sweepShard(g, 2, 3)), (std::vector<int64_t>{2}));
    QCOMPARE(indicesOf(sweepShard(g, 0, 1)), (std::vector<int64_t>{0, 1, 2, 3}));
    QCOMPARE(idsOf(sweepShard(g, 1, 2)),
             (std::vector<std::string>{"sweep-E4M3FN-mx_rceil-lognormal", "sweep-E5M2xE4M3FN-mx_rceil-lognormal"}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sweepShard(g, 3, 3));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sweepShard(g, 0, 0));
  }

  // Overrides replace the config's lists (trimmed, empty entries dropped); a list left out is the
  // base config's own value: here A E5M2, B E4M3FN → "E5M2:E4M3FN", te_current (the default
  // preset), normal (the default distribution).
  void overridesAndDefaults() {
    SweepAxisOverrides over;
    over.formats = std::vector<std::string>{" E5M2 ", ""};
    over.scalings = std::vector<std::string>{"te_current"};
    QCOMPARE(idsOf(gridOf(kTwoByTwo, over)), (std::vector<std::string>{"sweep-E5M2-te_current-lognormal"}));
    const auto d = gridOf(R"({"type": "gemm", "m": 8, "k": 32, "n": 8, "format_a": "E5M2", "format_b": "E4M3FN"})");
    QCOMPARE(idsOf(d), (std::vector<std::string>{"sweep-E5M2xE4M3FN-te_current-normal"}));
    QCOMPARE(QString::fromStdString(d[0].format), QStringLiteral("E5M2:E4M3FN"));
    // "A:A" runs both operands in A and is named like "A".
    over = {};
    over.formats = std::vector<std::string>{"E5M2:E5M2"};
    QCOMPARE(idsOf(gridOf(kTwoByTwo, over))[0], std::string("sweep-E5M2-te_current-lognormal"));
  }

  // The messages `fp8lab-cli sweep` prints after "error: ".
  void errorsAreTheCommandsMessages() {
    QCOMPARE(QString::fromStdString(specError(R"({"type": "training"})")),
             QStringLiteral("sweep: the config must be a GEMM experiment (\"type\": \"gemm\")"));
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "sweep": {"formats": ["E5M2"], "format": []}})")),
             QStringLiteral("sweep.format: unknown key (formats, scalings, distributions, seeds)"));
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "sweep": {"formats": []}})")),
             QStringLiteral("sweep.formats: an empty list (leave it out to use the config's own value)"));
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "sweep": {"scalings": [" "]}})")),
             QStringLiteral("sweep.scalings: an empty list (leave it out to use the config's own value)"));
    SweepAxisOverrides over;
    over.distributions = std::vector<std::string>{};
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm"})", over)),
             QStringLiteral("--distributions: an empty list (leave it out to use the config's own value)"));
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "sweep": {"formats": ["E4M3FN:E5M2:E2M1"]}})")),
             QStringLiteral("formats: 'E4M3FN:E5M2:E2M1' is not FORMAT or FORMAT_A:FORMAT_B"));
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "sweep": {"formats": ["E4M3FN:"]}})")),
             QStringLiteral("formats: 'E4M3FN:' is not FORMAT or FORMAT_A:FORMAT_B"));
    // The base config's own error, with where its key is: `"m"` opens at column 18 of
    // {"type": "gemm", "m": 0} (brace 1, "type" 2-7, colon 8, space 9, "gemm" 10-15, comma 16,
    // space 17).
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "m": 0})")),
             QStringLiteral("config: m: expected an integer in [1, 1048576] (line 1, column 18)"));
    // A point that is not a valid config names its index and id (scalings te_current, nope: 1).
    SweepSpec s;
    QCOMPARE(specError(R"({"type": "gemm", "sweep": {"scalings": ["te_current", "nope"]}})", {}, &s), std::string());
    std::vector<SweepPoint> g;
    const QString e = QString::fromStdString(expandSweep(s, &g));
    QVERIFY2(e.startsWith(QStringLiteral("grid point 1 (sweep-E4M3FN-nope-normal): scaling: 'nope'")), qPrintable(e));
  }

  // FP8, MX and NVFP4 recipes and a recipe pair in one grid, without a formats axis: each recipe
  // brings its own element format (NVFP4: E2M1; the others: the base config's, here the default
  // E4M3FN). Seeds are the innermost axis: recipe r, seed e has index r·2 + e.
  void mixedRecipesBringTheirFormats() {
    const auto g = gridOf(R"({"type": "gemm", "m": 16, "k": 64, "n": 16, "seed": 9,
      "sweep": {"scalings": ["te_current", "mx_rceil", "nvfp4_te", "deepgemm_1x128:deepgemm_128x128"],
                "seeds": [1, 2]}})");
    QCOMPARE(idsOf(g),
             (std::vector<std::string>{"sweep-E4M3FN-te_current-normal-s1", "sweep-E4M3FN-te_current-normal-s2",
                                       "sweep-E4M3FN-mx_rceil-normal-s1", "sweep-E4M3FN-mx_rceil-normal-s2",
                                       "sweep-E2M1-nvfp4_te-normal-s1", "sweep-E2M1-nvfp4_te-normal-s2",
                                       "sweep-E4M3FN-deepgemm_1x128+deepgemm_128x128-normal-s1",
                                       "sweep-E4M3FN-deepgemm_1x128+deepgemm_128x128-normal-s2"}));
    QCOMPARE(indicesOf(g), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
    QCOMPARE(g[4].config.format_a, std::string("E2M1"));
    QCOMPARE(g[4].config.format_b, std::string("E2M1"));
    QCOMPARE(g[4].format, std::string("E2M1"));
    QCOMPARE(g[2].config.format_a, std::string("E4M3FN"));
    QCOMPARE(g[6].config.scaling, std::string("deepgemm_1x128"));
    QCOMPARE(g[6].config.scaling_b, std::string("deepgemm_128x128"));
    QCOMPARE(g[6].scaling, std::string("deepgemm_1x128:deepgemm_128x128"));
    QCOMPARE(g[0].config.scaling_b, std::string());
    for (size_t i = 0; i < g.size(); ++i) {
      QCOMPARE(g[i].config.seed, uint64_t(i % 2 + 1));
      QCOMPARE(g[i].seed, uint64_t(i % 2 + 1));
    }
    // The canonical config of a point names its seed and pair, so a stored run of another seed is
    // a different point.
    QCOMPARE(gemmConfigJson(g[7].config, g[7].id)["seed"].get<uint64_t>(), uint64_t(2));
    QCOMPARE(gemmConfigJson(g[7].config, g[7].id)["scaling_b"].get<std::string>(), std::string("deepgemm_128x128"));
  }

  // With a formats axis the FP8 and MX recipes run in each format; NVFP4 (always E2M1) runs once,
  // at the first format's place: E4M3FN te_current 0, E2M1 nvfp4_te 1, E5M2 te_current 2. A base
  // config whose scaling is NVFP4 (format E2M1 implied, not named) gives the other recipes the
  // default E4M3FN when the grid names no format.
  void namedFormatsAndNvfp4() {
    const auto g = gridOf(R"({"type": "gemm", "m": 16, "k": 64, "n": 16,
      "sweep": {"formats": ["E4M3FN", "E5M2"], "scalings": ["te_current", "nvfp4_te"]}})");
    QCOMPARE(idsOf(g), (std::vector<std::string>{"sweep-E4M3FN-te_current-normal", "sweep-E2M1-nvfp4_te-normal",
                                                 "sweep-E5M2-te_current-normal"}));
    QCOMPARE(indicesOf(g), (std::vector<int64_t>{0, 1, 2}));
    const auto h = gridOf(R"({"type": "gemm", "m": 16, "k": 64, "n": 16, "scaling": "nvfp4_te",
      "sweep": {"scalings": ["nvfp4_te", "te_current"]}})");
    QCOMPARE(idsOf(h), (std::vector<std::string>{"sweep-E2M1-nvfp4_te-normal", "sweep-E4M3FN-te_current-normal"}));
    // A format the base names stays the format of the recipes that take one.
    const auto k = gridOf(R"({"type": "gemm", "m": 16, "k": 64, "n": 16, "format": "E5M2",
      "sweep": {"scalings": ["te_current", "nvfp4_te"]}})");
    QCOMPARE(idsOf(k), (std::vector<std::string>{"sweep-E5M2-te_current-normal", "sweep-E2M1-nvfp4_te-normal"}));
    // Without a scalings axis a base pair is the grid's one recipe.
    const auto p = gridOf(R"({"type": "gemm", "m": 16, "k": 128, "n": 16, "scaling": "deepgemm_1x128",
      "scaling_b": "deepgemm_128x128", "sweep": {"seeds": 4}})");
    QCOMPARE(idsOf(p), (std::vector<std::string>{"sweep-E4M3FN-deepgemm_1x128+deepgemm_128x128-normal-s4"}));
  }

  // Seeds and recipe pairs: the errors the command prints, and a pair no GEMM can run (NVFP4 with
  // FP8) named at its grid point.
  void seedAndPairErrors() {
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "sweep": {"seeds": [1, 2.5]}})")),
             QStringLiteral("sweep.seeds: entry 1 is not an integer seed in [0, 2^53]"));
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "sweep": {"seeds": [-1]}})")),
             QStringLiteral("sweep.seeds: entry 0 is not an integer seed in [0, 2^53]"));
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "sweep": {"seeds": ["1"]}})")),
             QStringLiteral("sweep.seeds: entry 0 is not an integer seed in [0, 2^53]"));
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "sweep": {"seeds": [3, 4, 3]}})")),
             QStringLiteral("sweep.seeds: seed 3 is listed twice"));
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "sweep": {"seeds": []}})")),
             QStringLiteral("sweep.seeds: an empty list (leave it out to use the config's own value)"));
    SweepAxisOverrides over;
    over.seeds = std::vector<uint64_t>{};
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm"})", over)),
             QStringLiteral("--seeds: an empty list (leave it out to use the config's own value)"));
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "sweep": {"scalings": ["a:b:c"]}})")),
             QStringLiteral("scalings: 'a:b:c' is not PRESET or PRESET_A:PRESET_B"));
    QCOMPARE(QString::fromStdString(specError(R"({"type": "gemm", "sweep": {"scalings": [":te_current"]}})")),
             QStringLiteral("scalings: ':te_current' is not PRESET or PRESET_A:PRESET_B"));
    SweepSpec s;
    QCOMPARE(specError(R"({"type": "gemm", "m": 16, "k": 64, "n": 16,
                         "sweep": {"scalings": ["te_current", "nvfp4_te:deepgemm_128x128"]}})",
                       {}, &s),
             std::string());
    std::vector<SweepPoint> g;
    const QString e = QString::fromStdString(expandSweep(s, &g));
    QVERIFY2(e.startsWith(QStringLiteral("grid point 1 (sweep-E2M1xE4M3FN-nvfp4_te+deepgemm_128x128-normal): "
                                         "scaling_b: A is NVFP4")),
             qPrintable(e));
  }

  // Shards and resume work on the seeds axis like on any other: 3 recipes × 2 seeds, shard 1/4 is
  // indices {1, 5}; a stored run of point s2 with its configuration is skipped, a stored run with
  // the same id but seed 1 is not.
  void seedsShardAndResume() {
    auto g = gridOf(R"({"type": "gemm", "m": 16, "k": 64, "n": 16,
      "sweep": {"scalings": ["te_current", "mx_rceil", "nvfp4_te"], "seeds": [1, 2]}})");
    QCOMPARE(indicesOf(sweepShard(g, 1, 4)), (std::vector<int64_t>{1, 5}));
    QCOMPARE(idsOf(sweepShard(g, 1, 4)),
             (std::vector<std::string>{"sweep-E4M3FN-te_current-normal-s2", "sweep-E2M1-nvfp4_te-normal-s2"}));
    const SweepPoint& nv2 = g[5];
    const std::vector<RunInfo> stored{
        storedGemm(nv2.id, gemmConfigJson(nv2.config, nv2.id).dump()),
        storedGemm("sweep-E4M3FN-mx_rceil-normal-s2",
                   R"({"name": "sweep-E4M3FN-mx_rceil-normal-s2", "seed": 1, "m": 16, "k": 64, "n": 16,
                       "scaling": "mx_rceil", "type": "gemm"})")};
    QCOMPARE(removeStoredPoints(&g, stored), (std::vector<std::string>{"sweep-E2M1-nvfp4_te-normal-s2"}));
    QCOMPARE(g.size(), size_t(5));
  }

  // A stored run with the point's configuration, written by hand in another key order and without
  // the keys that have their default values, is the same point; the same id with another seed, a
  // run of another type, and text that is not JSON are not.
  void resumeSkipsStoredPointsWithTheSameConfig() {
    auto g = gridOf(R"({"type": "gemm", "m": 8, "k": 32, "n": 8, "seed": 3,
                        "sweep": {"formats": ["E4M3FN", "E5M2"]}})");
    QCOMPARE(g.size(), size_t(2));
    const std::vector<RunInfo> stored{
        storedGemm("sweep-E5M2-te_current-normal",
                   R"({"name": "sweep-E5M2-te_current-normal", "seed": 3, "n": 8, "k": 32, "m": 8,
                       "format": "E5M2", "scaling": "te_current", "type": "gemm"})"),
        storedGemm("sweep-E4M3FN-te_current-normal",
                   R"({"name": "sweep-E4M3FN-te_current-normal", "seed": 4, "n": 8, "k": 32, "m": 8,
                       "type": "gemm"})"),
        storedGemm("x", "not json")};
    RunInfo training = storedGemm("t", R"({"name": "sweep-E4M3FN-te_current-normal", "seed": 3, "n": 8, "k": 32,
                                           "m": 8, "type": "gemm"})");
    training.type = "training";
    std::vector<RunInfo> all = stored;
    all.push_back(training);
    QCOMPARE(removeStoredPoints(&g, all), (std::vector<std::string>{"sweep-E5M2-te_current-normal"}));
    QCOMPARE(idsOf(g), (std::vector<std::string>{"sweep-E4M3FN-te_current-normal"}));
    // Without "name" the stored run is not a sweep point of that id.
    QCOMPARE(removeStoredPoints(&g, {storedGemm("y", R"({"seed": 3, "n": 8, "k": 32, "m": 8, "type": "gemm"})")}),
             std::vector<std::string>());
  }

  // Three small points on the CPU: one save at the end by default, one per point with a zero
  // batch limit; progress runs over the whole sweep.
  void runnerSavesInBatches() {
    const auto g = gridOf(R"({"type": "gemm", "m": 8, "k": 32, "n": 8,
                              "sweep": {"formats": ["E4M3FN", "E5M2", "E4M3FNUZ"]}})");
    auto backend = makeCpuGemmBackend();
    std::vector<std::vector<std::string>> batches;
    std::vector<std::string> done;
    double last = 0;
    bool monotone = true;
    SweepHooks h;
    h.progress = [&](double f, const std::string&) {
      monotone = monotone && f >= last && f <= 1.0;
      last = f;
      return true;
    };
    h.point_done = [&](const SweepPoint& p, Run& r) {
      done.push_back(p.id);
      r.attrs["marked"] = std::string("yes");
    };
    h.save = [&](const std::vector<Run>& runs, std::string*) {
      std::vector<std::string> ids;
      for (const Run& r : runs) {
        ids.push_back(r.id);
        if (attrString(r.attrs, "marked").value_or("") != "yes") return false;
        if (r.type != "gemm") return false;
        // The stored config names the point.
        if (JsonDocument::parse(r.config_json).root().value("name", std::string()) != r.id) return false;
      }
      batches.push_back(ids);
      return true;
    };
    SweepOutcome o = runSweep(g, *backend, h);
    QCOMPARE(int(o.status), int(SweepOutcome::Status::Completed));
    QCOMPARE(o.finished, size_t(3));
    QVERIFY(monotone);
    QCOMPARE(last, 1.0);
    QCOMPARE(done, idsOf(g));
    QCOMPARE(batches, (std::vector<std::vector<std::string>>{idsOf(g)}));
    batches.clear();
    SweepRunOptions every;
    every.save_batch_bytes = 0;
    o = runSweep(g, *backend, h, every);
    QCOMPARE(int(o.status), int(SweepOutcome::Status::Completed));
    QCOMPARE(batches.size(), size_t(3));
    QCOMPARE(batches[2], std::vector<std::string>{"sweep-E4M3FNUZ-te_current-normal"});
  }

  // A cancel inside point 2 of 3 keeps point 1 (saved) and runs nothing after; a cancel asked
  // once point 1 is done stops between the points; a failing point keeps the ones before it.
  void runnerKeepsWhatFinished() {
    auto g = gridOf(R"({"type": "gemm", "m": 8, "k": 32, "n": 8,
                        "sweep": {"formats": ["E4M3FN", "E5M2", "E4M3FNUZ"]}})");
    auto backend = makeCpuGemmBackend();
    std::vector<std::string> saved;
    SweepHooks h;
    h.save = [&](const std::vector<Run>& runs, std::string*) {
      for (const Run& r : runs) saved.push_back(r.id);
      return true;
    };
    h.progress = [&](double, const std::string& stage) { return stage.rfind("2/3 ", 0) != 0; };
    SweepOutcome o = runSweep(g, *backend, h);
    QCOMPARE(int(o.status), int(SweepOutcome::Status::Cancelled));
    QCOMPARE(o.finished, size_t(1));
    QVERIFY(o.in_point);
    QVERIFY(o.saved());
    QCOMPARE(saved, std::vector<std::string>{"sweep-E4M3FN-te_current-normal"});

    saved.clear();
    bool stop = false;
    h.progress = [&](double, const std::string&) { return !stop; };
    h.point_done = [&](const SweepPoint&, Run&) { stop = true; };
    o = runSweep(g, *backend, h);
    QCOMPARE(int(o.status), int(SweepOutcome::Status::Cancelled));
    QCOMPARE(o.finished, size_t(1));
    QVERIFY(!o.in_point);
    QCOMPARE(saved, std::vector<std::string>{"sweep-E4M3FN-te_current-normal"});

    saved.clear();
    h.progress = {};
    h.point_done = {};
    g[1].config.m = 0; // runGemmExperimentRun refuses it
    o = runSweep(g, *backend, h);
    QCOMPARE(int(o.status), int(SweepOutcome::Status::Failed));
    QCOMPARE(o.finished, size_t(1));
    QVERIFY(o.in_point);
    QVERIFY2(QString::fromStdString(o.error).contains(QStringLiteral("m, k and n must be ≥ 1")), o.error.c_str());
    QCOMPARE(saved, std::vector<std::string>{"sweep-E4M3FN-te_current-normal"});

    // A save that fails stops the sweep and says why.
    g[1].config.m = 8;
    h.save = [&](const std::vector<Run>&, std::string* error) {
      *error = "disk full";
      return false;
    };
    o = runSweep(g, *backend, h);
    QCOMPARE(int(o.status), int(SweepOutcome::Status::Failed));
    QCOMPARE(o.finished, size_t(3));
    QCOMPARE(QString::fromStdString(o.save_error), QStringLiteral("disk full"));
  }
};

QTEST_GUILESS_MAIN(TestSweep)
#include "test_sweep.moc"

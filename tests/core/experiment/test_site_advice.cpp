// Per-layer advice (core/experiment/decision/site_advice.h): the groups of each model, and a sweep on a
// language model whose recipe is deliberately harmful (per-tensor E2M1 casts: 4-bit elements with
// one scale per tensor), where every group's loss rises far above seed noise and the advice keeps
// the groups that cost at least the given share — and writes a config `run` parses back.
#include "experiment/decision/recipe_ranking.h"
#include "experiment/decision/site_advice.h"
#include "json/json_document.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace fp8lab;

class TestSiteAdvice : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void groupsOfTheModels() {
    const std::vector<SiteGroup> mlp = siteGroups(SiteTable::mlp({784, 256, 128, 10}));
    QCOMPARE(mlp.size(), size_t(3));
    QCOMPARE(mlp[1].name, std::string("fc2"));
    QCOMPARE(mlp[1].sites, std::vector<std::string>({"fc2"}));
    TransformerConfig t;
    t.layers = 2;
    t.ffn = FfnKind::Swiglu;
    const std::vector<SiteGroup> g = siteGroups(t.sites());
    QCOMPARE(g.size(), size_t(5));
    QCOMPARE(g[0].name, std::string("blocks.0.attn"));
    QCOMPARE(g[0].sites, std::vector<std::string>({"blocks.0.attn.qkv", "blocks.0.attn.out"})); // not the matmuls
    QCOMPARE(g[1].sites, std::vector<std::string>({"blocks.0.ffn.up", "blocks.0.ffn.gate", "blocks.0.ffn.down"}));
    QCOMPARE(g[4].name, std::string("lm_head"));
  }

  void harmfulRecipeIsKeptInHighPrecision() {
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("text.txt")).toStdString();
    {
      std::ofstream f(path, std::ios::binary);
      const std::string period = "abcdefgh"
                                 "hgfedcba"
                                 "acegbdfh";
      for (int i = 0; i < 1500; ++i) f << period;
    }
    TrainingRunSpec spec;
    spec.id = "lm";
    LmTrainingConfig c;
    c.data.path = path;
    c.model.d_model = 16;
    c.model.layers = 1;
    c.model.heads = 2;
    c.model.context = 16;
    c.model.ffn_hidden = 32;
    c.batch_size = 8;
    c.optimizer.learning_rate = 1e-2f;
    c.eval_batches = 2;
    c.probes.every = 0;
    c.probes.attention_every = 0;
    c.threads = 1;
    c.precision = TrainingPrecision::FP8;
    c.scaling.kind = TrainingScalingKind::CurrentTE;
    c.forward_format = &Format::E2M1();
    c.backward_format = &Format::E2M1();
    spec.model = c;
    spec.model_kind = "transformer";
    AdviceConfig ac;
    ac.steps = 120;
    ac.seeds = 3;
    ac.keep_share = 0.1;
    ac.threads = 1;
    const SiteAdvice a = adviseSitePrecision(spec, ac);
    qInfo("%s", a.summary().c_str());
    QCOMPARE(a.runs.size(), size_t(3 * (2 + 3))); // 3 seeds × (all high, all recipe, 3 groups)
    QCOMPARE(a.steps, int64_t(120));
    // The full recipe's Δ: the mean of the same-seed differences with t_{0.975,2} = 4.303 · sd / √3.
    QCOMPARE(a.full_per_seed.size(), size_t(3));
    auto check = [](const std::vector<double>& d, double mean, double sd, double lo, double hi) {
      const double m = (d[0] + d[1] + d[2]) / 3;
      const double s = std::sqrt(((d[0] - m) * (d[0] - m) + (d[1] - m) * (d[1] - m) + (d[2] - m) * (d[2] - m)) / 2);
      QVERIFY(qAbs(mean - m) < 1e-12);
      QVERIFY(qAbs(sd - s) < 1e-12);
      QVERIFY(qAbs(lo - (m - 4.303 * s / std::sqrt(3.0))) < 1e-12);
      QVERIFY(qAbs(hi - (m + 4.303 * s / std::sqrt(3.0))) < 1e-12);
    };
    check(a.full_per_seed, a.full_delta, a.full_spread, a.full_ci_low, a.full_ci_high);
    QVERIFY2(a.full_delta > 0, "E2M1 per tensor should cost more than high precision");
    // Resolved: no more seeds needed; else as many as seedsToResolve gives at this spread.
    QCOMPARE(a.seeds_to_resolve, a.full_ci_low > 0 ? 0 : seedsToResolve(a.full_delta, a.full_spread));
    if (a.seeds_to_resolve > 0)
      QVERIFY(a.summary().find("nothing is resolved") != std::string::npos ||
              std::any_of(a.groups.begin(), a.groups.end(), [](const GroupSensitivity& g) { return g.ci_low > 0; }));
    int kept = 0;
    for (const GroupSensitivity& g : a.groups) {
      check(g.per_seed, g.delta, g.spread, g.ci_low, g.ci_high);
      // Kept: the paired interval excludes 0 and the share rule holds.
      QCOMPARE(g.keep_high, g.ci_low > 0 && g.delta >= 0.1 * a.full_delta);
      kept += g.keep_high;
    }
    QVERIFY(kept >= 1);
    // One seed: no interval, so nothing is kept. Steps 0: the advised run's own (30).
    AdviceConfig one = ac;
    one.seeds = 1;
    one.steps = 0;
    TrainingRunSpec short_run = spec;
    lmRun(short_run).steps = 30;
    const SiteAdvice a1 = adviseSitePrecision(short_run, one);
    QCOMPARE(a1.steps, int64_t(30));
    QVERIFY(std::isnan(a1.full_ci_low));
    for (const GroupSensitivity& g : a1.groups) QVERIFY(!g.keep_high);
    QVERIFY(a1.summary().find("one seed: no interval") != std::string::npos);
    // The advised config is a run config whose policy keeps exactly the kept groups' sites.
    std::string err;
    const auto doc = parseStoredConfig(a.config_json, &err);
    QVERIFY2(doc, err.c_str());
    const auto parsed = parseTrainingExperiment(doc->root(), &err, &*doc);
    QVERIFY2(parsed, err.c_str());
    const PrecisionPolicy& p = lmRun(parsed->runs.front()).policy;
    size_t want = 0;
    for (const GroupSensitivity& g : a.groups)
      if (g.keep_high) want += g.group.sites.size();
    QCOMPARE(p.rules.size(), want);
    for (const PolicyRule& r : p.rules) QCOMPARE(r.precision, SitePrecision::BF16);
    // The session run of the advice.
    const Run run = adviceToSession(a, "lm-advice", 120);
    QCOMPARE(run.type, std::string("advice"));
    QCOMPARE(run.find("advice/delta")->shape, std::vector<int64_t>({3}));
    QCOMPARE(run.find("advice/ci_low")->shape, std::vector<int64_t>({3}));
    QCOMPARE(run.find("advice/per_seed")->shape, std::vector<int64_t>({3, 3}));
    QCOMPARE(run.metrics.at("full_ci_low").value, a.full_ci_low);
    QCOMPARE(attrString(run.attrs, "groups").value_or(""), std::string("blocks.0.attn,blocks.0.ffn,lm_head"));
    // An FP32 run has nothing to advise.
    TrainingRunSpec fp32 = spec;
    lmRun(fp32).precision = TrainingPrecision::FP32;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, adviseSitePrecision(fp32, ac));
  }
};

QTEST_GUILESS_MAIN(TestSiteAdvice)
#include "test_site_advice.moc"

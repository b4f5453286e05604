// Per-layer advice (core/experiment/site_advice.h): the groups of each model, and a sweep on a
// language model whose recipe is deliberately harmful (per-tensor E2M1 casts: 4-bit elements with
// one scale per tensor), where every group's loss rises far above seed noise and the advice keeps
// the groups that cost at least the given share — and writes a config `run` parses back.
#include "experiment/site_advice.h"
#include "io/json_document.h"

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
    spec.lm = c;
    AdviceConfig ac;
    ac.steps = 120;
    ac.seeds = 2;
    ac.keep_share = 0.1;
    ac.threads = 1;
    const SiteAdvice a = adviseSitePrecision(spec, ac);
    qInfo("%s", a.summary().c_str());
    QCOMPARE(a.runs.size(), size_t(2 * (2 + 3))); // 2 seeds × (all high, all recipe, 3 groups)
    QVERIFY2(a.full_loss - a.high_loss > a.full_spread, "E2M1 per tensor should cost clearly more than seed noise");
    int kept = 0;
    for (const GroupSensitivity& g : a.groups) {
      QCOMPARE(g.keep_high, g.delta > 0 && g.delta > g.spread && g.delta >= 0.1 * (a.full_loss - a.high_loss));
      kept += g.keep_high;
    }
    QVERIFY(kept >= 1);
    // The advised config is a run config whose policy keeps exactly the kept groups' sites.
    std::string err;
    const auto doc = parseStoredConfig(a.config_json, &err);
    QVERIFY2(doc, err.c_str());
    const auto parsed = parseTrainingExperiment(doc->root(), &err, &*doc);
    QVERIFY2(parsed, err.c_str());
    const PrecisionPolicy& p = parsed->runs.front().lm->policy;
    size_t want = 0;
    for (const GroupSensitivity& g : a.groups)
      if (g.keep_high) want += g.group.sites.size();
    QCOMPARE(p.rules.size(), want);
    for (const PolicyRule& r : p.rules) QCOMPARE(r.precision, SitePrecision::BF16);
    // The session run of the advice.
    const Run run = adviceToSession(a, "lm-advice", 120);
    QCOMPARE(run.type, std::string("advice"));
    QCOMPARE(run.find("advice/delta")->shape, std::vector<int64_t>({3}));
    QCOMPARE(attrString(run.attrs, "groups").value_or(""), std::string("blocks.0.attn,blocks.0.ffn,lm_head"));
    // An FP32 run has nothing to advise.
    TrainingRunSpec fp32 = spec;
    fp32.lm->precision = TrainingPrecision::FP32;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, adviseSitePrecision(fp32, ac));
  }
};

QTEST_GUILESS_MAIN(TestSiteAdvice)
#include "test_site_advice.moc"

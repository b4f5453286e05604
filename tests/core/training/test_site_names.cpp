// Site names and places (core/common/site_names.h) and the precision-policy presets
// (core/training/sites.h), against the names PyTorch gives the modules of nanoGPT-shaped models
// (module paths: "fc1", "blocks.1.attn.qkv", "lm_head") and the rules each preset states in words.
#include "common/site_names.h"
#include "training/sites.h"

#include <QtTest>

using namespace fp8lab;

class TestSiteNames : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // The builders spell PyTorch's module paths: nn.Sequential-style "fc<N>" counting from 1, a
  // ModuleList "blocks" indexed from 0.
  void builders() {
    QCOMPARE(mlpLayerName(0), std::string("fc1"));
    QCOMPARE(mlpLayerName(11), std::string("fc12"));
    QCOMPARE(blockName(3), std::string("blocks.3"));
    QCOMPARE(blockSitePath(1, "attn.qkv"), std::string("blocks.1.attn.qkv"));
    QCOMPARE(std::string(kLmHeadName), std::string("lm_head"));
    QCOMPARE(mlpLayerIndex("fc1"), std::optional<int64_t>(0));
    QCOMPARE(mlpLayerIndex("fc12"), std::optional<int64_t>(11));
    for (const char* bad : {"fc", "fc0", "fcx", "f1", "fc1a", "blocks.1", "fc1234567"})
      QVERIFY2(!mlpLayerIndex(bad), bad);
    // The SiteTable of an MLP uses the builder: W [784, 256], [256, 10] → fc1, fc2.
    const SiteTable t = SiteTable::mlp({784, 256, 10});
    QCOMPARE(t.size(), size_t(2));
    QCOMPARE(t[1].path, std::string("fc2"));
  }

  // Places read back from names: a Linear of a block, the block's output (the probes' name), the
  // head and the embeddings; "mlp" (GPT-2's name for the FFN) groups as ffn; anything else has no
  // place.
  void places() {
    struct Case {
      const char* path;
      int block;
      const char* key;
      const char* role;
    };
    const Case cases[] = {
        {"blocks.1.attn.qkv", 1, "blocks.1.attn", "attn"},
        {"blocks.12.ffn.down", 12, "blocks.12.ffn", "ffn"},
        {"blocks.0.mlp.c_fc", 0, "blocks.0.mlp", "ffn"},
        {"blocks.2", 2, "blocks.2", "output"},
        {"blocks.2.ln1", 2, "blocks.2.ln1", "ln1"},
        {"lm_head", -1, "head", "head"},
        {"lm_head.weight", -1, "head", "head"},
        {"wte.weight", -1, "embedding", "embedding"},
        {"embedding", -1, "embedding", "embedding"},
        {"fc1", -1, "", ""},
        {"blocks.x.attn", -1, "", ""},
        {"blocks.", -1, "", ""},
    };
    for (const Case& c : cases) {
      const SitePlace p = sitePlace(c.path);
      QVERIFY2(p.block == c.block && p.key == c.key && p.role == c.role,
               qPrintable(QStringLiteral("%1: block %2 key %3 role %4")
                              .arg(QLatin1String(c.path))
                              .arg(p.block)
                              .arg(QString::fromStdString(p.key), QString::fromStdString(p.role))));
    }
  }

  // Each preset's rules as its explanation states them, for a 3-block transformer and 200 steps.
  void presets() {
    auto rules = [](const char* id, int64_t blocks, int64_t steps) { return policyPresetRules(id, blocks, steps); };
    QVERIFY(rules("none", 3, 200).empty());
    QVERIFY(rules("unknown", 3, 200).empty());
    // "attention in BF16": blocks.*.attn.* → bf16, every GEMM, every step.
    auto r = rules("attn_bf16", 3, 200);
    QCOMPARE(r.size(), size_t(1));
    QCOMPARE(r[0].sites, std::string("blocks.*.attn.*"));
    QCOMPARE(r[0].precision, SitePrecision::BF16);
    QCOMPARE(r[0].until_step, int64_t(-1));
    // "FFN first": attention in FP32 until step N = 200; without N, to the end.
    r = rules("ffn_first", 3, 200);
    QCOMPARE(r.size(), size_t(1));
    QCOMPARE(r[0].precision, SitePrecision::FP32);
    QCOMPARE(r[0].until_step, int64_t(200));
    QCOMPARE(rules("ffn_first", 3, 0)[0].until_step, int64_t(-1));
    // "wgrad in BF16": every site, the weight-gradient GEMM only.
    r = rules("wgrad_bf16", 0, 0);
    QCOMPARE(r.size(), size_t(1));
    QCOMPARE(r[0].sites, std::string("*"));
    QCOMPARE(r[0].gemms, std::vector<LinearGemm>{LinearGemm::Wgrad});
    // "first + last block in BF16" of 3 blocks: blocks.0.*, blocks.2.*, lm_head; of 1 block the
    // first is the last: blocks.0.*, lm_head.
    r = rules("ends_bf16", 3, 0);
    QCOMPARE(r.size(), size_t(3));
    QCOMPARE(r[0].sites, std::string("blocks.0.*"));
    QCOMPARE(r[1].sites, std::string("blocks.2.*"));
    QCOMPARE(r[2].sites, std::string("lm_head"));
    QCOMPARE(rules("ends_bf16", 1, 0).size(), size_t(2));
    // "FP8 attention": the two batched matmuls under the recipe.
    r = rules("fp8_attention", 2, 0);
    QCOMPARE(r.size(), size_t(2));
    QCOMPARE(r[0].sites, std::string("blocks.*.attn.scores"));
    QCOMPARE(r[1].sites, std::string("blocks.*.attn.context"));
    QCOMPARE(r[1].precision, SitePrecision::Recipe);
    // The MLP (0 blocks) takes only the presets that name no transformer site.
    for (const PolicyPreset& p : policyPresets())
      QCOMPARE(rules(p.id.c_str(), 0, 100).empty(), p.transformer || p.id == "none");
  }
};

QTEST_GUILESS_MAIN(TestSiteNames)
#include "test_site_names.moc"

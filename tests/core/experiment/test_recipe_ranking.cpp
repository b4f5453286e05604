// core/experiment/decision/recipe_ranking.h: means, 95 % intervals over seeds and the tie rule on constructed
// cases worked out by hand, and the grouping of a session's runs into recipes and settings.
#include <QtTest>

#include "experiment/decision/recipe_ranking.h"
#include "experiment/decision/session_decision.h"
#include "experiment/decision/session_decision_text.h"

using namespace fp8lab;

namespace {

std::vector<RankSample> samples(const std::string& recipe, const std::vector<double>& values,
                                const std::string& setting = "s") {
  std::vector<RankSample> v;
  for (size_t i = 0; i < values.size(); ++i) {
    RankSample s;
    s.run_id = recipe + "-s" + std::to_string(i + 1);
    s.setting = setting;
    s.recipe = recipe;
    s.recipe_label = recipe;
    s.seed = i + 1;
    s.value = values[i];
    v.push_back(s);
  }
  return v;
}

std::vector<RankSample> operator+(std::vector<RankSample> a, const std::vector<RankSample>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const RecipeInterval& find(const std::vector<RecipeInterval>& r, const std::string& label) {
  for (const RecipeInterval& x : r)
    if (x.label == label) return x;
  throw std::runtime_error("no recipe " + label);
}

/// A language-model training run (final validation loss, lower is better) of recipe `precision`
/// ("fp32" or a recipe name run in FP8) at `seed`.
RunInfo lmRun(const std::string& id, const std::string& precision, uint64_t seed, double loss) {
  RunInfo r;
  r.id = id;
  r.type = "training";
  r.seed = seed;
  r.attrs["precision"] = std::string(precision == "fp32" ? "fp32" : "fp8");
  r.attrs["model"] = std::string("transformer");
  if (precision != "fp32") r.attrs["recipe"] = precision;
  r.config_json = "{\"id\": \"" + id + "\", \"precision\": \"" + (precision == "fp32" ? "fp32" : "fp8") + "\"" +
                  (precision == "fp32" ? std::string() : ", \"recipe\": \"" + precision + "\"") +
                  ", \"seed\": " + std::to_string(seed) + ", \"steps\": 150}";
  r.metrics["final_val_loss"] = Metric{loss, "nats/byte", ""};
  return r;
}

RunInfo gemmRun(const std::string& id, const std::string& scaling, uint64_t seed, double sqnr, int m = 16) {
  RunInfo r;
  r.id = id;
  r.type = "gemm";
  r.seed = seed;
  r.config_json = "{\"type\": \"gemm\", \"name\": \"" + id + "\", \"m\": " + std::to_string(m) +
                  ", \"k\": 64, \"n\": 16, \"seed\": " + std::to_string(seed) + ", \"scaling\": \"" + scaling + "\"}";
  r.metrics["sqnr_db"] = Metric{sqnr, "dB", ""};
  return r;
}

} // namespace

class TestRecipeRanking : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // NIST/SEMATECH e-Handbook §1.3.6.7.2: t_0.975 for 1, 4, 30 degrees of freedom; beyond 30 linear in
  // 1/df: df 50 lies 0.6 of the way from 40 (1/40 = 0.025) to 60 (1/60): 2.021 − 0.6·0.021 = 2.0084.
  void studentQuantiles() {
    QCOMPARE(studentT975(1), 12.706);
    QCOMPARE(studentT975(4), 2.776);
    QCOMPARE(studentT975(30), 2.042);
    QCOMPARE(studentT975(40), 2.021);
    QCOMPARE(studentT975(50), 2.0084);
    QCOMPARE(studentT975(1000000), 1.96 + (1.98 - 1.96) * (1.0 / 1000000) / (1.0 / 120));
    QVERIFY(std::isnan(studentT975(0)));
  }

  // Two recipes that differ by seed noise only, and one that really differs (SQNR, higher better):
  //   A 30.1 29.8 30.3 29.9 30.2: mean 30.06, Σd² = .0016 + .0676 + .0576 + .0256 + .0196 = .172,
  //     sd = √(.172/4) = .207364, half = 2.776·sd/√5 = .257435 → [29.8026, 30.3174]
  //   B 30.0 30.2 29.7 30.1 29.9: mean 29.98, Σd² = .148, sd = √.037 = .192354, half = .238800
  //     → [29.7412, 30.2188]
  //   C 28.0 28.2 27.9 28.1 27.8: mean 28.0, Σd² = .1, sd = √.025 = .158114, half = .196293
  //     → [27.8037, 28.1963]
  // A and B overlap: both rank 1 (not distinguishable), A first by mean; C lies wholly below both:
  // rank 3.
  void seedNoiseVersusRealDifference() {
    const auto r =
        rankWithIntervals(samples("A", {30.1, 29.8, 30.3, 29.9, 30.2}) + samples("B", {30.0, 30.2, 29.7, 30.1, 29.9}) +
                              samples("C", {28.0, 28.2, 27.9, 28.1, 27.8}),
                          true);
    QCOMPARE(r.size(), size_t(3));
    const RecipeInterval &a = find(r, "A"), &b = find(r, "B"), &c = find(r, "C");
    QCOMPARE(a.mean, 30.06);
    QVERIFY(qAbs(a.sd - 0.2073644135) < 1e-9);
    QVERIFY(qAbs(a.half - 2.776 * 0.2073644135 / std::sqrt(5.0)) < 1e-9);
    QVERIFY(qAbs(b.mean - 29.98) < 1e-12);
    QVERIFY(qAbs(b.sd - 0.1923538406) < 1e-9);
    QVERIFY(qAbs(c.half - 0.1962925) < 1e-6);
    QCOMPARE(a.n_values, 5);
    QCOMPARE(a.rank, 1);
    QCOMPARE(b.rank, 1);
    QCOMPARE(c.rank, 3);
    QCOMPARE(a.place, 1);
    QCOMPARE(b.place, 2);
    QCOMPARE(c.place, 3);
    QCOMPARE(a.ties, std::vector<std::string>{"B"});
    QCOMPARE(b.ties, std::vector<std::string>{"A"});
    QVERIFY(c.ties.empty());
    QCOMPARE(rankText(a, r), std::string("1 ="));
    QCOMPARE(rankText(c, r), std::string("3"));
    QCOMPARE(intervalText(a), std::string("30.06 ± 0.26"));
    // The same values as a lower-is-better metric: C is best, A and B share rank 2.
    const auto low =
        rankWithIntervals(samples("A", {30.1, 29.8, 30.3, 29.9, 30.2}) + samples("B", {30.0, 30.2, 29.7, 30.1, 29.9}) +
                              samples("C", {28.0, 28.2, 27.9, 28.1, 27.8}),
                          false);
    QCOMPARE(find(low, "C").rank, 1);
    QCOMPARE(find(low, "A").rank, 2);
    QCOMPARE(find(low, "B").rank, 2);
  }

  // The rule does not chain: with two seeds, values m ± 0.05 give sd = 0.05·√2 and half =
  // 12.706·sd/√2 = 0.6353: X [11.6147, 12.8853], Y [10.3647, 11.6353], Z [9.1147, 10.3853]. Y overlaps
  // X and Z, Z does not overlap X. X rank 1; Y: nothing wholly better → rank 1; Z: X wholly better →
  // rank 2 (not 3: Y overlaps it).
  void tieRuleDoesNotChain() {
    const auto r =
        rankWithIntervals(samples("X", {12.2, 12.3}) + samples("Y", {10.95, 11.05}) + samples("Z", {9.7, 9.8}), true);
    QVERIFY(qAbs(find(r, "X").half - 0.6353) < 1e-4);
    QCOMPARE(find(r, "X").rank, 1);
    QCOMPARE(find(r, "Y").rank, 1);
    QCOMPARE(find(r, "Z").rank, 2);
    QCOMPARE(find(r, "Y").ties, (std::vector<std::string>{"X", "Z"}));
  }

  // One seed: the interval is the point. Equal values tie, different values are ranked (and the
  // text shows no ±). NaN values are left out; a recipe without any value comes last with rank 0.
  void singleSeedsAndMissingValues() {
    const auto r = rankWithIntervals(samples("P", {1.0}) + samples("Q", {1.0}) + samples("R", {2.0}) +
                                         samples("S", {NAN}) + samples("T", {3.0, NAN}),
                                     true);
    QCOMPARE(find(r, "T").rank, 1);
    QCOMPARE(find(r, "T").n_values, 1);
    QCOMPARE(find(r, "R").rank, 2);
    QCOMPARE(find(r, "P").rank, 3);
    QCOMPARE(find(r, "Q").rank, 3);
    QCOMPARE(find(r, "S").rank, 0);
    QCOMPARE(r.back().label, std::string("S"));
    QCOMPARE(intervalText(find(r, "R")), std::string("2"));
    QCOMPARE(rankText(find(r, "S"), r), std::string("—"));
    QCOMPARE(find(r, "P").half, 0.0);
  }

  // Settings rank separately, in order of first appearance.
  void settingsAreSeparate() {
    const auto r = rankWithIntervals(
        samples("A", {1, 2}, "one") + samples("B", {5, 6}, "two") + samples("C", {3, 4}, "one"), true);
    QCOMPARE(r.size(), size_t(3));
    QCOMPARE(r[0].label, std::string("C"));
    QCOMPARE(r[0].rank, 1);
    QCOMPARE(r[1].label, std::string("A"));
    QCOMPARE(r[2].label, std::string("B"));
    QCOMPARE(r[2].rank, 1);
  }

  // Runs of a session: the seed and the name are not part of the recipe or the setting; the
  // scaling is the recipe; another shape is another setting. Training runs are left out of a GEMM
  // metric.
  void sessionRunsGroupIntoRecipesAndSettings() {
    std::vector<RunInfo> runs{gemmRun("a1", "te_current", 1, 28.0), gemmRun("a2", "te_current", 2, 28.4),
                              gemmRun("b1", "per_row", 1, 31.0), gemmRun("b2", "per_row", 2, 31.2),
                              gemmRun("c1", "per_row", 1, 40.0, 32)};
    RunInfo t;
    t.id = "t";
    t.type = "training";
    t.metrics["sqnr_db"] = Metric{99, "dB", ""};
    runs.push_back(t);
    const auto s = rankSamples(runs, *rankingMetric("sqnr_db"));
    QCOMPARE(s.size(), size_t(5));
    QCOMPARE(s[0].recipe, s[1].recipe);
    QVERIFY(s[0].recipe != s[2].recipe);
    QCOMPARE(s[0].setting, s[2].setting);
    QVERIFY(s[4].setting != s[0].setting);
    QCOMPARE(s[0].recipe_label, std::string("te_current · E4M3FN"));
    QCOMPARE(s[0].m, int64_t(16));
    const auto r = rankWithIntervals(s, true);
    QCOMPARE(r.size(), size_t(3));
    QCOMPARE(r[0].label, std::string("per_row · E4M3FN"));
    QCOMPARE(r[0].runs, (std::vector<std::string>{"b1", "b2"}));
    QCOMPARE(r[0].seeds, (std::vector<uint64_t>{1, 2}));
    QVERIFY(qAbs(r[0].mean - 31.1) < 1e-12);
    QCOMPARE(defaultRankingMetric(runs), std::string("sqnr_db"));
    // The decision attaches the cost of each recipe; an unknown metric is refused with the choices.
    const SessionDecision d = decideSession(runs, "", {});
    QCOMPARE(d.gemm.size(), size_t(3));
    QVERIFY(d.gemm_cost[0].has_value());
    QCOMPARE(d.gemm_cost[0]->bytes(), int64_t(16 * 64 + 16 * 4 + 64 * 16 + 16 * 4));
    QCOMPARE(d.rankedSettings(), 1);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decideSession(runs, "nope", {}));
  }

  // meanInterval: {1, 2, 3}: mean 2, sd 1, half t(2) · 1 / √3 = 4.303 / 1.7320508 = 2.484339; one value
  // is a point (half 0, no sd); NaN values are left out.
  void meanIntervalByHand() {
    const MeanInterval m = meanInterval({1, 2, NAN, 3});
    QCOMPARE(m.n, 3);
    QCOMPARE(m.mean, 2.0);
    QCOMPARE(m.sd, 1.0);
    QVERIFY(qAbs(m.half - 2.484339) < 1e-6);
    QVERIFY(qAbs(m.lo - (2 - 2.484339)) < 1e-6);
    const MeanInterval one = meanInterval({5});
    QCOMPARE(one.n, 1);
    QCOMPARE(one.half, 0.0);
    QVERIFY(std::isnan(one.sd));
    QCOMPARE(meanInterval({}).n, 0);
  }

  // Seeds to resolve a mean difference 0.0255 at sd 0.0106066 (the two-seed case below):
  // n = 2: 12.706 · 0.0106066 / √2 = 0.0953; n = 3: 4.303 · 0.0106066 / √3 = 0.02635 > 0.0255;
  // n = 4: 3.182 · 0.0106066 / 2 = 0.016875 < 0.0255 → 4. sd 0 → 2; mean 0 → 0 (nothing to resolve).
  void seedsToResolveByHand() {
    QCOMPARE(seedsToResolve(0.0255, 0.015 / std::sqrt(2.0)), 4);
    QCOMPARE(seedsToResolve(-0.0255, 0.015 / std::sqrt(2.0)), 4);
    QCOMPARE(seedsToResolve(0.01, 0), 2);
    QCOMPARE(seedsToResolve(0, 1), 0);
    QCOMPARE(seedsToResolve(NAN, 1), 0);
  }

  // Same-seed pairs against the FP32 baseline (validation loss, lower is better), three seeds:
  //   FP32   2.31 2.26 2.30 (mean 2.29, sd 0.026458, half 4.303 · 0.026458 / √3 = 0.065729)
  //   NVFP4  2.34 2.28 2.34 (mean 2.32, sd 0.034641, half 0.086060)
  // The intervals over seeds overlap ([2.2243, 2.3557] and [2.2339, 2.4061]): unpaired, not
  // distinguishable. Paired: differences 0.03, 0.02, 0.04, mean 0.03, sd 0.01, half
  // 4.303 · 0.01 / √3 = 0.0248433 → [0.0051567, 0.0548433], wholly above 0: worse, rank 2.
  void pairsResolveWhatIntervalsOverSeedsCannot() {
    const std::vector<RunInfo> runs{lmRun("f1", "fp32", 1, 2.31),  lmRun("f2", "fp32", 2, 2.26),
                                    lmRun("f3", "fp32", 3, 2.30),  lmRun("n1", "nvfp4", 1, 2.34),
                                    lmRun("n2", "nvfp4", 2, 2.28), lmRun("n3", "nvfp4", 3, 2.34)};
    const SessionDecision d = decideSession(runs, "", {});
    QCOMPARE(d.training.size(), size_t(2));
    const RecipeInterval& base = find(d.training, "FP32 baseline");
    const RecipeInterval& nv = find(d.training, "nvfp4");
    QVERIFY(base.lo <= nv.hi && nv.lo <= base.hi); // the unpaired intervals overlap
    QCOMPARE(base.comparison, Comparison::Baseline);
    QCOMPARE(nv.comparison, Comparison::Paired);
    QVERIFY(nv.paired.has_value());
    const PairedDifference& p = *nv.paired;
    QCOMPARE(p.baseline, std::string("FP32 baseline"));
    QCOMPARE(p.n_pairs, 3);
    QCOMPARE(p.seeds, (std::vector<uint64_t>{1, 2, 3}));
    QCOMPARE(p.runs, (std::vector<std::string>{"n1", "n2", "n3"}));
    QCOMPARE(p.baseline_runs, (std::vector<std::string>{"f1", "f2", "f3"}));
    QVERIFY(qAbs(p.diffs[0] - 0.03) < 1e-12 && qAbs(p.diffs[1] - 0.02) < 1e-12 && qAbs(p.diffs[2] - 0.04) < 1e-12);
    QVERIFY(qAbs(p.mean_diff - 0.03) < 1e-12);
    QVERIFY(qAbs(p.sd - 0.01) < 1e-12);
    QVERIFY(qAbs(p.half - 0.0248433) < 1e-7);
    QVERIFY(qAbs(p.ci_low - 0.0051567) < 1e-7);
    QVERIFY(qAbs(p.ci_high - 0.0548433) < 1e-7);
    QCOMPARE(nv.verdict, Verdict::Worse);
    QCOMPARE(base.rank, 1);
    QCOMPARE(nv.rank, 2);
    QVERIFY(nv.ties.empty());
    QCOMPARE(pairedText(p), std::string("+0.030 ± 0.025"));
    QCOMPARE(perSeedText(p), std::string("seed 1 +0.03, seed 2 +0.02, seed 3 +0.04"));
    QCOMPARE(comparisonText(nv), std::string("worse than the baseline (paired, 3 seeds)"));
    // decide --json: the paired object.
    const Json j = sessionDecisionJson(d);
    const Json& nj = j["training"][1];
    QCOMPARE(nj["recipe"].get<std::string>(), std::string("nvfp4"));
    QCOMPARE(nj["comparison"].get<std::string>(), std::string("paired"));
    QCOMPARE(nj["verdict"].get<std::string>(), std::string("worse than the baseline"));
    const Json& pj = nj["paired"];
    QCOMPARE(pj["baseline"].get<std::string>(), std::string("FP32 baseline"));
    QCOMPARE(pj["n_pairs"].get<int>(), 3);
    QVERIFY(qAbs(pj["mean_diff"].get<double>() - 0.03) < 1e-12);
    QVERIFY(qAbs(pj["ci_low"].get<double>() - 0.0051567) < 1e-7);
    QVERIFY(qAbs(pj["ci_high"].get<double>() - 0.0548433) < 1e-7);
    QCOMPARE(pj["per_seed"].size(), size_t(3));
    QCOMPARE(pj["per_seed"][1]["seed"].get<int>(), 2);
    QVERIFY(qAbs(pj["per_seed"][1]["diff"].get<double>() - 0.02) < 1e-12);
    QCOMPARE(pj["per_seed"][1]["run"].get<std::string>(), std::string("n2"));
    QCOMPARE(pj["per_seed"][1]["baseline_run"].get<std::string>(), std::string("f2"));
    // The text lists the per-seed differences.
    const std::string t = sessionDecisionText(d);
    QVERIFY2(t.find("per seed: seed 1 +0.03, seed 2 +0.02, seed 3 +0.04") != std::string::npos, t.c_str());
    QVERIFY2(t.find("+0.030 ± 0.025") != std::string::npos, t.c_str());
  }

  // Two seeds: differences 0.033 and 0.018, mean 0.0255, sd 0.015 / √2 = 0.0106066, half
  // t(1) · sd / √2 = 12.706 · 0.0075 = 0.095295 → [−0.069795, 0.120795]: holds 0, not distinguishable,
  // both rank 1.
  void twoSeedsPairedButNotResolved() {
    const std::vector<RunInfo> runs{lmRun("f1", "fp32", 1, 2.300), lmRun("f2", "fp32", 2, 2.250),
                                    lmRun("n1", "nvfp4", 1, 2.333), lmRun("n2", "nvfp4", 2, 2.268)};
    const SessionDecision d = decideSession(runs, "", {});
    const RecipeInterval& nv = find(d.training, "nvfp4");
    QCOMPARE(nv.comparison, Comparison::Paired);
    QVERIFY(qAbs(nv.paired->mean_diff - 0.0255) < 1e-12);
    QVERIFY(qAbs(nv.paired->half - 0.095295) < 1e-6);
    QVERIFY(qAbs(nv.paired->ci_low + 0.069795) < 1e-6);
    QCOMPARE(nv.verdict, Verdict::NotDistinguishable);
    QCOMPARE(nv.rank, 1);
    QCOMPARE(find(d.training, "FP32 baseline").rank, 1);
  }

  // One seed per recipe: no interval and no rank; the answer says so.
  void oneSeedIsNotRanked() {
    const std::vector<RunInfo> runs{lmRun("f1", "fp32", 1, 2.31), lmRun("n1", "nvfp4", 1, 2.35),
                                    lmRun("m1", "mxfp8", 1, 2.32)};
    const SessionDecision d = decideSession(runs, "", {});
    for (const RecipeInterval& r : d.training) {
      QCOMPARE(r.rank, 0);
      QCOMPARE(rankText(r, d.training), std::string("—"));
      QVERIFY(r.ties.empty());
    }
    const RecipeInterval& nv = find(d.training, "nvfp4");
    QCOMPARE(nv.comparison, Comparison::OneSeed);
    QCOMPARE(nv.verdict, Verdict::OneSeed);
    QCOMPARE(nv.paired->n_pairs, 1);
    QVERIFY(qAbs(nv.paired->mean_diff - 0.04) < 1e-12);
    QVERIFY(std::isnan(nv.paired->ci_low));
    QCOMPARE(comparisonText(nv), std::string("one seed: no interval"));
    QCOMPARE(pairedText(*nv.paired), std::string("+0.04 (one seed: no interval)"));
    const std::string t = sessionDecisionText(d);
    QVERIFY2(t.find("one seed: no interval") != std::string::npos, t.c_str());
    QVERIFY2(t.find("not ranked") != std::string::npos, t.c_str());
    QCOMPARE(sessionDecisionJson(d)["training"][1]["verdict"].get<std::string>(), std::string("one seed: no interval"));
  }

  // Runs without two seeds in common fall back to the intervals over seeds and say so:
  //   FP32 seeds 1, 2: 2.30, 2.32 (mean 2.31, half 12.706 · 0.0141421 / √2 = 0.12706)
  //   NVFP4 seeds 3, 4: 2.60, 2.62 (mean 2.61, half 0.12706): [2.48294, 2.73706] lies above
  //   [2.18294, 2.43706]: worse (unpaired), rank 2.
  void unpairedRunsFallBack() {
    const std::vector<RunInfo> runs{lmRun("f1", "fp32", 1, 2.30), lmRun("f2", "fp32", 2, 2.32),
                                    lmRun("n3", "nvfp4", 3, 2.60), lmRun("n4", "nvfp4", 4, 2.62)};
    const SessionDecision d = decideSession(runs, "", {});
    const RecipeInterval& nv = find(d.training, "nvfp4");
    QCOMPARE(nv.comparison, Comparison::Unpaired);
    QCOMPARE(nv.paired->n_pairs, 0);
    QCOMPARE(nv.paired->unpaired, 2);
    QCOMPARE(nv.verdict, Verdict::Worse);
    QCOMPARE(nv.rank, 2);
    QCOMPARE(comparisonText(nv),
             std::string("worse than the baseline (unpaired: no two seeds in common; intervals over seeds apart)"));
    QVERIFY(sessionDecisionText(d).find("(means)") != std::string::npos);
  }

  // Ranks among recipes by pairs too: B − A per seed −0.01, −0.02, −0.015 (mean −0.015, sd 0.005, half
  // 4.303 · 0.005 / √3 = 0.012422 → [−0.027422, −0.002578]: B beats A); C − A 0.01, −0.02, 0.03 holds
  // 0 (C ties A), C − B 0.02, 0.0, 0.045 (mean 0.021667, sd 0.022546, half 0.056011) holds 0.
  // Ranks: B 1, C 1 (ties A and B), A 2 (beaten by B).
  void ranksByPairsAmongRecipes() {
    const std::vector<RunInfo> runs{lmRun("a1", "a", 1, 2.30), lmRun("a2", "a", 2, 2.40), lmRun("a3", "a", 3, 2.35),
                                    lmRun("b1", "b", 1, 2.29), lmRun("b2", "b", 2, 2.38), lmRun("b3", "b", 3, 2.335),
                                    lmRun("c1", "c", 1, 2.31), lmRun("c2", "c", 2, 2.38), lmRun("c3", "c", 3, 2.38)};
    const SessionDecision d = decideSession(runs, "", {});
    QCOMPARE(find(d.training, "b").rank, 1);
    QCOMPARE(find(d.training, "c").rank, 1);
    QCOMPARE(find(d.training, "a").rank, 2);
    const PairedDifference ba = pairedDifference(find(d.training, "b"), find(d.training, "a"));
    QVERIFY(qAbs(ba.mean_diff + 0.015) < 1e-12);
    QVERIFY(qAbs(ba.half - 0.0124217) < 1e-6);
    QCOMPARE(find(d.training, "c").ties, (std::vector<std::string>{"b", "a"}));
    QCOMPARE(find(d.training, "b").comparison, Comparison::None); // no FP32 run: no baseline
  }

  // Training runs: the FP32 run is the baseline of its model; the seed, id and label are not part of
  // the recipe, so two seeds of one config are one recipe.
  void trainingRunsAgainstTheBaseline() {
    auto run = [](const std::string& id, const std::string& precision, uint64_t seed, double acc) {
      RunInfo r;
      r.id = id;
      r.type = "training";
      r.seed = seed;
      r.attrs["precision"] = precision;
      if (precision == "fp8") r.attrs["recipe"] = std::string("te_mxfp8");
      r.config_json =
          "{\"id\": \"" + id + "\", \"precision\": \"" + precision + "\", \"seed\": " + std::to_string(seed) + "}";
      r.metrics["final_test_accuracy"] = Metric{acc, "1", ""};
      return r;
    };
    const std::vector<RunInfo> runs{run("f1", "fp32", 1, 0.86), run("f2", "fp32", 2, 0.87), run("m1", "fp8", 1, 0.85),
                                    run("m2", "fp8", 2, 0.84)};
    const SessionDecision d = decideSession(runs, "", {});
    QCOMPARE(d.training_metric->key, std::string("final_test_accuracy"));
    QCOMPARE(d.training.size(), size_t(2));
    QCOMPARE(d.training[0].label, std::string("FP32 baseline"));
    QVERIFY(d.training[0].baseline);
    QCOMPARE(d.baselineOf(1), 0);
    QCOMPARE(d.training[1].label, std::string("te_mxfp8"));
    QVERIFY(qAbs(d.training[1].mean - 0.845) < 1e-12);
    QCOMPARE(defaultRankingMetric(runs), std::string("final_test_accuracy"));
    // Regression: the advice hint named the MLP's default.json for every session; it now advises
    // this session's own low-precision run from its stored config.
    const std::string hint = hintAdvice(d, "s.h5");
    QVERIFY2(hint.find("`fp8lab-cli export s.h5 --run m1 --csv run-m1`") != std::string::npos, hint.c_str());
    QVERIFY2(hint.find("`fp8lab-cli advise run-m1/config.json") != std::string::npos, hint.c_str());
    QVERIFY(hint.find("default.json") == std::string::npos);
    QCOMPARE(hintAdvice(decideSession({run("f1", "fp32", 1, 0.86)}, "", {}), "s.h5"), hintAdvice());
    // A per-tensor FP8 run costs one float32 scale per tensor on each operand (te_current); FP32 has
    // no cost row.
    QVERIFY(!d.training_cost[0]);
    QVERIFY(d.training_cost[1]);
    const double s = kTrainingCostShape;
    QCOMPARE(d.training_cost[1]->bytesPerElement(), (2 * s * s + 8) / (2 * s * s));
  }

  // Language-model runs: the config's "model" object is part of the setting (a post-norm model is
  // not compared with a pre-norm one), the label names the architecture, optimizer and length, the
  // metric is the final validation loss (lower is better) and a policy's step range is in the label.
  void languageModelRunsBySetting() {
    auto run = [](const std::string& id, const std::string& precision, uint64_t seed, const std::string& position,
                  double loss, const std::string& policy = "") {
      RunInfo r;
      r.id = id;
      r.type = "training";
      r.seed = seed;
      r.attrs["precision"] = precision;
      r.attrs["model"] = std::string("transformer");
      r.attrs["steps_planned"] = int64_t(600);
      if (precision == "fp8") r.attrs["scaling"] = std::string("current-te");
      r.config_json = "{\"id\": \"" + id + "\", \"precision\": \"" + precision +
                      "\", \"seed\": " + std::to_string(seed) +
                      ", \"steps\": 600, \"model\": {\"kind\": \"transformer\", \"d_model\": 64, \"layers\": 4, "
                      "\"heads\": 4, \"context\": 64, \"ffn\": \"gelu\", \"norm\": \"layernorm\", "
                      "\"norm_position\": \"" +
                      position + "\"}, \"optimizer\": {\"name\": \"adam\", \"learning_rate\": 0.003}" +
                      (precision == "fp8" ? ", \"forward_format\": \"E4M3FN\", \"backward_format\": \"E5M2\"" : "") +
                      (policy.empty() ? "" : ", \"policy\": " + policy) + "}";
      r.metrics["final_val_loss"] = Metric{loss, "nats/byte", ""};
      return r;
    };
    const std::string warmup = "[{\"sites\": \"blocks.*.attn.*\", \"precision\": \"fp32\", \"until_step\": 400}]";
    const std::vector<RunInfo> runs{
        run("pre-fp32-1", "fp32", 1, "pre", 2.43), run("pre-fp32-2", "fp32", 2, "pre", 2.45),
        run("pre-fp8-1", "fp8", 1, "pre", 2.41),   run("pre-fp8-2", "fp8", 2, "pre", 2.42),
        run("post-fp32", "fp32", 1, "post", 3.32), run("post-fp8", "fp8", 1, "post", 3.33, warmup)};
    const SessionDecision d = decideSession(runs, "", {});
    QCOMPARE(d.training_metric->key, std::string("final_val_loss"));
    QVERIFY(!d.training_metric->higher_better);
    QCOMPARE(defaultRankingMetric(runs), std::string("final_val_loss"));
    QCOMPARE(d.training.size(), size_t(4));
    // Pre-norm: FP8 mean (2.41 + 2.42) / 2 = 2.415 first (lower), the baseline 2.44 second; half-widths
    // t(1) · sd / √2 = 12.706 · 0.00707107 / 1.41421 = 0.06353 and 12.706 · 0.0141421 / 1.41421 = 0.12706:
    // [2.3515, 2.4785] and [2.31294, 2.56706] overlap, so both hold rank 1.
    const std::string pre = "transformer LM (d_model 64, 4 blocks, 4 heads, context 64, gelu, layernorm pre-norm), "
                            "adam lr 0.003, 600 steps";
    QCOMPARE(d.training[0].setting_label, pre);
    QCOMPARE(d.training[0].label, std::string("current-te · E4M3FN/E5M2"));
    QVERIFY(qAbs(d.training[0].mean - 2.415) < 1e-12);
    QVERIFY(qAbs(d.training[0].half - 0.06353) < 1e-5);
    QCOMPARE(d.training[1].label, std::string("FP32 baseline"));
    QCOMPARE(d.baselineOf(0), 1);
    QCOMPARE(d.training[0].rank, 1);
    QCOMPARE(d.training[1].rank, 1);
    QCOMPARE(rankText(d.training[0], d.training), std::string("1 ="));
    // Post-norm: its own setting and its own baseline; the policy's step range in the label.
    QCOMPARE(d.training[2].setting_label, std::string("transformer LM (d_model 64, 4 blocks, 4 heads, context 64, "
                                                      "gelu, layernorm post-norm), adam lr 0.003, 600 steps"));
    QCOMPARE(d.training[2].label, std::string("FP32 baseline"));
    QCOMPARE(d.training[3].label,
             std::string("current-te · E4M3FN/E5M2 + policy blocks.*.attn.* → fp32 until step 400"));
    QCOMPARE(d.baselineOf(3), 2);
  }
};

QTEST_APPLESS_MAIN(TestRecipeRanking)
#include "test_recipe_ranking.moc"

// The language model's data beyond a plain byte stream (core/training/text_corpus.h,
// bigram_backcopy.h): BOS-delimited documents and their windows, and the Bigram-Backcopy task of
// Guo et al. 2024 — every expected sequence below is derived by hand from the rules in the headers.
#include "experiment/training/training_config.h"
#include "json/json_document.h"
#include "training/bigram_backcopy.h"
#include "training/lm_trainer.h"
#include "training/random.h"
#include "training/text_corpus.h"
#include "training/training_session.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cstdio>
#include <fstream>

using namespace fp8lab;

namespace {

std::vector<uint8_t> bytes(const std::string& s) {
  return {s.begin(), s.end()};
}

std::string text(const std::vector<uint8_t>& b) {
  return {b.begin(), b.end()};
}

const std::string kBos(1, char(kBosToken));

} // namespace

class TestLmData : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // Fortune format: "%" lines separate documents; the separators go, empty documents go, a last
  // line gets its newline, and a BOS byte inside the text is dropped.
  void splitsFortuneDocuments() {
    const auto d = splitDocuments(bytes("ab\n%\ncd\nx\n%\n%\nef"));
    QCOMPARE(int(d.size()), 3);
    QCOMPARE(text(d[0]), std::string("ab\n"));
    QCOMPARE(text(d[1]), std::string("cd\nx\n"));
    QCOMPARE(text(d[2]), std::string("ef\n"));
    const auto e = splitDocuments(bytes("a" + kBos + "b\n%\n"));
    QCOMPARE(int(e.size()), 1);
    QCOMPARE(text(e[0]), std::string("ab\n"));
  }

  // Four documents, validation fraction 0.25: round(4 · 0.75) = 3 train documents, each behind a
  // BOS at offsets 0, 4, 8; the fourth alone in the validation split at offset 0.
  void documentCorpusLayout() {
    const TextCorpus c = makeDocumentCorpus({bytes("ab\n"), bytes("cd\n"), bytes("ef\n"), bytes("gh\n")}, "t", 0.25);
    QCOMPARE(text(c.train), kBos + "ab\n" + kBos + "cd\n" + kBos + "ef\n");
    QCOMPARE(text(c.val), kBos + "gh\n");
    QCOMPARE(c.train_docs, (std::vector<int64_t>{0, 4, 8}));
    QCOMPARE(c.val_docs, (std::vector<int64_t>{0}));
    QVERIFY(c.documents());
    QCOMPARE(c.bytes, int64_t(16));
    // Windows of 5 tokens fit from offsets 0 and 4 (4 + 5 ≤ 12), not from 8; windows of 4 from all.
    QCOMPARE(documentWindowStarts(c.train_docs, 12, 5), (std::vector<int64_t>{0, 4}));
    QCOMPARE(documentWindowStarts(c.train_docs, 12, 4), (std::vector<int64_t>{0, 4, 8}));
  }

  // The fortunes as documents, from a directory the test writes: 400 fortunes "fortune NNN" →
  // 360 training documents of 13 bytes (BOS + 12), 40 validation documents.
  void fortuneDocumentsFromADirectory() {
    QTemporaryDir dir;
    {
      std::ofstream f(dir.filePath(QStringLiteral("fortunes")).toStdString(), std::ios::binary);
      for (int i = 0; i < 400; ++i) {
        char b[32];
        std::snprintf(b, sizeof b, "fortune %03d\n%%\n", i);
        f << b;
      }
      std::ofstream(dir.filePath(QStringLiteral("fortunes.dat")).toStdString()) << "index, not text";
    }
    std::string why;
    const auto c = loadFortunes(&why, dir.path().toStdString(), 0.1, true);
    QVERIFY2(c, why.c_str());
    QCOMPARE(int(c->train_docs.size()), 360);
    QCOMPARE(int(c->val_docs.size()), 40);
    QCOMPARE(c->train_docs[5], int64_t(65));
    QCOMPARE(text({c->train.begin(), c->train.begin() + 26}), kBos + "fortune 000\n" + kBos + "fortune 001\n");
    QCOMPARE(text({c->val.begin(), c->val.begin() + 13}), kBos + "fortune 360\n");
    // The same directory read as plain text: "%" lines become empty lines, no BOS.
    const auto p = loadFortunes(&why, dir.path().toStdString(), 0.1, false);
    QVERIFY(p && !p->documents());
    QCOMPARE(text({p->train.begin(), p->train.begin() + 13}), std::string("fortune 000\n\n"));
  }

  // Training windows of a document corpus start at a document's BOS: the draw is
  // starts[rng.uniformInt(D)], so an independent stream of the same seed gives the same offsets;
  // a plain text draws rng.uniformInt(size − window + 1).
  void windowsStartAtTheBos() {
    std::vector<std::vector<uint8_t>> docs;
    for (int i = 0; i < 50; ++i) docs.push_back(bytes(std::string(size_t(3 + i % 7), char('a' + i % 26)) + "\n"));
    const TextCorpus c = makeDocumentCorpus(docs, "t", 0.1);
    const int64_t window = 9;
    const auto starts = documentWindowStarts(c.train_docs, int64_t(c.train.size()), window);
    QVERIFY(!starts.empty());
    TrainingRng rng(2), replay(2);
    for (int i = 0; i < 200; ++i) {
      const int64_t o = drawWindowStart(starts, int64_t(c.train.size()), window, rng);
      QCOMPARE(o, starts[size_t(replay.uniformInt(starts.size()))]);
      QCOMPARE(c.train[size_t(o)], kBosToken);
      QVERIFY(o + window <= int64_t(c.train.size()));
    }
    TrainingRng plain(7), plain_replay(7);
    for (int i = 0; i < 20; ++i) QCOMPARE(drawWindowStart({}, 100, 9, plain), int64_t(plain_replay.uniformInt(92)));
  }

  // Source text "abcabcabc": counts a 3, b 3, c 3; bigrams a→b 3, b→c 3, c→a 2. One trigger: the
  // most frequent byte, ties to the smaller: 'a'. x_1 from the non-trigger counts {b 3, c 3}:
  // uniformInt(6) < 3 → 'b'. From 'b': c (bigram), a (bigram), then a trigger copies the byte
  // before it: "bcacacaca"; from 'c': a (bigram), c (copy), a, c, … : "cacacacac". The draws
  // consumed: x_1 uniformInt(6); each bigram step uniformInt(row sum) (b: 3, c: 2); a copy none.
  void bigramBackcopyByHand() {
    const BigramBackcopyTask t = bigramBackcopyTask(bytes("abcabcabc"), 1);
    QCOMPARE(t.triggers, (std::vector<uint8_t>{'a'}));
    QCOMPARE(t.unigram['a'], int64_t(3));
    QCOMPARE(t.bigram['c']['a'], int64_t(2));
    QCOMPARE(t.first['a'], int64_t(0));
    TrainingRng rng(1), replay(1);
    int seen_b = 0, seen_c = 0;
    for (int s = 0; s < 12; ++s) {
      const std::vector<uint8_t> got = bigramBackcopySequence(t, 10, rng);
      std::string want;
      if (replay.uniformInt(6) < 3) {
        want = kBos + "bcacacaca";
        replay.uniformInt(3); // b → c
        ++seen_b;
      } else {
        want = kBos + "cacacacac";
        ++seen_c;
      }
      for (int k = 0; k < 4; ++k) replay.uniformInt(2); // c → a, four times in either sequence
      QCOMPARE(text(got), want);
    }
    QVERIFY(seen_b > 0 && seen_c > 0);
    // The corpus: 10 sequences of 10 tokens, the last round(10 · 0.2) = 2 the validation split,
    // each a document whose BOS the corpus puts back.
    const TextCorpus c = bigramBackcopyCorpus(t, 10, 10, 1, 0.2, "bb");
    QCOMPARE(int(c.train.size()), 80);
    QCOMPARE(c.train_docs, (std::vector<int64_t>{0, 10, 20, 30, 40, 50, 60, 70}));
    QCOMPARE(int(c.val.size()), 20);
    TrainingRng again(1);
    QCOMPARE(text({c.train.begin(), c.train.begin() + 10}), text(bigramBackcopySequence(t, 10, again)));
  }

  // Two triggers: 'a' (4) and then, of b and c (2 each), the smaller byte 'b'. Backcopy of a
  // trigger at x_1 is not possible (the byte before it is the BOS); x_1 is never a trigger.
  void triggersAndRefusals() {
    const BigramBackcopyTask t = bigramBackcopyTask(bytes("aabcaacb"), 2);
    QCOMPARE(t.triggers, (std::vector<uint8_t>{'a', 'b'}));
    TrainingRng rng(3);
    for (int i = 0; i < 20; ++i) QCOMPARE(bigramBackcopySequence(t, 4, rng)[1], uint8_t('c'));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, bigramBackcopyTask(bytes("aabcaacb"), 3));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, bigramBackcopyTask(bytes("aabcaacb"), 0));
  }

  // The data keys round-trip through the stored config, and bad values name the key.
  void storedConfigKeepsTheDataKeys() {
    for (const char* data : {R"({"corpus": "fortunes", "documents": true})",
                             R"({"task": "bigram_backcopy", "triggers": 2, "sequences": 500, "seed": 7})"}) {
      const std::string json = std::string(R"({"type":"training","model":{"kind":"transformer"},"data":)") + data + "}";
      std::string err;
      const auto doc = parseStoredConfig(json, &err);
      QVERIFY2(doc, err.c_str());
      const auto spec = parseTrainingExperiment(doc->root(), &err, &*doc);
      QVERIFY2(spec, err.c_str());
      const LmTrainingConfig& lm = lmRun(spec->runs.front());
      const std::string stored = lmConfigJson(lm, "r");
      const auto doc2 = parseStoredConfig(stored, &err);
      QVERIFY2(doc2, err.c_str());
      const auto spec2 = parseTrainingExperiment(doc2->root(), &err, &*doc2);
      QVERIFY2(spec2, err.c_str());
      const TextSource& a = lm.data;
      const TextSource& b = lmRun(spec2->runs.front()).data;
      QCOMPARE(b.documents, a.documents);
      QCOMPARE(b.task, a.task);
      QCOMPARE(b.triggers, a.triggers);
      QCOMPARE(b.sequences, a.sequences);
      QCOMPARE(b.task_seed, a.task_seed);
      QCOMPARE(lmConfigJson(lmRun(spec2->runs.front()), "r"), stored);
    }
  }

  void configErrorsNameTheKey_data() {
    QTest::addColumn<QString>("data");
    QTest::addColumn<QString>("message");
    QTest::newRow("unknown task") << QStringLiteral(R"({"task": "copy"})")
                                  << QStringLiteral("data.task: unknown task 'copy'");
    QTest::newRow("triggers without a task")
        << QStringLiteral(R"({"triggers": 3})") << QStringLiteral("data.triggers: belongs to \"task\"");
    QTest::newRow("documents with a task") << QStringLiteral(R"({"task": "bigram_backcopy", "documents": true})")
                                           << QStringLiteral("data.documents: a task's sequences are documents");
    QTest::newRow("triggers 0") << QStringLiteral(R"({"task": "bigram_backcopy", "triggers": 0})")
                                << QStringLiteral("data.triggers");
    QTest::newRow("sequences 3") << QStringLiteral(R"({"task": "bigram_backcopy", "sequences": 3})")
                                 << QStringLiteral("data.sequences");
    QTest::newRow("documents not a bool")
        << QStringLiteral(R"({"documents": "yes"})") << QStringLiteral("data.documents");
    QTest::newRow("typo") << QStringLiteral(R"({"documnets": true})") << QStringLiteral("documnets");
  }
  void configErrorsNameTheKey() {
    QFETCH(QString, data);
    QFETCH(QString, message);
    const std::string json = R"({"type":"training","model":{"kind":"transformer"},"data":)" + data.toStdString() + "}";
    std::string err;
    const auto doc = parseStoredConfig(json, &err);
    QVERIFY2(doc, err.c_str());
    QVERIFY(!parseTrainingExperiment(doc->root(), &err, &*doc));
    QVERIFY2(QString::fromStdString(err).contains(message), err.c_str());
  }

  // "model": {"bias": false} (LLaMA's Linears) reaches the model and the stored config, which keeps
  // the key only when it is false, so that configs written before it existed read back unchanged.
  void modelBiasKey() {
    std::string err;
    auto parse = [&err](const std::string& model) {
      const std::string json = R"({"type":"training","model":{"kind":"transformer")" + model + "}}";
      const auto doc = parseStoredConfig(json, &err);
      if (!doc) return std::optional<LmTrainingConfig>();
      const auto spec = parseTrainingExperiment(doc->root(), &err, &*doc);
      return spec ? std::optional<LmTrainingConfig>(lmRun(spec->runs.front())) : std::optional<LmTrainingConfig>();
    };
    const auto plain = parse("");
    QVERIFY2(plain, err.c_str());
    QCOMPARE(plain->model.linear_bias, true);
    QVERIFY(lmConfigJson(*plain, "r").find("\"bias\"") == std::string::npos);
    const auto none = parse(R"(,"bias":false)");
    QVERIFY2(none, err.c_str());
    QCOMPARE(none->model.linear_bias, false);
    const std::string stored = lmConfigJson(*none, "r");
    QVERIFY2(stored.find("\"bias\": false") != std::string::npos, stored.c_str());
    QVERIFY(!parse(R"(,"bias":"no")"));
    QVERIFY2(QString::fromStdString(err).contains(QStringLiteral("model.bias")), err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestLmData)
#include "test_lm_data.moc"

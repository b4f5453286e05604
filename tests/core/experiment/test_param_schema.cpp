// The parameter schema (core/experiment/param_schema.h) is the one author of each GEMM parameter's
// range, choices and default: every entry round-trips from its `fp8lab-cli gemm` flag through the
// canonical config (`gemm --json`) and the config parser; for every numeric entry the flag and the
// config parser refuse max + 1 with a message naming the schema's range. The tests iterate over
// the table, so a new entry, or a changed range, is covered without touching them. The desktop
// app's side (widget ranges, validation) is tests/ui/test_param_schema_panel.cpp.
#include "cli_runner.h"
#include "param_samples.h"
#include <QtTest>

#include "experiment/gemm/gemm_config.h"
#include "experiment/param_schema.h"
#include "formats/format.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <set>
#include <sstream>

using namespace fp8lab;

namespace {

using fp8lab::testsupport::CliResult;
using namespace fp8lab::testsupport;

CliResult cli(const QStringList& args) {
  return fp8lab::testsupport::runCli(args);
}

} // namespace

class TestParamSchema : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // The unified ranges, as the sources set them: M / N / K and the promotion interval up to 2^20
  // (the config parser's limit, which the flags and the panel now share), fast-accumulation bits
  // 2..48 (core/gemm/gemm.h: kFastAccumMaxBits = 48, so that bits + bit_width(group) ≤ 53 fits a
  // double), the amax history up to 2^20 (scaling simulate's streamed limit, docs/reliability.md
  // #78), margin within float32's exponent range [-126, 126]. The choices come from the
  // registries: channel_outliers is a distribution, the accumulation presets are one per
  // instruction (accumulation_preset.h).
  void rangesAndChoicesAreTheSourcesOnes() {
    for (const char* k : {"m", "n", "k", "promotion_interval"}) {
      QCOMPARE(param(k).min, 1.0);
      QCOMPARE(param(k).max, 1048576.0);
    }
    QCOMPARE(param("fast_accum_bits").rangeText(), std::string("[2, 48]"));
    QCOMPARE(param("history_len", ParamScope::None).rangeText(), std::string("[1, 1048576]"));
    QCOMPARE(param("margin", ParamScope::None).rangeText(), std::string("[-126, 126]"));
    const auto& d = param("distribution", ParamScope::Operands).choices;
    QCOMPARE(d, (std::vector<std::string>{"normal", "uniform", "lognormal", "outliers", "channel_outliers"}));
    QCOMPARE(
        param("accumulation_preset").choices,
        (std::vector<std::string>{"hopper_fp8", "hopper_fp8_fast_accum", "hopper_mma_sync", "ada_fp8", "blackwell_fp8",
                                  "blackwell_tcgen05", "tcgen05_mxf8f6f4", "tcgen05_mxf4nvf4", "cdna3_fp8"}));
    QCOMPARE(param("mma_sum_bits").rangeText(), std::string("[1, 23]"));
    QCOMPARE(param("mma_c").choices, (std::vector<std::string>{"epilogue", "accumulator"}));
    QCOMPARE(param("accumulation").choices, (std::vector<std::string>{"exact", "fp32", "split", "fast"}));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, param("no_such_key"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, requireAccumulationPreset("volta"));
    QCOMPARE(requireAccumulationPreset("hopper_fp8").bits, 14);
  }

  // Every entry's flag and key are unique, and each has its help and its choices.
  void entriesAreUniqueAndDescribed() {
    std::set<std::string> flags, keys;
    for (const ParamSpec& p : paramSchema()) {
      if (!p.flag.empty()) QVERIFY2(flags.insert(p.flag).second, p.flag.c_str());
      QVERIFY2(keys.insert(p.key + "@" + std::to_string(int(p.scope))).second, p.key.c_str());
      QVERIFY2(!p.help.empty(), p.key.c_str());
      if (p.type == ParamType::Choice) QVERIFY2(!p.choices.empty(), p.key.c_str());
    }
  }

  // For every numeric entry of the GEMM config: the parser refuses max + 1 naming the range, and
  // takes max.
  void configParserRefusesPastMax() {
    for (const ParamSpec& p : paramSchema()) {
      if (!inConfig(p) || p.type != ParamType::Integer || !p.usedBy("gemm")) continue;
      for (const bool over : {true, false}) {
        Json cfg = {{"type", "gemm"}, {"m", 8}, {"n", 8}, {"k", 32}};
        QStringList ignored;
        addCompanions(p, &ignored, &cfg);
        const int64_t v = over ? int64_t(p.max) + 1 : int64_t(p.max);
        // 48 bits leave room in a double's 53 for groups up to 31 products (gemm.h,
        // kFastAccumMaxBits): the largest bits go with a group of 16.
        if (p.key == "fast_accum_bits") cfg["fast_accum_group"] = 16;
        // A chunk holds at most one MMA step (fast_accum_group) of products.
        if (p.key == "mma_chunk") cfg["fast_accum_group"] = 64;
        for (const std::string& obj : objectsOf(p)) (obj.empty() ? cfg : cfg[obj])[p.key] = v;
        GemmExperimentConfig c;
        const std::string e = parseGemmConfig(cfg, &c);
        if (over)
          QVERIFY2(e.find(p.rangeText()) != std::string::npos, (p.key + ": " + e).c_str());
        else
          QVERIFY2(e.empty(), (p.key + ": " + e).c_str());
      }
    }
  }

  // For every numeric flag of `gemm`: max + 1 is refused with exit status 2 and a message naming
  // the flag and the schema's range.
  void gemmFlagRefusesPastMax() {
    for (const ParamSpec& p : paramSchema()) {
      if (p.flag.empty() || !p.usedBy("gemm") || p.flag == "backend") continue;
      if (p.type != ParamType::Integer && p.type != ParamType::Number) continue;
      if (!std::isfinite(p.max * 2 + 1)) continue; // no number lies past the largest double
      const QString flag = QStringLiteral("--") + QString::fromStdString(p.flag);
      const CliResult r = cli({QStringLiteral("gemm"), flag, QString::fromStdString(pastMax(p))});
      QCOMPARE(r.code, 2);
      const QByteArray want = (flag + QStringLiteral(" must be")).toUtf8();
      QVERIFY2(r.err.contains(want) && r.err.contains(QByteArray::fromStdString(p.rangeText())), r.err.constData());
    }
  }

  // Every entry with a flag and a config key round-trips: the flag's value is the canonical
  // config's (`gemm --json` "config"), and the config parser reads that config back to the same
  // canonical text. Random-operand keys land in both "a" and "b".
  void flagToConfigRoundTrip() {
    int checked = 0;
    for (const ParamSpec& p : paramSchema()) {
      if (p.flag.empty() || !inConfig(p) || !p.usedBy("gemm") || p.type == ParamType::Text) continue;
      ++checked;
      QStringList args{QStringLiteral("gemm"),  QStringLiteral("--m"),       QStringLiteral("8"),
                       QStringLiteral("--n"),   QStringLiteral("8"),         QStringLiteral("--k"),
                       QStringLiteral("32"),    QStringLiteral("--backend"), QStringLiteral("cpu"),
                       QStringLiteral("--json")};
      Json ignored = Json::object();
      addCompanions(p, &args, &ignored);
      const std::string v = sampleOf(p);
      args << QStringLiteral("--") + QString::fromStdString(p.flag);
      if (p.type != ParamType::Boolean) args << QString::fromStdString(v);
      if (p.flag == "m" || p.flag == "n" || p.flag == "k") {
        // the sample replaces the small shape above
        const int i = args.indexOf(QStringLiteral("--") + QString::fromStdString(p.flag));
        args.removeAt(i);
        args.removeAt(i);
      }
      const CliResult r = cli(args);
      QVERIFY2(r.code == 0, (p.flag + ": " + r.err.toStdString()).c_str());
      const Json out = Json::parse(r.out.toStdString());
      const Json& cfg = out["config"];
      for (const std::string& obj : objectsOf(p)) {
        const Json got = (obj.empty() ? cfg : cfg[obj]).value(p.key, Json());
        Json want;
        switch (p.type) {
        case ParamType::Integer:
        case ParamType::Seed:
          want = std::stoll(v);
          break;
        case ParamType::Number:
          want = std::stod(v);
          break;
        case ParamType::Boolean:
          want = p.def != "true"; // the flag sets the other value (--no-promotion: false)
          break;
        default:
          want = v;
        }
        QVERIFY2(got == want, (p.key + " in '" + obj + "': " + got.dump() + " != " + want.dump()).c_str());
      }
      GemmExperimentConfig c;
      QVERIFY2(parseGemmConfig(cfg, &c).empty(), p.key.c_str());
      Json again = gemmConfigJson(c, cfg.value("name", ""));
      // (compared as values: Qt's JSON writer prints 1.0 as 1)
      QVERIFY2(again == cfg, (again.dump() + " != " + cfg.dump()).c_str());
    }
    QCOMPARE(checked, 39); // the GEMM config's entries with a flag, tensors aside
  }

  // docs/gemm.md lists the schema as paramSchemaMarkdown() writes it, between its markers;
  // FP8LAB_UPDATE_DOCS=1 rewrites the list.
  void docsListTheSchema() {
    const QString path = QStringLiteral(FP8LAB_SOURCE_DIR "/docs/gemm.md");
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(f.readAll());
    f.close();
    const QString begin = QStringLiteral("<!-- param-schema:begin -->\n"),
                  end = QStringLiteral("<!-- param-schema:end -->");
    const qsizetype b = text.indexOf(begin), e = text.indexOf(end);
    QVERIFY(b >= 0 && e > b);
    const QString want = QString::fromStdString(paramSchemaMarkdown());
    const QString have = text.mid(b + begin.size(), e - b - begin.size());
    if (qEnvironmentVariableIntValue("FP8LAB_UPDATE_DOCS") == 1 && have != want) {
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write((text.left(b + begin.size()) + want + text.mid(e)).toUtf8());
      return;
    }
    QVERIFY2(have == want, "docs/gemm.md's parameter table differs from the schema: run with FP8LAB_UPDATE_DOCS=1");
  }

  // The accumulation rule, written once: a preset's parameters given beside it must agree; a
  // parameter the model does not read is refused only when the caller asks (flags, not stored
  // configs, which hold every key).
  void accumulationRuleIsCores() {
    GemmOptions o;
    o.accumulation = Accumulation::SplitFP32;
    o.fast_accum_bits = 20;
    GemmOptions res;
    auto pr = accumulationProblem(o, {"fast_accum_bits"}, nullptr, true, &res);
    QVERIFY(pr);
    QCOMPARE(pr->key, std::string("fast_accum_bits"));
    QVERIFY(!accumulationProblem(o, {"fast_accum_bits"}, nullptr, false, &res));
    const AccumulationPreset h = requireAccumulationPreset("hopper_fp8");
    pr = accumulationProblem(o, {"fast_accum_bits"}, &h, true, &res);
    QVERIFY(pr);
    QCOMPARE(pr->key, std::string("accumulation_preset"));
    QVERIFY(!accumulationProblem(o, {}, &h, true, &res));
    // hopper_fp8 (measured H100 wgmma, promotion every 128 as DeepSeek-V3 §3.3.2): 13 fraction bits
    // below e(a)+e(b) (14 on the bits scale), groups of 32, sums cut to 13 fraction bits.
    QCOMPARE(res.accumulation, Accumulation::FastAccum);
    QCOMPARE(res.fast_accum_bits, 14);
    QCOMPARE(res.fast_accum_group, 32);
    QCOMPARE(res.promotion_interval, 128);
    QCOMPARE(res.mma.sum_bits, 13);
    // An MMA rule beside a preset must agree with it; without a fast model it is not read.
    o.mma.c_entry = MmaCEntry::Epilogue;
    pr = accumulationProblem(o, {"mma_c"}, &h, true, &res);
    QVERIFY(pr && pr->why.find("mma_c epilogue differs from accumulation preset hopper_fp8's accumulator") !=
                      std::string::npos);
    pr = accumulationProblem(o, {"mma_c"}, nullptr, true, &res);
    QVERIFY(pr && pr->key == "mma_c");
  }
};

QTEST_MAIN(TestParamSchema)
#include "test_param_schema.moc"
